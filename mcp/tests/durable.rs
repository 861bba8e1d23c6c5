//! The newer form of a server's question (SEP-2322): the call's result asks (`input_required`
//! with an opaque `requestState`), and the answer goes back with a new call. Nothing of it lives
//! on a connection, so a question survives the process that asked it: here a hub is dropped
//! while the question waits and a new one, on new connections, brings the answer.
//!
//! The server is a small stateless one written with rmcp's server role, over streamable HTTP on
//! 127.0.0.1 (no published server asks this way yet).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcp::{McpConfig, McpHub, ServerState};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams,
    InputRequest, InputRequests, InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use runtime::{Actor, InputReply, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};
use tokio::sync::watch;

#[derive(Clone, Default)]
struct Greeter {
    calls: Arc<AtomicUsize>,
    /// Set by `unlock`: `bonus` is listed from then on.
    unlocked: Arc<std::sync::atomic::AtomicBool>,
}

fn object(value: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(value.as_object().cloned().unwrap())
}

impl ServerHandler for Greeter {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.protocol_version = ProtocolVersion::V_2026_07_28;
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = object(json!({ "type": "object", "properties": { "greeting": { "type": "string" } } }));
        let tool = Tool::new("greet", "Greets someone after asking their name", schema)
            .annotate(ToolAnnotations::new().read_only(true));
        let stall = Tool::new("stall", "Never answers", object(json!({ "type": "object" })))
            .annotate(ToolAnnotations::new().read_only(true));
        let unlock = Tool::new("unlock", "Adds a tool", object(json!({ "type": "object" })))
            .annotate(ToolAnnotations::new().read_only(true));
        let mut tools = vec![tool, stall, unlock];
        if self.unlocked.load(Ordering::SeqCst) {
            tools.push(Tool::new("bonus", "Came later", object(json!({ "type": "object" }))));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if request.name == "unlock" {
            self.unlocked.store(true, Ordering::SeqCst);
            // Said on the connection of this call, not on the one that listed the tools.
            let _ = context.peer.notify_tool_list_changed().await;
            return Ok(CallToolResult::success(vec![ContentBlock::text("unlocked")]).into());
        }
        if request.name == "stall" {
            std::future::pending::<()>().await;
        }
        let greeting =
            request.arguments.as_ref().and_then(|arguments| arguments.get("greeting")?.as_str()).unwrap_or("Hi");
        match (request.request_state.as_deref(), request.input_responses.as_ref()) {
            (None, _) => {
                let schema = serde_json::from_value(json!({
                    "type": "object",
                    "properties": { "name": { "type": "string", "title": "Your name" } },
                    "required": ["name"]
                }))
                .unwrap();
                let mut requests = InputRequests::new();
                requests.insert(
                    "who".to_string(),
                    InputRequest::Elicitation(ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
                        meta: None,
                        message: "Who is there?".into(),
                        requested_schema: schema,
                    })),
                );
                // Stateless: what the server needs again travels in the state.
                Ok(InputRequiredResult::new(Some(requests), Some(format!("asked:{greeting}"))).into())
            }
            (Some(state), Some(responses)) => {
                let echoed =
                    state.strip_prefix("asked:").ok_or_else(|| ErrorData::invalid_params("bad state", None))?;
                let answer = &responses.get("who").ok_or_else(|| ErrorData::invalid_params("no answer", None))?;
                let text = match answer["action"].as_str() {
                    Some("accept") => format!("{echoed}, {}!", answer["content"]["name"].as_str().unwrap_or("?")),
                    other => format!("no name ({})", other.unwrap_or("?")),
                };
                Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
            }
            (Some(_), None) => Err(ErrorData::invalid_params("the state came back without answers", None)),
        }
    }
}

