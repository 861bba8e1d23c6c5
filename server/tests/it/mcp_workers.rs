//! A question an MCP server asks over an open call (`elicitation/create`) with several workers on
//! PostgreSQL: the call lives in the memory of the worker that made it, so its answer, recorded
//! by any web process, is carried on by that worker; when that worker dies, another withdraws the
//! question at once (not at its time limit) and the model and the reader are told.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use db::Location;
use serde_json::{json, Value};

use crate::harness::{location_in, texts, Client};
use crate::mcp::{decide, everything, wait_for_tool};
use crate::processes::{ModelHandle, ServerProcess};

const TOOL: &str = "everything.trigger-elicitation-request";

/// Asks through server-everything's tool (as a real model calls it) and approves its card, once
/// the worker that takes the turn offers the tool (each process connects its servers itself).
async fn asked(client: &Client) -> (String, Value) {
    for _ in 0..100 {
        let id = client.create_conversation().await;
        let (status, body) = client
            .call_json(
                "send_message",
                &[("conversation_id", &id), ("content", "mcp everything__trigger-elicitation-request")],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let conversation = client.settled_conversation(&id).await;
        if conversation["status"] != "awaiting_approval" {
            assert!(texts(&conversation).last().unwrap().contains("is not offered"), "{conversation}");
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        let conversation = decide(client, &conversation, "approve").await;
        assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
        return (id, conversation);
    }
    panic!("the workers never offered {TOOL}");
}

#[tokio::test]
async fn an_mcp_question_over_an_open_call_is_answered_through_any_web_process_and_withdrawn_when_its_worker_dies() {
    let dir = tempfile::tempdir().unwrap();
    if !matches!(location_in(&dir).await, Location::Postgres(_)) {
        return; // SQLite runs one worker per file: the question's worker is the only one.
    }
    let model = ModelHandle::start(0).await;
    model.hold.store(false, Ordering::SeqCst);
    // Long: a question withdrawn in this test is withdrawn because its worker died.
    let config = dir.path().join("mcp.json");
    let mcp = json!({ "mcpServers": { "everything": everything(None) }, "elicitationTimeoutSeconds": 600 });
    std::fs::write(&config, mcp.to_string()).unwrap();
    let environment = [("TOURGUIDE_MCP_CONFIG", config.display().to_string())];
    let process = |web: bool, worker: bool| {
        let (dir, model, environment) = (&dir, &model, &environment);
        async move { ServerProcess::spawn_with(dir, model, web, worker, environment).await.unwrap() }
    };
    let worker_a = process(false, true).await;
    let worker_b = process(false, true).await;
    let web_x = process(true, false).await;
    let web_y = process(true, false).await;
    let (x, y) = (web_x.signed_in().await, web_y.signed_in().await);
    wait_for_tool(&x, TOOL).await;
    wait_for_tool(&y, TOOL).await;

    // Whichever worker made the call, and whichever web process records the answer, the answer
    // reaches the open call: the server's result names it.
    for round in 0..4 {
        let (id, conversation) = asked(&x).await;
        let digest = conversation["question"]["digest"].as_str().unwrap().to_string();
        let (through, name) =
            if round % 2 == 0 { (&y, format!("Ada {round}")) } else { (&x, format!("Grace {round}")) };
        let (status, body) = through
            .call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("fields[name]", &name)])
            .await;
        assert_eq!(status, 200, "round {round}: {body}");
        let conversation = x.settled_conversation(&id).await;
        assert_eq!(conversation["status"], "idle", "round {round}: {conversation}");
        let last = texts(&conversation).last().unwrap().clone();
        assert!(last.starts_with("Noted:") && last.contains(&name), "round {round}: the server got the answer: {last}");
        assert!(!last.contains("can no longer be answered"), "round {round}: {last}");
    }

    // The worker that holds a question dies: another hands it back with a sentence, well before
    // its time limit.
    worker_b.kill_9().await;
    let (id, conversation) = asked(&x).await; // held by A, the only worker left
    let digest = conversation["question"]["digest"].as_str().unwrap().to_string();
    let worker_c = process(false, true).await;
    worker_a.kill_9().await;
    let killed = Instant::now();
    let mut conversation = Value::Null;
    while killed.elapsed() < Duration::from_secs(60) {
        conversation = y.settled_conversation(&id).await;
        if conversation["status"] != "awaiting_input" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(conversation["status"], "idle", "the question is withdrawn: {conversation}");
    assert!(killed.elapsed() < Duration::from_secs(30), "withdrawn in {:?}", killed.elapsed());
    assert!(conversation["error"].as_str().unwrap_or_default().contains("stopped waiting"), "{conversation}");
    let last = texts(&conversation).last().unwrap().clone();
    assert!(tells_the_call_ended_unanswered(&last), "the model is told: {last}");
    let (status, body) =
        y.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("fields[name]", "Ada")]).await;
    assert!(status == 409 || status == 422, "nothing is answered after: {status} {body}");

    // An answer recorded for a worker that died before it took it: the worker that takes the job
    // withdraws the question with the sentence instead of answering a call nobody holds.
    let (id, conversation) = asked(&x).await; // held by C
    let digest = conversation["question"]["digest"].as_str().unwrap().to_string();
    worker_c.kill_9().await;
    let (status, body) =
        y.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("fields[name]", "Ada")]).await;
    assert_eq!(status, 200, "{body}");
    let worker_d = process(false, true).await;
    let conversation = y.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    assert!(conversation["error"].as_str().unwrap_or_default().contains("stopped waiting"), "{conversation}");
    let last = texts(&conversation).last().unwrap().clone();
    assert!(tells_the_call_ended_unanswered(&last), "the model is told: {last}");

    for process in [web_x, web_y, worker_d] {
        process.kill_9().await;
    }
}

