//! All SQL of the chat lives here, with the migrations of its tables. Every status change is one
//! conditional UPDATE on the status it expects, so concurrent requests and the worker cannot both
//! win. Rows leave this module typed (`conversation`), and unreadable ones are refused.

use std::collections::HashSet;
use std::time::Duration;

use db::{now, now_ms, on, on_read, Backend, Db, Migrations};
use runtime::DenialReason;
use sqlx::{FromRow, Row};
use uuid::Uuid;

use crate::audit::Entry;
use crate::conversation::{
    Conversation, ConversationStatus, DecisionDetail, ErrorCode, ListedConversation, Message, MessageRole, Notice,
    PendingDecision, Recorded, Reply,
};
use crate::markdown::{to_safe_html, RENDERER_VERSION};

/// The migrations of the chat's tables: users, sessions, conversations, messages, jobs.
pub fn migrations() -> Migrations {
    Migrations::new(sqlx::migrate!("../migrations/sqlite/chat"), sqlx::migrate!("../migrations/postgres/chat"))
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Db(#[from] db::DbError),
    #[error("a stored value cannot be read: {0}")]
    Corrupt(String),
    /// An account has this name already, or one with the same key (`names::key`).
    #[error("the user name is taken")]
    NameTaken,
}

#[derive(Clone, Debug)]
pub struct Store {
    db: Db,
}

/// A decision on an approval card, as recorded for the worker.
#[derive(Debug, Clone, Copy)]
pub struct Decision<'a> {
    pub approve: bool,
    pub digest: &'a str,
    /// Only for a card that offers reasons.
    pub reason: Option<DenialReason>,
    /// Who decided: the owner, or a reviewer (four-eyes).
    pub decided_by: i64,
    /// The reader's words for the reason, appended as their message.
    pub label: Option<&'a str>,
    /// The words for the model, the edited arguments, the deciding policy.
    pub detail: &'a DecisionDetail,
}

/// What a run came back with, as the conversation records it.
#[derive(Debug, Clone, Copy)]
pub enum Settle<'a> {
    Answered { answer: &'a str },
    AwaitingInput { question: Option<&'a str> },
    AwaitingApproval,
    Failed { code: ErrorCode },
}

#[derive(Debug, Clone)]
pub struct Job {
    pub id: i64,
    pub conversation_id: String,
    pub kind: JobKind,
    /// The worker that holds what the job carries on (an MCP server's open call), if any.
    pub holder: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobCounts {
    pub queued: i64,
    pub running: i64,
}

/// What a job is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// Carry the conversation's turn on.
    Turn,
    /// Deliver the decisions and answers given in the inbox for runs the conversation moved on from.
    RunDecision,
}

/// An attachment as the reader uploaded it, with the text extracted for the model.
pub struct NewAttachment<'a> {
    pub file_name: &'a str,
    pub kind: &'a str,
    pub content: &'a [u8],
    pub text: &'a str,
    pub truncated: bool,
}

/// A stored attachment, without its bytes. `message_id` is `None` while it waits for the next
/// message.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Deserialize)]
pub struct Attachment {
    pub id: i64,
    pub message_id: Option<i64>,
    pub file_name: String,
    pub kind: String,
    pub size: i64,
    pub truncated: bool,
}

/// The columns an [`Attachment`] is read from.
macro_rules! attachment_columns {
    () => {
        "id, message_id, file_name, kind, size, truncated"
    };
}

/// A conversation's attachments as [`Attachment`]s, in the order they came.
const SELECT_ATTACHMENTS: &str =
    concat!("SELECT ", attachment_columns!(), " FROM attachments WHERE conversation_id = $1 ORDER BY id");

/// A reply's draft: its key and its text so far.
macro_rules! draft_columns {
    () => {
        "draft_key, content"
    };
}

const SELECT_DRAFT: &str = concat!("SELECT ", draft_columns!(), " FROM drafts WHERE conversation_id = $1");

const SELECT_MESSAGES: &str =
    "SELECT id, role, content, notice, html, html_version FROM messages WHERE conversation_id = $1 ORDER BY id";

/// A conversation as a page shows it, read in one snapshot ([`Store::conversation_snapshot`]):
/// an assistant's line that has its current rendering comes as that HTML, with no `content`.
#[derive(Debug, Clone)]
pub struct ConversationSnapshot {
    pub conversation: Conversation,
    pub messages: Vec<Message>,
    pub attachments: Vec<Attachment>,
    /// The reply being written (its draft key and text so far), if one is: read with the
    /// transcript, so a stopped or finished reply is seen as a line or as the draft, never both.
    pub draft: Option<(String, String)>,
}

/// A stored attachment with the text the model is given; only a turn's request needs it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AttachmentText {
    #[sqlx(flatten)]
    pub file: Attachment,
    pub text: String,
}

/// What happened when a message tried to start a turn.
#[derive(Debug, PartialEq, Eq)]
pub enum StartTurn {
    Started,
    NotFound,
    Busy,
}

#[derive(sqlx::FromRow)]
struct ConversationRow {
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

#[derive(sqlx::FromRow)]
struct PollHeadRow {
    status: String,
    updated_at: i64,
    recorded: bool,
    #[sqlx(flatten)]
    user: SessionUser,
    message_count: i64,
}

impl PollHeadRow {
    /// As the derived `FromRow` reads it, from a row read on the calling thread.
    fn from_here(row: &db::rusqlite::Row<'_>) -> db::rusqlite::Result<PollHeadRow> {
        Ok(PollHeadRow {
            status: row.get("status")?,
            updated_at: row.get("updated_at")?,
            recorded: row.get("recorded")?,
            user: SessionUser::from_here(row)?,
            message_count: row.get("message_count")?,
        })
    }
}

/// What a poll needs to tell whether anything is new (`Store::poll_head`).
pub struct PollHead {
    pub user: SessionUser,
    pub status: ConversationStatus,
    pub updated_at: i64,
    /// An answer or decision is recorded and not yet taken by the run.
    pub recorded: bool,
    pub messages: i64,
}

/// The list's statement (`$1` the user, `$2` the limit). Ties in the update time go to the
/// conversation created later (SQLite's rowid, the `seq` identity on PostgreSQL); the index
/// `conversations_user` is in this order, so no tie is sorted (see its migration).
pub fn conversation_list_sql(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => {
            "SELECT id, title, status FROM conversations WHERE user_id = $1
             ORDER BY updated_at DESC, rowid DESC LIMIT $2"
        }
        Backend::Postgres => {
            "SELECT id, title, status FROM conversations WHERE user_id = $1
             ORDER BY updated_at DESC, seq DESC LIMIT $2"
        }
    }
}

fn corrupt(what: &str, id: &str, value: &str) -> StoreError {
    StoreError::Corrupt(format!("{what} {value:?} of conversation {id}"))
}

/// The stored status of conversation `id`; one this build does not know is refused.
fn status_of(id: &str, stored: &str) -> Result<ConversationStatus, StoreError> {
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
struct MessageRow {
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

macro_rules! conversation_columns {
    () => {
        "c.id, c.user_id, c.title, c.status, c.error_code, c.run_id, c.approval_decision, c.approval_turn_digest,
         c.pending_input, c.approval_deny_reason, c.skill, c.page_id, c.updated_at, c.approved_through,
         c.approval_decided_by, c.recorded_at_ms, c.approval_message, c.approval_edits, c.approval_policy"
    };
}

/// A session's user (`users.SessionUser`), read beside a session `s` joined to its user `u`.
macro_rules! session_user_columns {
    () => {
        "u.id AS account_id, u.username, u.language, u.role, u.may_approve_own"
    };
}

macro_rules! select_conversations {
    ($tail:literal) => {
        concat!("SELECT ", conversation_columns!(), " FROM conversations c ", $tail)
    };
}

/// A message as a page shows it: an assistant's line with a rendering of the current version
/// comes without its Markdown, which the page does not show and which is about as long again.
/// `$version` is the placeholder bound to [`RENDERER_VERSION`].
macro_rules! snapshot_message_columns {
    ($version:literal) => {
        concat!(
            "id, role, CASE WHEN html IS NOT NULL AND html_version = ",
            $version,
            " THEN '' ELSE content END AS content, notice, html, html_version"
        )
    };
}

/// [`Store::conversation_snapshot`] on SQLite: its four reads as one batch, each row tagged with
/// its `part`. The transcript, files and draft are read only if the conversation is the user's.
const SQLITE_SNAPSHOT: &str = concat!(
    "BEGIN;
     SELECT 0 AS part, ",
    conversation_columns!(),
    " FROM conversations c WHERE id = $1 AND user_id = $2;
     SELECT 1 AS part, ",
    snapshot_message_columns!("$3"),
    " FROM messages
     WHERE conversation_id = $1 AND EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND user_id = $2) ORDER BY id;
     SELECT 2 AS part, ",
    attachment_columns!(),
    " FROM attachments
     WHERE conversation_id = $1 AND EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND user_id = $2) ORDER BY id;
     SELECT 3 AS part, ",
    draft_columns!(),
    " FROM drafts
     WHERE conversation_id = $1 AND EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND user_id = $2);
     COMMIT;"
);

