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

/// A configured value shorter than this is not masked on its own: `"1"` would mask every digit.
const SHORTEST_SECRET: usize = 4;

/// `text` as the log may keep it: each URL's query values and userinfo masked (`?api_key=***`,
/// `https://***@host`), each of `secrets` (and each longer word of one, such as the token of
/// `Bearer …`) masked wherever it appears, and Rust type paths
/// (`rmcp::transport::worker::WorkerTransport<…>`) left out.
pub fn redact(text: &str, secrets: &[&str]) -> String {
    let mut masked = text.to_string();
    let mut words: Vec<&str> = Vec::new();
    for secret in secrets {
        words.push(secret.trim());
        words.extend(secret.split_whitespace().filter(|word| word.len() >= 8));
    }
    // The longest first, so a value is masked whole before a word of it is.
    words.sort_by_key(|word| std::cmp::Reverse(word.len()));
    for word in words.into_iter().filter(|word| word.len() >= SHORTEST_SECRET) {
        masked = masked.replace(word, "***");
    }
    strip_type_paths(&mask_urls(&masked))
}

/// Where a URL in running text ends.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | '}')
}

fn mask_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The scheme: the letters before `://`.
        let scheme_start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |index| index + 1);
        if scheme_start == at {
            out.push_str(&rest[..at + 3]);
            rest = &rest[at + 3..];
            continue;
        }
        out.push_str(&rest[..scheme_start]);
        let url_end = rest[at + 3..].find(ends_url).map_or(rest.len(), |index| at + 3 + index);
        out.push_str(&mask_url(&rest[scheme_start..url_end]));
        rest = &rest[url_end..];
    }
    out.push_str(rest);
    out
}

/// One URL with its userinfo and query values masked; the rest as it was.
pub fn mask_url(url: &str) -> String {
    let Some(at) = url.find("://") else { return url.to_string() };
    let (scheme, after) = url.split_at(at + 3);
    let authority_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, path) = after.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(index) => format!("***{}", &authority[index..]),
        None => authority.to_string(),
    };
    let (path, fragment) = match path.find('#') {
        Some(index) => path.split_at(index),
        None => (path, ""),
    };
    let path = match path.split_once('?') {
        Some((path, query)) => {
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) => format!("{key}=***"),
                    None => pair.to_string(),
                })
                .collect();
            format!("{path}?{}", pairs.join("&"))
        }
        None => path.to_string(),
    };
    format!("{scheme}{authority}{path}{fragment}")
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Leaves out every `a::b…` path, with its generic arguments (`<…>`, nested).
fn strip_type_paths(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    while index < chars.len() {
        let starts_word = is_ident_start(chars[index]) && (index == 0 || !is_ident(chars[index - 1]));
        if starts_word {
            let mut end = index;
            while end < chars.len() && is_ident(chars[end]) {
                end += 1;
            }
            let mut segments = 1;
            while end + 2 < chars.len() && chars[end] == ':' && chars[end + 1] == ':' && is_ident_start(chars[end + 2])
            {
                end += 2;
                while end < chars.len() && is_ident(chars[end]) {
                    end += 1;
                }
                segments += 1;
            }
            if segments > 1 {
                if end < chars.len() && chars[end] == '<' {
                    let mut depth = 0;
                    while end < chars.len() {
                        match chars[end] {
                            '<' => depth += 1,
                            '>' => depth -= 1,
                            _ => {}
                        }
                        end += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                }
                out.push_str("(…)");
                index = end;
                continue;
            }
            out.extend(&chars[index..end]);
            index = end;
            continue;
        }
        out.push(chars[index]);
        index += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_userinfo_and_configured_secrets_are_masked() {
        assert_eq!(
            redact("error sending request for url (https://mcp.example.com/mcp?api_key=s3cret&x=1)", &[]),
            "error sending request for url (https://mcp.example.com/mcp?api_key=***&x=***)"
        );
        assert_eq!(redact("to https://ann:pw@host:8080/p#top, then", &[]), "to https://***@host:8080/p#top, then");
        assert_eq!(
            redact("sent Authorization: Bearer tok-123456789 and TOKEN=abcd", &["Bearer tok-123456789", "abcd"]),
            "sent Authorization: *** and TOKEN=***"
        );
        assert_eq!(redact("the token tok-123456789 alone", &["Bearer tok-123456789"]), "the token *** alone");
        assert_eq!(redact("value 1 stays", &["1"]), "value 1 stays", "too short to mask alone");
        assert_eq!(redact("ipv6 http://[::1]:9/x?k=v", &[]), "ipv6 http://[::1]:9/x?k=***");
        assert_eq!(mask_url("https://mcp.example.com/mcp?api_key=abc"), "https://mcp.example.com/mcp?api_key=***");
    }

    #[test]
    fn rust_type_paths_are_left_out() {
        assert_eq!(
            redact(
                "Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::\
                 StreamableHttpClientWorker<reqwest::async_impl::client::Client>>] error: Client error",
                &[]
            ),
            "Transport [(…)] error: Client error"
        );
        assert_eq!(redact("a std::io::Error here; time 12:30", &[]), "a (…) here; time 12:30");
    }

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
