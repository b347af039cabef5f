//! A tenant's Web Bot Auth signing keys, kept in the vault like any secret: the
//! Ed25519 private key sealed under the master key (tenant and key id bound as
//! associated data, rewritten when the master key rotates), the public key in the
//! clear for the key directory. A key never leaves the control plane: what signs a
//! request is [`IdentitySigner`], which the gateway holds and a browser worker asks.

use airlock_store::IdentityKeyRecord;
use ed25519_dalek::SigningKey;
use zeroize::Zeroizing;

use crate::vault::{seal, unseal};
use crate::webbotauth::{self, Agent, Jwk, RequestSignature, Window};
use crate::{Vault, VaultError};

fn associated_data(tenant: &str, kid: &str) -> Vec<u8> {
    format!("airlock-identity-v1\0{tenant}\0{kid}").into_bytes()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// One signing key as `airlock identity show` and the key directory see it: never
/// the private half.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityKey {
    /// Its tenant.
    pub tenant: String,
    /// Its key id (JWK thumbprint).
    pub kid: String,
    /// The public key.
    pub public_key: [u8; 32],
    /// When it was made (Unix ms).
    pub created_ms: i64,
    /// When a rotation retired it (Unix ms); `None` while it signs.
    pub retired_ms: Option<i64>,
}

impl IdentityKey {
    fn of(record: &IdentityKeyRecord) -> Option<IdentityKey> {
        Some(IdentityKey {
            tenant: record.tenant.clone(),
            kid: record.kid.clone(),
            public_key: record.public_key.as_slice().try_into().ok()?,
            created_ms: record.created_ms,
            retired_ms: record.retired_ms,
        })
    }

    /// Its JWK.
    pub fn jwk(&self) -> Jwk {
        Jwk::of(&self.public_key)
    }
}

/// A tenant's active key, able to sign: held by the control plane only. Debug shows
/// the key id, never the key (which is wiped when this is dropped).
pub struct IdentitySigner {
    kid: String,
    key: SigningKey,
}

impl std::fmt::Debug for IdentitySigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IdentitySigner({}) [REDACTED]", self.kid)
    }
}

impl IdentitySigner {
    /// Its key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// Its public key as a directory lists it.
    pub fn jwk(&self) -> Jwk {
        Jwk::of(&self.key.verifying_key().to_bytes())
    }

    /// Signs a request to `authority` as `agent`, valid for `lifetime` from now, with
    /// a fresh nonce.
    pub fn sign(
        &self,
        authority: &str,
        agent: &Agent,
        lifetime: std::time::Duration,
    ) -> Result<RequestSignature, VaultError> {
        let created = now_ms() / 1000;
        let window = Window {
            created,
            expires: created + lifetime.as_secs().max(1) as i64,
            nonce: webbotauth::nonce()?,
        };
        webbotauth::sign_request(&self.key, &self.kid, authority, agent, "sig1", &window)
    }

    /// Its proof of possession on a directory response with `digest`, fetched at
    /// `authority`, under `label`, valid for `lifetime`.
    pub fn sign_directory(
        &self,
        authority: &str,
        digest: &str,
        label: &str,
        lifetime: std::time::Duration,
    ) -> Result<(String, String), VaultError> {
        let created = now_ms() / 1000;
        webbotauth::sign_directory(
            &self.key,
            &self.kid,
            authority,
            digest,
            label,
            created,
            created + lifetime.as_secs() as i64,
        )
    }
}

impl Vault {
    /// Makes `tenant`'s first signing key; refused when it has an active one
    /// (rotate it instead).
    pub async fn create_identity(&self, tenant: &str) -> Result<IdentityKey, VaultError> {
        self.add_identity(tenant, false).await
    }

    /// Makes a new active signing key for `tenant` and retires the one active now,
    /// which stays listed (see [`Vault::identity_keys`]) until the signatures it made
    /// have expired.
    pub async fn rotate_identity(&self, tenant: &str) -> Result<IdentityKey, VaultError> {
        self.add_identity(tenant, true).await
    }

    /// Makes `seed` (an Ed25519 private key an operator brings) `tenant`'s active
    /// signing key, retiring the active one with `rotate` (else refused when there
    /// is one).
    pub async fn import_identity(
        &self,
        tenant: &str,
        seed: &Zeroizing<[u8; 32]>,
        rotate: bool,
    ) -> Result<IdentityKey, VaultError> {
        self.seal_identity(tenant, seed, rotate).await
    }

    async fn add_identity(&self, tenant: &str, rotate: bool) -> Result<IdentityKey, VaultError> {
        let mut seed = Zeroizing::new([0u8; 32]);
        getrandom::fill(seed.as_mut())
            .map_err(|e| VaultError::Key(format!("no randomness: {e}")))?;
        self.seal_identity(tenant, &seed, rotate).await
    }