/// The conversation `$3` as `c`, joined to the live session `s` whose hash is `$1` (`$2` now)
/// and its user `u`: no row unless the session's user owns the conversation. The poll's check.
macro_rules! owned_through_session {
    () => {
        " FROM sessions s JOIN users u ON u.id = s.user_id JOIN conversations c ON c.user_id = u.id
         WHERE s.token_hash = $1 AND s.expires_at > $2 AND c.id = $3"
    };
}

/// True in [`SQLITE_POLL_WHOLE`] when the session `$1` is live at `$2` and its user owns `$3`.
macro_rules! session_owns {
    () => {
        concat!("SELECT 1", owned_through_session!())
    };
}

/// The conversation `$3` with the user of the live session whose hash is `$1` (`$2` now), if it
/// is theirs; a poll's first statement.
macro_rules! poll_head {
    () => {
        concat!("SELECT 0 AS part, ", conversation_columns!(), ", ", session_user_columns!(), owned_through_session!())
    };
}

/// A conversation's snapshot on PostgreSQL, after its row's columns: the transcript and the files as
/// JSON arrays, and the draft, each read by the conversation's row `c`. One statement sees one
/// moment under READ COMMITTED, so the whole snapshot is one round trip, without a transaction
/// (which cost a BEGIN and a COMMIT beside its three reads). `$version` is the placeholder bound
/// to [`RENDERER_VERSION`].
macro_rules! pg_snapshot_parts {
    ($version:literal) => {
        concat!(
            ", (SELECT COALESCE(json_agg(m ORDER BY m.id), '[]') FROM (SELECT ",
            snapshot_message_columns!($version),
            " FROM messages WHERE conversation_id = c.id) m) AS messages,
             (SELECT COALESCE(json_agg(a ORDER BY a.id), '[]') FROM (SELECT ",
            attachment_columns!(),
            " FROM attachments WHERE conversation_id = c.id) a) AS attachments,
             (SELECT draft_key FROM drafts WHERE conversation_id = c.id) AS draft_key,
             (SELECT content FROM drafts WHERE conversation_id = c.id) AS draft_content"
        )
    };
}

/// [`Store::conversation_snapshot`] on PostgreSQL: `$1` the conversation, `$2` its owner, `$3`
/// the renderer version.
const PG_SNAPSHOT: &str = concat!(
    "SELECT ",
    conversation_columns!(),
    pg_snapshot_parts!("$3"),
    " FROM conversations c WHERE c.id = $1 AND c.user_id = $2"
);

/// [`SQLITE_SNAPSHOT`] for a poll: the conversation only if `$1` is the hash of a live session
/// of its owner (`$2` now, `$3` the conversation, `$4` the renderer version), read with that
/// session's user, so a client that shows nothing yet gets everything in one round trip.
const SQLITE_POLL_WHOLE: &str = concat!(
    "BEGIN; ",
    poll_head!(),
    ";
     SELECT 1 AS part, ",
    snapshot_message_columns!("$4"),
    " FROM messages WHERE conversation_id = $3 AND EXISTS (",
    session_owns!(),
    ") ORDER BY id;
     SELECT 2 AS part, ",
    attachment_columns!(),
    " FROM attachments WHERE conversation_id = $3 AND EXISTS (",
    session_owns!(),
    ") ORDER BY id;
     SELECT 3 AS part, ",
    draft_columns!(),
    " FROM drafts WHERE conversation_id = $3 AND EXISTS (",
    session_owns!(),
    ");
     COMMIT;"
);

/// [`SQLITE_POLL_WHOLE`] on PostgreSQL, in one statement: the session's user, the conversation
/// and its snapshot ([`pg_snapshot_parts`]).
const PG_POLL_WHOLE: &str = concat!(
    "SELECT ",
    conversation_columns!(),
    ", ",
    session_user_columns!(),
    pg_snapshot_parts!("$4"),
    owned_through_session!()
);

/// A conversation's snapshot from a row of [`PG_SNAPSHOT`] or [`PG_POLL_WHOLE`].
fn pg_snapshot_of(row: &sqlx::postgres::PgRow) -> Result<ConversationSnapshot, StoreError> {
    let sqlx::types::Json(messages): sqlx::types::Json<Vec<MessageRow>> = row.try_get("messages")?;
    let sqlx::types::Json(attachments): sqlx::types::Json<Vec<Attachment>> = row.try_get("attachments")?;
    let draft_key: Option<String> = row.try_get("draft_key")?;
    let draft_content: Option<String> = row.try_get("draft_content")?;
    Ok(ConversationSnapshot {
        conversation: Conversation::try_from(ConversationRow::from_row(row)?)?,
        messages: messages.into_iter().map(Message::try_from).collect::<Result<_, _>>()?,
        attachments,
        draft: draft_key.zip(draft_content),
    })
}

/// The columns of a recorded answer or decision, cleared: nothing travels any more.
macro_rules! clear_recorded {
    () => {
        "approval_decision = NULL, approval_turn_digest = NULL, pending_input = NULL, approval_deny_reason = NULL, approval_decided_by = NULL, recorded_at_ms = NULL, approval_message = NULL, approval_edits = NULL, approval_policy = NULL"
    };
}

/// A value bound to a guarded UPDATE.
#[derive(Debug, Clone, Copy)]
enum Arg<'a> {
    Text(&'a str),
    MaybeText(Option<&'a str>),
    Int(i64),
    MaybeInt(Option<i64>),
    Bool(bool),
}

/// Binds `args` in order. A macro, not a function: the query's type differs per backend.
macro_rules! bind_args {
    ($query:expr, $args:expr) => {{
        let mut query = $query;
        for arg in $args {
            query = match *arg {
                Arg::Text(value) => query.bind(value),
                Arg::MaybeText(value) => query.bind(value),
                Arg::Int(value) => query.bind(value),
                Arg::MaybeInt(value) => query.bind(value),
                Arg::Bool(value) => query.bind(value),
            };
        }
        query
    }};
}

/// What the transaction of a guarded write does once its UPDATE won.
#[derive(Debug, Clone, Copy)]
enum Then<'a> {
    Message {
        role: MessageRole,
        content: &'a str,
        notice: Option<Notice>,
    },
    Job,
    /// A job only the named worker takes while it is alive: the one whose memory holds the open
    /// call the answer goes back on (see `claim_job`).
    JobHeldBy(&'a str),
    /// Takes the last transcript line out if it is an answer or a decision (one not delivered).
    DropUndelivered,
    /// Records the streamed draft (empty if none) as a stopped reply.
    StoppedReply,
    /// Takes the transcript after this message out (an edit replaces what followed it).
    TruncateAfter(i64),
    /// Gives a message new text (the edited one; its attachments stay with it).
    Rewrite {
        message_id: i64,
        content: &'a str,
    },
    /// The pending attachments go with the message inserted just before this step.
    AttachPending,
    /// The reply's draft is no longer current.
    DropDraft,
    /// The audit log's row for this change (and its webhook event, if announced).
    Audit(&'a Entry),
    /// On PostgreSQL, the conversation's "changed" NOTIFY in the write's own statement: sent only
    /// if the write won, delivered when it commits, and no round trip of its own. The caller then
    /// announces the change with [`crate::events::ConversationEvents::announced`], which on
    /// SQLite sends it in the process.
    Announce,
}

/// The HTML a line is stored with, made once when it is written: an assistant line's Markdown,
/// rendered and sanitised; none for the reader's own lines, which are never interpreted.
fn stored_rendering(role: MessageRole, content: &str) -> Option<String> {
    (role == MessageRole::Assistant).then(|| to_safe_html(content))
}

impl Then<'_> {
    /// The safe HTML of a line this step writes, made once at write time.
    fn rendered(&self) -> Option<String> {
        match *self {
            // A dismissal's line holds a name, which the page puts in a sentence: not Markdown.
            Then::Message { notice: Some(Notice::Dismissed), .. } => None,
            Then::Message { role, content, .. } => stored_rendering(role, content),
            _ => None,
        }
    }
}

/// `$first, $first+1, …`: `count` numbered placeholders.
fn placeholders(first: usize, count: usize) -> String {
    (first..first + count).map(|n| format!("${n}")).collect::<Vec<_>>().join(", ")
}

const MESSAGE_ARGS: usize = 6;

/// The values a guarded write's new line is inserted with, after its conversation: role, text,
/// notice, time, stored rendering and the renderer's version.
fn message_args<'a>(
    role: MessageRole,
    content: &'a str,
    notice: Option<Notice>,
    at: i64,
    html: Option<&'a str>,
) -> [Arg<'a>; MESSAGE_ARGS] {
    [
        Arg::Text(role.as_str()),
        Arg::Text(content),
        Arg::MaybeText(notice.map(Notice::as_str)),
        Arg::Int(at),
        Arg::MaybeText(html),
        Arg::MaybeInt(html.map(|_| RENDERER_VERSION)),
    ]
}

/// The PostgreSQL form of a guarded write: the UPDATE as a CTE that returns the row it claimed,
/// each following write reading its conversation from it (so none happens unless the UPDATE hit),
/// and the count of claimed rows as the answer. Returns the statement and the values to bind
/// after the UPDATE's own `arg_count`.
fn guarded_statement<'a>(
    update: &str,
    arg_count: usize,
    then: &[Then<'a>],
    rendered: &'a [Option<String>],
    audits: &'a [Option<audit::Prepared>],
    at: i64,
) -> (String, Vec<Arg<'a>>) {
    let mut sql = format!("WITH claimed AS ({update} RETURNING id)");
    let mut extra = Vec::new();
    for (index, step) in then.iter().enumerate() {
        let first = arg_count + extra.len() + 1;
        match *step {
            Then::Message { role, content, notice } => {
                sql.push_str(&format!(
                    ", w{index} AS (INSERT INTO messages (conversation_id, role, content, notice, created_at, html, html_version)
                      SELECT id, {} FROM claimed RETURNING id)",
                    placeholders(first, MESSAGE_ARGS)
                ));
                extra.extend(message_args(role, content, notice, at, rendered[index].as_deref()));
            }
            Then::Job => {
                sql.push_str(&format!(
                    ", w{index} AS (INSERT INTO jobs (conversation_id, kind, created_at) SELECT id, 'turn', ${first} FROM claimed)"
                ));
                extra.push(Arg::Int(at));
            }
            Then::JobHeldBy(holder) => {
                sql.push_str(&format!(
                    ", w{index} AS (INSERT INTO jobs (conversation_id, kind, created_at, holder)
                      SELECT id, 'turn', ${first}, ${} FROM claimed)",
                    first + 1
                ));
                extra.extend([Arg::Int(at), Arg::Text(holder)]);
            }
            Then::DropUndelivered => {
                sql.push_str(&format!(
                    ", w{index} AS (DELETE FROM messages WHERE id = (
                          SELECT m.id FROM messages m JOIN claimed c ON m.conversation_id = c.id ORDER BY m.id DESC LIMIT 1
                      ) AND notice IN ('input_answer', 'decision'))"
                ));
            }
            Then::StoppedReply => {
                sql.push_str(&format!(
                    ", w{index} AS (INSERT INTO messages (conversation_id, role, content, notice, created_at)
                      SELECT c.id, 'assistant', COALESCE(d.content, ''), 'stopped', ${first}
                      FROM claimed c LEFT JOIN drafts d ON d.conversation_id = c.id)"
                ));
                extra.push(Arg::Int(at));
            }
            Then::DropDraft => {
                sql.push_str(&format!(
                    ", w{index} AS (DELETE FROM drafts WHERE conversation_id IN (SELECT id FROM claimed))"
                ));
            }
            Then::TruncateAfter(message_id) => {
                sql.push_str(&format!(
                    ", w{index} AS (DELETE FROM messages WHERE conversation_id IN (SELECT id FROM claimed) AND id > ${first})"
                ));
                extra.push(Arg::Int(message_id));
            }
            Then::Rewrite { message_id, content } => {
                sql.push_str(&format!(
                    ", w{index} AS (UPDATE messages SET content = ${}, html = NULL, html_version = NULL
                      WHERE id = ${} AND conversation_id IN (SELECT id FROM claimed))",
                    first,
                    first + 1
                ));
                extra.extend([Arg::Text(content), Arg::Int(message_id)]);
            }
            // Every part of one statement sees the rows as they were before it, so the new
            // message's id comes from the step that inserted it.
            Then::AttachPending => {
                let before = index.saturating_sub(1);
                debug_assert!(matches!(then[before], Then::Message { .. }), "AttachPending follows a Message");
                sql.push_str(&format!(
                    ", w{index} AS (UPDATE attachments SET message_id = (SELECT id FROM w{before})
                      WHERE conversation_id IN (SELECT id FROM claimed) AND message_id IS NULL)"
                ));
            }
            Then::Audit(_) => {
                let Some(prepared) = &audits[index] else { continue };
                let (step, args) = audit::statement_step(prepared, &format!("w{index}"), first, at);
                sql.push_str(&step);
                extra.extend(args);
            }
            Then::Announce => {}
        }
    }
    if then.iter().any(|step| matches!(step, Then::Announce)) {
        // An aggregate's argument is evaluated for every claimed row, so the NOTIFY goes out once
        // for the one row a guarded write claims, and not at all when it claimed none.
        sql.push_str(&format!(
            " SELECT COUNT(*), string_agg(pg_notify('{}', id)::text, '') FROM claimed",
            crate::events::CHANNEL
        ));
    } else {
        sql.push_str(" SELECT COUNT(*) FROM claimed");
    }
    (sql, extra)
}

