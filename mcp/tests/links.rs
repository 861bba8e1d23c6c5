//! A link a server asks the user to open (URL-mode elicitation, `elicitation/create` with
//! `mode: "url"`): it becomes a question whose one answer is "Done", carrying the server's name and
//! the link as a browser reads it; "Done" answers `accept`, Decline `decline`; the server's
//! `notifications/elicitation/complete` ends the wait as "Done" would; a link that would show one
//! host and open another is declined without asking.
//!
//! The server is a small one written with rmcp's server role (protocol 2025-11-25, where a server
//! asks during the call), over streamable HTTP on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use mcp::{McpConfig, McpHub, ServerState, LINK_KEY};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, ContentBlock, CustomNotification,
    DiscoverResult, ElicitRequest, ElicitRequestParams, ErrorCode, InputRequest, InputRequests, InputRequiredResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, ServerNotification,
    ServerRequest, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use runtime::{Actor, InputReply, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{json, Value};
use tokio::sync::watch;

#[derive(Clone, Default)]
struct Shop;

impl ServerHandler for Shop {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.protocol_version = ProtocolVersion::V_2025_11_25;
        info
    }

    /// An older server: it knows only `initialize`, where a server asks during the call.
    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, "server/discover", None))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({ "type": "object", "properties": { "url": { "type": "string" }, "complete": { "type": "boolean" } } });
        let tool =
            Tool::new("pay", "Sends the user to the payment page", Arc::new(schema.as_object().cloned().unwrap()))
                .annotate(ToolAnnotations::new().read_only(true));
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    /// Asks the user to open `url`; with `complete`, says a moment later that the step there is
    /// done (on the session's stream, while the question still waits). The result names the
    /// action the client answered and whether it carried content.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let url = arguments.get("url").and_then(Value::as_str).unwrap_or("https://pay.example/checkout?order=7");
        if arguments.get("complete").and_then(Value::as_bool) == Some(true) {
            let peer = context.peer.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let params = json!({ "elicitationId": "order-7" });
                let done = CustomNotification::new("notifications/elicitation/complete", Some(params));
                peer.send_notification(ServerNotification::CustomNotification(done)).await.unwrap();
            });
        }
        let params = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: "Pay for order 7".into(),
            url: url.to_string(),
            elicitation_id: "order-7".into(),
        };
        let asked = context
            .peer
            .send_request(ServerRequest::ElicitRequest(ElicitRequest::new(params)))
            .await
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        let ClientResult::ElicitResult(asked) = asked else {
            return Err(ErrorData::internal_error("not an answer to the question", None));
        };
        let answer = serde_json::to_value(&asked).unwrap();
        let text = format!(
            "action: {}, content: {}",
            answer["action"].as_str().unwrap_or("?"),
            answer.get("content").is_some()
        );
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// The same link asked the newer way (protocol 2026-07-28): in the call's result, with the
/// state to echo; the answer comes with a new call, whenever and from whichever process.
#[derive(Clone, Default)]
struct NewerShop;

impl ServerHandler for NewerShop {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.protocol_version = ProtocolVersion::V_2026_07_28;
        info
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Shop.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(responses) = request.input_responses else {
            let mut requests = InputRequests::new();
            let link = ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: "Pay for order 7".into(),
                url: "https://pay.example/checkout?order=7".into(),
                elicitation_id: String::new(),
            };
            requests.insert("pay".to_string(), InputRequest::Elicitation(ElicitRequest::new(link)));
            return Ok(InputRequiredResult::new(Some(requests), Some("asked".to_string())).into());
        };
        let answer = responses.get("pay").ok_or_else(|| ErrorData::invalid_params("no answer", None))?;
        let text = format!(
            "action: {}, content: {}",
            answer["action"].as_str().unwrap_or("?"),
            answer.get("content").is_some_and(|content| !content.is_null())
        );
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

async fn serve() -> String {
    serve_with(Shop).await
}

async fn serve_with<H: ServerHandler + Clone + Send + Sync + 'static>(handler: H) -> String {
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/mcp")
}

async fn hub() -> (McpHub, watch::Sender<bool>) {
    hub_at(&serve().await).await
}

