//! A conversation as the chat's domain sees it: its status, what it waits on, what travels to the
//! worker, and why it stopped. Typed here; the store turns its rows into these (and refuses a row
//! it cannot read), and the chat service maps them to `app`'s view models at the edge.

use std::collections::BTreeMap;

use runtime::{DenialReason, FailureReason, RunStatus};
use serde_json::{Map, Value};
use uuid::Uuid;

/// The stored status of a conversation. The strings are in the database and must not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConversationStatus {
    Idle,
    /// A turn is being worked on, or an answer or decision travels to the run.
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

    /// Parked on a run that waits for a decision or an answer.
    pub fn is_waiting(self) -> bool {
        matches!(self, ConversationStatus::AwaitingApproval | ConversationStatus::AwaitingInput)
    }
}

/// Which kind of answer or decision was recorded for the worker (`approval_decision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PendingDecision {
    Approve,
    Deny,
    Input,
}

impl PendingDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            PendingDecision::Approve => "approve",
            PendingDecision::Deny => "deny",
            PendingDecision::Input => "input",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "approve" => PendingDecision::Approve,
            "deny" => PendingDecision::Deny,
            "input" => PendingDecision::Input,
            _ => return None,
        })
    }
}

/// An answer or a decision on its way to the run. Present exactly while it travels: the
/// conversation is `processing` until the worker delivers it or hands it back.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded {
    Answer { digest: String, reply: Reply },
    Decision { approve: bool, digest: String, reason: Option<DenialReason>, detail: DecisionDetail },
}

/// What a decision carries beyond yes or no, stored with it so whichever worker delivers it
/// delivers the same: the person's words for the model with a denial, the arguments they edited
/// before approving, and the standing approval (policy) that decided it instead of a person.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DecisionDetail {
    pub message: Option<String>,
    /// Call id → the arguments that call runs with instead of the model's.
    pub edits: BTreeMap<String, Value>,
    /// The `approval_policies` row that approved it: an auto-approval.
    pub policy: Option<i64>,
}

impl DecisionDetail {
    /// How `edits` is stored: `None` for none, else a JSON object of call id → arguments.
    pub fn encode_edits(&self) -> Option<String> {
        (!self.edits.is_empty()).then(|| serde_json::to_string(&self.edits).unwrap_or_default())
    }

    /// `None` when the stored text is not such an object.
    pub fn decode_edits(raw: Option<&str>) -> Option<BTreeMap<String, Value>> {
        match raw {
            None => Some(BTreeMap::new()),
            Some(raw) => serde_json::from_str(raw).ok(),
        }
    }
}

/// What goes back to a question.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The checked values of an answer.
    Values(Map<String, Value>),
    /// The reader declined a question a tool asked while it ran.
    Decline,
    /// The tool stopped waiting for an answer (it says why): the question is withdrawn and the run
    /// carries on without it.
    Withdrawn(String),
}

impl Reply {
    /// How a reply is stored in `pending_input`: the values as a JSON object; the others as a JSON
    /// array, which no answer's values can be.
    pub fn encode(&self) -> String {
        match self {
            Reply::Values(values) => Value::Object(values.clone()).to_string(),
            Reply::Decline => serde_json::json!(["decline"]).to_string(),
            Reply::Withdrawn(reason) => serde_json::json!(["withdrawn", reason]).to_string(),
        }
    }

    pub fn decode(text: &str) -> Option<Reply> {
        match serde_json::from_str::<Value>(text).ok()? {
            Value::Object(values) => Some(Reply::Values(values)),
            Value::Array(items) => match items.as_slice() {
                [Value::String(kind)] if kind == "decline" => Some(Reply::Decline),
                [Value::String(kind), Value::String(reason)] if kind == "withdrawn" => {
                    Some(Reply::Withdrawn(reason.clone()))
                }
                _ => None,
            },
            _ => None,
        }
    }
}