/// The SQLite form of a guarded write: one batch, sent to the writer's thread at once, that runs
/// in a transaction of its own. The UPDATE's hit is kept in a table of the connection's own
/// (`temp.claimed`) when it changed exactly one row, and each following write reads its
/// conversation from there, as the PostgreSQL form reads it from its CTE; the batch's one row is
/// the count of claimed rows. Statement by statement, the same write took five round trips to
/// the writer's thread for an answer, each a wake-up there and back.
fn guarded_batch<'a>(
    update: &str,
    arg_count: usize,
    conversation_id: &'a str,
    then: &[Then<'a>],
    rendered: &'a [Option<String>],
    audits: &'a [Option<audit::Prepared>],
    at: i64,
) -> (String, Vec<Arg<'a>>) {
    let mut sql = format!(
        "CREATE TEMP TABLE IF NOT EXISTS claimed (id TEXT NOT NULL);
         BEGIN;
         DELETE FROM temp.claimed;
         {update};
         INSERT INTO temp.claimed (id) SELECT ${} WHERE changes() = 1;",
        arg_count + 1
    );
    let mut extra = vec![Arg::Text(conversation_id)];
    for (index, step) in then.iter().enumerate() {
        let first = arg_count + extra.len() + 1;
        match *step {
            Then::Message { role, content, notice } => {
                sql.push_str(&format!(
                    "INSERT INTO messages (conversation_id, role, content, notice, created_at, html, html_version)
                     SELECT id, {} FROM temp.claimed;",
                    placeholders(first, MESSAGE_ARGS)
                ));
                extra.extend(message_args(role, content, notice, at, rendered[index].as_deref()));
            }
            Then::Job => {
                sql.push_str(&format!(
                    "INSERT INTO jobs (conversation_id, kind, created_at) SELECT id, 'turn', ${first} FROM temp.claimed;"
                ));
                extra.push(Arg::Int(at));
            }
            Then::JobHeldBy(holder) => {
                sql.push_str(&format!(
                    "INSERT INTO jobs (conversation_id, kind, created_at, holder)
                     SELECT id, 'turn', ${first}, ${} FROM temp.claimed;",
                    first + 1
                ));
                extra.extend([Arg::Int(at), Arg::Text(holder)]);
            }
            Then::DropUndelivered => sql.push_str(
                "DELETE FROM messages WHERE id = (
                     SELECT m.id FROM messages m JOIN temp.claimed c ON m.conversation_id = c.id ORDER BY m.id DESC LIMIT 1
                 ) AND notice IN ('input_answer', 'decision');",
            ),
            Then::StoppedReply => {
                sql.push_str(&format!(
                    "INSERT INTO messages (conversation_id, role, content, notice, created_at)
                     SELECT c.id, 'assistant', COALESCE(d.content, ''), 'stopped', ${first}
                     FROM temp.claimed c LEFT JOIN drafts d ON d.conversation_id = c.id;"
                ));
                extra.push(Arg::Int(at));
            }
            Then::DropDraft => sql.push_str("DELETE FROM drafts WHERE conversation_id IN (SELECT id FROM temp.claimed);"),
            Then::TruncateAfter(message_id) => {
                sql.push_str(&format!(
                    "DELETE FROM messages WHERE conversation_id IN (SELECT id FROM temp.claimed) AND id > ${first};"
                ));
                extra.push(Arg::Int(message_id));
            }
            Then::Rewrite { message_id, content } => {
                sql.push_str(&format!(
                    "UPDATE messages SET content = ${}, html = NULL, html_version = NULL
                     WHERE id = ${} AND conversation_id IN (SELECT id FROM temp.claimed);",
                    first,
                    first + 1
                ));
                extra.extend([Arg::Text(content), Arg::Int(message_id)]);
            }
            // Statements run one after another here, so the newest message is the one inserted
            // by the step before.
            Then::AttachPending => sql.push_str(
                "UPDATE attachments SET message_id = (SELECT MAX(m.id) FROM messages m WHERE m.conversation_id = attachments.conversation_id)
                 WHERE conversation_id IN (SELECT id FROM temp.claimed) AND message_id IS NULL;",
            ),
            Then::Audit(_) => {
                let Some(prepared) = &audits[index] else { continue };
                let (step, args) = audit::batch_step(prepared, first, at);
                sql.push_str(&step);
                extra.extend(args);
            }
            // SQLite's changes travel in the process (`ConversationEvents::announced`).
            Then::Announce => {}
        }
    }
    sql.push_str("SELECT COUNT(*) FROM temp.claimed; COMMIT;");
    (sql, extra)
}

