//! Console logins: a signed-in operator is a row any replica reads, keyed by the
//! SHA-256 of the cookie (the cookie itself is never stored).

use crate::{Fields, Result, Store, on_pool};

/// One signed-in operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleLoginRecord {
    /// SHA-256 of the cookie.
    pub token_hash: Vec<u8>,
    /// Names the login (not secret).
    pub id: String,
    /// The operator's tenant.
    pub tenant: String,
    /// The operator's role.
    pub role: String,
    /// The digest naming the key they signed in with.
    pub key_digest: Option<String>,
    /// Unix milliseconds.
    pub created_ms: i64,
    /// Unix milliseconds; gone from then on.
    pub expires_ms: i64,
}

impl Store {
    /// Stores a login; expired ones go, and the oldest beyond `most`.
    pub async fn insert_console_login(&self, login: &ConsoleLoginRecord, most: i64) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query("DELETE FROM console_logins WHERE expires_ms <= $1")
                .bind(login.created_ms)
                .execute(pool)
                .await?;
            sqlx::query(
                "INSERT INTO console_logins (token_hash, id, tenant, role, key_digest, created_ms, expires_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(login.token_hash.as_slice())
            .bind(&login.id)
            .bind(&login.tenant)
            .bind(&login.role)
            .bind(&login.key_digest)
            .bind(login.created_ms)
            .bind(login.expires_ms)
            .execute(pool)
            .await?;
            sqlx::query(
                "DELETE FROM console_logins WHERE token_hash NOT IN
                   (SELECT token_hash FROM console_logins ORDER BY expires_ms DESC LIMIT $1)",
            )
            .bind(most)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// The login whose cookie hashes to `token_hash`, unless it expired by `now_ms`.
    pub async fn console_login(
        &self,
        token_hash: &[u8],
        now_ms: i64,
    ) -> Result<Option<ConsoleLoginRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query(
                "SELECT * FROM console_logins WHERE token_hash = $1 AND expires_ms > $2",
            )
            .bind(token_hash)
            .bind(now_ms)
            .fetch_optional(pool)
            .await?;
            row.as_ref().map(login_row).transpose()
        })
    }

    /// Signs a login out: its row, if it was there.
    pub async fn remove_console_login(
        &self,
        token_hash: &[u8],
    ) -> Result<Option<ConsoleLoginRecord>> {
        let login = self.console_login(token_hash, i64::MIN).await?;
        on_pool!(self, |pool| {
            sqlx::query("DELETE FROM console_logins WHERE token_hash = $1")
                .bind(token_hash)
                .execute(pool)
                .await?;
            Ok(login)
        })
    }

    /// Whether the login `id` is still signed in at `now_ms`.
    pub async fn console_login_alive(&self, id: &str, now_ms: i64) -> Result<bool> {
        on_pool!(self, |pool| {
            let row = sqlx::query(
                "SELECT 1 AS one FROM console_logins WHERE id = $1 AND expires_ms > $2",
            )
            .bind(id)
            .bind(now_ms)
            .fetch_optional(pool)
            .await?;
            Ok(row.is_some())
        })
    }
}

fn login_row(r: &impl Fields) -> Result<ConsoleLoginRecord> {
    Ok(ConsoleLoginRecord {
        token_hash: r.get("token_hash")?,
        id: r.get("id")?,
        tenant: r.get("tenant")?,
        role: r.get("role")?,
        key_digest: r.get("key_digest")?,
        created_ms: r.get("created_ms")?,
        expires_ms: r.get("expires_ms")?,
    })
}
