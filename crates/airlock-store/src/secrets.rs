//! Secrets as stored: sealed by the vault before they arrive, never readable here.

use crate::{Fields, Result, Store, StoreError, json_list, on_pool, parse_list};

/// One encrypted secret as stored.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretRecord {
    /// Owning tenant.
    pub tenant: String,
    /// Name, unique per tenant.
    pub name: String,
    /// Bound origins (`https://app.example.com`).
    pub origins: Vec<String>,
    /// Names of the fields present (never their values).
    pub fields: Vec<String>,
    /// AEAD nonce.
    pub nonce: Vec<u8>,
    /// AEAD ciphertext of the fields.
    pub ciphertext: Vec<u8>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub updated_at: i64,
}

impl std::fmt::Debug for SecretRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretRecord")
            .field("tenant", &self.tenant)
            .field("name", &self.name)
            .field("origins", &self.origins)
            .field("fields", &self.fields)
            .field(
                "ciphertext",
                &format_args!("[{} bytes]", self.ciphertext.len()),
            )
            .finish()
    }
}

impl Store {
    /// Inserts or replaces a secret (keeping its creation time).
    pub async fn put_secret(&self, r: &SecretRecord) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query(
                "INSERT INTO secrets (tenant, name, origins, fields, nonce, ciphertext, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                 ON CONFLICT (tenant, name) DO UPDATE SET
                   origins = excluded.origins, fields = excluded.fields, nonce = excluded.nonce,
                   ciphertext = excluded.ciphertext, updated_at = excluded.updated_at",
            )
            .bind(&r.tenant)
            .bind(&r.name)
            .bind(json_list(&r.origins))
            .bind(json_list(&r.fields))
            .bind(&r.nonce)
            .bind(&r.ciphertext)
            .bind(r.created_at)
            .bind(r.updated_at)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// One secret.
    pub async fn secret(&self, tenant: &str, name: &str) -> Result<Option<SecretRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT * FROM secrets WHERE tenant = $1 AND name = $2")
                .bind(tenant)
                .bind(name)
                .fetch_optional(pool)
                .await?;
            row.map(|r| secret_row(&r)).transpose()
        })
    }

    /// A tenant's secrets, or every tenant's with `None`, by tenant and name.
    pub async fn secrets(&self, tenant: Option<&str>) -> Result<Vec<SecretRecord>> {
        on_pool!(self, |pool| {
            let rows = match tenant {
                Some(t) => {
                    sqlx::query("SELECT * FROM secrets WHERE tenant = $1 ORDER BY name")
                        .bind(t)
                        .fetch_all(pool)
                        .await?
                }
                None => {
                    sqlx::query("SELECT * FROM secrets ORDER BY tenant, name")
                        .fetch_all(pool)
                        .await?
                }
            };
            rows.iter().map(secret_row).collect()
        })
    }

    /// Deletes a secret; whether it existed.
    pub async fn delete_secret(&self, tenant: &str, name: &str) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query("DELETE FROM secrets WHERE tenant = $1 AND name = $2")
                .bind(tenant)
                .bind(name)
                .execute(pool)
                .await?;
            Ok(done.rows_affected() > 0)
        })
    }

    /// Rewrites the given secrets, signing keys and meta values in one transaction (key rotation):
    /// either every record is rewritten or none is.
    pub async fn rewrite(
        &self,
        records: &[SecretRecord],
        identity: &[crate::IdentityKeyRecord],
        meta: &[(&str, Vec<u8>)],
    ) -> Result<()> {
        on_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            for r in records {
                let done = sqlx::query(
                    "UPDATE secrets SET nonce = $1, ciphertext = $2, updated_at = $3 WHERE tenant = $4 AND name = $5",
                )
                .bind(&r.nonce)
                .bind(&r.ciphertext)
                .bind(r.updated_at)
                .bind(&r.tenant)
                .bind(&r.name)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() != 1 {
                    // Dropping the transaction rolls it back.
                    return Err(StoreError::Corrupt(format!(
                        "secret {}/{} vanished during the rewrite",
                        r.tenant, r.name
                    )));
                }
            }
            for r in identity {
                let done = sqlx::query(
                    "UPDATE identity_keys SET nonce = $1, ciphertext = $2 WHERE tenant = $3 AND kid = $4",
                )
                .bind(&r.nonce)
                .bind(&r.ciphertext)
                .bind(&r.tenant)
                .bind(&r.kid)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() != 1 {
                    return Err(StoreError::Corrupt(format!(
                        "signing key {}/{} vanished during the rewrite",
                        r.tenant, r.kid
                    )));
                }
            }
            for (key, value) in meta {
                sqlx::query(
                    "INSERT INTO vault_meta (key, value) VALUES ($1, $2)
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )
                .bind(key)
                .bind(value)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }
}

pub(crate) fn secret_row(r: &impl Fields) -> Result<SecretRecord> {
    Ok(SecretRecord {
        tenant: r.get("tenant")?,
        name: r.get("name")?,
        origins: parse_list(&r.get::<String>("origins")?)?,
        fields: parse_list(&r.get::<String>("fields")?)?,
        nonce: r.get("nonce")?,
        ciphertext: r.get("ciphertext")?,
        created_at: r.get("created_at")?,
        updated_at: r.get("updated_at")?,
    })
}
