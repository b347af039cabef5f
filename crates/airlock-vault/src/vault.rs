//! Secrets sealed with XChaCha20-Poly1305 under the master key.

use std::path::Path;

use airlock_store::{SecretRecord, Store};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::VaultError;
use crate::key::{self, KEY_FILE, KeySource, MasterKey, NEXT_KEY_FILE};
use crate::secret::{Fields, Secret, SecretInfo, canonical_origin, check_name};

const CHECK_META: &str = "key_check";
const CHECK_PLAIN: &[u8] = b"airlock vault key check v1";
const CHECK_AD: &[u8] = b"airlock-key-check-v1";

/// What is sealed: the origins too, so a row whose plaintext `origins` column was
/// edited cannot move a secret to another site (the sealed copy is the one used).
#[derive(Serialize, Deserialize)]
struct Sealed {
    origins: Vec<String>,
    fields: Fields,
}

/// The vault of one data dir.
pub struct Vault {
    store: Store,
    key: MasterKey,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Vault")
    }
}

pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default()
}

fn associated_data(tenant: &str, name: &str) -> Vec<u8> {
    format!("airlock-secret-v1\0{tenant}\0{name}").into_bytes()
}

pub(crate) fn seal(
    key: &MasterKey,
    ad: &[u8],
    plain: &[u8],
) -> Result<(Vec<u8>, Vec<u8>), VaultError> {
    let cipher = XChaCha20Poly1305::new(key.bytes().into());
    let mut nonce = [0u8; 24];
    getrandom::fill(&mut nonce).map_err(|e| VaultError::Key(format!("no randomness: {e}")))?;
    let ciphertext = cipher
        .encrypt(
            &XNonce::from(nonce),
            Payload {
                msg: plain,
                aad: ad,
            },
        )
        .map_err(|_| VaultError::Crypto("encryption failed".to_owned()))?;
    Ok((nonce.to_vec(), ciphertext))
}

pub(crate) fn unseal(
    key: &MasterKey,
    ad: &[u8],
    nonce: &[u8],
    ciphertext: &[u8],
) -> Option<Zeroizing<Vec<u8>>> {
    let nonce: [u8; 24] = nonce.try_into().ok()?;
    let cipher = XChaCha20Poly1305::new(key.bytes().into());
    cipher
        .decrypt(
            &XNonce::from(nonce),
            Payload {
                msg: ciphertext,
                aad: ad,
            },
        )
        .ok()
        .map(Zeroizing::new)
}

// A stored secret's plaintext, if `key` sealed it under this very tenant and name.
fn unseal_record(key: &MasterKey, record: &SecretRecord) -> Option<Zeroizing<Vec<u8>>> {
    unseal(
        key,
        &associated_data(&record.tenant, &record.name),
        &record.nonce,
        &record.ciphertext,
    )
}

fn check_record(key: &MasterKey) -> Result<Vec<u8>, VaultError> {
    let (mut nonce, ciphertext) = seal(key, CHECK_AD, CHECK_PLAIN)?;
    nonce.extend_from_slice(&ciphertext);
    Ok(nonce)
}

fn key_opens(key: &MasterKey, check: &[u8]) -> bool {
    check.len() > 24
        && unseal(key, CHECK_AD, &check[..24], &check[24..])
            .is_some_and(|p| p.as_slice() == CHECK_PLAIN)
}

impl Vault {
    /// Opens the vault with `key`. A key that does not open it is one clear error,
    /// and nothing is written. The first open of an empty store records a key check.
    pub async fn open(store: Store, key: MasterKey) -> Result<Vault, VaultError> {
        match store.meta(CHECK_META).await? {
            Some(check) if key_opens(&key, &check) => {}
            Some(_) => return Err(VaultError::WrongKey),
            None => {
                // A store with secrets but no check (should not happen): the key must
                // open a record before it is trusted.
                if let Some(first) = store.secrets(None).await?.first()
                    && unseal_record(&key, first).is_none()
                {
                    return Err(VaultError::WrongKey);
                }
                store.set_meta(CHECK_META, &check_record(&key)?).await?;
            }
        }
        Ok(Vault { store, key })
    }

    /// Opens the vault of `data_dir` with the key from `env_key` or the key file,
    /// finishing a rotation a crash interrupted: if the records are already under
    /// `master.key.next`, that file becomes the key file.
    pub async fn open_in(
        store: Store,
        data_dir: &Path,
        env_key: Option<&str>,
    ) -> Result<(Vault, KeySource), VaultError> {
        let (key, source) = MasterKey::load(data_dir, env_key)?;
        let next_path = data_dir.join(NEXT_KEY_FILE);
        match Vault::open(store.clone(), key).await {
            Ok(vault) => {
                if source != KeySource::Env {
                    // A rotation that never reached its commit: its new key is unused.
                    let _ = std::fs::remove_file(&next_path);
                }
                Ok((vault, source))
            }
            Err(VaultError::WrongKey) if source != KeySource::Env => {
                let Some(next) = key::read_key_file(&next_path)? else {
                    return Err(VaultError::WrongKey);
                };
                let vault = Vault::open(store, next).await?;
                let path = data_dir.join(KEY_FILE);
                key::commit_rename(&next_path, &path)?;
                Ok((vault, KeySource::File(path)))
            }
            Err(e) => Err(e),
        }
    }

    /// The store under the vault (grants share it).
    pub fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn key(&self) -> &MasterKey {
        &self.key
    }

