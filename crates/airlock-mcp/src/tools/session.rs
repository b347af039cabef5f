//! MCP tools of one family. Opening and closing the browser session.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Extensions};
use rmcp::{tool, tool_router};

use airlock_gateway::ToolCall;

use crate::params::{NoParams, SessionOpenParams};
use crate::server::AirlockMcp;

#[tool_router(router = session_router, vis = "pub(crate)")]
impl AirlockMcp {
    #[tool(
        name = "browser_session_open",
        description = "Open the browser session explicitly (otherwise the first browser tool opens one). Over stateless HTTP its result gives mcp_url, the session's own URL for later calls.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn browser_session_open(
        &self,
        Parameters(p): Parameters<SessionOpenParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_session_open", p.call(), &ext).await
    }

    #[tool(
        name = "browser_session_close",
        description = "Close the browser session: its tabs, cookies and storage are discarded. The next browser tool opens a fresh one.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn browser_session_close(
        &self,
        Parameters(_): Parameters<NoParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_session_close", Ok(ToolCall::SessionClose), &ext)
            .await
    }
}