impl Store {
    pub fn new(db: Db) -> Self {
        Store { db }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// One guarded write: an UPDATE of a conversation row that must hit exactly one row, then the
    /// writes that go with it (on the same conversation), all or nothing. If the UPDATE hits no
    /// row nothing is written and the answer is false: someone else won, or the row is not in the
    /// state expected. Either backend gets it in one round trip instead of one per write: SQLite
    /// as one batch in a transaction of its own, PostgreSQL as one statement (data-modifying CTEs).
    async fn guarded(
        &self,
        conversation_id: &str,
        update: &'static str,
        args: &[Arg<'_>],
        then: &[Then<'_>],
    ) -> Result<bool, StoreError> {
        let at = now();
        // An assistant line's HTML is made here, once, before the transaction: every reader then
        // gets it as stored.
        let rendered: Vec<Option<String>> = then.iter().map(Then::rendered).collect();
        let audits: Vec<Option<audit::Prepared>> = then
            .iter()
            .map(|step| if let Then::Audit(entry) = step { Some(audit::Prepared::of(entry)) } else { None })
            .collect();
        match &self.db {
            Db::Sqlite(db::Sqlite { write: pool, .. }) => {
                let (sql, extra) = guarded_batch(update, args.len(), conversation_id, then, &rendered, &audits, at);
                let all: Vec<Arg<'_>> = args.iter().copied().chain(extra).collect();
                let rows = pool.fetch_batch(bind_args!(sqlx::query(sqlx::AssertSqlSafe(sql)), &all)).await?;
                let claimed: i64 = rows.first().map(|row| row.try_get(0)).transpose()?.unwrap_or(0);
                Ok(claimed == 1)
            }
            Db::Postgres(pool) => {
                let (sql, extra) = guarded_statement(update, args.len(), then, &rendered, &audits, at);
                let all: Vec<Arg<'_>> = args.iter().copied().chain(extra).collect();
                let claimed: i64 =
                    bind_args!(sqlx::query_scalar(sqlx::AssertSqlSafe(sql)), &all).fetch_one(pool).await?;
                Ok(claimed == 1)
            }
        }
    }

    /// An UPDATE outside a transaction; true when it hit exactly one row.
    async fn update_one(&self, sql: &'static str, args: &[Arg<'_>]) -> Result<bool, StoreError> {
        let rows = on!(&self.db, pool => bind_args!(sqlx::query(sql), args).execute(pool).await.map(|done| done.rows_affected()))?;
        Ok(rows == 1)
    }

    // --- conversations and messages -----------------------------------------------------------

    pub async fn create_conversation(
        &self,
        id: &str,
        user_id: i64,
        title: &str,
        skill: Option<&str>,
        page_id: Option<i64>,
    ) -> Result<(), StoreError> {
        let at = now();
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO conversations (id, user_id, title, status, skill, page_id, created_at, updated_at)
             VALUES ($1, $2, $3, 'idle', $4, $5, $6, $7)",
        )
        .bind(id)
        .bind(user_id)
        .bind(title)
        .bind(skill)
        .bind(page_id)
        .bind(at)
        .bind(at)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// The user's latest conversations, newest first, at most `limit` of them: what a list shows of
    /// each (every page carries the list, so it reads three columns, not the whole row).
    pub async fn conversations_of(&self, user_id: i64, limit: i64) -> Result<Vec<ListedConversation>, StoreError> {
        let sql = conversation_list_sql(self.db.backend());
        let rows: Vec<(String, String, String)> =
            on_read!(&self.db, pool => sqlx::query_as(sql).bind(user_id).bind(limit).fetch_all(pool).await)?;
        rows.into_iter()
            .map(|(id, title, status)| {
                let status = status_of(&id, &status)?;
                Ok(ListedConversation { id, title, status })
            })
            .collect()
    }

    /// A conversation only if `user_id` owns it: someone else's id reads as unknown.
    pub async fn conversation_of(&self, user_id: i64, id: &str) -> Result<Option<Conversation>, StoreError> {
        let row: Option<ConversationRow> = on_read!(&self.db, pool => sqlx::query_as(select_conversations!("WHERE id = $1 AND user_id = $2"))
            .bind(id)
            .bind(user_id)
            .fetch_optional(pool)
            .await)?;
        row.map(Conversation::try_from).transpose()
    }

    /// [`Store::conversation_of`] with, on PostgreSQL, the run it waits on as the runtime reads it
    /// ([`runtime::pg_run_json`], for [`runtime::Runtime::status_from_json`]), in one statement
    /// and so one moment: an answer's reads in one round trip. On SQLite, and when the run is not
    /// there, no run: the caller reads it from the runtime.
    pub async fn conversation_with_run_of(
        &self,
        user_id: i64,
        id: &str,
    ) -> Result<Option<(Conversation, Option<String>)>, StoreError> {
        const SQL: &str = concat!(
            "SELECT ",
            conversation_columns!(),
            ", ",
            runtime::pg_run_json!("c.run_id"),
            "::text AS run FROM conversations c WHERE c.id = $1 AND c.user_id = $2"
        );
        let Db::Postgres(pool) = &self.db else {
            return Ok(self.conversation_of(user_id, id).await?.map(|row| (row, None)));
        };
        let row = sqlx::query(SQL).bind(id).bind(user_id).fetch_optional(pool).await?;
        let Some(row) = row else { return Ok(None) };
        let run: Option<String> = row.try_get("run")?;
        Ok(Some((Conversation::try_from(ConversationRow::from_row(&row)?)?, run)))
    }

    /// The user's conversation with its transcript and files as of one moment: a write that
    /// changes several (a line and the status it goes with, a message and its files) is seen
    /// whole or not at all. `None` when there is no such conversation of this user.
    pub async fn conversation_snapshot(
        &self,
        user_id: i64,
        id: &str,
    ) -> Result<Option<ConversationSnapshot>, StoreError> {
        let (row, messages, attachments, draft) = match &self.db {
            // One batch, one round trip to the reader's thread instead of five; each row says
            // which of the four statements it comes from.
            Db::Sqlite(db::Sqlite { read, .. }) => {
                let rows = read
                    .fetch_batch(sqlx::query(SQLITE_SNAPSHOT).bind(id).bind(user_id).bind(RENDERER_VERSION))
                    .await?;
                let (mut row, mut messages, mut attachments, mut draft) = (None, Vec::new(), Vec::new(), None);
                for each in &rows {
                    match each.try_get::<i64, _>("part")? {
                        0 => row = Some(ConversationRow::from_row(each)?),
                        1 => messages.push(MessageRow::from_row(each)?),
                        2 => attachments.push(Attachment::from_row(each)?),
                        _ => draft = Some((each.try_get("draft_key")?, each.try_get("content")?)),
                    }
                }
                (row, messages, attachments, draft)
            }
            // One statement, one moment (see `pg_snapshot_parts`).
            Db::Postgres(pool) => {
                let row =
                    sqlx::query(PG_SNAPSHOT).bind(id).bind(user_id).bind(RENDERER_VERSION).fetch_optional(pool).await?;
                return row.as_ref().map(pg_snapshot_of).transpose();
            }
        };
        let Some(row) = row else { return Ok(None) };
        let messages = messages.into_iter().map(Message::try_from).collect::<Result<Vec<_>, _>>()?;
        Ok(Some(ConversationSnapshot { conversation: Conversation::try_from(row)?, messages, attachments, draft }))
    }

    pub async fn conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        let row: Option<ConversationRow> = on_read!(&self.db, pool => sqlx::query_as(select_conversations!("WHERE id = $1"))
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        row.map(Conversation::try_from).transpose()
    }

    pub async fn conversation_of_run(&self, run_id: Uuid) -> Result<Option<Conversation>, StoreError> {
        let row: Option<ConversationRow> = on_read!(&self.db, pool => sqlx::query_as(select_conversations!("WHERE run_id = $1"))
            .bind(run_id.to_string())
            .fetch_optional(pool)
            .await)?;
        row.map(Conversation::try_from).transpose()
    }

    /// A poll's check in one statement: the session's user, the conversation's status if it is
    /// theirs, and its message count (counted on the `(conversation_id, id)` index alone: the
    /// fast path reads no message). `None` when the session is unknown or expired, or the
    /// conversation is not the user's (`user_for_session` tells which, on that rare path). One
    /// statement instead of three, because on SQLite each costs a hop to the connection's thread
    /// and back; and on SQLite not even that one: the statement runs on the request's own thread
    /// ([`db::Here`]), which halves a fast poll's cost.
    pub async fn poll_head(&self, token_hash: &str, id: &str) -> Result<Option<PollHead>, StoreError> {
        const SQL: &str = concat!(
            "SELECT c.status, c.updated_at, c.approval_decision IS NOT NULL AS recorded, ",
            session_user_columns!(),
            ", (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count",
            owned_through_session!()
        );
        let row: Option<PollHeadRow> = match self.db.here() {
            Some(here) => {
                let parameters = db::rusqlite::named_params! { "$1": token_hash, "$2": now(), "$3": id };
                here.fetch_optional(SQL, parameters, PollHeadRow::from_here)?
            }
            None => on_read!(&self.db, pool => sqlx::query_as(SQL)
                .bind(token_hash)
                .bind(now())
                .bind(id)
                .fetch_optional(pool)
                .await)?,
        };
        let Some(row) = row else { return Ok(None) };
        let status = status_of(id, &row.status)?;
        Ok(Some(PollHead {
            user: row.user,
            status,
            updated_at: row.updated_at,
            recorded: row.recorded,
            messages: row.message_count,
        }))
    }

    /// A poll's whole read for a client that shows nothing yet: the session's user and the
    /// conversation's snapshot (as [`Store::conversation_snapshot`] reads it), on SQLite in one
    /// batch, so one round trip to the reader's thread instead of two. `None` as for
    /// [`Store::poll_head`].
    pub async fn poll_whole(
        &self,
        token_hash: &str,
        id: &str,
    ) -> Result<Option<(SessionUser, ConversationSnapshot)>, StoreError> {
        let read = match &self.db {
            Db::Sqlite(db::Sqlite { read, .. }) => read,
            // One statement: the session, the conversation and its snapshot.
            Db::Postgres(pool) => {
                let row = sqlx::query(PG_POLL_WHOLE)
                    .bind(token_hash)
                    .bind(now())
                    .bind(id)
                    .bind(RENDERER_VERSION)
                    .fetch_optional(pool)
                    .await?;
                let Some(row) = row else { return Ok(None) };
                return Ok(Some((SessionUser::from_row(&row)?, pg_snapshot_of(&row)?)));
            }
        };
        let rows = read
            .fetch_batch(sqlx::query(SQLITE_POLL_WHOLE).bind(token_hash).bind(now()).bind(id).bind(RENDERER_VERSION))
            .await?;
        let (mut head, mut messages, mut attachments, mut draft) = (None, Vec::new(), Vec::new(), None);
        for each in &rows {
            match each.try_get::<i64, _>("part")? {
                0 => head = Some((SessionUser::from_row(each)?, ConversationRow::from_row(each)?)),
                1 => messages.push(Message::try_from(MessageRow::from_row(each)?)?),
                2 => attachments.push(Attachment::from_row(each)?),
                _ => draft = Some((each.try_get("draft_key")?, each.try_get("content")?)),
            }
        }
        let Some((user, row)) = head else { return Ok(None) };
        Ok(Some((
            user,
            ConversationSnapshot { conversation: Conversation::try_from(row)?, messages, attachments, draft },
        )))
    }

    pub async fn messages(&self, conversation_id: &str) -> Result<Vec<Message>, StoreError> {
        let rows: Vec<MessageRow> = on_read!(&self.db, pool => sqlx::query_as(SELECT_MESSAGES)
        .bind(conversation_id)
        .fetch_all(pool)
        .await)?;
        rows.into_iter().map(Message::try_from).collect()
    }

    /// Claims the conversation for a new turn, stores the user's message and queues the job, all
    /// or nothing. `expected` is the status the caller read; if it changed meanwhile nothing happens.
    /// The run the conversation waited on (if any) is left as it is: only its id is forgotten.
    pub async fn start_turn(
        &self,
        user_id: i64,
        conversation_id: &str,
        expected: ConversationStatus,
        content: &str,
        title_if_untitled: &str,
        untitled: &str,
    ) -> Result<StartTurn, StoreError> {
        let started = self
            .guarded(
                conversation_id,
                concat!(
                    "UPDATE conversations
                     SET status = 'processing', error_code = NULL, updated_at = $1, run_id = NULL, ",
                    clear_recorded!(),
                    ", title = CASE WHEN title = $2 THEN $3 ELSE title END
                     WHERE id = $4 AND user_id = $5 AND status = $6 AND status != 'processing'"
                ),
                &[
                    Arg::Int(now()),
                    Arg::Text(untitled),
                    Arg::Text(title_if_untitled),
                    Arg::Text(conversation_id),
                    Arg::Int(user_id),
                    Arg::Text(expected.as_str()),
                ],
                &[
                    Then::Message { role: MessageRole::User, content, notice: None },
                    Then::AttachPending,
                    Then::Job,
                    Then::Announce,
                ],
            )
            .await?;
        if started {
            return Ok(StartTurn::Started);
        }
        let exists = self.conversation_of(user_id, conversation_id).await?.is_some();
        Ok(if exists { StartTurn::Busy } else { StartTurn::NotFound })
    }

    /// Claims a waiting conversation without starting anything yet, keeping its run id: a process
    /// run must first be cancelled, and if that fails the claim is given back.
    pub async fn claim_waiting(
        &self,
        user_id: i64,
        conversation_id: &str,
        expected: ConversationStatus,
    ) -> Result<bool, StoreError> {
        self.update_one(
            "UPDATE conversations SET status = 'processing', updated_at = $1
             WHERE id = $2 AND user_id = $3 AND status = $4 AND status IN ('awaiting_approval', 'awaiting_input')",
            &[Arg::Int(now()), Arg::Text(conversation_id), Arg::Int(user_id), Arg::Text(expected.as_str())],
        )
        .await
    }

    /// Gives a claim back: the row returns to the waiting status it had.
    pub async fn release_claim(&self, conversation_id: &str, back_to: ConversationStatus) -> Result<bool, StoreError> {
        self.update_one(
            "UPDATE conversations SET status = $1, updated_at = $2
             WHERE id = $3 AND status = 'processing' AND approval_decision IS NULL",
            &[Arg::Text(back_to.as_str()), Arg::Int(now()), Arg::Text(conversation_id)],
        )
        .await
    }

    /// Starts a new turn on a conversation this request has claimed (see [`Store::claim_waiting`]).
    pub async fn start_claimed_turn(
        &self,
        conversation_id: &str,
        content: &str,
        title_if_untitled: &str,
        untitled: &str,
        cancelled: Option<&Entry>,
    ) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET error_code = NULL, updated_at = $1, run_id = NULL, ",
                clear_recorded!(),
                ", title = CASE WHEN title = $2 THEN $3 ELSE title END
                 WHERE id = $4 AND status = 'processing' AND approval_decision IS NULL"
            ),
            &[Arg::Int(now()), Arg::Text(untitled), Arg::Text(title_if_untitled), Arg::Text(conversation_id)],
            &[
                cancelled.map(Then::Audit),
                Some(Then::Message { role: MessageRole::User, content, notice: None }),
                Some(Then::AttachPending),
                Some(Then::Job),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>(),
        )
        .await
    }

