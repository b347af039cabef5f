//! Stored logins kept alive, as every replica sees them: their definition (JSON the
//! `airlock-login` crate reads), their state, when each is next due, and which
//! replica holds its check. A check is claimed with one conditional update, so two
//! replicas never check one login at once; a claim lapses, so a replica that died
//! mid-check does not hold it for ever. One-time links are kept by the SHA-256 of
//! their token and used with one conditional update.

use crate::{Fields, Result, Store, on_pool};

/// One stored login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteLoginRecord {
    /// Its tenant.
    pub tenant: String,
    /// Its name: the vault secret it keeps logged in.
    pub name: String,
    /// Its probe, renewal flow and schedule (JSON).
    pub spec: String,
    /// Whether it is checked at all.
    pub enabled: bool,
    /// `unchecked`, `alive`, `renewing`, `needs_user` or `failed`.
    pub state: String,
    /// Why, in one line.
    pub why: String,
    /// When its last check ended (Unix ms).
    pub checked_ms: Option<i64>,
    /// When it is next checked.
    pub due_ms: i64,
    /// The replica checking it now.
    pub holder: Option<String>,
    /// Until when that replica's claim holds.
    pub held_until_ms: Option<i64>,
    /// When it last changed.
    pub updated_ms: i64,
}

/// How a check ended.
#[derive(Debug, Clone, Copy)]
pub struct CheckEnd<'a> {
    /// The state it found.
    pub state: &'a str,
    /// Why.
    pub why: &'a str,
    /// When it ended (Unix ms).
    pub now_ms: i64,
    /// When the login is next due.
    pub due_ms: i64,
}

/// A one-time link, as stored (never its token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginLinkRecord {
    /// SHA-256 of the token.
    pub token_hash: Vec<u8>,
    /// The login's tenant.
    pub tenant: String,
    /// The login.
    pub login: String,
    /// `code`, `takeover` or `password`.
    pub kind: String,
    /// The renewal session waiting for a code.
    pub session: Option<String>,
    /// The replica holding that session.
    pub replica: Option<String>,
    /// Unix ms.
    pub created_ms: i64,
    /// Unusable from then on.
    pub expires_ms: i64,
    /// When it was used.
    pub used_ms: Option<i64>,
}

