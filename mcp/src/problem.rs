//! Why an MCP server is not connected, as a kind the UI can say in a sentence of its own, and the
//! raw detail for the log with its secrets masked.
//!
//! rmcp's errors are written for developers: a connection error names the server's URL with its
//! query (where an `api_key` often sits) and the transport's Rust type. Nobody but the log sees
//! that text, and the log sees it through [`redact`].

use std::error::Error;

use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::config::{ServerConfig, Transport};
use crate::masking::redact;

/// Why a server is down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// Its command could not be started (not found, not allowed to run).
    CannotStart,
    /// Its process ended.
    Exited,
    /// Its address could not be reached (the name, the connection, TLS).
    Unreachable,
    /// The connection to it closed.
    Disconnected,
    /// It answered with an HTTP error status.
    Refused { status: u16 },
    /// It refused the credentials (401, 403).
    CredentialsRefused,
    /// It answered, but the MCP handshake did not complete.
    Handshake,
    /// It did not answer in time.
    TimedOut,
    /// It broke the protocol (an answer that is not MCP, an error where a list was due).
    Protocol,
    /// The configuration cannot be used as given (a header value that is not one).
    Misconfigured,
    /// Its metadata now names another authorization server than the one it was signed in with:
    /// nothing (no refresh token, no secret) goes to the new one until it is connected again.
    AuthorizationServerChanged,
}

/// A failure: its kind, and what the library said (unredacted; see [`Failure::detail`]).
#[derive(Debug)]
pub(crate) struct Failure {
    pub problem: Problem,
    raw: String,
}

impl Failure {
    pub fn new(problem: Problem, raw: impl Into<String>) -> Failure {
        Failure { problem, raw: raw.into() }
    }

    /// The handshake (or the start before it) failed.
    pub fn of_handshake(error: &ClientInitializeError, config: &ServerConfig) -> Failure {
        Failure::new(initialize_problem(error, is_stdio(config)), error.to_string())
    }

    /// A request on a connection failed.
    pub fn of_request(error: &ServiceError, config: &ServerConfig) -> Failure {
        Failure::new(service_problem(error, is_stdio(config)), error.to_string())
    }

    /// The connection ended while it was in use.
    pub fn gone(config: &ServerConfig) -> Failure {
        let problem = if is_stdio(config) { Problem::Exited } else { Problem::Disconnected };
        Failure::new(problem, "the connection closed")
    }

    /// The library's text with this server's secrets masked: for the log.
    pub fn detail(&self, config: &ServerConfig) -> String {
        redact(&self.raw, &config.secrets())
    }

    /// A sentence for the model when a call cannot get a connection: the kind, never the detail.
    pub fn sentence(&self, config: &ServerConfig) -> String {
        let name = &config.name;
        match self.problem {
            Problem::CannotStart => format!("the MCP server {name} could not be started"),
            Problem::Exited => format!("the MCP server {name} stopped"),
            Problem::Unreachable => format!("the MCP server {name} could not be reached"),
            Problem::Disconnected => format!("the connection to the MCP server {name} closed"),
            Problem::Refused { status } => format!("the MCP server {name} refused the request (HTTP {status})"),
            Problem::CredentialsRefused => format!("the MCP server {name} refused the credentials"),
            Problem::Handshake => format!("the MCP handshake with {name} failed"),
            Problem::TimedOut => format!("the MCP server {name} did not answer in time"),
            Problem::Protocol => format!("the MCP server {name} did not answer as MCP"),
            Problem::Misconfigured => format!("the MCP server {name} is not configured correctly"),
            Problem::AuthorizationServerChanged => {
                format!("the MCP server {name} now names another sign-in service than the one it was connected with")
            }
        }
    }
}

fn is_stdio(config: &ServerConfig) -> bool {
    matches!(config.transport, Transport::Stdio { .. })
}

