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

/// Why a provider call failed. The message is for logs; users see a sanitised sentence chosen by
/// the kind ([`ProviderError::kind`]).
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("provider could not be reached: {0}")]
    Connection(String),
    #[error("provider did not answer in time")]
    Timeout,
    #[error("provider answered with status {status}")]
    Status { status: u16 },
    /// The conversation does not fit the model's context window (any status the server uses).
    #[error("the request exceeds the model's context length")]
    ContextTooLong,
    /// The stream ended before the model finished (a dropped connection, a server that died).
    #[error("the reply stream broke off: {0}")]
    Dropped(String),
    /// The server reported an error inside a stream that had begun.
    #[error("provider reported an error mid-stream: {0}")]
    Stream(String),
    #[error("provider answer could not be read: {0}")]
    Malformed(String),
}

/// What went wrong, in the terms a reader is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderErrorKind {
    Unreachable,
    TimedOut,
    RateLimited,
    ContextTooLong,
    BrokeOff,
    Rejected,
}

impl ProviderError {
    /// Connection problems, timeouts, broken streams and server-side errors may go away;
    /// anything else will not.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Connection(_) | ProviderError::Timeout | ProviderError::Dropped(_) => true,
            ProviderError::Stream(_) => true,
            ProviderError::Status { status } => *status == 429 || *status >= 500,
            ProviderError::ContextTooLong | ProviderError::Malformed(_) => false,
        }
    }

    pub fn kind(&self) -> ProviderErrorKind {
        match self {
            ProviderError::Connection(_) => ProviderErrorKind::Unreachable,
            ProviderError::Timeout => ProviderErrorKind::TimedOut,
            ProviderError::Status { status: 429 } => ProviderErrorKind::RateLimited,
            ProviderError::Status { status } if *status >= 500 => ProviderErrorKind::Unreachable,
            ProviderError::Status { .. } | ProviderError::Malformed(_) => ProviderErrorKind::Rejected,
            ProviderError::ContextTooLong => ProviderErrorKind::ContextTooLong,
            ProviderError::Dropped(_) | ProviderError::Stream(_) => ProviderErrorKind::BrokeOff,
        }
    }
}

/// Takes a model turn's text while it arrives. Called on the provider's task for every piece:
/// it must not block.
pub trait TextSink: Send + Sync {
    fn text(&self, delta: &str);
}

#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// A short name for the UI, e.g. "Demo model" or the configured model id.
    fn label(&self) -> String;

    /// True for the built-in scripted provider, which the UI must label as a demo.
    fn is_demo(&self) -> bool;

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, ProviderError>;

    /// [`ModelProvider::complete`], handing the text to `sink` as it arrives. The completion
    /// returned is the whole turn, the same as `complete` would give. A provider that cannot
    /// stream hands the text over in one piece.
    async fn stream(&self, request: CompletionRequest, sink: &dyn TextSink) -> Result<Completion, ProviderError> {
        let completion = self.complete(request).await?;
        if !completion.content.is_empty() {
            sink.text(&completion.content);
        }
        Ok(completion)
    }
}
