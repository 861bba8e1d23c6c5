//! OAuth 2.1 for HTTP MCP servers through the real server: a small authorization server and a
//! protected MCP server written here (axum, and rmcp's server role for MCP) on 127.0.0.1. The
//! MCP endpoint answers 401 with a `WWW-Authenticate` naming its protected-resource metadata;
//! the authorization server publishes its metadata, registers clients, consents by itself (or
//! refuses, when told to), checks PKCE (S256) and the resource indicator, and refreshes.
//!
//! The browser's part is played by hand: `/mcp/oauth/start` sends it to `/authorize`, which sends
//! it back to `/mcp/oauth/callback`; each redirect is followed with the session's cookie.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Form, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Json, Router};
use base64::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::harness::{texts, Client, TestServer};

const KEY: &str = "8f3a1c0e5b7d92461e0fa3b5c7d9e1f20406080a0c0e10121416181a1c1e2022";

/// The account a token was issued for, as the MCP endpoint hands it to the tool.
#[derive(Clone)]
struct Account(String);

struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    account: String,
}

/// The authorization server's state, and what the tests look at.
#[derive(Default)]
struct Auth {
    origin: String,
    clients: Mutex<HashMap<String, Vec<String>>>,
    codes: Mutex<HashMap<String, Grant>>,
    /// Access token → account.
    tokens: Mutex<HashMap<String, String>>,
    /// Refresh token → account.
    refresh: Mutex<HashMap<String, String>>,
    /// Every token issued, to look for it where it must not be.
    issued: Mutex<Vec<String>>,
    /// The resource indicators the token endpoint was sent.
    resources: Mutex<Vec<String>>,
    /// The access tokens the MCP endpoint accepted.
    seen: Mutex<Vec<String>>,
    refuse: AtomicBool,
    /// When set, the protected resource's metadata names this authorization server instead
    /// (a server that names the real one at Connect and its own later).
    names_instead: Mutex<Option<String>>,
    accounts: AtomicUsize,
    refreshed: AtomicUsize,
    counter: AtomicUsize,
}

impl Auth {
    fn fresh(&self, prefix: &str) -> String {
        format!("{prefix}-{}-{}", self.counter.fetch_add(1, Ordering::SeqCst), uuid::Uuid::new_v4().simple())
    }

    fn tokens_for(&self, account: &str) -> Value {
        let access = self.fresh("access");
        let refresh = self.fresh("refresh");
        self.tokens.lock().unwrap().insert(access.clone(), account.to_string());
        self.refresh.lock().unwrap().insert(refresh.clone(), account.to_string());
        self.issued.lock().unwrap().extend([access.clone(), refresh.clone()]);
        json!({ "access_token": access, "token_type": "Bearer", "expires_in": 3600, "refresh_token": refresh, "scope": "crm" })
    }

    fn resource(&self) -> String {
        format!("{}/mcp", self.origin)
    }

    /// Every access token runs out (the refresh tokens still work).
    fn expire_access_tokens(&self) {
        self.tokens.lock().unwrap().clear();
    }

    /// The whole grant is withdrawn: access and refresh tokens.
    fn revoke_everything(&self) {
        self.tokens.lock().unwrap().clear();
        self.refresh.lock().unwrap().clear();
    }

    fn issued(&self) -> Vec<String> {
        self.issued.lock().unwrap().clone()
    }
}

async fn resource_metadata(State(auth): State<Arc<Auth>>) -> Json<Value> {
    let named = auth.names_instead.lock().unwrap().clone().unwrap_or_else(|| auth.origin.clone());
    Json(json!({ "resource": auth.resource(), "authorization_servers": [named], "scopes_supported": ["crm"] }))
}

async fn server_metadata(State(auth): State<Arc<Auth>>) -> Json<Value> {
    let origin = &auth.origin;
    Json(json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "registration_endpoint": format!("{origin}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": ["crm"],
    }))
}

async fn register(State(auth): State<Arc<Auth>>, Json(request): Json<Value>) -> Response {
    let redirect_uris: Vec<String> = serde_json::from_value(request["redirect_uris"].clone()).unwrap_or_default();
    if redirect_uris.is_empty() {
        return (StatusCode::BAD_REQUEST, Json(json!({ "error": "invalid_redirect_uri" }))).into_response();
    }
    let client_id = auth.fresh("client");
    auth.clients.lock().unwrap().insert(client_id.clone(), redirect_uris.clone());
    (StatusCode::CREATED, Json(json!({ "client_id": client_id, "redirect_uris": redirect_uris }))).into_response()
}

