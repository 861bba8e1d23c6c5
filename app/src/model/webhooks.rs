//! The webhooks page (admins).

use serde::{Deserialize, Serialize};

/// The webhooks page (admins): the webhooks, the newest deliveries, and the secret the next
/// webhook added from the page gets (shown before it is added: afterwards only masked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhooksView {
    pub webhooks: Vec<WebhookView>,
    pub deliveries: Vec<DeliveryView>,
    pub new_secret: String,
    /// The kinds of event a webhook may be sent (`run.waiting`, …).
    pub kinds: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookView {
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    /// `whsec_` and its first characters.
    pub secret_masked: String,
    pub active: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryView {
    pub id: i64,
    pub event_id: String,
    pub url: String,
    pub kind: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    pub attempts: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    /// Unix seconds.
    pub created_at: i64,
    pub resent: bool,
}

/// A webhook just added, with its secret: the only time it is shown whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookCreated {
    pub id: i64,
    pub secret: String,
}
