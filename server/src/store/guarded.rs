//! The one guarded write: an UPDATE of a conversation row on the state it expects, and the writes
//! that go with it (`Then`), all or nothing, in one round trip (SQLite: one batch in a
//! transaction; PostgreSQL: one statement of data-modifying CTEs). Every status change of a
//! conversation goes through it, so of two requests, or a request and the worker, one wins.

use db::{now, on, Db};
use sqlx::Row;

use super::args::{bind_args, Arg};
use super::audit;
use super::{Store, StoreError};
use crate::audit::Entry;
use crate::conversation::{MessageRole, Notice};
use crate::markdown::{to_safe_html, RENDERER_VERSION};

/// The PostgreSQL channel a conversation's "changed" goes out on, its id the payload: sent by a
/// guarded write itself (`Then::Announce`) and by `events` for the other changes, heard by every
/// process's listener.
pub const CHANGED_CHANNEL: &str = "tourguide_changed";

/// The columns of a recorded answer or decision, cleared: nothing travels any more.
macro_rules! clear_recorded {
    () => {
        "approval_decision = NULL, approval_turn_digest = NULL, pending_input = NULL, approval_deny_reason = NULL, approval_decided_by = NULL, recorded_at_ms = NULL, approval_message = NULL, approval_edits = NULL, approval_policy = NULL"
    };
}

/// What the transaction of a guarded write does once its UPDATE won.
#[derive(Debug, Clone, Copy)]
pub(super) enum Then<'a> {
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
    /// announces the change with `events::ConversationEvents::announced`, which on
    /// SQLite sends it in the process.
    Announce,
}

/// The HTML a line is stored with, made once when it is written: an assistant line's Markdown,
/// rendered and sanitised; none for the reader's own lines, which are never interpreted.
pub(super) fn stored_rendering(role: MessageRole, content: &str) -> Option<String> {
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

/// What the steps carry that is made before the statement: an assistant line's HTML (made once,
/// so every reader gets it as stored) and each audit row's prepared values.
pub(super) fn prepared(then: &[Then<'_>]) -> (Vec<Option<String>>, Vec<Option<audit::Prepared>>) {
    let rendered = then.iter().map(Then::rendered).collect();
    let audits = then
        .iter()
        .map(|step| if let Then::Audit(entry) = step { Some(audit::Prepared::of(entry)) } else { None })
        .collect();
    (rendered, audits)
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
pub(super) fn guarded_statement<'a>(
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
            CHANGED_CHANNEL
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
pub(super) fn guarded_batch<'a>(
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
    /// One guarded write: an UPDATE of a conversation row that must hit exactly one row, then the
    /// writes that go with it (on the same conversation), all or nothing. If the UPDATE hits no
    /// row nothing is written and the answer is false: someone else won, or the row is not in the
    /// state expected. Either backend gets it in one round trip instead of one per write: SQLite
    /// as one batch in a transaction of its own, PostgreSQL as one statement (data-modifying CTEs).
    pub(super) async fn guarded(
        &self,
        conversation_id: &str,
        update: &'static str,
        args: &[Arg<'_>],
        then: &[Then<'_>],
    ) -> Result<bool, StoreError> {
        let at = now();
        let (rendered, audits) = prepared(then);
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
    pub(super) async fn update_one(&self, sql: &'static str, args: &[Arg<'_>]) -> Result<bool, StoreError> {
        let rows = on!(&self.db, pool => bind_args!(sqlx::query(sql), args).execute(pool).await.map(|done| done.rows_affected()))?;
        Ok(rows == 1)
    }
}
pub(super) use clear_recorded;
