//! MCP tool servers through the chat, against real servers nobody here wrote (installed from npm
//! by the test command): a write waits for its card, a server's question is a form with every
//! check the chat makes, and its answer, its decline or its cancel goes back to the server.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{texts, Client, TestServer};

/// The entry point of an MCP server package in end2end's node_modules.
pub fn server_script(package: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../end2end/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(path.exists(), "{} is missing: run `npm ci` in end2end (scripts/test does)", path.display());
    path.display().to_string()
}

/// `server-everything` over stdio; each process it starts notes its pid in `pids` (one per
/// connection), so a test can kill the one that carries a call.
pub fn everything(pids: Option<&Path>) -> Value {
    match pids {
        None => json!({ "command": "node", "args": [server_script("server-everything"), "stdio"] }),
        Some(pids) => json!({
            "command": "sh",
            "args": ["-c", format!("echo $$ >> '{}'; exec node '{}' stdio", pids.display(), server_script("server-everything"))]
        }),
    }
}

/// Waits until the tools page shows `tool` offered.
pub async fn wait_for_tool(client: &Client, tool: &str) -> Value {
    for _ in 0..300 {
        let (status, tools) = client.call_json("tools", &[]).await;
        assert_eq!(status, 200, "{tools}");
        let offered = tools["servers"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|server| server["tools"].as_array().unwrap().iter())
            .any(|listed| listed["name"] == tool);
        if offered {
            return tools;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{tool} was never offered");
}

async fn say(client: &Client, id: &str, text: &str) -> Value {
    let (status, body) = client.call_json("send_message", &[("conversation_id", id), ("content", text)]).await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(id).await
}

/// Decides the card the conversation shows, and waits for what follows.
pub(crate) async fn decide(client: &Client, conversation: &Value, decision: &str) -> Value {
    let id = conversation["id"].as_str().unwrap();
    let digest = conversation["card"]["digest"].as_str().expect("a card");
    let (status, body) =
        client.call_json("decide", &[("conversation_id", id), ("digest", digest), ("decision", decision)]).await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(id).await
}

const ASK: &str = "/mcp everything.trigger-elicitation-request";

/// Asks through server-everything's tool and approves its card: the server's form is up.
async fn asked(client: &Client) -> (String, Value) {
    let id = client.create_conversation().await;
    let conversation = say(client, &id, ASK).await;
    assert_eq!(conversation["status"], "awaiting_approval", "{conversation}");
    let conversation = decide(client, &conversation, "approve").await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    (id, conversation)
}

fn field<'a>(conversation: &'a Value, name: &str) -> &'a Value {
    conversation["question"]["form"]["fields"]
        .as_array()
        .expect("a form")
        .iter()
        .find(|field| field["name"] == name)
        .unwrap_or_else(|| panic!("field {name} in {conversation}"))
}

