//! The MCP configuration file, in the format MCP clients already share:
//!
//! ```json
//! { "mcpServers": {
//!     "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/site"] },
//!     "search": { "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer …" },
//!                 "trust": { "lookup": "read_only" }, "closedWorld": ["lookup"] } },
//!   "elicitationTimeoutSeconds": 600, "callTimeoutSeconds": 300 }
//! ```
//!
//! A server runs as a child process (`command`, `args`, `env`, `cwd`) or is reached over
//! streamable HTTP (`url`, `headers`). `trust` overrides the effect of a tool its annotations give.
//!
//! An HTTP server may want OAuth 2.1 instead of a static header (`"auth": "oauth"`, the MCP
//! authorization spec): `"oauthMode": "shared"` is one sign-in an admin makes for everyone,
//! `"per_user"` has each user connect their own account. `oauthClientId` (and
//! `oauthClientSecret`) name a client registered beforehand; without them the client registers
//! itself (dynamic client registration), once per server and callback address. The authorization
//! server its metadata names may be at a private address only when the server's own URL is
//! (`"oauthPrivateAddresses": true` allows it for a public URL too).
//!
//! `closedWorld` names the tools (their MCP names) the admin trusts not to carry what they are
//! given beyond their own server, whatever their `openWorldHint` says (the spec's default is open
//! world). An open-world tool that only reads still waits for an approval card once its
//! conversation holds outside content (an attachment, an earlier MCP result), since a prompt
//! injection there could make the model send the conversation out through its arguments; a
//! tool listed here runs without that card, and each such call is logged with its run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use runtime::ToolEffect;
use serde::Deserialize;

/// How long a question an MCP server asks over a live connection may wait for its answer.
pub const DEFAULT_ELICITATION_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a tool call may take (not counting the time a question of its waits for the user).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, PartialEq)]
pub struct McpConfig {
    pub servers: Vec<ServerConfig>,
    pub elicitation_timeout: Duration,
    pub call_timeout: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The prefix of its tools' names: `name.tool`.
    pub name: String,
    pub transport: Transport,
    /// Per tool (its MCP name), the effect to use instead of the one its annotations give.
    pub trust: BTreeMap<String, ToolEffect>,
    /// Tools (their MCP names) trusted not to reach the open world, whatever their annotations say.
    pub closed_world: BTreeSet<String>,
    /// Signs in with OAuth 2.1 (HTTP servers only).
    pub oauth: Option<OAuthConfig>,
}

/// How an HTTP server's OAuth sign-in is made and whose it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthConfig {
    pub mode: OAuthMode,
    /// A client registered with the authorization server beforehand; `None`: dynamic registration.
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// The authorization server the server's metadata names may be at a private address
    /// (`"oauthPrivateAddresses": true`). Without it, only when the server's own URL names a
    /// private or loopback address; link-local and metadata addresses never.
    pub private_addresses: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthMode {
    /// One sign-in, made by an admin, for every user's calls.
    Shared,
    /// Each user connects their own account; a call of a user who has not waits until they do.
    PerUser,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Stdio { command: String, args: Vec<String>, env: BTreeMap<String, String>, cwd: Option<PathBuf> },
    Http { url: String, headers: BTreeMap<String, String> },
}

/// Where a server is, as an admin may see it: the URL with its query values and userinfo masked,
/// or the command's program name (its arguments and environment may carry keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Url(String),
    Program(String),
}

impl ServerConfig {
    /// The configured values that may be secrets, for masking wherever they turn up (a server may
    /// echo its address): environment and header values, the URL's query values and userinfo.
    pub fn secrets(&self) -> Vec<&str> {
        match &self.transport {
            Transport::Stdio { env, .. } => env.values().map(String::as_str).collect(),
            Transport::Http { url, headers } => {
                let mut secrets: Vec<&str> = headers.values().map(String::as_str).collect();
                secrets.extend(self.oauth.as_ref().and_then(|oauth| oauth.client_secret.as_deref()));
                let after_scheme = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
                let authority = after_scheme.split(['/', '?', '#']).next().unwrap_or_default();
                if let Some((userinfo, _)) = authority.rsplit_once('@') {
                    secrets.push(userinfo);
                }
                if let Some((_, query)) = url.split_once('?') {
                    let query = query.split('#').next().unwrap_or_default();
                    secrets.extend(query.split('&').filter_map(|pair| pair.split_once('=')).map(|(_, value)| value));
                }
                secrets
            }
        }
    }

