//! Webhook delivery: the worker that fans the outbox's events out to the webhooks that want them
//! and sends each delivery, signed, until the receiver takes it (2xx) or a day has passed; and
//! the reminder of a run that still waits; with `--smtp-url`, the same events' mails (`mail`),
//! fanned out and sent beside the deliveries. It runs in every process that runs the worker: on
//! PostgreSQL the workers share the outbox and the deliveries (`SKIP LOCKED`, leases), on SQLite
//! one worker per file does it all.
//!
//! At least once, never lost: an event leaves the outbox only in the transaction that writes its
//! deliveries; a delivery is leased while it is sent, and one whose worker died is sent again
//! once its lease ran out (at once after a restart on SQLite). A receiver drops repeats by
//! `webhook-id`.

pub mod sign;
pub mod target;

use std::sync::Arc;
use std::time::Duration;

use runtime::Runtime;
use serde_json::{json, Value};
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use crate::delivery_settings::DeliverySettings;
use crate::store::{AttemptOutcome, ClaimedDelivery, OutboxEvent, Store, StoreError, WorkDue};

/// Reminders of runs that still wait: once per run, after `after`; the run is cancelled at
/// `expiry` after it began to wait.
#[derive(Clone)]
pub struct Reminders {
    pub after: Duration,
    pub expiry: Duration,
    pub runtime: Arc<Runtime>,
}

/// How many deliveries one worker sends side by side.
const BATCH: i64 = 16;
/// How many outbox events one transaction fans out.
const FAN_OUT: i64 = 64;
/// How long a woken worker waits for more events before it looks.
const GATHER: Duration = Duration::from_millis(50);

pub struct DeliveryWorker {
    store: Store,
    settings: DeliverySettings,
    /// How long a claimed delivery stays this worker's: longer than an attempt may take.
    lease: Duration,
    /// `--public-url`'s origin: a payload's `url` is made absolute with it.
    public_origin: Option<String>,
    reminders: Option<Reminders>,
    /// E-mail to the users who want it (`--smtp-url`); fanned out and sent beside the webhooks.
    mail: Option<crate::mail::Mailer>,
    /// This process, in `leased_by`.
    id: String,
    client: reqwest::Client,
    /// Whether a delivery may go to loopback and private addresses (`--webhook-private-networks`).
    private_allowed: bool,
    wake: Arc<Notify>,
}