#[tokio::test]
async fn an_mcp_servers_question_comes_after_its_card_and_the_answer_goes_back() {
    let server = TestServer::start_with_mcp(json!({ "mcpServers": { "everything": everything(None) } })).await;
    let client = server.signed_in("demo").await;
    let tools = wait_for_tool(&client, "everything.trigger-elicitation-request").await;
    let listed = &tools["servers"][0];
    assert_eq!(listed["name"], "everything");
    assert_eq!(listed["status"]["state"], "ready");
    let tool =
        |name: &str| listed["tools"].as_array().unwrap().iter().find(|tool| tool["name"] == name).unwrap().clone();
    assert_eq!(tool("everything.echo")["effect"], "reads");
    assert_eq!(tool("everything.echo")["needs_approval"], false);
    assert_eq!(tool("everything.trigger-elicitation-request")["effect"], "writes");
    assert_eq!(tool("everything.trigger-elicitation-request")["needs_approval"], true);

    // The write's card comes first, naming the server.
    let id = client.create_conversation().await;
    let conversation = say(&client, &id, ASK).await;
    assert_eq!(conversation["status"], "awaiting_approval", "{conversation}");
    let call = &conversation["card"]["calls"][0];
    assert_eq!(call["name"], "everything.trigger-elicitation-request");
    assert_eq!(call["origin"], "MCP server everything");

    // Then the server's own question, as a form with its multi-selects and defaults.
    let conversation = decide(&client, &conversation, "approve").await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    let question = &conversation["question"];
    assert_eq!(question["declinable"], true);
    assert_eq!(question["asked_by"], "MCP server everything");
    assert_eq!(question["form"]["kind"], "form");
    assert_eq!(field(&conversation, "untitledMultipleSelectEnum")["kind"], "multi_select");
    assert_eq!(field(&conversation, "name")["required"], true);
    let digest = question["digest"].as_str().unwrap().to_string();

    // Checked like any answer: a missing required field, an option not offered, a stale digest.
    let refused: [&[(&str, &str)]; 3] = [
        &[("digest", &digest), ("fields[untitledMultipleSelectEnum#0]", "on")],
        &[("digest", &digest), ("fields[name]", "Ada"), ("fields[untitledMultipleSelectEnum#99]", "on")],
        &[("digest", "stale"), ("fields[name]", "Ada")],
    ];
    for extra in refused {
        let mut form = vec![("conversation_id", id.as_str())];
        form.extend_from_slice(extra);
        let (status, body) = client.call_json("answer", &form).await;
        assert!(status == 409 || status == 422, "{status} {body}");
    }
    let (_, unchanged) = client.conversation(&id).await;
    assert_eq!(unchanged["question"]["digest"], digest.as_str(), "nothing changed");

    let (status, body) = client
        .call_json(
            "answer",
            &[
                ("conversation_id", &id),
                ("digest", &digest),
                ("fields[name]", "Ada Lovelace"),
                ("fields[untitledMultipleSelectEnum#1]", "on"),
                ("fields[untitledMultipleSelectEnum#3]", "on"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    let last = texts(&conversation).last().unwrap().clone();
    assert!(
        last.starts_with("Noted.") && last.contains("Ada Lovelace"),
        "the server's result names the answer: {last}"
    );
    assert!(last.to_lowercase().contains("accept"), "{last}");
    server.stop().await;
}

#[tokio::test]
async fn declining_an_mcp_question_tells_the_server_and_the_model() {
    let server = TestServer::start_with_mcp(json!({ "mcpServers": { "everything": everything(None) } })).await;
    let client = server.signed_in("demo").await;
    wait_for_tool(&client, "everything.trigger-elicitation-request").await;
    let (id, conversation) = asked(&client).await;
    let last = client.declined(&id, &conversation).await.to_lowercase();
    assert!(last.contains("decline"), "{last}");
    server.stop().await;
}

#[tokio::test]
async fn a_message_of_ones_own_ends_an_mcp_question() {
    let server = TestServer::start_with_mcp(json!({ "mcpServers": { "everything": everything(None) } })).await;
    let client = server.signed_in("demo").await;
    wait_for_tool(&client, "everything.trigger-elicitation-request").await;
    let (id, conversation) = asked(&client).await;
    let digest = conversation["question"]["digest"].as_str().unwrap().to_string();

    let conversation = say(&client, &id, "Never mind, something else").await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    assert!(texts(&conversation).last().unwrap().contains("Never mind"), "{conversation}");
    let (status, body) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("fields[name]", "Ada")]).await;
    assert!(status == 409 || status == 422, "the ended question takes no answer: {status} {body}");

    // The server heard the cancel and its connection is free: the next question works.
    let conversation = say(&client, &id, ASK).await;
    let conversation = decide(&client, &conversation, "approve").await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    server.stop().await;
}

#[tokio::test]
async fn a_file_write_through_mcp_waits_for_the_card_and_cancel_leaves_the_folder_alone() {
    let folder = tempfile::tempdir().unwrap();
    let root = folder.path().canonicalize().unwrap();
    let server = TestServer::start_with_mcp(json!({ "mcpServers": { "files": {
        "command": "node", "args": [server_script("server-filesystem"), root.display().to_string()]
    } } }))
    .await;
    let client = server.signed_in("demo").await;
    wait_for_tool(&client, "files.write_file").await;
    let file = root.join("hello.txt");
    let write = format!("/mcp files.write_file {}", json!({ "path": file, "content": "Hallo Welt" }));

    let id = client.create_conversation().await;
    let conversation = say(&client, &id, &write).await;
    assert_eq!(conversation["status"], "awaiting_approval", "{conversation}");
    assert_eq!(conversation["card"]["answers"], "plain");
    assert!(conversation["card"]["calls"][0]["arguments"].as_str().unwrap().contains("Hallo Welt"));
    assert!(!file.exists(), "nothing is written before the card is decided");

    let conversation = decide(&client, &conversation, "deny").await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    assert!(!file.exists(), "cancel leaves the folder unchanged");
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);

    let conversation = say(&client, &id, &write).await;
    let conversation = decide(&client, &conversation, "approve").await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "Hallo Welt");
    assert!(texts(&conversation).last().unwrap().starts_with("Noted."), "{conversation}");
    server.stop().await;
}

