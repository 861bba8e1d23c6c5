//! The status changes of a run's life: queued, claimed, released, suspended, settled, requeued.
//! Each is one conditional UPDATE naming the status it expects.

use db::{now, on};
use uuid::Uuid;

use super::records::{NewRun, RunRecord, RunRow, Settle};
use super::{won, Store, StoreError};
use crate::run::RunStatus;

impl Store {
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
}
