//! What the worker does for the runs inbox: deliver the decisions and answers given there for
//! runs a chat moved on from (each run's outcome leaves a line in its conversation), and cancel
//! runs that waited too long, with a line as well.

use runtime::{Actor, InputReply, InputSubmission, Refusal, RunOutcome, RunStatus};
use uuid::Uuid;

use crate::audit::{Action, Entry, Surface};
use crate::conversation::{Conversation, ErrorCode, MessageRole, Notice, Recorded, Reply};
use crate::handback;
use crate::store::RunDecision;
use crate::turn::{ended_entry, owner, waiting_entry, TurnError, Turns};

/// The audit's reason for an inbox decision whose run was cancelled (dismissed or expired) before
/// the decision reached it.
pub const UNDELIVERED_CANCELLED: &str = "cancelled before the decision was delivered (dismissed or expired)";
/// The same for a run that failed first.
pub const UNDELIVERED_FAILED: &str = "the run failed before the decision was delivered";

impl Turns {
    /// Delivers what was decided or answered in the inbox for runs the conversation moved on
    /// from. Each run's outcome leaves a line in the conversation (its answer, or that it failed);
    /// a run that pauses again waits in the inbox.
    pub async fn deliver_run_decisions(&self, conversation_id: &str) -> Result<(), TurnError> {
        let Some(conversation) = self.store.conversation(conversation_id).await? else { return Ok(()) };
        for decision in self.store.pending_run_decisions(conversation_id).await? {
            self.deliver_run_decision(&conversation, &decision).await?;
        }
        self.events.changed(conversation_id);
        Ok(())
    }

    async fn deliver_run_decision(&self, conversation: &Conversation, decision: &RunDecision) -> Result<(), TurnError> {
        let actor = owner(conversation);
        let run_id = decision.run_id;
        let Some(status) = self.runtime.run_status(&actor, run_id).await? else {
            self.store.drop_run_decision(run_id).await?;
            return Ok(());
        };
        let delivered = match (status, &decision.recorded, decision.recorded.approval()) {
            (RunStatus::WaitingForApproval, Recorded::Decision { .. }, Some(verdict)) => {
                // A reviewer's approval is theirs (the chat checked they review this owner's changes).
                let decider = match decision.decided_by {
                    Some(reviewer) if reviewer != conversation.user_id => Actor::admin(reviewer),
                    _ => actor,
                };
                self.runtime
                    .approve(&decider, run_id, verdict)
                    .await
                    .map_err(|refusal| (handback::approval_code(&refusal), refusal))
            }
            (RunStatus::WaitingForInput, Recorded::Answer { digest, reply }, _) => {
                let reply = match reply {
                    Reply::Values(values) => InputReply::Answer(values.clone()),
                    Reply::Decline => InputReply::Decline,
                    Reply::Withdrawn(_) => InputReply::Cancel,
                };
                let submission = InputSubmission { reply, digest: Some(digest.clone()) };
                self.runtime
                    .submit_input(&actor, run_id, submission)
                    .await
                    .map_err(|refusal| (handback::input_code(&refusal), refusal))
            }
            // Delivered before and its segment died: carried on again here.
            (RunStatus::Queued, _, _) => match self.runtime.run_queued(run_id).await? {
                Some(result) => Ok(result),
                None => return Ok(()),
            },
            // Another segment carries it; if that one dies, the run is queued again and comes back.
            (RunStatus::Running, _, _) => return Ok(()),
            // Cancelled or failed first (a dismissal or an expiry that raced the decision): the
            // audit's row for the decision must not stand as if it took effect.
            (RunStatus::Cancelled | RunStatus::Failed, _, _) => {
                self.undelivered(conversation, run_id, status).await?;
                return Ok(());
            }
            // It ended, or waits on something else than what was decided: nothing to deliver.
            _ => {
                self.store.drop_run_decision(run_id).await?;
                return Ok(());
            }
        };
        match delivered {
            Ok(result) => {
                match result.outcome {
                    RunOutcome::Completed { answer, .. } => {
                        self.store
                            .append_line(
                                &conversation.id,
                                MessageRole::Assistant,
                                &answer,
                                Notice::DecidedElsewhere,
                                None,
                            )
                            .await?;
                    }
                    RunOutcome::Failed { reason } => {
                        let ended = ended_entry(run_id, ErrorCode::Run(reason));
                        let line = (MessageRole::Assistant, "", Notice::ElsewhereFailed);
                        self.store.append_line(&conversation.id, line.0, line.1, line.2, Some(&ended)).await?;
                    }
                    // Requeued, or the lease lost: the run is queued again and its delivery comes back.
                    RunOutcome::Requeued | RunOutcome::LeaseLost => return Ok(()),
                    // Waits again, in the inbox: on the audit's record in the same write.
                    RunOutcome::AwaitingApproval { pause } => {
                        let waiting = waiting_entry(run_id, Some(&runtime::PauseView::Approval(pause)), None);
                        self.store.waits_again(&conversation.id, run_id, &waiting).await?;
                        return Ok(());
                    }
                    RunOutcome::AwaitingInput { pause } => {
                        let waiting = waiting_entry(run_id, Some(&runtime::PauseView::Input(pause)), None);
                        self.store.waits_again(&conversation.id, run_id, &waiting).await?;
                        return Ok(());
                    }
                    // Waits again (in the inbox), or was cancelled meanwhile.
                    _ => {}
                }
                self.store.drop_run_decision(run_id).await?;
            }
            // Someone else took the run first: this decision lost. Or it was cancelled since
            // its status was read, and the decision was never delivered.
            Err((_, Refusal::AlreadyResuming | Refusal::NotWaiting { .. })) => {
                match self.runtime.run_status(&owner(conversation), run_id).await? {
                    Some(status @ (RunStatus::Cancelled | RunStatus::Failed)) => {
                        self.undelivered(conversation, run_id, status).await?;
                    }
                    _ => self.store.drop_run_decision(run_id).await?,
                }
            }
            Err((code, refusal)) => {
                tracing::info!(run = %run_id, refusal = refusal.code(), "runtime refused an inbox decision");
                self.store.refuse_run_decision(run_id, code).await?;
            }
        }
        Ok(())
    }

