//! Origin sets: which sites a session may act on and which it may only read (the
//! data-flow stage judges calls by them), and the origin of a URL as both sides of
//! that check write it.

use url::Url;

use crate::policy::ConfigError;

/// A list of origins, each written as an origin (`https://bank.example`,
/// `http://127.0.0.1:8080`: that scheme, host and port), a host (`bank.example`: any
/// scheme and port) or a domain and everything under it (`*.bank.example`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OriginSet {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Entry {
    Origin(String),
    Host(String),
    Domain(String),
}

impl OriginSet {
    /// Parses `entries`; `key` names the list in an error (`flow.act`).
    pub fn parse(key: &str, entries: &[String]) -> Result<OriginSet, ConfigError> {
        let mut set = OriginSet::default();
        for (i, entry) in entries.iter().enumerate() {
            let error = |message: &str| ConfigError {
                key: format!("{key}[{i}]"),
                message: format!("`{entry}` {message}"),
            };
            let entry = entry.trim();
            let parsed = if entry.contains("://") {
                let origin = origin_of(entry)
                    .filter(|o| o != "null")
                    .ok_or_else(|| error("is not an origin (scheme://host[:port])"))?;
                Entry::Origin(origin)
            } else if let Some(domain) = entry.strip_prefix("*.") {
                Entry::Domain(host(domain).ok_or_else(|| error("is not a domain"))?)
            } else {
                Entry::Host(host(entry).ok_or_else(|| error("is not a host name"))?)
            };
            set.entries.push(parsed);
        }
        Ok(set)
    }

    /// Whether the set lists nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether the set holds `origin` (as [`origin_of`] writes it).
    pub fn contains(&self, origin: &str) -> bool {
        let Some(parsed) = Url::parse(origin).ok() else {
            return false;
        };
        let Some(host) = parsed.host_str() else {
            return false;
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        self.entries.iter().any(|entry| match entry {
            Entry::Origin(o) => o == origin,
            Entry::Host(h) => h == host,
            Entry::Domain(d) => {
                host == d
                    || host
                        .strip_suffix(d.as_str())
                        .is_some_and(|rest| rest.ends_with('.'))
            }
        })
    }

    /// The entries as written back (origins canonical), for `policy explain`.
    pub fn entries(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| match e {
                Entry::Origin(o) | Entry::Host(o) => o.clone(),
                Entry::Domain(d) => format!("*.{d}"),
            })
            .collect()
    }
}

/// The origin of `url` as a browser serialises it (`https://bank.example`,
/// `http://127.0.0.1:8080`; `null` for an opaque one), if it parses.
pub fn origin_of(url: &str) -> Option<String> {
    Url::parse(url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
}

// A host as URLs carry it: lower case, punycode, IPs in standard form.
fn host(text: &str) -> Option<String> {
    let url = Url::parse(&format!("http://{}/", text.trim_end_matches('.'))).ok()?;
    let host = url.host_str()?;
    (url.port().is_none() && url.path() == "/" && !host.is_empty()).then(|| {
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn origins_hosts_and_domains_match_as_written() {
        let set = OriginSet::parse(
            "flow.act",
            &[
                "http://127.0.0.1:8080".to_owned(),
                "Shop.Example".to_owned(),
                "*.bank.example".to_owned(),
            ],
        )
        .unwrap();
        assert!(set.contains("http://127.0.0.1:8080"));
        assert!(!set.contains("http://127.0.0.1:8081"));
        assert!(!set.contains("https://127.0.0.1:8080"));
        assert!(set.contains("https://shop.example"));
        assert!(set.contains("http://shop.example:81"));
        assert!(!set.contains("https://www.shop.example"));
        assert!(set.contains("https://bank.example"));
        assert!(set.contains("https://online.bank.example"));
        assert!(!set.contains("https://evilbank.example"));
        assert_eq!(
            origin_of("HTTP://127.0.0.1:8080/a?b#c").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        let bad = OriginSet::parse("flow.read", &["http://".to_owned()]).unwrap_err();
        assert_eq!(bad.key, "flow.read[0]");
        assert!(OriginSet::parse("x", &["a b".to_owned()]).is_err());
    }
}
