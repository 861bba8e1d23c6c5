//! A worker that has just started, while its MCP servers are still connecting: answers and
//! decisions recorded for it wait until the servers have listed their tools and are then carried
//! out; a question whose holder died is withdrawn at once, whatever the worker's tools are; and
//! nothing reads as a permission problem. The servers are slow because the test holds them (a
//! gate it opens), not for a time.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams,
    InputRequest, InputRequests, InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::harness::{texts, Client};
use crate::mcp::{decide, server_script, wait_for_tool};
use crate::processes::{ModelHandle, ServerProcess};

/// A server of the newer revision: `greet` (a read) asks in its result (SEP-2322), so its
/// question lives in the pause and any process can carry the answer; `note` is a write (no
/// annotations), so it waits on a card.
#[derive(Clone)]
struct Desk;

fn object(value: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(value.as_object().cloned().unwrap())
}

impl ServerHandler for Desk {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.protocol_version = ProtocolVersion::V_2026_07_28;
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let greet = Tool::new("greet", "Greets someone after asking their name", object(json!({ "type": "object" })))
            .annotate(ToolAnnotations::new().read_only(true));
        let note = Tool::new("note", "Writes a note", object(json!({ "type": "object" })));
        Ok(ListToolsResult::with_all_items(vec![greet, note]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "note" {
            return Ok(CallToolResult::success(vec![ContentBlock::text("the note is written")]).into());
        }
        match request.input_responses.as_ref() {
            None => {
                let schema = serde_json::from_value(json!({
                    "type": "object",
                    "properties": { "name": { "type": "string", "title": "Your name" } },
                    "required": ["name"]
                }))
                .unwrap();
                let mut requests = InputRequests::new();
                requests.insert(
                    "who".to_string(),
                    InputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
                        meta: None,
                        message: "Who is there?".into(),
                        requested_schema: schema,
                    })),
                );
                Ok(InputRequiredResult::new(Some(requests), Some("asked".to_string())).into())
            }
            Some(responses) => {
                let name = responses.get("who").and_then(|answer| answer["content"]["name"].as_str()).unwrap_or("?");
                Ok(CallToolResult::success(vec![ContentBlock::text(format!("Hello, {name}!"))]).into())
            }
        }
    }
}

/// Holds every request while closed: a server that is slow to come up, for as long as the test
/// says.
async fn gate(State(open): State<watch::Sender<bool>>, request: Request, next: Next) -> axum::response::Response {
    let _ = open.subscribe().wait_for(|open| *open).await;
    next.run(request).await
}

/// Serves [`Desk`] on 127.0.0.1 behind the gate `open`; returns its URL.
async fn serve_desk(open: watch::Sender<bool>) -> String {
    let service = StreamableHttpService::new(
        || Ok(Desk),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn_with_state(open, gate));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/mcp")
}

/// `server-everything` over stdio, started only once the file `closed` is gone: a server whose
/// `initialize` comes as late as the test wants.
fn gated_everything(closed: &Path) -> Value {
    let script = server_script("server-everything");
    let wait = format!("while [ -e '{}' ]; do sleep 0.05; done; exec node '{script}' stdio", closed.display());
    json!({ "command": "sh", "args": ["-c", wait] })
}

async fn say(client: &Client, id: &str, text: &str) -> Value {
    let (status, body) = client.call_json("send_message", &[("conversation_id", id), ("content", text)]).await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(id).await
}

fn no_permission_sentence(conversation: &Value) {
    let error = conversation["error"].as_str().unwrap_or_default();
    assert!(!error.contains("permissions"), "a tool not listed yet reads as a permission problem: {conversation}");
}

