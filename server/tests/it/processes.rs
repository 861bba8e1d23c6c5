//! Real server processes for the tests that kill or split them, and the OpenAI-compatible model
//! they talk to (served by the test, in the wire format a real provider speaks). The model answers
//! from the transcript and can hold a continuation in flight, so a kill lands while a run is
//! really working.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use db::Location;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

use crate::harness::{location_in, Client, PASSWORD};

/// Short, so that a worker's work is taken over soon after it died (on PostgreSQL, where
/// nothing but the lease tells a dead worker from a slow one).
pub const LEASE_SECONDS: &str = "2";

pub const NEW_TITLE: &str = "Bread that survives a crash";

// --- the model ------------------------------------------------------------------------------

#[derive(Clone)]
struct FakeModel {
    /// While set, a continuation (the model called after a tool result) gets its answer only when
    /// the test releases it ([`Held`]).
    hold: Arc<AtomicBool>,
    held: mpsc::UnboundedSender<Held>,
    questions_asked: Arc<AtomicUsize>,
    writes_proposed: Arc<AtomicUsize>,
    continuations: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    page_id: i64,
}

pub struct ModelHandle {
    pub base_url: String,
    pub hold: Arc<AtomicBool>,
    held: mpsc::UnboundedReceiver<Held>,
    pub questions_asked: Arc<AtomicUsize>,
    pub writes_proposed: Arc<AtomicUsize>,
    /// Every continuation the model answered (a held one that died with its worker is not).
    pub continuations: Arc<AtomicUsize>,
    /// Every call the model received.
    pub requests: Arc<AtomicUsize>,
}

impl ModelHandle {
    pub async fn start(page_id: i64) -> ModelHandle {
        let (sender, held) = mpsc::unbounded_channel();
        let model = FakeModel {
            hold: Arc::new(AtomicBool::new(true)),
            held: sender,
            questions_asked: Arc::default(),
            writes_proposed: Arc::default(),
            continuations: Arc::default(),
            requests: Arc::default(),
            page_id,
        };
        let handle = ModelHandle {
            base_url: String::new(),
            hold: model.hold.clone(),
            held,
            questions_asked: model.questions_asked.clone(),
            writes_proposed: model.writes_proposed.clone(),
            continuations: model.continuations.clone(),
            requests: model.requests.clone(),
        };
        let app = Router::new().route("/v1/chat/completions", post(complete)).with_state(model);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        ModelHandle { base_url: format!("http://{address}/v1"), ..handle }
    }

    /// Waits until a continuation is being held, and returns the tool result it carries. That
    /// continuation is never answered (its worker is about to die).
    pub async fn continuation_in_flight(&mut self) -> String {
        self.held_continuation().await.content
    }

    /// Waits until a continuation is being held; the test answers it or lets its worker die.
    pub async fn held_continuation(&mut self) -> Held {
        tokio::time::timeout(Duration::from_secs(30), self.held.recv())
            .await
            .expect("the run never called the model after the tool result")
            .unwrap()
    }
}

/// A continuation the model holds: it is answered when released; dropped, it is held for good.
pub struct Held {
    /// The tool result it carries.
    pub content: String,
    release: oneshot::Sender<()>,
}

impl Held {
    /// Lets the model answer it (it counts in `continuations` then).
    pub fn release(self) {
        let _ = self.release.send(());
    }

    /// Whether the call went away unanswered: its connection closed, so it can never count.
    pub fn gone(&self) -> bool {
        self.release.is_closed()
    }
}

fn tool_call(name: &str, arguments: Value) -> Json<Value> {
    Json(json!({
        "choices": [{
            "message": { "role": "assistant", "content": null, "tool_calls": [{
                "id": format!("call_{name}"), "type": "function",
                "function": { "name": name, "arguments": arguments.to_string() }
            }]},
            "finish_reason": "tool_calls"
        }]
    }))
}

fn text(content: String) -> Json<Value> {
    Json(json!({ "choices": [{ "message": { "role": "assistant", "content": content }, "finish_reason": "stop" }] }))
}

async fn complete(State(model): State<FakeModel>, Json(request): Json<Value>) -> axum::response::Response {
    use axum::response::IntoResponse;
    match reply(model, request).await {
        Ok(reply) => reply.into_response(),
        Err(status) => (status, "rejected by the test model").into_response(),
    }
}

