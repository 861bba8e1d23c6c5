//! Tools the model may call, what they declare about themselves, and the registry that holds them.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::actor::Actor;
use crate::provider::ToolDefinition;
use question::schema::check_schema;

/// What running a tool does to the world. A code property of the tool, never configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolEffect {
    ReadOnly,
    /// Running it twice leaves the same state as once; a crashed run may retry it.
    IdempotentWrite,
    /// Running it twice may do harm; an interrupted run that stamped it is never retried.
    NonIdempotentWrite,
}

impl ToolEffect {
    pub fn is_write(self) -> bool {
        !matches!(self, ToolEffect::ReadOnly)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ToolEffect::ReadOnly => "read_only",
            ToolEffect::IdempotentWrite => "idempotent_write",
            ToolEffect::NonIdempotentWrite => "non_idempotent_write",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "read_only" => ToolEffect::ReadOnly,
            "idempotent_write" => ToolEffect::IdempotentWrite,
            "non_idempotent_write" => ToolEffect::NonIdempotentWrite,
            _ => return None,
        })
    }
}

/// A tool's declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Where the tool comes from, for people (e.g. "MCP server files"); `None` for the built-in ones.
    pub origin: Option<String>,
    pub name: String,
    pub description: String,
    /// JSON Schema (an object schema) of the arguments the model must send.
    pub parameters: Value,
    pub effect: ToolEffect,
    /// Set when the tool asks the user before it runs. The schema here is the general shape; a
    /// tool may build a schema per call with [`Tool::input_schema_for`].
    pub input_schema: Option<Value>,
    /// Makes a read approval-bound (an operator's choice for e.g. fetching outside pages). Writes
    /// always need approval: "write without approval" cannot be expressed.
    pub requires_approval: bool,
    /// The tool reaches beyond this process (a search, a fetch, another service): what its
    /// arguments hold may leave, and what it returns comes from outside. Once a run holds outside
    /// content, a call of such a tool goes through an approval card even when it only reads, so
    /// an injected instruction cannot send the conversation away unseen.
    pub open_world: bool,
}

impl ToolSpec {
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        ToolSpec {
            origin: None,
            name: name.into(),
            description: description.into(),
            parameters,
            effect: ToolEffect::ReadOnly,
            input_schema: None,
            requires_approval: false,
            open_world: false,
        }
    }

    pub fn with_origin(mut self, origin: impl Into<String>) -> Self {
        self.origin = Some(origin.into());
        self
    }

    pub fn with_effect(mut self, effect: ToolEffect) -> Self {
        self.effect = effect;
        self
    }

    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    pub fn with_required_approval(mut self) -> Self {
        self.requires_approval = true;
        self
    }

    pub fn with_open_world(mut self, open_world: bool) -> Self {
        self.open_world = open_world;
        self
    }

    /// Approval-bound whatever the run holds. See [`ToolSpec::needs_approval_in`] for the rule
    /// that also weighs what the run has read.
    pub fn needs_approval(&self) -> bool {
        self.requires_approval || self.effect.is_write()
    }

    /// Whether a call needs approval in a run that holds outside content (`outside`): then an
    /// open-world tool could carry the conversation away, so its reads wait for a card too.
    pub fn needs_approval_in(&self, outside: bool) -> bool {
        self.needs_approval() || (outside && self.open_world)
    }

    /// Whether what this tool returns comes from outside the application: a tool of a source
    /// (`origin`) or one that reaches the open world. Its result makes the run hold outside content.
    pub fn brings_outside_content(&self) -> bool {
        self.origin.is_some() || self.open_world
    }

    pub fn asks_input(&self) -> bool {
        self.input_schema.is_some()
    }

    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
        }
    }
}

/// What a tool learns about the call it runs for. Tools always run as the run's owner, whoever
/// approved or answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolContext {
    pub run_id: Uuid,
    pub owner: Actor,
    pub round: u32,
    /// For an approved call that had a preview: what that preview was made from
    /// ([`crate::Preview::basis`]). A tool can refuse to write a record that moved on since.
    pub approved_basis: Option<Value>,
    /// The run holds outside content (an attachment, an earlier result of an outside tool): a
    /// source that lifted an open-world tool's card by configuration can record that it did.
    pub outside_content: bool,
}

impl ToolContext {
    pub fn new(run_id: Uuid, owner: Actor, round: u32) -> Self {
        ToolContext { run_id, owner, round, approved_basis: None, outside_content: false }
    }
}

