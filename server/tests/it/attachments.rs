//! Attachments: a file goes with the reader's next message, its text reaches the model, the file
//! is listed in the transcript and can be downloaded by its owner only, and goes with its
//! conversation. A bad file gets a clear sentence and changes nothing.

use reqwest::multipart::{Form, Part};
use serde_json::Value;

use crate::harness::{texts, Client, TestServer};
use crate::scripted::{services, Effects};

async fn server() -> TestServer {
    TestServer::start_services(tempfile::tempdir().unwrap(), services(&Effects::default())).await
}

/// Posts `form` to the conversation's attachments with one extra header.
async fn post(server: &TestServer, client: &Client, id: &str, form: Form, header: (&str, &str)) -> reqwest::Response {
    let url = format!("{}/ai-chat/conversations/{id}/attachments", server.base);
    client.http.post(url).header(header.0, header.1).multipart(form).send().await.unwrap()
}

/// Uploads as a script does (asking for JSON).
async fn attach(server: &TestServer, client: &Client, id: &str, name: &str, bytes: Vec<u8>) -> (u16, Value) {
    let form = Form::new().part("file", Part::bytes(bytes).file_name(name.to_string()));
    let response = post(server, client, id, form, ("accept", "application/json")).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn count(server: &TestServer) -> i64 {
    db::on!(server.store().db(), pool => sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM attachments").fetch_one(pool).await)
        .unwrap()
}

#[tokio::test]
async fn an_attached_file_goes_with_the_next_message_and_its_text_reaches_the_model() {
    let server = server().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let (status, body) = attach(&server, &client, &id, "notes.md", b"# Plan\nShip on Friday.".to_vec()).await;
    assert_eq!(status, 201, "{body}");
    let (_, before) = client.conversation(&id).await;
    assert_eq!(before["pending_attachments"][0]["file_name"], "notes.md");
    assert_eq!(before["pending_attachments"][0]["kind"], "markdown");
    assert_eq!(before["attachment_limit_mib"], 10);

    let (status, _) = client.call_json("send_message", &[("conversation_id", &id), ("content", "summarise")]).await;
    assert_eq!(status, 200);
    let settled = client.settled_conversation(&id).await;
    // The scripted model echoes what it was given: the message, then the file, named.
    let reply = server.transcript(&id).await[1].clone();
    assert!(
        reply.starts_with("Echo: summarise\n\n[Attached file: notes.md (markdown)]\n# Plan\nShip on Friday."),
        "{reply}"
    );
    assert_eq!(texts(&settled)[0], "summarise", "the transcript shows the message as written");
    assert_eq!(settled["messages"][0]["attachments"][0]["file_name"], "notes.md");
    assert_eq!(settled["pending_attachments"], serde_json::json!([]));

    // The owner downloads the file as it was uploaded; nobody else can.
    let file_id = settled["messages"][0]["attachments"][0]["id"].as_i64().unwrap();
    let url = format!("{}/ai-chat/attachments/{file_id}", server.base);
    let response = client.http.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-disposition"].to_str().unwrap().starts_with("attachment;"));
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    assert_eq!(response.bytes().await.unwrap().as_ref(), b"# Plan\nShip on Friday.");
    let intruder = server.signed_in("mallory").await;
    assert_eq!(intruder.http.get(&url).send().await.unwrap().status(), 404);
    assert_eq!(server.client().http.get(&url).send().await.unwrap().status(), 401);

    // Edited, the message keeps its file; deleted, the conversation takes it along.
    let message_id = settled["messages"][0]["id"].as_i64().unwrap().to_string();
    let (status, _) = client
        .call_json("edit_message", &[("conversation_id", &id), ("message_id", &message_id), ("content", "in short")])
        .await;
    assert_eq!(status, 200);
    let edited = client.settled_conversation(&id).await;
    assert!(server.transcript(&id).await[1].contains("Ship on Friday."), "{edited}");
    assert_eq!(count(&server).await, 1);
    let (status, _) = client.call_json("delete_conversation", &[("conversation_id", &id)]).await;
    assert!(status < 400);
    assert_eq!(count(&server).await, 0);
    server.stop().await;
}

#[tokio::test]
async fn a_bad_file_gets_a_clear_sentence_and_changes_nothing() {
    let server = server().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let over = vec![b'a'; 10 * 1024 * 1024 + 1];
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        ("report.pdf", b"just text, not a PDF".to_vec(), 422, "does not match its name"),
        ("archive.zip", b"PK\x03\x04".to_vec(), 422, "Only PDF, DOCX, XLSX"),
        ("empty.txt", Vec::new(), 422, "empty"),
        ("binary.txt", vec![0, 159, 146, 150, 0, 1], 422, "does not match its name"),
        ("big.txt", over, 422, "larger than the limit"),
    ];
    for (name, bytes, expected, sentence) in cases {
        let (status, body) = attach(&server, &client, &id, name, bytes).await;
        assert_eq!(status, expected, "{name}: {body}");
        assert!(body["error"].as_str().unwrap_or_default().contains(sentence), "{name}: {body}");
    }
    // No file at all.
    let form = Form::new().text("note", "no file here");
    assert_eq!(post(&server, &client, &id, form, ("accept", "application/json")).await.status(), 422);
    // Someone else's conversation, and no one signed in.
    let intruder = server.signed_in("mallory").await;
    assert_eq!(attach(&server, &intruder, &id, "a.txt", b"hi".to_vec()).await.0, 404);
    assert_eq!(attach(&server, &server.client(), &id, "a.txt", b"hi".to_vec()).await.0, 401);
    assert_eq!(count(&server).await, 0, "nothing was stored");

    // The page's plain form gets the sentence on a page with the way back, in German for a German reader.
    let form = Form::new().part("file", Part::bytes(b"x".to_vec()).file_name("x.exe"));
    let response = post(&server, &client, &id, form, ("accept-language", "de")).await;
    assert_eq!(response.status(), 422);
    let page = response.text().await.unwrap();
    assert!(page.contains(&format!("href=\"/c/{id}\"")), "{page}");
    assert!(page.contains("Zurück zum Chat"), "{page}");
    // The way back is built from the address: markup in it is written as text.
    let form = Form::new().part("file", Part::bytes(b"x".to_vec()).file_name("x.txt"));
    let response = post(&server, &client, "%22%3E%3Cb%3Ex", form, ("accept-language", "en")).await;
    assert_eq!(response.status(), 404);
    let page = response.text().await.unwrap();
    assert!(page.contains("href=\"/c/&quot;&gt;&lt;b&gt;x\""), "{page}");
    assert!(!page.contains("<b>"), "{page}");
    server.stop().await;
}

#[tokio::test]
async fn a_pending_file_can_be_taken_back_and_at_most_five_wait() {
    let server = server().await;
    let client = server.signed_in("demo").await;
    let id = client.create_conversation().await;
    let mut ids = Vec::new();
    for n in 0..5 {
        let (status, body) = attach(&server, &client, &id, &format!("{n}.txt"), b"text".to_vec()).await;
        assert_eq!(status, 201, "{body}");
        ids.push(body["id"].as_i64().unwrap().to_string());
    }
    let (status, body) = attach(&server, &client, &id, "6.txt", b"text".to_vec()).await;
    assert_eq!(status, 422, "{body}");
    let intruder = server.signed_in("mallory").await;
    let (status, _) =
        intruder.call_json("remove_attachment", &[("conversation_id", &id), ("attachment_id", &ids[0])]).await;
    assert_eq!(status, 404);
    let (status, _) =
        client.call_json("remove_attachment", &[("conversation_id", &id), ("attachment_id", &ids[0])]).await;
    assert_eq!(status, 200);
    let (_, view) = client.conversation(&id).await;
    assert_eq!(view["pending_attachments"].as_array().unwrap().len(), 4);
    assert_eq!(count(&server).await, 4);
    server.stop().await;
}
