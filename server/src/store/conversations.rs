//! Conversations as rows: made, listed, read (only by their owner, unless the worker asks), renamed
//! and deleted, with their transcript as stored.

use db::{now, on, on_read, Backend, Db};
use sqlx::{FromRow, Row};
use uuid::Uuid;

use super::args::Arg;
use super::audit;
use super::rows::{conversation_columns, select_conversations, status_of, ConversationRow, MessageRow};
use super::snapshot::owned_through_session;
use super::users::{session_user_columns, SessionUser};
use super::{Store, StoreError};
use crate::audit::Entry;
use crate::conversation::{Conversation, ListedConversation, Message};

/// The list holds this many of the latest conversations; an older one stays reachable by its
/// address. Without a bound the list (and every page that shows it) grows with the account.
pub const LIST_LIMIT: i64 = 100;

const SELECT_MESSAGES: &str =
    "SELECT id, role, content, notice, html, html_version FROM messages WHERE conversation_id = $1 ORDER BY id";

/// The list's statement (`$1` the user, `$2` the limit). Ties in the update time go to the
/// conversation created later (SQLite's rowid, the `seq` identity on PostgreSQL); the index
/// `conversations_user` is in this order, so no tie is sorted (see its migration).
pub fn conversation_list_sql(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => {
            "SELECT id, title, status FROM conversations WHERE user_id = $1
             ORDER BY updated_at DESC, rowid DESC LIMIT $2"
        }
        Backend::Postgres => {
            "SELECT id, title, status FROM conversations WHERE user_id = $1
             ORDER BY updated_at DESC, seq DESC LIMIT $2"
        }
    }
}

