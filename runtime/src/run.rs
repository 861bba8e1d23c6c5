//! What a run is, what a caller asks of it, and what it answers.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::actor::Actor;
use crate::message::ChatMessage;
use crate::tool::InputReply;

/// The round cap when a request names none.
pub const DEFAULT_MAX_ROUNDS: u32 = 5;
/// No request may raise the round cap above this.
pub const MAX_ROUNDS_LIMIT: u32 = 20;

/// The persisted status of a run. The strings are stored in the database and must not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    WaitingForApproval,
    WaitingForInput,
    Completed,
    Failed,
    Cancelled,
}

impl RunStatus {
    pub const ALL: [RunStatus; 7] = [
        RunStatus::Queued,
        RunStatus::Running,
        RunStatus::WaitingForApproval,
        RunStatus::WaitingForInput,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::WaitingForApproval => "waiting_for_approval",
            RunStatus::WaitingForInput => "waiting_for_input",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Unknown strings are `None`, never coerced: a row written by a newer version stays untouched.
    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "queued" => RunStatus::Queued,
            "running" => RunStatus::Running,
            "waiting_for_approval" => RunStatus::WaitingForApproval,
            "waiting_for_input" => RunStatus::WaitingForInput,
            "completed" => RunStatus::Completed,
            "failed" => RunStatus::Failed,
            "cancelled" => RunStatus::Cancelled,
            _ => return None,
        })
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled)
    }

    pub fn is_waiting(self) -> bool {
        matches!(self, RunStatus::WaitingForApproval | RunStatus::WaitingForInput)
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a caller hands to `Runtime::enqueue`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// The initiator; tools execute as this actor, also when someone else decides.
    pub owner: Actor,
    pub configuration: String,
    /// The transcript so far, including an optional leading system prompt.
    pub messages: Vec<ChatMessage>,
    /// `None` offers every registered tool the owner may run; `Some` narrows that set.
    pub allowed_tools: Option<Vec<String>>,
    /// `None` means [`DEFAULT_MAX_ROUNDS`]; any value is clamped to `1..=MAX_ROUNDS_LIMIT`.
    pub max_rounds: Option<u32>,
    /// A guided process run: one proposal per turn, decided only by the initiator.
    pub process: bool,
    /// The conversation already holds content from outside (an attachment, an earlier result of an
    /// outside tool): open-world tools go through approval from the first round. The run sets it
    /// itself once such a result enters it.
    pub outside_content: bool,
}

impl RunRequest {
    pub fn new(owner: Actor, configuration: impl Into<String>, messages: Vec<ChatMessage>) -> Self {
        RunRequest {
            owner,
            configuration: configuration.into(),
            messages,
            allowed_tools: None,
            max_rounds: None,
            process: false,
            outside_content: false,
        }
    }

    pub fn effective_max_rounds(&self) -> u32 {
        clamp_rounds(self.max_rounds)
    }
}

pub(crate) fn clamp_rounds(requested: Option<u32>) -> u32 {
    requested.unwrap_or(DEFAULT_MAX_ROUNDS).clamp(1, MAX_ROUNDS_LIMIT)
}

/// Why a human declined a proposed write in a process run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DenialReason {
    /// "Andere Variante": propose a different version.
    Variant,
    /// "Überspringen": do not propose this change again.
    Skip,
}

impl DenialReason {
    pub fn as_str(self) -> &'static str {
        match self {
            DenialReason::Variant => "variant",
            DenialReason::Skip => "skip",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "variant" => Some(DenialReason::Variant),
            "skip" => Some(DenialReason::Skip),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    #[error("an approval carries no denial reason")]
    ReasonWithApproval,
}

/// A turn-level verdict: it applies to every pending call of the turn it was shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalDecision {
    approved: bool,
    digest: Option<String>,
    denial_reason: Option<DenialReason>,
    /// What the person said to the model with a denial ("use the formal tone").
    message: Option<String>,
    /// Arguments a person changed before approving, by call id; the calls run with these.
    edits: std::collections::BTreeMap<String, serde_json::Value>,
}

impl ApprovalDecision {
    /// Rejects a denial reason on an approval, so the combination can never reach the runtime.
    pub fn new(
        approved: bool,
        digest: Option<String>,
        denial_reason: Option<DenialReason>,
    ) -> Result<Self, DecisionError> {
        if approved && denial_reason.is_some() {
            return Err(DecisionError::ReasonWithApproval);
        }
        Ok(ApprovalDecision { approved, digest, denial_reason, message: None, edits: Default::default() })
    }

    pub fn approve(digest: impl Into<String>) -> Self {
        ApprovalDecision {
            approved: true,
            digest: Some(digest.into()),
            denial_reason: None,
            message: None,
            edits: Default::default(),
        }
    }

    /// An approval whose calls named in `edits` (call id → arguments) run with the person's
    /// arguments instead of the model's; the model is told what changed.
    pub fn approve_edited(
        digest: impl Into<String>,
        edits: std::collections::BTreeMap<String, serde_json::Value>,
    ) -> Self {
        ApprovalDecision { edits, ..ApprovalDecision::approve(digest) }
    }

