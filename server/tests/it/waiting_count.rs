//! How many runs wait for a reader (the header's count) and the reader's own event stream,
//! `/events/user`: the count is the inbox counted, for an owner, for a reviewer under four-eyes and
//! for nobody else; the stream says "waiting" when a run starts to wait and when it is decided,
//! also when another process made the change (PostgreSQL, NOTIFY).

use std::time::Duration;

use serde_json::Value;

use crate::events::next_event;
use crate::harness::{Client, TestServer, PASSWORD};
use crate::processes::{ModelHandle, ServerProcess};
use crate::scripted::{services, Effects};

async fn count(client: &Client) -> u64 {
    let (status, body) = client.call_json("waiting", &[]).await;
    assert_eq!(status, 200, "{body}");
    body["count"].as_u64().expect("a count")
}

async fn inbox_len(client: &Client) -> u64 {
    let (status, body) = client.call_json("inbox", &[]).await;
    assert_eq!(status, 200, "{body}");
    body["items"].as_array().unwrap().len() as u64
}

/// The count, once it settles at `expected` (a decision reaches the run through the worker).
async fn count_becomes(client: &Client, expected: u64) {
    for _ in 0..200 {
        if count(client).await == expected {
            assert_eq!(inbox_len(client).await, expected, "the count is the inbox counted");
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the count stayed at {}, not {expected} (inbox: {})", count(client).await, inbox_len(client).await);
}

async fn waiting_in(client: &Client, message: &str) -> (String, Value) {
    let id = client.create_conversation().await;
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", message)]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert!(conversation["status"].as_str().unwrap().starts_with("awaiting_"), "{conversation}");
    (id, conversation)
}

async fn four_eyes_editor(server: &TestServer, name: &str) -> Client {
    let hash = server::auth::hash_password(PASSWORD);
    server.store().add_user(name, &hash, server::store::Role::Editor, false).await.unwrap();
    let client = server.client();
    client.sign_in(name).await;
    client
}

/// Opens the reader's stream; the first event is the count as it stands.
async fn listen(client: &Client) -> (reqwest::Response, String, Value) {
    let mut stream = client.http.get(format!("{}/events/user", client.base)).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let mut buffer = String::new();
    let first = next_waiting(&mut stream, &mut buffer).await;
    (stream, buffer, first)
}

/// The data of the next "waiting" event.
async fn next_waiting(stream: &mut reqwest::Response, buffer: &mut String) -> Value {
    next_event(stream, buffer, "waiting").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !buffer.contains("\n\n") {
        let chunk = tokio::time::timeout_at(deadline, stream.chunk()).await.expect("the event's data").unwrap();
        buffer.push_str(&String::from_utf8_lossy(&chunk.expect("the stream stays open")));
    }
    let end = buffer.find("\n\n").unwrap();
    let data = buffer[..end].strip_prefix("data: ").expect("data after the event's name").to_string();
    buffer.drain(..end + 2);
    serde_json::from_str(&data).expect("the count as JSON")
}

/// Nothing more arrives on the stream for a while.
async fn quiet(stream: &mut reqwest::Response, buffer: &mut String) {
    let more = tokio::time::timeout(Duration::from_millis(400), async {
        loop {
            match stream.chunk().await {
                Ok(Some(chunk)) => {
                    buffer.push_str(&String::from_utf8_lossy(&chunk));
                    if buffer.contains("event: waiting") {
                        return;
                    }
                }
                _ => std::future::pending::<()>().await,
            }
        }
    })
    .await;
    assert!(more.is_err(), "no event for a change that is not the reader's: {buffer:?}");
}

#[tokio::test]
async fn the_count_is_the_inbox_counted_for_the_owner_a_reviewer_and_nobody_else() {
    let effects = Effects::default();
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&effects)).await;
    let reviewer = server.signed_in("demo").await;
    let editor = four_eyes_editor(&server, "ed").await;
    let bystander = four_eyes_editor(&server, "bea").await;
    // May approve her own changes, so she reviews others' too.
    let other_owner = server.signed_in("olga").await;
    for client in [&reviewer, &editor, &bystander, &other_owner] {
        assert_eq!(count(client).await, 0);
    }

    // The editor's card waits for them (they may still deny it) and for a reviewer.
    let (card_id, card) = waiting_in(&editor, "write it").await;
    assert_eq!(card["card"]["needs_reviewer"], true, "{card}");
    count_becomes(&editor, 1).await;
    count_becomes(&reviewer, 1).await;
    count_becomes(&other_owner, 1).await;
    count_becomes(&bystander, 0).await;

    // A question is the owner's alone; a card of an owner who approves their own is theirs alone.
    waiting_in(&editor, "ask me").await;
    waiting_in(&other_owner, "write it").await;
    count_becomes(&editor, 2).await;
    count_becomes(&reviewer, 1).await;
    count_becomes(&other_owner, 2).await;
    count_becomes(&bystander, 0).await;

    // The reviewer approves the editor's card: it waits for nobody any more.
    let (_, inbox) = reviewer.call_json("inbox", &[]).await;
    let item = &inbox["items"][0];
    assert_eq!(item["conversation_id"], card_id.as_str(), "{inbox}");
    let form = [
        ("conversation_id", card_id.as_str()),
        ("digest", item["card"]["digest"].as_str().unwrap()),
        ("decision", "approve"),
        ("run", item["card"]["run"].as_str().unwrap()),
    ];
    let (status, body) = reviewer.call_json("decide", &form).await;
    assert_eq!(status, 200, "{body}");
    count_becomes(&editor, 1).await;
    count_becomes(&reviewer, 0).await;
    count_becomes(&other_owner, 1).await;

    let (status, _) = server.client().call_json("waiting", &[]).await;
    assert_eq!(status, 401, "only for someone signed in");
    server.stop().await;
}

