//! Browser-layer errors; each maps to one public [`ErrorCode`].

use airlock_core::{ErrorCode, HasErrorCode};

use crate::cdp::CdpError;

/// What can go wrong in a browser session. Messages are one line, lower-case, and
/// name the value at fault; they never carry typed text or page content beyond
/// short identifiers.
#[derive(Debug, Clone, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Error {
    /// No usable Chromium.
    #[error("browser unavailable: {reason}")]
    BrowserUnavailable {
        /// Why.
        reason: String,
    },
    /// The Chromium serving this session died.
    #[error("the browser process serving this session crashed or exited")]
    BrowserCrashed,
    /// The renderer of the active tab crashed (out of memory, killed); the browser
    /// and the session's other tabs are alive.
    #[error("the page's renderer crashed (out of memory or killed)")]
    PageCrashed,
    /// The tab an action was working in was closed meanwhile (by its page, or by
    /// Airlock); the session goes on in its active tab.
    #[error("the tab was closed while the action ran; the next call uses the active tab")]
    TabClosed,
    /// The page did not answer a command in time: a script of its is busy (an
    /// endless loop). The next call stops its scripts, or replaces its tab.
    #[error(
        "the page did not answer within {ms} ms (a script of its is busy); the next call stops its scripts or replaces its tab"
    )]
    PageUnresponsive {
        /// The budget it missed.
        ms: u128,
    },
    /// The session (or tab) was closed.
    #[error("this session is closed; open a new one")]
    SessionClosed,
    /// A ref from an older snapshot whose node is gone.
    #[error("ref `{reference}` is not on the page any more; take a new snapshot")]
    RefNotFound {
        /// The ref as given.
        reference: String,
    },
    /// A ref of another tab than the one in use.
    #[error("{}", other_tab_message(reference, *tab))]
    RefOfOtherTab {
        /// The ref as given.
        reference: String,
        /// The tab it is of, if that tab is still open.
        tab: Option<usize>,
    },
    /// A role/name, selector or text target matched nothing.
    #[error("no element matches {target}")]
    ElementNotFound {
        /// The target, described.
        target: String,
    },
    /// The target exists but cannot be acted on.
    #[error("{target} is not actionable: {why}")]
    NotActionable {
        /// The target, described.
        target: String,
        /// Hidden, disabled, moving, covered by another element …
        why: String,
    },
    /// A wait or action ran out of time.
    #[error("{what} did not finish within {ms} ms")]
    Timeout {
        /// What was being waited for.
        what: String,
        /// The budget.
        ms: u128,
    },
    /// A navigation failed.
    #[error("navigation to `{url}` failed: {reason}")]
    NavigationFailed {
        /// Where to.
        url: String,
        /// Chromium's error text.
        reason: String,
    },
    /// A parameter is wrong.
    #[error("{0}")]
    InvalidArgument(String),
    /// A tab index that does not exist.
    #[error("there is no tab {index}; list the tabs to see which there are")]
    TabNotFound {
        /// The index given.
        index: usize,
    },
    /// The session already has the most tabs it may have.
    #[error("this session already has {max} tabs, the most it may have; close one first")]
    TabLimit {
        /// The cap.
        max: usize,
    },
    /// A secret would have gone to a field of an origin it is not bound to (or to a
    /// field that lost focus); nothing of it was typed.
    #[error("`{secret}` may be typed only on {allowed}; {detail}, so nothing of it was typed")]
    SecretOriginMismatch {
        /// The placeholder's secret name.
        secret: String,
        /// Its bound origins.
        allowed: String,
        /// What was found instead.
        detail: String,
    },
    /// A JavaScript dialog holds the active tab's page: nothing else can act on it
    /// until the dialog is answered.
    #[error("a {kind} dialog holds the page; nothing else can act on it until it is answered")]
    DialogOpen {
        /// `alert`, `confirm`, `prompt` or `beforeunload`.
        kind: String,
    },
    /// A dialog opened while an action ran and stopped it there;
    /// `Session::or_dialog` turns this into the action's outcome.
    #[error("a {kind} dialog opened and holds the page until it is answered")]
    DialogOpened {
        /// `alert`, `confirm`, `prompt` or `beforeunload`.
        kind: String,
    },
    /// `handle_dialog` found no dialog to answer.
    #[error("no dialog opened within {ms} ms, so nothing was answered")]
    NoDialog {
        /// How long it waited for one.
        ms: u128,
    },
    /// What the page made is larger than Airlock hands over.
    #[error("the {what} is {bytes} bytes, over the {cap}-byte cap")]
    TooLarge {
        /// What was made (`PDF`).
        what: String,
        /// Its size.
        bytes: usize,
        /// The cap.
        cap: usize,
    },
    /// The page navigated away (or its frame went) while the action ran; the action
    /// stopped part-way on the old page.
    #[error(
        "the page navigated away while the action ran, so it stopped part-way; take a new snapshot of the page it is on now"
    )]
    PageChanged,
    /// The session holds secrets, and what was asked for could carry one past the
    /// redactor.
    #[error("{0}")]
    SecretsHeld(String),
    /// Chromium answered a command with something we did not expect.
    #[error("browser protocol error: {0}")]
    Protocol(String),
    /// The browser host (a worker process) serving this session went away: it died,
    /// hung or disconnected. Its sessions are gone; a new one opens on a new host.
    #[error("the browser host serving this session went away ({reason}); the session ended")]
    HostGone {
        /// What was seen (`the connection closed`, `no answer within 30 s`).
        reason: String,
    },
}