    async fn seal_identity(
        &self,
        tenant: &str,
        seed: &Zeroizing<[u8; 32]>,
        rotate: bool,
    ) -> Result<IdentityKey, VaultError> {
        crate::apikey::valid_tenant(tenant)?;
        let key = SigningKey::from_bytes(seed);
        let public = key.verifying_key().to_bytes();
        let kid = webbotauth::thumbprint(&public);
        let (nonce, ciphertext) =
            seal(self.key(), &associated_data(tenant, &kid), seed.as_slice())?;
        let record = IdentityKeyRecord {
            tenant: tenant.to_owned(),
            kid,
            public_key: public.to_vec(),
            nonce,
            ciphertext,
            created_ms: now_ms(),
            retired_ms: None,
        };
        if !self.store().add_identity_key(&record, rotate).await? {
            return Err(VaultError::Invalid(format!(
                "tenant `{tenant}` has a signing key already: rotate it (`airlock identity rotate`)"
            )));
        }
        IdentityKey::of(&record)
            .ok_or_else(|| VaultError::Crypto("a new signing key did not read back".to_owned()))
    }

    /// `tenant`'s keys, newest first: the active one, and those retired less than
    /// `keep_retired` ago (older ones are deleted: every signature they made has
    /// expired).
    pub async fn identity_keys(
        &self,
        tenant: &str,
        keep_retired: std::time::Duration,
    ) -> Result<Vec<IdentityKey>, VaultError> {
        let since = now_ms() - keep_retired.as_millis() as i64;
        self.store().prune_identity_keys(tenant, since).await?;
        Ok(self
            .store()
            .identity_keys(Some(tenant))
            .await?
            .iter()
            .filter(|r| r.retired_ms.is_none_or(|at| at >= since))
            .filter_map(IdentityKey::of)
            .collect())
    }

    /// Signers for `tenant`'s listed keys (`keep_retired` as for
    /// [`Vault::identity_keys`]), the active one first; none when it has no key.
    pub async fn identity_signers(
        &self,
        tenant: &str,
        keep_retired: std::time::Duration,
    ) -> Result<Vec<IdentitySigner>, VaultError> {
        let since = now_ms() - keep_retired.as_millis() as i64;
        let mut signers = Vec::new();
        for record in self.store().identity_keys(Some(tenant)).await? {
            if record.retired_ms.is_some_and(|at| at < since) {
                continue;
            }
            signers.push(self.open_identity(&record)?);
        }
        Ok(signers)
    }

    /// The signer of `tenant`'s active key, if it has one.
    pub async fn identity_signer(
        &self,
        tenant: &str,
    ) -> Result<Option<IdentitySigner>, VaultError> {
        let records = self.store().identity_keys(Some(tenant)).await?;
        records
            .iter()
            .find(|r| r.retired_ms.is_none())
            .map(|r| self.open_identity(r))
            .transpose()
    }

    fn open_identity(&self, record: &IdentityKeyRecord) -> Result<IdentitySigner, VaultError> {
        let plain = unseal(
            self.key(),
            &associated_data(&record.tenant, &record.kid),
            &record.nonce,
            &record.ciphertext,
        )
        .ok_or_else(|| {
            VaultError::Crypto(format!(
                "signing key `{}` does not decrypt: altered, or moved from another tenant",
                record.kid
            ))
        })?;
        let seed: &[u8; 32] = plain
            .as_slice()
            .try_into()
            .map_err(|_| VaultError::Crypto("a signing key is not 32 bytes".to_owned()))?;
        let key = SigningKey::from_bytes(seed);
        // The row's public key and id must be this key's: an edited row cannot make
        // the directory list a key that does not sign.
        if key.verifying_key().to_bytes().as_slice() != record.public_key.as_slice()
            || webbotauth::thumbprint(&key.verifying_key().to_bytes()) != record.kid
        {
            return Err(VaultError::Crypto(format!(
                "signing key `{}` does not match its public key",
                record.kid
            )));
        }
        Ok(IdentitySigner {
            kid: record.kid.clone(),
            key,
        })
    }

    // Each signing key sealed again under `new` (the master key's rotation).
    pub(crate) async fn reseal_identities(
        &self,
        new: &crate::MasterKey,
    ) -> Result<Vec<IdentityKeyRecord>, VaultError> {
        let mut out = Vec::new();
        for record in self.store().identity_keys(None).await? {
            let ad = associated_data(&record.tenant, &record.kid);
            let plain =
                unseal(self.key(), &ad, &record.nonce, &record.ciphertext).ok_or_else(|| {
                    VaultError::Crypto(format!(
                        "signing key `{}` does not decrypt; nothing was rotated",
                        record.kid
                    ))
                })?;
            let (nonce, ciphertext) = seal(new, &ad, &plain)?;
            out.push(IdentityKeyRecord {
                nonce,
                ciphertext,
                ..record
            });
        }
        Ok(out)
    }
}
