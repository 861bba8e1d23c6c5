//! The runtime's public API: start runs, decide approvals, answer questions, cancel, observe.

use std::sync::Arc;

use db::Db;

use crate::provider::ModelProvider;
use crate::refusal::RuntimeError;
use crate::store::Store;
use crate::streaming::{CancelSignals, RunTextObserver, Unobserved};
use crate::tool::ToolRegistry;

mod access;
mod approvals;
mod cancels;
mod claims;
mod input;
mod pauses;
mod reaping;
mod runs;
mod segments;
mod settle;
mod status;

pub use reaping::ReapReport;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeSettings {
    /// How long an executing segment owns its run without a heartbeat. A segment renews it every
    /// third of it while it runs, so this is how long a dead worker's run waits to be taken over.
    pub lease_seconds: i64,
    /// How often a run may go back to the queue (reaped or a retryable provider failure).
    pub max_requeues: u32,
    /// Backoff before a requeued run may be claimed: `base * 2^n`, capped.
    pub retry_backoff_seconds: i64,
    pub max_retry_backoff_seconds: i64,
}

impl Default for RuntimeSettings {
    fn default() -> Self {
        RuntimeSettings {
            lease_seconds: 30,
            max_requeues: 3,
            retry_backoff_seconds: 30,
            max_retry_backoff_seconds: 600,
        }
    }
}

impl RuntimeSettings {
    fn backoff(&self, requeue_count: u32) -> i64 {
        let factor = 1i64.checked_shl(requeue_count.min(30)).unwrap_or(i64::MAX);
        self.retry_backoff_seconds.saturating_mul(factor).min(self.max_retry_backoff_seconds).max(0)
    }
}

/// Whether a chat can show the question a tool asks while it runs; `Err` says why not.
pub type QuestionCheck = Arc<dyn Fn(&serde_json::Value) -> Result<(), String> + Send + Sync>;

pub struct Runtime {
    store: Store,
    tools: Arc<ToolRegistry>,
    provider: Arc<dyn ModelProvider>,
    settings: RuntimeSettings,
    question_check: QuestionCheck,
    text: Arc<dyn RunTextObserver>,
    /// Segments of this process waiting on the model, woken at once by a cancel made in this
    /// process (another process's cancel is seen by the segment's watch of the run's status).
    cancels: CancelSignals,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("tools", &self.tools.names().collect::<Vec<_>>())
            .field("provider", &self.provider.label())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// The database behind `db` must hold the runtime's tables ([`crate::migrations`]).
    pub fn new(db: Db, tools: Arc<ToolRegistry>, provider: Arc<dyn ModelProvider>, settings: RuntimeSettings) -> Self {
        let question_check: QuestionCheck = Arc::new(|_: &serde_json::Value| Ok(()));
        Runtime {
            store: Store::new(db),
            tools,
            provider,
            settings,
            question_check,
            text: Arc::new(Unobserved),
            cancels: CancelSignals::default(),
        }
    }

    /// A question a tool asks while it runs that this check refuses is declined at once, and the
    /// model told why (the runtime's own structural check applies either way).
    pub fn with_question_check(mut self, check: QuestionCheck) -> Self {
        self.question_check = check;
        self
    }

    /// Hands the text of every model turn to `observer` while it arrives.
    pub fn with_text_observer(mut self, observer: Arc<dyn RunTextObserver>) -> Self {
        self.text = observer;
        self
    }

    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    pub fn provider(&self) -> &Arc<dyn ModelProvider> {
        &self.provider
    }

    /// A deactivated configuration starts no runs and refuses every decision and answer; its
    /// waiting runs keep waiting until it is active again.
    pub async fn set_configuration_active(&self, name: &str, active: bool) -> Result<(), RuntimeError> {
        Ok(self.store.set_configuration_active(name, active).await?)
    }

    pub async fn configuration_active(&self, name: &str) -> Result<bool, RuntimeError> {
        Ok(self.store.configuration_active(name).await?)
    }
}
