//! Corrections on a card through the chat: edited arguments checked against the tool's schema
//! (a sentence per field, nothing changed) and run as edited; a denial with a sentence that
//! reaches the model; "always allow", which skips the card until revoked and is never given to
//! an owner whose changes wait for a second person.

use serde_json::Value;

use crate::harness::{texts, Client, TestServer, PASSWORD};
use crate::scripted::{services, Effects};

async fn server(effects: &Effects) -> TestServer {
    TestServer::start_services(tempfile::tempdir().unwrap(), services(effects)).await
}

async fn new_conversation(client: &Client) -> String {
    let (status, id) = client.call_json("create_conversation", &[("skill", "")]).await;
    assert!(status < 400, "{id}");
    id.as_str().unwrap().to_string()
}

/// Asks for the title write and waits for what the conversation settles on.
async fn write_it(client: &Client, id: &str) -> Value {
    let (status, body) = client.call_json("send_message", &[("conversation_id", id), ("content", "write it")]).await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(id).await
}

fn digest(conversation: &Value) -> String {
    conversation["card"]["digest"].as_str().expect("a card digest").to_string()
}

#[tokio::test]
async fn edited_arguments_that_break_the_schema_are_refused_per_field_and_good_ones_run_as_edited() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let id = new_conversation(&client).await;
    let conversation = write_it(&client, &id).await;
    assert_eq!(conversation["status"], "awaiting_approval", "{conversation}");
    let edit = &conversation["card"]["calls"][0]["edit"];
    assert_eq!(edit["kind"], "form", "{edit}");
    assert_eq!(edit["fields"][0]["name"], "title");
    assert_eq!(edit["fields"][0]["default"], "A better title");
    let digest = digest(&conversation);

    // A whole-arguments edit without the required title and with a number where text belongs.
    let broken = r#"{"title": 7}"#;
    let form = [
        ("conversation_id", id.as_str()),
        ("digest", digest.as_str()),
        ("decision", "approve_edited"),
        ("edits[call0]", broken),
    ];
    let (status, body) = client.call_json("decide", &form).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["code"], "invalid_edit");
    assert_eq!(body["fields"][0]["field"], "title", "{body}");
    assert_eq!(body["fields"][0]["message"], "This must be string.", "{body}");
    let (status, body) = client
        .call_json(
            "decide",
            &[("conversation_id", &id), ("digest", &digest), ("decision", "approve_edited"), ("edits[call0]", "{}")],
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["fields"][0],
        serde_json::json!({ "field": "title", "message": "This field is required.", "call": 0 }),
        "the call it is about, for the card to put it beside its field"
    );
    let unchanged = client.settled_conversation(&id).await;
    assert_eq!(unchanged["status"], "awaiting_approval", "nothing changed");
    assert_eq!(unchanged["card"]["digest"], digest.as_str());
    assert!(effects.titles.lock().unwrap().is_empty());

    // A stale digest is refused like any decision.
    let (status, body) = client
        .call_json(
            "decide",
            &[
                ("conversation_id", &id),
                ("digest", "stale"),
                ("decision", "approve_edited"),
                ("edits[call0/title]", "x"),
            ],
        )
        .await;
    assert_eq!((status, body["code"].clone()), (409, "card_changed".into()), "{body}");

    // The form's field, edited: the edited call runs and the model reads what changed.
    let (status, body) = client
        .call_json(
            "decide",
            &[
                ("conversation_id", &id),
                ("digest", &digest),
                ("decision", "approve_edited"),
                ("edits[call0/title]", "My own title"),
            ],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let done = client.settled_conversation(&id).await;
    assert_eq!(*effects.titles.lock().unwrap(), vec!["My own title".to_string()]);
    let said = texts(&done);
    assert!(said.contains(&"Applied as edited".to_string()), "{said:?}");
    let answer = said.last().unwrap();
    assert!(
        answer
            .contains(r#"The person changed the arguments before approving: title: "A better title" → "My own title""#),
        "{answer}"
    );
    assert!(answer.ends_with("Result: Title set to My own title"), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn a_response_reaches_the_model_and_an_empty_or_overlong_one_changes_nothing() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let id = new_conversation(&client).await;
    let conversation = write_it(&client, &id).await;
    let digest = digest(&conversation);
    let respond = |message: String| {
        let (id, digest) = (id.clone(), digest.clone());
        let client = &client;
        async move {
            client
                .call_json(
                    "decide",
                    &[("conversation_id", &id), ("digest", &digest), ("decision", "respond"), ("message", &message)],
                )
                .await
        }
    };
    let (status, body) = respond("   ".into()).await;
    assert_eq!((status, body["message"].clone()), (422, "Write a sentence for the assistant first.".into()));
    let (status, body) = respond("x".repeat(2001)).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(client.settled_conversation(&id).await["status"], "awaiting_approval");

    let (status, body) = respond("Use the formal tone.".into()).await;
    assert_eq!(status, 200, "{body}");
    let done = client.settled_conversation(&id).await;
    let said = texts(&done);
    assert!(said.contains(&"Declined: Use the formal tone.".to_string()), "{said:?}");
    let answer = said.last().unwrap();
    assert!(answer.contains(r#"The person said: "Use the formal tone.""#), "{answer}");
    assert!(effects.titles.lock().unwrap().is_empty());
    server.stop().await;
}

#[tokio::test]
async fn always_allow_skips_the_card_until_it_is_revoked() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let id = new_conversation(&client).await;
    let conversation = write_it(&client, &id).await;
    assert_eq!(conversation["card"]["always"]["tools"], "set_title", "{conversation}");
    assert_eq!(conversation["card"]["always"]["mine"], false);
    let form = [
        ("conversation_id", id.as_str()),
        ("digest", &digest(&conversation)),
        ("decision", "approve"),
        ("always", "mine"),
    ];
    // "For me" needs an admin's permit for the tool.
    let (status, body) = client.call_json("decide", &form).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["reason"], "PolicyNotPermitted");
    let form = [
        ("conversation_id", id.as_str()),
        ("digest", &digest(&conversation)),
        ("decision", "approve"),
        ("always", "conversation"),
    ];
    let (status, body) = client.call_json("decide", &form).await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(&id).await;
    assert_eq!(effects.titles.lock().unwrap().len(), 1);

    // Next time no card: approved by the policy, said in the transcript, recorded as such.
    let done = write_it(&client, &id).await;
    assert_eq!(done["status"], "idle", "{done}");
    assert_eq!(effects.titles.lock().unwrap().len(), 2);
    let said = texts(&done);
    assert!(said.contains(&"Approved automatically: set_title (always allowed)".to_string()), "{said:?}");
    let actions: Vec<String> = server_audit_actions(&server, &id).await;
    assert!(actions.contains(&"auto_approved".to_string()), "{actions:?}");

    // Another conversation still asks.
    let other = new_conversation(&client).await;
    assert_eq!(write_it(&client, &other).await["status"], "awaiting_approval");

    let (status, policies) = client.call_json("policies", &[]).await;
    assert_eq!(status, 200, "{policies}");
    assert_eq!(policies.as_array().unwrap().len(), 1, "{policies}");
    let policy = policies[0]["id"].as_i64().unwrap().to_string();
    let (status, body) = client.call_json("revoke_policy", &[("policy", &policy)]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(write_it(&client, &id).await["status"], "awaiting_approval", "the card is back");
    assert_eq!(effects.titles.lock().unwrap().len(), 2);
    server.stop().await;
}

#[tokio::test]
async fn an_owner_whose_changes_wait_for_a_second_person_gets_no_standing_approval() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let hash = server::auth::hash_password(PASSWORD);
    server.store().add_user("ed", &hash, server::store::Role::Editor, false).await.unwrap();
    let ed = server.client();
    ed.sign_in("ed").await;
    let id = new_conversation(&ed).await;
    let conversation = write_it(&ed, &id).await;
    assert_eq!(conversation["card"]["needs_reviewer"], true);
    assert!(conversation["card"]["always"].is_null(), "{conversation}");
    let form = [
        ("conversation_id", id.as_str()),
        ("digest", &digest(&conversation)),
        ("decision", "approve"),
        ("always", "conversation"),
    ];
    let (status, body) = ed.call_json("decide", &form).await;
    assert!(status == 403 || status == 422, "{status} {body}");
    // Even a policy put in the table by hand never approves for them.
    server
        .exec("INSERT INTO approval_policies (user_id, tool, conversation_id, created_at) SELECT id, 'set_title', NULL, 0 FROM users WHERE username = 'ed'")
        .await;
    server
        .exec("INSERT INTO approval_policy_permits (tool, permitted_by, created_at) VALUES ('set_title', NULL, 0)")
        .await;
    let again = new_conversation(&ed).await;
    assert_eq!(write_it(&ed, &again).await["status"], "awaiting_approval");
    assert!(effects.titles.lock().unwrap().is_empty());
    server.stop().await;
}

async fn server_audit_actions(server: &TestServer, conversation_id: &str) -> Vec<String> {
    db::on!(server.store().db(), pool => sqlx::query_scalar::<_, String>(
        "SELECT action FROM audit_log WHERE conversation_id = $1 ORDER BY id",
    )
    .bind(conversation_id)
    .fetch_all(pool)
    .await)
    .unwrap()
}

/// The `<li>` of `tool` on the tools page.
fn tool_row<'a>(html: &'a str, tool: &str) -> &'a str {
    let start = html.find(&format!("data-tool=\"{tool}\"")).unwrap_or_else(|| panic!("{tool} listed: {html}"));
    let end = html[start..].find("</li>").map_or(html.len(), |end| start + end);
    &html[start..end]
}

