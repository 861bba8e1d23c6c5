//! What a page reads with its session, in one round trip: the session's user, how many runs wait
//! for them (the header's count, as `store::waiting` counts it) and, on the chat page, their
//! latest conversations (as `Store::conversations_of` reads them) and the open conversation's
//! snapshot (as `Store::conversation_snapshot` reads it). On PostgreSQL one statement (one
//! snapshot under READ COMMITTED); on SQLite one batch in a read transaction.

use db::{now, Db};
use sqlx::{FromRow, Row};

use super::conversations::LIST_LIMIT;
use super::rows::status_of;
use super::snapshot::{pg_snapshot_of, sqlite_snapshot_of, ConversationSnapshot};
use super::users::SessionUser;
use super::waiting::{waiting_count_columns, WaitingCount};
use super::{Store, StoreError};
use crate::conversation::ListedConversation;
use crate::markdown::RENDERER_VERSION;

/// What a page shows beside its header (which every page has).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageShows<'a> {
    /// Only the header.
    Header,
    /// The chat page: the list of conversations.
    List,
    /// The chat page with a conversation open: the list and that conversation.
    Conversation(&'a str),
}

/// A page's head: its reader, and what the page shows of their data.
#[derive(Debug, Clone)]
pub struct PageHead {
    pub user: SessionUser,
    pub waiting: WaitingCount,
    /// The latest [`LIST_LIMIT`] conversations, newest first; `None` unless asked for.
    pub conversations: Option<Vec<ListedConversation>>,
    /// The conversation asked for, if it is the user's.
    pub snapshot: Option<ConversationSnapshot>,
}

/// The live session whose hash is `$1` (`$2` now) as `me`: its user's columns, and whether they
/// review others' changes (`CurrentUser::reviews`: an admin, or who may approve their own).
macro_rules! me {
    () => {
        concat!(
            "WITH me AS (SELECT ",
            $crate::store::users::session_user_columns!(),
            ", (u.role = 'admin' OR u.may_approve_own) AS reviews
             FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > $2) "
        )
    };
}

/// The runs that wait for `me`, with `$select` of them (a row even when none do).
macro_rules! waiting_for_me {
    ($select:expr) => {
        $crate::store::waiting::waiting_for!(
            $select,
            "",
            user = "(SELECT account_id FROM me)",
            reviews = "(SELECT reviews FROM me)",
            no = "FALSE"
        )
    };
}

/// [`Store::page_head`] on PostgreSQL: the session's user beside the count of their waiting runs
/// (a lateral join, so the runs are read once for the three figures), then `$more` columns from
/// what `$join` joins.
macro_rules! pg_page_head {
    ($more:expr, $join:expr) => {
        concat!(
            me!(),
            "SELECT me.*, w.waiting_count, w.waiting_newest, w.waiting_sum",
            $more,
            " FROM me CROSS JOIN LATERAL (",
            waiting_for_me!(waiting_count_columns!()),
            ") AS w (waiting_count, waiting_newest, waiting_sum)",
            $join
        )
    };
}

/// The list (`$3` its length) as a JSON array of `[id, title, status]`, in the list's order
/// (`conversation_list_sql`).
macro_rules! pg_list {
    () => {
        ", (SELECT COALESCE(json_agg(json_build_array(l.id, l.title, l.status) ORDER BY l.updated_at DESC, l.seq DESC), '[]')
            FROM (SELECT id, title, status, updated_at, seq FROM conversations WHERE user_id = me.account_id
                  ORDER BY updated_at DESC, seq DESC LIMIT $3) l) AS conversations"
    };
}

const PG_HEADER: &str = pg_page_head!("", "");
const PG_LIST: &str = pg_page_head!(pg_list!(), "");
/// With the conversation `$4` as `PG_SNAPSHOT` reads it (`$5` the renderer's version): its
/// columns are NULL when it is not the user's.
const PG_CONVERSATION: &str = pg_page_head!(
    concat!(pg_list!(), ", ", super::rows::conversation_columns!(), super::snapshot::pg_snapshot_parts!("$5")),
    " LEFT JOIN conversations c ON c.id = $4 AND c.user_id = me.account_id"
);

/// [`Store::page_head`] on SQLite: each row tagged with its `part`: 0 the user (none for an
/// unknown or ended session, and then nothing else), 1 the count, then `$more`.
macro_rules! sqlite_page_head {
    ($more:expr) => {
        concat!(
            "BEGIN; ",
            me!(),
            "SELECT 0 AS part, * FROM me; ",
            me!(),
            "SELECT 1 AS part, * FROM (",
            waiting_for_me!(waiting_count_columns!()),
            ") WHERE EXISTS (SELECT 1 FROM me); ",
            $more,
            "COMMIT;"
        )
    };
}

