//! The agent runtime: persisted runs, tools, approvals, input pauses, and model providers.
//!
//! Architecture invariant: this crate knows nothing of HTTP, HTML, Leptos, the chat's tables or
//! the tools an application registers. It speaks in transcripts, tool calls and typed errors; the
//! server maps those to status codes and sentences.
//! (The OpenAI-compatible client speaks HTTP to its provider, but none of that leaks out of it.)

pub mod actor;
pub mod ask_choice;
pub mod digest;
pub mod message;
pub mod openai;
pub mod preview;
pub mod provider;
pub mod refusal;
pub mod results;
pub mod run;
pub mod runtime;
pub mod store;
pub mod streaming;
pub mod tool;
mod tool_loop;

pub use actor::Actor;
pub use ask_choice::{AskChoiceTool, ASK_CHOICE, PICKED};
pub use message::{ChatMessage, Role, ToolCall};
pub use openai::{OpenAiConfig, OpenAiConfigError, OpenAiProvider};
pub use preview::{CallPreview, DiffPart, FieldChange, Preview};
pub use provider::{
    Completion, CompletionRequest, ModelProvider, ProviderError, ProviderErrorKind, TextSink, ToolDefinition,
};
pub use question::schema::InvalidSubmission;
pub use refusal::{Refusal, RuntimeError};
pub use run::{
    ApprovalDecision, ApprovalPause, DecisionError, DenialReason, EventKind, FailureReason, GuardedCancelResult,
    InputPause, InputSubmission, PauseView, PendingCallView, RunEvent, RunOutcome, RunRequest, RunResult, RunStatus,
    RunView, DEFAULT_MAX_ROUNDS, MAX_ROUNDS_LIMIT,
};
pub use runtime::{QuestionCheck, ReapReport, Runtime, RuntimeSettings};
pub use store::{migrations, StoreError};
pub use streaming::RunTextObserver;
pub use tool::{
    InputReply, RegisteredTool, RegistryError, Tool, ToolContext, ToolEffect, ToolError, ToolOutput, ToolRegistry,
    ToolSource, ToolSpec,
};
