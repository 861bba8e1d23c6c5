use std::sync::Arc;

use crate::harness::{refused, text, BrokenProvider, Client, GatedProvider, TestServer};

#[tokio::test]
async fn a_message_is_answered_by_the_worker() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;

    let (status, _) =
        client.call_json("send_message", &[("conversation_id", &id), ("content", "  Hello there  ")]).await;
    assert_eq!(status, 200);

    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle");
    assert_eq!(conversation["title"], "Hello there");
    let messages = conversation["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"], "Hello there");
    assert_eq!(messages[1]["role"], "assistant");
    assert!(text(&messages[1]).contains("\u{201c}Hello there\u{201d}"));

    let (_, list) = client.call_json("conversations", &[]).await;
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], id.as_str());
    server.stop().await;
}

#[tokio::test]
async fn a_second_message_while_the_assistant_works_is_refused_as_busy() {
    let provider = GatedProvider::new();
    let server = TestServer::start_with(provider.clone()).await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;

    let (status, _) = client.call_json("send_message", &[("conversation_id", &id), ("content", "first")]).await;
    assert_eq!(status, 200);
    let (status, error) = client.call_json("send_message", &[("conversation_id", &id), ("content", "second")]).await;
    assert_eq!(status, 409, "{error}");
    assert_eq!(error, refused("busy", "The assistant is still working on this conversation."));

    let (_, conversation) = client.conversation(&id).await;
    assert_eq!(conversation["status"], "processing");
    assert_eq!(conversation["messages"].as_array().unwrap().len(), 1, "the refused message is not stored");

    provider.gate.add_permits(1);
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(text(&conversation["messages"][1]), "released after 2 messages");
    server.stop().await;
}

/// Holds a turn whose user asked it to ("hold") until the test lets it go; answers others at once.
struct HoldingProvider {
    gate: tokio::sync::Semaphore,
    held: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl runtime::ModelProvider for HoldingProvider {
    fn label(&self) -> String {
        "Holding test model".into()
    }

    fn is_demo(&self) -> bool {
        false
    }

    async fn complete(
        &self,
        request: runtime::CompletionRequest,
    ) -> Result<runtime::Completion, runtime::ProviderError> {
        let asked = request.messages.iter().rev().find(|m| m.role == runtime::Role::User).map(|m| m.content.clone());
        let asked = asked.unwrap_or_default();
        if asked.contains("hold") {
            self.held.notify_one();
            self.gate.acquire().await.map_err(|_| runtime::ProviderError::Connection("closed".into()))?.forget();
        }
        Ok(runtime::Completion { content: format!("reply to {asked}"), tool_calls: Vec::new() })
    }
}

#[tokio::test]
async fn a_slow_turn_does_not_hold_up_another_conversation() {
    let provider = Arc::new(HoldingProvider { gate: tokio::sync::Semaphore::new(0), held: tokio::sync::Notify::new() });
    let server = TestServer::start_with(provider.clone()).await;
    let alice = server.signed_in("demo").await;
    let slow = alice.create_conversation().await;
    let quick = alice.create_conversation().await;

    alice.call_json("send_message", &[("conversation_id", &slow), ("content", "hold this")]).await;
    // The model has the slow turn (the worker is inside it) before the quick one is sent.
    tokio::time::timeout(std::time::Duration::from_secs(10), provider.held.notified())
        .await
        .expect("the turn reached the model");
    alice.call_json("send_message", &[("conversation_id", &quick), ("content", "hello")]).await;

    let answered = alice.settled_conversation(&quick).await;
    assert_eq!(answered["status"], "idle", "{answered}");
    assert_eq!(text(&answered["messages"][1]), "reply to hello");
    let (_, held) = alice.conversation(&slow).await;
    assert_eq!(held["status"], "processing", "the slow turn is still with the model: {held}");

    provider.gate.add_permits(1);
    let released = alice.settled_conversation(&slow).await;
    assert_eq!(text(&released["messages"][1]), "reply to hold this");
    server.stop().await;
}

#[tokio::test]
async fn a_provider_failure_fails_the_turn_with_a_plain_sentence() {
    // A connection failure is retried (without backoff here) until the retries are spent.
    let mut services = server::Services::new(Arc::new(BrokenProvider));
    services.runtime_settings.retry_backoff_seconds = 0;
    let server = TestServer::start_services(tempfile::tempdir().unwrap(), services).await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    client.call_json("send_message", &[("conversation_id", &id), ("content", "hi")]).await;

    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "failed");
    let error = conversation["error"].as_str().unwrap();
    assert!(error.contains("could not be reached"), "{error}");
    assert!(!error.contains("10.1.2.3") && !error.contains("secret"), "internals leak: {error}");

