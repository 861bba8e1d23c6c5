//! The job queue (what a worker carries on, leased while it works, taken over once a lease runs
//! out) and the workers' heartbeats (who holds an open MCP call's question).

use std::collections::HashSet;
use std::time::Duration;

use db::{now, on, on_read, Backend};

use super::{Store, StoreError};

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

impl Store {
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
