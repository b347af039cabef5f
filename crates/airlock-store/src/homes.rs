//! Agent homes: where a client's agent session lives, so that whichever replica its
//! next request reaches serves the same agent and browser. A home is a stateful MCP
//! session or a stateless client's session URL; callers name it by a digest of that
//! name, never the name itself. The browser session a home has is the live session
//! whose `home` column names it.

use crate::{Fields, LiveSessionRecord, Result, Store, on_pool};

/// One agent home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeRecord {
    /// The digest naming it.
    pub home: String,
    /// Its tenant.
    pub tenant: String,
    /// The caller it belongs to (tenant and key digest): nobody else's requests
    /// reach it.
    pub owner: String,
    /// The nonce of its page fence, the one its client was told.
    pub nonce: String,
    /// What its client said when it began (an MCP session's `initialize`
    /// parameters, JSON), once known.
    pub state: Option<String>,
    /// Unix milliseconds.
    pub created_ms: i64,
    /// When a request last reached it, Unix milliseconds.
    pub used_ms: i64,
}

impl Store {
    /// Makes a home; `false` when one of that name exists (it is left as it is).
    pub async fn insert_home(&self, home: &HomeRecord) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "INSERT INTO agent_homes (home, tenant, owner, nonce, state, created_ms, used_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (home) DO NOTHING",
            )
            .bind(&home.home)
            .bind(&home.tenant)
            .bind(&home.owner)
            .bind(&home.nonce)
            .bind(&home.state)
            .bind(home.created_ms)
            .bind(home.used_ms)
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// One home.
    pub async fn home(&self, home: &str) -> Result<Option<HomeRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT * FROM agent_homes WHERE home = $1")
                .bind(home)
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(home_row).transpose()
        })
    }

    /// Writes what a home's client said when it began; `false` when there is no
    /// such home.
    pub async fn set_home_state(&self, home: &str, state: &str) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query("UPDATE agent_homes SET state = $1 WHERE home = $2")
                .bind(state)
                .bind(home)
                .execute(pool)
                .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Notes that a request reached a home at `now_ms`.
    pub async fn touch_home(&self, home: &str, now_ms: i64) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query("UPDATE agent_homes SET used_ms = $1 WHERE home = $2 AND used_ms < $1")
                .bind(now_ms)
                .bind(home)
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    /// Removes a home; `true` for the one caller whose delete took it.
    pub async fn take_home(&self, home: &str) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query("DELETE FROM agent_homes WHERE home = $1")
                .bind(home)
                .execute(pool)
                .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Removes the homes no request reached since `before_ms` and with no live
    /// browser session; how many went.
    pub async fn drop_unused_homes(&self, before_ms: i64) -> Result<u64> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "DELETE FROM agent_homes WHERE used_ms < $1 AND NOT EXISTS
                   (SELECT 1 FROM live_sessions WHERE live_sessions.home = agent_homes.home)",
            )
            .bind(before_ms)
            .execute(pool)
            .await?;
            Ok(done.rows_affected())
        })
    }

    /// The live browser session of `tenant`'s home `home`, if it has one.
    pub async fn live_session_at_home(
        &self,
        tenant: &str,
        home: &str,
    ) -> Result<Option<LiveSessionRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query(
                "SELECT * FROM live_sessions WHERE tenant = $1 AND home = $2 ORDER BY opened_ms LIMIT 1",
            )
            .bind(tenant)
            .bind(home)
            .fetch_optional(pool)
            .await?;
            row.as_ref().map(crate::tenants::live_row).transpose()
        })
    }

    /// Makes a live session the browser session of `home`; `false` when it has no
    /// row (it ended).
    pub async fn set_live_home(&self, id: &str, home: &str) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query("UPDATE live_sessions SET home = $1 WHERE id = $2")
                .bind(home)
                .bind(id)
                .execute(pool)
                .await?;
            Ok(done.rows_affected() == 1)
        })
    }
}

fn home_row(r: &impl Fields) -> Result<HomeRecord> {
    Ok(HomeRecord {
        home: r.get("home")?,
        tenant: r.get("tenant")?,
        owner: r.get("owner")?,
        nonce: r.get("nonce")?,
        state: r.get("state")?,
        created_ms: r.get("created_ms")?,
        used_ms: r.get("used_ms")?,
    })
}
