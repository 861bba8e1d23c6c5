//! E-mail against a real SMTP receiver on 127.0.0.1 (a small one in the test: EHLO, MAIL, RCPT,
//! DATA, QUIT): a run that starts waiting mails its opted-in owner once, with the link and the
//! title, and nobody who did not opt in; a card under four-eyes mails the reviewers too; a
//! receiver that answers 4xx at first gets the mail on a retry; without an SMTP URL no mail row is
//! written; a malformed address is refused with a sentence and changes nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use serde_json::json;
use server::config::PublicUrl;
use server::mail::{MailConfig, SmtpUrl};
use server::store::Store;
use server::Services;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::harness::{config_in, refused, Client, TestServer, PASSWORD};

// --- the receiver ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Mail {
    from: String,
    to: Vec<String>,
    /// The message as sent (headers and body, CRLF lines, dots unstuffed).
    data: String,
}

impl Mail {
    fn header(&self, name: &str) -> String {
        let head = self.data.split("\r\n\r\n").next().unwrap();
        let mut value: Option<String> = None;
        for line in head.split("\r\n") {
            match &mut value {
                Some(value) if line.starts_with([' ', '\t']) => value.push_str(line),
                Some(_) => break,
                None => {
                    if let Some((key, rest)) = line.split_once(':') {
                        if key.eq_ignore_ascii_case(name) {
                            value = Some(rest.trim().to_string());
                        }
                    }
                }
            }
        }
        value.unwrap_or_else(|| panic!("no {name} header in {}", self.data))
    }

    /// The subject, its RFC 2047 words decoded.
    fn subject(&self) -> String {
        let mut decoded = String::new();
        let mut after_encoded = false;
        for word in self.header("Subject").split_whitespace() {
            let parts: Vec<&str> = word.split('?').collect();
            let encoded = parts.len() == 5 && parts[0] == "=" && parts[4] == "=" && parts[2].eq_ignore_ascii_case("b");
            // Space between two encoded words is no part of the text (RFC 2047, 6.2).
            let joined = encoded && after_encoded;
            if !decoded.is_empty() && !joined {
                decoded.push(' ');
            }
            if encoded {
                let bytes = base64::engine::general_purpose::STANDARD.decode(parts[3]).unwrap();
                decoded.push_str(&String::from_utf8(bytes).unwrap());
            } else {
                decoded.push_str(word);
            }
            after_encoded = encoded;
        }
        decoded
    }

    /// The body, its transfer encoding undone.
    fn body(&self) -> String {
        let body = self.data.split_once("\r\n\r\n").unwrap().1;
        let encoding = self.header("Content-Transfer-Encoding").to_ascii_lowercase();
        match encoding.as_str() {
            "quoted-printable" => {
                let joined = body.replace("=\r\n", "");
                let mut bytes = Vec::new();
                let raw = joined.as_bytes();
                let mut at = 0;
                while at < raw.len() {
                    if raw[at] == b'=' && at + 2 < raw.len() {
                        let hex = std::str::from_utf8(&raw[at + 1..at + 3]).unwrap();
                        bytes.push(u8::from_str_radix(hex, 16).unwrap());
                        at += 3;
                    } else {
                        bytes.push(raw[at]);
                        at += 1;
                    }
                }
                String::from_utf8(bytes).unwrap().replace("\r\n", "\n")
            }
            "base64" => {
                let text: String = body.split_whitespace().collect();
                String::from_utf8(base64::engine::general_purpose::STANDARD.decode(text).unwrap()).unwrap()
            }
            _ => body.replace("\r\n", "\n"),
        }
    }
}

#[derive(Clone, Default)]
struct SmtpState {
    got: Arc<Mutex<Vec<Mail>>>,
    /// Answers `451` to this many MAIL commands first.
    fail_first: Arc<AtomicUsize>,
    /// Every MAIL command, taken or refused.
    attempts: Arc<AtomicUsize>,
}

struct SmtpReceiver {
    port: u16,
    state: SmtpState,
}

impl SmtpReceiver {
    async fn start() -> SmtpReceiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = SmtpState::default();
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let state = shared.clone();
                tokio::spawn(async move {
                    let _ = session(socket, state).await;
                });
            }
        });
        SmtpReceiver { port, state }
    }

    fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}?tls=none", self.port)
    }

    fn got(&self) -> Vec<Mail> {
        self.state.got.lock().unwrap().clone()
    }

    async fn wait_for(&self, count: usize) -> Vec<Mail> {
        crate::harness::at_least(count, "mails", || self.got()).await
    }
}

