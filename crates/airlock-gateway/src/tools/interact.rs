//! Acting on the page: click, type, forms, keys, options, checkboxes, hover, drag,
//! scroll, uploads and dialogs, each answered with what changed.

use super::*;

/// A call that acts on the page.
#[derive(Debug, Clone)]
pub enum Interaction {
    /// `browser_click`.
    Click {
        /// What to click.
        target: Target,
        /// Button, double click, modifiers.
        options: ClickOptions,
    },
    /// `browser_type`.
    Type {
        /// The field.
        target: Target,
        /// The text.
        text: String,
        /// Replace the field's content.
        clear_first: bool,
        /// Press Enter afterwards.
        submit: bool,
    },
    /// `browser_fill_form`.
    FillForm {
        /// Fields and values.
        fields: Vec<(Target, String)>,
    },
    /// `browser_press_key`.
    PressKey {
        /// `Enter`, `Control+A` …
        key: String,
    },
    /// `browser_select_option`.
    SelectOption {
        /// The `<select>`.
        target: Target,
        /// Values or labels.
        values: Vec<String>,
    },
    /// `browser_check`.
    Check {
        /// The checkbox, radio or switch.
        target: Target,
        /// Desired state.
        checked: bool,
    },
    /// `browser_drag`: press on `from`, move, release on `to`.
    Drag {
        /// Where the drag begins.
        from: Target,
        /// Where it ends.
        to: Target,
    },
    /// `browser_hover`.
    Hover {
        /// What to hover.
        target: Target,
    },
    /// `browser_scroll`.
    Scroll(Scroll),
    /// `browser_file_upload`: files of the operator's upload directory, given to the
    /// file chooser `target` opens.
    FileUpload {
        /// A file input, or what opens one.
        target: Target,
        /// Names inside the upload directory.
        files: Vec<String>,
    },
    /// `browser_handle_dialog`: answers the dialog holding the page.
    HandleDialog {
        /// Accept (OK) rather than dismiss (Cancel).
        accept: bool,
        /// A prompt's answer; may hold placeholders, typed like `browser_type`'s text.
        prompt_text: Option<String>,
        /// How long to wait for a dialog to open (zero: answer only an open one).
        wait: Duration,
    },
}

