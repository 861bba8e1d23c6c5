//! Webhooks against real receivers on 127.0.0.1 (axum, in the test): an event in the outbox is
//! delivered once per webhook, signed so that the test verifies both signatures with the secret;
//! a receiver that fails is tried again with backoff; a URL that is not http(s), malformed or this
//! server itself is refused with a sentence and nothing stored; only an admin manages them; a
//! delivery survives kill -9 of the process sending it; two workers on PostgreSQL deliver each
//! event once; "Send again" sends the same id again; a run that waits long is reminded of once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use base64::Engine;
use db::{Db, Location};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{json, Value};
use server::store::Store;
use server::Services;

use crate::harness::{config_in, location_in, refused, Client, TestServer, PASSWORD};
use crate::processes::{ModelHandle, ServerProcess};

// --- the receiver ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Received {
    headers: HeaderMap,
    body: String,
}

#[derive(Clone, Default)]
struct ReceiverState {
    got: Arc<Mutex<Vec<Received>>>,
    /// Answers 500 to this many requests first.
    fail_first: Arc<AtomicUsize>,
    /// While set, a request is recorded and never answered.
    hold: Arc<AtomicBool>,
}

struct Receiver {
    url: String,
    state: ReceiverState,
}

impl Receiver {
    async fn start() -> Receiver {
        let state = ReceiverState::default();
        let app = Router::new().route("/hook", post(receive)).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Receiver { url: format!("http://{address}/hook"), state }
    }

    fn got(&self) -> Vec<Received> {
        self.state.got.lock().unwrap().clone()
    }

    /// Waits until at least `count` requests came (30 s at most).
    async fn wait_for(&self, count: usize) -> Vec<Received> {
        crate::harness::at_least(count, "requests", || self.got()).await
    }

    /// How many requests came per `webhook-id`.
    fn counts(&self) -> HashMap<String, usize> {
        let mut counts = HashMap::new();
        for received in self.got() {
            *counts.entry(header(&received, "webhook-id")).or_default() += 1;
        }
        counts
    }
}

async fn receive(State(state): State<ReceiverState>, headers: HeaderMap, body: Bytes) -> StatusCode {
    state.got.lock().unwrap().push(Received { headers, body: String::from_utf8(body.to_vec()).unwrap() });
    if state.hold.load(Ordering::SeqCst) {
        std::future::pending::<()>().await;
    }
    let failing = state.fail_first.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(1));
    if failing.is_ok() {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::NO_CONTENT
    }
}

fn header(received: &Received, name: &str) -> String {
    received.headers.get(name).unwrap_or_else(|| panic!("no {name} header")).to_str().unwrap().to_string()
}