/// A tool failure. Only [`ToolError::Rejected`] text reaches the model; everything else becomes a
/// fixed sentence, because internal errors may carry paths, SQL or credentials.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments are unusable. The message is tool-authored and safe to show the model, so it
    /// can correct itself.
    #[error("{0}")]
    Rejected(String),
    #[error("tool failed: {0}")]
    Failed(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ToolError {
    pub fn failed(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ToolError::Failed(error.into())
    }
}

/// What a call came back with.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// The result for the model.
    Done(String),
    /// The tool cannot finish without the user: the run waits on an input pause with `schema` (its
    /// title, else description, is the question). `state` is stored with the pause and handed to
    /// [`Tool::resume`] with the reply, so it must hold all the tool needs to carry on.
    Ask { schema: Value, state: Value },
}

/// The user's reply to a question a tool asked while it ran.
#[derive(Debug, Clone, PartialEq)]
pub enum InputReply {
    /// The values of the answer, checked against the question.
    Answer(serde_json::Map<String, Value>),
    /// The user said no.
    Decline,
    /// The question went away unanswered: it could not be shown, or it expired.
    Cancel,
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;

    /// Who may run this tool. Checked for the owner when offering, for an approver against every
    /// pending write, and for a submitter against every pending call.
    fn permits(&self, actor: &Actor) -> bool {
        let _ = actor;
        true
    }

    /// The schema this call asks with. `Ok(None)`: this call asks nothing. An error means the
    /// arguments cannot form a question: the call is not paused and its execution reports the error.
    fn input_schema_for(&self, arguments: &Value) -> Result<Option<Value>, ToolError> {
        let _ = arguments;
        Ok(self.spec().input_schema)
    }

    /// `arguments` are model-chosen (and on an input resume, carry the user's answer): untrusted.
    async fn execute(&self, arguments: Value, context: &ToolContext) -> Result<String, ToolError>;

    /// What this call would change, for its approval card. `Ok(None)`: this tool shows no preview
    /// (the card shows the arguments). Must only read, and give the same preview for the same
    /// state of the world: it is made again when the card is approved, and any difference hands
    /// the card back. An error marks the preview failed, and the card cannot be applied until a
    /// preview succeeds; a [`ToolError::Rejected`] text is shown to the reader.
    async fn preview(&self, arguments: &Value, context: &ToolContext) -> Result<Option<crate::Preview>, ToolError> {
        let _ = (arguments, context);
        Ok(None)
    }

    /// Runs a call. A tool that may ask the user while it runs overrides this and returns
    /// [`ToolOutput::Ask`]; every other tool runs [`Tool::execute`].
    async fn call(&self, arguments: Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.execute(arguments, context).await.map(ToolOutput::Done)
    }

    /// Carries on a call that asked, with the reply. It may ask again.
    async fn resume(
        &self,
        arguments: Value,
        state: Value,
        reply: InputReply,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let _ = (arguments, state, reply, context);
        Err(ToolError::Rejected("this tool does not ask while it runs".to_string()))
    }

    /// The run waiting on this tool's question ended without a reply (cancelled or deleted): let
    /// go of whatever the question holds.
    async fn abandon(&self, state: Value) {
        let _ = state;
    }

    /// Whether a question this tool asked can no longer be answered, and why (a sentence for the
    /// model). Asked for waiting runs from time to time; such a question is withdrawn and the
    /// call carries on with [`InputReply::Cancel`].
    fn expired(&self, state: &Value) -> Option<String> {
        let _ = state;
        None
    }

    /// The process that holds what a question this tool asked waits on (an open call kept in
    /// its memory), named as the tool named it when it asked: the reply must reach that process.
    /// `None`: any process can carry the reply on (the state holds all it needs).
    fn held_by(&self, state: &Value) -> Option<String> {
        let _ = state;
        None
    }
}

/// Tools that come and go while the server runs (an MCP server's). The registry asks the source
/// each time, so a run sees the tools as they are when it offers or calls them. A source checks
/// its tools with [`ToolRegistry::check`] before it publishes them.
#[async_trait]
pub trait ToolSource: Send + Sync {
    fn tools(&self) -> Vec<RegisteredTool>;

    /// Returns once the source has listed its tools for the first time (or its first attempt
    /// failed), bounded by the source itself: until then a tool it lacks is not there *yet*, not
    /// gone. A process that has just started waits here before it offers or runs a tool.
    async fn first_listing(&self) {}

    /// Whether `name` is this source's and the source has not finished its first listing: such a
    /// tool is not registered *yet*, which a card must not show as gone.
    fn still_listing(&self, _name: &str) -> bool {
        false
    }

    fn get(&self, name: &str) -> Option<RegisteredTool> {
        self.tools().into_iter().find(|tool| tool.spec.name == name)
    }

