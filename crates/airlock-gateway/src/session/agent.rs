//! An agent session: one per MCP session (or stdio connection, or leased session's
//! caller). It holds at most one browser session, opened lazily on the first browser
//! tool call, closed on `browser_session_close`, when the agent session ends, or after
//! an idle TTL; `call.rs` runs its calls through the pipeline.

use super::*;

/// Which lease an agent names, if any. A lease that ended (idle, closed, lost) stays
/// named until the agent's next call, which says so when it expired.
pub(crate) enum Slot {
    Empty,
    Leased(Arc<Lease>),
    /// A leased session some backend holds: the agent drives it and never replaces
    /// or ends it by going away.
    Pinned(Arc<Lease>),
}

impl Slot {
    pub(super) fn open_lease(&self) -> Option<&Arc<Lease>> {
        match self {
            Slot::Leased(lease) | Slot::Pinned(lease) if lease.ended().is_none() => Some(lease),
            _ => None,
        }
    }
}

/// Said at a session URL whose browser session ended.
pub(super) const NAMED_ENDED: &str = "the browser session this URL names has ended (closed, idle past its TTL, or past its lifetime); call browser_session_open at the plain MCP URL for a new one";

/// Said to an agent whose leased session ended.
pub(super) const LEASE_ENDED: &str = "this leased browser session has ended (idle past its TTL, past its lifetime, or ended by its backend); lease a new one and use its mcp_url";

pub(crate) struct AgentInner {
    pub(super) id: u64,
    pub(super) principal: Principal,
    pub(super) surface: Surface,
    pub(super) sessions: Arc<Sessions>,
    pub(super) gateway: Weak<Gateway>,
    // What the call pipeline reads besides its lease, handed over at creation: the
    // gateway's settings, the tenant policy, the audit log and stored recordings, who
    // is told of each call, and the signal that an approval was decided here.
    pub(super) config: Arc<GatewayConfig>,
    pub(super) policy: Arc<Policy>,
    pub(super) audit: Arc<crate::audit::AuditLog>,
    pub(super) recordings: Arc<crate::recording::Recordings>,
    pub(super) observers: Arc<super::context::Observers>,
    pub(super) approvals: Arc<crate::approvals::Approvals>,
    // The gateway's record of calls in flight (warm-ups keep out of their way).
    pub(super) activity: Arc<Activity>,
    pub(crate) slot: tokio::sync::Mutex<Slot>,
    pub(crate) fence: PageFence,
    pub(super) last_used: Mutex<Instant>,
    // Calls in flight; the reaper never closes a session under a running call.
    pub(super) busy: AtomicUsize,
    // A call of this agent waits for approval.
    pub(crate) waiting: std::sync::atomic::AtomicBool,
    // Reached at a session URL (`/mcp/s/<handle>`): its browser session is the one
    // that URL names, and once that ends, it stays ended.
    pub(super) named: std::sync::atomic::AtomicBool,
    // Where it lives on a shared store (`homes.rs`): its browser session is the one
    // the store names for this home, whichever replica opened it.
    pub(crate) home: std::sync::OnceLock<String>,
}

// Marks an agent busy for the life of one call, also if the call is cancelled.
pub(super) struct BusyGuard<'a>(pub(super) &'a AgentInner);

impl<'a> BusyGuard<'a> {
    pub(super) fn new(agent: &'a AgentInner) -> BusyGuard<'a> {
        agent.busy.fetch_add(1, Ordering::AcqRel);
        agent.activity.begin();
        BusyGuard(agent)
    }
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        *lock(&self.0.last_used) = Instant::now();
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
        self.0.activity.end();
    }
}

impl Drop for AgentInner {
    // The agent's MCP session ended without browser_session_close: end its lease and
    // close the browser session in the background (Drop cannot await). A homed agent
    // going from this replica's memory has not ended: its client may be served by
    // another replica, or come back here; its browser is left to its idle TTL (and a
    // client's DELETE ends it everywhere). Unless no other replica could serve it.
    fn drop(&mut self) {
        let slot = std::mem::replace(self.slot.get_mut(), Slot::Empty);
        if let Slot::Leased(lease) = slot
            && !(self.home.get().is_some() && adoptable(&lease))
            && lease.end(End::Closed)
        {
            self.sessions.remove(&lease.id);
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move { lease.held.close().await });
            }
        }
    }
}

// Whether another replica could serve `lease` (see `adoption.rs`).
fn adoptable(lease: &Lease) -> bool {
    lease.held.session.reachable_at().is_some() && lease.held.loaded.portable()
}

/// One agent's view of the gateway; dropping it closes its browser session.
pub struct AgentSession {
    pub(super) inner: Arc<AgentInner>,
}