/// Just enough SMTP to take a message: no TLS, no AUTH, as a relay on this host.
async fn session(socket: tokio::net::TcpStream, state: SmtpState) -> std::io::Result<()> {
    let (read, mut write) = socket.into_split();
    let mut lines = BufReader::new(read);
    write.write_all(b"220 receiver.test ESMTP\r\n").await?;
    let (mut from, mut to) = (String::new(), Vec::new());
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let command = line.trim_end().to_string();
        let upper = command.to_ascii_uppercase();
        let address = || command.split_once(':').map(|(_, rest)| rest.trim().to_string()).unwrap_or_default();
        if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            write.write_all(b"250-receiver.test\r\n250 8BITMIME\r\n").await?;
        } else if upper.starts_with("MAIL FROM:") {
            state.attempts.fetch_add(1, Ordering::SeqCst);
            let failing = state.fail_first.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(1));
            if failing.is_ok() {
                write.write_all(b"451 4.3.0 Try again later\r\n").await?;
            } else {
                from = address();
                to.clear();
                write.write_all(b"250 2.1.0 OK\r\n").await?;
            }
        } else if upper.starts_with("RCPT TO:") {
            to.push(address());
            write.write_all(b"250 2.1.5 OK\r\n").await?;
        } else if upper == "DATA" {
            write.write_all(b"354 End data with <CR><LF>.<CR><LF>\r\n").await?;
            let mut data = String::new();
            loop {
                line.clear();
                if lines.read_line(&mut line).await? == 0 {
                    return Ok(());
                }
                if line == ".\r\n" {
                    break;
                }
                data.push_str(line.strip_prefix('.').filter(|_| line.starts_with("..")).unwrap_or(&line));
            }
            state.got.lock().unwrap().push(Mail { from: from.clone(), to: to.clone(), data });
            write.write_all(b"250 2.0.0 Queued\r\n").await?;
        } else if upper == "QUIT" {
            write.write_all(b"221 2.0.0 Bye\r\n").await?;
            return Ok(());
        } else {
            // RSET, NOOP.
            write.write_all(b"250 2.0.0 OK\r\n").await?;
        }
    }
}

// --- setting up -----------------------------------------------------------------------------

const PUBLIC: &str = "http://chat.example.com";

/// The scripted model (a "write it" message waits on a card), retries a second apart.
fn quick_services() -> Services {
    let mut services = crate::scripted::services(&crate::scripted::Effects::default());
    services.webhooks.first_retry = Duration::from_secs(1);
    services.webhooks.sweep = Duration::from_millis(200);
    services
}

/// A server that mails through `receiver` (none: no SMTP URL), with a public URL for the links.
async fn mailing_server(receiver: Option<&SmtpReceiver>) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config_in(&dir, true).await;
    config.public_url = Some(PublicUrl { https: false, origin: PUBLIC.into() });
    config.mail = receiver.map(|receiver| MailConfig {
        smtp: SmtpUrl::parse(&receiver.url()).unwrap(),
        from: "Tourguide <tourguide@example.com>".parse().unwrap(),
    });
    let running = server::serve(&config, quick_services()).await.expect("server starts");
    TestServer { base: format!("http://{}", running.address.unwrap()), running: Some(running), dir }
}

async fn opt_in(client: &Client, address: &str, notify: bool) {
    let mut form = vec![("address", address)];
    if notify {
        form.push(("notify", "true"));
    }
    let (status, body) = client.call_json("set_mail", &form).await;
    assert_eq!(status, 200, "{body}");
}

/// An editor; `own` whether they may approve their own changes (else four-eyes).
async fn editor(server: &TestServer, name: &str, own: bool) -> (i64, Client) {
    let hash = server::auth::hash_password(PASSWORD);
    let id = server.store().add_user(name, &hash, server::store::Role::Editor, own).await.unwrap();
    let client = server.client();
    client.sign_in(name).await;
    (id, client)
}

/// Sends "write it" and waits for the card; returns the conversation's id and title.
async fn card(client: &Client) -> (String, String) {
    let id = client.create_conversation().await;
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", "write it")]).await;
    assert_eq!(status, 200, "{body}");
    let waiting = client.settled_conversation(&id).await;
    assert_eq!(waiting["status"], "awaiting_approval", "{waiting}");
    let title = waiting["title"].as_str().unwrap().to_string();
    assert!(!title.is_empty(), "{waiting}");
    (id, title)
}

