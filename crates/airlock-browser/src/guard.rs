//! The navigation guard a session's tabs share: the policy that judges where a page
//! may go by itself, and the notices of what it stopped, for the next outcome. Its own
//! room so that the tab (which judges navigations) and the outbound request hooks
//! (which report refusals) both use it without depending on each other.

use std::sync::{Arc, Mutex, RwLock};

use airlock_core::Redact;
use airlock_policy::Policy;

use crate::action::Notice;
use crate::events::{PageEvent, PageEvents};

/// Where pages may navigate by themselves. The egress proxy stops every network
/// request; this stops what never reaches a network: a page moving its top frame to a
/// `blob:` or `data:` URL, and popups opened to a URL the policy denies (closed rather
/// than left showing the proxy's refusal).
#[derive(Clone)]
pub(crate) struct NavGuard {
    /// `None` judges nothing (browser-layer tests; a pre-warmed session before it is
    /// handed out, which has not left `about:blank`). Shared by the session's tabs.
    pub(crate) policy: Arc<RwLock<Option<Arc<Policy>>>>,
    /// What the guard did, for the next action's outcome (shared by the session's tabs,
    /// so a closed popup's notice outlives its tab).
    pub(crate) notices: Arc<Mutex<Vec<Notice>>>,
    /// Notices quote page URLs: redacted before they are cut.
    pub(crate) redactor: Arc<dyn Redact>,
    /// Windows the session's pages announced they are opening (`Page.windowOpen`):
    /// an action's outcome waits, briefly, until that many popups have arrived.
    pub(crate) windows_opened: Arc<std::sync::atomic::AtomicU64>,
    /// What a live watcher of the session is shown: every notice too.
    pub(crate) events: Arc<PageEvents>,
}

impl NavGuard {
    pub(crate) fn new(policy: Option<Arc<Policy>>, redactor: Arc<dyn Redact>) -> NavGuard {
        NavGuard {
            policy: Arc::new(RwLock::new(policy)),
            notices: Arc::default(),
            redactor,
            windows_opened: Arc::default(),
            events: Arc::default(),
        }
    }

    pub(crate) fn set_policy(&self, policy: Arc<Policy>) {
        *self.policy.write().unwrap_or_else(|p| p.into_inner()) = Some(policy);
    }

    pub(crate) fn policy(&self) -> Option<Arc<Policy>> {
        self.policy
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn notify(&self, notice: Notice) {
        self.events.push(PageEvent::Notice(notice.clone()));
        self.notices
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(notice);
    }

    /// Like `notify`, unless the same notice is already waiting (a page repeating a
    /// refused request is told once). Its words are redacted first.
    pub(crate) fn notify_once(&self, notice: Notice) {
        let notice = match notice {
            Notice::RequestRefused { origin, why } => Notice::RequestRefused {
                origin: self.redactor.redact(&origin).into_owned(),
                why: self.redactor.redact(&why).into_owned(),
            },
            other => other,
        };
        let mut notices = self.notices.lock().unwrap_or_else(|p| p.into_inner());
        if !notices.contains(&notice) {
            self.events.push(PageEvent::Notice(notice.clone()));
            notices.push(notice);
        }
    }
}
