//! The MCP servers of a process: one supervisor per server keeps a connection that lists its
//! tools (again when the server says they changed), reconnects with a growing pause when the
//! server fails or dies, and publishes the tools to the runtime as a [`ToolSource`]. Calls take a
//! connection of their own from a small pool, so a question a server asks belongs to one call.
//!
//! A server that signs in with OAuth is connected with a sign-in's tokens: the shared one, or
//! for a per-user server, to list its tools, any user's (each call then uses its caller's own).
//! Until there is one it waits ([`ServerState::SignInNeeded`]), and is told when one is made.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use runtime::{RegisteredTool, ToolRegistry, ToolSource};
use tokio::sync::{mpsc, watch};

use crate::config::{McpConfig, OAuthMode, Place, ServerConfig};
use crate::live::LiveCalls;
use crate::oauth::{OAuthFailure, RefreshLocks, Started, TokenOwner, TokenVault};
use crate::problem::{Failure, Problem};
use crate::server::{Server, ServerState};
use crate::session::Session;
use crate::tool::McpTool;

const FIRST_RETRY: Duration = Duration::from_secs(1);
const LAST_RETRY: Duration = Duration::from_secs(60);
/// How often a server that waits for a sign-in looks again (one made in another process).
const SIGN_IN_CHECK: Duration = Duration::from_secs(5);

/// A server as the UI shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerView {
    pub name: String,
    /// Where it is, secrets masked: for an admin's eyes.
    pub place: Place,
    pub state: ServerState,
    /// Its tools as offered (full names, effects, descriptions).
    pub tools: Vec<Arc<runtime::ToolSpec>>,
    /// How it signs in, when with OAuth.
    pub oauth: Option<OAuthMode>,
}

struct Inner {
    servers: Vec<Arc<Server>>,
    /// Built-in tool names: an MCP tool never takes one.
    reserved: HashSet<String>,
    live: Arc<LiveCalls>,
    elicitation_timeout: Duration,
    call_timeout: Duration,
}

/// The MCP servers of this process. Cheap to clone.
#[derive(Clone)]
pub struct McpHub {
    inner: Arc<Inner>,
}

impl McpHub {
    /// Starts a supervisor per configured server (they connect in the background: the chat does
    /// not wait for a slow or broken server). `registry` is checked so no MCP tool takes the name
    /// of a built-in one.
    pub fn start(config: McpConfig, registry: &ToolRegistry, shutdown: watch::Receiver<bool>) -> McpHub {
        McpHub::start_with_vault(config, registry, shutdown, None)
    }

    /// [`McpHub::start`], with the vault that keeps the OAuth servers' tokens (without one, an
    /// OAuth server waits for a sign-in that cannot be made).
    pub fn start_with_vault(
        config: McpConfig,
        registry: &ToolRegistry,
        shutdown: watch::Receiver<bool>,
        vault: Option<Arc<dyn TokenVault>>,
    ) -> McpHub {
        let reserved = registry.names().map(str::to_string).collect();
        let locks = Arc::new(RefreshLocks::default());
        let servers: Vec<Arc<Server>> = config
            .servers
            .into_iter()
            .map(|config| {
                let vault = vault.clone().filter(|_| config.oauth.is_some());
                Arc::new(Server::new(config, vault, locks.clone()))
            })
            .collect();
        let inner = Arc::new(Inner {
            servers: servers.clone(),
            reserved,
            live: Arc::new(LiveCalls::new(config.elicitation_timeout)),
            elicitation_timeout: config.elicitation_timeout,
            call_timeout: config.call_timeout,
        });
        for server in servers {
            tokio::spawn(supervise(inner.clone(), server, shutdown.clone()));
        }
        McpHub { inner }
    }

    /// The runtime's view of these servers' tools.
    pub fn source(&self) -> Arc<dyn ToolSource> {
        Arc::new(Source(self.inner.clone()))
    }

