//! The compiled policy and its checks.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use url::{Host, Url};

use crate::address::{Cidr, classify};
use crate::config::PolicyConfig;
use crate::decision::{Decision, DenyReason};

/// Host names of cloud metadata services; they resolve to link-local addresses.
const METADATA_HOSTS: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
    "metadata.azure.internal",
];

/// A configuration error, naming the key at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted key path, e.g. `policy.allow_private[2]`.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl std::error::Error for ConfigError {}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum PrivateAllow {
    Net(Cidr, Option<u16>),
    Host(String, Option<u16>),
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct HostList {
    exact: Vec<String>,
    suffixes: Vec<String>,
}

impl HostList {
    fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.suffixes.is_empty()
    }

    fn matches(&self, host: &str) -> Option<String> {
        if self.exact.iter().any(|h| h == host) {
            return Some(host.to_owned());
        }
        self.suffixes
            .iter()
            .find(|s| {
                host == s.as_str()
                    || host
                        .strip_suffix(s.as_str())
                        .is_some_and(|rest| rest.ends_with('.'))
            })
            .cloned()
    }
}

/// A validated egress policy. Plain data: a browser worker receives the policy of
/// each session it hosts as it is and enforces it next to Chromium.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Policy {
    schemes: Vec<String>,
    allow: HostList,
    deny: HostList,
    // Allowlists added by narrowing; a host must pass every one of them.
    narrowed: Vec<HostList>,
    allow_private: Vec<PrivateAllow>,
    trusted: HostList,
    airlock_addresses: Vec<SocketAddr>,
    // `ws(s)://host[:port]` origins, canonical.
    sockets: Vec<String>,
}

/// A URL after canonicalization, with the policy's decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The canonical URL (as Chromium would serialize it), if it parsed.
    pub url: Option<String>,
    /// The canonical host (lower-case, punycode, no trailing dot, IPs in standard form).
    pub host: Option<String>,
    /// The port Chromium would connect to.
    pub port: Option<u16>,
    /// The host, when it is an IP literal.
    pub ip: Option<IpAddr>,
    /// The decision on everything knowable without DNS.
    pub decision: Decision,
}

fn err(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.into(),
        message: message.into(),
    }
}

// Lower-case, punycode, no trailing dot: the form hosts are compared in.
fn canonical_host(entry: &str) -> Option<String> {
    let trimmed = entry
        .trim()
        .trim_start_matches("*.")
        .trim_start_matches('.')
        .trim_end_matches('.');
    if trimmed.is_empty() {
        return None;
    }
    if let Ok(ip) = trimmed
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return Some(ip.to_string());
    }
    match Host::parse(trimmed).ok()? {
        Host::Domain(d) => Some(d.trim_end_matches('.').to_owned()),
        Host::Ipv4(ip) => Some(ip.to_string()),
        Host::Ipv6(ip) => Some(ip.to_string()),
    }
}

fn host_list(key: &str, exact: &[String], suffixes: &[String]) -> Result<HostList, ConfigError> {
    let mut list = HostList::default();
    for (i, h) in exact.iter().enumerate() {
        list.exact.push(canonical_host(h).ok_or_else(|| {
            err(
                format!("{key}_hosts[{i}]"),
                format!("`{h}` is not a host name"),
            )
        })?);
    }
    for (i, h) in suffixes.iter().enumerate() {
        list.suffixes.push(canonical_host(h).ok_or_else(|| {
            err(
                format!("{key}_host_suffixes[{i}]"),
                format!("`{h}` is not a domain"),
            )
        })?);
    }
    Ok(list)
}

fn private_entry(i: usize, entry: &str) -> Result<PrivateAllow, ConfigError> {
    let key = format!("policy.allow_private[{i}]");
    let entry = entry.trim();
    // `[v6]:port`, `v4:port`, `host:port`; a bare IPv6 has several colons and no port.
    let (body, port) = if let Some(rest) = entry.strip_prefix('[') {
        let (addr, after) = rest
            .split_once(']')
            .ok_or_else(|| err(&key, format!("`{entry}` has an unclosed `[`")))?;
        match after.strip_prefix(':') {
            Some(p) => (addr.to_owned(), Some(p)),
            None => (format!("{addr}{after}"), None),
        }
    } else if entry.matches(':').count() == 1 {
        let (h, p) = entry.split_once(':').unwrap_or((entry, ""));
        (h.to_owned(), Some(p))
    } else {
        (entry.to_owned(), None)
    };
    let port = match port {
        None => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| err(&key, format!("`{entry}` has an invalid port")))?,
        ),
    };
    if let Ok(net) = body.parse::<Cidr>() {
        return Ok(PrivateAllow::Net(net, port));
    }
    if body.contains('/') {
        return Err(err(&key, format!("`{entry}` is not a valid CIDR")));
    }
    let host = canonical_host(&body)
        .ok_or_else(|| err(&key, format!("`{entry}` is not an IP, CIDR or host name")))?;
    Ok(PrivateAllow::Host(host, port))
}

