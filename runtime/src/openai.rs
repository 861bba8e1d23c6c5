//! A client for OpenAI-compatible chat completions with tool calling (OpenAI, Ollama, vLLM,
//! llama.cpp, LM Studio, OpenRouter). The only module that speaks HTTP.
//!
//! The API key never appears in `Debug` output, errors or logs: it lives in the config behind a
//! redacting `Debug`, and goes out only as a header marked sensitive.

mod stream;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::header::{HeaderValue, AUTHORIZATION};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::message::{ChatMessage, Role, ToolCall};
use crate::provider::{Completion, CompletionRequest, ModelProvider, ProviderError, TextSink};
use stream::{mentions_context_length, Assembler, Fed};

pub const ENV_BASE_URL: &str = "TOURGUIDE_OPENAI_BASE_URL";
pub const ENV_API_KEY: &str = "TOURGUIDE_OPENAI_API_KEY";
pub const ENV_MODEL: &str = "TOURGUIDE_OPENAI_MODEL";
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// How long the server may stay silent: before the first byte of an answer, or between two
/// pieces of a stream. A long reply that keeps streaming is never cut off.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// An error body is read for its kind only; a server that sends megabytes is not read further.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Up to and including the version segment, e.g. `http://localhost:11434/v1`.
    pub base_url: String,
    /// Local servers usually need none.
    pub api_key: Option<String>,
    pub model: String,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenAiConfigError {
    #[error("{ENV_MODEL} must name the model when an OpenAI-compatible provider is configured")]
    MissingModel,
    #[error("the base URL must start with http:// or https://")]
    InvalidBaseUrl,
    #[error("the API key cannot be sent as an HTTP header")]
    InvalidApiKey,
    #[error("the HTTP client could not be built")]
    Client,
}

impl OpenAiConfig {
    /// Reads the three settings through `lookup` (the environment, or a map in tests). Nothing set
    /// means "not configured" (`Ok(None)`), so the caller can fall back to the demo model; blank
    /// values count as unset.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, OpenAiConfigError> {
        let read = |name: &str| lookup(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let (base_url, api_key, model) = (read(ENV_BASE_URL), read(ENV_API_KEY), read(ENV_MODEL));
        if base_url.is_none() && api_key.is_none() && model.is_none() {
            return Ok(None);
        }
        let model = model.ok_or(OpenAiConfigError::MissingModel)?;
        let base_url = base_url.unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
        Ok(Some(OpenAiConfig { base_url, api_key, model }))
    }

    fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

pub struct OpenAiProvider {
    config: OpenAiConfig,
    authorization: Option<HeaderValue>,
    client: reqwest::Client,
}

impl std::fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Result<Self, OpenAiConfigError> {
        Self::with_timeout(config, DEFAULT_TIMEOUT)
    }

    pub fn with_timeout(config: OpenAiConfig, timeout: Duration) -> Result<Self, OpenAiConfigError> {
        let lower = config.base_url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return Err(OpenAiConfigError::InvalidBaseUrl);
        }
        let authorization = match &config.api_key {
            Some(key) => {
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| OpenAiConfigError::InvalidApiKey)?;
                // Keeps the value out of reqwest's and hyper's debug output.
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .read_timeout(timeout)
            .build()
            .map_err(|_| OpenAiConfigError::Client)?;
        Ok(OpenAiProvider { config, authorization, client })
    }

    /// `Ok(None)` when the environment configures no provider.
    pub fn from_env() -> Result<Option<Self>, OpenAiConfigError> {
        match OpenAiConfig::from_lookup(|name| std::env::var(name).ok())? {
            Some(config) => Self::new(config).map(Some),
            None => Ok(None),
        }
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn body(&self, request: &CompletionRequest, names: &WireNames) -> Value {
        let messages: Vec<Value> = request.messages.iter().map(|message| wire_message(message, names)).collect();
        let mut body = json!({ "model": self.config.model, "messages": messages });
        // Several servers reject an empty `tools` array; a plain completion sends none.
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function",
                        "function": { "name": names.wire(&tool.name), "description": tool.description, "parameters": tool.parameters }
                    })
                })
                .collect();
            body["tools"] = Value::Array(tools);
        }
        body
    }
}

fn role(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

fn wire_message(message: &ChatMessage, names: &WireNames) -> Value {
    match message.role {
        Role::Assistant if !message.tool_calls.is_empty() => {
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": { "name": names.wire(&call.name), "arguments": wire_arguments(&call.arguments) }
                    })
                })
                .collect();
            let content = if message.content.is_empty() { Value::Null } else { Value::String(message.content.clone()) };
            json!({ "role": "assistant", "content": content, "tool_calls": calls })
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.clone().unwrap_or_default(),
            "content": message.content,
        }),
        other => json!({ "role": role(other), "content": message.content }),
    }
}

