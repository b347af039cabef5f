//! Going places: navigate, back, forward, reload, each answered with the page it
//! reached.

use super::*;

/// A call that goes places.
#[derive(Debug, Clone)]
pub enum Navigation {
    /// `browser_navigate`.
    To {
        /// Where to.
        url: String,
        /// When it counts as loaded.
        wait_until: WaitUntil,
        /// What of the new page the result shows.
        snapshot: PageView,
    },
    /// `browser_back`.
    Back,
    /// `browser_forward`.
    Forward,
    /// `browser_reload`.
    Reload,
}

/// What of a new page a navigation's result shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PageView {
    /// The capped snapshot.
    #[default]
    Full,
    /// Only what can be acted on, and the headings that locate it.
    Interactive,
    /// Nothing: the agent reads the page when it wants to.
    None,
}

impl Family for Navigation {
    fn tool_name(&self) -> &'static str {
        match self {
            Navigation::To { .. } => "browser_navigate",
            Navigation::Back => "browser_back",
            Navigation::Forward => "browser_forward",
            Navigation::Reload => "browser_reload",
        }
    }

    fn audit_args(&self) -> serde_json::Value {
        match self {
            Navigation::To { url, .. } => serde_json::json!({ "url": url }),
            _ => serde_json::json!({}),
        }
    }

    fn navigation_target(&self) -> Option<&str> {
        match self {
            Navigation::To { url, .. } => Some(url),
            _ => None,
        }
    }

    fn outbound(&self) -> Vec<Outbound<'_>> {
        match self {
            Navigation::To { url, .. } => vec![Outbound {
                what: "URL",
                text: url,
                to: Sink::Url(url),
            }],
            _ => Vec::new(),
        }
    }
}

/// Runs one call of this family.
pub(super) async fn run(cx: Cx<'_>, call: Navigation) -> Result<ToolOutput> {
    let Cx {
        session,
        fence,
        surface,
        ..
    } = cx;
    Ok(match call {
        Navigation::To {
            url,
            wait_until,
            snapshot: view,
        } => {
            let outcome = match session.navigate(&url, wait_until).await {
                // An https navigation the proxy could not carry out fails in Chromium
                // (a tunnel error); the proxy knows why.
                Err(BrowserError::NavigationFailed { url: shown, reason }) => {
                    let reason = match proxy_failure(session, &[&url]).await {
                        Some(why) => format!("{why} ({reason})"),
                        None => reason,
                    };
                    return Err(BrowserError::NavigationFailed { url: shown, reason }.into());
                }
                other => other?,
            };
            // An http one ends on the proxy's error page: a failure, not a page.
            if outcome.status == Some(502)
                && let Some(why) = proxy_failure(session, &[&outcome.url, &url]).await
            {
                return Err(BrowserError::NavigationFailed {
                    url: url.chars().take(200).collect(),
                    reason: why,
                }
                .into());
            }
            // A new document: the whole (capped) snapshot says more than a diff.
            let mut text = header(&outcome, fence, surface, None);
            if holds_page(&outcome) || outcome.navigation_held {
                return Ok(ToolOutput::text(text.trim_end()).read_on(&outcome.url));
            }
            let options = match view {
                PageView::Full => SnapshotOptions {
                    max_bytes: NAVIGATION_SNAPSHOT_BYTES,
                    ..SnapshotOptions::default()
                },
                PageView::Interactive => SnapshotOptions {
                    interactive_only: true,
                    max_bytes: NAVIGATION_SNAPSHOT_BYTES,
                    ..SnapshotOptions::default()
                },
                PageView::None => {
                    // The next action's changes start from this page, not the last.
                    match session.forget_changes().await {
                        Err(BrowserError::DialogOpen { kind }) => {
                            text.push_str(&dialog_line(&kind, surface));
                            return Ok(ToolOutput::text(text));
                        }
                        other => other?,
                    }
                    text.push_str("(no snapshot was asked for");
                    if let Some(step) = surface.suggest(Step::Snapshot) {
                        text.push_str(&format!(": {step}"));
                    }
                    text.push(')');
                    return Ok(ToolOutput::text(text));
                }
            };
            match session.snapshot(&options).await {
                Ok(snapshot) => text.push_str(&fence.wrap(&snapshot.text)),
                Err(BrowserError::DialogOpen { kind }) => {
                    text.push_str(&dialog_line(&kind, surface))
                }
                Err(e) => return Err(e.into()),
            }
            ToolOutput::text(text).read_on(&outcome.url)
        }
        Navigation::Back => {
            let outcome = session.back().await?;
            after_navigation(session, fence, surface, outcome, None).await?
        }
        Navigation::Forward => {
            let outcome = session.forward().await?;
            after_navigation(session, fence, surface, outcome, None).await?
        }
        Navigation::Reload => {
            let outcome = session.reload().await?;
            after_navigation(session, fence, surface, outcome, None).await?
        }
    })
}

// Why the egress proxy could not carry out a request to one of `urls`, if it could not.
async fn proxy_failure(session: &BrowserSession, urls: &[&str]) -> Option<String> {
    match session.proxy_failures(urls).await {
        Ok(failures) => failures.into_iter().flatten().next(),
        Err(e) => {
            tracing::debug!(error = %e, "could not ask the proxy why a request failed");
            None
        }
    }
}
