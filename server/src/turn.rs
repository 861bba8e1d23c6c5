//! What the worker does with a conversation it took from the queue: start a turn as a run, deliver
//! a recorded answer or decision to the waiting run, and record what the run came back with.

use std::sync::Arc;

use question::form::InputPauseForm;
use runtime::{
    Actor, ApprovalDecision, ChatMessage, InputPause, InputReply, InputSubmission, PauseView, Refusal, RunOutcome,
    RunRequest, RunResult, RunStatus, Runtime, RuntimeError,
};
use uuid::Uuid;

use crate::audit::{Action, Entry, Surface};
use crate::conversation::{Conversation, ConversationStatus, ErrorCode, MessageRole, Notice, Recorded, Reply};
use crate::drafts::Drafts;
use crate::events::ConversationEvents;
use crate::handback;
use crate::skills::{ProcessRunDetector, SkillCatalogue};
use crate::store::{AttachmentText, Settle, Store, StoreError};

/// The configuration every chat run belongs to; deactivating it stops new runs and decisions.
pub const CHAT_CONFIGURATION: &str = "chat";

const SYSTEM_PROMPT: &str = "You are Tourguide, an assistant that works with the user on their website. \
Use the tools instead of guessing. A tool that changes content goes through the user's approval; say that a \
change was made only when its tool reported success. Answer in the language the user writes in.";

#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

#[derive(Clone)]
pub struct Turns {
    pub store: Store,
    pub runtime: Arc<Runtime>,
    pub skills: Arc<SkillCatalogue>,
    pub events: ConversationEvents,
    pub drafts: Drafts,
}

pub(crate) fn owner(conversation: &Conversation) -> Actor {
    Actor::user(conversation.user_id)
}

/// The code a failed or cancelled run leaves on its conversation.
fn failure_code(status: RunStatus, termination_reason: Option<&str>) -> ErrorCode {
    match (status, termination_reason.and_then(runtime::FailureReason::parse)) {
        (RunStatus::Cancelled, _) => ErrorCode::Cancelled,
        (_, Some(reason)) => ErrorCode::Run(reason),
        (_, None) => {
            tracing::warn!(?termination_reason, "a run ended with a reason this build does not know");
            ErrorCode::Internal
        }
    }
}

/// The audit's row for a run that ended without an answer: cancelled, or failed with its code.
pub(crate) fn ended_entry(run: Uuid, code: ErrorCode) -> Entry {
    let action = if code == ErrorCode::Cancelled { Action::Cancelled } else { Action::Failed };
    Entry::new(action, Surface::Worker, None, Some(run)).with_reason(code.as_str())
}

/// The audit's row for a turn that failed without an outcome of its run: none could be started,
/// or the one it names is gone.
pub(crate) fn failed_entry(run: Option<Uuid>, code: ErrorCode) -> Entry {
    Entry::new(Action::Failed, Surface::Worker, None, run).with_reason(code.as_str())
}

/// The audit's row for a run that waits on `pause` (a question or a card), with why it came back
/// if it did.
pub(crate) fn waiting_entry(run: Uuid, pause: Option<&PauseView>, code: Option<ErrorCode>) -> Entry {
    let entry = Entry::new(Action::Waiting, Surface::Worker, None, Some(run)).with_pause(pause);
    match code {
        Some(code) => entry.with_reason(code.as_str()),
        None => entry,
    }
}

impl Turns {
    /// Carries the conversation one step on. Does nothing unless it is `processing`.
    pub async fn process(&self, conversation_id: &str) -> Result<(), TurnError> {
        self.process_after(conversation_id, false).await
    }

    /// [`Turns::process`] of a job whose worker (`holder_gone`) held the open call its answer
    /// was to go back on, and stopped: the question is withdrawn with the tool's reason instead.
    pub async fn process_after(&self, conversation_id: &str, holder_gone: bool) -> Result<(), TurnError> {
        let Some(conversation) = self.store.conversation(conversation_id).await? else { return Ok(()) };
        if conversation.status != ConversationStatus::Processing {
            return Ok(());
        }
        let outcome = match &conversation.recorded {
            Some(Recorded::Answer { digest, reply }) => {
                // A withdrawal the sweep recorded is one already.
                let withdrawn = if holder_gone && !matches!(reply, Reply::Withdrawn(_)) {
                    self.withdrawn_with(&conversation).await?
                } else {
                    None
                };
                self.deliver_answer(&conversation, digest, withdrawn.as_ref().unwrap_or(reply)).await
            }
            Some(recorded @ Recorded::Decision { .. }) => match recorded.approval() {
                Some(decision) => self.deliver_decision(&conversation, decision).await,
                None => Ok(()),
            },
            None => self.carry_turn(&conversation).await,
        };
        self.drafts.forget(conversation_id);
        self.events.changed(conversation_id);
        outcome
    }

