//! The background worker: takes queued jobs and carries their conversations on (see `turn`). One
//! loop per process claims the jobs and runs up to `jobs` of them side by side, each in a task of
//! its own: a turn mostly waits on its model, so one turn at a time would make every user of the
//! process wait for the slowest reply. The web handlers only record work and wake the loop.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::{JoinHandle, JoinSet};

use crate::audit::{Action, Entry, Surface};
use crate::conversation::{ConversationStatus, ErrorCode};
use crate::events::ConversationEvents;
use crate::store::{Job, JobKind, Store};
use crate::turn::{TurnError, Turns};

/// The worker also looks on its own this often, so a lost wake-up delays a job, never strands it,
/// and runs the runtime queued again (after a provider hiccup) are picked up.
const IDLE_POLL: Duration = Duration::from_secs(1);
/// How often the worker looks for stale jobs and for runs the runtime queued again. Once per job
/// would put three extra queries in front of every answer under load; a lease or a retry backoff
/// is measured in seconds anyway.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// A worker counts as alive this many seconds (or its lease, if longer) after its last heartbeat.
const ALIVE_AT_LEAST: i64 = 5;

#[derive(Clone, Default)]
pub struct WorkerHandle {
    notify: Arc<Notify>,
}

impl WorkerHandle {
    pub fn wake(&self) {
        self.notify.notify_one();
    }

    /// Wakes the worker whenever a job is queued, in any process. On PostgreSQL a web process
    /// records work and the database announces the job (`tourguide_jobs`); this is how a worker
    /// in another process hears of it at once instead of at its next idle look. Only a queued job
    /// wakes it: a change that queues nothing (the worker's own settle, say) would cost it a
    /// `claim_job` for nothing.
    pub fn wake_on_queued_jobs(&self, events: &ConversationEvents) {
        let Some(queued) = events.queued_jobs() else { return };
        let worker = self.clone();
        let mut shutdown = events.shutdown();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = queued.notified() => worker.wake(),
                    _ = shutdown.changed() => return,
                }
            }
        });
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
    /// One lock per conversation with a job in flight here. Jobs of one conversation still run
    /// one after another in this process, as with a single loop: what the worker keeps in memory
    /// for a conversation (its draft) is dropped when a job for it ends, which must not be while
    /// the next turn's job (after a Stop, say) already streams into it.
    conversations: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// A run that waited this long for a decision or an answer is cancelled.
    waiting_expiry: Duration,
    /// This process's name among the workers: its heartbeat, and the jobs only it may take (the
    /// answers to questions whose open calls it holds in memory).
    instance: String,
    /// Told which workers are alive after each heartbeat, so a question a dead one held is
    /// withdrawn at once.
    mcp: Option<mcp::McpHub>,
}

impl Worker {
    pub fn new(turns: Turns, handle: WorkerHandle, lease: Duration) -> Self {
        Worker {
            store: turns.store.clone(),
            turns,
            handle,
            lease,
            last_sweep: Mutex::new(None),
            conversations: Mutex::default(),
            waiting_expiry: crate::config::DEFAULT_WAITING_EXPIRY,
            instance: uuid::Uuid::new_v4().to_string(),
            mcp: None,
        }
    }