fn hmac_sha256(key: &[u8], message: &str) -> Vec<u8> {
    let mut mac = Hmac::<sha2_11::Sha256>::new_from_slice(key).unwrap();
    mac.update(message.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// Checks both signatures of a request as a receiver would, with the webhook's secret.
fn assert_signed(received: &Received, secret: &str) {
    let base64 = base64::engine::general_purpose::STANDARD;
    let key = base64.decode(secret.strip_prefix("whsec_").expect("a whsec_ secret")).unwrap();
    let id = header(received, "webhook-id");
    let timestamp = header(received, "webhook-timestamp");
    let sent_at: i64 = timestamp.parse().unwrap();
    assert!((db::now() - sent_at).abs() < 60, "a timestamp of now: {timestamp}");
    let standard = format!("v1,{}", base64.encode(hmac_sha256(&key, &format!("{id}.{timestamp}.{}", received.body))));
    assert_eq!(header(received, "webhook-signature"), standard);
    let ours =
        format!("t={timestamp},v1={}", hex::encode(hmac_sha256(&key, &format!("{timestamp}.{}", received.body))));
    assert_eq!(header(received, "tourguide-signature"), ours);
    // A signature made with another key does not match.
    let wrong =
        format!("v1,{}", base64.encode(hmac_sha256(b"another key", &format!("{id}.{timestamp}.{}", received.body))));
    assert_ne!(header(received, "webhook-signature"), wrong);
}

// --- setting up -----------------------------------------------------------------------------

/// Retries a second apart, and a look every 200 ms, so a test sees three attempts in seconds.
fn quick_services() -> Services {
    let mut services = Services::new(Arc::new(demo::DemoProvider));
    services.webhooks.first_retry = Duration::from_secs(1);
    services.webhooks.sweep = Duration::from_millis(200);
    services
}

async fn quick_server() -> TestServer {
    TestServer::start_services(tempfile::tempdir().unwrap(), quick_services()).await
}

/// Adds a webhook as the admin; returns its id and secret.
async fn add_webhook(admin: &Client, url: &str, events: &str) -> (i64, String) {
    let (status, created) = admin.call_json("admin_add_webhook", &webhook_form(url, events)).await;
    assert_eq!(status, 200, "{created}");
    (created["id"].as_i64().unwrap(), created["secret"].as_str().unwrap().to_string())
}

/// The page's form: the URL and a ticked checkbox per kind (`run.waiting` → `waiting`).
fn webhook_form<'a>(url: &'a str, events: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut form = vec![("url", url)];
    form.extend(events.split(',').filter_map(|kind| kind.strip_prefix("run.")).map(|field| (field, "true")));
    form
}

/// An event as the state changes write it: a row in the outbox. Returns its event id.
async fn put_in_outbox(store: &Store, kind: &str, payload: Value) -> String {
    let event_id = uuid::Uuid::new_v4().to_string();
    db::on!(store.db(), pool => sqlx::query("INSERT INTO webhook_outbox (event_id, kind, payload, created_at) VALUES ($1, $2, $3, $4)")
        .bind(&event_id)
        .bind(kind)
        .bind(payload.to_string())
        .bind(db::now())
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))
    .unwrap();
    event_id
}

fn waiting_payload(title: &str) -> Value {
    json!({"conversation_id": "c-1", "title": title, "run_id": "r-1", "owner": "demo", "tool": "update_page_field", "url": "/c/c-1"})
}

async fn count(store: &Store, sql: &'static str, bind: &str) -> i64 {
    db::on!(store.db(), pool => sqlx::query_scalar(sql).bind(bind).fetch_one(pool).await).unwrap()
}

/// The deliveries' states and attempts for an event, oldest first.
async fn deliveries_of(store: &Store, event_id: &str) -> Vec<(String, i64)> {
    db::on!(store.db(), pool => sqlx::query_as("SELECT state, attempts FROM webhook_deliveries WHERE event_id = $1 ORDER BY id")
        .bind(event_id)
        .fetch_all(pool)
        .await)
    .unwrap()
}

/// Waits until the event's deliveries are all in `state` (30 s at most).
async fn settled(store: &Store, event_id: &str, state: &str) -> Vec<(String, i64)> {
    for _ in 0..300 {
        let rows = deliveries_of(store, event_id).await;
        if !rows.is_empty() && rows.iter().all(|(s, _)| s == state) {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the deliveries of {event_id} never became {state}: {:?}", deliveries_of(store, event_id).await);
}

/// A refusal's status, code and sentence.
fn said(status: u16, body: &Value) -> (u16, Value) {
    (status, json!({ "code": body["code"], "message": body["message"] }))
}

// --- the stories ----------------------------------------------------------------------------

#[tokio::test]
async fn an_event_is_delivered_once_per_webhook_signed_with_its_secret() {
    let server = quick_server().await;
    let admin = server.signed_in("demo").await;
    let receiver = Receiver::start().await;
    let other = Receiver::start().await;
    let (_, secret) = add_webhook(&admin, &receiver.url, "run.waiting,run.decided").await;
    // Wants only failures: hears nothing of a waiting run.
    add_webhook(&admin, &other.url, "run.failed").await;

    let event_id = put_in_outbox(server.store(), "run.waiting", waiting_payload("Bakery")).await;
    let got = receiver.wait_for(1).await;
    assert_signed(&got[0], &secret);
    assert_eq!(header(&got[0], "webhook-id"), event_id);
    assert_eq!(header(&got[0], "content-type"), "application/json");
    let body: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(body["type"], "run.waiting");
    assert_eq!(body["id"], event_id.as_str());
    assert_eq!(body["data"], waiting_payload("Bakery"));
    assert_eq!(body["text"], "Tourguide: a run waits for your approval — Bakery");
    assert!(body["timestamp"].as_str().unwrap().ends_with('Z'), "{body}");

    settled(server.store(), &event_id, "delivered").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.got().len(), 1, "delivered exactly once");
    assert!(other.got().is_empty(), "a webhook gets only the events it wants");
    assert_eq!(deliveries_of(server.store(), &event_id).await, [("delivered".to_string(), 1)]);
    assert_eq!(count(server.store(), "SELECT COUNT(*) FROM webhook_outbox WHERE event_id = $1", &event_id).await, 0);

    // The admin's list shows the delivery and the secret only masked.
    let (status, page) = admin.call_json("admin_webhooks", &[]).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["deliveries"][0]["state"], "delivered");
    assert_eq!(page["deliveries"][0]["event_id"], event_id.as_str());
    let listed = page["webhooks"].to_string();
    assert!(!listed.contains(&secret) && listed.contains(&secret[..10]), "{listed}");
    server.stop().await;
}