impl Policy {
    /// Validates a `[policy]` section.
    pub fn from_config(config: &PolicyConfig) -> Result<Policy, ConfigError> {
        let schemes = match &config.schemes {
            None => vec!["http".to_owned(), "https".to_owned()],
            Some(list) => {
                let mut out = Vec::new();
                for (i, s) in list.iter().enumerate() {
                    let s = s.trim().trim_end_matches(':').to_ascii_lowercase();
                    if s != "http" && s != "https" {
                        return Err(err(
                            format!("policy.schemes[{i}]"),
                            format!("`{s}` is not one of http, https"),
                        ));
                    }
                    out.push(s);
                }
                out
            }
        };
        let allow = host_list(
            "policy.allow",
            &config.allow_hosts,
            &config.allow_host_suffixes,
        )?;
        let deny = host_list(
            "policy.deny",
            &config.deny_hosts,
            &config.deny_host_suffixes,
        )?;
        let trusted = host_list("policy.trusted_domains", &[], &config.trusted_domains)?;
        let allow_private = config
            .allow_private
            .iter()
            .enumerate()
            .map(|(i, e)| private_entry(i, e))
            .collect::<Result<_, _>>()?;
        let mut sockets = Vec::new();
        for (i, entry) in config.websocket_origins.iter().enumerate() {
            let parsed = url::Url::parse(entry.trim())
                .ok()
                .filter(|u| matches!(u.scheme(), "ws" | "wss") && u.host_str().is_some())
                .filter(|u| u.path() == "/" && u.query().is_none() && u.username().is_empty())
                .ok_or_else(|| {
                    err(
                        format!("policy.websocket_origins[{i}]"),
                        format!("`{entry}` is not a ws:// or wss:// origin (scheme, host, optional port)"),
                    )
                })?;
            sockets.push(parsed.origin().ascii_serialization());
        }
        Ok(Policy {
            schemes,
            allow,
            deny,
            narrowed: Vec::new(),
            allow_private,
            trusted,
            airlock_addresses: Vec::new(),
            sockets,
        })
    }

    /// The default policy: http(s) to any public address.
    pub fn public_only() -> Policy {
        Policy::from_config(&PolicyConfig::default())
            .unwrap_or_else(|_| unreachable!("the default policy is valid"))
    }

    /// A policy that allows nothing but `about:blank`: what a pre-warmed session's proxy
    /// enforces until the session is handed to an agent with its real policy.
    pub fn deny_all() -> Policy {
        Policy {
            schemes: Vec::new(),
            allow: HostList::default(),
            deny: HostList::default(),
            // One empty allowlist: no host matches it, whatever the URL's scheme.
            narrowed: vec![HostList::default()],
            allow_private: Vec::new(),
            trusted: HostList::default(),
            airlock_addresses: Vec::new(),
            sockets: Vec::new(),
        }
    }

    /// This policy with Airlock's own listening addresses added to the always-denied
    /// set: no page may reach `/mcp`, the REST API or the console, whatever
    /// `allow_private` says.
    pub fn with_airlock_addresses(mut self, addresses: Vec<SocketAddr>) -> Policy {
        self.airlock_addresses = addresses;
        self
    }

    /// A narrower policy for one session: hosts must also match this allowlist. A
    /// session can only ever remove reachability this way, never add it.
    pub fn narrowed(&self, hosts: &[String], suffixes: &[String]) -> Result<Policy, ConfigError> {
        let extra = host_list("session.allow", hosts, suffixes)?;
        let mut policy = self.clone();
        if !extra.is_empty() {
            policy.narrowed.push(extra);
        }
        Ok(policy)
    }

