//! Cancelling a run, whatever it is doing or only while it waits.

use serde_json::json;
use uuid::Uuid;

use super::access::may_act;
use super::pauses::decode_pause;
use super::Runtime;
use crate::actor::Actor;
use crate::refusal::RuntimeError;
use crate::run::{EventKind, GuardedCancelResult, RunStatus};
use crate::store::RunRecord;

impl Runtime {
    /// Cancels a run that has not ended. True only for the caller whose cancel won; false for an
    /// unknown, foreign or ended run alike. A running segment stops at its next step boundary.
    pub async fn cancel(&self, actor: &Actor, run_id: Uuid) -> Result<bool, RuntimeError> {
        let Some(record) = self.store.get(run_id).await? else { return Ok(false) };
        if !may_act(actor, &record) {
            return Ok(false);
        }
        let cancelled = self.store.cancel(run_id).await?;
        if cancelled {
            self.cancels.signal(run_id);
            self.event(run_id, EventKind::Status, record.rounds, json!({ "status": "cancelled", "by": actor.user_id }))
                .await;
            self.abandon_question(&record).await;
        }
        Ok(cancelled)
    }

    /// Cancels only a run that still waits. Otherwise reports the status read back, so a caller can
    /// tell "being carried on" (queued/running/waiting) from "had ended" (terminal). A database
    /// failure is an error, never "no status": a caller must not take an unreadable run for an
    /// ended one.
    pub async fn cancel_if_waiting(&self, actor: &Actor, run_id: Uuid) -> Result<GuardedCancelResult, RuntimeError> {
        let record = match self.store.get(run_id).await? {
            Some(record) if may_act(actor, &record) => record,
            _ => return Ok(GuardedCancelResult { cancelled: false, status: None }),
        };
        if self.store.cancel_if_waiting(run_id).await? {
            self.event(run_id, EventKind::Status, record.rounds, json!({ "status": "cancelled", "by": actor.user_id }))
                .await;
            self.abandon_question(&record).await;
            return Ok(GuardedCancelResult { cancelled: true, status: Some(RunStatus::Cancelled) });
        }
        let status = self.store.status(run_id).await?;
        Ok(GuardedCancelResult { cancelled: false, status })
    }

    /// A run cancelled while it waited on a question its tool asked while running: the tool lets go
    /// of what the question held (an MCP server is told the question was cancelled).
    async fn abandon_question(&self, record: &RunRecord) {
        if record.status != RunStatus::WaitingForInput {
            return;
        }
        let Some(input) = decode_pause(record).and_then(|state| state.input) else { return };
        let (Some(asked), Some(tool)) = (input.asked, self.tools.get(&input.tool_name)) else { return };
        tool.tool.abandon(asked).await;
    }
}
