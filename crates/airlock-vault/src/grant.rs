//! Grant tokens: short-lived, tenant- and domain-scoped authority to use credentials,
//! single-use by default, stored as a SHA-256 hash, revocable.

use hex::ToHex as _;
use std::time::Duration;

use airlock_store::{GrantRecord, Store};
use base64::Engine as _;
use sha2::Digest as _;
use zeroize::Zeroizing;

use crate::VaultError;

const TOKEN_PREFIX: &str = "agt_";
/// Longest a grant may live.
pub const MAX_GRANT_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// A grant token as handed out once. Never printed by Debug.
pub struct GrantToken(Zeroizing<String>);

impl std::fmt::Debug for GrantToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GrantToken([REDACTED])")
    }
}

impl GrantToken {
    /// The token text (to show the operator once).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// Why a grant did not authorize.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantRefusal {
    /// No such token (or another tenant's).
    #[error("the grant token is not valid")]
    Unknown,
    /// Past its expiry.
    #[error("the grant expired")]
    Expired,
    /// Revoked by an operator.
    #[error("the grant was revoked")]
    Revoked,
    /// A single-use grant already used.
    #[error("the grant was already used (single use)")]
    Used,
    /// A credential's origin is outside the grant's domains.
    #[error("the grant does not cover {0}")]
    OutOfScope(String),
}

pub(crate) fn hash(token: &str) -> Vec<u8> {
    sha2::Sha256::digest(token.trim().as_bytes()).to_vec()
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

/// Parses `90s`, `15m`, `2h`, `1d` (a bare number is seconds).
pub fn parse_ttl(text: &str) -> Result<Duration, VaultError> {
    let text = text.trim();
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = number
        .parse()
        .map_err(|_| VaultError::Invalid(format!("`{text}` is not a duration like 15m")))?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        "d" => n.saturating_mul(86_400),
        _ => {
            return Err(VaultError::Invalid(format!(
                "`{text}` is not a duration like 15m"
            )));
        }
    };
    let ttl = Duration::from_secs(secs);
    if ttl.is_zero() || ttl > MAX_GRANT_TTL {
        return Err(VaultError::Invalid(format!(
            "a grant lives between 1s and 30d; `{text}` does not"
        )));
    }
    Ok(ttl)
}

/// Whether `host` is `domain` or under it.
pub fn host_in_domain(host: &str, domain: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let domain = domain
        .trim_start_matches('.')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    host == domain || host.ends_with(&format!(".{domain}"))
}

/// Creates a grant; the token is returned once and only its hash is stored.
pub async fn create(
    store: &Store,
    tenant: &str,
    domains: &[String],
    ttl: Duration,
    reusable: bool,
) -> Result<(GrantToken, GrantRecord), VaultError> {
    let domains: Vec<String> = domains
        .iter()
        .map(|d| {
            d.trim()
                .trim_start_matches("*.")
                .trim_start_matches('.')
                .to_ascii_lowercase()
        })
        .collect();
    // A domain is a host name (or address) and what is under it: nothing that could
    // stand for every site (`*`, an empty label), nor a scheme, port or path.
    let valid = |d: &str| {
        !d.is_empty()
            && d.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            })
    };
    if domains.is_empty() || !domains.iter().all(|d| valid(d)) {
        return Err(VaultError::Invalid(
            "a grant needs domains like app.example.com (no wildcard but a leading `*.`, no scheme, port or path)".to_owned(),
        ));
    }
    let mut raw = Zeroizing::new([0u8; 32]);
    getrandom::fill(raw.as_mut()).map_err(|e| VaultError::Key(format!("no randomness: {e}")))?;
    let token = Zeroizing::new(format!(
        "{TOKEN_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw.as_ref())
    ));
    let mut id = [0u8; 6];
    getrandom::fill(&mut id).map_err(|e| VaultError::Key(format!("no randomness: {e}")))?;
    let now = unix_now();
    let record = GrantRecord {
        id: format!("g_{}", id.encode_hex::<String>()),
        tenant: tenant.to_owned(),
        token_hash: hash(&token),
        domains,
        created_at: now,
        expires_at: now.saturating_add(ttl.as_secs() as i64),
        reusable,
        used_at: None,
        revoked_at: None,
    };
    store.insert_grant(&record).await?;
    Ok((GrantToken(token), record))
}

/// Checks `token` for `tenant` against every host it must cover and, if it does,
/// uses it (atomically: a single-use grant authorizes exactly once). A grant that
/// does not cover every host is refused and not used up.
pub async fn redeem(
    store: &Store,
    tenant: &str,
    token: &str,
    hosts: &[String],
) -> Result<Result<GrantRecord, GrantRefusal>, VaultError> {
    let now = unix_now();
    let Some(grant) = store.grant_by_hash(&hash(token)).await? else {
        return Ok(Err(GrantRefusal::Unknown));
    };
    if grant.tenant != tenant {
        return Ok(Err(GrantRefusal::Unknown));
    }
    if grant.revoked_at.is_some() {
        return Ok(Err(GrantRefusal::Revoked));
    }
    if grant.expires_at <= now {
        return Ok(Err(GrantRefusal::Expired));
    }
    if !grant.reusable && grant.used_at.is_some() {
        return Ok(Err(GrantRefusal::Used));
    }
    if let Some(host) = hosts
        .iter()
        .find(|h| !grant.domains.iter().any(|d| host_in_domain(h, d)))
    {
        return Ok(Err(GrantRefusal::OutOfScope(host.clone())));
    }
    if !store.use_grant(&grant.id, now).await? {
        // Lost a race, or expired or revoked a moment ago.
        let now_state = store.grant_by_hash(&grant.token_hash).await?;
        return Ok(Err(match now_state {
            Some(g) if g.revoked_at.is_some() => GrantRefusal::Revoked,
            Some(g) if g.expires_at <= unix_now() => GrantRefusal::Expired,
            _ => GrantRefusal::Used,
        }));
    }
    Ok(Ok(grant))
}

/// Revokes a grant; whether it was live.
pub async fn revoke(store: &Store, tenant: &str, id: &str) -> Result<bool, VaultError> {
    Ok(store.revoke_grant(tenant, id, unix_now()).await?)
}
