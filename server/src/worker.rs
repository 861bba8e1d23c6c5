//! The background worker: takes queued jobs and carries their conversations on (see `turn`). One
//! loop per process; the web handlers only record work and wake it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use crate::conversation::{ConversationStatus, ErrorCode};
use crate::store::{JobKind, Store};
use crate::turn::{TurnError, Turns};

/// The worker also looks on its own this often, so a lost wake-up delays a job, never strands it,
/// and runs the runtime queued again (after a provider hiccup) are picked up.
const IDLE_POLL: Duration = Duration::from_secs(1);
/// How often the worker looks for stale jobs and for runs the runtime queued again. Once per job
/// would put three extra queries in front of every answer under load; a lease or a retry backoff
/// is measured in seconds anyway.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

#[derive(Clone, Default)]
pub struct WorkerHandle {
    notify: Arc<Notify>,
}

impl WorkerHandle {
    pub fn wake(&self) {
        self.notify.notify_one();
    }
}

pub struct Worker {
    store: Store,
    turns: Turns,
    handle: WorkerHandle,
    /// How long a claimed job stays this worker's without a heartbeat. The heartbeat renews it
    /// while the job runs, so a job outlives its lease only when its worker died.
    lease: Duration,
    last_sweep: Mutex<Option<Instant>>,
    /// A run that waited this long for a decision or an answer is cancelled.
    waiting_expiry: Duration,
}

impl Worker {
    pub fn new(turns: Turns, handle: WorkerHandle, lease: Duration) -> Self {
        Worker {
            store: turns.store.clone(),
            turns,
            handle,
            lease,
            last_sweep: Mutex::new(None),
            waiting_expiry: crate::config::DEFAULT_WAITING_EXPIRY,
        }
    }

    pub fn with_waiting_expiry(mut self, expiry: Duration) -> Self {
        self.waiting_expiry = expiry;
        self
    }

    /// Renews the job's lease every third of it, for as long as it is polled (never ends).
    async fn keep_leased(&self, job_id: i64) {
        loop {
            tokio::time::sleep(self.lease / 3).await;
            match self.store.renew_job(job_id, self.lease).await {
                Ok(true) => {}
                Ok(false) => tracing::warn!(job = job_id, "the job's lease was lost; another worker may take it"),
                Err(error) => tracing::warn!(job = job_id, %error, "could not renew the job's lease"),
            }
        }
    }

    /// True at most once per `SWEEP_EVERY` (and on the first step, right after start-up recovery).
    fn sweep_due(&self) -> bool {
        let mut last = self.last_sweep.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let due = last.is_none_or(|at| at.elapsed() >= SWEEP_EVERY);
        if due {
            *last = Some(Instant::now());
        }
        due
    }

    pub fn spawn(self, mut shutdown: watch::Receiver<bool>) -> JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                if *shutdown.borrow() {
                    break;
                }
                // On shutdown an in-flight job is abandoned, not awaited: its lease keeps it
                // "running" and the next start queues it again.
                let step = tokio::select! {
                    step = self.run_once() => step,
                    _ = shutdown.wait_for(|stopped| *stopped) => break,
                };
                match step {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(error) => tracing::error!(%error, "worker step failed"),
                }
                tokio::select! {
                    _ = self.handle.notify.notified() => {}
                    _ = tokio::time::sleep(IDLE_POLL) => {}
                    _ = shutdown.changed() => {}
                }
            }
        })
    }

    /// Runs at most one job; true when it did one, so the loop asks again at once.
    pub async fn run_once(&self) -> Result<bool, TurnError> {
        if self.sweep_due() {
            self.store.requeue_stale_jobs().await?;
            self.dispatch_due_runs().await?;
        }
        let Some(job) = self.store.claim_job(self.lease).await? else {
            return Ok(false);
        };
        let work = async {
            match job.kind {
                JobKind::Turn => self.turns.process(&job.conversation_id).await,
                JobKind::RunDecision => self.turns.deliver_run_decisions(&job.conversation_id).await,
            }
        };
        let outcome = tokio::select! {
            outcome = work => outcome,
            () = self.keep_leased(job.id) => unreachable!("the heartbeat never ends"),
        };
        if let Err(error) = &outcome {
            tracing::error!(%error, conversation = %job.conversation_id, kind = ?job.kind, "job failed");
            // An inbox decision that failed stays recorded; its job comes again with the run.
            if job.kind == JobKind::Turn {
                self.store.fail_conversation(&job.conversation_id, ErrorCode::Internal).await?;
            }
        }
        self.store.delete_job(job.id).await?;
        Ok(true)
    }

    /// Runs the runtime has queued again (a reaped segment, a retryable provider failure) belong
    /// to a conversation that is still `processing`: give it a job so the run is carried on.
    async fn dispatch_due_runs(&self) -> Result<(), TurnError> {
        let runtime = &self.turns.runtime;
        runtime.reap_stale(db::now()).await?;
        // A question whose tool stopped waiting (an MCP server's time limit, a server that went
        // away, a restart) is withdrawn through the conversation, so the run goes on with it told.
        for (run_id, reason) in runtime.expired_questions().await? {
            if let Some(conversation) = self.store.conversation_of_run(run_id).await? {
                if self.store.record_withdrawal(&conversation.id, run_id, &reason).await? {
                    tracing::info!(conversation = %conversation.id, %reason, "withdrawing a question its tool stopped waiting for");
                    self.turns.events.changed(&conversation.id);
                }
            }
        }
        for run_id in runtime.due_queued_runs(16).await? {
            if let Some(conversation) = self.store.conversation_of_run(run_id).await? {
                if conversation.status == ConversationStatus::Processing {
                    self.store.ensure_job(&conversation.id).await?;
                }
            } else if let Some(decision) = self.store.run_decision(run_id).await? {
                // A run decided in the inbox whose segment died: its delivery carries it on.
                if decision.refused.is_none() {
                    self.store.ensure_run_decision_job(&decision.conversation_id).await?;
                }
            }
        }
        self.turns.expire_waiting(self.waiting_expiry).await?;
        Ok(())
    }
}
