//! Starts a real server on a free loopback port with its own database file.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use db::Location;
use runtime::{Completion, CompletionRequest, ModelProvider, ProviderError};
use serde_json::Value;
use server::config::Config;
use server::store::Store;
use server::{Running, Services};
use tokio::sync::Semaphore;

pub const PASSWORD: &str = "test-password";

/// Short, so that work a stopped server left behind is taken over soon after a restart (on
/// PostgreSQL only the lease tells a dead worker from a slow one). Heartbeats keep it while
/// the work goes on.
pub const LEASE: Duration = Duration::from_secs(3);

/// No request in these tests takes more than a moment; one that hangs fails the test by name
/// instead of stalling the whole run.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

pub struct TestServer {
    pub running: Option<Running>,
    pub base: String,
    pub dir: tempfile::TempDir,
}

/// Where the database of the test that owns `dir` lives: a SQLite file in it, or, when
/// `TOURGUIDE_TEST_POSTGRES` names a server, a database of its own there. The choice is written
/// into `dir`, so a server restarted on the same folder finds the same database.
/// A server function's error as a JSON client reads it: its code and the sentence (English).
pub fn refused(code: &str, message: &str) -> Value {
    serde_json::json!({ "code": code, "message": message })
}

pub async fn location_in(dir: &tempfile::TempDir) -> Location {
    let marker = dir.path().join("postgres-url");
    if let Ok(url) = std::fs::read_to_string(&marker) {
        return Location::Postgres(url);
    }
    match db::scratch_postgres().await.expect("a scratch PostgreSQL database") {
        Some(url) => {
            std::fs::write(&marker, &url).unwrap();
            Location::Postgres(url)
        }
        None => Location::Sqlite(dir.path().join("test.db")),
    }
}

