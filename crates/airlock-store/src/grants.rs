//! Grant tokens as stored: their hashes and scopes, never the tokens.

use sqlx::Row;

use crate::{Result, Store, json_list, parse_list};

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
        sqlx::query(
            "INSERT INTO grants (id, tenant, token_hash, domains, created_at, expires_at, reusable, used_at, revoked_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        .execute(self.pool()?)
        .await?;
        Ok(())
    }

    /// The grant with this token hash, whatever its state.
    pub async fn grant_by_hash(&self, token_hash: &[u8]) -> Result<Option<GrantRecord>> {
        let row = sqlx::query("SELECT * FROM grants WHERE token_hash = ?")
            .bind(token_hash)
            .fetch_optional(self.pool()?)
            .await?;
        row.map(|r| grant_row(&r)).transpose()
    }

    /// Marks a grant used, atomically and only if it is still usable at `now`
    /// (not revoked, not expired, and unused unless reusable). Of two racing uses of
    /// a single-use grant exactly one gets `true`.
    pub async fn use_grant(&self, id: &str, now: i64) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE grants SET used_at = ?
             WHERE id = ? AND revoked_at IS NULL AND expires_at > ? AND (reusable = 1 OR used_at IS NULL)",
        )
        .bind(now)
        .bind(id)
        .bind(now)
        .execute(self.pool()?)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Revokes a grant of `tenant`; whether one was revoked now.
    pub async fn revoke_grant(&self, tenant: &str, id: &str, now: i64) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE grants SET revoked_at = ? WHERE tenant = ? AND id = ? AND revoked_at IS NULL",
        )
        .bind(now)
        .bind(tenant)
        .bind(id)
        .execute(self.pool()?)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A tenant's grants, newest first.
    pub async fn grants(&self, tenant: &str) -> Result<Vec<GrantRecord>> {
        let rows =
            sqlx::query("SELECT * FROM grants WHERE tenant = ? ORDER BY created_at DESC, id")
                .bind(tenant)
                .fetch_all(self.pool()?)
                .await?;
        rows.iter().map(grant_row).collect()
    }
}

pub(crate) fn grant_row(r: &sqlx::sqlite::SqliteRow) -> Result<GrantRecord> {
    Ok(GrantRecord {
        id: r.try_get("id")?,
        tenant: r.try_get("tenant")?,
        token_hash: r.try_get("token_hash")?,
        domains: parse_list(&r.try_get::<String, _>("domains")?)?,
        created_at: r.try_get("created_at")?,
        expires_at: r.try_get("expires_at")?,
        reusable: r.try_get("reusable")?,
        used_at: r.try_get("used_at")?,
        revoked_at: r.try_get("revoked_at")?,
    })
}