#[tokio::test]
async fn an_mcp_server_killed_while_its_question_waits_withdraws_the_question() {
    let pids = tempfile::NamedTempFile::new().unwrap();
    let server =
        TestServer::start_with_mcp(json!({ "mcpServers": { "everything": everything(Some(pids.path())) } })).await;
    let client = server.signed_in("demo").await;
    wait_for_tool(&client, "everything.trigger-elicitation-request").await;
    let (id, conversation) = asked(&client).await;
    let digest = conversation["question"]["digest"].as_str().unwrap().to_string();

    // The call's own connection is the newest process (the first one lists the tools).
    let started = std::fs::read_to_string(pids.path()).unwrap();
    let call_process = started.lines().last().unwrap().trim().to_string();
    assert!(started.lines().count() >= 2, "{started}");
    let killed = std::process::Command::new("kill").args(["-9", &call_process]).status().unwrap();
    assert!(killed.success());

    let mut conversation = Value::Null;
    for _ in 0..200 {
        conversation = client.settled_conversation(&id).await;
        if conversation["status"] != "awaiting_input" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(conversation["status"], "idle", "the question is withdrawn: {conversation}");
    let error = conversation["error"].as_str().unwrap_or_default();
    assert!(error.contains("stopped waiting"), "a sentence says so: {conversation}");
    let last = texts(&conversation).last().unwrap().clone();
    assert!(last.contains("stopped waiting"), "the model is told: {last}");
    let (status, body) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("fields[name]", "Ada")]).await;
    assert!(status == 409 || status == 422, "nothing is answered after: {status} {body}");
    let results = texts(&conversation).iter().filter(|text| text.starts_with("Noted.")).count();
    assert_eq!(results, 1, "the call ended once: {conversation}");
    // On the record as withdrawn by the tool, with the question's tool and why.
    let rows = server.store().audit_rows(&server::audit::Filter::default(), 100, 0).await.unwrap();
    let withdrawn: Vec<_> =
        rows.iter().filter(|row| row.conversation_id == id && row.action == server::audit::Action::Withdrawn).collect();
    assert_eq!(withdrawn.len(), 1, "{rows:?}");
    assert_eq!(withdrawn[0].tools, ["everything.trigger-elicitation-request"]);
    assert!(withdrawn[0].reason.as_deref().is_some_and(|reason| !reason.is_empty()), "{rows:?}");
    assert_eq!(withdrawn[0].actor_id, None);
    server.stop().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_is_shown_down_and_the_chat_goes_on() {
    let server = TestServer::start_with_mcp(json!({ "mcpServers": {
        "broken": { "command": "/nonexistent/mcp-server" },
        "everything": everything(None),
    } }))
    .await;
    let client = server.signed_in("demo").await;
    let tools = wait_for_tool(&client, "everything.echo").await;
    let broken = tools["servers"].as_array().unwrap().iter().find(|server| server["name"] == "broken").unwrap();
    for _ in 0..100 {
        let (_, tools) = client.call_json("tools", &[]).await;
        let broken = tools["servers"].as_array().unwrap().iter().find(|server| server["name"] == "broken").unwrap();
        if broken["status"]["state"] == "down" {
            assert_eq!(broken["status"]["problem"], json!({ "kind": "cannot_start" }), "{broken}");
            assert!(broken["tools"].as_array().unwrap().is_empty());
            break;
        }
        assert_eq!(broken["status"]["state"], "starting", "{broken}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = broken;
    let id = client.create_conversation().await;
    let conversation = say(&client, &id, "/mcp broken.anything").await;
    assert!(texts(&conversation).last().unwrap().contains("No tool named"), "{conversation}");
    let conversation = say(&client, &id, r#"/mcp everything.echo {"message": "still here"}"#).await;
    assert_eq!(texts(&conversation).last().unwrap(), "Noted. Echo: still here");
    // The built-in tools are listed beside them.
    assert!(tools["built_in"].as_array().unwrap().iter().any(|tool| tool["name"] == "ask_choice"), "{tools}");
    server.stop().await;
}

/// Polls the tools as `client` sees them until `name` is down; that server's entry.
async fn down(client: &Client, name: &str) -> Value {
    for _ in 0..300 {
        let (status, tools) = client.call_json("tools", &[]).await;
        assert_eq!(status, 200, "{tools}");
        let server = tools["servers"].as_array().unwrap().iter().find(|server| server["name"] == name).unwrap().clone();
        if server["status"]["state"] == "down" {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} never went down");
}

#[tokio::test]
async fn an_editor_sees_why_a_server_is_down_and_only_an_admin_sees_where_it_is_masked() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = TestServer::start_with_mcp(json!({ "mcpServers": {
        "remote": { "url": format!("http://ann:pa55word@127.0.0.1:{port}/mcp?api_key=s3cret-key"),
                    "headers": { "Authorization": "Bearer tok-0123456789" } },
        "local": { "command": "/nonexistent/bin/lookup-server", "args": ["--token", "arg-s3cret"],
                   "env": { "API_TOKEN": "env-s3cret" } },
    } }))
    .await;
    let secrets = ["s3cret", "pa55word", "tok-0123456789", "ann:", "--token", "/nonexistent", "::"];

    let editor = server.signed_in("ed").await;
    let remote = down(&editor, "remote").await;
    assert_eq!(remote["status"]["problem"], json!({ "kind": "unreachable" }), "{remote}");
    assert_eq!(remote["place"], Value::Null, "{remote}");
    let local = down(&editor, "local").await;
    assert_eq!(local["status"]["problem"], json!({ "kind": "cannot_start" }), "{local}");
    assert_eq!(local["place"], Value::Null, "{local}");
    let (_, listed) = editor.call_json("tools", &[]).await;
    let page = editor.http.get(format!("{}/tools", server.base)).send().await.unwrap().text().await.unwrap();
    for secret in secrets.iter().chain(&["127.0.0.1:", "lookup-server"]) {
        assert!(!listed.to_string().contains(secret), "{secret} in {listed}");
        assert!(!page.contains(secret), "{secret} in the page");
    }
    assert!(page.contains("Its address could not be reached."), "{page}");
    assert!(page.contains("Its command could not be started."), "{page}");

    let admin = server.signed_in("demo").await;
    let remote = down(&admin, "remote").await;
    assert_eq!(remote["place"], json!({ "url": format!("http://***@127.0.0.1:{port}/mcp?api_key=***") }));
    let local = down(&admin, "local").await;
    assert_eq!(local["place"], json!({ "program": "lookup-server" }));
    let german = admin
        .http
        .get(format!("{}/tools", server.base))
        .header("accept-language", "de")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for secret in secrets {
        assert!(!german.contains(secret), "{secret} in the admin's page");
    }
    assert!(german.contains(&format!("http://***@127.0.0.1:{port}/mcp?api_key=***")), "{german}");
    server.stop().await;
}

#[tokio::test]
async fn tourguide_killed_while_an_mcp_question_waits_withdraws_it_after_the_restart() {
    use crate::processes::{ModelHandle, ServerProcess};
    use std::sync::atomic::Ordering;

    let dir = tempfile::tempdir().unwrap();
    let model = ModelHandle::start(0).await;
    model.hold.store(false, Ordering::SeqCst);
    // Short, so that on PostgreSQL (where a restarted process cannot tell whether the one that
    // asked is gone) the question is given up soon.
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({ "mcpServers": { "everything": everything(None) }, "elicitationTimeoutSeconds": 6 }).to_string(),
    )
    .unwrap();
    let environment = [("TOURGUIDE_MCP_CONFIG", config.display().to_string())];
    let first = ServerProcess::spawn_with(&dir, &model, true, true, &environment).await.unwrap();
    let client = first.signed_in().await;
    wait_for_tool(&client, "everything.trigger-elicitation-request").await;
    let id = client.create_conversation().await;
    // A real model's call: the tool is offered to it as `everything__trigger-elicitation-request`.
    let conversation = say(&client, &id, "mcp everything__trigger-elicitation-request").await;
    assert_eq!(conversation["status"], "awaiting_approval", "{conversation}");
    assert_eq!(conversation["card"]["calls"][0]["name"], "everything.trigger-elicitation-request");
    let conversation = decide(&client, &conversation, "approve").await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    let digest = conversation["question"]["digest"].as_str().unwrap().to_string();

    first.kill_9().await;
    let second = ServerProcess::spawn_with(&dir, &model, true, true, &environment).await.unwrap();
    let client = second.signed_in().await;
    let mut conversation = Value::Null;
    for _ in 0..300 {
        conversation = client.settled_conversation(&id).await;
        if conversation["status"] != "awaiting_input" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(conversation["status"], "idle", "the question is withdrawn: {conversation}");
    assert!(conversation["error"].as_str().unwrap_or_default().contains("stopped waiting"), "{conversation}");
    let last = texts(&conversation).last().unwrap().clone();
    // Which of the two true sentences it is depends on what the new process learns first: that
    // the question's time has passed since the restart, or (on PostgreSQL, from the workers'
    // heartbeats) that the worker holding the call is gone.
    let told = last.contains("Tourguide restarted") || last.contains("worker that held the MCP server's call stopped");
    assert!(last.starts_with("Noted:") && told, "the model is told: {last}");
    let (status, body) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("fields[name]", "Ada")]).await;
    assert!(status == 409 || status == 422, "nothing is answered after: {status} {body}");
    assert_eq!(model.continuations.load(Ordering::SeqCst), 1, "the call ended once");
}
