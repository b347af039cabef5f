//! What happens in a session between calls, for whoever watches it live (an
//! operator's console, through a worker's channel): dialogs that hold a page, tabs
//! opened and crashed, and every notice the next action's outcome will also carry
//! (downloads, popups refused, requests stopped). Numbered and kept in a bounded
//! ring: a watcher asks for what came after the last number it saw, and is told how
//! many it missed if it fell more than [`EVENTS_KEPT`] behind — an event is never
//! lost silently, and a slow watcher never holds up the page.
//!
//! Every word in an event is redacted where it is made, like an outcome's.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::action::Notice;

/// Events a session keeps for its watchers.
pub const EVENTS_KEPT: usize = 256;

/// One thing that happened in a session.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub enum PageEvent {
    /// A page opened a dialog; it holds the page until answered (or its hold runs
    /// out).
    DialogOpened {
        /// The tab's serial.
        tab: u32,
        /// `alert`, `confirm`, `prompt` or `beforeunload`.
        kind: String,
        /// Its message, redacted and cut.
        message: String,
    },
    /// A tab opened.
    TabOpened {
        /// Its serial.
        tab: u32,
        /// A page opened it (a popup), not the agent.
        by_page: bool,
    },
    /// A tab's page crashed.
    TabCrashed {
        /// Its serial.
        tab: u32,
    },
    /// What the next action's outcome will report too.
    Notice(Notice),
}

/// What came after a number.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct EventBatch {
    /// The events, oldest first, each with its number.
    pub events: Vec<(u64, PageEvent)>,
    /// Events that were let go of before the watcher asked.
    pub missed: u64,
    /// The number of the newest event (what to ask after next time).
    pub last: u64,
}

/// A session's ring of events.
pub struct PageEvents {
    ring: Mutex<VecDeque<(u64, PageEvent)>>,
    /// The number of the newest event; watchers wait on it.
    last: watch::Sender<u64>,
}

impl Default for PageEvents {
    fn default() -> Self {
        PageEvents {
            ring: Mutex::new(VecDeque::new()),
            last: watch::channel(0).0,
        }
    }
}

impl std::fmt::Debug for PageEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageEvents")
            .field("last", &*self.last.borrow())
            .finish()
    }
}

impl PageEvents {
    pub(crate) fn push(&self, event: PageEvent) {
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        let number = *self.last.borrow() + 1;
        if ring.len() == EVENTS_KEPT {
            ring.pop_front();
        }
        ring.push_back((number, event));
        // Under the ring's lock: numbers go out in order.
        self.last.send_replace(number);
    }

    /// Everything after event `after`.
    pub fn since(&self, after: u64) -> EventBatch {
        let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        let last = *self.last.borrow();
        // Ahead of this session (a watcher of an earlier one): all of it is news.
        let after = if after > last { 0 } else { after };
        let oldest = ring.front().map_or(last + 1, |(n, _)| *n);
        EventBatch {
            events: ring.iter().filter(|(n, _)| *n > after).cloned().collect(),
            missed: oldest.saturating_sub(after + 1),
            last,
        }
    }

    /// Changes whenever an event comes.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.last.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crash(tab: u32) -> PageEvent {
        PageEvent::TabCrashed { tab }
    }

    #[test]
    fn a_watcher_gets_what_came_after_and_is_told_what_it_missed() {
        let events = PageEvents::default();
        assert_eq!(events.since(0), EventBatch::default());
        events.push(crash(0));
        events.push(crash(1));
        let batch = events.since(1);
        assert_eq!(batch.events, vec![(2, crash(1))]);
        assert_eq!((batch.missed, batch.last), (0, 2));
        for tab in 2..(EVENTS_KEPT as u32 + 10) {
            events.push(crash(tab));
        }
        let batch = events.since(1);
        assert_eq!(batch.events.len(), EVENTS_KEPT);
        // 266 came; 11..=266 are kept; 2..=10 went before this watcher asked.
        assert_eq!(batch.missed, 9);
        assert_eq!(batch.events[0].0, 11);
        // Caught up: nothing, nothing missed.
        let caught = events.since(batch.last);
        assert!(caught.events.is_empty());
        assert_eq!(caught.missed, 0);
    }
}