/// Consents at once (for the next account), or refuses when told to.
async fn authorize(State(auth): State<Arc<Auth>>, Query(query): Query<HashMap<String, String>>) -> Response {
    let get = |key: &str| query.get(key).cloned().unwrap_or_default();
    let (client_id, redirect_uri, state) = (get("client_id"), get("redirect_uri"), get("state"));
    let registered = auth.clients.lock().unwrap().get(&client_id).is_some_and(|uris| uris.contains(&redirect_uri));
    if !registered || get("response_type") != "code" || get("code_challenge_method") != "S256" {
        return (StatusCode::BAD_REQUEST, "unknown client, redirect or method").into_response();
    }
    assert_eq!(get("resource"), auth.resource(), "the resource indicator names the MCP server");
    if auth.refuse.load(Ordering::SeqCst) {
        return Redirect::to(&format!("{redirect_uri}?error=access_denied&state={state}")).into_response();
    }
    let account = format!("account-{}", auth.accounts.fetch_add(1, Ordering::SeqCst) + 1);
    let code = auth.fresh("code");
    let grant = Grant { client_id, redirect_uri: redirect_uri.clone(), challenge: get("code_challenge"), account };
    auth.codes.lock().unwrap().insert(code.clone(), grant);
    Redirect::to(&format!("{redirect_uri}?code={code}&state={state}")).into_response()
}

async fn token(State(auth): State<Arc<Auth>>, Form(form): Form<HashMap<String, String>>) -> Response {
    let get = |key: &str| form.get(key).cloned().unwrap_or_default();
    let invalid = || (StatusCode::BAD_REQUEST, Json(json!({ "error": "invalid_grant" }))).into_response();
    auth.resources.lock().unwrap().push(get("resource"));
    match get("grant_type").as_str() {
        "authorization_code" => {
            let Some(grant) = auth.codes.lock().unwrap().remove(&get("code")) else { return invalid() };
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(Sha256::digest(get("code_verifier").as_bytes()));
            // A public client names itself in the body (or not at all).
            let client = get("client_id");
            let wrong_client = !client.is_empty() && client != grant.client_id;
            if wrong_client || grant.redirect_uri != get("redirect_uri") || grant.challenge != challenge {
                return invalid();
            }
            Json(auth.tokens_for(&grant.account)).into_response()
        }
        "refresh_token" => {
            let Some(account) = auth.refresh.lock().unwrap().remove(&get("refresh_token")) else { return invalid() };
            auth.refreshed.fetch_add(1, Ordering::SeqCst);
            Json(auth.tokens_for(&account)).into_response()
        }
        _ => invalid(),
    }
}

/// The MCP endpoint takes only a bearer token the authorization server issued and has not
/// withdrawn; anything else is 401 with the challenge that names the metadata.
async fn bearer_only(State(auth): State<Arc<Auth>>, mut request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_string);
    let account = token.as_ref().and_then(|token| auth.tokens.lock().unwrap().get(token).cloned());
    match (token, account) {
        (Some(token), Some(account)) => {
            auth.seen.lock().unwrap().push(token);
            request.extensions_mut().insert(Account(account));
            next.run(request).await
        }
        _ => {
            let challenge =
                format!(r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp""#, auth.origin);
            (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)]).into_response()
        }
    }
}

/// One tool: who the token's account is.
#[derive(Clone)]
struct Crm;

impl ServerHandler for Crm {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = Arc::new(json!({ "type": "object" }).as_object().cloned().unwrap());
        let tool = Tool::new("whoami", "Says whose account the call acts for", schema)
            .annotate(ToolAnnotations::new().read_only(true).open_world(false));
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let account = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Account>())
            .map_or_else(|| "nobody".to_string(), |account| account.0.clone());
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("acting for {account}"))]).into())
    }
}

