//! A conversation as the page shows it: its transcript, files, and the question or card it waits
//! on, read in one snapshot; and the poll, which answers with the status and count alone while
//! the assistant works.

use app::backend::CurrentUser;
use app::error::AppError;
use app::i18n::{Lang, Text};
use app::model::{AttachmentView, ConversationView, DraftView, MessageView, PollView};
use runtime::PauseView;

use super::questions::question_view;
use super::titles::shown_title;
use super::ChatService;
use crate::conversation::{ConversationStatus, MessageRole, Notice};
use crate::failures::internal;
use crate::handback;
use crate::skills::ProcessRunDetector;
use crate::store::{Attachment, ConversationSnapshot};

fn attachment_view(file: &Attachment) -> AttachmentView {
    AttachmentView {
        id: file.id,
        file_name: file.file_name.clone(),
        kind: file.kind.clone(),
        size: u64::try_from(file.size).unwrap_or_default(),
        truncated: file.truncated,
    }
}

/// A poll's answer that carries the whole conversation.
fn whole_poll(view: ConversationView) -> PollView {
    PollView { status: view.status, total: view.messages.len(), conversation: Some(view) }
}

/// The status as the page shows it.
pub(super) fn status_view(status: ConversationStatus) -> app::model::ConversationStatus {
    match status {
        ConversationStatus::Idle => app::model::ConversationStatus::Idle,
        ConversationStatus::Processing => app::model::ConversationStatus::Processing,
        ConversationStatus::AwaitingApproval => app::model::ConversationStatus::AwaitingApproval,
        ConversationStatus::AwaitingInput => app::model::ConversationStatus::AwaitingInput,
        ConversationStatus::Failed => app::model::ConversationStatus::Failed,
    }
}

impl ChatService {
    /// Why a read through a session found nothing, the rare path of the poll and the answer: an
    /// ended session (401) or a conversation that is not the user's (404).
    pub(super) async fn refusal_of(&self, token_hash: &str) -> AppError {
        match self.store.user_for_session(token_hash).await {
            Ok(Some(_)) => AppError::NotFound,
            Ok(None) => AppError::Unauthenticated,
            Err(error) => internal(error),
        }
    }

    /// The user's conversation as the page shows it: the row, its transcript and its files read
    /// in one snapshot, and again after a reconcile that changed the row.
    pub(super) async fn view_of(&self, user: &CurrentUser, id: &str, lang: Lang) -> Result<ConversationView, AppError> {
        // The chat page's conversation came with its session (`auth::take_page_snapshot`).
        let read = match crate::auth::take_page_snapshot(user, id) {
            Some(read) => read,
            None => self.snapshot(user, id).await?,
        };
        self.view_from(user, read, lang).await
    }

    async fn snapshot(&self, user: &CurrentUser, id: &str) -> Result<ConversationSnapshot, AppError> {
        self.store.conversation_snapshot(user.id, id).await.map_err(internal)?.ok_or(AppError::NotFound)
    }