/// Part 2: a row per listed conversation (`$3` their number), in the list's order
/// (`conversation_list_sql`).
macro_rules! sqlite_list {
    () => {
        concat!(
            me!(),
            "SELECT 2 AS part, id, title, status FROM conversations WHERE user_id = (SELECT account_id FROM me)
             ORDER BY updated_at DESC, rowid DESC LIMIT $3; "
        )
    };
}

const SQLITE_HEADER: &str = sqlite_page_head!("");
const SQLITE_LIST: &str = sqlite_page_head!(sqlite_list!());
/// Parts 3 to 6: the conversation `$4` (`$5` the renderer's version) as `SQLITE_SNAPSHOT` reads it.
const SQLITE_CONVERSATION: &str = sqlite_page_head!(concat!(
    sqlite_list!(),
    super::snapshot::sqlite_snapshot_reads!(
        me!(),
        id = "$4",
        owner = "(SELECT account_id FROM me)",
        version = "$5",
        parts = ["3", "4", "5", "6"]
    )
));

/// The first part of the snapshot's rows in [`SQLITE_CONVERSATION`].
const SQLITE_SNAPSHOT_PART: i64 = 3;

fn listed(id: String, title: String, status: String) -> Result<ListedConversation, StoreError> {
    let status = status_of(&id, &status)?;
    Ok(ListedConversation { id, title, status })
}

impl Store {
    /// The head of a page that `shows` what it says, for the session whose token hashes to
    /// `token_hash`; `None` when the session is unknown or ended.
    pub async fn page_head(&self, token_hash: &str, shows: PageShows<'_>) -> Result<Option<PageHead>, StoreError> {
        let at = now();
        match &self.db {
            Db::Postgres(pool) => {
                let row = match shows {
                    PageShows::Header => sqlx::query(PG_HEADER).bind(token_hash).bind(at).fetch_optional(pool).await?,
                    PageShows::List => {
                        sqlx::query(PG_LIST).bind(token_hash).bind(at).bind(LIST_LIMIT).fetch_optional(pool).await?
                    }
                    PageShows::Conversation(id) => {
                        sqlx::query(PG_CONVERSATION)
                            .bind(token_hash)
                            .bind(at)
                            .bind(LIST_LIMIT)
                            .bind(id)
                            .bind(RENDERER_VERSION)
                            .fetch_optional(pool)
                            .await?
                    }
                };
                let Some(row) = row else { return Ok(None) };
                let conversations = if shows == PageShows::Header {
                    None
                } else {
                    let sqlx::types::Json(rows): sqlx::types::Json<Vec<(String, String, String)>> =
                        row.try_get("conversations")?;
                    Some(
                        rows.into_iter()
                            .map(|(id, title, status)| listed(id, title, status))
                            .collect::<Result<_, _>>()?,
                    )
                };
                let snapshot = match shows {
                    PageShows::Conversation(_) if row.try_get::<Option<String>, _>("id")?.is_some() => {
                        Some(pg_snapshot_of(&row)?)
                    }
                    _ => None,
                };
                Ok(Some(PageHead {
                    user: SessionUser::from_row(&row)?,
                    waiting: WaitingCount::of(
                        row.try_get("waiting_count")?,
                        row.try_get("waiting_newest")?,
                        row.try_get("waiting_sum")?,
                    ),
                    conversations,
                    snapshot,
                }))
            }
            Db::Sqlite(db::Sqlite { read, .. }) => {
                let rows = match shows {
                    PageShows::Header => read.fetch_batch(sqlx::query(SQLITE_HEADER).bind(token_hash).bind(at)).await?,
                    PageShows::List => {
                        read.fetch_batch(sqlx::query(SQLITE_LIST).bind(token_hash).bind(at).bind(LIST_LIMIT)).await?
                    }
                    PageShows::Conversation(id) => {
                        let query = sqlx::query(SQLITE_CONVERSATION)
                            .bind(token_hash)
                            .bind(at)
                            .bind(LIST_LIMIT)
                            .bind(id)
                            .bind(RENDERER_VERSION);
                        read.fetch_batch(query).await?
                    }
                };
                let (mut user, mut waiting, mut conversations) = (None, None, Vec::new());
                for each in &rows {
                    match each.try_get::<i64, _>("part")? {
                        0 => user = Some(SessionUser::from_row(each)?),
                        1 => waiting = Some(WaitingCount::of(each.try_get(1)?, each.try_get(2)?, each.try_get(3)?)),
                        2 => conversations.push(listed(
                            each.try_get("id")?,
                            each.try_get("title")?,
                            each.try_get("status")?,
                        )?),
                        _ => {}
                    }
                }
                let (Some(user), Some(waiting)) = (user, waiting) else { return Ok(None) };
                let snapshot = match shows {
                    PageShows::Conversation(_) => sqlite_snapshot_of(&rows, SQLITE_SNAPSHOT_PART)?,
                    _ => None,
                };
                let conversations = (shows != PageShows::Header).then_some(conversations);
                Ok(Some(PageHead { user, waiting, conversations, snapshot }))
            }
        }
    }
}
