//! The client's streaming against recorded streams of OpenAI, Ollama, vLLM and llama.cpp's server
//! (`tests/fixtures/streams/`, each following that server's documented wire format; where each
//! comes from is in the README there), served by a local HTTP server as the real one would.

use std::sync::Mutex;

use axum::routing::post;
use axum::Router;
use runtime::{
    ChatMessage, CompletionRequest, ModelProvider, OpenAiConfig, OpenAiProvider, ProviderError, TextSink,
    ToolDefinition,
};
use serde_json::{json, Value};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/streams");

#[derive(Default)]
struct Collect(Mutex<String>);

impl TextSink for Collect {
    fn text(&self, delta: &str) {
        self.0.lock().unwrap().push_str(delta);
    }
}

/// Serves `file` once per request, with the status the manifest names.
async fn serve(file: &str, status: u16) -> String {
    let body = std::fs::read(format!("{FIXTURES}/{file}")).unwrap();
    let kind = if file.ends_with(".sse") { "text/event-stream" } else { "application/json" };
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let body = body.clone();
            async move { (axum::http::StatusCode::from_u16(status).unwrap(), [("content-type", kind)], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/v1")
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition { name: name.into(), description: String::new(), parameters: json!({"type": "object"}) }
}

fn error_matches(expected: &str, error: &ProviderError) -> bool {
    match expected {
        "server_error" => matches!(error, ProviderError::Stream(_)),
        "rate_limited" => matches!(error, ProviderError::Status { status: 429 }),
        "context_too_long" => matches!(error, ProviderError::ContextTooLong),
        "dropped" => matches!(error, ProviderError::Dropped(_)),
        "model_error" => matches!(error, ProviderError::Status { status } if (400..500).contains(status)),
        other => panic!("the manifest names an error kind this test does not know: {other}"),
    }
}

#[tokio::test]
async fn every_recorded_stream_is_read_as_its_server_meant_it() {
    let manifest: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(format!("{FIXTURES}/MANIFEST.json")).unwrap()).unwrap();
    assert!(manifest.len() >= 15, "the fixtures are all there");
    let mut failures = Vec::new();
    for entry in &manifest {
        let file = entry["file"].as_str().unwrap();
        let base_url = serve(file, entry["status"].as_u64().unwrap() as u16).await;
        let provider =
            OpenAiProvider::new(OpenAiConfig { base_url, api_key: Some("sk-fixture-key".into()), model: "m".into() })
                .unwrap();
        let request = CompletionRequest {
            messages: vec![ChatMessage::user("hello")],
            tools: vec![tool("get_weather"), tool("lookup_page")],
        };
        let sink = Collect::default();
        let outcome = provider.stream(request, &sink).await;
        let shown = sink.0.lock().unwrap().clone();
        // What the reader saw while it streamed is the text, also when the stream failed later.
        if shown != entry["content"].as_str().unwrap() {
            failures.push(format!("{file}: text shown {shown:?}, expected {}", entry["content"]));
        }
        match (outcome, entry["error"].as_str()) {
            (Ok(completion), None) => {
                if completion.content != shown {
                    failures.push(format!("{file}: completion text differs from what was shown"));
                }
                let calls: Vec<Value> = completion
                    .tool_calls
                    .iter()
                    .map(|call| json!({"id": call.id, "name": call.name, "arguments": call.arguments}))
                    .collect();
                if Value::Array(calls.clone()) != entry["tool_calls"] {
                    failures.push(format!("{file}: tool calls {calls:?}, expected {}", entry["tool_calls"]));
                }
            }
            (Err(error), Some(expected)) => {
                if !error_matches(expected, &error) {
                    failures.push(format!("{file}: error {error:?}, expected {expected}"));
                }
                if format!("{error:?} {error}").contains("sk-fixture-key") {
                    failures.push(format!("{file}: the key shows in the error"));
                }
            }
            (Ok(_), Some(expected)) => failures.push(format!("{file}: succeeded, expected {expected}")),
            (Err(error), None) => failures.push(format!("{file}: failed with {error:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn provider_at(address: std::net::SocketAddr) -> OpenAiProvider {
    OpenAiProvider::new(OpenAiConfig { base_url: format!("http://{address}/v1"), api_key: None, model: "m".into() })
        .unwrap()
}

#[tokio::test]
async fn a_connection_that_drops_mid_stream_is_an_error_not_a_short_answer() {
    // A server that sends two pieces and then closes the socket without ending the response.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0u8; 65536];
        let _ = socket.read(&mut request).await;
        let piece = |text: &str| {
            let event = format!("data: {}\n\n", json!({"choices": [{"delta": {"content": text}}]}));
            format!("{:x}\r\n{event}\r\n", event.len())
        };
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let _ = socket.write_all(format!("{head}{}{}", piece("Half "), piece("a reply")).as_bytes()).await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        // Dropped here: no last chunk, no [DONE].
    });
    let provider = provider_at(address);
    let sink = Collect::default();
    let error = provider.stream(CompletionRequest::default(), &sink).await.unwrap_err();
    assert!(matches!(error, ProviderError::Dropped(_)) && error.is_retryable(), "{error:?}");
    assert_eq!(*sink.0.lock().unwrap(), "Half a reply");
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_read_whole() {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(|| async {
            axum::Json(json!({"choices": [{"message": {"role": "assistant", "content": "All at once."}}]}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let provider = provider_at(address);
    let sink = Collect::default();
    let completion = provider.stream(CompletionRequest::default(), &sink).await.unwrap();
    assert_eq!(completion.content, "All at once.");
    assert_eq!(*sink.0.lock().unwrap(), "All at once.");
}

#[tokio::test]
async fn a_server_that_goes_silent_is_a_timeout() {
    // Accepts, reads the request, and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        drop(socket);
    });
    let config = OpenAiConfig { base_url: format!("http://{address}/v1"), api_key: None, model: "m".into() };
    let provider = OpenAiProvider::with_timeout(config, std::time::Duration::from_millis(300)).unwrap();
    let error = provider.stream(CompletionRequest::default(), &Collect::default()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Timeout) && error.is_retryable(), "{error:?}");
}
