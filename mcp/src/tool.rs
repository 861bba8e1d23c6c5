//! One MCP tool as a runtime tool, named `server.tool`. Its effect comes from its annotations
//! (or the configuration's `trust`), and so does whether it reaches the open world (or the
//! configuration's `closedWorld`). A call that the server answers with a question becomes an
//! input pause in two ways:
//!
//! - The newer form (`input_required` with an opaque `requestState`, SEP-2322): the call is over;
//!   the question, the call's arguments and the state are kept with the pause, and the answer goes
//!   back with a new call, on any connection, whenever it comes. Durable.
//! - The older form (`elicitation/create` during the call): the call stays open on its connection
//!   while the question waits ([`crate::live`]); the answer goes back on it.
//!
//! Either form may ask the user to open a link instead (URL mode): a question with "Done" as its
//! one answer and the link under [`LINK_KEY`], so the chat can show it; "Done" answers `accept`,
//! and in the older form so does the server's own notice that the step there is done.
//!
//! A call to a per-user OAuth server by a user who has not connected their account waits on a
//! question of our own ("Connect … to continue", [`CONNECT_KEY`] in its schema names the server,
//! so the chat can show the link); Continue looks again, and makes the call once they have.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    InputRequests, InputResponses,
};
use runtime::{InputReply, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, Notify};

use crate::effects::{effect_of, open_world_of};
use crate::live::{CallResult, LiveCall, LiveCalls};
use crate::oauth::TokenOwner;
use crate::result_text::text_of_result;
use crate::server::Server;
use crate::session::{LiveAsk, Session};

/// The key in a question's schema that makes it the wait for a user to connect the server it
/// names (`{"server": "…"}`): the chat shows the link to connect beside Continue.
pub const CONNECT_KEY: &str = "x-tourguide-connect";
/// That question's one answer: Continue (the user's, or ours once they connected).
pub const CONNECT_CONTINUE: &str = "continue";

pub(crate) struct McpTool {
    /// Where a call whose question waits over its connection is kept open.
    live: Arc<LiveCalls>,
    /// How long a call may take (not counting the time its question waits).
    call_timeout: Duration,
    server: Arc<Server>,
    /// The tool's name on its server.
    remote: String,
    spec: ToolSpec,
    /// Open world by its annotations, closed by the configuration: its calls in a run that holds
    /// outside content run without the card they would otherwise get, and are logged.
    trusted_closed: bool,
}

impl McpTool {
    pub fn new(live: Arc<LiveCalls>, call_timeout: Duration, server: Arc<Server>, tool: rmcp::model::Tool) -> McpTool {
        let remote = tool.name.to_string();
        let full = format!("{}.{remote}", server.config.name);
        let annotated = effect_of(tool.annotations.as_ref());
        let effect = match server.config.trust.get(&remote) {
            Some(trusted) => {
                if *trusted != annotated {
                    tracing::warn!(
                        tool = %full,
                        annotations = annotated.as_str(),
                        configured = trusted.as_str(),
                        "the MCP configuration overrides this tool's effect"
                    );
                }
                *trusted
            }
            None => annotated,
        };
        let open_world = open_world_of(tool.annotations.as_ref());
        let trusted_closed = open_world && server.config.closed_world.contains(&remote);
        if trusted_closed {
            tracing::warn!(
                tool = %full,
                "the MCP configuration trusts this open-world tool not to send what it is given out (closedWorld)"
            );
        }
        let description = match (&tool.title, &tool.description) {
            (_, Some(description)) => description.to_string(),
            (Some(title), None) => title.clone(),
            (None, None) => String::new(),
        };
        let spec = ToolSpec::new(full, description, Value::Object((*tool.input_schema).clone()))
            .with_effect(effect)
            .with_open_world(open_world && !trusted_closed)
            .with_origin(format!("MCP server {}", server.config.name));
        McpTool { live, call_timeout, server, remote, spec, trusted_closed }
    }

