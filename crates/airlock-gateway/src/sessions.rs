//! The lease registry: every open browser session is a lease with an id and an owner.
//!
//! An agent session (an MCP connection, a stateless session URL, a browser-shell id)
//! names a lease; the registry owns it. The reaper walks leases, not agents; counting
//! and listing sessions read the registry and never wait on a session's lock. A lease
//! is entered for each call and may end (idle, closed, lost) only while no call is in
//! it: both happen under the lease's own small lock, so the reaper cannot close a
//! browser under a call that has started.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_browser::Session;
use airlock_core::Role;
use airlock_core::sync::lock;
use airlock_egress::EgressProxy;
use airlock_policy::Policy;
use tokio::time::Instant;

use crate::credentials::Loaded;
use crate::error::{Error, Result};

/// A lease's id: 128 random bits in hex, unguessable, so an id names a session to
/// whoever holds it and to nobody else.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(String);

impl SessionId {
    pub(crate) fn random() -> Result<SessionId> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)
            .map_err(|e| Error::Internal(format!("no randomness for a session id: {e}")))?;
        Ok(SessionId(
            bytes.iter().map(|b| format!("{b:02x}")).collect(),
        ))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who a call comes from: what a lease's owner is, and what admission checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The tenant whose policy, vault and sessions the caller uses.
    pub tenant: String,
    /// What the caller may do.
    pub role: Role,
    /// A digest naming the caller's credentials (never the credentials), when it
    /// authenticated; `None` for the local stdio user.
    pub key: Option<String>,
}

impl Principal {
    /// What names this caller among others: its tenant and key. Callers without a
    /// key (no auth configured: the local user) are one caller per tenant.
    pub fn caller(&self) -> String {
        format!(
            "{}/{}",
            self.tenant,
            self.key.as_deref().unwrap_or("anonymous")
        )
    }
}

/// A browser session and the egress proxy all its connections go through; they live
/// and die together.
pub(crate) struct Held {
    pub(crate) session: Session,
    pub(crate) proxy: EgressProxy,
    /// The tenant policy, narrowed by the session's own allowlist if it gave one.
    pub(crate) policy: Arc<Policy>,
    /// Credentials the session loaded, and the redactor for its outputs.
    pub(crate) loaded: Loaded,
}

impl std::ops::Deref for Held {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.session
    }
}

/// How a lease ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// `browser_session_close`, the agent going away, or shutdown.
    Closed,
    /// Idle past the TTL: the next call of its agent says so once.
    Expired,
    /// Its browser died: the next call opens a fresh one.
    Lost,
}

struct State {
    busy: usize,
    last_used: Instant,
    ended: Option<End>,
}

/// One open browser session, its owner and its use.
pub(crate) struct Lease {
    pub(crate) id: SessionId,
    pub(crate) owner: Principal,
    pub(crate) held: Arc<Held>,
    pub(crate) created: Instant,
    state: Mutex<State>,
}

impl Lease {
    /// Enters the lease for one call: refused once it ended. The guard leaves it.
    pub(crate) fn enter(self: &Arc<Self>) -> std::result::Result<InUse, End> {
        let mut state = lock(&self.state);
        if let Some(end) = state.ended {
            return Err(end);
        }
        state.busy += 1;
        state.last_used = Instant::now();
        Ok(InUse(self.clone()))
    }

    /// Ends the lease if no call is in it (`None` when one is, or it already ended).
    fn end_if_idle(&self, end: End, idle_for: Duration) -> Option<Duration> {
        let mut state = lock(&self.state);
        let idle = state.last_used.elapsed();
        if state.ended.is_some() || state.busy > 0 || idle < idle_for {
            return None;
        }
        state.ended = Some(end);
        Some(idle)
    }

    /// Ends the lease now, whatever is in it (a call in flight fails on its closed
    /// browser). Returns whether this call ended it.
    pub(crate) fn end(&self, end: End) -> bool {
        let mut state = lock(&self.state);
        if state.ended.is_some() {
            return false;
        }
        state.ended = Some(end);
        true
    }

    /// How it ended, if it did.
    pub(crate) fn ended(&self) -> Option<End> {
        lock(&self.state).ended
    }
}

