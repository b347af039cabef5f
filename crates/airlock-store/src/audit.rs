//! The audit log as stored, on either backend: rows appended one at a time, each
//! chained to the one before it in the same transaction, so two writers (a server and
//! the CLI, or replicas sharing Postgres) cannot interleave a chain.

use airlock_audit::{Hash, Row};
use serde_json::{Map, Value};

use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;

use crate::{Backend, Fields, Result, Store, StoreError, on_pool};

/// One stored audit event. `tenant`, `time_ms`, `kind` and `session` are read from
/// its hashed body, never from the columns the store filters on: an edit of a column
/// alone cannot move an event into another tenant's view (and `verify` names it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// Its position, from 1.
    pub seq: u64,
    /// Its tenant.
    pub tenant: String,
    /// When, in Unix milliseconds.
    pub time_ms: i64,
    /// What kind of event (`tool_call`, `session_open` …).
    pub kind: String,
    /// The browser session it concerns, if any.
    pub session: Option<String>,
    /// Its canonical JSON.
    pub body: String,
    /// Its chain hash.
    pub chain: Hash,
    /// The columns as stored, for verification.
    columns: Columns,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Columns {
    tenant: String,
    time_ms: i64,
    kind: String,
    session: Option<String>,
}

impl AuditRecord {
    /// The part verification reads: the body, its chain, and the columns kept beside
    /// it (each must say what the body says).
    pub fn row(&self) -> Row {
        let c = &self.columns;
        Row {
            seq: self.seq,
            body: self.body.clone(),
            chain: self.chain,
            columns: vec![
                ("tenant", Value::from(c.tenant.clone())),
                ("time_ms", Value::from(c.time_ms)),
                ("kind", Value::from(c.kind.clone())),
                (
                    "session",
                    c.session.clone().map_or(Value::Null, Value::from),
                ),
            ],
        }
    }
}

impl Store {
    /// Appends a typed event. Durable when this returns.
    pub async fn append_event(&self, entry: &airlock_audit::Entry) -> Result<AuditRecord> {
        self.append_audit(&entry.fields()).await
    }

    /// Appends an event's fields (an [`airlock_audit::Entry`] a writer has redacted):
    /// `fields` must hold `tenant`, `time_ms` and `kind` (and
    /// `session` when it concerns one). Durable when this returns. Appends are
    /// serialised across every process writing the store (a server, the CLI, other
    /// replicas on Postgres): each row is chained to the one before it in the same
    /// transaction, which holds the writers' lock.
    pub async fn append_audit(&self, fields: &Map<String, Value>) -> Result<AuditRecord> {
        let text = |key: &str| fields.get(key).and_then(Value::as_str).map(str::to_owned);
        let columns = Columns {
            tenant: text("tenant").ok_or_else(|| missing("tenant"))?,
            kind: text("kind").ok_or_else(|| missing("kind"))?,
            time_ms: fields
                .get("time_ms")
                .and_then(Value::as_i64)
                .ok_or_else(|| missing("time_ms"))?,
            session: text("session"),
        };
        match &self.backend {
            Backend::Sqlite(pool) => append_sqlite(pool, fields, columns).await,
            Backend::Postgres(pool) => append_postgres(pool, fields, columns).await,
        }
    }

    /// Events after `after` (0: from the first), at most `limit`, oldest first.
    pub async fn audit_events(&self, after: u64, limit: u32) -> Result<Vec<AuditRecord>> {
        const AFTER: &str = "SELECT seq, tenant, time_ms, kind, session, body, chain
            FROM audit_events WHERE seq > $1 ORDER BY seq LIMIT $2";
        on_pool!(self, |pool| {
            let rows = sqlx::query(AFTER)
                .bind(after as i64)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?;
            rows.iter().map(record).collect()
        })
    }

    /// The last `n` events, oldest first.
    pub async fn audit_tail(&self, n: u32) -> Result<Vec<AuditRecord>> {
        const TAIL: &str = "SELECT seq, tenant, time_ms, kind, session, body, chain
            FROM audit_events ORDER BY seq DESC LIMIT $1";
        let mut records: Vec<AuditRecord> = on_pool!(self, |pool| {
            let rows = sqlx::query(TAIL).bind(i64::from(n)).fetch_all(pool).await?;
            rows.iter().map(record).collect::<Result<_>>()?
        });
        records.reverse();
        Ok(records)
    }
}

// The same statements serve both backends: `$n` parameters read as positional in
// SQLite too.
const LAST: &str = "SELECT seq, chain FROM audit_events ORDER BY seq DESC LIMIT 1";
const INSERT: &str = "INSERT INTO audit_events (seq, tenant, time_ms, kind, session, body, chain)
    VALUES ($1, $2, $3, $4, $5, $6, $7)";

