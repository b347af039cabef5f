//! The lease registry: every open browser session is a lease with an id and an owner.
//!
//! An agent session (an MCP connection, a stateless session URL, a browser-shell id)
//! names a lease; the registry owns it. The reaper walks leases, not agents; counting
//! and listing sessions read the registry and never wait on a session's lock. A lease
//! is entered for each call and may end (idle, closed, lost) only while no call is in
//! it: both happen under the lease's own small lock, so the reaper cannot close a
//! browser under a call that has started.

use hex::ToHex as _;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_core::sync::lock;
use airlock_policy::Policy;
use airlock_worker::BrowserSession;
use tokio::time::Instant;

use crate::config::Caps;
use crate::credentials::Loaded;
use crate::error::{Error, Result};
pub use crate::principal::Principal;

/// A lease's id: 128 random bits in hex, unguessable, so an id names a session to
/// whoever holds it and to nobody else.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(String);

impl SessionId {
    pub(crate) fn random() -> Result<SessionId> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)
            .map_err(|e| Error::Internal(format!("no randomness for a session id: {e}")))?;
        Ok(SessionId(bytes.encode_hex::<String>()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    // An id as the store keeps it (a session another replica opened).
    pub(crate) fn stored(id: String) -> SessionId {
        SessionId(id)
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A browser session (its host holds the egress proxy all its connections go
/// through), what it loaded and what it keeps of its steps.
pub(crate) struct Held {
    pub(crate) session: BrowserSession,
    /// The tenant policy, narrowed by the session's own allowlist if it gave one.
    pub(crate) policy: Arc<Policy>,
    /// Credentials the session loaded, and the redactor for its outputs.
    pub(crate) loaded: Loaded,
    /// What the session keeps of its steps.
    pub(crate) recorder: Arc<crate::recording::Recorder>,
    /// Handed out from the warm pool (else opened for this lease).
    pub(crate) warm: bool,
    /// How long opening it took (credentials, proxy, browser context and tab).
    pub(crate) opened_in: std::sync::OnceLock<Duration>,
    /// What its results showed of each origin, and where it may act.
    pub(crate) reads: crate::reads::Reads,
    /// Approvals of held requests that cover the step confirming them.
    pub(crate) covers: crate::covers::Covers,
    /// The nonce its results fence page content with: chosen when it opens, kept in
    /// its row, so every replica serving it uses the same.
    pub(crate) fence: crate::content::PageFence,
    /// What its calls are judged by (operator, tenant, lease).
    pub(crate) plan: Arc<crate::plan::Plan>,
    /// What signs its requests (Web Bot Auth), when its plan signs.
    pub(crate) signer: Option<Arc<crate::identity::SessionSigner>>,
}

/// What a session is made of when the pipeline takes it up: its browser, its plan,
/// the lease's own narrowing of it and what it loaded. Fresh, warm and adopted
/// sessions alike become a [`Held`] through [`Held::new`].
pub(crate) struct Opening {
    pub(crate) session: BrowserSession,
    /// What its calls are judged by.
    pub(crate) plan: Arc<crate::plan::Plan>,
    /// The plan's egress narrowed by the lease's own allowlist, if it gave one.
    pub(crate) policy: Arc<Policy>,
    /// The origin sets: the operator's, the tenant's, the lease's.
    pub(crate) sets: crate::reads::Sets,
    /// What its scope has read (the caller's other sessions share it).
    pub(crate) memory: Arc<crate::memory::Memory>,
    pub(crate) loaded: Loaded,
    pub(crate) recorder: Arc<crate::recording::Recorder>,
    pub(crate) fence: crate::content::PageFence,
    /// Handed out from the warm pool.
    pub(crate) warm: bool,
    /// What signs its requests, when its plan signs.
    pub(crate) signer: Option<Arc<crate::identity::SessionSigner>>,
}

impl Held {
    /// The one way a session becomes what the stages hold.
    pub(crate) fn new(opening: Opening) -> Held {
        let Opening {
            session,
            plan,
            policy,
            sets,
            memory,
            loaded,
            recorder,
            fence,
            warm,
            signer,
        } = opening;
        Held {
            session,
            policy,
            loaded,
            recorder,
            warm,
            opened_in: std::sync::OnceLock::new(),
            reads: crate::reads::Reads::new(memory, sets),
            covers: Default::default(),
            fence,
            plan,
            signer,
        }
    }
}

impl AsRef<BrowserSession> for Held {
    fn as_ref(&self) -> &BrowserSession {
        &self.session
    }
}

impl std::ops::Deref for Held {
    type Target = BrowserSession;

    fn deref(&self) -> &BrowserSession {
        &self.session
    }
}

/// How a lease ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// `browser_session_close`, the agent going away, or shutdown.
    Closed,
    /// Idle past its TTL: the next call of its agent says so once.
    Expired,
    /// Open past its maximum lifetime, busy or not: said once too.
    OutLived,
    /// Its browser died: the next call opens a fresh one.
    Lost,
    /// The browser worker hosting it died, hung or disconnected.
    HostGone,
}

/// Why a lease refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// It ended.
    Ended(End),
    /// An operator holds the page; the agent may call again once it is handed back.
    Held,
    /// It ran as many actions as its budget allows.
    BudgetSpent(u64),
}

/// What a lease may consume. `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTerms {
    /// Ended after this long with no call in it.
    pub idle_ttl: Duration,
    /// Ended this long after it opened, however busy.
    pub max_lifetime: Option<Duration>,
    /// Most actions (calls that need the `act` role) it may run.
    pub action_budget: Option<u64>,
}

impl Default for LeaseTerms {
    fn default() -> Self {
        LeaseTerms {
            idle_ttl: Duration::from_secs(600),
            max_lifetime: None,
            action_budget: None,
        }
    }
}

/// The (user, conversation) a backend leased a session for: the same key reaches the
/// same session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConversationKey {
    /// The backend's user.
    pub user: String,
    /// The conversation (or agent run) within the user's.
    pub conversation: String,
}