/// The configuration a test server runs with, on the test's database.
pub async fn config_in(dir: &tempfile::TempDir, worker: bool) -> Config {
    Config {
        database: location_in(dir).await,
        address: "127.0.0.1:0".parse().unwrap(),
        site_root: dir.path().join("site").display().to_string(),
        demo_password: Some(PASSWORD.to_string()),
        worker,
        web: true,
        worker_jobs: server::config::DEFAULT_WORKER_JOBS,
        lease: LEASE,
        mcp: None,
        attachment_limit: server::config::DEFAULT_ATTACHMENT_LIMIT_MIB * 1024 * 1024,
        waiting_expiry: server::config::DEFAULT_WAITING_EXPIRY,
        reminder_after: None,
        json_logs: false,
        // Tests sign many clients in as one user from one address; `accounts.rs` tests the limit.
        login_attempts: std::num::NonZeroU32::new(100_000).unwrap(),
        session_length: Duration::from_secs(14 * 86_400),
        metrics_token: None,
        mail: None,
        public_url: None,
        trusted_proxies: Default::default(),
        token_key: None,
        // The tests' receivers listen on 127.0.0.1.
        webhook_private_networks: true,
    }
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with(Arc::new(demo::DemoProvider)).await
    }

    pub async fn start_with(provider: Arc<dyn ModelProvider>) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        Self::start_in(dir, provider).await
    }

    pub async fn start_in(dir: tempfile::TempDir, provider: Arc<dyn ModelProvider>) -> TestServer {
        Self::start_services(dir, Services::new(provider)).await
    }

    pub async fn start_services(dir: tempfile::TempDir, services: Services) -> TestServer {
        Self::start_configured(dir, services, true).await
    }

    /// `worker: false` is a web-only process: answers are recorded and nobody takes them.
    pub async fn start_configured(dir: tempfile::TempDir, services: Services, worker: bool) -> TestServer {
        let config = config_in(&dir, worker).await;
        let running = server::serve(&config, services).await.expect("server starts");
        let base = format!("http://{}", running.address.expect("the server listens"));
        TestServer { running: Some(running), base, dir }
    }

    /// A server with the demo model and the test configuration as `adjust` leaves it.
    pub async fn start_adjusted(adjust: impl FnOnce(&mut Config)) -> TestServer {
        Self::start_adjusted_in(tempfile::tempdir().unwrap(), adjust).await
    }

    /// [`TestServer::start_adjusted`] on the database of `dir` (a restart, say).
    pub async fn start_adjusted_in(dir: tempfile::TempDir, adjust: impl FnOnce(&mut Config)) -> TestServer {
        let mut config = config_in(&dir, true).await;
        adjust(&mut config);
        let running = server::serve(&config, Services::new(Arc::new(demo::DemoProvider))).await.expect("server starts");
        let base = format!("http://{}", running.address.expect("the server listens"));
        TestServer { running: Some(running), base, dir }
    }

    /// A server whose waiting runs expire after `expiry`.
    pub async fn start_expiring(services: Services, expiry: Duration) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config_in(&dir, true).await;
        config.waiting_expiry = expiry;
        let running = server::serve(&config, services).await.expect("server starts");
        let base = format!("http://{}", running.address.expect("the server listens"));
        TestServer { running: Some(running), base, dir }
    }

    /// A server with the demo model that takes tools from the MCP servers in `mcp` (the shared
    /// `mcpServers` format).
    pub async fn start_with_mcp(mcp: Value) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config_in(&dir, true).await;
        config.mcp = Some(mcp::McpConfig::parse(&mcp.to_string()).expect("a valid MCP configuration"));
        let running = server::serve(&config, Services::new(Arc::new(demo::DemoProvider))).await.expect("server starts");
        let base = format!("http://{}", running.address.expect("the server listens"));
        TestServer { running: Some(running), base, dir }
    }

    pub fn store(&self) -> &Store {
        &self.running.as_ref().unwrap().store
    }

    /// The conversation's lines as stored: the assistant's in the Markdown it wrote, which the
    /// page gets only as HTML.
    pub async fn transcript(&self, id: &str) -> Vec<String> {
        db::on!(self.store().db(), pool => sqlx::query_scalar("SELECT content FROM messages WHERE conversation_id = $1 ORDER BY id")
            .bind(id)
            .fetch_all(pool)
            .await)
        .unwrap()
    }

    /// Runs one statement on the database, whichever it is.
    pub async fn exec(&self, sql: &'static str) {
        db::on!(self.store().db(), pool => sqlx::query(sql).execute(pool).await.map(|done| done.rows_affected()))
            .unwrap_or_else(|error| panic!("{sql}: {error}"));
    }

    pub fn runtime(&self) -> &runtime::Runtime {
        &self.running.as_ref().unwrap().runtime
    }

    pub async fn stop(mut self) -> tempfile::TempDir {
        self.running.take().unwrap().stop().await;
        self.dir
    }

    pub fn client(&self) -> Client {
        Client::new(&self.base)
    }

    pub async fn signed_in(&self, username: &str) -> Client {
        if username != "demo" {
            let hash = server::auth::hash_password(PASSWORD);
            self.store().create_user(username, &hash).await.unwrap();
        }
        let client = self.client();
        client.sign_in(username).await;
        client
    }
}

/// The transcript as its message texts, in order.
pub fn texts(conversation: &Value) -> Vec<String> {
    conversation["messages"].as_array().unwrap().iter().map(text).collect()
}

/// A line's text as the reader sees it: the reader's own lines as written, an assistant's line
/// (sent as HTML alone) with its tags left out and its entities read back.
pub fn text(message: &Value) -> String {
    if let Some(html) = message["html"].as_str() {
        let mut text = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => text.push(c),
                _ => {}
            }
        }
        return text
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&amp;", "&")
            .trim_end()
            .to_string();
    }
    message["content"].as_str().expect("a line has its text or its HTML").to_string()
}

pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
}

impl Client {
    /// A browser-like client of the server at `base`: cookies kept, redirects shown, not followed.
    pub fn new(base: &str) -> Client {
        Client {
            http: reqwest::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: base.to_string(),
        }
    }

