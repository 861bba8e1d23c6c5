//! One connection to an MCP server through rmcp, and the client side of it: what we declare
//! (elicitation, form mode with our own checks, and URL mode), where a server's
//! `elicitation/create` goes, and its notice that the step behind a link is done.
//!
//! A connection carries at most one `tools/call` at a time, so a question that arrives on it
//! belongs to that call: nothing in the protocol ties the two together otherwise.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CustomNotification, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, UrlElicitationCapability,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RequestContext, RoleClient, RunningService,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData as McpError};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::config::{ServerConfig, Transport};
use crate::problem::{Failure, Problem};

/// How long connecting (spawning and the handshake) may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A question a server asked over a live connection, and where its answer goes.
pub(crate) struct LiveAsk {
    pub params: ElicitRequestParams,
    pub reply: oneshot::Sender<ElicitResult>,
    /// For a link to open (URL mode): set when the server says the step there is done
    /// (`notifications/elicitation/complete`).
    pub completed: Arc<AtomicBool>,
}

/// The server's notice that the step behind a link it asked the user to open is done.
const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

/// The links asked for on one connection and not yet done, by their `elicitationId`.
type Links = Arc<Mutex<HashMap<String, Arc<AtomicBool>>>>;

type AskSlot = Arc<Mutex<Option<mpsc::UnboundedSender<LiveAsk>>>>;

/// Our side of one connection.
#[derive(Clone)]
pub(crate) struct Handler {
    /// The call in flight on this connection, if any, hears the questions.
    asks: AskSlot,
    /// Told when the server's tool list changed.
    tools_changed: Option<mpsc::UnboundedSender<()>>,
    links: Links,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        let mut form = FormElicitationCapability::new();
        // The chat checks every answer against the schema before it goes back.
        form.schema_validation = Some(true);
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(form);
        // A link is shown with its host and opened only by the reader's click (a new tab).
        elicitation.url = Some(UrlElicitationCapability::new());
        capabilities.elicitation = Some(elicitation);
        ClientConfig::new(capabilities, Implementation::new("tourguide", env!("CARGO_PKG_VERSION")))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let listener = self.asks.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        // A question outside a call (or after it) has nobody to ask.
        let Some(listener) = listener else { return Ok(ElicitResult::new(ElicitationAction::Decline)) };
        let (reply, answer) = oneshot::channel();
        let completed = Arc::new(AtomicBool::new(false));
        let link = match &request {
            ElicitRequestParams::UrlElicitationParams { elicitation_id, .. } if !elicitation_id.is_empty() => {
                Some(elicitation_id.clone())
            }
            _ => None,
        };
        if let Some(id) = &link {
            self.links.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(id.clone(), completed.clone());
        }
        if listener.send(LiveAsk { params: request, reply, completed }).is_err() {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        let result = tokio::select! {
            answer = answer => Ok(answer.unwrap_or_else(|_| ElicitResult::new(ElicitationAction::Cancel))),
            // The server gave up on its question (its own time limit): nothing to send back.
            () = context.ct.cancelled() => Ok(ElicitResult::new(ElicitationAction::Cancel)),
        };
        if let Some(id) = link {
            self.links.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&id);
        }
        result
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method != ELICITATION_COMPLETE {
            return;
        }
        let id = notification.params.as_ref().and_then(|params| params["elicitationId"].as_str());
        let links = self.links.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // One of ours still open; any other id (answered already, or never asked) means nothing.
        if let Some(completed) = id.and_then(|id| links.get(id)) {
            completed.store(true, Ordering::SeqCst);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(changed) = &self.tools_changed {
            let _ = changed.send(());
        }
    }
}

/// A live connection.
pub(crate) struct Session {
    pub service: RunningService<RoleClient, Handler>,
    asks: AskSlot,
    /// Whose OAuth sign-in its requests carry (`None`: the server has no OAuth).
    pub owner: Option<crate::oauth::TokenOwner>,
}