    /// For a question tool `name` asked while it ran (its asked `state`) while the tool is not
    /// offered: `None` when the name is not this source's; else `Some` of what
    /// [`Tool::expired`] would say. A source whose tools come back (a server reconnecting, or
    /// not listed yet after a start) keeps such questions rather than losing them to the gap.
    fn expired_while_absent(&self, _name: &str, _state: &Value) -> Option<Option<String>> {
        None
    }

    /// [`Tool::held_by`] for a question tool `name` asked while the tool is not offered: `None`
    /// when the name is not this source's.
    fn held_by_while_absent(&self, _name: &str, _state: &Value) -> Option<Option<String>> {
        None
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("a tool needs a non-empty name")]
    EmptyName,
    #[error("tool {0:?} is registered twice")]
    DuplicateName(String),
    /// A write (or any approval-bound tool) may not also ask: an approval's continuation carries no
    /// input, so the question could never be answered.
    #[error("tool {0:?} needs approval and asks for input; a tool may do only one of the two")]
    ApprovalAndInput(String),
    #[error("tool {name:?} declares unusable parameters: {problem}")]
    InvalidParameters { name: String, problem: String },
    #[error("tool {name:?} declares an unusable input schema: {problem}")]
    InvalidInputSchema { name: String, problem: String },
}

/// A registered tool with the spec it declared at registration.
#[derive(Clone)]
pub struct RegisteredTool {
    pub spec: Arc<ToolSpec>,
    pub tool: Arc<dyn Tool>,
}

impl std::fmt::Debug for RegisteredTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredTool").field("spec", &self.spec).finish_non_exhaustive()
    }
}

/// The tools a runtime knows: the built-in ones, filled once at start-up (rules are checked at
/// registration, so a misdeclared tool stops the boot instead of surprising a run), and the
/// sources whose tools change while it runs. A built-in name always wins over a source's.
#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: BTreeMap<String, RegisteredTool>,
    sources: Vec<Arc<dyn ToolSource>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry").field("tools", &self.tools).field("sources", &self.sources.len()).finish()
    }
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let registered = Self::check(tool)?;
        if self.tools.contains_key(&registered.spec.name) {
            return Err(RegistryError::DuplicateName(registered.spec.name.clone()));
        }
        self.tools.insert(registered.spec.name.clone(), registered);
        Ok(())
    }

    /// The registration rules on their own: what a tool source checks before it offers a tool.
    pub fn check(tool: Arc<dyn Tool>) -> Result<RegisteredTool, RegistryError> {
        let mut spec = tool.spec();
        if spec.name.trim().is_empty() {
            return Err(RegistryError::EmptyName);
        }
        if spec.asks_input() && spec.needs_approval() {
            return Err(RegistryError::ApprovalAndInput(spec.name));
        }
        normalise_parameters(&mut spec)?;
        if let Some(schema) = &spec.input_schema {
            check_schema(schema)
                .map_err(|e| RegistryError::InvalidInputSchema { name: spec.name.clone(), problem: e.0 })?;
        }
        Ok(RegisteredTool { spec: Arc::new(spec), tool })
    }

    /// Builder form of [`ToolRegistry::register`].
    pub fn with(mut self, tool: Arc<dyn Tool>) -> Result<Self, RegistryError> {
        self.register(tool)?;
        Ok(self)
    }

    /// Adds a source of tools that change while the runtime runs.
    pub fn add_source(&mut self, source: Arc<dyn ToolSource>) {
        self.sources.push(source);
    }

    /// Returns once every source has listed its tools once (see [`ToolSource::first_listing`]):
    /// what a tool lookup finds after it is what the process has, not what it has so far.
    pub async fn first_listing(&self) {
        for source in &self.sources {
            source.first_listing().await;
        }
    }

    /// Whether `name` may still appear: its source has not finished its first listing.
    pub fn still_listing(&self, name: &str) -> bool {
        !self.tools.contains_key(name) && self.sources.iter().any(|source| source.still_listing(name))
    }

    pub fn get(&self, name: &str) -> Option<RegisteredTool> {
        if let Some(tool) = self.tools.get(name) {
            return Some(tool.clone());
        }
        self.sources.iter().find_map(|source| source.get(name)).filter(|tool| !self.tools.contains_key(&tool.spec.name))
    }

    /// The names of the built-in tools: a source must not publish a tool under one of them.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// Every tool as it is now, built-in ones first, each name once.
    pub fn all(&self) -> Vec<RegisteredTool> {
        let mut all: Vec<RegisteredTool> = self.tools.values().cloned().collect();
        for source in &self.sources {
            all.extend(source.tools().into_iter().filter(|tool| !self.tools.contains_key(&tool.spec.name)));
        }
        all
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.sources.iter().all(|source| source.tools().is_empty())
    }

    /// Why the question tool `name` asked while it ran (its asked `state`) can no longer be
    /// answered; `None` while it can.
    pub fn question_expired(&self, name: &str, state: &Value) -> Option<String> {
        match self.get(name) {
            Some(tool) => tool.tool.expired(state),
            None => self
                .sources
                .iter()
                .find_map(|source| source.expired_while_absent(name, state))
                .unwrap_or_else(|| Some(format!("the tool \"{name}\" is no longer there"))),
        }
    }

    /// Which process holds the question tool `name` asked while it ran (its asked `state`), if
    /// its reply must reach one process ([`Tool::held_by`]).
    pub fn question_held_by(&self, name: &str, state: &Value) -> Option<String> {
        match self.get(name) {
            Some(tool) => tool.tool.held_by(state),
            None => self.sources.iter().find_map(|source| source.held_by_while_absent(name, state)).flatten(),
        }
    }
}