async fn scalar(store: &Store, sql: &'static str, bind: i64) -> i64 {
    db::on!(store.db(), pool => sqlx::query_scalar(sql).bind(bind).fetch_one(pool).await).unwrap()
}

/// Waits until the outbox is empty: every event fanned out (30 s at most).
async fn fanned_out(store: &Store) {
    for _ in 0..300 {
        if scalar(store, "SELECT COUNT(*) FROM webhook_outbox WHERE id > $1", 0).await == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the outbox was never fanned out");
}

/// A refusal's status, code and sentence.
fn said(status: u16, body: &serde_json::Value) -> (u16, serde_json::Value) {
    (status, json!({ "code": body["code"], "message": body["message"] }))
}

// --- the stories ----------------------------------------------------------------------------

#[tokio::test]
async fn a_run_that_starts_waiting_mails_its_opted_in_owner_once_with_the_link_and_the_title() {
    let receiver = SmtpReceiver::start().await;
    let server = mailing_server(Some(&receiver)).await;
    let demo = server.signed_in("demo").await;
    opt_in(&demo, "demo@example.com", true).await;
    // Gave an address but did not ask for mail.
    let (quiet, quiet_client) = editor(&server, "quinn", true).await;
    opt_in(&quiet_client, "quinn@example.com", false).await;

    let (id, title) = card(&demo).await;
    let got = receiver.wait_for(1).await;
    let mail = &got[0];
    assert_eq!(mail.to, ["<demo@example.com>"]);
    assert_eq!(mail.from, "<tourguide@example.com>");
    assert_eq!(mail.subject(), format!("Tourguide: a run waits for your approval — {title}"));
    let body = mail.body();
    assert!(body.contains(&format!("Conversation: {title}")), "{body}");
    assert!(body.contains(&format!("{PUBLIC}/c/{id}")), "{body}");
    assert!(body.contains("Nothing can be approved or answered from this e-mail"), "{body}");
    assert!(mail.header("Message-ID").ends_with("@example.com>"), "{}", mail.data);

    // The other user's card: they did not opt in, so no mail, and no row for them.
    card(&quiet_client).await;
    fanned_out(server.store()).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(receiver.got().len(), 1, "mailed once, and only to whoever asked");
    assert_eq!(scalar(server.store(), "SELECT COUNT(*) FROM mail_deliveries WHERE user_id = $1", quiet).await, 0);
    let delivered: Vec<(String, i64)> = db::on!(server.store().db(), pool => sqlx::query_as(
        "SELECT state, attempts FROM mail_deliveries ORDER BY id")
        .fetch_all(pool)
        .await)
    .unwrap();
    assert_eq!(delivered, [("delivered".to_string(), 1)]);
    server.stop().await;
}

#[tokio::test]
async fn a_card_under_four_eyes_mails_the_owner_and_the_reviewers_in_their_language() {
    let receiver = SmtpReceiver::start().await;
    let server = mailing_server(Some(&receiver)).await;
    let reviewer = server.signed_in("demo").await;
    opt_in(&reviewer, "demo@example.com", true).await;
    let (status, _) = reviewer.call_json("set_language", &[("language", "de")]).await;
    assert_eq!(status, 200);
    let (_, owner) = editor(&server, "olga", false).await;
    opt_in(&owner, "olga@example.com", true).await;

    let (id, title) = card(&owner).await;
    let got = receiver.wait_for(2).await;
    let to_owner = got.iter().find(|mail| mail.to == ["<olga@example.com>"]).expect("the owner's mail");
    let to_reviewer = got.iter().find(|mail| mail.to == ["<demo@example.com>"]).expect("the reviewer's mail");
    assert_eq!(to_owner.subject(), format!("Tourguide: a run waits for your approval — {title}"));
    assert_eq!(to_reviewer.subject(), format!("Tourguide: Eine Änderung von olga wartet auf deine Prüfung — {title}"));
    assert!(to_reviewer.body().contains(&format!("{PUBLIC}/c/{id}")), "{}", to_reviewer.body());
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(receiver.got().len(), 2);
    server.stop().await;
}

#[tokio::test]
async fn a_mail_server_that_answers_4xx_at_first_gets_the_mail_on_a_retry() {
    let receiver = SmtpReceiver::start().await;
    receiver.state.fail_first.store(1, Ordering::SeqCst);
    let server = mailing_server(Some(&receiver)).await;
    let demo = server.signed_in("demo").await;
    opt_in(&demo, "demo@example.com", true).await;
    let event_id = uuid::Uuid::new_v4().to_string();
    let payload = json!({"conversation_id": "c-1", "title": "Broken", "run_id": "r-1", "owner": "demo", "owner_id": 1,
                         "url": "/c/c-1"});
    db::on!(server.store().db(), pool => sqlx::query("INSERT INTO webhook_outbox (event_id, kind, payload, created_at) VALUES ($1, 'run.failed', $2, $3)")
        .bind(&event_id)
        .bind(payload.to_string())
        .bind(db::now())
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))
    .unwrap();

    let got = receiver.wait_for(1).await;
    assert_eq!(got[0].subject(), "Tourguide: a run failed — Broken");
    assert_eq!(receiver.state.attempts.load(Ordering::SeqCst), 2, "refused once, then taken");
    for _ in 0..100 {
        let rows: Vec<(String, i64, Option<String>)> = db::on!(server.store().db(), pool => sqlx::query_as(
            "SELECT state, attempts, last_error FROM mail_deliveries WHERE event_id = $1")
            .bind(&event_id)
            .fetch_all(pool)
            .await)
        .unwrap();
        if rows.iter().any(|(state, _, _)| state == "delivered") {
            assert_eq!(rows.len(), 1);
            assert_eq!((rows[0].0.as_str(), rows[0].1), ("delivered", 2), "{rows:?}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(got[0].header("Message-ID").starts_with(&format!("<{event_id}.1@")), "{}", got[0].data);
    server.stop().await;
}

#[tokio::test]
async fn without_an_smtp_url_no_mail_row_is_written_and_the_page_says_so() {
    let server = mailing_server(None).await;
    let demo = server.signed_in("demo").await;
    opt_in(&demo, "demo@example.com", true).await;
    let (_, settings) = demo.call_json("mail_settings", &[]).await;
    assert_eq!(settings, json!({"address": "demo@example.com", "notify": true, "available": false}));
    card(&demo).await;
    fanned_out(server.store()).await;
    assert_eq!(scalar(server.store(), "SELECT COUNT(*) FROM mail_deliveries WHERE id > $1", 0).await, 0);
    let page = demo.http.get(format!("{}/account", demo.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("This server sends no e-mail: no SMTP server is configured."), "{page}");
    server.stop().await;
}

#[tokio::test]
async fn a_malformed_address_is_refused_with_a_sentence_and_changes_nothing() {
    let receiver = SmtpReceiver::start().await;
    let server = mailing_server(Some(&receiver)).await;
    let demo = server.signed_in("demo").await;
    opt_in(&demo, "demo@example.com", true).await;
    let malformed =
        "That is not an e-mail address this server can send to; write it like name@example.com. Nothing was changed.";
    for bad in ["demo", "demo@", "demo@localhost", "de mo@example.com", "demo@example.com\r\nBcc: x@example.org"] {
        let (status, body) = demo.call_json("set_mail", &[("address", bad), ("notify", "true")]).await;
        assert_eq!(said(status, &body), (422, refused("invalid", malformed)), "{bad:?}");
    }
    let (status, body) = demo.call_json("set_mail", &[("address", " "), ("notify", "true")]).await;
    let missing = "Give an e-mail address to be sent e-mails. Nothing was changed.";
    assert_eq!(said(status, &body), (422, refused("invalid", missing)));
    let (_, settings) = demo.call_json("mail_settings", &[]).await;
    assert_eq!(settings, json!({"address": "demo@example.com", "notify": true, "available": true}));

    // The account page shows the settings in a plain form; turning mail off keeps the address.
    let page = demo.http.get(format!("{}/account", demo.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("Send me an e-mail when a run waits for me"), "{page}");
    assert!(page.contains(r#"action="/api/set_mail""#) && page.contains(r#"value="demo@example.com""#), "{page}");
    opt_in(&demo, "demo@example.com", false).await;
    let (_, settings) = demo.call_json("mail_settings", &[]).await;
    assert_eq!(settings["notify"], false);
    // Signed out: nothing.
    let (status, _) = server.client().call_json("set_mail", &[("address", "x@example.com")]).await;
    assert_eq!(status, 401);
    server.stop().await;
}
