//! The gateway's error: one variant per way a call fails here, each with its public
//! code ([`HasErrorCode`]) and a one-line message. Stages return it as data; the
//! [`ToolOutput`](crate::ToolOutput) an agent reads is made from it once, at the end of
//! the call, so later stages (audit, approvals) see what failed, not prose.

use airlock_core::{ErrorCode, HasErrorCode};

/// Why a call failed in the gateway or below it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The browser layer failed (its own code).
    #[error(transparent)]
    Browser(#[from] airlock_browser::Error),
    /// An argument that cannot be used as given.
    #[error("{0}")]
    InvalidArgument(String),
    /// The egress policy refuses the URL.
    #[error("{detail}")]
    PolicyDenied {
        /// Which rule refused it, for the agent.
        detail: String,
    },
    /// The tool is switched off on this server.
    #[error("`{tool}` is off on this server ({how})")]
    ToolOff {
        /// The tool called.
        tool: &'static str,
        /// How an operator switches it on.
        how: &'static str,
    },
    /// The caller's role does not allow this tool.
    #[error("`{tool}` needs the `{needs}` role; this caller has `{has}`")]
    RoleTooLow {
        /// The tool called.
        tool: &'static str,
        /// The least role it needs.
        needs: &'static str,
        /// The caller's.
        has: &'static str,
    },
    /// A `{{secret:…}}` placeholder outside typed text.
    #[error("a secret placeholder may appear only in typed text, not in `{param}`")]
    PlaceholderMisplaced {
        /// The parameter that held it.
        param: &'static str,
    },
    /// Credentials were asked for, but this gateway has no vault.
    #[error("this Airlock has no vault configured, so no credentials can be used")]
    NoVault,
    /// The session was not opened: this caller may not use the credentials it asked
    /// for. Says why and what to do instead.
    #[error(
        "the browser session was not opened: {why}; ask the operator for a grant token (`airlock grant create --domains …`) and pass it as `grant`, or open without `credentials`"
    )]
    CredentialRefused {
        /// Why (the role, or what the grant does not cover).
        why: String,
    },
    /// No stored credential has that name (said only to callers with authority).
    #[error("there is no stored credential named `{name}`")]
    CredentialUnknown {
        /// The name asked for.
        name: String,
    },
    /// A placeholder names a credential the session did not load.
    #[error("`{name}` is not loaded in this session")]
    CredentialNotLoaded {
        /// The name in the placeholder.
        name: String,
    },
    /// A placeholder names a field the credential does not have.
    #[error("`{name}` has no {field}")]
    CredentialFieldMissing {
        /// The credential.
        name: String,
        /// The field asked for.
        field: String,
    },
    /// The session named is gone (idle TTL, or never existed).
    #[error("{0}")]
    SessionExpired(&'static str),
    /// A session open was asked for while one is open: nothing asked for was applied.
    #[error(
        "a browser session is already open ({0}; a browser tool opens one when none is), so none of these options was applied"
    )]
    SessionAlreadyOpen(String),
    /// An operator holds the session's page.
    #[error("an operator holds this browser session's page; call again once it is handed back")]
    SessionHeld,
    /// An operator's step on a session that another operator holds, or that they do
    /// not hold.
    #[error("{0}")]
    NotController(String),
    /// The session ran as many actions as its budget allows.
    #[error(
        "this browser session has used its budget of {budget} actions; a new browser session starts with a fresh one"
    )]
    BudgetExhausted {
        /// The budget.
        budget: u64,
    },
    /// A cap on live sessions (the user's, the tenant's, the gateway's) or the
    /// machine's free memory refuses a new session.
    #[error("{message}; try again in {retry_after_secs} s, or end a session you hold")]
    QuotaExceeded {
        /// Which limit: `user`, `tenant`, `total` or `memory`.
        scope: &'static str,
        /// Which limit, in words.
        message: String,
        /// When trying again may succeed.
        retry_after_secs: u64,
    },
    /// A risk rule refuses the call.
    #[error("{message} (rule `{rule}`)")]
    RuleDenied {
        /// The rule.
        rule: String,
        /// What it says.
        message: String,
    },
    /// Another call of this agent waits for approval.
    #[error(
        "another call of this session is waiting for a human's approval; wait for its result, then call again"
    )]
    ApprovalPending,
    /// A human denied the call.
    #[error("a human ({by}) denied this call{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    ApprovalDenied {
        /// Who.
        by: String,
        /// Their reason, if they gave one.
        reason: Option<String>,
    },
    /// Nobody decided in time.
    #[error("nobody approved this call within {secs} s, so it was not run (rule `{rule}`)")]
    ApprovalTimeout {
        /// The wait.
        secs: u64,
        /// The rule that held it.
        rule: String,
    },
    /// Its caller went away (cancelled the request, or disconnected) before anyone
    /// decided: the approval closed, and nothing ran.
    #[error(
        "this call's caller went away before anyone decided, so its approval was withdrawn and nothing was done"
    )]
    ApprovalWithdrawn,
    /// The page changed while the call waited.
    #[error(
        "the page changed while this call waited for approval (the element approved is gone or is another one now), so nothing was done; take a new snapshot"
    )]
    ApprovalStale,
    /// The question went back to a stateless client, which answers by retrying.
    #[error(
        "this call waits for an answer in your client (approval {id}); retry it with the answer"
    )]
    ApprovalDeferred {
        /// The approval.
        id: String,
    },
    /// Requests an effect rule held were approved but could not be sent: the page
    /// or browser had let go of them. Nothing was sent.
    #[error(
        "approved, but not sent: {what}; the page no longer held the request, so nothing reached the site — take a new snapshot and try again if it is still wanted"
    )]
    NotSent {
        /// Which requests, and why.
        what: String,
    },
    /// The approval this call answers was used by an earlier run.
    #[error("this approval was used already: an approval lets one call run once")]
    ApprovalUsed,
    /// No open browser session has the id given.
    #[error("no open browser session has that id")]
    NoSuchSession,
    /// An approval (or another operator-facing record) that does not exist for the
    /// asker: missing and another tenant's read the same.
    #[error("{0}")]
    NotFound(String),
    /// The gateway is stopping.
    #[error("the gateway is shutting down")]
    ShuttingDown,
    /// The store did not take what had to be written first (a session's opening on
    /// the audit record): nothing was handed out; retry shortly.
    #[error("{0}")]
    StoreUnavailable(String),
    /// The session is alive, but only the replica that opened it can serve it.
    #[error("{0}")]
    SessionElsewhere(String),
    /// A stored login the session would load is not alive; the message says why and
    /// what the operator does next.
    #[error("{0}")]
    LoginNeedsUser(String),
    /// Something failed that the caller cannot fix; the details are in the log.
    #[error("{0}")]
    Internal(String),
}

