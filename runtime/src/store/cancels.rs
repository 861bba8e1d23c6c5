//! Cancelling a run, whatever it is doing or only while it waits.

use db::{now, on};
use uuid::Uuid;

use super::{won, Store, StoreError};

const NOT_TERMINAL: &str = "('queued', 'running', 'waiting_for_approval', 'waiting_for_input')";

impl Store {
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
}
