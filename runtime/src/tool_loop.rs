//! One executing segment of a run: provider rounds, the approval and input scans, tool execution,
//! and the resumes after a decision or an answer.
//!
//! The segment owns its run through a claim token. Every step boundary renews the lease under that
//! token; when the renewal fails the run was cancelled or taken away, and the segment stops without
//! writing anything further.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::actor::Actor;
use crate::digest;
use crate::message::{ChatMessage, ToolCall};
use crate::preview::{CallPreview, StoredPreview};
use crate::provider::{Completion, CompletionRequest, ModelProvider, ProviderError, ToolDefinition};
use crate::results::{denial_text, rejected_text, Decider};
use crate::run::{DenialReason, EventKind, RunStatus};
use crate::store::{NewEvent, Store, StoreError};
use crate::streaming::{CancelSignals, RunTextObserver, TurnSink, CANCEL_WATCH};
use crate::tool::{InputReply, RegisteredTool, ToolContext, ToolError, ToolOutput, ToolRegistry};
use db::now;
use question::schema::{check_schema, overlay};

/// Shown when a tool's preview failed for a reason it did not word itself (which may hold
/// internals, so it is only logged).
pub(crate) const PREVIEW_FAILED: &str = "The tool could not make a preview.";

/// Tool results are bounded: a tool could otherwise flood the model's context.
const MAX_RESULT_BYTES: usize = 50_000;

/// What a waiting run stores: the transcript including the assistant turn that asked for tools,
/// and the calls of that turn that still need a result. Read as `SuspendedState<IgnoredAny>` by
/// what needs only the pause (a view, a cancel): the transcript, which grows with the
/// conversation, is then skipped over instead of built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SuspendedState<M = Vec<ChatMessage>> {
    pub messages: M,
    pub pending_calls: Vec<ToolCall>,
    /// Present exactly when the run waits for input; its presence is the pause kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<PendingInput>,
    #[serde(default)]
    pub rounds: u32,
    /// The pending calls were approved already (the question came while an approved turn ran):
    /// once it is answered they run without asking for approval again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approved: bool,
    /// What the pending writes would change, made when the run suspended on approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previews: Vec<StoredPreview>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PendingInput {
    pub tool_name: String,
    pub call_id: String,
    pub schema: Value,
    /// Set when the tool asked while it ran: what it needs to carry on, handed back with the reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<Value>,
}

impl<M> SuspendedState<M> {
    pub fn status(&self) -> RunStatus {
        if self.input.is_some() {
            RunStatus::WaitingForInput
        } else {
            RunStatus::WaitingForApproval
        }
    }

    pub fn digest(&self) -> String {
        match &self.input {
            Some(input) => digest::input_digest(
                &self.pending_calls,
                &input.tool_name,
                &input.call_id,
                &input.schema,
                input.asked.as_ref(),
            ),
            None if self.previews.is_empty() => digest::approval_digest(&self.pending_calls),
            None => {
                let previews = serde_json::to_value(&self.previews).unwrap_or(Value::Null);
                digest::approval_digest_with_previews(&self.pending_calls, &previews)
            }
        }
    }

    pub fn preview_of(&self, call_id: &str) -> Option<&CallPreview> {
        self.previews.iter().find(|stored| stored.call_id == call_id).map(|stored| &stored.preview)
    }
}

/// A segment stopped early. The runtime decides what becomes of the run.
#[derive(Debug)]
pub(crate) enum Stop {
    Cancelled,
    LeaseLost,
    Provider(ProviderError),
    /// A tool produced an input schema nobody can answer: a programming error, not a user's.
    Misconfigured(String),
    Store(StoreError),
}

impl From<StoreError> for Stop {
    fn from(error: StoreError) -> Self {
        Stop::Store(error)
    }
}

pub(crate) enum Finish {
    Completed { answer: String, truncated: bool },
    Suspend(Box<SuspendedState>),
}

