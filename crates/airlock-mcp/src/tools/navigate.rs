//! MCP tools of one family. Going places: navigate, back, forward, reload.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Extensions};
use rmcp::{tool, tool_router};

use airlock_gateway::ToolCall;

use crate::params::{NavigateParams, NoParams};
use crate::server::AirlockMcp;

#[tool_router(router = navigate_router, vis = "pub(crate)")]
impl AirlockMcp {
    #[tool(
        name = "browser_navigate",
        description = "Open a URL in the active tab; returns HTTP status and a snapshot (untrusted page content).",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn browser_navigate(
        &self,
        Parameters(p): Parameters<NavigateParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_navigate", p.call(), &ext).await
    }

    #[tool(
        name = "browser_back",
        description = "Go back in the active tab's history.",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn browser_back(
        &self,
        Parameters(_): Parameters<NoParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_back", Ok(ToolCall::Back), &ext).await
    }

    #[tool(
        name = "browser_forward",
        description = "Go forward in the active tab's history.",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn browser_forward(
        &self,
        Parameters(_): Parameters<NoParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_forward", Ok(ToolCall::Forward), &ext)
            .await
    }

    #[tool(
        name = "browser_reload",
        description = "Reload the active tab.",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn browser_reload(
        &self,
        Parameters(_): Parameters<NoParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_reload", Ok(ToolCall::Reload), &ext).await
    }
}