// The insert of row `seq`, bound for whichever backend executes it.
macro_rules! insert {
    ($seq:expr, $columns:expr, $row:expr) => {
        sqlx::query(INSERT)
            .bind($seq as i64)
            .bind(&$columns.tenant)
            .bind($columns.time_ms)
            .bind(&$columns.kind)
            .bind(&$columns.session)
            .bind(&$row.body)
            .bind($row.chain.as_slice())
    };
}

async fn append_sqlite(
    pool: &SqlitePool,
    fields: &Map<String, Value>,
    columns: Columns,
) -> Result<AuditRecord> {
    let mut conn = pool.acquire().await?;
    // IMMEDIATE takes the write lock now: the row read below is still the last one
    // when this one is written after it.
    sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
    let written = async {
        let last = sqlx::query(LAST).fetch_optional(&mut *conn).await?;
        let (seq, row) = next(last.as_ref(), fields)?;
        insert!(seq, &columns, &row).execute(&mut *conn).await?;
        Ok::<_, StoreError>(appended(seq, row, columns))
    }
    .await;
    match written {
        Ok(record) => {
            sqlx::query("COMMIT").execute(&mut *conn).await?;
            Ok(record)
        }
        Err(e) => {
            let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
            Err(e)
        }
    }
}

/// The advisory lock every appender of the audit log takes (an arbitrary constant,
/// the same in every replica: "airlock audit" in ASCII, cut to 63 bits).
const AUDIT_APPEND_LOCK: i64 = 0x6169_726c_6f63_6b61;

async fn append_postgres(
    pool: &PgPool,
    fields: &Map<String, Value>,
    columns: Columns,
) -> Result<AuditRecord> {
    let mut tx = pool.begin().await?;
    // Appenders queue on this lock until the holder commits; readers take none. An
    // advisory lock, not a table lock: locking the table that way needs the right to
    // update or delete its rows, which the serving role does not have.
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(AUDIT_APPEND_LOCK)
        .execute(&mut *tx)
        .await?;
    let last = sqlx::query(LAST).fetch_optional(&mut *tx).await?;
    let (seq, row) = next(last.as_ref(), fields)?;
    insert!(seq, &columns, &row).execute(&mut *tx).await?;
    crate::wakeups::notify(&mut *tx, crate::wakeups::AUDIT_CHANNEL).await?;
    tx.commit().await?;
    Ok(appended(seq, row, columns))
}

// The row after `last` (the newest stored row; none: this is the first).
fn next(last: Option<&impl Fields>, fields: &Map<String, Value>) -> Result<(u64, Row)> {
    let (seq, previous) = match last {
        None => (1, [0u8; 32]),
        Some(last) => (
            last.get::<i64>("seq")? as u64 + 1,
            hash(last.get("chain")?)?,
        ),
    };
    Ok((seq, Row::new(seq, fields, &previous)))
}

fn appended(seq: u64, row: Row, columns: Columns) -> AuditRecord {
    AuditRecord {
        seq,
        tenant: columns.tenant.clone(),
        time_ms: columns.time_ms,
        kind: columns.kind.clone(),
        session: columns.session.clone(),
        body: row.body,
        chain: row.chain,
        columns,
    }
}

fn missing(field: &str) -> StoreError {
    StoreError::Corrupt(format!("an audit event needs `{field}`"))
}

fn hash(bytes: Vec<u8>) -> Result<Hash> {
    bytes
        .try_into()
        .map_err(|_| StoreError::Corrupt("an audit chain hash is not 32 bytes".to_owned()))
}

// A stored row as readers see it: what it says of itself from its body; the columns
// kept only to be checked against it. Either backend's row.
fn record(row: &impl Fields) -> Result<AuditRecord> {
    let columns = Columns {
        tenant: row.get("tenant")?,
        time_ms: row.get("time_ms")?,
        kind: row.get("kind")?,
        session: row.get("session")?,
    };
    let body: String = row.get("body")?;
    let fields: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let text = |key: &str| fields[key].as_str().map(str::to_owned);
    Ok(AuditRecord {
        seq: row.get::<i64>("seq")? as u64,
        tenant: text("tenant").unwrap_or_default(),
        time_ms: fields["time_ms"].as_i64().unwrap_or_default(),
        kind: text("kind").unwrap_or_default(),
        session: text("session"),
        body,
        chain: hash(row.get("chain")?)?,
        columns,
    })
}
