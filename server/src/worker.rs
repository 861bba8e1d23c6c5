//! The background worker: takes queued jobs and runs them through the model provider. One loop per
//! process; the web handlers only record work and wake it.

use std::sync::Arc;
use std::time::Duration;

use runtime::{ChatMessage, CompletionRequest, ModelProvider};
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use crate::store::{JobRow, Store, StoreError};

/// Long enough for a slow model turn; a job past its lease is assumed dead and queued again.
const LEASE: Duration = Duration::from_secs(300);
/// The worker also looks on its own this often, so a lost wake-up delays a job, never strands it.
const IDLE_POLL: Duration = Duration::from_secs(2);

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
    provider: Arc<dyn ModelProvider>,
    handle: WorkerHandle,
}

impl Worker {
    pub fn new(store: Store, provider: Arc<dyn ModelProvider>, handle: WorkerHandle) -> Self {
        Worker { store, provider, handle }
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
    pub async fn run_once(&self) -> Result<bool, StoreError> {
        self.store.requeue_stale_jobs().await?;
        let Some(job) = self.store.claim_job(LEASE).await? else {
            return Ok(false);
        };
        self.run_job(job).await?;
        Ok(true)
    }

    async fn run_job(&self, job: JobRow) -> Result<(), StoreError> {
        let transcript = self.store.messages(&job.conversation_id).await?;
        let messages = transcript
            .into_iter()
            .map(|message| match message.role.as_str() {
                "user" => ChatMessage::user(message.content),
                _ => ChatMessage::assistant(message.content),
            })
            .collect();
        let request = CompletionRequest { messages, tools: Vec::new() };
        match self.provider.complete(request).await {
            Ok(completion) => {
                self.store.finish_turn(job.id, &job.conversation_id, &completion.content).await?;
            }
            Err(error) => {
                tracing::warn!(%error, conversation = %job.conversation_id, "model call failed");
                self.store.fail_turn(job.id, &job.conversation_id, "provider_failed").await?;
            }
        }
        Ok(())
    }
}
