//! Sign-in that tells nothing and locks nobody out: a browser that signed in before (its device
//! cookie) gets past a name's limit that someone else used up, `X-Forwarded-For` counts only
//! from a trusted proxy, and a name is one name whatever its case or width.

use serde_json::{json, Value};

use crate::harness::{Client, TestServer, PASSWORD};

const WRONG: &str = "wrong-password";

async fn login(client: &Client, username: &str, password: &str) -> u16 {
    client.call("login", &[("username", username), ("password", password)]).await.status().as_u16()
}

fn signed_in(status: u16) -> bool {
    (200..400).contains(&status)
}

/// A sign-in as if through a proxy that said the client was `forwarded`.
async fn login_forwarded(client: &Client, forwarded: &str, username: &str) -> u16 {
    let response = client
        .http
        .post(format!("{}/api/login", client.base))
        .header("x-forwarded-for", forwarded)
        .form(&[("username", username), ("password", WRONG)])
        .send()
        .await
        .unwrap();
    response.status().as_u16()
}

/// A client that sends `cookie` with its sign-ins, as a browser would.
fn client_with_cookie(server: &TestServer, cookie: &str) -> Client {
    let jar = reqwest::cookie::Jar::default();
    jar.add_cookie_str(cookie, &format!("{}/api/login", server.base).parse().unwrap());
    Client {
        http: reqwest::Client::builder()
            .cookie_provider(std::sync::Arc::new(jar))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap(),
        base: server.base.clone(),
    }
}

/// A server whose limits refill slowly: every attempt runs argon2 (against a dummy hash for a
/// name without an account), and at the default rate a cell came back before a busy test machine
/// had made thirty attempts.
async fn slow_limits(per_name: u32, trusted_proxies: &str) -> TestServer {
    let trusted_proxies = server::proxies::TrustedProxies::parse(trusted_proxies).unwrap();
    TestServer::start_adjusted(move |config| {
        config.login_attempts = std::num::NonZeroU32::new(per_name).unwrap();
        config.trusted_proxies = trusted_proxies;
    })
    .await
}

#[tokio::test]
async fn a_browser_that_signed_in_before_still_signs_in_when_someone_used_up_the_names_attempts() {
    // Four attempts a minute per name and per device, twelve per address.
    let server = slow_limits(4, "").await;
    let owner = server.client();
    let response = owner.call("login", &[("username", "demo"), ("password", PASSWORD)]).await;
    assert!(signed_in(response.status().as_u16()));
    let device = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|value| value.to_str().unwrap().to_string())
        .find(|cookie| cookie.starts_with("tourguide_device="))
        .expect("a device cookie");
    for part in ["HttpOnly", "SameSite=Lax", "Path=/api/login", &format!("Max-Age={}", 365 * 86_400)] {
        assert!(device.contains(part), "{part}: {device}");
    }
    let (_, _) = owner.call_json("logout", &[]).await;
    // Someone else, from the same address, uses up the name's four attempts (the owner's sign-in
    // was the first of them).
    let attacker = server.client();
    for _ in 0..3 {
        assert_eq!(login(&attacker, "demo", WRONG).await, 401);
    }
    assert_eq!(login(&attacker, "demo", PASSWORD).await, 429);
    assert_eq!(login(&server.client(), "demo", PASSWORD).await, 429, "a browser without the cookie is refused");

    // A forged cookie and another user's are no device of demo's.
    let forged = client_with_cookie(&server, &format!("tourguide_device={}", "ab".repeat(32)));
    assert_eq!(login(&forged, "demo", PASSWORD).await, 429);
    let mallory = server.signed_in("mallory").await;
    assert_eq!(login(&mallory, "demo", PASSWORD).await, 429, "mallory's device cookie is mallory's alone");

    // The owner's browser signs in, and its wrong guesses count against it alone, at the name's rate.
    assert!(signed_in(login(&owner, "demo", PASSWORD).await), "the owner's device gets past the name's limit");
    for _ in 0..4 {
        assert_eq!(login(&owner, "demo", WRONG).await, 401);
    }
    assert_eq!(login(&owner, "demo", PASSWORD).await, 429, "a device has a limit of its own");
    server.stop().await;
}

