//! kill -9 of the real server binary at the worst moments, then a restart on the same database:
//! nothing the user did is lost, no write runs twice, and the run is carried on.
//!
//! The binary talks to an OpenAI-compatible model served by this test (the same wire format a
//! real provider speaks), which answers from the transcript and can hold a continuation in flight
//! so the kill lands while the run is really working.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::harness::{texts, Client, PASSWORD};

const NEW_TITLE: &str = "Bread that survives a crash";

// --- the model ------------------------------------------------------------------------------

#[derive(Clone)]
struct FakeModel {
    /// While set, a continuation (the model called after a tool result) never gets its answer.
    hold: Arc<AtomicBool>,
    held: mpsc::UnboundedSender<String>,
    questions_asked: Arc<AtomicUsize>,
    writes_proposed: Arc<AtomicUsize>,
    page_id: i64,
}

struct ModelHandle {
    base_url: String,
    hold: Arc<AtomicBool>,
    held: mpsc::UnboundedReceiver<String>,
    questions_asked: Arc<AtomicUsize>,
    writes_proposed: Arc<AtomicUsize>,
}

impl ModelHandle {
    async fn start(page_id: i64) -> ModelHandle {
        let (sender, held) = mpsc::unbounded_channel();
        let model = FakeModel {
            hold: Arc::new(AtomicBool::new(true)),
            held: sender,
            questions_asked: Arc::default(),
            writes_proposed: Arc::default(),
            page_id,
        };
        let handle = ModelHandle {
            base_url: String::new(),
            hold: model.hold.clone(),
            held,
            questions_asked: model.questions_asked.clone(),
            writes_proposed: model.writes_proposed.clone(),
        };
        let app = Router::new().route("/v1/chat/completions", post(complete)).with_state(model);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        ModelHandle { base_url: format!("http://{address}/v1"), ..handle }
    }

    /// Waits until a continuation is being held, and returns the tool result it carries.
    async fn continuation_in_flight(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(30), self.held.recv())
            .await
            .expect("the run never called the model after the tool result")
            .unwrap()
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

async fn complete(State(model): State<FakeModel>, Json(request): Json<Value>) -> Json<Value> {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let content = last["content"].as_str().unwrap_or_default().to_string();
    match last["role"].as_str() {
        Some("tool") => {
            if model.hold.load(Ordering::SeqCst) {
                let _ = model.held.send(content.clone());
                // The server is killed while it waits here; the connection simply goes away.
                std::future::pending::<()>().await;
            }
            text(format!("Noted: {content}"))
        }
        Some("user") if content.contains("ask me") => {
            model.questions_asked.fetch_add(1, Ordering::SeqCst);
            tool_call("ask_choice", json!({ "question": "Which crust?", "options": ["Crisp", "Soft"] }))
        }
        Some("user") if content.contains("write it") => {
            model.writes_proposed.fetch_add(1, Ordering::SeqCst);
            tool_call("update_page_field", json!({ "page_id": model.page_id, "field": "title", "value": NEW_TITLE }))
        }
        _ => text(format!("You said: {content}")),
    }
}

// --- the server process ---------------------------------------------------------------------

struct ServerProcess {
    child: Child,
    base: String,
}

impl ServerProcess {
    async fn start(dir: &std::path::Path, model: &ModelHandle, worker: bool) -> ServerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_server"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("TOURGUIDE_DATABASE", dir.join("crash.db"))
            .env("TOURGUIDE_ADDRESS", "127.0.0.1:0")
            .env("LEPTOS_SITE_ROOT", dir.join("site"))
            .env("TOURGUIDE_DEMO_PASSWORD", PASSWORD)
            .env("TOURGUIDE_OPENAI_MODEL", "fake-model")
            .env("TOURGUIDE_OPENAI_BASE_URL", &model.base_url)
            .env("TOURGUIDE_WORKER", if worker { "on" } else { "off" })
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the server binary starts");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let base = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(address) = line.strip_prefix("Tourguide listens on ") {
                    return address.trim().to_string();
                }
            }
            panic!("the server exited before it listened");
        })
        .await
        .expect("the server listens within 30 s");
        // Keep draining stdout so the process never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        ServerProcess { child, base }
    }

    /// SIGKILL: no shutdown hook, no flush, no graceful anything.
    async fn kill_9(mut self) {
        self.child.start_kill().unwrap();
        let status = self.child.wait().await.unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "the server died of SIGKILL");
    }

    /// A new browser session on this process (a restart listens on another port).
    async fn signed_in(&self) -> Client {
        let client = Client::new(&self.base);
        client.sign_in("demo").await;
        client
    }
}

async fn ask(client: &Client) -> (String, Value) {
    let id = client.create_conversation().await;
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", "ask me")]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    (id, conversation)
}