/// The protocol sends arguments as a JSON string. Arguments that arrived unparseable are kept as
/// that raw string and sent back unchanged.
fn wire_arguments(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Models do send broken JSON now and then; the raw string then reaches the tool, which rejects
/// it with a message the model can act on, instead of failing the whole run.
fn parse_arguments(arguments: Option<Value>) -> Value {
    match arguments {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(raw)) if raw.trim().is_empty() => json!({}),
        Some(Value::String(raw)) => serde_json::from_str(&raw).unwrap_or(Value::String(raw)),
        // Some servers (Ollama) send the object itself.
        Some(other) => other,
    }
}

fn parse_completion(bytes: &[u8], names: &WireNames) -> Result<Completion, ProviderError> {
    let response: WireResponse =
        serde_json::from_slice(bytes).map_err(|e| ProviderError::Malformed(format!("not a chat completion: {e}")))?;
    let choice = response
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| ProviderError::Malformed("no choices in the answer".into()))?;
    let tool_calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(index, call)| ToolCall {
            id: call.id.filter(|id| !id.is_empty()).unwrap_or_else(|| format!("call_{index}")),
            name: names.ours(call.function.name),
            arguments: parse_arguments(call.function.arguments),
        })
        .collect();
    Ok(Completion { content: choice.message.content.unwrap_or_default(), tool_calls })
}

#[async_trait]
impl ModelProvider for OpenAiProvider {
    fn label(&self) -> String {
        self.config.model.clone()
    }