/// Issue 62: a device cookie vouches for a browser that knew the password; a new password (or a
/// lock, which sets one nobody knows) forgets every device of the account, so an old cookie counts
/// as no device at all.
#[tokio::test]
async fn a_new_password_forgets_the_devices_that_signed_in_with_the_old_one() {
    let server = slow_limits(4, "").await;
    let owner = server.client();
    assert!(signed_in(login(&owner, "demo", PASSWORD).await));
    let attacker = server.client();
    for _ in 0..3 {
        assert_eq!(login(&attacker, "demo", WRONG).await, 401);
    }
    assert_eq!(login(&attacker, "demo", WRONG).await, 429, "the name's attempts are used up");
    assert!(signed_in(login(&owner, "demo", PASSWORD).await), "the owner's device still gets past");

    let demo = server.store().user_by_name("demo").await.unwrap().unwrap().id;
    let fresh = "a-fresh-password";
    server.store().set_password(demo, &server::auth::hash_password(fresh)).await.unwrap();
    let devices: i64 =
        db::on!(server.store().db(), pool => sqlx::query_scalar("SELECT COUNT(*) FROM devices WHERE user_id = $1")
        .bind(demo)
        .fetch_one(pool)
        .await)
        .unwrap();
    assert_eq!(devices, 0, "the account's devices are forgotten with its sessions");
    assert_eq!(login(&owner, "demo", fresh).await, 429, "the old cookie is no device any more");
    server.stop().await;
}

#[tokio::test]
async fn a_forwarded_for_from_an_untrusted_peer_does_not_dodge_the_address_limit() {
    // Three attempts a minute per address.
    let server = slow_limits(1, "").await;
    let client = server.client();
    // Three attempts, at three names, each claiming another client.
    for index in 0..3 {
        let status = login_forwarded(&client, &format!("10.0.0.{index}"), &format!("someone-{index}")).await;
        assert_eq!(status, 401, "attempt {index}");
    }
    assert_eq!(login_forwarded(&client, "10.0.1.1", "someone-else").await, 429);
    server.stop().await;
}

#[tokio::test]
async fn a_trusted_proxys_forwarded_for_names_the_client() {
    // Three attempts a minute per address.
    let server = slow_limits(1, "127.0.0.1,::1").await;
    let client = server.client();
    for index in 0..3 {
        assert_eq!(login_forwarded(&client, "203.0.113.7", &format!("someone-{index}")).await, 401, "{index}");
    }
    assert_eq!(login_forwarded(&client, "203.0.113.7", "someone-else-1").await, 429);
    // The client put an address of its own in front; the proxy appended the one it heard from.
    assert_eq!(login_forwarded(&client, "198.51.100.1, 203.0.113.7", "someone-else-2").await, 429);
    // Another client behind the same proxy has its own limit.
    assert_eq!(login_forwarded(&client, "203.0.113.8", "someone-else-3").await, 401);
    server.stop().await;
}

