//! The agent runtime: model providers, and (as it grows) runs, tools, approvals and input pauses.
//!
//! Architecture invariant: this crate knows nothing of HTTP, HTML or Leptos. It speaks in
//! transcripts, tool calls and typed errors; the server maps those to status codes and sentences.

pub mod demo;
pub mod message;
pub mod provider;

pub use demo::DemoProvider;
pub use message::{ChatMessage, Role, ToolCall};
pub use provider::{Completion, CompletionRequest, ModelProvider, ProviderError, ToolDefinition};