/// With no webhook to send them to (and no mail), the worker drops the outbox's events in one
/// statement; a webhook that is there keeps them for its fan-out, and one made later is not
/// sent the dropped ones.
#[tokio::test]
async fn events_nobody_wants_are_dropped_and_a_webhook_made_later_gets_only_later_ones() {
    let server = quick_server().await;
    let store = server.store();
    let dropped: Vec<String> = futures::future::join_all(
        (0..5).map(|n| put_in_outbox(store, "run.waiting", waiting_payload(&format!("{n}")))),
    )
    .await;
    for _ in 0..100 {
        if store.work_due().await.unwrap() == Default::default() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(store.work_due().await.unwrap(), Default::default(), "the outbox emptied, nothing queued");

    // The statement itself keeps the events while a webhook is active.
    let admin = server.signed_in("demo").await;
    let receiver = Receiver::start().await;
    add_webhook(&admin, &receiver.url, "run.waiting").await;
    assert!(store.work_due().await.unwrap().webhooks);
    let kept = put_in_outbox(store, "run.waiting", waiting_payload("Kept")).await;
    assert_eq!(store.drop_outbox(10).await.unwrap(), 0);
    let got = receiver.wait_for(1).await;
    let body: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(body["id"], kept.as_str());
    settled(store, &kept, "delivered").await;
    for event_id in &dropped {
        assert!(deliveries_of(store, event_id).await.is_empty(), "{event_id} was sent");
    }
    assert_eq!(receiver.got().len(), 1);
}

#[tokio::test]
async fn a_receiver_that_fails_twice_gets_the_same_event_on_the_third_attempt() {
    let server = quick_server().await;
    let admin = server.signed_in("demo").await;
    let receiver = Receiver::start().await;
    receiver.state.fail_first.store(2, Ordering::SeqCst);
    let (_, secret) = add_webhook(&admin, &receiver.url, "run.failed").await;

    let event_id = put_in_outbox(server.store(), "run.failed", waiting_payload("Broken")).await;
    let rows = settled(server.store(), &event_id, "delivered").await;
    assert_eq!(rows, [("delivered".to_string(), 3)]);
    let got = receiver.got();
    assert_eq!(got.len(), 3, "two failures, then the delivery");
    for received in &got {
        assert_eq!(header(received, "webhook-id"), event_id, "every attempt under one id");
        assert_eq!(received.body, got[0].body, "every attempt the same body");
        assert_signed(received, &secret);
    }
    // The waits between attempts grow (1 s, then 2 s).
    let at = |n: usize| header(&got[n], "webhook-timestamp").parse::<i64>().unwrap();
    assert!(at(1) - at(0) >= 1 && at(2) - at(1) >= 2, "{} {} {}", at(0), at(1), at(2));
    server.stop().await;
}

#[tokio::test]
async fn a_delivery_that_keeps_failing_is_given_up_with_its_error() {
    let mut services = quick_services();
    services.webhooks.give_up_after = Duration::from_secs(2);
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services).await;
    let admin = server.signed_in("demo").await;
    let receiver = Receiver::start().await;
    receiver.state.fail_first.store(usize::MAX, Ordering::SeqCst);
    add_webhook(&admin, &receiver.url, "run.expired").await;
    let event_id = put_in_outbox(server.store(), "run.expired", waiting_payload("Late")).await;
    settled(server.store(), &event_id, "failed").await;
    let (_, page) = admin.call_json("admin_webhooks", &[]).await;
    assert_eq!(page["deliveries"][0]["state"], "failed");
    assert_eq!(page["deliveries"][0]["last_status"], 500);
    assert_eq!(page["deliveries"][0]["last_error"], "the receiver answered 500 Internal Server Error");
    server.stop().await;
}

