//! An OpenAI-compatible model on loopback that answers at once from the transcript, so the
//! figures measure the server, not a model. It notes when each continuation arrives: that moment
//! is "the run continues" in the answer → continuation latency.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::oneshot;

#[derive(Clone, Default)]
pub struct Model {
    /// Tag → who waits for the continuation that carries the answer for that tag.
    waiting: Arc<Mutex<HashMap<String, oneshot::Sender<Instant>>>>,
}

impl Model {
    pub async fn start() -> (Model, String) {
        let model = Model::default();
        let app = Router::new().route("/v1/chat/completions", post(complete)).with_state(model.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
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

/// The option a conversation tagged `tag` offers first; its answer carries the tag back.
pub fn option_of(tag: &str) -> String {
    format!("yes-{tag}")
}

fn reply(message: Value) -> Json<Value> {
    Json(json!({ "choices": [{ "message": message, "finish_reason": "stop" }] }))
}

async fn complete(State(model): State<Model>, Json(request): Json<Value>) -> Json<Value> {
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
        Some("user") if content.starts_with("hold") => {
            // A turn that stays in flight, for polls of a working conversation.
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
