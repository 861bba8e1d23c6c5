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

/// Opens an event stream of the client's session and reads its first event.
async fn opened(client: &crate::harness::Client, path: &str, first: &str) -> (reqwest::Response, String) {
    let mut stream = client.http.get(format!("{}{path}", client.base)).send().await.unwrap();
    assert_eq!(stream.status(), 200, "{path}");
    let mut buffer = String::new();
    next_event(&mut stream, &mut buffer, first).await;
    (stream, buffer)
}

/// Reads the stream to its end; panics if it is still open after a while (a bound for a hung
/// test: the end comes as soon as the session does).
async fn ends(stream: &mut reqwest::Response, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Err(_) => panic!("{what}: the stream outlived its session"),
            Ok(Ok(None)) | Ok(Err(_)) => return,
            Ok(Ok(Some(_))) => {}
        }
    }
}

/// Issue 62: an open stream ends with its session, on sign-out, on "end other sessions" from
/// another browser (which keeps its own), and on a password an admin sets.
#[tokio::test]
async fn an_open_stream_ends_with_its_session() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let (mut conversation, _) = opened(&client, &format!("/events/conversations/{id}"), "ready").await;
    let (mut waiting, _) = opened(&client, "/events/user", "waiting").await;
    client.call("logout", &[]).await;
    ends(&mut conversation, "the conversation's stream after sign-out").await;
    ends(&mut waiting, "the reader's stream after sign-out").await;

    let phone = server.client();
    phone.sign_in("demo").await;
    let laptop = server.client();
    laptop.sign_in("demo").await;
    let id = laptop.create_conversation().await;
    let path = format!("/events/conversations/{id}");
    let (mut on_phone, _) = opened(&phone, &path, "ready").await;
    let (mut on_laptop, mut buffer) = opened(&laptop, &path, "ready").await;
    let (status, body) = laptop.call_json("end_other_sessions", &[]).await;
    assert_eq!(status, 200, "{body}");
    ends(&mut on_phone, "the other browser's stream").await;
    // The laptop's own stays open and is still told.
    laptop.call_json("send_message", &[("conversation_id", &id), ("content", "hello")]).await;
    next_event(&mut on_laptop, &mut buffer, "changed").await;

    let ed = server.signed_in("ed").await;
    let ed_id = server.store().user_by_name("ed").await.unwrap().unwrap().id.to_string();
    let (mut eds, _) = opened(&ed, "/events/user", "waiting").await;
    // A change ed's stream counts again for (ed reviews others' changes) right before: the end of
    // the session comes while the stream gathers changes, and must not be gathered away.
    laptop.call_json("send_message", &[("conversation_id", &id), ("content", "again")]).await;
    let (status, body) =
        laptop.call_json("admin_set_password", &[("account", &ed_id), ("password", "a-fresh-password")]).await;
    assert_eq!(status, 200, "{body}");
    ends(&mut eds, "ed's stream after an admin set a new password").await;
    server.stop().await;
}
