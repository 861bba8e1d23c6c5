//! All SQL of the runtime, and the migrations of its tables. Kept in this one module so the
//! runtime's schema has one owner, whichever database is behind the handle.
//!
//! Every status change is a single conditional UPDATE naming the status it expects (and, on paths
//! owned by an executing segment, the segment's claim token). "One row affected" decides who won.

use db::{now, on, on_read, Db, Migrations};
use uuid::Uuid;

use crate::run::{EventKind, RunEvent, RunStatus};
use crate::tool::ToolEffect;

/// The migrations of the runtime's tables: runs, their events, and configurations.
pub fn migrations() -> Migrations {
    Migrations::new(sqlx::migrate!("../migrations/sqlite/runtime"), sqlx::migrate!("../migrations/postgres/runtime"))
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("a stored value cannot be read: {0}")]
    Corrupt(String),
}

/// Every column of a run, in [`RunRow`]'s order: the one list each read and `RETURNING` names.
#[macro_export]
macro_rules! run_columns {
    () => {
        "id, status, owner_user_id, owner_admin, configuration, process, allowed_tools, max_rounds, checkpoint, \
         suspended_state, claimed_by, requeue_count, pending_effect, rounds, truncated, termination_reason, answer, \
         created_at, started_at, finished_at, updated_at, outside_content"
    };
}

const NOT_TERMINAL: &str = "('queued', 'running', 'waiting_for_approval', 'waiting_for_input')";

/// The run whose id is the SQL expression `$id` as one JSON object (`NULL` if there is none), for
/// a store that reads a run beside its own rows in one statement on PostgreSQL;
/// [`crate::Runtime::status_from_json`] reads it.
#[macro_export]
macro_rules! pg_run_json {
    ($id:literal) => {
        concat!("(SELECT row_to_json(r) FROM (SELECT ", $crate::run_columns!(), " FROM runs WHERE id = ", $id, ") r)")
    };
}

#[derive(sqlx::FromRow, serde::Deserialize)]
struct RunRow {
    id: String,
    status: String,
    owner_user_id: i64,
    owner_admin: bool,
    configuration: String,
    process: bool,
    allowed_tools: Option<String>,
    max_rounds: i64,
    checkpoint: Option<String>,
    suspended_state: Option<String>,
    claimed_by: Option<String>,
    requeue_count: i64,
    pending_effect: Option<String>,
    rounds: i64,
    truncated: bool,
    termination_reason: Option<String>,
    answer: Option<String>,
    created_at: i64,
    started_at: Option<i64>,
    finished_at: Option<i64>,
    updated_at: i64,
    outside_content: bool,
}

#[derive(sqlx::FromRow)]
struct RunWithConfiguration {
    #[sqlx(flatten)]
    run: RunRow,
    configuration_active: Option<bool>,
}

/// A run row with its columns typed. JSON columns stay text: decoding them is the caller's
/// business, so an unreadable blob never hides the rest of the row.
#[derive(Debug, Clone)]
pub(crate) struct RunRecord {
    pub id: Uuid,
    pub status: RunStatus,
    pub owner_user_id: i64,
    pub owner_admin: bool,
    pub configuration: String,
    pub process: bool,
    pub allowed_tools: Option<String>,
    pub max_rounds: u32,
    pub checkpoint: Option<String>,
    pub suspended_state: Option<String>,
    pub claimed_by: Option<String>,
    pub requeue_count: u32,
    pub pending_effect: Option<ToolEffect>,
    pub rounds: u32,
    pub truncated: bool,
    pub termination_reason: Option<String>,
    pub answer: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub updated_at: i64,
    /// The run holds content from outside; sticky (see the migration that adds it).
    pub outside_content: bool,
}

fn small(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}

/// A run read as [`pg_run_json`] gives it.
pub(crate) fn record_from_json(json: &str) -> Result<RunRecord, StoreError> {
    let row: RunRow =
        serde_json::from_str(json).map_err(|error| StoreError::Corrupt(format!("a run as JSON: {error}")))?;
    RunRecord::try_from(row)
}

impl TryFrom<RunRow> for RunRecord {
    type Error = StoreError;

