//! View models: what the components render. They cross the server-function boundary, so they are
//! plain serialisable data with no database or runtime types in them.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConversationStatus {
    Idle,
    Processing,
    AwaitingApproval,
    AwaitingInput,
    Failed,
}

impl ConversationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConversationStatus::Idle => "idle",
            ConversationStatus::Processing => "processing",
            ConversationStatus::AwaitingApproval => "awaiting_approval",
            ConversationStatus::AwaitingInput => "awaiting_input",
            ConversationStatus::Failed => "failed",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "idle" => ConversationStatus::Idle,
            "processing" => ConversationStatus::Processing,
            "awaiting_approval" => ConversationStatus::AwaitingApproval,
            "awaiting_input" => ConversationStatus::AwaitingInput,
            "failed" => ConversationStatus::Failed,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationSummary {
    pub id: String,
    pub title: String,
    pub status: ConversationStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageView {
    pub id: i64,
    pub role: MessageRole,
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationView {
    pub id: String,
    pub title: String,
    pub status: ConversationStatus,
    pub messages: Vec<MessageView>,
    /// A sanitised sentence when the last turn failed; never provider or SQL internals.
    pub error: Option<String>,
}

/// Who is signed in and which model answers, for the page header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionView {
    pub username: String,
    /// The user's own language setting; `None` follows the browser.
    pub language: Option<crate::i18n::Lang>,
    pub model_label: String,
    pub model_is_demo: bool,
}
