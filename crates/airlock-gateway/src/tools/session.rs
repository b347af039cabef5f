//! Opening and closing the browser session: calls the agent session carries out
//! itself, since it owns the browser session they change.

use super::*;

/// A call on the browser session itself.
#[derive(Debug, Clone)]
pub enum SessionCall {
    /// `browser_session_open`.
    Open(OpenOptions),
    /// `browser_session_close`.
    Close,
}

/// What `browser_session_open` asks for. Debug never shows the grant token.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Isolation mode; the pool's default when `None`.
    pub isolation: Option<Isolation>,
    /// Narrows the policy for this session: hosts must also be on this list (exact
    /// names, or `*.example.com` for a domain and its subdomains). Never widens it.
    pub allow_hosts: Vec<String>,
    /// Stored credentials to log in with.
    pub credentials: Vec<String>,
    /// A grant token authorizing them (callers without the `operate` role).
    pub grant: Option<String>,
    /// What to keep of the session's steps; the gateway's default when `None`.
    pub record: Option<RecordMode>,
    /// A device of [`airlock_browser::DEVICES`] the session looks like to pages
    /// (viewport, pixel density, touch, User-Agent); Chromium's own when `None`.
    pub device: Option<String>,
    /// Origins the session may act on (with `read_origins`: its origin sets, which
    /// narrow the deployment's `[flow]` sets, never widen them).
    pub act_origins: Vec<String>,
    /// Origins the session may only read.
    pub read_origins: Vec<String>,
    /// The session is a stored login's own check or renewal, so a dead login does
    /// not refuse it (no agent argument sets this).
    pub login_check: bool,
}

impl OpenOptions {
    /// The session's own origin sets, if it gave any.
    pub fn origin_sets(&self) -> Result<Option<airlock_config::OriginSets>> {
        if self.act_origins.is_empty() && self.read_origins.is_empty() {
            return Ok(None);
        }
        airlock_config::OriginSets::parse("origins", &self.act_origins, &self.read_origins)
            .map(Some)
            .map_err(|e| match e {
                airlock_config::Error::Invalid { key, message } => Error::InvalidArgument(format!(
                    "{}: {message}",
                    key.replace("origins.", "").replace('[', "_origins[")
                )),
                other => Error::InvalidArgument(other.to_string()),
            })
    }
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("isolation", &self.isolation)
            .field("allow_hosts", &self.allow_hosts)
            .field("credentials", &self.credentials)
            .field("grant", &self.grant.as_ref().map(|_| "[REDACTED]"))
            .field("record", &self.record)
            .field("device", &self.device)
            .field("act_origins", &self.act_origins)
            .field("read_origins", &self.read_origins)
            .field("login_check", &self.login_check)
            .finish()
    }
}

impl Family for SessionCall {
    fn tool_name(&self) -> &'static str {
        match self {
            SessionCall::Open(_) => "browser_session_open",
            SessionCall::Close => "browser_session_close",
        }
    }

    fn audit_args(&self) -> serde_json::Value {
        match self {
            // Whether a grant came, never the grant.
            SessionCall::Open(options) => serde_json::json!({
                "credentials": options.credentials,
                "allow_hosts": options.allow_hosts,
                "grant": options.grant.is_some(),
                "record": options.record.map(RecordMode::as_str),
                "device": options.device,
                "act_origins": options.act_origins,
                "read_origins": options.read_origins,
            }),
            SessionCall::Close => serde_json::json!({}),
        }
    }
}
