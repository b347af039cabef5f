//! Places for new browser sessions, taken in the store so that every replica counts
//! the same sessions: a claim checks the caps over every live row and the
//! conversation's existing session, and inserts its row, all under one lock (SQLite's
//! write lock; on Postgres a table lock that conflicts with itself), so two replicas
//! racing for the last place, or for one conversation, cannot both win.

use sqlx::{PgPool, SqlitePool};

use crate::tenants::{bind_live, live_columns, live_values};
use crate::{Backend, Fields, LiveSessionRecord, Result, Store, StoreError};

/// Caps on live sessions, over every replica (`None`: no cap).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClaimCaps {
    /// Per cap user of a tenant.
    pub per_user: Option<u64>,
    /// Per tenant.
    pub per_tenant: Option<u64>,
    /// In all.
    pub total: Option<u64>,
}

/// What a claim got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The row is in: the place is this caller's.
    New,
    /// The conversation (or the home) has a live session already: this one.
    Existing(Box<LiveSessionRecord>),
    /// A cap is full: which (`user`, `tenant`, `total`) and how many it counts.
    Full {
        /// The cap's scope.
        scope: &'static str,
        /// Live sessions in that scope.
        count: u64,
    },
}

const EXISTING: &str = "SELECT * FROM live_sessions
    WHERE tenant = $1 AND user_id = $2 AND conversation = $3 LIMIT 1";
const AT_HOME: &str = "SELECT * FROM live_sessions WHERE tenant = $1 AND home = $2 LIMIT 1";
const COUNTS: &str = "SELECT COUNT(*) AS total,
    COALESCE(SUM(CASE WHEN tenant = $1 THEN 1 ELSE 0 END), 0) AS tenant,
    COALESCE(SUM(CASE WHEN tenant = $1 AND cap_user = $2 THEN 1 ELSE 0 END), 0) AS cap_user
    FROM live_sessions";
const INSERT: &str = concat!(
    "INSERT INTO live_sessions (",
    live_columns!(),
    ", cap_user) VALUES (",
    live_values!(),
    ", $23)"
);

macro_rules! insert {
    ($statement:expr, $live:expr, $cap_user:expr) => {
        bind_live!(sqlx::query($statement), $live).bind($cap_user)
    };
}

impl Store {
    /// Takes a place for the new session `live` (counted against `cap_user`'s cap
    /// when given): its row is inserted unless the conversation or home has a live
    /// session already or a cap is full. Give the place back with `take_live_session`.
    pub async fn claim_session(
        &self,
        live: &LiveSessionRecord,
        cap_user: Option<&str>,
        caps: ClaimCaps,
    ) -> Result<Claimed> {
        match &self.backend {
            Backend::Sqlite(pool) => claim_sqlite(pool, live, cap_user, caps).await,
            Backend::Postgres(pool) => claim_postgres(pool, live, cap_user, caps).await,
        }
    }
}

// The claim itself, once the caller holds the lock, on `$conn` (either backend's
// connection): the conversation's (or home's) existing session, a full cap, or the
// row put in.
macro_rules! claim_locked {
    ($conn:expr, $live:expr, $cap_user:expr, $caps:expr) => {
        async {
            if let (Some(user), Some(conversation)) = (&$live.user_id, &$live.conversation) {
                let row = sqlx::query(EXISTING)
                    .bind(&$live.tenant)
                    .bind(user)
                    .bind(conversation)
                    .fetch_optional(&mut *$conn)
                    .await?;
                if let Some(row) = row {
                    return Ok(Claimed::Existing(Box::new(crate::tenants::live_row(&row)?)));
                }
            }
            if let Some(home) = &$live.home {
                let row = sqlx::query(AT_HOME)
                    .bind(&$live.tenant)
                    .bind(home)
                    .fetch_optional(&mut *$conn)
                    .await?;
                if let Some(row) = row {
                    return Ok(Claimed::Existing(Box::new(crate::tenants::live_row(&row)?)));
                }
            }
            let counts = sqlx::query(COUNTS)
                .bind(&$live.tenant)
                .bind($cap_user)
                .fetch_one(&mut *$conn)
                .await?;
            if let Some(full) = full(&counts, $cap_user, $caps)? {
                return Ok(full);
            }
            insert!(INSERT, $live, $cap_user)
                .execute(&mut *$conn)
                .await?;
            Ok::<_, StoreError>(Claimed::New)
        }
    };
}

async fn claim_sqlite(
    pool: &SqlitePool,
    live: &LiveSessionRecord,
    cap_user: Option<&str>,
    caps: ClaimCaps,
) -> Result<Claimed> {
    let mut conn = pool.acquire().await?;
    // IMMEDIATE takes the write lock now: what is counted is what is there when
    // the row goes in.
    sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
    let claimed = claim_locked!(conn, live, cap_user, caps).await;
    let end = if matches!(claimed, Ok(Claimed::New)) {
        "COMMIT"
    } else {
        "ROLLBACK"
    };
    sqlx::query(end).execute(&mut *conn).await?;
    claimed
}

async fn claim_postgres(
    pool: &PgPool,
    live: &LiveSessionRecord,
    cap_user: Option<&str>,
    caps: ClaimCaps,
) -> Result<Claimed> {
    let mut tx = pool.begin().await?;
    // Claimers queue on this lock (it conflicts with itself); readers take none
    // that conflicts with it. Dropped uncommitted, the transaction rolls back.
    sqlx::query("LOCK TABLE live_sessions IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await?;
    let claimed = claim_locked!(tx, live, cap_user, caps).await?;
    if claimed == Claimed::New {
        tx.commit().await?;
    }
    Ok(claimed)
}

// The first full cap, narrowest first.
fn full(counts: &impl Fields, cap_user: Option<&str>, caps: ClaimCaps) -> Result<Option<Claimed>> {
    let count = |name: &str| -> Result<u64> { Ok(counts.get::<i64>(name)?.max(0) as u64) };
    let scopes = [
        (
            "user",
            caps.per_user.filter(|_| cap_user.is_some()),
            "cap_user",
        ),
        ("tenant", caps.per_tenant, "tenant"),
        ("total", caps.total, "total"),
    ];
    for (scope, cap, column) in scopes {
        if let Some(cap) = cap {
            let count = count(column)?;
            if count >= cap {
                return Ok(Some(Claimed::Full { scope, count }));
            }
        }
    }
    Ok(None)
}
