//! Shared fixtures: a real SQLite file, a scripted provider that implements `ModelProvider` for
//! real, and tools that count what they did.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use db::{on, Db, Location};
use runtime::{
    Actor, ChatMessage, Completion, CompletionRequest, ModelProvider, ProviderError, Role, RunRequest, Runtime,
    RuntimeSettings, Tool, ToolCall, ToolContext, ToolEffect, ToolError, ToolRegistry, ToolSpec,
};
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::sync::Notify;

pub const OWNER: Actor = Actor { user_id: 1, admin: false };
pub const OTHER: Actor = Actor { user_id: 2, admin: false };
pub const ADMIN: Actor = Actor { user_id: 99, admin: true };
pub const CONFIG: &str = "default";

/// Lets a test hold a provider call or a tool execution at a known point.
#[derive(Default)]
pub struct Gate {
    entered: Notify,
    release: Notify,
}

impl Gate {
    pub fn new() -> Arc<Self> {
        Arc::new(Gate::default())
    }

    async fn pass(&self) {
        self.entered.notify_one();
        self.release.notified().await;
    }

    pub async fn wait_entered(&self) {
        tokio::time::timeout(Duration::from_secs(20), self.entered.notified()).await.expect("gate never entered");
    }

    pub fn open(&self) {
        self.release.notify_one();
    }
}

pub enum Step {
    Reply(Completion),
    Fail(u16),
    Gated(Arc<Gate>, Completion),
}

type Responder = Box<dyn Fn(&CompletionRequest) -> Completion + Send + Sync>;

/// Answers from a queue (or, once it is empty, from a function of the transcript) and records
/// every request it was sent.
#[derive(Default)]
pub struct ScriptedProvider {
    script: Mutex<VecDeque<Step>>,
    responder: Option<Responder>,
    pub requests: Mutex<Vec<CompletionRequest>>,
}

impl ScriptedProvider {
    pub fn new(script: Vec<Step>) -> Arc<Self> {
        Arc::new(ScriptedProvider { script: Mutex::new(script.into()), ..Default::default() })
    }

    pub fn responding(responder: impl Fn(&CompletionRequest) -> Completion + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(ScriptedProvider { responder: Some(Box::new(responder)), ..Default::default() })
    }

    pub fn requests(&self) -> Vec<CompletionRequest> {
        self.requests.lock().unwrap().clone()
    }

    pub fn last_request(&self) -> CompletionRequest {
        self.requests().pop().expect("the provider was never called")
    }
}

#[async_trait]
impl ModelProvider for ScriptedProvider {
    fn label(&self) -> String {
        "scripted".into()
    }

    fn is_demo(&self) -> bool {
        false
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, ProviderError> {
        self.requests.lock().unwrap().push(request);
        let step = self.script.lock().unwrap().pop_front();
        match step {
            Some(Step::Reply(completion)) => Ok(completion),
            Some(Step::Fail(status)) => Err(ProviderError::Status { status }),
            Some(Step::Gated(gate, completion)) => {
                gate.pass().await;
                Ok(completion)
            }
            None => match &self.responder {
                Some(responder) => Ok(responder(&self.requests.lock().unwrap().last().cloned().unwrap_or_default())),
                None => Err(ProviderError::Malformed("script exhausted".into())),
            },
        }
    }
}

pub fn text(content: &str) -> Step {
    Step::Reply(Completion { content: content.into(), tool_calls: Vec::new() })
}

pub fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall { id: id.into(), name: name.into(), arguments }
}

pub fn calls(tool_calls: Vec<ToolCall>) -> Step {
    Step::Reply(Completion { content: String::new(), tool_calls })
}

pub fn ask(id: &str, question: &str, options: &[&str]) -> ToolCall {
    call(id, "ask_choice", json!({ "question": question, "options": options }))
}

/// The tool result the model was shown for `call_id` in `request`.
pub fn tool_result(request: &CompletionRequest, call_id: &str) -> String {
    request
        .messages
        .iter()
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call_id))
        .map(|m| m.content.clone())
        .unwrap_or_else(|| panic!("no result for {call_id} in {:#?}", request.messages))
}

enum Behaviour {
    Answer(String),
    Fail,
    Gated(Arc<Gate>, String),
}

/// A tool that counts its executions and remembers the arguments it ran with.
pub struct TestTool {
    spec: ToolSpec,
    behaviour: Behaviour,
    denied_users: Vec<i64>,
    executions: AtomicUsize,
    arguments: Mutex<Vec<Value>>,
}

