//! A page an MCP server asks the reader to open (URL-mode elicitation), through the chat against
//! npm's server-everything (`trigger-url-elicitation`): the question is a card with the server's
//! name, the link's host and Open / Done / Decline; the page itself never opens or loads the link
//! (one plain link, into a new tab that knows nothing of this one); Done answers `accept`,
//! Decline `decline`, and the run goes on either way. The server's own notice that the step is
//! done (`notifications/elicitation/complete`, which server-everything does not send) carries the
//! run on too: a small rmcp server here sends it when the test says.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, ContentBlock, CustomNotification,
    DiscoverResult, ElicitRequest, ElicitRequestParams, ErrorCode, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, ServerNotification, ServerRequest, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::harness::{texts, Client, TestServer};
use crate::mcp::{decide, everything, wait_for_tool};

const TOOL: &str = "everything.trigger-url-elicitation";
const LINK: &str = "https://pay.example/checkout?order=7";

/// Asks for the link through the tool and approves its card: the question waits.
async fn asked(client: &Client) -> (String, Value) {
    let id = client.create_conversation().await;
    let call = format!("/mcp {TOOL} {}", json!({ "url": LINK, "message": "Pay for order 7" }));
    let (status, body) = client.call_json("send_message", &[("conversation_id", &id), ("content", &call)]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "awaiting_approval", "{conversation}");
    let conversation = decide(client, &conversation, "approve").await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    (id, conversation)
}

async fn started() -> (TestServer, Client) {
    let server = TestServer::start_with_mcp(json!({ "mcpServers": { "everything": everything(None) } })).await;
    let client = server.signed_in("demo").await;
    // Offered only to a client that declares links (`elicitation.url`).
    wait_for_tool(&client, TOOL).await;
    (server, client)
}

#[tokio::test]
async fn an_mcp_servers_link_is_a_card_the_reader_opens_and_done_carries_the_run_on() {
    let (server, client) = started().await;
    let (id, conversation) = asked(&client).await;
    let question = &conversation["question"];
    assert_eq!(question["link"], json!({ "server": "everything", "url": LINK, "host": "pay.example" }));
    assert_eq!(question["declinable"], true);
    assert_eq!(question["form"]["question"], "Pay for order 7");
    let digest = question["digest"].as_str().unwrap().to_string();

    // The page: the host in full, and the link only as a link the reader clicks, into a new tab
    // without an opener or a referrer; nothing on the page loads or opens it by itself.
    let page = client.http.get(format!("{}/c/{id}", server.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains(r#"<strong class="host">pay.example<"#), "{page}");
    assert!(page.contains("everything asks you to open a page on"), "{page}");
    let naming: Vec<_> = server::html_tags::start_tags(&page)
        .into_iter()
        .filter(|(_, attributes)| attributes.iter().any(|(_, value)| value.contains("pay.example")))
        .collect();
    assert_eq!(naming.len(), 1, "one tag names the link: {naming:?}");
    let (name, attributes) = &naming[0];
    let attribute = |wanted: &str| attributes.iter().find(|(name, _)| name == wanted).map(|(_, value)| value.as_str());
    assert_eq!(name, "a");
    assert_eq!(attribute("href"), Some(LINK));
    assert_eq!(attribute("target"), Some("_blank"));
    assert_eq!(attribute("rel"), Some("noopener noreferrer"));

    // Only "Done" answers it: anything else changes nothing.
    for choice in ["\"accept\"", "true", "\"Done\""] {
        let (status, body) =
            client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("choice", choice)]).await;
        assert!(status == 409 || status == 422, "{choice}: {status} {body}");
    }
    let (_, unchanged) = client.conversation(&id).await;
    assert_eq!(unchanged["question"]["digest"], digest.as_str(), "nothing changed");

    let (status, body) =
        client.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("choice", "\"done\"")]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "idle", "{conversation}");
    let last = texts(&conversation).last().unwrap().clone();
    assert!(last.contains("User completed the URL elicitation flow"), "the server heard accept: {last}");
    assert!(last.contains(r#""action": "accept""#) && !last.contains("content"), "{last}");
    server.stop().await;
}

#[tokio::test]
async fn declining_an_mcp_servers_link_tells_the_server_decline() {
    let (server, client) = started().await;
    let (id, conversation) = asked(&client).await;
    let last = client.declined(&id, &conversation).await;
    assert!(last.contains("declined to open the URL"), "{last}");
    server.stop().await;
}

/// A read-only tool that asks the user to open a link, and says the step there is done when the
/// test fires `paid` (as a server whose page saw the payment would).
#[derive(Clone)]
struct Shop {
    paid: Arc<Notify>,
}

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
        let schema = json!({ "type": "object", "properties": {} }).as_object().cloned().unwrap();
        let tool = Tool::new("pay", "Sends the user to the payment page", Arc::new(schema))
            .annotate(ToolAnnotations::new().read_only(true));
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (peer, paid) = (context.peer.clone(), self.paid.clone());
        tokio::spawn(async move {
            paid.notified().await;
            let done = CustomNotification::new(
                "notifications/elicitation/complete",
                Some(json!({ "elicitationId": "order-7" })),
            );
            peer.send_notification(ServerNotification::CustomNotification(done)).await.unwrap();
        });
        let params = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: "Pay for order 7".into(),
            url: LINK.into(),
            elicitation_id: "order-7".into(),
        };
        let asked = context.peer.send_request(ServerRequest::ElicitRequest(ElicitRequest::new(params))).await;
        let Ok(ClientResult::ElicitResult(asked)) = asked else {
            return Err(ErrorData::internal_error("no answer to the link", None));
        };
        let answer = serde_json::to_value(&asked).unwrap();
        let text = format!("The shop heard {}.", answer["action"].as_str().unwrap_or("?"));
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::test]
async fn the_servers_notice_that_the_step_is_done_carries_the_run_on_without_the_reader() {
    let paid = Arc::new(Notify::new());
    let shop = Shop { paid: paid.clone() };
    let service = StreamableHttpService::new(
        move || Ok(shop.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, axum::Router::new().nest_service("/mcp", service)).await });

    let server = TestServer::start_with_mcp(json!({ "mcpServers": { "shop": { "url": url } } })).await;
    let client = server.signed_in("demo").await;
    wait_for_tool(&client, "shop.pay").await;
    let id = client.create_conversation().await;
    let (status, body) =
        client.call_json("send_message", &[("conversation_id", &id), ("content", "/mcp shop.pay")]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = client.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    assert_eq!(conversation["question"]["link"]["host"], "pay.example");
    // It waits: nothing goes on by itself.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (_, waiting) = client.conversation(&id).await;
    assert_eq!(waiting["status"], "awaiting_input", "{waiting}");

    paid.notify_one();
    let mut conversation = Value::Null;
    for _ in 0..100 {
        conversation = client.settled_conversation(&id).await;
        if conversation["status"] != "awaiting_input" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(conversation["status"], "idle", "{conversation}");
    let last = texts(&conversation).last().unwrap().clone();
    assert!(last.contains("The shop heard accept."), "{last}");
    // Said beside the turn, as what it is: the step was done, not an answer lost.
    let notice = conversation["error"].as_str().unwrap_or_default();
    assert!(notice.contains("said the step at its link is done"), "{conversation}");
    server.stop().await;
}
