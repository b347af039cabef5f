//! Reading the page: snapshots, screenshots, PDFs, text, console and network logs,
//! evaluate and waits; everything the page wrote comes back fenced.

use super::*;

/// A call that reads the page (or waits for it).
#[derive(Debug, Clone)]
pub enum Reading {
    /// `browser_snapshot`.
    Snapshot(SnapshotOptions),
    /// `browser_screenshot`.
    Screenshot(ScreenshotOptions),
    /// `browser_pdf`: the page as a PDF.
    Pdf,
    /// `browser_read`.
    Text {
        /// Markdown-ish or plain.
        format: ReadFormat,
        /// Byte offset to continue from.
        offset: usize,
    },
    /// `browser_console_messages`: what the active tab logged.
    ConsoleMessages {
        /// The least serious level shown.
        level: ConsoleLevel,
        /// The newest this many.
        limit: usize,
        /// Also what pages before the last navigation logged (as Playwright MCP's
        /// `all`; by default only the page now showing).
        all: bool,
    },
    /// `browser_network_requests`: what the active tab requested.
    NetworkRequests {
        /// Only URLs containing this (case-insensitive).
        filter: Option<String>,
        /// The newest this many.
        limit: usize,
        /// Also the static resources that loaded fine (as Playwright MCP's `static`;
        /// by default left out: they are most of a page's requests and rarely news).
        with_static: bool,
    },
    /// `browser_evaluate`: the agent's function, run in the page's main world (off
    /// unless the server turns it on).
    Evaluate {
        /// A JavaScript function (`() => document.title`, `(el) => el.value`).
        function: String,
        /// The element passed to it, if any.
        target: Option<Target>,
    },
    /// `browser_wait_for`.
    WaitFor {
        /// What to wait for.
        condition: WaitCondition,
        /// Budget (default: the action budget).
        timeout: Option<Duration>,
    },
}

/// Page text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadFormat {
    /// Headings, lists, links and tables in markdown.
    #[default]
    Markdown,
    /// Plain text: no markdown syntax.
    Text,
}

impl Family for Reading {
    fn tool_name(&self) -> &'static str {
        match self {
            Reading::Snapshot(_) => "browser_snapshot",
            Reading::Screenshot(_) => "browser_screenshot",
            Reading::Pdf => "browser_pdf",
            Reading::Text { .. } => "browser_read",
            Reading::ConsoleMessages { .. } => "browser_console_messages",
            Reading::NetworkRequests { .. } => "browser_network_requests",
            Reading::Evaluate { .. } => "browser_evaluate",
            Reading::WaitFor { .. } => "browser_wait_for",
        }
    }

    // Everything here only looks, except the agent's own code.
    fn min_role(&self) -> Role {
        match self {
            Reading::Evaluate { .. } => Role::Act,
            _ => Role::Observe,
        }
    }

    fn misplaced_placeholder(&self) -> Option<&'static str> {
        match self {
            Reading::Evaluate { function, .. } if mentions(function) => Some("function"),
            Reading::Evaluate {
                target: Some(target),
                ..
            } => target_mentions(target).then_some("target"),
            Reading::NetworkRequests {
                filter: Some(filter),
                ..
            } => mentions(filter).then_some("filter"),
            Reading::WaitFor { condition, .. } => match condition {
                WaitCondition::Text(text) | WaitCondition::TextGone(text) => {
                    mentions(text).then_some("text")
                }
                WaitCondition::Target(target) => target_mentions(target).then_some("target"),
                WaitCondition::Time(_) => None,
            },
            _ => None,
        }
    }

    fn audit_args(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            Reading::WaitFor { condition, .. } => match condition {
                WaitCondition::Text(text) => json!({ "text": text }),
                WaitCondition::TextGone(text) => json!({ "text_gone": text }),
                WaitCondition::Target(target) => json!({ "target": target_json(target) }),
                WaitCondition::Time(d) => json!({ "ms": d.as_millis() as u64 }),
            },
            Reading::ConsoleMessages { level, limit, all } => {
                json!({ "level": level.as_str(), "limit": limit, "all": all })
            }
            Reading::NetworkRequests {
                filter,
                limit,
                with_static,
            } => {
                json!({ "filter": filter, "limit": limit, "static": with_static })
            }
            // The code run in the page, whole: what it did is on the record.
            Reading::Evaluate { function, target } => json!({
                "function": function,
                "target": target.as_ref().map(target_json),
            }),
            Reading::Snapshot(_) | Reading::Screenshot(_) | Reading::Pdf | Reading::Text { .. } => {
                json!({})
            }
        }
    }

    fn runs_page_code(&self) -> bool {
        matches!(self, Reading::Evaluate { .. })
    }

    fn outbound(&self) -> Vec<Outbound<'_>> {
        match self {
            Reading::Evaluate { function, target } => vec![Outbound {
                what: "function",
                text: function,
                to: target.as_ref().map_or(Sink::Page, Sink::Field),
            }],
            _ => Vec::new(),
        }
    }

    // The agent's code may change anything on the page.
    fn changes(&self) -> Changes<'_> {
        match self {
            Reading::Evaluate { .. } => Changes::Page,
            _ => Changes::Nothing,
        }
    }
}