#[tokio::test]
async fn send_again_delivers_the_same_event_id_and_body_again() {
    let server = quick_server().await;
    let admin = server.signed_in("demo").await;
    let receiver = Receiver::start().await;
    let (_, secret) = add_webhook(&admin, &receiver.url, "run.decided").await;
    let event_id =
        put_in_outbox(server.store(), "run.decided", json!({"title": "Bakery", "decision": "approved"})).await;
    receiver.wait_for(1).await;
    settled(server.store(), &event_id, "delivered").await;

    let (_, page) = admin.call_json("admin_webhooks", &[]).await;
    let delivery = page["deliveries"][0]["id"].as_i64().unwrap().to_string();
    let (status, body) = admin.call_json("admin_resend_delivery", &[("delivery", &delivery)]).await;
    assert_eq!(status, 200, "{body}");
    let got = receiver.wait_for(2).await;
    assert_eq!(header(&got[1], "webhook-id"), event_id, "the receiver can tell it is the same event");
    assert_eq!(got[1].body, got[0].body);
    assert_signed(&got[1], &secret);
    let (_, page) = admin.call_json("admin_webhooks", &[]).await;
    assert_eq!(page["deliveries"][0]["resent"], true);
    // A delivery that does not exist: 404, nothing sent.
    let (status, _) = admin.call_json("admin_resend_delivery", &[("delivery", "999999")]).await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test]
async fn a_url_that_is_not_http_malformed_or_this_server_is_refused_and_nothing_is_stored() {
    let server = quick_server().await;
    let admin = server.signed_in("demo").await;
    let own = format!("{}/api/decide", server.base);
    let own_by_name = own.replace("127.0.0.1", "localhost");
    // IPv4-mapped IPv6 is the same address (issue 62).
    let own_mapped = own.replace("127.0.0.1", "[::ffff:127.0.0.1]");
    let scheme = "A webhook's address must start with http:// or https://.";
    let malformed = "The webhook's address must be a full URL such as https://hooks.example.com/tourguide.";
    let this_server = "That address is this server itself; a webhook must go to another service.";
    let cases: Vec<(&str, &str, &str)> = vec![
        ("ftp://hooks.example.com/x", "run.waiting", scheme),
        ("javascript:alert(1)", "run.waiting", scheme),
        ("hooks.example.com/x", "run.waiting", malformed),
        ("http://exa mple.com/", "run.waiting", malformed),
        ("", "run.waiting", malformed),
        ("http://", "run.waiting", "The webhook's address names no host."),
        (
            "https://user:pw@hooks.example.com/",
            "run.waiting",
            "Put no user name or password into the webhook's address: the receiver knows the sender by the signature.",
        ),
        (&own, "run.waiting", this_server),
        (&own_by_name, "run.waiting", this_server),
        (&own_mapped, "run.waiting", this_server),
        ("https://hooks.example.com/x", "", "Choose at least one event for the webhook."),
        ("https://hooks.example.com/x", "run.everything", "Choose at least one event for the webhook."),
    ];
    for (url, events, sentence) in cases {
        let (status, body) = admin.call_json("admin_add_webhook", &webhook_form(url, events)).await;
        assert_eq!(said(status, &body), (422, refused("invalid", sentence)), "{url} {events}");
    }
    let (status, body) = admin
        .call_json(
            "admin_add_webhook",
            &[("url", "https://hooks.example.com/x"), ("waiting", "true"), ("secret", "whsec_c2hvcnQ=")],
        )
        .await;
    let sentence = "A webhook's secret is whsec_ followed by 24 to 64 bytes in base64.";
    assert_eq!(said(status, &body), (422, refused("invalid", sentence)));
    let (_, page) = admin.call_json("admin_webhooks", &[]).await;
    assert_eq!(page["webhooks"], json!([]), "nothing was stored");
    assert_eq!(count(server.store(), "SELECT COUNT(*) FROM webhooks WHERE url <> $1", "").await, 0);

    // Loopback on another port is allowed (a receiver on this host), with the page's checkboxes
    // and the secret the page showed.
    let (_, page) = admin.call_json("admin_webhooks", &[]).await;
    let shown = page["new_secret"].as_str().unwrap().to_string();
    let (status, created) = admin
        .call_json(
            "admin_add_webhook",
            &[("url", "http://127.0.0.1:9/hook"), ("waiting", "true"), ("failed", "true"), ("secret", &shown)],
        )
        .await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["secret"], shown.as_str());
    let (_, page) = admin.call_json("admin_webhooks", &[]).await;
    assert_eq!(page["webhooks"][0]["events"], json!(["run.waiting", "run.failed"]));
    server.stop().await;
}

