//! What a live watcher of the session waits on: its events, and the signal that the
//! active tab's pixels changed. That signal is Chromium's screencast, run at 16
//! pixels and thrown away: only a frame's arrival counts (an idle page sends none),
//! and the watcher is then shown a screenshot, masked like every other.

use std::sync::atomic::Ordering;

use super::*;
use crate::events::PageEvents;

/// How long starting a screencast waits for its first frame (the page as it is).
const FIRST_FRAME: Duration = Duration::from_secs(1);

impl Session {
    /// The session's events.
    pub fn events(&self) -> &Arc<PageEvents> {
        &self.guard.events
    }

    /// The serial of the active tab.
    pub fn active_tab(&self) -> Result<u32> {
        Ok(self.active()?.serial)
    }

    /// The active tab's serial, and a receiver that changes whenever its page
    /// paints; starts the screencast on it unless one runs.
    pub async fn paints(&self) -> Result<(u32, watch::Receiver<u64>)> {
        let tab = self.active()?;
        let mut painted = tab.state.painted.subscribe();
        if !tab.state.casting.swap(true, Ordering::AcqRel) {
            let params = json!({ "format": "jpeg", "quality": 1, "maxWidth": 16, "maxHeight": 16 });
            if let Err(e) = tab
                .call("Page.startScreencast", params, self.budget())
                .await
            {
                tab.state.casting.store(false, Ordering::Release);
                return Err(e);
            }
            // A screencast starts with the page as it is: that frame is no change.
            let first = FIRST_FRAME.min(self.budget());
            let _ = tokio::time::timeout(first, painted.changed()).await;
            painted.mark_unchanged();
        }
        Ok((tab.serial, painted))
    }

    /// Stops every screencast [`Session::paints`] started: no one watches.
    pub async fn stop_paints(&self) {
        let tabs = lock(&self.registry).tabs.clone();
        for tab in tabs {
            if tab.state.casting.swap(false, Ordering::AcqRel) {
                let _ = tab
                    .call("Page.stopScreencast", json!({}), self.budget())
                    .await;
            }
        }
    }
}
