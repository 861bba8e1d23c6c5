//! A page's head, read with its session in one round trip (`Store::page_head`): the header's count
//! of waiting runs, the chat page's list and its open conversation are what each part read on its
//! own before, for an owner, for a reviewer under four-eyes, for someone else's conversation and
//! for a session that ended. On both backends; `round_trips.rs` counts the page's round trips.

use server::store::{PageShows, Role, SessionUser, Store, LIST_LIMIT};

use crate::harness::{Client, TestServer, PASSWORD};
use crate::scripted::{services, Effects};

async fn four_eyes_editor(server: &TestServer, name: &str) -> Client {
    let hash = server::auth::hash_password(PASSWORD);
    server.store().add_user(name, &hash, Role::Editor, false).await.unwrap();
    let client = server.client();
    client.sign_in(name).await;
    client
}

/// A conversation of `client`'s that waits on what `message` makes the scripted model do.
async fn waiting_in(client: &Client, message: &str) -> String {
    let id = client.create_conversation().await;
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", message)]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert!(conversation["status"].as_str().unwrap().starts_with("awaiting_"), "{conversation}");
    id
}

/// The header's count as the page shows it (the badge, none while nothing waits).
fn shown_count(html: &str) -> u64 {
    let link = &html[html.find("class=\"waiting-link\"").expect("the waiting link")..];
    let link = &link[..link.find("</a>").unwrap()];
    match link.find("class=\"count-badge\">") {
        None => 0,
        Some(at) => {
            let after = &link[at + "class=\"count-badge\">".len()..];
            after[..after.find('<').unwrap()].parse().unwrap()
        }
    }
}

/// The conversations the page lists, in order.
fn listed(html: &str) -> Vec<String> {
    let list = &html[html.find("class=\"conversation-list\"").expect("the list")..];
    let list = &list[..list.find("</ul>").unwrap()];
    list.split("<li><a href=\"/c/").skip(1).map(|item| item[..item.find('"').unwrap()].to_string()).collect()
}

async fn page(client: &Client, path: &str) -> (u16, String) {
    let response = client.http.get(format!("{}{path}", client.base)).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// What the parts of a page read on their own, through the server functions.
async fn alone(client: &Client) -> (u64, Vec<String>) {
    let (status, waiting) = client.call_json("waiting", &[]).await;
    assert_eq!(status, 200, "{waiting}");
    let (status, list) = client.call_json("conversations", &[]).await;
    assert_eq!(status, 200, "{list}");
    let list = list.as_array().unwrap().iter().map(|item| item["id"].as_str().unwrap().to_string()).collect();
    (waiting["count"].as_u64().unwrap(), list)
}

#[tokio::test]
async fn a_page_shows_with_its_session_what_its_parts_read_on_their_own() {
    let effects = Effects::default();
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&effects)).await;
    let reviewer = server.signed_in("demo").await;
    let editor = four_eyes_editor(&server, "ed").await;
    let card = waiting_in(&editor, "write it").await;
    let question = waiting_in(&editor, "ask me").await;
    let own = reviewer.create_conversation().await;

    for (client, expected_count, expected_len) in [(&editor, 2, 2), (&reviewer, 1, 1)] {
        let (count, expected_list) = alone(client).await;
        assert_eq!((count, expected_list.len()), (expected_count, expected_len));
        for path in ["/".to_string(), format!("/c/{}", expected_list[0]), "/runs".to_string()] {
            let (status, html) = page(client, &path).await;
            assert_eq!(status, 200, "{path}: {html}");
            assert_eq!(shown_count(&html), expected_count, "{path}");
            if path != "/runs" {
                assert_eq!(listed(&html), expected_list, "{path}");
            }
        }
    }
    // The open conversation is the reader's own, read with the page: the question and its line.
    let (_, html) = page(&editor, &format!("/c/{card}")).await;
    assert!(html.contains("write it"), "{html}");
    let (_, html) = page(&editor, &format!("/c/{question}")).await;
    assert!(html.contains("ask me"), "{html}");
    // Someone else's conversation is not read with the page, nor by the page: the reviewer's
    // page of the editor's card shows none of it, and their own list.
    let (status, html) = page(&reviewer, &format!("/c/{card}")).await;
    assert!(!html.contains("write it"), "{status}: {html}");
    assert_eq!(listed(&html), vec![own.clone()]);

    // A session that ended is refused by the page's one read.
    let (status, body) = editor.call_json("logout", &[]).await;
    assert!(status < 400, "{status} {body}");
    for path in ["/".to_string(), format!("/c/{card}"), "/runs".to_string()] {
        let response = editor.http.get(format!("{}{path}", server.base)).send().await.unwrap();
        assert!(response.status().is_redirection(), "{path}: {}", response.status());
        assert_eq!(response.headers()["location"], "/login", "{path}");
    }
    server.stop().await;
}