    pub fn servers(&self) -> Vec<ServerView> {
        self.inner
            .servers
            .iter()
            .map(|server| ServerView {
                name: server.config.name.clone(),
                place: server.config.place(),
                state: server.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone(),
                tools: server
                    .tools
                    .read()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .values()
                    .map(|tool| tool.spec.clone())
                    .collect(),
                oauth: server.config.oauth.as_ref().map(|oauth| oauth.mode),
            })
            .collect()
    }

    fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.inner.servers.iter().find(|server| server.config.name == name)
    }

    /// How the server signs in, when it is configured here with OAuth.
    pub fn oauth_mode(&self, server: &str) -> Option<OAuthMode> {
        self.server(server)?.config.oauth.as_ref().map(|oauth| oauth.mode)
    }

    /// Whether `owner` has a sign-in to `server`. `Err` is for the log.
    pub async fn connected(&self, server: &str, owner: TokenOwner) -> Result<bool, String> {
        match self.server(server) {
            Some(found) => found.connected(owner).await,
            None => Ok(false),
        }
    }

    /// Begins a sign-in to `server`; the browser goes to [`Started::url`]. A failure's detail is
    /// masked for the log.
    pub async fn begin_sign_in(&self, server: &str, redirect_uri: &str) -> Result<Started, OAuthFailure> {
        let found = self.oauth_server(server)?;
        crate::oauth::begin(&found.config, redirect_uri, found.vault.as_ref())
            .await
            .map_err(|failure| masked(failure, &found.config))
    }

    /// Finishes a sign-in with the callback's `code` (and `iss`, when it names one); the tokens
    /// are kept for `owner`, and the server's connection is made with them.
    pub async fn finish_sign_in(
        &self,
        server: &str,
        owner: TokenOwner,
        pending: &str,
        code: &str,
        issuer: Option<&str>,
    ) -> Result<(), OAuthFailure> {
        let found = self.oauth_server(server)?;
        let access = found.access(Some(owner)).ok_or_else(|| OAuthFailure {
            problem: crate::oauth::OAuthProblem::Storage,
            detail: "no token vault".to_string(),
        })?;
        crate::oauth::finish(&found.config, &access, pending, code, issuer)
            .await
            .map_err(|failure| masked(failure, &found.config))?;
        tracing::info!(server = %server, shared = (owner == TokenOwner::Shared), "signed in to an MCP server");
        found.signed_in.notify_one();
        Ok(())
    }

    /// Forgets `owner`'s sign-in to `server` (its idle connections close); true when there was
    /// one. `Err` is for the log.
    pub async fn sign_out(&self, server: &str, owner: TokenOwner) -> Result<bool, String> {
        let Some(found) = self.server(server) else { return Ok(false) };
        let Some(vault) = &found.vault else { return Ok(false) };
        let forgotten = vault.clear(server, owner).await?;
        found
            .idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .retain(|session| session.owner != Some(owner));
        found.signed_in.notify_one();
        Ok(forgotten)
    }

    fn oauth_server(&self, name: &str) -> Result<&Arc<Server>, OAuthFailure> {
        self.server(name).filter(|server| server.config.oauth.is_some() && server.vault.is_some()).ok_or_else(|| {
            OAuthFailure {
                problem: crate::oauth::OAuthProblem::NotOAuth,
                detail: format!("{name} does not sign in with OAuth here"),
            }
        })
    }

    /// Waits until every server is ready or has failed once (for tools and tests that need the
    /// tools listed before they go on), at most `limit`.
    pub async fn settled(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            if self.servers().iter().all(|server| server.state != ServerState::Starting) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// On SQLite one worker runs per database, so a question a previous process left waiting on a
    /// live connection can no longer be answered: say so, and it is withdrawn at once.
    pub fn previous_processes_are_gone(&self) {
        self.inner.live.others_gone.store(true, Ordering::SeqCst);
    }

    /// This process's name in the questions it holds (see [`McpHub::workers_alive`]).
    pub fn instance(&self) -> &str {
        &self.inner.live.instance
    }

    /// The worker processes alive now (by their heartbeats, under the names [`McpHub::instance`]
    /// gave them): a question held by any other is withdrawn at once instead of at its time limit.
    pub fn workers_alive(&self, instances: HashSet<String>) {
        self.inner.live.workers_alive(instances);
    }

    /// Worker `instance` is known to have stopped (its heartbeat lapsed) before the next
    /// [`McpHub::workers_alive`] says so.
    pub fn worker_stopped(&self, instance: &str) {
        self.inner.live.worker_stopped(instance);
    }

    pub fn elicitation_timeout(&self) -> Duration {
        self.inner.elicitation_timeout
    }
}

