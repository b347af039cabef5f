//! Airlock's persistent store. SQLite under the data dir is the embedded default
//! (WAL mode, migrations embedded in the binary); Postgres is the shared store of
//! several control-plane replicas. Callers see only [`Store`] and plain records; each
//! area's file holds its queries for both backends. Migrations for both are kept in
//! step (`migrations/sqlite`, `migrations/postgres`: the same versions, checked by a
//! test). What only one backend has says so ([`StoreError::Unsupported`]).
//!
//! The store holds what the vault gives it: secret values arrive already encrypted,
//! grant tokens already hashed. It never sees a plaintext secret.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::Row;

mod approvals;
mod artifacts;
mod audit;
mod claims;
mod grants;
mod homes;
mod hosts;
mod identity;
mod logins;
mod running;
mod secrets;
mod site_logins;
mod tasks;
mod tenants;
mod wakeups;

pub use approvals::{ApprovalRecord, ApprovalStatus, Decided, UnknownStatus};
pub use audit::AuditRecord;
pub use claims::{ClaimCaps, Claimed};
pub use grants::GrantRecord;
pub use homes::HomeRecord;
pub use hosts::{HostRecord, RegisteredWorker};
pub use identity::IdentityKeyRecord;
pub use logins::ConsoleLoginRecord;
pub use running::{READS_KEPT, ReadRecord};
pub use secrets::SecretRecord;
pub use site_logins::{CheckEnd, LoginLinkRecord, SiteLoginRecord};
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
pub use tasks::TaskRecord;
pub use tenants::{KeyRecord, LiveSessionRecord, TenantPolicyRecord, TenantRecord};
pub use wakeups::{Wakeup, Wakeups};

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
    /// This backend has no such thing.
    #[error("store: {0} is not kept on this backend")]
    Unsupported(&'static str),
}

impl airlock_core::HasErrorCode for StoreError {
    // Nothing a caller can fix: the details go to the operator's log.
    fn code(&self) -> airlock_core::ErrorCode {
        airlock_core::ErrorCode::Internal
    }
}

type Result<T> = std::result::Result<T, StoreError>;

