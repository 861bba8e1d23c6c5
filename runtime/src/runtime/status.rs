//! Where runs stand, for the one who may see them: a run with its pause, the waiting ones, counts
//! and events.

use uuid::Uuid;

use super::access::may_act;
use super::pauses::decode_pause;
use super::Runtime;
use crate::actor::Actor;
use crate::refusal::RuntimeError;
use crate::run::{PauseView, RunEvent, RunStatus, RunView};
use crate::store::RunRecord;

impl Runtime {
    /// The run without its transcript, plus the pause a chat has to render while it waits.
    pub async fn status(&self, actor: &Actor, run_id: Uuid) -> Result<Option<RunView>, RuntimeError> {
        let Some(record) = self.store.get_view(run_id).await? else { return Ok(None) };
        if !may_act(actor, &record) {
            return Ok(None);
        }
        Ok(Some(self.view(record)))
    }

    /// [`Runtime::status`] of a run another store read beside its own rows in the same statement
    /// ([`crate::pg_run_json`]): one round trip for both.
    pub fn status_from_json(&self, actor: &Actor, json: &str) -> Result<Option<RunView>, RuntimeError> {
        let record = crate::store::record_from_json(json)?;
        Ok(may_act(actor, &record).then(|| self.view(record)))
    }

    /// Only where the run stands: `status` without the pause, whose stored state would be decoded
    /// and digested for nothing.
    pub async fn run_status(&self, actor: &Actor, run_id: Uuid) -> Result<Option<RunStatus>, RuntimeError> {
        let Some(record) = self.store.get(run_id).await? else { return Ok(None) };
        Ok(may_act(actor, &record).then_some(record.status))
    }

    /// The actor's own runs that wait for an approval or an answer (an inbox), longest waiting
    /// first, each with its pause.
    pub async fn waiting_runs(&self, actor: &Actor, limit: u32) -> Result<Vec<RunView>, RuntimeError> {
        let records = self.store.waiting_of(actor.user_id, limit).await?;
        Ok(records.into_iter().map(|record| self.view(record)).collect())
    }

    /// Other owners' runs that wait for an approval (not process runs, which only their initiator
    /// decides), for a reviewer to look through; the caller decides whom each may concern.
    pub async fn approvals_of_others(&self, actor: &Actor, limit: u32) -> Result<Vec<RunView>, RuntimeError> {
        let records = self.store.approvals_not_of(actor.user_id, limit).await?;
        Ok(records.into_iter().map(|record| self.view(record)).collect())
    }

    /// Runs that have waited for a decision or an answer since before `cutoff` (Unix seconds),
    /// with their owners: candidates for expiry, which the caller cancels with
    /// [`Runtime::cancel_if_waiting`].
    pub async fn waiting_since_before(&self, cutoff: i64, limit: u32) -> Result<Vec<(Uuid, Actor)>, RuntimeError> {
        let runs = self.store.waiting_since_before(cutoff, limit).await?;
        Ok(runs.into_iter().map(|(id, owner)| (id, Actor::user(owner))).collect())
    }

    /// Runs waiting since before `cutoff`, the most recent first, with their owners and since
    /// when (Unix seconds) they wait: candidates for a reminder.
    pub async fn waiting_since_newest(&self, cutoff: i64, limit: u32) -> Result<Vec<(Uuid, i64, i64)>, RuntimeError> {
        Ok(self.store.waiting_since_newest(cutoff, limit).await?)
    }

    /// Whether any of these runs held content from outside (an attachment, a result of an outside
    /// tool). A caller that knows a conversation's runs asks it before the next turn, so what one
    /// run read still counts in the next: the answer may carry it on.
    pub async fn any_held_outside_content(&self, runs: &[Uuid]) -> Result<bool, RuntimeError> {
        Ok(self.store.any_outside_content(runs).await?)
    }

    /// How many runs are in each status, every status named (with 0 when none is in it).
    pub async fn run_counts(&self) -> Result<Vec<(RunStatus, i64)>, RuntimeError> {
        let counted = self.store.count_by_status().await?;
        Ok(RunStatus::ALL
            .into_iter()
            .map(|status| (status, counted.iter().find(|(s, _)| *s == status).map_or(0, |(_, n)| *n)))
            .collect())
    }

    fn view(&self, record: RunRecord) -> RunView {
        let pause = record.status.is_waiting().then(|| match decode_pause(&record) {
            Some(state) if state.status() == record.status => {
                self.pause_view(&state, record.process, record.outside_content)
            }
            _ => PauseView::Unreadable,
        });
        RunView {
            run_id: record.id,
            status: record.status,
            owner_user_id: record.owner_user_id,
            configuration: record.configuration,
            process: record.process,
            rounds: record.rounds,
            truncated: record.truncated,
            requeue_count: record.requeue_count,
            termination_reason: record.termination_reason,
            answer: record.answer,
            pause,
            created_at: record.created_at,
            started_at: record.started_at,
            finished_at: record.finished_at,
            updated_at: record.updated_at,
        }
    }

    /// Events after `after_sequence` (use -1 for all), ascending. Empty for unknown or foreign runs.
    pub async fn events(
        &self,
        actor: &Actor,
        run_id: Uuid,
        after_sequence: i64,
    ) -> Result<Vec<RunEvent>, RuntimeError> {
        match self.store.get(run_id).await? {
            Some(record) if may_act(actor, &record) => Ok(self.store.events(run_id, after_sequence).await?),
            _ => Ok(Vec::new()),
        }
    }
}
