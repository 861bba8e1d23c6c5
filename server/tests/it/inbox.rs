//! The runs inbox over HTTP: the reader's waiting runs, also those a chat moved on from, decided
//! and answered with the chat's own checks; the inbox and the chat deciding one card at once have
//! exactly one winner; and waiting runs expire with a line in their conversation.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{refused, text, texts, Client, TestServer};
use crate::scripted::{services, Effects};

async fn server(effects: &Effects) -> TestServer {
    TestServer::start_services(tempfile::tempdir().unwrap(), services(effects)).await
}

async fn inbox(client: &Client) -> Vec<Value> {
    let (status, body) = client.call_json("inbox", &[]).await;
    assert_eq!(status, 200, "{body}");
    body["items"].as_array().unwrap().clone()
}

/// A conversation whose run waits on the message's pause (`write it`: a card; `ask me`: a question).
async fn waiting(client: &Client, message: &str) -> (String, Value) {
    let id = client.create_conversation().await;
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", message)]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert!(conversation["status"].as_str().unwrap().starts_with("awaiting_"), "{conversation}");
    (id, conversation)
}

async fn say(client: &Client, id: &str, content: &str) -> Value {
    let (status, body) = client.call_json("send_message", &[("conversation_id", id), ("content", content)]).await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(id).await
}

async fn decide_in_inbox(client: &Client, item: &Value, decision: &str) -> (u16, Value) {
    let form = [
        ("conversation_id", item["conversation_id"].as_str().unwrap()),
        ("digest", item["card"]["digest"].as_str().unwrap()),
        ("decision", decision),
        ("run", item["card"]["run"].as_str().unwrap()),
    ];
    client.call_json("decide", &form).await
}

