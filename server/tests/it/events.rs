use std::time::Duration;

use crate::harness::TestServer;

/// Reads the stream until an event of that name arrives (or fails after a few seconds).
pub async fn next_event(response: &mut reqwest::Response, buffer: &mut String, name: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(at) = buffer.find(&format!("event: {name}\n")) {
            buffer.drain(..at + name.len() + 8);
            return;
        }
        let chunk = tokio::time::timeout_at(deadline, response.chunk()).await.expect("an event in time").unwrap();
        buffer.push_str(&String::from_utf8_lossy(&chunk.expect("the stream stays open")));
    }
}

#[tokio::test]
async fn an_open_page_is_told_when_its_conversation_changes() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let mut stream = client.http.get(format!("{}/events/conversations/{id}", server.base)).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let mut buffer = String::new();
    next_event(&mut stream, &mut buffer, "ready").await;

    client.call_json("send_message", &[("conversation_id", &id), ("content", "hello")]).await;
    next_event(&mut stream, &mut buffer, "changed").await;
    // Browsers drop events without data: the event names the conversation.
    assert!(buffer.starts_with(&format!("data: {id}")), "{buffer:?}");
    server.stop().await;
}

#[tokio::test]
async fn nobody_else_can_listen_to_a_conversation() {
    let server = TestServer::start().await;
    let owner = server.signed_in("demo").await;
    let id = owner.create_conversation().await;
    let intruder = server.signed_in("mallory").await;
    let response = intruder.http.get(format!("{}/events/conversations/{id}", server.base)).send().await.unwrap();
    assert_eq!(response.status(), 404);
    let anonymous = reqwest::get(format!("{}/events/conversations/{id}", server.base)).await.unwrap();
    assert_eq!(anonymous.status(), 401);
    server.stop().await;
}
