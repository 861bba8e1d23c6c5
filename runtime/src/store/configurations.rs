//! Whether a run configuration is active: an inactive one starts no runs and decides nothing.

use db::{now, on, on_read};

use super::{Store, StoreError};

impl Store {
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
