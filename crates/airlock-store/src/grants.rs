//! Grant tokens as stored: their hashes and scopes, never the tokens.

use crate::{Fields, Result, Store, json_list, on_pool, parse_list};

/// One grant token as stored (its hash, never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRecord {
    /// Public id (for listing and revoking).
    pub id: String,
    /// Owning tenant.
    pub tenant: String,
    /// SHA-256 of the token.
    pub token_hash: Vec<u8>,
    /// Domains the grant covers (each with its subdomains).
    pub domains: Vec<String>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds; unusable from then on.
    pub expires_at: i64,
    /// Usable more than once.
    pub reusable: bool,
    /// When it was (last) used.
    pub used_at: Option<i64>,
    /// When it was revoked.
    pub revoked_at: Option<i64>,
}

impl Store {
    /// Stores a new grant.
    pub async fn insert_grant(&self, g: &GrantRecord) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query(
                "INSERT INTO grants (id, tenant, token_hash, domains, created_at, expires_at, reusable, used_at, revoked_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(&g.id)
            .bind(&g.tenant)
            .bind(&g.token_hash)
            .bind(json_list(&g.domains))
            .bind(g.created_at)
            .bind(g.expires_at)
            .bind(g.reusable)
            .bind(g.used_at)
            .bind(g.revoked_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The grant with this token hash, whatever its state.
    pub async fn grant_by_hash(&self, token_hash: &[u8]) -> Result<Option<GrantRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT * FROM grants WHERE token_hash = $1")
                .bind(token_hash)
                .fetch_optional(pool)
                .await?;
            row.map(|r| grant_row(&r)).transpose()
        })
    }

    /// Marks a grant used, atomically and only if it is still usable at `now`
    /// (not revoked, not expired, and unused unless reusable). Of racing uses of a
    /// single-use grant, from any number of replicas, exactly one gets `true`: the
    /// check and the mark are one conditional update.
    pub async fn use_grant(&self, id: &str, now: i64) -> Result<bool> {
        let done = on_pool!(self, |pool| {
            sqlx::query(
            "UPDATE grants SET used_at = $1
             WHERE id = $2 AND revoked_at IS NULL AND expires_at > $1 AND (reusable OR used_at IS NULL)",
        )
        .bind(now)
        .bind(id)
        .execute(pool)
        .await?
        .rows_affected()
        });
        Ok(done == 1)
    }

    /// Revokes a grant of `tenant`; whether one was revoked now.
    pub async fn revoke_grant(&self, tenant: &str, id: &str, now: i64) -> Result<bool> {
        let done = on_pool!(self, |pool| {
            sqlx::query(
            "UPDATE grants SET revoked_at = $1 WHERE tenant = $2 AND id = $3 AND revoked_at IS NULL",
        )
        .bind(now)
        .bind(tenant)
        .bind(id)
        .execute(pool)
        .await?
        .rows_affected()
        });
        Ok(done == 1)
    }

    /// A tenant's grants, newest first.
    pub async fn grants(&self, tenant: &str) -> Result<Vec<GrantRecord>> {
        on_pool!(self, |pool| {
            let rows =
                sqlx::query("SELECT * FROM grants WHERE tenant = $1 ORDER BY created_at DESC, id")
                    .bind(tenant)
                    .fetch_all(pool)
                    .await?;
            rows.iter().map(grant_row).collect()
        })
    }
}

pub(crate) fn grant_row(r: &impl Fields) -> Result<GrantRecord> {
    Ok(GrantRecord {
        id: r.get("id")?,
        tenant: r.get("tenant")?,
        token_hash: r.get("token_hash")?,
        domains: parse_list(&r.get::<String>("domains")?)?,
        created_at: r.get("created_at")?,
        expires_at: r.get("expires_at")?,
        reusable: r.get("reusable")?,
        used_at: r.get("used_at")?,
        revoked_at: r.get("revoked_at")?,
    })
}