    // A failed conversation takes a new message (the retry).
    let (status, _) = client.call_json("send_message", &[("conversation_id", &id), ("content", "again")]).await;
    assert_eq!(status, 200);
    server.stop().await;
}

#[tokio::test]
async fn bad_messages_get_a_clear_error_and_change_nothing() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;

    let (status, error) = client.call_json("send_message", &[("conversation_id", &id), ("content", "   ")]).await;
    assert_eq!(status, 422);
    assert_eq!(
        error,
        serde_json::json!({ "code": "invalid", "message": "The message is empty.", "reason": "ErrorEmptyMessage" })
    );

    let long = "x".repeat(server::chat::MAX_MESSAGE_CHARS + 1);
    let (status, _) = client.call_json("send_message", &[("conversation_id", &id), ("content", &long)]).await;
    assert_eq!(status, 422);

    let (status, _) = client.call_json("send_message", &[("conversation_id", &id)]).await;
    assert_eq!(status, 400, "a missing argument is a malformed request");

    let (status, _) = client.call_json("send_message", &[("conversation_id", "no-such-id"), ("content", "hi")]).await;
    assert_eq!(status, 404);

    let (_, conversation) = client.conversation(&id).await;
    assert_eq!(conversation["status"], "idle");
    assert!(conversation["messages"].as_array().unwrap().is_empty());
    server.stop().await;
}

#[tokio::test]
async fn a_conversation_is_titled_in_the_readers_language_until_its_first_message_names_it() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let (status, _) = client.call_json("set_language", &[("language", "de")]).await;
    assert_eq!(status, 200);
    let id = client.create_conversation().await;
    assert_eq!(client.conversation(&id).await.1["title"], "Neue Unterhaltung");
    let (_, list) = client.call_json("conversations", &[]).await;
    assert_eq!(list[0]["title"], "Neue Unterhaltung", "{list}");
    // The same conversation reads in English for an English reader.
    let english = server.signed_in("demo").await;
    let (status, _) = english.call_json("set_language", &[("language", "en")]).await;
    assert_eq!(status, 200);
    assert_eq!(english.conversation(&id).await.1["title"], "New conversation");

    // The first message names it: its first words, cut at a word, "…" where cut.
    let message = "Which opening hours should the bakery show\non its front page?";
    let (status, _) = english.call_json("send_message", &[("conversation_id", &id), ("content", message)]).await;
    assert_eq!(status, 200);
    let conversation = english.settled_conversation(&id).await;
    assert_eq!(conversation["title"], "Which opening hours should the bakery…");
    // The next message does not rename it.
    english.call_json("send_message", &[("conversation_id", &id), ("content", "And on Sundays?")]).await;
    assert_eq!(english.settled_conversation(&id).await["title"], "Which opening hours should the bakery…");
    server.stop().await;
}

#[tokio::test]
async fn a_title_the_user_chose_is_never_replaced_by_the_first_message() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    // Even one that reads like an untitled conversation's.
    for chosen in ["Flour orders", "New conversation", "Neue Unterhaltung"] {
        let id = client.create_conversation().await;
        let (status, _) = client.call_json("rename_conversation", &[("conversation_id", &id), ("title", chosen)]).await;
        assert_eq!(status, 200);
        let (status, _) =
            client.call_json("send_message", &[("conversation_id", &id), ("content", "Hello there")]).await;
        assert_eq!(status, 200);
        assert_eq!(client.settled_conversation(&id).await["title"], chosen);
    }
    server.stop().await;
}

