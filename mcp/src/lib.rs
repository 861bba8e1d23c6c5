//! MCP tool servers as a source of the runtime's tools, through the official Rust SDK (`rmcp`,
//! client role; stdio child processes and streamable HTTP).
//!
//! `config` reads the shared `mcpServers` file, `hub` keeps the servers connected and their tools
//! published (`server.tool`), `server` is one configured server (its state, tools and pool of
//! connections), `effects` reads annotations as effects, `tool` runs a call and turns a server's
//! question into the runtime's input pause, `live` keeps the calls whose questions wait on a live
//! connection, `result_text` is a call's result as the model reads it, `session` is one connection
//! and what we declare on it, `problem` says why a server is down as a kind, `masking` masks the
//! secrets in what the library said, `oauth` signs in to HTTP servers that want OAuth 2.1 (tokens
//! kept by the caller's [`TokenVault`]). Imports go one way: hub → tool → live → server →
//! session → oauth, problem → config → masking; `effects` and `result_text` import none of them.
//!
//! Architecture invariant: a tool source beside the built-in tools, nothing more. The runtime
//! treats MCP tools like any other; the chat never sees MCP.

pub mod config;
mod effects;
mod hub;
mod live;
mod masking;
pub mod oauth;
mod problem;
mod result_text;
mod server;
mod session;
mod tool;

pub use config::{
    McpConfig, McpConfigError, OAuthConfig, OAuthMode, Place, ServerConfig, Transport, DEFAULT_CALL_TIMEOUT,
    DEFAULT_ELICITATION_TIMEOUT,
};
pub use effects::effect_of;
pub use hub::{McpHub, ServerView};
pub use live::LINK_COMPLETED;
pub use masking::{mask_url, redact};
pub use oauth::{OAuthFailure, OAuthProblem, Started, TokenOwner, TokenVault};
pub use problem::Problem;
pub use server::ServerState;
pub use tool::{CONNECT_CONTINUE, CONNECT_KEY, LINK_KEY};
