//! The audit log as stored: rows appended one at a time, each chained to the one
//! before it in the same transaction, so two writers (a server and the CLI) cannot
//! interleave a chain.

use airlock_audit::{Hash, Row};
use serde_json::{Map, Value};
use sqlx::Row as _;

use crate::{Result, Store, StoreError};

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
    /// `session` when it concerns one). Durable when this returns.
    pub async fn append_audit(&self, fields: &Map<String, Value>) -> Result<AuditRecord> {
        let text = |key: &str| fields.get(key).and_then(Value::as_str).map(str::to_owned);
        let tenant = text("tenant").ok_or_else(|| missing("tenant"))?;
        let kind = text("kind").ok_or_else(|| missing("kind"))?;
        let time_ms = fields
            .get("time_ms")
            .and_then(Value::as_i64)
            .ok_or_else(|| missing("time_ms"))?;
        let session = text("session");
        let mut conn = self.pool().acquire().await?;
        // IMMEDIATE takes the write lock now: the row read below is still the last one
        // when this one is written after it.
        sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
        let written = async {
            let last = sqlx::query("SELECT seq, chain FROM audit_events ORDER BY seq DESC LIMIT 1")
                .fetch_optional(&mut *conn)
                .await?;
            let (seq, previous) = match last {
                None => (1, [0u8; 32]),
                Some(row) => (
                    row.try_get::<i64, _>(0)? as u64 + 1,
                    hash(row.try_get::<Vec<u8>, _>(1)?)?,
                ),
            };
            let row = Row::new(seq, fields, &previous);
            sqlx::query(
                "INSERT INTO audit_events (seq, tenant, time_ms, kind, session, body, chain)
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(seq as i64)
            .bind(&tenant)
            .bind(time_ms)
            .bind(&kind)
            .bind(&session)
            .bind(&row.body)
            .bind(row.chain.as_slice())
            .execute(&mut *conn)
            .await?;
            Ok::<_, StoreError>(AuditRecord {
                seq,
                tenant: tenant.clone(),
                time_ms,
                kind: kind.clone(),
                session: session.clone(),
                body: row.body,
                chain: row.chain,
                columns: Columns {
                    tenant: tenant.clone(),
                    time_ms,
                    kind: kind.clone(),
                    session: session.clone(),
                },
            })
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

    /// Events after `after` (0: from the first), at most `limit`, oldest first.
    pub async fn audit_events(&self, after: u64, limit: u32) -> Result<Vec<AuditRecord>> {
        let rows = sqlx::query(
            "SELECT seq, tenant, time_ms, kind, session, body, chain FROM audit_events
             WHERE seq > ? ORDER BY seq LIMIT ?",
        )
        .bind(after as i64)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(record).collect()
    }

    /// The last `n` events, oldest first.
    pub async fn audit_tail(&self, n: u32) -> Result<Vec<AuditRecord>> {
        let rows = sqlx::query(
            "SELECT seq, tenant, time_ms, kind, session, body, chain FROM audit_events
             ORDER BY seq DESC LIMIT ?",
        )
        .bind(i64::from(n))
        .fetch_all(self.pool())
        .await?;
        let mut records: Vec<AuditRecord> = rows.iter().map(record).collect::<Result<_>>()?;
        records.reverse();
        Ok(records)
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
// kept only to be checked against it.
fn record(row: &sqlx::sqlite::SqliteRow) -> Result<AuditRecord> {
    let columns = Columns {
        tenant: row.try_get("tenant")?,
        time_ms: row.try_get("time_ms")?,
        kind: row.try_get("kind")?,
        session: row.try_get("session")?,
    };
    let body: String = row.try_get("body")?;
    let fields: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let text = |key: &str| fields[key].as_str().map(str::to_owned);
    Ok(AuditRecord {
        seq: row.try_get::<i64, _>("seq")? as u64,
        tenant: text("tenant").unwrap_or_default(),
        time_ms: fields["time_ms"].as_i64().unwrap_or_default(),
        kind: text("kind").unwrap_or_default(),
        session: text("session"),
        body,
        chain: hash(row.try_get("chain")?)?,
        columns,
    })
}