/// The authorization server and the MCP server it protects, on one address.
async fn start_protected() -> Arc<Auth> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let auth = Arc::new(Auth { origin, ..Auth::default() });
    let mcp = StreamableHttpService::new(
        || Ok(Crm),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let protected =
        Router::new().nest_service("/mcp", mcp).layer(axum::middleware::from_fn_with_state(auth.clone(), bearer_only));
    let app = Router::new()
        .route("/.well-known/oauth-protected-resource/mcp", axum::routing::get(resource_metadata))
        .route("/.well-known/oauth-protected-resource", axum::routing::get(resource_metadata))
        .route("/.well-known/oauth-authorization-server", axum::routing::get(server_metadata))
        .route("/register", axum::routing::post(register))
        .route("/authorize", axum::routing::get(authorize))
        .route("/token", axum::routing::post(token))
        .with_state(auth.clone())
        .merge(protected);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    auth
}

async fn tourguide(auth: &Auth, mode: &str) -> TestServer {
    tourguide_in(auth, mode, tempfile::tempdir().unwrap()).await
}

/// Tourguide on the database of `dir`, with `--public-url` its own address (a sign-in's callback
/// is built from it, and from nothing else).
async fn tourguide_in(auth: &Auth, mode: &str, dir: tempfile::TempDir) -> TestServer {
    let mcp = json!({ "mcpServers": { "crm": { "url": auth.resource(), "auth": "oauth", "oauthMode": mode } } });
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    TestServer::start_adjusted_in(dir, |config| {
        config.mcp = Some(mcp::McpConfig::parse(&mcp.to_string()).unwrap());
        config.token_key = server::token_key::TokenKey::parse(KEY);
        config.address = format!("127.0.0.1:{port}").parse().unwrap();
        config.public_url = server::config::PublicUrl::parse(&format!("http://127.0.0.1:{port}"));
    })
    .await
}

/// Connect, as the Tools page's form posts it.
async fn start(client: &Client, server: &str) -> reqwest::Response {
    client.http.post(format!("{}/mcp/oauth/start", client.base)).form(&[("server", server)]).send().await.unwrap()
}

fn location(response: &reqwest::Response) -> String {
    assert!(response.status().is_redirection(), "{} is not a redirect", response.status());
    response.headers()[header::LOCATION.as_str()].to_str().unwrap().to_string()
}

/// Start → the authorization server → the callback URL it sends the browser to (not yet opened).
async fn consent(client: &Client, server: &str) -> String {
    let authorize = location(&start(client, server).await);
    let consented = client.http.get(authorize).send().await.unwrap();
    location(&consented)
}

/// The whole sign-in; the callback's response.
async fn connect(client: &Client, server: &str) -> reqwest::Response {
    let callback = consent(client, server).await;
    client.http.get(callback).send().await.unwrap()
}

async fn crm(client: &Client) -> Value {
    let (status, tools) = client.call_json("tools", &[]).await;
    assert_eq!(status, 200, "{tools}");
    tools["servers"].as_array().unwrap().iter().find(|server| server["name"] == "crm").unwrap().clone()
}

async fn say(client: &Client, id: &str, text: &str) -> Value {
    let (status, body) = client.call_json("send_message", &[("conversation_id", id), ("content", text)]).await;
    assert_eq!(status, 200, "{body}");
    client.settled_conversation(id).await
}

