//! The chat's rows as they are stored, and how they become `conversation` types: a value this
//! build cannot read is refused (`StoreError::Corrupt`), never defaulted.

use runtime::DenialReason;
use uuid::Uuid;

use super::StoreError;
use crate::conversation::{
    Conversation, ConversationStatus, DecisionDetail, ErrorCode, Message, MessageRole, Notice, PendingDecision,
    Recorded, Reply,
};
use crate::markdown::RENDERER_VERSION;

#[derive(sqlx::FromRow)]
pub(super) struct ConversationRow {
    id: String,
    user_id: i64,
    title: String,
    status: String,
    error_code: Option<String>,
    run_id: Option<String>,
    approval_decision: Option<String>,
    approval_turn_digest: Option<String>,
    pending_input: Option<String>,
    approval_deny_reason: Option<String>,
    skill: Option<String>,
    page_id: Option<i64>,
    updated_at: i64,
    approved_through: Option<i64>,
    approval_decided_by: Option<i64>,
    recorded_at_ms: Option<i64>,
    approval_message: Option<String>,
    approval_edits: Option<String>,
    approval_policy: Option<i64>,
}

fn corrupt(what: &str, id: &str, value: &str) -> StoreError {
    StoreError::Corrupt(format!("{what} {value:?} of conversation {id}"))
}

/// The stored status of conversation `id`; one this build does not know is refused.
pub(super) fn status_of(id: &str, stored: &str) -> Result<ConversationStatus, StoreError> {
    ConversationStatus::parse(stored).ok_or_else(|| corrupt("status", id, stored))
}

impl TryFrom<ConversationRow> for Conversation {
    type Error = StoreError;

    fn try_from(row: ConversationRow) -> Result<Self, StoreError> {
        let id = row.id;
        let status = status_of(&id, &row.status)?;
        let error = match row.error_code.as_deref() {
            None => None,
            Some(code) => Some(ErrorCode::parse(code).ok_or_else(|| corrupt("error code", &id, code))?),
        };
        let run_id = match row.run_id.as_deref() {
            None => None,
            Some(run) => Some(Uuid::parse_str(run).map_err(|_| corrupt("run id", &id, run))?),
        };
        let recorded = match row.approval_decision.as_deref() {
            None => None,
            Some(raw) => {
                let kind = PendingDecision::parse(raw).ok_or_else(|| corrupt("decision", &id, raw))?;
                let digest = row.approval_turn_digest.ok_or_else(|| corrupt("digest", &id, "NULL"))?;
                Some(match kind {
                    PendingDecision::Input => {
                        let raw = row.pending_input.unwrap_or_default();
                        let reply = Reply::decode(&raw).ok_or_else(|| corrupt("answer", &id, &raw))?;
                        Recorded::Answer { digest, reply }
                    }
                    PendingDecision::Approve | PendingDecision::Deny => {
                        let reason = match row.approval_deny_reason.as_deref() {
                            None => None,
                            Some(reason) => {
                                Some(DenialReason::parse(reason).ok_or_else(|| corrupt("deny reason", &id, reason))?)
                            }
                        };
                        let edits = DecisionDetail::decode_edits(row.approval_edits.as_deref())
                            .ok_or_else(|| corrupt("edits", &id, row.approval_edits.as_deref().unwrap_or_default()))?;
                        let detail =
                            DecisionDetail { message: row.approval_message, edits, policy: row.approval_policy };
                        Recorded::Decision { approve: kind == PendingDecision::Approve, digest, reason, detail }
                    }
                })
            }
        };
        Ok(Conversation {
            id,
            user_id: row.user_id,
            title: row.title,
            status,
            error,
            run_id,
            recorded,
            skill: row.skill,
            page_id: row.page_id,
            updated_at: row.updated_at,
            approved_through: row.approved_through,
            decided_by: row.approval_decided_by,
            recorded_at_ms: row.recorded_at_ms,
        })
    }
}

#[derive(sqlx::FromRow, serde::Deserialize)]
pub(super) struct MessageRow {
    id: i64,
    role: String,
    content: String,
    notice: Option<String>,
    html: Option<String>,
    html_version: Option<i64>,
}

impl TryFrom<MessageRow> for Message {
    type Error = StoreError;

    fn try_from(row: MessageRow) -> Result<Self, StoreError> {
        let role =
            MessageRole::parse(&row.role).ok_or_else(|| StoreError::Corrupt(format!("message role {:?}", row.role)))?;
        let notice = match row.notice.as_deref() {
            None => None,
            Some(notice) => {
                Some(Notice::parse(notice).ok_or_else(|| StoreError::Corrupt(format!("message notice {notice:?}")))?)
            }
        };
        let html = row.html.filter(|_| row.html_version == Some(RENDERER_VERSION));
        Ok(Message { id: row.id, role, content: row.content, notice, html })
    }
}

/// A conversation's columns, read from `conversations c` as a [`ConversationRow`].
macro_rules! conversation_columns {
    () => {
        "c.id, c.user_id, c.title, c.status, c.error_code, c.run_id, c.approval_decision, c.approval_turn_digest,
         c.pending_input, c.approval_deny_reason, c.skill, c.page_id, c.updated_at, c.approved_through,
         c.approval_decided_by, c.recorded_at_ms, c.approval_message, c.approval_edits, c.approval_policy"
    };
}

/// A conversation's row, `$tail` saying which.
macro_rules! select_conversations {
    ($tail:literal) => {
        concat!("SELECT ", $crate::store::rows::conversation_columns!(), " FROM conversations c ", $tail)
    };
}
pub(super) use conversation_columns;
pub(super) use select_conversations;