    pub fn deny(digest: impl Into<String>, reason: Option<DenialReason>) -> Self {
        ApprovalDecision {
            approved: false,
            digest: Some(digest.into()),
            denial_reason: reason,
            message: None,
            edits: Default::default(),
        }
    }

    /// A denial that tells the model what the person said instead; an approval carries none.
    pub fn with_message(mut self, message: Option<String>) -> Self {
        self.message = message.filter(|_| !self.approved);
        self
    }

    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    pub fn edits(&self) -> &std::collections::BTreeMap<String, serde_json::Value> {
        &self.edits
    }

    pub fn approved(&self) -> bool {
        self.approved
    }

    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    pub fn denial_reason(&self) -> Option<DenialReason> {
        self.denial_reason
    }
}

/// The reply to an input pause, bound to the question by its digest.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSubmission {
    pub reply: InputReply,
    /// `None` or empty is refused exactly like a wrong digest.
    pub digest: Option<String>,
}

impl InputSubmission {
    /// An answer with these values.
    pub fn values(values: serde_json::Map<String, serde_json::Value>, digest: Option<String>) -> Self {
        InputSubmission { reply: InputReply::Answer(values), digest }
    }
}

/// One call of a turn waiting for approval, for display. `arguments` are model-chosen: untrusted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCallView {
    pub call_id: String,
    pub name: String,
    pub arguments: serde_json::Value,
    /// True unless the registered tool states it only reads; a tool that is gone counts as a write.
    pub declares_write: bool,
    pub tool_registered: bool,
    /// Where the tool comes from ([`crate::ToolSpec::origin`]).
    #[serde(default)]
    pub origin: Option<String>,
    /// What the call would change, if its tool shows that.
    #[serde(default)]
    pub preview: Option<crate::CallPreview>,
    /// The call waits because it could send text of a run that holds outside content into the
    /// open world ([`crate::ToolSpec::open_world`]), not (only) because it writes.
    #[serde(default)]
    pub sends_out: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalPause {
    pub digest: String,
    pub pending_calls: Vec<PendingCallView>,
    /// A process run may deny with a reason, and only when a pending call writes.
    pub process: bool,
}

impl ApprovalPause {
    pub fn any_write(&self) -> bool {
        self.pending_calls.iter().any(|call| call.declares_write)
    }

    /// A call's preview failed: approving only makes the previews again, it applies nothing.
    pub fn preview_failed(&self) -> bool {
        self.pending_calls.iter().any(|call| call.preview.as_ref().is_some_and(crate::CallPreview::failed))
    }

    /// Whether a denial of this card may carry a [`DenialReason`].
    pub fn offers_denial_reason(&self) -> bool {
        self.process && self.any_write()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputPause {
    pub digest: String,
    pub tool_name: String,
    pub call_id: String,
    /// The JSON schema the answer must match; its title (else description) is the question.
    pub schema: serde_json::Value,
    /// The tool asked while it ran (an MCP server's elicitation): the question can be declined,
    /// and it holds the tool's call open until it is answered or withdrawn.
    #[serde(default)]
    pub asked_while_running: bool,
    /// Where the asking tool comes from ([`crate::ToolSpec::origin`]).
    #[serde(default)]
    pub asked_by: Option<String>,
    /// The process that holds the tool's open call ([`crate::Tool::held_by`]): the reply has to
    /// be carried on there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_by: Option<String>,
}

impl InputPause {
    /// The question as the schema states it: its title, else its description.
    pub fn question(&self) -> Option<&str> {
        let text = |key: &str| self.schema.get(key).and_then(|v| v.as_str()).filter(|s| !s.trim().is_empty());
        if let Some(title) = text("title").or_else(|| text("description")) {
            return Some(title);
        }
        // ask_choice puts the question on its single property; a chat needs it all the same.
        let properties = self.schema.get("properties")?.as_object()?;
        if properties.len() != 1 {
            return None;
        }
        let only = properties.values().next()?;
        only.get("title").or_else(|| only.get("description")).and_then(|v| v.as_str()).filter(|s| !s.trim().is_empty())
    }
}

/// What a waiting run waits on, as a chat renders it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum PauseView {
    Approval(ApprovalPause),
    Input(InputPause),
    /// The stored state cannot be read; the run waits until it is repaired or cancelled.
    Unreadable,
}

/// Why a run ended FAILED (or with a truncated completion). Stored as `termination_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureReason {
    /// The model could not be reached (connection refused, 5xx).
    ProviderFailed,
    ModelTimedOut,
    ModelRateLimited,
    ContextTooLong,
    /// The reply stream broke off, or the server reported an error inside it.
    ModelBrokeOff,
    /// The model's server refused the request (a 4xx other than 429, or an unreadable answer).
    ModelRejected,
    RetriesExhausted,
    /// Dead-lettered: retrying could repeat an effect, or the failure will not go away.
    NotRetryable,
    SuspendFailed,
    /// A tool offered an input schema that cannot be rendered or validated.
    ToolMisconfigured,
    StateUnreadable,
    /// The database failed while the run executed.
    StoreFailed,
}

