//! A conversation as a page or a poll shows it, read as of one moment: its row, transcript, files
//! and draft (SQLite: one batch in a read transaction; PostgreSQL: one statement), and the poll's
//! reads that check the session in the same statement.

use db::{now, on_read, Db};
use sqlx::{FromRow, Row};

use super::attachments::{attachment_columns, Attachment};
use super::drafts::draft_columns;
use super::rows::{conversation_columns, status_of, ConversationRow, MessageRow};
use super::users::{session_user_columns, SessionUser};
use super::{Store, StoreError};
use crate::conversation::{Conversation, ConversationStatus, Message};
use crate::markdown::RENDERER_VERSION;

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

/// A snapshot's four reads on SQLite, each row tagged with its `part`: `$p0` the conversation `$id`
/// if `$owner` owns it, and only then `$p1` its transcript (`$version` bound to
/// [`RENDERER_VERSION`]), `$p2` its files and `$p3` its draft. `$with` goes before each statement
/// (a CTE that `$owner` reads from, or nothing).
macro_rules! sqlite_snapshot_reads {
    ($with:expr, id = $id:literal, owner = $owner:literal, version = $version:literal, parts = [$p0:literal, $p1:literal, $p2:literal, $p3:literal]) => {
        concat!(
            $with,
            "SELECT ",
            $p0,
            " AS part, ",
            $crate::store::rows::conversation_columns!(),
            " FROM conversations c WHERE id = ",
            $id,
            " AND user_id = ",
            $owner,
            ";
             ",
            $with,
            "SELECT ",
            $p1,
            " AS part, ",
            $crate::store::snapshot::snapshot_message_columns!($version),
            " FROM messages
             WHERE conversation_id = ",
            $id,
            " AND EXISTS (SELECT 1 FROM conversations WHERE id = ",
            $id,
            " AND user_id = ",
            $owner,
            ") ORDER BY id;
             ",
            $with,
            "SELECT ",
            $p2,
            " AS part, ",
            $crate::store::attachments::attachment_columns!(),
            " FROM attachments
             WHERE conversation_id = ",
            $id,
            " AND EXISTS (SELECT 1 FROM conversations WHERE id = ",
            $id,
            " AND user_id = ",
            $owner,
            ") ORDER BY id;
             ",
            $with,
            "SELECT ",
            $p3,
            " AS part, ",
            $crate::store::drafts::draft_columns!(),
            " FROM drafts
             WHERE conversation_id = ",
            $id,
            " AND EXISTS (SELECT 1 FROM conversations WHERE id = ",
            $id,
            " AND user_id = ",
            $owner,
            ");
             "
        )
    };
}

/// [`Store::conversation_snapshot`] on SQLite: its four reads as one batch in a read transaction.
const SQLITE_SNAPSHOT: &str = concat!(
    "BEGIN;
     ",
    sqlite_snapshot_reads!("", id = "$1", owner = "$2", version = "$3", parts = ["0", "1", "2", "3"]),
    "COMMIT;"
);

/// The snapshot in the rows of [`sqlite_snapshot_reads`] whose parts are `first` to `first + 3`
/// (other rows are passed over); `None` when the conversation is not there.
pub(super) fn sqlite_snapshot_of(
    rows: &[sqlx::sqlite::SqliteRow],
    first: i64,
) -> Result<Option<ConversationSnapshot>, StoreError> {
    let (mut row, mut messages, mut attachments, mut draft) = (None, Vec::new(), Vec::new(), None);
    for each in rows {
        match each.try_get::<i64, _>("part")? - first {
            0 => row = Some(ConversationRow::from_row(each)?),
            1 => messages.push(MessageRow::from_row(each)?),
            2 => attachments.push(Attachment::from_row(each)?),
            3 => draft = Some((each.try_get("draft_key")?, each.try_get("content")?)),
            _ => {}
        }
    }
    let Some(row) = row else { return Ok(None) };
    let messages = messages.into_iter().map(Message::try_from).collect::<Result<Vec<_>, _>>()?;
    Ok(Some(ConversationSnapshot { conversation: Conversation::try_from(row)?, messages, attachments, draft }))
}

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
        concat!("SELECT 1", $crate::store::snapshot::owned_through_session!())
    };
}