#[tokio::test]
async fn only_an_admin_sees_and_manages_webhooks_and_a_crafted_request_changes_nothing() {
    let server = quick_server().await;
    let admin = server.signed_in("demo").await;
    let receiver = Receiver::start().await;
    let (id, secret) = add_webhook(&admin, &receiver.url, "run.waiting").await;
    let event_id = put_in_outbox(server.store(), "run.waiting", waiting_payload("Bakery")).await;
    receiver.wait_for(1).await;
    settled(server.store(), &event_id, "delivered").await;
    let (_, page) = admin.call_json("admin_webhooks", &[]).await;
    let delivery = page["deliveries"][0]["id"].as_i64().unwrap().to_string();

    let hash = server::auth::hash_password(PASSWORD);
    server.store().add_user("ed", &hash, server::store::Role::Editor, true).await.unwrap();
    let editor = server.client();
    editor.sign_in("ed").await;
    let id_text = id.to_string();
    for (name, form) in [
        ("admin_webhooks", vec![]),
        ("admin_add_webhook", vec![("url", "https://evil.example.com/"), ("waiting", "true")]),
        ("admin_remove_webhook", vec![("webhook", id_text.as_str())]),
        ("admin_resend_delivery", vec![("delivery", delivery.as_str())]),
    ] {
        let (status, body) = editor.call_json(name, &form).await;
        assert_eq!((status, body["code"].clone()), (403, json!("forbidden")), "{name}");
    }
    let page = editor.http.get(format!("{}/admin/webhooks", editor.base)).send().await.unwrap().text().await.unwrap();
    assert!(!page.contains(&receiver.url) && page.contains("Your account may not do this."), "{page}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(receiver.got().len(), 1, "the editor's resend sent nothing");
    let (_, after) = admin.call_json("admin_webhooks", &[]).await;
    assert_eq!(after["webhooks"].as_array().unwrap().len(), 1, "{after}");

    // The admin's page lists it with the secret masked, and offers a new one for the next.
    let page = admin.http.get(format!("{}/admin/webhooks", admin.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains(&receiver.url) && page.contains("Send again"), "{page}");
    assert!(!page.contains(&secret) && page.contains(&format!("{}…", &secret[..10])), "{page}");

    let (status, _) = admin.call_json("admin_remove_webhook", &[("webhook", &id_text)]).await;
    assert_eq!(status, 200);
    let (status, _) = admin.call_json("admin_remove_webhook", &[("webhook", &id_text)]).await;
    assert_eq!(status, 404);
    let (_, after) = admin.call_json("admin_webhooks", &[]).await;
    assert_eq!((after["webhooks"].clone(), after["deliveries"].clone()), (json!([]), json!([])));
    server.stop().await;
}

#[tokio::test]
async fn a_run_still_waiting_after_the_reminder_time_is_announced_once_with_its_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config_in(&dir, true).await;
    config.reminder_after = Some(Duration::from_secs(1));
    config.waiting_expiry = Duration::from_secs(3600);
    let running = server::serve(&config, quick_services()).await.expect("server starts");
    let server = TestServer { base: format!("http://{}", running.address.unwrap()), running: Some(running), dir };
    let admin = server.signed_in("demo").await;
    let receiver = Receiver::start().await;
    let (_, secret) = add_webhook(&admin, &receiver.url, "run.reminder").await;

    let id = admin.create_conversation().await;
    let (status, body) = admin.call_json("send_message", &[("conversation_id", &id), ("content", "/choose")]).await;
    assert_eq!(status, 200, "{body}");
    let waiting = admin.settled_conversation(&id).await;
    assert_eq!(waiting["status"], "awaiting_input", "{waiting}");

    let got = receiver.wait_for(1).await;
    assert_signed(&got[0], &secret);
    let body: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(body["type"], "run.reminder");
    assert_eq!(body["data"]["conversation_id"], id.as_str());
    assert_eq!(body["data"]["owner"], "demo");
    assert_eq!(body["data"]["owner_id"], 1);
    let expires_at = body["data"]["expires_at"].as_i64().unwrap();
    let waiting_since = body["data"]["waiting_since"].as_i64().unwrap();
    assert_eq!(expires_at - waiting_since, 3600);
    let text = body["text"].as_str().unwrap();
    assert!(text.starts_with("Tourguide: a run still waits for a decision or an answer — "), "{text}");
    assert!(text.contains(". Unless someone decides, it is cancelled at ") && text.ends_with(" UTC"), "{text}");
    // Many sweeps later, still one reminder.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(receiver.got().len(), 1, "reminded once");
    server.stop().await;
}

/// End to end: the chat's own writes put the events in the outbox (with the state change), and
/// the webhook hears that a card waits and that it was decided.
#[tokio::test]
async fn a_real_card_is_announced_when_it_waits_and_when_it_is_decided() {
    let mut services = crate::scripted::services(&crate::scripted::Effects::default());
    services.webhooks = quick_services().webhooks;
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services).await;
    let admin = server.signed_in("demo").await;
    let receiver = Receiver::start().await;
    let (_, secret) = add_webhook(&admin, &receiver.url, "run.waiting,run.decided").await;

    let id = admin.create_conversation().await;
    let (status, body) = admin.call_json("send_message", &[("conversation_id", &id), ("content", "write it")]).await;
    assert_eq!(status, 200, "{body}");
    let card = admin.settled_conversation(&id).await;
    assert_eq!(card["status"], "awaiting_approval", "{card}");
    let got = receiver.wait_for(1).await;
    assert_signed(&got[0], &secret);
    let waiting: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(waiting["type"], "run.waiting", "{waiting}");
    assert_eq!(waiting["data"]["conversation_id"], id.as_str());
    assert_eq!(waiting["data"]["owner"], "demo");
    assert_eq!(waiting["data"]["tool"], "set_title");
    assert_eq!(waiting["data"]["url"], format!("/c/{id}"));
    let title = waiting["data"]["title"].as_str().unwrap();
    assert_eq!(waiting["text"], format!("Tourguide: a run waits for your approval — {title}"));

    let digest = card["card"]["digest"].as_str().unwrap();
    let (status, body) =
        admin.call_json("decide", &[("conversation_id", &id), ("digest", digest), ("decision", "approve")]).await;
    assert_eq!(status, 200, "{body}");
    let got = receiver.wait_for(2).await;
    let decided: Value = serde_json::from_str(&got[1].body).unwrap();
    assert_eq!(decided["type"], "run.decided", "{decided}");
    assert_eq!(decided["data"]["decision"], "approved");
    assert_eq!(decided["data"]["decided_by"], "demo");
    assert_eq!(decided["data"]["run_id"], waiting["data"]["run_id"]);
    assert_ne!(decided["id"], waiting["id"], "two events, two ids");
    admin.settled_conversation(&id).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let kinds: Vec<String> = receiver
        .got()
        .iter()
        .map(|received| serde_json::from_str::<Value>(&received.body).unwrap()["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["run.waiting", "run.decided"], "each event once");
    server.stop().await;
}

/// Workers claiming side by side (tasks on one pool here, as processes would on PostgreSQL) never
/// take one delivery twice, and every delivery is taken.
#[tokio::test]
async fn workers_claiming_at_once_take_each_delivery_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(server::open_database(&config_in(&dir, true).await).await.unwrap());
    store.add_webhook("http://127.0.0.1:9/hook", &["run.waiting"], "whsec_c2hvcnQ=").await.unwrap();
    for n in 0..120 {
        put_in_outbox(&store, "run.waiting", waiting_payload(&format!("Run {n}"))).await;
    }
    let mut fanned = 0;
    while fanned < 120 {
        fanned += store.fan_out(50, |event| event.payload.clone()).await.unwrap();
    }
    let lease_until = db::now() + 600;
    let claimers = (0..8).map(|worker| {
        let store = store.clone();
        tokio::spawn(async move {
            let mut taken = Vec::new();
            loop {
                let claimed = store.claim_deliveries(&format!("worker-{worker}"), lease_until, 3).await.unwrap();
                if claimed.is_empty() {
                    return taken;
                }
                taken.extend(claimed.into_iter().map(|delivery| delivery.id));
            }
        })
    });
    let mut all: Vec<i64> = Vec::new();
    for taken in futures::future::join_all(claimers).await {
        all.extend(taken.unwrap());
    }
    let total = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!((total, all.len()), (120, 120), "each delivery taken once");
}

// --- several processes ----------------------------------------------------------------------

async fn open_store(dir: &tempfile::TempDir) -> Store {
    Store::new(Db::open(&location_in(dir).await).await.unwrap())
}

#[tokio::test]
async fn kill_9_while_a_delivery_is_on_its_way_then_restart_delivers_it_with_one_row() {
    let dir = tempfile::tempdir().unwrap();
    let model = ModelHandle::start(1).await;
    let receiver = Receiver::start().await;
    receiver.state.hold.store(true, Ordering::SeqCst);
    let server = ServerProcess::start(&dir, &model, true).await;
    let admin = server.signed_in().await;
    let (webhook, secret) = add_webhook(&admin, &receiver.url, "run.waiting").await;
    let store = open_store(&dir).await;
    let event_id = put_in_outbox(&store, "run.waiting", waiting_payload("Crash")).await;

    // The request reached the receiver, which holds it: the process dies before the answer.
    let got = receiver.wait_for(1).await;
    assert_eq!(header(&got[0], "webhook-id"), event_id);
    server.kill_9().await;
    receiver.state.hold.store(false, Ordering::SeqCst);

    let server = ServerProcess::start(&dir, &model, true).await;
    let rows = settled(&store, &event_id, "delivered").await;
    let got = receiver.got();
    assert_eq!(got.len(), 2, "sent again after the restart: at least once");
    assert_eq!(header(&got[1], "webhook-id"), event_id, "under the same id, which the receiver de-duplicates by");
    assert_eq!(got[1].body, got[0].body);
    assert_signed(&got[1], &secret);
    assert_eq!(rows, [("delivered".to_string(), 2)], "one row for the event and webhook, two attempts");
    let per_webhook: i64 = db::on!(store.db(), pool => sqlx::query_scalar(
        "SELECT COUNT(*) FROM webhook_deliveries WHERE event_id = $1 AND webhook_id = $2")
        .bind(&event_id)
        .bind(webhook)
        .fetch_one(pool)
        .await)
    .unwrap();
    assert_eq!(per_webhook, 1);
    server.kill_9().await;
}

#[tokio::test]
async fn two_workers_on_postgres_deliver_each_event_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    if !matches!(location_in(&dir).await, Location::Postgres(_)) {
        // SQLite runs one worker per file (scale.rs shows a second one refused).
        return;
    }
    let model = ModelHandle::start(1).await;
    let receiver = Receiver::start().await;
    let web = ServerProcess::start(&dir, &model, false).await;
    let first = ServerProcess::worker(&dir, &model).await;
    let second = ServerProcess::worker(&dir, &model).await;
    let admin = web.signed_in().await;
    add_webhook(&admin, &receiver.url, "run.waiting,run.decided").await;
    let store = open_store(&dir).await;

    // Rounds of events, each followed by a NOTIFY that wakes both workers at the same moment, so
    // they fan out and claim side by side.
    let mut events = Vec::new();
    for round in 0..4 {
        for n in 0..10 {
            let kind = if n % 2 == 0 { "run.waiting" } else { "run.decided" };
            events.push(put_in_outbox(&store, kind, waiting_payload(&format!("Run {round}.{n}"))).await);
        }
        db::on!(store.db(), pool => sqlx::query("SELECT pg_notify('tourguide_changed', '*')").execute(pool).await.map(|_| ()))
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    receiver.wait_for(events.len()).await;
    for event_id in &events {
        settled(&store, event_id, "delivered").await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let counts = receiver.counts();
    assert_eq!(counts.len(), events.len(), "every event arrived");
    assert!(counts.values().all(|&n| n == 1), "each exactly once: {counts:?}");
    let rows: i64 = db::on!(store.db(), pool => sqlx::query_scalar("SELECT COUNT(*) FROM webhook_deliveries").fetch_one(pool).await).unwrap();
    assert_eq!(rows, 40);
    for process in [web, first, second] {
        process.kill_9().await;
    }
}

#[test]
fn the_operator_adds_lists_and_removes_webhooks_from_the_command_line() {
    use crate::accounts::command;
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("webhooks.db");
    let (code, out, err) = command(
        &database,
        &["webhook", "add", "https://hooks.example.com/t", "--events", "run.waiting,run.decided"],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("Added webhook 1 for https://hooks.example.com/t (run.waiting, run.decided)."));
    let secret = lines.next().unwrap().rsplit(' ').next().unwrap().to_string();
    assert!(secret.starts_with("whsec_") && secret.len() > 30, "{out}");

    // Bad input: a sentence, exit code 2, nothing stored.
    let (code, _, err) = command(&database, &["webhook", "add", "ftp://x.example.com/", "--events", "run.waiting"], "");
    assert_eq!((code, err.as_str()), (2, "tourguide: A webhook's address must start with http:// or https://.\n"));
    let (code, _, err) = command(&database, &["webhook", "add", "https://x.example.com/", "--events", "run.maybe"], "");
    assert_eq!((code, err.as_str()), (2, "tourguide: Choose at least one event for the webhook.\n"));

    let (code, out, _) = command(&database, &["webhook", "list"], "");
    assert_eq!(code, 0);
    assert_eq!(out, format!("1\thttps://hooks.example.com/t\trun.waiting,run.decided\t{}…\n", &secret[..10]));
    let (code, out, _) = command(&database, &["webhook", "remove", "1"], "");
    assert_eq!((code, out.as_str()), (0, "Removed webhook 1.\n"));
    let (code, _, err) = command(&database, &["webhook", "remove", "1"], "");
    assert_eq!((code, err.as_str()), (1, "tourguide: no webhook 1\n"));
    let (_, out, _) = command(&database, &["webhook", "list"], "");
    assert_eq!(out, "");
}

/// Issue 62: without `--webhook-private-networks`, a delivery reaches no loopback or private
/// address, whether written out or behind a name that resolves to one; the delivery says why and
/// the receiver hears nothing. With it, the same receiver gets the event.
#[tokio::test]
async fn without_the_option_a_delivery_reaches_no_loopback_address_by_number_or_by_name() {
    let mut services = quick_services();
    services.webhooks.give_up_after = Duration::from_secs(1);
    let dir = tempfile::tempdir().unwrap();
    let mut config = config_in(&dir, true).await;
    config.webhook_private_networks = false;
    let running = server::serve(&config, services).await.expect("server starts");
    let base = format!("http://{}", running.address.unwrap());
    let admin = Client::new(&base);
    admin.sign_in("demo").await;
    let receiver = Receiver::start().await;
    let by_name = receiver.url.replace("127.0.0.1", "localhost");
    for url in [receiver.url.as_str(), by_name.as_str()] {
        add_webhook(&admin, url, "run.failed").await;
    }
    let event_id = put_in_outbox(&running.store, "run.failed", waiting_payload("Inside")).await;
    settled(&running.store, &event_id, "failed").await;
    let (_, page) = admin.call_json("admin_webhooks", &[]).await;
    for delivery in page["deliveries"].as_array().unwrap() {
        let error = delivery["last_error"].as_str().unwrap_or_default();
        assert!(error.contains("--webhook-private-networks"), "{delivery}");
    }
    assert!(receiver.got().is_empty(), "nothing reached the receiver");
    running.stop().await;
}