/// Runs `$body` with `$pool` bound to the store's pool, whichever the backend: one
/// statement and one row mapping ([`Fields`]) serve both (`$n` parameters read as
/// positional in SQLite too).
macro_rules! on_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.backend {
            $crate::Backend::Sqlite($pool) => $body,
            $crate::Backend::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_pool;

/// A value either backend decodes.
pub(crate) trait Both:
    for<'r> sqlx::Decode<'r, sqlx::Sqlite>
    + sqlx::Type<sqlx::Sqlite>
    + for<'r> sqlx::Decode<'r, sqlx::Postgres>
    + sqlx::Type<sqlx::Postgres>
{
}
impl<T> Both for T where
    T: for<'r> sqlx::Decode<'r, sqlx::Sqlite>
        + sqlx::Type<sqlx::Sqlite>
        + for<'r> sqlx::Decode<'r, sqlx::Postgres>
        + sqlx::Type<sqlx::Postgres>
{
}

/// A row of either backend, read by column name.
pub(crate) trait Fields {
    fn get<T: Both>(&self, name: &str) -> Result<T>;
}

impl Fields for sqlx::sqlite::SqliteRow {
    fn get<T: Both>(&self, name: &str) -> Result<T> {
        Ok(self.try_get(name)?)
    }
}

impl Fields for sqlx::postgres::PgRow {
    fn get<T: Both>(&self, name: &str) -> Result<T> {
        Ok(self.try_get(name)?)
    }
}

/// The store. Cheap to clone (a pool handle).
#[derive(Clone)]
pub struct Store {
    backend: Backend,
    // On Postgres, a few connections that commit without waiting for the WAL to
    // reach the disk (`synchronous_commit = off`), for sessions' running state
    // (`running.rs`): what they write is seen by every replica at commit and
    // survives any replica's death; only a crash of the database server itself can
    // lose its last fraction of a second. The audit log never goes through them.
    unsynced: Option<PgPool>,
}

#[derive(Clone)]
enum Backend {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.backend {
            Backend::Sqlite(_) => f.write_str("Store(sqlite)"),
            Backend::Postgres(_) => f.write_str("Store(postgres)"),
        }
    }
}

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

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
        SQLITE_MIGRATIONS.run(&pool).await?;
        Ok(Store {
            backend: Backend::Sqlite(pool),
            unsynced: None,
        })
    }

    /// Connects to the Postgres database at `url` (`postgres://…`) and migrates it.
    /// Several replicas may open the same database at once: sqlx's migrator takes an
    /// advisory lock, so they migrate it once.
    pub async fn open_postgres(url: &str) -> Result<Store> {
        Store::open_postgres_as(url, None).await
    }

    /// The Postgres store served as `url`'s role, its schema kept by `owner`'s (a URL
    /// of the role that owns the tables) when given: the owner runs the migrations,
    /// then grants the serving role what serving needs and no more. On the audit log
    /// that is reading and appending: the serving role cannot update, delete or
    /// truncate a row, so a compromised replica cannot remove history, only fail to
    /// add to it. Without `owner` the serving role runs the migrations itself (it owns
    /// the tables, and [`Store::can_rewrite_audit`] says so).
    pub async fn open_postgres_as(url: &str, owner: Option<&str>) -> Result<Store> {
        let options = sqlx::postgres::PgConnectOptions::from_str(url)?;
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone())
            .await?;
        let unsynced = PgPoolOptions::new()
            .max_connections(4)
            .min_connections(0)
            .acquire_timeout(Duration::from_secs(10))
            .connect_lazy_with(options.options([("synchronous_commit", "off")]));
        match owner {
            None => POSTGRES_MIGRATIONS.run(&pool).await?,
            Some(owner) => {
                let serving: String = sqlx::query_scalar("SELECT current_user::text")
                    .fetch_one(&pool)
                    .await?;
                let owning = PgPoolOptions::new()
                    .max_connections(1)
                    .acquire_timeout(Duration::from_secs(10))
                    .connect(owner)
                    .await?;
                POSTGRES_MIGRATIONS.run(&owning).await?;
                grant_serving(&owning, &serving).await?;
                owning.close().await;
            }
        }
        Ok(Store {
            backend: Backend::Postgres(pool),
            unsynced: Some(unsynced),
        })
    }

    /// Whether the role this store is served as could rewrite audit history (update,
    /// delete or truncate `audit_events`: it owns the table or was granted so);
    /// `None` on SQLite, whose file is the process's own.
    pub async fn can_rewrite_audit(&self) -> Result<Option<bool>> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(None),
            Backend::Postgres(pool) => {
                let can: bool = sqlx::query_scalar(
                    "SELECT has_table_privilege('audit_events', 'UPDATE') \
                        OR has_table_privilege('audit_events', 'DELETE') \
                        OR has_table_privilege('audit_events', 'TRUNCATE')",
                )
                .fetch_one(pool)
                .await?;
                Ok(Some(can))
            }
        }
    }

    /// Answers when the database does (readiness).
    pub async fn ping(&self) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query("SELECT 1").execute(pool).await?;
            Ok(())
        })
    }

    /// Whether other processes on other machines may share this store (Postgres):
    /// then what one replica holds in memory another cannot see.
    pub fn is_shared(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    // The SQLite pool, for what only SQLite has.
    fn pool(&self) -> Result<&SqlitePool> {
        match &self.backend {
            Backend::Sqlite(pool) => Ok(pool),
            Backend::Postgres(_) => Err(StoreError::Unsupported("the journal mode (SQLite's)")),
        }
    }

    /// The migration versions each backend carries (for the test that keeps them in
    /// step).
    #[doc(hidden)]
    pub fn migration_versions() -> (Vec<i64>, Vec<i64>) {
        let versions = |m: &sqlx::migrate::Migrator| m.iter().map(|m| m.version).collect();
        (versions(&SQLITE_MIGRATIONS), versions(&POSTGRES_MIGRATIONS))
    }

    /// The journal mode in force (`wal` for a file database).
    pub async fn journal_mode(&self) -> Result<String> {
        let row = sqlx::query("PRAGMA journal_mode")
            .fetch_one(self.pool()?)
            .await?;
        Ok(row.try_get::<String, _>(0)?)
    }

    /// A vault bookkeeping value.
    pub async fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT value FROM vault_meta WHERE key = $1")
                .bind(key)
                .fetch_optional(pool)
                .await?;
            row.map(|r| Fields::get::<Vec<u8>>(&r, "value")).transpose()
        })
    }

    /// Sets a vault bookkeeping value.
    pub async fn set_meta(&self, key: &str, value: &[u8]) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query(
                "INSERT INTO vault_meta (key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )
            .bind(key)
            .bind(value)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Closes the pool (pending writes are flushed).
    pub async fn close(&self) {
        match &self.backend {
            Backend::Sqlite(pool) => pool.close().await,
            Backend::Postgres(pool) => pool.close().await,
        }
        if let Some(pool) = &self.unsynced {
            pool.close().await;
        }
    }
}

fn json_list(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".to_owned())
}

fn parse_list(text: &str) -> Result<Vec<String>> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("bad JSON list: {e}")))
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

// What the serving role `role` may do, granted by the tables' owner: everything
// serving needs on every table, then the audit log's history taken back.
async fn grant_serving(owner: &PgPool, role: &str) -> Result<()> {
    // A role name cannot be a bound parameter here: quoted as an identifier (any `"`
    // doubled), it is one name whatever it holds. It is what the serving connection
    // says `current_user` is, not a request's word.
    let role = format!("\"{}\"", role.replace('"', "\"\""));
    // Replicas starting together grant at once, and concurrent GRANTs on one table
    // fail ("tuple concurrently updated"): one at a time, under a lock held until
    // the grants commit.
    let mut tx = owner.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(7391426053)")
        .execute(&mut *tx)
        .await?;
    for statement in [
        format!("GRANT USAGE ON SCHEMA public TO {role}"),
        format!("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"),
        format!("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}"),
        format!("REVOKE UPDATE, DELETE, TRUNCATE ON audit_events FROM {role}"),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}