    fn try_from(row: RunRow) -> Result<Self, StoreError> {
        let id = Uuid::parse_str(&row.id).map_err(|_| StoreError::Corrupt(format!("run id {:?}", row.id)))?;
        let status =
            RunStatus::parse(&row.status).ok_or_else(|| StoreError::Corrupt(format!("run status {:?}", row.status)))?;
        let pending_effect = match row.pending_effect.as_deref() {
            None => None,
            Some(value) => {
                Some(ToolEffect::parse(value).ok_or_else(|| StoreError::Corrupt(format!("pending effect {value:?}")))?)
            }
        };
        Ok(RunRecord {
            id,
            status,
            owner_user_id: row.owner_user_id,
            owner_admin: row.owner_admin,
            configuration: row.configuration,
            process: row.process,
            allowed_tools: row.allowed_tools,
            max_rounds: small(row.max_rounds),
            checkpoint: row.checkpoint,
            suspended_state: row.suspended_state,
            claimed_by: row.claimed_by,
            requeue_count: small(row.requeue_count),
            pending_effect,
            rounds: small(row.rounds),
            truncated: row.truncated,
            termination_reason: row.termination_reason,
            answer: row.answer,
            created_at: row.created_at,
            started_at: row.started_at,
            finished_at: row.finished_at,
            updated_at: row.updated_at,
            outside_content: row.outside_content,
        })
    }
}

pub(crate) struct NewRun<'a> {
    pub id: Uuid,
    pub owner_user_id: i64,
    pub owner_admin: bool,
    pub configuration: &'a str,
    pub process: bool,
    pub allowed_tools: Option<String>,
    pub max_rounds: u32,
    pub checkpoint: String,
    pub outside_content: bool,
}

/// How a settle ends a run.
pub(crate) struct Settle<'a> {
    pub status: RunStatus,
    pub reason: Option<&'a str>,
    pub answer: Option<&'a str>,
    /// `None` keeps the stored count (a failure before any round of this segment ran).
    pub rounds: Option<u32>,
    pub truncated: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct StaleRun {
    pub id: Uuid,
    pub requeue_count: u32,
    pub pending_effect: Option<ToolEffect>,
}

/// An event to append: its sequence number and time come from the statement that stores it.
#[derive(Debug, Clone)]
pub(crate) struct NewEvent {
    pub kind: EventKind,
    pub round: u32,
    pub payload: serde_json::Value,
}

#[derive(sqlx::FromRow)]
struct EventRow {
    sequence: i64,
    kind: String,
    round: i64,
    payload: String,
    created_at: i64,
}

#[derive(Clone, Debug)]
pub(crate) struct Store {
    db: Db,
}

/// How often an event append retries after another writer took the same sequence number. Each
/// collision means another append went in, so with N writers at once N tries always suffice.
const EVENT_ATTEMPTS: usize = 32;

fn won(rows_affected: u64) -> bool {
    rows_affected == 1
}

impl Store {
    pub fn new(db: Db) -> Self {
        Store { db }
    }

