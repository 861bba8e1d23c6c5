//! The tools page's service: the runtime's built-in tools and, per MCP server, its state and its
//! tools, as view models; for an admin, whether users may always allow each tool that can wait
//! for a card for themselves. An OAuth server shows whether the reader's sign-in (or the shared
//! one) is there, and Disconnect forgets it.

use std::sync::Arc;

use app::backend::{CurrentUser, ToolsBackend};
use app::error::AppError;
use app::i18n::Text;
use app::model::{
    McpOAuthView, McpPlaceView, McpProblemView, McpServerStatus, McpServerView, ToolEffectView, ToolView, ToolsView,
};
use async_trait::async_trait;
use mcp::{McpHub, OAuthMode, Place, Problem, ServerState, TokenOwner};
use runtime::{Runtime, ToolEffect, ToolSpec};

use crate::chat::can_wait_for_card;
use crate::store::Store;

pub struct ToolsService {
    runtime: Arc<Runtime>,
    mcp: Option<McpHub>,
    store: Store,
}

impl ToolsService {
    pub fn new(runtime: Arc<Runtime>, mcp: Option<McpHub>, store: Store) -> ToolsService {
        ToolsService { runtime, mcp, store }
    }
}

/// `permits`: the tools an admin permits "always for me" for, when the reader is an admin.
fn view(spec: &ToolSpec, permits: Option<&[String]>) -> ToolView {
    ToolView {
        permit: permits
            .filter(|_| can_wait_for_card(spec))
            .map(|permits| permits.iter().any(|tool| tool == &spec.name)),
        name: spec.name.clone(),
        description: spec.description.clone(),
        effect: match spec.effect {
            ToolEffect::ReadOnly => ToolEffectView::Reads,
            ToolEffect::IdempotentWrite => ToolEffectView::WritesIdempotent,
            ToolEffect::NonIdempotentWrite => ToolEffectView::Writes,
        },
        needs_approval: spec.needs_approval(),
    }
}

fn problem_view(problem: Problem) -> McpProblemView {
    match problem {
        Problem::CannotStart => McpProblemView::CannotStart,
        Problem::Exited => McpProblemView::Exited,
        Problem::Unreachable => McpProblemView::Unreachable,
        Problem::Disconnected => McpProblemView::Disconnected,
        Problem::Refused { status } => McpProblemView::Refused { status },
        Problem::CredentialsRefused => McpProblemView::CredentialsRefused,
        Problem::Handshake => McpProblemView::Handshake,
        Problem::TimedOut => McpProblemView::TimedOut,
        Problem::Protocol => McpProblemView::Protocol,
        Problem::Misconfigured => McpProblemView::Misconfigured,
        Problem::AuthorizationServerChanged => McpProblemView::AuthorizationServerChanged,
    }
}

#[async_trait]
impl ToolsBackend for ToolsService {
    /// Everyone sees each server's name, state and tools; only an admin sees where it is (masked).
    async fn tools(&self, user: &CurrentUser) -> Result<ToolsView, AppError> {
        let permits = match user.admin {
            true => Some(self.store.policy_permits().await.map_err(crate::failures::internal)?),
            false => None,
        };
        let permits = permits.as_deref();
        let built_in = self
            .runtime
            .tools()
            .all()
            .iter()
            .filter(|tool| tool.spec.origin.is_none())
            .map(|tool| view(&tool.spec, permits))
            .collect();
        let mut servers = Vec::new();
        for server in self.mcp.iter().flat_map(McpHub::servers) {
            let oauth = match (server.oauth, &self.mcp) {
                (Some(mode), Some(hub)) => {
                    let owner = TokenOwner::of(mode, user.id);
                    let connected = hub.connected(&server.name, owner).await.map_err(|error| {
                        tracing::error!(server = %server.name, %error, "an MCP sign-in cannot be read");
                        AppError::Internal
                    })?;
                    let shared = mode == OAuthMode::Shared;
                    Some(McpOAuthView { shared, connected, may_change: !shared || user.admin })
                }
                _ => None,
            };
            servers.push(McpServerView {
                oauth,
                name: server.name,
                place: user.admin.then_some(match server.place {
                    Place::Url(url) => McpPlaceView::Url(url),
                    Place::Program(program) => McpPlaceView::Program(program),
                }),
                status: match server.state {
                    ServerState::Starting => McpServerStatus::Starting,
                    ServerState::Ready => McpServerStatus::Ready,
                    ServerState::SignInNeeded => McpServerStatus::SignInNeeded,
                    ServerState::Down { problem, retry_in } => {
                        McpServerStatus::Down { problem: problem_view(problem), retry_in_seconds: retry_in.as_secs() }
                    }
                },
                tools: server.tools.iter().map(|spec| view(spec, permits)).collect(),
            });
        }
        Ok(ToolsView { built_in, servers })
    }

    async fn disconnect(&self, user: &CurrentUser, server: &str) -> Result<(), AppError> {
        let hub = self.mcp.as_ref().ok_or(AppError::Invalid(Text::ErrorMcpNotOAuth))?;
        let mode = hub.oauth_mode(server).ok_or(AppError::Invalid(Text::ErrorMcpNotOAuth))?;
        if mode == OAuthMode::Shared && !user.admin {
            return Err(AppError::Forbidden);
        }
        let forgotten = hub.sign_out(server, TokenOwner::of(mode, user.id)).await.map_err(|error| {
            tracing::error!(server, %error, "an MCP sign-in cannot be forgotten");
            AppError::Internal
        })?;
        tracing::info!(server, user = user.id, forgotten, "an MCP sign-in was disconnected");
        Ok(())
    }
}
