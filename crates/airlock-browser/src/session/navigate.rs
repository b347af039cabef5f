//! Navigation: go to a URL, back, forward, reload, and waiting for a page to settle.

use super::*;

impl Session {
    // ---- navigation ---------------------------------------------------------------

    /// Navigates the active tab and waits until `wait_until`.
    pub async fn navigate(&self, url: &str, wait_until: WaitUntil) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let timeout = self.options.navigation_timeout;
        let held = tab.state.read(|s| s.effects_held);
        // Chromium answers a navigation once its request has gone; an effect rule
        // holding that request would hold the answer until it is decided.
        let navigate = tab.call("Page.navigate", json!({ "url": url }), timeout);
        tokio::pin!(navigate);
        let reply = tokio::select! {
            reply = &mut navigate => reply?,
            _ = tab.state.wait(timeout, |s| s.effects_held != held) => {
                if tab.state.read(|s| s.effects_held != held) {
                    return Ok(self.outcome(&tab, false).await);
                }
                // The wait ended for a dialog, a crash or its time: the navigation's
                // own answer says what happened.
                (&mut navigate).await?
            }
        };
        if let Some(error) = reply["errorText"].as_str().filter(|e| !e.is_empty()) {
            return Err(Error::NavigationFailed {
                url: ellipsize(url, 200),
                reason: error.to_owned(),
            });
        }
        if let Some(loader) = reply["loaderId"].as_str().map(str::to_owned) {
            let event = wait_until.lifecycle_name();
            // A request the new page makes as it loads (a form it posts at once, a
            // fetch its load waits on) may be held by an effect rule: the call
            // answers then, and the effects stage asks about it.
            let done = tab
                .state
                .wait(timeout, |s| {
                    (s.loader_id == loader && s.lifecycle.contains(event)) || s.effects_held != held
                })
                .await;
            tab.check()?;
            if tab.state.read(|s| s.effects_held != held) {
                return Ok(self.outcome(&tab, true).await);
            }
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

    // After input, wait for what the input left pending (see `settle_at`), knowing
    // nothing of where it landed.
    pub(super) async fn settle(&self, tab: &Tab, before: Before) -> bool {
        self.settle_at(tab, before, Landed::unknown(), Quiet::FrameUnlessReacted)
            .await
    }

    /// Waits, after an action's input, for what it left pending, and answers at once
    /// when nothing is. It asks the page (in the frame the input landed in) whether it
    /// reacted: the handlers have run by then, and a navigation they started has been
    /// announced. A navigation is waited for to its load; requests the input started
    /// (fetches, XHRs, scripts, frames) to their end, and a frame more for their
    /// handlers; and with [`Quiet::FrameUnlessReacted`], a page that showed no reaction
    /// yet gets a frame and a task (a handler that defers its update to an animation
    /// frame or a timer of 0). Page timers cannot be seen from Airlock's isolated
    /// world: a page that reacts at once and again after a timer shows the second
    /// change in the next read. Returns whether a navigation happened.
    pub(super) async fn settle_at(
        &self,
        tab: &Tab,
        before: Before,
        landed: Landed,
        quiet: Quiet,
    ) -> bool {
        let started = tokio::time::Instant::now();
        let navigated = self.settle_unclocked(tab, before, landed, quiet).await;
        self.clocked(started, true);
        navigated
    }

    async fn settle_unclocked(
        &self,
        tab: &Tab,
        before: Before,
        landed: Landed,
        quiet: Quiet,
    ) -> bool {
        let mark = landed
            .mark
            .map_or_else(|| "null".to_owned(), |m| m.to_string());
        let probe = format!("__airlock.settled({mark})");
        let Some(reacted) = self.probe(tab, landed.frame, &probe, before).await else {
            return false;
        };
        // One more look, after a frame and a task (or a task), when the page has
        // shown no reaction yet.
        let mut look = match quiet {
            _ if reacted == Some(true) => None,
            Quiet::FrameUnlessReacted => Some(FRAME_AND_TASK),
            Quiet::TaskUnlessReacted => Some(super::TASK),
        };
        let deadline = tokio::time::Instant::now() + REQUESTS_SETTLE.min(self.budget());
        // Awaited requests the input started that the settle has waited out. One that
        // started and already ended (refused at once, answered from cache) still gets
        // the look after a frame and a task: its handlers run after its end.
        let mut waited_through = before.requests;
        loop {
            let (requests, navigations, held) = tab
                .state
                .read(|s| (s.nav_requests, s.navigations, s.effects_held));
            // What the input caused waits for a human: the action answers now.
            if held != before.effects_held {
                return false;
            }
            if requests != before.nav_requests || navigations != before.navigations {
                tab.state
                    .wait(self.options.navigation_timeout, |s| {
                        !s.loading
                            || s.effects_held != before.effects_held
                            || (s.navigations > before.navigations && s.lifecycle.contains("load"))
                    })
                    .await;
                return tab.state.read(|s| s.navigations > before.navigations);
            }
            let started = tab.state.requests_started();
            if (started > waited_through || tab.state.requests_pending_since(before.requests))
                && tokio::time::Instant::now() < deadline
            {
                waited_through = started;
                self.requests_end(tab, before.requests, deadline).await;
                // What the responses' handlers did shows after a frame and a task.
                look = Some(FRAME_AND_TASK);
                continue;
            }
            let Some(script) = look.take() else {
                return false;
            };
            if self
                .probe(tab, landed.frame, script, before)
                .await
                .is_none()
            {
                return false;
            }
        }
    }

    // Runs a settle probe in `frame`'s isolated world: Some(whether the page reacted,
    // if the probe says), or None once the page closed its own tab (`window.close()`),
    // after waiting for the tab to go, so the outcome of the action that closed it is
    // the one that says so. A probe that fails or outlasts its cap (a page whose
    // frames are throttled) says nothing. One that fails because the page is already
    // being torn down (its close got ahead of the probe on a busy machine) is told
    // apart from a navigation by what follows within a moment: the tab goes.
    async fn probe(
        &self,
        tab: &Tab,
        frame: u32,
        script: &str,
        before: Before,
    ) -> Option<Option<bool>> {
        let eval = tokio::time::timeout(PROBE_CAP, tab.eval(frame, script, true, PROBE_CAP));
        tokio::pin!(eval);
        let reply = tokio::select! {
            reply = &mut eval => reply,
            // An effect rule holds the page's navigation: Chromium runs none of the
            // page's scripts until it is decided, so the probe would only time out
            // (and mark the tab unresponsive).
            true = tab.state.wait(PROBE_CAP, |s| s.navigations_held > 0) => return Some(None),
        };
        let value = match reply {
            Ok(Ok(value)) => value,
            Ok(Err(_)) => {
                let gone = tab
                    .state
                    .wait(CLOSING_WITHIN, |s| {
                        s.detached
                            || s.crashed
                            || s.nav_requests != before.nav_requests
                            || s.navigations != before.navigations
                    })
                    .await;
                if gone && tab.state.read(|s| s.detached) {
                    self.until_unlisted(tab).await;
                    return None;
                }
                return Some(None);
            }
            Err(_) => return Some(None),
        };
        if value["closed"].as_bool() == Some(true) {
            self.until_unlisted(tab).await;
            return None;
        }
        Some(value["reacted"].as_bool())
    }

    // Until no request started after the first `after` is in flight, the tab is lost
    // or held by a dialog, or `deadline`.
    async fn requests_end(&self, tab: &Tab, after: u64, deadline: tokio::time::Instant) {
        let mut ended = tab.state.requests_ended.subscribe();
        while tab.state.requests_pending_since(after) {
            tokio::select! {
                changed = ended.changed() => if changed.is_err() { return },
                _ = tab.state.interrupted() => return,
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    pub(super) fn nav_counters(tab: &Tab) -> Before {
        let (nav_requests, navigations, effects_held) = tab
            .state
            .read(|s| (s.nav_requests, s.navigations, s.effects_held));
        Before {
            nav_requests,
            navigations,
            effects_held,
            requests: tab.state.requests_started(),
        }
    }

    /// After a held request was released: its answer (beyond the first `after`
    /// requests), then a frame and a task for the handlers waiting on it.
    pub(crate) async fn settle_released(&self, tab: &Tab, after: u64) {
        let deadline = tokio::time::Instant::now() + REQUESTS_SETTLE.min(self.budget());
        self.requests_end(tab, after, deadline).await;
        let _ = tokio::time::timeout(PROBE_CAP, tab.eval(0, FRAME_AND_TASK, true, PROBE_CAP)).await;
    }
}

/// The tab's counters just before an action's input, against which its settle
/// judges what the input started.
#[derive(Clone, Copy, Debug)]
pub(super) struct Before {
    pub(super) nav_requests: u64,
    pub(super) navigations: u64,
    effects_held: u64,
    requests: u64,
}

/// Where an action's input landed: the frame that reacts to it, and the walker's
/// mark taken as the target was found (None: not known, as for a point or a key).
#[derive(Clone, Copy, Debug)]
pub(super) struct Landed {
    pub(super) frame: u32,
    pub(super) mark: Option<u64>,
}

impl Landed {
    pub(super) fn unknown() -> Self {
        Self {
            frame: 0,
            mark: None,
        }
    }
}

/// What a settle waits for when nothing is pending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Quiet {
    /// Nothing if the page has visibly reacted (its DOM changed, focus moved elsewhere,
    /// or the target's check or choice did), else a frame and a task: a click, a key,
    /// a hover.
    FrameUnlessReacted,
    /// Nothing if the page has visibly reacted, else a task: typing, whose input
    /// handlers ran during the insertion but may have posted the start of a request
    /// they made (a fetch starts on a task of its own).
    TaskUnlessReacted,
}

/// Longest a settle waits for the requests an action started (within the action's
/// budget): long enough for an API call to answer, short of a stream that never ends.
const REQUESTS_SETTLE: Duration = Duration::from_secs(2);
/// Longest a settle waits, after a probe failed, to learn whether the page's tab is
/// going (it closed itself) rather than navigating.
const CLOSING_WITHIN: Duration = Duration::from_millis(300);
/// Longest one settle probe may take: a page whose frames are throttled answers
/// within the probe's own 200 ms cap.
const PROBE_CAP: Duration = Duration::from_millis(500);
