//! A run that asks: the conversation parks, the answer is checked and recorded, the worker delivers
//! it, and a refusal hands the question back.

use std::sync::atomic::Ordering;

use serde_json::{json, Value};
use server::conversation::{Recorded, Reply};

use crate::harness::{refused, texts, Client, TestServer};
use crate::scripted::{services, Effects};

async fn server(effects: &Effects) -> TestServer {
    TestServer::start_services(tempfile::tempdir().unwrap(), services(effects)).await
}

/// Starts a conversation and sends a message that makes the scripted model ask.
async fn asked(client: &Client, message: &str) -> (String, Value) {
    let id = client.create_conversation().await;
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", message)]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    (id, conversation)
}

fn digest(conversation: &Value) -> String {
    conversation["question"]["digest"].as_str().expect("a question digest").to_string()
}

#[tokio::test]
async fn a_question_parks_the_conversation_and_the_answer_continues_the_run() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = asked(&client, "please ask me something").await;

    // The question is the assistant's message, and the buttons come from its schema.
    assert_eq!(texts(&conversation).last().unwrap(), "Which point first?");
    let question = &conversation["question"]["form"];
    assert_eq!(question["kind"], "choice");
    let labels: Vec<&str> =
        question["options"].as_array().unwrap().iter().map(|o| o["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["Title", "Images", "Links"]);
    assert_eq!(question["free_text_property"], Value::Null);

    let digest = digest(&conversation);
    let (status, body) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("choice", "\"Images\"")]).await;
    assert_eq!(status, 200, "{body}");

    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    let texts = texts(&conversation);
    assert_eq!(texts[texts.len() - 2], "Images", "the answer is the reader's line");
    assert_eq!(texts.last().unwrap(), "Done: The user picked: Images");
    server.stop().await;
}

#[tokio::test]
async fn crafted_answers_get_a_clear_error_and_change_nothing() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, before) = asked(&client, "ask me").await;
    let digest = digest(&before);

    // (extra form fields, expected status, expected error code)
    type Refusal<'a> = (Vec<(&'a str, &'a str)>, u16, &'a str);
    let refusals: Vec<Refusal> = vec![
        (vec![("choice", "\"Delete everything\"")], 422, "answer_not_offered"),
        (vec![("choice", "1")], 422, "answer_not_offered"),
        (vec![("choice", "not json")], 422, "answer_not_offered"),
        (vec![("free_text", "Images please")], 422, "answer_not_offered"),
        (vec![("choice", "\"Images\""), ("free_text", "and more")], 422, "answer_not_offered"),
        (vec![], 422, "answer_not_offered"),
        (vec![("fields[answer]", "Images")], 422, "answer_not_offered"),
    ];
    for (extra, expected_status, expected_error) in refusals {
        let mut form = vec![("conversation_id", id.as_str()), ("digest", digest.as_str())];
        form.extend(extra.iter().copied());
        let (status, body) = client.call_json("answer", &form).await;
        assert_eq!(status, expected_status, "{extra:?}: {body}");
        let sentence = "This answer does not fit the question. Choose one of the answers offered.";
        assert_eq!(body, refused(expected_error, sentence), "{extra:?}");
    }

    let (status, body) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", "0000"), ("choice", "\"Images\"")]).await;
    assert_eq!(
        (status, body),
        (
            409,
            refused(
                "question_changed",
                "The question changed after it was shown, so the answer was not taken. Answer again."
            )
        )
    );

    let intruder = server.signed_in("mallory").await;
    let (status, _) =
        intruder.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("choice", "\"Images\"")]).await;
    assert_eq!(status, 404);

    let huge = "x".repeat(server::MAX_BODY_BYTES + 10);
    let response = client.call("answer", &[("conversation_id", &id), ("digest", &digest), ("free_text", &huge)]).await;
    assert_eq!(response.status(), 413);

    let (status, after) = client.conversation(&id).await;
    assert_eq!(status, 200);
    assert_eq!(after["status"], "awaiting_input");
    assert_eq!(after["messages"], before["messages"], "nothing was recorded");
    assert_eq!(after["question"], before["question"]);
    server.stop().await;
}