    pub fn place(&self) -> Place {
        match &self.transport {
            Transport::Http { url, .. } => Place::Url(crate::masking::mask_url(url)),
            Transport::Stdio { command, .. } => Place::Program(
                Path::new(command)
                    .file_name()
                    .map_or_else(|| command.clone(), |name| name.to_string_lossy().into_owned()),
            ),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum McpConfigError {
    #[error("cannot read the MCP configuration {path}: {problem}")]
    Unreadable { path: String, problem: String },
    #[error("the MCP configuration {path} is not valid: {problem}")]
    Invalid { path: String, problem: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    mcp_servers: BTreeMap<String, Entry>,
    #[serde(default)]
    elicitation_timeout_seconds: Option<u64>,
    #[serde(default)]
    call_timeout_seconds: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    trust: BTreeMap<String, String>,
    #[serde(default, rename = "closedWorld")]
    closed_world: Vec<String>,
    /// Written by some clients; the transport follows from `command` or `url` here.
    #[serde(rename = "type")]
    _kind: Option<String>,
    auth: Option<String>,
    #[serde(rename = "oauthMode", alias = "oauth_mode")]
    oauth_mode: Option<String>,
    #[serde(rename = "oauthClientId", alias = "oauth_client_id")]
    oauth_client_id: Option<String>,
    #[serde(rename = "oauthClientSecret", alias = "oauth_client_secret")]
    oauth_client_secret: Option<String>,
    #[serde(rename = "oauthPrivateAddresses", alias = "oauth_private_addresses")]
    oauth_private_addresses: Option<bool>,
}

impl McpConfig {
    /// Whether a server signs in with OAuth, whose tokens are kept encrypted with a key.
    pub fn wants_token_key(&self) -> bool {
        self.servers.iter().any(|server| server.oauth.is_some())
    }

    pub fn load(path: &Path) -> Result<McpConfig, McpConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|error| McpConfigError::Unreadable { path: shown.clone(), problem: error.to_string() })?;
        McpConfig::parse(&text).map_err(|problem| McpConfigError::Invalid { path: shown, problem })
    }

    /// `Err` is a sentence naming the problem.
    pub fn parse(text: &str) -> Result<McpConfig, String> {
        let file: File = serde_json::from_str(text).map_err(|error| error.to_string())?;
        let mut servers = Vec::with_capacity(file.mcp_servers.len());
        for (name, entry) in file.mcp_servers {
            servers.push(server(name, entry)?);
        }
        let elicitation_timeout = match file.elicitation_timeout_seconds {
            None => DEFAULT_ELICITATION_TIMEOUT,
            Some(seconds @ 1..=86_400) => Duration::from_secs(seconds),
            Some(other) => return Err(format!("elicitationTimeoutSeconds {other} is not from 1 to 86400")),
        };
        let call_timeout = match file.call_timeout_seconds {
            None => DEFAULT_CALL_TIMEOUT,
            Some(seconds @ 1..=3_600) => Duration::from_secs(seconds),
            Some(other) => return Err(format!("callTimeoutSeconds {other} is not from 1 to 3600")),
        };
        Ok(McpConfig { servers, elicitation_timeout, call_timeout })
    }
}

fn server(name: String, entry: Entry) -> Result<ServerConfig, String> {
    let valid_name =
        !name.is_empty() && name.len() <= 32 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_name {
        return Err(format!(
            "server name {name:?} must be 1 to 32 letters, digits, '_' or '-' (it prefixes its tools' names)"
        ));
    }
    let transport = match (entry.command, entry.url) {
        (Some(command), None) => {
            if command.trim().is_empty() {
                return Err(format!("server {name:?} has an empty command"));
            }
            if !entry.headers.is_empty() {
                return Err(format!("server {name:?} runs a command; headers belong to a url"));
            }
            Transport::Stdio { command, args: entry.args, env: entry.env, cwd: entry.cwd }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("server {name:?} has url {url:?}, which is not an http:// or https:// address"));
            }
            if !entry.args.is_empty() || !entry.env.is_empty() || entry.cwd.is_some() {
                return Err(format!("server {name:?} has a url; args, env and cwd belong to a command"));
            }
            for header in entry.headers.keys() {
                if http::HeaderName::from_bytes(header.as_bytes()).is_err() {
                    return Err(format!("server {name:?} has header {header:?}, which is not a header name"));
                }
            }
            Transport::Http { url, headers: entry.headers }
        }
        (Some(_), Some(_)) => return Err(format!("server {name:?} has both a command and a url; give one")),
        (None, None) => return Err(format!("server {name:?} needs a command (a local server) or a url")),
    };
    let mut trust = BTreeMap::new();
    for (tool, effect) in entry.trust {
        let parsed = ToolEffect::parse(&effect).ok_or_else(|| {
            format!(
                "server {name:?}: trust for tool {tool:?} is {effect:?}; use read_only, idempotent_write or \
                 non_idempotent_write"
            )
        })?;
        trust.insert(tool, parsed);
    }
    let mut closed_world = BTreeSet::new();
    for tool in entry.closed_world {
        if tool.trim().is_empty() {
            return Err(format!("server {name:?}: closedWorld names an empty tool name"));
        }
        if !closed_world.insert(tool.clone()) {
            return Err(format!("server {name:?}: closedWorld names tool {tool:?} twice"));
        }
    }
    let private = entry.oauth_private_addresses;
    let oauth =
        oauth(&name, &transport, entry.auth, entry.oauth_mode, entry.oauth_client_id, entry.oauth_client_secret)?
            .map(|oauth| OAuthConfig { private_addresses: private.unwrap_or(false), ..oauth });
    if private.is_some() && oauth.is_none() {
        return Err(format!("server {name:?}: oauthPrivateAddresses needs \"auth\": \"oauth\""));
    }
    Ok(ServerConfig { name, transport, trust, closed_world, oauth })
}

