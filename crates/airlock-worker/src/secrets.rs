//! What a session must keep from other origins and hide in every output, as data: each
//! secret's name, the values it hides and the origins it is bound to, plus the
//! WebSocket origins pages may still use. The control plane builds it from the vault;
//! a browser host receives it at session open (and each value learned later) and
//! builds the same redactor and the same outbound guard from it.

use std::sync::{Arc, RwLock};

use airlock_browser::{OutgoingRequest, RequestGuard};
use airlock_core::Redact;
use airlock_redact::Redactor;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

/// One secret (or value learned later): its name, the values it hides, and where
/// they may go. Debug shows the name and origins only.
#[derive(Clone, Serialize, Deserialize)]
pub struct SecretEntry {
    /// The name outputs show (`[REDACTED:NAME]`).
    pub name: String,
    /// Every value to hide (a password, a cookie's value, a header …).
    pub values: Vec<Zeroizing<String>>,
    /// Canonical origins its values may be sent to.
    pub origins: Vec<String>,
}

impl std::fmt::Debug for SecretEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SecretEntry({}, {} values [REDACTED], {:?})",
            self.name,
            self.values.len(),
            self.origins
        )
    }
}

/// A session's secrets and the sockets it may open besides theirs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SecretSet {
    /// The secrets, in load order; learned values come after.
    pub entries: Vec<SecretEntry>,
    /// WebSocket origins the operator allows besides those of the secrets.
    pub sockets: Vec<String>,
}

/// Why a redactor could not be built.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the redactor could not be built: {0}")]
pub struct SecretsError(String);

/// What a session knows, live: the set and the redactor built from it. Shared by the
/// outbound guard, so a value learned later is guarded from then on.
pub struct Known {
    set: RwLock<SecretSet>,
    redactor: RwLock<Arc<Redactor>>,
}

impl std::fmt::Debug for Known {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Known")
            .field("secrets", &read(&self.set).entries.len())
            .finish()
    }
}

impl Default for Known {
    fn default() -> Self {
        Known {
            set: RwLock::default(),
            redactor: RwLock::new(Arc::new(Redactor::default())),
        }
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|p| p.into_inner())
}

fn build(set: &SecretSet) -> Result<Arc<Redactor>, SecretsError> {
    let values = set
        .entries
        .iter()
        .flat_map(|e| e.values.iter().map(move |v| (e.name.as_str(), v.as_str())));
    Redactor::new(values)
        .map(Arc::new)
        .map_err(|e| SecretsError(e.to_string()))
}

impl Known {
    /// What a session knows from `set`.
    pub fn new(set: SecretSet) -> Result<Arc<Known>, SecretsError> {
        let redactor = build(&set)?;
        Ok(Arc::new(Known {
            set: RwLock::new(set),
            redactor: RwLock::new(redactor),
        }))
    }

    /// A copy of the set (for a browser host that builds its own).
    pub fn set(&self) -> SecretSet {
        read(&self.set).clone()
    }

    /// The redactor over everything known now.
    pub fn redactor(&self) -> Arc<Redactor> {
        read(&self.redactor).clone()
    }

    /// Whether there is anything to hide.
    pub fn holds_secrets(&self) -> bool {
        !self.redactor().is_empty()
    }

    /// Learns `value` under `name`, bound to `origins`: redacted in every form from
    /// now on and kept from every other origin. Returns the new redactor.
    pub fn learn(
        &self,
        name: &str,
        value: &str,
        origins: &[String],
    ) -> Result<Arc<Redactor>, SecretsError> {
        let mut set = write(&self.set);
        let known = set
            .entries
            .iter()
            .any(|e| e.name == name && e.values.iter().any(|v| v.as_str() == value));
        if !known {
            set.entries.push(SecretEntry {
                name: name.to_owned(),
                values: vec![Zeroizing::new(value.to_owned())],
                origins: origins.to_vec(),
            });
        }
        let redactor = build(&set)?;
        *write(&self.redactor) = redactor.clone();
        Ok(redactor)
    }

    /// The WebSocket origins the operator allows besides the secrets' own.
    pub fn allow_sockets(&self, origins: &[String]) {
        write(&self.set).sockets = origins.to_vec();
    }

    /// Each name and every origin its values may go to (entries of one name merged).
    pub fn bound(&self) -> Vec<(String, Vec<String>)> {
        let mut bound: Vec<(String, Vec<String>)> = Vec::new();
        for entry in &read(&self.set).entries {
            match bound.iter_mut().find(|(n, _)| *n == entry.name) {
                Some((_, origins)) => {
                    for o in &entry.origins {
                        if !origins.contains(o) {
                            origins.push(o.clone());
                        }
                    }
                }
                None => bound.push((entry.name.clone(), entry.origins.clone())),
            }
        }
        bound
    }

    /// The outbound guard over what is known now and learned later.
    pub fn guard(self: &Arc<Self>) -> Arc<dyn RequestGuard> {
        Arc::new(SecretGuard {
            known: self.clone(),
        })
    }

    /// The redactor as the browser layer takes it, when there is anything to hide.
    pub fn browser_redactor(&self) -> Option<Arc<dyn Redact>> {
        self.holds_secrets()
            .then(|| self.redactor() as Arc<dyn Redact>)
    }
}

/// Outbound protection: the redactor's matcher run over a request's URL, headers and
/// body, for the secrets (and learned values) not bound to the request's origin; and
/// the WebSocket origins pages may still use.
struct SecretGuard {
    known: Arc<Known>,
}

impl RequestGuard for SecretGuard {
    fn refuse(&self, request: &OutgoingRequest<'_>) -> Option<String> {
        let origin = url::Url::parse(request.url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_else(|_| "an opaque origin".to_owned());
        let bound = self.known.bound();
        let foreign: Vec<&(String, Vec<String>)> = bound
            .iter()
            .filter(|(_, origins)| !origins.contains(&origin))
            .collect();
        if foreign.is_empty() {
            return None;
        }
        if request.body_unseen {
            return Some(
                "its body could not be inspected, and this session holds secrets not bound to that origin"
                    .to_owned(),
            );
        }
        let redactor = self.known.redactor();
        let mut texts: Vec<std::borrow::Cow<'_, str>> = vec![request.url.into()];
        texts.extend(
            request
                .headers
                .iter()
                .map(|(name, value)| format!("{name}: {value}").into()),
        );
        if let Some(body) = &request.body {
            texts.push(String::from_utf8_lossy(body));
        }
        for text in &texts {
            let Some(found) = redactor.secrets_in(text) else {
                return Some("the redactor could not inspect it".to_owned());
            };
            if let Some((name, origins)) = foreign.iter().find(|(n, _)| found.contains(&n.as_str()))
            {
                return Some(format!(
                    "it carried a form of `{name}`, which is bound only to {}",
                    origins.join(", ")
                ));
            }
        }
        None
    }

    // The `ws(s)://` twin of every origin a secret (or learned value) is bound to, and
    // those the operator allows.
    fn socket_origins(&self) -> Vec<String> {
        let mut origins: Vec<String> = read(&self.known.set).sockets.clone();
        for (_, bound) in self.known.bound() {
            for origin in bound {
                let socket = if let Some(rest) = origin.strip_prefix("https://") {
                    format!("wss://{rest}")
                } else if let Some(rest) = origin.strip_prefix("http://") {
                    format!("ws://{rest}")
                } else {
                    continue;
                };
                if !origins.contains(&socket) {
                    origins.push(socket);
                }
            }
        }
        origins
    }
}
