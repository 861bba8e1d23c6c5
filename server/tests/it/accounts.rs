//! Accounts and roles: the operator's commands on the real binary, the admin's actions over HTTP
//! (an editor's crafted admin request gets 403 and changes nothing), and four-eyes approval (an
//! editor's write waits for a reviewer, who approves it in the runs inbox).

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};
use server::store::Role;

use crate::harness::{refused, texts, Client, TestServer, PASSWORD};
use crate::scripted::{services, Effects};

/// Runs the real binary's operator command with `stdin` as its input.
pub(crate) fn command(database: &std::path::Path, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_server"))
        .args(args)
        .arg("--database")
        .arg(database)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the server binary runs");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (output.status.code().unwrap_or(-1), text(output.stdout), text(output.stderr))
}

#[test]
fn the_operator_adds_lists_changes_and_removes_accounts_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("accounts.db");
    let (code, out, err) = command(&database, &["user", "add", "boss", "--role", "admin"], "boss-password\n");
    assert_eq!((code, out.as_str()), (0, "Added boss (admin).\n"), "{err}");
    let (code, out, _) = command(&database, &["user", "add", "ed"], "editor-password\n");
    assert_eq!((code, out.as_str()), (0, "Added ed (editor).\n"));
    // Bad input changes nothing: a short password, a name taken, no choice about conversations.
    let (code, _, err) = command(&database, &["user", "add", "short"], "short\n");
    assert_eq!((code, err.as_str()), (2, "tourguide: the password must have at least 8 characters\n"));
    let (code, _, err) = command(&database, &["user", "add", "ed"], "another-password\n");
    assert_eq!((code, err.as_str()), (1, "tourguide: a user named 'ed' exists already\n"));
    let (code, _, err) = command(&database, &["user", "remove", "ed"], "");
    assert_eq!(code, 2, "{err}");
    let (_, out, _) = command(&database, &["user", "list"], "");
    assert_eq!(out, "boss\tadmin\tapproves own changes\t0 sessions\ned\teditor\tfour-eyes\t0 sessions\n");

    let (code, out, _) = command(&database, &["user", "passwd", "ed"], "new-editor-password\n");
    assert_eq!((code, out.as_str()), (0, "Set a new password for ed; their sessions ended.\n"));
    let (code, _, err) = command(&database, &["user", "passwd", "nobody"], "whatever-password\n");
    assert_eq!((code, err.as_str()), (1, "tourguide: no user named 'nobody'\n"));

    let backup = dir.path().join("copy.db");
    let (code, out, _) = command(&database, &["backup", backup.to_str().unwrap()], "");
    assert_eq!((code, out), (0, format!("Backed up to {}\n", backup.display())));
    let (code, _, err) = command(&database, &["backup", backup.to_str().unwrap()], "");
    assert_eq!(code, 1, "a backup never overwrites: {err}");
    // The copy is a database of its own with the accounts in it.
    let (_, out, _) = command(&backup, &["user", "list"], "");
    assert!(out.starts_with("boss\tadmin"), "{out}");

    let (code, out, _) = command(&database, &["user", "remove", "ed", "--keep-conversations"], "");
    assert_eq!((code, out.as_str()), (0, "Locked ed: their sessions ended, their conversations are kept.\n"));
    let (code, out, _) = command(&database, &["user", "remove", "ed", "--delete-conversations"], "");
    assert_eq!((code, out.as_str()), (0, "Removed ed and their conversations.\n"));
    let (_, out, _) = command(&database, &["user", "list"], "");
    assert_eq!(out, "boss\tadmin\tapproves own changes\t0 sessions\n");
}