/// How a decision on an approval pause is fed back.
pub(crate) struct Verdict {
    pub approved: bool,
    pub decided_by: i64,
    pub reason: Option<DenialReason>,
    /// What the person said to the model with a denial.
    pub message: Option<String>,
    /// The model's arguments of each call a person edited (by call id); the state's calls hold
    /// the edited ones.
    pub edited: HashMap<String, Value>,
}

pub(crate) struct Segment<'a> {
    pub store: &'a Store,
    pub registry: &'a ToolRegistry,
    pub provider: &'a dyn ModelProvider,
    pub run_id: Uuid,
    pub token: String,
    pub lease_seconds: i64,
    pub owner: Actor,
    pub allowed_tools: Option<HashSet<String>>,
    pub max_rounds: u32,
    pub process: bool,
    /// The run holds content from outside (from its request, or a result of a tool that brings
    /// it): open-world calls then wait for approval. Set once such a result enters the
    /// transcript, and stored with the transcript that holds it (checkpoint or suspend).
    pub outside: bool,
    /// Rounds over the run's whole life; each segment gets `max_rounds` of its own.
    pub rounds: u32,
    /// The transcript as far as this segment got, whatever way it ends.
    pub transcript: Vec<ChatMessage>,
    /// Whether the chat can show a question a tool asks while it runs; `Err` says why not.
    pub question_check: &'a (dyn Fn(&Value) -> Result<(), String> + Send + Sync),
    /// Sees each model turn's text while it arrives.
    pub text: &'a dyn RunTextObserver,
    pub cancels: &'a CancelSignals,
    /// The basis of each approved call's preview, by call id, for the call to check when it runs.
    pub approved_bases: HashMap<String, Value>,
    /// Whether the segment has known it still owns the run since it last waited on a model or a
    /// tool: set by the claim it starts from and by every guarded write or check that succeeds.
    /// A boundary then has nothing to learn, so it does not ask the database again.
    pub verified: AtomicBool,
    /// Events not written yet. They are written in one statement before the next model call or
    /// write, and with the settle's own event when the segment ends: a process that dies in
    /// between loses the events of that step, never a change of the run's state.
    pub events: Mutex<Vec<NewEvent>>,
}

/// How far one call got.
pub(crate) enum Invoked {
    Done(String),
    /// The tool asked the user while it ran.
    Asked {
        schema: Value,
        state: Value,
    },
}

/// How a call is run: from the start, or carried on after a question.
pub(crate) enum Run {
    Start(Value),
    Resume { arguments: Value, state: Value, reply: InputReply },
}

/// Events are an audit trail, not control flow: a failed write is logged and the run goes on.
pub(crate) async fn write_events(store: &Store, run_id: Uuid, events: &[NewEvent]) {
    if let Err(error) = store.append_events(run_id, events).await {
        tracing::warn!(run = %run_id, events = events.len(), %error, "run events not recorded");
    }
}

/// A tool that keeps asking questions the chat cannot show gets this many declines, then fails.
const MAX_DECLINED_QUESTIONS: usize = 3;

