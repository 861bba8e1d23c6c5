//! The chat service: what a signed-in user may do with their conversations. It implements the
//! `ChatBackend` seam that `app`'s server functions call. Requests only check and record; the
//! worker talks to the runtime. The domain's state (`conversation`) becomes view models here.

mod backend;
mod cards;
mod conversations;
mod decisions;
mod files;
mod inbox;
mod messages;
mod policies;
mod questions;
mod reconcile;
mod titles;
mod view;

use std::sync::Arc;
use std::time::Duration;

use app::backend::CurrentUser;
use app::error::AppError;
use content::store::ContentStore;
use runtime::{Actor, PauseView, Runtime};
use uuid::Uuid;

use crate::conversation::Conversation;
use crate::drafts::Drafts;
use crate::events::ConversationEvents;
use crate::failures::{internal, runtime_failure};
use crate::skills::SkillCatalogue;
use crate::store::{StartTurn, Store};
use crate::worker::WorkerHandle;

pub use conversations::LIST_LIMIT;
pub use files::MAX_PENDING_ATTACHMENTS;
pub(crate) use inbox::waited;
pub use inbox::{waiting_view, INBOX_LIMIT};
pub use policies::can_wait_for_card;
pub use titles::UNTITLED;

/// Longer messages are refused rather than cut, so nothing the user wrote is lost silently.
pub const MAX_MESSAGE_CHARS: usize = 8_000;

#[derive(Clone)]
pub struct ChatService {
    store: Store,
    worker: WorkerHandle,
    runtime: Arc<Runtime>,
    skills: Arc<SkillCatalogue>,
    content: ContentStore,
    events: ConversationEvents,
    /// How long a recorded answer may wait without a job before `reconcile` hands it back.
    reconcile_grace: Duration,
    /// The largest file a reader may attach, in bytes.
    attachment_limit: usize,
    /// The replies this process's worker is streaming, for a Stop to record what was seen.
    drafts: Option<Drafts>,
}

impl ChatService {
    pub fn new(
        store: Store,
        worker: WorkerHandle,
        runtime: Arc<Runtime>,
        skills: Arc<SkillCatalogue>,
        content: ContentStore,
        events: ConversationEvents,
        reconcile_grace: Duration,
    ) -> Self {
        ChatService {
            store,
            worker,
            runtime,
            skills,
            content,
            events,
            reconcile_grace,
            attachment_limit: attachments::Limits::default().max_bytes,
            drafts: None,
        }
    }

    pub fn with_drafts(mut self, drafts: Drafts) -> Self {
        self.drafts = Some(drafts);
        self
    }

    pub fn with_attachment_limit(mut self, limit: usize) -> Self {
        self.attachment_limit = limit;
        self
    }

    pub fn attachment_limit(&self) -> usize {
        self.attachment_limit
    }

    async fn owned(&self, user: &CurrentUser, id: &str) -> Result<Conversation, AppError> {
        self.store.conversation_of(user.id, id).await.map_err(internal)?.ok_or(AppError::NotFound)
    }

    async fn pause_of_run(&self, row: &Conversation, run_id: Uuid) -> Result<Option<PauseView>, AppError> {
        let view = self.runtime.status(&Actor::user(row.user_id), run_id).await.map_err(runtime_failure)?;
        Ok(view.and_then(|view| view.pause))
    }

    /// What the run waits on, read live: the question and card are always the ones as they stand.
    async fn pause_of(&self, row: &Conversation) -> Result<Option<PauseView>, AppError> {
        let Some(run_id) = row.run_id else { return Ok(None) };
        self.pause_of_run(row, run_id).await
    }

    /// A turn that started goes to the worker; one that did not says why.
    fn started(&self, conversation_id: &str, outcome: StartTurn) -> Result<(), AppError> {
        match outcome {
            StartTurn::Started => {
                self.wake_announced(conversation_id);
                Ok(())
            }
            StartTurn::NotFound => Err(AppError::NotFound),
            StartTurn::Busy => Err(AppError::Busy),
        }
    }

    /// Hands recorded work to the worker and tells open pages that the conversation changed.
    fn wake(&self, conversation_id: &str) {
        self.worker.wake();
        self.events.changed(conversation_id);
    }

    /// [`Self::wake`] after a write that announced its change itself on PostgreSQL
    /// (`store::Then::Announce`): no NOTIFY of its own there.
    fn wake_announced(&self, conversation_id: &str) {
        self.worker.wake();
        self.events.announced(conversation_id);
    }
}