/// `user`'s session whose token hashes to the returned hash, ending at `expires_at`.
async fn session_of(store: &Store, user_id: i64, name: &str, expires_at: i64) -> String {
    let hash = server::auth::token_hash(&format!("token of {name}"));
    store.create_session(&hash, user_id, expires_at, None).await.unwrap();
    hash
}

fn reviews(user: &SessionUser) -> bool {
    user.role() == Role::Admin || user.may_approve_own
}

#[tokio::test]
async fn the_page_head_reads_what_the_separate_reads_read() {
    let effects = Effects::default();
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services(&effects)).await;
    let reviewer = server.signed_in("demo").await;
    let editor = four_eyes_editor(&server, "ed").await;
    let card = waiting_in(&editor, "write it").await;
    waiting_in(&editor, "ask me").await;
    let own = reviewer.create_conversation().await;
    let store = server.store();
    let later = db::now() + 3600;
    let editor_id = store.user_by_name("ed").await.unwrap().unwrap().id;
    let reviewer_id = store.user_by_name("demo").await.unwrap().unwrap().id;

    for (user_id, name) in [(editor_id, "ed"), (reviewer_id, "demo")] {
        let hash = session_of(store, user_id, name, later).await;
        let user = store.user_for_session(&hash).await.unwrap().expect("a live session");
        let waiting = store.waiting_count(user.id, reviews(&user)).await.unwrap();
        assert!(waiting.count > 0, "{name}: something waits for each");
        let list = store.conversations_of(user.id, LIST_LIMIT).await.unwrap();
        for shows in [PageShows::Header, PageShows::List, PageShows::Conversation(&card), PageShows::Conversation(&own)]
        {
            let head = store.page_head(&hash, shows).await.unwrap().expect("a live session");
            assert_eq!(format!("{:?}", head.user), format!("{user:?}"), "{name} {shows:?}");
            assert_eq!(head.waiting, waiting, "{name} {shows:?}");
            let expected_list = (shows != PageShows::Header).then(|| list.clone());
            assert_eq!(head.conversations, expected_list, "{name} {shows:?}");
            let expected = match shows {
                PageShows::Conversation(id) => store.conversation_snapshot(user.id, id).await.unwrap(),
                _ => None,
            };
            assert_eq!(format!("{:?}", head.snapshot), format!("{expected:?}"), "{name} {shows:?}");
        }
    }
    // Each reads its own conversation only.
    let hash = session_of(store, editor_id, "ed again", later).await;
    let head = store.page_head(&hash, PageShows::Conversation(&card)).await.unwrap().unwrap();
    assert_eq!(head.snapshot.expect("the editor's own").conversation.id, card);
    let head = store.page_head(&hash, PageShows::Conversation(&own)).await.unwrap().unwrap();
    assert!(head.snapshot.is_none(), "not the editor's");
    let head = store.page_head(&hash, PageShows::Conversation("no such conversation")).await.unwrap().unwrap();
    assert!(head.snapshot.is_none());

    // An ended session, or one never begun, reads nothing.
    let ended = session_of(store, editor_id, "ended", db::now() - 1).await;
    for hash in [ended, server::auth::token_hash("never")] {
        for shows in [PageShows::Header, PageShows::List, PageShows::Conversation(&card)] {
            assert!(store.page_head(&hash, shows).await.unwrap().is_none(), "{shows:?}");
        }
    }
    server.stop().await;
}
