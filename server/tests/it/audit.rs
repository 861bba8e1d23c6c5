//! The audit log: one row per event of a run that waits for a person, written with the state
//! change it records (a loser of a race writes none), kept when the conversation goes, readable
//! by admins and by each owner for their own conversations (page and exports), and dismissing a
//! run from the runs inbox.

use std::time::Duration;

use serde_json::{json, Value};
use server::audit::{Action, Entry, Filter, Row, Surface};

use crate::harness::{refused, text, Client, TestServer};
use crate::scripted::{services, Effects};

async fn server(effects: &Effects) -> TestServer {
    TestServer::start_services(tempfile::tempdir().unwrap(), services(effects)).await
}

async fn all_rows(server: &TestServer) -> Vec<Row> {
    server.store().audit_rows(&Filter::default(), 1000, 0).await.unwrap()
}

/// The conversation's rows, oldest first.
async fn rows_of(server: &TestServer, id: &str) -> Vec<Row> {
    let mut rows: Vec<Row> = all_rows(server).await.into_iter().filter(|row| row.conversation_id == id).collect();
    rows.reverse();
    rows
}

fn actions(rows: &[Row]) -> Vec<Action> {
    rows.iter().map(|row| row.action).collect()
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

async fn inbox(client: &Client) -> Vec<Value> {
    let (status, body) = client.call_json("inbox", &[]).await;
    assert_eq!(status, 200, "{body}");
    body["items"].as_array().unwrap().clone()
}

async fn decide(client: &Client, id: &str, conversation: &Value, decision: &str) -> (u16, Value) {
    let digest = conversation["card"]["digest"].as_str().unwrap();
    client.call_json("decide", &[("conversation_id", id), ("digest", digest), ("decision", decision)]).await
}

async fn dismiss(client: &Client, item: &Value) -> (u16, Value) {
    let form =
        [("conversation_id", item["conversation_id"].as_str().unwrap()), ("run", item["run_id"].as_str().unwrap())];
    client.call_json("dismiss", &form).await
}

/// Waits until the conversation has `count` audit rows.
async fn rows_settled(server: &TestServer, id: &str, count: usize) -> Vec<Row> {
    for _ in 0..200 {
        let rows = rows_of(server, id).await;
        if rows.len() >= count {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{id} never had {count} audit rows: {:?}", rows_of(server, id).await);
}

#[tokio::test]
async fn each_answer_and_decision_is_one_row_with_who_where_and_what() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;

    // A card: waiting (the worker), then approved in the chat by demo.
    let (card, conversation) = waiting(&client, "write it").await;
    let rows = rows_of(&server, &card).await;
    assert_eq!(actions(&rows), [Action::Waiting]);
    let run = rows[0].run_id.clone().expect("the run");
    assert_eq!((rows[0].actor_id, rows[0].surface), (None, Surface::Worker));
    assert_eq!(rows[0].tools, ["set_title"]);
    let proposed: Value = serde_json::from_str(rows[0].arguments.as_deref().unwrap()).unwrap();
    assert_eq!(proposed, json!([{ "tool": "set_title", "arguments": { "title": "A better title" } }]));
    assert_eq!(rows[0].owner_name.as_deref(), Some("demo"));
    let (status, body) = decide(&client, &card, &conversation, "approve").await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(&card).await;
    let rows = rows_of(&server, &card).await;
    assert_eq!(actions(&rows), [Action::Waiting, Action::Approved], "{rows:?}");
    let approved = &rows[1];
    assert_eq!(approved.actor_name.as_deref(), Some("demo"));
    assert_eq!((approved.surface, approved.run_id.as_deref()), (Surface::Chat, Some(run.as_str())));
    assert_eq!(approved.tools, ["set_title"]);
    assert_eq!(approved.arguments, rows[0].arguments);
    assert_eq!(approved.arguments_run, None, "run as proposed");
    assert_eq!(approved.conversation_title, "write it");

    // A denial keeps its kind.
    let (denied, conversation) = waiting(&client, "write it").await;
    let (status, _) = decide(&client, &denied, &conversation, "deny").await;
    assert_eq!(status, 200);
    let rows = rows_of(&server, &denied).await;
    assert_eq!(actions(&rows), [Action::Waiting, Action::Denied]);
    assert_eq!(rows[1].reason.as_deref(), Some("cancel"));

    // A question answered in the chat, and one through the JSON route.
    let (asked, conversation) = waiting(&client, "ask me").await;
    let digest = conversation["question"]["digest"].as_str().unwrap();
    let (status, body) =
        client.call_json("answer", &[("conversation_id", &asked), ("digest", digest), ("choice", "\"Images\"")]).await;
    assert_eq!(status, 200, "{body}");
    let rows = rows_settled(&server, &asked, 2).await;
    assert_eq!(actions(&rows[..2]), [Action::Waiting, Action::Answered]);
    assert_eq!(rows[0].tools, ["ask_choice"]);
    assert_eq!((rows[1].surface, rows[1].answer.as_deref()), (Surface::Chat, Some("Images")));
    assert_eq!(rows[1].actor_name.as_deref(), Some("demo"));

    let (by_api, conversation) = waiting(&client, "ask me").await;
    let body = json!({
        "conversation_id": by_api,
        "turn_digest": conversation["question"]["digest"],
        "choice": "Links",
    });
    let url = format!("{}/ai-chat/conversations/input", server.base);
    let response = client.http.post(&url).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 202);
    let rows = rows_settled(&server, &by_api, 2).await;
    assert_eq!(
        (rows[1].action, rows[1].surface, rows[1].answer.as_deref()),
        (Action::Answered, Surface::Api, Some("Links"))
    );

    // Refused input writes nothing.
    let before = all_rows(&server).await.len();
    let (waits, conversation) = waiting(&client, "write it").await;
    let mut stale = conversation.clone();
    stale["card"]["digest"] = json!("0".repeat(64));
    assert_eq!(decide(&client, &waits, &stale, "approve").await.0, 409);
    let (status, _) =
        client.call_json("answer", &[("conversation_id", &waits), ("digest", "x"), ("choice", "\"Images\"")]).await;
    assert_eq!(status, 409);
    assert_eq!(all_rows(&server).await.len(), before + 1, "only the new card's waiting row");

    // Deleting a conversation cancels its waiting run on the record, and keeps every row.
    let (status, body) = client.call_json("delete_conversation", &[("conversation_id", &waits)]).await;
    assert_eq!(status, 200, "{body}");
    let rows = rows_of(&server, &waits).await;
    assert_eq!(actions(&rows), [Action::Waiting, Action::Cancelled]);
    assert_eq!(
        (rows[1].conversation_title.as_str(), rows[1].tools.as_slice()),
        ("write it", ["set_title".to_string()].as_slice())
    );
    let (status, body) = client.call_json("delete_conversation", &[("conversation_id", &card)]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(actions(&rows_of(&server, &card).await), [Action::Waiting, Action::Approved], "kept with its title");
    assert!(server.store().conversation(&card).await.unwrap().is_none());

    // Nothing changes or removes a row, whoever asks.
    for sql in ["UPDATE audit_log SET actor_name = 'someone else'", "DELETE FROM audit_log"] {
        let refused = db::on!(server.store().db(), pool => sqlx::query(sql).execute(pool).await.map(|_| ()));
        assert!(refused.is_err(), "{sql} must be refused");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_decision_that_loses_a_race_writes_no_row() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let chat = server.signed_in("demo").await;
    let other_tab = server.signed_in("demo").await;
    for round in 0..4 {
        let (id, conversation) = waiting(&chat, "write it").await;
        let item = inbox(&other_tab).await.into_iter().find(|item| item["conversation_id"] == id.as_str()).unwrap();
        let digest = conversation["card"]["digest"].as_str().unwrap();
        let form = [("conversation_id", id.as_str()), ("digest", digest), ("decision", "approve")];
        let inbox_form = [
            ("conversation_id", id.as_str()),
            ("digest", digest),
            ("decision", "deny"),
            ("run", item["run_id"].as_str().unwrap()),
        ];
        let ((first, _), (second, _)) =
            tokio::join!(chat.call_json("decide", &form), other_tab.call_json("decide", &inbox_form));
        let mut statuses = [first, second];
        statuses.sort_unstable();
        assert_eq!(statuses, [200, 409], "round {round}");
        chat.settled_conversation(&id).await;
        let rows = rows_of(&server, &id).await;
        let decisions: Vec<_> =
            rows.iter().filter(|row| matches!(row.action, Action::Approved | Action::Denied)).collect();
        assert_eq!(decisions.len(), 1, "round {round}: {rows:?}");
        let expected = if first == 200 { (Action::Approved, Surface::Chat) } else { (Action::Denied, Surface::Inbox) };
        assert_eq!((decisions[0].action, decisions[0].surface), expected, "round {round}");
    }
    // Two tabs of the inbox on a card the chat moved on from: one row.
    let (id, _) = waiting(&chat, "write it").await;
    let (status, _) = chat.call_json("send_message", &[("conversation_id", &id), ("content", "hello")]).await;
    assert_eq!(status, 200);
    chat.settled_conversation(&id).await;
    let item = inbox(&chat).await.into_iter().find(|item| item["conversation_id"] == id.as_str()).unwrap();
    let form = |decision: &'static str| {
        [
            ("conversation_id", id.clone()),
            ("digest", item["card"]["digest"].as_str().unwrap().to_string()),
            ("decision", decision.to_string()),
            ("run", item["run_id"].as_str().unwrap().to_string()),
        ]
    };
    let (a, b) = (form("approve"), form("approve"));
    let borrow = |form: &[(&'static str, String); 4]| form.iter().map(|(k, v)| (*k, v.clone())).collect::<Vec<_>>();
    let (a, b) = (borrow(&a), borrow(&b));
    let a: Vec<(&str, &str)> = a.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let b: Vec<(&str, &str)> = b.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let ((first, _), (second, _)) = tokio::join!(chat.call_json("decide", &a), other_tab.call_json("decide", &b));
    let mut statuses = [first, second];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409]);
    let approvals = rows_of(&server, &id).await.into_iter().filter(|row| row.action == Action::Approved).count();
    assert_eq!(approvals, 1);
    // The decided run carries on and waits no more.
    let rows = rows_of(&server, &id).await;
    assert_eq!(rows.iter().filter(|row| row.action == Action::Approved && row.surface == Surface::Inbox).count(), 1);
    server.stop().await;
}

#[tokio::test]
async fn readers_see_their_own_rows_admins_all_and_exports_escape_formulas() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let admin = server.signed_in("demo").await;
    let ed = server.signed_in("ed").await;
    let (mine, _) = waiting(&admin, "write it").await;
    let (eds, conversation) = waiting(&ed, "write it").await;
    // A title a spreadsheet would run as a formula, and one with a comma and quotes.
    let (status, _) =
        ed.call_json("rename_conversation", &[("conversation_id", &eds), ("title", "=HYPERLINK(\"x\"),1")]).await;
    assert_eq!(status, 200);
    let (status, _) = decide(&ed, &eds, &conversation, "deny").await;
    assert_eq!(status, 200);

    // The page's server function: the editor sees their own conversation only, the admin both.
    let (status, page) = ed.call_json("audit", &[]).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["all"], false);
    let ids: Vec<&str> =
        page["rows"].as_array().unwrap().iter().map(|row| row["conversation_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [eds.as_str(), eds.as_str()], "newest first, only ed's");
    assert_eq!(page["rows"][0]["action"], "denied");
    assert_eq!(page["rows"][0]["conversation_title"], "=HYPERLINK(\"x\"),1");
    let (_, page) = admin.call_json("audit", &[]).await;
    assert_eq!(page["all"], true);
    assert_eq!(page["rows"].as_array().unwrap().len(), 3);
    // Filters: by user, by tool, by date; a bad date is refused with a sentence.
    let (_, page) = admin.call_json("audit", &[("user", "ED")]).await;
    assert_eq!(page["rows"].as_array().unwrap().len(), 2);
    let (_, page) = admin.call_json("audit", &[("tool", "set")]).await;
    assert_eq!(page["rows"].as_array().unwrap().len(), 0, "a tool is matched by its whole name");
    let (_, page) =
        admin.call_json("audit", &[("tool", "set_title"), ("from", "2000-01-01"), ("to", "2999-12-31")]).await;
    assert_eq!(page["rows"].as_array().unwrap().len(), 3);
    let (_, page) = admin.call_json("audit", &[("to", "2000-01-01")]).await;
    assert_eq!(page["rows"].as_array().unwrap().len(), 0);
    let (status, refusal) = admin.call_json("audit", &[("from", "yesterday")]).await;
    assert_eq!((status, &refusal["message"]), (422, &json!("A date must be written as YYYY-MM-DD.")));

    // Exports: the same rows and checks.
    let get = |client: &Client, path: &str| {
        let url = format!("{}{path}", server.base);
        let http = client.http.clone();
        async move {
            let response = http.get(url).send().await.unwrap();
            let status = response.status().as_u16();
            let kind =
                response.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
            (status, kind, response.text().await.unwrap())
        }
    };
    let (status, kind, csv) = get(&ed, "/audit/export.csv").await;
    assert_eq!((status, kind.as_str()), (200, "text/csv; charset=utf-8"));
    let lines: Vec<&str> = csv.split("\r\n").filter(|line| !line.is_empty()).collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with(
        r#""id","time","action","actor_id","actor","owner_id","owner","conversation_id","conversation_title","#
    ));
    assert!(lines[1].contains(",\"denied\","), "every cell quoted: {}", lines[1]);
    assert!(lines[1].contains(",\"'=HYPERLINK(\"\"x\"\"),1\","), "quoted and defused: {}", lines[1]);
    assert!(!csv.contains(&mine), "not the admin's conversation");
    let (status, kind, json) = get(&ed, "/audit/export.json?tool=set_title").await;
    assert_eq!((status, kind.as_str()), (200, "application/json"));
    let exported: Value = serde_json::from_str(&json).unwrap();
    let exported = exported.as_array().unwrap();
    assert_eq!(exported.len(), 2);
    assert_eq!(exported[0]["action"], "denied");
    assert_eq!(exported[0]["actor"], "ed");
    assert_eq!(exported[0]["surface"], "chat");
    assert_eq!(exported[0]["reason"], "cancel");
    assert_eq!(exported[0]["arguments"], json!([{ "tool": "set_title", "arguments": { "title": "A better title" } }]));
    let (_, _, all) = get(&admin, "/audit/export.json").await;
    assert_eq!(serde_json::from_str::<Value>(&all).unwrap().as_array().unwrap().len(), 3);
    let (status, _, _) = get(&ed, "/audit/export.csv?from=13/01/2026").await;
    assert_eq!(status, 422);
    let (status, _, _) = get(&server.client(), "/audit/export.json").await;
    assert_eq!(status, 401, "not without signing in");
    // The page itself, server-rendered, with the filter kept in the export links.
    let (status, _, html) = get(&ed, "/audit?tool=set_title").await;
    assert_eq!(status, 200);
    assert!(html.contains("/audit/export.csv?tool=set_title"), "{html}");
    assert!(html.contains("data-action=\"denied\""));
    assert!(!html.contains(&mine));
    server.stop().await;
}

#[tokio::test]
async fn a_run_is_dismissed_from_the_inbox_by_its_owner_once() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;

    // The conversation's own card.
    let (id, _) = waiting(&client, "write it").await;
    let item = inbox(&client).await.into_iter().find(|item| item["conversation_id"] == id.as_str()).unwrap();
    let (status, body) = dismiss(&client, &item).await;
    assert_eq!(status, 200, "{body}");
    assert!(inbox(&client).await.iter().all(|listed| listed["run_id"] != item["run_id"]));
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle");
    let last = conversation["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["note"], "Dismissed from the runs inbox by demo.");
    assert_eq!(text(&last), "");
    let rows = rows_of(&server, &id).await;
    assert_eq!(actions(&rows), [Action::Waiting, Action::Dismissed]);
    assert_eq!((rows[1].actor_name.as_deref(), rows[1].surface), (Some("demo"), Surface::Inbox));
    assert_eq!(rows[1].tools, ["set_title"]);
    let run: uuid::Uuid = item["run_id"].as_str().unwrap().parse().unwrap();
    let view = server.runtime().status(&runtime::Actor::admin(0), run).await.unwrap().unwrap();
    assert_eq!(view.status, runtime::RunStatus::Cancelled);
    // Twice is refused with a sentence, and changes nothing.
    let nothing = refused(
        "nothing_to_dismiss",
        "This run no longer waits: it was decided, dismissed or expired in the meantime. Nothing was changed.",
    );
    assert_eq!(dismiss(&client, &item).await, (409, nothing.clone()));
    assert_eq!(rows_of(&server, &id).await.len(), 2);
    // The chat goes on as usual, and the model never reads the dismissal's line.
    let (status, _) = client.call_json("send_message", &[("conversation_id", &id), ("content", "hello")]).await;
    assert_eq!(status, 200);
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(text(conversation["messages"].as_array().unwrap().last().unwrap()), "Echo: hello");

    // A question the chat moved on from.
    let (moved_on, _) = waiting(&client, "ask me").await;
    let (status, _) =
        client.call_json("send_message", &[("conversation_id", &moved_on), ("content", "never mind")]).await;
    assert_eq!(status, 200);
    client.settled_conversation(&moved_on).await;
    let item = inbox(&client).await.into_iter().find(|item| item["conversation_id"] == moved_on.as_str()).unwrap();
    assert_eq!(item["moved_on"], true);
    // Someone else's run is not theirs to dismiss.
    let stranger = server.signed_in("mallory").await;
    assert_eq!(dismiss(&stranger, &item).await, (404, refused("not_found", "Conversation not found.")));
    let (status, body) = dismiss(&client, &item).await;
    assert_eq!(status, 200, "{body}");
    assert!(inbox(&client).await.is_empty());
    let conversation = client.settled_conversation(&moved_on).await;
    assert_eq!(
        conversation["messages"].as_array().unwrap().last().unwrap()["note"],
        "Dismissed from the runs inbox by demo."
    );
    assert_eq!(dismiss(&client, &item).await, (409, nothing));
    let rows = rows_of(&server, &moved_on).await;
    assert_eq!(actions(&rows), [Action::Waiting, Action::Dismissed], "{rows:?}");
    assert_eq!(rows[1].tools, ["ask_choice"]);
    server.stop().await;
}

#[tokio::test]
async fn a_reviewer_may_approve_but_not_dismiss_another_owners_card() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let reviewer = server.signed_in("demo").await;
    let ed = server.signed_in("ed").await;
    let ed_id = server.store().user_by_name("ed").await.unwrap().unwrap().id;
    server.store().set_role(ed_id, server::store::Role::Editor, false).await.unwrap();
    let (id, _) = waiting(&ed, "write it").await;
    let item = inbox(&reviewer).await.into_iter().find(|item| item["conversation_id"] == id.as_str()).unwrap();
    assert_eq!(item["review_of"], "ed");
    assert_eq!(dismiss(&reviewer, &item).await, (403, refused("forbidden", "Your account may not do this.")));
    assert_eq!(actions(&rows_of(&server, &id).await), [Action::Waiting]);
    // The reviewer's approval is on the record as theirs, on ed's conversation.
    let form = [
        ("conversation_id", id.as_str()),
        ("digest", item["card"]["digest"].as_str().unwrap()),
        ("decision", "approve"),
        ("run", item["run_id"].as_str().unwrap()),
    ];
    let (status, body) = reviewer.call_json("decide", &form).await;
    assert_eq!(status, 200, "{body}");
    let rows = rows_of(&server, &id).await;
    assert_eq!(actions(&rows), [Action::Waiting, Action::Approved]);
    assert_eq!((rows[1].actor_name.as_deref(), rows[1].owner_name.as_deref()), (Some("demo"), Some("ed")));
    assert_eq!(rows[1].surface, Surface::Inbox);
    server.stop().await;
}