#[tokio::test]
async fn a_worker_whose_mcp_servers_are_still_connecting_waits_for_them_and_withdraws_a_dead_workers_question_first() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelHandle::start(0).await;
    model.hold.store(false, Ordering::SeqCst);
    let (desk_open, _) = watch::channel(true);
    let desk = serve_desk(desk_open.clone()).await;
    let closed = dir.path().join("everything-closed");
    let config = dir.path().join("mcp.json");
    let mcp = json!({
        "mcpServers": { "desk": { "url": desk }, "everything": gated_everything(&closed) },
        "elicitationTimeoutSeconds": 600
    });
    std::fs::write(&config, mcp.to_string()).unwrap();
    let environment = [("TOURGUIDE_MCP_CONFIG", config.display().to_string())];
    let web = ServerProcess::spawn_with(&dir, &model, true, false, &environment).await.unwrap();
    let first = ServerProcess::spawn_with(&dir, &model, false, true, &environment).await.unwrap();
    let client = web.signed_in().await;
    for tool in ["desk.greet", "desk.note", "everything.trigger-elicitation-request"] {
        wait_for_tool(&client, tool).await;
    }

    // Three things wait, each made by the first worker once it offers the tools: a card for a
    // write, a question kept in the pause, and a question over an open call the first worker holds.
    let offered =
        |conversation: &Value| !texts(conversation).last().is_some_and(|line| line.contains("is not offered"));
    let mut waiting = Vec::new();
    for (ask, status) in [
        ("mcp desk__note", "awaiting_approval"),
        ("mcp desk__greet", "awaiting_input"),
        ("mcp everything__trigger-elicitation-request", "awaiting_approval"),
    ] {
        let conversation = loop {
            let id = client.create_conversation().await;
            let conversation = say(&client, &id, ask).await;
            if offered(&conversation) {
                break conversation;
            }
        };
        assert_eq!(conversation["status"], status, "{ask}: {conversation}");
        waiting.push(conversation);
    }
    let held = decide(&client, &waiting[2], "approve").await;
    assert_eq!(held["status"], "awaiting_input", "{held}");
    waiting[2] = held;

    // The worker dies; the person decides and answers all three through the web process.
    first.kill_9().await;
    let id = |index: usize| waiting[index]["id"].as_str().unwrap().to_string();
    let (card, durable, live) = (id(0), id(1), id(2));
    let digest = |index: usize, key: &str| waiting[index][key]["digest"].as_str().unwrap().to_string();
    let (status, body) = client
        .call_json("decide", &[("conversation_id", &card), ("digest", &digest(0, "card")), ("decision", "approve")])
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = client
        .call_json(
            "answer",
            &[("conversation_id", &durable), ("digest", &digest(1, "question")), ("fields[name]", "Ada")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = client
        .call_json(
            "answer",
            &[("conversation_id", &live), ("digest", &digest(2, "question")), ("fields[name]", "Grace")],
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // A new worker starts while both servers hold back their first answer.
    desk_open.send_replace(false);
    std::fs::write(&closed, "").unwrap();
    let second = ServerProcess::spawn_with(&dir, &model, false, true, &environment).await.unwrap();

    // The question the dead worker held is withdrawn without waiting for the servers (on
    // PostgreSQL once the dead worker's heartbeat has lapsed).
    let withdrawn = client.settled_conversation(&live).await;
    assert_eq!(withdrawn["status"], "idle", "{withdrawn}");
    assert!(withdrawn["error"].as_str().unwrap_or_default().contains("stopped waiting"), "{withdrawn}");
    let last = texts(&withdrawn).last().unwrap().clone();
    assert!(last.starts_with("Noted:") && last.contains("ended without the user's answer"), "{last}");
    no_permission_sentence(&withdrawn);

    // The card and the answer wait for the servers rather than being refused.
    for id in [&card, &durable] {
        let (_, conversation) = client.conversation(id).await;
        assert_eq!(conversation["status"], "processing", "it waits for the tools: {conversation}");
    }
    desk_open.send_replace(true);
    std::fs::remove_file(&closed).unwrap();
    let approved = client.settled_conversation(&card).await;
    no_permission_sentence(&approved);
    assert_eq!(approved["status"], "idle", "{approved}");
    let last = texts(&approved).last().unwrap().clone();
    assert!(last.starts_with("Noted:") && last.contains("the note is written"), "{last}");
    let answered = client.settled_conversation(&durable).await;
    no_permission_sentence(&answered);
    assert_eq!(answered["status"], "idle", "{answered}");
    let last = texts(&answered).last().unwrap().clone();
    assert!(last.starts_with("Noted:") && last.contains("Hello, Ada!"), "{last}");

    for process in [web, second] {
        process.kill_9().await;
    }
}