impl Session {
    /// Connects to the server; `tools_changed` hears of changes to its tool list. A server that
    /// fails the newer handshake is spoken to the older way, from then on (`older`).
    /// `access`: the OAuth sign-in its requests carry, for a server that wants one.
    pub async fn connect_as(
        config: &ServerConfig,
        older: &AtomicBool,
        tools_changed: Option<mpsc::UnboundedSender<()>>,
        access: Option<&crate::oauth::Access>,
    ) -> Result<Session, Failure> {
        let asks: AskSlot = Arc::default();
        let handler = Handler { asks: asks.clone(), tools_changed, links: Links::default() };
        let attempt = |lifecycle| {
            let handler = handler.clone();
            async move {
                tokio::time::timeout(CONNECT_TIMEOUT, serve(config, handler, lifecycle, access)).await.unwrap_or_else(
                    |_| {
                        let waited = format!("no answer within {} s", CONNECT_TIMEOUT.as_secs());
                        Err(Attempt::Start(Failure::new(Problem::TimedOut, waited)))
                    },
                )
            }
        };
        let service = if older.load(Ordering::Relaxed) {
            attempt(ClientLifecycleMode::Initialize).await
        } else {
            match attempt(newest_first()).await {
                // Some servers answer `server/discover` with something that is neither a result
                // nor "unknown method"; the older handshake alone may still work.
                Err(Attempt::Handshake(failure)) => {
                    let problem = failure.detail(config);
                    tracing::info!(server = %config.name, %problem, "the newer MCP handshake failed; trying the older one");
                    let service = attempt(ClientLifecycleMode::Initialize).await;
                    if service.is_ok() {
                        older.store(true, Ordering::Relaxed);
                    }
                    service
                }
                other => other,
            }
        }
        .map_err(Attempt::failure)?;
        Ok(Session { service, asks, owner: access.map(|access| access.owner) })
    }

    /// Questions on this connection go to `listener` until [`Session::detach`].
    pub fn attach(&self, listener: mpsc::UnboundedSender<LiveAsk>) {
        *self.asks.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(listener);
    }

    pub fn detach(&self) {
        *self.asks.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
    }

    pub fn is_closed(&self) -> bool {
        self.service.is_closed()
    }
}

enum Attempt {
    /// Before the protocol began: the process or the address.
    Start(Failure),
    Handshake(Failure),
}

impl Attempt {
    fn failure(self) -> Failure {
        match self {
            Attempt::Start(failure) | Attempt::Handshake(failure) => failure,
        }
    }
}

async fn serve(
    config: &ServerConfig,
    handler: Handler,
    lifecycle: ClientLifecycleMode,
    access: Option<&crate::oauth::Access>,
) -> Result<RunningService<RoleClient, Handler>, Attempt> {
    match &config.transport {
        Transport::Stdio { command, args, env, cwd } => {
            let mut process = tokio::process::Command::new(command);
            process.args(args).envs(env).kill_on_drop(true);
            if let Some(cwd) = cwd {
                process.current_dir(cwd);
            }
            let (transport, stderr) =
                TokioChildProcess::builder(process).stderr(std::process::Stdio::piped()).spawn().map_err(|error| {
                    Attempt::Start(Failure::new(Problem::CannotStart, format!("cannot start {command:?}: {error}")))
                })?;
            if let Some(stderr) = stderr {
                // What the server says on stderr belongs in our log, not in the protocol.
                let server = config.name.clone();
                tokio::spawn(async move {
                    let mut lines = BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tracing::debug!(server = %server, "{line}");
                    }
                });
            }
            handler
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|error| Attempt::Handshake(Failure::of_handshake(&error, config)))
        }
        Transport::Http { url, headers } => {
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let misconfigured = |error: String| Attempt::Start(Failure::new(Problem::Misconfigured, error));
                let name =
                    http::HeaderName::from_bytes(name.as_bytes()).map_err(|error| misconfigured(error.to_string()))?;
                let value = http::HeaderValue::from_str(value).map_err(|error| misconfigured(error.to_string()))?;
                custom.insert(name, value);
            }
            let transport_config = StreamableHttpClientTransportConfig::with_uri(url.clone()).custom_headers(custom);
            let Some(access) = access else {
                let transport = StreamableHttpClientTransport::from_config(transport_config);
                return handler
                    .serve_with_lifecycle(transport, lifecycle)
                    .await
                    .map_err(|error| Attempt::Handshake(Failure::of_handshake(&error, config)));
            };
            let client = crate::oauth::authorized_client(config, access).await.map_err(|unsigned| {
                Attempt::Start(match unsigned {
                    crate::oauth::Unsigned::NotConnected => {
                        Failure::new(Problem::CredentialsRefused, "nobody is signed in to this server")
                    }
                    crate::oauth::Unsigned::Failed(failure) => {
                        let problem = match failure.problem {
                            crate::oauth::OAuthProblem::IssuerMismatch => Problem::AuthorizationServerChanged,
                            _ => Problem::Unreachable,
                        };
                        Failure::new(problem, failure.detail)
                    }
                })
            })?;
            let transport = StreamableHttpClientTransport::with_client(client, transport_config);
            handler
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|error| Attempt::Handshake(Failure::of_handshake(&error, config)))
        }
    }
}

/// The newest revision first (`server/discover`, durable questions in a call's result); a server
/// that answers it as unknown is spoken to the older way (`initialize`).
fn newest_first() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto { preferred_versions: vec![ProtocolVersion::V_2026_07_28], legacy_version: None }
}
