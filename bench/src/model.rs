//! An OpenAI-compatible model on loopback that answers at once from the transcript, so the
//! figures measure the server, not a model. It notes when each continuation arrives: that moment
//! is "the run continues" in the answer → continuation latency. Asked to stream ("stream TAG N
//! PAUSE_MS"), it sends N tokens as server-sent events and notes when it wrote the first.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

#[derive(Clone, Default)]
pub struct Model {
    /// Tag → who waits for the continuation that carries the answer for that tag.
    waiting: Arc<Mutex<HashMap<String, oneshot::Sender<Instant>>>>,
    /// Tag → who waits for the moment the first token of a streamed reply was written.
    first_tokens: Arc<Mutex<HashMap<String, oneshot::Sender<Instant>>>>,
}

impl Model {
    pub async fn start() -> (Model, String) {
        let model = Model::default();
        let app = Router::new().route("/v1/chat/completions", post(complete)).with_state(model.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        // As a model server would: a streamed token goes out when it is written.
        let listener = axum::serve::ListenerExt::tap_io(listener, |stream: &mut tokio::net::TcpStream| {
            let _ = stream.set_nodelay(true);
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (model, format!("http://{address}/v1"))
    }

    /// Resolves when the model is called with the tool result that carries the option of `tag`.
    pub fn continuation_of(&self, tag: &str) -> oneshot::Receiver<Instant> {
        let (sender, receiver) = oneshot::channel();
        self.waiting.lock().unwrap().insert(tag.to_string(), sender);
        receiver
    }
}

impl Model {
    /// Resolves with the moment the first token of the reply streamed for `tag` went out.
    pub fn first_token_of(&self, tag: &str) -> oneshot::Receiver<Instant> {
        let (sender, receiver) = oneshot::channel();
        self.first_tokens.lock().unwrap().insert(tag.to_string(), sender);
        receiver
    }
}

/// `count` tokens as completion chunks, `pause` apart, then `[DONE]`.
fn streamed(model: Model, tag: String, count: usize, pause: Duration) -> Response {
    let (sender, receiver) = mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        let chunk = |text: &str| {
            Bytes::from(format!("data: {}\n\n", json!({ "choices": [{ "index": 0, "delta": { "content": text } }] })))
        };
        for index in 0..count {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            if sender.send(chunk(&format!("tok{index} "))).await.is_err() {
                return;
            }
            if index == 0 {
                if let Some(waiter) = model.first_tokens.lock().unwrap().remove(&tag) {
                    let _ = waiter.send(Instant::now());
                }
            }
        }
        let done = json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] });
        let _ = sender.send(Bytes::from(format!("data: {done}\n\ndata: [DONE]\n\n"))).await;
    });
    let body = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|bytes| (Ok::<_, Infallible>(bytes), receiver))
    });
    ([(header::CONTENT_TYPE, "text/event-stream")], Body::from_stream(body)).into_response()
}

/// The option a conversation tagged `tag` offers first; its answer carries the tag back.
pub fn option_of(tag: &str) -> String {
    format!("yes-{tag}")
}

fn reply(message: Value) -> Json<Value> {
    Json(json!({ "choices": [{ "message": message, "finish_reason": "stop" }] }))
}

async fn complete(State(model): State<Model>, Json(request): Json<Value>) -> Response {
    let last = request["messages"].as_array().and_then(|messages| messages.last()).cloned().unwrap_or(Value::Null);
    let content = last["content"].as_str().unwrap_or_default();
    if last["role"] == "user" && request["stream"] == true {
        if let Some(rest) = content.strip_prefix("stream ") {
            let mut words = rest.split_whitespace();
            let tag = words.next().unwrap_or_default().to_string();
            let count = words.next().and_then(|n| n.parse().ok()).unwrap_or(100);
            let pause = Duration::from_millis(words.next().and_then(|n| n.parse().ok()).unwrap_or(0));
            return streamed(model, tag, count, pause);
        }
    }
    answer(model, request).await.into_response()
}

async fn answer(model: Model, request: Value) -> Json<Value> {
    let at = Instant::now();
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    let content = last["content"].as_str().unwrap_or_default().to_string();
    match last["role"].as_str() {
        Some("tool") => {
            if let Some(tag) =
                content.split("yes-").nth(1).map(|rest| rest.split('"').next().unwrap_or(rest).to_string())
            {
                if let Some(waiter) = model.waiting.lock().unwrap().remove(&tag) {
                    let _ = waiter.send(at);
                }
            }
            reply(json!({ "role": "assistant", "content": format!("Thanks, noted: {content}") }))
        }
        // A turn that stays in flight, for polls of a working conversation; held wherever the
        // line is, since the history the polls read may be written before the worker takes the
        // turn (a worker in another process), and the model then sees it after the line.
        _ if messages.iter().any(|message| {
            message["role"] == "user" && message["content"].as_str().is_some_and(|text| text.starts_with("hold"))
        }) =>
        {
            std::future::pending::<()>().await;
            unreachable!()
        }
        Some("user") if content.starts_with("ask ") => {
            let tag = content.trim_start_matches("ask ").trim();
            let arguments = json!({ "question": format!("Go ahead with {tag}?"), "options": [option_of(tag), format!("no-{tag}")] });
            reply(json!({
                "role": "assistant", "content": null,
                "tool_calls": [{ "id": "call_1", "type": "function",
                                 "function": { "name": "ask_choice", "arguments": arguments.to_string() } }]
            }))
        }
        _ => reply(json!({ "role": "assistant", "content": format!("You said: {content}") })),
    }
}