async fn hub_at(url: &str) -> (McpHub, watch::Sender<bool>) {
    let config = json!({ "mcpServers": { "shop": { "url": url } }, "callTimeoutSeconds": 5 });
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

/// Calls `shop.pay` with `arguments` and returns the question it asked.
async fn asked(hub: &McpHub, arguments: Value) -> (Arc<dyn runtime::Tool>, Value, Value) {
    let tool = hub.source().get("shop.pay").expect("the tool is offered").tool;
    match tool.call(arguments, &context()).await.unwrap() {
        ToolOutput::Ask { schema, state } => (tool, schema, state),
        ToolOutput::Done(text) => panic!("no question: {text}"),
    }
}

#[tokio::test]
async fn a_link_is_a_question_with_its_server_and_address_and_done_answers_accept() {
    let (hub, _shutdown) = hub().await;
    let (tool, schema, state) = asked(&hub, json!({})).await;
    assert_eq!(schema[LINK_KEY], json!({ "server": "shop", "url": "https://pay.example/checkout?order=7" }));
    assert_eq!(schema["title"], "Pay for order 7");
    // One answer, which the card's "Done" posts (the chat's reading is tested in the server).
    assert_eq!(schema["properties"]["done"]["oneOf"], json!([{ "const": "done", "title": "Done" }]));
    assert_eq!(schema["required"], json!(["done"]));
    // Waiting, not expired, until someone answers.
    assert_eq!(tool.expired(&state), None);

    let done = json!({ "done": "done" }).as_object().cloned().unwrap();
    let output = tool.resume(json!({}), state, InputReply::Answer(done), &context()).await.unwrap();
    // `accept` without content: a link's answer is that the user went there, not values.
    assert_eq!(output, ToolOutput::Done("action: accept, content: false".into()));
}

#[tokio::test]
async fn declining_a_link_tells_the_server_decline() {
    let (hub, _shutdown) = hub().await;
    let (tool, _, state) = asked(&hub, json!({})).await;
    let output = tool.resume(json!({}), state, InputReply::Decline, &context()).await.unwrap();
    assert_eq!(output, ToolOutput::Done("action: decline, content: false".into()));
}

#[tokio::test]
async fn the_servers_completion_notice_ends_the_wait_as_done_would() {
    let (hub, _shutdown) = hub().await;
    let (tool, _, state) = asked(&hub, json!({ "complete": true })).await;
    // The worker's sweep asks each waiting question whether it still waits; this one says the
    // server finished once the notice came, and the run is carried on with the call answered.
    let mut reason = None;
    for _ in 0..100 {
        reason = tool.expired(&state);
        if reason.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let reason = reason.expect("the completion notice ends the wait");
    assert!(reason.contains("done"), "{reason}");
    let output = tool.resume(json!({}), state, InputReply::Cancel, &context()).await.unwrap();
    assert_eq!(output, ToolOutput::Done("action: accept, content: false".into()));
}

#[tokio::test]
async fn a_link_that_shows_one_host_and_opens_another_is_declined_without_asking() {
    let (hub, _shutdown) = hub().await;
    let tool = hub.source().get("shop.pay").unwrap().tool;
    for url in ["https://bank.example@evil.example/", "javascript:alert(1)", "file:///etc/passwd", "not a url"] {
        let output = tool.call(json!({ "url": url }), &context()).await.unwrap();
        assert_eq!(output, ToolOutput::Done("action: decline, content: false".into()), "{url}");
    }
    // A backslash is a slash to a browser: the link is kept as the browser would read it.
    let (_, schema, _) = asked(&hub, json!({ "url": "https://evil.example\\@bank.example/" })).await;
    assert_eq!(schema[LINK_KEY]["url"], "https://evil.example/@bank.example/");
}

#[tokio::test]
async fn a_link_asked_in_the_calls_result_outlives_the_process_that_asked() {
    let url = serve_with(NewerShop).await;
    let (first, shutdown) = hub_at(&url).await;
    let (_, schema, state) = asked(&first, json!({})).await;
    assert_eq!(schema[LINK_KEY]["url"], "https://pay.example/checkout?order=7");
    let _ = shutdown.send(true);
    drop(first);

    let (second, _shutdown) = hub_at(&url).await;
    let tool = second.source().get("shop.pay").unwrap().tool;
    assert_eq!(tool.expired(&state), None, "kept with the pause, it never expires");
    let done = json!({ "done": "done" }).as_object().cloned().unwrap();
    let output = tool.resume(json!({}), state, InputReply::Answer(done), &context()).await.unwrap();
    assert_eq!(output, ToolOutput::Done("action: accept, content: false".into()));
}
