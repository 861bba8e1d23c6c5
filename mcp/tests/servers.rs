//! Against real MCP servers nobody here wrote, installed from npm by the test command:
//! `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/server-filesystem`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcp::{McpConfig, McpHub, Problem, ServerState};
use runtime::{Actor, InputReply, RegisteredTool, ToolContext, ToolEffect, ToolOutput, ToolRegistry};
use serde_json::{json, Value};
use tokio::sync::watch;

fn server_script(package: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../end2end/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(path.exists(), "{} is missing: run `npm ci` in end2end (scripts/test does)", path.display());
    path.display().to_string()
}

fn context() -> ToolContext {
    ToolContext::new(uuid::Uuid::nil(), Actor::user(1), 1)
}

async fn hub(config: Value) -> (McpHub, watch::Sender<bool>) {
    let config = McpConfig::parse(&config.to_string()).unwrap();
    let (shutdown, stopped) = watch::channel(false);
    let hub = McpHub::start(config, &ToolRegistry::new(), stopped);
    hub.settled(Duration::from_secs(30)).await;
    (hub, shutdown)
}

fn tool(hub: &McpHub, name: &str) -> RegisteredTool {
    hub.source().get(name).unwrap_or_else(|| panic!("{name} is listed: {:?}", hub.servers()))
}

async fn everything() -> (McpHub, watch::Sender<bool>) {
    hub(json!({ "mcpServers": { "everything": { "command": "node", "args": [server_script("server-everything"), "stdio"] } } }))
        .await
}

#[tokio::test]
async fn the_tools_of_a_server_are_listed_with_the_effects_their_annotations_give() {
    let (hub, _shutdown) = everything().await;
    let servers = hub.servers();
    assert_eq!(servers[0].state, ServerState::Ready, "{servers:?}");
    let effect = |name: &str| tool(&hub, name).spec.effect;
    assert_eq!(effect("everything.echo"), ToolEffect::ReadOnly);
    assert_eq!(effect("everything.get-sum"), ToolEffect::ReadOnly);
    // Declared neither read-only nor idempotent: a write that needs a card.
    assert_eq!(effect("everything.toggle-simulated-logging"), ToolEffect::NonIdempotentWrite);
    // Listed only because we declare elicitation; annotated as a write.
    assert_eq!(effect("everything.trigger-elicitation-request"), ToolEffect::NonIdempotentWrite);
    assert_eq!(tool(&hub, "everything.echo").spec.origin.as_deref(), Some("MCP server everything"));

    let echoed = tool(&hub, "everything.echo").tool.call(json!({ "message": "hello" }), &context()).await.unwrap();
    assert_eq!(echoed, ToolOutput::Done("Echo: hello".to_string()));
}

#[tokio::test]
async fn a_question_asked_during_a_call_is_answered_through_the_pause() {
    let (hub, _shutdown) = everything().await;
    let asking = tool(&hub, "everything.trigger-elicitation-request");
    let ToolOutput::Ask { schema, state } = asking.tool.call(json!({}), &context()).await.unwrap() else {
        panic!("the tool asks");
    };
    assert_eq!(schema["title"], "Please provide inputs for the following fields:");
    assert_eq!(schema["properties"]["untitledMultipleSelectEnum"]["type"], "array");
    assert!(state.get("live").is_some(), "the question waits on the live call: {state}");
    assert_eq!(asking.tool.expired(&state), None);

    let answer = json!({ "name": "Ada Lovelace", "untitledMultipleSelectEnum": ["Piano", "Drums"] });
    let reply = InputReply::Answer(answer.as_object().cloned().unwrap());
    let ToolOutput::Done(result) = asking.tool.resume(json!({}), state.clone(), reply, &context()).await.unwrap()
    else {
        panic!("the call ends with the answer");
    };
    assert!(result.contains("Ada Lovelace") && result.contains("Drums"), "{result}");
    assert!(result.to_lowercase().contains("accept"), "{result}");
    // Answered once: the same question cannot be answered again.
    assert!(asking.tool.expired(&state).is_some());
}

#[tokio::test]
async fn declining_and_cancelling_reach_the_server() {
    let (hub, _shutdown) = everything().await;
    let asking = tool(&hub, "everything.trigger-elicitation-request");
    for (reply, said) in [(InputReply::Decline, "decline"), (InputReply::Cancel, "cancel")] {
        let ToolOutput::Ask { state, .. } = asking.tool.call(json!({}), &context()).await.unwrap() else { panic!() };
        let ToolOutput::Done(result) = asking.tool.resume(json!({}), state, reply, &context()).await.unwrap() else {
            panic!()
        };
        assert!(result.to_lowercase().contains(said), "{result}");
    }
}

#[tokio::test]
async fn a_question_left_waiting_by_a_previous_process_is_expired() {
    let (hub, _shutdown) = everything().await;
    let asking = tool(&hub, "everything.trigger-elicitation-request");
    let old = json!({ "live": "gone", "instance": "a process before this one", "until": i64::MAX });
    assert_eq!(asking.tool.expired(&old), None, "another process may still hold it");
    hub.previous_processes_are_gone();
    assert!(asking.tool.expired(&old).unwrap().contains("restarted"));
    let ToolOutput::Done(text) = asking.tool.resume(json!({}), old, InputReply::Cancel, &context()).await.unwrap()
    else {
        panic!()
    };
    assert!(text.contains("can no longer be answered"), "{text}");
}

#[tokio::test]
async fn a_file_write_is_a_write_and_writes_the_folder() {
    let folder = tempfile::tempdir().unwrap();
    let root = folder.path().canonicalize().unwrap();
    let (hub, _shutdown) = hub(json!({ "mcpServers": { "files": {
        "command": "node", "args": [server_script("server-filesystem"), root.display().to_string()]
    } } }))
    .await;
    assert_eq!(tool(&hub, "files.read_text_file").spec.effect, ToolEffect::ReadOnly);
    let write = tool(&hub, "files.write_file");
    assert!(write.spec.effect.is_write(), "{:?}", write.spec.effect);
    let path = root.join("hello.txt");
    let written = write.tool.call(json!({ "path": path, "content": "Hallo" }), &context()).await.unwrap();
    assert!(matches!(written, ToolOutput::Done(_)), "{written:?}");
    assert_eq!(std::fs::read_to_string(path).unwrap(), "Hallo");
}

#[tokio::test]
async fn a_server_that_cannot_start_is_down_and_retried_and_the_others_work() {
    let (hub, _shutdown) = hub(json!({ "mcpServers": {
        "broken": { "command": "/nonexistent/mcp-server" },
        "everything": { "command": "node", "args": [server_script("server-everything"), "stdio"] }
    } }))
    .await;
    let servers = hub.servers();
    let broken = servers.iter().find(|server| server.name == "broken").unwrap();
    assert!(matches!(&broken.state, ServerState::Down { problem: Problem::CannotStart, .. }), "{broken:?}");
    assert!(broken.tools.is_empty());
    assert!(hub.source().get("everything.echo").is_some());
    let _: Arc<dyn runtime::ToolSource> = hub.source();
}