impl Recorded {
    /// A decision as the runtime takes it, with the edits and the words it carries.
    pub fn approval(&self) -> Option<runtime::ApprovalDecision> {
        let Recorded::Decision { approve, digest, reason, detail } = self else { return None };
        Some(if !*approve {
            runtime::ApprovalDecision::deny(digest.clone(), *reason).with_message(detail.message.clone())
        } else if detail.edits.is_empty() {
            runtime::ApprovalDecision::approve(digest.clone())
        } else {
            runtime::ApprovalDecision::approve_edited(digest.clone(), detail.edits.clone())
        })
    }

    pub fn kind(&self) -> PendingDecision {
        match self {
            Recorded::Answer { .. } => PendingDecision::Input,
            Recorded::Decision { approve: true, .. } => PendingDecision::Approve,
            Recorded::Decision { approve: false, .. } => PendingDecision::Deny,
        }
    }

    /// The status the conversation returns to when this is handed back.
    pub fn waiting_status(&self) -> ConversationStatus {
        match self {
            Recorded::Answer { .. } => ConversationStatus::AwaitingInput,
            Recorded::Decision { .. } => ConversationStatus::AwaitingApproval,
        }
    }

    /// The status the run is in while this can still be delivered to it.
    pub fn waiting_run_status(&self) -> RunStatus {
        match self {
            Recorded::Answer { .. } => RunStatus::WaitingForInput,
            Recorded::Decision { .. } => RunStatus::WaitingForApproval,
        }
    }
}

/// Why a conversation stopped or why a question or card came back (`error_code`). Codes, not
/// sentences, are stored, so every reader gets their own language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    // A question handed back.
    InputStale,
    InputInvalid,
    InputNotPermitted,
    InputAlreadyResuming,
    InputConfigOff,
    NotAwaitingInput,
    InputNotTaken,
    /// The tool the question belongs to (or a call of its turn) is no longer registered.
    InputToolGone,
    // A card handed back.
    StaleTurn,
    AlreadyResuming,
    ApproverNotPermitted,
    /// Also a turn that could not start: the chat's configuration is deactivated.
    ConfigurationInactive,
    NotAwaitingApproval,
    DecisionFailed,
    /// A call on the card has a tool that is no longer registered.
    ApprovalToolGone,
    /// What a write would change moved on since its preview; the card has a fresh one.
    PreviewStale,
    /// A write's preview could not be made; the card cannot apply.
    PreviewFailed,
    /// Either, when no worker took the recorded answer or decision.
    NotDelivered,
    /// Edited arguments the runtime refused (they no longer fit the call or its tool).
    EditInvalid,
    /// The tool could not preview the edited call, so nothing was applied.
    EditPreviewFailed,
    /// A note beside a turn that went on: the tool stopped waiting for an answer.
    QuestionWithdrawn,
    /// A note beside a turn that went on: the MCP server said the step at the link it asked the
    /// reader to open is done (`mcp::LINK_COMPLETED`), which answers the question.
    LinkCompleted,
    // A turn that failed.
    Run(FailureReason),
    Cancelled,
    RunMissing,
    Internal,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InputStale => "input_stale",
            ErrorCode::InputInvalid => "input_invalid",
            ErrorCode::InputNotPermitted => "input_not_permitted",
            ErrorCode::InputAlreadyResuming => "input_already_resuming",
            ErrorCode::InputConfigOff => "input_config_off",
            ErrorCode::NotAwaitingInput => "not_awaiting_input",
            ErrorCode::InputNotTaken => "input_not_taken",
            ErrorCode::InputToolGone => "input_tool_gone",
            ErrorCode::ApprovalToolGone => "approval_tool_gone",
            ErrorCode::StaleTurn => "stale_turn",
            ErrorCode::AlreadyResuming => "already_resuming",
            ErrorCode::ApproverNotPermitted => "approver_not_permitted",
            ErrorCode::ConfigurationInactive => "configuration_inactive",
            ErrorCode::NotAwaitingApproval => "not_awaiting_approval",
            ErrorCode::DecisionFailed => "decision_failed",
            ErrorCode::PreviewStale => "preview_stale",
            ErrorCode::PreviewFailed => "preview_failed",
            ErrorCode::NotDelivered => "not_delivered",
            ErrorCode::EditInvalid => "edit_invalid",
            ErrorCode::EditPreviewFailed => "edit_preview_failed",
            ErrorCode::QuestionWithdrawn => "question_withdrawn",
            ErrorCode::LinkCompleted => "link_completed",
            ErrorCode::Run(reason) => reason.as_str(),
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::RunMissing => "run_missing",
            ErrorCode::Internal => "internal",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "input_stale" => ErrorCode::InputStale,
            "input_invalid" => ErrorCode::InputInvalid,
            "input_not_permitted" => ErrorCode::InputNotPermitted,
            "input_already_resuming" => ErrorCode::InputAlreadyResuming,
            "input_config_off" => ErrorCode::InputConfigOff,
            "not_awaiting_input" => ErrorCode::NotAwaitingInput,
            "input_not_taken" => ErrorCode::InputNotTaken,
            "input_tool_gone" => ErrorCode::InputToolGone,
            "approval_tool_gone" => ErrorCode::ApprovalToolGone,
            "stale_turn" => ErrorCode::StaleTurn,
            "already_resuming" => ErrorCode::AlreadyResuming,
            "approver_not_permitted" => ErrorCode::ApproverNotPermitted,
            "configuration_inactive" => ErrorCode::ConfigurationInactive,
            "not_awaiting_approval" => ErrorCode::NotAwaitingApproval,
            "decision_failed" => ErrorCode::DecisionFailed,
            "preview_stale" => ErrorCode::PreviewStale,
            "preview_failed" => ErrorCode::PreviewFailed,
            "not_delivered" => ErrorCode::NotDelivered,
            "edit_invalid" => ErrorCode::EditInvalid,
            "edit_preview_failed" => ErrorCode::EditPreviewFailed,
            "question_withdrawn" => ErrorCode::QuestionWithdrawn,
            "link_completed" => ErrorCode::LinkCompleted,
            "cancelled" => ErrorCode::Cancelled,
            "run_missing" => ErrorCode::RunMissing,
            "internal" => ErrorCode::Internal,
            other => ErrorCode::Run(FailureReason::parse(other)?),
        })
    }
}