    fn is_demo(&self) -> bool {
        false
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, ProviderError> {
        let names = WireNames::of(&request);
        let response = self.send(&self.body(&request, &names)).await?;
        let bytes = response.bytes().await.map_err(transport)?;
        parse_completion(&bytes, &names)
    }

    async fn stream(&self, request: CompletionRequest, sink: &dyn TextSink) -> Result<Completion, ProviderError> {
        let names = WireNames::of(&request);
        let mut body = self.body(&request, &names);
        body["stream"] = Value::Bool(true);
        let response = self.send(&body).await?;
        let streamed = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if !streamed {
            // A server that ignores `stream: true` answers with one completion: take it whole.
            let bytes = response.bytes().await.map_err(transport)?;
            let completion = parse_completion(&bytes, &names)?;
            if !completion.content.is_empty() {
                sink.text(&completion.content);
            }
            return Ok(completion);
        }
        let mut events = response.bytes_stream().eventsource();
        let mut assembler = Assembler::default();
        let mut done = false;
        while let Some(event) = events.next().await {
            let event = event.map_err(|error| match error {
                eventsource_stream::EventStreamError::Transport(error) => match transport(error) {
                    ProviderError::Connection(text) => ProviderError::Dropped(text),
                    other => other,
                },
                other => ProviderError::Malformed(other.to_string()),
            })?;
            if assembler.feed(&event.data, sink)? == Fed::Done {
                done = true;
                break;
            }
        }
        assembler.finish(done, &names)
    }
}

impl OpenAiProvider {
    /// Posts `body`; an answer other than 2xx becomes the error its status and body describe.
    async fn send(&self, body: &Value) -> Result<reqwest::Response, ProviderError> {
        let mut http = self.client.post(self.config.endpoint()).json(body);
        if let Some(authorization) = &self.authorization {
            http = http.header(AUTHORIZATION, authorization.clone());
        }
        let response = http.send().await.map_err(transport)?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = error_body(response).await;
        if mentions_context_length(&body) {
            return Err(ProviderError::ContextTooLong);
        }
        Err(ProviderError::Status { status: status.as_u16() })
    }
}

/// Without the URL: a base URL may carry credentials of its own (user:pass@host).
fn transport(error: reqwest::Error) -> ProviderError {
    if error.is_timeout() {
        ProviderError::Timeout
    } else {
        ProviderError::Connection(error.without_url().to_string())
    }
}

async fn error_body(mut response: reqwest::Response) -> String {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= ERROR_BODY_LIMIT {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// Function names as the API takes them: letters, digits, `_` and `-`, at most 64. Ours may hold
/// other characters (an MCP tool is `server.tool`), so each is given a name of that kind for the
/// request, and a call the model makes is mapped back. The same name always gets the same wire
/// name, so the calls of earlier turns keep theirs.
struct WireNames {
    to_wire: HashMap<String, String>,
    from_wire: HashMap<String, String>,
}

const WIRE_NAME_LIMIT: usize = 64;

impl WireNames {
    fn of(request: &CompletionRequest) -> WireNames {
        let mut names = WireNames { to_wire: HashMap::new(), from_wire: HashMap::new() };
        let offered = request.tools.iter().map(|tool| tool.name.as_str());
        let called =
            request.messages.iter().flat_map(|message| message.tool_calls.iter().map(|call| call.name.as_str()));
        for name in offered.chain(called) {
            if names.to_wire.contains_key(name) {
                continue;
            }
            let mut wire = plain_wire_name(name);
            if names.from_wire.contains_key(&wire) {
                wire = hashed_wire_name(name);
            }
            names.from_wire.insert(wire.clone(), name.to_string());
            names.to_wire.insert(name.to_string(), wire);
        }
        names
    }

    fn wire(&self, name: &str) -> String {
        self.to_wire.get(name).cloned().unwrap_or_else(|| plain_wire_name(name))
    }

    /// A name the model sent that we did not offer stays as it is: the runtime tells the model
    /// there is no such tool.
    fn ours(&self, wire: String) -> String {
        self.from_wire.get(&wire).cloned().unwrap_or(wire)
    }
}

fn plain_wire_name(name: &str) -> String {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !name.is_empty() && name.len() <= WIRE_NAME_LIMIT && name.chars().all(valid) {
        return name.to_string();
    }
    // `server.tool` reads as `server__tool`: still clear to the model.
    let wire: String = name.replace('.', "__").chars().map(|c| if valid(c) { c } else { '_' }).collect();
    if wire.is_empty() || wire.len() > WIRE_NAME_LIMIT {
        return hashed_wire_name(name);
    }
    wire
}

/// A shortened name with a digest of the whole, for names too long or taken.
fn hashed_wire_name(name: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(name.as_bytes());
    let suffix: String = digest.iter().take(4).map(|byte| format!("{byte:02x}")).collect();
    let head: String = name
        .replace('.', "__")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .take(WIRE_NAME_LIMIT - suffix.len() - 1)
        .collect();
    format!("{head}_{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn nothing_configured_is_none_and_model_is_required() {
        assert_eq!(OpenAiConfig::from_lookup(lookup(&[])), Ok(None));
        assert_eq!(OpenAiConfig::from_lookup(lookup(&[(ENV_API_KEY, "k")])), Err(OpenAiConfigError::MissingModel));
        let config = OpenAiConfig::from_lookup(lookup(&[(ENV_MODEL, "gpt"), (ENV_API_KEY, " ")])).unwrap().unwrap();
        assert_eq!(config.base_url, DEFAULT_BASE_URL);
        assert_eq!(config.api_key, None);
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let config = OpenAiConfig {
            base_url: "http://127.0.0.1:1/v1".into(),
            api_key: Some("sk-secret-value".into()),
            model: "m".into(),
        };
        assert!(!format!("{config:?}").contains("sk-secret-value"));
        let provider = OpenAiProvider::new(config).unwrap();
        assert!(!format!("{provider:?}").contains("sk-secret-value"));
    }

    #[test]
    fn refuses_a_base_url_without_scheme() {
        let config = OpenAiConfig { base_url: "localhost:11434".into(), api_key: None, model: "m".into() };
        assert!(matches!(OpenAiProvider::new(config), Err(OpenAiConfigError::InvalidBaseUrl)));
    }

    #[test]
    fn tool_names_are_sent_as_the_api_takes_them_and_mapped_back() {
        let tool = |name: &str| crate::provider::ToolDefinition {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        };
        let long = format!("files.{}", "x".repeat(80));
        let request = CompletionRequest {
            messages: vec![],
            tools: vec![tool("ask_choice"), tool("files.write_file"), tool("files__write_file"), tool(&long)],
        };
        let names = WireNames::of(&request);
        assert_eq!(names.wire("ask_choice"), "ask_choice");
        assert_eq!(names.wire("files.write_file"), "files__write_file");
        // Taken by a tool of that very name: the second gets a digest.
        let second = names.wire("files__write_file");
        assert_ne!(second, "files__write_file");
        assert!(second.starts_with("files__write_file_"), "{second}");
        let shortened = names.wire(&long);
        assert!(shortened.len() <= 64 && shortened.starts_with("files__xxx"), "{shortened}");
        for name in ["ask_choice", "files.write_file", "files__write_file", long.as_str()] {
            assert_eq!(names.ours(names.wire(name)), name);
            let wire = names.wire(name);
            assert!(wire.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{wire}");
        }
        assert_eq!(names.ours("unknown".into()), "unknown");
        let reply = json!({"choices": [{"message": {"tool_calls": [{"id": "c1", "function": {"name": "files__write_file", "arguments": "{}"}}]}}]});
        let completion = parse_completion(reply.to_string().as_bytes(), &names).unwrap();
        assert_eq!(completion.tool_calls[0].name, "files.write_file");
    }

    #[test]
    fn arguments_parse_leniently() {
        assert_eq!(parse_arguments(Some(json!("{\"a\":1}"))), json!({"a": 1}));
        assert_eq!(parse_arguments(Some(json!(""))), json!({}));
        assert_eq!(parse_arguments(Some(json!({"a": 1}))), json!({"a": 1}));
        assert_eq!(parse_arguments(Some(json!("{broken"))), json!("{broken"));
        assert_eq!(wire_arguments(&json!("{broken")), "{broken");
    }
}