fn oauth(
    name: &str,
    transport: &Transport,
    auth: Option<String>,
    mode: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
) -> Result<Option<OAuthConfig>, String> {
    match auth.as_deref() {
        None if mode.is_some() || client_id.is_some() || client_secret.is_some() => {
            Err(format!("server {name:?}: oauthMode, oauthClientId and oauthClientSecret need \"auth\": \"oauth\""))
        }
        None => Ok(None),
        Some("oauth") => {
            let Transport::Http { headers, .. } = transport else {
                return Err(format!("server {name:?} runs a command; \"auth\": \"oauth\" belongs to a url"));
            };
            if headers.keys().any(|header| header.eq_ignore_ascii_case("authorization")) {
                return Err(format!(
                    "server {name:?} signs in with OAuth; its Authorization header comes from the sign-in, not from headers"
                ));
            }
            let mode = match mode.as_deref() {
                Some("shared") => OAuthMode::Shared,
                Some("per_user") => OAuthMode::PerUser,
                Some(other) => {
                    return Err(format!("server {name:?}: oauthMode {other:?} is not \"shared\" or \"per_user\""))
                }
                None => {
                    return Err(format!(
                        "server {name:?} signs in with OAuth: give \"oauthMode\": \"shared\" (one sign-in by an admin) \
                         or \"per_user\" (each user connects their own account)"
                    ))
                }
            };
            let client_id = client_id.filter(|id| !id.trim().is_empty());
            if client_secret.is_some() && client_id.is_none() {
                return Err(format!("server {name:?}: oauthClientSecret needs the oauthClientId it belongs to"));
            }
            let client_secret = client_secret.filter(|secret| !secret.is_empty());
            Ok(Some(OAuthConfig { mode, client_id, client_secret, private_addresses: false }))
        }
        Some(other) => Err(format!("server {name:?}: auth {other:?} is not \"oauth\" (the only kind of sign-in)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_in_the_shared_format_is_read() {
        let config = McpConfig::parse(
            r#"{ "mcpServers": {
                "files": { "command": "npx", "args": ["-y", "server-filesystem", "/tmp/x"], "env": { "A": "b" } },
                "remote": { "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer t" },
                            "trust": { "lookup": "read_only" }, "closedWorld": ["lookup"] } },
                "elicitationTimeoutSeconds": 30 }"#,
        )
        .unwrap();
        assert_eq!(config.elicitation_timeout, Duration::from_secs(30));
        assert_eq!(config.servers[0].name, "files");
        assert!(
            matches!(&config.servers[0].transport, Transport::Stdio { command, args, .. } if command == "npx" && args.len() == 3)
        );
        assert_eq!(config.servers[1].trust["lookup"], ToolEffect::ReadOnly);
        assert!(config.servers[1].closed_world.contains("lookup"));
        assert!(config.servers[0].closed_world.is_empty());
        assert!(
            matches!(&config.servers[1].transport, Transport::Http { headers, .. } if headers["Authorization"] == "Bearer t")
        );
        assert_eq!(McpConfig::parse(r#"{"mcpServers": {}}"#).unwrap().elicitation_timeout, DEFAULT_ELICITATION_TIMEOUT);
        assert_eq!(McpConfig::parse(r#"{"mcpServers": {}}"#).unwrap().call_timeout, DEFAULT_CALL_TIMEOUT);
    }

    #[test]
    fn an_oauth_server_is_read_and_its_problems_are_named() {
        let config = McpConfig::parse(
            r#"{ "mcpServers": {
                "shared": { "url": "https://a.example/mcp", "auth": "oauth", "oauthMode": "shared" },
                "mine": { "url": "https://b.example/mcp", "auth": "oauth", "oauth_mode": "per_user",
                          "oauthClientId": "tourguide", "oauthClientSecret": "s3cret-value" } } }"#,
        )
        .unwrap();
        let mine = &config.servers[0];
        assert_eq!(
            mine.oauth,
            Some(OAuthConfig {
                mode: OAuthMode::PerUser,
                client_id: Some("tourguide".into()),
                client_secret: Some("s3cret-value".into()),
                private_addresses: false,
            })
        );
        assert!(mine.secrets().contains(&"s3cret-value"));
        assert_eq!(config.servers[1].oauth.as_ref().map(|oauth| oauth.mode), Some(OAuthMode::Shared));
        let problem = |entry: &str| McpConfig::parse(&format!(r#"{{"mcpServers": {{"a": {entry}}}}}"#)).unwrap_err();
        assert!(problem(r#"{"url": "https://h", "auth": "oauth"}"#).contains("oauthMode"));
        assert!(problem(r#"{"url": "https://h", "auth": "oauth", "oauthMode": "everyone"}"#).contains("everyone"));
        assert!(problem(r#"{"url": "https://h", "auth": "basic"}"#).contains("basic"));
        assert!(problem(r#"{"command": "x", "auth": "oauth", "oauthMode": "shared"}"#).contains("belongs to a url"));
        assert!(problem(r#"{"url": "https://h", "oauthMode": "shared"}"#).contains("need \"auth\""));
        assert!(problem(
            r#"{"url": "https://h", "auth": "oauth", "oauthMode": "shared", "headers": {"authorization": "Bearer x"}}"#
        )
        .contains("Authorization header"));
        assert!(problem(r#"{"url": "https://h", "auth": "oauth", "oauthMode": "shared", "oauthClientSecret": "x"}"#)
            .contains("needs the oauthClientId"));
        assert!(problem(r#"{"url": "https://h", "oauthPrivateAddresses": true}"#).contains("needs \"auth\""));
        let private = McpConfig::parse(
            r#"{ "mcpServers": { "corp": { "url": "https://mcp.corp/mcp", "auth": "oauth", "oauthMode": "shared",
                 "oauthPrivateAddresses": true } } }"#,
        )
        .unwrap();
        assert!(private.servers[0].oauth.as_ref().unwrap().private_addresses);
    }

    #[test]
    fn each_problem_is_named() {
        let problem = |text: &str| McpConfig::parse(text).unwrap_err();
        assert!(problem("not json").contains("expected"), "{}", problem("not json"));
        assert!(problem(r#"{"servers": {}}"#).contains("mcpServers"));
        assert!(problem(r#"{"mcpServers": {"a.b": {"command": "x"}}}"#).contains("\"a.b\""));
        assert!(problem(r#"{"mcpServers": {"a": {}}}"#).contains("needs a command"));
        assert!(problem(r#"{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}"#).contains("both"));
        assert!(problem(r#"{"mcpServers": {"a": {"url": "ftp://h"}}}"#).contains("not an http"));
        assert!(problem(r#"{"mcpServers": {"a": {"command": "x", "trust": {"t": "harmless"}}}}"#).contains("harmless"));
        assert!(problem(r#"{"mcpServers": {"a": {"command": "x", "extra": 1}}}"#).contains("extra"));
        assert!(problem(r#"{"mcpServers": {"a": {"command": "x", "closedWorld": "t"}}}"#).contains("sequence"));
        assert!(problem(r#"{"mcpServers": {"a": {"command": "x", "closedWorld": [""]}}}"#).contains("empty tool name"));
        assert!(problem(r#"{"mcpServers": {"a": {"command": "x", "closedWorld": ["t", "t"]}}}"#).contains("twice"));
        assert!(problem(r#"{"mcpServers": {}, "elicitationTimeoutSeconds": 0}"#).contains("elicitationTimeoutSeconds"));
        assert!(problem(r#"{"mcpServers": {}, "callTimeoutSeconds": 7200}"#).contains("callTimeoutSeconds"));
        let missing = McpConfig::load(Path::new("/nonexistent/mcp.json")).unwrap_err();
        assert!(missing.to_string().contains("/nonexistent/mcp.json"), "{missing}");
    }
}