/// Whether the model's note says the MCP call ended without the answer because its worker is gone.
/// Which of the two sentences it gets depends on whether the worker that carries the run on has
/// read the heartbeats yet (then it names the stopped worker) or not (then the call is simply gone).
fn tells_the_call_ended_unanswered(note: &str) -> bool {
    note.starts_with("Noted:")
        && (note.contains("can no longer be answered")
            || note.contains("the Tourguide worker that held the MCP server's call stopped"))
}

/// The queue's rule for a job held by a worker, on either database: only that worker takes it
/// while it beats; anyone does once its heartbeat lapsed (or it never beat); an unheld job is
/// anyone's.
#[tokio::test]
async fn a_held_job_waits_for_its_worker_while_it_beats_and_is_anyones_after() {
    let dir = tempfile::tempdir().unwrap();
    // Web only: nobody else claims.
    let server = crate::harness::TestServer::start_configured(
        dir,
        server::Services::new(std::sync::Arc::new(demo::DemoProvider)),
        false,
    )
    .await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let store = server.store();
    let lease = Duration::from_secs(30);
    let held = |holder: &'static str| {
        let id = id.clone();
        async move {
            db::on!(store.db(), pool => sqlx::query(
                "INSERT INTO jobs (conversation_id, kind, created_at, holder) VALUES ($1, 'turn', 0, $2)",
            )
            .bind(&id)
            .bind(holder)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))
            .unwrap();
        }
    };
    let alive = store.worker_beats("holder", db::now() + 60).await.unwrap();
    assert!(alive.contains("holder"), "{alive:?}");
    let alive = store.worker_beats("other", db::now() + 60).await.unwrap();
    assert_eq!(alive.len(), 2, "{alive:?}");

    held("holder").await;
    assert!(store.claim_job(lease, "other").await.unwrap().is_none(), "held by a live worker");
    let job = store.claim_job(lease, "holder").await.unwrap().expect("its holder takes it");
    store.delete_job(job.id).await.unwrap();

    // The holder's heartbeat lapses: the job is anyone's, and it counts as gone.
    store.worker_beats("holder", db::now() - 1).await.unwrap();
    let alive = store.worker_beats("other", db::now() + 60).await.unwrap();
    assert!(!alive.contains("holder"), "{alive:?}");
    held("holder").await;
    let job = store.claim_job(lease, "other").await.unwrap().expect("a dead holder's job is anyone's");
    store.delete_job(job.id).await.unwrap();

    held("never-beat").await;
    let job = store.claim_job(lease, "other").await.unwrap().expect("so is a job of a worker that never beat");
    store.delete_job(job.id).await.unwrap();
    server.stop().await;
}
