//! Tenants, their API keys (hashes, never keys) and the browser sessions a gateway
//! has open (so the next start can clean up after one that died).

use crate::{Fields, Result, Store, StoreError, on_pool};

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
    /// The replica (its `hosts` id) that opened it; `None` on rows from before
    /// replicas were recorded.
    pub replica: Option<String>,
}

impl Store {
    /// Creates a tenant; `false` when one of that name exists.
    pub async fn create_tenant(&self, name: &str, now_ms: i64) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query("INSERT INTO tenants (name, created_ms) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
                .bind(name)
                .bind(now_ms)
                .execute(pool)
                .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Every tenant, by name.
    pub async fn tenants(&self) -> Result<Vec<TenantRecord>> {
        on_pool!(self, |pool| {
            let rows = sqlx::query("SELECT name, created_ms FROM tenants ORDER BY name")
                .fetch_all(pool)
                .await?;
            rows.iter()
                .map(|r| {
                    Ok(TenantRecord {
                        name: r.get("name")?,
                        created_ms: r.get("created_ms")?,
                    })
                })
                .collect()
        })
    }

    /// Stores a new key (its tenant must exist).
    pub async fn insert_key(&self, key: &KeyRecord) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query(
                "INSERT INTO api_keys (id, tenant, role, name, key_hash, created_ms, revoked_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&key.id)
            .bind(&key.tenant)
            .bind(&key.role)
            .bind(&key.name)
            .bind(&key.key_hash)
            .bind(key.created_ms)
            .bind(key.revoked_ms)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// The key with this hash, revoked or not.
    pub async fn key_by_hash(&self, key_hash: &[u8]) -> Result<Option<KeyRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT * FROM api_keys WHERE key_hash = $1")
                .bind(key_hash)
                .fetch_optional(pool)
                .await?;
            row.map(|r| key_row(&r)).transpose()
        })
    }

    /// Keys, of one tenant or of all, oldest first.
    pub async fn keys(&self, tenant: Option<&str>) -> Result<Vec<KeyRecord>> {
        on_pool!(self, |pool| {
            let rows = match tenant {
                Some(tenant) => {
                    sqlx::query("SELECT * FROM api_keys WHERE tenant = $1 ORDER BY created_ms, id")
                        .bind(tenant)
                        .fetch_all(pool)
                        .await?
                }
                None => {
                    sqlx::query("SELECT * FROM api_keys ORDER BY created_ms, id")
                        .fetch_all(pool)
                        .await?
                }
            };
            rows.iter().map(key_row).collect()
        })
    }

    /// Whether any key is live (then callers must authenticate).
    pub async fn has_live_keys(&self) -> Result<bool> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT 1 FROM api_keys WHERE revoked_ms IS NULL LIMIT 1")
                .fetch_optional(pool)
                .await?;
            Ok(row.is_some())
        })
    }

    /// Revokes a key; whether one was revoked now.
    pub async fn revoke_key(&self, id: &str, now_ms: i64) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE api_keys SET revoked_ms = $1 WHERE id = $2 AND revoked_ms IS NULL",
            )
            .bind(now_ms)
            .bind(id)
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Notes a browser session as open in this process.
    pub async fn insert_live_session(&self, live: &LiveSessionRecord) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query(
                "INSERT INTO live_sessions (id, tenant, user_id, conversation, gateway_pid, opened_ms, replica)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, user_id = excluded.user_id,
                   conversation = excluded.conversation, gateway_pid = excluded.gateway_pid,
                   opened_ms = excluded.opened_ms, replica = excluded.replica",
            )
            .bind(&live.id)
            .bind(&live.tenant)
            .bind(&live.user_id)
            .bind(&live.conversation)
            .bind(live.gateway_pid)
            .bind(live.opened_ms)
            .bind(&live.replica)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// Forgets a browser session that closed.
    pub async fn remove_live_session(&self, id: &str) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query("DELETE FROM live_sessions WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    /// Every browser session some process noted as open.
    pub async fn live_sessions(&self) -> Result<Vec<LiveSessionRecord>> {
        on_pool!(self, |pool| {
            let rows = sqlx::query("SELECT * FROM live_sessions ORDER BY opened_ms, id")
                .fetch_all(pool)
                .await?;
            rows.iter().map(live_row).collect()
        })
    }
}

pub(crate) fn live_row(r: &impl Fields) -> Result<LiveSessionRecord> {
    Ok(LiveSessionRecord {
        id: r.get("id")?,
        tenant: r.get("tenant")?,
        user_id: r.get("user_id")?,
        conversation: r.get("conversation")?,
        gateway_pid: r.get("gateway_pid")?,
        opened_ms: r.get("opened_ms")?,
        replica: r.get("replica")?,
    })
}

fn key_row(r: &impl Fields) -> Result<KeyRecord> {
    let key = KeyRecord {
        id: r.get("id")?,
        tenant: r.get("tenant")?,
        role: r.get("role")?,
        name: r.get("name")?,
        key_hash: r.get("key_hash")?,
        created_ms: r.get("created_ms")?,
        revoked_ms: r.get("revoked_ms")?,
    };
    if key.key_hash.len() != 32 {
        return Err(StoreError::Corrupt(format!(
            "key {} has a bad hash",
            key.id
        )));
    }
    Ok(key)
}