async fn decide_with(client: &Client, form: Vec<(&'static str, String)>) -> (u16, Value) {
    let borrowed: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    client.call_json("decide", &borrowed).await
}

/// An editor whose changes wait for a reviewer, signed in.
async fn four_eyes_editor(server: &TestServer, name: &str) -> Client {
    let hash = server::auth::hash_password(PASSWORD);
    server.store().add_user(name, &hash, Role::Editor, false).await.unwrap();
    let client = server.client();
    client.sign_in(name).await;
    client
}

#[tokio::test]
async fn only_an_admin_manages_accounts_and_a_crafted_request_changes_nothing() {
    let effects = Effects::default();
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&effects)).await;
    let admin = server.signed_in("demo").await;
    let (status, body) = admin
        .call_json("admin_add_account", &[("username", "ed"), ("password", "editor-password"), ("may_approve_own", "")])
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, accounts) = admin.call_json("admin_accounts", &[]).await;
    assert_eq!(status, 200);
    let ed = accounts.as_array().unwrap().iter().find(|account| account["username"] == "ed").unwrap().clone();
    assert_eq!((ed["admin"].clone(), ed["may_approve_own"].clone()), (json!(false), json!(false)));
    let ed_id = ed["id"].to_string();

    let editor = server.client();
    let (status, _) = editor.call_json("login", &[("username", "ed"), ("password", "editor-password")]).await;
    assert!(status < 400);
    let (_, accounts) = admin.call_json("admin_accounts", &[]).await;
    for (name, form) in [
        ("admin_accounts", vec![]),
        ("admin_add_account", vec![("username", "sneaky"), ("password", "sneaky-password"), ("admin", "true")]),
        ("admin_set_role", vec![("account", ed_id.as_str()), ("admin", "true"), ("may_approve_own", "true")]),
        ("admin_set_password", vec![("account", "1"), ("password", "taken-over-password")]),
        ("admin_end_sessions", vec![("account", "1")]),
    ] {
        let (status, body) = editor.call_json(name, &form).await;
        assert_eq!((status, body), (403, refused("forbidden", "Your account may not do this.")), "{name}");
    }
    let (_, after) = admin.call_json("admin_accounts", &[]).await;
    assert_eq!(after, accounts, "nothing changed");
    let (status, _) = admin.call_json("session", &[]).await;
    assert_eq!(status, 200, "the admin's session was not ended");

    // An admin's own bad input: a short password, a taken name, demoting themselves.
    let (status, body) = admin.call_json("admin_add_account", &[("username", "x"), ("password", "short")]).await;
    assert_eq!(status, 422, "{body}");
    let (status, _) = admin.call_json("admin_add_account", &[("username", "ed"), ("password", "long-enough")]).await;
    assert_eq!(status, 422);
    let demo_id = accounts.as_array().unwrap().iter().find(|a| a["is_you"] == true).unwrap()["id"].to_string();
    let (status, _) = admin.call_json("admin_set_role", &[("account", demo_id.as_str())]).await;
    assert_eq!(status, 422);

    // Promoting, a new password (which ends the editor's sessions), ending sessions.
    let (status, _) =
        admin.call_json("admin_set_role", &[("account", ed_id.as_str()), ("may_approve_own", "on")]).await;
    assert_eq!(status, 200);
    let (status, _) =
        admin.call_json("admin_set_password", &[("account", ed_id.as_str()), ("password", "fresh-password")]).await;
    assert_eq!(status, 200);
    let (status, _) = editor.call_json("session", &[]).await;
    assert_eq!(status, 401, "a new password ends the old sessions");
    let (status, _) = editor.call_json("login", &[("username", "ed"), ("password", "fresh-password")]).await;
    assert!(status < 400);
    let (status, _) = admin.call_json("admin_end_sessions", &[("account", ed_id.as_str())]).await;
    assert_eq!(status, 200);
    let (status, _) = editor.call_json("session", &[]).await;
    assert_eq!(status, 401);
    server.stop().await;
}