#[tokio::test]
async fn the_json_route_takes_an_answer_and_refuses_malformed_ones() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = asked(&client, "ask me").await;
    let digest = digest(&conversation);
    let url = format!("{}/ai-chat/conversations/input", server.base);

    let not_json =
        client.http.post(&url).header("content-type", "text/plain").body("choice=Images").send().await.unwrap();
    assert_eq!(not_json.status(), 415);
    let broken = client
        .http
        .post(&url)
        .header("content-type", "application/json")
        .body("{\"conversation_id\":")
        .send()
        .await
        .unwrap();
    assert_eq!(broken.status(), 400);
    let unknown_field = client
        .http
        .post(&url)
        .json(&json!({ "conversation_id": id, "turn_digest": digest, "choice": "Images", "admin": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown_field.status(), 422);
    let wrong = client
        .http
        .post(&url)
        .json(&json!({ "conversation_id": id, "turn_digest": digest, "choice": "Nope" }))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 422);
    let body: Value = wrong.json().await.unwrap();
    assert_eq!(body["code"], "answer_not_offered");
    assert_eq!(body["error"], "This answer does not fit the question. Choose one of the answers offered.");
    let german = client
        .http
        .post(&url)
        .header("accept-language", "de-DE")
        .json(&json!({ "conversation_id": id, "turn_digest": digest, "choice": "Nope" }))
        .send()
        .await
        .unwrap();
    let body: Value = german.json().await.unwrap();
    assert_eq!(body["error"], "Diese Antwort passt nicht zur Rückfrage. Bitte eine der angebotenen Antworten wählen.");
    let anonymous = reqwest::Client::new()
        .post(&url)
        .json(&json!({ "conversation_id": id, "turn_digest": digest, "choice": "Images" }))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    assert_eq!(client.conversation(&id).await.1["status"], "awaiting_input");

    let accepted = client
        .http
        .post(&url)
        .json(&json!({ "conversation_id": id, "turn_digest": digest, "choice": "Links" }))
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), 202);
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(texts(&conversation).last().unwrap(), "Done: The user picked: Links");
    server.stop().await;
}

#[tokio::test]
async fn a_form_answer_is_checked_field_by_field() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = asked(&client, "a form please").await;
    assert_eq!(conversation["question"]["form"]["kind"], "form");
    let digest = digest(&conversation);

    let (status, _) = client
        .call_json(
            "answer",
            &[("conversation_id", &id), ("digest", &digest), ("fields[title]", "Home"), ("fields[count]", "three")],
        )
        .await;
    assert_eq!(status, 422, "a word is no integer");
    let (status, _) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("fields[count]", "3")]).await;
    assert_eq!(status, 422, "the title is required");

    let (status, body) = client
        .call_json(
            "answer",
            &[
                ("conversation_id", &id),
                ("digest", &digest),
                ("fields[title]", " Home "),
                ("fields[count]", "3"),
                ("fields[hidden]", "true"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    let texts = texts(&conversation);
    assert_eq!(texts[texts.len() - 2], "Title: Home\nCount: 3\nHidden: Yes");
    let last = texts.last().unwrap();
    assert!(
        last.contains(r#""title":"Home""#) && last.contains(r#""count":3"#) && last.contains(r#""hidden":true"#),
        "{last}"
    );
    server.stop().await;
}

/// The sentence a refusal field by field gives for `field`.
fn sentence_for<'a>(body: &'a Value, field: &str) -> &'a str {
    let fields = body["fields"].as_array().unwrap_or_else(|| panic!("no fields in {body}"));
    let problem = fields.iter().find(|problem| problem["field"] == field).unwrap_or_else(|| panic!("{field}: {body}"));
    problem["message"].as_str().unwrap()
}

#[tokio::test]
async fn a_form_answer_that_does_not_fit_names_each_field_in_the_readers_language_and_changes_nothing() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = asked(&client, "a form please").await;
    let digest = digest(&conversation);

    let (status, body) = client
        .call_json(
            "answer",
            &[("conversation_id", &id), ("digest", &digest), ("fields[title]", "Home"), ("fields[count]", "three")],
        )
        .await;
    assert_eq!(
        (status, body),
        (
            422,
            json!({
                "code": "invalid_answer",
                "message": "Some answers do not fit the question; see the note beside each field.",
                "fields": [{ "field": "count", "message": "Enter a whole number." }]
            })
        ),
        "an integer field's own sentence, not the choice's"
    );
    // Every field that does not fit is named at once.
    let (status, body) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("fields[count]", "2.5")]).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["fields"].as_array().unwrap().len(), 2, "{body}");
    assert_eq!(sentence_for(&body, "title"), "This field is required.");
    assert_eq!(sentence_for(&body, "count"), "Enter a whole number.");

    // Nothing was recorded: the question still waits, as it was.
    let (_, after) = client.conversation(&id).await;
    assert_eq!(after["status"], "awaiting_input", "{after}");
    assert_eq!(after["question"]["digest"], digest.as_str());
    assert_eq!(texts(&after), texts(&conversation));
    assert!(server.store().conversation(&id).await.unwrap().unwrap().recorded.is_none());

    // In the reader's language, and the same list on the JSON route.
    let (status, _) = client.call_json("set_language", &[("language", "de")]).await;
    assert_eq!(status, 200);
    let (status, body) = client
        .call_json(
            "answer",
            &[("conversation_id", &id), ("digest", &digest), ("fields[title]", "Home"), ("fields[count]", "drei")],
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(sentence_for(&body, "count"), "Bitte eine ganze Zahl eingeben.");
    let url = format!("{}/ai-chat/conversations/input", server.base);
    let response = client
        .http
        .post(&url)
        .json(&json!({ "conversation_id": id, "turn_digest": digest, "fields": { "title": "Home", "count": 1.5 } }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], "invalid_answer");
    assert_eq!(body["fields"], json!([{ "field": "count", "message": "Bitte eine ganze Zahl eingeben." }]));
    let (_, after) = client.conversation(&id).await;
    assert_eq!(after["status"], "awaiting_input", "{after}");
    server.stop().await;
}