struct State {
    busy: usize,
    last_used: Instant,
    ended: Option<End>,
    actions: u64,
    blocked: u64,
    held: bool,
    // The operator (`tenant/key`) who took the session over, while one holds it.
    controller: Option<String>,
    // When that operator last showed they are there (took it, typed, watched it live):
    // a hold nobody tends is released, so an agent is not refused until its TTL.
    tended: Instant,
    // An operator handed it back: the agent's next result says so, once.
    handed_back: bool,
    // A stored login it loaded ended (a check found it signed out): the agent's
    // next result says so, once.
    login_note: Option<String>,
    // The hold is another replica's (the store says so): it is released there, not
    // by this replica's reaper.
    held_elsewhere: bool,
}

/// Whose per-user cap a session counts against: a leased session's backend user; a
/// session an agent opened itself, its caller's key (every way to open a session
/// counts). The key's form starts with a control character, which user ids may not
/// hold, so the two never meet. A caller without a key (the local user) has none.
pub(crate) fn cap_user(
    owner: &Principal,
    conversation: Option<&ConversationKey>,
) -> Option<String> {
    match (conversation, &owner.key) {
        (Some(c), _) => Some(c.user.clone()),
        (None, Some(key)) => Some(format!("\u{1}key:{key}")),
        (None, None) => None,
    }
}

/// One open browser session, its owner, its terms and its use.
pub(crate) struct Lease {
    pub(crate) id: SessionId,
    /// Whose per-user cap the session counts against (see [`cap_user`]).
    pub(crate) cap_user: Option<String>,
    pub(crate) owner: Principal,
    pub(crate) conversation: Option<ConversationKey>,
    pub(crate) terms: LeaseTerms,
    pub(crate) held: Arc<Held>,
    pub(crate) created: Instant,
    state: Mutex<State>,
    // When this replica last told the store the lease was used (Unix ms): idle
    // expiry counts every replica's calls, and a busy session writes at most
    // every few seconds.
    pub(crate) told_store: std::sync::atomic::AtomicI64,
    // Turns true when the lease ends, however it ends: what a caller waiting on
    // something else (a task waiting on its model) watches to stop at once.
    gone: tokio::sync::watch::Sender<bool>,
}

