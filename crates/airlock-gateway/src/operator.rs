//! What an operator reads besides approvals (the console's pages): a tenant's audit
//! events with filters, the state of the whole chain, and the names of its secrets.
//! Every read is scoped to the operator's tenant; nothing here returns a secret value.

use airlock_store::AuditRecord;

use crate::Gateway;
use crate::error::{Error, Result};

/// Most events one audit query scans (newest first).
const SCANNED: u32 = 20_000;

/// Which audit events to show.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Only this browser session's.
    pub session: Option<String>,
    /// Only calls of this tool.
    pub tool: Option<String>,
    /// Only events whose `decision` is this (`allow`, `deny`, `approve` …).
    pub decision: Option<String>,
    /// Only events of these kinds (`task_started` …); every kind when empty.
    pub kinds: Vec<String>,
    /// Only the events of this server-side task: its own, its steps' calls and the
    /// approvals they were held for.
    pub task: Option<String>,
    /// Only events at or after this time (Unix ms).
    pub since_ms: Option<i64>,
    /// At most this many (newest first).
    pub limit: usize,
}

/// A secret as the console shows it: never a value.
#[derive(Debug, Clone)]
pub struct SecretInfo {
    /// Its name.
    pub name: String,
    /// The origins it may be typed into.
    pub origins: Vec<String>,
    /// The names of its fields.
    pub fields: Vec<String>,
    /// When it was last written (Unix s).
    pub updated_at: i64,
    /// When a session last used it, as the audit log says (Unix ms).
    pub last_used_ms: Option<i64>,
}

/// What verifying the audit chain found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainStatus {
    /// Every event is in place and chained to the one before.
    Intact {
        /// How many of the asking tenant's events (the chain holds every tenant's; a
        /// tenant learns nothing of the others' traffic from it).
        events: u64,
    },
    /// The chain breaks: what `airlock audit verify` would say.
    Broken(String),
}

impl Gateway {
    /// `tenant`'s audit events that pass `filter`, newest first.
    pub async fn audit_events(
        &self,
        tenant: &str,
        filter: &AuditFilter,
    ) -> Result<Vec<AuditRecord>> {
        let store = self.store().ok_or_else(no_store)?;
        let rows = store.audit_tail(SCANNED).await.map_err(internal)?;
        let mut out = Vec::new();
        for row in rows.into_iter().rev() {
            if out.len() >= filter.limit.max(1) {
                break;
            }
            if row.tenant != tenant || filter.since_ms.is_some_and(|t| row.time_ms < t) {
                continue;
            }
            if let Some(session) = &filter.session
                && row.session.as_deref() != Some(session.as_str())
            {
                continue;
            }
            if !filter.kinds.is_empty() && !filter.kinds.contains(&row.kind) {
                continue;
            }
            if filter.tool.is_some() || filter.decision.is_some() || filter.task.is_some() {
                let entry = airlock_audit::Entry::parse(&row.body).ok();
                let event = entry.as_ref().map(|e| &e.event);
                if filter.task.is_some()
                    && event.and_then(airlock_audit::Event::task) != filter.task.as_deref()
                {
                    continue;
                }
                let tool = event.and_then(airlock_audit::Event::tool);
                let decision = event
                    .and_then(airlock_audit::Event::call)
                    .and_then(|c| c.decision.as_deref());
                if filter.tool.is_some() && tool != filter.tool.as_deref() {
                    continue;
                }
                if filter.decision.is_some() && decision != filter.decision.as_deref() {
                    continue;
                }
            }
            out.push(row);
        }
        Ok(out)
    }

    /// Whether the whole audit chain (every tenant's: it is one chain) is intact,
    /// counting `tenant`'s events in it.
    pub async fn audit_chain(&self, tenant: &str) -> Result<ChainStatus> {
        let store = self.store().ok_or_else(no_store)?;
        let records = store.audit_events(0, u32::MAX).await.map_err(internal)?;
        let own = records.iter().filter(|r| r.tenant == tenant).count() as u64;
        let rows: Vec<airlock_audit::Row> = records.iter().map(AuditRecord::row).collect();
        Ok(match airlock_audit::verify(&rows, &[]) {
            Ok(_) => ChainStatus::Intact { events: own },
            Err(broken) => ChainStatus::Broken(broken.to_string()),
        })
    }

    /// The stored screenshot of the step audit event `seq` (of `tenant`) recorded, if
    /// it is still there and still the image whose SHA-256 the event holds.
    pub async fn recorded_image(&self, tenant: &str, seq: u64) -> Result<Option<Vec<u8>>> {
        if !self.recordings.kept() {
            return Ok(None);
        }
        let store = self.store().ok_or_else(no_store)?;
        let rows = store
            .audit_events(seq.saturating_sub(1), 1)
            .await
            .map_err(internal)?;
        let Some(row) = rows
            .into_iter()
            .find(|r| r.seq == seq && r.tenant == tenant)
        else {
            return Ok(None);
        };
        let Ok(airlock_audit::Entry {
            event:
                airlock_audit::Event::ToolCall(airlock_audit::CallDone {
                    recording: Some(airlock_audit::Recording::Stored { file, sha256, .. }),
                    ..
                }),
            ..
        }) = airlock_audit::Entry::parse(&row.body)
        else {
            return Ok(None);
        };
        Ok(self.recordings.image(&file, &sha256).await)
    }

    /// `tenant`'s secrets: names, origins, fields, and when the log last saw one used.
    pub async fn secret_infos(&self, tenant: &str) -> Result<Vec<SecretInfo>> {
        let store = self.store().ok_or_else(no_store)?;
        let records = store.secrets(Some(tenant)).await.map_err(internal)?;
        let mut used = std::collections::HashMap::new();
        for row in store.audit_tail(SCANNED).await.map_err(internal)? {
            if row.tenant != tenant {
                continue;
            }
            let Ok(entry) = airlock_audit::Entry::parse(&row.body) else {
                continue;
            };
            for name in secret_names(&entry.event, &row.body) {
                let at = used.entry(name).or_insert(row.time_ms);
                *at = (*at).max(row.time_ms);
            }
        }
        Ok(records
            .into_iter()
            .map(|r| SecretInfo {
                last_used_ms: used.get(&r.name).copied(),
                name: r.name,
                origins: r.origins,
                fields: r.fields,
                updated_at: r.updated_at,
            })
            .collect())
    }
}

// The secret names an audit event says were used: a session's loaded `credentials`,
// and the placeholders (`{{secret:name.field}}`) a call's arguments held.
// The secrets an event names: those a session loaded or was refused, and every
// placeholder in its text.
fn secret_names(event: &airlock_audit::Event, text: &str) -> Vec<String> {
    use airlock_audit::Event;
    let mut out = match event {
        Event::SessionOpen(s) | Event::SessionClose(s) => s.credentials.clone().unwrap_or_default(),
        Event::CredentialRefusal(c) => c.credentials.clone(),
        _ => Vec::new(),
    };
    for (at, _) in text.match_indices("{{secret:") {
        let rest = &text[at + 9..];
        let end = rest.find(['.', '}', '"']).unwrap_or(rest.len());
        if end > 0 {
            out.push(rest[..end].to_owned());
        }
    }
    out
}

fn no_store() -> Error {
    Error::Internal("this gateway keeps no store".to_owned())
}

fn internal(e: airlock_store::StoreError) -> Error {
    tracing::error!(error = %e, "the store failed an operator's read");
    Error::Internal("the store could not answer".to_owned())
}
