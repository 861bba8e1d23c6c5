//! What an executing segment writes while it owns its run: the lease, checkpoints and the write
//! fence, each guarded on the segment's claim token.

use db::{now, on, on_read};
use uuid::Uuid;

use super::{won, Store, StoreError};
use crate::tool::ToolEffect;

impl Store {
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
}
