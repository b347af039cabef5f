//! API keys: a tenant's callers, each with a role. A key is 256 random bits printed
//! once (`alk_…`); the store keeps its SHA-256 and what it may do.

use airlock_core::Role;
use airlock_store::{KeyRecord, Store};
use base64::Engine as _;
use hex::ToHex as _;
use zeroize::Zeroizing;

use crate::VaultError;

const KEY_PREFIX: &str = "alk_";

/// An API key as handed out once. Never printed by Debug.
pub struct ApiKeyText(Zeroizing<String>);

impl std::fmt::Debug for ApiKeyText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKeyText([REDACTED])")
    }
}

impl ApiKeyText {
    /// The key (to show the operator once).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// A key that authenticated: who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyHolder {
    /// The key's public id.
    pub id: String,
    /// Its tenant.
    pub tenant: String,
    /// Its role.
    pub role: Role,
}

/// A tenant name: 1–64 of `a-z 0-9 - _ .`, starting with a letter or digit. It ends up
/// in labels, paths and log lines, so nothing else.
pub fn valid_tenant(name: &str) -> Result<(), VaultError> {
    let ok = airlock_core::valid_tenant_name(name);
    if ok {
        Ok(())
    } else {
        Err(VaultError::Invalid(format!(
            "`{name}` is not a tenant name: 1–64 of a-z, 0-9, `-`, `_`, `.`, starting with a letter or digit"
        )))
    }
}

/// Creates a key for `tenant` (which must exist) with `role`; the key is returned
/// once and only its hash is stored.
pub async fn create(
    store: &Store,
    tenant: &str,
    role: Role,
    name: Option<&str>,
    now_ms: i64,
) -> Result<(ApiKeyText, KeyRecord), VaultError> {
    if !store.tenants().await?.iter().any(|t| t.name == tenant) {
        return Err(VaultError::NotFound(format!("tenant {tenant}")));
    }
    let mut raw = Zeroizing::new([0u8; 32]);
    getrandom::fill(raw.as_mut()).map_err(|e| VaultError::Key(format!("no randomness: {e}")))?;
    let key = Zeroizing::new(format!(
        "{KEY_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw.as_ref())
    ));
    let mut id = [0u8; 6];
    getrandom::fill(&mut id).map_err(|e| VaultError::Key(format!("no randomness: {e}")))?;
    let record = KeyRecord {
        id: format!("key_{}", id.encode_hex::<String>()),
        tenant: tenant.to_owned(),
        role: role.as_str().to_owned(),
        name: name.map(str::to_owned),
        key_hash: crate::grant::hash(&key),
        created_ms: now_ms,
        revoked_ms: None,
    };
    store.insert_key(&record).await?;
    Ok((ApiKeyText(key), record))
}

/// Who `presented` is, if it is a live key of this store. Only keys that look like
/// ours are looked up.
pub async fn authenticate(store: &Store, presented: &str) -> Result<Option<KeyHolder>, VaultError> {
    let presented = presented.trim();
    if !presented.starts_with(KEY_PREFIX) || presented.len() > 128 {
        return Ok(None);
    }
    let Some(record) = store.key_by_hash(&crate::grant::hash(presented)).await? else {
        return Ok(None);
    };
    if record.revoked_ms.is_some() {
        return Ok(None);
    }
    let role = Role::parse(&record.role)
        .ok_or_else(|| VaultError::Crypto(format!("key {} has an unknown role", record.id)))?;
    Ok(Some(KeyHolder {
        id: record.id,
        tenant: record.tenant,
        role,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn a_key_authenticates_until_revoked_and_is_stored_only_as_a_hash() {
        let store = Store::open_in_memory().await.unwrap();
        assert!(
            create(&store, "acme", Role::Act, None, 1).await.is_err(),
            "no such tenant"
        );
        store.create_tenant("acme", 1).await.unwrap();
        let (key, record) = create(&store, "acme", Role::Observe, Some("ci"), 2)
            .await
            .unwrap();
        assert!(key.expose().starts_with("alk_") && key.expose().len() > 40);
        assert!(!format!("{key:?}").contains(key.expose()));
        assert_ne!(record.key_hash, key.expose().as_bytes());
        let holder = authenticate(&store, key.expose()).await.unwrap().unwrap();
        assert_eq!(
            (holder.tenant.as_str(), holder.role),
            ("acme", Role::Observe)
        );
        // One character off, or someone else's format, is nobody.
        let mut wrong = key.expose().to_owned();
        wrong.pop();
        wrong.push('x');
        assert_eq!(authenticate(&store, &wrong).await.unwrap(), None);
        assert_eq!(authenticate(&store, "agt_whatever").await.unwrap(), None);
        store.revoke_key(&record.id, 3).await.unwrap();
        assert_eq!(authenticate(&store, key.expose()).await.unwrap(), None);
    }

    #[test]
    fn tenant_names_are_plain() {
        for ok in ["default", "acme", "a1", "team-2.prod_x"] {
            assert!(valid_tenant(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Acme", "-x", "a/b", "a b", "é", &"a".repeat(65)] {
            assert!(valid_tenant(bad).is_err(), "{bad}");
        }
    }
}