impl AgentSession {
    /// Whether a call of this agent waits for a human's decision now (a surface tells
    /// its client so while it waits: progress notifications keep clients that reset
    /// their timeout on progress waiting).
    pub fn waits_for_approval(&self) -> bool {
        self.inner
            .waiting
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// This session's page fence.
    pub fn fence(&self) -> &PageFence {
        &self.inner.fence
    }

    // Makes this agent live at `home` (set once, by `homes.rs`).
    pub(crate) fn set_home(&self, home: &str) {
        let _ = self.inner.home.set(home.to_owned());
    }

    /// Who this agent session acts for.
    pub fn principal(&self) -> &Principal {
        &self.inner.principal
    }

    pub(super) async fn open(&self, options: OpenOptions) -> Result<ToolOutput> {
        let mut slot = self.inner.slot.lock().await;
        if let Some(lease) = slot.open_lease() {
            // Reporting success here would silently drop what was asked for (a
            // narrowing, credentials, an isolation mode).
            return Err(Error::SessionAlreadyOpen(describe(&lease.held)));
        }
        if matches!(&*slot, Slot::Pinned(_)) {
            return Err(Error::SessionExpired(LEASE_ENDED));
        }
        let gateway = self.inner.gateway.upgrade().ok_or(Error::ShuttingDown)?;
        let home = self.inner.home.get().map(String::as_str);
        if let Some(lease) = self.at_home(&gateway).await? {
            let open = describe(&lease.held);
            *slot = Slot::Leased(lease);
            return Err(Error::SessionAlreadyOpen(open));
        }
        let narrowed = !options.allow_hosts.is_empty();
        let device = options.device.clone();
        let terms = gateway.terms();
        match gateway
            .open_lease(&self.inner.principal, options, None, home, terms)
            .await
        {
            Ok((lease, false)) => {
                // Another request of this home opened it meanwhile.
                let open = describe(&lease.held);
                *slot = Slot::Leased(lease);
                Err(Error::SessionAlreadyOpen(open))
            }
            Ok((lease, true)) => {
                let held = &lease.held;
                let mut text = format!("opened browser session ({})", describe(held));
                if let Some(device) = device
                    && let Ok((w, h)) = held.session.viewport().await
                {
                    text.push_str(&format!("; device {device}: a {w}×{h} viewport"));
                }
                if narrowed {
                    text.push_str("; this session may reach only the hosts it listed");
                }
                if !held.loaded.names().is_empty() {
                    text.push_str(&format!(
                        "; logged in with {}; values are never shown",
                        held.loaded.describe()
                    ));
                }
                *slot = Slot::Leased(lease);
                Ok(ToolOutput::text(text))
            }
            Err(e) => Err(e),
        }
    }

    // The browser session of this agent's home, if it has a home and the home has
    // one open (on any replica).
    async fn at_home(&self, gateway: &Gateway) -> Result<Option<Arc<Lease>>> {
        match self.inner.home.get() {
            Some(home) => {
                gateway
                    .lease_at_home(&self.inner.principal.tenant, home)
                    .await
            }
            None => Ok(None),
        }
    }

    pub(super) async fn close_browser(&self) -> ToolOutput {
        let mut slot = self.inner.slot.lock().await;
        if let Slot::Pinned(lease) = &*slot {
            // Closing a leased session ends the lease, for its backend too.
            if lease.ended().is_none() {
                self.inner.sessions.close(lease, End::Closed).await;
                return ToolOutput::text(
                    "ended the leased browser session; its cookies, storage and tabs are gone",
                );
            }
            return ToolOutput::text("no browser session was open");
        }
        if let Slot::Leased(lease) = std::mem::replace(&mut *slot, Slot::Empty)
            && lease.ended().is_none()
        {
            self.inner.sessions.close(&lease, End::Closed).await;
            return ToolOutput::text(
                "closed the browser session; its cookies, storage and tabs are gone",
            );
        }
        ToolOutput::text("no browser session was open")
    }

    // The agent's open lease, entered for one call (`acts`: one counted against the
    // action budget), opening one lazily. A lease the reaper or its lifetime ended is
    // reported once as expired, so the agent knows its logged-in state is gone; one
    // whose browser was lost is replaced without a word.
    pub(super) async fn browser_session(&self, acts: bool) -> Result<InUse> {
        let mut slot = self.inner.slot.lock().await;
        if let Slot::Pinned(lease) = &*slot {
            // A leased session is never replaced: when it ends, it stays ended.
            return match lease.enter(acts) {
                Ok(in_use) => Ok(in_use),
                Err(Refusal::Ended(end @ (End::OutLived | End::Expired))) => {
                    let lease = lease.clone();
                    drop(slot);
                    self.inner.sessions.close(&lease, end).await;
                    Err(Error::SessionExpired(LEASE_ENDED))
                }
                Err(Refusal::Ended(_)) => Err(Error::SessionExpired(LEASE_ENDED)),
                Err(Refusal::Held) => Err(Error::SessionHeld),
                Err(Refusal::BudgetSpent(budget)) => Err(Error::BudgetExhausted { budget }),
            };
        }
        if let Slot::Leased(lease) = &*slot
            && self.inner.home.get().is_some()
            && lease.ended().is_none()
        {
            // Requests of its home reach other replicas too: one of them may have
            // ended it, or an operator there hold it.
            let gateway = self.inner.gateway.upgrade().ok_or(Error::ShuttingDown)?;
            match gateway.as_stored(lease.clone()).await {
                Ok(_) | Err(Error::NoSuchSession) => {}
                Err(e) => return Err(e),
            }
        }
        if let Slot::Leased(lease) = &*slot {
            match lease.enter(acts) {
                Ok(in_use) => return Ok(in_use),
                Err(Refusal::Ended(End::Expired)) => {
                    let lease = lease.clone();
                    *slot = Slot::Empty;
                    drop(slot);
                    self.inner.sessions.close(&lease, End::Expired).await;
                    return Err(Error::SessionExpired(
                        if self.inner.named.load(Ordering::Acquire) {
                            NAMED_ENDED
                        } else {
                            "the browser session was closed after being idle; the next call opens a fresh one (cookies and tabs are gone)"
                        },
                    ));
                }
                Err(Refusal::Ended(End::OutLived)) => {
                    let lease = lease.clone();
                    *slot = Slot::Empty;
                    drop(slot);
                    self.inner.sessions.close(&lease, End::OutLived).await;
                    return Err(Error::SessionExpired(
                        if self.inner.named.load(Ordering::Acquire) {
                            NAMED_ENDED
                        } else {
                            "the browser session reached its maximum lifetime and was closed; the next call opens a fresh one (cookies and tabs are gone)"
                        },
                    ));
                }
                Err(Refusal::Ended(End::Closed | End::Lost | End::HostGone)) => *slot = Slot::Empty,
                Err(Refusal::Held) => return Err(Error::SessionHeld),
                Err(Refusal::BudgetSpent(budget)) => {
                    return Err(Error::BudgetExhausted { budget });
                }
            }
        }
        let gateway = self.inner.gateway.upgrade().ok_or(Error::ShuttingDown)?;
        // A homed agent's browser may have been opened through another replica.
        if let Some(lease) = self.at_home(&gateway).await? {
            let in_use = lease.enter(acts).map_err(|refusal| match refusal {
                Refusal::Held => Error::SessionHeld,
                Refusal::BudgetSpent(budget) => Error::BudgetExhausted { budget },
                Refusal::Ended(_) => Error::SessionExpired(NAMED_ENDED),
            })?;
            *slot = Slot::Leased(lease);
            return Ok(in_use);
        }
        // A session URL names one browser session: closed, it is not silently
        // replaced by a fresh one behind the same URL.
        if self.inner.named.load(Ordering::Acquire) {
            return Err(Error::SessionExpired(NAMED_ENDED));
        }
        let terms = gateway.terms();
        let home = self.inner.home.get().map(String::as_str);
        let (lease, _) = gateway
            .open_lease(
                &self.inner.principal,
                OpenOptions::default(),
                None,
                home,
                terms,
            )
            .await?;
        tracing::info!(
            agent.id = self.inner.id,
            session.id = %lease.id,
            "browser session opened lazily"
        );
        let in_use = lease.enter(acts).map_err(|refusal| match refusal {
            Refusal::BudgetSpent(budget) => Error::BudgetExhausted { budget },
            _ => Error::Internal("a new browser session ended at once".to_owned()),
        })?;
        *slot = Slot::Leased(lease);
        Ok(in_use)
    }

    /// Closes the browser session now (the surface calls this when its session ends).
    /// A leased session outlives the connection: it is left to its lease's terms.
    pub async fn close(&self) {
        let mut slot = self.inner.slot.lock().await;
        if let Slot::Leased(lease) = &*slot {
            let lease = lease.clone();
            *slot = Slot::Empty;
            self.inner.sessions.close(&lease, End::Closed).await;
        }
    }
}

pub(super) fn describe(session: &BrowserSession) -> String {
    if session.is_dedicated() {
        "isolation: process, its own Chromium".to_owned()
    } else {
        "isolation: context, a fresh browser context".to_owned()
    }
}