#[tokio::test]
async fn expiries_are_on_the_record() {
    let effects = Effects::default();
    let server = TestServer::start_expiring(services(&effects), Duration::from_secs(1)).await;
    let client = server.signed_in("demo").await;
    let (current, _) = waiting(&client, "write it").await;
    let (moved_on, _) = waiting(&client, "ask me").await;
    let (status, _) = client.call_json("send_message", &[("conversation_id", &moved_on), ("content", "hello")]).await;
    assert_eq!(status, 200);
    let current_rows = rows_settled(&server, &current, 2).await;
    let moved_on_rows = rows_settled(&server, &moved_on, 2).await;
    assert_eq!(actions(&current_rows), [Action::Waiting, Action::Expired]);
    assert_eq!(actions(&moved_on_rows), [Action::Waiting, Action::Expired]);
    assert_eq!((current_rows[1].actor_id, current_rows[1].surface), (None, Surface::Worker));
    assert_eq!(current_rows[1].tools, ["set_title"]);
    assert_eq!(moved_on_rows[1].tools, ["ask_choice"]);
    server.stop().await;
}

/// The webhook events written beside the rows, read before any delivery worker takes them (this
/// server runs none): the contract's JSON, written in the same write as the decision.
#[tokio::test]
async fn announced_rows_put_their_event_in_the_webhook_outbox() {
    let server = TestServer::start_configured(tempfile::tempdir().unwrap(), services(&Effects::default()), false).await;
    let store = server.store();
    let owner = store.user_by_name("demo").await.unwrap().unwrap().id;
    store.create_conversation("c1", owner, "Home page", None, None).await.unwrap();
    let run = uuid::Uuid::new_v4();
    server.exec("UPDATE conversations SET status = 'awaiting_approval', run_id = 'r' WHERE id = 'c1'").await;
    db::on!(store.db(), pool => sqlx::query("UPDATE conversations SET run_id = $1 WHERE id = 'c1'").bind(run.to_string()).execute(pool).await.map(|_| ()))
        .unwrap();
    let detail = server::conversation::DecisionDetail::default();
    let mut entry = Entry::new(Action::Denied, Surface::Chat, Some(owner), Some(run)).with_reason("skip");
    entry.tools = vec!["set_title".into()];
    let decision = server::store::Decision {
        approve: false,
        digest: "d",
        reason: None,
        decided_by: owner,
        label: None,
        detail: &detail,
    };
    assert!(store.record_decision(owner, "c1", decision, &entry).await.unwrap());
    // A second one loses the guarded write and writes nothing.
    let second = Entry::new(Action::Approved, Surface::Inbox, Some(owner), Some(run));
    assert!(!store.record_decision(owner, "c1", decision, &second).await.unwrap());
    // Not announced: no event.
    assert!(store
        .record_entry("c1", &Entry::new(Action::Cancelled, Surface::Chat, Some(owner), Some(run)))
        .await
        .unwrap());
    assert!(!store.record_entry("gone", &Entry::new(Action::Failed, Surface::Worker, None, None)).await.unwrap());
    // The events as the fan-out reads them: their JSON is made from the audit row then.
    let select = server::store::outbox_select(store.db().backend());
    let outbox: Vec<server::store::OutboxEvent> =
        db::on!(store.db(), pool => sqlx::query_as(sqlx::AssertSqlSafe(select.as_str())).bind(100_i64)
    .fetch_all(pool)
    .await)
        .unwrap();
    let outbox: Vec<(String, String, String)> =
        outbox.into_iter().map(|event| (event.event_id, event.kind, event.payload)).collect();
    assert_eq!(outbox.len(), 1, "{outbox:?}");
    let (event_id, kind, payload) = &outbox[0];
    assert_eq!((event_id.as_str(), kind.as_str()), (entry.event_id.to_string().as_str(), "run.decided"));
    let mut payload: Value = serde_json::from_str(payload).unwrap();
    assert!(payload["at"].as_i64().unwrap() > 0);
    payload.as_object_mut().unwrap().remove("at");
    assert_eq!(
        payload,
        json!({
            "conversation_id": "c1",
            "title": "Home page",
            "run_id": run.to_string(),
            "owner": "demo",
            "owner_id": owner,
            "tool": "set_title",
            "decision": "denied",
            "decided_by": "demo",
            "reason": "skip",
            "url": "/c/c1",
        })
    );
    let rows = rows_of(&server, "c1").await;
    assert_eq!(actions(&rows), [Action::Denied, Action::Cancelled]);
    server.stop().await;
}

