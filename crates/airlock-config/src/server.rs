//! Validated `[server]`: where the surface listens, who may call it, and which
//! proxies in front of it are believed about who the client is.

use std::net::SocketAddr;

use airlock_core::Role;
use ipnet::IpNet;

use crate::{Error, JwtConfig, Result};

/// Validated `[server]`.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Bearer token required on `/mcp`; `None` means no auth (loopback only).
    pub api_key: Option<ApiKey>,
    /// Bearer token of approvers on `/api/v1`; `None`: the API is off.
    pub admin_key: Option<ApiKey>,
    /// Extra browser origins allowed on `/mcp`.
    pub allowed_origins: Vec<String>,
    /// Where clients reach this server (scheme, host and port, no path), if said;
    /// otherwise the address it is bound to. Never the `Host` a request names.
    pub public_url: Option<String>,
    /// Role of callers.
    pub role: Role,
    /// Whether `[server] role` was written (else `role` is the default, and the
    /// local stdio user acts as the operator they are).
    pub role_set: bool,
    /// Bearer JWTs of service callers, when configured.
    pub jwt: Option<JwtConfig>,
    /// The proxies (addresses, networks) whose `X-Forwarded-For` names the client:
    /// the failure limiter and the record key on that client, not on the proxy.
    pub trusted_proxies: Vec<IpNet>,
}

/// A bearer token; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(pub(crate) String);

impl ApiKey {
    /// Wraps a token.
    pub fn new(token: impl Into<String>) -> ApiKey {
        ApiKey(token.into())
    }

    /// The token, for comparison at the one place that checks it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([REDACTED])")
    }
}

/// `[server] trusted_proxies` as networks: an address alone is a network of one.
pub(crate) fn trusted_proxies(raw: &[String]) -> Result<Vec<IpNet>> {
    raw.iter()
        .enumerate()
        .map(|(i, text)| {
            let text = text.trim();
            text.parse::<IpNet>()
                .or_else(|_| text.parse::<std::net::IpAddr>().map(IpNet::from))
                .map_err(|_| Error::Invalid {
                    key: format!("server.trusted_proxies[{i}]"),
                    message: format!(
                        "`{text}` is neither an address nor a network (`10.0.0.0/8`, `fd00::/8`, `10.1.2.3`)"
                    ),
                })
        })
        .collect()
}