/// The conversation `$3` with the user of the live session whose hash is `$1` (`$2` now), if it
/// is theirs; a poll's first statement.
macro_rules! poll_head {
    () => {
        concat!(
            "SELECT 0 AS part, ",
            $crate::store::rows::conversation_columns!(),
            ", ",
            $crate::store::users::session_user_columns!(),
            $crate::store::snapshot::owned_through_session!()
        )
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
            $crate::store::snapshot::snapshot_message_columns!($version),
            " FROM messages WHERE conversation_id = c.id) m) AS messages,
             (SELECT COALESCE(json_agg(a ORDER BY a.id), '[]') FROM (SELECT ",
            $crate::store::attachments::attachment_columns!(),
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
pub const SQLITE_POLL_WHOLE: &str = concat!(
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
pub const PG_POLL_WHOLE: &str = concat!(
    "SELECT ",
    conversation_columns!(),
    ", ",
    session_user_columns!(),
    pg_snapshot_parts!("$4"),
    owned_through_session!()
);

/// [`Store::poll_head`]'s one statement (`$1` the session's hash, `$2` now, `$3` the conversation);
/// public for the bench's limit references, which run the same SQL.
pub const POLL_HEAD: &str = concat!(
    "SELECT c.status, c.updated_at, c.approval_decision IS NOT NULL AS recorded, ",
    session_user_columns!(),
    ", (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count",
    owned_through_session!()
);

/// A conversation's snapshot from a row of [`PG_SNAPSHOT`] or [`PG_POLL_WHOLE`].
pub(super) fn pg_snapshot_of(row: &sqlx::postgres::PgRow) -> Result<ConversationSnapshot, StoreError> {
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

impl Store {
    /// The user's conversation with its transcript and files as of one moment: a write that
    /// changes several (a line and the status it goes with, a message and its files) is seen
    /// whole or not at all. `None` when there is no such conversation of this user.
    pub async fn conversation_snapshot(
        &self,
        user_id: i64,
        id: &str,
    ) -> Result<Option<ConversationSnapshot>, StoreError> {
        match &self.db {
            // One batch, one round trip to the reader's thread instead of five; each row says
            // which of the four statements it comes from.
            Db::Sqlite(db::Sqlite { read, .. }) => {
                let rows = read
                    .fetch_batch(sqlx::query(SQLITE_SNAPSHOT).bind(id).bind(user_id).bind(RENDERER_VERSION))
                    .await?;
                sqlite_snapshot_of(&rows, 0)
            }
            // One statement, one moment (see `pg_snapshot_parts`).
            Db::Postgres(pool) => {
                let row =
                    sqlx::query(PG_SNAPSHOT).bind(id).bind(user_id).bind(RENDERER_VERSION).fetch_optional(pool).await?;
                row.as_ref().map(pg_snapshot_of).transpose()
            }
        }
    }

    /// A poll's check in one statement: the session's user, the conversation's status if it is
    /// theirs, and its message count (counted on the `(conversation_id, id)` index alone: the
    /// fast path reads no message). `None` when the session is unknown or expired, or the
    /// conversation is not the user's (`user_for_session` tells which, on that rare path). One
    /// statement instead of three, because on SQLite each costs a hop to the connection's thread
    /// and back; and on SQLite not even that one: the statement runs on the request's own thread
    /// ([`db::Here`]), which halves a fast poll's cost.
    pub async fn poll_head(&self, token_hash: &str, id: &str) -> Result<Option<PollHead>, StoreError> {
        const SQL: &str = POLL_HEAD;
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
}
pub(super) use owned_through_session;
pub(super) use pg_snapshot_parts;
pub(super) use snapshot_message_columns;
pub(super) use sqlite_snapshot_reads;