    async fn carry_turn(&self, conversation: &Conversation) -> Result<(), TurnError> {
        let run_id = match conversation.run_id {
            Some(run_id) => run_id,
            None => {
                let request = self.request_for(conversation).await?;
                let run_id = match self.runtime.enqueue(request).await {
                    Ok(run_id) => run_id,
                    Err(RuntimeError::ConfigurationInactive(_)) => {
                        let code = ErrorCode::ConfigurationInactive;
                        self.store.fail_conversation(&conversation.id, code, &failed_entry(None, code)).await?;
                        return Ok(());
                    }
                    Err(error) => return Err(error.into()),
                };
                if !self.store.attach_run(&conversation.id, run_id).await? {
                    // The conversation moved on while the run was stored; the run must not act.
                    self.runtime.cancel(&owner(conversation), run_id).await?;
                    return Ok(());
                }
                // Found by its conversation also once the chat moves on from it (the runs inbox).
                self.store.map_run(&conversation.id, run_id).await?;
                run_id
            }
        };
        self.follow_run(conversation, run_id).await
    }

    /// Looks at where the run stands and does what is due: run it if it is queued, record it if it
    /// stopped. A restart lands here too, so nothing is started twice.
    async fn follow_run(&self, conversation: &Conversation, run_id: Uuid) -> Result<(), TurnError> {
        let Some(view) = self.runtime.status(&owner(conversation), run_id).await? else {
            let code = ErrorCode::RunMissing;
            self.store.fail_conversation(&conversation.id, code, &failed_entry(Some(run_id), code)).await?;
            return Ok(());
        };
        let run = run_id;
        self.drafts.follow(run_id, &conversation.id);
        match view.status {
            RunStatus::Queued => {
                if let Some(result) = self.runtime.run_queued(run_id).await? {
                    self.apply(&conversation.id, result).await?;
                }
            }
            // Another segment carries it; if that one died, the reaper queues the run again.
            RunStatus::Running => {}
            RunStatus::WaitingForInput | RunStatus::WaitingForApproval => match view.pause {
                Some(PauseView::Input(pause)) => {
                    self.settle_question(&conversation.id, run, &pause, None).await?;
                }
                Some(PauseView::Approval(card)) if self.auto_approve(&conversation.id, run, &card).await? => {}
                Some(pause @ PauseView::Approval(_)) => {
                    let waiting = waiting_entry(run, Some(&pause), None);
                    self.store.settle(&conversation.id, run, Settle::AwaitingApproval, None, Some(&waiting)).await?;
                }
                Some(PauseView::Unreadable) | None => {
                    let code = ErrorCode::Run(runtime::FailureReason::StateUnreadable);
                    let ended = ended_entry(run, code);
                    self.store.settle(&conversation.id, run, Settle::Failed { code }, None, Some(&ended)).await?;
                }
            },
            RunStatus::Completed => {
                let answer = view.answer.unwrap_or_default();
                self.store.settle(&conversation.id, run, Settle::Answered { answer: &answer }, None, None).await?;
            }
            RunStatus::Failed | RunStatus::Cancelled => {
                let code = failure_code(view.status, view.termination_reason.as_deref());
                let ended = ended_entry(run, code);
                self.store.settle(&conversation.id, run, Settle::Failed { code }, None, Some(&ended)).await?;
            }
        }
        Ok(())
    }