impl Family for Interaction {
    fn tool_name(&self) -> &'static str {
        match self {
            Interaction::Click { .. } => "browser_click",
            Interaction::Type { .. } => "browser_type",
            Interaction::FillForm { .. } => "browser_fill_form",
            Interaction::PressKey { .. } => "browser_press_key",
            Interaction::SelectOption { .. } => "browser_select_option",
            Interaction::Check { .. } => "browser_check",
            Interaction::Drag { .. } => "browser_drag",
            Interaction::Hover { .. } => "browser_hover",
            Interaction::Scroll(_) => "browser_scroll",
            Interaction::FileUpload { .. } => "browser_file_upload",
            Interaction::HandleDialog { .. } => "browser_handle_dialog",
        }
    }

    // Typed text and form values may hold placeholders; keys, options, file names
    // and how a target is described may not.
    fn misplaced_placeholder(&self) -> Option<&'static str> {
        match self {
            Interaction::PressKey { key } if mentions(key) => Some("key"),
            Interaction::FileUpload { files, .. } if files.iter().any(|f| mentions(f)) => {
                Some("files")
            }
            Interaction::SelectOption { values, .. } if values.iter().any(|v| mentions(v)) => {
                Some("values")
            }
            Interaction::FillForm { fields } => fields
                .iter()
                .any(|(t, _)| target_mentions(t))
                .then_some("target"),
            Interaction::Drag { from, to } => {
                (target_mentions(from) || target_mentions(to)).then_some("target")
            }
            Interaction::Click { target, .. }
            | Interaction::Type { target, .. }
            | Interaction::SelectOption { target, .. }
            | Interaction::Check { target, .. }
            | Interaction::FileUpload { target, .. }
            | Interaction::Hover { target }
            | Interaction::Scroll(Scroll::IntoView(target)) => {
                target_mentions(target).then_some("target")
            }
            Interaction::PressKey { .. }
            | Interaction::Scroll(_)
            | Interaction::HandleDialog { .. } => None,
        }
    }

    fn audit_args(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            Interaction::Click { target, options } => json!({
                "target": target_json(target),
                "double": options.double,
            }),
            Interaction::Type {
                target,
                text,
                submit,
                ..
            } => json!({ "target": target_json(target), "text": text, "submit": submit }),
            Interaction::FillForm { fields } => json!({
                "fields": fields
                    .iter()
                    .map(|(t, v)| json!({ "target": target_json(t), "value": v }))
                    .collect::<Vec<_>>(),
            }),
            Interaction::PressKey { key } => json!({ "key": key }),
            Interaction::SelectOption { target, values } => {
                json!({ "target": target_json(target), "values": values })
            }
            Interaction::Check { target, checked } => {
                json!({ "target": target_json(target), "checked": checked })
            }
            Interaction::Hover { target } | Interaction::Scroll(Scroll::IntoView(target)) => {
                json!({ "target": target_json(target) })
            }
            Interaction::Scroll(_) => json!({}),
            Interaction::Drag { from, to } => {
                json!({ "from": target_json(from), "to": target_json(to) })
            }
            Interaction::FileUpload { target, files } => {
                json!({ "target": target_json(target), "files": files })
            }
            Interaction::HandleDialog {
                accept,
                prompt_text,
                ..
            } => json!({ "accept": accept, "prompt_text": prompt_text }),
        }
    }

    fn typed_text(&self) -> Option<&str> {
        match self {
            Interaction::Type { text, .. } => Some(text),
            Interaction::HandleDialog {
                prompt_text: Some(text),
                ..
            } => Some(text),
            _ => None,
        }
    }

    fn form_fields(&self) -> Option<&[(Target, String)]> {
        match self {
            Interaction::FillForm { fields } => Some(fields),
            _ => None,
        }
    }

    fn outbound(&self) -> Vec<Outbound<'_>> {
        match self {
            Interaction::Type { target, text, .. } => vec![Outbound {
                what: "typed text",
                text,
                to: Sink::Field(target),
            }],
            Interaction::FillForm { fields } => fields
                .iter()
                .map(|(target, value)| Outbound {
                    what: "form value",
                    text: value,
                    to: Sink::Field(target),
                })
                .collect(),
            // A file's name goes to the page with it (the multipart's filename).
            Interaction::FileUpload { target, files } => files
                .iter()
                .map(|name| Outbound {
                    what: "file name",
                    text: name,
                    to: Sink::Field(target),
                })
                .collect(),
            Interaction::HandleDialog {
                prompt_text: Some(text),
                ..
            } => vec![Outbound {
                what: "prompt answer",
                text,
                to: Sink::Page,
            }],
            _ => Vec::new(),
        }
    }

    fn changes(&self) -> Changes<'_> {
        match self {
            Interaction::Click { target, .. }
            | Interaction::Type { target, .. }
            | Interaction::SelectOption { target, .. }
            | Interaction::Check { target, .. }
            | Interaction::FileUpload { target, .. }
            | Interaction::Drag { to: target, .. } => Changes::Element(target),
            Interaction::FillForm { fields } => Changes::Fields(fields),
            Interaction::PressKey { .. } => Changes::Page,
            // Dismissing a dialog changes nothing the page asked for; answering does.
            Interaction::HandleDialog { accept, .. } if *accept => Changes::Page,
            Interaction::HandleDialog { .. }
            | Interaction::Hover { .. }
            | Interaction::Scroll(_) => Changes::Nothing,
        }
    }

    fn target_mut(&mut self) -> Option<&mut Target> {
        match self {
            Interaction::Click { target, .. }
            | Interaction::Type { target, .. }
            | Interaction::SelectOption { target, .. }
            | Interaction::Check { target, .. }
            | Interaction::Hover { target }
            | Interaction::Scroll(Scroll::IntoView(target)) => Some(target),
            _ => None,
        }
    }
}

/// Runs one call of this family.
pub(super) async fn run(cx: Cx<'_>, call: Interaction) -> Result<ToolOutput> {
    let Cx {
        session,
        fence,
        loaded,
        uploads,
        surface,
    } = cx;
    Ok(match call {
        Interaction::Click { target, options } => {
            let outcome = session.click(&target, &options).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        Interaction::Type {
            target,
            text,
            clear_first,
            submit,
        } => {
            let typed = loaded.typed(&text)?;
            let mut outcome = session
                .type_pieces(&target, &typed, clear_first, submit)
                .await?;
            // Which it did, in the words: an agent used to either convention knows.
            if let Some(airlock_browser::Effect::Typed(desc)) = &mut outcome.effect {
                desc.push_str(if clear_first {
                    " (its value replaced)"
                } else {
                    " (after its value)"
                });
            }
            // The agent sees its own placeholder back, never the value it stood for.
            let shown = typed.has_secret().then_some(text.as_str());
            after_action(session, fence, surface, outcome, shown).await?
        }
        Interaction::FillForm { fields } => {
            let mut typed = Vec::with_capacity(fields.len());
            for (target, value) in fields {
                typed.push((target, loaded.typed(&value)?));
            }
            let outcome = session.fill_form_pieces(&typed).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        Interaction::PressKey { key } => {
            let outcome = session.press_key(&key).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        Interaction::SelectOption { target, values } => {
            let outcome = session.select_option(&target, &values).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        Interaction::Check { target, checked } => {
            let outcome = session.set_checked(&target, checked).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        Interaction::Hover { target } => {
            let outcome = session.hover(&target).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        Interaction::Drag { from, to } => {
            let outcome = session.drag(&from, &to).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        Interaction::Scroll(scroll) => {
            let outcome = session.scroll(&scroll).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        Interaction::FileUpload { target, files } => {
            let paths = upload_paths(uploads, &files)?;
            let outcome = session.upload(&target, &paths).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        Interaction::HandleDialog {
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
    })
}