/// The model's reply, or the status it refuses the call with.
async fn reply(model: FakeModel, request: Value) -> Result<Json<Value>, axum::http::StatusCode> {
    model.requests.fetch_add(1, Ordering::SeqCst);
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let content = last["content"].as_str().unwrap_or_default().to_string();
    // `reject me`: a request the model refuses (400), as a provider does a malformed one.
    if content == "reject me" {
        return Err(axum::http::StatusCode::BAD_REQUEST);
    }
    Ok(match last["role"].as_str() {
        Some("tool") => {
            if model.hold.load(Ordering::SeqCst) {
                let (release, released) = oneshot::channel();
                let _ = model.held.send(Held { content: content.clone(), release });
                // The server is killed while it waits here; the connection simply goes away (and
                // with it this call). Not released: held for good.
                if released.await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            model.continuations.fetch_add(1, Ordering::SeqCst);
            text(format!("Noted: {content}"))
        }
        Some("user") if content.contains("ask me") => {
            model.questions_asked.fetch_add(1, Ordering::SeqCst);
            tool_call("ask_choice", json!({ "question": "Which crust?", "options": ["Crisp", "Soft"] }))
        }
        // `mcp NAME`: the tool of that name as the API sees it (an MCP tool `server.tool` is
        // offered as `server__tool`), when it is offered.
        Some("user") if content.starts_with("mcp ") => {
            let name = content["mcp ".len()..].trim();
            let offered = request["tools"]
                .as_array()
                .is_some_and(|tools| tools.iter().any(|tool| tool["function"]["name"] == name));
            if offered {
                tool_call(name, json!({}))
            } else {
                text(format!("{name} is not offered"))
            }
        }
        Some("user") if content.contains("write it") => {
            model.writes_proposed.fetch_add(1, Ordering::SeqCst);
            tool_call("update_page_field", json!({ "page_id": model.page_id, "field": "title", "value": NEW_TITLE }))
        }
        _ => text(format!("You said: {content}")),
    })
}

// --- the server process ---------------------------------------------------------------------

pub struct ServerProcess {
    child: Child,
    /// Where it serves HTTP; `None` for a worker-only process.
    pub base: Option<String>,
}

/// The `--database` value of the test that owns `dir`.
pub async fn database_of(dir: &tempfile::TempDir) -> String {
    match location_in(dir).await {
        Location::Sqlite(path) => path.display().to_string(),
        Location::Postgres(url) => url,
    }
}

impl ServerProcess {
    /// A process that serves HTTP, with or without the worker.
    pub async fn start(dir: &tempfile::TempDir, model: &ModelHandle, worker: bool) -> ServerProcess {
        Self::spawn(dir, model, true, worker).await.expect("the server starts")
    }

    /// A process that only runs the worker.
    pub async fn worker(dir: &tempfile::TempDir, model: &ModelHandle) -> ServerProcess {
        Self::spawn(dir, model, false, true).await.expect("the worker starts")
    }

    /// Starts the binary and waits for the line that says it is up; the error is what it said
    /// before it exited instead.
    pub async fn spawn(
        dir: &tempfile::TempDir,
        model: &ModelHandle,
        web: bool,
        worker: bool,
    ) -> Result<ServerProcess, String> {
        Self::spawn_with(dir, model, web, worker, &[]).await
    }

    /// [`ServerProcess::spawn`] with more environment (e.g. `TOURGUIDE_MCP_CONFIG`).
    pub async fn spawn_with(
        dir: &tempfile::TempDir,
        model: &ModelHandle,
        web: bool,
        worker: bool,
        environment: &[(&str, String)],
    ) -> Result<ServerProcess, String> {
        let switch = |on: bool| if on { "on" } else { "off" };
        let mut child = Command::new(env!("CARGO_BIN_EXE_server"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("TOURGUIDE_DATABASE", database_of(dir).await)
            .env("TOURGUIDE_ADDRESS", "127.0.0.1:0")
            .env("LEPTOS_SITE_ROOT", dir.path().join("site"))
            .env("TOURGUIDE_DEMO_PASSWORD", PASSWORD)
            .env("TOURGUIDE_LOGIN_ATTEMPTS", "100000")
            .env("TOURGUIDE_OPENAI_MODEL", "fake-model")
            .env("TOURGUIDE_OPENAI_BASE_URL", &model.base_url)
            .env("TOURGUIDE_WORKER", switch(worker))
            .env("TOURGUIDE_WEB", switch(web))
            .env("TOURGUIDE_LEASE_SECONDS", LEASE_SECONDS)
            // The tests' webhook receivers listen on 127.0.0.1.
            .env("TOURGUIDE_WEBHOOK_PRIVATE_NETWORKS", "on")
            .env("RUST_LOG", "warn")
            .envs(environment.iter().map(|(name, value)| (*name, value.as_str())))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the server binary starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut errors = BufReader::new(child.stderr.take().unwrap()).lines();
        let up = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(address) = line.strip_prefix("Tourguide listens on ") {
                    return Ok(Some(address.trim().to_string()));
                }
                if line.starts_with("Tourguide works on ") {
                    return Ok(None);
                }
            }
            let mut said = Vec::new();
            while let Ok(Some(line)) = errors.next_line().await {
                said.push(line);
            }
            Err(said.join("\n"))
        })
        .await
        .expect("the server starts or exits within 30 s")?;
        // Keep draining both pipes so the process never blocks on a full one.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        tokio::spawn(async move {
            while let Ok(Some(line)) = errors.next_line().await {
                eprintln!("[server] {line}");
            }
        });
        Ok(ServerProcess { child, base: up })
    }

    pub fn base(&self) -> &str {
        self.base.as_deref().expect("this process serves HTTP")
    }

    /// A field of the process's `/proc/PID/status`, as the kernel writes it.
    pub fn proc_status(&self, field: &str) -> Option<String> {
        let pid = self.child.id().expect("the server runs");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':').map(|value| value.trim().to_string()))
    }

    /// SIGKILL: no shutdown hook, no flush, no graceful anything.
    pub async fn kill_9(mut self) {
        self.child.start_kill().unwrap();
        let status = self.child.wait().await.unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "the server died of SIGKILL");
    }

    /// SIGTERM, as a service manager stops it: the process ends by itself, cleanly, soon.
    pub async fn terminate(mut self) {
        let pid = self.child.id().expect("the server runs");
        let sent = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap();
        assert!(sent.success());
        let waited = tokio::time::timeout(Duration::from_secs(15), self.child.wait()).await;
        let status = waited.expect("the server stops within 15 s of SIGTERM").unwrap();
        assert_eq!(status.code(), Some(0), "a SIGTERM ends the server cleanly: {status:?}");
    }

    /// A new browser session on this process (a restart listens on another port).
    pub async fn signed_in(&self) -> Client {
        let client = Client::new(self.base());
        client.sign_in("demo").await;
        client
    }
}
