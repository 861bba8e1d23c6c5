//! Approval cards: which answers a card offers, what each decision does, and how a message treats
//! a waiting run in an ordinary chat and in a guided process run.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};
use server::conversation::ConversationStatus;

use crate::harness::{refused, texts, Client, TestServer};
use crate::scripted::{services, Effects};

async fn server(effects: &Effects) -> TestServer {
    TestServer::start_services(tempfile::tempdir().unwrap(), services(effects)).await
}

async fn card(client: &Client, skill: Option<&str>) -> (String, Value) {
    let (status, id) = client.call_json("create_conversation", &[("skill", skill.unwrap_or(""))]).await;
    assert!(status < 400, "{id}");
    let id = id.as_str().unwrap().to_string();
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", "write it")]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "awaiting_approval", "{conversation}");
    (id, conversation)
}

fn digest(conversation: &Value) -> String {
    conversation["card"]["digest"].as_str().expect("a card digest").to_string()
}

async fn decide(client: &Client, id: &str, digest: &str, decision: &str) -> (u16, Value) {
    client.call_json("decide", &[("conversation_id", id), ("digest", digest), ("decision", decision)]).await
}

#[tokio::test]
async fn approving_the_card_applies_the_write_once() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = card(&client, None).await;

    let card = &conversation["card"];
    assert_eq!(card["answers"], "plain", "an ordinary chat offers Approve and Cancel");
    assert_eq!(card["calls"][0]["name"], "set_title");
    assert_eq!(card["calls"][0]["declares_write"], true);
    assert!(card["calls"][0]["arguments"].as_str().unwrap().contains("A better title"));
    assert!(effects.titles.lock().unwrap().is_empty(), "nothing is written before the approval");

    let (status, body) = decide(&client, &id, &digest(&conversation), "approve").await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle");
    assert_eq!(texts(&conversation).last().unwrap(), "Done: Title set to A better title");
    assert_eq!(*effects.titles.lock().unwrap(), vec!["A better title".to_string()]);

    // The card is gone; a second decision finds nothing to decide.
    let (status, body) = decide(&client, &id, "whatever", "approve").await;
    assert_eq!(
        (status, body),
        (409, refused("not_awaiting_approval", "This conversation is not waiting for an approval."))
    );
    assert_eq!(effects.titles.lock().unwrap().len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn a_reason_for_a_card_that_does_not_offer_one_is_a_plain_denial() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = card(&client, None).await;
    let before = texts(&conversation);

    let (status, _) = decide(&client, &id, &digest(&conversation), "variant").await;
    assert_eq!(status, 200);
    let conversation = client.settled_conversation(&id).await;
    let after = texts(&conversation);
    assert_eq!(after.len(), before.len() + 1, "no reason label joins the transcript");
    let answer = after.last().unwrap();
    assert!(answer.contains("approval_denied") && !answer.contains("reason:"), "{answer}");
    assert!(effects.titles.lock().unwrap().is_empty());
    server.stop().await;
}

#[tokio::test]
async fn crafted_decisions_are_refused_and_change_nothing() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, before) = card(&client, None).await;
    let digest = digest(&before);

    assert_eq!(
        decide(&client, &id, "stale", "approve").await,
        (
            409,
            refused(
                "card_changed",
                "The card changed after it was shown, so nothing was carried out. Check the card and decide again."
            )
        )
    );
    assert_eq!(decide(&client, &id, &digest, "delete-all").await.0, 422);
    let intruder = server.signed_in("mallory").await;
    assert_eq!(decide(&intruder, &id, &digest, "approve").await.0, 404);
    // "weiter" while the card waits is a hint to decide on the card, not a new turn.
    let (status, body) =
        client.call_json("send_message", &[("conversation_id", &id), ("content", "Ok, weiter bitte")]).await;
    assert_eq!(
        (status, body),
        (
            409,
            refused(
                "approval_still_pending",
                "This step is still waiting for a decision. Decide on the card — a message does not approve it."
            )
        )
    );

    let (_, after) = client.conversation(&id).await;
    assert_eq!(after["status"], "awaiting_approval");
    assert_eq!(after["messages"], before["messages"]);
    assert!(effects.titles.lock().unwrap().is_empty());
    server.stop().await;
}