impl DeliveryWorker {
    pub fn new(
        store: Store,
        settings: DeliverySettings,
        lease: Duration,
        public_origin: Option<String>,
        private_allowed: bool,
    ) -> DeliveryWorker {
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .redirect(reqwest::redirect::Policy::none())
            // Every name is looked up through this, and only addresses a delivery may reach come
            // back; an HTTP(S) proxy from the environment would resolve names where this cannot.
            .dns_resolver(Arc::new(target::GuardedResolver { private_allowed }))
            .no_proxy()
            .user_agent(concat!("Tourguide-Webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("the HTTP client's settings are valid");
        DeliveryWorker {
            store,
            lease: lease.max(settings.timeout + Duration::from_secs(5)),
            settings,
            public_origin,
            reminders: None,
            mail: None,
            id: uuid::Uuid::new_v4().to_string(),
            client,
            private_allowed,
            wake: Arc::new(Notify::new()),
        }
    }

    pub fn with_reminders(mut self, reminders: Option<Reminders>) -> DeliveryWorker {
        self.reminders = reminders;
        self
    }

    pub fn with_mail(mut self, mail: Option<crate::mail::Mailer>) -> DeliveryWorker {
        self.mail = mail;
        self
    }

    /// What wakes the worker at once (a change that may have written to the outbox).
    pub fn waker(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    pub fn spawn(self, mut shutdown: watch::Receiver<bool>) -> JoinHandle<()> {
        tokio::spawn(db::in_background(async move {
            let mut last_reminder_look: Option<std::time::Instant> = None;
            loop {
                if *shutdown.borrow() {
                    break;
                }
                if self.reminders.is_some() && last_reminder_look.is_none_or(|at| at.elapsed() >= self.settings.sweep) {
                    last_reminder_look = Some(std::time::Instant::now());
                    if let Err(error) = self.remind().await {
                        tracing::warn!(%error, "could not look for runs to remind of");
                    }
                }
                let busy = match self.step().await {
                    Ok(busy) => busy,
                    Err(error) => {
                        tracing::warn!(%error, "webhook delivery step failed");
                        false
                    }
                };
                if busy {
                    continue;
                }
                tokio::select! {
                    // Events that come in a burst (each answer under load is one) are taken
                    // together, not one look at the database each.
                    () = self.wake.notified() => tokio::time::sleep(GATHER).await,
                    () = tokio::time::sleep(self.settings.sweep) => {}
                    _ = shutdown.changed() => {}
                }
            }
        }))
    }

    /// Fans out what the outbox holds and sends what is due; true when there may be more to do
    /// at once (a batch came back full). Otherwise the worker waits for its wake-up, which an
    /// event written meanwhile has left for it: one look per quiet event, not a second round of
    /// looks to find nothing.
    async fn step(&self) -> Result<bool, StoreError> {
        let mut busy = false;
        let WorkDue { outbox, mut deliveries, mut mails, webhooks } = self.store.work_due().await?;
        if outbox && !webhooks && self.mail.is_none() {
            busy |= self.store.drop_outbox(FAN_OUT).await? >= FAN_OUT as usize;
        } else if outbox {
            let body_of = |event: &OutboxEvent| body(event, self.public_origin.as_deref());
            let fanned = self.store.fan_out_with_mail(FAN_OUT, body_of, self.mail.is_some()).await?;
            busy |= fanned.events >= FAN_OUT as usize;
            // What it queued is due now.
            deliveries |= fanned.deliveries;
            mails |= fanned.mails;
        }
        let lease_until = db::now().saturating_add(i64::try_from(self.lease.as_secs()).unwrap_or(i64::MAX));
        if deliveries {
            let claimed = self.store.claim_deliveries(&self.id, lease_until, BATCH).await?;
            busy |= claimed.len() >= BATCH as usize;
            let attempts = claimed.into_iter().map(|delivery| self.attempt(delivery));
            futures::future::join_all(attempts).await;
        }
        if let Some(mailer) = &self.mail {
            if mails {
                let claimed = self.store.claim_mails(&self.id, lease_until, BATCH).await?;
                busy |= claimed.len() >= BATCH as usize;
                let attempts =
                    claimed.into_iter().map(|mail| mailer.attempt(&self.store, &self.id, mail, &self.settings));
                futures::future::join_all(attempts).await;
            }
        }
        Ok(busy)
    }

    async fn attempt(&self, delivery: ClaimedDelivery) {
        let timestamp = db::now();
        let (standard, ours) = sign::signatures(&delivery.secret, &delivery.event_id, timestamp, &delivery.body);
        let sent = if target::refused_literal(&delivery.url, self.private_allowed) {
            Err(REFUSED_ADDRESS.to_string())
        } else {
            self.client
                .post(&delivery.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header("webhook-id", &delivery.event_id)
                .header("webhook-timestamp", timestamp.to_string())
                .header("webhook-signature", standard)
                .header("Tourguide-Signature", ours)
                .body(delivery.body.clone())
                .send()
                .await
                .map_err(|error| failure_sentence(&error))
        };
        let (status, error) = match sent {
            Ok(response) if response.status().is_success() => (Some(response.status().as_u16()), None),
            Ok(response) => {
                let status = response.status();
                (Some(status.as_u16()), Some(format!("the receiver answered {status}")))
            }
            Err(sentence) => (None, Some(sentence)),
        };
        let outcome = match (status, error) {
            (Some(status), None) => AttemptOutcome::Delivered { status },
            (status, error) => {
                let error = error.unwrap_or_default();
                let now = db::now();
                let next = now.saturating_add(secs(self.settings.backoff(delivery.attempts)));
                if next >= delivery.created_at.saturating_add(secs(self.settings.give_up_after)) {
                    tracing::warn!(delivery = delivery.id, %error, "a webhook delivery failed for good");
                    AttemptOutcome::Failed { status, error }
                } else {
                    tracing::info!(delivery = delivery.id, %error, attempts = delivery.attempts, "a webhook delivery is tried again later");
                    AttemptOutcome::Retry { status, error, next_attempt_at: next }
                }
            }
        };
        match self.store.record_attempt(delivery.id, &self.id, &outcome).await {
            Ok(true) => {}
            Ok(false) => tracing::info!(
                delivery = delivery.id,
                "a webhook delivery was taken over before its outcome was recorded"
            ),
            // The lease runs out and the delivery is sent again: at least once.
            Err(error) => tracing::warn!(delivery = delivery.id, %error, "could not record a webhook delivery"),
        }
    }

    /// One `run.reminder` per run that waits longer than `after` (and not yet as long as the
    /// expiry).
    async fn remind(&self) -> Result<(), RemindError> {
        let Some(reminders) = &self.reminders else { return Ok(()) };
        let now = db::now();
        let cutoff = now.saturating_sub(secs(reminders.after));
        let runs = reminders.runtime.waiting_since_newest(cutoff, 100).await?;
        let ids: Vec<String> = runs.iter().map(|(id, _, _)| id.to_string()).collect();
        let due = self.store.not_reminded(&ids).await?;
        let mut woke = false;
        for (run_id, owner, since) in runs.into_iter().filter(|(id, _, _)| due.contains(&id.to_string())) {
            let expires_at = since.saturating_add(secs(reminders.expiry));
            if expires_at <= now {
                continue;
            }
            let Some(conversation) = self.store.conversation_of_any_run(run_id).await? else { continue };
            let owner_name = self.store.user_by_id(owner).await?.map(|user| user.username);
            let payload = json!({
                "conversation_id": conversation.id,
                "title": conversation.title,
                "run_id": run_id.to_string(),
                "owner": owner_name,
                "owner_id": owner,
                "waiting_since": since,
                "expires_at": expires_at,
                "url": format!("/c/{}", conversation.id),
            });
            let event_id = uuid::Uuid::new_v4().to_string();
            if self.store.remind_once(&run_id.to_string(), &event_id, &payload.to_string()).await? {
                tracing::info!(run = %run_id, "a run still waits: reminded");
                woke = true;
            }
        }
        if woke {
            self.wake.notify_one();
        }
        Ok(())
    }
}

/// Wakes the delivery worker on every change this process hears of: the outbox is written in
/// the transaction of a state change, which is announced after its commit (on PostgreSQL from
/// any process, by NOTIFY). Pieces of a reply are no such change.
pub fn wake_on_changes(events: &crate::events::ConversationEvents, wake: Arc<Notify>) {
    let mut changes = events.subscribe();
    let mut shutdown = events.shutdown();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                change = changes.recv() => match change {
                    Ok(crate::events::Change::Piece(_)) => {}
                    Ok(crate::events::Change::Changed(_)) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        wake.notify_one();
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                _ = shutdown.changed() => return,
            }
        }
    });
}

#[derive(Debug, thiserror::Error)]
enum RemindError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Runtime(#[from] runtime::RuntimeError),
}

fn secs(duration: Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

/// What went wrong with a request, for the admin's list: the kind, not the client's internals.
/// Why a delivery to an address it may not reach was not sent (see `target::refused`).
const REFUSED_ADDRESS: &str =
    "the receiver's address is link-local, a metadata address, or private or loopback without --webhook-private-networks";

fn failure_sentence(error: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if cause.is::<target::RefusedAddress>() {
            return REFUSED_ADDRESS.into();
        }
        source = cause.source();
    }
    if error.is_timeout() {
        "the receiver did not answer in time".into()
    } else if error.is_connect() {
        "could not connect to the receiver".into()
    } else if error.is_redirect() {
        "the receiver redirected; redirects are not followed".into()
    } else {
        "the request failed".into()
    }
}

/// The body sent for an event: its kind and id, when it happened, the outbox's payload (its
/// `url` absolute when the public URL is known), and a `text` line, which Slack, Mattermost and
/// Teams incoming webhooks show as the message.
pub fn body(event: &OutboxEvent, public_origin: Option<&str>) -> String {
    let mut data: Value = serde_json::from_str(&event.payload).unwrap_or_else(|_| json!({}));
    if let (Some(origin), Some(Value::String(path))) = (public_origin, data.get_mut("url")) {
        if path.starts_with('/') {
            *path = format!("{}{path}", origin.trim_end_matches('/'));
        }
    }
    let text = text(&event.kind, &data);
    json!({
        "type": event.kind,
        "id": event.event_id,
        "timestamp": rfc3339(event.created_at),
        "data": data,
        "text": text,
    })
    .to_string()
}

fn rfc3339(seconds: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .ok()
        .and_then(|at| at.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}

fn text(kind: &str, data: &Value) -> String {
    let field = |name: &str| data.get(name).and_then(Value::as_str).filter(|text| !text.is_empty());
    let title = field("title").unwrap_or("a conversation");
    // A question's tool is `ask_choice` (or an MCP tool that asks, which reads as a card here).
    let waits_for = match field("tool") {
        Some(tool) if tool != runtime::ASK_CHOICE => "approval",
        _ => "answer",
    };
    let mut line = match kind {
        "run.waiting" => format!("Tourguide: a run waits for your {waits_for} — {title}"),
        "run.decided" => match (field("decision"), field("decided_by")) {
            (Some(decision), Some(by)) => format!("Tourguide: a run was decided ({decision}, by {by}) — {title}"),
            (Some(decision), None) => format!("Tourguide: a run was decided ({decision}) — {title}"),
            _ => format!("Tourguide: a run was decided — {title}"),
        },
        "run.expired" => format!("Tourguide: a run waited too long and was cancelled — {title}"),
        "run.failed" => format!("Tourguide: a run failed — {title}"),
        "run.reminder" => {
            let mut line = format!("Tourguide: a run still waits for a decision or an answer — {title}");
            if let Some(at) = data.get("expires_at").and_then(Value::as_i64) {
                line.push_str(&format!(". Unless someone decides, it is cancelled at {}", utc_minute(at)));
            }
            line
        }
        other => format!("Tourguide: {other} — {title}"),
    };
    if let Some(url) = field("url").filter(|url| url.starts_with("http")) {
        line.push_str(&format!(" {url}"));
    }
    line
}

fn utc_minute(seconds: i64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    time::OffsetDateTime::from_unix_timestamp(seconds).ok().and_then(|at| at.format(&format).ok()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_carries_the_event_an_absolute_link_and_a_line_for_chat_tools() {
        let event = OutboxEvent {
            id: 1,
            event_id: "e1".into(),
            kind: "run.waiting".into(),
            payload: json!({"conversation_id": "c1", "title": "Bakery", "run_id": "r1", "owner": "demo",
                            "tool": "update_page_field", "url": "/c/c1"})
            .to_string(),
            created_at: 1_800_000_000,
        };
        let sent: Value = serde_json::from_str(&body(&event, Some("https://chat.example.com"))).unwrap();
        assert_eq!(sent["type"], "run.waiting");
        assert_eq!(sent["id"], "e1");
        assert_eq!(sent["timestamp"], "2027-01-15T08:00:00Z");
        assert_eq!(sent["data"]["url"], "https://chat.example.com/c/c1");
        assert_eq!(sent["text"], "Tourguide: a run waits for your approval — Bakery https://chat.example.com/c/c1");
        let plain: Value = serde_json::from_str(&body(&event, None)).unwrap();
        assert_eq!(plain["data"]["url"], "/c/c1");
        let reminder = OutboxEvent {
            kind: "run.reminder".into(),
            payload: json!({"title": "Bakery", "expires_at": 1_800_003_600}).to_string(),
            ..event
        };
        let sent: Value = serde_json::from_str(&body(&reminder, None)).unwrap();
        assert_eq!(
            sent["text"],
            "Tourguide: a run still waits for a decision or an answer — Bakery. Unless someone decides, it is cancelled at 2027-01-15 09:00 UTC"
        );
    }
}