/// `server backup` copies the whole SQLite file: the audit log comes with it.
#[tokio::test]
async fn a_backup_holds_the_audit_log() {
    if std::env::var_os("TOURGUIDE_TEST_POSTGRES").is_some() {
        return; // The backup command is SQLite's; PostgreSQL has its own tools.
    }
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (id, conversation) = waiting(&client, "write it").await;
    assert_eq!(decide(&client, &id, &conversation, "approve").await.0, 200);
    client.settled_conversation(&id).await;
    let expected = all_rows(&server).await;
    assert_eq!(expected.len(), 2);
    let dir = server.stop().await;
    let copy = dir.path().join("copy.db");
    let (code, out, err) =
        crate::accounts::command(&dir.path().join("test.db"), &["backup", copy.to_str().unwrap()], "");
    assert_eq!(code, 0, "{out}{err}");
    let restored = server::store::Store::new(db::Db::open_sqlite(&copy).await.unwrap());
    assert_eq!(restored.audit_rows(&Filter::default(), 100, 0).await.unwrap(), expected);
}

/// A restart of the test's server on its database, with or without a worker.
async fn restarted(server: TestServer, effects: &Effects, worker: bool) -> TestServer {
    let dir = server.stop().await;
    TestServer::start_configured(dir, services(effects), worker).await
}