    pub async fn insert_queued(&self, run: NewRun<'_>) -> Result<(), StoreError> {
        let now = now();
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO runs (id, status, owner_user_id, owner_admin, configuration, process, allowed_tools,
                               max_rounds, checkpoint, created_at, updated_at, outside_content)
             VALUES ($1, 'queued', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(run.id.to_string())
        .bind(run.owner_user_id)
        .bind(run.owner_admin)
        .bind(run.configuration.to_string())
        .bind(run.process)
        .bind(run.allowed_tools)
        .bind(i64::from(run.max_rounds))
        .bind(run.checkpoint)
        .bind(now)
        .bind(now)
        .bind(run.outside_content)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(())
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<RunRecord>, StoreError> {
        let row: Option<RunRow> = on_read!(&self.db, pool => sqlx::query_as(
            concat!("SELECT ", run_columns!(), " FROM runs WHERE id = $1"),
        )
        .bind(id.to_string())
        .fetch_optional(pool)
        .await)?;
        row.map(RunRecord::try_from).transpose()
    }

    /// [`Store::get`] with whether the run's configuration is active, in one read: every decision
    /// needs both before it claims.
    pub async fn get_with_configuration(&self, id: Uuid) -> Result<Option<(RunRecord, bool)>, StoreError> {
        let row: Option<RunWithConfiguration> = on_read!(&self.db, pool => sqlx::query_as(
            concat!(
                "SELECT ",
                run_columns!(),
                ", (SELECT active FROM run_configurations WHERE name = runs.configuration) AS configuration_active
                 FROM runs WHERE id = $1"
            ),
        )
        .bind(id.to_string())
        .fetch_optional(pool)
        .await)?;
        row.map(|row| Ok((RunRecord::try_from(row.run)?, row.configuration_active.unwrap_or(true)))).transpose()
    }

    /// Every run that waits for an answer (a few at any time; each read whole).
    pub async fn waiting_for_input(&self) -> Result<Vec<RunRecord>, StoreError> {
        let rows: Vec<RunRow> = on_read!(&self.db, pool => sqlx::query_as(
            concat!("SELECT ", run_columns!(), " FROM runs WHERE status = 'waiting_for_input'"),
        )
        .fetch_all(pool)
        .await)?;
        rows.into_iter().map(RunRecord::try_from).collect()
    }

    /// An owner's runs that wait for an approval or an answer, the longest waiting first.
    pub async fn waiting_of(&self, owner_user_id: i64, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        let rows: Vec<RunRow> = on_read!(&self.db, pool => sqlx::query_as(
            concat!("SELECT ", run_columns!(), " FROM runs WHERE owner_user_id = $1 AND status IN ('waiting_for_approval', 'waiting_for_input')
             ORDER BY updated_at, id LIMIT $2"),
        )
        .bind(owner_user_id)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await)?;
        rows.into_iter().map(RunRecord::try_from).collect()
    }

    /// Runs of other owners than this one that wait for an approval, not process runs.
    pub async fn approvals_not_of(&self, owner_user_id: i64, limit: u32) -> Result<Vec<RunRecord>, StoreError> {
        let rows: Vec<RunRow> = on_read!(&self.db, pool => sqlx::query_as(
            concat!("SELECT ", run_columns!(), " FROM runs WHERE owner_user_id <> $1 AND status = 'waiting_for_approval' AND process = $2
             ORDER BY updated_at, id LIMIT $3"),
        )
        .bind(owner_user_id)
        .bind(false)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await)?;
        rows.into_iter().map(RunRecord::try_from).collect()
    }

    /// Runs that have waited since before `cutoff`, with their owners.
    pub async fn waiting_since_before(&self, cutoff: i64, limit: u32) -> Result<Vec<(Uuid, i64)>, StoreError> {
        let rows: Vec<(String, i64)> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT id, owner_user_id FROM runs
             WHERE status IN ('waiting_for_approval', 'waiting_for_input') AND updated_at < $1
             ORDER BY updated_at, id LIMIT $2",
        )
        .bind(cutoff)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await)?;
        rows.into_iter()
            .map(|(id, owner)| {
                Uuid::parse_str(&id).map(|id| (id, owner)).map_err(|_| StoreError::Corrupt(format!("run id {id:?}")))
            })
            .collect()
    }

    /// Runs waiting since before `cutoff` (Unix seconds), the most recent first, with their
    /// owners and since when they wait: the reminder's candidates (the oldest were reminded of
    /// before).
    pub async fn waiting_since_newest(&self, cutoff: i64, limit: u32) -> Result<Vec<(Uuid, i64, i64)>, StoreError> {
        let rows: Vec<(String, i64, i64)> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT id, owner_user_id, updated_at FROM runs
             WHERE status IN ('waiting_for_approval', 'waiting_for_input') AND updated_at < $1
             ORDER BY updated_at DESC, id LIMIT $2",
        )
        .bind(cutoff)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await)?;
        rows.into_iter()
            .map(|(id, owner, since)| {
                Uuid::parse_str(&id)
                    .map(|id| (id, owner, since))
                    .map_err(|_| StoreError::Corrupt(format!("run id {id:?}")))
            })
            .collect()
    }

