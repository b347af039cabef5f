//! Decisions and their reasons.

use std::fmt;

/// Why a request was denied; also the key blocked requests are counted by.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum DenyReason {
    /// The URL could not be parsed.
    InvalidUrl,
    /// The scheme is not allowed (`file:`, `javascript:` …).
    Scheme,
    /// The host is not on the allowlist.
    HostNotAllowed,
    /// The host is on the denylist.
    HostDenied,
    /// The address is private, loopback, link-local, reserved … and not in `allow_private`.
    PrivateAddress,
    /// The address is one Airlock itself listens on (never reachable from a page).
    AirlockAddress,
    /// The name did not resolve.
    Unresolvable,
    /// The request carried a form of a secret the session holds to an origin that
    /// secret is not bound to (the browser session's outbound protection).
    CarriedSecret,
    /// An operator's effect rule refuses what the request is (its method, URL or
    /// the fields it carries).
    EffectRule,
}

impl DenyReason {
    /// Short label for summaries: `blocked 3 requests: 2 private address, 1 host not allowed`.
    pub fn label(self) -> &'static str {
        match self {
            DenyReason::InvalidUrl => "invalid url",
            DenyReason::Scheme => "scheme not allowed",
            DenyReason::HostNotAllowed => "host not allowed",
            DenyReason::HostDenied => "host denied",
            DenyReason::PrivateAddress => "private address",
            DenyReason::AirlockAddress => "airlock address",
            DenyReason::Unresolvable => "unresolvable",
            DenyReason::CarriedSecret => "carried a secret",
            DenyReason::EffectRule => "refused by an effect rule",
        }
    }
}

/// A policy decision. A denial carries its reason and a one-line explanation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The request may go ahead.
    Allow,
    /// The request is refused.
    Deny {
        /// The category.
        reason: DenyReason,
        /// For an operator: `169.254.169.254 is link-local (cloud metadata)`.
        detail: String,
    },
}

impl Decision {
    pub(crate) fn deny(reason: DenyReason, detail: impl Into<String>) -> Decision {
        Decision::Deny {
            reason,
            detail: detail.into(),
        }
    }

    /// Whether the request may go ahead.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow)
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::Allow => f.write_str("allowed"),
            Decision::Deny { detail, .. } => write!(f, "policy_denied: {detail}"),
        }
    }
}
