//! Navigation: go to a URL, back, forward, reload, and waiting for a page to settle.

use super::*;

impl Session {
    // ---- navigation ---------------------------------------------------------------

    /// Navigates the active tab and waits until `wait_until`.
    pub async fn navigate(&self, url: &str, wait_until: WaitUntil) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let timeout = self.options.navigation_timeout;
        let reply = tab
            .call("Page.navigate", json!({ "url": url }), timeout)
            .await?;
        if let Some(error) = reply["errorText"].as_str().filter(|e| !e.is_empty()) {
            return Err(Error::NavigationFailed {
                url: ellipsize(url, 200),
                reason: error.to_owned(),
            });
        }
        if let Some(loader) = reply["loaderId"].as_str().map(str::to_owned) {
            let event = wait_until.lifecycle_name();
            let done = tab
                .state
                .wait(timeout, |s| {
                    s.loader_id == loader && s.lifecycle.contains(event)
                })
                .await;
            tab.check()?;
            if !done {
                return Err(Error::Timeout {
                    what: format!(
                        "navigation to `{}` (waiting for {event})",
                        ellipsize(url, 200)
                    ),
                    ms: timeout.as_millis(),
                });
            }
        }
        let mut outcome = self.outcome(&tab, true).await;
        outcome.status = self.document_status(&tab).await;
        Ok(outcome)
    }

    pub(super) async fn document_status(&self, tab: &Tab) -> Option<u16> {
        let value = tab
            .eval(
                0,
                "(performance.getEntriesByType('navigation')[0] || {}).responseStatus || 0",
                false,
                self.budget(),
            )
            .await
            .ok()?;
        value
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .filter(|s| *s > 0)
    }

    /// Goes back one entry in the active tab's history.
    pub async fn back(&self) -> Result<ActionOutcome> {
        self.history(-1).await
    }

    /// Goes forward one entry in the active tab's history.
    pub async fn forward(&self) -> Result<ActionOutcome> {
        self.history(1).await
    }

    pub(super) async fn history(&self, delta: i64) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let timeout = self.options.navigation_timeout;
        let history = tab
            .call("Page.getNavigationHistory", json!({}), timeout)
            .await?;
        let current = history["currentIndex"].as_i64().unwrap_or(0);
        let entries = history["entries"].as_array().cloned().unwrap_or_default();
        let wanted = current + delta;
        let entry = usize::try_from(wanted)
            .ok()
            .and_then(|i| entries.get(i))
            .ok_or_else(|| {
                Error::InvalidArgument(if delta < 0 {
                    "there is no previous page in this tab's history".to_owned()
                } else {
                    "there is no next page in this tab's history".to_owned()
                })
            })?;
        let before = tab.state.read(|s| s.navigations);
        tab.call(
            "Page.navigateToHistoryEntry",
            json!({ "entryId": entry["id"] }),
            timeout,
        )
        .await?;
        self.wait_for_load_after(&tab, before, timeout).await?;
        let mut outcome = self.outcome(&tab, true).await;
        outcome.status = self.document_status(&tab).await;
        Ok(outcome)
    }

    /// Reloads the active tab.
    pub async fn reload(&self) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let timeout = self.options.navigation_timeout;
        let before = tab.state.read(|s| s.navigations);
        tab.call("Page.reload", json!({}), timeout).await?;
        self.wait_for_load_after(&tab, before, timeout).await?;
        let mut outcome = self.outcome(&tab, true).await;
        outcome.status = self.document_status(&tab).await;
        Ok(outcome)
    }

    pub(super) async fn wait_for_load_after(
        &self,
        tab: &Tab,
        before: u64,
        timeout: Duration,
    ) -> Result<()> {
        let done = tab
            .state
            .wait(timeout, |s| {
                s.navigations > before && s.lifecycle.contains("load")
            })
            .await;
        tab.check()?;
        if done {
            Ok(())
        } else {
            Err(Error::Timeout {
                what: "the page load".to_owned(),
                ms: timeout.as_millis(),
            })
        }
    }

    // After input, give the page an animation frame and a task to react; if that
    // started a main-frame navigation, wait for it to load (bounded by the navigation
    // budget).
    pub(super) async fn settle(&self, tab: &Tab, before: (u64, u64)) -> bool {
        self.settle_with(tab, before, FRAME_AND_TASK).await
    }

    pub(super) async fn settle_with(&self, tab: &Tab, before: (u64, u64), script: &str) -> bool {
        let started = tokio::time::Instant::now();
        let navigated = self.settle_unclocked(tab, before, script).await;
        self.clocked(started, true);
        navigated
    }

    async fn settle_unclocked(&self, tab: &Tab, before: (u64, u64), script: &str) -> bool {
        let closing = tokio::time::timeout(
            Duration::from_millis(500),
            tab.eval(0, script, true, Duration::from_millis(500)),
        )
        .await
        .is_ok_and(|v| v.is_ok_and(|v| v.as_bool() == Some(true)));
        // The page closed its own tab (`window.close()`): wait for the tab to go, so
        // the outcome of the action that closed it is the one that says so.
        if closing {
            tab.state.wait(self.budget(), |s| s.detached).await;
            return false;
        }
        let (requests, navigations) = tab.state.read(|s| (s.nav_requests, s.navigations));
        if requests == before.0 && navigations == before.1 {
            return false;
        }
        tab.state
            .wait(self.options.navigation_timeout, |s| {
                !s.loading || (s.navigations > before.1 && s.lifecycle.contains("load"))
            })
            .await;
        tab.state.read(|s| s.navigations > before.1)
    }

    pub(super) fn nav_counters(tab: &Tab) -> (u64, u64) {
        tab.state.read(|s| (s.nav_requests, s.navigations))
    }
}
