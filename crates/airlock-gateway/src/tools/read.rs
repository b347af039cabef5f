//! Reading the page: snapshots, screenshots, PDFs, text, console and network logs,
//! evaluate and waits; everything the page wrote comes back fenced.

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
        ToolCall::Snapshot(options) => {
            let snapshot = session.snapshot(&options).await?;
            // The page line only when the agent was not already told it (by the
            // navigation, the last action or the last read): on a small page it is a
            // fifth of the result.
            let whose = whose(&snapshot.title, &snapshot.url);
            let mut text = match fence.seen(&whose) {
                true => format!("page: {whose}\n"),
                false => String::new(),
            };
            text.push_str(&fence.wrap(&snapshot.text));
            ToolOutput::text(text)
        }
        ToolCall::WaitFor { condition, timeout } => {
            let outcome = session.wait_for(&condition, timeout).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        ToolCall::Screenshot(options) => {
            let shot = session.screenshot(&options).await?;
            ToolOutput {
                text: format!("screenshot ({}, {} bytes)", shot.mime, shot.data.len()),
                file: Some(shot),
                error: None,
                message: None,
                retry_after_secs: None,
            }
        }
        ToolCall::Evaluate { function, target } => {
            let result = session.evaluate(&function, target.as_ref()).await?;
            let whose = page_line(session, fence).await?;
            // What the page's world returned is the page's word: fenced.
            ToolOutput::text(format!(
                "ran the function in the page; it returned:\n{whose}\n{}",
                fence.wrap(&result)
            ))
        }
        ToolCall::Pdf => {
            let pdf = session.pdf().await?;
            let whose = page_line(session, fence).await?;
            ToolOutput {
                text: format!(
                    "PDF of {} ({} bytes)",
                    whose.trim_start_matches("page: "),
                    pdf.data.len()
                ),
                file: Some(pdf),
                error: None,
                message: None,
                retry_after_secs: None,
            }
        }
        ToolCall::Read { format, offset } => {
            let page = session.read_text(offset, DEFAULT_TEXT_BYTES).await?;
            let whose = page_line(session, fence).await?;
            let body = match format {
                ReadFormat::Markdown => page.text,
                ReadFormat::Text => plain(&page.text),
            };
            ToolOutput::text(format!("{whose}\n{}", fence.wrap(&body)))
        }
        ToolCall::ConsoleMessages { level, limit } => {
            let log = session.console(level, limit).await?;
            let whose = page_line(session, fence).await?;
            // The page wrote every word of it: fenced like any page content.
            let mut body = String::new();
            for entry in &log.entries {
                body.push_str(&format!("[{}] {}\n", entry.level.as_str(), entry.text));
            }
            let mut text = format!(
                "{} console message{} (level {} and up)",
                log.entries.len(),
                if log.entries.len() == 1 { "" } else { "s" },
                level.as_str()
            );
            if log.dropped > 0 {
                text.push_str(&format!(
                    "; {} older ones were let go (the tab keeps its last {})",
                    log.dropped,
                    airlock_browser::CONSOLE_KEPT
                ));
            }
            text.push_str(&format!("\n{whose}\n"));
            text.push_str(&fence.wrap(body.trim_end()));
            ToolOutput::text(text)
        }
        ToolCall::NetworkRequests { filter, limit } => {
            let log = session.network_requests(filter.as_deref(), limit).await?;
            let whose = page_line(session, fence).await?;
            // URLs are the page's words: fenced like any page content.
            // The proxy knows why the requests it failed failed: asked once for all.
            let failed: Vec<&str> = log
                .entries
                .iter()
                .filter(|e| {
                    e.refused.is_none()
                        && (e.failure.is_some() || matches!(e.status, Some(403 | 502)))
                })
                .map(|e| e.url.as_str())
                .collect();
            let failures = match failed.is_empty() {
                true => Vec::new(),
                false => session.proxy_failures(&failed).await?,
            };
            let why = |url: &str| {
                failed
                    .iter()
                    .position(|f| *f == url)
                    .and_then(|i| failures.get(i).cloned().flatten())
            };
            let mut body = String::new();
            for entry in &log.entries {
                body.push_str(&network_line(entry, why(&entry.url)));
                body.push('\n');
            }
            let mut text = format!(
                "{} request{} (newest last)",
                log.entries.len(),
                if log.entries.len() == 1 { "" } else { "s" }
            );
            if log.dropped > 0 {
                text.push_str(&format!(
                    "; {} older ones were let go (the tab keeps its last {})",
                    log.dropped,
                    airlock_browser::NETWORK_KEPT
                ));
            }
            text.push_str(&format!("\n{whose}\n"));
            text.push_str(&fence.wrap(body.trim_end()));
            ToolOutput::text(text)
        }
        other => return Err(not_of_family(&other)),
    })
}