#[tokio::test]
async fn a_conversation_is_renamed_and_deleted_by_its_owner_only() {
    let provider = GatedProvider::new();
    let server = TestServer::start_with(provider.clone()).await;
    let client = server.signed_in("demo").await;
    let intruder = server.signed_in("mallory").await;
    let id = client.create_conversation().await;

    let (status, _) =
        client.call_json("rename_conversation", &[("conversation_id", &id), ("title", "  Flour orders ")]).await;
    assert_eq!(status, 200);
    let (status, body) = client.call_json("rename_conversation", &[("conversation_id", &id), ("title", "   ")]).await;
    assert_eq!(
        (status, body),
        (
            422,
            serde_json::json!({ "code": "invalid", "message": "The title must not be empty.", "reason": "ErrorEmptyTitle" })
        )
    );
    let (status, _) = intruder.call_json("rename_conversation", &[("conversation_id", &id), ("title", "Mine")]).await;
    assert_eq!(status, 404);
    assert_eq!(client.conversation(&id).await.1["title"], "Flour orders");

    // Not while the assistant works on it.
    client.call_json("send_message", &[("conversation_id", &id), ("content", "hello")]).await;
    let (status, _) = client.call_json("delete_conversation", &[("conversation_id", &id)]).await;
    assert_eq!(status, 409);
    provider.gate.add_permits(1);
    client.settled_conversation(&id).await;

    let (status, _) = intruder.call_json("delete_conversation", &[("conversation_id", &id)]).await;
    assert_eq!(status, 404);
    let (status, _) = client.call_json("delete_conversation", &[("conversation_id", &id)]).await;
    assert_eq!(status, 200);
    assert_eq!(client.conversation(&id).await.0, 404);
    assert!(server.store().messages(&id).await.unwrap().is_empty(), "the messages went with it");
    server.stop().await;
}

#[tokio::test]
async fn a_poll_while_the_turn_works_takes_the_fast_path_and_a_change_brings_the_whole_conversation() {
    let provider = GatedProvider::new();
    let server = TestServer::start_with(provider.clone()).await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    client.call_json("send_message", &[("conversation_id", &id), ("content", "first")]).await;

    let (status, fast) = client.call_json("poll", &[("id", &id), ("after", "1")]).await;
    assert_eq!(status, 200, "{fast}");
    assert_eq!(fast, serde_json::json!({ "status": "processing", "total": 1, "conversation": null }));
    // A client that knows less (or nothing) gets everything.
    let (_, full) = client.call_json("poll", &[("id", &id), ("after", "0")]).await;
    assert_eq!(full["conversation"]["messages"][0]["content"], "first");

    provider.gate.add_permits(1);
    client.settled_conversation(&id).await;
    let (_, changed) = client.call_json("poll", &[("id", &id), ("after", "1")]).await;
    assert_eq!(changed["status"], "idle");
    assert_eq!(changed["total"], 2);
    assert_eq!(text(&changed["conversation"]["messages"][1]), "released after 2 messages");

    // The fast path checks ownership like every other read, and bad input is refused.
    let intruder = server.signed_in("mallory").await;
    let (status, refused) = intruder.call_json("poll", &[("id", &id), ("after", "2")]).await;
    assert_eq!(status, 404);
    // The poll's own handler refuses as a server function does (the browser reads it through one).
    let (status, read_refused) = intruder.call_json("conversation", &[("id", &id)]).await;
    assert_eq!((status, &refused), (404, &read_refused));
    assert_eq!(refused["code"], "not_found", "{refused}");
    let (status, malformed) = client.call_json("poll", &[("id", &id), ("after", "-1")]).await;
    assert_eq!(status, 400);
    assert_eq!(malformed["code"], "bad_request", "{malformed}");
    assert!(!malformed["message"].as_str().unwrap().is_empty(), "{malformed}");
    server.stop().await;
}