/// Waits until the conversation's last line is one a run decided in the inbox left.
pub async fn carried_on(client: &Client, id: &str) -> Value {
    for _ in 0..200 {
        let conversation = client.settled_conversation(id).await;
        let last = conversation["messages"].as_array().unwrap().last().cloned().unwrap_or_default();
        if last["note"] == "Carried on after a decision in the runs inbox:" {
            return conversation;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no run decided in the inbox was carried on in {id}");
}

/// Waits until the inbox no longer lists the run (decided, and not handed back).
async fn gone_from_inbox(client: &Client, run: &str) -> Vec<Value> {
    for _ in 0..200 {
        let items = inbox(client).await;
        if items.iter().all(|item| item["run_id"] != run) {
            return items;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("run {run} stayed in the inbox");
}

#[tokio::test]
async fn a_card_the_chat_moved_on_from_is_decided_in_the_inbox_and_its_answer_joins_the_chat() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    assert!(inbox(&client).await.is_empty());
    let (id, before) = waiting(&client, "write it").await;

    // Still the chat's card: listed, not moved on, with the chat's own card.
    let items = inbox(&client).await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["conversation_id"], id.as_str());
    assert_eq!(items[0]["moved_on"], false);
    assert_eq!(items[0]["card"]["digest"], before["card"]["digest"]);
    assert_eq!(items[0]["card"]["answers"], "plain");

    // An ordinary chat keeps its waiting run when a new message comes; the inbox still has it.
    let conversation = say(&client, &id, "hello").await;
    assert_eq!((conversation["status"].as_str(), conversation["card"].is_null()), (Some("idle"), true));
    let items = inbox(&client).await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["moved_on"], true);
    let run = items[0]["run_id"].as_str().unwrap().to_string();
    assert_eq!(items[0]["card"]["run"], run.as_str());

    // Bad input changes nothing: a wrong digest, an unknown run, someone else's conversation.
    let mut stale = items[0].clone();
    stale["card"]["digest"] = json!("0".repeat(64));
    assert_eq!(
        decide_in_inbox(&client, &stale, "approve").await,
        (
            409,
            refused(
                "card_changed",
                "The card changed after it was shown, so nothing was carried out. Check the card and decide again."
            )
        )
    );
    let mut unknown = items[0].clone();
    unknown["card"]["run"] = json!(uuid::Uuid::new_v4().to_string());
    assert_eq!(
        decide_in_inbox(&client, &unknown, "approve").await,
        (404, refused("not_found", "Conversation not found."))
    );
    let other_conversation = client.create_conversation().await;
    let mut elsewhere = items[0].clone();
    elsewhere["conversation_id"] = json!(other_conversation);
    assert_eq!(
        decide_in_inbox(&client, &elsewhere, "approve").await,
        (404, refused("not_found", "Conversation not found."))
    );
    let stranger = server.signed_in("mallory").await;
    assert!(inbox(&stranger).await.is_empty(), "another user's runs are not listed");
    assert_eq!(
        decide_in_inbox(&stranger, &items[0], "approve").await,
        (404, refused("not_found", "Conversation not found."))
    );
    assert!(effects.titles.lock().unwrap().is_empty());

    // Approved in the inbox: the write runs once and its answer joins the chat, marked.
    let (status, body) = decide_in_inbox(&client, &items[0], "approve").await;
    assert_eq!(status, 200, "{body}");
    gone_from_inbox(&client, &run).await;
    let conversation = carried_on(&client, &id).await;
    assert_eq!(*effects.titles.lock().unwrap(), vec!["A better title".to_string()]);
    let last = conversation["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(text(&last), "Done: Title set to A better title");
    assert_eq!(last["note"], "Carried on after a decision in the runs inbox:");
    assert_eq!(conversation["status"], "idle", "the chat's own state is untouched");

    // Decided is decided: the same card again finds nothing waiting.
    assert_eq!(
        decide_in_inbox(&client, &items[0], "approve").await,
        (409, refused("not_awaiting_approval", "This conversation is not waiting for an approval."))
    );
    assert_eq!(effects.titles.lock().unwrap().len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn a_question_the_chat_moved_on_from_is_answered_in_the_inbox_with_the_chats_checks() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, _) = waiting(&client, "ask me").await;
    say(&client, &id, "never mind").await;
    let items = inbox(&client).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let item = &items[0];
    assert_eq!(item["moved_on"], true);
    let question = &item["question"];
    let run = question["run"].as_str().unwrap();
    let answer = |choice: &str| {
        vec![
            ("conversation_id", id.clone()),
            ("digest", question["digest"].as_str().unwrap().to_string()),
            ("choice", choice.to_string()),
            ("run", run.to_string()),
        ]
    };
    let form = |fields: &Vec<(&'static str, String)>| fields.iter().map(|(k, v)| (*k, v.clone())).collect::<Vec<_>>();
    let call = |fields: Vec<(&'static str, String)>| {
        let client = &client;
        async move {
            let fields = form(&fields);
            let borrowed: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            client.call_json("answer", &borrowed).await
        }
    };
    assert_eq!(
        call(answer("\"Footer\"")).await,
        (
            422,
            refused("answer_not_offered", "This answer does not fit the question. Choose one of the answers offered.")
        ),
        "not an offered option"
    );
    let (status, body) = call(answer("\"Images\"")).await;
    assert_eq!(status, 200, "{body}");
    gone_from_inbox(&client, run).await;
    let conversation = carried_on(&client, &id).await;
    assert_eq!(texts(&conversation).last().unwrap(), "Done: The user picked: Images");
    server.stop().await;
}

/// The chat and the inbox decide the same card at the same moment: exactly one is taken, and the
/// write happens once if an approval won, never twice.
#[tokio::test]
async fn the_inbox_and_the_chat_deciding_one_card_at_once_have_exactly_one_winner() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let chat = server.signed_in("demo").await;
    let other_tab = server.signed_in("demo").await;
    for round in 0..8 {
        let (id, conversation) = waiting(&chat, "write it").await;
        let items = inbox(&other_tab).await;
        let item = items.iter().find(|item| item["conversation_id"] == id.as_str()).expect("listed").clone();
        let written_before = effects.titles.lock().unwrap().len();
        let digest = conversation["card"]["digest"].as_str().unwrap().to_string();
        // Alternate which side approves and which denies, so the winner shows in the effect.
        let (chat_says, inbox_says) = if round % 2 == 0 { ("approve", "deny") } else { ("deny", "approve") };
        let chat_form = [("conversation_id", id.as_str()), ("digest", digest.as_str()), ("decision", chat_says)];
        let ((from_chat, _), (from_inbox, _)) =
            tokio::join!(chat.call_json("decide", &chat_form), decide_in_inbox(&other_tab, &item, inbox_says));
        let conversation = chat.settled_conversation(&id).await;
        let written = effects.titles.lock().unwrap().len() - written_before;
        let approved_won = match (from_chat, from_inbox) {
            (200, 409) => chat_says == "approve",
            (409, 200) => inbox_says == "approve",
            other => panic!("round {round}: exactly one must win, got {other:?}: {conversation}"),
        };
        assert_eq!(written, usize::from(approved_won), "round {round}");
        assert!(conversation["card"].is_null(), "round {round}: the card is decided everywhere: {conversation}");
        gone_from_inbox(&other_tab, item["run_id"].as_str().unwrap()).await;
    }
    // Two tabs of the inbox deciding a card the chat moved on from: one wins there too.
    let (id, _) = waiting(&chat, "write it").await;
    say(&chat, &id, "hello").await;
    let item = inbox(&chat).await.into_iter().find(|item| item["conversation_id"] == id.as_str()).unwrap();
    let written_before = effects.titles.lock().unwrap().len();
    let ((first, _), (second, _)) =
        tokio::join!(decide_in_inbox(&chat, &item, "approve"), decide_in_inbox(&other_tab, &item, "approve"));
    let mut statuses = [first, second];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409]);
    carried_on(&chat, &id).await;
    assert_eq!(effects.titles.lock().unwrap().len() - written_before, 1, "written once");
    server.stop().await;
}

