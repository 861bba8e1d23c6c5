//! A conversation's files: stored pending with their extracted text, attached to the next message
//! by its guarded write (`Then::AttachPending`), listed without their bytes, and downloaded by
//! their owner.

use db::{now, on, on_read};

use super::{Store, StoreError};

/// An attachment as the reader uploaded it, with the text extracted for the model.
pub struct NewAttachment<'a> {
    pub file_name: &'a str,
    pub kind: &'a str,
    pub content: &'a [u8],
    pub text: &'a str,
    pub truncated: bool,
}

/// A stored attachment, without its bytes. `message_id` is `None` while it waits for the next
/// message.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, serde::Serialize, serde::Deserialize)]
pub struct Attachment {
    pub id: i64,
    pub message_id: Option<i64>,
    pub file_name: String,
    pub kind: String,
    pub size: i64,
    pub truncated: bool,
}

/// The columns an [`Attachment`] is read from.
macro_rules! attachment_columns {
    () => {
        "id, message_id, file_name, kind, size, truncated"
    };
}

/// A conversation's attachments as [`Attachment`]s, in the order they came.
const SELECT_ATTACHMENTS: &str =
    concat!("SELECT ", attachment_columns!(), " FROM attachments WHERE conversation_id = $1 ORDER BY id");

/// A stored attachment with the text the model is given; only a turn's request needs it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AttachmentText {
    #[sqlx(flatten)]
    pub file: Attachment,
    pub text: String,
}

impl Store {
    /// Stores an attachment of the owner's conversation as pending (it goes with the next message).
    /// `None` when the conversation is not the user's.
    pub async fn add_attachment(
        &self,
        user_id: i64,
        conversation_id: &str,
        file: &NewAttachment<'_>,
    ) -> Result<Option<i64>, StoreError> {
        let id: Option<i64> = on!(&self.db, pool => sqlx::query_scalar(
            "INSERT INTO attachments (conversation_id, file_name, kind, size, content, text, truncated, created_at)
             SELECT $1, $2, $3, $4, $5, $6, $7, $8
             WHERE EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND user_id = $9)
             RETURNING id",
        )
        .bind(conversation_id)
        .bind(file.file_name)
        .bind(file.kind)
        .bind(i64::try_from(file.content.len()).unwrap_or(i64::MAX))
        .bind(file.content)
        .bind(file.text)
        .bind(file.truncated)
        .bind(now())
        .bind(user_id)
        .fetch_optional(pool)
        .await)?;
        Ok(id)
    }

    /// The conversation's attachments, without their bytes or text (a page load lists them).
    pub async fn attachments(&self, conversation_id: &str) -> Result<Vec<Attachment>, StoreError> {
        let rows: Vec<Attachment> =
            on_read!(&self.db, pool => sqlx::query_as(SELECT_ATTACHMENTS).bind(conversation_id).fetch_all(pool).await)?;
        Ok(rows)
    }

    /// The conversation's attachments with their text, for the model.
    pub async fn attachment_texts(&self, conversation_id: &str) -> Result<Vec<AttachmentText>, StoreError> {
        let rows: Vec<AttachmentText> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT id, message_id, file_name, kind, size, truncated, text FROM attachments
             WHERE conversation_id = $1 ORDER BY id",
        )
        .bind(conversation_id)
        .fetch_all(pool)
        .await)?;
        Ok(rows)
    }

    /// Takes back an attachment not sent yet.
    pub async fn remove_pending_attachment(
        &self,
        user_id: i64,
        conversation_id: &str,
        id: i64,
    ) -> Result<bool, StoreError> {
        let removed = on!(&self.db, pool => sqlx::query(
            "DELETE FROM attachments WHERE id = $1 AND conversation_id = $2 AND message_id IS NULL
               AND EXISTS (SELECT 1 FROM conversations WHERE id = $2 AND user_id = $3)",
        )
        .bind(id)
        .bind(conversation_id)
        .bind(user_id)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))?;
        Ok(removed == 1)
    }

    /// The file as uploaded (name, kind, bytes), for its owner only.
    pub async fn attachment_file(
        &self,
        user_id: i64,
        id: i64,
    ) -> Result<Option<(String, String, Vec<u8>)>, StoreError> {
        let row: Option<(String, String, Vec<u8>)> = on_read!(&self.db, pool => sqlx::query_as(
            "SELECT a.file_name, a.kind, a.content FROM attachments a JOIN conversations c ON c.id = a.conversation_id
             WHERE a.id = $1 AND c.user_id = $2",
        )
        .bind(id)
        .bind(user_id)
        .fetch_optional(pool)
        .await)?;
        Ok(row)
    }
}
pub(super) use attachment_columns;