impl Store {
    pub async fn create_conversation(
        &self,
        id: &str,
        user_id: i64,
        title: &str,
        skill: Option<&str>,
        page_id: Option<i64>,
    ) -> Result<(), StoreError> {
        let at = now();
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO conversations (id, user_id, title, status, skill, page_id, created_at, updated_at)
             VALUES ($1, $2, $3, 'idle', $4, $5, $6, $7)",
        )
        .bind(id)
        .bind(user_id)
        .bind(title)
        .bind(skill)
        .bind(page_id)
        .bind(at)
        .bind(at)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(())
    }

    /// The user's latest conversations, newest first, at most `limit` of them: what a list shows of
    /// each (every page carries the list, so it reads three columns, not the whole row).
    pub async fn conversations_of(&self, user_id: i64, limit: i64) -> Result<Vec<ListedConversation>, StoreError> {
        let sql = conversation_list_sql(self.db.backend());
        let rows: Vec<(String, String, String)> =
            on_read!(&self.db, pool => sqlx::query_as(sql).bind(user_id).bind(limit).fetch_all(pool).await)?;
        rows.into_iter()
            .map(|(id, title, status)| {
                let status = status_of(&id, &status)?;
                Ok(ListedConversation { id, title, status })
            })
            .collect()
    }

    /// A conversation only if `user_id` owns it: someone else's id reads as unknown.
    pub async fn conversation_of(&self, user_id: i64, id: &str) -> Result<Option<Conversation>, StoreError> {
        let row: Option<ConversationRow> = on_read!(&self.db, pool => sqlx::query_as(select_conversations!("WHERE id = $1 AND user_id = $2"))
            .bind(id)
            .bind(user_id)
            .fetch_optional(pool)
            .await)?;
        row.map(Conversation::try_from).transpose()
    }

    /// [`Store::conversation_of`] with, on PostgreSQL, the run it waits on as the runtime reads it
    /// ([`runtime::pg_run_json`], for [`runtime::Runtime::status_from_json`]), in one statement
    /// and so one moment: an answer's reads in one round trip. On SQLite, and when the run is not
    /// there, no run: the caller reads it from the runtime.
    pub async fn conversation_with_run_of(
        &self,
        user_id: i64,
        id: &str,
    ) -> Result<Option<(Conversation, Option<String>)>, StoreError> {
        const SQL: &str = concat!(
            "SELECT ",
            conversation_columns!(),
            ", ",
            runtime::pg_run_json!("c.run_id"),
            "::text AS run FROM conversations c WHERE c.id = $1 AND c.user_id = $2"
        );
        let Db::Postgres(pool) = &self.db else {
            return Ok(self.conversation_of(user_id, id).await?.map(|row| (row, None)));
        };
        let row = sqlx::query(SQL).bind(id).bind(user_id).fetch_optional(pool).await?;
        let Some(row) = row else { return Ok(None) };
        let run: Option<String> = row.try_get("run")?;
        Ok(Some((Conversation::try_from(ConversationRow::from_row(&row)?)?, run)))
    }

    /// [`Store::conversation_with_run_of`] through a session: the session `token_hash`'s user,
    /// if the session is live, with the conversation `id` if that user owns it, and on
    /// PostgreSQL its run, in one statement (the chat's answer: its read in one round trip). None
    /// when the session ended or the conversation is not the user's.
    pub async fn answer_head(
        &self,
        token_hash: &str,
        id: &str,
    ) -> Result<Option<(SessionUser, Conversation, Option<String>)>, StoreError> {
        const SQL: &str = concat!(
            "SELECT ",
            session_user_columns!(),
            ", ",
            conversation_columns!(),
            ", ",
            runtime::pg_run_json!("c.run_id"),
            "::text AS run",
            owned_through_session!()
        );
        let Db::Postgres(pool) = &self.db else {
            let Some(user) = self.user_for_session(token_hash).await? else { return Ok(None) };
            let conversation = self.conversation_of(user.id, id).await?;
            return Ok(conversation.map(|conversation| (user, conversation, None)));
        };
        let row = sqlx::query(SQL).bind(token_hash).bind(now()).bind(id).fetch_optional(pool).await?;
        let Some(row) = row else { return Ok(None) };
        let run: Option<String> = row.try_get("run")?;
        let user = SessionUser::from_row(&row)?;
        Ok(Some((user, Conversation::try_from(ConversationRow::from_row(&row)?)?, run)))
    }

    pub async fn conversation(&self, id: &str) -> Result<Option<Conversation>, StoreError> {
        let row: Option<ConversationRow> = on_read!(&self.db, pool => sqlx::query_as(select_conversations!("WHERE id = $1"))
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        row.map(Conversation::try_from).transpose()
    }

    pub async fn conversation_of_run(&self, run_id: Uuid) -> Result<Option<Conversation>, StoreError> {
        let row: Option<ConversationRow> = on_read!(&self.db, pool => sqlx::query_as(select_conversations!("WHERE run_id = $1"))
            .bind(run_id.to_string())
            .fetch_optional(pool)
            .await)?;
        row.map(Conversation::try_from).transpose()
    }

    pub async fn messages(&self, conversation_id: &str) -> Result<Vec<Message>, StoreError> {
        let rows: Vec<MessageRow> = on_read!(&self.db, pool => sqlx::query_as(SELECT_MESSAGES)
        .bind(conversation_id)
        .fetch_all(pool)
        .await)?;
        rows.into_iter().map(Message::try_from).collect()
    }

    pub async fn rename_conversation(&self, user_id: i64, id: &str, title: &str) -> Result<bool, StoreError> {
        self.update_one(
            "UPDATE conversations SET title = $1 WHERE id = $2 AND user_id = $3",
            &[Arg::Text(title), Arg::Text(id), Arg::Int(user_id)],
        )
        .await
    }

    /// Deletes a conversation that nothing is working on; its messages and jobs go with it. Its
    /// audit rows stay, and `cancelled` (its waiting runs, ended first) join them in the same
    /// transaction, with the title as it was.
    pub async fn delete_conversation(&self, user_id: i64, id: &str, cancelled: &[Entry]) -> Result<bool, StoreError> {
        on!(&self.db, pool => async {
            let mut tx = pool.begin().await?;
            for entry in cancelled {
                audit::write_entry!(tx, id, entry);
            }
            let delete = "DELETE FROM conversations WHERE id = $1 AND user_id = $2 AND status != 'processing'";
            let deleted = sqlx::query(delete)
                .bind(id)
                .bind(user_id)
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            if deleted {
                tx.commit().await?;
            } else {
                tx.rollback().await?;
            }
            Ok::<bool, sqlx::Error>(deleted)
        }
        .await)
        .map_err(StoreError::from)
    }
}
