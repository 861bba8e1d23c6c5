//! How many runs wait for a reader, for the count in every page's header: one statement over the
//! runtime's `runs` (read only) and the chat's own tables, since only here are both known. It
//! counts what the runs inbox lists (`ChatService::inbox`): the reader's runs that wait, unless a
//! decision or answer is on its way to them, and for a reviewer the cards of owners who may not
//! approve their own changes. It goes through the runs by the status index, so its cost grows with
//! the runs that wait, not with the runs there ever were.

use db::on_read;
use uuid::Uuid;

use super::{Store, StoreError};

/// The runs that wait for `$1`; `$2`: the reader reviews others' changes; `$3` is `false`. A
/// statement that reads the reader with it names them by other expressions (`user`, `reviews`,
/// `no`), as the page's head does ([`super::page_head`]).
/// A run the conversation still waits on counts while the conversation says so (a decision
/// recorded in the chat makes it `processing`); one it moved on from, until a decision given in
/// the inbox is on its way (a refused one counts again).
macro_rules! waiting_for {
    ($select:expr, $tail:literal) => {
        $crate::store::waiting::waiting_for!($select, $tail, user = "$1", reviews = "$2", no = "$3")
    };
    ($select:expr, $tail:literal, user = $user:literal, reviews = $reviews:literal, no = $no:literal) => {
        concat!(
            "SELECT ",
            $select,
            " FROM runs r
             JOIN conversation_runs m ON m.run_id = r.id
             JOIN conversations c ON c.id = m.conversation_id
             LEFT JOIN run_decisions d ON d.run_id = r.id
             WHERE r.status IN ('waiting_for_approval', 'waiting_for_input')
               AND c.user_id = r.owner_user_id
               AND (r.owner_user_id = ",
            $user,
            "
                    OR (",
            $reviews,
            " AND r.owner_user_id <> ",
            $user,
            " AND r.status = 'waiting_for_approval' AND r.process = ",
            $no,
            "
                        AND EXISTS (SELECT 1 FROM users u
                                    WHERE u.id = r.owner_user_id AND u.role <> 'admin' AND u.may_approve_own = ",
            $no,
            ")))
               AND CASE WHEN c.run_id = r.id THEN c.status IN ('awaiting_input', 'awaiting_approval')
                        ELSE d.run_id IS NULL OR d.error_code IS NOT NULL END ",
            $tail
        )
    };
}
pub(super) use waiting_for;

/// A [`WaitingCount`]'s columns: how many, the newest change and the sum of the changes (the mark).
macro_rules! waiting_count_columns {
    () => {
        "COUNT(*), CAST(COALESCE(MAX(r.updated_at), 0) AS BIGINT), CAST(COALESCE(SUM(r.updated_at), 0) AS BIGINT)"
    };
}
pub(super) use waiting_count_columns;

/// What waits for a reader: how many runs, and a mark that changes whenever the set of them does
/// (one leaves and another comes), so an open inbox knows to load again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingCount {
    pub count: i64,
    pub mark: String,
}

impl WaitingCount {
    /// From [`waiting_count_columns`]: the mark changes whenever a run joins or leaves the set.
    pub(super) fn of(count: i64, newest: i64, sum: i64) -> WaitingCount {
        WaitingCount { count, mark: format!("{count}.{newest}.{sum}") }
    }
}

/// The run that began to wait last, for a browser notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatestWaiting {
    pub run_id: Uuid,
    pub conversation_id: String,
    pub title: String,
    /// A card, else a question.
    pub approval: bool,
}

impl Store {
    pub async fn waiting_count(&self, user_id: i64, reviews: bool) -> Result<WaitingCount, StoreError> {
        let (count, newest, sum): (i64, i64, i64) = on_read!(&self.db, pool => sqlx::query_as(waiting_for!(waiting_count_columns!(), ""))
        .bind(user_id)
        .bind(reviews)
        .bind(false)
        .fetch_one(pool)
        .await)?;
        Ok(WaitingCount::of(count, newest, sum))
    }

    pub async fn latest_waiting(&self, user_id: i64, reviews: bool) -> Result<Option<LatestWaiting>, StoreError> {
        let row: Option<(String, String, String, String)> = on_read!(&self.db, pool => sqlx::query_as(waiting_for!(
            "r.id, c.id, c.title, r.status",
            "ORDER BY r.updated_at DESC, r.id DESC LIMIT 1"
        ))
        .bind(user_id)
        .bind(reviews)
        .bind(false)
        .fetch_optional(pool)
        .await)?;
        row.map(|(run, conversation_id, title, status)| {
            let run_id = Uuid::parse_str(&run).map_err(|_| StoreError::Corrupt(format!("run id {run:?}")))?;
            Ok(LatestWaiting { run_id, conversation_id, title, approval: status == "waiting_for_approval" })
        })
        .transpose()
    }
}