#[tokio::test]
async fn deleting_a_conversation_ends_the_runs_it_moved_on_from() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, _) = waiting(&client, "write it").await;
    say(&client, &id, "hello").await;
    let (kept, _) = waiting(&client, "ask me").await;
    let listed = inbox(&client).await;
    assert_eq!(listed.len(), 2);
    let moved_on = listed.iter().find(|item| item["conversation_id"] == id.as_str()).unwrap();
    let run: uuid::Uuid = moved_on["run_id"].as_str().unwrap().parse().unwrap();
    let (status, body) = client.call_json("delete_conversation", &[("conversation_id", &id)]).await;
    assert_eq!(status, 200, "{body}");
    let items = inbox(&client).await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["conversation_id"], kept.as_str(), "the other conversation's run still waits");
    let view = server.runtime().status(&runtime::Actor::admin(0), run).await.unwrap().expect("the run is kept");
    assert_eq!(view.status, runtime::RunStatus::Cancelled, "nobody could decide it any more");
    server.stop().await;
}

#[tokio::test]
async fn waiting_runs_expire_with_a_line_in_their_conversation() {
    let effects = Effects::default();
    let server = TestServer::start_expiring(services(&effects), Duration::from_secs(1)).await;
    let client = server.signed_in("demo").await;
    let (current, _) = waiting(&client, "write it").await;
    let (moved_on, _) = waiting(&client, "ask me").await;
    say(&client, &moved_on, "hello").await;
    let note = "This step waited too long without a decision and was cancelled. Nothing was carried out.";
    let mut expired = (Value::Null, Value::Null);
    for _ in 0..200 {
        expired = (client.settled_conversation(&current).await, client.settled_conversation(&moved_on).await);
        let noted = |conversation: &Value| {
            conversation["messages"].as_array().unwrap().last().is_some_and(|line| line["note"] == note)
        };
        if noted(&expired.0) && noted(&expired.1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (current_view, moved_on_view) = expired;
    assert_eq!(current_view["status"], "idle", "{current_view}");
    assert!(current_view["card"].is_null());
    assert_eq!(current_view["messages"].as_array().unwrap().last().unwrap()["note"], note, "{current_view}");
    assert_eq!(moved_on_view["messages"].as_array().unwrap().last().unwrap()["note"], note, "{moved_on_view}");
    assert!(inbox(&client).await.is_empty(), "nothing waits any more");
    assert!(effects.titles.lock().unwrap().is_empty());
    // The chat goes on as usual after an expiry.
    let conversation = say(&client, &current, "hello again").await;
    assert_eq!(texts(&conversation).last().unwrap(), "Echo: hello again");
    server.stop().await;
}