#[tokio::test]
async fn an_editors_write_waits_for_a_reviewer_who_approves_it_in_the_inbox() {
    let effects = Effects::default();
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&effects)).await;
    let reviewer = server.signed_in("demo").await;
    let editor = four_eyes_editor(&server, "ed").await;
    let bystander = four_eyes_editor(&server, "bea").await;

    let id = editor.create_conversation().await;
    let (status, _) = editor.call_json("send_message", &[("conversation_id", &id), ("content", "write it")]).await;
    assert_eq!(status, 200);
    let conversation = editor.settled_conversation(&id).await;
    assert_eq!(conversation["card"]["needs_reviewer"], true, "{conversation}");
    let digest = conversation["card"]["digest"].as_str().unwrap().to_string();
    let approve = [("conversation_id", id.as_str()), ("digest", digest.as_str()), ("decision", "approve")];
    assert_eq!(editor.call_json("decide", &approve).await, (403, refused("needs_reviewer", "You cannot approve your own change: it waits for a reviewer (an admin or a colleague who may approve), who decides it under Waiting.")));
    assert!(effects.titles.lock().unwrap().is_empty());
    // A tour cannot wait for a reviewer (only its initiator decides it): not for this account.
    let (status, _) = editor.call_json("create_conversation", &[("skill", "page-tour")]).await;
    assert_eq!(status, 422);

    // The reviewer finds it in the inbox, with approve only; someone without the right does not.
    let (_, inbox) = reviewer.call_json("inbox", &[]).await;
    let item =
        inbox["items"].as_array().unwrap().iter().find(|item| item["conversation_id"] == id.as_str()).unwrap().clone();
    assert_eq!(item["review_of"], "ed");
    assert_eq!(item["card"]["answers"], "review");
    let (_, theirs) = bystander.call_json("inbox", &[]).await;
    assert!(theirs["items"].as_array().unwrap().is_empty(), "{theirs}");
    let run = item["run_id"].as_str().unwrap();
    let as_reviewer = |decision: &'static str| {
        vec![
            ("conversation_id", id.clone()),
            ("digest", digest.clone()),
            ("decision", decision.to_string()),
            ("run", run.to_string()),
        ]
    };
    assert_eq!(
        decide_with(&bystander, as_reviewer("approve")).await,
        (404, refused("not_found", "Conversation not found."))
    );
    assert_eq!(
        decide_with(&reviewer, as_reviewer("deny")).await,
        (403, refused("forbidden", "Your account may not do this.")),
        "denying stays with the owner"
    );
    let (status, body) = decide_with(&reviewer, as_reviewer("approve")).await;
    assert_eq!(status, 200, "{body}");
    let conversation = editor.settled_conversation(&id).await;
    assert_eq!(texts(&conversation).last().unwrap(), "Done: Title set to A better title");
    assert_eq!(*effects.titles.lock().unwrap(), vec!["A better title".to_string()]);
    assert_eq!(
        decide_with(&reviewer, as_reviewer("approve")).await,
        (409, refused("not_awaiting_approval", "This conversation is not waiting for an approval.")),
        "decided once"
    );
    server.stop().await;
}

#[tokio::test]
async fn sign_in_attempts_are_limited_per_user_name_and_per_address() {
    // Two attempts a minute per name, six per address. Every attempt runs argon2 (a dummy hash for a
    // name without an account), and at the default rate (a cell back every two seconds for the
    // address) a busy machine could not make thirty in time.
    let server =
        TestServer::start_adjusted(|config| config.login_attempts = std::num::NonZeroU32::new(2).unwrap()).await;
    let client = server.client();
    // Two guesses at one name in a minute, then the name is refused even with the right password.
    for _ in 0..2 {
        let (status, _) = client.call_json("login", &[("username", "demo"), ("password", "guess-password")]).await;
        assert_eq!(status, 401);
    }
    let (status, body) = client.call_json("login", &[("username", "demo"), ("password", PASSWORD)]).await;
    assert_eq!(
        (status, body),
        (429, refused("too_many_attempts", "Too many sign-in attempts. Wait a minute and try again."))
    );
    // The address has three times as many (6, of which 3 are used): other names go on until
    // that runs out too.
    for index in 0..3 {
        let name = format!("someone-{index}");
        let (status, _) = client.call_json("login", &[("username", name.as_str()), ("password", "guess")]).await;
        assert_eq!(status, 401, "attempt {index}");
    }
    let (status, _) = client.call_json("login", &[("username", "someone-else"), ("password", "guess")]).await;
    assert_eq!(status, 429, "the address is over its limit");
    server.stop().await;
}

#[tokio::test]
async fn a_user_sees_their_sessions_and_ends_the_others_but_not_someone_elses() {
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&Effects::default())).await;
    let laptop = server.signed_in("demo").await;
    let phone = server.client();
    phone.sign_in("demo").await;
    let stranger = server.signed_in("mallory").await;

    let (status, sessions) = laptop.call_json("sessions", &[]).await;
    assert_eq!(status, 200, "{sessions}");
    let sessions = sessions.as_array().unwrap().clone();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_eq!(sessions.iter().filter(|session| session["current"] == true).count(), 1);
    let other = sessions.iter().find(|session| session["current"] == false).unwrap();
    let handle = other["handle"].as_str().unwrap();
    assert_eq!(handle.len(), 16);
    assert!(other["ends"].as_str().unwrap().starts_with("in 13 days") || other["ends"] == "in 14 days", "{other}");

    // Someone else cannot end it, nor does a malformed handle change anything.
    assert_eq!(
        stranger.call_json("end_session", &[("handle", handle)]).await,
        (404, refused("not_found", "Conversation not found."))
    );
    assert_eq!(
        laptop.call_json("end_session", &[("handle", "%")]).await,
        (404, refused("not_found", "Conversation not found."))
    );
    assert_eq!(phone.call_json("session", &[]).await.0, 200);

    let (status, _) = laptop.call_json("end_session", &[("handle", handle)]).await;
    assert_eq!(status, 200);
    assert_eq!(phone.call_json("session", &[]).await.0, 401, "the phone's session ended");
    assert_eq!(laptop.call_json("session", &[]).await.0, 200, "this one goes on");

    phone.sign_in("demo").await;
    let (status, _) = laptop.call_json("end_other_sessions", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(phone.call_json("session", &[]).await.0, 401);
    let (_, left) = laptop.call_json("sessions", &[]).await;
    assert_eq!(left.as_array().unwrap().len(), 1);
    assert_eq!(stranger.call_json("session", &[]).await.0, 200, "another user's sessions are untouched");
    server.stop().await;
}

