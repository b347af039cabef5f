//! Airlock's persistent store. SQLite under the data dir is the embedded default
//! (WAL mode, migrations embedded in the binary); callers see only [`Store`] and plain
//! records, so a Postgres backend can be added as another [`Store`] variant without
//! touching them.
//!
//! The store holds what the vault gives it: secret values arrive already encrypted,
//! grant tokens already hashed. It never sees a plaintext secret.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::Row;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

/// Store failures.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened, migrated or queried.
    #[error("store: {0}")]
    Database(#[from] sqlx::Error),
    /// Migrations failed.
    #[error("store migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored row is not what this version wrote.
    #[error("store: corrupt row: {0}")]
    Corrupt(String),
    /// The database file could not be created or restricted to its owner.
    #[error("store: {0}")]
    File(#[from] std::io::Error),
}

type Result<T> = std::result::Result<T, StoreError>;

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

/// The store. Cheap to clone (a pool handle).
#[derive(Clone)]
pub struct Store {
    backend: Backend,
}

#[derive(Clone)]
enum Backend {
    Sqlite(SqlitePool),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.backend {
            Backend::Sqlite(_) => f.write_str("Store(sqlite)"),
        }
    }
}

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl Store {
    /// Opens (creating if needed) the SQLite database at `path` and migrates it. The
    /// file is readable by its owner only (0600), also when it existed with wider
    /// permissions; SQLite gives its `-wal` and `-shm` files the same.
    pub async fn open_sqlite(path: &Path) -> Result<Store> {
        owner_only(path)?;
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(5))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        Store::migrated(pool).await
    }

    /// A private in-memory database (tests).
    pub async fn open_in_memory() -> Result<Store> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?;
        // One connection: each in-memory connection is its own database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await?;
        Store::migrated(pool).await
    }

    async fn migrated(pool: SqlitePool) -> Result<Store> {
        MIGRATOR.run(&pool).await?;
        Ok(Store {
            backend: Backend::Sqlite(pool),
        })
    }

    fn pool(&self) -> &SqlitePool {
        match &self.backend {
            Backend::Sqlite(pool) => pool,
        }
    }

    /// The journal mode in force (`wal` for a file database).
    pub async fn journal_mode(&self) -> Result<String> {
        let row = sqlx::query("PRAGMA journal_mode")
            .fetch_one(self.pool())
            .await?;
        Ok(row.try_get::<String, _>(0)?)
    }

    /// Inserts or replaces a secret (keeping its creation time).
    pub async fn put_secret(&self, r: &SecretRecord) -> Result<()> {
        sqlx::query(
            "INSERT INTO secrets (tenant, name, origins, fields, nonce, ciphertext, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)
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
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// One secret.
    pub async fn secret(&self, tenant: &str, name: &str) -> Result<Option<SecretRecord>> {
        let row = sqlx::query("SELECT * FROM secrets WHERE tenant = ? AND name = ?")
            .bind(tenant)
            .bind(name)
            .fetch_optional(self.pool())
            .await?;
        row.map(|r| secret_row(&r)).transpose()
    }

    /// A tenant's secrets, or every tenant's with `None`, by tenant and name.
    pub async fn secrets(&self, tenant: Option<&str>) -> Result<Vec<SecretRecord>> {
        let rows = match tenant {
            Some(t) => {
                sqlx::query("SELECT * FROM secrets WHERE tenant = ? ORDER BY name")
                    .bind(t)
                    .fetch_all(self.pool())
                    .await?
            }
            None => {
                sqlx::query("SELECT * FROM secrets ORDER BY tenant, name")
                    .fetch_all(self.pool())
                    .await?
            }
        };
        rows.iter().map(secret_row).collect()
    }

    /// Deletes a secret; whether it existed.
    pub async fn delete_secret(&self, tenant: &str, name: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM secrets WHERE tenant = ? AND name = ?")
            .bind(tenant)
            .bind(name)
            .execute(self.pool())
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// A vault bookkeeping value.
    pub async fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let row = sqlx::query("SELECT value FROM vault_meta WHERE key = ?")
            .bind(key)
            .fetch_optional(self.pool())
            .await?;
        Ok(row.map(|r| r.try_get::<Vec<u8>, _>(0)).transpose()?)
    }

    /// Sets a vault bookkeeping value.
    pub async fn set_meta(&self, key: &str, value: &[u8]) -> Result<()> {
        sqlx::query("INSERT OR REPLACE INTO vault_meta (key, value) VALUES (?, ?)")
            .bind(key)
            .bind(value)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Rewrites the given secrets and meta values in one transaction (key rotation):
    /// either every record is rewritten or none is.
    pub async fn rewrite(&self, records: &[SecretRecord], meta: &[(&str, Vec<u8>)]) -> Result<()> {
        let mut tx = self.pool().begin().await?;
        for r in records {
            let done = sqlx::query(
                "UPDATE secrets SET nonce = ?, ciphertext = ?, updated_at = ? WHERE tenant = ? AND name = ?",
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
        for (key, value) in meta {
            sqlx::query("INSERT OR REPLACE INTO vault_meta (key, value) VALUES (?, ?)")
                .bind(key)
                .bind(value)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

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
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The grant with this token hash, whatever its state.
    pub async fn grant_by_hash(&self, token_hash: &[u8]) -> Result<Option<GrantRecord>> {
        let row = sqlx::query("SELECT * FROM grants WHERE token_hash = ?")
            .bind(token_hash)
            .fetch_optional(self.pool())
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
        .execute(self.pool())
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
        .execute(self.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A tenant's grants, newest first.
    pub async fn grants(&self, tenant: &str) -> Result<Vec<GrantRecord>> {
        let rows =
            sqlx::query("SELECT * FROM grants WHERE tenant = ? ORDER BY created_at DESC, id")
                .bind(tenant)
                .fetch_all(self.pool())
                .await?;
        rows.iter().map(grant_row).collect()
    }

    /// Closes the pool (pending writes are flushed).
    pub async fn close(&self) {
        self.pool().close().await;
    }
}

fn json_list(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".to_owned())
}

fn parse_list(text: &str) -> Result<Vec<String>> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("bad JSON list: {e}")))
}

fn secret_row(r: &sqlx::sqlite::SqliteRow) -> Result<SecretRecord> {
    Ok(SecretRecord {
        tenant: r.try_get("tenant")?,
        name: r.try_get("name")?,
        origins: parse_list(&r.try_get::<String, _>("origins")?)?,
        fields: parse_list(&r.try_get::<String, _>("fields")?)?,
        nonce: r.try_get("nonce")?,
        ciphertext: r.try_get("ciphertext")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

fn grant_row(r: &sqlx::sqlite::SqliteRow) -> Result<GrantRecord> {
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

#[cfg(test)]
mod tests;

// Creates `path` as an empty file readable by its owner only, or narrows an existing
// one to that: grants' hashes and sealed secrets are nobody else's to copy.
fn owner_only(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}