impl TestTool {
    fn build(spec: ToolSpec) -> Self {
        TestTool {
            behaviour: Behaviour::Answer(format!("{} done", spec.name)),
            spec,
            denied_users: Vec::new(),
            executions: AtomicUsize::new(0),
            arguments: Mutex::new(Vec::new()),
        }
    }

    pub fn read(name: &str) -> Self {
        Self::build(ToolSpec::new(name, "reads", json!({"type": "object", "properties": {"page": {"type": "string"}}})))
    }

    pub fn write(name: &str, effect: ToolEffect) -> Self {
        Self::build(
            ToolSpec::new(name, "writes", json!({"type": "object", "properties": {"value": {"type": "string"}}}))
                .with_effect(effect),
        )
    }

    pub fn asking(name: &str, schema: Value) -> Self {
        Self::build(ToolSpec::new(name, "asks", json!({})).with_input_schema(schema))
    }

    /// Reaches the open world (a search, a fetch).
    pub fn open_world(mut self) -> Self {
        self.spec = self.spec.with_open_world(true);
        self
    }

    /// Comes from a source (as an MCP server's tools do).
    pub fn of_source(mut self, origin: &str) -> Self {
        self.spec = self.spec.with_origin(origin);
        self
    }

    pub fn failing(mut self) -> Self {
        self.behaviour = Behaviour::Fail;
        self
    }

    pub fn gated(mut self, gate: Arc<Gate>) -> Self {
        self.behaviour = Behaviour::Gated(gate, format!("{} done", self.spec.name));
        self
    }

    pub fn deny(mut self, user_id: i64) -> Self {
        self.denied_users.push(user_id);
        self
    }

    pub fn executions(&self) -> usize {
        self.executions.load(Ordering::SeqCst)
    }

    pub fn arguments(&self) -> Vec<Value> {
        self.arguments.lock().unwrap().clone()
    }

    pub fn arc(self) -> Arc<Self> {
        Arc::new(self)
    }
}

#[async_trait]
impl Tool for TestTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn permits(&self, actor: &Actor) -> bool {
        !self.denied_users.contains(&actor.user_id)
    }

    async fn execute(&self, arguments: Value, _context: &ToolContext) -> Result<String, ToolError> {
        self.executions.fetch_add(1, Ordering::SeqCst);
        self.arguments.lock().unwrap().push(arguments);
        match &self.behaviour {
            Behaviour::Answer(text) => Ok(text.clone()),
            Behaviour::Fail => Err(ToolError::failed("connect to postgres://admin:hunter2@db failed")),
            Behaviour::Gated(gate, text) => {
                gate.pass().await;
                Ok(text.clone())
            }
        }
    }
}

pub fn registry(tools: Vec<Arc<dyn Tool>>) -> Arc<ToolRegistry> {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool).expect("test tool registers");
    }
    Arc::new(registry)
}

/// A runtime over a real SQLite file in a temporary directory, in WAL mode.
pub struct Harness {
    pub dir: TempDir,
    pub location: Location,
    pub db: Db,
    pub runtime: Arc<Runtime>,
    pub provider: Arc<ScriptedProvider>,
}

pub fn fast_settings() -> RuntimeSettings {
    RuntimeSettings { retry_backoff_seconds: 0, ..RuntimeSettings::default() }
}

/// Where a test's database lives: a file in `dir`, or a fresh database on the PostgreSQL server
/// named by `TOURGUIDE_TEST_POSTGRES` when that is set (the suite then runs on PostgreSQL).
pub async fn test_location(dir: &Path) -> Location {
    match db::scratch_postgres().await.expect("a scratch PostgreSQL database") {
        Some(url) => Location::Postgres(url),
        None => Location::Sqlite(dir.join("runtime.sqlite")),
    }
}

/// The database as production opens it (same connection settings), with the runtime's tables.
pub async fn open_db(location: &Location) -> Db {
    let db = Db::open(location).await.expect("the database opens");
    db.migrate(&runtime::migrations()).await.expect("migrations run");
    db
}

/// What the other side of a race holds: SQLite's write lock, or on PostgreSQL a lock on `runs`
/// that lets reads through and holds every write.
pub enum WriteLock {
    Sqlite(db::Checkout),
    Postgres(db::PgTx),
}

impl WriteLock {
    pub async fn release(self) {
        match self {
            WriteLock::Sqlite(mut connection) => {
                sqlx::query("COMMIT").execute(&mut *connection).await.unwrap();
            }
            WriteLock::Postgres(transaction) => transaction.commit().await.unwrap(),
        }
    }
}

impl Harness {
    pub async fn new(tools: Vec<Arc<dyn Tool>>, script: Vec<Step>) -> Self {
        Self::with_settings(tools, script, fast_settings()).await
    }