impl Lease {
    /// Enters the lease for one call (`acts`: one that counts against the action
    /// budget): refused once it ended, while an operator holds it, or when the budget
    /// is spent. The guard leaves it.
    pub(crate) fn enter(self: &Arc<Self>, acts: bool) -> std::result::Result<InUse, Refusal> {
        let mut state = lock(&self.state);
        if let Some(end) = state.ended {
            return Err(Refusal::Ended(end));
        }
        if self
            .terms
            .max_lifetime
            .is_some_and(|most| self.created.elapsed() >= most)
        {
            // Not ended here: the caller closes it (`Sessions::close` ends it once).
            return Err(Refusal::Ended(End::OutLived));
        }
        if state.busy == 0 && state.last_used.elapsed() >= self.terms.idle_ttl {
            // Past its idle TTL before the reaper came by: as expired as if it had.
            // Not ended here either: the caller closes it.
            return Err(Refusal::Ended(End::Expired));
        }
        if state.held {
            return Err(Refusal::Held);
        }
        if acts {
            if let Some(budget) = self.terms.action_budget
                && state.actions >= budget
            {
                return Err(Refusal::BudgetSpent(budget));
            }
            state.actions += 1;
        }
        state.busy += 1;
        state.last_used = Instant::now();
        Ok(InUse(self.clone()))
    }

    /// Ends the lease if no call is in it and it is past its idle TTL or lifetime
    /// (`None` otherwise, or when it already ended).
    fn end_if_due(&self) -> Option<(End, Duration)> {
        let mut state = lock(&self.state);
        let idle = state.last_used.elapsed();
        if state.ended.is_some() || state.busy > 0 {
            return None;
        }
        // A worker that went away took the browser with it: the session ends now,
        // on the record, not at its agent's next call.
        let end = if self.held.session.host_gone() {
            End::HostGone
        } else if idle >= self.terms.idle_ttl {
            End::Expired
        } else if self
            .terms
            .max_lifetime
            .is_some_and(|most| self.created.elapsed() >= most)
        {
            End::OutLived
        } else {
            return None;
        };
        state.ended = Some(end);
        self.gone.send_replace(true);
        Some((end, idle))
    }

    /// Counts requests refused while a call ran in it.
    pub(crate) fn add_blocked(&self, blocked: u64) {
        lock(&self.state).blocked += blocked;
    }

    /// Holds the lease for an operator (`true`) or hands it back.
    pub(crate) fn set_held(&self, held: bool) {
        lock(&self.state).held = held;
    }

    /// Gives the page to operator `by`: one controller at a time (`Err` names the one
    /// holding it). Taking it again is a no-op.
    pub(crate) fn take_over(&self, by: &str) -> std::result::Result<(), String> {
        let mut state = lock(&self.state);
        match &state.controller {
            Some(other) if other != by => Err(other.clone()),
            _ => {
                state.controller = Some(by.to_owned());
                state.held = true;
                state.held_elsewhere = false;
                state.tended = Instant::now();
                Ok(())
            }
        }
    }

    /// Takes in what the store says of a shared session's hold: `Some(holder)` held
    /// (on whichever replica), `None` held by nobody.
    pub(crate) fn hold_as_stored(&self, holder: Option<&str>) {
        let mut state = lock(&self.state);
        match holder {
            Some(holder) if state.controller.as_deref() != Some(holder) => {
                state.controller = Some(holder.to_owned());
                state.held = true;
                state.held_elsewhere = true;
                state.tended = Instant::now();
            }
            Some(_) => {}
            None if state.controller.is_some() => {
                state.controller = None;
                state.held = false;
                state.held_elsewhere = false;
                state.handed_back = true;
            }
            None => {}
        }
    }

    /// Operator `by`, who holds the page, is still there (`false`: they do not hold it).
    pub(crate) fn tend(&self, by: &str) -> bool {
        let mut state = lock(&self.state);
        if state.controller.as_deref() != Some(by) {
            return false;
        }
        state.tended = Instant::now();
        true
    }

    /// Hands the page back whoever holds it: the previous holder, if one did.
    pub(crate) fn release(&self) -> Option<String> {
        let mut state = lock(&self.state);
        let holder = state.controller.take()?;
        state.held = false;
        state.handed_back = true;
        Some(holder)
    }

    /// Who holds the page and has not tended it for `idle`, if so.
    pub(crate) fn untended(&self, idle: Duration) -> Option<String> {
        let state = lock(&self.state);
        state
            .controller
            .clone()
            .filter(|_| !state.held_elsewhere && state.tended.elapsed() >= idle)
    }

    /// Operator `by` hands the page back (`false`: `by` does not hold it).
    pub(crate) fn hand_back(&self, by: &str) -> bool {
        let mut state = lock(&self.state);
        if state.controller.as_deref() != Some(by) {
            return false;
        }
        state.controller = None;
        state.held = false;
        state.handed_back = true;
        true
    }

