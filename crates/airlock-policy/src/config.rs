//! The `[policy]` section of `airlock.toml`, as written.

use serde::Deserialize;

/// `[policy]`: what the browser may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// URL schemes pages may load: a subset of `http`, `https` (default both).
    /// `about:blank` is always allowed for navigation.
    #[serde(default)]
    pub schemes: Option<Vec<String>>,
    /// Exact host names allowed. When this or `allow_host_suffixes` is set, only
    /// matching hosts pass.
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// Domain suffixes allowed (`example.com` allows `example.com` and `a.example.com`).
    #[serde(default)]
    pub allow_host_suffixes: Vec<String>,
    /// Exact host names always denied.
    #[serde(default)]
    pub deny_hosts: Vec<String>,
    /// Domain suffixes always denied.
    #[serde(default)]
    pub deny_host_suffixes: Vec<String>,
    /// Private addresses the browser may reach although the default denies them:
    /// CIDRs (`10.0.0.0/8`), addresses (`127.0.0.1`), addresses with a port
    /// (`127.0.0.1:8123`, `[::1]:8123`) or host names (`intranet.corp`, `localhost:8123`).
    #[serde(default)]
    pub allow_private: Vec<String>,
    /// Domains navigation may leave for without approval (used by the approvals issue).
    #[serde(default)]
    pub trusted_domains: Vec<String>,
    /// WebSocket origins (`wss://chat.example.com`, `ws://host:port`) pages of a
    /// session holding secrets may still open sockets to. A socket's traffic cannot be
    /// inspected, so by default such a session allows sockets only to the origins its
    /// secrets are bound to.
    #[serde(default)]
    pub websocket_origins: Vec<String>,
}