impl HasErrorCode for Error {
    fn code(&self) -> ErrorCode {
        match self {
            Error::Browser(e) => e.code(),
            Error::InvalidArgument(_) | Error::NoVault | Error::CredentialFieldMissing { .. } => {
                ErrorCode::InvalidArgument
            }
            Error::PolicyDenied { .. } => ErrorCode::PolicyDenied,
            Error::RoleTooLow { .. } | Error::ToolOff { .. } => ErrorCode::Forbidden,
            Error::PlaceholderMisplaced { .. } => ErrorCode::SecretOriginMismatch,
            Error::CredentialUnknown { .. } => ErrorCode::NotFound,
            Error::CredentialRefused { .. } => ErrorCode::Forbidden,
            Error::CredentialNotLoaded { .. } => ErrorCode::Forbidden,
            Error::SessionExpired(_) => ErrorCode::SessionExpired,
            Error::SessionAlreadyOpen(_) => ErrorCode::SessionAlreadyOpen,
            Error::SessionHeld | Error::NotController(_) => ErrorCode::SessionHeld,
            Error::QuotaExceeded { .. } => ErrorCode::QuotaExceeded,
            Error::BudgetExhausted { .. } => ErrorCode::BudgetExhausted,
            Error::NoSuchSession | Error::NotFound(_) => ErrorCode::NotFound,
            Error::RuleDenied { .. } => ErrorCode::PolicyDenied,
            Error::ApprovalPending => ErrorCode::ApprovalPending,
            Error::ApprovalDenied { .. } => ErrorCode::ApprovalDenied,
            Error::ApprovalTimeout { .. } => ErrorCode::ApprovalTimeout,
            Error::ApprovalStale => ErrorCode::ApprovalStale,
            Error::ApprovalDeferred { .. } => ErrorCode::ApprovalPending,
            Error::ApprovalUsed | Error::ApprovalWithdrawn => ErrorCode::ApprovalClosed,
            Error::NotSent { .. } => ErrorCode::RequestNotSent,
            Error::ShuttingDown => ErrorCode::BrowserUnavailable,
            Error::StoreUnavailable(_) => ErrorCode::StoreUnavailable,
            Error::SessionElsewhere(_) => ErrorCode::SessionElsewhere,
            Error::LoginNeedsUser(_) => ErrorCode::LoginNeedsUser,
            Error::Internal(_) => ErrorCode::Internal,
        }
    }
}

impl Error {
    /// When a retry may succeed, for an error that says so (`quota_exceeded`).
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Error::QuotaExceeded {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            Error::StoreUnavailable(_) => Some(5),
            _ => None,
        }
    }
}

/// The gateway's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
