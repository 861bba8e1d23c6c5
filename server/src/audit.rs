//! The audit log as the domain sees it: what happened to a run that waits for a person, who did
//! it, from where, and what it concerned. No SQL here (`store::audit` writes and reads it); every
//! entry is written by the store in the transaction of the state change it records.

use app::i18n::{Lang, Text};
use runtime::{ApprovalPause, CallPreview, DenialReason, DiffPart, InputPause, PauseView};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::conversation::{DecisionDetail, Reply};

/// What happened. The strings are in the database and must not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A run started waiting on a question or a card (or waits again after a hand-back).
    Waiting,
    Answered,
    Approved,
    /// Approved with arguments a person changed.
    ApprovedEdited,
    Denied,
    /// Approved by a standing permission, without a card.
    AutoApproved,
    Expired,
    /// Ended because the reader moved on: a new message, Stop, a deleted conversation.
    Cancelled,
    /// Taken out of the runs inbox by its owner.
    Dismissed,
    Failed,
    /// The tool that asked took its question back (its time limit, its server gone); the run
    /// goes on without an answer.
    Withdrawn,
}

impl Action {
    pub const ALL: [Action; 11] = [
        Action::Waiting,
        Action::Answered,
        Action::Approved,
        Action::ApprovedEdited,
        Action::Denied,
        Action::AutoApproved,
        Action::Expired,
        Action::Cancelled,
        Action::Dismissed,
        Action::Failed,
        Action::Withdrawn,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Waiting => "waiting",
            Action::Answered => "answered",
            Action::Approved => "approved",
            Action::ApprovedEdited => "approved_edited",
            Action::Denied => "denied",
            Action::AutoApproved => "auto_approved",
            Action::Expired => "expired",
            Action::Cancelled => "cancelled",
            Action::Dismissed => "dismissed",
            Action::Failed => "failed",
            Action::Withdrawn => "withdrawn",
        }
    }

    pub fn parse(value: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|action| action.as_str() == value)
    }

    /// The webhook event this action is announced as, if any (`webhook_outbox.kind`).
    pub fn webhook_kind(self) -> Option<&'static str> {
        match self {
            Action::Waiting => Some("run.waiting"),
            Action::Answered
            | Action::Approved
            | Action::ApprovedEdited
            | Action::Denied
            | Action::AutoApproved
            | Action::Dismissed => Some("run.decided"),
            Action::Expired => Some("run.expired"),
            Action::Failed => Some("run.failed"),
            Action::Cancelled | Action::Withdrawn => None,
        }
    }
}

/// Where it was done from. The strings are in the database and must not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Surface {
    Chat,
    /// The runs inbox (`/runs`).
    Inbox,
    /// The JSON input route (`POST /ai-chat/conversations/input`).
    Api,
    /// The background worker: no person.
    Worker,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Chat => "chat",
            Surface::Inbox => "inbox",
            Surface::Api => "api",
            Surface::Worker => "worker",
        }
    }

    pub fn parse(value: &str) -> Option<Surface> {
        [Surface::Chat, Surface::Inbox, Surface::Api, Surface::Worker].into_iter().find(|s| s.as_str() == value)
    }
}

/// The action as the audit page and a mail name it, in the reader's language.
pub fn action_label(action: Action, lang: Lang) -> &'static str {
    lang.t(match action {
        Action::Waiting => Text::AuditWaiting,
        Action::Answered => Text::AuditAnswered,
        Action::Approved => Text::AuditApproved,
        Action::ApprovedEdited => Text::AuditApprovedEdited,
        Action::Denied => Text::AuditDenied,
        Action::AutoApproved => Text::AuditAutoApproved,
        Action::Expired => Text::AuditExpired,
        Action::Cancelled => Text::AuditCancelled,
        Action::Dismissed => Text::AuditDismissed,
        Action::Failed => Text::AuditFailed,
        Action::Withdrawn => Text::AuditWithdrawn,
    })
}

/// The stored code of a denial's kind: the process card's "Another variant" and "Skip", or the
/// plain "Cancel".
pub fn denial_code(reason: Option<DenialReason>) -> &'static str {
    match reason {
        Some(reason) => reason.as_str(),
        None => "cancel",
    }
}

/// One event, as it is written. The conversation's title and owner and the names of the people
/// are read by the store in the same write, so they are as they were then.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub action: Action,
    pub surface: Surface,
    /// Who did it; `None` for the system.
    pub actor: Option<i64>,
    pub run_id: Option<Uuid>,
    pub tools: Vec<String>,
    /// `[{"tool", "arguments"}]` as proposed.
    pub arguments: Option<Value>,
    /// The same, as run, when a person changed them.
    pub arguments_run: Option<Value>,
    /// What the card showed it would change.
    pub preview: Option<String>,
    pub answer: Option<String>,
    /// A denial's kind, or why something failed or came back.
    pub reason: Option<String>,
    /// The webhook event's id (`webhook_outbox.event_id`), made once so a retried write keeps it.
    pub event_id: Uuid,
}

impl Entry {
    pub fn new(action: Action, surface: Surface, actor: Option<i64>, run_id: Option<Uuid>) -> Entry {
        Entry {
            action,
            surface,
            actor,
            run_id,
            tools: Vec::new(),
            arguments: None,
            arguments_run: None,
            preview: None,
            answer: None,
            reason: None,
            event_id: Uuid::new_v4(),
        }
    }

    /// The card's tools, their arguments and what it would change.
    pub fn with_card(mut self, pause: &ApprovalPause) -> Entry {
        self.tools = pause.pending_calls.iter().map(|call| call.name.clone()).collect();
        self.arguments = Some(Value::Array(
            pause.pending_calls.iter().map(|call| json!({ "tool": call.name, "arguments": call.arguments })).collect(),
        ));
        let previews: Vec<String> =
            pause.pending_calls.iter().filter_map(|call| call.preview.as_ref()).map(preview_text).collect();
        self.preview = (!previews.is_empty()).then(|| previews.join("\n\n"));
        self
    }