    pub fn full_name(&self) -> &str {
        &self.spec.name
    }

    /// A broken call's error, as the model (and through its text, the reader) may see it: the
    /// transport's text can name the server's URL with its key, and Rust type paths.
    fn broken(&self, error: impl std::fmt::Display) -> ToolError {
        let text = error.to_string();
        let masked = crate::redact(&text, &self.server.config.secrets());
        tracing::warn!(server = %self.server.config.name, error = %masked, "an MCP call broke off");
        ToolError::failed(masked)
    }

    fn no_answer(&self) -> String {
        format!("the MCP server {} did not answer within {} s", self.server.config.name, self.call_timeout.as_secs())
    }

    /// Whose sign-in a call of `context`'s owner carries (`None`: the server has no OAuth).
    fn owner(&self, context: &ToolContext) -> Option<TokenOwner> {
        let oauth = self.server.config.oauth.as_ref()?;
        Some(TokenOwner::of(oauth.mode, context.owner.user_id))
    }

    /// For a per-user server the caller has not connected: the question that waits until they
    /// do. `None` when the call can go ahead.
    async fn connect_first(
        &self,
        owner: Option<TokenOwner>,
        arguments: &Value,
    ) -> Result<Option<ToolOutput>, ToolError> {
        let Some(owner @ TokenOwner::User(_)) = owner else { return Ok(None) };
        let connected = self.server.connected(owner).await.map_err(ToolError::failed)?;
        if connected {
            return Ok(None);
        }
        let name = &self.server.config.name;
        let schema = json!({
            "type": "object",
            "title": format!("Connect {name} to continue"),
            "description": format!("The MCP server {name} acts with your own account: connect it, then continue."),
            "properties": {
                CONNECT_CONTINUE: { "type": "string", "oneOf": [{ "const": CONNECT_CONTINUE, "title": "Continue" }] }
            },
            "required": [CONNECT_CONTINUE],
            CONNECT_KEY: { "server": name },
        });
        Ok(Some(ToolOutput::Ask { schema, state: json!({ "connect": { "arguments": arguments } }) }))
    }

    /// Calls the tool once on a connection of its own, and follows it until it ends or asks.
    async fn start(
        &self,
        params: CallToolRequestParams,
        arguments: Value,
        owner: Option<TokenOwner>,
    ) -> Result<ToolOutput, ToolError> {
        let session = match self.server.take_session(owner).await {
            Ok(session) => session,
            Err(sentence) => {
                // Its tokens were refused and forgotten just now: the caller connects again.
                if let Some(wait) = self.connect_first(owner, &arguments).await? {
                    return Ok(wait);
                }
                return Err(ToolError::failed(sentence));
            }
        };
        let (listener, asks) = mpsc::unbounded_channel();
        session.attach(listener);
        let peer = session.service.peer().clone();
        let done = Arc::new(Notify::new());
        let finished = done.clone();
        let call = tokio::spawn(async move {
            let result = peer.call_tool_once(params).await;
            finished.notify_one();
            result
        });
        self.follow(call, done, asks, session, arguments).await
    }

