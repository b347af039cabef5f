//! Tabs and the viewport.

use super::*;

/// A call on tabs or the viewport.
#[derive(Debug, Clone)]
pub enum Window {
    /// `browser_tabs`.
    Tabs(TabAction),
    /// `browser_resize`: every tab's viewport, in CSS pixels.
    Resize {
        /// Width.
        width: u32,
        /// Height.
        height: u32,
    },
}

/// `browser_tabs` actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TabAction {
    /// List tabs.
    List,
    /// Open a tab, optionally at a URL, and make it active.
    New(Option<String>),
    /// Make tab N active.
    Select(usize),
    /// Close tab N, or the active one (as Playwright MCP's `close` without an index).
    Close(Option<usize>),
}

impl Family for Window {
    fn tool_name(&self) -> &'static str {
        match self {
            Window::Tabs(_) => "browser_tabs",
            Window::Resize { .. } => "browser_resize",
        }
    }

    fn min_role(&self) -> Role {
        match self {
            Window::Tabs(TabAction::List) => Role::Observe,
            _ => Role::Act,
        }
    }

    fn audit_args(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            Window::Tabs(TabAction::List) => json!({}),
            Window::Tabs(TabAction::New(url)) => json!({ "new": url }),
            Window::Tabs(TabAction::Select(i)) => json!({ "select": i }),
            Window::Tabs(TabAction::Close(i)) => json!({ "close": i }),
            Window::Resize { width, height } => json!({ "width": width, "height": height }),
        }
    }

    fn navigation_target(&self) -> Option<&str> {
        match self {
            Window::Tabs(TabAction::New(Some(url))) => Some(url),
            _ => None,
        }
    }

    // A new tab's URL goes to its site as a navigation's does.
    fn outbound(&self) -> Vec<Outbound<'_>> {
        match self {
            Window::Tabs(TabAction::New(Some(url))) => vec![Outbound {
                what: "URL",
                text: url,
                to: Sink::Url(url),
            }],
            _ => Vec::new(),
        }
    }
}

/// Runs one call of this family.
pub(super) async fn run(cx: Cx<'_>, call: Window) -> Result<ToolOutput> {
    let Cx {
        session,
        fence,
        surface,
        ..
    } = cx;
    Ok(match call {
        Window::Resize { width, height } => {
            let outcome = session.resize(width, height).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        Window::Tabs(action) => {
            let tabs = match action {
                TabAction::List => session.tabs().await?,
                TabAction::New(url) => session.new_tab(url.as_deref()).await?,
                TabAction::Select(i) => session.select_tab(i).await?,
                TabAction::Close(i) => {
                    let i = match i {
                        Some(i) => i,
                        None => session
                            .tabs()
                            .await?
                            .iter()
                            .find(|t| t.active)
                            .map_or(0, |t| t.index),
                    };
                    session.close_tab(i).await?
                }
            };
            ToolOutput::text(render_tabs(&tabs))
        }
    })
}