/// The reader signed in twice (two tabs, two sessions) on a conversation whose turn waits on
/// the gate after the message "first".
async fn two_tabs_on_a_working_turn() -> (Arc<GatedProvider>, TestServer, Client, Client, String) {
    let provider = GatedProvider::new();
    let server = TestServer::start_with(provider.clone()).await;
    let client = server.signed_in("demo").await;
    let other_tab = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    client.call_json("send_message", &[("conversation_id", &id), ("content", "first")]).await;
    (provider, server, client, other_tab, id)
}

/// A client that shows nothing yet gets the whole conversation from the poll's one read (on
/// SQLite one batch with the session check): the same view as the conversation's own read, the
/// lines' files, the pending ones and the reply being written included; and only for a live
/// session of the owner.
#[tokio::test]
async fn a_poll_from_nothing_reads_the_whole_conversation_with_its_session() {
    let (provider, server, client, other_tab, id) = two_tabs_on_a_working_turn().await;
    let line = server.store().messages(&id).await.unwrap()[0].id;
    for (message, name) in [(Some(line), "sent.md"), (None, "pending.md")] {
        db::on!(server.store().db(), pool => sqlx::query(
            "INSERT INTO attachments (conversation_id, message_id, file_name, kind, size, content, text, truncated, created_at)
             VALUES ($1, $2, $3, 'markdown', 3, $4, 'abc', $5, 0)",
        )
        .bind(&id)
        .bind(message)
        .bind(name)
        .bind(b"abc".to_vec())
        .bind(false)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))
        .unwrap();
    }
    db::on!(server.store().db(), pool => sqlx::query(
        "INSERT INTO drafts (conversation_id, draft_key, content, updated_at) VALUES ($1, 'key-1', 'so far', 0)",
    )
    .bind(&id)
    .execute(pool)
    .await
    .map(|done| done.rows_affected()))
    .unwrap();

    let (status, poll) = client.call_json("poll", &[("id", &id), ("after", "0")]).await;
    assert_eq!(status, 200, "{poll}");
    let (_, read) = client.conversation(&id).await;
    assert_eq!(poll["conversation"], read, "the poll's view is the conversation's view");
    assert_eq!((poll["status"].clone(), poll["total"].clone()), (read["status"].clone(), serde_json::json!(1)));
    assert_eq!(read["messages"][0]["attachments"][0]["file_name"], "sent.md");
    assert_eq!(read["pending_attachments"][0]["file_name"], "pending.md");
    assert_eq!(read["draft"]["text"], "so far");

    // Someone else's conversation, even a known id: not found, and nothing of it in the answer.
    let intruder = server.signed_in("mallory").await;
    let (status, body) = intruder.call_json("poll", &[("id", &id), ("after", "0")]).await;
    assert_eq!(status, 404);
    assert!(!body.to_string().contains("first") && !body.to_string().contains("so far"), "{body}");
    // One of the owner's sessions expires: that one is refused at once, the other still reads.
    server.exec("UPDATE sessions SET expires_at = 0 WHERE token_hash = (SELECT MIN(token_hash) FROM sessions)").await;
    let statuses = [
        client.call_json("poll", &[("id", &id), ("after", "0")]).await.0,
        other_tab.call_json("poll", &[("id", &id), ("after", "0")]).await.0,
        intruder.call_json("poll", &[("id", &id), ("after", "0")]).await.0,
    ];
    assert!(
        statuses == [401, 200, 404] || statuses == [200, 401, 404] || statuses == [200, 200, 401],
        "one session expired: {statuses:?}"
    );
    provider.gate.add_permits(1);
    server.stop().await;
}

