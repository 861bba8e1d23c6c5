//! `/metrics` of the real binary. A process has one metrics recorder, so the test runs the
//! binary: every figure it reads is this test's own, and each is checked exactly.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::crash::{answer_soft, ask};
use crate::processes::{ModelHandle, ServerProcess};

const TOKEN: &str = "scrape-secret";

/// The value of one series (`name{labels}`) in a scrape, if listed.
fn value(scrape: &str, series: &str) -> Option<f64> {
    scrape.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

async fn scrape(base: &str) -> String {
    let response = reqwest::Client::new().get(format!("{base}/metrics")).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    response.text().await.unwrap()
}

/// Scrapes until `series` has `expected` (a stream's close reaches the server a moment later).
async fn settles_at(base: &str, series: &str, expected: f64) -> String {
    for _ in 0..100 {
        let text = scrape(base).await;
        if value(&text, series) == Some(expected) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{series} never reached {expected}:\n{}", scrape(base).await);
}

#[tokio::test]
async fn metrics_show_runs_queue_streams_model_calls_and_the_answer_latency() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelHandle::start(1).await;
    model.hold.store(false, Ordering::SeqCst);
    let server = ServerProcess::spawn_with(&dir, &model, true, true, &[("TOURGUIDE_METRICS_TOKEN", TOKEN.into())])
        .await
        .expect("the server starts");
    let base = server.base();

    // The token is required, and a wrong one is refused the same way.
    let http = reqwest::Client::new();
    assert_eq!(http.get(format!("{base}/metrics")).send().await.unwrap().status(), 401);
    assert_eq!(http.get(format!("{base}/metrics")).bearer_auth("guess").send().await.unwrap().status(), 401);

    let text = scrape(base).await;
    assert_eq!(value(&text, r#"tourguide_runs{status="waiting_for_input"}"#), Some(0.0), "{text}");
    assert_eq!(value(&text, r#"tourguide_jobs{state="queued"}"#), Some(0.0), "{text}");

    let client = server.signed_in().await;
    let (id, question) = ask(&client).await;
    let text = scrape(base).await;
    assert_eq!(value(&text, r#"tourguide_runs{status="waiting_for_input"}"#), Some(1.0), "{text}");
    assert_eq!(value(&text, r#"tourguide_model_call_duration_seconds_count{outcome="ok"}"#), Some(1.0), "{text}");

    let stream = client.http.get(format!("{base}/events/conversations/{id}")).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    settles_at(base, "tourguide_event_streams_open", 1.0).await;

    answer_soft(&client, &id, &question).await;
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    let text = scrape(base).await;
    assert_eq!(value(&text, r#"tourguide_runs{status="waiting_for_input"}"#), Some(0.0), "{text}");
    assert_eq!(value(&text, r#"tourguide_runs{status="completed"}"#), Some(1.0), "{text}");
    assert_eq!(value(&text, r#"tourguide_jobs{state="queued"}"#), Some(0.0), "{text}");
    assert_eq!(value(&text, r#"tourguide_answer_to_continuation_seconds_count{kind="answer"}"#), Some(1.0), "{text}");
    let waited = value(&text, r#"tourguide_answer_to_continuation_seconds_sum{kind="answer"}"#).unwrap();
    assert!(waited > 0.0 && waited < 10.0, "answer → continuation took {waited} s");
    assert_eq!(value(&text, r#"tourguide_model_call_duration_seconds_count{outcome="ok"}"#), Some(2.0), "{text}");

    drop(stream);
    settles_at(base, "tourguide_event_streams_open", 0.0).await;

    // A call the model refuses is counted by kind, and its run fails.
    let other = client.create_conversation().await;
    let (status, body) =
        client.call_json("send_message", &[("conversation_id", &other), ("content", "reject me")]).await;
    assert_eq!(status, 200, "{body}");
    let failed = client.settled_conversation(&other).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    let text = scrape(base).await;
    assert_eq!(value(&text, r#"tourguide_model_call_errors_total{kind="rejected"}"#), Some(1.0), "{text}");
    assert_eq!(value(&text, r#"tourguide_model_call_duration_seconds_count{outcome="error"}"#), Some(1.0), "{text}");
    assert_eq!(value(&text, r#"tourguide_runs{status="failed"}"#), Some(1.0), "{text}");
    server.terminate().await;
}
