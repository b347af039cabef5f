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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    /// The worker it runs on (its `[[workers]]` address), when another replica can
    /// reach it there.
    pub worker: Option<String>,
    /// Its id on that worker.
    pub worker_session: Option<String>,
    /// What attaching to it on that worker takes (hex).
    pub worker_key: Option<String>,
    /// Its idle TTL, milliseconds.
    pub idle_ttl_ms: Option<i64>,
    /// Its recording mode (`off`, `transient`, `audit`).
    pub record: Option<String>,
    /// Its own host narrowing (a JSON array), if it gave one.
    pub allow_hosts: Option<String>,
    /// Whether it learned values after open that no vault holds (what an operator
    /// typed): then only the replicas that know them serve it.
    pub holds_secrets: bool,
    /// When any replica last used it, Unix milliseconds.
    pub used_ms: Option<i64>,
    /// The operator holding its page, if one does (written by `hold_live_session`,
    /// never by an insert).
    pub held_by: Option<String>,
    /// The home (`agent_homes`) whose browser session it is, if any.
    pub home: Option<String>,
    /// The vault secrets it loaded and their versions (JSON), if any.
    pub secrets: Option<String>,
    /// Its own origin sets (JSON), if it was opened with any.
    pub origins: Option<String>,
    /// The nonce of its page fences (six digits), the same on every replica.
    pub fence: Option<String>,
    /// The digest id of the key that opened it (none: the local user).
    pub owner_key: Option<String>,
    /// That caller's role.
    pub owner_role: Option<String>,
    /// Actions it ran on every replica (read only here: `Store::count_action`
    /// counts them; an insert leaves the count as it is).
    pub actions: i64,
    /// The version of its tenant's policy it opened under, if the tenant had one.
    pub policy_version: Option<i64>,
}

// Every column of a live session row, in the order `bind_live!` binds them, and
// their placeholders (macros, so statements stay static strings).
macro_rules! live_columns {
    () => {
        "id, tenant, user_id, conversation, gateway_pid, opened_ms, replica, worker, \
         worker_session, idle_ttl_ms, record, allow_hosts, holds_secrets, used_ms, home, secrets, origins, \
         worker_key, fence, owner_key, owner_role, policy_version"
    };
}
macro_rules! live_values {
    () => {
        "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22"
    };
}
pub(crate) use {live_columns, live_values};

// Binds a row's columns to `$1..$22` of `query`.
macro_rules! bind_live {
    ($query:expr, $live:expr) => {
        $query
            .bind(&$live.id)
            .bind(&$live.tenant)
            .bind(&$live.user_id)
            .bind(&$live.conversation)
            .bind($live.gateway_pid)
            .bind($live.opened_ms)
            .bind(&$live.replica)
            .bind(&$live.worker)
            .bind(&$live.worker_session)
            .bind($live.idle_ttl_ms)
            .bind(&$live.record)
            .bind(&$live.allow_hosts)
            .bind($live.holds_secrets)
            .bind($live.used_ms)
            .bind(&$live.home)
            .bind(&$live.secrets)
            .bind(&$live.origins)
            .bind(&$live.worker_key)
            .bind(&$live.fence)
            .bind(&$live.owner_key)
            .bind(&$live.owner_role)
            .bind($live.policy_version)
    };
}
pub(crate) use bind_live;

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

    /// Notes a browser session as open (or rewrites its row).
    pub async fn insert_live_session(&self, live: &LiveSessionRecord) -> Result<()> {
        const UPSERT: &str = concat!(
            "INSERT INTO live_sessions (",
            live_columns!(),
            ") VALUES (",
            live_values!(),
            ") ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, user_id = excluded.user_id,
               conversation = excluded.conversation, gateway_pid = excluded.gateway_pid,
               opened_ms = excluded.opened_ms, replica = excluded.replica,
               worker = excluded.worker, worker_session = excluded.worker_session,
               idle_ttl_ms = excluded.idle_ttl_ms, record = excluded.record,
               allow_hosts = excluded.allow_hosts, holds_secrets = excluded.holds_secrets,
               used_ms = excluded.used_ms, home = excluded.home,
               secrets = excluded.secrets, origins = excluded.origins,
               worker_key = excluded.worker_key, fence = excluded.fence,
               owner_key = excluded.owner_key, owner_role = excluded.owner_role,
               policy_version = excluded.policy_version"
        );
        on_pool!(self, |pool| {
            bind_live!(sqlx::query(UPSERT), live).execute(pool).await?;
            Ok(())
        })
    }

    /// One live session's row.
    pub async fn live_session(&self, id: &str) -> Result<Option<LiveSessionRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT * FROM live_sessions WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(live_row).transpose()
        })
    }

    /// Notes that a live session was used at `now_ms` (by any replica); `false` when
    /// it has no row (it ended).
    pub async fn touch_live_session(&self, id: &str, now_ms: i64) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE live_sessions SET used_ms = $1 WHERE id = $2 AND (used_ms IS NULL OR used_ms < $1)",
            )
            .bind(now_ms)
            .bind(id)
            .execute(pool)
            .await?;
            if done.rows_affected() == 1 {
                return Ok(true);
            }
            Ok(self.live_session(id).await?.is_some())
        })
    }

    /// Forgets a browser session that closed.
    pub async fn remove_live_session(&self, id: &str) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query("DELETE FROM live_sessions WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await?;
            Ok::<(), StoreError>(())
        })?;
        self.forget_reads(id).await
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
        worker: r.get("worker")?,
        worker_session: r.get("worker_session")?,
        idle_ttl_ms: r.get("idle_ttl_ms")?,
        record: r.get("record")?,
        allow_hosts: r.get("allow_hosts")?,
        holds_secrets: r.get("holds_secrets")?,
        used_ms: r.get("used_ms")?,
        held_by: r.get("held_by")?,
        home: r.get("home")?,
        secrets: r.get("secrets")?,
        origins: r.get("origins")?,
        worker_key: r.get("worker_key")?,
        fence: r.get("fence")?,
        owner_key: r.get("owner_key")?,
        owner_role: r.get("owner_role")?,
        actions: r.get("actions")?,
        policy_version: r.get("policy_version")?,
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