impl FailureReason {
    /// What a run that failed on this provider error is marked with.
    pub fn of_provider(kind: crate::provider::ProviderErrorKind) -> Self {
        use crate::provider::ProviderErrorKind as Kind;
        match kind {
            Kind::Unreachable => FailureReason::ProviderFailed,
            Kind::TimedOut => FailureReason::ModelTimedOut,
            Kind::RateLimited => FailureReason::ModelRateLimited,
            Kind::ContextTooLong => FailureReason::ContextTooLong,
            Kind::BrokeOff => FailureReason::ModelBrokeOff,
            Kind::Rejected => FailureReason::ModelRejected,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FailureReason::ProviderFailed => "provider_failed",
            FailureReason::ModelTimedOut => "model_timed_out",
            FailureReason::ModelRateLimited => "model_rate_limited",
            FailureReason::ContextTooLong => "context_too_long",
            FailureReason::ModelBrokeOff => "model_broke_off",
            FailureReason::ModelRejected => "model_rejected",
            FailureReason::RetriesExhausted => "retries_exhausted",
            FailureReason::NotRetryable => "not_retryable",
            FailureReason::SuspendFailed => "suspend_failed",
            FailureReason::ToolMisconfigured => "tool_misconfigured",
            FailureReason::StateUnreadable => "state_unreadable",
            FailureReason::StoreFailed => "store_failed",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "provider_failed" => FailureReason::ProviderFailed,
            "model_timed_out" => FailureReason::ModelTimedOut,
            "model_rate_limited" => FailureReason::ModelRateLimited,
            "context_too_long" => FailureReason::ContextTooLong,
            "model_broke_off" => FailureReason::ModelBrokeOff,
            "model_rejected" => FailureReason::ModelRejected,
            "retries_exhausted" => FailureReason::RetriesExhausted,
            "not_retryable" => FailureReason::NotRetryable,
            "suspend_failed" => FailureReason::SuspendFailed,
            "tool_misconfigured" => FailureReason::ToolMisconfigured,
            "state_unreadable" => FailureReason::StateUnreadable,
            "store_failed" => FailureReason::StoreFailed,
            _ => return None,
        })
    }
}

/// How one call into the runtime ended. New variants may appear: keep a default arm.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunOutcome {
    Completed {
        answer: String,
        /// The round cap was reached and the answer is a closing one given without tools.
        truncated: bool,
    },
    AwaitingApproval {
        pause: ApprovalPause,
    },
    AwaitingInput {
        pause: InputPause,
    },
    Failed {
        reason: FailureReason,
    },
    Cancelled,
    /// A retryable failure put the run back in the queue; a worker will pick it up again.
    Requeued,
    /// The segment lost its lease (reaped or claimed elsewhere) and stopped without settling.
    LeaseLost,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    pub run_id: Uuid,
    pub outcome: RunOutcome,
    /// The transcript as this segment left it (for a completed run, ending in the answer).
    pub messages: Vec<ChatMessage>,
}

/// Answer of `cancel_if_waiting`. `status` is what the run holds after the attempt; `None` for an
/// unknown run or an actor who may not see it (deliberately indistinguishable). A failed read is
/// an error of its own, never `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardedCancelResult {
    pub cancelled: bool,
    pub status: Option<RunStatus>,
}

/// A run as `status()` shows it: no transcript, but the pause a chat has to render.
#[derive(Debug, Clone, PartialEq)]
pub struct RunView {
    pub run_id: Uuid,
    pub status: RunStatus,
    pub owner_user_id: i64,
    pub configuration: String,
    pub process: bool,
    pub rounds: u32,
    pub truncated: bool,
    pub requeue_count: u32,
    pub termination_reason: Option<String>,
    /// The final answer of a completed run, kept so a chat can recover it after a crash.
    pub answer: Option<String>,
    pub pause: Option<PauseView>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// The last change: for a waiting run, since when it waits (or since its card came back).
    pub updated_at: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A provider call is about to be made.
    Request,
    /// A provider answered.
    Llm,
    /// A tool call was handled (executed, refused or denied).
    Tool,
    Approval,
    Input,
    /// The run changed status (suspend, settle, requeue, cancel).
    Status,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Request => "request",
            EventKind::Llm => "llm",
            EventKind::Tool => "tool",
            EventKind::Approval => "approval",
            EventKind::Input => "input",
            EventKind::Status => "status",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "request" => EventKind::Request,
            "llm" => EventKind::Llm,
            "tool" => EventKind::Tool,
            "approval" => EventKind::Approval,
            "input" => EventKind::Input,
            "status" => EventKind::Status,
            _ => return None,
        })
    }
}

/// One entry of a run's event stream. Payloads hold metadata only: never arguments, results or
/// submitted values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    pub sequence: i64,
    pub kind: EventKind,
    pub round: u32,
    pub payload: serde_json::Value,
    pub created_at: i64,
}
