//! Runs whose lease ran out (their worker is gone), and the queued runs due for a worker.

use db::{now, on, on_read};
use uuid::Uuid;

use super::records::{small, StaleRun};
use super::{won, Store, StoreError};
use crate::tool::ToolEffect;

impl Store {
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
}