    /// Who holds the page, if an operator does.
    pub(crate) fn controller(&self) -> Option<String> {
        lock(&self.state).controller.clone()
    }

    /// Whether an operator handed the page back since the agent's last call (once).
    pub(crate) fn take_handed_back(&self) -> bool {
        std::mem::take(&mut lock(&self.state).handed_back)
    }

    /// Notes, for the agent's next result, that a stored login it loaded ended.
    pub(crate) fn note_login(&self, note: String) {
        lock(&self.state).login_note = Some(note);
    }

    /// What the agent's next result says of a stored login that ended (once).
    pub(crate) fn take_login_note(&self) -> Option<String> {
        lock(&self.state).login_note.take()
    }

    /// Ends the lease now, whatever is in it (a call in flight fails on its closed
    /// browser). Returns whether this call ended it.
    pub(crate) fn end(&self, end: End) -> bool {
        let mut state = lock(&self.state);
        if state.ended.is_some() {
            return false;
        }
        state.ended = Some(end);
        self.gone.send_replace(true);
        true
    }

    /// How it ended, if it did.
    pub(crate) fn ended(&self) -> Option<End> {
        lock(&self.state).ended
    }

    /// Resolves once the lease has ended (at once if it has).
    pub(crate) fn gone(&self) -> impl std::future::Future<Output = ()> + Send + use<> {
        let mut gone = self.gone.subscribe();
        async move {
            // A dropped sender is a lease gone too.
            let _ = gone.wait_for(|g| *g).await;
        }
    }

    /// How long until it ends if nothing uses it (idle TTL or lifetime, whichever
    /// comes first); `None` while a call is in it.
    pub(crate) fn expires_in(&self) -> Option<Duration> {
        let state = lock(&self.state);
        if state.busy > 0 || state.ended.is_some() {
            return None;
        }
        let idle_left = self
            .terms
            .idle_ttl
            .saturating_sub(state.last_used.elapsed());
        let life_left = self
            .terms
            .max_lifetime
            .map(|most| most.saturating_sub(self.created.elapsed()));
        Some(life_left.map_or(idle_left, |life| life.min(idle_left)))
    }

    /// Marks it used `ago` (by another replica, as the store says), unless it was
    /// used since.
    pub(crate) fn used_ago(&self, ago: Duration) {
        let mut state = lock(&self.state);
        if let Some(at) = Instant::now().checked_sub(ago)
            && at > state.last_used
        {
            state.last_used = at;
        }
    }

