//! The reader's own turns: a message sent, an earlier one edited, a failed turn tried again, a
//! reply stopped; and what happens to a run that waits when the reader moves on.

use app::backend::CurrentUser;
use app::error::AppError;
use app::i18n::{Lang, Text};
use question::form::{InputAnswer, InputPauseForm};
use runtime::{Actor, PauseView, RunStatus};
use uuid::Uuid;

use super::titles::{title_from, UNTITLED};
use super::{ChatService, MAX_MESSAGE_CHARS};
use crate::audit::{Action, Entry, Surface};
use crate::continue_intent::is_continue_intent;
use crate::conversation::{Conversation, ConversationStatus};
use crate::failures::internal;
use crate::skills::ProcessRunDetector;

/// What starts the new turn once a waiting run is out of the way.
#[derive(Clone, Copy)]
enum NewTurn<'a> {
    Message(&'a str),
    Edit { message_id: i64, content: &'a str },
}

impl ChatService {
    fn validate_message(content: &str) -> Result<&str, AppError> {
        let content = content.trim();
        if content.is_empty() {
            return Err(AppError::Invalid(Text::ErrorEmptyMessage));
        }
        if content.chars().count() > MAX_MESSAGE_CHARS {
            return Err(AppError::Invalid(Text::ErrorMessageTooLong));
        }
        Ok(content)
    }

    /// A message while a process run waits: claim the conversation first, then cancel the run only
    /// if it still waits. If the run is being carried on (or a decision on it won), the claim is
    /// given back and the message is refused as busy.
    async fn message_in_process_run(
        &self,
        row: &Conversation,
        run_id: Uuid,
        turn: NewTurn<'_>,
    ) -> Result<(), AppError> {
        // For the audit's row only: where the run stands is asked again, under the claim.
        let pause = self.pause_of_run(row, run_id).await.ok().flatten();
        if !self.store.claim_waiting(row.user_id, &row.id, row.status).await.map_err(internal)? {
            return Err(AppError::Busy);
        }
        let result = match self.runtime.cancel_if_waiting(&Actor::user(row.user_id), run_id).await {
            Ok(result) => result,
            // Where the run stands is unknown: it may still wait, so the claim goes back.
            Err(error) => {
                tracing::error!(%error, conversation = %row.id, "could not tell whether the waiting run ended");
                self.store.release_claim(&row.id, row.status).await.map_err(internal)?;
                return Err(AppError::Unavailable);
            }
        };
        let released = result.cancelled || result.status.is_none_or(RunStatus::is_terminal);
        if !released {
            self.store.release_claim(&row.id, row.status).await.map_err(internal)?;
            return Err(AppError::Busy);
        }
        // The audit's row goes with the new turn's write, which the claim makes sure wins.
        let cancelled = result.cancelled.then(|| {
            Entry::new(Action::Cancelled, Surface::Chat, Some(row.user_id), Some(run_id)).with_pause(pause.as_ref())
        });
        let started = match turn {
            NewTurn::Message(content) => {
                let title = title_from(content);
                self.store.start_claimed_turn(&row.id, content, &title, UNTITLED, cancelled.as_ref()).await
            }
            NewTurn::Edit { message_id, content } => {
                self.store.restart_claimed_from(&row.id, message_id, content, cancelled.as_ref()).await
            }
        };
        if !started.map_err(internal)? {
            return Err(AppError::Busy);
        }
        self.wake(&row.id);
        Ok(())
    }

    pub(super) async fn send_message(&self, user: &CurrentUser, id: &str, content: &str) -> Result<(), AppError> {
        let content = Self::validate_message(content)?;
        let row = self.owned(user, id).await?;
        match row.status {
            ConversationStatus::Processing => return Err(AppError::Busy),
            ConversationStatus::AwaitingApproval if is_continue_intent(content) => {
                return Err(AppError::ApprovalStillPending);
            }
            // Where the question takes free text, typed text in the chat input is the answer.
            ConversationStatus::AwaitingInput => {
                let mut holds_a_tool = false;
                if let Some(PauseView::Input(pause)) = self.pause_of(&row).await? {
                    if InputPauseForm::parse(&pause.schema).takes_free_text() {
                        let answer = InputAnswer::FreeText(content.to_string());
                        return self.answer_from(user, id, &pause.digest, answer, Lang::default(), Surface::Chat).await;
                    }
                    holds_a_tool = pause.asked_while_running;
                }
                // A question a tool asked while it ran holds that tool's call open: a message of
                // one's own ends the run, and the tool hears that its question was cancelled.
                if self.skills.is_process_run(&row) || holds_a_tool {
                    if let Some(run_id) = row.run_id {
                        return self.message_in_process_run(&row, run_id, NewTurn::Message(content)).await;
                    }
                }
            }
            ConversationStatus::AwaitingApproval if self.skills.is_process_run(&row) => {
                if let Some(run_id) = row.run_id {
                    return self.message_in_process_run(&row, run_id, NewTurn::Message(content)).await;
                }
            }
            // An ordinary chat keeps its waiting run: the new turn only forgets it.
            _ => {}
        }
        let outcome = self
            .store
            .start_turn(user.id, id, row.status, content, &title_from(content), UNTITLED)
            .await
            .map_err(internal)?;
        self.started(id, outcome)
    }

    pub(super) async fn retry(&self, user: &CurrentUser, id: &str) -> Result<(), AppError> {
        let row = self.owned(user, id).await?;
        match row.status {
            ConversationStatus::Failed => {}
            ConversationStatus::Processing if row.recorded.is_some() => return Err(AppError::DecisionInFlight),
            ConversationStatus::Processing => return Err(AppError::Busy),
            _ => return Err(AppError::NotResumable),
        }
        if !self.store.claim_retry(user.id, id).await.map_err(internal)? {
            return Err(AppError::Busy);
        }
        self.wake(id);
        Ok(())
    }

    pub(super) async fn edit_message(
        &self,
        user: &CurrentUser,
        id: &str,
        message_id: i64,
        content: &str,
    ) -> Result<(), AppError> {
        let content = Self::validate_message(content)?;
        let row = self.owned(user, id).await?;
        if row.status == ConversationStatus::Processing {
            return Err(if row.recorded.is_some() { AppError::DecisionInFlight } else { AppError::Busy });
        }
        let messages = self.store.messages(id).await.map_err(internal)?;
        let editable = messages.iter().any(|message| message.id == message_id && message.is_editable());
        if !editable {
            return Err(AppError::Invalid(Text::ErrorNotEditable));
        }
        // As with a new message: a waiting process run, or a tool holding its question open, is
        // cancelled first (the tool hears its question was cancelled); an ordinary chat's waiting
        // run is only forgotten.
        let cancel_first = match row.status {
            ConversationStatus::AwaitingInput => {
                self.skills.is_process_run(&row)
                    || matches!(self.pause_of(&row).await?, Some(PauseView::Input(pause)) if pause.asked_while_running)
            }
            ConversationStatus::AwaitingApproval => self.skills.is_process_run(&row),
            _ => false,
        };
        if let (true, Some(run_id)) = (cancel_first, row.run_id) {
            return self.message_in_process_run(&row, run_id, NewTurn::Edit { message_id, content }).await;
        }
        if !self.store.restart_from(user.id, id, row.status, message_id, content).await.map_err(internal)? {
            return Err(AppError::Busy);
        }
        self.wake(id);
        Ok(())
    }

    pub(super) async fn stop(&self, user: &CurrentUser, id: &str) -> Result<(), AppError> {
        // The worker may attach the turn's run between the read and the guarded write; the write
        // then misses and is tried again on the row as it is now.
        for _ in 0..3 {
            let row = self.owned(user, id).await?;
            if row.status != ConversationStatus::Processing {
                // The reply was recorded, or a question or card came first: that one won.
                return Err(AppError::NothingToStop);
            }
            if let (Some(drafts), Some(run_id)) = (&self.drafts, row.run_id) {
                drafts.save_now(run_id).await;
            }
            let cancelled = Entry::new(Action::Cancelled, Surface::Chat, Some(user.id), row.run_id);
            if !self.store.stop(user.id, id, row.run_id, &cancelled).await.map_err(internal)? {
                continue;
            }
            if let Some(run_id) = row.run_id {
                // If this fails the run goes on unseen until its worker finds the conversation
                // moved on and lets go of it (`Turns::let_go`).
                if let Err(error) = self.runtime.cancel(&Actor::user(row.user_id), run_id).await {
                    tracing::warn!(%error, conversation = %id, "a stopped reply's run could not be cancelled yet");
                }
            }
            self.events.changed(id);
            return Ok(());
        }
        Err(AppError::Busy)
    }
}