#[tokio::test]
async fn a_card_an_editors_chat_moved_on_from_is_reviewed_in_the_inbox_too() {
    let effects = Effects::default();
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&effects)).await;
    let reviewer = server.signed_in("demo").await;
    let editor = four_eyes_editor(&server, "ed").await;

    let id = editor.create_conversation().await;
    let (status, _) = editor.call_json("send_message", &[("conversation_id", &id), ("content", "write it")]).await;
    assert_eq!(status, 200);
    let card = editor.settled_conversation(&id).await["card"].clone();
    assert_eq!(card["needs_reviewer"], true, "{card}");
    // The editor writes on: the card's run waits, no longer the chat's.
    let (status, _) = editor.call_json("send_message", &[("conversation_id", &id), ("content", "hello")]).await;
    assert_eq!(status, 200);
    assert_eq!(editor.settled_conversation(&id).await["status"], "idle");

    // The editor's own inbox shows it as waiting for a reviewer, and their approve is refused.
    let (_, theirs) = editor.call_json("inbox", &[]).await;
    let own = theirs["items"].as_array().unwrap().iter().find(|item| item["conversation_id"] == id.as_str()).unwrap();
    assert_eq!((own["moved_on"].clone(), own["card"]["needs_reviewer"].clone()), (json!(true), json!(true)));
    let run = own["run_id"].as_str().unwrap().to_string();
    let form = |digest: &str, decision: &str| {
        vec![
            ("conversation_id", id.clone()),
            ("digest", digest.to_string()),
            ("decision", decision.to_string()),
            ("run", run.clone()),
        ]
    };
    let digest = card["digest"].as_str().unwrap();
    assert_eq!(decide_with(&editor, form(digest, "approve")).await, (403, refused("needs_reviewer", "You cannot approve your own change: it waits for a reviewer (an admin or a colleague who may approve), who decides it under Waiting.")));

    // The reviewer sees it, marked as moved on; bad input changes nothing.
    let (_, inbox) = reviewer.call_json("inbox", &[]).await;
    let item = inbox["items"].as_array().unwrap().iter().find(|item| item["run_id"] == run.as_str()).unwrap().clone();
    assert_eq!((item["review_of"].clone(), item["moved_on"].clone()), (json!("ed"), json!(true)));
    assert_eq!(item["card"]["answers"], "review");
    assert_eq!(
        decide_with(&reviewer, form(digest, "deny")).await,
        (403, refused("forbidden", "Your account may not do this."))
    );
    assert_eq!(
        decide_with(&reviewer, form(&"0".repeat(64), "approve")).await,
        (
            409,
            refused(
                "card_changed",
                "The card changed after it was shown, so nothing was carried out. Check the card and decide again."
            )
        )
    );
    let mut elsewhere = form(digest, "approve");
    elsewhere[3].1 = uuid::Uuid::new_v4().to_string();
    assert_eq!(decide_with(&reviewer, elsewhere).await, (404, refused("not_found", "Conversation not found.")));
    assert!(effects.titles.lock().unwrap().is_empty());

    // Approved by the reviewer: applied once, its answer joins the editor's chat.
    let (status, body) = decide_with(&reviewer, form(digest, "approve")).await;
    assert_eq!(status, 200, "{body}");
    let conversation = crate::inbox::carried_on(&editor, &id).await;
    assert_eq!(texts(&conversation).last().unwrap(), "Done: Title set to A better title");
    assert_eq!(*effects.titles.lock().unwrap(), vec!["A better title".to_string()]);
    let (status, _) = decide_with(&reviewer, form(digest, "approve")).await;
    assert_eq!(status, 409, "decided once");
    let (_, inbox) = reviewer.call_json("inbox", &[]).await;
    assert!(inbox["items"].as_array().unwrap().iter().all(|item| item["run_id"] != run.as_str()), "{inbox}");
    server.stop().await;
}
