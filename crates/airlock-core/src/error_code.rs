//! The one public table of error codes an agent or API client can see.

use std::fmt;

/// A stable, snake_case error code. Agents branch on these strings, so a code's text
/// never changes once released; add new codes instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// A parameter is missing, malformed or out of range.
    InvalidArgument,
    /// A snapshot ref names a node that no longer exists on the page.
    RefNotFound,
    /// The target exists but cannot be acted on (hidden, disabled, moving, covered).
    ElementNotActionable,
    /// A role/name or selector target matched nothing.
    ElementNotFound,
    /// An action or wait did not finish within its time budget.
    Timeout,
    /// Navigation failed (DNS, connection refused, aborted, bad status).
    NavigationFailed,
    /// The egress policy refused the request.
    PolicyDenied,
    /// A secret placeholder was used where its bound origin does not match.
    SecretOriginMismatch,
    /// A human denied the action.
    ApprovalDenied,
    /// Nobody approved the action in time.
    ApprovalTimeout,
    /// The session ended (closed, idle TTL or lifetime reached).
    SessionExpired,
    /// A browser session is open already; opening one with other options needs the
    /// open one closed first (nothing of the new options was applied).
    SessionAlreadyOpen,
    /// A per-tenant, per-user or global cap was reached.
    QuotaExceeded,
    /// The Chromium process serving the session died.
    BrowserCrashed,
    /// No Chromium could be found or started.
    BrowserUnavailable,
    /// Downloads are refused by policy.
    DownloadRefused,
    /// The tab index or id does not exist.
    TabNotFound,
    /// No credentials, or credentials not accepted.
    Unauthorized,
    /// Credentials accepted but not allowed to do this.
    Forbidden,
    /// The named resource does not exist.
    NotFound,
    /// A bug or an unexpected failure inside Airlock.
    Internal,
    /// The session ran as many actions as its budget allows; a new session gets a
    /// fresh budget.
    BudgetExhausted,
    /// An operator holds the session's page; retry once it is handed back.
    SessionHeld,
    /// Another call of the session waits for a human's approval.
    ApprovalPending,
    /// The page changed while the call waited for approval; nothing was done.
    ApprovalStale,
    /// An approval was decided already or expired; a second decision changes nothing.
    ApprovalClosed,
    /// A JavaScript dialog holds the page; answer it (`browser_handle_dialog`) first.
    DialogOpen,
    /// The page navigated away while the action ran, so it stopped part-way; take a
    /// new snapshot of the page it is on now.
    PageChanged,
    /// The operator's model endpoint failed a server-side task: it timed out, kept
    /// refusing (429/5xx past the retries), or answered something that is no step.
    ModelFailed,
    /// A request an effect rule held was approved, but the page or browser had let
    /// go of it meanwhile (its tab closed, its page replaced): it was never sent.
    RequestNotSent,
    /// The store Airlock keeps keys and sessions in does not answer: nothing was
    /// decided about the caller (not a wrong key); retry in a few seconds.
    StoreUnavailable,
    /// The browser session is alive, but only another control-plane replica (named
    /// in the message) can serve it; send its requests there. Not ended.
    SessionElsewhere,
    /// A stored login the session would open with is not alive (a person must give
    /// what only they have, or fix its renewal); the message names the operator's
    /// next step. Nothing was opened.
    LoginNeedsUser,
}

