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
        description = "Open the browser session (else the first browser tool does). Over stateless HTTP the result gives mcp_url, the session's own URL.",
        annotations(read_only_hint = false, destructive_hint = false)
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
        description = "Close the browser session, discarding tabs, cookies and storage.",
        annotations(read_only_hint = false, destructive_hint = true)
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
