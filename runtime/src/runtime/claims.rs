//! Claiming a waiting run for a decision or an answer, and handing it back when that is refused
//! after the claim.

use uuid::Uuid;

use super::pauses::decode_state;
use super::Runtime;
use crate::refusal::Refusal;
use crate::run::{FailureReason, RunStatus};
use crate::store::{RunRecord, StoreError};
use crate::tool_loop::SuspendedState;

impl Runtime {
    /// The run to decide on, and whether its configuration is active, in one read.
    pub(super) async fn waiting_record(&self, run_id: Uuid, expected: RunStatus) -> Result<(RunRecord, bool), Refusal> {
        match self.store.get_with_configuration(run_id).await.map_err(Refusal::Unavailable)? {
            Some((record, active)) if record.status == expected && record.suspended_state.is_some() => {
                Ok((record, active))
            }
            _ => Err(Refusal::NotWaiting { expected }),
        }
    }

    /// Claims a waiting run for a decision. Verified against the state the claim returned: only
    /// that one is the turn we execute. A state that cannot be read settles the run FAILED: nobody
    /// else can own it now, and leaving it RUNNING without an owner would strand it until the reaper.
    pub(super) async fn claim_waiting(
        &self,
        run_id: Uuid,
        token: &str,
        expected: RunStatus,
    ) -> Result<(RunRecord, SuspendedState), Refusal> {
        let record = match self.store.claim_waiting(run_id, expected, token, self.lease_until()).await {
            Ok(Some(record)) => record,
            Ok(None) => return Err(Refusal::AlreadyResuming),
            Err(error @ StoreError::Corrupt(_)) => {
                self.fail_owned(run_id, token, FailureReason::StateUnreadable).await;
                return Err(Refusal::Unavailable(error));
            }
            Err(error) => return Err(Refusal::Unavailable(error)),
        };
        match decode_state(&record) {
            Some(state) => Ok((record, state)),
            None => {
                self.fail_owned(run_id, token, FailureReason::StateUnreadable).await;
                Err(Refusal::CorruptState)
            }
        }
    }

    /// Hands a claimed run back to the waiting status it had; a release that fails settles FAILED.
    pub(super) async fn release(&self, record: &RunRecord, token: &str, to: RunStatus, refusal: Refusal) -> Refusal {
        self.release_with(record, token, to, None, refusal).await
    }

    /// [`Runtime::release`], storing a renewed suspended state (fresh previews, so a new digest)
    /// in the same write when there is one.
    pub(super) async fn release_with(
        &self,
        record: &RunRecord,
        token: &str,
        to: RunStatus,
        renewed: Option<&SuspendedState>,
        refusal: Refusal,
    ) -> Refusal {
        let encoded = match renewed.map(serde_json::to_string).transpose() {
            Ok(encoded) => encoded,
            Err(error) => {
                // The state as it was still stands: the run waits on the card as first shown.
                tracing::error!(run = %record.id, %error, "renewed state not encodable");
                None
            }
        };
        match self.store.release(record.id, token, to, encoded.as_deref()).await {
            Ok(true) => {}
            // A cancel won meanwhile: the run is no longer ours to release or fail.
            Ok(false) => tracing::info!(run = %record.id, "release found the run taken over"),
            Err(error) => {
                tracing::error!(run = %record.id, %error, "release failed; settling the run failed");
                self.fail_owned(record.id, token, FailureReason::StateUnreadable).await;
            }
        }
        refusal
    }
}