    /// Edit and rerun: the transcript from `message_id` on is replaced by the edited message, and a
    /// new turn starts from there. Guarded like [`Store::start_turn`] on the status the caller
    /// read, never while a turn runs or a decision travels.
    pub async fn restart_from(
        &self,
        user_id: i64,
        conversation_id: &str,
        expected: ConversationStatus,
        message_id: i64,
        content: &str,
    ) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET status = 'processing', error_code = NULL, updated_at = $1, run_id = NULL, ",
                clear_recorded!(),
                " WHERE id = $2 AND user_id = $3 AND status = $4 AND status != 'processing'"
            ),
            &[Arg::Int(now()), Arg::Text(conversation_id), Arg::Int(user_id), Arg::Text(expected.as_str())],
            &Self::rerun_steps(message_id, content),
        )
        .await
    }

    /// [`Store::restart_from`] on a conversation this request has claimed (its waiting run was
    /// cancelled first; see [`Store::claim_waiting`]).
    pub async fn restart_claimed_from(
        &self,
        conversation_id: &str,
        message_id: i64,
        content: &str,
        cancelled: Option<&Entry>,
    ) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET error_code = NULL, updated_at = $1, run_id = NULL, ",
                clear_recorded!(),
                " WHERE id = $2 AND status = 'processing' AND approval_decision IS NULL"
            ),
            &[Arg::Int(now()), Arg::Text(conversation_id)],
            &cancelled.map(Then::Audit).into_iter().chain(Self::rerun_steps(message_id, content)).collect::<Vec<_>>(),
        )
        .await
    }

    fn rerun_steps(message_id: i64, content: &str) -> [Then<'_>; 4] {
        [Then::TruncateAfter(message_id), Then::Rewrite { message_id, content }, Then::DropDraft, Then::Job]
    }

    /// Records a reply to the question the conversation waits on, appends its line (if it has one)
    /// to the transcript and queues the delivery, guarded on the conversation still waiting for
    /// input. A question whose open call lives in one worker's memory names it (`holder`): its
    /// job is that worker's while it is alive.
    #[allow(clippy::too_many_arguments)]
    pub async fn record_answer(
        &self,
        user_id: i64,
        conversation_id: &str,
        digest: &str,
        reply: &Reply,
        display: Option<&str>,
        entry: &Entry,
        holder: Option<&str>,
    ) -> Result<bool, StoreError> {
        let encoded = reply.encode();
        let line = display.map(|content| Then::Message {
            role: MessageRole::User,
            content,
            notice: Some(Notice::InputAnswer),
        });
        let job = holder.map_or(Then::Job, Then::JobHeldBy);
        let then: Vec<Then<'_>> = line.into_iter().chain([job, Then::Audit(entry), Then::Announce]).collect();
        self.guarded(
            conversation_id,
            "UPDATE conversations
             SET status = 'processing', approval_decision = $1, approval_turn_digest = $2,
                 pending_input = $3, approval_deny_reason = NULL, error_code = NULL, updated_at = $4,
                 recorded_at_ms = $7
             WHERE id = $5 AND user_id = $6 AND status = 'awaiting_input' AND run_id IS NOT NULL",
            &[
                Arg::Text(PendingDecision::Input.as_str()),
                Arg::Text(digest),
                Arg::Text(&encoded),
                Arg::Int(now()),
                Arg::Text(conversation_id),
                Arg::Int(user_id),
                Arg::Int(now_ms()),
            ],
            &then,
        )
        .await
    }

    /// The question's tool stopped waiting: the question is withdrawn for the worker to tell the
    /// run, with the audit's row (`entry`), guarded on the conversation still waiting on that run.
    pub async fn record_withdrawal(
        &self,
        conversation_id: &str,
        run_id: Uuid,
        reason: &str,
        entry: &Entry,
        holder: Option<&str>,
    ) -> Result<bool, StoreError> {
        let encoded = Reply::Withdrawn(reason.to_string()).encode();
        let run = run_id.to_string();
        self.guarded(
            conversation_id,
            "UPDATE conversations
             SET status = 'processing', approval_decision = $1, approval_turn_digest = '',
                 pending_input = $2, approval_deny_reason = NULL, error_code = NULL, updated_at = $3
             WHERE id = $4 AND status = 'awaiting_input' AND run_id = $5",
            &[
                Arg::Text(PendingDecision::Input.as_str()),
                Arg::Text(&encoded),
                Arg::Int(now()),
                Arg::Text(conversation_id),
                Arg::Text(&run),
            ],
            &[holder.map_or(Then::Job, Then::JobHeldBy), Then::Audit(entry)],
        )
        .await
    }

    /// Records a decision on the approval card, with the reason's label in the transcript when
    /// there is one, and queues the delivery.
    pub async fn record_decision(
        &self,
        user_id: i64,
        conversation_id: &str,
        decision: Decision<'_>,
        entry: &Entry,
    ) -> Result<bool, StoreError> {
        let kind = if decision.approve { PendingDecision::Approve } else { PendingDecision::Deny };
        let label = decision.label.map(|label| Then::Message {
            role: MessageRole::User,
            content: label,
            notice: Some(Notice::Decision),
        });
        let then: Vec<Then<'_>> = label.into_iter().chain([Then::Job, Then::Audit(entry), Then::Announce]).collect();
        let edits = decision.detail.encode_edits();
        self.guarded(
            conversation_id,
            "UPDATE conversations
             SET status = 'processing', approval_decision = $1, approval_turn_digest = $2,
                 approval_deny_reason = $3, pending_input = NULL, error_code = NULL, updated_at = $4,
                 approval_decided_by = $8, recorded_at_ms = $9,
                 approval_message = $10, approval_edits = $11, approval_policy = $12,
                 approved_through = CASE WHEN $7
                     THEN (SELECT MAX(m.id) FROM messages m WHERE m.conversation_id = $5)
                     ELSE approved_through END
             WHERE id = $5 AND user_id = $6 AND status = 'awaiting_approval' AND run_id IS NOT NULL",
            &[
                Arg::Text(kind.as_str()),
                Arg::Text(decision.digest),
                Arg::MaybeText(decision.reason.map(DenialReason::as_str)),
                Arg::Int(now()),
                Arg::Text(conversation_id),
                Arg::Int(user_id),
                Arg::Bool(decision.approve),
                Arg::Int(decision.decided_by),
                Arg::Int(now_ms()),
                Arg::MaybeText(decision.detail.message.as_deref()),
                Arg::MaybeText(edits.as_deref()),
                Arg::MaybeInt(decision.detail.policy),
            ],
            &then,
        )
        .await
    }

    /// Retry of a failed turn over the transcript as it is. A conversation with a recorded
    /// decision in flight is `processing`, so it cannot be retried.
    pub async fn claim_retry(&self, user_id: i64, conversation_id: &str) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            "UPDATE conversations
             SET status = 'processing', error_code = NULL, run_id = NULL, updated_at = $1
             WHERE id = $2 AND user_id = $3 AND status = 'failed'",
            &[Arg::Int(now()), Arg::Text(conversation_id), Arg::Int(user_id)],
            &[Then::Job],
        )
        .await
    }

    /// Remembers which run carries the conversation's new turn, before the run executes, so a
    /// restart finds the run again instead of starting a second one.
    pub async fn attach_run(&self, conversation_id: &str, run_id: Uuid) -> Result<bool, StoreError> {
        let run = run_id.to_string();
        self.update_one(
            "UPDATE conversations SET run_id = $1, updated_at = $2
             WHERE id = $3 AND status = 'processing' AND run_id IS NULL AND approval_decision IS NULL",
            &[Arg::Text(&run), Arg::Int(now()), Arg::Text(conversation_id)],
        )
        .await
    }

    /// Applies what a run came back with, guarded on the conversation still carrying that run:
    /// a late result of an abandoned run changes nothing.
    /// `notice` stands beside a turn that went on (a question withdrawn on the way); a failure
    /// shows its own code instead.
    pub async fn settle(
        &self,
        conversation_id: &str,
        run_id: Uuid,
        settle: Settle<'_>,
        notice: Option<ErrorCode>,
        entry: Option<&Entry>,
    ) -> Result<bool, StoreError> {
        let (status, keep_run, error_code, message) = match settle {
            Settle::Answered { answer } => (ConversationStatus::Idle, false, notice, Some(answer)),
            Settle::AwaitingInput { question } => (ConversationStatus::AwaitingInput, true, notice, question),
            Settle::AwaitingApproval => (ConversationStatus::AwaitingApproval, true, notice, None),
            Settle::Failed { code } => (ConversationStatus::Failed, false, Some(code), None),
        };
        let message = message.filter(|text| !text.trim().is_empty()).map(|content| Then::Message {
            role: MessageRole::Assistant,
            content,
            notice: None,
        });
        let run = run_id.to_string();
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations
                 SET status = $1, run_id = CASE WHEN $2 THEN run_id ELSE NULL END, error_code = $3, ",
                clear_recorded!(),
                ", updated_at = $4
                 WHERE id = $5 AND status = 'processing' AND run_id = $6"
            ),
            &[
                Arg::Text(status.as_str()),
                Arg::Bool(keep_run),
                Arg::MaybeText(error_code.map(ErrorCode::as_str)),
                Arg::Int(now()),
                Arg::Text(conversation_id),
                Arg::Text(&run),
            ],
            &message.into_iter().chain([Then::DropDraft]).chain(entry.map(Then::Audit)).collect::<Vec<_>>(),
        )
        .await
    }

    /// Hands a question or card back after the runtime refused the recorded answer or decision:
    /// the waiting status returns, the undelivered line leaves the transcript, and the reason is
    /// stored as a code for the reader's language.
    pub async fn hand_back(
        &self,
        conversation_id: &str,
        back_to: ConversationStatus,
        code: ErrorCode,
        entry: Option<&Entry>,
    ) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET status = $1, error_code = $2, ",
                clear_recorded!(),
                ", updated_at = $3
                 WHERE id = $4 AND status = 'processing' AND approval_decision IS NOT NULL"
            ),
            &[Arg::Text(back_to.as_str()), Arg::Text(code.as_str()), Arg::Int(now()), Arg::Text(conversation_id)],
            &[Some(Then::DropUndelivered), entry.map(Then::Audit)].into_iter().flatten().collect::<Vec<_>>(),
        )
        .await
    }

    /// The recorded answer or decision has reached the run (an earlier attempt delivered it): it
    /// is no longer in flight, and the conversation follows the run from here.
    pub async fn mark_delivered(&self, conversation_id: &str) -> Result<bool, StoreError> {
        self.update_one(
            concat!(
                "UPDATE conversations SET ",
                clear_recorded!(),
                ", updated_at = $1
                 WHERE id = $2 AND status = 'processing' AND approval_decision IS NOT NULL"
            ),
            &[Arg::Int(now()), Arg::Text(conversation_id)],
        )
        .await
    }

    /// Fails a turn that cannot go on (a refusal that is not a hand-back, an unexpected error).
    /// Stops the reply being written: the conversation is idle again and the draft so far joins
    /// the transcript as a stopped reply. Guarded on the conversation still working on `run_id`
    /// (`None`: no run attached yet), so of Stop and a question or card settling, exactly one wins.
    pub async fn stop(
        &self,
        user_id: i64,
        conversation_id: &str,
        run_id: Option<Uuid>,
        cancelled: &Entry,
    ) -> Result<bool, StoreError> {
        let run = run_id.map(|run| run.to_string());
        // Jobs of the conversation are left: a job finds it idle and does nothing.
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET status = 'idle', run_id = NULL, error_code = NULL, ",
                clear_recorded!(),
                ", updated_at = $1
                 WHERE id = $2 AND user_id = $3 AND status = 'processing' AND run_id IS NOT DISTINCT FROM $4"
            ),
            &[Arg::Int(now()), Arg::Text(conversation_id), Arg::Int(user_id), Arg::MaybeText(run.as_deref())],
            &[Then::StoppedReply, Then::DropDraft, Then::Audit(cancelled)],
        )
        .await
    }

    /// The worker knew more of a stopped reply than the draft that was recorded (its pieces reach
    /// the database a few times a second): the stopped line gets the whole text, if it is still
    /// the conversation's last line.
    pub async fn complete_stopped_reply(&self, conversation_id: &str, content: &str) -> Result<bool, StoreError> {
        self.update_one(
            "UPDATE messages SET content = $1, html = NULL, html_version = NULL
             WHERE id = (SELECT id FROM messages WHERE conversation_id = $2 ORDER BY id DESC LIMIT 1)
               AND notice = 'stopped' AND length(content) < length($1)",
            &[Arg::Text(content), Arg::Text(conversation_id)],
        )
        .await
    }

    /// The reply's draft as last saved (key and text so far): what an event stream that joined a
    /// reply mid-way renders from (`events`). The stream's owner was checked when it opened.
    pub async fn draft(&self, conversation_id: &str) -> Result<Option<(String, String)>, StoreError> {
        let draft =
            on_read!(&self.db, pool => sqlx::query_as(SELECT_DRAFT).bind(conversation_id).fetch_optional(pool).await)?;
        Ok(draft)
    }

    /// Writes the reply's text so far, only while the conversation is working on it (a late
    /// write after a stop or a settle must not bring a draft back).
    pub async fn save_draft(&self, conversation_id: &str, draft_key: &str, content: &str) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO drafts (conversation_id, draft_key, content, updated_at)
             SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND status = 'processing')
             ON CONFLICT (conversation_id) DO UPDATE
             SET draft_key = excluded.draft_key, content = excluded.content, updated_at = excluded.updated_at",
        )
        .bind(conversation_id)
        .bind(draft_key)
        .bind(content)
        .bind(now())
        .execute(pool)
        .await
        .map(|_| ()))?;
        Ok(())
    }

    /// Stores an attachment of the owner's conversation as pending (it goes with the next message).
    /// `None` when the conversation is not the user's.
    pub async fn add_attachment(
        &self,
        user_id: i64,
        conversation_id: &str,
        file: &NewAttachment<'_>,
    ) -> Result<Option<i64>, StoreError> {
        let id: Option<i64> = on!(&self.db, pool => sqlx::query_scalar(
            "INSERT INTO attachments (conversation_id, file_name, kind, size, content, text, truncated, created_at)
             SELECT $1, $2, $3, $4, $5, $6, $7, $8
             WHERE EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND user_id = $9)
             RETURNING id",
        )
        .bind(conversation_id)
        .bind(file.file_name)
        .bind(file.kind)
        .bind(i64::try_from(file.content.len()).unwrap_or(i64::MAX))
        .bind(file.content)
        .bind(file.text)
        .bind(file.truncated)
        .bind(now())
        .bind(user_id)
        .fetch_optional(pool)
        .await)?;
        Ok(id)
    }

    /// The conversation's attachments, without their bytes or text (a page load lists them).
    pub async fn attachments(&self, conversation_id: &str) -> Result<Vec<Attachment>, StoreError> {
        let rows: Vec<Attachment> =
            on_read!(&self.db, pool => sqlx::query_as(SELECT_ATTACHMENTS).bind(conversation_id).fetch_all(pool).await)?;
        Ok(rows)
    }

    /// The conversation's attachments with their text, for the model.
    pub async fn attachment_texts(&self, conversation_id: &str) -> Result<Vec<AttachmentText>, StoreError> {
        let rows: Vec<AttachmentText> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT id, message_id, file_name, kind, size, truncated, text FROM attachments
             WHERE conversation_id = $1 ORDER BY id",
        )
        .bind(conversation_id)
        .fetch_all(pool)
        .await)?;
        Ok(rows)
    }

    /// Takes back an attachment not sent yet.
    pub async fn remove_pending_attachment(
        &self,
        user_id: i64,
        conversation_id: &str,
        id: i64,
    ) -> Result<bool, StoreError> {
        let removed = on!(&self.db, pool => sqlx::query(
            "DELETE FROM attachments WHERE id = $1 AND conversation_id = $2 AND message_id IS NULL
               AND EXISTS (SELECT 1 FROM conversations WHERE id = $2 AND user_id = $3)",
        )
        .bind(id)
        .bind(conversation_id)
        .bind(user_id)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(removed == 1)
    }

    /// The file as uploaded (name, kind, bytes), for its owner only.
    pub async fn attachment_file(
        &self,
        user_id: i64,
        id: i64,
    ) -> Result<Option<(String, String, Vec<u8>)>, StoreError> {
        let row: Option<(String, String, Vec<u8>)> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT a.file_name, a.kind, a.content FROM attachments a JOIN conversations c ON c.id = a.conversation_id
             WHERE a.id = $1 AND c.user_id = $2",
        )
        .bind(id)
        .bind(user_id)
        .fetch_optional(pool)
        .await)?;
        Ok(row)
    }

    /// The turn failed before or outside its run (no run, none to be had, the worker's own
    /// failure), with the audit's `failed` row (`entry`) in the same write.
    pub async fn fail_conversation(
        &self,
        conversation_id: &str,
        code: ErrorCode,
        entry: &Entry,
    ) -> Result<bool, StoreError> {
        self.guarded(
            conversation_id,
            concat!(
                "UPDATE conversations SET status = 'failed', error_code = $1, run_id = NULL, ",
                clear_recorded!(),
                ", updated_at = $2
                 WHERE id = $3 AND status = 'processing'"
            ),
            &[Arg::Text(code.as_str()), Arg::Int(now()), Arg::Text(conversation_id)],
            &[Then::Audit(entry)],
        )
        .await
    }

    pub async fn rename_conversation(&self, user_id: i64, id: &str, title: &str) -> Result<bool, StoreError> {
        self.update_one(
            "UPDATE conversations SET title = $1 WHERE id = $2 AND user_id = $3",
            &[Arg::Text(title), Arg::Text(id), Arg::Int(user_id)],
        )
        .await
    }

    /// Deletes a conversation that nothing is working on; its messages and jobs go with it. Its
    /// audit rows stay, and `cancelled` (its waiting runs, ended first) join them in the same
    /// transaction, with the title as it was.
    pub async fn delete_conversation(&self, user_id: i64, id: &str, cancelled: &[Entry]) -> Result<bool, StoreError> {
        on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            for entry in cancelled {
                audit::write_entry!(tx, id, entry);
            }
            let delete = "DELETE FROM conversations WHERE id = $1 AND user_id = $2 AND status != 'processing'";
            let deleted = sqlx::query(delete)
                .bind(id)
                .bind(user_id)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if deleted {
                tx.commit().await?;
            } else {
                tx.rollback().await?;
            }
            Ok::<bool, sqlx::Error>(deleted)
        }
        .await)
        .map_err(StoreError::from)
    }

    // --- jobs ---------------------------------------------------------------------------------

    /// The queue's depth: jobs waiting for a worker, and jobs a worker holds.
    pub async fn job_counts(&self) -> Result<JobCounts, StoreError> {
        let rows: Vec<(String, i64)> = on_read!(&self.db, pool => sqlx::query_as("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetch_all(pool).await)?;
        let count = |state: &str| rows.iter().find(|(s, _)| s == state).map_or(0, |(_, n)| *n);
        Ok(JobCounts { queued: count("queued"), running: count("running") })
    }

    /// Takes the oldest queued job that worker `instance` may take and leases it; `None` when
    /// there is nothing to do. A job held by another worker (`holder`) waits for it while it beats;
    /// once it stopped, anyone takes the job, and the question it held is handed back.
    pub async fn claim_job(&self, lease: Duration, instance: &str) -> Result<Option<Job>, StoreError> {
        let now = now();
        let lease_until = now.saturating_add(i64::try_from(lease.as_secs()).unwrap_or(i64::MAX));
        // SQLite runs one writer at a time. On PostgreSQL, workers claim side by side: SKIP LOCKED
        // passes over a job another worker is taking, so no two take the same one and none waits.
        let sql = match self.db.backend() {
            Backend::Sqlite => {
                "UPDATE jobs SET state = 'running', lease_until = $1
                 WHERE id = (SELECT id FROM jobs WHERE state = 'queued' AND (holder IS NULL OR holder = $2
                     OR NOT EXISTS (SELECT 1 FROM workers w WHERE w.instance = jobs.holder AND w.alive_until >= $3))
                     ORDER BY id LIMIT 1) AND state = 'queued'
                 RETURNING id, conversation_id, kind, holder"
            }
            Backend::Postgres => {
                "UPDATE jobs SET state = 'running', lease_until = $1
                 WHERE id = (SELECT id FROM jobs WHERE state = 'queued' AND (holder IS NULL OR holder = $2
                     OR NOT EXISTS (SELECT 1 FROM workers w WHERE w.instance = jobs.holder AND w.alive_until >= $3))
                     ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
                 RETURNING id, conversation_id, kind, holder"
            }
        };
        let row: Option<(i64, String, String, Option<String>)> = on!(&self.db, pool => sqlx::query_as(sql)
            .bind(lease_until)
            .bind(instance)
            .bind(now)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(|(id, conversation_id, kind, holder)| {
            // A kind this build does not know is a turn: that job only looks where the
            // conversation stands, which is always safe.
            let kind = if kind == "run_decision" { JobKind::RunDecision } else { JobKind::Turn };
            Job { id, conversation_id, kind, holder }
        }))
    }

    /// Worker `instance` is alive until `alive_until` (a heartbeat); returns the workers alive
    /// now, itself among them. Workers gone for a day are forgotten: a question one held has
    /// timed out long since.
    pub async fn worker_beats(&self, instance: &str, alive_until: i64) -> Result<HashSet<String>, StoreError> {
        let now = now();
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO workers (instance, alive_until) VALUES ($1, $2)
             ON CONFLICT (instance) DO UPDATE SET alive_until = excluded.alive_until",
        )
        .bind(instance)
        .bind(alive_until)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        on!(&self.db, pool => sqlx::query("DELETE FROM workers WHERE alive_until < $1")
            .bind(now.saturating_sub(86_400))
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        let alive: Vec<String> = on_read!(&self.db, pool => sqlx::query_scalar("SELECT instance FROM workers WHERE alive_until >= $1")
            .bind(now)
            .fetch_all(pool)
            .await)?;
        Ok(alive.into_iter().chain([instance.to_string()]).collect())
    }

    /// On SQLite the one worker of a file starts: every worker that beat before is gone.
    pub async fn forget_workers(&self) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query("DELETE FROM workers").execute(pool).await.map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// Extends a running job's lease; false if the job is not running any more (requeued as stale).
    pub async fn renew_job(&self, job_id: i64, lease: Duration) -> Result<bool, StoreError> {
        let lease_until = now().saturating_add(i64::try_from(lease.as_secs()).unwrap_or(i64::MAX));
        let rows = on!(&self.db, pool => sqlx::query("UPDATE jobs SET lease_until = $1 WHERE id = $2 AND state = 'running'")
            .bind(lease_until)
            .bind(job_id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(rows == 1)
    }

    pub async fn delete_job(&self, job_id: i64) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query("DELETE FROM jobs WHERE id = $1")
            .bind(job_id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(())
    }

    pub async fn has_job(&self, conversation_id: &str) -> Result<bool, StoreError> {
        let count: i64 = on_read!(&self.db, pool => sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE conversation_id = $1 AND kind = 'turn'")
            .bind(conversation_id)
            .fetch_one(pool)
            .await)?;
        Ok(count > 0)
    }

    /// Queues a job for the conversation unless one is already waiting or running.
    pub async fn ensure_job(&self, conversation_id: &str) -> Result<bool, StoreError> {
        let rows = on!(&self.db, pool => sqlx::query(
            "INSERT INTO jobs (conversation_id, kind, created_at)
             SELECT $1, 'turn', $2 WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE conversation_id = $3 AND kind = 'turn')",
        )
        .bind(conversation_id)
        .bind(now())
        .bind(conversation_id)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(rows == 1)
    }

    /// Queues again every job whose lease ran out: its worker died (a crash or a kill -9).
    pub async fn requeue_stale_jobs(&self) -> Result<u64, StoreError> {
        Ok(on!(&self.db, pool => sqlx::query(
            "UPDATE jobs SET state = 'queued', lease_until = 0 WHERE state = 'running' AND lease_until < $1",
        )
        .bind(now())
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?)
    }

    /// Jobs of a server that stopped are not running any more, whatever their lease says.
    pub async fn requeue_all_running_jobs(&self) -> Result<u64, StoreError> {
        Ok(
            on!(&self.db, pool => sqlx::query("UPDATE jobs SET state = 'queued', lease_until = 0 WHERE state = 'running'")
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?,
        )
    }
}

mod audit;
/// For the bench's answer reference, which writes an answer's audit and outbox rows as the store does.
pub use audit::sqlite_statements as sqlite_audit_statements;

mod inbox;
pub use inbox::RunDecision;

mod policies;
pub use policies::{NewPolicies, Policy};

mod waiting;
pub use waiting::{LatestWaiting, WaitingCount};

mod users;
pub use users::{session_handle, Role, SessionRow, SessionUser, UserRow, UserSummary};

mod mail;
pub use mail::{ClaimedMail, MailSettings};

mod mcp_tokens;
pub use mcp_tokens::{NewSignIn, SignIn, SIGN_IN_SECONDS};

mod webhooks;
pub use webhooks::{
    outbox_select, AttemptOutcome, ClaimedDelivery, Delivery, DeliveryState, OutboxEvent, Webhook, EVENT_KINDS,
};