    /// How many runs are in each status; statuses this build does not know are left out.
    pub async fn count_by_status(&self) -> Result<Vec<(RunStatus, i64)>, StoreError> {
        let rows: Vec<(String, i64)> = on_read!(&self.db, pool => sqlx::query_as("SELECT status, COUNT(*) FROM runs GROUP BY status").fetch_all(pool).await)?;
        Ok(rows
            .into_iter()
            .filter_map(|(status, count)| RunStatus::parse(&status).map(|status| (status, count)))
            .collect())
    }

    /// Whether any of these runs held outside content. Asked in chunks: a conversation may have
    /// many runs, and a statement only so many parameters.
    pub async fn any_outside_content(&self, ids: &[Uuid]) -> Result<bool, StoreError> {
        for chunk in ids.chunks(200) {
            // Only numbered placeholders go into the text; the ids are bound.
            let placeholders: Vec<String> = (1..=chunk.len()).map(|n| format!("${n}")).collect();
            let sql =
                format!("SELECT COUNT(*) FROM runs WHERE outside_content AND id IN ({})", placeholders.join(", "));
            let found: i64 = on_read!(&self.db, pool => {
                let mut query = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.as_str()));
                for id in chunk {
                    query = query.bind(id.to_string());
                }
                query.fetch_one(pool).await
            })?;
            if found > 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    pub async fn status(&self, id: Uuid) -> Result<Option<RunStatus>, StoreError> {
        let status: Option<String> = on_read!(&self.db, pool => sqlx::query_scalar("SELECT status FROM runs WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(pool)
            .await)?;
        status.map(|s| RunStatus::parse(&s).ok_or_else(|| StoreError::Corrupt(format!("run status {s:?}")))).transpose()
    }

    /// QUEUED → RUNNING for a worker; only a run whose backoff has passed. The claimed run comes
    /// back from the same statement, so what the segment carries on is what it claimed.
    pub async fn claim_queued(&self, id: Uuid, token: &str, lease_until: i64) -> Result<Option<RunRecord>, StoreError> {
        let now = now();
        let row: Option<RunRow> = on!(&self.db, pool => sqlx::query_as(
            concat!(
                "UPDATE runs SET status = 'running', claimed_by = $1, lease_expires = $2, pending_effect = NULL,
                                 started_at = COALESCE(started_at, $3), updated_at = $4
                 WHERE id = $5 AND status = 'queued' AND available_at <= $6
                 RETURNING ",
                run_columns!()
            ),
        )
        .bind(token)
        .bind(lease_until)
        .bind(now)
        .bind(now)
        .bind(id.to_string())
        .bind(now)
        .fetch_optional(pool)
        .await)?;
        row.map(RunRecord::try_from).transpose()
    }

    /// WAITING_* → RUNNING for a decision or an answer. The suspended state stays until the segment
    /// settles or suspends again, so a release can hand the run back unchanged. The claimed run
    /// comes back from the same statement: no cancel can land between the claim and its reading.
    pub async fn claim_waiting(
        &self,
        id: Uuid,
        from: RunStatus,
        token: &str,
        lease_until: i64,
    ) -> Result<Option<RunRecord>, StoreError> {
        let row: Option<RunRow> = on!(&self.db, pool => sqlx::query_as(
            concat!(
                "UPDATE runs SET status = 'running', claimed_by = $1, lease_expires = $2, updated_at = $3
                 WHERE id = $4 AND status = $5
                 RETURNING ",
                run_columns!()
            ),
        )
        .bind(token)
        .bind(lease_until)
        .bind(now())
        .bind(id.to_string())
        .bind(from.as_str())
        .fetch_optional(pool)
        .await)?;
        row.map(RunRecord::try_from).transpose()
    }

    /// RUNNING → the waiting status it was claimed from, after a refusal that came after the claim.
    pub async fn release(
        &self,
        id: Uuid,
        token: &str,
        to: RunStatus,
        renewed_state: Option<&str>,
    ) -> Result<bool, StoreError> {
        let result = on!(&self.db, pool => sqlx::query(
            "UPDATE runs SET status = $1, claimed_by = NULL, lease_expires = 0,
                    suspended_state = COALESCE($2, suspended_state), updated_at = $3
             WHERE id = $4 AND status = 'running' AND claimed_by = $5 AND suspended_state IS NOT NULL",
        )
        .bind(to.as_str())
        .bind(renewed_state)
        .bind(now())
        .bind(id.to_string())
        .bind(token)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    /// Whether the segment holding `token` still owns a running run: a read, on the read pool.
    /// The segment's lease is renewed beside it (`Runtime::leased`), so its cancellation points
    /// need not write; a check that misses a cancel by a moment is the same race as one made a
    /// moment earlier, and the run's guarded writes refuse it either way.
    pub async fn still_owned(&self, id: Uuid, token: &str) -> Result<bool, StoreError> {
        let owned: Option<String> = on_read!(&self.db, pool => sqlx::query_scalar(
            "SELECT id FROM runs WHERE id = $1 AND status = 'running' AND claimed_by = $2",
        )
        .bind(id.to_string())
        .bind(token)
        .fetch_optional(pool)
        .await)?;
        Ok(owned.is_some())
    }

    /// Renews the lease; false if the segment no longer owns a running run (cancelled or reaped).
    pub async fn heartbeat(&self, id: Uuid, token: &str, lease_until: i64) -> Result<bool, StoreError> {
        let result = on!(&self.db, pool => sqlx::query(
            "UPDATE runs SET lease_expires = $1, updated_at = $2 WHERE id = $3 AND status = 'running' AND claimed_by = $4",
        )
        .bind(lease_until)
        .bind(now())
        .bind(id.to_string())
        .bind(token)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    /// Records a point a retry may restart from, renewing the lease in the same guarded write.
    /// `outside` goes with the transcript that holds the outside content (it is never cleared).
    pub async fn checkpoint(
        &self,
        id: Uuid,
        token: &str,
        checkpoint: &str,
        rounds: u32,
        outside: bool,
        lease_until: i64,
    ) -> Result<bool, StoreError> {
        let result = on!(&self.db, pool => sqlx::query(
            "UPDATE runs SET checkpoint = $1, rounds = $2, outside_content = (outside_content OR $3),
                             lease_expires = $4, updated_at = $5
             WHERE id = $6 AND status = 'running' AND claimed_by = $7",
        )
        .bind(checkpoint)
        .bind(i64::from(rounds))
        .bind(outside)
        .bind(lease_until)
        .bind(now())
        .bind(id.to_string())
        .bind(token)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    /// The write fence: stamped before a write runs, in the same write that renews the lease, so a
    /// write never runs in a segment that has lost its run.
    pub async fn stamp_effect(
        &self,
        id: Uuid,
        token: &str,
        effect: ToolEffect,
        lease_until: i64,
    ) -> Result<bool, StoreError> {
        let result = on!(&self.db, pool => sqlx::query(
            "UPDATE runs SET pending_effect = $1, lease_expires = $2, updated_at = $3
             WHERE id = $4 AND status = 'running' AND claimed_by = $5",
        )
        .bind(effect.as_str())
        .bind(lease_until)
        .bind(now())
        .bind(id.to_string())
        .bind(token)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    pub async fn clear_effect(&self, id: Uuid, token: &str, lease_until: i64) -> Result<bool, StoreError> {
        let result = on!(&self.db, pool => sqlx::query(
            "UPDATE runs SET pending_effect = NULL, lease_expires = $1, updated_at = $2
             WHERE id = $3 AND status = 'running' AND claimed_by = $4",
        )
        .bind(lease_until)
        .bind(now())
        .bind(id.to_string())
        .bind(token)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    /// RUNNING → WAITING_*: stores the state and drops the lease (the reaper ignores waiting runs).
    pub async fn suspend(
        &self,
        id: Uuid,
        token: &str,
        to: RunStatus,
        state: &str,
        rounds: u32,
        outside: bool,
    ) -> Result<bool, StoreError> {
        let result = on!(&self.db, pool => sqlx::query(
            "UPDATE runs SET status = $1, suspended_state = $2, rounds = $3, outside_content = (outside_content OR $4),
                             claimed_by = NULL, lease_expires = 0, pending_effect = NULL, updated_at = $5
             WHERE id = $6 AND status = 'running' AND claimed_by = $7",
        )
        .bind(to.as_str())
        .bind(state)
        .bind(i64::from(rounds))
        .bind(outside)
        .bind(now())
        .bind(id.to_string())
        .bind(token)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    /// RUNNING (owned by `token`) → a terminal status. Loses silently against a cancel, which is
    /// what keeps a late settle from resurrecting a cancelled run.
    pub async fn finish_owned(&self, id: Uuid, token: &str, settle: Settle<'_>) -> Result<bool, StoreError> {
        let now = now();
        let result = on!(&self.db, pool => sqlx::query(
            "UPDATE runs SET status = $1, termination_reason = $2, answer = $3, rounds = COALESCE($4, rounds), truncated = $5,
                             suspended_state = NULL, checkpoint = NULL, claimed_by = NULL, lease_expires = 0,
                             pending_effect = NULL, finished_at = $6, updated_at = $7
             WHERE id = $8 AND status = 'running' AND claimed_by = $9",
        )
        .bind(settle.status.as_str())
        .bind(settle.reason)
        .bind(settle.answer)
        .bind(settle.rounds.map(i64::from))
        .bind(settle.truncated)
        .bind(now)
        .bind(now)
        .bind(id.to_string())
        .bind(token)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    /// Any non-terminal status → CANCELLED. The pending effect stays stamped: a cancelled write
    /// must read as interrupted.
    pub async fn cancel(&self, id: Uuid) -> Result<bool, StoreError> {
        let now = now();
        let result = on!(&self.db, pool => sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE runs SET status = 'cancelled', termination_reason = 'cancelled', suspended_state = NULL,
                             checkpoint = NULL, claimed_by = NULL, lease_expires = 0, finished_at = $1, updated_at = $2
             WHERE id = $3 AND status IN {NOT_TERMINAL}"
        )))
        .bind(now)
        .bind(now)
        .bind(id.to_string())
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    /// WAITING_* → CANCELLED only; a run being carried on or already decided is left alone.
    pub async fn cancel_if_waiting(&self, id: Uuid) -> Result<bool, StoreError> {
        let now = now();
        let result = on!(&self.db, pool => sqlx::query(
            "UPDATE runs SET status = 'cancelled', termination_reason = 'cancelled', suspended_state = NULL,
                             checkpoint = NULL, claimed_by = NULL, lease_expires = 0, finished_at = $1, updated_at = $2
             WHERE id = $3 AND status IN ('waiting_for_approval', 'waiting_for_input')",
        )
        .bind(now)
        .bind(now)
        .bind(id.to_string())
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    /// A failing segment hands its run back to the queue (owner-guarded).
    pub async fn requeue_owned(&self, id: Uuid, token: &str, available_at: i64) -> Result<bool, StoreError> {
        let result = on!(&self.db, pool => sqlx::query(
            "UPDATE runs SET status = 'queued', requeue_count = requeue_count + 1, available_at = $1,
                             claimed_by = NULL, lease_expires = 0, pending_effect = NULL, suspended_state = NULL,
                             updated_at = $2
             WHERE id = $3 AND status = 'running' AND claimed_by = $4",
        )
        .bind(available_at)
        .bind(now())
        .bind(id.to_string())
        .bind(token)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    pub async fn stale_running(&self, now: i64) -> Result<Vec<StaleRun>, StoreError> {
        let rows: Vec<(String, i64, Option<String>)> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT id, requeue_count, pending_effect FROM runs
             WHERE status = 'running' AND lease_expires > 0 AND lease_expires < $1 ORDER BY lease_expires",
        )
        .bind(now)
        .fetch_all(pool)
        .await)?;
        rows.into_iter()
            .map(|(id, requeue_count, effect)| {
                let id = Uuid::parse_str(&id).map_err(|_| StoreError::Corrupt(format!("run id {id:?}")))?;
                let pending_effect = match effect.as_deref() {
                    None => None,
                    Some(e) => Some(ToolEffect::parse(e).ok_or_else(|| StoreError::Corrupt(format!("effect {e:?}")))?),
                };
                Ok(StaleRun { id, requeue_count: small(requeue_count), pending_effect })
            })
            .collect()
    }

    /// Staleness is checked again inside the write, so a heartbeat that lands first wins. A
    /// non-idempotent stamp is re-checked too: such a run is never requeued.
    /// `cutoff` decides which leases count as expired; the row's own times are the wall clock's.
    pub async fn requeue_stale(&self, id: Uuid, cutoff: i64, available_at: i64) -> Result<bool, StoreError> {
        let result = on!(&self.db, pool => sqlx::query(
            "UPDATE runs SET status = 'queued', requeue_count = requeue_count + 1, available_at = $1,
                             claimed_by = NULL, lease_expires = 0, pending_effect = NULL, suspended_state = NULL,
                             updated_at = $2
             WHERE id = $3 AND status = 'running' AND lease_expires > 0 AND lease_expires < $4
               AND (pending_effect IS NULL OR pending_effect <> 'non_idempotent_write')",
        )
        .bind(available_at)
        .bind(now())
        .bind(id.to_string())
        .bind(cutoff)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    pub async fn dead_letter_stale(&self, id: Uuid, cutoff: i64, reason: &str) -> Result<bool, StoreError> {
        let at = now();
        let result = on!(&self.db, pool => sqlx::query(
            "UPDATE runs SET status = 'failed', termination_reason = $1, suspended_state = NULL, checkpoint = NULL,
                             claimed_by = NULL, lease_expires = 0, finished_at = $2, updated_at = $3
             WHERE id = $4 AND status = 'running' AND lease_expires > 0 AND lease_expires < $5",
        )
        .bind(reason)
        .bind(at)
        .bind(at)
        .bind(id.to_string())
        .bind(cutoff)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(won(result))
    }

    pub async fn due_queued(&self, now: i64, limit: u32) -> Result<Vec<Uuid>, StoreError> {
        let ids: Vec<String> = on_read!(&self.db, pool => sqlx::query_scalar(
            "SELECT id FROM runs WHERE status = 'queued' AND available_at <= $1 ORDER BY created_at, id LIMIT $2",
        )
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await)?;
        ids.iter().map(|id| Uuid::parse_str(id).map_err(|_| StoreError::Corrupt(format!("run id {id:?}")))).collect()
    }

    /// Appends events of one run in one statement, in the order given. The sequence numbers come
    /// from the statement that inserts. Two writers (two processes, or a database that runs
    /// writers side by side) may pick the same ones; the primary key refuses the second, which
    /// then takes the next numbers. Sequences stay strictly increasing per run.
    pub async fn append_events(&self, id: Uuid, events: &[NewEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let run_id = id.to_string();
        let payloads: Vec<String> = events.iter().map(|event| event.payload.to_string()).collect();
        // `VALUES` names its columns column1, column2, … on both databases.
        let rows: Vec<String> = (0..events.len())
            .map(|index| {
                let first = 3 + index * 3;
                format!("({index}, ${first}, ${}, ${})", first + 1, first + 2)
            })
            .collect();
        let sql = format!(
            "INSERT INTO run_events (run_id, sequence, kind, round, payload, created_at)
             SELECT $1, base.next + v.column1, v.column2, v.column3, v.column4, $2
             FROM (SELECT COALESCE(MAX(sequence) + 1, 0) AS next FROM run_events WHERE run_id = ${}) AS base,
                  (VALUES {}) AS v",
            3 + events.len() * 3,
            rows.join(", ")
        );
        let at = now();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let inserted = on!(&self.db, pool => {
                // Built from placeholders and row indexes only; every value is bound.
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.as_str())).bind(&run_id).bind(at);
                for (event, payload) in events.iter().zip(&payloads) {
                    query = query.bind(event.kind.as_str()).bind(i64::from(event.round)).bind(payload);
                }
                query.bind(&run_id).execute(pool).await.map(|done| done.rows_affected())
            });
            match inserted {
                Ok(_) => return Ok(()),
                Err(sqlx::Error::Database(error)) if error.is_unique_violation() && attempt < EVENT_ATTEMPTS => {}
                Err(error) => return Err(error.into()),
            }
        }
    }

    pub async fn events(&self, id: Uuid, after_sequence: i64) -> Result<Vec<RunEvent>, StoreError> {
        let rows: Vec<EventRow> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT sequence, kind, round, payload, created_at FROM run_events
             WHERE run_id = $1 AND sequence > $2 ORDER BY sequence",
        )
        .bind(id.to_string())
        .bind(after_sequence)
        .fetch_all(pool)
        .await)?;
        rows.into_iter()
            .map(|row| {
                let kind = EventKind::parse(&row.kind)
                    .ok_or_else(|| StoreError::Corrupt(format!("event kind {:?}", row.kind)))?;
                let payload = serde_json::from_str(&row.payload)
                    .map_err(|_| StoreError::Corrupt(format!("event payload of sequence {}", row.sequence)))?;
                Ok(RunEvent {
                    sequence: row.sequence,
                    kind,
                    round: small(row.round),
                    payload,
                    created_at: row.created_at,
                })
            })
            .collect()
    }

    pub async fn configuration_active(&self, name: &str) -> Result<bool, StoreError> {
        let active: Option<bool> = on_read!(&self.db, pool => sqlx::query_scalar("SELECT active FROM run_configurations WHERE name = $1")
            .bind(name)
            .fetch_optional(pool)
            .await)?;
        Ok(active.unwrap_or(true))
    }

    pub async fn set_configuration_active(&self, name: &str, active: bool) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO run_configurations (name, active, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET active = excluded.active, updated_at = excluded.updated_at",
        )
        .bind(name)
        .bind(active)
        .bind(now())
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the database the tests run on: a SQLite file, or PostgreSQL when
    /// `TOURGUIDE_TEST_POSTGRES` names a server (there the appends really collide).
    async fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let db = match db::scratch_postgres().await.unwrap() {
            Some(url) => Db::open_postgres(&url).await.unwrap(),
            None => Db::open_sqlite(&dir.path().join("events.sqlite")).await.unwrap(),
        };
        db.migrate(&migrations()).await.unwrap();
        (dir, Store::new(db))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn events_of_many_writers_at_once_get_distinct_increasing_sequences() {
        let (_dir, store) = store().await;
        let id = Uuid::new_v4();
        let run = NewRun {
            id,
            owner_user_id: 1,
            owner_admin: false,
            configuration: "default",
            process: false,
            allowed_tools: None,
            max_rounds: 5,
            checkpoint: "[]".into(),
            outside_content: false,
        };
        store.insert_queued(run).await.unwrap();
        // Each writer appends one, two or three events in one statement.
        let parts = |n: u32| n % 3 + 1;
        let writers: Vec<_> = (0..40)
            .map(|n| {
                let store = store.clone();
                let events: Vec<NewEvent> = (0..parts(n))
                    .map(|part| NewEvent {
                        kind: EventKind::Tool,
                        round: n,
                        payload: serde_json::json!({ "writer": n, "part": part }),
                    })
                    .collect();
                tokio::spawn(async move { store.append_events(id, &events).await })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap().unwrap();
        }
        let events = store.events(id, -1).await.unwrap();
        let total: u32 = (0..40).map(parts).sum();
        let sequences: Vec<i64> = events.iter().map(|event| event.sequence).collect();
        assert_eq!(sequences, (0..i64::from(total)).collect::<Vec<i64>>());
        // A writer's events stand together and in its order.
        let mut seen = Vec::new();
        for run in events.chunk_by(|a, b| a.payload["writer"] == b.payload["writer"]) {
            let writer = run[0].payload["writer"].as_u64().unwrap() as u32;
            let order: Vec<u64> = run.iter().map(|event| event.payload["part"].as_u64().unwrap()).collect();
            assert_eq!(order, (0..u64::from(parts(writer))).collect::<Vec<u64>>(), "writer {writer}");
            seen.push(writer);
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..40).collect::<Vec<u32>>(), "every append landed once, whole");
    }
}
