//! Typed refusals of `approve` and `submit_input`, and the runtime's other errors.
//!
//! A refusal happens before any tool runs. Each one either comes before the claim (the run is not
//! touched) or after it with a release (the run is back in the same waiting state); the variants
//! documented as settling are the exception.

use crate::run::RunStatus;
use crate::store::StoreError;
use question::schema::InvalidSubmission;

#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// Unknown run, or it does not wait for this kind of answer (any more).
    #[error("the run is not waiting for {expected}")]
    NotWaiting { expected: RunStatus },
    /// Neither the initiator nor an admin.
    #[error("the actor may not act on this run")]
    AccessDenied,
    /// A process run is decided only by its initiator, in the chat; admins included.
    #[error("a process run is decided only by its initiator")]
    InitiatorOnly,
    /// Denials are refused too: they resume the loop, and a deactivated configuration must not run.
    #[error("the run's configuration is deactivated")]
    ConfigurationInactive,
    /// The stored state cannot be read. The run keeps waiting (the state is kept for repair).
    #[error("the run's suspended state cannot be read")]
    CorruptState,
    #[error("the submission does not match the question: {0}")]
    InvalidSubmission(InvalidSubmission),
    /// Someone else claimed the run first; the winner owns it.
    #[error("the run is already being resumed")]
    AlreadyResuming,
    /// The digest is missing, or the turn it names is no longer the pending one.
    #[error("the decision was made on a turn that is no longer pending")]
    StaleTurn,
    #[error("the approver may not run a pending write")]
    ApproverNotPermitted,
    #[error("the submitter may not run a pending call")]
    SubmitterNotPermitted,
    /// A pending call's tool (or the tool that asked) is not registered, after the process's
    /// tool sources listed their tools once: it was removed, or its server is down. Not a
    /// permission problem. The run keeps waiting.
    #[error("the tool {name:?} of a pending call is no longer registered")]
    ToolGone { name: String },
    /// What a pending write would change is no longer what the card showed. Nothing ran; the run
    /// waits with the fresh preview (and a new digest).
    #[error("the record changed since the preview was made")]
    PreviewStale,
    /// A pending write's preview could not be made (now or when the card was shown). Nothing
    /// ran; the run waits, and the card says why.
    #[error("no preview of a pending write could be made")]
    PreviewFailed,
    /// Edited arguments name a call the turn does not have, or do not fit the tool's schema.
    /// Nothing ran; the run waits on the card as it was.
    #[error("the edited arguments do not fit: {0}")]
    EditInvalid(String),
    /// The preview of an edited call could not be made (the tool refused the edit). Nothing ran;
    /// the run waits on the card as it was.
    #[error("no preview of an edited call could be made")]
    EditPreviewFailed,
    /// The store failed. If this happened after the claim the run was settled FAILED.
    #[error("the run's state is unavailable")]
    Unavailable(#[source] StoreError),
}

impl Refusal {
    /// A stable code for callers to store and map to their own words (e.g. a hand-back reason).
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::NotWaiting { .. } => "not_waiting",
            Refusal::AccessDenied => "access_denied",
            Refusal::InitiatorOnly => "initiator_only",
            Refusal::ConfigurationInactive => "configuration_inactive",
            Refusal::CorruptState => "corrupt_state",
            Refusal::InvalidSubmission(_) => "invalid_submission",
            Refusal::AlreadyResuming => "already_resuming",
            Refusal::StaleTurn => "stale_turn",
            Refusal::ApproverNotPermitted => "approver_not_permitted",
            Refusal::SubmitterNotPermitted => "submitter_not_permitted",
            Refusal::ToolGone { .. } => "tool_gone",
            Refusal::PreviewStale => "preview_stale",
            Refusal::PreviewFailed => "preview_failed",
            Refusal::EditInvalid(_) => "edit_invalid",
            Refusal::EditPreviewFailed => "edit_preview_failed",
            Refusal::Unavailable(_) => "unavailable",
        }
    }
}

/// Failures of the runtime's other entry points. Messages are for logs; the store error may name
/// SQL, so callers show users a sentence of their own.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the configuration {0:?} is deactivated")]
    ConfigurationInactive(String),
    #[error("the run could not be claimed")]
    ClaimLost,
}
