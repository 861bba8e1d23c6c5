//! One configured MCP server as the hub keeps it: how it is doing, the tools it offers now, and
//! the pool of connections its calls take (signed in as the call's owner, for an OAuth server).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use runtime::RegisteredTool;
use tokio::sync::mpsc;

use crate::config::{ServerConfig, Transport};
use crate::oauth::{Access, RefreshLocks, TokenOwner, TokenVault};
use crate::problem::{Failure, Problem};
use crate::session::Session;

/// Idle call connections kept per server; more are closed once their call is done.
const IDLE_SESSIONS: usize = 2;

/// How a server is doing, for the UI. Why it is down is a kind; the library's own words, which
/// may name the URL with its key, go to the log only (redacted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    Starting,
    Ready,
    /// An OAuth server nobody has connected yet: shared, an admin connects it; per user, its
    /// tools are listed once a first user has connected.
    SignInNeeded,
    /// It failed or died; the next attempt comes after `retry_in`.
    Down {
        problem: Problem,
        retry_in: Duration,
    },
}

pub(crate) struct Server {
    pub config: ServerConfig,
    pub state: Mutex<ServerState>,
    pub tools: RwLock<BTreeMap<String, RegisteredTool>>,
    pub idle: Mutex<Vec<Session>>,
    /// Set once the server turned out to speak only the older handshake.
    pub older: AtomicBool,
    /// The supervisor's ear for "the tools changed", which a server may say on any connection.
    pub tools_changed: Mutex<Option<mpsc::UnboundedSender<()>>>,
    /// Where OAuth tokens are kept (a server without OAuth has none to keep).
    pub vault: Option<Arc<dyn TokenVault>>,
    pub locks: Arc<RefreshLocks>,
    /// Told when a sign-in to this server was made or forgotten here.
    pub signed_in: Arc<tokio::sync::Notify>,
    /// True once the first attempt to list its tools ended (listed, failed, or waiting for a
    /// sign-in): before that, a tool of this server that is missing is not gone, just not here yet.
    pub first_listing: tokio::sync::watch::Sender<bool>,
}

impl Server {
    /// A configured server, not connected yet; `vault` keeps its OAuth tokens, if it signs in so.
    pub fn new(config: ServerConfig, vault: Option<Arc<dyn TokenVault>>, locks: Arc<RefreshLocks>) -> Server {
        Server {
            config,
            state: Mutex::new(ServerState::Starting),
            tools: RwLock::default(),
            idle: Mutex::default(),
            older: AtomicBool::new(false),
            tools_changed: Mutex::default(),
            vault,
            locks,
            signed_in: Arc::new(tokio::sync::Notify::new()),
            first_listing: tokio::sync::watch::Sender::new(false),
        }
    }

    /// A connection for one call, signed in as `owner` for an OAuth server: an idle one, or a new
    /// one. `Err` is a sentence for the model that names the kind of problem (its detail goes to
    /// the log).
    pub async fn take_session(&self, owner: Option<TokenOwner>) -> Result<Session, String> {
        self.connect_for_call(owner).await.map_err(|failure| {
            let problem = failure.detail(&self.config);
            tracing::warn!(server = %self.config.name, %problem, "no MCP connection for a call");
            failure.sentence(&self.config)
        })
    }

    /// The sign-in `owner`'s requests carry; `None` for a server without OAuth (or without a vault).
    pub fn access(&self, owner: Option<TokenOwner>) -> Option<Access> {
        Some(Access {
            vault: self.vault.clone()?,
            owner: owner?,
            locks: self.locks.clone(),
            changed: self.signed_in.clone(),
        })
    }

    /// Whether `owner` has a sign-in to this server.
    pub async fn connected(&self, owner: TokenOwner) -> Result<bool, String> {
        match &self.vault {
            Some(vault) => Ok(vault.load(&self.config.name, owner).await?.is_some()),
            None => Ok(false),
        }
    }

    /// The server refused `owner`'s tokens (and a refresh, if any, did not help): they are
    /// forgotten, and the owner connects again.
    pub async fn forget_refused(&self, owner: TokenOwner) {
        let Some(vault) = &self.vault else { return };
        match vault.clear(&self.config.name, owner).await {
            Ok(true) => {
                tracing::warn!(server = %self.config.name, "the MCP server refused the sign-in's tokens; they are forgotten");
                self.signed_in.notify_one();
            }
            Ok(false) => {}
            Err(error) => tracing::error!(server = %self.config.name, %error, "a refused sign-in cannot be forgotten"),
        }
    }

    async fn connect_for_call(&self, owner: Option<TokenOwner>) -> Result<Session, Failure> {
        loop {
            let idle = {
                let mut idle = self.idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                idle.iter().rposition(|session| session.owner == owner).map(|at| idle.remove(at))
            };
            match idle {
                Some(session) if session.is_closed() => continue,
                Some(session) => return Ok(session),
                None => {
                    let changed = self.tools_changed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
                    let access = self.access(owner);
                    let connected = Session::connect_as(&self.config, &self.older, changed, access.as_ref()).await;
                    if let (Err(failure), Some(owner)) = (&connected, owner) {
                        if failure.problem == Problem::CredentialsRefused {
                            self.forget_refused(owner).await;
                        }
                    }
                    let session = connected?;
                    if matches!(self.config.transport, Transport::Http { .. }) {
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

    pub fn set_state(&self, state: ServerState) {
        let settled = state != ServerState::Starting;
        *self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = state;
        if settled {
            self.first_listing.send_if_modified(|done| !std::mem::replace(done, true));
        }
    }

    /// Returns once the first attempt to list this server's tools ended, or after `limit`.
    pub async fn first_listing(&self, limit: Duration) {
        let mut listed = self.first_listing.subscribe();
        let _ = tokio::time::timeout(limit, listed.wait_for(|done| *done)).await;
    }

    pub fn publish(&self, tools: BTreeMap<String, RegisteredTool>) {
        *self.tools.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = tools;
    }
}