/// One version of a tenant's own policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantPolicyRecord {
    /// The tenant.
    pub tenant: String,
    /// From 1, one more with each change.
    pub version: i64,
    /// SHA-256 of `body`, hex.
    pub hash: String,
    /// The policy, canonical JSON.
    pub body: String,
    /// Who set it (`api:<key>`, an OS user).
    pub set_by: String,
    /// Unix milliseconds.
    pub created_ms: i64,
}

impl Store {
    /// Stores `body` as `tenant`'s next policy version; the version.
    pub async fn set_tenant_policy(
        &self,
        tenant: &str,
        hash: &str,
        body: &str,
        set_by: &str,
        now_ms: i64,
    ) -> Result<i64> {
        // Two admins racing: one gets the next number, the other tries again.
        for _ in 0..8 {
            let stored: std::result::Result<i64, sqlx::Error> = on_pool!(self, |pool| {
                sqlx::query_scalar(
                    "INSERT INTO tenant_policies (tenant, version, hash, body, set_by, created_ms)
                     SELECT CAST($1 AS TEXT), COALESCE(MAX(version), 0) + 1, CAST($2 AS TEXT), CAST($3 AS TEXT), CAST($4 AS TEXT), $5
                     FROM tenant_policies WHERE tenant = $1
                     RETURNING version",
                )
                .bind(tenant)
                .bind(hash)
                .bind(body)
                .bind(set_by)
                .bind(now_ms)
                .fetch_one(pool)
                .await
            });
            match stored {
                Ok(version) => return Ok(version),
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Corrupt(
            "a tenant's policy changed eight times at once".to_owned(),
        ))
    }

    /// `tenant`'s newest policy, or version `version` of it.
    pub async fn tenant_policy(
        &self,
        tenant: &str,
        version: Option<i64>,
    ) -> Result<Option<TenantPolicyRecord>> {
        on_pool!(self, |pool| {
            let row = match version {
                Some(v) => {
                    sqlx::query("SELECT * FROM tenant_policies WHERE tenant = $1 AND version = $2")
                        .bind(tenant)
                        .bind(v)
                        .fetch_optional(pool)
                        .await?
                }
                None => sqlx::query(
                    "SELECT * FROM tenant_policies WHERE tenant = $1 ORDER BY version DESC LIMIT 1",
                )
                .bind(tenant)
                .fetch_optional(pool)
                .await?,
            };
            row.map(|r| {
                Ok(TenantPolicyRecord {
                    tenant: r.get("tenant")?,
                    version: r.get("version")?,
                    hash: r.get("hash")?,
                    body: r.get("body")?,
                    set_by: r.get("set_by")?,
                    created_ms: r.get("created_ms")?,
                })
            })
            .transpose()
        })
    }
}
