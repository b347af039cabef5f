//! What operators see and decide, scoped to their tenant: held calls (with the
//! outlined screenshot an approver is shown) and the live feed of audit events. The
//! REST API, the console and a webhook read these; the CLI reads the store directly.
//!
//! Every lookup is by (tenant, id): another tenant's approval answers exactly like one
//! that does not exist.

use std::sync::Arc;

use airlock_audit::{self as audit, Event};
use airlock_store::{ApprovalRecord, ApprovalStatus, Decided};

use crate::clock::now_ms;
use crate::error::{Error, Result};

/// What a decision did, for the decider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Recorded; the waiting call sees it within its poll interval.
    Recorded,
    /// Decided already, or expired: its status.
    Closed(ApprovalStatus),
}

/// Held calls and their decisions: the one owner of approvals in a gateway. Reads and
/// decides through the store (any process with the database may decide: the CLI
/// does), and tells calls waiting in this process at once when one is decided here.
pub struct Approvals {
    store: Option<airlock_store::Store>,
    decided: Arc<tokio::sync::Notify>,
}

impl Approvals {
    pub(crate) fn new(store: Option<airlock_store::Store>) -> Approvals {
        Approvals {
            store,
            decided: Arc::default(),
        }
    }

    /// Resolves when an approval is decided in this process (a decision from another
    /// process is seen by a waiting call's poll).
    pub(crate) async fn decided_here(&self) {
        self.decided.notified().await;
    }

    /// Wakes the calls waiting in this process: a decision was just written.
    pub(crate) fn tell_waiters(&self) {
        self.decided.notify_waiters();
    }

    /// The tenant's approvals, newest first, of one status (all when `None`).
    pub async fn list(
        &self,
        tenant: &str,
        status: Option<ApprovalStatus>,
    ) -> Result<Vec<ApprovalRecord>> {
        self.store()?
            .approvals(Some(tenant), status)
            .await
            .map_err(internal)
    }

    /// How many approvals wait for a decision, in every tenant (for `/metrics`, which
    /// shows no tenant).
    pub async fn pending(&self) -> Result<usize> {
        Ok(self
            .store()?
            .approvals(None, Some(ApprovalStatus::Pending))
            .await
            .map_err(internal)?
            .len())
    }

    /// One of the tenant's approvals.
    pub async fn get(&self, tenant: &str, id: &str) -> Result<ApprovalRecord> {
        match self.store()?.approval(id).await.map_err(internal)? {
            Some(a) if a.tenant == tenant => Ok(a),
            _ => Err(no_such_approval(id)),
        }
    }

    /// The screenshot an approver is shown (MIME type, bytes), if one was taken.
    pub async fn screenshot(&self, tenant: &str, id: &str) -> Result<Option<(String, Vec<u8>)>> {
        self.get(tenant, id).await?;
        self.store()?
            .approval_screenshot(id)
            .await
            .map_err(internal)
    }

    /// Approves or denies one of the tenant's pending approvals, as `by` (the
    /// decider's name, on the record), with a note or reason.
    pub async fn decide(
        &self,
        tenant: &str,
        id: &str,
        approve: bool,
        by: &str,
        note: Option<&str>,
    ) -> Result<Decision> {
        self.get(tenant, id).await?;
        let now = crate::clock::now_ms();
        match self
            .store()?
            .decide_approval(id, approve, by, note, now)
            .await
            .map_err(internal)?
        {
            Decided::Done => {
                tracing::info!(approval.id = %id, by, approve, "approval decided");
                self.tell_waiters();
                Ok(Decision::Recorded)
            }
            Decided::NotFound => Err(no_such_approval(id)),
            Decided::Closed(status) => Ok(Decision::Closed(status)),
        }
    }

    fn store(&self) -> Result<&airlock_store::Store> {
        self.store.as_ref().ok_or_else(|| {
            Error::Internal("this gateway keeps no store, so it has no approvals".to_owned())
        })
    }
}

fn no_such_approval(id: &str) -> Error {
    Error::NotFound(format!("no approval has the id {id:?}"))
}

fn internal(e: airlock_store::StoreError) -> Error {
    tracing::error!(error = %e, "the store failed an approvals request");
    Error::Internal("the store could not answer".to_owned())
}

// Approvals whose call will never run close, on the record and on every approver's
// card, so approving one says so rather than answering `approved` for nothing.
impl crate::session::Gateway {
    // Approvals nobody waits on any more (a stateless client that never retried, a
    // gateway that stopped mid-wait) expire, on the record, a while after their time:
    // a waiting call expires its own within a poll.
    pub(crate) async fn expire_overdue_approvals(&self) {
        let Some(store) = self.store() else {
            return;
        };
        let now = now_ms();
        let overdue = match store.expire_overdue(now - 5_000, now).await {
            Ok(overdue) => overdue,
            Err(e) => {
                tracing::warn!(error = %e, "could not expire overdue approvals");
                return;
            }
        };
        self.record_expired(overdue, "nobody was waiting for it any more")
            .await;
    }

    // Puts approvals just closed as expired on the record, saying why.
    pub(crate) async fn record_expired(&self, closed: Vec<ApprovalRecord>, note: &str) {
        for approval in closed {
            self.record_event(
                Some(&approval.tenant),
                Event::ApprovalDecided(audit::ApprovalDecided {
                    approval: approval.id,
                    session: approval.session,
                    tool: approval.tool,
                    status: ApprovalStatus::Expired,
                    by: None,
                    note: Some(note.to_owned()),
                    task: None,
                }),
            )
            .await;
        }
    }
}
