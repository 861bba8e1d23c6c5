//! Reconcile: an answer or decision recorded but taken by no worker is handed back to the reader
//! on their next read, so nobody waits on a lost dispatch.

use app::error::AppError;
use runtime::Actor;

use super::ChatService;
use crate::conversation::{Conversation, ConversationStatus, ErrorCode};
use crate::failures::{internal, runtime_failure};

impl ChatService {
    /// A recorded answer or decision that sat past the grace period may have lost its job.
    fn may_need_reconcile(&self, row: &Conversation) -> bool {
        row.status == ConversationStatus::Processing && self.past_grace(row.recorded.is_some(), row.updated_at)
    }

    /// Whether an answer or decision is recorded (`recorded`) and the row, last changed at
    /// `updated_at`, sat past the grace period: with the status `processing`, what
    /// [`Self::may_need_reconcile`] asks, apart so the poll can ask it of its narrow read.
    pub(super) fn past_grace(&self, recorded: bool, updated_at: i64) -> bool {
        let age = db::now().saturating_sub(updated_at);
        let grace = i64::try_from(self.reconcile_grace.as_secs()).unwrap_or(i64::MAX);
        recorded && age >= grace
    }

    /// Hands a recorded answer or decision back when no worker took it: the conversation has been
    /// `processing` for longer than the grace period, no job exists for it, and the run still
    /// waits. Runs on every read of the conversation, so the reader never waits on a lost dispatch.
    pub async fn reconcile(&self, row: &Conversation) -> Result<bool, AppError> {
        if !self.may_need_reconcile(row) {
            return Ok(false);
        }
        if self.store.has_job(&row.id).await.map_err(internal)? {
            return Ok(false);
        }
        let (Some(run_id), Some(recorded)) = (row.run_id, &row.recorded) else { return Ok(false) };
        let status = self.runtime.run_status(&Actor::user(row.user_id), run_id).await.map_err(runtime_failure)?;
        if status != Some(recorded.waiting_run_status()) {
            return Ok(false);
        }
        tracing::warn!(conversation = %row.id, "no worker took the recorded answer or decision; handing it back");
        let pause = self.pause_of_run(row, run_id).await.ok().flatten();
        let waiting = crate::turn::waiting_entry(run_id, pause.as_ref(), Some(ErrorCode::NotDelivered));
        self.store
            .hand_back(&row.id, recorded.waiting_status(), ErrorCode::NotDelivered, Some(&waiting))
            .await
            .map_err(internal)
    }
}
