//! The OpenAI-compatible client against a local server speaking chat completions.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::Router;
use runtime::{
    ChatMessage, CompletionRequest, ModelProvider, OpenAiConfig, OpenAiProvider, ProviderError, RunStatus,
    ToolDefinition,
};
use serde_json::{json, Value};

use crate::support::*;

#[derive(Default)]
struct Fake {
    replies: Mutex<VecDeque<(u16, String)>>,
    seen: Mutex<Vec<(Option<String>, Value)>>,
}

async fn completions(State(fake): State<Arc<Fake>>, headers: HeaderMap, body: String) -> impl IntoResponse {
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    let parsed: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    fake.seen.lock().unwrap().push((authorization, parsed));
    let (status, reply) = fake.replies.lock().unwrap().pop_front().unwrap_or((500, "{}".into()));
    (StatusCode::from_u16(status).unwrap(), [("content-type", "application/json")], reply)
}

/// Serves `/v1/chat/completions` on 127.0.0.1 with an OS-chosen port; returns the base URL.
async fn serve(replies: Vec<(u16, String)>) -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake { replies: Mutex::new(replies.into()), ..Default::default() });
    let app = Router::new().route("/v1/chat/completions", post(completions)).with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}/v1"), fake)
}

fn provider(base_url: &str, api_key: Option<&str>) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig {
        base_url: base_url.into(),
        api_key: api_key.map(str::to_string),
        model: "test-model".into(),
    })
    .unwrap()
}

fn tool_call_reply() -> String {
    json!({
        "id": "chatcmpl-1",
        "choices": [{
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_abc",
                    "type": "function",
                    "function": {"name": "read_page", "arguments": "{\"page\":\"home\"}"}
                }]
            }
        }]
    })
    .to_string()
}

fn text_reply(content: &str) -> String {
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}).to_string()
}

fn read_tool() -> ToolDefinition {
    ToolDefinition {
        name: "read_page".into(),
        description: "Reads a page.".into(),
        parameters: json!({"type": "object", "properties": {"page": {"type": "string"}}}),
    }
}

#[tokio::test]
async fn sends_model_messages_tools_and_key_and_parses_tool_calls() {
    let (base, fake) = serve(vec![(200, tool_call_reply())]).await;
    let client = provider(&base, Some("sk-test-123"));
    let request = CompletionRequest {
        messages: vec![
            ChatMessage::system("Be brief."),
            ChatMessage::user("Read home."),
            ChatMessage::assistant_with_tool_calls("", vec![call("call_0", "read_page", json!({"page": "about"}))]),
            ChatMessage::tool_result("call_0", "About text"),
        ],
        tools: vec![read_tool()],
    };
    let completion = client.complete(request).await.unwrap();
    assert_eq!(completion.content, "");
    assert_eq!(completion.tool_calls, [call("call_abc", "read_page", json!({"page": "home"}))]);

    let seen = fake.seen.lock().unwrap();
    let (authorization, body) = &seen[0];
    assert_eq!(authorization.as_deref(), Some("Bearer sk-test-123"));
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["messages"][0], json!({"role": "system", "content": "Be brief."}));
    assert_eq!(body["messages"][1], json!({"role": "user", "content": "Read home."}));
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "read_page", "arguments": "{\"page\":\"about\"}"}}
        ]})
    );
    assert_eq!(body["messages"][3], json!({"role": "tool", "tool_call_id": "call_0", "content": "About text"}));
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "read_page", "description": "Reads a page.",
            "parameters": {"type": "object", "properties": {"page": {"type": "string"}}}
        }}])
    );
}

#[tokio::test]
async fn without_key_or_tools_sends_neither() {
    let (base, fake) = serve(vec![(200, text_reply("Hi."))]).await;
    let completion = provider(&format!("{base}/"), None)
        .complete(CompletionRequest { messages: vec![ChatMessage::user("Hello")], tools: Vec::new() })
        .await
        .unwrap();
    assert_eq!(completion.content, "Hi.");
    assert!(completion.tool_calls.is_empty());
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen[0].0, None);
    assert!(seen[0].1.get("tools").is_none(), "an empty tools array is not sent");
}

#[tokio::test]
async fn server_errors_are_retryable_and_malformed_answers_are_not() {
    let replies = vec![
        (500, "oops".to_string()),
        (429, "{}".into()),
        (400, "{}".into()),
        (200, "not json".into()),
        (200, "{\"choices\": []}".into()),
    ];
    let (base, _fake) = serve(replies).await;
    let client = provider(&base, Some("sk-secret-key"));
    let ask = || CompletionRequest { messages: vec![ChatMessage::user("x")], tools: Vec::new() };

    let error = client.complete(ask()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Status { status: 500 }) && error.is_retryable(), "{error:?}");
    let error = client.complete(ask()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Status { status: 429 }) && error.is_retryable(), "{error:?}");
    let error = client.complete(ask()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Status { status: 400 }) && !error.is_retryable(), "{error:?}");
    for _ in 0..2 {
        let error = client.complete(ask()).await.unwrap_err();
        assert!(matches!(error, ProviderError::Malformed(_)) && !error.is_retryable(), "{error:?}");
        assert!(!format!("{error} {error:?}").contains("sk-secret-key"));
    }
}

#[tokio::test]
async fn an_unreachable_server_is_a_retryable_connection_error_without_the_key() {
    // Bind and drop to get a port nobody listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let error = provider(&format!("http://{address}/v1"), Some("sk-secret-key"))
        .complete(CompletionRequest { messages: vec![ChatMessage::user("x")], tools: Vec::new() })
        .await
        .unwrap_err();
    assert!(matches!(error, ProviderError::Connection(_)) && error.is_retryable(), "{error:?}");
    assert!(!format!("{error} {error:?}").contains("sk-secret-key"));
}

#[tokio::test]
async fn a_run_drives_the_tool_loop_through_the_client() {
    let (base, fake) = serve(vec![(200, tool_call_reply()), (200, text_reply("Home says hello."))]).await;
    let read = TestTool::read("read_page").arc();
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(&test_location(dir.path()).await).await;
    let runtime =
        runtime::Runtime::new(db, registry(vec![read.clone()]), Arc::new(provider(&base, None)), fast_settings());
    let result = runtime.run(request()).await.unwrap();
    assert_eq!(answer(&result), "Home says hello.");
    assert_eq!(read.arguments(), [json!({"page": "home"})]);
    let second = fake.seen.lock().unwrap()[1].1["messages"].clone();
    let last = &second[second.as_array().unwrap().len() - 1];
    assert_eq!(*last, json!({"role": "tool", "tool_call_id": "call_abc", "content": "read_page done"}));
    let view = runtime.status(&OWNER, result.run_id).await.unwrap().unwrap();
    assert_eq!(view.status, RunStatus::Completed);
}
