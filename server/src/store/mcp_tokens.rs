//! MCP OAuth sign-ins: each server's tokens per owner (`None`: the shared one), and the sign-ins
//! begun and not yet come back. Every value here arrives sealed (`token_key`); this module only
//! keeps bytes.

use db::{now, on, on_read};

use super::{Store, StoreError};

/// How long a sign-in may take between its start and its callback.
pub const SIGN_IN_SECONDS: i64 = 600;

/// A sign-in begun: bound to the session that began it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSignIn<'a> {
    pub state_hash: &'a str,
    pub session_hash: &'a str,
    pub user_id: i64,
    pub server: &'a str,
    pub shared: bool,
    pub sealed: &'a [u8],
}

/// A sign-in taken back by its callback.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SignIn {
    pub user_id: i64,
    pub server: String,
    pub shared: bool,
    pub sealed: Vec<u8>,
}

impl Store {
    /// The sealed tokens of `server` for `user_id` (`None`: the shared sign-in).
    pub async fn mcp_token(&self, server: &str, user_id: Option<i64>) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_scalar(
            "SELECT sealed FROM mcp_tokens WHERE server = $1 AND COALESCE(user_id, 0) = COALESCE($2, 0)",
        )
        .bind(server)
        .bind(user_id)
        .fetch_optional(pool)
        .await)?)
    }

    /// The sealed client registered for `server` with callback `redirect_uri`.
    pub async fn mcp_client(&self, server: &str, redirect_uri: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_scalar(
            "SELECT sealed FROM mcp_oauth_clients WHERE server = $1 AND redirect_uri = $2",
        )
        .bind(server)
        .bind(redirect_uri)
        .fetch_optional(pool)
        .await)?)
    }

    /// Keeps the sealed registered client, in place of any before.
    pub async fn save_mcp_client(&self, server: &str, redirect_uri: &str, sealed: &[u8]) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO mcp_oauth_clients (server, redirect_uri, sealed, updated_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (server, redirect_uri) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at",
        )
        .bind(server)
        .bind(redirect_uri)
        .bind(sealed)
        .bind(now())
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// Keeps the sealed tokens, in place of any before.
    pub async fn save_mcp_token(&self, server: &str, user_id: Option<i64>, sealed: &[u8]) -> Result<(), StoreError> {
        let at = now();
        on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            sqlx::query("DELETE FROM mcp_tokens WHERE server = $1 AND COALESCE(user_id, 0) = COALESCE($2, 0)")
                .bind(server)
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query("INSERT INTO mcp_tokens (server, user_id, sealed, updated_at) VALUES ($1, $2, $3, $4)")
                .bind(server)
                .bind(user_id)
                .bind(sealed)
                .bind(at)
                .execute(&mut *tx)
                .await?;
            tx.commit().await
        }
        .await)?;
        Ok(())
    }

    /// Forgets the tokens; true when there were some.
    pub async fn delete_mcp_token(&self, server: &str, user_id: Option<i64>) -> Result<bool, StoreError> {
        let done = on!(&self.db, pool => sqlx::query(
            "DELETE FROM mcp_tokens WHERE server = $1 AND COALESCE(user_id, 0) = COALESCE($2, 0)",
        )
        .bind(server)
        .bind(user_id)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(done > 0)
    }

    /// A user who connected `server` (the one who did so last).
    pub async fn any_mcp_user(&self, server: &str) -> Result<Option<i64>, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_scalar(
            "SELECT user_id FROM mcp_tokens WHERE server = $1 AND user_id IS NOT NULL
             ORDER BY updated_at DESC, user_id LIMIT 1",
        )
        .bind(server)
        .fetch_optional(pool)
        .await)?)
    }

    /// Keeps a sign-in begun; those older than [`SIGN_IN_SECONDS`] go.
    pub async fn begin_mcp_sign_in(&self, sign_in: &NewSignIn<'_>) -> Result<(), StoreError> {
        let at = now();
        on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            sqlx::query("DELETE FROM mcp_oauth_states WHERE created_at < $1")
                .bind(at - SIGN_IN_SECONDS)
                .execute(&mut *tx)
                .await?;
            sqlx::query(
                "INSERT INTO mcp_oauth_states (state_hash, session_hash, user_id, server, shared, sealed, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(sign_in.state_hash)
            .bind(sign_in.session_hash)
            .bind(sign_in.user_id)
            .bind(sign_in.server)
            .bind(sign_in.shared)
            .bind(sign_in.sealed)
            .bind(at)
            .execute(&mut *tx)
            .await?;
            tx.commit().await
        }
        .await)?;
        Ok(())
    }

    /// Takes the sign-in `state_hash` names, once, and only for the session that began it and
    /// within [`SIGN_IN_SECONDS`]; `None` otherwise (and then nothing changes).
    pub async fn take_mcp_sign_in(&self, state_hash: &str, session_hash: &str) -> Result<Option<SignIn>, StoreError> {
        Ok(on!(&self.db, pool => sqlx::query_as(
            "DELETE FROM mcp_oauth_states WHERE state_hash = $1 AND session_hash = $2 AND created_at >= $3
             RETURNING user_id, server, shared, sealed",
        )
        .bind(state_hash)
        .bind(session_hash)
        .bind(now() - SIGN_IN_SECONDS)
        .fetch_optional(pool)
        .await)?)
    }

    /// How many sign-ins are begun and not come back (for tests).
    pub async fn pending_mcp_sign_ins(&self) -> Result<i64, StoreError> {
        Ok(on_read!(&self.db, pool => sqlx::query_scalar("SELECT COUNT(*) FROM mcp_oauth_states")
            .fetch_one(pool)
            .await)?)
    }
}