/// A conversation as a list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedConversation {
    pub id: String,
    pub title: String,
    pub status: ConversationStatus,
}

/// A conversation row, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub id: String,
    pub user_id: i64,
    pub title: String,
    pub status: ConversationStatus,
    pub error: Option<ErrorCode>,
    /// The run the conversation's turn is carried by, or waits on.
    pub run_id: Option<Uuid>,
    pub recorded: Option<Recorded>,
    /// The guided skill it was started with; a conversation with a process skill is a process run.
    pub skill: Option<String>,
    /// The content page it is about.
    pub page_id: Option<i64>,
    pub updated_at: i64,
    /// The last transcript line at the time a card was last approved: an edit at or before it
    /// replaces a part in which changes were applied (and stay).
    pub approved_through: Option<i64>,
    /// Who decided the recorded decision, when it is someone else than the owner may be: a reviewer.
    pub decided_by: Option<i64>,
    /// When the recorded answer or decision was recorded (Unix milliseconds).
    pub recorded_at_ms: Option<i64>,
}

/// Who wrote a transcript line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageRole {
    User,
    Assistant,
}

impl MessageRole {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageRole::User => "user",
            MessageRole::Assistant => "assistant",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "user" => Some(MessageRole::User),
            "assistant" => Some(MessageRole::Assistant),
            _ => None,
        }
    }
}

/// Marks the transcript line that carries an answer or a decision, so an undelivered one can be
/// taken out again when the question or card is handed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    InputAnswer,
    Decision,
    /// A reply the reader stopped while the model wrote it: the text as far as it got.
    Stopped,
    /// The answer of a run the conversation had moved on from, carried on after a decision in
    /// the runs inbox.
    DecidedElsewhere,
    /// Such a run failed (the line has no text; the page says it in the reader's language).
    ElsewhereFailed,
    /// A run waited too long for a decision or an answer and was cancelled (no text either).
    Expired,
    /// Its owner dismissed the run from the runs inbox; the line's text is their name, which the
    /// page puts in a sentence in the reader's language (the model is not shown it).
    Dismissed,
}