    /// Waits for the call to end or to ask. A question asked over the connection keeps the call
    /// open ([`crate::live`]); one in the call's result is kept with the pause.
    async fn follow(
        &self,
        mut call: tokio::task::JoinHandle<CallResult>,
        done: Arc<Notify>,
        mut asks: mpsc::UnboundedReceiver<LiveAsk>,
        session: Session,
        arguments: Value,
    ) -> Result<ToolOutput, ToolError> {
        // A server that never answers must not hold the run for ever; the time a question waits
        // for the user does not count (the clock starts again when the answer goes back).
        let deadline = tokio::time::sleep(self.call_timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                () = &mut deadline => {
                    // The connection may still carry the call: it is closed, not given back.
                    call.abort();
                    return Err(ToolError::failed(self.no_answer()));
                }
                joined = &mut call => {
                    let response = match joined {
                        Ok(Ok(response)) => response,
                        // The connection is broken: it is not given back.
                        Ok(Err(error)) => return Err(self.broken(error)),
                        Err(error) => return Err(self.broken(error)),
                    };
                    let owner = session.owner;
                    self.server.give_back(session);
                    return self.ended(response, &arguments, owner).await;
                }
                Some(ask) = asks.recv() => {
                    let LiveAsk { params, reply, completed } = ask;
                    let is_link = is_link(&params);
                    let Some(schema) = self.question_of(&params) else {
                        // A link the chat will not show (see `link_schema`): declined.
                        let _ = reply.send(ElicitResult::new(ElicitationAction::Decline));
                        continue;
                    };
                    let link = is_link.then_some(completed);
                    let live = LiveCall { call, done, asks, reply, session, server: self.server.clone(), link };
                    let (id, until) = self.live.park(live);
                    let mut state = json!({ "live": id, "instance": self.live.instance, "until": until });
                    if is_link {
                        state["link"] = json!(true);
                    }
                    return Ok(ToolOutput::Ask { schema, state });
                }
            }
        }
    }

    /// A call that came back: its result, or the questions in it (the newer form), kept with the
    /// call's `arguments` for the call that brings the answers.
    async fn ended(
        &self,
        response: CallToolResponse,
        arguments: &Value,
        owner: Option<TokenOwner>,
    ) -> Result<ToolOutput, ToolError> {
        match response {
            CallToolResponse::Complete(result) => {
                let text = text_of_result(&result);
                if result.is_error == Some(true) {
                    return Err(ToolError::Rejected(text));
                }
                Ok(ToolOutput::Done(text))
            }
            CallToolResponse::InputRequired(required) => {
                let state = json!({
                    "mrtr": {
                        "arguments": arguments,
                        "request_state": required.request_state,
                        "requests": serde_json::to_value(required.input_requests.unwrap_or_default()).map_err(ToolError::failed)?,
                        "responses": {},
                    }
                });
                self.next_question(state, owner).await
            }
            CallToolResponse::Task(_) => Err(ToolError::Rejected(
                "the MCP server answered with a task, which Tourguide does not follow".to_string(),
            )),
            _ => Err(ToolError::Rejected("the MCP server answered in a way Tourguide does not know".to_string())),
        }
    }

    /// The next question of a call in the newer form; when none is left, the call again with the
    /// answers and the state echoed.
    async fn next_question(&self, mut state: Value, owner: Option<TokenOwner>) -> Result<ToolOutput, ToolError> {
        loop {
            let requests: InputRequests =
                serde_json::from_value(state["mrtr"]["requests"].clone()).map_err(ToolError::failed)?;
            let Some((key, request)) = requests.into_iter().next() else { break };
            let mut rest: InputRequests =
                serde_json::from_value(state["mrtr"]["requests"].clone()).map_err(ToolError::failed)?;
            rest.remove(&key);
            state["mrtr"]["requests"] = serde_json::to_value(&rest).map_err(ToolError::failed)?;
            match request {
                InputRequest::Elicitation(elicitation) => match self.question_of(&elicitation.params) {
                    Some(schema) => {
                        state["mrtr"]["key"] = json!(key);
                        state["mrtr"]["link"] = json!(is_link(&elicitation.params));
                        return Ok(ToolOutput::Ask { schema, state });
                    }
                    None => {
                        let declined = serde_json::to_value(ElicitResult::new(ElicitationAction::Decline))
                            .map_err(ToolError::failed)?;
                        state["mrtr"]["responses"][key] = declined;
                    }
                },
                // No roots are shared with MCP servers.
                InputRequest::ListRoots(_) => state["mrtr"]["responses"][key] = json!({ "roots": [] }),
                _ => {
                    return Err(ToolError::Rejected(
                        "the MCP server asked for something Tourguide does not offer (only questions to the user \
                         are answered)"
                            .to_string(),
                    ));
                }
            }
        }
        let mrtr = &state["mrtr"];
        let mut params = CallToolRequestParams::new(self.remote.clone());
        if let Value::Object(arguments) = &mrtr["arguments"] {
            params = params.with_arguments(arguments.clone());
        }
        let responses: InputResponses = serde_json::from_value(mrtr["responses"].clone()).map_err(ToolError::failed)?;
        if !responses.is_empty() {
            params = params.with_input_responses(responses);
        }
        params.request_state = mrtr["request_state"].as_str().map(str::to_string);
        let arguments = mrtr["arguments"].clone();
        let session = self.server.take_session(owner).await.map_err(ToolError::failed)?;
        let response = tokio::time::timeout(self.call_timeout, session.service.peer().call_tool_once(params))
            .await
            .map_err(|_| ToolError::failed(self.no_answer()))?
            .map_err(|error| self.broken(error))?;
        self.server.give_back(session);
        Box::pin(self.ended(response, &arguments, owner)).await
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn execute(&self, arguments: Value, context: &ToolContext) -> Result<String, ToolError> {
        match self.call(arguments, context).await? {
            ToolOutput::Done(text) => Ok(text),
            ToolOutput::Ask { .. } => Err(ToolError::Rejected("the MCP server asked a question".to_string())),
        }
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        if self.trusted_closed && context.outside_content && !self.spec.needs_approval() {
            tracing::info!(
                tool = %self.spec.name,
                run = %context.run_id,
                "an open-world MCP tool runs without a card in a run that holds outside content: the configuration \
                 trusts it (closedWorld)"
            );
        }
        let arguments = match arguments {
            Value::Object(arguments) => arguments,
            Value::Null => Map::new(),
            _ => return Err(ToolError::Rejected("the arguments must be a JSON object".to_string())),
        };
        let owner = self.owner(context);
        let value = Value::Object(arguments.clone());
        if let Some(wait) = self.connect_first(owner, &value).await? {
            return Ok(wait);
        }
        let params = CallToolRequestParams::new(self.remote.clone()).with_arguments(arguments);
        self.start(params, value, owner).await
    }

    async fn resume(
        &self,
        arguments: Value,
        mut state: Value,
        reply: InputReply,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        if state.get("connect").is_some() {
            return match reply {
                // Continue: the call is made if they connected by now, else the wait goes on.
                InputReply::Answer(_) => self.call(arguments, context).await,
                InputReply::Decline | InputReply::Cancel => Err(ToolError::Rejected(format!(
                    "the user did not connect their account on the MCP server {}, so the call was not made",
                    self.server.config.name
                ))),
            };
        }
        let owner = self.owner(context);
        if let Some(id) = state.get("live").and_then(Value::as_str) {
            let Some(live) = self.live.take(id) else {
                return Ok(ToolOutput::Done(self.live.ending(id)));
            };
            let LiveCall { call, done, asks, reply: answer, session, link, .. } = live;
            let result = match link {
                Some(completed) => link_result(reply, completed.load(std::sync::atomic::Ordering::SeqCst)),
                None => elicit_result(reply),
            };
            let _ = answer.send(result);
            return self.follow(call, done, asks, session, arguments).await;
        }
        if state.get("mrtr").is_some() {
            let result = match state["mrtr"]["link"].as_bool() {
                Some(true) => link_result(reply, false),
                _ => elicit_result(reply),
            };
            let key = state["mrtr"]["key"].as_str().unwrap_or_default().to_string();
            state["mrtr"]["responses"][key] = serde_json::to_value(result).map_err(ToolError::failed)?;
            return self.next_question(state, owner).await;
        }
        Err(ToolError::Rejected("the question's state cannot be read".to_string()))
    }

    async fn abandon(&self, state: Value) {
        if let Some(live) = state.get("live").and_then(Value::as_str).and_then(|id| self.live.take(id)) {
            live.let_go(ElicitationAction::Cancel);
        }
    }

    fn expired(&self, state: &Value) -> Option<String> {
        expired(&self.live, state)
    }

    fn held_by(&self, state: &Value) -> Option<String> {
        held_by(state)
    }
}

