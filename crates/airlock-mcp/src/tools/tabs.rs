//! MCP tools of one family. The session's tabs.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Extensions};
use rmcp::{tool, tool_router};

use crate::params::{ResizeParams, TabsParams};
use crate::server::AirlockMcp;

#[tool_router(router = tabs_router, vis = "pub(crate)")]
impl AirlockMcp {
    #[tool(
        name = "browser_tabs",
        description = "List, open (new, url), select or close tabs, popups included.",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn browser_tabs(
        &self,
        Parameters(p): Parameters<TabsParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_tabs", p.call(), &ext).await
    }

    #[tool(
        name = "browser_resize",
        description = "Set every tab's viewport (CSS px), e.g. a phone width.",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn browser_resize(
        &self,
        Parameters(p): Parameters<ResizeParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_resize", p.call(), &ext).await
    }
}