    pub async fn sign_in(&self, username: &str) {
        let response = self.call("login", &[("username", username), ("password", PASSWORD)]).await;
        assert!(response.status().is_success() || response.status().is_redirection(), "{}", response.status());
    }

    /// Calls a server function the way the WASM client does: a form-encoded POST to /api/NAME.
    pub async fn call(&self, name: &str, form: &[(&str, &str)]) -> reqwest::Response {
        self.http.post(format!("{}/api/{name}", self.base)).form(form).send().await.unwrap()
    }

    /// The status and the body (JSON if it is; an error is [`refused`]'s shape).
    pub async fn call_json(&self, name: &str, form: &[(&str, &str)]) -> (u16, Value) {
        let response = self.call(name, form).await;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    pub async fn create_conversation(&self) -> String {
        let (status, value) = self.call_json("create_conversation", &[]).await;
        assert!(status < 400, "create failed: {status} {value}");
        value.as_str().expect("the id").to_string()
    }

    pub async fn conversation(&self, id: &str) -> (u16, Value) {
        self.call_json("conversation", &[("id", id)]).await
    }

    /// Polls until the conversation leaves `processing`, as the page does.
    pub async fn settled_conversation(&self, id: &str) -> Value {
        // A bound for a hung test, not a measure: a loaded machine may take a while (a worker
        // taking over a dead one's job waits out its heartbeat), and a test waits for the event.
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        while std::time::Instant::now() < deadline {
            let (status, value) = self.conversation(id).await;
            assert_eq!(status, 200, "{value}");
            if value["status"] != "processing" {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("conversation {id} never settled");
    }

    /// Declines the question `conversation` shows, waits until the turn has gone on to its end
    /// (idle), and returns the transcript's last line: what the model said of the decline.
    pub async fn declined(&self, id: &str, conversation: &Value) -> String {
        let digest = conversation["question"]["digest"].as_str().expect("a question");
        let (status, body) =
            self.call_json("answer", &[("conversation_id", id), ("digest", digest), ("decline", "1")]).await;
        assert_eq!(status, 200, "{body}");
        let conversation = self.settled_conversation(id).await;
        assert_eq!(conversation["status"], "idle", "{conversation}");
        texts(&conversation).pop().expect("a line")
    }
}

/// Looks every 100 ms until `look` gives at least `count` of what a test receiver took (30 s at
/// most), and returns them; `what` names them if they never come.
pub async fn at_least<T>(count: usize, what: &str, look: impl Fn() -> Vec<T>) -> Vec<T> {
    for _ in 0..300 {
        let got = look();
        if got.len() >= count {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the receiver got {} {what}, not {count}", look().len());
}

/// A provider that answers only when the test lets it, so a turn can be held in flight.
pub struct GatedProvider {
    pub gate: Semaphore,
}

impl GatedProvider {
    pub fn new() -> Arc<GatedProvider> {
        Arc::new(GatedProvider { gate: Semaphore::new(0) })
    }
}

#[async_trait]
impl ModelProvider for GatedProvider {
    fn label(&self) -> String {
        "Gated test model".into()
    }

    fn is_demo(&self) -> bool {
        false
    }

    async fn complete(&self, request: CompletionRequest) -> Result<Completion, ProviderError> {
        let permit = self.gate.acquire().await.map_err(|_| ProviderError::Connection("closed".into()))?;
        permit.forget();
        let turns = request.messages.len();
        Ok(Completion { content: format!("released after {turns} messages"), tool_calls: Vec::new() })
    }
}

/// A provider whose service is down.
pub struct BrokenProvider;

#[async_trait]
impl ModelProvider for BrokenProvider {
    fn label(&self) -> String {
        "Broken test model".into()
    }

    fn is_demo(&self) -> bool {
        false
    }

    async fn complete(&self, _request: CompletionRequest) -> Result<Completion, ProviderError> {
        Err(ProviderError::Connection("connection refused by 10.1.2.3:443 (secret detail)".into()))
    }
}
