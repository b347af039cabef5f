//! `[identity]`: Web Bot Auth. Whether a session's requests are signed with its
//! tenant's key, for which origins, how long a signature lives, and the URL sites
//! find the key directory at.

use std::time::Duration;

use serde::Deserialize;

use airlock_policy::OriginSet;

use crate::Error;

/// `[identity]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIdentity {
    /// Sign every session's requests (default false).
    pub sign: Option<bool>,
    /// The origins signed for (origins, hosts or `*.domains`); empty or unset: every
    /// origin a session may reach.
    #[serde(default)]
    pub origins: Vec<String>,
    /// How long a signature is valid, in seconds (default 60, at most 300).
    pub lifetime_secs: Option<u64>,
    /// The URL sites fetch the key directory from (`Signature-Agent`); the default
    /// is `[server] public_url`. Tenants other than `default` are served under it at
    /// `/identity/<tenant>/directory`.
    pub agent_url: Option<String>,
}

/// `[identity]`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Whether sessions sign their requests.
    pub sign: bool,
    /// The origins signed for (empty: every origin a session may reach).
    pub origins: OriginSet,
    /// How long a signature is valid.
    pub lifetime: Duration,
    /// Where the key directory is, when known (`agent_url`, else the public URL;
    /// `airlock serve` falls back to the address it listens on).
    pub agent_url: Option<String>,
}

impl Default for Identity {
    fn default() -> Self {
        Identity {
            sign: false,
            origins: OriginSet::default(),
            lifetime: Duration::from_secs(60),
            agent_url: None,
        }
    }
}

pub(crate) fn validate(raw: &RawIdentity, public_url: Option<&str>) -> Result<Identity, Error> {
    let origins =
        OriginSet::parse("identity.origins", &raw.origins).map_err(|e| Error::Invalid {
            key: e.key,
            message: e.message,
        })?;
    let lifetime = match raw.lifetime_secs {
        None => Identity::default().lifetime,
        Some(secs @ 1..=300) => Duration::from_secs(secs),
        Some(secs) => {
            return Err(Error::Invalid {
                key: "identity.lifetime_secs".to_owned(),
                message: format!(
                    "{secs} is outside 1..=300 (a signature is a credential until it expires)"
                ),
            });
        }
    };
    let agent_url = match raw.agent_url.as_deref().filter(|u| !u.is_empty()) {
        Some(text) => Some(crate::checks::public_url(text).map_err(|e| match e {
            Error::Invalid { message, .. } => Error::Invalid {
                key: "identity.agent_url".to_owned(),
                message,
            },
            other => other,
        })?),
        None => public_url.map(str::to_owned),
    };
    Ok(Identity {
        sign: raw.sign.unwrap_or(false),
        origins,
        lifetime,
        agent_url,
    })
}
