//! The reply being written: its text so far, saved a few times a second while the conversation
//! works on it, and read by an event stream that joins mid-way. A settle or a stop drops it in
//! its own write (`Then::DropDraft`).

use db::{now, on, on_read};

use super::{Store, StoreError};

/// A reply's draft: its key and its text so far.
macro_rules! draft_columns {
    () => {
        "draft_key, content"
    };
}

const SELECT_DRAFT: &str = concat!("SELECT ", draft_columns!(), " FROM drafts WHERE conversation_id = $1");

impl Store {
    /// The reply's draft as last saved (key and text so far): what an event stream that joined a
    /// reply mid-way renders from (`events`). The stream's owner was checked when it opened.
    pub async fn draft(&self, conversation_id: &str) -> Result<Option<(String, String)>, StoreError> {
        let draft =
            on_read!(&self.db, pool => sqlx::query_as(SELECT_DRAFT).bind(conversation_id).fetch_optional(pool).await)?;
        Ok(draft)
    }

    /// Writes the reply's text so far, only while the conversation is working on it (a late
    /// write after a stop or a settle must not bring a draft back).
    pub async fn save_draft(&self, conversation_id: &str, draft_key: &str, content: &str) -> Result<(), StoreError> {
        on!(&self.db, pool => sqlx::query(
            "INSERT INTO drafts (conversation_id, draft_key, content, updated_at)
             SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM conversations WHERE id = $1 AND status = 'processing')
             ON CONFLICT (conversation_id) DO UPDATE
             SET draft_key = excluded.draft_key, content = excluded.content, updated_at = excluded.updated_at",
        )
        .bind(conversation_id)
        .bind(draft_key)
        .bind(content)
        .bind(now())
        .execute(pool)
        .await
        .map(|_| ()))?;
        Ok(())
    }
}
pub(super) use draft_columns;