    /// The process's MCP servers: the worker goes by the name their questions give it.
    pub fn with_mcp(mut self, hub: Option<mcp::McpHub>) -> Self {
        if let Some(hub) = &hub {
            self.instance = hub.instance().to_string();
        }
        self.mcp = hub;
        self
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

    /// Claims jobs while a slot is free, each carried out in a task of its own. On shutdown the
    /// jobs in flight are abandoned, not awaited: their leases keep them "running" and the next
    /// start queues them again. A job that panics stops the worker (and `/health` says so), as the
    /// single loop did before: a bug is reported, not retried in a loop.
    pub fn spawn(self, jobs: NonZeroUsize, mut shutdown: watch::Receiver<bool>) -> JoinHandle<()> {
        let worker = Arc::new(self);
        let slots = Arc::new(Semaphore::new(jobs.get()));
        tokio::spawn(db::in_background(async move {
            let mut running = JoinSet::new();
            loop {
                if *shutdown.borrow() {
                    break;
                }
                let slot = tokio::select! {
                    // Finished jobs first, so none piles up unjoined: a panic in one ends the
                    // worker; a job's result is otherwise its own.
                    biased;
                    Some(ended) = running.join_next(), if !running.is_empty() => {
                        if let Err(error) = ended {
                            if error.is_panic() {
                                std::panic::resume_unwind(error.into_panic());
                            }
                        }
                        continue;
                    }
                    slot = slots.clone().acquire_owned() => Some(slot.expect("the semaphore is never closed")),
                    () = tokio::time::sleep(SWEEP_EVERY) => None,
                    _ = shutdown.wait_for(|stopped| *stopped) => break,
                };
                let Some(slot) = slot else {
                    // Every slot busy with long turns: the sweep still comes round.
                    if let Err(error) = worker.sweep_if_due().await {
                        tracing::error!(%error, "worker sweep failed");
                    }
                    continue;
                };
                let step = tokio::select! {
                    step = worker.next_job() => step,
                    _ = shutdown.wait_for(|stopped| *stopped) => break,
                };
                match step {
                    Ok(Some(job)) => {
                        let worker = worker.clone();
                        // Requests someone waits for go first to the SQLite connections.
                        running.spawn(db::in_background(async move { worker.carry(job, slot).await }));
                        continue;
                    }
                    Ok(None) => {}
                    Err(error) => tracing::error!(%error, "worker step failed"),
                }
                drop(slot);
                tokio::select! {
                    _ = worker.handle.notify.notified() => {}
                    _ = tokio::time::sleep(IDLE_POLL) => {}
                    _ = shutdown.changed() => {}
                }
            }
        }))
    }

    /// The sweep when it is due, then the next queued job, claimed for this worker.
    async fn next_job(&self) -> Result<Option<Job>, TurnError> {
        self.sweep_if_due().await?;
        Ok(self.store.claim_job(self.lease, &self.instance).await?)
    }

    async fn sweep_if_due(&self) -> Result<(), TurnError> {
        if self.sweep_due() {
            // First, so a slow sweep does not make this worker look dead. Beats a second apart
            // against a window of at least five, so a busy machine is not taken for a dead worker.
            let window = i64::try_from(self.lease.as_secs()).unwrap_or(i64::MAX).max(ALIVE_AT_LEAST);
            let alive = self.store.worker_beats(&self.instance, db::now().saturating_add(window)).await?;
            if let Some(hub) = &self.mcp {
                hub.workers_alive(alive);
            }
            self.store.requeue_stale_jobs().await?;
            self.dispatch_due_runs().await?;
        }
        Ok(())
    }

    /// Carries one claimed job out under its lease, then deletes it. The slot is free again when
    /// this returns.
    async fn carry(&self, job: Job, _slot: OwnedSemaphorePermit) {
        let conversation = self.conversation_lock(&job.conversation_id);
        let work = async {
            let _turn = conversation.lock().await;
            match job.kind {
                JobKind::Turn => {
                    // Taken from a worker that held it and stopped: what it held is gone with it.
                    let gone = job.holder.as_ref().filter(|holder| **holder != self.instance);
                    // The queue knew before this worker's last heartbeat did.
                    if let (Some(gone), Some(hub)) = (gone, &self.mcp) {
                        hub.worker_stopped(gone);
                    }
                    let holder_gone = gone.is_some();
                    self.turns.process_after(&job.conversation_id, holder_gone).await
                }
                JobKind::RunDecision => self.turns.deliver_run_decisions(&job.conversation_id).await,
            }
        };
        let outcome = tokio::select! {
            outcome = work => outcome,
            () = self.keep_leased(job.id) => unreachable!("the heartbeat never ends"),
        };
        self.release_conversation(&job.conversation_id, conversation);
        if let Err(error) = &outcome {
            tracing::error!(%error, conversation = %job.conversation_id, kind = ?job.kind, "job failed");
            // An inbox decision that failed stays recorded; its job comes again with the run.
            if job.kind == JobKind::Turn {
                let code = ErrorCode::Internal;
                let failed = crate::turn::failed_entry(None, code);
                if let Err(error) = self.store.fail_conversation(&job.conversation_id, code, &failed).await {
                    // The job stays claimed, so the turn is tried again once its lease runs out.
                    tracing::error!(%error, conversation = %job.conversation_id, "could not mark the turn failed");
                    return;
                }
            }
        }
        if let Err(error) = self.store.delete_job(job.id).await {
            // The job stays claimed; when its lease runs out the sweep queues it again.
            tracing::error!(%error, job = job.id, "could not delete a finished job");
        }
    }

    fn conversation_lock(&self, conversation_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.conversations.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        locks.entry(conversation_id.to_string()).or_default().clone()
    }

    /// Drops the conversation's lock from the map once no other job of it holds or awaits it.
    fn release_conversation(&self, conversation_id: &str, lock: Arc<tokio::sync::Mutex<()>>) {
        let mut locks = self.conversations.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Ours and the map's: nobody else cloned it, and nobody can while the map is locked.
        if Arc::strong_count(&lock) == 2 {
            locks.remove(conversation_id);
        }
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
                let actor = crate::turn::owner(&conversation);
                let pause = runtime.status(&actor, run_id).await.ok().flatten().and_then(|view| view.pause);
                let withdrawn = Entry::new(Action::Withdrawn, Surface::Worker, None, Some(run_id))
                    .with_pause(pause.as_ref())
                    .with_reason(reason.as_str());
                // The worker holding the question's open call carries the withdrawal on, if alive.
                let holder = match &pause {
                    Some(runtime::PauseView::Input(input)) => input.held_by.clone(),
                    _ => None,
                };
                if self
                    .store
                    .record_withdrawal(&conversation.id, run_id, &reason, &withdrawn, holder.as_deref())
                    .await?
                {
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