#[tokio::test]
async fn the_schemas_own_bounds_are_named_beside_each_field_in_the_readers_language_and_change_nothing() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = asked(&client, "the bounded form").await;
    let digest = digest(&conversation);
    let answer = |fields: &[(&'static str, &'static str)]| {
        let mut form = vec![("conversation_id", id.clone()), ("digest", digest.clone())];
        form.extend(fields.iter().map(|(name, value)| (*name, value.to_string())));
        form
    };
    let post = |form: Vec<(&'static str, String)>| {
        let client = &client;
        async move {
            let pairs: Vec<(&str, &str)> = form.iter().map(|(name, value)| (*name, value.as_str())).collect();
            client.call_json("answer", &pairs).await
        }
    };

    let (status, body) = post(answer(&[
        ("fields[seats]", "0"),
        ("fields[code]", "AB"),
        ("fields[email]", "not an address"),
        ("fields[size]", "L"),
    ]))
    .await;
    assert_eq!(
        (status, body),
        (
            422,
            json!({
                "code": "invalid_answer",
                "message": "Some answers do not fit the question; see the note beside each field.",
                "fields": [
                    { "field": "seats", "message": "Enter a number of at least 1." },
                    { "field": "code", "message": "Use at least 3 characters." },
                    { "field": "email", "message": "Enter an e-mail address." },
                    { "field": "size", "message": "Choose one of: S, M." }
                ]
            })
        )
    );
    let (status, body) = post(answer(&[("fields[seats]", "13"), ("fields[code]", "abc")])).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(sentence_for(&body, "seats"), "Enter a number of at most 12.");
    assert_eq!(sentence_for(&body, "code"), "Enter it in the form this field asks for.");
    let (status, body) = post(answer(&[("fields[code]", "ABC")])).await;
    assert_eq!((status, sentence_for(&body, "seats")), (422, "This field is required."));

    // Nothing was recorded: the question still waits, as it was.
    let (_, after) = client.conversation(&id).await;
    assert_eq!(after["status"], "awaiting_input", "{after}");
    assert_eq!(after["question"]["digest"], digest.as_str());
    assert_eq!(texts(&after), texts(&conversation));
    assert!(server.store().conversation(&id).await.unwrap().unwrap().recorded.is_none());

    // In German, and the same list on the JSON route.
    let (status, _) = client.call_json("set_language", &[("language", "de")]).await;
    assert_eq!(status, 200);
    let (status, body) = post(answer(&[("fields[seats]", "0")])).await;
    assert_eq!((status, sentence_for(&body, "seats")), (422, "Bitte eine Zahl von mindestens 1 eingeben."));
    let response = client
        .http
        .post(format!("{}/ai-chat/conversations/input", server.base))
        .json(&json!({ "conversation_id": id, "turn_digest": digest, "fields": { "seats": 2, "email": "x@" } }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["fields"], json!([{ "field": "email", "message": "Bitte eine E-Mail-Adresse eingeben." }]));
    let (_, after) = client.conversation(&id).await;
    assert_eq!(after["status"], "awaiting_input", "{after}");

    // An answer within every bound goes through, and the run goes on with it.
    let (status, body) =
        post(answer(&[("fields[seats]", "12"), ("fields[code]", "ABC"), ("fields[email]", "a@example.org")])).await;
    assert_eq!(status, 200, "{body}");
    let settled = client.settled_conversation(&id).await;
    assert_eq!(settled["status"], "idle", "{settled}");
    let last = texts(&settled).last().unwrap().to_string();
    assert!(last.contains(r#""seats":12"#) && last.contains(r#""code":"ABC""#), "{last}");
    server.stop().await;
}

#[tokio::test]
async fn a_question_the_chat_cannot_show_says_so_and_takes_no_answer() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = asked(&client, "an odd question").await;
    assert_eq!(conversation["question"]["form"], json!({ "kind": "unsupported", "question": "Upload a spreadsheet" }));
    let digest = digest(&conversation);
    let (status, _) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("free_text", "a,b")]).await;
    assert_eq!(status, 422);
    // A message of one's own still works: it starts a new turn and leaves the question unanswered.
    let (status, _) = client.call_json("send_message", &[("conversation_id", &id), ("content", "never mind")]).await;
    assert_eq!(status, 200);
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle");
    assert_eq!(texts(&conversation).last().unwrap(), "Echo: never mind");
    server.stop().await;
}