    /// Marks it used now, as a call leaving it does: its idle TTL starts over.
    pub(crate) fn touch(&self) -> Option<End> {
        let mut state = lock(&self.state);
        if state.ended.is_none() {
            state.last_used = Instant::now();
        }
        state.ended
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

impl InUse {
    /// The lease entered.
    pub(crate) fn lease(&self) -> Arc<Lease> {
        self.0.clone()
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
    /// The (user, conversation) it was leased for, if any.
    pub conversation: Option<ConversationKey>,
    /// What it may consume.
    pub terms: LeaseTerms,
    /// Actions it ran (against `terms.action_budget`).
    pub actions: u64,
    /// Requests the egress proxy or the outbound protection refused in it.
    pub blocked: u64,
    /// Whether an operator holds it.
    pub held: bool,
    /// Which operator holds it, when one took it over in the console.
    pub controller: Option<String>,
    /// Until it ends if nothing uses it; `None` while a call is in it.
    pub expires_in: Option<Duration>,
    /// What it keeps of its steps.
    pub record: airlock_config::RecordMode,
    /// The control-plane replica (its id) that opened it, on a shared store.
    pub replica: Option<String>,
    /// Whether this replica holds it now; `false` for a session listed from the
    /// shared store, which another replica serves (and any may adopt).
    pub here: bool,
    /// The version of its tenant's policy it runs under (`None`: the operator's
    /// config alone).
    pub policy_version: Option<i64>,
}

/// What the registry tells the audit log: a session opened or ended.
pub(crate) enum Journal {
    /// An event to append.
    Event(Box<airlock_audit::Entry>),
    /// Answered once every event sent before it is handled: whether each was written
    /// (since the flush before).
    Flush(tokio::sync::oneshot::Sender<bool>),
}

// Whether a session of (tenant, user) counts against a cap.
type InScope<'a> = dyn Fn(&str, Option<&str>) -> bool + 'a;

/// A place for one session under the caps, held while it opens; dropping it (the
/// open failed) gives the place back.
pub(crate) struct Reservation {
    sessions: Arc<Sessions>,
    token: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        lock(&self.sessions.reserved).remove(&self.token);
    }
}

/// The registry: every open lease by id.
#[derive(Default)]
pub(crate) struct Sessions {
    leases: Mutex<HashMap<SessionId, Arc<Lease>>>,
    // Places taken by sessions being opened (tenant, user), counted against the caps
    // with the open ones. Locked after `leases`, never before.
    reserved: Mutex<HashMap<u64, (String, Option<String>)>>,
    next_reservation: std::sync::atomic::AtomicU64,
    open: AtomicUsize,
    // Where session events go (the gateway's audit writer), if anywhere.
    journal: Option<tokio::sync::mpsc::UnboundedSender<Journal>>,
}

impl Sessions {
    /// One of `tenant`'s live sessions: another tenant's, an ended one, or one past
    /// its idle TTL that the reaper has yet to close is no such session.
    pub(crate) fn tenant_lease(&self, tenant: &str, id: &str) -> Result<Arc<Lease>> {
        self.find(id)
            .filter(|lease| {
                lease.owner.tenant == tenant
                    && lease.ended().is_none()
                    && lease.expires_in() != Some(Duration::ZERO)
            })
            .ok_or(Error::NoSuchSession)
    }

    /// A registry that tells `journal` of every session opened and ended.
    pub(crate) fn journaled(journal: tokio::sync::mpsc::UnboundedSender<Journal>) -> Sessions {
        Sessions {
            journal: Some(journal),
            ..Sessions::default()
        }
    }

    // A session event for the audit log (never blocks; written in order).
    fn note(&self, open: bool, lease: &Lease, reason: Option<&str>) {
        use airlock_audit::{Entry, Event, SessionChange};
        let Some(journal) = &self.journal else {
            return;
        };
        let change = SessionChange {
            session: lease.id.to_string(),
            caller: Some(lease.owner.caller()),
            isolation: Some(
                if lease.held.is_dedicated() {
                    "process"
                } else {
                    "context"
                }
                .to_owned(),
            ),
            credentials: Some(
                lease
                    .held
                    .loaded
                    .names()
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            ),
            grant: lease.held.loaded.grant().map(str::to_owned),
            record: Some(lease.held.recorder.mode().as_str().to_owned()),
            start: Some(if lease.held.warm { "warm" } else { "cold" }.to_owned()),
            open_ms: lease.held.opened_in.get().map(|d| d.as_millis() as u64),
            user: lease.conversation.as_ref().map(|c| c.user.clone()),
            conversation: lease.conversation.as_ref().map(|c| c.conversation.clone()),
            reason: reason.map(str::to_owned),
            gateway_pid: None,
            signing_key: lease.held.signer.as_ref().map(|s| s.kid()),
        };
        let event = if open {
            Event::SessionOpen(change)
        } else {
            Event::SessionClose(change)
        };
        let _ = journal.send(Journal::Event(Box::new(Entry::now(
            lease.owner.tenant.clone(),
            event,
        ))));
    }

    /// Resolves once every session event sent so far is handled: whether each was
    /// written (a journal gone counts as not).
    pub(crate) async fn flush(&self) -> bool {
        let Some(journal) = &self.journal else {
            return true;
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        if journal.send(Journal::Flush(tx)).is_err() {
            return false;
        }
        rx.await.unwrap_or(false)
    }

    /// Takes a place for a new session of `tenant` (leased for `user`, if it is)
    /// under `caps`, or says which cap refuses it and when a place may free up (the
    /// soonest an idle session of that scope expires).
    pub(crate) fn reserve(
        self: &Arc<Self>,
        tenant: &str,
        user: Option<&str>,
        caps: &Caps,
    ) -> Result<Reservation> {
        if caps.min_free_memory_mib > 0
            && let Some(memory) = airlock_browser::host::memory()
            && memory.available_mib < caps.min_free_memory_mib
        {
            return Err(Error::QuotaExceeded {
                scope: "memory",
                message: format!(
                    "the gateway's machine has {} MiB of memory available, under the {} MiB a new browser session needs",
                    memory.available_mib, caps.min_free_memory_mib
                ),
                retry_after_secs: 30,
            });
        }
        let leases = lock(&self.leases);
        let mut reserved = lock(&self.reserved);
        let open = || {
            leases
                .values()
                .filter(|l| l.ended().is_none() && l.expires_in() != Some(Duration::ZERO))
                .map(|l| (l.owner.tenant.as_str(), l.cap_user.as_deref(), Some(l)))
                .chain(
                    reserved
                        .values()
                        .map(|(t, u)| (t.as_str(), u.as_deref(), None)),
                )
        };
        let scopes: [(&'static str, Option<usize>, &InScope<'_>, &str); 3] = [
            (
                "user",
                caps.per_user.filter(|_| user.is_some()),
                &|t, u| t == tenant && u.is_some() && u == user,
                "this user has {n} live browser sessions, the most allowed per user (sessions.max_per_user)",
            ),
            (
                "tenant",
                caps.per_tenant,
                &|t, _| t == tenant,
                "this tenant has {n} live browser sessions, the most allowed per tenant (sessions.max_per_tenant)",
            ),
            (
                "total",
                caps.total,
                &|_, _| true,
                "the gateway has {n} live browser sessions, the most it holds (sessions.max_total)",
            ),
        ];
        for (scope, cap, in_scope, words) in scopes {
            let Some(cap) = cap else { continue };
            let in_it: Vec<Option<&Arc<Lease>>> = open()
                .filter(|(t, u, _)| in_scope(t, *u))
                .map(|(_, _, l)| l)
                .collect();
            if in_it.len() >= cap {
                let soonest = in_it
                    .iter()
                    .flatten()
                    .filter_map(|l| l.expires_in())
                    .min()
                    .unwrap_or(Duration::from_secs(30));
                return Err(Error::QuotaExceeded {
                    scope,
                    message: words.replace("{n}", &in_it.len().to_string()),
                    retry_after_secs: soonest.as_secs().clamp(1, 3_600),
                });
            }
        }
        let token = self.next_reservation.fetch_add(1, Ordering::Relaxed);
        reserved.insert(token, (tenant.to_owned(), user.map(str::to_owned)));
        Ok(Reservation {
            sessions: self.clone(),
            token,
        })
    }

    /// Registers a new lease over `held`, owned by `owner`, under `terms`, in the
    /// place `reservation` took.
    pub(crate) fn insert(
        &self,
        id: SessionId,
        owner: Principal,
        conversation: Option<ConversationKey>,
        terms: LeaseTerms,
        held: Arc<Held>,
        reservation: Reservation,
    ) -> Result<Arc<Lease>> {
        let lease = Self::lease(id, owner, conversation, terms, held, Instant::now());
        lock(&self.leases).insert(lease.id.clone(), lease.clone());
        // Counted as open now: the place it reserved is given back.
        drop(reservation);
        self.open.fetch_add(1, Ordering::AcqRel);
        self.note(true, &lease, None);
        Ok(lease)
    }

    /// Registers a lease over a session another replica opened `opened_ago` (and
    /// that was last used `used_ago`): it is not new, so nothing is noted; the
    /// lease already there with its id, if any, is kept.
    pub(crate) fn adopt(
        &self,
        id: SessionId,
        owner: Principal,
        conversation: Option<ConversationKey>,
        terms: LeaseTerms,
        held: Arc<Held>,
        (opened_ago, used_ago): (Duration, Duration),
    ) -> Arc<Lease> {
        let now = Instant::now();
        let created = now.checked_sub(opened_ago).unwrap_or(now);
        let lease = Self::lease(id, owner, conversation, terms, held, created);
        lease.used_ago(used_ago.min(opened_ago));
        let mut leases = lock(&self.leases);
        if let Some(there) = leases.get(&lease.id) {
            return there.clone();
        }
        leases.insert(lease.id.clone(), lease.clone());
        self.open.fetch_add(1, Ordering::AcqRel);
        lease
    }

    fn lease(
        id: SessionId,
        owner: Principal,
        conversation: Option<ConversationKey>,
        terms: LeaseTerms,
        held: Arc<Held>,
        created: Instant,
    ) -> Arc<Lease> {
        let cap_user = cap_user(&owner, conversation.as_ref());
        Arc::new(Lease {
            id,
            cap_user,
            owner,
            conversation,
            terms,
            held,
            created,
            state: Mutex::new(State {
                busy: 0,
                last_used: created,
                ended: None,
                actions: 0,
                blocked: 0,
                held: false,
                controller: None,
                tended: created,
                handed_back: false,
                login_note: None,
                held_elsewhere: false,
            }),
            told_store: std::sync::atomic::AtomicI64::new(0),
            gone: tokio::sync::watch::Sender::new(false),
        })
    }

    /// Drops a lease this replica serves no more though its session goes on
    /// elsewhere: nothing is noted (it did not end).
    pub(crate) fn forget(&self, id: &SessionId) {
        if let Some(lease) = lock(&self.leases).remove(id) {
            lease.end(End::Closed);
            self.open.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Removes a lease from the registry (it must have ended); closing its browser
    /// is the caller's.
    pub(crate) fn remove(&self, id: &SessionId) -> Option<Arc<Lease>> {
        let removed = lock(&self.leases).remove(id);
        if let Some(lease) = &removed {
            self.open.fetch_sub(1, Ordering::AcqRel);
            let reason = match lease.ended() {
                Some(End::Closed) | None => "closed",
                Some(End::Expired) => "idle",
                Some(End::OutLived) => "lifetime",
                Some(End::Lost) => "browser lost",
                Some(End::HostGone) => "browser host gone",
            };
            self.note(false, lease, Some(reason));
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

    /// Every open lease, as seen now, oldest first.
    pub(crate) fn list(&self) -> Vec<LeaseInfo> {
        let leases: Vec<Arc<Lease>> = lock(&self.leases).values().cloned().collect();
        let mut out: Vec<LeaseInfo> = leases.iter().map(|lease| self.info(lease)).collect();
        out.sort_by_key(|lease| std::cmp::Reverse(lease.age));
        out
    }

    /// One lease as seen now.
    pub(crate) fn info(&self, lease: &Lease) -> LeaseInfo {
        let expires_in = lease.expires_in();
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
            conversation: lease.conversation.clone(),
            terms: lease.terms,
            actions: state.actions,
            blocked: state.blocked,
            held: state.held,
            controller: state.controller.clone(),
            expires_in,
            record: lease.held.recorder.mode(),
            replica: None,
            here: true,
            policy_version: lease.held.plan.version,
        }
    }

    /// Every open lease.
    pub(crate) fn leases(&self) -> Vec<Arc<Lease>> {
        lock(&self.leases).values().cloned().collect()
    }

    /// The open lease whose id reads `id`.
    pub(crate) fn find(&self, id: &str) -> Option<Arc<Lease>> {
        lock(&self.leases).get(&SessionId(id.to_owned())).cloned()
    }

    /// Ends every lease with no call in it that is past its idle TTL or lifetime,
    /// and returns them with how and how long idle (their browsers are the caller's
    /// to close, outside any lock).
    pub(crate) fn expire_due(&self) -> Vec<(Arc<Lease>, End, Duration)> {
        let leases: Vec<Arc<Lease>> = lock(&self.leases).values().cloned().collect();
        let expired: Vec<(Arc<Lease>, End, Duration)> = leases
            .into_iter()
            .filter_map(|lease| {
                let (end, idle) = lease.end_if_due()?;
                Some((lease, end, idle))
            })
            .collect();
        for (lease, _, _) in &expired {
            self.remove(&lease.id);
        }
        expired
    }

    /// The open lease with this id.
    pub(crate) fn get(&self, id: &SessionId) -> Option<Arc<Lease>> {
        lock(&self.leases).get(id).cloned()
    }

    /// Ends and removes every lease (shutdown), each with whether `keep` kept it
    /// open for others (then it is not noted as closed: it goes on elsewhere).
    pub(crate) fn drain(&self, keep: impl Fn(&Lease) -> bool) -> Vec<(Arc<Lease>, bool)> {
        let leases: Vec<Arc<Lease>> = lock(&self.leases).drain().map(|(_, l)| l).collect();
        self.open.store(0, Ordering::Release);
        leases
            .into_iter()
            .map(|lease| {
                lease.end(End::Closed);
                let kept = keep(&lease);
                if !kept {
                    self.note(false, &lease, Some("shutdown"));
                }
                (lease, kept)
            })
            .collect()
    }
}

// One (tenant, user, conversation) and the session it names. Racing requests for the
// same key wait on its lock, so exactly one creates the session.
pub(crate) type ConversationSlots =
    std::sync::Mutex<std::collections::HashMap<(String, ConversationKey), ConversationSlot>>;
pub(crate) type ConversationSlot = Arc<tokio::sync::Mutex<Option<SessionId>>>;
