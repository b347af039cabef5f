//! A tenant's Web Bot Auth signing keys as stored: the private key sealed by the vault
//! before it arrives (never readable here), the public key in the clear. One key per
//! tenant is active; a rotation retires it and adds the next in one transaction.

use crate::{Fields, Result, Store, on_pool};

/// One signing key as stored.
#[derive(Clone, PartialEq, Eq)]
pub struct IdentityKeyRecord {
    /// Owning tenant.
    pub tenant: String,
    /// Its key id: the JWK thumbprint of the public key.
    pub kid: String,
    /// The Ed25519 public key (32 bytes).
    pub public_key: Vec<u8>,
    /// AEAD nonce.
    pub nonce: Vec<u8>,
    /// AEAD ciphertext of the private key.
    pub ciphertext: Vec<u8>,
    /// When it was made (Unix ms).
    pub created_ms: i64,
    /// When a rotation retired it (Unix ms); `None` while it signs.
    pub retired_ms: Option<i64>,
}

impl std::fmt::Debug for IdentityKeyRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityKeyRecord")
            .field("tenant", &self.tenant)
            .field("kid", &self.kid)
            .field("created_ms", &self.created_ms)
            .field("retired_ms", &self.retired_ms)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Adds `record` as its tenant's active key. With `rotate`, the key active now
    /// (if any) is retired at `record.created_ms` in the same transaction; without,
    /// nothing is written when one is active (`false`).
    pub async fn add_identity_key(&self, record: &IdentityKeyRecord, rotate: bool) -> Result<bool> {
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            if rotate {
                sqlx::query(
                    "UPDATE identity_keys SET retired_ms = $1 WHERE tenant = $2 AND retired_ms IS NULL",
                )
                .bind(record.created_ms)
                .bind(&record.tenant)
                .execute(&mut *tx)
                .await?;
            }
            // The unique index on the active key makes a second active one a no-op.
            let done = sqlx::query(
                "INSERT INTO identity_keys (tenant, kid, public_key, nonce, ciphertext, created_ms, retired_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, NULL) ON CONFLICT DO NOTHING",
            )
            .bind(&record.tenant)
            .bind(&record.kid)
            .bind(&record.public_key)
            .bind(&record.nonce)
            .bind(&record.ciphertext)
            .bind(record.created_ms)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() != 1 {
                return Ok(false);
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    /// A tenant's keys (every tenant's with `None`): the active one, then the retired
    /// ones, latest retired first.
    pub async fn identity_keys(&self, tenant: Option<&str>) -> Result<Vec<IdentityKeyRecord>> {
        // The active key first, then the retired ones, the latest retired first (a
        // key made and rotated within one millisecond must not trade places).
        on_pool!(self, |pool| {
            let rows = match tenant {
                Some(tenant) => {
                    sqlx::query(
                        "SELECT * FROM identity_keys WHERE tenant = $1 ORDER BY
                           CASE WHEN retired_ms IS NULL THEN 0 ELSE 1 END, retired_ms DESC, created_ms DESC, kid",
                    )
                    .bind(tenant)
                    .fetch_all(pool)
                    .await?
                }
                None => {
                    sqlx::query(
                        "SELECT * FROM identity_keys ORDER BY tenant,
                           CASE WHEN retired_ms IS NULL THEN 0 ELSE 1 END, retired_ms DESC, created_ms DESC, kid",
                    )
                    .fetch_all(pool)
                    .await?
                }
            };
            rows.iter().map(identity_row).collect()
        })
    }

    /// Deletes a tenant's keys retired before `before_ms` (their signatures have all
    /// expired); how many.
    pub async fn prune_identity_keys(&self, tenant: &str, before_ms: i64) -> Result<u64> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "DELETE FROM identity_keys WHERE tenant = $1 AND retired_ms IS NOT NULL AND retired_ms < $2",
            )
            .bind(tenant)
            .bind(before_ms)
            .execute(pool)
            .await?;
            Ok(done.rows_affected())
        })
    }
}

pub(crate) fn identity_row(r: &impl Fields) -> Result<IdentityKeyRecord> {
    Ok(IdentityKeyRecord {
        tenant: r.get("tenant")?,
        kid: r.get("kid")?,
        public_key: r.get("public_key")?,
        nonce: r.get("nonce")?,
        ciphertext: r.get("ciphertext")?,
        created_ms: r.get("created_ms")?,
        retired_ms: r.get("retired_ms")?,
    })
}
