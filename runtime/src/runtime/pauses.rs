//! A waiting run's stored state, and the pause a chat renders from it.

use serde::de::{DeserializeOwned, IgnoredAny};

use super::Runtime;
use crate::run::{ApprovalPause, InputPause, PauseView, PendingCallView};
use crate::store::RunRecord;
use crate::tool_loop::SuspendedState;

pub(super) fn decode_state(record: &RunRecord) -> Option<SuspendedState> {
    decode(record)
}

/// [`decode_state`] without the transcript, for what only reads the pause.
pub(super) fn decode_pause(record: &RunRecord) -> Option<SuspendedState<IgnoredAny>> {
    decode(record)
}

fn decode<M: DeserializeOwned>(record: &RunRecord) -> Option<SuspendedState<M>> {
    let raw = record.suspended_state.as_deref()?;
    match serde_json::from_str::<SuspendedState<M>>(raw) {
        Ok(state) if !state.pending_calls.is_empty() => Some(state),
        Ok(_) => None,
        Err(error) => {
            tracing::warn!(run = %record.id, %error, "suspended state unreadable");
            None
        }
    }
}

impl Runtime {
    /// `outside`: the run holds outside content, so an open-world call on the card says that it
    /// may send the conversation's text out.
    pub(super) fn pause_view<M>(&self, state: &SuspendedState<M>, process: bool, outside: bool) -> PauseView {
        let digest = state.digest();
        match &state.input {
            Some(input) => PauseView::Input(InputPause {
                digest,
                tool_name: input.tool_name.clone(),
                call_id: input.call_id.clone(),
                schema: input.schema.clone(),
                asked_while_running: input.asked.is_some(),
                asked_by: self.tools.get(&input.tool_name).and_then(|tool| tool.spec.origin.clone()),
                held_by: input.asked.as_ref().and_then(|asked| self.tools.question_held_by(&input.tool_name, asked)),
            }),
            None => PauseView::Approval(ApprovalPause {
                digest,
                process,
                pending_calls: state
                    .pending_calls
                    .iter()
                    .map(|call| {
                        let tool = self.tools.get(&call.name);
                        PendingCallView {
                            call_id: call.id.clone(),
                            name: call.name.clone(),
                            arguments: call.arguments.clone(),
                            declares_write: tool.as_ref().is_none_or(|tool| tool.spec.effect.is_write()),
                            // Not listed yet (a process that has just started) is not gone.
                            tool_registered: tool.is_some() || self.tools.still_listing(&call.name),
                            origin: tool.as_ref().and_then(|tool| tool.spec.origin.clone()),
                            preview: state.preview_of(&call.id).cloned(),
                            sends_out: tool.as_ref().is_some_and(|tool| outside && tool.spec.open_world),
                        }
                    })
                    .collect(),
            }),
        }
    }
}
