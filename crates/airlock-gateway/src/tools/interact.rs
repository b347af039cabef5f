//! Acting on the page: click, type, forms, keys, options, checkboxes, hover, drag,
//! scroll, uploads and dialogs, each answered with what changed.

use super::*;

/// Runs one call of this family.
pub(super) async fn run(cx: Cx<'_>, call: ToolCall) -> Result<ToolOutput> {
    let Cx {
        session,
        fence,
        loaded,
        uploads,
        surface,
    } = cx;
    Ok(match call {
        ToolCall::Click { target, options } => {
            let outcome = session.click(&target, &options).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        ToolCall::Type {
            target,
            text,
            clear_first,
            submit,
        } => {
            let typed = loaded.typed(&text)?;
            let outcome = session
                .type_pieces(&target, &typed, clear_first, submit)
                .await?;
            // The agent sees its own placeholder back, never the value it stood for.
            let shown = typed.has_secret().then_some(text.as_str());
            after_action(session, fence, surface, outcome, shown).await?
        }
        ToolCall::FillForm { fields } => {
            let mut typed = Vec::with_capacity(fields.len());
            for (target, value) in fields {
                typed.push((target, loaded.typed(&value)?));
            }
            let outcome = session.fill_form_pieces(&typed).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        ToolCall::PressKey { key } => {
            let outcome = session.press_key(&key).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        ToolCall::SelectOption { target, values } => {
            let outcome = session.select_option(&target, &values).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        ToolCall::Check { target, checked } => {
            let outcome = session.set_checked(&target, checked).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        ToolCall::Hover { target } => {
            let outcome = session.hover(&target).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        ToolCall::Drag { from, to } => {
            let outcome = session.drag(&from, &to).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        ToolCall::Scroll(scroll) => {
            let outcome = session.scroll(&scroll).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        ToolCall::FileUpload { target, files } => {
            let paths = upload_paths(uploads, &files)?;
            let outcome = session.upload(&target, &paths).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        ToolCall::HandleDialog {
            accept,
            prompt_text,
            wait,
        } => {
            let typed = prompt_text
                .as_deref()
                .map(|t| loaded.typed(t))
                .transpose()?;
            let outcome = session.handle_dialog(accept, typed.as_ref(), wait).await?;
            let shown = typed
                .as_ref()
                .filter(|t| t.has_secret())
                .and(prompt_text.as_deref());
            after_action(session, fence, surface, outcome, shown).await?
        }
        other => return Err(not_of_family(&other)),
    })
}
