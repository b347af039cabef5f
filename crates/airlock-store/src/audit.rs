//! The audit log as stored: rows appended one at a time, each chained to the one
//! before it in the same transaction, so two writers (a server and the CLI) cannot
//! interleave a chain.

use airlock_audit::{Hash, Row};
use serde_json::{Map, Value};
use sqlx::Row as _;

use crate::{Result, Store, StoreError};

/// One stored audit event.
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
}

impl AuditRecord {
    /// The part verification reads.
    pub fn row(&self) -> Row {
        Row {
            seq: self.seq,
            body: self.body.clone(),
            chain: self.chain,
        }
    }
}

impl Store {
    /// Appends an event: `fields` must hold `tenant`, `time_ms` and `kind` (and
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

fn record(row: &sqlx::sqlite::SqliteRow) -> Result<AuditRecord> {
    Ok(AuditRecord {
        seq: row.try_get::<i64, _>("seq")? as u64,
        tenant: row.try_get("tenant")?,
        time_ms: row.try_get("time_ms")?,
        kind: row.try_get("kind")?,
        session: row.try_get("session")?,
        body: row.try_get("body")?,
        chain: hash(row.try_get("chain")?)?,
    })
}