impl Segment<'_> {
    fn lease_until(&self) -> i64 {
        now().saturating_add(self.lease_seconds)
    }

    /// Whoever took the run away tells us why: a cancel leaves CANCELLED, anything else is a loss.
    async fn why_lost(&self) -> Stop {
        match self.store.status(self.run_id).await {
            Ok(Some(RunStatus::Cancelled)) => Stop::Cancelled,
            _ => Stop::LeaseLost,
        }
    }

    async fn owned(&self, still_owned: Result<bool, StoreError>) -> Result<(), Stop> {
        match still_owned? {
            true => {
                self.verified.store(true, Ordering::Relaxed);
                Ok(())
            }
            false => Err(self.why_lost().await),
        }
    }

    /// The cooperative cancellation point, before anything that takes time or acts: a model call
    /// or a tool call. The lease is renewed beside the segment, so this only reads: a write here
    /// took the one SQLite writer several times per turn. Right after a claim, a checkpoint or
    /// another boundary it does not read at all: a cancel since then is the same race as one a
    /// moment later, and the segment's guarded writes refuse either.
    async fn boundary(&self) -> Result<(), Stop> {
        if self.verified.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.owned(self.store.still_owned(self.run_id, &self.token).await).await
    }

    /// The segment waited on a model or a tool: anything may have happened to the run meanwhile.
    fn unverified(&self) {
        self.verified.store(false, Ordering::Relaxed);
    }

    async fn checkpoint(&self) -> Result<(), Stop> {
        let encoded = serde_json::to_string(&self.transcript)
            .map_err(|e| Stop::Store(StoreError::Corrupt(format!("transcript not encodable: {e}"))))?;
        let saved = self
            .store
            .checkpoint(self.run_id, &self.token, &encoded, self.rounds, self.outside, self.lease_until())
            .await;
        self.owned(saved).await
    }

    fn event(&self, kind: EventKind, payload: Value) {
        self.note(NewEvent { kind, round: self.rounds, payload });
    }

    /// An event of this segment, written with the next ones (see [`Segment::events`]).
    pub(crate) fn note(&self, event: NewEvent) {
        self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(event);
    }

    pub(crate) fn take_events(&self) -> Vec<NewEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    async fn write_events(&self) {
        write_events(self.store, self.run_id, &self.take_events()).await;
    }

    /// Registered, inside the run's allow-list, and runnable by the owner.
    fn offered(&self, name: &str) -> Option<RegisteredTool> {
        if let Some(allowed) = &self.allowed_tools {
            if !allowed.contains(name) {
                return None;
            }
        }
        let tool = self.registry.get(name)?;
        tool.tool.permits(&self.owner).then_some(tool)
    }

    fn definitions(&self) -> Vec<ToolDefinition> {
        self.registry
            .all()
            .into_iter()
            .filter(|tool| self.offered(&tool.spec.name).is_some())
            .map(|tool| tool.spec.definition())
            .collect()
    }

    async fn complete(&mut self, tools: Vec<ToolDefinition>) -> Result<Completion, Stop> {
        self.event(EventKind::Request, json!({ "tools": tools.len() }));
        self.write_events().await;
        let request = CompletionRequest { messages: self.transcript.clone(), tools };
        self.text.begin(self.run_id, self.rounds + 1);
        let sink = TurnSink { run_id: self.run_id, observer: self.text };
        // A Stop lands while the model still writes: the stream is dropped (the connection closes)
        // rather than read to its end.
        let completion = tokio::select! {
            completion = self.provider.stream(request, &sink) => completion,
            stop = self.cancelled() => return Err(stop),
        };
        self.unverified();
        let completion = completion.map_err(Stop::Provider)?;
        self.event(EventKind::Llm, json!({ "tool_calls": completion.tool_calls.len() }));
        Ok(completion)
    }

    /// Resolves once the run is no longer this segment's to carry on (cancelled, or taken over):
    /// at once for a cancel made in this process, within [`CANCEL_WATCH`] for one from another.
    async fn cancelled(&self) -> Stop {
        let watch = self.cancels.watch(self.run_id);
        loop {
            tokio::select! {
                () = tokio::time::sleep(CANCEL_WATCH) => {}
                () = watch.notify.notified() => {}
            }
            match self.store.status(self.run_id).await {
                Ok(Some(RunStatus::Running)) => continue,
                Ok(Some(RunStatus::Cancelled)) => return Stop::Cancelled,
                Ok(_) => return Stop::LeaseLost,
                // A read that failed says nothing about the run; the next boundary will.
                Err(error) => tracing::warn!(run = %self.run_id, %error, "could not look for a cancel"),
            }
        }
    }

    /// A fresh segment from the transcript (a new run, or a retry from its checkpoint).
    pub async fn run(&mut self) -> Result<Finish, Stop> {
        self.rounds_loop().await
    }

    async fn rounds_loop(&mut self) -> Result<Finish, Stop> {
        let definitions = self.definitions();
        if definitions.is_empty() {
            // No tools: one plain completion, and no empty `tools` array that providers reject.
            self.boundary().await?;
            let completion = self.complete(Vec::new()).await?;
            self.rounds += 1;
            return self.finish_with(completion.content, false);
        }
        for _ in 0..self.max_rounds {
            self.boundary().await?;
            let completion = self.complete(definitions.clone()).await?;
            self.rounds += 1;
            if completion.tool_calls.is_empty() {
                return self.finish_with(completion.content, false);
            }
            self.boundary().await?;
            let calls = unique_call_ids(completion.tool_calls, self.rounds);
            self.transcript.push(ChatMessage::assistant_with_tool_calls(completion.content, calls.clone()));
            if let Some(state) = self.handle_turn(calls).await? {
                return Ok(Finish::Suspend(Box::new(state)));
            }
            self.checkpoint().await?;
        }
        // The cap was reached with tool results the model has not seen: let it close without tools.
        self.boundary().await?;
        let closing = self.complete(Vec::new()).await?;
        self.finish_with(closing.content, true)
    }

    /// No boundary here: the settle that records the answer is guarded on the segment's claim.
    fn finish_with(&mut self, answer: String, truncated: bool) -> Result<Finish, Stop> {
        self.transcript.push(ChatMessage::assistant(answer.clone()));
        Ok(Finish::Completed { answer, truncated })
    }

    fn suspended(&self, pending_calls: Vec<ToolCall>, input: Option<PendingInput>) -> SuspendedState {
        SuspendedState {
            messages: self.transcript.clone(),
            pending_calls,
            input,
            rounds: self.rounds,
            approved: false,
            previews: Vec::new(),
        }
    }

    /// Waits on the question `call` asked while it ran; the calls after it in `rest` wait too.
    fn asked(&self, call: &ToolCall, rest: &[ToolCall], schema: Value, state: Value, approved: bool) -> SuspendedState {
        let input = PendingInput { tool_name: call.name.clone(), call_id: call.id.clone(), schema, asked: Some(state) };
        let pending = std::iter::once(call.clone()).chain(rest.iter().cloned()).collect();
        SuspendedState { approved, ..self.suspended(pending, Some(input)) }
    }

    /// Runs `calls` in order, each result into the transcript. A call that asks suspends the run
    /// on its question, with the calls after it still pending.
    async fn run_calls(&mut self, calls: &[ToolCall], approved: bool) -> Result<Option<SuspendedState>, Stop> {
        for (index, call) in calls.iter().enumerate() {
            match self.invoke(call, Run::Start(call.arguments.clone())).await? {
                Invoked::Done(result) => self.transcript.push(ChatMessage::tool_result(call.id.clone(), result)),
                Invoked::Asked { schema, state } => {
                    return Ok(Some(self.asked(call, &calls[index + 1..], schema, state, approved)));
                }
            }
        }
        Ok(None)
    }

    /// Approval scan over the whole turn first, then the input scan, else execute every call.
    async fn handle_turn(&mut self, calls: Vec<ToolCall>) -> Result<Option<SuspendedState>, Stop> {
        let approval_bound: Vec<usize> = calls
            .iter()
            .enumerate()
            .filter(|(_, call)| self.offered(&call.name).is_some_and(|tool| tool.spec.needs_approval_in(self.outside)))
            .map(|(index, _)| index)
            .collect();
        if !approval_bound.is_empty() {
            if self.process {
                return self.process_turn(calls, &approval_bound).await.map(Some);
            }
            // The whole turn waits, reads included: one verdict applies to all of it.
            let mut state = self.suspended(calls, None);
            state.previews = self.previews_for(&state.pending_calls).await;
            return Ok(Some(state));
        }
        for call in &calls {
            let Some(tool) = self.offered(&call.name) else { continue };
            if !tool.spec.asks_input() {
                continue;
            }
            // A call whose arguments cannot form a question is not paused; running it reports why.
            if let Ok(Some(schema)) = tool.tool.input_schema_for(&call.arguments) {
                check_schema(&schema).map_err(|e| Stop::Misconfigured(format!("tool {:?}: {}", call.name, e.0)))?;
                let input =
                    PendingInput { tool_name: call.name.clone(), call_id: call.id.clone(), schema, asked: None };
                return Ok(Some(self.suspended(calls, Some(input))));
            }
        }
        self.run_calls(&calls, false).await
    }

    /// A process run proposes one thing per turn: the first write (else the first approval-bound
    /// call) waits; reads run now; everything else is refused. The stored turn is reordered so the
    /// pending call comes last, after the results of the others, for providers that pair results
    /// with calls by position.
    async fn process_turn(&mut self, calls: Vec<ToolCall>, approval_bound: &[usize]) -> Result<SuspendedState, Stop> {
        let pending_index = approval_bound
            .iter()
            .copied()
            .find(|&index| self.offered(&calls[index].name).is_some_and(|tool| tool.spec.effect.is_write()))
            .unwrap_or(approval_bound[0]);
        let mut settled: Vec<(ToolCall, String)> = Vec::with_capacity(calls.len());
        for (index, call) in calls.iter().enumerate() {
            if index == pending_index {
                continue;
            }
            let result = if approval_bound.contains(&index) {
                format!(
                    "Error: tool \"{}\" was not executed: a process proposes one change per turn, and another \
                     proposal waits for approval.",
                    call.name
                )
            } else {
                match self.offered(&call.name) {
                    Some(tool) if tool.spec.asks_input() => not_provided(&call.name),
                    Some(_) => match self.invoke(call, Run::Start(call.arguments.clone())).await? {
                        Invoked::Done(result) => result,
                        // A read that asks while it runs: the question comes first, and the
                        // proposal after it goes back to the model once the question is answered.
                        Invoked::Asked { schema, state } => {
                            for (call, result) in settled {
                                self.transcript.push(ChatMessage::tool_result(call.id, result));
                            }
                            let rest: Vec<ToolCall> = calls
                                .iter()
                                .enumerate()
                                .filter(|(later, _)| *later > index || *later == pending_index)
                                .map(|(_, call)| call.clone())
                                .collect();
                            return Ok(self.asked(call, &rest, schema, state, false));
                        }
                    },
                    None => self.refusal_for_unoffered(&call.name),
                }
            };
            settled.push((call.clone(), result));
        }
        let pending = calls[pending_index].clone();
        let mut reordered: Vec<ToolCall> = settled.iter().map(|(call, _)| call.clone()).collect();
        reordered.push(pending.clone());
        if let Some(turn) = self.transcript.last_mut() {
            turn.tool_calls = reordered;
        }
        for (call, result) in settled {
            self.transcript.push(ChatMessage::tool_result(call.id, result));
        }
        let mut state = self.suspended(vec![pending], None);
        state.previews = self.previews_for(&state.pending_calls).await;
        Ok(state)
    }

    /// The previews of the approval-bound calls whose tools show one. A failing preview is kept
    /// as failed, with a reason safe to show: a tool's refusal, or a fixed sentence.
    pub async fn previews_for(&self, calls: &[ToolCall]) -> Vec<StoredPreview> {
        let context = ToolContext::new(self.run_id, self.owner, self.rounds);
        let mut previews = Vec::new();
        for call in calls {
            let Some(tool) = self.offered(&call.name).filter(|tool| tool.spec.needs_approval_in(self.outside)) else {
                continue;
            };
            let preview = match tool.tool.preview(&call.arguments, &context).await {
                Ok(None) => continue,
                Ok(Some(preview)) => CallPreview::Ready(preview),
                Err(ToolError::Rejected(reason)) => CallPreview::Failed { reason },
                Err(ToolError::Failed(error)) => {
                    tracing::warn!(run = %self.run_id, tool = %call.name, %error, "preview failed");
                    CallPreview::Failed { reason: PREVIEW_FAILED.to_string() }
                }
            };
            previews.push(StoredPreview { call_id: call.id.clone(), preview });
        }
        previews
    }

    fn refusal_for_unoffered(&self, name: &str) -> String {
        if self.registry.get(name).is_none() {
            format!("Error: unknown tool \"{name}\"")
        } else {
            format!("Error: tool \"{name}\" not permitted")
        }
    }

    /// Runs one call fail-soft: whatever goes wrong becomes result text for the model. Only losing
    /// the run stops the segment. A question the tool asks while it runs comes back as
    /// [`Invoked::Asked`], unless the chat cannot show it: then it is declined at once and the
    /// model is told why.
    async fn invoke(&mut self, call: &ToolCall, run: Run) -> Result<Invoked, Stop> {
        self.boundary().await?;
        let Some(tool) = self.offered(&call.name) else {
            let text = self.refusal_for_unoffered(&call.name);
            self.event(EventKind::Tool, json!({ "name": call.name, "outcome": "refused" }));
            return Ok(Invoked::Done(text));
        };
        let effect = tool.spec.effect;
        if effect.is_write() {
            self.write_events().await;
            let stamped = self.store.stamp_effect(self.run_id, &self.token, effect, self.lease_until()).await;
            self.owned(stamped).await?;
        }
        let mut context = ToolContext::new(self.run_id, self.owner, self.rounds);
        context.approved_basis = self.approved_bases.get(&call.id).cloned();
        context.outside_content = self.outside;
        self.unverified();
        let (arguments, mut output) = match run {
            Run::Start(arguments) => {
                let output = tool.tool.call(arguments.clone(), &context).await;
                (arguments, output)
            }
            Run::Resume { arguments, state, reply } => {
                let output = tool.tool.resume(arguments.clone(), state, reply, &context).await;
                (arguments, output)
            }
        };
        let mut notes = Vec::new();
        let mut asked = None;
        while let Ok(ToolOutput::Ask { .. }) = &output {
            let Ok(ToolOutput::Ask { schema, state }) = output else { unreachable!("matched above") };
            let showable = check_schema(&schema).map_err(|e| e.0).and_then(|()| (self.question_check)(&schema));
            match showable {
                Ok(()) => {
                    asked = Some((schema, state));
                    output = Ok(ToolOutput::Done(String::new()));
                }
                Err(why) if notes.len() < MAX_DECLINED_QUESTIONS => {
                    notes.push(format!(
                        "Note: tool \"{}\" asked the user a question the chat cannot show ({why}), so it was declined.",
                        call.name
                    ));
                    output = tool.tool.resume(arguments.clone(), state, InputReply::Decline, &context).await;
                }
                Err(_) => {
                    output = Err(ToolError::Rejected("it kept asking questions the chat cannot show".to_string()));
                }
            }
        }
        if effect.is_write() {
            let cleared = self.store.clear_effect(self.run_id, &self.token, self.lease_until()).await;
            self.owned(cleared).await?;
        }
        if let Some((schema, state)) = asked {
            self.event(EventKind::Tool, json!({ "name": call.name, "outcome": "asked", "effect": effect.as_str() }));
            return Ok(Invoked::Asked { schema, state });
        }
        // Whatever it says (a result, a refusal in its words) now is in the transcript.
        if tool.spec.brings_outside_content() {
            self.outside = true;
        }
        let (text, outcome) = match output {
            Ok(ToolOutput::Done(text)) => (bounded(text), "ok"),
            Ok(ToolOutput::Ask { .. }) => unreachable!("questions are handled above"),
            Err(ToolError::Rejected(problem)) => (bounded(rejected_text(&call.name, &problem)), "rejected"),
            Err(ToolError::Failed(error)) => {
                // The error may hold paths, SQL or credentials: logged here, never sent to the model.
                tracing::warn!(run = %self.run_id, tool = %call.name, %error, "tool failed");
                (format!("Error: tool \"{}\" failed.", call.name), "failed")
            }
        };
        self.event(EventKind::Tool, json!({ "name": call.name, "outcome": outcome, "effect": effect.as_str() }));
        notes.push(text);
        Ok(Invoked::Done(notes.join("\n")))
    }

    /// Continues after a verdict on an approval pause. Every pending call gets exactly one result;
    /// an approved call that asks while it runs suspends the run on its question.
    pub async fn resume_approval(&mut self, state: SuspendedState, verdict: Verdict) -> Result<Finish, Stop> {
        self.transcript = state.messages;
        self.rounds = state.rounds;
        if verdict.approved {
            for stored in &state.previews {
                if let CallPreview::Ready(preview) = &stored.preview {
                    self.approved_bases.insert(stored.call_id.clone(), preview.basis.clone());
                }
            }
        }
        for (index, call) in state.pending_calls.iter().enumerate() {
            let text = if !verdict.approved {
                self.event(EventKind::Tool, json!({ "name": call.name, "outcome": "denied" }));
                self.denial_text(call, &verdict)
            } else {
                match self.offered(&call.name) {
                    None => {
                        self.event(EventKind::Tool, json!({ "name": call.name, "outcome": "refused" }));
                        self.not_offered_text(&call.name)
                    }
                    // An approval's continuation carries no input, so an asking tool cannot run here.
                    Some(tool) if tool.spec.asks_input() => not_provided(&call.name),
                    Some(_) => match self.invoke(call, Run::Start(call.arguments.clone())).await? {
                        Invoked::Done(text) => match verdict.edited.get(&call.id) {
                            Some(original) => crate::results::edited_text(original, &call.arguments, &text),
                            None => text,
                        },
                        Invoked::Asked { schema, state: asked } => {
                            let rest = &state.pending_calls[index + 1..];
                            return Ok(Finish::Suspend(Box::new(self.asked(call, rest, schema, asked, true))));
                        }
                    },
                }
            };
            self.transcript.push(ChatMessage::tool_result(call.id.clone(), text));
        }
        self.checkpoint().await?;
        self.rounds_loop().await
    }

    /// What the model reads for a pending call whose tool is not offered now: gone from the
    /// registry, or no longer permitted to the run's owner (two different things).
    fn not_offered_text(&self, name: &str) -> String {
        if self.registry.get(name).is_none() {
            format!("Error: tool \"{name}\" is no longer registered and was not executed.")
        } else {
            format!("Error: tool \"{name}\" is no longer permitted and was not executed.")
        }
    }

    fn denial_text(&self, call: &ToolCall, verdict: &Verdict) -> String {
        let decider = if verdict.decided_by == self.owner.user_id { Decider::RunOwner } else { Decider::OtherUser };
        // A reason only makes sense for a proposed change; a gone tool counts as one.
        let declares_write = self.registry.get(&call.name).is_none_or(|tool| tool.spec.effect.is_write());
        denial_text(&call.name, decider, verdict.reason.filter(|_| declares_write), verdict.message.as_deref())
    }

    /// Continues after a reply: the asking call (matched by call id) runs with the answer folded
    /// in, or, if it asked while it ran, carries on with the reply. A second question or an
    /// approval-bound call of the same turn is refused, never run, unless the turn was approved.
    pub async fn resume_input(&mut self, state: SuspendedState, reply: InputReply) -> Result<Finish, Stop> {
        self.transcript = state.messages;
        self.rounds = state.rounds;
        // The turn was weighed with what the run held when it paused, not with what the answered
        // call brings in now.
        let outside_when_paused = self.outside;
        let Some(input) = state.input else {
            return Err(Stop::Store(StoreError::Corrupt("input resume without an input pause".into())));
        };
        let mut reply = Some(reply);
        for (index, call) in state.pending_calls.iter().enumerate() {
            let run = if call.id == input.call_id {
                let reply = reply.take().unwrap_or(InputReply::Cancel);
                match (self.offered(&call.name), input.asked.clone(), reply) {
                    // Its source is not there now (an MCP server not reconnected yet): the
                    // question it asked while it ran ends without an answer, and why is said.
                    (None, Some(asked), _) if self.registry.get(&call.name).is_none() => {
                        let why = self
                            .registry
                            .question_expired(&call.name, &asked)
                            .unwrap_or_else(|| "the tool is not reachable now".to_string());
                        let text = format!(
                            "Error: the call of tool \"{}\" ended without the user's answer: {why}.",
                            call.name
                        );
                        self.transcript.push(ChatMessage::tool_result(call.id.clone(), text));
                        continue;
                    }
                    (None, _, _) => {
                        let text = self.not_offered_text(&call.name);
                        self.transcript.push(ChatMessage::tool_result(call.id.clone(), text));
                        continue;
                    }
                    (Some(_), Some(asked), reply) => {
                        Run::Resume { arguments: call.arguments.clone(), state: asked, reply }
                    }
                    (Some(_), None, InputReply::Answer(values)) => {
                        Run::Start(overlay(&call.arguments, &values, &input.schema))
                    }
                    (Some(_), None, InputReply::Decline | InputReply::Cancel) => {
                        let text = format!(
                            "Error: the user did not answer the question of tool \"{}\"; it was not executed.",
                            call.name
                        );
                        self.transcript.push(ChatMessage::tool_result(call.id.clone(), text));
                        continue;
                    }
                }
            } else {
                let refusal = match self.offered(&call.name) {
                    Some(tool) if tool.spec.asks_input() => Some(not_provided(&call.name)),
                    Some(tool) if tool.spec.needs_approval_in(outside_when_paused) && !state.approved => {
                        Some(format!("Error: tool \"{}\" requires approval that was not given.", call.name))
                    }
                    Some(_) => None,
                    None if self.registry.get(&call.name).is_none() => {
                        Some(format!("Error: unknown tool \"{}\"", call.name))
                    }
                    None => Some(self.not_offered_text(&call.name)),
                };
                if let Some(text) = refusal {
                    self.transcript.push(ChatMessage::tool_result(call.id.clone(), text));
                    continue;
                }
                Run::Start(call.arguments.clone())
            };
            match self.invoke(call, run).await? {
                Invoked::Done(text) => self.transcript.push(ChatMessage::tool_result(call.id.clone(), text)),
                Invoked::Asked { schema, state: asked } => {
                    let rest = &state.pending_calls[index + 1..];
                    return Ok(Finish::Suspend(Box::new(self.asked(call, rest, schema, asked, state.approved))));
                }
            }
        }
        self.checkpoint().await?;
        self.rounds_loop().await
    }
}