/// The poll checks its session in the read it makes anyway (the middleware leaves it alone): a
/// session ended or expired in the database is refused by the very next poll, fast path or not.
#[tokio::test]
async fn a_poll_refuses_a_session_the_moment_it_ends_or_expires() {
    let (provider, server, client, other_tab, id) = two_tabs_on_a_working_turn().await;
    for poller in [&client, &other_tab] {
        let (status, fast) = poller.call_json("poll", &[("id", &id), ("after", "1")]).await;
        assert_eq!((status, fast["conversation"].is_null()), (200, true), "{fast}");
    }

    // Ended as the command line or another process ends them: in the database, not through us.
    server.exec("UPDATE sessions SET expires_at = 0 WHERE token_hash = (SELECT MIN(token_hash) FROM sessions)").await;
    let statuses = [
        client.call_json("poll", &[("id", &id), ("after", "1")]).await.0,
        other_tab.call_json("poll", &[("id", &id), ("after", "1")]).await.0,
    ];
    assert!(statuses.contains(&401) && statuses.contains(&200), "one session expired: {statuses:?}");
    server.exec("DELETE FROM sessions").await;
    for poller in [&client, &other_tab] {
        for after in ["1", "0"] {
            let (status, body) = poller.call_json("poll", &[("id", &id), ("after", after)]).await;
            assert_eq!(status, 401, "{body}");
        }
    }
    provider.gate.add_permits(1);
    server.stop().await;
}

#[tokio::test]
async fn the_list_shows_the_latest_conversations_up_to_its_bound() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let user = server.store().user_by_name("demo").await.unwrap().unwrap();
    let total = server::chat::LIST_LIMIT + 5;
    for n in 0..total {
        // Distinct update times, oldest first, so "latest" is well defined.
        db::on!(server.store().db(), pool => sqlx::query(
            "INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(format!("00000000-0000-4000-8000-{n:012}"))
        .bind(user.id)
        .bind(format!("Conversation {n}"))
        .bind(1_000 + n)
        .bind(1_000 + n)
        .execute(pool)
        .await
        .map(|done| done.rows_affected()))
        .unwrap();
    }
    let (status, list) = client.call_json("conversations", &[]).await;
    assert_eq!(status, 200, "{list}");
    let titles: Vec<&str> = list.as_array().unwrap().iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(titles.len() as i64, server::chat::LIST_LIMIT);
    assert_eq!(titles[0], format!("Conversation {}", total - 1), "newest first");
    assert!(!titles.contains(&"Conversation 4"), "the oldest ones are left out");
    // Left out of the list, not out of reach.
    let (status, _) = client.conversation("00000000-0000-4000-8000-000000000000").await;
    assert_eq!(status, 200);
    server.stop().await;
}

#[tokio::test]
async fn the_list_breaks_ties_by_creation_straight_from_its_index() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let user = server.store().user_by_name("demo").await.unwrap().unwrap();
    let mut created = Vec::new();
    for _ in 0..5 {
        created.push(client.create_conversation().await);
    }
    // All changed within one second: the one created later comes first.
    server.exec("UPDATE conversations SET updated_at = 1700000000").await;
    let (status, list) = client.call_json("conversations", &[]).await;
    assert_eq!(status, 200, "{list}");
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    created.reverse();
    assert_eq!(ids, created);

    // And it is read in the index's order, with no sort of the ties before the limit: a user whose
    // thousands of conversations changed within one second sorted them all for every page.
    let sql = server::store::conversation_list_sql(server.store().db().backend());
    let plan: Vec<String> = match server.store().db() {
        db::Db::Sqlite(sqlite) => {
            let rows: Vec<(i64, i64, i64, String)> =
                sqlx::query_as(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}")))
                    .bind(user.id)
                    .bind(100)
                    .fetch_all(&sqlite.read)
                    .await
                    .unwrap();
            rows.into_iter().map(|row| row.3).collect()
        }
        db::Db::Postgres(pool) => {
            let mut tx = pool.begin().await.unwrap();
            // A handful of rows would be read whole and sorted anyway; the question is whether the
            // index can give the order.
            sqlx::query("SET LOCAL enable_seqscan = off").execute(&mut *tx).await.unwrap();
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("EXPLAIN {sql}")))
                .bind(user.id)
                .bind(100_i64)
                .fetch_all(&mut *tx)
                .await
                .unwrap()
        }
    };
    assert!(plan.iter().any(|line| line.contains("conversations_user")), "{plan:?}");
    assert!(!plan.iter().any(|line| line.contains("TEMP B-TREE") || line.contains("Sort")), "{plan:?}");
    server.stop().await;
}