/// Providers reject `"properties": []` and schemas without a type; fix what is harmless, refuse
/// what is not an object schema.
fn normalise_parameters(spec: &mut ToolSpec) -> Result<(), RegistryError> {
    let invalid = |problem: &str| RegistryError::InvalidParameters { name: spec.name.clone(), problem: problem.into() };
    let Value::Object(map) = &mut spec.parameters else {
        return Err(invalid("not a JSON object"));
    };
    match map.get("type") {
        None => {
            map.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(kind)) if kind == "object" => {}
        Some(_) => return Err(invalid("type is not \"object\"")),
    }
    match map.get("properties") {
        None | Some(Value::Array(_)) => {
            map.insert("properties".into(), Value::Object(Default::default()));
        }
        Some(Value::Object(_)) => {}
        Some(_) => return Err(invalid("properties is not an object")),
    }
    if let Err(error) = jsonschema::validator_for(&spec.parameters) {
        return Err(RegistryError::InvalidParameters { name: spec.name.clone(), problem: error.to_string() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Fixed(ToolSpec);

    #[async_trait]
    impl Tool for Fixed {
        fn spec(&self) -> ToolSpec {
            self.0.clone()
        }
        async fn execute(&self, _: Value, _: &ToolContext) -> Result<String, ToolError> {
            Ok(String::new())
        }
    }

    fn tool(spec: ToolSpec) -> Arc<dyn Tool> {
        Arc::new(Fixed(spec))
    }

    fn ask() -> Value {
        json!({"type": "object", "properties": {"answer": {"type": "string"}}})
    }

    #[test]
    fn rejects_a_tool_that_writes_and_asks() {
        for effect in [ToolEffect::IdempotentWrite, ToolEffect::NonIdempotentWrite] {
            let spec = ToolSpec::new("w", "", json!({})).with_effect(effect).with_input_schema(ask());
            assert_eq!(ToolRegistry::new().register(tool(spec)), Err(RegistryError::ApprovalAndInput("w".into())));
        }
        let approval_bound_read = ToolSpec::new("r", "", json!({})).with_required_approval().with_input_schema(ask());
        assert!(matches!(
            ToolRegistry::new().register(tool(approval_bound_read)),
            Err(RegistryError::ApprovalAndInput(_))
        ));
        let asking_read = ToolSpec::new("ok", "", json!({})).with_input_schema(ask());
        assert_eq!(ToolRegistry::new().register(tool(asking_read)), Ok(()));
    }

    #[test]
    fn rejects_duplicate_and_empty_names() {
        let mut registry = ToolRegistry::new();
        registry.register(tool(ToolSpec::new("read", "", json!({})))).unwrap();
        let again = registry.register(tool(ToolSpec::new("read", "other", json!({}))));
        assert_eq!(again, Err(RegistryError::DuplicateName("read".into())));
        assert_eq!(registry.register(tool(ToolSpec::new(" ", "", json!({})))), Err(RegistryError::EmptyName));
        assert_eq!(registry.names().collect::<Vec<_>>(), ["read"]);
    }

    #[test]
    fn normalises_parameters_and_refuses_non_object_schemas() {
        let mut registry = ToolRegistry::new();
        registry.register(tool(ToolSpec::new("a", "", json!({"properties": []})))).unwrap();
        assert_eq!(registry.get("a").unwrap().spec.parameters, json!({"type": "object", "properties": {}}));
        let bad = registry.register(tool(ToolSpec::new("b", "", json!({"type": "string"}))));
        assert!(matches!(bad, Err(RegistryError::InvalidParameters { .. })));
        let degenerate_input = registry.register(tool(ToolSpec::new("c", "", json!({})).with_input_schema(json!({}))));
        assert!(matches!(degenerate_input, Err(RegistryError::InvalidInputSchema { .. })));
    }
}