    pub async fn with_settings(tools: Vec<Arc<dyn Tool>>, script: Vec<Step>, settings: RuntimeSettings) -> Self {
        Self::with_provider(tools, ScriptedProvider::new(script), settings).await
    }

    pub async fn with_provider(
        tools: Vec<Arc<dyn Tool>>,
        provider: Arc<ScriptedProvider>,
        settings: RuntimeSettings,
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let location = test_location(dir.path()).await;
        let db = open_db(&location).await;
        let runtime = Arc::new(Runtime::new(db.clone(), registry(tools), provider.clone(), settings));
        Harness { dir, location, db, runtime, provider }
    }

    /// Runs one statement with text parameters (`$1`, `$2`, …) on either database.
    /// Enqueues the usual request and carries it on in a task of its own, as a worker would.
    pub async fn run_in_background(
        &self,
    ) -> (uuid::Uuid, tokio::task::JoinHandle<Result<Option<runtime::RunResult>, runtime::RuntimeError>>) {
        let run_id = self.runtime.enqueue(request()).await.unwrap();
        let runtime = self.runtime.clone();
        (run_id, tokio::spawn(async move { runtime.run_queued(run_id).await }))
    }

    pub async fn exec(&self, sql: &'static str, binds: &[&str]) {
        on!(&self.db, pool => {
            let mut query = sqlx::query(sql);
            for bind in binds {
                query = query.bind(*bind);
            }
            query.execute(pool).await.map(|done| done.rows_affected())
        })
        .unwrap_or_else(|error| panic!("{sql}: {error}"));
    }

    /// Holds every write to `runs` until [`WriteLock::release`]; reads go on.
    pub async fn hold_write_lock(&self) -> WriteLock {
        match &self.db {
            Db::Sqlite(db::Sqlite { write: pool, .. }) => {
                let mut connection = pool.acquire().await.unwrap();
                sqlx::query("BEGIN IMMEDIATE").execute(&mut *connection).await.unwrap();
                WriteLock::Sqlite(connection)
            }
            Db::Postgres(pool) => {
                let mut transaction = pool.begin().await.unwrap();
                sqlx::query("LOCK TABLE runs IN EXCLUSIVE MODE").execute(&mut *transaction).await.unwrap();
                WriteLock::Postgres(transaction)
            }
        }
    }

    /// Simulates a restart: the old runtime and every connection go away, a new runtime opens the
    /// same file with its own provider and registry.
    pub async fn restart(self, tools: Vec<Arc<dyn Tool>>, script: Vec<Step>) -> Self {
        self.restart_with(registry(tools), script).await
    }

    /// [`Harness::restart`] with a registry of the test's making (tools from a source, say).
    pub async fn restart_with(self, registry: Arc<ToolRegistry>, script: Vec<Step>) -> Self {
        let Harness { dir, location, db, runtime, provider: _ } = self;
        drop(runtime);
        db.close().await;
        let db = open_db(&location).await;
        let provider = ScriptedProvider::new(script);
        let runtime = Arc::new(Runtime::new(db.clone(), registry, provider.clone(), fast_settings()));
        Harness { dir, location, db, runtime, provider }
    }
}

pub fn request() -> RunRequest {
    RunRequest::new(
        OWNER,
        CONFIG,
        vec![ChatMessage::system("You are a guide."), ChatMessage::user("Show me the page.")],
    )
}

pub fn approval_pause(result: &runtime::RunResult) -> runtime::ApprovalPause {
    match &result.outcome {
        runtime::RunOutcome::AwaitingApproval { pause } => pause.clone(),
        other => panic!("expected an approval pause, got {other:?}"),
    }
}

pub fn input_pause(result: &runtime::RunResult) -> runtime::InputPause {
    match &result.outcome {
        runtime::RunOutcome::AwaitingInput { pause } => pause.clone(),
        other => panic!("expected an input pause, got {other:?}"),
    }
}

pub fn answer(result: &runtime::RunResult) -> String {
    match &result.outcome {
        runtime::RunOutcome::Completed { answer, .. } => answer.clone(),
        other => panic!("expected a completed run, got {other:?}"),
    }
}

pub fn submission(values: Value, digest: &str) -> runtime::InputSubmission {
    runtime::InputSubmission::values(values.as_object().cloned().expect("values are an object"), Some(digest.into()))
}

pub async fn status_of(runtime: &Runtime, run_id: uuid::Uuid) -> runtime::RunView {
    runtime.status(&OWNER, run_id).await.expect("status readable").expect("run visible to its owner")
}
