//! MCP tools of one family. Acting on the page: click, type, forms, keys, options, checkboxes, hover, scroll, dialogs.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Extensions};
use rmcp::{tool, tool_router};

use crate::params::{
    CheckParams, ClickParams, DialogParams, FillFormParams, HoverParams, PressKeyParams,
    ScrollParams, SelectParams, TypeParams,
};
use crate::server::AirlockMcp;

#[tool_router(router = interact_router, vis = "pub(crate)")]
impl AirlockMcp {
    #[tool(
        name = "browser_click",
        description = "Click an element (scrolled into view, waited for until visible, enabled and not covered). Target: ref, role+name(+index), selector, or x/y. Returns what changed on the page.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
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
        description = "Type text into a field (target as browser_click; appends unless clear_first; submit presses Enter). The result echoes the target, never the text.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
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
        description = "Fill several fields at once (targets as browser_click): text fields are replaced, checkboxes take true/false, selects take an option value or label.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = true
        )
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
        description = "Press a key or combo in the focused element: Enter, Tab, Escape, ArrowDown, Control+A, Shift+Tab.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
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
        description = "Select option(s) of a <select> (target as browser_click) by value or visible label.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = true
        )
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
        description = "Check (checked=true, default) or uncheck a checkbox, radio or switch (target as browser_click).",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = true
        )
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
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        )
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
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn browser_scroll(
        &self,
        Parameters(p): Parameters<ScrollParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_scroll", p.call(), &ext).await
    }

    #[tool(
        name = "browser_handle_dialog",
        description = "Answer the alert/confirm/prompt/beforeunload dialog holding the page (waits briefly for one). prompt_text may hold {{secret:name.field}}.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn browser_handle_dialog(
        &self,
        Parameters(p): Parameters<DialogParams>,
        ext: Extensions,
    ) -> Result<CallToolResult, rmcp::ErrorData> {
        self.run("browser_handle_dialog", p.call(), &ext).await
    }
}