/// The process whose memory holds the open call a question waits on: only a question asked over
/// a live connection has one.
pub(crate) fn held_by(state: &Value) -> Option<String> {
    state.get("live")?;
    state.get("instance")?.as_str().map(str::to_string)
}

/// Why a question can no longer be answered: only one asked over a live connection ever expires;
/// one kept in the pause (the newer form) waits as long as it takes.
pub(crate) fn expired(live: &LiveCalls, state: &Value) -> Option<String> {
    let id = state.get("live")?.as_str()?;
    let instance = state.get("instance").and_then(Value::as_str).unwrap_or_default();
    let until = state.get("until").and_then(Value::as_i64).unwrap_or(0);
    live.expired(id, instance, until)
}

/// What goes back to the server for the reply to a link (URL mode): "Done" is `accept` with no
/// content (the reader did what the page asked); a question withdrawn because the server said the
/// step is done (`completed`) is the same; the rest as for any question.
fn link_result(reply: InputReply, completed: bool) -> ElicitResult {
    match reply {
        InputReply::Answer(_) => ElicitResult::new(ElicitationAction::Accept),
        InputReply::Cancel if completed => ElicitResult::new(ElicitationAction::Accept),
        InputReply::Decline => ElicitResult::new(ElicitationAction::Decline),
        InputReply::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

fn is_link(params: &ElicitRequestParams) -> bool {
    matches!(params, ElicitRequestParams::UrlElicitationParams { .. })
}

/// The key in a question's schema that makes it a link the server asks the reader to open (URL
/// mode): `{"server": "…", "url": "…"}`, the URL as a browser reads it. The chat shows the
/// server's name and the URL's host in full, and opens it only on the reader's click.
pub const LINK_KEY: &str = "x-tourguide-link";
/// The one answer to a link's question: the reader says they are done there.
const LINK_DONE: &str = "done";

/// A link's question as the chat shows it: the server's message, and "Done" as its one answer.
/// `None` (declined) for a link that is not `http`/`https`, has no host, or carries a user name or
/// password (`https://bank.example@evil.example/` would show one host and open another).
pub(crate) fn link_schema(server: &str, message: &str, url: &str) -> Option<Value> {
    let parsed = url::Url::parse(url).ok()?;
    let plain = matches!(parsed.scheme(), "https" | "http")
        && parsed.host_str().is_some_and(|host| !host.is_empty())
        && parsed.username().is_empty()
        && parsed.password().is_none();
    if !plain {
        tracing::info!(server, "an MCP server asked the user to open a link the chat does not show; declined");
        return None;
    }
    Some(json!({
        "type": "object",
        "title": message,
        "properties": { LINK_DONE: { "type": "string", "oneOf": [{ "const": LINK_DONE, "title": "Done" }] } },
        "required": [LINK_DONE],
        LINK_KEY: { "server": server, "url": parsed.as_str() },
    }))
}

/// What goes back to the server for a reply.
fn elicit_result(reply: InputReply) -> ElicitResult {
    match reply {
        InputReply::Answer(values) => ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(values)),
        InputReply::Decline => ElicitResult::new(ElicitationAction::Decline),
        InputReply::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

impl McpTool {
    /// A question of this tool's server as the chat shows it: a form's schema, or a link's.
    fn question_of(&self, params: &ElicitRequestParams) -> Option<Value> {
        match params {
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                link_schema(&self.server.config.name, message, url)
            }
            _ => question_schema(params),
        }
    }
}

/// The question as the chat shows it: the requested schema, with the server's message as its
/// title. `None` for a question that is a link to open elsewhere (URL mode).
pub(crate) fn question_schema(params: &ElicitRequestParams) -> Option<Value> {
    match params {
        ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
            let mut schema = serde_json::to_value(requested_schema).ok()?;
            schema["title"] = json!(message);
            Some(schema)
        }
        _ => None,
    }
}