fn initialize_problem(error: &ClientInitializeError, stdio: bool) -> Problem {
    let closed = if stdio { Problem::Exited } else { Problem::Disconnected };
    match error {
        ClientInitializeError::ConnectionClosed(_) | ClientInitializeError::Cancelled => closed,
        ClientInitializeError::TransportError { error, .. } => transport_problem(error.error.as_ref(), stdio),
        // The newer handshake failed and so did the older one: the older one's reason is the
        // server's (the newer one may just be unknown to it).
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => initialize_problem(fallback, stdio),
        _ => Problem::Handshake,
    }
}

fn service_problem(error: &ServiceError, stdio: bool) -> Problem {
    match error {
        ServiceError::TransportSend(error) => transport_problem(error.error.as_ref(), stdio),
        ServiceError::TransportClosed | ServiceError::Cancelled { .. } => {
            if stdio {
                Problem::Exited
            } else {
                Problem::Disconnected
            }
        }
        ServiceError::Timeout { .. } => Problem::TimedOut,
        _ => Problem::Protocol,
    }
}

/// The transport's own error, by its type: the HTTP client's (reqwest inside rmcp's streamable
/// HTTP error) or an I/O error, anywhere in the chain.
fn transport_problem(error: &(dyn Error + Send + Sync + 'static), stdio: bool) -> Problem {
    let mut current: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(error) = current {
        if let Some(http) = error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return http_problem(http);
        }
        if let Some(client) = error.downcast_ref::<reqwest::Error>() {
            return reqwest_problem(client);
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return io_problem(io, stdio);
        }
        current = error.source();
    }
    Problem::Protocol
}

fn http_problem(error: &StreamableHttpError<reqwest::Error>) -> Problem {
    match error {
        StreamableHttpError::Client(client) => reqwest_problem(client),
        StreamableHttpError::HttpStatus(status) => refused(status.status),
        StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_) => Problem::CredentialsRefused,
        // An OAuth sign-in that is no good any more; a refresh that failed on the way (the
        // authorization server away, the vault) is not a refusal, and forgets nothing.
        StreamableHttpError::Auth(
            rmcp::transport::auth::AuthError::AuthorizationRequired
            | rmcp::transport::auth::AuthError::TokenRefreshRejected(_),
        ) => Problem::CredentialsRefused,
        StreamableHttpError::Auth(_) => Problem::Unreachable,
        StreamableHttpError::Io(io) => io_problem(io, false),
        StreamableHttpError::UnexpectedEndOfStream
        | StreamableHttpError::TransportChannelClosed
        | StreamableHttpError::SessionExpired => Problem::Disconnected,
        StreamableHttpError::ControlRequestTimeout | StreamableHttpError::SessionRecoveryTimeout => Problem::TimedOut,
        StreamableHttpError::ReservedHeaderConflict(_) => Problem::Misconfigured,
        // A POST's error status (other than 429 and 5xx) comes only as text: "HTTP 401 Unauthorized: <body>".
        StreamableHttpError::UnexpectedServerResponse(text) => text
            .strip_prefix("HTTP ")
            .and_then(|rest| rest.get(..3))
            .and_then(|status| status.parse::<u16>().ok())
            .map_or(Problem::Protocol, refused),
        _ => Problem::Protocol,
    }
}

fn reqwest_problem(error: &reqwest::Error) -> Problem {
    if let Some(status) = error.status() {
        return refused(status.as_u16());
    }
    if error.is_timeout() {
        Problem::TimedOut
    } else if error.is_decode() || error.is_body() {
        Problem::Protocol
    } else {
        Problem::Unreachable
    }
}

fn io_problem(error: &std::io::Error, stdio: bool) -> Problem {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::TimedOut => Problem::TimedOut,
        ErrorKind::BrokenPipe
        | ErrorKind::UnexpectedEof
        | ErrorKind::ConnectionReset
        | ErrorKind::ConnectionAborted
            if stdio =>
        {
            Problem::Exited
        }
        ErrorKind::BrokenPipe
        | ErrorKind::UnexpectedEof
        | ErrorKind::ConnectionReset
        | ErrorKind::ConnectionAborted => Problem::Disconnected,
        ErrorKind::InvalidData => Problem::Protocol,
        _ if stdio => Problem::Exited,
        _ => Problem::Unreachable,
    }
}