#[tokio::test]
async fn the_readers_stream_says_when_a_run_starts_and_stops_waiting() {
    let effects = Effects::default();
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&effects)).await;
    let owner = server.signed_in("demo").await;
    let other = server.signed_in("olga").await;
    let (mut stream, mut buffer, first) = listen(&owner).await;
    assert_eq!(first["count"], 0, "{first}");
    assert!(first.get("latest").is_none(), "nothing is new when the stream opens: {first}");
    let (mut others, mut others_buffer, _) = listen(&other).await;

    let (id, conversation) = waiting_in(&owner, "write it").await;
    let started = next_waiting(&mut stream, &mut buffer).await;
    assert_eq!(started["count"], 1, "{started}");
    assert_eq!(started["latest"]["conversation_id"], id.as_str(), "{started}");
    assert_eq!(started["latest"]["approval"], true, "{started}");
    assert_eq!(started["latest"]["title"], conversation["title"], "{started}");
    assert_ne!(started["mark"], first["mark"]);

    let digest = conversation["card"]["digest"].as_str().unwrap();
    let (status, body) =
        owner.call_json("decide", &[("conversation_id", &id), ("digest", digest), ("decision", "deny")]).await;
    assert_eq!(status, 200, "{body}");
    let decided = next_waiting(&mut stream, &mut buffer).await;
    assert_eq!(decided["count"], 0, "{decided}");
    assert!(decided.get("latest").is_none(), "{decided}");

    // A question counts as well; another reader heard none of it.
    waiting_in(&owner, "ask me").await;
    let asked = next_waiting(&mut stream, &mut buffer).await;
    assert_eq!((asked["count"].clone(), asked["latest"]["approval"].clone()), (1.into(), false.into()), "{asked}");
    quiet(&mut others, &mut others_buffer).await;

    let anonymous = reqwest::get(format!("{}/events/user", server.base)).await.unwrap();
    assert_eq!(anonymous.status(), 401);
    server.stop().await;
}

#[tokio::test]
async fn a_page_on_one_process_hears_of_a_run_another_process_made_wait() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelHandle::start(1).await;
    model.hold.store(false, std::sync::atomic::Ordering::SeqCst);
    let worker = ServerProcess::worker(&dir, &model).await;
    let web_a = ServerProcess::start(&dir, &model, false).await;
    let web_b = ServerProcess::start(&dir, &model, false).await;
    if !matches!(crate::harness::location_in(&dir).await, db::Location::Postgres(_)) {
        // On SQLite changes do not travel between processes; pages poll (`scale.rs`).
        for process in [web_a, web_b, worker] {
            process.kill_9().await;
        }
        return;
    }
    let (page, elsewhere) = (web_a.signed_in().await, web_b.signed_in().await);
    let (mut stream, mut buffer, first) = listen(&page).await;
    assert_eq!(first["count"], 0, "{first}");

    // Recorded through B, suspended by the worker, heard on A.
    let (id, question) = crate::crash::ask(&elsewhere).await;
    let started = next_waiting(&mut stream, &mut buffer).await;
    assert_eq!(started["count"], 1, "{started}");
    assert_eq!(started["latest"]["conversation_id"], id.as_str(), "{started}");
    crate::crash::answer_soft(&elsewhere, &id, &question).await;
    let answered = next_waiting(&mut stream, &mut buffer).await;
    assert_eq!(answered["count"], 0, "{answered}");
    for process in [web_a, web_b, worker] {
        process.kill_9().await;
    }
}
