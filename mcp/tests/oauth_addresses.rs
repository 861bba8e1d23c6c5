//! Where a sign-in's discovery may go (issue 62): an MCP server on 127.0.0.1 whose metadata names
//! its authorization server, or that server's registration endpoint, at a private or a link-local
//! address gets nothing sent there: the OAuth client refuses the address before any request
//! (rmcp's address policy), since the server's own URL names no private address and the
//! configuration does not allow them (`oauthPrivateAddresses`). The addresses are never reached
//! by these tests: the refusal comes before a connection is made.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::{Json, Router};
use mcp::{McpConfig, McpHub, OAuthProblem, TokenOwner, TokenVault};
use runtime::ToolRegistry;
use serde_json::json;
use tokio::sync::watch;

/// Every line logged in this test process, to read what the OAuth client refused.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    fn install() -> Lines {
        let lines = Lines::default();
        let writer = lines.clone();
        tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).init();
        lines
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[derive(Default)]
struct MemoryVault(Mutex<HashMap<String, String>>);

#[async_trait]
impl TokenVault for MemoryVault {
    async fn load(&self, server: &str, _owner: TokenOwner) -> Result<Option<String>, String> {
        Ok(self.0.lock().unwrap().get(server).cloned())
    }
    async fn save(&self, server: &str, _owner: TokenOwner, credentials: &str) -> Result<(), String> {
        self.0.lock().unwrap().insert(server.to_string(), credentials.to_string());
        Ok(())
    }
    async fn clear(&self, server: &str, _owner: TokenOwner) -> Result<bool, String> {
        Ok(self.0.lock().unwrap().remove(server).is_some())
    }
    async fn any_user(&self, _server: &str) -> Result<Option<i64>, String> {
        Ok(None)
    }
    async fn load_client(&self, _server: &str, _redirect_uri: &str) -> Result<Option<String>, String> {
        Ok(None)
    }
    async fn save_client(&self, _server: &str, _redirect_uri: &str, _client: &str) -> Result<(), String> {
        Ok(())
    }
}

/// An MCP endpoint on 127.0.0.1 that wants a token, its protected-resource metadata naming
/// `authorization_server`, and (for one named here) that server's metadata with its endpoints,
/// the registration endpoint at `registration`.
async fn protected(authorization_server: Option<&str>, registration: &str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let named = authorization_server.map_or_else(|| origin.clone(), str::to_string);
    let (resource, challenge) = (format!("{origin}/mcp"), format!("{origin}/.well-known/oauth-protected-resource/mcp"));
    let metadata = json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "registration_endpoint": registration,
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    });
    let resource_metadata = json!({ "resource": resource, "authorization_servers": [named] });
    let app = Router::new()
        .route(
            "/mcp",
            axum::routing::post(move || async move {
                let value = format!(r#"Bearer resource_metadata="{challenge}""#);
                (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, value)]).into_response()
            }),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            axum::routing::get(move || async move { Json(resource_metadata) }),
        )
        .route("/.well-known/oauth-authorization-server", axum::routing::get(move || async move { Json(metadata) }));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    resource
}

async fn begin(url: &str) -> mcp::OAuthFailure {
    let config = json!({ "mcpServers": { "corp": { "url": url, "auth": "oauth", "oauthMode": "shared" } } });
    let (_shutdown, stopped) = watch::channel(false);
    let vault: Arc<dyn TokenVault> = Arc::new(MemoryVault::default());
    let config = McpConfig::parse(&config.to_string()).unwrap();
    let hub = McpHub::start_with_vault(config, &ToolRegistry::new(), stopped, Some(vault));
    match hub.begin_sign_in("corp", "http://127.0.0.1:9/mcp/oauth/callback").await {
        Ok(_) => panic!("a sign-in began through a refused address"),
        Err(failure) => failure,
    }
}

/// Whether the OAuth client said it refused a request to `url` for its address (it says so
/// before the request, instead of sending it: a discovered URL it rejects, or an address its
/// policy does not allow).
fn refused(lines: &Lines, url: &str) -> bool {
    let url = url.trim_end_matches('/');
    lines.text().lines().any(|line| {
        line.contains(url) && (line.contains("address not allowed") || line.contains("rejecting authorization server"))
    })
}

#[tokio::test]
async fn discovery_sends_nothing_to_a_private_or_link_local_address_a_loopback_server_names() {
    let lines = Lines::install();
    for named in ["http://10.255.255.1:9", "http://169.254.169.254", "http://[fd00::1]:9"] {
        let url = protected(Some(named), "http://127.0.0.1:9/register").await;
        let failure = begin(&url).await;
        assert_eq!(failure.problem, OAuthProblem::Discovery, "{named}: {failure:?}");
        assert!(refused(&lines, named), "{named} refused before any request: {}", lines.text());
    }
    // The authorization server on loopback, as the server is, but its registration endpoint not.
    let url = protected(None, "http://10.255.255.1:9/register").await;
    let failure = begin(&url).await;
    assert_eq!(failure.problem, OAuthProblem::Registration, "{failure:?}");
    assert!(refused(&lines, "http://10.255.255.1:9/register"), "{}", lines.text());
}