/// How long a process that has just started waits for a server's first listing before it runs
/// a tool: the connection's own limit, and its `tools/list`.
const FIRST_LISTING_LIMIT: Duration = Duration::from_secs(crate::session::CONNECT_TIMEOUT.as_secs() + 10);

struct Source(Arc<Inner>);

impl Source {
    fn server_of(&self, name: &str) -> Option<&Arc<Server>> {
        let (server_name, _) = name.split_once('.')?;
        self.0.servers.iter().find(|server| server.config.name == server_name)
    }
}

#[async_trait::async_trait]
impl ToolSource for Source {
    async fn first_listing(&self) {
        // Side by side: the wait is the slowest server's, not their sum.
        let servers = self.0.servers.iter().map(|server| server.first_listing(FIRST_LISTING_LIMIT));
        futures::future::join_all(servers).await;
    }

    fn still_listing(&self, name: &str) -> bool {
        self.server_of(name).is_some_and(|server| !*server.first_listing.borrow())
    }

    fn tools(&self) -> Vec<RegisteredTool> {
        self.0
            .servers
            .iter()
            .flat_map(|server| {
                server
                    .tools
                    .read()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .values()
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn get(&self, name: &str) -> Option<RegisteredTool> {
        self.server_of(name)?.tools.read().unwrap_or_else(|poisoned| poisoned.into_inner()).get(name).cloned()
    }

    fn expired_while_absent(&self, name: &str, state: &serde_json::Value) -> Option<Option<String>> {
        self.server_of(name)?;
        Some(crate::tool::expired(&self.0.live, state))
    }

    fn held_by_while_absent(&self, name: &str, state: &serde_json::Value) -> Option<Option<String>> {
        self.server_of(name)?;
        Some(crate::tool::held_by(state))
    }
}

fn masked(failure: OAuthFailure, config: &ServerConfig) -> OAuthFailure {
    OAuthFailure { problem: failure.problem, detail: crate::redact(&failure.detail, &config.secrets()) }
}

/// Whose sign-in the supervisor's connection uses: `Ok(None)` for a server without OAuth,
/// `Err(())` while there is none to use.
async fn supervisor_owner(server: &Server) -> Result<Option<TokenOwner>, ()> {
    let Some(oauth) = &server.config.oauth else { return Ok(None) };
    let Some(vault) = &server.vault else { return Err(()) };
    let found = match oauth.mode {
        OAuthMode::Shared => {
            vault.load(&server.config.name, TokenOwner::Shared).await.map(|stored| stored.map(|_| TokenOwner::Shared))
        }
        OAuthMode::PerUser => vault.any_user(&server.config.name).await.map(|user| user.map(TokenOwner::User)),
    };
    match found {
        Ok(Some(owner)) => Ok(Some(owner)),
        Ok(None) => Err(()),
        Err(error) => {
            tracing::error!(server = %server.config.name, %error, "the MCP server's sign-in cannot be read");
            Err(())
        }
    }
}

/// Keeps one server connected and its tools published, for as long as the process runs.
async fn supervise(inner: Arc<Inner>, server: Arc<Server>, mut shutdown: watch::Receiver<bool>) {
    let name = server.config.name.clone();
    let mut retry = FIRST_RETRY;
    loop {
        let Ok(owner) = supervisor_owner(&server).await else {
            // Nothing to connect with: no tools until a sign-in is made (here, or in another
            // process, which a look now and then finds).
            server.publish(BTreeMap::new());
            server.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
            server.set_state(ServerState::SignInNeeded);
            tokio::select! {
                () = server.signed_in.notified() => {}
                () = tokio::time::sleep(SIGN_IN_CHECK) => {}
                _ = shutdown.changed() => return,
            }
            retry = FIRST_RETRY;
            continue;
        };
        let (changed, mut tools_changed) = mpsc::unbounded_channel();
        *server.tools_changed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(changed.clone());
        let access = server.access(owner);
        let outcome = match Session::connect_as(&server.config, &server.older, Some(changed), access.as_ref()).await {
            Ok(session) => {
                tracing::info!(server = %name, "MCP server connected");
                retry = FIRST_RETRY;
                let mut result = list(&inner, &server, &session).await;
                if result.is_ok() {
                    server.set_state(ServerState::Ready);
                    // Lists again whenever the server says its tools changed; ends when it dies.
                    result = loop {
                        tokio::select! {
                            changed = tools_changed.recv() => {
                                if changed.is_none() {
                                    break Err(Failure::gone(&server.config));
                                }
                                if let Err(problem) = list(&inner, &server, &session).await {
                                    break Err(problem);
                                }
                                tracing::info!(server = %name, "MCP tools listed again");
                            }
                            () = tokio::time::sleep(Duration::from_millis(500)) => {
                                if session.is_closed() {
                                    break Err(Failure::gone(&server.config));
                                }
                            }
                            _ = shutdown.changed() => return,
                            // A sign-in made or forgotten: the one this connection uses may be gone.
                            () = server.signed_in.notified(), if owner.is_some() => {
                                let still = match owner {
                                    Some(owner) => server.connected(owner).await,
                                    None => Ok(true),
                                };
                                if still == Ok(false) {
                                    break Err(Failure::new(Problem::CredentialsRefused, "the sign-in was forgotten"));
                                }
                            }
                        }
                    };
                }
                result
            }
            Err(problem) => Err(problem),
        };
        let failure = outcome.err().unwrap_or_else(|| Failure::gone(&server.config));
        if let (Some(owner), Problem::CredentialsRefused) = (owner, failure.problem) {
            // The next round waits for a sign-in instead.
            server.forget_refused(owner).await;
        }
        // Its tools are not there while it is down: the chat goes on with the others.
        server.publish(BTreeMap::new());
        server.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
        let problem = failure.detail(&server.config);
        tracing::warn!(server = %name, kind = ?failure.problem, %problem, retry_in = ?retry, "MCP server is down");
        server.set_state(ServerState::Down { problem: failure.problem, retry_in: retry });
        tokio::select! {
            () = tokio::time::sleep(retry) => {}
            // A new sign-in is worth a try at once.
            () = server.signed_in.notified(), if server.config.oauth.is_some() => {}
            _ = shutdown.changed() => return,
        }
        retry = (retry * 2).min(LAST_RETRY);
        server.set_state(ServerState::Starting);
    }
}

/// Lists the server's tools and publishes them under `server.tool`, each checked by the
/// registry's rules; a tool whose name is taken or whose declaration is unusable is refused
/// with a log line, the others are offered.
async fn list(inner: &Arc<Inner>, server: &Arc<Server>, session: &Session) -> Result<(), Failure> {
    let listed =
        session.service.peer().list_all_tools().await.map_err(|error| Failure::of_request(&error, &server.config))?;
    let mut tools = BTreeMap::new();
    let mut seen = HashMap::new();
    for remote in listed {
        let tool = McpTool::new(inner.live.clone(), inner.call_timeout, server.clone(), remote);
        let full = tool.full_name().to_string();
        if inner.reserved.contains(&full) {
            tracing::warn!(tool = %full, "an MCP tool has the name of a built-in tool; refused");
            continue;
        }
        if seen.insert(full.clone(), ()).is_some() {
            tracing::warn!(tool = %full, "the MCP server lists this tool twice; the second is refused");
            continue;
        }
        match ToolRegistry::check(Arc::new(tool)) {
            Ok(registered) => {
                tools.insert(full, registered);
            }
            Err(error) => tracing::warn!(tool = %full, %error, "an MCP tool cannot be offered; refused"),
        }
    }
    server.publish(tools);
    Ok(())
}