    /// This policy tightened by a tenant's `[policy]`: its allowlists become one more
    /// layer every host must pass, its denylists are added, and its schemes (a subset
    /// of these) replace them. What would widen — private addresses, trusted domains
    /// (left without approval), WebSocket origins, a scheme this policy refuses — is
    /// refused with its key: the operator's config is the ceiling.
    pub fn tightened(&self, tenant: &PolicyConfig) -> Result<Policy, ConfigError> {
        let widening = [
            ("policy.allow_private", !tenant.allow_private.is_empty()),
            ("policy.trusted_domains", !tenant.trusted_domains.is_empty()),
            (
                "policy.websocket_origins",
                !tenant.websocket_origins.is_empty(),
            ),
        ];
        if let Some((key, _)) = widening.iter().find(|(_, set)| *set) {
            return Err(err(
                *key,
                "a tenant's policy may only narrow the operator's; this key widens it, so only the operator's config sets it",
            ));
        }
        let mut policy = self.clone();
        if let Some(schemes) = &tenant.schemes {
            for (i, scheme) in schemes.iter().enumerate() {
                let scheme = scheme.trim().to_ascii_lowercase();
                if !self.schemes.contains(&scheme) {
                    return Err(err(
                        format!("policy.schemes[{i}]"),
                        format!(
                            "`{scheme}` is not among the schemes the operator allows ({})",
                            self.schemes.join(", ")
                        ),
                    ));
                }
            }
            policy
                .schemes
                .retain(|s| schemes.iter().any(|t| t.trim().eq_ignore_ascii_case(s)));
        }
        let allow = host_list(
            "policy.allow",
            &tenant.allow_hosts,
            &tenant.allow_host_suffixes,
        )?;
        if !allow.is_empty() {
            policy.narrowed.push(allow);
        }
        let deny = host_list(
            "policy.deny",
            &tenant.deny_hosts,
            &tenant.deny_host_suffixes,
        )?;
        for host in deny.exact {
            if !policy.deny.exact.contains(&host) {
                policy.deny.exact.push(host);
            }
        }
        for suffix in deny.suffixes {
            if !policy.deny.suffixes.contains(&suffix) {
                policy.deny.suffixes.push(suffix);
            }
        }
        Ok(policy)
    }

    /// Whether this policy is `wider` narrowed further (or `wider` itself): the same
    /// rules with allowlists only added, denylists only grown and schemes only
    /// dropped, so it reaches nothing `wider` does not. What a browser host takes as a
    /// session's new policy once it holds one.
    pub fn narrows(&self, wider: &Policy) -> bool {
        self.narrowed.starts_with(&wider.narrowed)
            && wider.deny.exact.iter().all(|h| self.deny.exact.contains(h))
            && wider
                .deny
                .suffixes
                .iter()
                .all(|h| self.deny.suffixes.contains(h))
            && self.schemes.iter().all(|s| wider.schemes.contains(s))
            && Policy {
                narrowed: wider.narrowed.clone(),
                deny: wider.deny.clone(),
                schemes: wider.schemes.clone(),
                ..self.clone()
            } == *wider
    }

    /// Whether `trusted_domains` lists any domain (leaving them is a risk only then).
    pub fn has_trusted_domains(&self) -> bool {
        !self.trusted.is_empty()
    }

    /// The WebSocket origins a session holding secrets may still open sockets to
    /// (`websocket_origins`, canonical).
    pub fn websocket_origins(&self) -> &[String] {
        &self.sockets
    }

    /// Whether `host` is under `trusted_domains`.
    pub fn is_trusted(&self, host: &str) -> bool {
        canonical_host(host).is_some_and(|h| self.trusted.matches(&h).is_some())
    }

