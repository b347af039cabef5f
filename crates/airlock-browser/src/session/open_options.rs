//! What a session is opened with: its isolation, proxy, policy, credentials,
//! redactor, and what judges, holds or signs its requests.

use std::sync::Arc;

use airlock_config::Isolation;
use airlock_core::Redact;
use airlock_policy::Policy;

use crate::action::Injection;
use crate::outbound::{RequestGuard, RequestSigner};

/// Options for opening a session.
#[derive(Clone, Default)]
pub struct SessionOptions {
    /// Isolation mode; the pool's default when `None`.
    pub isolation: Option<Isolation>,
    /// Proxy every connection of the session goes through (`http://127.0.0.1:PORT`),
    /// loopback included. `None` only in tests of the browser layer itself.
    pub proxy_server: Option<String>,
    /// The policy pages' own navigations are held to: popups to denied URLs are
    /// closed, top-frame moves to denied schemes (`blob:`, `data:` …) stopped.
    pub policy: Option<Arc<Policy>>,
    /// Credentials put into the session before the agent's first action.
    pub injection: Option<Arc<Injection>>,
    /// Hides the session's secrets in every string a page or Chromium hands over,
    /// before anything reads, matches or cuts it. `None` hides nothing.
    pub redactor: Option<Arc<dyn Redact>>,
    /// Sees every request a page, frame or worker of the session makes before it
    /// leaves Chromium, and may refuse it. `None` pauses only requests that get
    /// injected headers.
    pub request_guard: Option<Arc<dyn RequestGuard>>,
    /// The operator's effect rules: a request of the session one holds waits for
    /// [`Session::decide_effects`]. `None` (or none in it) pauses nothing for them.
    pub effects: Option<Arc<airlock_risk::Effects>>,
    /// Signs the session's requests (Web Bot Auth): every request is paused and the
    /// signer asked for the headers of its origin. `None` signs nothing.
    pub signer: Option<Arc<dyn RequestSigner>>,
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("isolation", &self.isolation)
            .field("proxy_server", &self.proxy_server)
            .field("policy", &self.policy.is_some())
            .field("injection", &self.injection)
            .field("redactor", &self.redactor.as_ref().map(|r| r.is_active()))
            .field("request_guard", &self.request_guard.is_some())
            .field("effects", &self.effects)
            .field("signer", &self.signer.is_some())
            .finish()
    }
}