#[tokio::test]
async fn a_write_in_a_process_run_offers_variant_and_skip_with_their_labels() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = card(&client, Some("page-tour")).await;
    assert_eq!(conversation["card"]["answers"], "process");
    assert_eq!(conversation["process_run"], true);

    let (status, _) = decide(&client, &id, &digest(&conversation), "variant").await;
    assert_eq!(status, 200);
    let conversation = client.settled_conversation(&id).await;
    let texts = texts(&conversation);
    assert_eq!(texts[texts.len() - 2], "Another variant", "the reason's label is the reader's message");
    assert!(texts.last().unwrap().contains("reason: variant"), "{}", texts.last().unwrap());
    assert!(effects.titles.lock().unwrap().is_empty());

    // Skip, decided by a German reader, reads in German in the transcript.
    client.call_json("send_message", &[("conversation_id", &id), ("content", "write it")]).await;
    let conversation = client.settled_conversation(&id).await;
    let response = client
        .http
        .post(format!("{}/api/decide", server.base))
        .header("accept-language", "de")
        .form(&[("conversation_id", id.as_str()), ("digest", &digest(&conversation)), ("decision", "skip")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let conversation = client.settled_conversation(&id).await;
    let texts = crate::harness::texts(&conversation);
    assert_eq!(texts[texts.len() - 2], "Überspringen");
    assert!(texts.last().unwrap().contains("reason: skip"));
    server.stop().await;
}

#[tokio::test]
async fn a_message_while_a_process_run_waits_cancels_that_run_and_starts_a_turn() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, _) = card(&client, Some("page-tour")).await;
    let run_id: uuid::Uuid = server.store().conversation(&id).await.unwrap().unwrap().run_id.unwrap();

    let (status, _) =
        client.call_json("send_message", &[("conversation_id", &id), ("content", "let's do something else")]).await;
    assert_eq!(status, 200);
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle");
    assert_eq!(texts(&conversation).last().unwrap(), "Echo: let's do something else");
    let old = server.runtime().status(&runtime::Actor::user(1), run_id).await.unwrap().unwrap();
    assert_eq!(old.status, runtime::RunStatus::Cancelled, "the proposal cannot be decided after the tour moved on");
    assert!(effects.titles.lock().unwrap().is_empty());
    server.stop().await;
}

/// In a process run a message cancels the waiting run; an approval applies it. Sent at the same
/// moment from two clients, exactly one of them wins, and the write happens iff the approval won.
#[tokio::test]
async fn cancel_by_message_against_approve_has_exactly_one_winner() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let deciding = server.signed_in("demo").await;
    let typing = server.signed_in("demo").await;
    let mut outcomes = Vec::new();
    for round in 0..8 {
        let (id, conversation) = card(&deciding, Some("page-tour")).await;
        let digest = digest(&conversation);
        let written_before = effects.titles.lock().unwrap().len();
        let message_form = [("conversation_id", id.as_str()), ("content", "something else")];
        // One side a little later each round, so the rounds span "message first" to "approval first".
        // A quarter of a millisecond per round: a whole approved turn takes only a few
        // milliseconds, and a message sent after it settled would not race the approval at all.
        let stagger = std::time::Duration::from_micros(250 * round);
        let (approve_delay, message_delay) =
            if round % 2 == 0 { (std::time::Duration::ZERO, stagger) } else { (stagger, std::time::Duration::ZERO) };
        let ((approve, _), (message, _)) = tokio::join!(
            async {
                tokio::time::sleep(approve_delay).await;
                decide(&deciding, &id, &digest, "approve").await
            },
            async {
                tokio::time::sleep(message_delay).await;
                typing.call_json("send_message", &message_form).await
            },
        );
        let conversation = deciding.settled_conversation(&id).await;
        let written = effects.titles.lock().unwrap().len() - written_before;
        match (approve, message) {
            (200, 409) => {
                assert_eq!(written, 1, "round {round}: the approval won and wrote once");
                assert_eq!(texts(&conversation).last().unwrap(), "Done: Title set to A better title");
            }
            (409, 200) => {
                assert_eq!(written, 0, "round {round}: the cancel won, nothing was written");
                assert_eq!(texts(&conversation).last().unwrap(), "Echo: something else");
            }
            // On a loaded machine the message can arrive after the approved turn has settled: it
            // then races nothing and starts a turn of its own, after the applied one.
            (200, 200) => {
                assert_eq!(written, 1, "round {round}: the approval won and wrote once");
                let texts = texts(&conversation);
                assert_eq!(
                    texts[texts.len().saturating_sub(3)..],
                    ["Done: Title set to A better title", "something else", "Echo: something else"],
                    "round {round}: the message came after the applied turn, not into it"
                );
            }
            other => panic!("round {round}: exactly one must win, got {other:?}: {conversation}"),
        }
        outcomes.push((approve, message));
    }
    // Not asserted (timing decides), but worth seeing when the test is run by hand.
    eprintln!("(approve, message) statuses over the rounds: {outcomes:?}");
    server.stop().await;
}

#[tokio::test]
async fn an_ordinary_chat_keeps_its_waiting_run_when_a_message_comes() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, _) = card(&client, None).await;
    let run_id: uuid::Uuid = server.store().conversation(&id).await.unwrap().unwrap().run_id.unwrap();
    let (status, _) =
        client.call_json("send_message", &[("conversation_id", &id), ("content", "something else")]).await;
    assert_eq!(status, 200);
    assert_eq!(client.settled_conversation(&id).await["status"], "idle");
    let old = server.runtime().status(&runtime::Actor::user(1), run_id).await.unwrap().unwrap();
    assert_eq!(old.status, runtime::RunStatus::WaitingForApproval);
    server.stop().await;
}

/// A tool that holds its run in flight until the test lets it go.
struct Slow(Arc<tokio::sync::Semaphore>);