async fn tools_page(client: &Client) -> String {
    let response = client.http.get(format!("{}/tools", client.base)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

#[tokio::test]
async fn an_admin_permits_always_for_me_on_the_tools_page_and_an_editor_then_gets_it() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let admin = server.signed_in("demo").await;
    let ed = server.signed_in("ed").await;

    // Only an admin sees the control, and only on tools that can wait for a card.
    let page = tools_page(&admin).await;
    let row = tool_row(&page, "set_title");
    assert!(row.contains("class=\"policy-permit\"") && row.contains("data-permitted=\"false\""), "{row}");
    assert!(row.contains("Let users always allow it for themselves"), "{row}");
    assert!(!tool_row(&page, "ask_choice").contains("policy-permit"), "it never waits for a card");
    assert!(!tools_page(&ed).await.contains("policy-permit"));
    let id = new_conversation(&ed).await;
    let card = write_it(&ed, &id).await;
    assert_eq!(card["card"]["always"]["mine"], false, "{card}");

    // An editor's permit is refused; one for a tool that never waits is refused with a sentence.
    let permit = [("tool", "set_title"), ("permitted", "true")];
    let (status, body) = ed.call_json("set_policy_permit", &permit).await;
    assert_eq!((status, &body["code"]), (403, &Value::from("forbidden")), "{body}");
    let (status, body) = admin.call_json("set_policy_permit", &[("tool", "ask_choice"), ("permitted", "true")]).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["message"],
        "This tool never waits for a card, so there is nothing to always allow. Nothing was changed."
    );
    assert!(server.store().policy_permits().await.unwrap().is_empty(), "nothing changed");

    // The admin's plain form (no WASM) permits it and comes back to the page.
    let response = admin
        .http
        .post(format!("{}/api/set_policy_permit", admin.base))
        .header("accept", "text/html")
        .header("referer", format!("{}/tools", admin.base))
        .form(&permit)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_redirection(), "{}", response.status());
    assert_eq!(response.headers()["location"], "/tools");
    let page = tools_page(&admin).await;
    let row = tool_row(&page, "set_title");
    assert!(
        row.contains("data-permitted=\"true\"") && row.contains("Users may always allow it for themselves"),
        "{row}"
    );
    assert!(row.contains(">Withdraw<"), "{row}");

    // The editor's card now offers "always for me".
    let card = client_card(&ed, &id).await;
    assert_eq!(card["card"]["always"]["mine"], true, "{card}");
    let html = ed.http.get(format!("{}/c/{id}", ed.base)).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("Always allow set_title for me"), "the card on the page offers it");

    // Withdrawn, the offer is gone again.
    let (status, body) = admin.call_json("set_policy_permit", &[("tool", "set_title"), ("permitted", "false")]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(client_card(&ed, &id).await["card"]["always"]["mine"], false);
    server.stop().await;
}

async fn client_card(client: &Client, id: &str) -> Value {
    let (status, conversation) = client.conversation(id).await;
    assert_eq!(status, 200, "{conversation}");
    conversation
}