    /// The asking tool and the question's schema.
    pub fn with_question(mut self, pause: &InputPause) -> Entry {
        self.tools = vec![pause.tool_name.clone()];
        self.arguments = Some(json!([{ "tool": pause.tool_name, "schema": pause.schema }]));
        self
    }

    /// What the run waits on: a card's or a question's fields.
    pub fn with_pause(self, pause: Option<&PauseView>) -> Entry {
        match pause {
            Some(PauseView::Approval(pause)) => self.with_card(pause),
            Some(PauseView::Input(pause)) => self.with_question(pause),
            _ => self,
        }
    }

    pub fn with_reason(mut self, reason: impl Into<String>) -> Entry {
        self.reason = Some(reason.into());
        self
    }

    /// The tools, comma-separated, as stored.
    pub fn tools_text(&self) -> Option<String> {
        (!self.tools.is_empty()).then(|| self.tools.join(","))
    }
}

/// A decision on a card as the audit records it: the one place a recorded decision becomes an
/// entry's action and fields. An approval with edited arguments is `approved_edited` with the
/// arguments as run; one a standing permission gave is `auto_approved`; a denial keeps its kind
/// and the words for the model.
pub fn decision_entry(
    approve: bool,
    reason: Option<DenialReason>,
    detail: &DecisionDetail,
    decider: i64,
    surface: Surface,
    run_id: Uuid,
    pause: &ApprovalPause,
) -> Entry {
    let action = match (approve, detail.policy, detail.edits.is_empty()) {
        (false, _, _) => Action::Denied,
        (true, Some(_), _) => Action::AutoApproved,
        (true, None, false) => Action::ApprovedEdited,
        (true, None, true) => Action::Approved,
    };
    let mut entry = Entry::new(action, surface, Some(decider), Some(run_id)).with_card(pause);
    if !detail.edits.is_empty() {
        entry.arguments_run = Some(Value::Array(
            pause
                .pending_calls
                .iter()
                .map(|call| {
                    let arguments = detail.edits.get(&call.call_id).unwrap_or(&call.arguments);
                    json!({ "tool": call.name, "arguments": arguments })
                })
                .collect(),
        ));
    }
    if let Some(policy) = detail.policy {
        entry.reason = Some(format!("policy {policy}"));
    }
    if !approve {
        entry.reason = Some(denial_code(reason).to_string());
        entry.answer = detail.message.clone();
    }
    entry
}

/// An answer to a question as the audit records it: the line the reader saw it as.
pub fn answer_entry(
    reply: &Reply,
    display: &str,
    answerer: i64,
    surface: Surface,
    run_id: Uuid,
    pause: &InputPause,
) -> Entry {
    // The question itself (its schema) is on record in the run's `waiting` row; the answer's row
    // names the tool and keeps what was answered, rather than the schema once more per answer.
    let mut entry = Entry::new(Action::Answered, surface, Some(answerer), Some(run_id));
    entry.tools = vec![pause.tool_name.clone()];
    entry.answer = Some(match reply {
        Reply::Values(values) if display.is_empty() => Value::Object(values.clone()).to_string(),
        _ => display.to_string(),
    });
    if matches!(reply, Reply::Decline) {
        entry.reason = Some("declined".into());
    }
    entry
}

/// A preview as plain text: its subject, then per field the words that go `[-…-]` and come `{+…+}`.
pub fn preview_text(preview: &CallPreview) -> String {
    match preview {
        CallPreview::Failed { reason } => format!("(no preview: {reason})"),
        CallPreview::Ready(preview) => {
            let mut text = preview.subject.clone();
            for change in &preview.changes {
                text.push_str(&format!("\n{}: ", change.label));
                for part in &change.diff {
                    match part {
                        DiffPart::Same(words) => text.push_str(words),
                        DiffPart::Removed(words) => text.push_str(&format!("[-{words}-]")),
                        DiffPart::Added(words) => text.push_str(&format!("{{+{words}+}}")),
                    }
                }
            }
            text
        }
    }
}

/// A row as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub id: i64,
    pub at: i64,
    pub action: Action,
    pub actor_id: Option<i64>,
    pub actor_name: Option<String>,
    pub owner_id: Option<i64>,
    pub owner_name: Option<String>,
    pub conversation_id: String,
    pub conversation_title: String,
    pub run_id: Option<String>,
    pub surface: Surface,
    pub tools: Vec<String>,
    pub arguments: Option<String>,
    pub arguments_run: Option<String>,
    pub preview: Option<String>,
    pub answer: Option<String>,
    pub reason: Option<String>,
}

/// Which rows a reader asks for. `owner`: only rows of this user's conversations (an editor's
/// view; `None` for an admin's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub owner: Option<i64>,
    /// A user's name: rows where they acted or whose conversation it is.
    pub user: Option<String>,
    pub tool: Option<String>,
    /// Unix seconds, inclusive.
    pub from: Option<i64>,
    /// Unix seconds, exclusive.
    pub until: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_and_surface_reads_back_as_itself() {
        for action in Action::ALL {
            assert_eq!(Action::parse(action.as_str()), Some(action));
        }
        for surface in [Surface::Chat, Surface::Inbox, Surface::Api, Surface::Worker] {
            assert_eq!(Surface::parse(surface.as_str()), Some(surface));
        }
        assert_eq!(Action::parse("rewritten"), None);
        assert_eq!(denial_code(None), "cancel");
        assert_eq!(denial_code(Some(DenialReason::Skip)), "skip");
    }
}
