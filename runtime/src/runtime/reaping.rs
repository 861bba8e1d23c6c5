//! Runs whose worker is gone (an expired lease, or a process that died), and the queued runs due
//! for a worker.

use db::now;
use serde_json::json;
use uuid::Uuid;

use super::Runtime;
use crate::refusal::RuntimeError;
use crate::run::{EventKind, FailureReason};
use crate::tool::ToolEffect;

/// What one pass of the reaper did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReapReport {
    pub requeued: Vec<Uuid>,
    pub failed: Vec<Uuid>,
}

impl Runtime {
    /// Runs whose segment holds a lease expired at `now` (normally the current time): requeued while
    /// retries remain, else failed. A run interrupted inside a non-idempotent write is failed at
    /// once: retrying could repeat it.
    pub async fn reap_stale(&self, now: i64) -> Result<ReapReport, RuntimeError> {
        self.reap(now, true).await
    }

    /// For start-up in a single-process deployment: nothing of this process runs yet, so every
    /// RUNNING run was interrupted by a process that is gone (a crash, a kill -9). Each is queued
    /// again at once, without backoff (its provider did not fail), or failed under the same rules
    /// as the reaper's.
    pub async fn recover_interrupted(&self) -> Result<ReapReport, RuntimeError> {
        self.reap(i64::MAX, false).await
    }

    async fn reap(&self, now: i64, backoff: bool) -> Result<ReapReport, RuntimeError> {
        let mut report = ReapReport::default();
        for stale in self.store.stale_running(now).await? {
            let fenced = stale.pending_effect == Some(ToolEffect::NonIdempotentWrite);
            let (done, requeued, reason) = if fenced {
                (
                    self.store.dead_letter_stale(stale.id, now, FailureReason::NotRetryable.as_str()).await?,
                    false,
                    "not_retryable",
                )
            } else if stale.requeue_count >= self.settings.max_requeues {
                let reason = FailureReason::RetriesExhausted.as_str();
                (self.store.dead_letter_stale(stale.id, now, reason).await?, false, reason)
            } else {
                // A run whose lease ran out has waited a whole lease already: the first takeover is
                // due at once, so another worker carries a dead worker's run on. Runs that keep
                // losing their segment back off. The backoff runs on the wall clock: `now` only
                // says which leases count as expired.
                let delay = match stale.requeue_count {
                    0 => 0,
                    _ if !backoff => 0,
                    count => self.settings.backoff(count - 1),
                };
                let available_at = db::now().saturating_add(delay);
                (self.store.requeue_stale(stale.id, now, available_at).await?, true, "lease_expired")
            };
            if !done {
                continue;
            }
            let status = if requeued { "queued" } else { "failed" };
            self.event(stale.id, EventKind::Status, 0, json!({ "status": status, "reason": reason })).await;
            if requeued {
                report.requeued.push(stale.id);
            } else {
                report.failed.push(stale.id);
            }
        }
        Ok(report)
    }

    /// Queued runs whose backoff has passed, oldest first: what a worker should pick up.
    pub async fn due_queued_runs(&self, limit: u32) -> Result<Vec<Uuid>, RuntimeError> {
        Ok(self.store.due_queued(now(), limit).await?)
    }
}
