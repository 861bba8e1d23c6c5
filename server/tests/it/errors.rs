//! Every server function's error reaches a JSON client as a stable code and a sentence in the
//! reader's language, and a plain form post's page as that sentence: never the framework's own
//! words, a Rust type name or a value the request carried.

use serde_json::Value;

use crate::harness::{refused, Client, TestServer};

const BAD_REQUEST_EN: &str = "The request is missing a field or a field has the wrong form.";
const BAD_REQUEST_DE: &str = "Der Anfrage fehlt ein Feld, oder ein Feld hat die falsche Form.";

/// Posts `form` to the function `name` as the WASM client does, in `language`.
async fn call_in(client: &Client, language: &str, name: &str, form: &[(&str, &str)]) -> (u16, Value) {
    let response = client
        .http
        .post(format!("{}/api/{name}", client.base))
        .header("accept-language", language)
        .form(form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("{name}: not JSON: {text}")))
}

#[tokio::test]
async fn malformed_arguments_get_a_code_and_a_sentence_and_nothing_of_the_framework() {
    let server = TestServer::start().await;
    let client = server.signed_in("ed").await;
    let id = client.create_conversation().await;
    let malformed: [(&str, Vec<(&str, &str)>); 6] = [
        ("send_message", vec![("conversation_id", id.as_str())]),
        ("send_message", vec![]),
        ("edit_message", vec![("conversation_id", id.as_str()), ("message_id", "one"), ("content", "x")]),
        ("start_tour", vec![("page_id", "9999999999999999999999")]),
        ("decide", vec![("conversation_id", id.as_str()), ("digest", "d")]),
        ("admin_set_password", vec![("account", "nobody::Secret<T>"), ("password", "pw")]),
    ];
    for (name, form) in &malformed {
        for (language, sentence) in [("en", BAD_REQUEST_EN), ("de-DE", BAD_REQUEST_DE)] {
            let (status, body) = call_in(&client, language, name, form).await;
            assert_eq!(status, 400, "{name} {form:?}: {body}");
            assert_eq!(body, refused("bad_request", sentence), "{name} {form:?}");
        }
    }
    // The refusals of the functions themselves come the same way.
    let (status, body) = call_in(&client, "de", "send_message", &[("conversation_id", &id), ("content", " ")]).await;
    assert_eq!(status, 422);
    assert_eq!(
        body,
        serde_json::json!({ "code": "invalid", "message": "Die Nachricht ist leer.", "reason": "ErrorEmptyMessage" })
    );
    let stranger = server.client();
    assert_eq!(
        call_in(&stranger, "de", "conversations", &[]).await,
        (401, refused("unauthenticated", "Bitte melde dich zuerst an."))
    );
    server.stop().await;
}

#[tokio::test]
async fn a_plain_form_post_with_a_malformed_argument_comes_back_to_the_page_with_the_sentence() {
    let server = TestServer::start().await;
    let client = server.signed_in("ed").await;
    let id = client.create_conversation().await;
    let page = format!("{}/c/{id}", server.base);
    let response = client
        .http
        .post(format!("{}/api/send_message", server.base))
        .header("accept", "text/html")
        .header("referer", &page)
        .form(&[("conversation_id", id.as_str())])
        .send()
        .await
        .unwrap();
    assert!(response.status().is_redirection(), "{}", response.status());
    let back = response.headers()["location"].to_str().unwrap().to_string();
    assert!(back.contains("__err="), "{back}");
    let back = if back.starts_with('/') { format!("{}{back}", server.base) } else { back };
    let html = client.http.get(&back).send().await.unwrap().text().await.unwrap();
    assert!(html.contains(BAD_REQUEST_EN), "the page says why");
    assert!(!html.contains("missing field") && !html.contains("app::"), "nothing of the framework's words");
    server.stop().await;
}