async fn answer_soft(client: &Client, id: &str, question: &Value) {
    let digest = question["question"]["digest"].as_str().expect("a question digest");
    let (status, body) =
        client.call_json("answer", &[("conversation_id", id), ("digest", digest), ("choice", "\"Soft\"")]).await;
    assert_eq!(status, 200, "{body}");
}

fn assert_answered_once(conversation: &Value) {
    assert_eq!(conversation["status"], "idle", "{conversation}");
    let texts = texts(conversation);
    assert_eq!(texts.len(), 4, "ask, question, answer, reply, each once: {texts:?}");
    assert_eq!(texts[0], "ask me");
    assert!(texts[1].contains("Which crust?"), "{texts:?}");
    assert_eq!(texts[2], "Soft");
    assert!(texts[3].starts_with("Noted: ") && texts[3].contains("Soft"), "the model got the answer: {texts:?}");
}

// --- the stories ----------------------------------------------------------------------------

#[tokio::test]
async fn kill_9_while_the_answered_run_continues_then_restart_carries_it_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = ModelHandle::start(1).await;
    let server = ServerProcess::start(dir.path(), &model, true).await;
    let client = server.signed_in().await;
    let (id, question) = ask(&client).await;
    answer_soft(&client, &id, &question).await;

    let delivered = model.continuation_in_flight().await;
    assert!(delivered.contains("Soft"), "{delivered}");
    server.kill_9().await;

    model.hold.store(false, Ordering::SeqCst);
    let server = ServerProcess::start(dir.path(), &model, true).await;
    let client = server.signed_in().await;
    let conversation = client.settled_conversation(&id).await;
    assert_answered_once(&conversation);
    assert_eq!(model.questions_asked.load(Ordering::SeqCst), 1, "the question was not asked again");
    server.kill_9().await;
}

#[tokio::test]
async fn kill_9_with_an_answer_recorded_but_not_taken_then_restart_continues_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelHandle::start(1).await;
    model.hold.store(false, Ordering::SeqCst);

    // A question waits; the process dies while it waits.
    let server = ServerProcess::start(dir.path(), &model, true).await;
    let client = server.signed_in().await;
    let (id, question) = ask(&client).await;
    server.kill_9().await;

    // A web-only process records the answer; nobody takes it before the next kill.
    let server = ServerProcess::start(dir.path(), &model, false).await;
    let client = server.signed_in().await;
    let (status, same) = client.conversation(&id).await;
    assert_eq!(status, 200, "{same}");
    assert_eq!(same["question"]["digest"], question["question"]["digest"], "the question survived unchanged");
    answer_soft(&client, &id, &same).await;
    let (_, recorded) = client.conversation(&id).await;
    assert_eq!(recorded["status"], "processing", "recorded, not taken: {recorded}");
    assert_eq!(texts(&recorded).last().unwrap(), "Soft");
    server.kill_9().await;

    let server = ServerProcess::start(dir.path(), &model, true).await;
    let client = server.signed_in().await;
    let conversation = client.settled_conversation(&id).await;
    assert_answered_once(&conversation);
    assert_eq!(model.questions_asked.load(Ordering::SeqCst), 1);
    server.kill_9().await;
}

#[tokio::test]
async fn kill_9_after_an_approved_write_never_writes_twice() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = ModelHandle::start(1).await;
    let server = ServerProcess::start(dir.path(), &model, true).await;
    let client = server.signed_in().await;

    let (status, before) = client.call_json("page", &[("id", "1")]).await;
    assert_eq!(status, 200, "{before}");
    assert_ne!(before["title"], NEW_TITLE);
    let version = before["version"].as_i64().unwrap();

    let id = client.create_conversation().await;
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", "write it")]).await;
    assert_eq!(status, 200, "{body}");
    let card = client.settled_conversation(&id).await;
    assert_eq!(card["status"], "awaiting_approval", "{card}");
    let digest = card["card"]["digest"].as_str().unwrap();
    let (status, body) =
        client.call_json("decide", &[("conversation_id", &id), ("digest", digest), ("decision", "approve")]).await;
    assert_eq!(status, 200, "{body}");

    // The write has run and its result is on the way back to the model when the process dies.
    model.continuation_in_flight().await;
    server.kill_9().await;

    model.hold.store(false, Ordering::SeqCst);
    let server = ServerProcess::start(dir.path(), &model, true).await;
    let client = server.signed_in().await;
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    let (_, after) = client.call_json("page", &[("id", "1")]).await;
    assert_eq!(after["title"], NEW_TITLE);
    assert_eq!(after["version"].as_i64().unwrap(), version + 1, "the approved write ran exactly once");
    let replies: Vec<String> = texts(&conversation).into_iter().filter(|t| t.starts_with("Noted: ")).collect();
    assert_eq!(replies.len(), 1, "{conversation}");
    assert_eq!(model.writes_proposed.load(Ordering::SeqCst), 1, "the write was not proposed again");
    server.kill_9().await;
}