    /// Canonicalizes `input` as Chromium would and decides everything that needs no DNS:
    /// scheme, host rules, literal addresses and names that never reach DNS (`localhost`).
    pub fn check_url(&self, input: &str) -> Checked {
        let mut checked = Checked {
            url: None,
            host: None,
            port: None,
            ip: None,
            decision: Decision::Allow,
        };
        let url = match Url::parse(input.trim()) {
            Ok(url) => url,
            Err(e) => {
                checked.decision = Decision::deny(
                    DenyReason::InvalidUrl,
                    format!("`{}` is not a valid URL ({e})", shorten(input)),
                );
                return checked;
            }
        };
        checked.url = Some(url.as_str().to_owned());
        if url.as_str() == "about:blank" {
            return checked;
        }
        let scheme = url.scheme();
        if !self.schemes.iter().any(|s| s == scheme) {
            checked.decision = Decision::deny(
                DenyReason::Scheme,
                format!(
                    "scheme `{scheme}:` is not allowed (allowed: {}, about:blank)",
                    self.schemes.join(", ")
                ),
            );
            return checked;
        }
        let Some(host) = url.host() else {
            checked.decision = Decision::deny(
                DenyReason::InvalidUrl,
                format!("`{}` has no host", shorten(input)),
            );
            return checked;
        };
        let port = url.port_or_known_default().unwrap_or(80);
        let (name, ip) = match host {
            // `127.0.0.1..` is a domain to the URL parser, but with its trailing dots
            // gone it is an address, and a resolver may well treat it as one.
            Host::Domain(d) => match Host::parse(d.trim_end_matches('.')) {
                Ok(Host::Ipv4(ip)) => (ip.to_string(), Some(IpAddr::V4(ip))),
                Ok(Host::Ipv6(ip)) => (ip.to_string(), Some(IpAddr::V6(ip))),
                _ => (d.trim_end_matches('.').to_owned(), None),
            },
            Host::Ipv4(ip) => (ip.to_string(), Some(IpAddr::V4(ip))),
            Host::Ipv6(ip) => (ip.to_string(), Some(IpAddr::V6(ip))),
        };
        checked.host = Some(name.clone());
        checked.port = Some(port);
        checked.ip = ip;
        checked.decision = self.check_host(&name, port);
        if !checked.decision.is_allowed() {
            return checked;
        }
        let literal = ip.or_else(|| is_localhost(&name).then_some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        if let Some(ip) = literal {
            checked.decision = self.check_address(&name, SocketAddr::new(ip, port));
        }
        checked
    }

    /// The rules on a host name (canonical form): deny lists, allow lists, narrowing,
    /// and metadata host names.
    pub fn check_host(&self, host: &str, port: u16) -> Decision {
        let Some(host) = canonical_host(host) else {
            return Decision::deny(
                DenyReason::InvalidUrl,
                format!("`{}` is not a host name", shorten(host)),
            );
        };
        if let Some(rule) = self.deny.matches(&host) {
            return Decision::deny(
                DenyReason::HostDenied,
                format!("host {host} is denied by the policy (rule `{rule}`)"),
            );
        }
        if !self.allow.is_empty() && self.allow.matches(&host).is_none() {
            return Decision::deny(
                DenyReason::HostNotAllowed,
                format!("host {host} is not in allow_hosts or allow_host_suffixes"),
            );
        }
        if self
            .narrowed
            .iter()
            .any(|list| list.matches(&host).is_none())
        {
            return Decision::deny(
                DenyReason::HostNotAllowed,
                format!("host {host} is not in this session's allowlist"),
            );
        }
        if METADATA_HOSTS.contains(&host.as_str()) && !self.private_host_allowed(&host, port) {
            return Decision::deny(
                DenyReason::PrivateAddress,
                format!("{host} is a cloud metadata host"),
            );
        }
        Decision::Allow
    }

    /// The rules on one resolved address of `host` (the proxy asks this for every
    /// address before connecting to it).
    pub fn check_address(&self, host: &str, addr: SocketAddr) -> Decision {
        let ip = addr.ip();
        if self
            .airlock_addresses
            .iter()
            .any(|a| same_listener(*a, addr))
        {
            return Decision::deny(
                DenyReason::AirlockAddress,
                format!("{addr} is Airlock's own listener"),
            );
        }
        let Some((class, carried)) = classify(ip) else {
            return Decision::Allow;
        };
        let host = canonical_host(host).unwrap_or_default();
        let allowed = self.allow_private.iter().any(|entry| match entry {
            PrivateAllow::Net(net, port) => {
                net.contains(ip) && port.is_none_or(|p| p == addr.port())
            }
            PrivateAllow::Host(name, port) => {
                *name == host && port.is_none_or(|p| p == addr.port())
            }
        });
        if allowed {
            return Decision::Allow;
        }
        let shown = match addr.ip() {
            IpAddr::V6(v6) => format!("[{v6}]"),
            IpAddr::V4(v4) => v4.to_string(),
        };
        let detail = match carried {
            Some(v4) => format!("{shown} carries {v4}, which is {class}"),
            None if host.is_empty() || host == ip.to_string() => format!("{shown} is {class}"),
            None => format!("{host} resolves to {shown}, which is {class}"),
        };
        Decision::deny(DenyReason::PrivateAddress, detail)
    }

    fn private_host_allowed(&self, host: &str, port: u16) -> bool {
        self.allow_private
            .iter()
            .any(|e| matches!(e, PrivateAllow::Host(name, p) if name == host && p.is_none_or(|p| p == port)))
    }
}

// Chromium resolves `localhost` and `*.localhost` itself, to loopback, without DNS.
fn is_localhost(host: &str) -> bool {
    host == "localhost" || host.ends_with(".localhost")
}

// A listener on 0.0.0.0 or :: is reachable on every address of the machine.
fn same_listener(listener: SocketAddr, target: SocketAddr) -> bool {
    if listener.port() != target.port() {
        return false;
    }
    let l = listener.ip();
    l == target.ip()
        || l.is_unspecified()
        || (l.is_loopback() && target.ip().is_loopback())
        || {
            // The IPv4-mapped form of the same address.
            matches!((l, target.ip()), (IpAddr::V4(v4), IpAddr::V6(v6)) if v6 == v4.to_ipv6_mapped())
                || matches!((l, target.ip()), (IpAddr::V6(a), IpAddr::V6(b)) if a == b || (a == Ipv6Addr::LOCALHOST && b.is_loopback()))
        }
}

fn shorten(text: &str) -> String {
    let short: String = text.chars().take(100).collect();
    short.replace(|c: char| c.is_control(), "?")
}

#[cfg(test)]
mod tests;
