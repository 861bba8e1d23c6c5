//! The tools page: the built-in tools and each MCP server with its state and sign-in.

use serde::{Deserialize, Serialize};

/// What a tool does to the world, as the tools page says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolEffectView {
    Reads,
    /// Writes; safe to repeat.
    WritesIdempotent,
    /// Writes; an approval card comes first.
    Writes,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolView {
    pub name: String,
    pub description: String,
    pub effect: ToolEffectView,
    /// Whether a call waits for an approval card.
    pub needs_approval: bool,
    /// For an admin, of a tool whose calls can wait for a card: whether users may always allow it
    /// for themselves ("always for me"). `None` for everyone else and every other tool.
    #[serde(default)]
    pub permit: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpServerStatus {
    Starting,
    Ready,
    /// It signs in with OAuth and nobody has connected it yet.
    SignInNeeded,
    /// Failed or gone; tried again in `retry_in_seconds`.
    Down {
        problem: McpProblemView,
        retry_in_seconds: u64,
    },
}

/// Why an MCP server is down, as a kind the page says in the reader's language (never the
/// library's text, which may carry the server's URL with its key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum McpProblemView {
    CannotStart,
    Exited,
    Unreachable,
    Disconnected,
    Refused { status: u16 },
    CredentialsRefused,
    Handshake,
    TimedOut,
    Protocol,
    Misconfigured,
    AuthorizationServerChanged,
}

/// Where an MCP server is, for an admin: the URL with query values and userinfo masked, or the
/// command's program name (no arguments, no environment).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpPlaceView {
    Url(String),
    Program(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerView {
    pub name: String,
    /// Only for an admin; an editor sees the name, the state and the tools.
    pub place: Option<McpPlaceView>,
    pub status: McpServerStatus,
    pub tools: Vec<ToolView>,
    /// How the reader stands with it, when it signs in with OAuth.
    #[serde(default)]
    pub oauth: Option<McpOAuthView>,
}

/// An OAuth server's sign-in as the reader sees it (never a token).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpOAuthView {
    /// One sign-in for everyone, made by an admin; else each user connects their own account.
    pub shared: bool,
    /// The sign-in the reader's calls use exists.
    pub connected: bool,
    /// The reader may connect or disconnect it: their own account, or as an admin the shared one.
    pub may_change: bool,
}

/// Where a sign-in to an MCP server begins: a form posted there with the server's name (a post,
/// so that the origin check stands in front of it), which sends the browser on.
pub const MCP_CONNECT_PATH: &str = "/mcp/oauth/start";

/// The tools the assistant is offered: the built-in ones and those of each MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolsView {
    pub built_in: Vec<ToolView>,
    pub servers: Vec<McpServerView>,
}
