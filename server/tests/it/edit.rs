//! Edit and rerun: one of the reader's messages is edited, the transcript after it is replaced by
//! a new turn from there. Not while a turn runs or a decision travels; what a card applied in the
//! replaced part stays applied, and the conversation says so before the edit.

use serde_json::Value;

use crate::harness::{texts, Client, GatedProvider, TestServer};
use crate::scripted::{services, Effects};

fn message_id(conversation: &Value, index: usize) -> String {
    conversation["messages"][index]["id"].as_i64().expect("a message id").to_string()
}

async fn edit(client: &Client, id: &str, message_id: &str, content: &str) -> (u16, Value) {
    client.call_json("edit_message", &[("conversation_id", id), ("message_id", message_id), ("content", content)]).await
}

async fn say(client: &Client, id: &str, content: &str) -> Value {
    let (status, body) = client.call_json("send_message", &[("conversation_id", id), ("content", content)]).await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(id).await
}

#[tokio::test]
async fn an_edited_message_replaces_the_transcript_after_it_with_a_new_turn() {
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&Effects::default())).await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    say(&client, &id, "first").await;
    let before = say(&client, &id, "second").await;
    assert_eq!(texts(&before), ["first", "Echo: first", "second", "Echo: second"]);
    assert_eq!(before["messages"][0]["editable"], true);
    assert!(before["messages"][1].get("editable").is_none(), "the assistant's lines are not the reader's to edit");

    let (status, body) = edit(&client, &id, &message_id(&before, 0), "  changed  ").await;
    assert_eq!(status, 200, "{body}");
    let after = client.settled_conversation(&id).await;
    assert_eq!(texts(&after), ["changed", "Echo: changed"]);
    assert_eq!(after["status"], "idle");
    server.stop().await;
}

#[tokio::test]
async fn an_edit_that_cannot_be_taken_is_refused_and_changes_nothing() {
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&Effects::default())).await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let before = say(&client, &id, "first").await;
    let other = client.create_conversation().await;
    let elsewhere = say(&client, &other, "elsewhere").await;

    let refusals = [
        (message_id(&before, 1), "x", 422),     // the assistant's line
        (message_id(&elsewhere, 0), "x", 422),  // a message of another conversation
        ("999999".to_string(), "x", 422),       // no such message
        (message_id(&before, 0), "   ", 422),   // empty
        ("not-a-number".to_string(), "x", 400), // malformed
    ];
    for (message, content, expected) in refusals {
        let (status, body) = edit(&client, &id, &message, content).await;
        assert_eq!(status, expected, "{message} {content:?}: {body}");
    }
    let intruder = server.signed_in("mallory").await;
    let (status, _) = edit(&intruder, &id, &message_id(&before, 0), "mine now").await;
    assert_eq!(status, 404);
    assert_eq!(texts(&client.conversation(&id).await.1), texts(&before));
    assert_eq!(texts(&client.conversation(&other).await.1), texts(&elsewhere));
    server.stop().await;
}

#[tokio::test]
async fn no_edit_while_a_turn_runs() {
    let model = GatedProvider::new();
    let server = TestServer::start_with(model.clone()).await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    client.call_json("send_message", &[("conversation_id", &id), ("content", "first")]).await;
    let (_, working) = client.conversation(&id).await;
    assert_eq!(working["status"], "processing");
    // The line stays editable in the data (a line that changed with the status would make every
    // load after a turn fetch the whole transcript); the page offers no "Edit" while it works.
    assert_eq!(working["messages"][0]["editable"], true);
    let page = |http: reqwest::Client| {
        let url = format!("{}/c/{id}", server.base);
        async move { http.get(url).send().await.unwrap().text().await.unwrap() }
    };
    assert!(!page(client.http.clone()).await.contains("class=\"edit-message\""), "no Edit while it works");
    let (status, body) = edit(&client, &id, &message_id(&working, 0), "changed").await;
    assert_eq!(status, 409, "{body}");
    model.gate.add_permits(1);
    let settled = client.settled_conversation(&id).await;
    assert_eq!(texts(&settled), ["first", "released after 2 messages"]);
    assert_eq!(settled["messages"][0]["editable"], true);
    assert!(page(client.http.clone()).await.contains("class=\"edit-message\""), "Edit once the turn has ended");
    server.stop().await;
}