impl Notice {
    pub fn as_str(self) -> &'static str {
        match self {
            Notice::InputAnswer => "input_answer",
            Notice::Decision => "decision",
            Notice::Stopped => "stopped",
            Notice::DecidedElsewhere => "decided_elsewhere",
            Notice::ElsewhereFailed => "elsewhere_failed",
            Notice::Expired => "expired",
            Notice::Dismissed => "dismissed",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "input_answer" => Some(Notice::InputAnswer),
            "decision" => Some(Notice::Decision),
            "stopped" => Some(Notice::Stopped),
            "decided_elsewhere" => Some(Notice::DecidedElsewhere),
            "elsewhere_failed" => Some(Notice::ElsewhereFailed),
            "expired" => Some(Notice::Expired),
            "dismissed" => Some(Notice::Dismissed),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub id: i64,
    pub role: MessageRole,
    pub content: String,
    pub notice: Option<Notice>,
    /// The assistant line's safe HTML as stored when it was written, if the renderer that made it
    /// is this build's.
    pub html: Option<String>,
}

impl Message {
    /// The reader's own line, which the reader may edit and run the conversation again from (not
    /// while a turn runs: that is the conversation's status, not the line's).
    pub fn is_editable(&self) -> bool {
        self.role == MessageRole::User && self.notice.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_as_itself_and_unknown_ones_are_refused() {
        let mut codes = vec![
            ErrorCode::InputStale,
            ErrorCode::InputInvalid,
            ErrorCode::InputNotPermitted,
            ErrorCode::InputAlreadyResuming,
            ErrorCode::InputConfigOff,
            ErrorCode::NotAwaitingInput,
            ErrorCode::InputNotTaken,
            ErrorCode::InputToolGone,
            ErrorCode::ApprovalToolGone,
            ErrorCode::StaleTurn,
            ErrorCode::AlreadyResuming,
            ErrorCode::ApproverNotPermitted,
            ErrorCode::ConfigurationInactive,
            ErrorCode::NotAwaitingApproval,
            ErrorCode::DecisionFailed,
            ErrorCode::NotDelivered,
            ErrorCode::EditInvalid,
            ErrorCode::EditPreviewFailed,
            ErrorCode::QuestionWithdrawn,
            ErrorCode::LinkCompleted,
            ErrorCode::Cancelled,
            ErrorCode::RunMissing,
            ErrorCode::Internal,
        ];
        codes.extend(
            [
                FailureReason::ProviderFailed,
                FailureReason::StateUnreadable,
                FailureReason::StoreFailed,
                FailureReason::ModelTimedOut,
                FailureReason::ModelRateLimited,
                FailureReason::ContextTooLong,
                FailureReason::ModelBrokeOff,
                FailureReason::ModelRejected,
            ]
            .map(ErrorCode::Run),
        );
        for code in codes {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(ErrorCode::parse("from_a_newer_version"), None);
        for status in [
            ConversationStatus::Idle,
            ConversationStatus::Processing,
            ConversationStatus::AwaitingApproval,
            ConversationStatus::AwaitingInput,
            ConversationStatus::Failed,
        ] {
            assert_eq!(ConversationStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(ConversationStatus::parse("paused"), None);
        for decision in [PendingDecision::Approve, PendingDecision::Deny, PendingDecision::Input] {
            assert_eq!(PendingDecision::parse(decision.as_str()), Some(decision));
        }
        assert_eq!(MessageRole::parse("system"), None);
        assert_eq!(Notice::parse(Notice::Decision.as_str()), Some(Notice::Decision));
    }

    #[test]
    fn replies_read_back_as_themselves_and_values_never_read_as_a_decline() {
        let values =
            Reply::Values(serde_json::json!({ "decline": true, "0": "withdrawn" }).as_object().cloned().unwrap());
        for reply in [values, Reply::Decline, Reply::Withdrawn("the server went away".into())] {
            assert_eq!(Reply::decode(&reply.encode()), Some(reply));
        }
        assert_eq!(Reply::decode("\"decline\""), None);
        assert_eq!(Reply::decode("[\"shrug\"]"), None);
    }
}