impl Store {
    /// Defines `tenant`'s login `name` (or changes its spec): a new one is
    /// `unchecked`; either way it is due at `now_ms`.
    pub async fn put_site_login(
        &self,
        tenant: &str,
        name: &str,
        spec: &str,
        now_ms: i64,
    ) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query(
                "INSERT INTO site_logins (tenant, name, spec, enabled, state, why, due_ms, updated_ms)
                 VALUES ($1, $2, $3, TRUE, 'unchecked', 'not checked yet', $4, $4)
                 ON CONFLICT (tenant, name) DO UPDATE SET spec = excluded.spec,
                   due_ms = excluded.due_ms, updated_ms = excluded.updated_ms",
            )
            .bind(tenant)
            .bind(name)
            .bind(spec)
            .bind(now_ms)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// `tenant`'s login `name`.
    pub async fn site_login(&self, tenant: &str, name: &str) -> Result<Option<SiteLoginRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT * FROM site_logins WHERE tenant = $1 AND name = $2")
                .bind(tenant)
                .bind(name)
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(login_row).transpose()
        })
    }

    /// `tenant`'s logins by name (every tenant's with `None`).
    pub async fn site_logins(&self, tenant: Option<&str>) -> Result<Vec<SiteLoginRecord>> {
        on_pool!(self, |pool| {
            let rows = sqlx::query(
                "SELECT * FROM site_logins WHERE ($1 IS NULL OR tenant = $1) ORDER BY tenant, name",
            )
            .bind(tenant)
            .fetch_all(pool)
            .await?;
            rows.iter().map(login_row).collect()
        })
    }

    /// Forgets a login; `false` when there was none.
    pub async fn delete_site_login(&self, tenant: &str, name: &str) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query("DELETE FROM site_logins WHERE tenant = $1 AND name = $2")
                .bind(tenant)
                .bind(name)
                .execute(pool)
                .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Turns a login's checks on or off (on: due at `now_ms`); `false` when there is
    /// no such login.
    pub async fn enable_site_login(
        &self,
        tenant: &str,
        name: &str,
        enabled: bool,
        now_ms: i64,
    ) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE site_logins SET enabled = $1, due_ms = $2, updated_ms = $2
                 WHERE tenant = $3 AND name = $4",
            )
            .bind(enabled)
            .bind(now_ms)
            .bind(tenant)
            .bind(name)
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// The logins due by `now_ms` that nobody holds (at most `limit`).
    pub async fn due_site_logins(&self, now_ms: i64, limit: i64) -> Result<Vec<SiteLoginRecord>> {
        on_pool!(self, |pool| {
            let rows = sqlx::query(
                "SELECT * FROM site_logins WHERE enabled AND due_ms <= $1
                   AND (holder IS NULL OR held_until_ms <= $1)
                 ORDER BY due_ms LIMIT $2",
            )
            .bind(now_ms)
            .bind(limit)
            .fetch_all(pool)
            .await?;
            rows.iter().map(login_row).collect()
        })
    }

    /// Takes the check of a login for `holder` until `until_ms`, unless another
    /// holds it (one statement: of two replicas asking at once, one gets it).
    pub async fn claim_site_login(
        &self,
        tenant: &str,
        name: &str,
        holder: &str,
        now_ms: i64,
        until_ms: i64,
    ) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE site_logins SET holder = $1, held_until_ms = $2
                 WHERE tenant = $3 AND name = $4 AND enabled
                   AND (holder IS NULL OR held_until_ms <= $5)",
            )
            .bind(holder)
            .bind(until_ms)
            .bind(tenant)
            .bind(name)
            .bind(now_ms)
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Notes a held login's state while its check runs (`renewing`, or
    /// `needs_user` while a person is asked); `false` unless `holder` holds it.
    pub async fn note_site_login(
        &self,
        tenant: &str,
        name: &str,
        holder: &str,
        state: &str,
        why: &str,
        now_ms: i64,
    ) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE site_logins SET state = $1, why = $2, updated_ms = $3
                 WHERE tenant = $4 AND name = $5 AND holder = $6",
            )
            .bind(state)
            .bind(why)
            .bind(now_ms)
            .bind(tenant)
            .bind(name)
            .bind(holder)
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Extends `holder`'s claim to `until_ms` (a renewal waiting for a person).
    pub async fn extend_site_login(
        &self,
        tenant: &str,
        name: &str,
        holder: &str,
        until_ms: i64,
    ) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE site_logins SET held_until_ms = $1
                 WHERE tenant = $2 AND name = $3 AND holder = $4",
            )
            .bind(until_ms)
            .bind(tenant)
            .bind(name)
            .bind(holder)
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Ends `holder`'s check: the state it found, why, and when it is next due.
    pub async fn finish_site_login(
        &self,
        tenant: &str,
        name: &str,
        holder: &str,
        end: &CheckEnd<'_>,
    ) -> Result<bool> {
        let CheckEnd {
            state,
            why,
            now_ms,
            due_ms,
        } = *end;
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE site_logins SET state = $1, why = $2, checked_ms = $3, updated_ms = $3,
                   due_ms = $4, holder = NULL, held_until_ms = NULL
                 WHERE tenant = $5 AND name = $6 AND holder = $7",
            )
            .bind(state)
            .bind(why)
            .bind(now_ms)
            .bind(due_ms)
            .bind(tenant)
            .bind(name)
            .bind(holder)
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Stores a one-time link (its token's hash only).
    pub async fn insert_login_link(&self, link: &LoginLinkRecord) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query("DELETE FROM login_links WHERE expires_ms <= $1")
                .bind(link.created_ms)
                .execute(pool)
                .await?;
            sqlx::query(
                "INSERT INTO login_links (token_hash, tenant, login, kind, session, replica, created_ms, expires_ms, used_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL)",
            )
            .bind(link.token_hash.as_slice())
            .bind(&link.tenant)
            .bind(&link.login)
            .bind(&link.kind)
            .bind(&link.session)
            .bind(&link.replica)
            .bind(link.created_ms)
            .bind(link.expires_ms)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// The unused, unexpired link of `tenant` whose token hashes to `token_hash`
    /// (for showing its page; using it is [`Store::use_login_link`]).
    pub async fn login_link(
        &self,
        token_hash: &[u8],
        tenant: &str,
        now_ms: i64,
    ) -> Result<Option<LoginLinkRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query(
                "SELECT * FROM login_links WHERE token_hash = $1 AND tenant = $2
                   AND used_ms IS NULL AND expires_ms > $3",
            )
            .bind(token_hash)
            .bind(tenant)
            .bind(now_ms)
            .fetch_optional(pool)
            .await?;
            row.as_ref().map(link_row).transpose()
        })
    }

    /// Uses `tenant`'s link once: the link as it was, or `None` when it is unknown,
    /// another tenant's, used or expired (one answer for all four).
    pub async fn use_login_link(
        &self,
        token_hash: &[u8],
        tenant: &str,
        now_ms: i64,
    ) -> Result<Option<LoginLinkRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query(
                "UPDATE login_links SET used_ms = $1
                 WHERE token_hash = $2 AND tenant = $3 AND used_ms IS NULL AND expires_ms > $1
                 RETURNING *",
            )
            .bind(now_ms)
            .bind(token_hash)
            .bind(tenant)
            .fetch_optional(pool)
            .await?;
            row.as_ref().map(link_row).transpose()
        })
    }

    /// Ends every open link of a login (a new one replaces them, or it is alive).
    pub async fn close_login_links(&self, tenant: &str, login: &str, now_ms: i64) -> Result<u64> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE login_links SET used_ms = $1
                 WHERE tenant = $2 AND login = $3 AND used_ms IS NULL",
            )
            .bind(now_ms)
            .bind(tenant)
            .bind(login)
            .execute(pool)
            .await?;
            Ok(done.rows_affected())
        })
    }
}

fn login_row(r: &impl Fields) -> Result<SiteLoginRecord> {
    Ok(SiteLoginRecord {
        tenant: r.get("tenant")?,
        name: r.get("name")?,
        spec: r.get("spec")?,
        enabled: r.get("enabled")?,
        state: r.get("state")?,
        why: r.get("why")?,
        checked_ms: r.get("checked_ms")?,
        due_ms: r.get("due_ms")?,
        holder: r.get("holder")?,
        held_until_ms: r.get("held_until_ms")?,
        updated_ms: r.get("updated_ms")?,
    })
}

fn link_row(r: &impl Fields) -> Result<LoginLinkRecord> {
    Ok(LoginLinkRecord {
        token_hash: r.get("token_hash")?,
        tenant: r.get("tenant")?,
        login: r.get("login")?,
        kind: r.get("kind")?,
        session: r.get("session")?,
        replica: r.get("replica")?,
        created_ms: r.get("created_ms")?,
        expires_ms: r.get("expires_ms")?,
        used_ms: r.get("used_ms")?,
    })
}