    /// The view of a conversation from a snapshot of it already read.
    async fn view_from(
        &self,
        user: &CurrentUser,
        mut read: ConversationSnapshot,
        lang: Lang,
    ) -> Result<ConversationView, AppError> {
        if self.reconcile(&read.conversation).await? {
            read = self.snapshot(user, &read.conversation.id).await?;
        }
        let ConversationSnapshot { conversation: row, messages, attachments: files, draft } = read;
        let status = row.status;
        let pause = if status.is_waiting() { self.pause_of(&row).await? } else { None };
        let (question, card) = match pause {
            Some(PauseView::Input(pause)) if status == ConversationStatus::AwaitingInput => {
                (Some(question_view(pause, lang)), None)
            }
            Some(PauseView::Approval(pause)) if status == ConversationStatus::AwaitingApproval => {
                let answers = self.card_answers(&row, &pause);
                (None, Some(self.owner_card(user, pause, answers, lang).await?))
            }
            _ => (None, None),
        };
        let files_of = |message_id: Option<i64>| -> Vec<AttachmentView> {
            files.iter().filter(|file| file.message_id == message_id).map(attachment_view).collect()
        };
        let pending = files_of(None);
        let draft = draft.filter(|_| status == ConversationStatus::Processing).map(|(key, text)| DraftView {
            html: Some(crate::markdown::to_safe_html(&text)),
            key,
            text,
        });
        Ok(ConversationView {
            draft,
            pending_attachments: pending,
            attachment_limit_mib: u32::try_from(self.attachment_limit / (1024 * 1024)).unwrap_or(u32::MAX),
            status: status_view(status),
            error: row.error.map(|code| handback::sentence(code, lang).to_string()),
            question,
            card,
            process_run: self.skills.is_process_run(&row),
            messages: messages
                .into_iter()
                .map(|mut message| {
                    // A dismissal's line holds only who dismissed it; the page says the rest.
                    let dismissed_by = if message.notice == Some(Notice::Dismissed) {
                        message.html = Some(String::new());
                        std::mem::take(&mut message.content)
                    } else {
                        String::new()
                    };
                    // The reader's own messages are never interpreted. An assistant's line goes
                    // as HTML alone: stored when the line was written, made here only for a line
                    // written before that or by another renderer version.
                    let html = (message.role == MessageRole::Assistant).then(|| {
                        message.html.take().unwrap_or_else(|| crate::markdown::to_safe_html(&message.content))
                    });
                    // Not tied to the status: a line that changed with every turn's start and
                    // end would make each load after it fetch the whole transcript again (its
                    // digest no longer matching). The page leaves "Edit" out while the assistant
                    // works; `edit_message` refuses it then.
                    let editable = message.is_editable();
                    let content = if html.is_some() { String::new() } else { message.content };
                    MessageView {
                        editable,
                        // A card was approved after this line: an edit here does not undo what it applied.
                        decided_after: row.approved_through.is_some_and(|through| message.id <= through),
                        attachments: files_of(Some(message.id)),
                        id: message.id,
                        role: match message.role {
                            MessageRole::User => app::model::MessageRole::User,
                            MessageRole::Assistant => app::model::MessageRole::Assistant,
                        },
                        html,
                        stopped: message.notice == Some(Notice::Stopped),
                        note: match message.notice {
                            Some(Notice::DecidedElsewhere) => Some(lang.t(Text::NoteDecidedElsewhere).to_string()),
                            Some(Notice::ElsewhereFailed) => Some(lang.t(Text::NoteElsewhereFailed).to_string()),
                            Some(Notice::Expired) => Some(lang.t(Text::RunExpired).to_string()),
                            Some(Notice::Dismissed) => Some(lang.t(Text::NoteDismissed).replace("{}", &dismissed_by)),
                            _ => None,
                        },
                        content,
                    }
                })
                .collect(),
            id: row.id,
            title: shown_title(row.title, lang),
        })
    }

    pub(super) async fn poll(
        &self,
        session_token: &str,
        id: &str,
        after: usize,
        browser_lang: Lang,
    ) -> Result<PollView, AppError> {
        let hash = crate::auth::token_hash(session_token);
        let refused = || async { Err(self.refusal_of(&hash).await) };
        // A client that shows nothing yet needs everything: read it with the session at once.
        if after == 0 {
            let Some((user, read)) = self.store.poll_whole(&hash, id).await.map_err(internal)? else {
                return refused().await;
            };
            let user = crate::auth::current_user(user);
            return Ok(whole_poll(self.view_from(&user, read, user.language.unwrap_or(browser_lang)).await?));
        }
        let Some(head) = self.store.poll_head(&hash, id).await.map_err(internal)? else {
            return refused().await;
        };
        let user = crate::auth::current_user(head.user);
        // Only a working turn takes the fast path: a pause must reach the client with its question
        // or card on the first poll that sees it, and a candidate for reconcile must be looked at.
        if head.status == ConversationStatus::Processing
            && !self.past_grace(head.recorded, head.updated_at)
            && usize::try_from(head.messages).is_ok_and(|total| total == after)
        {
            let status = status_view(ConversationStatus::Processing);
            return Ok(PollView { status, total: after, conversation: None });
        }
        let lang = user.language.unwrap_or(browser_lang);
        Ok(whole_poll(self.view_of(&user, id, lang).await?))
    }
}