#[async_trait]
impl runtime::Tool for Slow {
    fn spec(&self) -> runtime::ToolSpec {
        runtime::ToolSpec::new(
            "set_title",
            "Sets the title slowly",
            json!({ "type": "object", "properties": { "title": { "type": "string" } } }),
        )
        .with_effect(runtime::ToolEffect::NonIdempotentWrite)
    }

    async fn execute(&self, _arguments: Value, _context: &runtime::ToolContext) -> Result<String, runtime::ToolError> {
        let permit = self.0.acquire().await.map_err(|_| runtime::ToolError::Failed("closed".into()))?;
        permit.forget();
        Ok("Title set slowly".into())
    }
}

#[tokio::test]
async fn a_message_while_the_process_run_is_carried_on_elsewhere_is_refused_as_busy_and_restores_the_row() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let mut services = services(&Effects::default());
    let mut tools = server::default_tools();
    tools.register(Arc::new(Slow(gate.clone()))).unwrap();
    services.tools = tools;
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = card(&client, Some("page-tour")).await;
    let row = server.store().conversation(&id).await.unwrap().unwrap();
    let run_id: uuid::Uuid = row.run_id.unwrap();

    // The run is approved outside this chat and is now executing (held by the slow tool).
    let runtime = server.running.as_ref().unwrap().runtime.clone();
    let card_digest = digest(&conversation);
    let approval = tokio::spawn(async move {
        runtime.approve(&runtime::Actor::user(1), run_id, runtime::ApprovalDecision::approve(card_digest)).await
    });
    for _ in 0..200 {
        let status = server.runtime().status(&runtime::Actor::user(1), run_id).await.unwrap().unwrap().status;
        if status == runtime::RunStatus::Running {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }

    let (status, body) =
        client.call_json("send_message", &[("conversation_id", &id), ("content", "stop, something else")]).await;
    assert_eq!((status, body), (409, refused("busy", "The assistant is still working on this conversation.")));
    let after = server.store().conversation(&id).await.unwrap().unwrap();
    assert_eq!(after.status, ConversationStatus::AwaitingApproval, "the claim was given back");
    assert_eq!(after.run_id, row.run_id);
    assert_eq!(server.store().messages(&id).await.unwrap().len(), conversation["messages"].as_array().unwrap().len());

    gate.add_permits(1);
    let result = approval.await.unwrap().unwrap();
    assert!(matches!(result.outcome, runtime::RunOutcome::Completed { .. }));
    server.stop().await;
}

#[tokio::test]
async fn deleting_a_conversation_ends_the_run_it_waits_on() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, _) = card(&client, None).await;
    let run_id: uuid::Uuid = server.store().conversation(&id).await.unwrap().unwrap().run_id.unwrap();
    let (status, _) = client.call_json("delete_conversation", &[("conversation_id", &id)]).await;
    assert_eq!(status, 200);
    let run = server.runtime().status(&runtime::Actor::user(1), run_id).await.unwrap().unwrap();
    assert_eq!(run.status, runtime::RunStatus::Cancelled);
    assert!(effects.titles.lock().unwrap().is_empty());
    server.stop().await;
}

/// When where the process run stands cannot be read, the message must not start a new turn
/// beside a run that may still wait: the claim goes back and the reader gets a sentence.
#[tokio::test]
async fn a_message_is_refused_when_the_waiting_process_run_cannot_be_read() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = card(&client, Some("page-tour")).await;
    let run_id = server.store().conversation(&id).await.unwrap().unwrap().run_id.unwrap();
    let shown = conversation["messages"].as_array().unwrap().len();

    server.exec("ALTER TABLE runs RENAME TO runs_away").await;
    let (status, body) =
        client.call_json("send_message", &[("conversation_id", &id), ("content", "something else")]).await;
    assert_eq!((status, body), (503, refused("unavailable", "It could not be checked whether the assistant still waits here, so nothing was changed. Please try again in a moment.")));
    let after = server.store().conversation(&id).await.unwrap().unwrap();
    assert_eq!(after.status, ConversationStatus::AwaitingApproval, "the claim was given back");
    assert_eq!(after.run_id, Some(run_id));
    assert_eq!(server.store().messages(&id).await.unwrap().len(), shown, "the message was not recorded");
    server.exec("ALTER TABLE runs_away RENAME TO runs").await;

    let run = server.runtime().status(&runtime::Actor::user(1), run_id).await.unwrap().unwrap();
    assert_eq!(run.status, runtime::RunStatus::WaitingForApproval, "the run still waits");
    let (status, _) =
        client.call_json("send_message", &[("conversation_id", &id), ("content", "something else")]).await;
    assert_eq!(status, 200, "once the run can be read, the message cancels it and starts a turn");
    let run = server.runtime().status(&runtime::Actor::user(1), run_id).await.unwrap().unwrap();
    assert_eq!(run.status, runtime::RunStatus::Cancelled);
    assert!(effects.titles.lock().unwrap().is_empty());
    server.stop().await;
}