impl ErrorCode {
    /// Every code, in table order; used by tests and docs.
    pub const ALL: &'static [ErrorCode] = &[
        Self::InvalidArgument,
        Self::RefNotFound,
        Self::ElementNotActionable,
        Self::ElementNotFound,
        Self::Timeout,
        Self::NavigationFailed,
        Self::PolicyDenied,
        Self::SecretOriginMismatch,
        Self::ApprovalDenied,
        Self::ApprovalTimeout,
        Self::SessionExpired,
        Self::SessionAlreadyOpen,
        Self::QuotaExceeded,
        Self::BrowserCrashed,
        Self::BrowserUnavailable,
        Self::DownloadRefused,
        Self::TabNotFound,
        Self::Unauthorized,
        Self::Forbidden,
        Self::NotFound,
        Self::Internal,
        Self::BudgetExhausted,
        Self::SessionHeld,
        Self::ApprovalPending,
        Self::ApprovalStale,
        Self::ApprovalClosed,
        Self::DialogOpen,
        Self::PageChanged,
        Self::ModelFailed,
        Self::RequestNotSent,
        Self::StoreUnavailable,
        Self::SessionElsewhere,
        Self::LoginNeedsUser,
    ];

    /// The wire form, e.g. `ref_not_found`.
    pub fn as_str(self) -> &'static str {
        self.row().0
    }

    /// The HTTP status the REST surface answers with.
    pub fn http_status(self) -> u16 {
        self.row().1
    }

    /// Whether the same call may succeed if simply tried again later.
    pub fn retryable(self) -> bool {
        self.row().2
    }

    // One row per code keeps the string, status and retry flag side by side, the way
    // meilisearch's error table does, so they cannot drift apart.
    fn row(self) -> (&'static str, u16, bool) {
        match self {
            Self::InvalidArgument => ("invalid_argument", 400, false),
            Self::RefNotFound => ("ref_not_found", 404, false),
            Self::ElementNotActionable => ("element_not_actionable", 409, true),
            Self::ElementNotFound => ("element_not_found", 404, true),
            Self::Timeout => ("timeout", 504, true),
            Self::NavigationFailed => ("navigation_failed", 502, true),
            Self::PolicyDenied => ("policy_denied", 403, false),
            Self::SecretOriginMismatch => ("secret_origin_mismatch", 403, false),
            Self::ApprovalDenied => ("approval_denied", 403, false),
            Self::ApprovalTimeout => ("approval_timeout", 408, true),
            Self::SessionExpired => ("session_expired", 410, false),
            Self::SessionAlreadyOpen => ("session_already_open", 409, false),
            Self::QuotaExceeded => ("quota_exceeded", 429, true),
            Self::BrowserCrashed => ("browser_crashed", 503, true),
            Self::BrowserUnavailable => ("browser_unavailable", 503, true),
            Self::DownloadRefused => ("download_refused", 403, false),
            Self::TabNotFound => ("tab_not_found", 404, false),
            Self::Unauthorized => ("unauthorized", 401, false),
            Self::Forbidden => ("forbidden", 403, false),
            Self::NotFound => ("not_found", 404, false),
            Self::Internal => ("internal", 500, true),
            Self::BudgetExhausted => ("budget_exhausted", 429, false),
            Self::SessionHeld => ("session_held", 409, true),
            Self::ApprovalPending => ("approval_pending", 409, true),
            Self::ApprovalStale => ("approval_stale", 409, false),
            Self::ApprovalClosed => ("approval_closed", 409, false),
            Self::DialogOpen => ("dialog_open", 409, false),
            Self::PageChanged => ("page_changed", 409, false),
            Self::ModelFailed => ("model_failed", 502, true),
            Self::RequestNotSent => ("request_not_sent", 409, false),
            Self::StoreUnavailable => ("store_unavailable", 503, true),
            Self::SessionElsewhere => ("session_elsewhere", 421, false),
            Self::LoginNeedsUser => ("login_needs_user", 409, false),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Implemented by every layer's error type so each surface maps errors to codes once.
pub trait HasErrorCode {
    /// The public code for this error.
    fn code(&self) -> ErrorCode;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_snake_case() {
        let mut seen = HashSet::new();
        for code in ErrorCode::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "duplicate code {s}");
            assert!(
                s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{s} is not snake_case"
            );
            assert!((400..600).contains(&code.http_status()));
        }
        assert_eq!(seen.len(), ErrorCode::ALL.len());
    }
}
