//! How a segment's end becomes the run's next status: settled, suspended on a pause, requeued
//! after a provider failure, or failed. Each write is guarded on the segment still owning the run.

use db::now;
use serde_json::json;
use uuid::Uuid;

use super::Runtime;
use crate::run::{EventKind, FailureReason, PauseView, RunOutcome, RunResult, RunStatus};
use crate::store::{NewEvent, RunRecord, Settle};
use crate::tool::ToolEffect;
use crate::tool_loop::{write_events, Finish, Segment, Stop, SuspendedState};

impl Runtime {
    pub(super) async fn fail_owned(&self, run_id: Uuid, token: &str, reason: FailureReason) -> bool {
        let settle = Settle {
            status: RunStatus::Failed,
            reason: Some(reason.as_str()),
            answer: None,
            rounds: None,
            truncated: false,
        };
        match self.store.finish_owned(run_id, token, settle).await {
            Ok(done) => done,
            Err(error) => {
                tracing::error!(run = %run_id, %error, "could not settle the run failed");
                false
            }
        }
    }

    /// Settles the run FAILED; its event joins `events`, which the caller writes.
    pub(super) async fn settle_failed(
        &self,
        record: &RunRecord,
        token: &str,
        reason: FailureReason,
        events: &mut Vec<NewEvent>,
    ) -> RunOutcome {
        if self.fail_owned(record.id, token, reason).await {
            events.push(NewEvent {
                kind: EventKind::Status,
                round: record.rounds,
                payload: json!({ "status": "failed", "reason": reason.as_str() }),
            });
            RunOutcome::Failed { reason }
        } else {
            self.lost_outcome(record.id).await
        }
    }

    async fn lost_outcome(&self, run_id: Uuid) -> RunOutcome {
        match self.store.status(run_id).await {
            Ok(Some(RunStatus::Cancelled)) => RunOutcome::Cancelled,
            _ => RunOutcome::LeaseLost,
        }
    }

    /// Turns how a segment ended into the run's next status, each write guarded on the segment
    /// still owning the run; a lost guard reports the cancel or the loss instead.
    pub(super) async fn conclude(
        &self,
        record: &RunRecord,
        segment: Segment<'_>,
        end: Result<Finish, Stop>,
    ) -> RunResult {
        let run_id = record.id;
        let rounds = segment.rounds;
        let outside = segment.outside;
        let token = segment.token.clone();
        // What the segment has not written yet goes with the settle's own event, in one statement
        // after the settle.
        let mut events = segment.take_events();
        let messages = segment.transcript;
        let outcome = match end {
            Ok(Finish::Completed { answer, truncated }) => {
                let settle = Settle {
                    status: RunStatus::Completed,
                    reason: Some(if truncated { "max_iterations" } else { "completed" }),
                    answer: Some(&answer),
                    rounds: Some(rounds),
                    truncated,
                };
                match self.store.finish_owned(run_id, &token, settle).await {
                    Ok(true) => {
                        events.push(NewEvent {
                            kind: EventKind::Status,
                            round: rounds,
                            payload: json!({ "status": "completed", "truncated": truncated }),
                        });
                        RunOutcome::Completed { answer, truncated }
                    }
                    Ok(false) => self.lost_outcome(run_id).await,
                    Err(error) => {
                        tracing::error!(run = %run_id, %error, "could not settle a completed run");
                        RunOutcome::Failed { reason: FailureReason::StoreFailed }
                    }
                }
            }
            Ok(Finish::Suspend(state)) => self.suspend(record, &token, *state, rounds, outside, &mut events).await,
            Err(Stop::Cancelled) => RunOutcome::Cancelled,
            Err(Stop::LeaseLost) => RunOutcome::LeaseLost,
            Err(Stop::Misconfigured(problem)) => {
                tracing::error!(run = %run_id, %problem, "tool misconfigured");
                self.settle_failed(record, &token, FailureReason::ToolMisconfigured, &mut events).await
            }
            Err(Stop::Store(error)) => {
                tracing::error!(run = %run_id, %error, "store failed during the run");
                self.settle_failed(record, &token, FailureReason::StoreFailed, &mut events).await
            }
            Err(Stop::Provider(error)) => self.recover_provider_failure(record, &token, error, &mut events).await,
        };
        write_events(&self.store, run_id, &events).await;
        RunResult { run_id, outcome, messages }
    }

    async fn suspend(
        &self,
        record: &RunRecord,
        token: &str,
        state: SuspendedState,
        rounds: u32,
        outside: bool,
        events: &mut Vec<NewEvent>,
    ) -> RunOutcome {
        let status = state.status();
        let encoded = match serde_json::to_string(&state) {
            Ok(encoded) => encoded,
            Err(error) => {
                tracing::error!(run = %record.id, %error, "suspended state not encodable");
                return self.settle_failed(record, token, FailureReason::SuspendFailed, events).await;
            }
        };
        match self.store.suspend(record.id, token, status, &encoded, rounds, outside).await {
            Ok(true) => {
                events.push(NewEvent {
                    kind: EventKind::Status,
                    round: rounds,
                    payload: json!({ "status": status.as_str() }),
                });
                match self.pause_view(&state, record.process, outside || record.outside_content) {
                    PauseView::Approval(pause) => RunOutcome::AwaitingApproval { pause },
                    PauseView::Input(pause) => RunOutcome::AwaitingInput { pause },
                    PauseView::Unreadable => RunOutcome::Failed { reason: FailureReason::SuspendFailed },
                }
            }
            Ok(false) => self.lost_outcome(record.id).await,
            Err(error) => {
                // Fail closed: a pause nobody can see must not look like a run still working.
                tracing::error!(run = %record.id, %error, "suspend failed");
                self.settle_failed(record, token, FailureReason::SuspendFailed, events).await
            }
        }
    }

    /// Retryable provider failures go back to the queue while the budget lasts; a run whose fence
    /// shows an interrupted non-idempotent write is never retried.
    async fn recover_provider_failure(
        &self,
        record: &RunRecord,
        token: &str,
        error: crate::provider::ProviderError,
        events: &mut Vec<NewEvent>,
    ) -> RunOutcome {
        tracing::warn!(run = %record.id, %error, "provider failed");
        let current = match self.store.get(record.id).await {
            Ok(Some(current)) => current,
            _ => return self.settle_failed(record, token, FailureReason::ProviderFailed, events).await,
        };
        if current.status != RunStatus::Running || current.claimed_by.as_deref() != Some(token) {
            return self.lost_outcome(record.id).await;
        }
        // The reader is told what went wrong the last time, also once the retries are used up.
        let reason = FailureReason::of_provider(error.kind());
        if !error.is_retryable() {
            return self.settle_failed(record, token, reason, events).await;
        }
        if current.pending_effect == Some(ToolEffect::NonIdempotentWrite) {
            return self.settle_failed(record, token, FailureReason::NotRetryable, events).await;
        }
        if current.requeue_count >= self.settings.max_requeues {
            return self.settle_failed(record, token, reason, events).await;
        }
        let available_at = now().saturating_add(self.settings.backoff(current.requeue_count));
        match self.store.requeue_owned(record.id, token, available_at).await {
            Ok(true) => {
                events.push(NewEvent {
                    kind: EventKind::Status,
                    round: current.rounds,
                    payload: json!({ "status": "queued", "reason": "provider_failed" }),
                });
                RunOutcome::Requeued
            }
            Ok(false) => self.lost_outcome(record.id).await,
            Err(_) => self.settle_failed(record, token, FailureReason::ProviderFailed, events).await,
        }
    }
}
