//! The tools page's service: the runtime's built-in tools and, per MCP server, its state and its
//! tools, as view models.

use std::sync::Arc;

use app::backend::{CurrentUser, ToolsBackend};
use app::error::AppError;
use app::model::{McpPlaceView, McpProblemView, McpServerStatus, McpServerView, ToolEffectView, ToolView, ToolsView};
use async_trait::async_trait;
use mcp::{McpHub, Place, Problem, ServerState};
use runtime::{Runtime, ToolEffect, ToolSpec};

pub struct ToolsService {
    runtime: Arc<Runtime>,
    mcp: Option<McpHub>,
}

impl ToolsService {
    pub fn new(runtime: Arc<Runtime>, mcp: Option<McpHub>) -> ToolsService {
        ToolsService { runtime, mcp }
    }
}

fn view(spec: &ToolSpec) -> ToolView {
    ToolView {
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
    }
}

#[async_trait]
impl ToolsBackend for ToolsService {
    /// Everyone sees each server's name, state and tools; only an admin sees where it is (masked).
    async fn tools(&self, user: &CurrentUser) -> Result<ToolsView, AppError> {
        let built_in = self
            .runtime
            .tools()
            .all()
            .iter()
            .filter(|tool| tool.spec.origin.is_none())
            .map(|tool| view(&tool.spec))
            .collect();
        let servers = self
            .mcp
            .iter()
            .flat_map(McpHub::servers)
            .map(|server| McpServerView {
                name: server.name,
                place: user.admin.then_some(match server.place {
                    Place::Url(url) => McpPlaceView::Url(url),
                    Place::Program(program) => McpPlaceView::Program(program),
                }),
                status: match server.state {
                    ServerState::Starting => McpServerStatus::Starting,
                    ServerState::Ready => McpServerStatus::Ready,
                    ServerState::Down { problem, retry_in } => {
                        McpServerStatus::Down { problem: problem_view(problem), retry_in_seconds: retry_in.as_secs() }
                    }
                },
                tools: server.tools.iter().map(|spec| view(spec)).collect(),
            })
            .collect();
        Ok(ToolsView { built_in, servers })
    }
}
