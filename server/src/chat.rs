//! The chat service: what a signed-in user may do with their conversations. It implements the
//! `ChatBackend` seam that `app`'s server functions call.

use std::sync::Arc;

use async_trait::async_trait;

use app::backend::{ChatBackend, CurrentUser, NewSession};
use app::error::AppError;
use app::i18n::{Lang, Text};
use app::model::{ConversationStatus, ConversationSummary, ConversationView, MessageRole, MessageView, SessionView};

use crate::auth;
use crate::store::{StartTurn, Store, StoreError};
use crate::worker::WorkerHandle;

pub const UNTITLED: &str = "New conversation";
/// Longer messages are refused rather than cut, so nothing the user wrote is lost silently.
pub const MAX_MESSAGE_CHARS: usize = 8_000;
const TITLE_CHARS: usize = 60;

#[derive(Clone)]
pub struct ChatService {
    store: Store,
    worker: WorkerHandle,
    model_label: String,
    model_is_demo: bool,
}

impl ChatService {
    pub fn new(store: Store, worker: WorkerHandle, provider: &Arc<dyn runtime::ModelProvider>) -> Self {
        ChatService { store, worker, model_label: provider.label(), model_is_demo: provider.is_demo() }
    }
}

fn internal(error: StoreError) -> AppError {
    tracing::error!(%error, "store failure");
    AppError::Internal
}

fn title_from(content: &str) -> String {
    let line = content.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or(UNTITLED);
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    title
}

/// The sentence shown for a stored error code. Codes, not sentences, are stored so the reader's
/// language can be chosen when the page renders.
pub fn error_sentence(code: &str, lang: Lang) -> String {
    lang.t(match code {
        "provider_failed" => Text::ErrorProviderFailed,
        _ => Text::ErrorTurnFailed,
    })
    .to_string()
}

#[async_trait]
impl ChatBackend for ChatService {
    async fn login(&self, username: &str, password: &str) -> Result<NewSession, AppError> {
        let user = self.store.user_by_name(username.trim()).await.map_err(internal)?;
        let Some(user) = user.filter(|user| auth::verify_password(password, &user.password_hash)) else {
            return Err(AppError::BadCredentials);
        };
        let token = auth::new_token();
        let expires_at = crate::store::now() + auth::SESSION_SECONDS;
        self.store.create_session(&auth::token_hash(&token), user.id, expires_at).await.map_err(internal)?;
        Ok(NewSession { token, max_age_seconds: auth::SESSION_SECONDS })
    }

    async fn logout(&self, session_token: &str) -> Result<(), AppError> {
        self.store.delete_session(&auth::token_hash(session_token)).await.map_err(internal)
    }

    async fn session(&self, user: &CurrentUser, _lang: Lang) -> Result<SessionView, AppError> {
        Ok(SessionView {
            username: user.username.clone(),
            language: user.language,
            model_label: self.model_label.clone(),
            model_is_demo: self.model_is_demo,
        })
    }

    async fn list_conversations(&self, user: &CurrentUser) -> Result<Vec<ConversationSummary>, AppError> {
        let rows = self.store.conversations_of(user.id).await.map_err(internal)?;
        Ok(rows
            .into_iter()
            .map(|row| ConversationSummary {
                status: ConversationStatus::parse(&row.status).unwrap_or(ConversationStatus::Failed),
                id: row.id,
                title: row.title,
            })
            .collect())
    }

    async fn create_conversation(&self, user: &CurrentUser) -> Result<String, AppError> {
        let id = uuid::Uuid::new_v4().to_string();
        self.store.create_conversation(&id, user.id, UNTITLED).await.map_err(internal)?;
        Ok(id)
    }

    async fn conversation(&self, user: &CurrentUser, id: &str, lang: Lang) -> Result<ConversationView, AppError> {
        let row = self.store.conversation_of(user.id, id).await.map_err(internal)?.ok_or(AppError::NotFound)?;
        let messages = self.store.messages(&row.id).await.map_err(internal)?;
        Ok(ConversationView {
            status: ConversationStatus::parse(&row.status).unwrap_or(ConversationStatus::Failed),
            error: row.error_code.as_deref().map(|code| error_sentence(code, lang)),
            question: None,
            card: None,
            process_run: false,
            id: row.id,
            title: row.title,
            messages: messages
                .into_iter()
                .map(|message| MessageView {
                    id: message.id,
                    role: if message.role == "user" { MessageRole::User } else { MessageRole::Assistant },
                    content: message.content,
                })
                .collect(),
        })
    }

    async fn send_message(&self, user: &CurrentUser, id: &str, content: &str) -> Result<(), AppError> {
        let content = content.trim();
        if content.is_empty() {
            return Err(AppError::Invalid(Text::ErrorEmptyMessage));
        }
        if content.chars().count() > MAX_MESSAGE_CHARS {
            return Err(AppError::Invalid(Text::ErrorMessageTooLong));
        }
        let outcome = self
            .store
            .start_turn(user.id, id, content, &title_from(content), UNTITLED)
            .await
            .map_err(internal)?;
        match outcome {
            StartTurn::Started => {
                self.worker.wake();
                Ok(())
            }
            StartTurn::NotFound => Err(AppError::NotFound),
            StartTurn::Busy => Err(AppError::Busy),
        }
    }

    async fn set_language(&self, user: &CurrentUser, language: Option<Lang>) -> Result<(), AppError> {
        self.store.set_language(user.id, language.map(Lang::code)).await.map_err(internal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_come_from_the_first_line_and_are_cut() {
        assert_eq!(title_from("\n  Hello world \nsecond"), "Hello world");
        let long = "x".repeat(80);
        assert_eq!(title_from(&long).chars().count(), TITLE_CHARS + 1);
        assert_eq!(title_from("   "), UNTITLED);
    }
}