fn refused(status: u16) -> Problem {
    if status == 401 || status == 403 {
        Problem::CredentialsRefused
    } else {
        Problem::Refused { status }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One server, read as the configuration file gives it.
    fn configured(entry: serde_json::Value) -> ServerConfig {
        let file = serde_json::json!({ "mcpServers": { "remote": entry } });
        crate::config::McpConfig::parse(&file.to_string()).unwrap().servers.remove(0)
    }

    fn http(url: String, headers: &[(&str, &str)]) -> ServerConfig {
        let headers: serde_json::Map<String, serde_json::Value> =
            headers.iter().map(|(name, value)| (name.to_string(), (*value).into())).collect();
        configured(serde_json::json!({ "url": url, "headers": headers }))
    }

    async fn connect(config: &ServerConfig) -> Failure {
        let older = std::sync::atomic::AtomicBool::new(false);
        match crate::session::Session::connect_as(config, &older, None, None).await {
            Ok(_) => panic!("{} connected", config.name),
            Err(failure) => failure,
        }
    }

    /// A server on 127.0.0.1 that answers every request with `status`.
    async fn answering(status: u16) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let status = http::StatusCode::from_u16(status).unwrap();
        // It names what it was sent, as some servers do in an error's body.
        let app = axum::Router::new().fallback(move |uri: http::Uri| async move { (status, format!("no: {uri}")) });
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{address}/mcp?api_key=s3cret-key")
    }

    // rmcp's own texts, not ones written here: what a closed port, a refused key and a broken
    // server make it say, and what of that the log keeps.
    #[tokio::test]
    async fn a_closed_port_is_unreachable_and_its_key_stays_out_of_the_log() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = http(format!("http://user:pw@127.0.0.1:{port}/mcp?api_key=s3cret-key"), &[]);
        let failure = connect(&config).await;
        assert_eq!(failure.problem, Problem::Unreachable, "{failure:?}");
        assert!(failure.raw.contains("api_key=s3cret-key"), "the library's text has the key: {}", failure.raw);
        let detail = failure.detail(&config);
        assert!(!detail.contains("s3cret") && !detail.contains("pw@"), "{detail}");
        assert!(!detail.contains("::"), "{detail}");
        assert!(!failure.sentence(&config).contains("s3cret"));
    }

    #[tokio::test]
    async fn a_refused_key_and_an_error_status_are_told_apart() {
        let config = http(answering(401).await, &[("Authorization", "Bearer tok-0123456789")]);
        let failure = connect(&config).await;
        assert_eq!(failure.problem, Problem::CredentialsRefused, "{failure:?}");
        assert!(failure.raw.contains("api_key=s3cret-key"), "the library's text has the key: {}", failure.raw);
        let detail = failure.detail(&config);
        assert!(!detail.contains("s3cret") && !detail.contains("tok-0123456789") && !detail.contains("::"), "{detail}");

        let config = http(answering(503).await, &[]);
        assert_eq!(connect(&config).await.problem, Problem::Refused { status: 503 });
        let config = http(answering(404).await, &[]);
        assert_eq!(connect(&config).await.problem, Problem::Refused { status: 404 });
    }

    #[tokio::test]
    async fn a_command_that_is_missing_or_ends_at_once_is_named_so() {
        let stdio = |command: &str, args: &[&str]| {
            configured(serde_json::json!({ "command": command, "args": args, "env": { "API_TOKEN": "env-s3cret" } }))
        };
        let missing = stdio("/nonexistent/mcp-server", &[]);
        assert_eq!(connect(&missing).await.problem, Problem::CannotStart);
        let ends = stdio("sh", &["-c", "echo env-s3cret >&2; exit 3"]);
        let failure = connect(&ends).await;
        assert_eq!(failure.problem, Problem::Exited, "{failure:?}");
        assert!(!failure.detail(&ends).contains("env-s3cret"));
    }
}