/// A call inside a lease; leaving marks the lease used now.
pub(crate) struct InUse(Arc<Lease>);

impl std::ops::Deref for InUse {
    type Target = Lease;

    fn deref(&self) -> &Lease {
        &self.0
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.busy -= 1;
        state.last_used = Instant::now();
    }
}

/// What a lease looks like from outside (diagnostics, the console, REST).
#[derive(Debug, Clone)]
pub struct LeaseInfo {
    /// Its id.
    pub id: SessionId,
    /// Its owner.
    pub owner: Principal,
    /// Since it was opened.
    pub age: Duration,
    /// Since a call last left it (zero while one is in it).
    pub idle: Duration,
    /// Calls in it now.
    pub busy: usize,
    /// Whether it runs in a Chromium of its own.
    pub dedicated: bool,
}

/// The registry: every open lease by id.
#[derive(Default)]
pub(crate) struct Sessions {
    leases: Mutex<HashMap<SessionId, Arc<Lease>>>,
    open: AtomicUsize,
}

impl Sessions {
    /// Registers a new lease over `held`, owned by `owner`.
    pub(crate) fn insert(&self, owner: Principal, held: Arc<Held>) -> Result<Arc<Lease>> {
        let now = Instant::now();
        let lease = Arc::new(Lease {
            id: SessionId::random()?,
            owner,
            held,
            created: now,
            state: Mutex::new(State {
                busy: 0,
                last_used: now,
                ended: None,
            }),
        });
        lock(&self.leases).insert(lease.id.clone(), lease.clone());
        self.open.fetch_add(1, Ordering::AcqRel);
        Ok(lease)
    }

    /// Removes a lease from the registry (it must have ended); closing its browser
    /// is the caller's.
    pub(crate) fn remove(&self, id: &SessionId) -> Option<Arc<Lease>> {
        let removed = lock(&self.leases).remove(id);
        if removed.is_some() {
            self.open.fetch_sub(1, Ordering::AcqRel);
        }
        removed
    }

    /// Ends `lease` as `end` and takes it out of the registry; closes its browser.
    pub(crate) async fn close(&self, lease: &Arc<Lease>, end: End) {
        if lease.end(end) {
            self.remove(&lease.id);
            lease.held.close().await;
        }
    }

    /// Open leases, without waiting on any of them.
    pub(crate) fn count(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Every open lease, as seen now.
    pub(crate) fn list(&self) -> Vec<LeaseInfo> {
        let leases: Vec<Arc<Lease>> = lock(&self.leases).values().cloned().collect();
        let mut out: Vec<LeaseInfo> = leases
            .iter()
            .map(|lease| {
                let state = lock(&lease.state);
                LeaseInfo {
                    id: lease.id.clone(),
                    owner: lease.owner.clone(),
                    age: lease.created.elapsed(),
                    idle: if state.busy > 0 {
                        Duration::ZERO
                    } else {
                        state.last_used.elapsed()
                    },
                    busy: state.busy,
                    dedicated: lease.held.is_dedicated(),
                }
            })
            .collect();
        out.sort_by_key(|lease| std::cmp::Reverse(lease.age));
        out
    }

    /// Ends every lease idle for `ttl` with no call in it, and returns them (their
    /// browsers are the caller's to close, outside any lock).
    pub(crate) fn expire_idle(&self, ttl: Duration) -> Vec<(Arc<Lease>, Duration)> {
        let leases: Vec<Arc<Lease>> = lock(&self.leases).values().cloned().collect();
        let expired: Vec<(Arc<Lease>, Duration)> = leases
            .into_iter()
            .filter_map(|lease| {
                let idle = lease.end_if_idle(End::Expired, ttl)?;
                Some((lease, idle))
            })
            .collect();
        for (lease, _) in &expired {
            self.remove(&lease.id);
        }
        expired
    }

    /// Ends and removes every lease (shutdown).
    pub(crate) fn drain(&self) -> Vec<Arc<Lease>> {
        let leases: Vec<Arc<Lease>> = lock(&self.leases).drain().map(|(_, l)| l).collect();
        self.open.store(0, Ordering::Release);
        for lease in &leases {
            lease.end(End::Closed);
        }
        leases
    }
}
