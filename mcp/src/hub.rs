//! The MCP servers of a process: one supervisor per server keeps a connection that lists its
//! tools (again when the server says they changed), reconnects with a growing pause when the
//! server fails or dies, and publishes the tools to the runtime as a [`ToolSource`]. Calls take a
//! connection of their own from a small pool, so a question a server asks belongs to one call.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use runtime::{RegisteredTool, ToolRegistry, ToolSource};
use tokio::sync::{mpsc, watch};

use crate::config::{McpConfig, Place, ServerConfig};
use crate::live::LiveCalls;
use crate::problem::{Failure, Problem};
use crate::session::Session;
use crate::tool::McpTool;

const FIRST_RETRY: Duration = Duration::from_secs(1);
const LAST_RETRY: Duration = Duration::from_secs(60);
/// Idle call connections kept per server; more are closed once their call is done.
const IDLE_SESSIONS: usize = 2;

/// How a server is doing, for the UI. Why it is down is a kind; the library's own words, which
/// may name the URL with its key, go to the log only (redacted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    Starting,
    Ready,
    /// It failed or died; the next attempt comes after `retry_in`.
    Down {
        problem: Problem,
        retry_in: Duration,
    },
}

/// A server as the UI shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerView {
    pub name: String,
    /// Where it is, secrets masked: for an admin's eyes.
    pub place: Place,
    pub state: ServerState,
    /// Its tools as offered (full names, effects, descriptions).
    pub tools: Vec<Arc<runtime::ToolSpec>>,
}

pub(crate) struct Server {
    pub config: ServerConfig,
    state: Mutex<ServerState>,
    tools: RwLock<BTreeMap<String, RegisteredTool>>,
    idle: Mutex<Vec<Session>>,
    /// Set once the server turned out to speak only the older handshake.
    older: AtomicBool,
    /// The supervisor's ear for "the tools changed", which a server may say on any connection.
    tools_changed: Mutex<Option<mpsc::UnboundedSender<()>>>,
}

impl Server {
    /// A connection for one call: an idle one, or a new one. `Err` is a sentence for the model
    /// that names the kind of problem (its detail goes to the log).
    pub async fn take_session(&self) -> Result<Session, String> {
        self.connect_for_call().await.map_err(|failure| {
            let problem = failure.detail(&self.config);
            tracing::warn!(server = %self.config.name, %problem, "no MCP connection for a call");
            failure.sentence(&self.config)
        })
    }

    async fn connect_for_call(&self) -> Result<Session, Failure> {
        loop {
            let idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).pop();
            match idle {
                Some(session) if session.is_closed() => continue,
                Some(session) => return Ok(session),
                None => {
                    let changed = self.tools_changed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
                    let session = Session::connect(&self.config, &self.older, changed).await?;
                    if matches!(self.config.transport, crate::config::Transport::Http { .. }) {
                        // The HTTP transport mirrors arguments a tool marks (`x-mcp-header`) into
                        // request headers, from the tool list it saw on this connection.
                        session
                            .service
                            .peer()
                            .list_all_tools()
                            .await
                            .map_err(|error| Failure::of_request(&error, &self.config))?;
                    }
                    return Ok(session);
                }
            }
        }
    }

    /// A connection whose call is done goes back to the pool (or is closed).
    pub fn give_back(&self, session: Session) {
        session.detach();
        let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if idle.len() < IDLE_SESSIONS && !session.is_closed() {
            idle.push(session);
        }
    }

    fn set_state(&self, state: ServerState) {
        *self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = state;
    }

    fn publish(&self, tools: BTreeMap<String, RegisteredTool>) {
        *self.tools.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = tools;
    }
}

pub(crate) struct Inner {
    pub servers: Vec<Arc<Server>>,
    /// Built-in tool names: an MCP tool never takes one.
    pub reserved: HashSet<String>,
    pub live: Arc<LiveCalls>,
    pub elicitation_timeout: Duration,
    pub call_timeout: Duration,
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
        let reserved = registry.names().map(str::to_string).collect();
        let servers: Vec<Arc<Server>> = config
            .servers
            .into_iter()
            .map(|config| {
                Arc::new(Server {
                    config,
                    state: Mutex::new(ServerState::Starting),
                    tools: RwLock::default(),
                    idle: Mutex::default(),
                    older: AtomicBool::new(false),
                    tools_changed: Mutex::default(),
                })
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
            })
            .collect()
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

    pub fn elicitation_timeout(&self) -> Duration {
        self.inner.elicitation_timeout
    }
}

struct Source(Arc<Inner>);

impl ToolSource for Source {
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
        let (server_name, _) = name.split_once('.')?;
        let server = self.0.servers.iter().find(|server| server.config.name == server_name)?;
        server.tools.read().unwrap_or_else(|poisoned| poisoned.into_inner()).get(name).cloned()
    }

    fn expired_while_absent(&self, name: &str, state: &serde_json::Value) -> Option<Option<String>> {
        let (server_name, _) = name.split_once('.')?;
        self.0.servers.iter().find(|server| server.config.name == server_name)?;
        Some(crate::tool::expired(&self.0.live, state))
    }
}

/// Keeps one server connected and its tools published, for as long as the process runs.
async fn supervise(inner: Arc<Inner>, server: Arc<Server>, mut shutdown: watch::Receiver<bool>) {
    let name = server.config.name.clone();
    let mut retry = FIRST_RETRY;
    loop {
        let (changed, mut tools_changed) = mpsc::unbounded_channel();
        *server.tools_changed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(changed.clone());
        let outcome = match Session::connect(&server.config, &server.older, Some(changed)).await {
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
                        }
                    };
                }
                result
            }
            Err(problem) => Err(problem),
        };
        let failure = outcome.err().unwrap_or_else(|| Failure::gone(&server.config));
        // Its tools are not there while it is down: the chat goes on with the others.
        server.publish(BTreeMap::new());
        server.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
        let problem = failure.detail(&server.config);
        tracing::warn!(server = %name, kind = ?failure.problem, %problem, retry_in = ?retry, "MCP server is down");
        server.set_state(ServerState::Down { problem: failure.problem, retry_in: retry });
        tokio::select! {
            () = tokio::time::sleep(retry) => {}
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
        let tool = McpTool::new(inner.clone(), server.clone(), remote);
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
