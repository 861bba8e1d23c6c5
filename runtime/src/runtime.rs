//! The runtime's public API: start runs, decide approvals, answer questions, cancel, observe.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use db::{now, Db};
use serde_json::json;
use uuid::Uuid;

use crate::actor::Actor;
use crate::digest::digests_match;
use crate::message::ChatMessage;
use crate::provider::ModelProvider;
use crate::refusal::{Refusal, RuntimeError};
use crate::run::{
    clamp_rounds, ApprovalDecision, ApprovalPause, EventKind, FailureReason, GuardedCancelResult, InputPause,
    InputSubmission, PauseView, PendingCallView, RunEvent, RunOutcome, RunRequest, RunResult, RunStatus, RunView,
};
use crate::store::{NewEvent, NewRun, RunRecord, Settle, Store, StoreError};
use crate::streaming::{CancelSignals, RunTextObserver, Unobserved};
use crate::tool::{InputReply, ToolEffect, ToolRegistry};
use crate::tool_loop::{write_events, Finish, Segment, Stop, SuspendedState, Verdict};
use question::schema::{validate_submission, SubmissionError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeSettings {
    /// How long an executing segment owns its run without a heartbeat. A segment renews it every
    /// third of it while it runs, so this is how long a dead worker's run waits to be taken over.
    pub lease_seconds: i64,
    /// How often a run may go back to the queue (reaped or a retryable provider failure).
    pub max_requeues: u32,
    /// Backoff before a requeued run may be claimed: `base * 2^n`, capped.
    pub retry_backoff_seconds: i64,
    pub max_retry_backoff_seconds: i64,
}

impl Default for RuntimeSettings {
    fn default() -> Self {
        RuntimeSettings {
            lease_seconds: 30,
            max_requeues: 3,
            retry_backoff_seconds: 30,
            max_retry_backoff_seconds: 600,
        }
    }
}

impl RuntimeSettings {
    fn backoff(&self, requeue_count: u32) -> i64 {
        let factor = 1i64.checked_shl(requeue_count.min(30)).unwrap_or(i64::MAX);
        self.retry_backoff_seconds.saturating_mul(factor).min(self.max_retry_backoff_seconds).max(0)
    }
}

/// What one pass of the reaper did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReapReport {
    pub requeued: Vec<Uuid>,
    pub failed: Vec<Uuid>,
}

/// Whether a chat can show the question a tool asks while it runs; `Err` says why not.
pub type QuestionCheck = Arc<dyn Fn(&serde_json::Value) -> Result<(), String> + Send + Sync>;

