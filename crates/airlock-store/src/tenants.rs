//! Tenants, their API keys (hashes, never keys) and the browser sessions a gateway
//! has open (so the next start can clean up after one that died).

use sqlx::Row;

use crate::{Result, Store, StoreError};

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantRecord {
    /// Its name (unique).
    pub name: String,
    /// Unix milliseconds.
    pub created_ms: i64,
}

/// An API key as stored: its hash and what it may do, never the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    /// Public id (`key_…`), for listing and revoking.
    pub id: String,
    /// The tenant it acts in.
    pub tenant: String,
    /// `observe`, `act`, `operate` or `admin`.
    pub role: String,
    /// A label the operator gave it.
    pub name: Option<String>,
    /// SHA-256 of the key.
    pub key_hash: Vec<u8>,
    /// Unix milliseconds.
    pub created_ms: i64,
    /// When it was revoked; unusable from then on.
    pub revoked_ms: Option<i64>,
}

/// A browser session some gateway process opened and has not closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSessionRecord {
    /// The session's id.
    pub id: String,
    /// Its tenant.
    pub tenant: String,
    /// The user it was leased for, if any.
    pub user_id: Option<String>,
    /// The conversation it was leased for, if any.
    pub conversation: Option<String>,
    /// The process that opened it.
    pub gateway_pid: i64,
    /// Unix milliseconds.
    pub opened_ms: i64,
}

impl Store {
    /// Creates a tenant; `false` when one of that name exists.
    pub async fn create_tenant(&self, name: &str, now_ms: i64) -> Result<bool> {
        let done = sqlx::query("INSERT OR IGNORE INTO tenants (name, created_ms) VALUES (?, ?)")
            .bind(name)
            .bind(now_ms)
            .execute(self.pool()?)
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Every tenant, by name.
    pub async fn tenants(&self) -> Result<Vec<TenantRecord>> {
        let rows = sqlx::query("SELECT name, created_ms FROM tenants ORDER BY name")
            .fetch_all(self.pool()?)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(TenantRecord {
                    name: r.try_get("name")?,
                    created_ms: r.try_get("created_ms")?,
                })
            })
            .collect()
    }

    /// Stores a new key (its tenant must exist).
    pub async fn insert_key(&self, key: &KeyRecord) -> Result<()> {
        sqlx::query(
            "INSERT INTO api_keys (id, tenant, role, name, key_hash, created_ms, revoked_ms)
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&key.id)
        .bind(&key.tenant)
        .bind(&key.role)
        .bind(&key.name)
        .bind(&key.key_hash)
        .bind(key.created_ms)
        .bind(key.revoked_ms)
        .execute(self.pool()?)
        .await?;
        Ok(())
    }

    /// The key with this hash, revoked or not.
    pub async fn key_by_hash(&self, key_hash: &[u8]) -> Result<Option<KeyRecord>> {
        let row = sqlx::query("SELECT * FROM api_keys WHERE key_hash = ?")
            .bind(key_hash)
            .fetch_optional(self.pool()?)
            .await?;
        row.map(|r| key_row(&r)).transpose()
    }

    /// Keys, of one tenant or of all, oldest first.
    pub async fn keys(&self, tenant: Option<&str>) -> Result<Vec<KeyRecord>> {
        let rows = match tenant {
            Some(tenant) => {
                sqlx::query("SELECT * FROM api_keys WHERE tenant = ? ORDER BY created_ms, id")
                    .bind(tenant)
                    .fetch_all(self.pool()?)
                    .await?
            }
            None => {
                sqlx::query("SELECT * FROM api_keys ORDER BY created_ms, id")
                    .fetch_all(self.pool()?)
                    .await?
            }
        };
        rows.iter().map(key_row).collect()
    }

    /// Whether any key is live (then callers must authenticate).
    pub async fn has_live_keys(&self) -> Result<bool> {
        let row = sqlx::query("SELECT 1 FROM api_keys WHERE revoked_ms IS NULL LIMIT 1")
            .fetch_optional(self.pool()?)
            .await?;
        Ok(row.is_some())
    }

    /// Revokes a key; whether one was revoked now.
    pub async fn revoke_key(&self, id: &str, now_ms: i64) -> Result<bool> {
        let done =
            sqlx::query("UPDATE api_keys SET revoked_ms = ? WHERE id = ? AND revoked_ms IS NULL")
                .bind(now_ms)
                .bind(id)
                .execute(self.pool()?)
                .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Notes a browser session as open in this process.
    pub async fn insert_live_session(&self, live: &LiveSessionRecord) -> Result<()> {
        sqlx::query(
            "INSERT OR REPLACE INTO live_sessions (id, tenant, user_id, conversation, gateway_pid, opened_ms)
             VALUES (?, ?, ?, ?, ?, ?)",
        )
        .bind(&live.id)
        .bind(&live.tenant)
        .bind(&live.user_id)
        .bind(&live.conversation)
        .bind(live.gateway_pid)
        .bind(live.opened_ms)
        .execute(self.pool()?)
        .await?;
        Ok(())
    }

    /// Forgets a browser session that closed.
    pub async fn remove_live_session(&self, id: &str) -> Result<()> {
        sqlx::query("DELETE FROM live_sessions WHERE id = ?")
            .bind(id)
            .execute(self.pool()?)
            .await?;
        Ok(())
    }

    /// Every browser session some process noted as open.
    pub async fn live_sessions(&self) -> Result<Vec<LiveSessionRecord>> {
        let rows = sqlx::query("SELECT * FROM live_sessions ORDER BY opened_ms, id")
            .fetch_all(self.pool()?)
            .await?;
        rows.iter()
            .map(|r| {
                Ok(LiveSessionRecord {
                    id: r.try_get("id")?,
                    tenant: r.try_get("tenant")?,
                    user_id: r.try_get("user_id")?,
                    conversation: r.try_get("conversation")?,
                    gateway_pid: r.try_get("gateway_pid")?,
                    opened_ms: r.try_get("opened_ms")?,
                })
            })
            .collect()
    }
}

fn key_row(r: &sqlx::sqlite::SqliteRow) -> Result<KeyRecord> {
    let key = KeyRecord {
        id: r.try_get("id")?,
        tenant: r.try_get("tenant")?,
        role: r.try_get("role")?,
        name: r.try_get("name")?,
        key_hash: r.try_get("key_hash")?,
        created_ms: r.try_get("created_ms")?,
        revoked_ms: r.try_get("revoked_ms")?,
    };
    if key.key_hash.len() != 32 {
        return Err(StoreError::Corrupt(format!(
            "key {} has a bad hash",
            key.id
        )));
    }
    Ok(key)
}
