//! All SQL of the chat lives here. Every status change is one conditional UPDATE on the status it
//! expects, so concurrent requests and the worker cannot both win.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Row, SqlitePool};

/// One migration set for the chat and the runtime; the runtime crate embeds it.
pub use runtime::MIGRATOR;


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
    pub run_id: Option<String>,
    pub approval_decision: Option<String>,
    pub approval_turn_digest: Option<String>,
    pub pending_input: Option<String>,
    pub approval_deny_reason: Option<String>,
    pub skill: Option<String>,
    pub page_id: Option<i64>,
    pub updated_at: i64,
}

/// The transcript line that carries an answer; taken out again if the answer is handed back.
pub const NOTICE_ANSWER: &str = "input_answer";
/// The transcript line that carries a denial reason's label.
pub const NOTICE_DECISION: &str = "decision";

/// A decision on an approval card, as recorded for the worker.
#[derive(Debug, Clone, Copy)]
pub struct Decision<'a> {
    pub approve: bool,
    pub digest: &'a str,
    /// `variant` or `skip`, only for a card that offers reasons.
    pub reason: Option<&'a str>,
    /// The reader's words for the reason, appended as their message.
    pub label: Option<&'a str>,
}

/// What a run came back with, as the conversation records it.
#[derive(Debug, Clone, Copy)]
pub enum Settle<'a> {
    Answered { answer: &'a str },
    AwaitingInput { question: Option<&'a str> },
    AwaitingApproval,
    Failed { code: &'a str },
}

macro_rules! select_conversations {
    ($tail:literal) => {
        concat!(
            "SELECT id, user_id, title, status, error_code, run_id, approval_decision, approval_turn_digest,
                    pending_input, approval_deny_reason, skill, page_id, updated_at
             FROM conversations ",
            $tail
        )
    };
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MessageRow {
    pub id: i64,
    pub role: String,
    pub content: String,
    pub notice: Option<String>,
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

    pub async fn create_conversation(
        &self,
        id: &str,
        user_id: i64,
        title: &str,
        skill: Option<&str>,
        page_id: Option<i64>,
    ) -> Result<(), StoreError> {
        let at = now();
        sqlx::query(
            "INSERT INTO conversations (id, user_id, title, status, skill, page_id, created_at, updated_at)
             VALUES (?, ?, ?, 'idle', ?, ?, ?, ?)",
        )
        .bind(id)
        .bind(user_id)
        .bind(title)
        .bind(skill)
        .bind(page_id)
        .bind(at)
        .bind(at)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The user's latest conversations, newest first, at most `limit` of them.
    pub async fn conversations_of(&self, user_id: i64, limit: i64) -> Result<Vec<ConversationRow>, StoreError> {
        Ok(sqlx::query_as::<_, ConversationRow>(
            select_conversations!("WHERE user_id = ? ORDER BY updated_at DESC, rowid DESC LIMIT ?"),
        )
        .bind(user_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    /// A conversation only if `user_id` owns it: someone else's id reads as unknown.
    pub async fn conversation_of(&self, user_id: i64, id: &str) -> Result<Option<ConversationRow>, StoreError> {
        Ok(sqlx::query_as::<_, ConversationRow>(
            select_conversations!("WHERE id = ? AND user_id = ?"),
        )
        .bind(id)
        .bind(user_id)
        .fetch_optional(&self.pool)
        .await?)
    }

    pub async fn conversation(&self, id: &str) -> Result<Option<ConversationRow>, StoreError> {
        Ok(sqlx::query_as::<_, ConversationRow>(
            select_conversations!("WHERE id = ?"),
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Counted on the `(conversation_id, id)` index alone: the poll's fast path reads no message.
    pub async fn message_count(&self, conversation_id: &str) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE conversation_id = ?")
            .bind(conversation_id)
            .fetch_one(&self.pool)
            .await?)
    }

    pub async fn messages(&self, conversation_id: &str) -> Result<Vec<MessageRow>, StoreError> {
        Ok(sqlx::query_as::<_, MessageRow>(
            "SELECT id, role, content, notice FROM messages WHERE conversation_id = ? ORDER BY id",
        )
        .bind(conversation_id)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Claims the conversation for a new turn, stores the user's message and queues the job, all
    /// or nothing. `expected` is the status the caller read; if it changed meanwhile nothing happens.
    /// The run the conversation waited on (if any) is left as it is: only its id is forgotten.
    pub async fn start_turn(
        &self,
        user_id: i64,
        conversation_id: &str,
        expected: &str,
        content: &str,
        title_if_untitled: &str,
        untitled: &str,
    ) -> Result<StartTurn, StoreError> {
        let at = now();
        let mut tx = self.pool.begin().await?;
        let claimed = sqlx::query(
            "UPDATE conversations
             SET status = 'processing', error_code = NULL, updated_at = ?, run_id = NULL,
                 approval_decision = NULL, approval_turn_digest = NULL, pending_input = NULL,
                 approval_deny_reason = NULL,
                 title = CASE WHEN title = ? THEN ? ELSE title END
             WHERE id = ? AND user_id = ? AND status = ? AND status != 'processing'",
        )
        .bind(at)
        .bind(untitled)
        .bind(title_if_untitled)
        .bind(conversation_id)
        .bind(user_id)
        .bind(expected)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if claimed != 1 {
            tx.rollback().await?;
            let exists = self.conversation_of(user_id, conversation_id).await?.is_some();
            return Ok(if exists { StartTurn::Busy } else { StartTurn::NotFound });
        }
        insert_message(&mut tx, conversation_id, "user", content, None, at).await?;
        insert_job(&mut tx, conversation_id, at).await?;
        tx.commit().await?;
        Ok(StartTurn::Started)
    }

    /// Claims a waiting conversation without starting anything yet, keeping its run id: a process
    /// run must first be cancelled, and if that fails the claim is given back.
    pub async fn claim_waiting(&self, user_id: i64, conversation_id: &str, expected: &str) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE conversations SET status = 'processing', updated_at = ?
             WHERE id = ? AND user_id = ? AND status = ? AND status IN ('awaiting_approval', 'awaiting_input')",
        )
        .bind(now())
        .bind(conversation_id)
        .bind(user_id)
        .bind(expected)
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1)
    }

    /// Gives a claim back: the row returns to the waiting status it had.
    pub async fn release_claim(&self, conversation_id: &str, back_to: &str) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE conversations SET status = ?, updated_at = ?
             WHERE id = ? AND status = 'processing' AND approval_decision IS NULL",
        )
        .bind(back_to)
        .bind(now())
        .bind(conversation_id)
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1)
    }

    /// Starts a new turn on a conversation this request has claimed (see [`Store::claim_waiting`]).
    pub async fn start_claimed_turn(
        &self,
        conversation_id: &str,
        content: &str,
        title_if_untitled: &str,
        untitled: &str,
    ) -> Result<bool, StoreError> {
        let at = now();
        let mut tx = self.pool.begin().await?;
        let updated = sqlx::query(
            "UPDATE conversations
             SET error_code = NULL, updated_at = ?, run_id = NULL, approval_decision = NULL,
                 approval_turn_digest = NULL, pending_input = NULL, approval_deny_reason = NULL,
                 title = CASE WHEN title = ? THEN ? ELSE title END
             WHERE id = ? AND status = 'processing' AND approval_decision IS NULL",
        )
        .bind(at)
        .bind(untitled)
        .bind(title_if_untitled)
        .bind(conversation_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if updated != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        insert_message(&mut tx, conversation_id, "user", content, None, at).await?;
        insert_job(&mut tx, conversation_id, at).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Records an answer to the question the conversation waits on, appends it to the transcript
    /// and queues the delivery, guarded on the conversation still waiting for input.
    pub async fn record_answer(
        &self,
        user_id: i64,
        conversation_id: &str,
        digest: &str,
        values: &str,
        display: &str,
    ) -> Result<bool, StoreError> {
        let at = now();
        let mut tx = self.pool.begin().await?;
        let claimed = sqlx::query(
            "UPDATE conversations
             SET status = 'processing', approval_decision = 'input', approval_turn_digest = ?,
                 pending_input = ?, approval_deny_reason = NULL, error_code = NULL, updated_at = ?
             WHERE id = ? AND user_id = ? AND status = 'awaiting_input' AND run_id IS NOT NULL",
        )
        .bind(digest)
        .bind(values)
        .bind(at)
        .bind(conversation_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if claimed != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        insert_message(&mut tx, conversation_id, "user", display, Some(NOTICE_ANSWER), at).await?;
        insert_job(&mut tx, conversation_id, at).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Records a decision on the approval card, with the reason's label in the transcript when
    /// there is one, and queues the delivery.
    pub async fn record_decision(
        &self,
        user_id: i64,
        conversation_id: &str,
        decision: Decision<'_>,
    ) -> Result<bool, StoreError> {
        let at = now();
        let mut tx = self.pool.begin().await?;
        let claimed = sqlx::query(
            "UPDATE conversations
             SET status = 'processing', approval_decision = ?, approval_turn_digest = ?,
                 approval_deny_reason = ?, pending_input = NULL, error_code = NULL, updated_at = ?
             WHERE id = ? AND user_id = ? AND status = 'awaiting_approval' AND run_id IS NOT NULL",
        )
        .bind(if decision.approve { "approve" } else { "deny" })
        .bind(decision.digest)
        .bind(decision.reason)
        .bind(at)
        .bind(conversation_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if claimed != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        if let Some(label) = decision.label {
            insert_message(&mut tx, conversation_id, "user", label, Some(NOTICE_DECISION), at).await?;
        }
        insert_job(&mut tx, conversation_id, at).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Retry of a failed turn over the transcript as it is. A conversation with a recorded
    /// decision in flight is `processing`, so it cannot be retried.
    pub async fn claim_retry(&self, user_id: i64, conversation_id: &str) -> Result<bool, StoreError> {
        let at = now();
        let mut tx = self.pool.begin().await?;
        let claimed = sqlx::query(
            "UPDATE conversations
             SET status = 'processing', error_code = NULL, run_id = NULL, updated_at = ?
             WHERE id = ? AND user_id = ? AND status = 'failed'",
        )
        .bind(at)
        .bind(conversation_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if claimed != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        insert_job(&mut tx, conversation_id, at).await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Remembers which run carries the conversation's new turn, before the run executes, so a
    /// restart finds the run again instead of starting a second one.
    pub async fn attach_run(&self, conversation_id: &str, run_id: &str) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE conversations SET run_id = ?, updated_at = ?
             WHERE id = ? AND status = 'processing' AND run_id IS NULL AND approval_decision IS NULL",
        )
        .bind(run_id)
        .bind(now())
        .bind(conversation_id)
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1)
    }

    /// Applies what a run came back with, guarded on the conversation still carrying that run:
    /// a late result of an abandoned run changes nothing.
    pub async fn settle(&self, conversation_id: &str, run_id: &str, settle: Settle<'_>) -> Result<bool, StoreError> {
        let at = now();
        let (status, keep_run, error_code, message) = match settle {
            Settle::Answered { answer } => ("idle", false, None, Some(answer)),
            Settle::AwaitingInput { question } => ("awaiting_input", true, None, question),
            Settle::AwaitingApproval => ("awaiting_approval", true, None, None),
            Settle::Failed { code } => ("failed", false, Some(code), None),
        };
        let mut tx = self.pool.begin().await?;
        let updated = sqlx::query(
            "UPDATE conversations
             SET status = ?, run_id = CASE WHEN ? THEN run_id ELSE NULL END, error_code = ?,
                 approval_decision = NULL, approval_turn_digest = NULL, pending_input = NULL,
                 approval_deny_reason = NULL, updated_at = ?
             WHERE id = ? AND status = 'processing' AND run_id = ?",
        )
        .bind(status)
        .bind(keep_run)
        .bind(error_code)
        .bind(at)
        .bind(conversation_id)
        .bind(run_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if updated != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        if let Some(message) = message.filter(|text| !text.trim().is_empty()) {
            insert_message(&mut tx, conversation_id, "assistant", message, None, at).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Hands a question or card back after the runtime refused the recorded answer or decision:
    /// the waiting status returns, the undelivered line leaves the transcript, and the reason is
    /// stored as a code for the reader's language.
    pub async fn hand_back(&self, conversation_id: &str, back_to: &str, code: Option<&str>) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let updated = sqlx::query(
            "UPDATE conversations
             SET status = ?, error_code = ?, approval_decision = NULL, approval_turn_digest = NULL,
                 pending_input = NULL, approval_deny_reason = NULL, updated_at = ?
             WHERE id = ? AND status = 'processing' AND approval_decision IS NOT NULL",
        )
        .bind(back_to)
        .bind(code)
        .bind(now())
        .bind(conversation_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if updated != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query(
            "DELETE FROM messages WHERE id = (
                 SELECT id FROM messages WHERE conversation_id = ? ORDER BY id DESC LIMIT 1
             ) AND notice IN ('input_answer', 'decision')",
        )
        .bind(conversation_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// The recorded answer or decision has reached the run (an earlier attempt delivered it): it
    /// is no longer in flight, and the conversation follows the run from here.
    pub async fn mark_delivered(&self, conversation_id: &str) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE conversations
             SET approval_decision = NULL, approval_turn_digest = NULL, pending_input = NULL,
                 approval_deny_reason = NULL, updated_at = ?
             WHERE id = ? AND status = 'processing' AND approval_decision IS NOT NULL",
        )
        .bind(now())
        .bind(conversation_id)
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1)
    }

    /// Fails a turn that cannot go on (a refusal that is not a hand-back, an unexpected error).
    pub async fn fail_conversation(&self, conversation_id: &str, code: &str) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "UPDATE conversations
             SET status = 'failed', error_code = ?, run_id = NULL, approval_decision = NULL,
                 approval_turn_digest = NULL, pending_input = NULL, approval_deny_reason = NULL, updated_at = ?
             WHERE id = ? AND status = 'processing'",
        )
        .bind(code)
        .bind(now())
        .bind(conversation_id)
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1)
    }

    pub async fn rename_conversation(&self, user_id: i64, id: &str, title: &str) -> Result<bool, StoreError> {
        Ok(sqlx::query("UPDATE conversations SET title = ? WHERE id = ? AND user_id = ?")
            .bind(title)
            .bind(id)
            .bind(user_id)
            .execute(&self.pool)
            .await?
            .rows_affected()
            == 1)
    }

    /// Deletes a conversation that nothing is working on; its messages and jobs go with it.
    pub async fn delete_conversation(&self, user_id: i64, id: &str) -> Result<bool, StoreError> {
        Ok(sqlx::query("DELETE FROM conversations WHERE id = ? AND user_id = ? AND status != 'processing'")
            .bind(id)
            .bind(user_id)
            .execute(&self.pool)
            .await?
            .rows_affected()
            == 1)
    }

    pub async fn conversation_of_run(&self, run_id: &str) -> Result<Option<ConversationRow>, StoreError> {
        Ok(sqlx::query_as::<_, ConversationRow>(select_conversations!("WHERE run_id = ?"))
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await?)
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

    pub async fn delete_job(&self, job_id: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM jobs WHERE id = ?").bind(job_id).execute(&self.pool).await?;
        Ok(())
    }

    pub async fn has_job(&self, conversation_id: &str) -> Result<bool, StoreError> {
        let count: i64 = sqlx::query("SELECT COUNT(*) FROM jobs WHERE conversation_id = ?")
            .bind(conversation_id)
            .fetch_one(&self.pool)
            .await?
            .get(0);
        Ok(count > 0)
    }

    /// Queues a job for the conversation unless one is already waiting or running.
    pub async fn ensure_job(&self, conversation_id: &str) -> Result<bool, StoreError> {
        Ok(sqlx::query(
            "INSERT INTO jobs (conversation_id, kind, created_at)
             SELECT ?, 'turn', ? WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE conversation_id = ?)",
        )
        .bind(conversation_id)
        .bind(now())
        .bind(conversation_id)
        .execute(&self.pool)
        .await?
        .rows_affected()
            == 1)
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

async fn insert_message(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    conversation_id: &str,
    role: &str,
    content: &str,
    notice: Option<&str>,
    at: i64,
) -> Result<(), StoreError> {
    sqlx::query("INSERT INTO messages (conversation_id, role, content, notice, created_at) VALUES (?, ?, ?, ?, ?)")
        .bind(conversation_id)
        .bind(role)
        .bind(content)
        .bind(notice)
        .bind(at)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

async fn insert_job(tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, conversation_id: &str, at: i64) -> Result<(), StoreError> {
    sqlx::query("INSERT INTO jobs (conversation_id, kind, created_at) VALUES (?, 'turn', ?)")
        .bind(conversation_id)
        .bind(at)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