    /// The withdrawal an answer turns into when its question can no longer be answered (the
    /// worker holding its call stopped): the reader is told as for any withdrawn question.
    async fn withdrawn_with(&self, conversation: &Conversation) -> Result<Option<Reply>, TurnError> {
        let Some(run_id) = conversation.run_id else { return Ok(None) };
        let Some(reason) = self.runtime.question_expired(run_id).await? else { return Ok(None) };
        // The answer on record never reaches the call: the audit says so, as the sweep's
        // withdrawal would.
        let pause = self.runtime.status(&owner(conversation), run_id).await?.and_then(|view| view.pause);
        let withdrawn = Entry::new(Action::Withdrawn, Surface::Worker, None, Some(run_id))
            .with_pause(pause.as_ref())
            .with_reason(reason.as_str());
        self.store.record_entry(&conversation.id, &withdrawn).await?;
        Ok(Some(Reply::Withdrawn(reason)))
    }

    async fn deliver_answer(&self, conversation: &Conversation, digest: &str, reply: &Reply) -> Result<(), TurnError> {
        let Some(run_id) = conversation.run_id else {
            let code = ErrorCode::RunMissing;
            self.store.fail_conversation(&conversation.id, code, &failed_entry(None, code)).await?;
            return Ok(());
        };
        self.drafts.follow(run_id, &conversation.id);
        if !matches!(reply, Reply::Withdrawn(_)) {
            crate::telemetry::continuation_started("answer", conversation.recorded_at_ms);
        }
        let (delivered, notice) = match reply {
            Reply::Withdrawn(reason) => {
                // A link's step the server says is done answers the question; nothing was lost.
                let notice =
                    if reason == mcp::LINK_COMPLETED { ErrorCode::LinkCompleted } else { ErrorCode::QuestionWithdrawn };
                (self.runtime.withdraw_question(run_id, reason).await, Some(notice))
            }
            Reply::Values(values) => {
                let submission = InputSubmission::values(values.clone(), Some(digest.to_string()));
                (self.runtime.submit_input(&owner(conversation), run_id, submission).await, None)
            }
            Reply::Decline => {
                let submission = InputSubmission { reply: InputReply::Decline, digest: Some(digest.to_string()) };
                (self.runtime.submit_input(&owner(conversation), run_id, submission).await, None)
            }
        };
        match delivered {
            Ok(result) => self.apply_noting(&conversation.id, result, notice).await,
            Err(Refusal::NotWaiting { .. }) => self.not_waiting(conversation, run_id, RunStatus::WaitingForInput).await,
            Err(refusal) => self.refused(conversation, handback::input_code(&refusal), &refusal).await,
        }
    }

    async fn deliver_decision(&self, conversation: &Conversation, decision: ApprovalDecision) -> Result<(), TurnError> {
        let Some(run_id) = conversation.run_id else {
            let code = ErrorCode::RunMissing;
            self.store.fail_conversation(&conversation.id, code, &failed_entry(None, code)).await?;
            return Ok(());
        };
        self.drafts.follow(run_id, &conversation.id);
        // A reviewer's approval is theirs (the chat checked they review this owner's changes).
        let decider = match conversation.decided_by {
            Some(reviewer) if reviewer != conversation.user_id => Actor::admin(reviewer),
            _ => owner(conversation),
        };
        crate::telemetry::continuation_started("decision", conversation.recorded_at_ms);
        match self.runtime.approve(&decider, run_id, decision).await {
            Ok(result) => self.apply(&conversation.id, result).await,
            Err(Refusal::NotWaiting { .. }) => {
                self.not_waiting(conversation, run_id, RunStatus::WaitingForApproval).await
            }
            Err(refusal) => self.refused(conversation, handback::approval_code(&refusal), &refusal).await,
        }
    }

