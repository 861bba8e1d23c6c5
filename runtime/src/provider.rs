//! The one trait every model provider implements.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::message::{ChatMessage, ToolCall};

/// A tool as offered to the model: name, description and JSON-Schema parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

#[derive(Debug, Clone, Default)]
pub struct CompletionRequest {
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolDefinition>,
}

/// One model turn: either text, or tool calls (possibly with text beside them).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
}

/// Why a provider call failed. The message is for logs; users see a sanitised sentence.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("provider could not be reached: {0}")]
    Connection(String),
    #[error("provider answered with status {status}")]
    Status { status: u16 },
    #[error("provider answer could not be read: {0}")]
    Malformed(String),
}

impl ProviderError {
    /// Connection problems and server-side errors may go away; anything else will not.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Connection(_) => true,
            ProviderError::Status { status } => *status == 429 || *status >= 500,
            ProviderError::Malformed(_) => false,
        }
    }
}

#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// A short name for the UI, e.g. "Demo model" or the configured model id.
    fn label(&self) -> String;

    /// True for the built-in scripted provider, which the UI must label as a demo.
    fn is_demo(&self) -> bool;

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, ProviderError>;
}
