//! The tools page's service: the runtime's built-in tools and, per MCP server, its state and its
//! tools, as view models.

use std::sync::Arc;

use app::backend::{CurrentUser, ToolsBackend};
use app::error::AppError;
use app::model::{McpServerStatus, McpServerView, ToolEffectView, ToolView, ToolsView};
use async_trait::async_trait;
use mcp::{McpHub, ServerState};
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

#[async_trait]
impl ToolsBackend for ToolsService {
    async fn tools(&self, _user: &CurrentUser) -> Result<ToolsView, AppError> {
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
                status: match server.state {
                    ServerState::Starting => McpServerStatus::Starting,
                    ServerState::Ready => McpServerStatus::Ready,
                    ServerState::Down { problem, retry_in } => {
                        McpServerStatus::Down { problem, retry_in_seconds: retry_in.as_secs() }
                    }
                },
                tools: server.tools.iter().map(|spec| view(spec)).collect(),
            })
            .collect();
        Ok(ToolsView { built_in, servers })
    }
}