    /// The runtime found the run no longer waiting (asked only then: the delivery itself reads
    /// the run). If an earlier attempt already delivered (the server died before it could record
    /// the result), the answer or decision is marked done and the run is followed instead of being
    /// refused as "not waiting".
    async fn not_waiting(
        &self,
        conversation: &Conversation,
        run_id: Uuid,
        waiting: RunStatus,
    ) -> Result<(), TurnError> {
        let status = self.runtime.run_status(&owner(conversation), run_id).await?;
        // Moved on from the pause (not failed or cancelled): delivered before.
        if matches!(status, Some(status) if status != waiting && !matches!(status, RunStatus::Failed | RunStatus::Cancelled))
        {
            if self.store.mark_delivered(&conversation.id).await? {
                self.follow_run(conversation, run_id).await?;
            }
            return Ok(());
        }
        // Ended, gone, or waiting without a pause the runtime can take: the question or card
        // comes back with the reason.
        let (back_to, code) = if waiting == RunStatus::WaitingForInput {
            (ConversationStatus::AwaitingInput, ErrorCode::NotAwaitingInput)
        } else {
            (ConversationStatus::AwaitingApproval, ErrorCode::NotAwaitingApproval)
        };
        // The answer or decision on record never reached the run: the audit says what became
        // of the run instead, in the hand-back's write.
        let entry = match status {
            Some(RunStatus::Cancelled) => Entry::new(Action::Cancelled, Surface::Worker, None, Some(run_id)),
            Some(status) if status == waiting => {
                let pause =
                    self.runtime.status(&owner(conversation), run_id).await.ok().flatten().and_then(|view| view.pause);
                waiting_entry(run_id, pause.as_ref(), None)
            }
            _ => Entry::new(Action::Failed, Surface::Worker, None, Some(run_id)),
        }
        .with_reason(code.as_str());
        self.store.hand_back(&conversation.id, back_to, code, Some(&entry)).await?;
        Ok(())
    }

    /// Every refusal leaves the run waiting, so the question or card comes back with the reason.
    async fn refused(&self, conversation: &Conversation, code: ErrorCode, refusal: &Refusal) -> Result<(), TurnError> {
        tracing::warn!(conversation = %conversation.id, refusal = refusal.code(), "runtime refused a recorded answer or decision");
        if let Some(recorded) = &conversation.recorded {
            // The run still waits: the audit says so again, with why the answer or decision came back.
            let waiting = match conversation.run_id {
                Some(run) => {
                    let pause =
                        self.runtime.status(&owner(conversation), run).await.ok().flatten().and_then(|view| view.pause);
                    Some(waiting_entry(run, pause.as_ref(), Some(code)))
                }
                None => None,
            };
            self.store.hand_back(&conversation.id, recorded.waiting_status(), code, waiting.as_ref()).await?;
        }
        Ok(())
    }

    /// Records what a run call came back with, on the conversation that carries that run.
    async fn apply(&self, conversation_id: &str, result: RunResult) -> Result<(), TurnError> {
        self.apply_noting(conversation_id, result, None).await
    }

    /// [`Turns::apply`], with a note that stands beside the turn as it goes on.
    async fn apply_noting(
        &self,
        conversation_id: &str,
        result: RunResult,
        notice: Option<ErrorCode>,
    ) -> Result<(), TurnError> {
        let run = result.run_id;
        let said_so_far = self.drafts.finish(run);
        let settled = match result.outcome {
            RunOutcome::Completed { answer, .. } => {
                self.store.settle(conversation_id, run, Settle::Answered { answer: &answer }, notice, None).await?
            }
            RunOutcome::AwaitingInput { pause } => self.settle_question(conversation_id, run, &pause, notice).await?,
            // Approved by a standing approval: its delivery is queued, the conversation stays busy.
            RunOutcome::AwaitingApproval { pause } if self.auto_approve(conversation_id, run, &pause).await? => true,
            RunOutcome::AwaitingApproval { pause } => {
                let waiting = waiting_entry(run, Some(&PauseView::Approval(pause)), None);
                self.store.settle(conversation_id, run, Settle::AwaitingApproval, notice, Some(&waiting)).await?
            }
            RunOutcome::Failed { reason } => {
                let code = ErrorCode::Run(reason);
                let ended = ended_entry(run, code);
                self.store.settle(conversation_id, run, Settle::Failed { code }, None, Some(&ended)).await?
            }
            RunOutcome::Cancelled => {
                // Stopped by the reader: the stopped line gets everything the model had written.
                if let Some(text) = said_so_far.filter(|text| !text.is_empty()) {
                    self.store.complete_stopped_reply(conversation_id, &text).await?;
                }
                let code = ErrorCode::Cancelled;
                let ended = ended_entry(run, code);
                self.store.settle(conversation_id, run, Settle::Failed { code }, None, Some(&ended)).await?;
                true
            }
            // Requeued: the worker is dispatched again when the run is due. Lease lost: whoever
            // holds the run now will record it.
            _ => true,
        };
        if !settled {
            self.let_go(conversation_id, run).await?;
        }
        Ok(())
    }

