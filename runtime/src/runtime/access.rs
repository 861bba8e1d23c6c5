//! Who may act on a run: see it, decide on it, and run the calls a decision releases.

use super::Runtime;
use crate::actor::Actor;
use crate::refusal::Refusal;
use crate::store::RunRecord;
use crate::tool_loop::SuspendedState;

/// The cheap checks every decision passes before anything is claimed.
pub(super) fn authorise_decision(actor: &Actor, record: &RunRecord, configuration_active: bool) -> Result<(), Refusal> {
    if !may_act(actor, record) {
        return Err(Refusal::AccessDenied);
    }
    if record.process && actor.user_id != record.owner_user_id {
        return Err(Refusal::InitiatorOnly);
    }
    if !configuration_active {
        return Err(Refusal::ConfigurationInactive);
    }
    Ok(())
}

pub(super) fn may_act(actor: &Actor, record: &RunRecord) -> bool {
    actor.admin || actor.user_id == record.owner_user_id
}

impl Runtime {
    /// An approver releases writes, so they must be able to run every pending write themselves.
    /// A tool that is gone cannot be vouched for.
    pub(super) fn approver_may_run_writes(&self, actor: &Actor, state: &SuspendedState) -> bool {
        state.pending_calls.iter().all(|call| match self.tools.get(&call.name) {
            Some(tool) if !tool.spec.effect.is_write() => true,
            Some(tool) => tool.tool.permits(actor),
            None => false,
        })
    }

    /// A submitter feeds the whole turn: they must be able to run every pending call and the tool
    /// that asked.
    pub(super) fn submitter_may_run_turn(&self, actor: &Actor, state: &SuspendedState) -> bool {
        let input_tool = state.input.as_ref().map(|input| input.tool_name.as_str());
        state
            .pending_calls
            .iter()
            .map(|call| call.name.as_str())
            .chain(input_tool)
            .all(|name| self.tools.get(name).is_some_and(|tool| tool.tool.permits(actor)))
    }
}