pub struct Runtime {
    store: Store,
    tools: Arc<ToolRegistry>,
    provider: Arc<dyn ModelProvider>,
    settings: RuntimeSettings,
    question_check: QuestionCheck,
    text: Arc<dyn RunTextObserver>,
    /// Segments of this process waiting on the model, woken at once by a cancel made in this
    /// process (another process's cancel is seen by the segment's watch of the run's status).
    cancels: CancelSignals,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("tools", &self.tools.names().collect::<Vec<_>>())
            .field("provider", &self.provider.label())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The stored transcript of a run; a struct so it can gain fields without a migration.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
struct Checkpoint(Vec<ChatMessage>);

/// The cheap checks every decision passes before anything is claimed.
fn authorise_decision(actor: &Actor, record: &RunRecord, configuration_active: bool) -> Result<(), Refusal> {
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

fn segment_token(kind: &str) -> String {
    format!("{kind}:{}", Uuid::new_v4())
}

fn may_act(actor: &Actor, record: &RunRecord) -> bool {
    actor.admin || actor.user_id == record.owner_user_id
}

fn decode_state(record: &RunRecord) -> Option<SuspendedState> {
    let raw = record.suspended_state.as_deref()?;
    match serde_json::from_str::<SuspendedState>(raw) {
        Ok(state) if !state.pending_calls.is_empty() => Some(state),
        Ok(_) => None,
        Err(error) => {
            tracing::warn!(run = %record.id, %error, "suspended state unreadable");
            None
        }
    }
}

impl Runtime {
    /// The database behind `db` must hold the runtime's tables ([`crate::migrations`]).
    pub fn new(db: Db, tools: Arc<ToolRegistry>, provider: Arc<dyn ModelProvider>, settings: RuntimeSettings) -> Self {
        let question_check: QuestionCheck = Arc::new(|_: &serde_json::Value| Ok(()));
        Runtime {
            store: Store::new(db),
            tools,
            provider,
            settings,
            question_check,
            text: Arc::new(Unobserved),
            cancels: CancelSignals::default(),
        }
    }

    /// A question a tool asks while it runs that this check refuses is declined at once, and the
    /// model told why (the runtime's own structural check applies either way).
    pub fn with_question_check(mut self, check: QuestionCheck) -> Self {
        self.question_check = check;
        self
    }

    /// Hands the text of every model turn to `observer` while it arrives.
    pub fn with_text_observer(mut self, observer: Arc<dyn RunTextObserver>) -> Self {
        self.text = observer;
        self
    }

    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    pub fn provider(&self) -> &Arc<dyn ModelProvider> {
        &self.provider
    }

    /// Stores a QUEUED run; a worker then calls [`Runtime::run_queued`].
    pub async fn enqueue(&self, request: RunRequest) -> Result<Uuid, RuntimeError> {
        if !self.store.configuration_active(&request.configuration).await? {
            return Err(RuntimeError::ConfigurationInactive(request.configuration));
        }
        let id = Uuid::new_v4();
        let checkpoint = encode(&Checkpoint(request.messages.clone()))?;
        let allowed_tools = request.allowed_tools.as_ref().map(encode).transpose()?;
        self.store
            .insert_queued(NewRun {
                id,
                owner_user_id: request.owner.user_id,
                owner_admin: request.owner.admin,
                configuration: &request.configuration,
                process: request.process,
                allowed_tools,
                max_rounds: clamp_rounds(request.max_rounds),
                checkpoint,
                outside_content: request.outside_content,
            })
            .await?;
        self.event(id, EventKind::Status, 0, json!({ "status": "queued" })).await;
        Ok(id)
    }

    /// Enqueue and run in this task; for callers without a separate worker.
    pub async fn run(&self, request: RunRequest) -> Result<RunResult, RuntimeError> {
        let id = self.enqueue(request).await?;
        self.run_queued(id).await?.ok_or(RuntimeError::ClaimLost)
    }

    /// Worker entry: claims a QUEUED run and drives it until it settles, suspends or stops.
    /// `None` when the run is not queued (or not due yet) or another worker claimed it.
    pub async fn run_queued(&self, run_id: Uuid) -> Result<Option<RunResult>, RuntimeError> {
        let token = segment_token("worker");
        let Some(record) = self.store.claim_queued(run_id, &token, self.lease_until()).await? else {
            return Ok(None);
        };
        let running =
            NewEvent { kind: EventKind::Status, round: record.rounds, payload: json!({ "status": "running" }) };
        let messages = record
            .checkpoint
            .as_deref()
            .and_then(|raw| serde_json::from_str::<Checkpoint>(raw).ok())
            .map(|checkpoint| checkpoint.0);
        let Some(messages) = messages else {
            tracing::warn!(run = %run_id, "queued run has no readable transcript");
            let mut events = vec![running];
            let outcome = self.settle_failed(&record, &token, FailureReason::StateUnreadable, &mut events).await;
            write_events(&self.store, run_id, &events).await;
            return Ok(Some(RunResult { run_id, outcome, messages: Vec::new() }));
        };
        let mut segment = self.segment(&record, token.clone(), messages);
        segment.note(running);
        let end = self.leased(run_id, &token, segment.run()).await;
        Ok(Some(self.conclude(&record, segment, end).await))
    }

    /// Decides an approval pause. The decision applies to the whole pending turn.
    pub async fn approve(&self, actor: &Actor, run_id: Uuid, decision: ApprovalDecision) -> Result<RunResult, Refusal> {
        let expected = RunStatus::WaitingForApproval;
        let (record, active) = self.waiting_record(run_id, expected).await?;
        authorise_decision(actor, &record, active)?;
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
        if decision.approved() && !self.approver_may_run_writes(actor, &state) {
            tracing::info!(run = %run_id, user = actor.user_id, "approver may not run a pending write");
            return Err(self.release(&fresh, &token, expected, Refusal::ApproverNotPermitted).await);
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
        let Some(input) = decode_state(&record).and_then(|state| state.input) else {
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
        if !self.submitter_may_run_turn(actor, &state) {
            tracing::info!(run = %run_id, user = actor.user_id, "submitter may not run a pending call");
            return Err(self.release(&fresh, &token, expected, Refusal::SubmitterNotPermitted).await);
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
        let Some(input) = decode_state(record).and_then(|state| state.input) else { return };
        let (Some(asked), Some(tool)) = (input.asked, self.tools.get(&input.tool_name)) else { return };
        tool.tool.abandon(asked).await;
    }

    /// Runs waiting on a question their tool asked while it ran and can no longer take an answer
    /// (the tool says why: it stopped waiting, or the tool is gone). Such a question is withdrawn
    /// with [`Runtime::withdraw_question`].
    pub async fn expired_questions(&self) -> Result<Vec<(Uuid, String)>, RuntimeError> {
        let mut expired = Vec::new();
        for record in self.store.waiting_for_input().await? {
            let Some(input) = decode_state(&record).and_then(|state| state.input) else { continue };
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
        let Some(input) = decode_state(&record).and_then(|state| state.input) else { return Ok(None) };
        Ok(input.asked.and_then(|asked| self.tools.question_expired(&input.tool_name, &asked)))
    }

    /// Withdraws the question a tool asked while it ran: the call carries on with
    /// [`InputReply::Cancel`] (the tool tells the model what became of it) and the run goes on.
    /// Refused like an answer when the run no longer waits on such a question.
    pub async fn withdraw_question(&self, run_id: Uuid, reason: &str) -> Result<RunResult, Refusal> {
        let expected = RunStatus::WaitingForInput;
        let (record, _) = self.waiting_record(run_id, expected).await?;
        if decode_state(&record).and_then(|state| state.input).and_then(|input| input.asked).is_none() {
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

    /// The run without its transcript, plus the pause a chat has to render while it waits.
    pub async fn status(&self, actor: &Actor, run_id: Uuid) -> Result<Option<RunView>, RuntimeError> {
        let Some(record) = self.store.get(run_id).await? else { return Ok(None) };
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
        let pause = record.status.is_waiting().then(|| match decode_state(&record) {
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

    /// Runs whose segment holds a lease expired at `now` (normally the current time): requeued while
    /// retries remain, else failed. A run interrupted inside a non-idempotent write is failed at
    /// once: retrying could repeat it.
    pub async fn reap_stale(&self, now: i64) -> Result<ReapReport, RuntimeError> {
        self.reap(now, true).await
    }

    /// For start-up in a single-process deployment: nothing of this process runs yet, so every
    /// RUNNING run was interrupted by a process that is gone (a crash, a kill -9). Each is queued
    /// again at once, without backoff (its provider did not fail), or failed under the same rules
    /// as the reaper's.
    pub async fn recover_interrupted(&self) -> Result<ReapReport, RuntimeError> {
        self.reap(i64::MAX, false).await
    }

    async fn reap(&self, now: i64, backoff: bool) -> Result<ReapReport, RuntimeError> {
        let mut report = ReapReport::default();
        for stale in self.store.stale_running(now).await? {
            let fenced = stale.pending_effect == Some(ToolEffect::NonIdempotentWrite);
            let (done, requeued, reason) = if fenced {
                (
                    self.store.dead_letter_stale(stale.id, now, FailureReason::NotRetryable.as_str()).await?,
                    false,
                    "not_retryable",
                )
            } else if stale.requeue_count >= self.settings.max_requeues {
                let reason = FailureReason::RetriesExhausted.as_str();
                (self.store.dead_letter_stale(stale.id, now, reason).await?, false, reason)
            } else {
                // A run whose lease ran out has waited a whole lease already: the first takeover is
                // due at once, so another worker carries a dead worker's run on. Runs that keep
                // losing their segment back off. The backoff runs on the wall clock: `now` only
                // says which leases count as expired.
                let delay = match stale.requeue_count {
                    0 => 0,
                    _ if !backoff => 0,
                    count => self.settings.backoff(count - 1),
                };
                let available_at = db::now().saturating_add(delay);
                (self.store.requeue_stale(stale.id, now, available_at).await?, true, "lease_expired")
            };
            if !done {
                continue;
            }
            let status = if requeued { "queued" } else { "failed" };
            self.event(stale.id, EventKind::Status, 0, json!({ "status": status, "reason": reason })).await;
            if requeued {
                report.requeued.push(stale.id);
            } else {
                report.failed.push(stale.id);
            }
        }
        Ok(report)
    }

    /// Queued runs whose backoff has passed, oldest first: what a worker should pick up.
    pub async fn due_queued_runs(&self, limit: u32) -> Result<Vec<Uuid>, RuntimeError> {
        Ok(self.store.due_queued(now(), limit).await?)
    }

    /// A deactivated configuration starts no runs and refuses every decision and answer; its
    /// waiting runs keep waiting until it is active again.
    pub async fn set_configuration_active(&self, name: &str, active: bool) -> Result<(), RuntimeError> {
        Ok(self.store.set_configuration_active(name, active).await?)
    }

    pub async fn configuration_active(&self, name: &str) -> Result<bool, RuntimeError> {
        Ok(self.store.configuration_active(name).await?)
    }

    fn lease_until(&self) -> i64 {
        now().saturating_add(self.settings.lease_seconds)
    }

    /// Drives a segment while renewing its lease every third of it, so a lease can be short: a
    /// long model call is not a dead worker. The renewals end with the segment; a segment that
    /// lost its run meanwhile notices at its next step, as it would without them.
    async fn leased<F: std::future::Future>(&self, run_id: Uuid, token: &str, segment: F) -> F::Output {
        let seconds = u64::try_from(self.settings.lease_seconds.max(1)).unwrap_or(u64::MAX);
        let every = std::time::Duration::from_millis(seconds.saturating_mul(1000) / 3);
        let renewals = async {
            loop {
                tokio::time::sleep(every).await;
                if let Err(error) = self.store.heartbeat(run_id, token, self.lease_until()).await {
                    tracing::warn!(run = %run_id, %error, "could not renew the lease");
                }
            }
        };
        tokio::select! {
            end = segment => end,
            () = renewals => unreachable!("the renewals never end"),
        }
    }

    async fn event(&self, run_id: Uuid, kind: EventKind, round: u32, payload: serde_json::Value) {
        write_events(&self.store, run_id, &[NewEvent { kind, round, payload }]).await;
    }

    /// The run to decide on, and whether its configuration is active, in one read.
    async fn waiting_record(&self, run_id: Uuid, expected: RunStatus) -> Result<(RunRecord, bool), Refusal> {
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
    async fn claim_waiting(
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
    async fn release(&self, record: &RunRecord, token: &str, to: RunStatus, refusal: Refusal) -> Refusal {
        self.release_with(record, token, to, None, refusal).await
    }

    /// [`Runtime::release`], storing a renewed suspended state (fresh previews, so a new digest)
    /// in the same write when there is one.
    async fn release_with(
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

    async fn fail_owned(&self, run_id: Uuid, token: &str, reason: FailureReason) -> bool {
        let settle = Settle {
            status: RunStatus::Failed,
            reason: Some(reason.as_str()),
            answer: None,
            rounds: None,
            truncated: false,
        };
        match self.store.finish_owned(run_id, token, settle).await {
            Ok(done) => done,
            Err(error) => {
                tracing::error!(run = %run_id, %error, "could not settle the run failed");
                false
            }
        }
    }

    /// An approver releases writes, so they must be able to run every pending write themselves.
    /// A tool that is gone cannot be vouched for.
    fn approver_may_run_writes(&self, actor: &Actor, state: &SuspendedState) -> bool {
        state.pending_calls.iter().all(|call| match self.tools.get(&call.name) {
            Some(tool) if !tool.spec.effect.is_write() => true,
            Some(tool) => tool.tool.permits(actor),
            None => false,
        })
    }

    /// A submitter feeds the whole turn: they must be able to run every pending call and the tool
    /// that asked.
    fn submitter_may_run_turn(&self, actor: &Actor, state: &SuspendedState) -> bool {
        let input_tool = state.input.as_ref().map(|input| input.tool_name.as_str());
        state
            .pending_calls
            .iter()
            .map(|call| call.name.as_str())
            .chain(input_tool)
            .all(|name| self.tools.get(name).is_some_and(|tool| tool.tool.permits(actor)))
    }

    fn segment(&self, record: &RunRecord, token: String, transcript: Vec<ChatMessage>) -> Segment<'_> {
        let allowed_tools = record.allowed_tools.as_deref().map(|raw| {
            // An unreadable allow-list offers nothing rather than everything.
            serde_json::from_str::<Vec<String>>(raw).unwrap_or_default().into_iter().collect::<HashSet<_>>()
        });
        Segment {
            store: &self.store,
            registry: &self.tools,
            provider: self.provider.as_ref(),
            run_id: record.id,
            token,
            lease_seconds: self.settings.lease_seconds,
            owner: Actor { user_id: record.owner_user_id, admin: record.owner_admin },
            allowed_tools,
            max_rounds: clamp_rounds(Some(record.max_rounds)),
            process: record.process,
            outside: record.outside_content,
            rounds: record.rounds,
            transcript,
            question_check: self.question_check.as_ref(),
            text: self.text.as_ref(),
            cancels: &self.cancels,
            approved_bases: HashMap::new(),
            // Made right after the claim it carries on from.
            verified: AtomicBool::new(true),
            events: Mutex::new(Vec::new()),
        }
    }

    /// `outside`: the run holds outside content, so an open-world call on the card says that it
    /// may send the conversation's text out.
    fn pause_view(&self, state: &SuspendedState, process: bool, outside: bool) -> PauseView {
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
                            tool_registered: tool.is_some(),
                            origin: tool.as_ref().and_then(|tool| tool.spec.origin.clone()),
                            preview: state.preview_of(&call.id).cloned(),
                            sends_out: tool.as_ref().is_some_and(|tool| outside && tool.spec.open_world),
                        }
                    })
                    .collect(),
            }),
        }
    }

    /// Settles the run FAILED; its event joins `events`, which the caller writes.
    async fn settle_failed(
        &self,
        record: &RunRecord,
        token: &str,
        reason: FailureReason,
        events: &mut Vec<NewEvent>,
    ) -> RunOutcome {
        if self.fail_owned(record.id, token, reason).await {
            events.push(NewEvent {
                kind: EventKind::Status,
                round: record.rounds,
                payload: json!({ "status": "failed", "reason": reason.as_str() }),
            });
            RunOutcome::Failed { reason }
        } else {
            self.lost_outcome(record.id).await
        }
    }

    async fn lost_outcome(&self, run_id: Uuid) -> RunOutcome {
        match self.store.status(run_id).await {
            Ok(Some(RunStatus::Cancelled)) => RunOutcome::Cancelled,
            _ => RunOutcome::LeaseLost,
        }
    }

    /// Turns how a segment ended into the run's next status, each write guarded on the segment
    /// still owning the run; a lost guard reports the cancel or the loss instead.
    async fn conclude(&self, record: &RunRecord, segment: Segment<'_>, end: Result<Finish, Stop>) -> RunResult {
        let run_id = record.id;
        let rounds = segment.rounds;
        let outside = segment.outside;
        let token = segment.token.clone();
        // What the segment has not written yet goes with the settle's own event, in one statement
        // after the settle.
        let mut events = segment.take_events();
        let messages = segment.transcript;
        let outcome = match end {
            Ok(Finish::Completed { answer, truncated }) => {
                let settle = Settle {
                    status: RunStatus::Completed,
                    reason: Some(if truncated { "max_iterations" } else { "completed" }),
                    answer: Some(&answer),
                    rounds: Some(rounds),
                    truncated,
                };
                match self.store.finish_owned(run_id, &token, settle).await {
                    Ok(true) => {
                        events.push(NewEvent {
                            kind: EventKind::Status,
                            round: rounds,
                            payload: json!({ "status": "completed", "truncated": truncated }),
                        });
                        RunOutcome::Completed { answer, truncated }
                    }
                    Ok(false) => self.lost_outcome(run_id).await,
                    Err(error) => {
                        tracing::error!(run = %run_id, %error, "could not settle a completed run");
                        RunOutcome::Failed { reason: FailureReason::StoreFailed }
                    }
                }
            }
            Ok(Finish::Suspend(state)) => self.suspend(record, &token, *state, rounds, outside, &mut events).await,
            Err(Stop::Cancelled) => RunOutcome::Cancelled,
            Err(Stop::LeaseLost) => RunOutcome::LeaseLost,
            Err(Stop::Misconfigured(problem)) => {
                tracing::error!(run = %run_id, %problem, "tool misconfigured");
                self.settle_failed(record, &token, FailureReason::ToolMisconfigured, &mut events).await
            }
            Err(Stop::Store(error)) => {
                tracing::error!(run = %run_id, %error, "store failed during the run");
                self.settle_failed(record, &token, FailureReason::StoreFailed, &mut events).await
            }
            Err(Stop::Provider(error)) => self.recover_provider_failure(record, &token, error, &mut events).await,
        };
        write_events(&self.store, run_id, &events).await;
        RunResult { run_id, outcome, messages }
    }

    async fn suspend(
        &self,
        record: &RunRecord,
        token: &str,
        state: SuspendedState,
        rounds: u32,
        outside: bool,
        events: &mut Vec<NewEvent>,
    ) -> RunOutcome {
        let status = state.status();
        let encoded = match serde_json::to_string(&state) {
            Ok(encoded) => encoded,
            Err(error) => {
                tracing::error!(run = %record.id, %error, "suspended state not encodable");
                return self.settle_failed(record, token, FailureReason::SuspendFailed, events).await;
            }
        };
        match self.store.suspend(record.id, token, status, &encoded, rounds, outside).await {
            Ok(true) => {
                events.push(NewEvent {
                    kind: EventKind::Status,
                    round: rounds,
                    payload: json!({ "status": status.as_str() }),
                });
                match self.pause_view(&state, record.process, outside || record.outside_content) {
                    PauseView::Approval(pause) => RunOutcome::AwaitingApproval { pause },
                    PauseView::Input(pause) => RunOutcome::AwaitingInput { pause },
                    PauseView::Unreadable => RunOutcome::Failed { reason: FailureReason::SuspendFailed },
                }
            }
            Ok(false) => self.lost_outcome(record.id).await,
            Err(error) => {
                // Fail closed: a pause nobody can see must not look like a run still working.
                tracing::error!(run = %record.id, %error, "suspend failed");
                self.settle_failed(record, token, FailureReason::SuspendFailed, events).await
            }
        }
    }

    /// Retryable provider failures go back to the queue while the budget lasts; a run whose fence
    /// shows an interrupted non-idempotent write is never retried.
    async fn recover_provider_failure(
        &self,
        record: &RunRecord,
        token: &str,
        error: crate::provider::ProviderError,
        events: &mut Vec<NewEvent>,
    ) -> RunOutcome {
        tracing::warn!(run = %record.id, %error, "provider failed");
        let current = match self.store.get(record.id).await {
            Ok(Some(current)) => current,
            _ => return self.settle_failed(record, token, FailureReason::ProviderFailed, events).await,
        };
        if current.status != RunStatus::Running || current.claimed_by.as_deref() != Some(token) {
            return self.lost_outcome(record.id).await;
        }
        // The reader is told what went wrong the last time, also once the retries are used up.
        let reason = FailureReason::of_provider(error.kind());
        if !error.is_retryable() {
            return self.settle_failed(record, token, reason, events).await;
        }
        if current.pending_effect == Some(ToolEffect::NonIdempotentWrite) {
            return self.settle_failed(record, token, FailureReason::NotRetryable, events).await;
        }
        if current.requeue_count >= self.settings.max_requeues {
            return self.settle_failed(record, token, reason, events).await;
        }
        let available_at = now().saturating_add(self.settings.backoff(current.requeue_count));
        match self.store.requeue_owned(record.id, token, available_at).await {
            Ok(true) => {
                events.push(NewEvent {
                    kind: EventKind::Status,
                    round: current.rounds,
                    payload: json!({ "status": "queued", "reason": "provider_failed" }),
                });
                RunOutcome::Requeued
            }
            Ok(false) => self.lost_outcome(record.id).await,
            Err(_) => self.settle_failed(record, token, FailureReason::ProviderFailed, events).await,
        }
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

/// Why `arguments` do not fit the tool's parameter schema, if they do not.
fn schema_problem(schema: &serde_json::Value, arguments: &serde_json::Value) -> Option<String> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(validator) => validator,
        Err(error) => return Some(format!("the tool's schema is unusable: {error}")),
    };
    let problems: Vec<String> = validator.iter_errors(arguments).map(|error| error.to_string()).collect();
    (!problems.is_empty()).then(|| problems.join("; "))
}

fn encode<T: serde::Serialize>(value: &T) -> Result<String, RuntimeError> {
    serde_json::to_string(value).map_err(|e| RuntimeError::Store(StoreError::Corrupt(format!("not encodable: {e}"))))
}
