//! Tabs and the viewport.

use super::*;

/// Runs one call of this family.
pub(super) async fn run(cx: Cx<'_>, call: ToolCall) -> Result<ToolOutput> {
    let Cx {
        session,
        fence,
        surface,
        ..
    } = cx;
    Ok(match call {
        ToolCall::Resize { width, height } => {
            let outcome = session.resize(width, height).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        ToolCall::Tabs(action) => {
            let tabs = match action {
                TabAction::List => session.tabs().await?,
                TabAction::New(url) => session.new_tab(url.as_deref()).await?,
                TabAction::Select(i) => session.select_tab(i).await?,
                TabAction::Close(i) => session.close_tab(i).await?,
            };
            ToolOutput::text(render_tabs(&tabs))
        }
        other => return Err(not_of_family(&other)),
    })
}