    /// The conversation moved on (stopped, or a new turn) while its run came to a pause or an end:
    /// a run still waiting there must not wait for an answer nobody can give.
    async fn let_go(&self, conversation_id: &str, run: Uuid) -> Result<(), TurnError> {
        let Some(conversation) = self.store.conversation(conversation_id).await? else { return Ok(()) };
        if conversation.run_id == Some(run) {
            return Ok(());
        }
        if self.runtime.cancel(&owner(&conversation), run).await? {
            tracing::info!(conversation = %conversation_id, run = %run, "cancelled a run its conversation left");
        }
        Ok(())
    }

    /// Parks the conversation on a question, which joins the transcript as the assistant's line
    /// in the wording the reply options are read with.
    async fn settle_question(
        &self,
        conversation_id: &str,
        run: Uuid,
        pause: &InputPause,
        notice: Option<ErrorCode>,
    ) -> Result<bool, TurnError> {
        let question = InputPauseForm::parse(&pause.schema).question().to_string();
        let waiting = waiting_entry(run, Some(&PauseView::Input(pause.clone())), None);
        let settle = Settle::AwaitingInput { question: Some(&question) };
        Ok(self.store.settle(conversation_id, run, settle, notice, Some(&waiting)).await?)
    }

    async fn request_for(&self, conversation: &Conversation) -> Result<RunRequest, TurnError> {
        let mut system = SYSTEM_PROMPT.to_string();
        let skill = conversation.skill.as_deref().and_then(|id| self.skills.find(id));
        if let Some(skill) = skill {
            system.push_str("\n\n");
            system.push_str(skill.instructions);
        }
        if let Some(page_id) = conversation.page_id {
            system.push_str("\n\n");
            system.push_str(&content::context::page_sentence(page_id));
        }
        let mut messages = vec![ChatMessage::system(system)];
        let files = self.store.attachment_texts(&conversation.id).await?;
        for message in self.store.messages(&conversation.id).await? {
            // A line that is only a notice (a stop before any text, an expiry) says nothing to the model.
            let only_a_notice = message.notice.is_some() && message.content.trim().is_empty();
            if only_a_notice || message.notice == Some(Notice::Dismissed) {
                continue;
            }
            let attached: Vec<_> = files.iter().filter(|file| file.file.message_id == Some(message.id)).collect();
            messages.push(match message.role {
                MessageRole::User if !attached.is_empty() => ChatMessage::user(with_files(&message.content, &attached)),
                MessageRole::User => ChatMessage::user(message.content),
                MessageRole::Assistant => ChatMessage::assistant(message.content),
            });
        }
        let mut request = RunRequest::new(owner(conversation), CHAT_CONFIGURATION, messages);
        request.outside_content = self.holds_outside_content(conversation, &files).await?;
        request.process = self.skills.is_process_run(conversation);
        // A tour step (analyse, suggest, write) takes several rounds before it pauses.
        if request.process {
            request.max_rounds = Some(10);
        }
        Ok(request)
    }
}

impl Turns {
    /// Whether the conversation holds text from outside: a file (its text goes to the model), or
    /// an earlier run that read an outside tool's result (its answer may carry it on). Then
    /// open-world tools wait for approval, so an injected instruction cannot send it out unseen.
    async fn holds_outside_content(
        &self,
        conversation: &Conversation,
        files: &[AttachmentText],
    ) -> Result<bool, TurnError> {
        if files.iter().any(|file| file.file.message_id.is_some()) {
            return Ok(true);
        }
        let runs = self.store.runs_of(&conversation.id).await?;
        Ok(!runs.is_empty() && self.runtime.any_held_outside_content(&runs).await?)
    }
}

/// A message with its files' text after it, each named, so the model reads them as the reader's.
fn with_files(content: &str, files: &[&AttachmentText]) -> String {
    let mut text = content.to_string();
    for AttachmentText { file, text: extracted } in files {
        text.push_str(&format!("\n\n[Attached file: {} ({})]\n{extracted}", file.file_name, file.kind));
        if file.truncated {
            text.push_str("\n[The file's text was cut here: it is longer than the model is given.]");
        }
    }
    text
}
