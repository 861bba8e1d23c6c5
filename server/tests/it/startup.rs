use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::harness::{GatedProvider, TestServer};

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
    assert!(messages[1]["content"].as_str().unwrap().contains("survive this"));
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