#[tokio::test]
async fn typed_text_without_a_free_text_property_starts_a_new_turn_and_leaves_the_run_waiting() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, _) = asked(&client, "ask me").await;
    let run_id = server.store().conversation(&id).await.unwrap().unwrap().run_id.unwrap();

    let (status, _) =
        client.call_json("send_message", &[("conversation_id", &id), ("content", "something else")]).await;
    assert_eq!(status, 200);
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle");
    assert_eq!(conversation["question"], Value::Null);
    let waiting = server.runtime().status(&runtime::Actor::user(1), run_id).await.unwrap().unwrap();
    assert_eq!(waiting.status, runtime::RunStatus::WaitingForInput, "an ordinary chat keeps the run waiting");
    server.stop().await;
}

#[tokio::test]
async fn a_refused_answer_is_handed_back_with_its_reason_in_both_languages() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, before) = asked(&client, "a form please").await;
    let digest = digest(&before);

    // The owner loses the right to the tool the question belongs to after it was asked.
    effects.form_forbidden.store(true, Ordering::SeqCst);
    let (status, _) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("fields[title]", "Home")]).await;
    assert_eq!(status, 200, "the chat's own check passes; the runtime refuses later");

    let after = client.settled_conversation(&id).await;
    assert_eq!(after["status"], "awaiting_input");
    assert_eq!(after["messages"], before["messages"], "the undelivered answer left the transcript");
    assert_eq!(
        after["error"],
        "Your own permissions do not cover the step this question belongs to, so the answer was not taken."
    );
    assert_eq!(after["question"]["digest"], digest.as_str(), "the same question is back");
    let german = client
        .http
        .post(format!("{}/api/conversation", server.base))
        .header("accept-language", "de")
        .form(&[("id", id.as_str())])
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(
        german["error"],
        "Deine eigenen Rechte decken den Schritt nicht ab, zu dem diese Rückfrage gehört, deshalb wurde die Antwort nicht übernommen."
    );

    // Switched back on, the same question takes the answer.
    effects.form_forbidden.store(false, Ordering::SeqCst);
    let (status, _) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("fields[title]", "Home")]).await;
    assert_eq!(status, 200);
    assert_eq!(client.settled_conversation(&id).await["status"], "idle");
    server.stop().await;
}

#[tokio::test]
async fn a_deactivated_configuration_hands_the_question_back() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, before) = asked(&client, "ask me").await;
    server.runtime().set_configuration_active(server::turn::CHAT_CONFIGURATION, false).await.unwrap();
    let digest = digest(&before);
    client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("choice", "\"Title\"")]).await;
    let after = client.settled_conversation(&id).await;
    assert_eq!(after["status"], "awaiting_input");
    assert!(
        after["error"].as_str().unwrap().starts_with("The AI configuration of this chat is switched off"),
        "{after}"
    );
    assert_eq!(after["messages"], before["messages"]);
    server.stop().await;
}

