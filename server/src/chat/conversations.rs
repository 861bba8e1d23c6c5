//! The reader's conversations: listed, started (plain or as a guided tour of a page), renamed,
//! and deleted with the runs that wait on them.

use app::backend::CurrentUser;
use app::error::AppError;
use app::i18n::{Lang, Text};
use app::model::ConversationSummary;
use runtime::Actor;
use uuid::Uuid;

use super::inbox::INBOX_LIMIT;
use super::titles::{shown_title, UNTITLED};
use super::view::status_view;
use super::ChatService;
use crate::audit::{Action, Entry, Surface};
use crate::conversation::ConversationStatus;
use crate::failures::{content_failure, internal, runtime_failure};

/// A tour's title names its page, cut at this length.
const PAGE_TITLE_CHARS: usize = 60;

/// The sidebar lists this many of the latest conversations (the store's bound, which the page's
/// head reads the list with too).
pub use crate::store::LIST_LIMIT;

impl ChatService {
    pub(super) async fn list_conversations(&self, user: &CurrentUser) -> Result<Vec<ConversationSummary>, AppError> {
        // A chat page's list came with its session (`auth::page_head`).
        let rows = match crate::auth::page_head(user).and_then(|read| read.head.conversations.clone()) {
            Some(rows) => rows,
            None => self.store.conversations_of(user.id, LIST_LIMIT).await.map_err(internal)?,
        };
        let lang = app::backend::request_lang();
        Ok(rows
            .into_iter()
            .map(|row| ConversationSummary {
                status: status_view(row.status),
                id: row.id,
                title: shown_title(row.title, lang),
            })
            .collect())
    }

    pub(super) async fn create_conversation(
        &self,
        user: &CurrentUser,
        skill: Option<&str>,
    ) -> Result<String, AppError> {
        if skill.is_some() && !user.approves_own_changes() {
            return Err(AppError::Invalid(Text::ErrorTourFourEyes));
        }
        if let Some(skill) = skill {
            if self.skills.find(skill).is_none() {
                return Err(AppError::Invalid(Text::ErrorTransport));
            }
        }
        let id = Uuid::new_v4().to_string();
        self.store.create_conversation(&id, user.id, UNTITLED, skill, None).await.map_err(internal)?;
        Ok(id)
    }

    pub(super) async fn rename_conversation(&self, user: &CurrentUser, id: &str, title: &str) -> Result<(), AppError> {
        let title = title.trim();
        if title.is_empty() {
            return Err(AppError::Invalid(Text::ErrorEmptyTitle));
        }
        if title.chars().count() > 200 {
            return Err(AppError::Invalid(Text::ErrorMessageTooLong));
        }
        if !self.store.rename_conversation(user.id, id, title).await.map_err(internal)? {
            return Err(AppError::NotFound);
        }
        self.events.changed(id);
        Ok(())
    }

    pub(super) async fn delete_conversation(&self, user: &CurrentUser, id: &str) -> Result<(), AppError> {
        let row = self.owned(user, id).await?;
        // A run that waits on this conversation would wait for ever: end it first. If where it
        // stands cannot be read, nothing is deleted.
        // So would one the chat moved on from (listed in the inbox until now).
        let owner = Actor::user(row.user_id);
        let mut waiting: Vec<Uuid> = row.run_id.filter(|_| row.status.is_waiting()).into_iter().collect();
        for run in self.runtime.waiting_runs(&owner, INBOX_LIMIT).await.map_err(runtime_failure)? {
            let belongs = self.store.conversation_of_any_run(run.run_id).await.map_err(internal)?;
            if belongs.is_some_and(|belongs| belongs.id == row.id) && !waiting.contains(&run.run_id) {
                waiting.push(run.run_id);
            }
        }
        let mut cancelled = Vec::new();
        for run_id in waiting {
            let pause = self.pause_of_run(&row, run_id).await.ok().flatten();
            match self.runtime.cancel_if_waiting(&owner, run_id).await {
                Ok(result) if result.cancelled => {
                    let entry = Entry::new(Action::Cancelled, Surface::Chat, Some(user.id), Some(run_id));
                    cancelled.push(entry.with_pause(pause.as_ref()));
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::error!(%error, conversation = %row.id, "could not end the waiting run");
                    return Err(AppError::Unavailable);
                }
            }
        }
        if !self.store.delete_conversation(user.id, id, &cancelled).await.map_err(internal)? {
            return Err(AppError::Busy);
        }
        Ok(())
    }

    pub(super) async fn start_tour(&self, user: &CurrentUser, page_id: i64, lang: Lang) -> Result<String, AppError> {
        // A guided process is decided only by the one who started it, so it cannot wait for a
        // reviewer: four-eyes accounts do not start one.
        if !user.approves_own_changes() {
            return Err(AppError::Invalid(Text::ErrorTourFourEyes));
        }
        let page = self.content.page(page_id).await.map_err(content_failure)?.ok_or(AppError::NotFound)?;
        let id = Uuid::new_v4().to_string();
        let title =
            format!("{}: {}", lang.t(Text::TourTitle), page.title.chars().take(PAGE_TITLE_CHARS).collect::<String>());
        self.store
            .create_conversation(&id, user.id, &title, Some(crate::skills::PAGE_TOUR), Some(page.id))
            .await
            .map_err(internal)?;
        let first = lang.t(Text::TourFirstMessage);
        let outcome = self
            .store
            .start_turn(user.id, &id, ConversationStatus::Idle, first, &title, UNTITLED)
            .await
            .map_err(internal)?;
        self.started(&id, outcome)?;
        Ok(id)
    }
}