async fn serve(greeter: Greeter) -> String {
    let service = StreamableHttpService::new(
        move || Ok(greeter.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/mcp")
}

async fn hub(url: &str) -> (McpHub, watch::Sender<bool>) {
    let config = json!({ "mcpServers": { "greeter": { "url": url } }, "callTimeoutSeconds": 1 });
    let config = McpConfig::parse(&config.to_string()).unwrap();
    let (shutdown, stopped) = watch::channel(false);
    let hub = McpHub::start(config, &ToolRegistry::new(), stopped);
    hub.settled(Duration::from_secs(20)).await;
    assert_eq!(hub.servers()[0].state, ServerState::Ready, "{:?}", hub.servers());
    (hub, shutdown)
}

fn context() -> ToolContext {
    ToolContext::new(uuid::Uuid::nil(), Actor::user(1), 1)
}

#[tokio::test]
async fn a_question_in_the_calls_result_is_answered_by_a_later_process() {
    let greeter = Greeter::default();
    let url = serve(greeter.clone()).await;

    let (first, shutdown) = hub(&url).await;
    let tool = first.source().get("greeter.greet").expect("listed");
    assert_eq!(tool.spec.effect, runtime::ToolEffect::ReadOnly);
    let arguments = json!({ "greeting": "Good evening" });
    let ToolOutput::Ask { schema, state } = tool.tool.call(arguments.clone(), &context()).await.unwrap() else {
        panic!("the server asks");
    };
    assert_eq!(schema["title"], "Who is there?");
    assert_eq!(schema["properties"]["name"]["title"], "Your name");
    assert!(state.get("live").is_none(), "nothing waits on a connection: {state}");
    assert_eq!(tool.tool.expired(&state), None, "it never expires");
    // The pause is stored as JSON; it comes back as JSON.
    let stored = serde_json::to_string(&state).unwrap();
    drop(tool);
    let _ = shutdown.send(true);
    drop(first);

    let (second, _shutdown) = hub(&url).await;
    let tool = second.source().get("greeter.greet").expect("listed");
    let state: Value = serde_json::from_str(&stored).unwrap();
    let reply = InputReply::Answer(json!({ "name": "Ada" }).as_object().cloned().unwrap());
    let done = tool.tool.resume(arguments, state, reply, &context()).await.unwrap();
    assert_eq!(done, ToolOutput::Done("Good evening, Ada!".to_string()));
    assert_eq!(greeter.calls.load(Ordering::SeqCst), 2, "one call asked, one answered");
}

#[tokio::test]
async fn declining_a_question_in_the_calls_result_goes_back_as_decline() {
    let url = serve(Greeter::default()).await;
    let (hub, _shutdown) = hub(&url).await;
    let tool = hub.source().get("greeter.greet").unwrap();
    let ToolOutput::Ask { state, .. } = tool.tool.call(json!({}), &context()).await.unwrap() else { panic!() };
    let done = tool.tool.resume(json!({}), state, InputReply::Decline, &context()).await.unwrap();
    assert_eq!(done, ToolOutput::Done("no name (decline)".to_string()));
}

#[tokio::test]
async fn a_call_the_server_never_answers_fails_after_the_time_limit() {
    let url = serve(Greeter::default()).await;
    let (hub, _shutdown) = hub(&url).await;
    let tool = hub.source().get("greeter.stall").unwrap();
    let error = tool.tool.call(json!({}), &context()).await.unwrap_err();
    assert!(error.to_string().contains("did not answer within 1 s"), "{error}");
    // The next call gets a connection of its own and works.
    let greet = hub.source().get("greeter.greet").unwrap();
    assert!(matches!(greet.tool.call(json!({}), &context()).await, Ok(ToolOutput::Ask { .. })));
}

#[tokio::test]
async fn tools_are_listed_again_when_the_server_says_they_changed() {
    let url = serve(Greeter::default()).await;
    let (hub, _shutdown) = hub(&url).await;
    assert!(hub.source().get("greeter.bonus").is_none());
    let unlock = hub.source().get("greeter.unlock").unwrap();
    assert_eq!(unlock.tool.call(json!({}), &context()).await.unwrap(), ToolOutput::Done("unlocked".into()));
    for _ in 0..100 {
        if let Some(bonus) = hub.source().get("greeter.bonus") {
            // Without annotations: a write that needs a card.
            assert_eq!(bonus.spec.effect, runtime::ToolEffect::NonIdempotentWrite);
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the new tool was never listed: {:?}", hub.servers());
}