async fn owner_of(server: &TestServer, name: &str) -> runtime::Actor {
    runtime::Actor::user(server.store().user_by_name(name).await.unwrap().unwrap().id)
}

#[tokio::test]
async fn a_turn_that_fails_outside_its_run_is_on_the_record() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;

    // No run can be started: the chat's configuration is off.
    server.runtime().set_configuration_active(server::turn::CHAT_CONFIGURATION, false).await.unwrap();
    let id = client.create_conversation().await;
    let (status, _) = client.call_json("send_message", &[("conversation_id", &id), ("content", "hello")]).await;
    assert_eq!(status, 200);
    assert_eq!(client.settled_conversation(&id).await["status"], "failed");
    let rows = rows_settled(&server, &id, 1).await;
    assert_eq!(actions(&rows), [Action::Failed]);
    assert_eq!((rows[0].reason.as_deref(), rows[0].run_id.as_deref()), (Some("configuration_inactive"), None));
    assert_eq!((rows[0].surface, rows[0].actor_id), (Surface::Worker, None));
    server.runtime().set_configuration_active(server::turn::CHAT_CONFIGURATION, true).await.unwrap();

    // The run the conversation names is gone: a turn recorded by a web process, its run id
    // pointing nowhere when the worker takes it.
    let server = restarted(server, &effects, false).await;
    let client = server.signed_in("demo").await;
    let missing = client.create_conversation().await;
    let (status, _) = client.call_json("send_message", &[("conversation_id", &missing), ("content", "hello")]).await;
    assert_eq!(status, 200);
    let gone = uuid::Uuid::new_v4().to_string();
    db::on!(server.store().db(), pool => sqlx::query("UPDATE conversations SET run_id = $1 WHERE id = $2")
        .bind(&gone)
        .bind(&missing)
        .execute(pool)
        .await
        .map(|_| ()))
    .unwrap();
    let server = restarted(server, &effects, true).await;
    let client = server.signed_in("demo").await;
    assert_eq!(client.settled_conversation(&missing).await["status"], "failed");
    let rows = rows_settled(&server, &missing, 1).await;
    assert_eq!(actions(&rows), [Action::Failed], "{rows:?}");
    assert_eq!((rows[0].reason.as_deref(), rows[0].run_id.as_deref()), (Some("run_missing"), Some(gone.as_str())));
    server.stop().await;
}