/// The assistant line's stored rendering and its renderer version.
async fn stored_rendering(server: &TestServer) -> (Option<String>, Option<i64>) {
    db::on!(server.store().db(), pool => sqlx::query_as(
        "SELECT html, html_version FROM messages WHERE role = 'assistant' ORDER BY id DESC LIMIT 1"
    )
    .fetch_one(pool)
    .await)
    .unwrap()
}

async fn last_html(client: &Client, id: &str) -> String {
    let conversation = client.settled_conversation(id).await;
    conversation["messages"].as_array().unwrap().last().unwrap()["html"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn an_assistant_line_is_rendered_once_when_written_and_read_as_stored() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let (status, _) = client.call_json("send_message", &[("conversation_id", &id), ("content", "Hello *there*")]).await;
    assert_eq!(status, 200);
    client.settled_conversation(&id).await;
    // The Markdown it was written in, as stored (the page gets its HTML alone).
    let reply = server.transcript(&id).await[1].clone();
    let rendered = server::markdown::to_safe_html(&reply);
    assert!(!rendered.is_empty());

    // Written with the line, by this renderer, and what the reader gets.
    assert_eq!(stored_rendering(&server).await, (Some(rendered.clone()), Some(server::markdown::RENDERER_VERSION)));
    assert_eq!(last_html(&client, &id).await, rendered);

    // Read as stored, not made again per read: a stored rendering is what the page shows.
    server.exec("UPDATE messages SET html = '<p>as stored</p>' WHERE role = 'assistant'").await;
    assert_eq!(last_html(&client, &id).await, "<p>as stored</p>");

    // Another renderer's rendering is not trusted: made again from the text.
    server.exec("UPDATE messages SET html_version = 0 WHERE role = 'assistant'").await;
    assert_eq!(last_html(&client, &id).await, rendered);
    server.stop().await;
}

/// A long conversation's page carries one editor at most: the one `?edit=` names (how the Edit link
/// opens it without WASM). A plain form's edit goes back to the page without the editor.
#[tokio::test]
async fn the_page_renders_only_the_editor_asked_for_and_a_plain_form_edit_closes_it() {
    let server = TestServer::start().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    for question in ["first question", "second question"] {
        client.call_json("send_message", &[("conversation_id", &id), ("content", question)]).await;
        client.settled_conversation(&id).await;
    }
    let view = client.settled_conversation(&id).await;
    let first = view["messages"][0]["id"].as_i64().unwrap();
    let page = |query: String| {
        let url = format!("{}/c/{id}{query}", server.base);
        let http = client.http.clone();
        async move { http.get(url).send().await.unwrap().text().await.unwrap() }
    };

    let plain = page(String::new()).await;
    assert!(plain.contains(&format!("href=\"/c/{id}?edit={first}#m{first}\"")), "an Edit link per own message");
    assert!(!plain.contains("class=\"edit-form\""), "no editor until one is asked for");
    let editing = page(format!("?edit={first}")).await;
    assert_eq!(editing.matches("class=\"edit-form\"").count(), 1, "one editor");
    assert!(editing.contains(">first question</textarea>"), "the editor of the message asked for");
    assert!(!editing.contains(">second question</textarea>"));

    let response = client
        .http
        .post(format!("{}/api/edit_message", server.base))
        .header("accept", "text/html")
        .header("referer", format!("{}/c/{id}?edit={first}", server.base))
        .form(&[("conversation_id", id.as_str()), ("message_id", &first.to_string()), ("content", "changed question")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 302);
    assert_eq!(response.headers()["location"], format!("/c/{id}"), "back without the editor");
    let view = client.settled_conversation(&id).await;
    assert_eq!(view["messages"][0]["content"], "changed question");
    assert!(!crate::harness::texts(&view).contains(&"second question".to_string()), "what came after is replaced");
    server.stop().await;
}