/// Runs one call of this family.
pub(super) async fn run(cx: Cx<'_>, call: Reading) -> Result<ToolOutput> {
    let Cx {
        session,
        fence,
        surface,
        ..
    } = cx;
    Ok(match call {
        Reading::Snapshot(options) => {
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
            ToolOutput::text(text).read_on(&snapshot.url)
        }
        Reading::WaitFor { condition, timeout } => {
            let outcome = session.wait_for(&condition, timeout).await?;
            after_action(session, fence, surface, outcome, None).await?
        }
        Reading::Screenshot(options) => {
            let shot = session.screenshot(&options).await?;
            ToolOutput {
                text: if shot.covered {
                    format!(
                        "screenshot ({}, {} bytes), painted over whole: the page shows a secret where its place in the image cannot be known (moving, or drawn where Airlock cannot read); use browser_snapshot to see the page",
                        shot.mime,
                        shot.data.len()
                    )
                } else {
                    format!("screenshot ({}, {} bytes)", shot.mime, shot.data.len())
                },
                file: Some(shot),
                error: None,
                message: None,
                retry_after_secs: None,
                stages: None,
                source: None,
            }
        }
        Reading::Evaluate { function, target } => {
            let result = session.evaluate(&function, target.as_ref()).await?;
            let (whose, url) = page_line(session, fence).await?;
            // What the page's world returned is the page's word: fenced.
            ToolOutput::text(format!(
                "ran the function in the page; it returned:\n{whose}\n{}",
                fence.wrap(&result)
            ))
            .read_on(&url)
        }
        Reading::Pdf => {
            let pdf = session.pdf().await?;
            let (whose, _) = page_line(session, fence).await?;
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
                stages: None,
                source: None,
            }
        }
        Reading::Text { format, offset } => {
            let page = session.read_text(offset, DEFAULT_TEXT_BYTES).await?;
            let (whose, url) = page_line(session, fence).await?;
            let body = match format {
                ReadFormat::Markdown => page.text,
                ReadFormat::Text => plain(&page.text),
            };
            ToolOutput::text(format!("{whose}\n{}", fence.wrap(&body))).read_on(&url)
        }
        Reading::ConsoleMessages { level, limit, all } => {
            let mut log = session.console(level, limit).await?;
            let (whose, url) = page_line(session, fence).await?;
            // Earlier pages' messages only when asked for (a worker that does not
            // count them shows everything).
            let earlier = match (all, log.since_navigation) {
                (false, Some(since)) => log.entries.len().saturating_sub(since),
                _ => 0,
            };
            log.entries.drain(..earlier);
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
            if earlier > 0 {
                text.push_str(&format!(
                    "; {earlier} from before the last navigation not shown (`all: true` shows them)"
                ));
            }
            if log.dropped > 0 {
                text.push_str(&format!(
                    "; {} older ones were let go (the tab keeps its last {})",
                    log.dropped,
                    airlock_browser::CONSOLE_KEPT
                ));
            }
            text.push_str(&format!("\n{whose}\n"));
            text.push_str(&fence.wrap(body.trim_end()));
            ToolOutput::text(text).read_on(&url)
        }
        Reading::NetworkRequests {
            filter,
            limit,
            with_static,
        } => {
            // The whole buffer, then the static successes left out, then the newest.
            let mut log = session
                .network_requests(filter.as_deref(), airlock_browser::NETWORK_KEPT)
                .await?;
            let before = log.entries.len();
            if !with_static {
                log.entries.retain(|e| !loaded_static(e));
            }
            let left_out = before - log.entries.len();
            let extra = log.entries.len().saturating_sub(limit);
            log.entries.drain(..extra);
            let (whose, url) = page_line(session, fence).await?;
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
            if left_out > 0 {
                text.push_str(&format!(
                    "; {left_out} static resource{} that loaded fine not shown (`static: true` shows them)",
                    if left_out == 1 { "" } else { "s" }
                ));
            }
            if log.dropped > 0 {
                text.push_str(&format!(
                    "; {} older ones were let go (the tab keeps its last {})",
                    log.dropped,
                    airlock_browser::NETWORK_KEPT
                ));
            }
            text.push_str(&format!("\n{whose}\n"));
            text.push_str(&fence.wrap(body.trim_end()));
            ToolOutput::text(text).read_on(&url)
        }
    })
}

/// A static resource (image, script, style, font, media) that loaded fine: what
/// `browser_network_requests` leaves out unless asked, as Playwright MCP does.
fn loaded_static(entry: &airlock_browser::NetworkEntry) -> bool {
    matches!(
        entry.kind.as_str(),
        "image" | "script" | "stylesheet" | "font" | "media"
    ) && entry.failure.is_none()
        && entry.refused.is_none()
        && entry.status.is_some_and(|s| (200..400).contains(&s))
}
