//! The call pipeline: every tool call from every surface passes these stages in
//! order, each a small method: admit (role, placeholders outside typed text, the
//! policy on a navigation target) → the lease (entered for the call, opened lazily)
//! → `tools::execute` → crash recovery → what egress refused meanwhile → redaction → the
//! one log line. No stage holds a lock across the browser's work but the lease entry.

use super::*;

impl AgentSession {
    /// Runs one tool call. Never fails: errors come back as a [`ToolOutput`] with a
    /// code, so every surface reports them the same way.
    pub async fn call(&self, call: ToolCall) -> ToolOutput {
        let tool = call.tool_name();
        let started = Instant::now();
        let out = self.run(call).await;
        // The one log line of a tool call, whichever surface it came from.
        tracing::info!(
            agent.id = self.inner.id,
            tool.name = tool,
            duration_ms = started.elapsed().as_millis() as u64,
            error.code = out.error.map(ErrorCode::as_str),
            "tool call"
        );
        out
    }

    async fn run(&self, call: ToolCall) -> ToolOutput {
        let _busy = BusyGuard::new(&self.inner);
        if let Err(e) = self.admit(&call).await {
            return ToolOutput::from_error(&e);
        }
        let lease = match call {
            ToolCall::SessionOpen(options) => {
                return self
                    .open(options)
                    .await
                    .unwrap_or_else(|e| ToolOutput::from_error(&e));
            }
            ToolCall::SessionClose => return self.close_browser().await,
            _ => match self.browser_session().await {
                Ok(lease) => lease,
                Err(e) => return ToolOutput::from_error(&e),
            },
        };
        let held = lease.held.clone();
        let mut out =
            match tools::execute(&held, &held.proxy, &self.inner.fence, &held.loaded, call).await {
                Ok(out) => out,
                Err(e) => {
                    let mut out = ToolOutput::from_error(&e);
                    if e.code() == ErrorCode::BrowserCrashed {
                        out.push_note(&self.recover(lease).await);
                    }
                    out
                }
            };
        // What the page tried and the proxy, or the session's outbound protection,
        // refused meanwhile.
        let mut blocked = held.proxy.take_unreported();
        let carried = held.session.take_refused_requests();
        if carried > 0 {
            *blocked.entry(DenyReason::CarriedSecret).or_default() += carried;
        }
        if let Some(summary) = summarize(&blocked) {
            out.text.push('\n');
            out.text.push_str(&summary);
        }
        // The browser session redacted everything it took from the page before using
        // it; every output passes the redactor once more as a whole (it withholds all
        // of a text if it ever fails).
        out.redact_with(|text| held.loaded.redact(text));
        out
    }

    // What is refused before any browser work: a role below the tool's, a placeholder
    // outside typed text, and
    // a navigation the policy denies (checked here, before Chromium sees the URL:
    // Page.navigate would load file:, chrome: and data: URLs and run javascript: ones).
    async fn admit(&self, call: &ToolCall) -> Result<()> {
        if let Some(gateway) = self.inner.gateway.upgrade() {
            let has = gateway.config.credentials.role;
            if has < call.min_role() {
                return Err(Error::RoleTooLow {
                    tool: call.tool_name(),
                    needs: call.min_role().as_str(),
                    has: has.as_str(),
                });
            }
        }
        if let Some(param) = call.misplaced_placeholder() {
            return Err(Error::PlaceholderMisplaced { param });
        }
        if let Some(url) = call.navigation_target()
            && let Some(policy) = self.policy().await
            && let Decision::Deny { reason, detail } = policy.check_url(url).decision
        {
            // A URL that does not parse is a mistake in the call, not a refusal.
            if reason == DenyReason::InvalidUrl {
                let hint = if url.contains("://") {
                    ""
                } else {
                    "; give an absolute URL such as https://example.com/"
                };
                return Err(Error::InvalidArgument(format!("{detail}{hint}")));
            }
            return Err(Error::PolicyDenied { detail });
        }
        Ok(())
    }

    // After a crash, what the next call gets: a fresh blank tab in the same session
    // when only a page's renderer died, a fresh session when the browser did. Says
    // which, for the failed call's message.
    async fn recover(&self, lease: InUse) -> String {
        let held = lease.held.clone();
        if held.session.browser_alive() {
            match held.session.replace_lost_tabs().await {
                Ok(_) => {
                    return "; the tab was replaced by a blank one (cookies, storage and other tabs are kept): navigate again".to_owned();
                }
                Err(e) => tracing::warn!(error = %e, "could not replace a crashed tab"),
            }
        }
        let id = lease.id.clone();
        // Leave the lease first: its browser is closed whatever is in it, but the
        // reaper must not count this call as using it.
        drop(lease);
        let mut slot = self.inner.slot.lock().await;
        if let Slot::Leased(open) = &*slot
            && open.id == id
        {
            let open = open.clone();
            *slot = Slot::Empty;
            drop(slot);
            self.inner.sessions.close(&open, End::Lost).await;
        }
        "; the browser session was lost with it: the next call opens a fresh one (cookies and tabs are gone)".to_owned()
    }

    // The policy the next navigation is held to: the open session's own, else the
    // tenant's (a session opened lazily gets that one).
    async fn policy(&self) -> Option<Arc<Policy>> {
        if let Some(lease) = self.inner.slot.lock().await.open_lease() {
            return Some(lease.held.policy.clone());
        }
        Some(self.inner.gateway.upgrade()?.policy.clone())
    }
}
