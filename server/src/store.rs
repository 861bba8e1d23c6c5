//! All SQL of the chat lives here. Every status change is one conditional UPDATE on the status it
//! expects, so concurrent requests and the worker cannot both win.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Row, SqlitePool};

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    #[error("cannot create the database folder {path}: {source}")]
    Folder { path: String, source: std::io::Error },
}

#[derive(Clone, Debug)]
pub struct Store {
    pool: SqlitePool,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRow {
    pub id: i64,
    pub username: String,
    pub password_hash: String,
    pub language: Option<String>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ConversationRow {
    pub id: String,
    pub user_id: i64,
    pub title: String,
    pub status: String,
    pub error_code: Option<String>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MessageRow {
    pub id: i64,
    pub role: String,
    pub content: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub id: i64,
    pub conversation_id: String,
    pub kind: String,
}

/// What happened when a message tried to start a turn.
#[derive(Debug, PartialEq, Eq)]
pub enum StartTurn {
    Started,
    NotFound,
    Busy,
}

pub fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

impl Store {
    /// Opens (creating if needed) the SQLite file in WAL mode and applies the migrations.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(folder) = path.parent().filter(|folder| !folder.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder)
                .map_err(|source| StoreError::Folder { path: folder.display().to_string(), source })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new().max_connections(8).connect_with(options).await?;
        MIGRATOR.run(&pool).await?;
        Ok(Store { pool })
    }

    /// An in-memory database for tests: one connection, since each one would be its own database.
    pub async fn in_memory() -> Result<Self, StoreError> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
        let pool = SqlitePoolOptions::new().max_connections(1).connect_with(options).await?;
        MIGRATOR.run(&pool).await?;
        Ok(Store { pool })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    // --- users and sessions -------------------------------------------------------------------

    pub async fn count_users(&self) -> Result<i64, StoreError> {
        Ok(sqlx::query("SELECT COUNT(*) FROM users").fetch_one(&self.pool).await?.get(0))
    }

    pub async fn create_user(&self, username: &str, password_hash: &str) -> Result<i64, StoreError> {
        let row = sqlx::query("INSERT INTO users (username, password_hash, created_at) VALUES (?, ?, ?) RETURNING id")
            .bind(username)
            .bind(password_hash)
            .bind(now())
            .fetch_one(&self.pool)
            .await?;
        Ok(row.get(0))
    }

    pub async fn user_by_name(&self, username: &str) -> Result<Option<UserRow>, StoreError> {
        Ok(sqlx::query_as::<_, UserRow>("SELECT id, username, password_hash, language FROM users WHERE username = ?")
            .bind(username)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub async fn create_session(&self, token_hash: &str, user_id: i64, expires_at: i64) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO sessions (token_hash, user_id, expires_at) VALUES (?, ?, ?)")
            .bind(token_hash)
            .bind(user_id)
            .bind(expires_at)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn user_for_session(&self, token_hash: &str) -> Result<Option<UserRow>, StoreError> {
        Ok(sqlx::query_as::<_, UserRow>(
            "SELECT u.id, u.username, u.password_hash, u.language FROM sessions s JOIN users u ON u.id = s.user_id
             WHERE s.token_hash = ? AND s.expires_at > ?",
        )
        .bind(token_hash)
        .bind(now())
        .fetch_optional(&self.pool)
        .await?)
    }

    pub async fn set_language(&self, user_id: i64, language: Option<&str>) -> Result<(), StoreError> {
        sqlx::query("UPDATE users SET language = ? WHERE id = ?").bind(language).bind(user_id).execute(&self.pool).await?;
        Ok(())
    }

    pub async fn delete_session(&self, token_hash: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE token_hash = ?").bind(token_hash).execute(&self.pool).await?;
        Ok(())
    }

    // --- conversations and messages -----------------------------------------------------------

    pub async fn create_conversation(&self, id: &str, user_id: i64, title: &str) -> Result<(), StoreError> {
        let at = now();
        sqlx::query("INSERT INTO conversations (id, user_id, title, status, created_at, updated_at) VALUES (?, ?, ?, 'idle', ?, ?)")
            .bind(id)
            .bind(user_id)
            .bind(title)
            .bind(at)
            .bind(at)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn conversations_of(&self, user_id: i64) -> Result<Vec<ConversationRow>, StoreError> {
        Ok(sqlx::query_as::<_, ConversationRow>(
            "SELECT id, user_id, title, status, error_code FROM conversations
             WHERE user_id = ? ORDER BY updated_at DESC, rowid DESC",
        )
        .bind(user_id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// A conversation only if `user_id` owns it: someone else's id reads as unknown.
    pub async fn conversation_of(&self, user_id: i64, id: &str) -> Result<Option<ConversationRow>, StoreError> {
        Ok(sqlx::query_as::<_, ConversationRow>(
            "SELECT id, user_id, title, status, error_code FROM conversations WHERE id = ? AND user_id = ?",
        )
        .bind(id)
        .bind(user_id)
        .fetch_optional(&self.pool)
        .await?)
    }

    pub async fn conversation(&self, id: &str) -> Result<Option<ConversationRow>, StoreError> {
        Ok(sqlx::query_as::<_, ConversationRow>(
            "SELECT id, user_id, title, status, error_code FROM conversations WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    pub async fn messages(&self, conversation_id: &str) -> Result<Vec<MessageRow>, StoreError> {
        Ok(sqlx::query_as::<_, MessageRow>(
            "SELECT id, role, content FROM messages WHERE conversation_id = ? ORDER BY id",
        )
        .bind(conversation_id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Claims the conversation for a new turn, stores the user's message and queues the job, all
    /// or nothing. Only an idle or failed conversation can start a turn.
    pub async fn start_turn(
        &self,
        user_id: i64,
        conversation_id: &str,
        content: &str,
        title_if_untitled: &str,
        untitled: &str,
    ) -> Result<StartTurn, StoreError> {
        let at = now();
        let mut tx = self.pool.begin().await?;
        let claimed = sqlx::query(
            "UPDATE conversations
             SET status = 'processing', error_code = NULL, updated_at = ?,
                 title = CASE WHEN title = ? THEN ? ELSE title END
             WHERE id = ? AND user_id = ? AND status IN ('idle', 'failed')",
        )
        .bind(at)
        .bind(untitled)
        .bind(title_if_untitled)
        .bind(conversation_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if claimed != 1 {
            tx.rollback().await?;
            let exists = self.conversation_of(user_id, conversation_id).await?.is_some();
            return Ok(if exists { StartTurn::Busy } else { StartTurn::NotFound });
        }
        sqlx::query("INSERT INTO messages (conversation_id, role, content, created_at) VALUES (?, 'user', ?, ?)")
            .bind(conversation_id)
            .bind(content)
            .bind(at)
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO jobs (conversation_id, kind, created_at) VALUES (?, 'turn', ?)")
            .bind(conversation_id)
            .bind(at)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(StartTurn::Started)
    }

    /// Ends a turn with the assistant's reply: appends it, sets the conversation idle and removes
    /// the job, guarded on the conversation still processing.
    pub async fn finish_turn(&self, job_id: i64, conversation_id: &str, reply: &str) -> Result<bool, StoreError> {
        let at = now();
        let mut tx = self.pool.begin().await?;
        let released = sqlx::query(
            "UPDATE conversations SET status = 'idle', updated_at = ? WHERE id = ? AND status = 'processing'",
        )
        .bind(at)
        .bind(conversation_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if released == 1 {
            sqlx::query("INSERT INTO messages (conversation_id, role, content, created_at) VALUES (?, 'assistant', ?, ?)")
                .bind(conversation_id)
                .bind(reply)
                .bind(at)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query("DELETE FROM jobs WHERE id = ?").bind(job_id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(released == 1)
    }

    /// Ends a turn that could not be completed, with an error code the UI translates.
    pub async fn fail_turn(&self, job_id: i64, conversation_id: &str, error_code: &str) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "UPDATE conversations SET status = 'failed', error_code = ?, updated_at = ? WHERE id = ? AND status = 'processing'",
        )
        .bind(error_code)
        .bind(now())
        .bind(conversation_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM jobs WHERE id = ?").bind(job_id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    // --- jobs ---------------------------------------------------------------------------------

    /// Takes the oldest queued job and leases it; `None` when there is nothing to do.
    pub async fn claim_job(&self, lease: Duration) -> Result<Option<JobRow>, StoreError> {
        Ok(sqlx::query_as::<_, JobRow>(
            "UPDATE jobs SET state = 'running', lease_until = ?
             WHERE id = (SELECT id FROM jobs WHERE state = 'queued' ORDER BY id LIMIT 1) AND state = 'queued'
             RETURNING id, conversation_id, kind",
        )
        .bind(now() + lease.as_secs() as i64)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Queues again every job whose lease ran out: its worker died (a crash or a kill -9).
    pub async fn requeue_stale_jobs(&self) -> Result<u64, StoreError> {
        Ok(sqlx::query("UPDATE jobs SET state = 'queued', lease_until = 0 WHERE state = 'running' AND lease_until < ?")
            .bind(now())
            .execute(&self.pool)
            .await?
            .rows_affected())
    }

    /// Jobs of a server that stopped are not running any more, whatever their lease says.
    pub async fn requeue_all_running_jobs(&self) -> Result<u64, StoreError> {
        Ok(sqlx::query("UPDATE jobs SET state = 'queued', lease_until = 0 WHERE state = 'running'")
            .execute(&self.pool)
            .await?
            .rows_affected())
    }
}