fn usernames(accounts: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        accounts.as_array().unwrap().iter().map(|account| account["username"].as_str().unwrap().to_string()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_name_is_one_name_whatever_its_case_or_width_and_may_not_mix_scripts() {
    let server = TestServer::start().await;
    let admin = server.signed_in("demo").await;
    let add = |name: &'static str| {
        let admin = &admin;
        async move { admin.call_json("admin_add_account", &[("username", name), ("password", "bobs-password")]).await }
    };
    let (status, body) = add("bob").await;
    assert_eq!(status, 200, "{body}");
    let (_, before) = admin.call_json("admin_accounts", &[]).await;
    for taken in ["Bob", "BOB", "ｂｏｂ", " bob "] {
        let (status, body) = add(taken).await;
        assert_eq!(status, 422, "{taken}: {body}");
        assert!(body.to_string().contains("ErrorUsernameTaken"), "{taken}: {body}");
    }
    let (status, body) = add("bоb").await;
    assert_eq!(status, 422, "a Cyrillic о: {body}");
    assert!(body.to_string().contains("ErrorUsernameConfusable"), "{body}");
    let (_, after) = admin.call_json("admin_accounts", &[]).await;
    assert_eq!(after, before, "nothing changed");
    // A name in one script is fine, whichever script.
    for plain in ["борис", "王小明", "anna.meier"] {
        let (status, body) = add(plain).await;
        assert_eq!(status, 200, "{plain}: {body}");
    }

    // Signing in finds the account by its key.
    for spelling in ["BOB", "ｂｏｂ", "Bob"] {
        let client = server.client();
        assert!(signed_in(login(&client, spelling, "bobs-password").await), "{spelling}");
        let (status, session) = client.call_json("session", &[]).await;
        assert_eq!((status, session["username"].clone()), (200, json!("bob")), "{spelling}");
    }
    assert_eq!(login(&server.client(), "bоb", "bobs-password").await, 401, "the Cyrillic name is another");
    let (_, accounts) = admin.call_json("admin_accounts", &[]).await;
    assert_eq!(usernames(&accounts), ["anna.meier", "bob", "demo", "борис", "王小明"]);
    server.stop().await;
}

/// Accounts from before name keys get theirs at the next start; two whose names have one key
/// both stay, and each still signs in by its exact name.
#[tokio::test]
async fn accounts_from_before_name_keys_get_theirs_at_start_and_none_is_lost() {
    let server = TestServer::start().await;
    let hash_a = server::auth::hash_password("carols-password");
    let hash_b = server::auth::hash_password("other-carols-password");
    for (name, hash) in [("Carol", &hash_a), ("carol", &hash_b), ("Dave", &hash_a)] {
        db::on!(server.store().db(), pool => sqlx::query(
            "INSERT INTO users (username, password_hash, created_at) VALUES ($1, $2, 0)",
        )
        .bind(name)
        .bind(hash)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))
        .unwrap();
    }
    let dir = server.stop().await;
    let server = TestServer::start_in(dir, std::sync::Arc::new(demo::DemoProvider)).await;
    let keys: Vec<(String, Option<String>)> = db::on!(server.store().db(), pool => sqlx::query_as(
        "SELECT username, name_key FROM users ORDER BY id",
    )
    .fetch_all(pool)
    .await)
    .unwrap();
    assert_eq!(
        keys,
        [
            ("demo".to_string(), Some("demo".to_string())),
            ("Carol".to_string(), Some("carol".to_string())),
            ("carol".to_string(), None),
            ("Dave".to_string(), Some("dave".to_string())),
        ]
    );
    let as_user = |name: &'static str, password: &'static str| {
        let client = server.client();
        async move {
            assert!(signed_in(login(&client, name, password).await), "{name}");
            client.call_json("session", &[]).await.1["username"].as_str().unwrap().to_string()
        }
    };
    assert_eq!(as_user("Carol", "carols-password").await, "Carol");
    assert_eq!(as_user("CAROL", "carols-password").await, "Carol");
    assert_eq!(as_user("carol", "other-carols-password").await, "carol", "the exact name wins");
    assert_eq!(as_user("dave", "carols-password").await, "Dave");
    server.stop().await;
}

#[test]
fn the_operator_cannot_add_a_name_that_is_taken_in_another_case_or_width_or_mixes_scripts() {
    use crate::accounts::command;
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("names.db");
    let (code, out, err) = command(&database, &["user", "add", "bob"], "bobs-password\n");
    assert_eq!((code, out.as_str()), (0, "Added bob (editor).\n"), "{err}");
    for taken in ["BOB", "ｂｏｂ", "Bob"] {
        let (code, _, err) = command(&database, &["user", "add", taken], "another-password\n");
        assert_eq!((code, err.as_str()), (1, "tourguide: a user named 'bob' exists already\n"), "{taken}");
    }
    let (code, _, err) = command(&database, &["user", "add", "bоb"], "another-password\n");
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err,
        "tourguide: the user name 'bоb' mixes scripts or has characters that could pass for others; use letters of one \
         script\n"
    );
    let (code, out, err) = command(&database, &["user", "add", "борис"], "boris-password\n");
    assert_eq!((code, out.as_str()), (0, "Added борис (editor).\n"), "{err}");
    let (_, out, _) = command(&database, &["user", "list"], "");
    assert_eq!(out, "bob\teditor\tfour-eyes\t0 sessions\nборис\teditor\tfour-eyes\t0 sessions\n");
    // The other commands find the account by its key too.
    let (code, out, _) = command(&database, &["user", "passwd", "BOB"], "new-bobs-password\n");
    assert_eq!((code, out.as_str()), (0, "Set a new password for BOB; their sessions ended.\n"));
}
