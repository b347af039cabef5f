//! MCP tools of one family. Acting on the page: click, type, forms, keys, options, checkboxes, hover, drag, scroll, dialogs.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Extensions};
use rmcp::{tool, tool_router};

use crate::params::{
    CheckParams, ClickParams, DialogParams, DragParams, FillFormParams, HoverParams,
    PressKeyParams, ScrollParams, SelectParams, TypeParams, UploadParams,
};
use crate::server::AirlockMcp;

#[tool_router(router = interact_router, vis = "pub(crate)")]
impl AirlockMcp {
    #[tool(
        name = "browser_click",
        description = "Click an element (scrolled into view once visible, enabled, uncovered). Target, here and wherever a tool takes one: ref; or role+name (+index), selector, or x+y; timeout_ms bounds finding and acting. Returns what changed.",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn browser_click(
        &self,
        Parameters(p): Parameters<ClickParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_click", p.call(), &ext).await
    }

    #[tool(
        name = "browser_type",
        description = "Type into a field (target as browser_click); appends unless clear_first. The result never echoes the text.",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn browser_type(
        &self,
        Parameters(p): Parameters<TypeParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_type", p.call(), &ext).await
    }

    #[tool(
        name = "browser_fill_form",
        description = "Fill several fields (targets as browser_click): text is replaced, checkboxes take true/false, selects an option.",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn browser_fill_form(
        &self,
        Parameters(p): Parameters<FillFormParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_fill_form", p.call(), &ext).await
    }

    #[tool(
        name = "browser_press_key",
        description = "Press a key or combo in the focused element.",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn browser_press_key(
        &self,
        Parameters(p): Parameters<PressKeyParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_press_key", p.call(), &ext).await
    }

    #[tool(
        name = "browser_select_option",
        description = "Select option(s) of a <select> (target as browser_click).",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn browser_select_option(
        &self,
        Parameters(p): Parameters<SelectParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_select_option", p.call(), &ext).await
    }

    #[tool(
        name = "browser_check",
        description = "Check or uncheck a checkbox, radio or switch (target as browser_click).",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn browser_check(
        &self,
        Parameters(p): Parameters<CheckParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_check", p.call(), &ext).await
    }

    #[tool(
        name = "browser_hover",
        description = "Move the mouse over an element (target as browser_click).",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn browser_hover(
        &self,
        Parameters(p): Parameters<HoverParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_hover", p.call(), &ext).await
    }

    #[tool(
        name = "browser_scroll",
        description = "Scroll the page (direction, amount in CSS pixels) or bring a target (as browser_click) into view.",
        annotations(read_only_hint = false, destructive_hint = false)
    )]
    async fn browser_scroll(
        &self,
        Parameters(p): Parameters<ScrollParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_scroll", p.call(), &ext).await
    }

    #[tool(
        name = "browser_drag",
        description = "Drag `from` onto `to` (targets as browser_click) with real mouse moves; HTML5 drag-and-drop too.",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn browser_drag(
        &self,
        Parameters(p): Parameters<DragParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_drag", p.call(), &ext).await
    }

    #[tool(
        name = "browser_file_upload",
        description = "Click a file input (or what opens one; target as browser_click) and give its chooser files from the server's upload directory.",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn browser_file_upload(
        &self,
        Parameters(p): Parameters<UploadParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_file_upload", p.call(), &ext).await
    }

    #[tool(
        name = "browser_handle_dialog",
        description = "Answer the dialog holding the page (alert, confirm, prompt, beforeunload); prompt_text may hold {{secret:NAME.field}}.",
        annotations(read_only_hint = false, destructive_hint = true)
    )]
    async fn browser_handle_dialog(
        &self,
        Parameters(p): Parameters<DialogParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_handle_dialog", p.call(), &ext).await
    }
}