#[tokio::test]
async fn what_a_card_applied_in_the_replaced_part_stays_and_the_reader_is_told_beforehand() {
    let effects = Effects::default();
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&effects)).await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    say(&client, &id, "hello").await;
    let card = say(&client, &id, "write it").await;
    assert_eq!(card["status"], "awaiting_approval");
    let digest = card["card"]["digest"].as_str().unwrap().to_string();
    let (status, body) =
        client.call_json("decide", &[("conversation_id", &id), ("digest", &digest), ("decision", "approve")]).await;
    assert_eq!(status, 200, "{body}");
    let applied = client.settled_conversation(&id).await;
    assert_eq!(*effects.titles.lock().unwrap(), ["A better title"]);
    // Both of the reader's messages come before the decision; the reply after it does not.
    assert_eq!(applied["messages"][0]["decided_after"], true);
    assert_eq!(applied["messages"][2]["decided_after"], true);
    assert!(applied["messages"].as_array().unwrap().last().unwrap().get("decided_after").is_none());

    let (status, body) = edit(&client, &id, &message_id(&applied, 0), "hello again").await;
    assert_eq!(status, 200, "{body}");
    let after = client.settled_conversation(&id).await;
    assert_eq!(texts(&after), ["hello again", "Echo: hello again"]);
    assert_eq!(*effects.titles.lock().unwrap(), ["A better title"], "the applied change stays, nothing runs again");
    server.stop().await;
}

#[tokio::test]
async fn editing_while_a_card_waits_starts_over_from_the_edited_message() {
    let effects = Effects::default();
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&effects)).await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let card = say(&client, &id, "write it").await;
    assert_eq!(card["status"], "awaiting_approval");
    let (status, body) = edit(&client, &id, &message_id(&card, 0), "just talk").await;
    assert_eq!(status, 200, "{body}");
    let after = client.settled_conversation(&id).await;
    assert_eq!(texts(&after), ["just talk", "Echo: just talk"]);
    assert!(effects.titles.lock().unwrap().is_empty(), "the card's write never ran");
    server.stop().await;
}

async fn since(client: &Client, id: &str, known: &str, digest: &str) -> Value {
    let (status, part) =
        client.call_json("conversation_since", &[("id", id), ("known", known), ("digest", digest)]).await;
    assert_eq!(status, 200, "{part}");
    part
}

#[tokio::test]
async fn a_page_gets_only_the_messages_it_lacks_and_all_of_them_when_what_it_has_changed() {
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&Effects::default())).await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    say(&client, &id, "first").await;

    let whole = since(&client, &id, "0", "").await;
    assert_eq!(whole["from"], 0);
    assert_eq!(texts(&whole["view"]), ["first", "Echo: first"]);
    let first_digest = whole["digest"].as_str().unwrap().to_string();

    say(&client, &id, "second").await;
    let part = since(&client, &id, "2", &first_digest).await;
    assert_eq!(part["from"], 2, "the page's two messages are current: {part}");
    assert_eq!(texts(&part["view"]), ["second", "Echo: second"]);
    assert_eq!(part["view"]["status"], "idle");
    let second_digest = part["digest"].as_str().unwrap().to_string();
    assert_ne!(second_digest, first_digest);
    let nothing_new = since(&client, &id, "4", &second_digest).await;
    assert_eq!((nothing_new["from"].as_u64(), texts(&nothing_new["view"]).len()), (Some(4), 0));

    // What the page has does not match: a wrong digest, more messages than there are.
    for (known, digest) in [("2", "0123456789abcdef-2"), ("2", second_digest.as_str()), ("9", second_digest.as_str())] {
        let all = since(&client, &id, known, digest).await;
        assert_eq!(all["from"], 0, "{known} {digest}");
        assert_eq!(texts(&all["view"]).len(), 4);
    }

    // An edit in another tab: the page's first two messages were these, but are no longer.
    let edited = client.settled_conversation(&id).await;
    let (status, body) = edit(&client, &id, &message_id(&edited, 0), "changed").await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(&id).await;
    let after_edit = since(&client, &id, "2", &first_digest).await;
    assert_eq!(after_edit["from"], 0, "same count, other content: everything again");
    assert_eq!(texts(&after_edit["view"]), ["changed", "Echo: changed"]);

    // Malformed, or someone else's: refused as the whole conversation is.
    let (status, _) = client.call_json("conversation_since", &[("id", &id), ("known", "-1"), ("digest", "")]).await;
    assert_eq!(status, 400);
    let intruder = server.signed_in("mallory").await;
    let (status, _) = intruder.call_json("conversation_since", &[("id", &id), ("known", "0"), ("digest", "")]).await;
    assert_eq!(status, 404);
    server.stop().await;
}
