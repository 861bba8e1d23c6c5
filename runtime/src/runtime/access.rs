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
    /// A tool that is gone cannot be vouched for: that is its own refusal, not a permission one.
    pub(super) fn approver_may_run_writes(&self, actor: &Actor, state: &SuspendedState) -> Result<(), Refusal> {
        self.all_registered(state.pending_calls.iter().map(|call| call.name.as_str()))?;
        let permitted = state.pending_calls.iter().all(|call| match self.tools.get(&call.name) {
            Some(tool) if !tool.spec.effect.is_write() => true,
            Some(tool) => tool.tool.permits(actor),
            None => false,
        });
        if permitted {
            Ok(())
        } else {
            Err(Refusal::ApproverNotPermitted)
        }
    }

    /// A submitter feeds the whole turn: they must be able to run every pending call and the tool
    /// that asked.
    pub(super) fn submitter_may_run_turn(&self, actor: &Actor, state: &SuspendedState) -> Result<(), Refusal> {
        let input_tool = state.input.as_ref().map(|input| input.tool_name.as_str());
        let names = || state.pending_calls.iter().map(|call| call.name.as_str()).chain(input_tool);
        self.all_registered(names())?;
        if names().all(|name| self.tools.get(name).is_some_and(|tool| tool.tool.permits(actor))) {
            Ok(())
        } else {
            Err(Refusal::SubmitterNotPermitted)
        }
    }

    /// Every named tool is registered now. Asked after [`crate::ToolRegistry::first_listing`], so
    /// one that is missing is gone (removed from the configuration, or its server is down), never
    /// merely not listed yet.
    fn all_registered<'a>(&self, mut names: impl Iterator<Item = &'a str>) -> Result<(), Refusal> {
        match names.find(|name| self.tools.get(name).is_none()) {
            Some(name) => Err(Refusal::ToolGone { name: name.to_string() }),
            None => Ok(()),
        }
    }
}