    /// The inbox decision's run was cancelled or failed before the decision reached it: the
    /// decision goes, with a row that says it never took effect.
    async fn undelivered(&self, conversation: &Conversation, run_id: Uuid, status: RunStatus) -> Result<(), TurnError> {
        let (action, reason) = match status {
            RunStatus::Cancelled => (Action::Cancelled, UNDELIVERED_CANCELLED),
            _ => (Action::Failed, UNDELIVERED_FAILED),
        };
        let entry = Entry::new(action, Surface::Worker, None, Some(run_id)).with_reason(reason);
        if self.store.drop_undelivered_run_decision(&conversation.id, run_id, &entry).await? {
            tracing::info!(run = %run_id, "an inbox decision came too late: its run had ended");
        }
        Ok(())
    }

    /// Cancels runs that waited longer than `expiry` for a decision or an answer, each with a
    /// line in its conversation. A conversation that still waits on the run becomes idle in the
    /// same write; one with a decision on its way keeps it (the decision came first).
    pub async fn expire_waiting(&self, expiry: std::time::Duration) -> Result<(), TurnError> {
        let cutoff = db::now().saturating_sub(i64::try_from(expiry.as_secs()).unwrap_or(i64::MAX));
        for (run_id, actor) in self.runtime.waiting_since_before(cutoff, 50).await? {
            let conversation = self.store.conversation_of_any_run(run_id).await?;
            let pause = self.runtime.status(&actor, run_id).await.ok().flatten().and_then(|view| view.pause);
            let expired = Entry { action: Action::Expired, ..waiting_entry(run_id, pause.as_ref(), None) };
            match conversation {
                Some(conversation) if conversation.run_id == Some(run_id) => {
                    if !conversation.status.is_waiting()
                        || !self.store.expire_waiting(&conversation.id, run_id, &expired).await?
                    {
                        continue;
                    }
                    self.runtime.cancel_if_waiting(&actor, run_id).await?;
                    self.events.changed(&conversation.id);
                }
                Some(conversation) => {
                    if self.store.run_decision(run_id).await?.is_some_and(|decision| decision.refused.is_none()) {
                        continue;
                    }
                    if self.runtime.cancel_if_waiting(&actor, run_id).await?.cancelled {
                        self.store
                            .append_line(&conversation.id, MessageRole::Assistant, "", Notice::Expired, Some(&expired))
                            .await?;
                        self.events.changed(&conversation.id);
                    }
                }
                None => {
                    self.runtime.cancel_if_waiting(&actor, run_id).await?;
                }
            }
            tracing::info!(run = %run_id, "a run waited too long for a decision and was cancelled");
        }
        Ok(())
    }
}