#[tokio::test]
async fn a_decision_that_never_reaches_its_run_is_not_on_the_record_as_taking_effect() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let client = server.signed_in("demo").await;
    let (card, conversation) = waiting(&client, "write it").await;
    let (moved_on, _) = waiting(&client, "write it").await;
    let (status, _) = client.call_json("send_message", &[("conversation_id", &moved_on), ("content", "hello")]).await;
    assert_eq!(status, 200);
    client.settled_conversation(&moved_on).await;
    let item = inbox(&client).await.into_iter().find(|item| item["conversation_id"] == moved_on.as_str()).unwrap();
    assert_eq!(item["moved_on"], true);

    // A web process records both decisions; nobody delivers them yet.
    let server = restarted(server, &effects, false).await;
    let client = server.signed_in("demo").await;
    let (status, body) = decide(&client, &card, &conversation, "approve").await;
    assert_eq!(status, 200, "{body}");
    let form = [
        ("conversation_id", moved_on.as_str()),
        ("digest", item["card"]["digest"].as_str().unwrap()),
        ("decision", "approve"),
        ("run", item["run_id"].as_str().unwrap()),
    ];
    let (status, body) = client.call_json("decide", &form).await;
    assert_eq!(status, 200, "{body}");
    // Meanwhile both runs end: the card's by a cancel the chat never saw, the moved-on one by a
    // dismissal that passed its check before the inbox's decision was recorded (its cancel and
    // line come after).
    let owner = owner_of(&server, "demo").await;
    let card_run: uuid::Uuid = rows_of(&server, &card).await[0].run_id.as_deref().unwrap().parse().unwrap();
    assert!(server.runtime().cancel_if_waiting(&owner, card_run).await.unwrap().cancelled);
    let moved_on_run: uuid::Uuid = item["run_id"].as_str().unwrap().parse().unwrap();
    assert!(server.runtime().cancel_if_waiting(&owner, moved_on_run).await.unwrap().cancelled);
    let dismissed = Entry::new(Action::Dismissed, Surface::Inbox, Some(owner.user_id), Some(moved_on_run));
    server
        .store()
        .append_line(
            &moved_on,
            server::conversation::MessageRole::Assistant,
            "demo",
            server::conversation::Notice::Dismissed,
            Some(&dismissed),
        )
        .await
        .unwrap();

    // The worker finds neither run waiting: each decision's row is followed by one that says
    // what became of the run instead, nothing was written, and the card comes back.
    let server = restarted(server, &effects, true).await;
    let client = server.signed_in("demo").await;
    let rows = rows_settled(&server, &card, 3).await;
    assert_eq!(actions(&rows), [Action::Waiting, Action::Approved, Action::Cancelled], "{rows:?}");
    assert_eq!((rows[2].reason.as_deref(), rows[2].surface), (Some("not_awaiting_approval"), Surface::Worker));
    assert_eq!(rows[2].run_id.as_deref(), Some(card_run.to_string().as_str()));
    let back = client.settled_conversation(&card).await;
    assert_eq!(back["status"], "awaiting_approval", "{back}");
    let rows = rows_settled(&server, &moved_on, 4).await;
    assert_eq!(actions(&rows), [Action::Waiting, Action::Approved, Action::Dismissed, Action::Cancelled], "{rows:?}");
    assert_eq!(rows[3].reason.as_deref(), Some(server::inbox::UNDELIVERED_CANCELLED));
    assert_eq!(rows[3].run_id.as_deref(), Some(moved_on_run.to_string().as_str()));
    assert_eq!(server.store().run_decision(moved_on_run).await.unwrap(), None, "the decision is gone");
    assert!(effects.titles.lock().unwrap().is_empty(), "nothing was written");
    server.stop().await;
}

