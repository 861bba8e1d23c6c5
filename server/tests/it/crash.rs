//! kill -9 of the real server binary at the worst moments, then a restart on the same database:
//! nothing the user did is lost, no write runs twice, and the run is carried on.
//!
//! The binary talks to an OpenAI-compatible model served by this test (the same wire format a
//! real provider speaks), which answers from the transcript and can hold a continuation in flight
//! so the kill lands while the run is really working.

use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::harness::{texts, Client};
use crate::processes::{ModelHandle, ServerProcess, NEW_TITLE};

pub async fn ask(client: &Client) -> (String, Value) {
    let id = client.create_conversation().await;
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", "ask me")]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    (id, conversation)
}

pub async fn answer_soft(client: &Client, id: &str, question: &Value) {
    let digest = question["question"]["digest"].as_str().expect("a question digest");
    let (status, body) =
        client.call_json("answer", &[("conversation_id", id), ("digest", digest), ("choice", "\"Soft\"")]).await;
    assert_eq!(status, 200, "{body}");
}

pub fn assert_answered_once(conversation: &Value) {
    assert_eq!(conversation["status"], "idle", "{conversation}");
    let texts = texts(conversation);
    assert_eq!(texts.len(), 4, "ask, question, answer, reply, each once: {texts:?}");
    assert_eq!(texts[0], "ask me");
    assert!(texts[1].contains("Which crust?"), "{texts:?}");
    assert_eq!(texts[2], "Soft");
    assert!(texts[3].starts_with("Noted: ") && texts[3].contains("Soft"), "the model got the answer: {texts:?}");
}

// --- the stories ----------------------------------------------------------------------------

/// How a story stops the server.
#[derive(Clone, Copy)]
enum Stop {
    /// kill -9: nothing of the process gets to act.
    Kill9,
    /// SIGTERM, as a service manager stops it: the worker lets go of its segment, and the process
    /// ends cleanly (checked by `terminate`).
    Terminate,
}

async fn stop(server: ServerProcess, how: Stop) {
    match how {
        Stop::Kill9 => server.kill_9().await,
        Stop::Terminate => server.terminate().await,
    }
}

/// Stops the server while the model writes the continuation of an answered run; a restart
/// carries the run on, with the answer delivered once and the question not asked again.
async fn stopped_while_the_answered_run_continues(how: Stop) {
    let dir = tempfile::tempdir().unwrap();
    let mut model = ModelHandle::start(1).await;
    let server = ServerProcess::start(&dir, &model, true).await;
    let client = server.signed_in().await;
    let (id, question) = ask(&client).await;
    answer_soft(&client, &id, &question).await;

    let delivered = model.continuation_in_flight().await;
    assert!(delivered.contains("Soft"), "{delivered}");
    stop(server, how).await;

    model.hold.store(false, Ordering::SeqCst);
    let server = ServerProcess::start(&dir, &model, true).await;
    let client = server.signed_in().await;
    let conversation = client.settled_conversation(&id).await;
    assert_answered_once(&conversation);
    assert_eq!(model.questions_asked.load(Ordering::SeqCst), 1, "the question was not asked again");
    stop(server, how).await;
}

#[tokio::test]
async fn kill_9_while_the_answered_run_continues_then_restart_carries_it_on() {
    stopped_while_the_answered_run_continues(Stop::Kill9).await;
}

#[tokio::test]
async fn sigterm_while_the_answered_run_continues_ends_cleanly_and_a_restart_carries_it_on_once() {
    stopped_while_the_answered_run_continues(Stop::Terminate).await;
}

#[tokio::test]
async fn kill_9_with_an_answer_recorded_but_not_taken_then_restart_continues_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelHandle::start(1).await;
    model.hold.store(false, Ordering::SeqCst);

    // A question waits; the process dies while it waits.
    let server = ServerProcess::start(&dir, &model, true).await;
    let client = server.signed_in().await;
    let (id, question) = ask(&client).await;
    server.kill_9().await;

    // A web-only process records the answer; nobody takes it before the next kill.
    let server = ServerProcess::start(&dir, &model, false).await;
    let client = server.signed_in().await;
    let (status, same) = client.conversation(&id).await;
    assert_eq!(status, 200, "{same}");
    assert_eq!(same["question"]["digest"], question["question"]["digest"], "the question survived unchanged");
    answer_soft(&client, &id, &same).await;
    let (_, recorded) = client.conversation(&id).await;
    assert_eq!(recorded["status"], "processing", "recorded, not taken: {recorded}");
    assert_eq!(texts(&recorded).last().unwrap(), "Soft");
    server.kill_9().await;

    let server = ServerProcess::start(&dir, &model, true).await;
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
    let server = ServerProcess::start(&dir, &model, true).await;
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
    let server = ServerProcess::start(&dir, &model, true).await;
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