#[tokio::test]
async fn two_clients_answering_at_once_are_recorded_exactly_once() {
    let effects = Effects::default();
    let server = server(&effects).await;
    // Two browsers signed in as the same person, each with its own session.
    let laptop = server.signed_in("demo").await;
    let phone = server.signed_in("demo").await;
    for round in 0..5 {
        let (id, conversation) = asked(&laptop, "ask me").await;
        let digest = digest(&conversation);
        let title = [("conversation_id", id.as_str()), ("digest", digest.as_str()), ("choice", "\"Title\"")];
        let links = [("conversation_id", id.as_str()), ("digest", digest.as_str()), ("choice", "\"Links\"")];
        let (first, second) = tokio::join!(laptop.call_json("answer", &title), phone.call_json("answer", &links));
        let mut statuses = [first.0, second.0];
        statuses.sort();
        assert_eq!(statuses, [200, 409], "round {round}: {first:?} {second:?}");
        let winner = if first.0 == 200 { "Title" } else { "Links" };
        let conversation = laptop.settled_conversation(&id).await;
        let answers: Vec<String> = texts(&conversation).into_iter().filter(|t| t == "Title" || t == "Links").collect();
        assert_eq!(answers, vec![winner.to_string()], "round {round}: {conversation}");
        assert_eq!(texts(&conversation).last().unwrap(), &format!("Done: The user picked: {winner}"));
    }
    server.stop().await;
}

#[tokio::test]
async fn an_answer_no_worker_took_is_handed_back_by_reconcile_and_retry_waits_for_it() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, before) = asked(&client, "ask me").await;
    let digest = digest(&before);
    let dir = server.stop().await;

    // The same database without a worker: the answer is recorded, then its dispatch is lost.
    let server = TestServer::start_configured(dir, services(&effects), false).await;
    let client = server.signed_in("demo").await;
    let (status, _) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("choice", "\"Title\"")]).await;
    assert_eq!(status, 200);

    // While the answer is in flight, Retry and a new message are refused.
    let (status, body) = client.call_json("retry", &[("conversation_id", &id)]).await;
    assert_eq!(
        (status, body),
        (409, refused("decision_in_flight", "A decision or answer for this conversation is still being carried out."))
    );
    let row = server.store().conversation(&id).await.unwrap().unwrap();
    assert!(
        matches!(&row.recorded, Some(Recorded::Answer { reply: Reply::Values(values), .. }) if *values == *json!({"answer": "Title"}).as_object().unwrap()),
        "{:?}",
        row.recorded
    );

    server.exec("DELETE FROM jobs").await;
    // A client that has every line, the answer's included, polls: a candidate for reconcile never
    // takes the fast path, so this poll hands the question back (the answer's line goes) and
    // brings it.
    let known = server.store().messages(&id).await.unwrap().len();
    let (status, poll) = client.call_json("poll", &[("id", &id), ("after", &known.to_string())]).await;
    assert_eq!((status, &poll["status"]), (200, &json!("awaiting_input")), "{poll}");
    assert_eq!(poll["conversation"]["messages"], before["messages"]);
    let (_, after) = client.conversation(&id).await;
    assert_eq!(after["status"], "awaiting_input", "{after}");
    assert_eq!(after["messages"], before["messages"]);
    assert!(after["error"].as_str().unwrap().starts_with("Your answer or decision did not reach the assistant"));
    let dir = server.stop().await;

    // With a worker again, the handed-back question takes an answer as usual.
    let server = TestServer::start_services(dir, services(&effects)).await;
    let client = server.signed_in("demo").await;
    let (status, _) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("choice", "\"Links\"")]).await;
    assert_eq!(status, 200);
    assert_eq!(texts(&client.settled_conversation(&id).await).last().unwrap(), "Done: The user picked: Links");
    server.stop().await;
}

#[tokio::test]
async fn the_first_poll_that_sees_a_question_carries_it_whatever_the_client_knows() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = asked(&client, "ask me").await;
    let known = conversation["messages"].as_array().unwrap().len().to_string();
    // Even a client that already counts every message gets the question, not the fast path.
    let (status, poll) = client.call_json("poll", &[("id", &id), ("after", &known)]).await;
    assert_eq!(status, 200, "{poll}");
    assert_eq!(poll["status"], "awaiting_input");
    assert_eq!(poll["conversation"]["question"]["digest"], conversation["question"]["digest"]);
    server.stop().await;
}