/// The page's sentence (the callback's answer is a small page with one).
async fn sentence(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

async fn stored(server: &TestServer, user: Option<i64>) -> Option<Vec<u8>> {
    server.store().mcp_token("crm", user).await.unwrap()
}

#[tokio::test]
async fn an_admins_shared_sign_in_offers_the_tools_and_calls_carry_its_token_sealed_at_rest() {
    let auth = start_protected().await;
    let server = tourguide(&auth, "shared").await;
    let admin = server.signed_in("demo").await;
    let editor = server.signed_in("erin").await;
    let before = crm(&admin).await;
    assert_eq!(before["oauth"], json!({ "shared": true, "connected": false, "may_change": true }), "{before}");
    assert_eq!(crm(&editor).await["oauth"]["may_change"], false);
    for _ in 0..100 {
        if crm(&admin).await["status"]["state"] == "sign_in_needed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(crm(&admin).await["status"]["state"], "sign_in_needed");

    // An editor may not make the shared sign-in: a sentence, and nothing begun.
    let (status, page) = sentence(start(&editor, "crm").await).await;
    assert_eq!(status, 403);
    assert!(page.contains("Your account may not do this."), "{page}");
    assert_eq!(server.store().pending_mcp_sign_ins().await.unwrap(), 0);
    assert_eq!(sentence(start(&admin, "nope").await).await.0, 404);
    // Nobody signed in, at either end: the sign-in page, and nothing begun or taken.
    let anonymous = server.client();
    let response = start(&anonymous, "crm").await;
    assert_eq!(location(&response), "/login");
    let response =
        anonymous.http.get(format!("{}/mcp/oauth/callback?state=x&code=y", anonymous.base)).send().await.unwrap();
    assert_eq!(location(&response), "/login");
    assert_eq!(server.store().pending_mcp_sign_ins().await.unwrap(), 0);

    let done = connect(&admin, "crm").await;
    assert_eq!(location(&done), "/tools");
    assert_eq!(auth.resources.lock().unwrap().as_slice(), [auth.resource()], "the resource indicator on the exchange");
    let sealed = stored(&server, None).await.expect("the shared tokens are kept");
    for token in auth.issued() {
        let bytes = token.as_bytes();
        assert!(!sealed.windows(bytes.len()).any(|window| window == bytes), "{token} in clear");
    }
    assert_eq!(crm(&admin).await["oauth"]["connected"], true);
    crate::mcp::wait_for_tool(&editor, "crm.whoami").await;

    // Anyone's call carries the shared token.
    let id = editor.create_conversation().await;
    let conversation = say(&editor, &id, "/mcp crm.whoami").await;
    assert!(texts(&conversation).last().unwrap().contains("acting for account-1"), "{conversation}");
    assert!(auth.seen.lock().unwrap().iter().any(|token| auth.issued().contains(token)));

    // No token on a page, in the tools' JSON, or in clear in the database's files.
    let tools = editor.call_json("tools", &[]).await.1.to_string();
    let page = admin.http.get(format!("{}/tools", admin.base)).send().await.unwrap().text().await.unwrap();
    for token in auth.issued() {
        assert!(!tools.contains(&token) && !page.contains(&token), "{token} shown");
    }
    assert!(page.contains("Disconnect"), "{page}");
    if std::env::var("TOURGUIDE_TEST_POSTGRES").is_err() {
        let folder = server.stop().await;
        for entry in std::fs::read_dir(folder.path()).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap_or_default();
            for token in auth.issued() {
                let token = token.as_bytes();
                assert!(!bytes.windows(token.len()).any(|window| window == token), "a token in clear on disk");
            }
        }
        return;
    }
    server.stop().await;
}

#[tokio::test]
async fn disconnecting_deletes_the_tokens_and_the_tools_go() {
    let auth = start_protected().await;
    let server = tourguide(&auth, "shared").await;
    let admin = server.signed_in("demo").await;
    let editor = server.signed_in("erin").await;
    assert_eq!(location(&connect(&admin, "crm").await), "/tools");
    crate::mcp::wait_for_tool(&admin, "crm.whoami").await;
    // Only an admin disconnects the shared sign-in.
    let (status, body) = editor.call_json("disconnect_mcp", &[("server", "crm")]).await;
    assert_eq!(status, 403, "{body}");
    assert!(stored(&server, None).await.is_some());
    let (status, body) = admin.call_json("disconnect_mcp", &[("server", "crm")]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(stored(&server, None).await, None);
    for _ in 0..100 {
        let crm = crm(&admin).await;
        if crm["status"]["state"] == "sign_in_needed" && crm["tools"].as_array().unwrap().is_empty() {
            assert_eq!(crm["oauth"]["connected"], false);
            server.stop().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server's tools stayed after the disconnect: {}", crm(&admin).await);
}

#[tokio::test]
async fn a_wrong_state_a_refused_consent_and_a_bad_code_each_say_so_and_store_nothing() {
    let auth = start_protected().await;
    let server = tourguide(&auth, "shared").await;
    let admin = server.signed_in("demo").await;

    // A state nobody began.
    let forged =
        admin.http.get(format!("{}/mcp/oauth/callback?code=abc&state=forged", admin.base)).send().await.unwrap();
    let (status, page) = sentence(forged).await;
    assert_eq!(status, 400);
    assert!(page.contains("was not started in this session or has expired, so nothing was stored"), "{page}");

    // A callback opened in another session (a link someone was sent) finds nothing, and leaves
    // the sign-in to the session that began it.
    let callback = consent(&admin, "crm").await;
    let other = server.client();
    other.sign_in("demo").await;
    let (status, page) = sentence(other.http.get(&callback).send().await.unwrap()).await;
    assert_eq!(status, 400);
    assert!(page.contains("nothing was stored"), "{page}");
    assert_eq!(stored(&server, None).await, None);

    // A code the authorization server did not issue.
    let wrong_code = {
        let mut url = url::Url::parse(&callback).unwrap();
        let state = url.query_pairs().find(|(key, _)| key == "state").unwrap().1.into_owned();
        url.query_pairs_mut().clear().append_pair("code", "not-a-code").append_pair("state", &state);
        url.to_string()
    };
    let (status, page) = sentence(admin.http.get(&wrong_code).send().await.unwrap()).await;
    assert_eq!(status, 400);
    assert!(page.contains("did not accept the sign-in"), "{page}");
    assert_eq!(stored(&server, None).await, None);
    // That state is spent: the right code cannot follow it.
    let (status, _) = sentence(admin.http.get(&callback).send().await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(stored(&server, None).await, None);

    // The person says no at the authorization server.
    auth.refuse.store(true, Ordering::SeqCst);
    let refused = connect(&admin, "crm").await;
    let (status, page) = sentence(refused).await;
    assert_eq!(status, 400);
    assert!(page.contains("The sign-in was refused at the authorization server"), "{page}");
    assert_eq!(stored(&server, None).await, None);
    assert_eq!(server.store().pending_mcp_sign_ins().await.unwrap(), 0);
    assert_eq!(crm(&admin).await["oauth"]["connected"], false);

    // And when it says yes, the sign-in goes through.
    auth.refuse.store(false, Ordering::SeqCst);
    assert_eq!(location(&connect(&admin, "crm").await), "/tools");
    assert!(stored(&server, None).await.is_some());
    server.stop().await;
}

#[tokio::test]
async fn an_expired_token_is_refreshed_and_a_withdrawn_grant_is_no_longer_connected() {
    let auth = start_protected().await;
    let server = tourguide(&auth, "shared").await;
    let admin = server.signed_in("demo").await;
    assert_eq!(location(&connect(&admin, "crm").await), "/tools");
    crate::mcp::wait_for_tool(&admin, "crm.whoami").await;
    let first = stored(&server, None).await.unwrap();
    let id = admin.create_conversation().await;
    assert!(texts(&say(&admin, &id, "/mcp crm.whoami").await).last().unwrap().contains("account-1"));

    // The access token runs out: the server refuses it once, the refresh token gets a new one.
    auth.expire_access_tokens();
    let conversation = say(&admin, &id, "/mcp crm.whoami").await;
    assert!(texts(&conversation).last().unwrap().contains("acting for account-1"), "{conversation}");
    assert!(auth.refreshed.load(Ordering::SeqCst) >= 1);
    assert_ne!(stored(&server, None).await.unwrap(), first, "the refreshed tokens are kept");

    // The grant is withdrawn at the authorization server: the refresh is refused, the sign-in
    // is forgotten, and the server waits for a new one.
    auth.revoke_everything();
    let conversation = say(&admin, &id, "/mcp crm.whoami").await;
    assert!(!texts(&conversation).last().unwrap().contains("acting for"), "{conversation}");
    for _ in 0..100 {
        if stored(&server, None).await.is_none() && crm(&admin).await["status"]["state"] == "sign_in_needed" {
            assert_eq!(crm(&admin).await["oauth"]["connected"], false);
            server.stop().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the withdrawn sign-in is still there: {}", crm(&admin).await);
}

#[tokio::test]
async fn a_per_user_call_waits_for_its_user_to_connect_and_then_carries_their_own_token() {
    let auth = start_protected().await;
    let server = tourguide(&auth, "per_user").await;
    let admin = server.signed_in("demo").await;
    let editor = server.signed_in("erin").await;
    // Each user connects their own account; the first one's sign-in lists the tools.
    assert_eq!(crm(&editor).await["oauth"], json!({ "shared": false, "connected": false, "may_change": true }));
    assert_eq!(location(&connect(&admin, "crm").await), "/tools");
    crate::mcp::wait_for_tool(&editor, "crm.whoami").await;
    assert_eq!(crm(&editor).await["oauth"]["connected"], false, "the admin's account is not the editor's");

    let id = editor.create_conversation().await;
    let conversation = say(&editor, &id, "/mcp crm.whoami").await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    assert_eq!(conversation["question"]["connect"], "crm", "{conversation}");
    let digest = conversation["question"]["digest"].as_str().unwrap().to_string();
    // Continue before connecting: the wait goes on.
    let (status, body) =
        editor.call_json("answer", &[("conversation_id", &id), ("digest", &digest), ("choice", "\"continue\"")]).await;
    assert_eq!(status, 200, "{body}");
    let conversation = editor.settled_conversation(&id).await;
    assert_eq!(conversation["status"], "awaiting_input", "{conversation}");
    assert_eq!(conversation["question"]["connect"], "crm");
    // The question is ours, not the server's: its button and its line speak the reader's language.
    assert_eq!(conversation["question"]["form"]["options"][0]["label"], "Continue", "{conversation}");
    assert!(texts(&conversation).contains(&"Continue".to_string()), "{conversation}");
    let (status, _) = editor.call_json("set_language", &[("language", "de")]).await;
    assert_eq!(status, 200);
    let (_, german) = editor.conversation(&id).await;
    assert_eq!(german["question"]["form"]["options"][0]["label"], "Weiter", "{german}");
    let (status, _) = editor.call_json("set_language", &[("language", "en")]).await;
    assert_eq!(status, 200);

    // The chat shows the way to connect.
    let page = editor.http.get(format!("{}/c/{id}", editor.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains(r#"action="/mcp/oauth/start""#) && page.contains(r#"value="crm""#), "{page}");

    // Connecting carries the waiting run on by itself, with the editor's own account.
    assert_eq!(location(&connect(&editor, "crm").await), "/tools");
    assert_eq!(crm(&editor).await["oauth"]["connected"], true);
    let conversation = editor.settled_conversation(&id).await;
    assert!(texts(&conversation).last().unwrap().contains("acting for account-2"), "{conversation}");

    // The admin's calls still carry the admin's own account.
    let mine = admin.create_conversation().await;
    assert!(texts(&say(&admin, &mine, "/mcp crm.whoami").await).last().unwrap().contains("acting for account-1"));
    server.stop().await;
}

#[test]
fn an_oauth_server_without_the_token_key_stops_the_start_with_a_sentence() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("mcp.json");
    let entry = json!({ "mcpServers": { "crm": { "url": "https://crm.example/mcp", "auth": "oauth", "oauthMode": "shared" } } });
    std::fs::write(&file, entry.to_string()).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_server"))
        .arg("--mcp-config")
        .arg(&file)
        .env_remove("TOURGUIDE_TOKEN_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("MCP server \"crm\" signs in with OAuth") && stderr.contains("TOURGUIDE_TOKEN_KEY"),
        "{stderr}"
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_server"))
        .arg("--mcp-config")
        .arg(&file)
        .env("TOURGUIDE_TOKEN_KEY", "too-short")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("TOURGUIDE_TOKEN_KEY is not a key") && !stderr.contains("too-short"), "{stderr}");
}

#[tokio::test]
async fn a_sign_in_that_does_not_open_with_the_key_counts_as_not_connected_and_the_page_still_shows() {
    let auth = start_protected().await;
    let server = tourguide(&auth, "shared").await;
    let admin = server.signed_in("demo").await;
    assert_eq!(location(&connect(&admin, "crm").await), "/tools");
    assert_eq!(crm(&admin).await["oauth"]["connected"], true);
    // What a changed TOURGUIDE_TOKEN_KEY leaves: a row sealed with another key.
    let other = server::token_key::TokenKey::parse("ab".repeat(32).as_str()).unwrap();
    let sealed = other.seal("mcp-token/crm/shared", b"{\"access_token\":\"x\"}");
    server.store().save_mcp_token("crm", None, &sealed).await.unwrap();
    let shown = crm(&admin).await;
    assert_eq!(shown["oauth"]["connected"], false, "{shown}");
    // Connecting again writes a sign-in that opens.
    assert_eq!(location(&connect(&admin, "crm").await), "/tools");
    assert_eq!(crm(&admin).await["oauth"]["connected"], true);
    server.stop().await;
}

/// Issue 62: Connect begins only by a post from this site (a GET is no route, another site's
/// post is refused by the origin check), and registers one client per server and callback
/// address, however often it is clicked.
#[tokio::test]
async fn connect_is_a_post_from_this_site_and_registers_one_client_for_every_click() {
    let auth = start_protected().await;
    let server = tourguide(&auth, "shared").await;
    let admin = server.signed_in("demo").await;
    let got = admin.http.get(format!("{}/mcp/oauth/start?server=crm", admin.base)).send().await.unwrap();
    assert_eq!(got.status().as_u16(), 405, "a link or an image on any page cannot begin a sign-in");
    let cross_site = admin
        .http
        .post(format!("{}/mcp/oauth/start", admin.base))
        .header("origin", "https://evil.example")
        .form(&[("server", "crm")])
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status().as_u16(), 403);
    assert_eq!(server.store().pending_mcp_sign_ins().await.unwrap(), 0);
    assert!(auth.clients.lock().unwrap().is_empty(), "nothing registered");
    let page = admin.http.get(format!("{}/tools", admin.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains(r#"action="/mcp/oauth/start""#), "the page's Connect is a form: {page}");

    // Three clicks, two of them left unfinished: one client.
    consent(&admin, "crm").await;
    consent(&admin, "crm").await;
    assert_eq!(location(&connect(&admin, "crm").await), "/tools");
    assert_eq!(auth.clients.lock().unwrap().len(), 1, "one registration for the server and its callback");
    server.stop().await;
}

/// Issue 62: without `--public-url` the callback address would come from the request's Host
/// header: Connect says what is missing, and nothing is registered or begun.
#[tokio::test]
async fn without_a_public_url_connect_says_what_is_missing_and_begins_nothing() {
    let auth = start_protected().await;
    let mcp = json!({ "mcpServers": { "crm": { "url": auth.resource(), "auth": "oauth", "oauthMode": "shared" } } });
    let server = TestServer::start_adjusted(|config| {
        config.mcp = Some(mcp::McpConfig::parse(&mcp.to_string()).unwrap());
        config.token_key = server::token_key::TokenKey::parse(KEY);
    })
    .await;
    let admin = server.signed_in("demo").await;
    let (status, page) = sentence(start(&admin, "crm").await).await;
    assert_eq!(status, 503);
    assert!(page.contains("--public-url"), "{page}");
    assert!(auth.clients.lock().unwrap().is_empty(), "nothing registered");
    assert_eq!(server.store().pending_mcp_sign_ins().await.unwrap(), 0);
    server.stop().await;
}

/// Issue 62: a server that names the real authorization server at Connect and another one
/// later: the code (with its verifier) and the refresh token go to the one the sign-in began
/// with or nowhere, and the Tools page says why the server is off.
#[tokio::test]
async fn an_authorization_server_named_later_gets_neither_the_code_nor_a_refresh_token() {
    let auth = start_protected().await;
    let evil = start_protected().await;
    let server = tourguide(&auth, "shared").await;
    let admin = server.signed_in("demo").await;

    // Begun with the real one; the callback comes while the server names the other.
    let callback = consent(&admin, "crm").await;
    *auth.names_instead.lock().unwrap() = Some(evil.origin.clone());
    let (status, page) = sentence(admin.http.get(&callback).send().await.unwrap()).await;
    assert_eq!(status, 400);
    assert!(page.contains("another authorization server than expected"), "{page}");
    assert!(evil.resources.lock().unwrap().is_empty(), "the other one was sent no code");
    assert_eq!(stored(&server, None).await, None);

    // Signed in with the real one; later (Tourguide stopped, so nothing of it refreshes at the real
    // one meanwhile) the server names the other, and the access token has run out.
    *auth.names_instead.lock().unwrap() = None;
    assert_eq!(location(&connect(&admin, "crm").await), "/tools");
    let kept = stored(&server, None).await.unwrap();
    let dir = server.stop().await;
    let refreshed = auth.refreshed.load(Ordering::SeqCst);
    *auth.names_instead.lock().unwrap() = Some(evil.origin.clone());
    auth.expire_access_tokens();
    let server = tourguide_in(&auth, "shared", dir).await;
    let admin = server.signed_in("demo").await;
    let mut shown = Value::Null;
    for _ in 0..200 {
        shown = crm(&admin).await;
        if shown["status"]["problem"]["kind"] == "authorization_server_changed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(shown["status"]["problem"]["kind"], "authorization_server_changed", "{shown}");
    let page = admin.http.get(format!("{}/tools", admin.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("names another sign-in service than the one it was connected with"), "{page}");
    assert!(evil.resources.lock().unwrap().is_empty(), "the other one was sent no refresh token");
    assert!(evil.clients.lock().unwrap().is_empty());
    assert_eq!(auth.refreshed.load(Ordering::SeqCst), refreshed, "no refresh went anywhere");
    assert_eq!(stored(&server, None).await, Some(kept), "the sign-in is kept as it was");
    server.stop().await;
}
