//! Deciding an approval pause: the whole pending turn, checked against the card the approver saw.

use std::collections::HashMap;

use serde_json::json;
use uuid::Uuid;

use super::access::authorise_decision;
use super::pauses::decode_state;
use super::segments::segment_token;
use super::Runtime;
use crate::actor::Actor;
use crate::digest::digests_match;
use crate::refusal::Refusal;
use crate::run::{ApprovalDecision, EventKind, RunResult, RunStatus};
use crate::store::NewEvent;
use crate::tool_loop::{SuspendedState, Verdict};

impl Runtime {
    /// Decides an approval pause. The decision applies to the whole pending turn.
    pub async fn approve(&self, actor: &Actor, run_id: Uuid, decision: ApprovalDecision) -> Result<RunResult, Refusal> {
        let expected = RunStatus::WaitingForApproval;
        let (record, active) = self.waiting_record(run_id, expected).await?;
        authorise_decision(actor, &record, active)?;
        // As for an answer: a tool not listed yet by a process that has just started is not gone.
        self.tools.first_listing().await;
        match decode_state(&record) {
            Some(state) if state.input.is_none() => {}
            _ => return Err(Refusal::CorruptState),
        }

        let token = segment_token("resume");
        let (fresh, state) = self.claim_waiting(run_id, &token, expected).await?;
        if state.input.is_some() {
            return Err(self.release(&fresh, &token, expected, Refusal::CorruptState).await);
        }
        if !digests_match(&state.digest(), decision.digest()) {
            return Err(self.release(&fresh, &token, expected, Refusal::StaleTurn).await);
        }
        if decision.approved() {
            if let Err(refusal) = self.approver_may_run_writes(actor, &state) {
                tracing::info!(run = %run_id, user = actor.user_id, refusal = refusal.code(), "an approval cannot run");
                return Err(self.release(&fresh, &token, expected, refusal).await);
            }
        }
        // A write is applied only as its preview showed it: made again now, any difference (or a
        // preview that failed, then or now) hands the card back with the fresh previews.
        if decision.approved() && !state.previews.is_empty() {
            let previews = self.segment(&fresh, token.clone(), Vec::new()).previews_for(&state.pending_calls).await;
            let failed = previews.iter().any(|stored| stored.preview.failed());
            let shown_failed = state.previews.iter().any(|stored| stored.preview.failed());
            if failed || shown_failed || previews != state.previews {
                let refusal = if failed { Refusal::PreviewFailed } else { Refusal::PreviewStale };
                tracing::info!(run = %run_id, refusal = refusal.code(), "approval refused on its previews");
                let renewed = SuspendedState { previews, ..state };
                return Err(self.release_with(&fresh, &token, expected, Some(&renewed), refusal).await);
            }
        }
        // Edited calls: the card showed the model's arguments, whose previews were checked above;
        // the edit is checked and its preview made now, and a preview the tool refuses hands the
        // card back as it was. The edited calls then run in place of the model's.
        let mut state = state;
        let mut edited = HashMap::new();
        if decision.approved() && !decision.edits().is_empty() {
            let mut changed = Vec::new();
            for (call_id, arguments) in decision.edits() {
                let problem = match state.pending_calls.iter().find(|call| &call.id == call_id) {
                    None => Some(format!("the turn has no call {call_id:?}")),
                    Some(call) => match self.tools.get(&call.name) {
                        None => Some(format!("tool {:?} is gone", call.name)),
                        Some(tool) => schema_problem(&tool.spec.parameters, arguments),
                    },
                };
                if let Some(problem) = problem {
                    return Err(self.release(&fresh, &token, expected, Refusal::EditInvalid(problem)).await);
                }
                let Some(call) = state.pending_calls.iter_mut().find(|call| &call.id == call_id) else { continue };
                if call.arguments != *arguments {
                    edited.insert(call.id.clone(), std::mem::replace(&mut call.arguments, arguments.clone()));
                    changed.push(call.clone());
                }
            }
            if !changed.is_empty() {
                let previews = self.segment(&fresh, token.clone(), Vec::new()).previews_for(&changed).await;
                if previews.iter().any(|stored| stored.preview.failed()) {
                    tracing::info!(run = %run_id, "an edited call's preview failed");
                    return Err(self.release(&fresh, &token, expected, Refusal::EditPreviewFailed).await);
                }
                state.previews.retain(|stored| !edited.contains_key(&stored.call_id));
                state.previews.extend(previews);
            }
        }
        let reason = decision.denial_reason().map(|r| r.as_str());
        let mut edited_ids: Vec<String> = edited.keys().cloned().collect();
        edited_ids.sort();
        let mut payload = json!({ "approved": decision.approved(), "decided_by": actor.user_id, "reason": reason });
        // Only that there were words or edits, never them: they are the user's content.
        if decision.message().is_some() {
            payload["said"] = json!(true);
        }
        if !edited_ids.is_empty() {
            payload["edited"] = json!(edited_ids);
        }
        let verdict = Verdict {
            approved: decision.approved(),
            decided_by: actor.user_id,
            reason: decision.denial_reason(),
            message: decision.message().map(str::to_string),
            edited,
        };
        let mut segment = self.segment(&fresh, token.clone(), Vec::new());
        segment.note(NewEvent { kind: EventKind::Approval, round: state.rounds, payload });
        let end = self.leased(run_id, &token, segment.resume_approval(state, verdict)).await;
        Ok(self.conclude(&fresh, segment, end).await)
    }
}

/// Why `arguments` do not fit the tool's parameter schema, if they do not.
fn schema_problem(schema: &serde_json::Value, arguments: &serde_json::Value) -> Option<String> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(validator) => validator,
        Err(error) => return Some(format!("the tool's schema is unusable: {error}")),
    };
    let problems: Vec<String> = validator.iter_errors(arguments).map(|error| error.to_string()).collect();
    (!problems.is_empty()).then(|| problems.join("; "))
}
