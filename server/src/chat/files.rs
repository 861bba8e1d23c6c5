//! Files attached to a message: taken, checked and extracted before anything is stored, given
//! back to their owner, and taken off a message before it is sent.

use app::backend::CurrentUser;
use app::error::AppError;
use app::i18n::Text;

use super::ChatService;
use crate::failures::internal;
use crate::store::NewAttachment;

/// Files that may wait for one message.
pub const MAX_PENDING_ATTACHMENTS: usize = 5;

/// Why an attachment was refused, as the sentence the reader gets.
fn attachment_refusal(error: &attachments::AttachmentError) -> AppError {
    use attachments::AttachmentError as E;
    AppError::Invalid(match error {
        E::TooLarge { .. } => Text::ErrorAttachmentTooLarge,
        E::Empty => Text::ErrorAttachmentEmpty,
        E::UnsupportedType { .. } => Text::ErrorAttachmentType,
        E::WrongContent { .. } => Text::ErrorAttachmentWrongContent,
        E::EncryptedPdf => Text::ErrorAttachmentEncrypted,
        E::Damaged { .. } => Text::ErrorAttachmentDamaged,
        E::ZipBomb { .. } => Text::ErrorAttachmentBomb,
        E::NoText { .. } => Text::ErrorAttachmentNoText,
    })
}

impl ChatService {
    /// Takes a file for the reader's next message: its kind checked against its content and its
    /// text extracted (off the async threads: a big PDF takes a while), then stored as pending.
    /// A refused file changes nothing.
    pub async fn attach(&self, user: &CurrentUser, id: &str, file_name: &str, bytes: Vec<u8>) -> Result<i64, AppError> {
        let row = self.owned(user, id).await?;
        let pending = self.store.attachments(&row.id).await.map_err(internal)?;
        if pending.iter().filter(|attachment| attachment.message_id.is_none()).count() >= MAX_PENDING_ATTACHMENTS {
            return Err(AppError::Invalid(Text::ErrorTooManyAttachments));
        }
        let limits = attachments::Limits { max_bytes: self.attachment_limit, ..attachments::Limits::default() };
        let name = file_name.to_string();
        let (bytes, extracted) = tokio::task::spawn_blocking(move || {
            let extracted = attachments::extract(&name, &bytes, &limits);
            (bytes, extracted)
        })
        .await
        .map_err(|error| {
            tracing::error!(%error, "text extraction did not finish");
            AppError::Internal
        })?;
        let extracted = extracted.map_err(|error| {
            tracing::info!(%error, conversation = %id, "attachment refused");
            attachment_refusal(&error)
        })?;
        let file = NewAttachment {
            file_name,
            kind: extracted.kind.as_str(),
            content: &bytes,
            text: &extracted.text,
            truncated: extracted.truncated,
        };
        let stored = self.store.add_attachment(user.id, id, &file).await.map_err(internal)?;
        let attachment_id = stored.ok_or(AppError::NotFound)?;
        self.events.changed(id);
        Ok(attachment_id)
    }

    /// The file as uploaded, for its owner.
    pub async fn attachment_file(
        &self,
        user: &CurrentUser,
        attachment_id: i64,
    ) -> Result<(String, String, Vec<u8>), AppError> {
        self.store.attachment_file(user.id, attachment_id).await.map_err(internal)?.ok_or(AppError::NotFound)
    }

    pub(super) async fn remove_attachment(
        &self,
        user: &CurrentUser,
        id: &str,
        attachment_id: i64,
    ) -> Result<(), AppError> {
        if !self.store.remove_pending_attachment(user.id, id, attachment_id).await.map_err(internal)? {
            return Err(AppError::NotFound);
        }
        self.events.changed(id);
        Ok(())
    }
}