fn not_provided(name: &str) -> String {
    format!("Error: tool \"{name}\" requires input that was not provided.")
}

/// Every call needs an id its result can name; some local models send none or repeat one.
fn unique_call_ids(calls: Vec<ToolCall>, round: u32) -> Vec<ToolCall> {
    let mut seen = HashSet::new();
    calls
        .into_iter()
        .enumerate()
        .map(|(index, mut call)| {
            if call.id.trim().is_empty() || !seen.insert(call.id.clone()) {
                call.id = format!("call_{round}_{index}");
                seen.insert(call.id.clone());
            }
            call
        })
        .collect()
}

fn bounded(mut text: String) -> String {
    if text.len() > MAX_RESULT_BYTES {
        let mut end = MAX_RESULT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str(" [truncated]");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_are_made_unique() {
        let call = |id: &str| ToolCall { id: id.into(), name: "t".into(), arguments: json!({}) };
        let ids: Vec<String> =
            unique_call_ids(vec![call("a"), call(""), call("a")], 2).into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["a", "call_2_1", "call_2_2"]);
    }

    #[test]
    fn results_are_bounded_on_a_char_boundary() {
        let long = "é".repeat(MAX_RESULT_BYTES);
        let cut = bounded(long);
        assert!(cut.len() <= MAX_RESULT_BYTES + " [truncated]".len());
        assert!(cut.ends_with(" [truncated]"));
        assert_eq!(bounded("short".into()), "short");
    }
}