impl HasErrorCode for Error {
    fn code(&self) -> ErrorCode {
        match self {
            Error::BrowserUnavailable { .. } => ErrorCode::BrowserUnavailable,
            Error::BrowserCrashed | Error::PageCrashed => ErrorCode::BrowserCrashed,
            Error::SessionClosed => ErrorCode::SessionExpired,
            Error::RefNotFound { .. } | Error::RefOfOtherTab { .. } => ErrorCode::RefNotFound,
            Error::ElementNotFound { .. } => ErrorCode::ElementNotFound,
            Error::NotActionable { .. } => ErrorCode::ElementNotActionable,
            Error::Timeout { .. } | Error::PageUnresponsive { .. } => ErrorCode::Timeout,
            Error::NavigationFailed { .. } => ErrorCode::NavigationFailed,
            Error::InvalidArgument(_) => ErrorCode::InvalidArgument,
            Error::TabNotFound { .. } | Error::TabClosed => ErrorCode::TabNotFound,
            Error::TabLimit { .. } => ErrorCode::QuotaExceeded,
            Error::SecretOriginMismatch { .. } => ErrorCode::SecretOriginMismatch,
            Error::DialogOpen { .. } | Error::DialogOpened { .. } => ErrorCode::DialogOpen,
            Error::NoDialog { .. } => ErrorCode::NotFound,
            Error::TooLarge { .. } => ErrorCode::InvalidArgument,
            Error::SecretsHeld(_) => ErrorCode::Forbidden,
            Error::PageChanged => ErrorCode::PageChanged,
            Error::Protocol(_) => ErrorCode::Internal,
            Error::HostGone { .. } => ErrorCode::BrowserCrashed,
        }
    }
}

impl Error {
    /// Maps a CDP failure; a closed pipe means the browser is gone.
    pub(crate) fn from_cdp(error: CdpError) -> Error {
        match error {
            CdpError::Closed => Error::BrowserCrashed,
            CdpError::Timeout { method, ms } => Error::Timeout {
                what: format!("browser command `{method}`"),
                ms,
            },
            // The document a command was for navigated or closed under it: the page
            // changed, which the agent answers with a new snapshot, not a fault of ours.
            CdpError::Protocol { ref message, .. }
                if message.contains("Inspected target navigated or closed") =>
            {
                Error::PageChanged
            }
            other => Error::Protocol(other.to_string()),
        }
    }
}

impl From<CdpError> for Error {
    fn from(error: CdpError) -> Self {
        Error::from_cdp(error)
    }
}

fn other_tab_message(reference: &str, tab: Option<usize>) -> String {
    match tab {
        Some(index) => format!(
            "ref `{reference}` is of tab [{index}], not of the tab in use; select that tab first, or take a snapshot of this one"
        ),
        None => format!(
            "ref `{reference}` is of a tab that is closed; take a snapshot of the tab in use"
        ),
    }
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_whose_document_went_away_is_page_changed_not_internal() {
        let gone = Error::from_cdp(CdpError::Protocol {
            method: "Runtime.evaluate".to_owned(),
            message: "Inspected target navigated or closed".to_owned(),
        });
        assert_eq!(gone.code(), ErrorCode::PageChanged, "{gone}");
        let other = Error::from_cdp(CdpError::Protocol {
            method: "Runtime.evaluate".to_owned(),
            message: "Invalid parameters".to_owned(),
        });
        assert_ne!(other.code(), ErrorCode::PageChanged, "{other}");
    }
}
