use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::harness::{text, GatedProvider, TestServer};
use crate::processes::{ModelHandle, ServerProcess};

#[test]
fn a_bad_configuration_exits_non_zero_with_a_clear_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_server")).arg("--address").arg("not-an-address").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("'not-an-address' is not a valid address"), "{stderr}");

    let output = Command::new(env!("CARGO_BIN_EXE_server")).arg("--frobnicate").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unexpected argument '--frobnicate'"), "{stderr}");
}

#[tokio::test]
async fn a_turn_interrupted_by_a_stop_is_answered_after_the_restart() {
    let provider = GatedProvider::new();
    let server = TestServer::start_with(provider.clone()).await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    client.call_json("send_message", &[("conversation_id", &id), ("content", "survive this")]).await;
    // Wait until the worker holds the job, then stop the server under it.
    for _ in 0..100 {
        if provider.gate.available_permits() == 0 && job_states(&server).await == vec!["running".to_string()] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(job_states(&server).await, vec!["running".to_string()]);
    let dir = server.stop().await;

    let restarted = TestServer::start_in(dir, Arc::new(demo::DemoProvider)).await;
    let client = restarted.signed_in("demo").await;
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle");
    let messages = conversation["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "exactly one reply: {messages:?}");
    assert!(text(&messages[1]).contains("survive this"));
    // The worker deletes the job just after it settles the conversation.
    for _ in 0..200 {
        if job_states(&restarted).await.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(job_states(&restarted).await.is_empty());
    restarted.stop().await;
}

async fn job_states(server: &TestServer) -> Vec<String> {
    db::on!(server.store().db(), pool => sqlx::query_scalar("SELECT state FROM jobs ORDER BY id").fetch_all(pool).await)
        .unwrap()
}

#[tokio::test]
async fn health_and_readiness_answer_without_a_session_and_say_what_fails() {
    let server = TestServer::start().await;
    let client = server.client();
    let get = |path: &'static str| {
        let http = client.http.clone();
        let url = format!("{}{path}", client.base);
        async move {
            let response = http.get(url).send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    assert_eq!(get("/healthz").await, (200, "ok".to_string()));
    let (status, body) = get("/readyz").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        serde_json::json!({ "database": "ok", "migrations": "ok", "worker": "ok" })
    );
    // A migration of this build missing from the database: not ready, and it says why.
    server.exec("DELETE FROM _sqlx_migrations WHERE version = 20261203000005").await;
    let (status, body) = get("/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains(r#""migrations":"failing""#), "{body}");
    server.stop().await;

    let web_only = TestServer::start_configured(
        tempfile::tempdir().unwrap(),
        server::Services::new(Arc::new(demo::DemoProvider)),
        false,
    )
    .await;
    let response = web_only.client().http.get(format!("{}/readyz", web_only.client().base)).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.text().await.unwrap().contains(r#""worker":"off""#));
    web_only.stop().await;
}

/// Huge pages cost a served page 2 MiB of zeroing whenever the allocator touches a returned page
/// again (see `main.rs`); the process keeps off them.
#[tokio::test]
async fn the_server_process_keeps_off_transparent_huge_pages() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelHandle::start(1).await;
    let server = ServerProcess::start(&dir, &model, false).await;
    assert_eq!(server.proc_status("THP_enabled").as_deref(), Some("0"));
    server.kill_9().await;
}

/// Building a router renders the app with every resource held back by a flag global to the
/// process; a page whose resources started while it was set never finished. The routes are built
/// once per process, so a server starting beside another one (as the tests do) leaves its pages be.
#[tokio::test]
async fn a_page_renders_while_routes_are_built_beside_it() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let done = Arc::new(AtomicBool::new(false));
    let builder = std::thread::spawn({
        let done = done.clone();
        move || {
            while !done.load(Ordering::Relaxed) {
                assert!(!server::routes().is_empty());
            }
        }
    });
    for _ in 0..10 {
        let load = async { client.http.get(format!("{}/c/{id}", server.base)).send().await?.text().await };
        let page = tokio::time::timeout(Duration::from_secs(10), load).await.expect("the page finished").unwrap();
        assert!(page.contains(&format!("href=\"/c/{id}\"")), "{page}");
    }
    done.store(true, Ordering::Relaxed);
    builder.join().unwrap();
}
