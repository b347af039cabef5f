//! Homes: where a client's agent session lives, so that on a shared store the next
//! request of a stateful MCP session (`Mcp-Session-Id`) or of a stateless client's
//! session URL may reach any replica and find the same agent: its owner, the nonce
//! of its page fence, and its browser session (the live session whose row names the
//! home, adopted like any other).
//!
//! A home is named by the SHA-256 of its kind and name (`home_name.rs`):
//! the store never holds a session id or a session URL. Without a shared store there
//! are no homes and an agent lives in its replica's memory alone.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use airlock_store::HomeRecord;

use crate::Gateway;
use crate::clock::now_ms;
use crate::content::PageFence;
use crate::error::{Error, Result};
use crate::session::AgentSession;
use crate::sessions::{Lease, Principal};
use crate::surface::Surface;

/// How long a home no request reached, and with no live browser session, is kept.
pub const HOME_KEPT: Duration = Duration::from_secs(24 * 3600);
/// How often, at most, a home's use is written.
const TOUCH_EVERY_MS: i64 = 60_000;
/// How often, at most, a replica removes unused homes.
const SWEEP_EVERY_MS: i64 = 60_000;

/// A home as a request finds it.
#[derive(Debug, Clone)]
pub struct Home {
    /// The caller it belongs to ([`Principal::caller`]).
    pub owner: String,
    /// Its page fence, with the nonce its client was told.
    pub fence: PageFence,
    /// What its client said when it began, if written.
    pub state: Option<String>,
}

impl Gateway {
    /// Whether agents have homes here: only on a store other replicas share.
    pub fn has_homes(&self) -> bool {
        self.shared_store().is_some()
    }

    /// Makes `home` for `owner`, with the nonce of `fence`. Does nothing without a
    /// shared store.
    pub async fn make_home(&self, home: &str, owner: &Principal, fence: &PageFence) -> Result<()> {
        let Some(store) = self.shared_store() else {
            return Ok(());
        };
        let now = now_ms();
        let record = HomeRecord {
            home: home.to_owned(),
            tenant: owner.tenant.clone(),
            owner: owner.caller(),
            nonce: fence.nonce().to_owned(),
            state: None,
            created_ms: now,
            used_ms: now,
        };
        store.insert_home(&record).await.map_err(unanswered)?;
        Ok(())
    }

    /// `home`, if it exists (`None` also without a shared store). A home last
    /// reached a while ago is noted as reached now.
    pub async fn find_home(&self, home: &str) -> Result<Option<Home>> {
        let Some(store) = self.shared_store() else {
            return Ok(None);
        };
        let Some(record) = store.home(home).await.map_err(unanswered)? else {
            return Ok(None);
        };
        let now = now_ms();
        if now - record.used_ms >= TOUCH_EVERY_MS
            && let Err(e) = store.touch_home(home, now).await
        {
            tracing::warn!(error = %e, "could not note a home's use");
        }
        Ok(Some(Home {
            owner: record.owner,
            fence: PageFence::with_nonce(&record.nonce).unwrap_or_default(),
            state: record.state,
        }))
    }

    /// Writes what `home`'s client said when it began.
    pub async fn set_home_state(&self, home: &str, state: &str) -> Result<()> {
        if let Some(store) = self.shared_store()
            && !store
                .set_home_state(home, state)
                .await
                .map_err(unanswered)?
        {
            return Err(Error::NoSuchSession);
        }
        Ok(())
    }

    /// Ends `home` for good (its client closed it), on whichever replica: the home
    /// goes, and its browser session ends on the record, once.
    pub async fn end_home(&self, home: &str) -> Result<()> {
        let Some(store) = self.shared_store() else {
            return Ok(());
        };
        let Some(record) = store.home(home).await.map_err(unanswered)? else {
            return Ok(());
        };
        store.take_home(home).await.map_err(unanswered)?;
        let Some(row) = store
            .live_session_at_home(&record.tenant, home)
            .await
            .map_err(unanswered)?
        else {
            return Ok(());
        };
        match self.find_lease(&record.tenant, &row.id).await {
            Ok(lease) => {
                self.sessions
                    .close(&lease, crate::sessions::End::Closed)
                    .await;
            }
            // Served only where its secrets are known: ended here on the record, and
            // its browser closed on its worker; that replica finds it gone.
            Err(_) => {
                if self.end_gone_row(&row, "closed by its client").await
                    && let Some((address, on_worker, key)) = crate::adoption::on_worker(&row)
                    && let Ok(session) = self.host.attach(address, on_worker, &key).await
                {
                    session.close().await;
                }
            }
        }
        Ok(())
    }

    /// A new agent session living at `home` (on a shared store; elsewhere an agent
    /// like any other).
    pub fn homed_agent(
        self: &Arc<Self>,
        principal: Principal,
        surface: Surface,
        fence: PageFence,
        home: &str,
    ) -> AgentSession {
        let agent = self.agent_session_fenced(principal, surface, fence);
        if self.has_homes() {
            agent.set_home(home);
        }
        agent
    }

    /// The browser session of `tenant`'s `home`, served from here (adopted when
    /// another replica opened it); `None` when it has none.
    pub(crate) async fn lease_at_home(
        &self,
        tenant: &str,
        home: &str,
    ) -> Result<Option<Arc<Lease>>> {
        let Some(store) = self.shared_store() else {
            return Ok(None);
        };
        let Some(row) = store
            .live_session_at_home(tenant, home)
            .await
            .map_err(unanswered)?
        else {
            return Ok(None);
        };
        match self.find_lease(tenant, &row.id).await {
            Ok(lease) => Ok(Some(lease)),
            Err(Error::NoSuchSession) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Notes on the store that `lease` is the browser session of `home`.
    pub(crate) async fn house(&self, lease: &Lease, home: &str) {
        if let Some(store) = self.shared_store()
            && let Err(e) = store.set_live_home(lease.id.as_str(), home).await
        {
            tracing::warn!(error = %e, "could not note a session's home");
        }
    }

    /// Removes homes nobody reached for [`HOME_KEPT`] that have no browser session
    /// (at most once a minute per replica).
    pub(crate) async fn sweep_homes(&self) {
        let Some(store) = self.shared_store() else {
            return;
        };
        let now = now_ms();
        let last = self.homes_swept.load(Ordering::Relaxed);
        if now - last < SWEEP_EVERY_MS {
            return;
        }
        self.homes_swept.store(now, Ordering::Relaxed);
        let before = now - HOME_KEPT.as_millis() as i64;
        match store.drop_unused_homes(before).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(homes = n, "removed agent homes nobody used for a day"),
            Err(e) => tracing::warn!(error = %e, "could not remove unused agent homes"),
        }
    }
}

fn unanswered(e: airlock_store::StoreError) -> Error {
    tracing::error!(error = %e, "the store failed a homes request");
    Error::Internal("the store could not answer".to_owned())
}