/// Issue 62: the newest account removed with its conversations (as `server user remove NAME
/// --delete-conversations` does), a new account added: the new one gets an id of its own, so the
/// audit rows that name the old one (kept by design) are not the new one's to read, on the page
/// or in the exports.
#[tokio::test]
async fn a_new_account_never_takes_a_removed_accounts_id_or_its_audit_rows() {
    let effects = Effects::default();
    let server = server(&effects).await;
    let ann = server.signed_in("ann").await;
    let (id, conversation) = waiting(&ann, "write it").await;
    let (status, _) = decide(&ann, &id, &conversation, "deny").await;
    assert_eq!(status, 200);
    let ann_id = server.store().user_by_name("ann").await.unwrap().unwrap().id;
    assert!(rows_settled(&server, &id, 2).await.iter().all(|row| row.owner_id == Some(ann_id)));

    assert!(server.store().delete_user(ann_id).await.unwrap(), "ann, the newest account, is removed");
    let bob = server.signed_in("bob").await;
    let bob_id = server.store().user_by_name("bob").await.unwrap().unwrap().id;
    assert!(bob_id > ann_id, "ids of people are never given twice: ann {ann_id}, bob {bob_id}");

    let (status, page) = bob.call_json("audit", &[]).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["rows"], json!([]), "nothing of ann's");
    for export in ["/audit/export.json", "/audit/export.csv"] {
        let body = bob.http.get(format!("{}{export}", server.base)).send().await.unwrap().text().await.unwrap();
        assert!(!body.contains(&id) && !body.contains("set_title"), "{export}: {body}");
    }
    // The rows are still there, for an admin.
    assert_eq!(rows_of(&server, &id).await.len(), 2);
    server.stop().await;
}
