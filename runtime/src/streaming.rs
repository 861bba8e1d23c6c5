//! The text of a run's model turns while it arrives, for whoever shows it (the chat lets a reply
//! grow in place). The runtime persists nothing of it: a finished turn is recorded whole, as
//! before; the observer only sees the pieces on the way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use uuid::Uuid;

use crate::provider::TextSink;

/// How often a segment waiting on the model looks whether its run was cancelled (Stop) by another
/// process, so a long reply stops within this time instead of when the model finishes.
pub(crate) const CANCEL_WATCH: Duration = Duration::from_millis(200);

/// Called on the worker's task for every piece: implementations must not block.
pub trait RunTextObserver: Send + Sync {
    /// A model turn of `run_id` begins; text of an earlier turn of the run is no longer current.
    fn begin(&self, run_id: Uuid, round: u32);
    /// The next piece of the current turn's text.
    fn text(&self, run_id: Uuid, delta: &str);
}

/// The default: nobody watches.
pub(crate) struct Unobserved;

impl RunTextObserver for Unobserved {
    fn begin(&self, _: Uuid, _: u32) {}
    fn text(&self, _: Uuid, _: &str) {}
}

/// A provider's sink for one turn of one run.
pub(crate) struct TurnSink<'a> {
    pub run_id: Uuid,
    pub observer: &'a dyn RunTextObserver,
}

impl TextSink for TurnSink<'_> {
    fn text(&self, delta: &str) {
        self.observer.text(self.run_id, delta);
    }
}

/// One wake-up per run a segment of this process is streaming, for cancels made in this process.
#[derive(Default)]
pub(crate) struct CancelSignals {
    runs: Mutex<HashMap<Uuid, Arc<Notify>>>,
}

impl CancelSignals {
    /// The signal `run_id`'s segment waits on while the model writes; dropped with the guard.
    pub(crate) fn watch(&self, run_id: Uuid) -> CancelWatch<'_> {
        let notify = self.lock().entry(run_id).or_default().clone();
        CancelWatch { signals: self, run_id, notify }
    }

    pub(crate) fn signal(&self, run_id: Uuid) {
        if let Some(notify) = self.lock().get(&run_id) {
            notify.notify_one();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<Notify>>> {
        self.runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

pub(crate) struct CancelWatch<'a> {
    signals: &'a CancelSignals,
    run_id: Uuid,
    pub notify: Arc<Notify>,
}

impl Drop for CancelWatch<'_> {
    fn drop(&mut self) {
        self.signals.lock().remove(&self.run_id);
    }
}
