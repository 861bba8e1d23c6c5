//! Answering an input pause, and the questions a tool asked while it ran that can no longer be
//! answered: found, and withdrawn so the run goes on.

use serde_json::json;
use uuid::Uuid;

use super::access::authorise_decision;
use super::pauses::decode_pause;
use super::segments::segment_token;
use super::Runtime;
use crate::actor::Actor;
use crate::digest::digests_match;
use crate::refusal::{Refusal, RuntimeError};
use crate::run::{EventKind, InputSubmission, RunResult, RunStatus};
use crate::store::NewEvent;
use crate::tool::InputReply;
use question::schema::{validate_submission, SubmissionError};

impl Runtime {
    /// Answers an input pause. Validated before the claim; bound to the question by the digest,
    /// which covers the schema, so a match after the claim proves the validation was against it.
    pub async fn submit_input(
        &self,
        actor: &Actor,
        run_id: Uuid,
        submission: InputSubmission,
    ) -> Result<RunResult, Refusal> {
        let expected = RunStatus::WaitingForInput;
        let (record, active) = self.waiting_record(run_id, expected).await?;
        authorise_decision(actor, &record, active)?;
        // A process that has just started may not have listed its MCP servers' tools yet: a tool
        // it lacks before then is not gone, and the answer must not be refused for it.
        self.tools.first_listing().await;
        let Some(input) = decode_pause(&record).and_then(|state| state.input) else {
            return Err(Refusal::CorruptState);
        };
        if let InputReply::Answer(values) = &submission.reply {
            match validate_submission(&input.schema, values) {
                Ok(()) => {}
                Err(SubmissionError::Invalid(invalid)) => return Err(Refusal::InvalidSubmission(invalid)),
                Err(SubmissionError::Schema(error)) => {
                    tracing::warn!(run = %run_id, %error, "stored input schema unusable");
                    return Err(Refusal::CorruptState);
                }
            }
        }

        let token = segment_token("resume");
        let (fresh, state) = self.claim_waiting(run_id, &token, expected).await?;
        if state.input.is_none() {
            return Err(self.release(&fresh, &token, expected, Refusal::CorruptState).await);
        }
        if !digests_match(&state.digest(), submission.digest.as_deref()) {
            return Err(self.release(&fresh, &token, expected, Refusal::StaleTurn).await);
        }
        if let Err(refusal) = self.submitter_may_run_turn(actor, &state) {
            tracing::info!(run = %run_id, user = actor.user_id, refusal = refusal.code(), "an answer's turn cannot run");
            return Err(self.release(&fresh, &token, expected, refusal).await);
        }
        // Never the values: they are the user's content.
        let mut payload = json!({ "submitted_by": actor.user_id });
        if let Some(kind) = unanswered(&submission.reply) {
            payload["reply"] = json!(kind);
        }
        let mut segment = self.segment(&fresh, token.clone(), Vec::new());
        segment.note(NewEvent { kind: EventKind::Input, round: state.rounds, payload });
        let end = self.leased(run_id, &token, segment.resume_input(state, submission.reply)).await;
        Ok(self.conclude(&fresh, segment, end).await)
    }

    /// Runs waiting on a question their tool asked while it ran and can no longer take an answer
    /// (the tool says why: it stopped waiting, or the tool is gone). Such a question is withdrawn
    /// with [`Runtime::withdraw_question`].
    pub async fn expired_questions(&self) -> Result<Vec<(Uuid, String)>, RuntimeError> {
        let mut expired = Vec::new();
        for record in self.store.waiting_for_input().await? {
            let Some(input) = decode_pause(&record).and_then(|state| state.input) else { continue };
            let Some(asked) = input.asked else { continue };
            if let Some(reason) = self.tools.question_expired(&input.tool_name, &asked) {
                expired.push((record.id, reason));
            }
        }
        Ok(expired)
    }

    /// Why the question run `run_id` waits on, asked by a tool while it ran, can no longer be
    /// answered ([`Runtime::expired_questions`] for one run); `None` while it can, or when the run
    /// waits on no such question.
    pub async fn question_expired(&self, run_id: Uuid) -> Result<Option<String>, RuntimeError> {
        let Some(record) = self.store.get(run_id).await? else { return Ok(None) };
        if record.status != RunStatus::WaitingForInput {
            return Ok(None);
        }
        let Some(input) = decode_pause(&record).and_then(|state| state.input) else { return Ok(None) };
        Ok(input.asked.and_then(|asked| self.tools.question_expired(&input.tool_name, &asked)))
    }

    /// Withdraws the question a tool asked while it ran: the call carries on with
    /// [`InputReply::Cancel`] (the tool tells the model what became of it) and the run goes on.
    /// Refused like an answer when the run no longer waits on such a question.
    pub async fn withdraw_question(&self, run_id: Uuid, reason: &str) -> Result<RunResult, Refusal> {
        let expected = RunStatus::WaitingForInput;
        let (record, _) = self.waiting_record(run_id, expected).await?;
        if decode_pause(&record).and_then(|state| state.input).and_then(|input| input.asked).is_none() {
            return Err(Refusal::NotWaiting { expected });
        }
        let token = segment_token("withdraw");
        let (fresh, state) = self.claim_waiting(run_id, &token, expected).await?;
        if state.input.as_ref().and_then(|input| input.asked.as_ref()).is_none() {
            return Err(self.release(&fresh, &token, expected, Refusal::NotWaiting { expected }).await);
        }
        let mut segment = self.segment(&fresh, token.clone(), Vec::new());
        segment.note(NewEvent { kind: EventKind::Input, round: state.rounds, payload: json!({ "withdrawn": reason }) });
        let end = self.leased(run_id, &token, segment.resume_input(state, InputReply::Cancel)).await;
        Ok(self.conclude(&fresh, segment, end).await)
    }
}

/// How a reply that gave no answer is named in the run's events.
fn unanswered(reply: &InputReply) -> Option<&'static str> {
    match reply {
        InputReply::Answer(_) => None,
        InputReply::Decline => Some("decline"),
        InputReply::Cancel => Some("cancel"),
    }
}