    /// Stores `secret`, replacing one of the same name. Values are checked first
    /// (names, origins, lengths); nothing is written if any fails.
    pub async fn set(&self, secret: &Secret) -> Result<(), VaultError> {
        check_name(&secret.name)?;
        if secret.origins.is_empty() {
            return Err(VaultError::Invalid(
                "a secret needs at least one origin".to_owned(),
            ));
        }
        let origins = secret
            .origins
            .iter()
            .map(|o| canonical_origin(o))
            .collect::<Result<Vec<_>, _>>()?;
        secret.fields.validate()?;
        let sealed = Sealed {
            origins: origins.clone(),
            fields: secret.fields.clone(),
        };
        let plain = Zeroizing::new(
            serde_json::to_vec(&sealed)
                .map_err(|e| VaultError::Crypto(format!("cannot encode: {e}")))?,
        );
        let (nonce, ciphertext) = seal(
            &self.key,
            &associated_data(&secret.tenant, &secret.name),
            &plain,
        )?;
        let now = unix_now();
        self.store
            .put_secret(&SecretRecord {
                tenant: secret.tenant.clone(),
                name: secret.name.clone(),
                origins,
                fields: secret
                    .fields
                    .present()
                    .iter()
                    .map(|f| (*f).to_owned())
                    .collect(),
                nonce,
                ciphertext,
                created_at: now,
                updated_at: now,
            })
            .await?;
        Ok(())
    }

    /// A secret with its values (for injection and typing only; never for output).
    pub async fn get(&self, tenant: &str, name: &str) -> Result<Secret, VaultError> {
        let record = self
            .store
            .secret(tenant, name)
            .await?
            .ok_or_else(|| VaultError::NotFound(name.to_owned()))?;
        self.decrypt(&record)
    }

    /// The secret `name` of `tenant` and its version: a name for this sealing of
    /// it (its record's nonce, fresh at every write; never derived from a value), so
    /// that what was loaded once can be told from what is stored now.
    pub async fn get_versioned(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<(Secret, String), VaultError> {
        let record = self
            .store
            .secret(tenant, name)
            .await?
            .ok_or_else(|| VaultError::NotFound(name.to_owned()))?;
        Ok((self.decrypt(&record)?, hex::encode(&record.nonce)))
    }

    fn decrypt(&self, record: &SecretRecord) -> Result<Secret, VaultError> {
        let plain = unseal_record(&self.key, record).ok_or_else(|| {
            VaultError::Crypto(format!(
                "secret `{}` does not decrypt: altered, or moved from another name or tenant",
                record.name
            ))
        })?;
        let sealed: Sealed = serde_json::from_slice(&plain).map_err(|_| {
            VaultError::Crypto(format!(
                "secret `{}` is not in this version's format",
                record.name
            ))
        })?;
        Ok(Secret {
            tenant: record.tenant.clone(),
            name: record.name.clone(),
            origins: sealed.origins.clone(),
            fields: sealed.fields.clone(),
        })
    }

    /// Names, origins, fields present and times of a tenant's secrets: never a value.
    pub async fn list(&self, tenant: &str) -> Result<Vec<SecretInfo>, VaultError> {
        Ok(self
            .store
            .secrets(Some(tenant))
            .await?
            .into_iter()
            .map(|r| SecretInfo {
                name: r.name.clone(),
                origins: r.origins.clone(),
                fields: r.fields.clone(),
                created_at: r.created_at,
                updated_at: r.updated_at,
            })
            .collect())
    }

    /// Deletes a secret; whether it existed.
    pub async fn remove(&self, tenant: &str, name: &str) -> Result<bool, VaultError> {
        Ok(self.store.delete_secret(tenant, name).await?)
    }

    /// Re-encrypts every record (all tenants) under `new_key` in one transaction and
    /// returns the vault under the new key and how many records moved. If anything
    /// fails, the store is as it was and this vault still works.
    pub async fn rotate(self, new_key: MasterKey) -> Result<(Vault, usize), VaultError> {
        let records = self.store.secrets(None).await?;
        let now = unix_now();
        let mut rewritten = Vec::with_capacity(records.len());
        for record in &records {
            let plain = unseal_record(&self.key, record).ok_or_else(|| {
                VaultError::Crypto(format!(
                    "secret `{}` does not decrypt; nothing was rotated",
                    record.name
                ))
            })?;
            let (nonce, ciphertext) = seal(
                &new_key,
                &associated_data(&record.tenant, &record.name),
                &plain,
            )?;
            rewritten.push(SecretRecord {
                nonce,
                ciphertext,
                updated_at: now,
                ..record.clone()
            });
        }
        let identities = self.reseal_identities(&new_key).await?;
        self.store
            .rewrite(
                &rewritten,
                &identities,
                &[(CHECK_META, check_record(&new_key)?)],
            )
            .await?;
        Ok((
            Vault {
                store: self.store,
                key: new_key,
            },
            rewritten.len(),
        ))
    }

    /// Rotates a key-file vault: the new key is written to `master.key.next` first,
    /// the records rewritten in one transaction, then the file renamed over
    /// `master.key`. A crash at any point leaves a vault that opens (see
    /// [`Vault::open_in`]) with every record intact.
    pub async fn rotate_key_file(self, data_dir: &Path) -> Result<(Vault, usize), VaultError> {
        let new_key = MasterKey::generate()?;
        let next_path = data_dir.join(NEXT_KEY_FILE);
        key::write_key_file(&next_path, &new_key, true)?;
        let rotated = self.rotate(new_key).await;
        match rotated {
            Ok(done) => {
                key::commit_rename(&next_path, &data_dir.join(KEY_FILE))?;
                Ok(done)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&next_path);
                Err(e)
            }
        }
    }
}

#[cfg(test)]
#[path = "vault_tests.rs"]
mod tests;
