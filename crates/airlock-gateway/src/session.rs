//! Agent sessions: one per MCP session (or stdio connection). Each holds at most one
//! browser session, opened lazily on the first browser tool call, closed on
//! `browser_session_close`, when the agent session ends, or after an idle TTL.

use hex::ToHex as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use airlock_audit::{self as audit, Event};
use airlock_core::HasErrorCode;
use airlock_core::sync::lock;
use airlock_egress::summarize;
use airlock_policy::{Decision, DenyReason, Policy};
use airlock_store::Store;
use airlock_worker::{BrowserSession, Host, OpenSpec};
use tokio::task::JoinHandle;
use tokio::time::Instant;

mod agent;
mod call;
mod context;
mod effects;
mod flow;
mod gate;
mod record;
mod task;

pub use agent::*;
pub use context::{CallContext, CallObserver, CallRecord, Gate};
pub use flow::{FLOW_RULE, READ_ONLY_RULE};
pub use gate::SAFETY_CHECK_RULE;

use crate::audit::AuditLog;
use crate::config::GatewayConfig;
use crate::content::PageFence;
use crate::credentials::{Loaded, Outcome};
use crate::error::{Error, Result};
use crate::reads::Sets;
use crate::sessions::{
    ConversationKey, End, Held, InUse, Journal, Lease, LeaseInfo, LeaseTerms, Principal, Refusal,
    SessionId, Sessions,
};
use crate::surface::Surface;
use crate::tools::{self, OpenOptions, ToolCall, ToolOutput};
use crate::warm::{Activity, WarmPool};

// A session's own origin sets as its live row keeps them (JSON), if it gave any.
fn stored_sets(options: &OpenOptions) -> Option<String> {
    if options.act_origins.is_empty() && options.read_origins.is_empty() {
        return None;
    }
    Some(
        serde_json::json!({ "act": options.act_origins, "read": options.read_origins }).to_string(),
    )
}

/// The engine: owns every agent session's browser session, on the host it was given.
pub struct Gateway {
    pub(crate) host: Host,
    pub(crate) config: Arc<GatewayConfig>,
    pub(crate) policy: Arc<Policy>,
    // Every open browser session, as a lease with an id and an owner.
    pub(crate) sessions: Arc<Sessions>,
    // Which session each leased (tenant, user, conversation) names.
    pub(crate) conversations: crate::sessions::ConversationSlots,
    // Agent sessions of stateless callers (one per caller identity).
    callers: Mutex<std::collections::HashMap<String, Arc<AgentSession>>>,
    // Agent sessions named by a handle (a stateless client's session URL), with the
    // caller that named it: only that caller's requests reach it.
    named: Mutex<std::collections::HashMap<String, (String, Arc<AgentSession>)>>,
    next_agent: AtomicU64,
    reaper: Mutex<Option<JoinHandle<()>>>,
    warm: Arc<WarmPool>,
    activity: Arc<Activity>,
    // Told of every finished call (metrics).
    observers: Arc<context::Observers>,
    // Operators on sessions' pages: live view, take-over, input, saved logins.
    pub(crate) operators: crate::takeover::Operators,
    // The audit log: appends, the live feed (SSE, webhook, console) and checkpoints.
    pub(crate) audit: Arc<AuditLog>,
    // Set once the gateway stops: long-lived readers (event streams) end.
    pub(crate) stopping: tokio::sync::watch::Sender<bool>,
    // The stored recordings and their retention.
    pub(crate) recordings: Arc<crate::recording::Recordings>,
    // Told of every decision made in this process: waiting calls look at once.
    pub(crate) approvals: Arc<crate::approvals::Approvals>,
    // A live API key was seen in the store: callers must authenticate.
    pub(crate) keys_seen: std::sync::atomic::AtomicBool,
    // New sessions refused over a cap, by scope.
    quota_refused: Mutex<std::collections::BTreeMap<&'static str, u64>>,
    // This replica among those sharing the store: its heartbeat, and who is gone.
    pub(crate) fleet: Arc<crate::fleet::Fleet>,
    heart: Mutex<Option<JoinHandle<()>>>,
    // One adoption of another replica's session at a time.
    pub(crate) adopting: tokio::sync::Mutex<()>,
    // Since when each worker of `[[workers]]` has not answered.
    pub(crate) workers_down: Mutex<std::collections::HashMap<String, Instant>>,
    // When this replica last removed unused agent homes (Unix ms).
    pub(crate) homes_swept: std::sync::atomic::AtomicI64,
    // The plan of a session whose tenant has no policy of its own; tenants' plans.
    pub(crate) default_plan: Arc<crate::plan::Plan>,
    pub(crate) plans: crate::plan::Plans,
    pub(crate) memories: crate::memory::Memories,
}

impl Gateway {
    /// Starts the engine and its idle-session reaper; browser sessions open on `host`
    /// (an `Arc<Browsers>` is an in-process host; `LocalHost::with_resolver` one whose
    /// proxies ask a given resolver, as tests script DNS).
    pub fn new(host: impl Into<Host>, config: GatewayConfig) -> Arc<Gateway> {
        let host = host.into();
        // Session events go to the audit log through one writer, in order.
        let (journal, journal_rx) = tokio::sync::mpsc::unbounded_channel();
        let sessions = Arc::new(match &config.store {
            Some(_) => Sessions::journaled(journal),
            None => Sessions::default(),
        });
        let config = Arc::new(config);
        let audit = Arc::new(AuditLog::new(
            config.store.clone(),
            config.checkpoints.clone(),
            config.own_secrets.clone(),
        ));
        let policy = Arc::new(config.policy.clone());
        let default_plan = Arc::new(crate::plan::Plan::operator(
            &policy,
            &config.rules,
            &config.flow,
            config.approval_timeout,
            &config.identity,
        ));
        let gateway = Arc::new(Gateway {
            host,
            policy,
            default_plan,
            plans: Default::default(),
            memories: Default::default(),
            operators: crate::takeover::Operators::new(
                sessions.clone(),
                audit.clone(),
                config.clone(),
            ),
            sessions,
            conversations: Default::default(),
            callers: Mutex::new(std::collections::HashMap::new()),
            named: Mutex::new(std::collections::HashMap::new()),
            next_agent: AtomicU64::new(1),
            reaper: Mutex::new(None),
            warm: WarmPool::new(config.warm_sessions, config.rules.effects().clone()),
            activity: Activity::new(),
            observers: Arc::default(),
            audit,
            stopping: tokio::sync::watch::Sender::new(false),
            recordings: Arc::new(crate::recording::Recordings::new(
                config.recordings_dir.clone(),
                config.store.as_ref(),
                config.recording_retention,
            )),
            approvals: Arc::new(crate::approvals::Approvals::new(config.store.clone())),
            keys_seen: std::sync::atomic::AtomicBool::new(false),
            quota_refused: Mutex::default(),
            fleet: Arc::new(crate::fleet::Fleet::new()),
            heart: Mutex::new(None),
            adopting: tokio::sync::Mutex::new(()),
            homes_swept: std::sync::atomic::AtomicI64::new(0),
            workers_down: Mutex::default(),
            config,
        });
        gateway.warm.refill(&gateway.host, None);
        if let Some(store) = gateway.config.store.clone() {
            tokio::spawn(write_journal(
                store.clone(),
                gateway.audit.clone(),
                journal_rx,
            ));
            *lock(&gateway.heart) = Some(tokio::spawn(crate::fleet::heartbeat(Arc::downgrade(
                &gateway,
            ))));
            tokio::spawn(follow_store(Arc::downgrade(&gateway), store));
        }
        let weak = Arc::downgrade(&gateway);
        let period = (gateway.config.idle_ttl.min(gateway.config.hold_idle) / 4)
            .clamp(Duration::from_millis(50), Duration::from_secs(15));
        let reaper = tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(gateway) = weak.upgrade() else {
                    return;
                };
                gateway.reap_idle().await;
            }
        });
        *lock(&gateway.reaper) = Some(reaper);
        if gateway.audit.signs() {
            // Signs a checkpoint over the log's tail once it has been quiet a moment.
            let weak = Arc::downgrade(&gateway);
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(crate::audit::QUIET / 2);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let Some(gateway) = weak.upgrade() else {
                        return;
                    };
                    gateway.audit.settle(false).await;
                }
            });
        }
        gateway
    }

    /// Whether `browser_evaluate` is on.
    pub fn evaluate_enabled(&self) -> bool {
        self.config.evaluate
    }

    /// Where uploads come from, if anywhere.
    pub fn upload_dir(&self) -> Option<&std::path::Path> {
        self.config.upload_dir.as_deref()
    }

    // Loads the asked-for credentials (if authorized), starts the session's egress
    // proxy, then the browser session that must use it, credentials injected before
    // the agent's first action. Returns why credentials were refused, if they were.
    async fn open_held(
        &self,
        caller: &Principal,
        options: OpenOptions,
        conversation: Option<&ConversationKey>,
    ) -> Result<(Arc<Held>, Option<String>)> {
        let device = match options.device.as_deref() {
            None => None,
            Some(name) => Some(
                airlock_browser::Device::named(name)
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "`device` is one of {}; got `{}`",
                            device_names(),
                            airlock_core::text::prefix(name, 40)
                        ))
                    })?
                    .name,
            ),
        };
        let (held, refused) = self.open_browser_for(caller, options, conversation).await?;
        let ready = async {
            if let Some(device) = device {
                held.session.emulate(device).await?;
            }
            if let Some(dir) = &self.config.download_dir {
                held.session
                    .allow_downloads_to(
                        dir,
                        crate::tools::MAX_DOWNLOAD_BYTES,
                        self.downloads_to(&caller.tenant, dir),
                    )
                    .await?;
            }
            Ok::<_, airlock_browser::Error>(())
        };
        if let Err(e) = ready.await {
            held.close().await;
            return Err(e.into());
        }
        Ok((held, refused))
    }

    // Where `tenant`'s sessions on workers have their downloads brought: the shared
    // store when replicas share one (never one replica's disk), else `dir`.
    pub(crate) fn downloads_to(
        &self,
        tenant: &str,
        dir: &std::path::Path,
    ) -> airlock_worker::DownloadsTo {
        match self.shared_store() {
            Some(store) => airlock_worker::DownloadsTo::Keep {
                dir: dir.to_owned(),
                keeper: Arc::new(crate::recording::StoredDownloads {
                    store: store.clone(),
                    tenant: tenant.to_owned(),
                }),
            },
            None => airlock_worker::DownloadsTo::Dir(dir.to_owned()),
        }
    }

    async fn open_browser_for(
        &self,
        caller: &Principal,
        options: OpenOptions,
        conversation: Option<&ConversationKey>,
    ) -> Result<(Arc<Held>, Option<String>)> {
        let record = options.record.unwrap_or(self.config.recording);
        if record == airlock_config::RecordMode::Audit && !self.recordings.kept() {
            return Err(Error::InvalidArgument(
                "this gateway stores no recordings; record `transient` or `off`".to_owned(),
            ));
        }
        let recorder = Arc::new(crate::recording::Recorder::new(record));
        let (loaded, injection, refused) = if options.credentials.is_empty() {
            (Loaded::default(), None, None)
        } else {
            match self.config.credentials.load(caller, &options).await? {
                Outcome::Loaded(loaded, injection) => (loaded, Some(Arc::new(injection)), None),
                Outcome::Refused(why) => (Loaded::default(), None, Some(why)),
            }
        };
        loaded.allow_sockets(self.policy.websocket_origins());
        let plan = self.plan(&caller.tenant, None).await?;
        let policy = self.narrowed_policy(&plan.egress, &options.allow_hosts)?;
        let sets = Sets::new(
            &self.config.flow.origins,
            plan.origins.clone(),
            options.origin_sets()?,
        );
        let scope = crate::memory::scope_of(
            plan.flow.scope,
            &caller.tenant,
            caller.key.as_deref(),
            conversation,
        );
        let memory = self.memories.of(scope, &plan.flow);
        let isolation = options.isolation.unwrap_or(self.host.default_isolation());
        let signer = Box::pin(self.session_signer(&caller.tenant, &plan, &policy)).await?;
        // A warm browser pauses no request: one that signs opens cold.
        if injection.is_none()
            && !loaded.holds_secrets()
            && !plan.own_effects
            && signer.is_none()
            && let Some(warm) = self.warm.claim(isolation).await
        {
            warm.arm(&policy).await?;
            warm.session.allow_sockets(&loaded.sockets()).await?;
            self.warm.refill(&self.host, Some(&self.activity));
            let held = Held::new(crate::sessions::Opening {
                session: warm.session,
                plan,
                policy,
                sets,
                memory,
                loaded,
                recorder,
                fence: PageFence::new(),
                warm: true,
                signer: None,
            });
            return Ok((Arc::new(held), refused));
        }
        let session = Box::pin(self.host.open_signed(
            OpenSpec {
                isolation: options.isolation,
                policy: (*policy).clone(),
                injection: injection.map(|i| (*i).clone()),
                secrets: loaded.secret_set(),
                effects: plan.rules.effects().clone(),
                signing: plan.signing.as_ref().map(|s| s.origins.clone()),
            },
            signer.clone().map(|s| {
                Arc::new(crate::identity::Signs(s)) as Arc<dyn airlock_browser::RequestSigner>
            }),
        ))
        .await?;
        Ok((
            Arc::new(Held::new(crate::sessions::Opening {
                session,
                plan,
                policy,
                sets,
                memory,
                loaded,
                recorder,
                fence: PageFence::new(),
                warm: false,
                signer,
            })),
            refused,
        ))
    }

    // Opens a browser session for `caller` and registers it as a lease: a place under
    // the caps first (nothing launches over a cap; on a shared store, the place is
    // claimed over every replica's sessions), then the browser, then the lease.
    // Credentials the caller may not use fail the whole open. A conversation (or
    // home) whose session is open already gets that one (`false`: not created here).
    pub(crate) async fn open_lease(
        &self,
        caller: &Principal,
        options: OpenOptions,
        conversation: Option<ConversationKey>,
        home: Option<&str>,
        terms: LeaseTerms,
    ) -> Result<(Arc<Lease>, bool)> {
        let user = crate::sessions::cap_user(caller, conversation.as_ref());
        let refused = |e: &Error| {
            if let Error::QuotaExceeded { scope, message, .. } = e {
                tracing::warn!(tenant = %caller.tenant, %message, "new browser session refused");
                *lock(&self.quota_refused).entry(scope).or_default() += 1;
            }
        };
        let reservation = self
            .sessions
            .reserve(&caller.tenant, user.as_deref(), &self.config.caps)
            .inspect_err(refused)?;
        let id = SessionId::random()?;
        let record = options.record.unwrap_or(self.config.recording);
        let mut row = self.live_row(
            &id,
            caller,
            conversation.as_ref(),
            &terms,
            record,
            &options.allow_hosts,
        );
        row.origins = stored_sets(&options);
        row.home = home.map(str::to_owned);
        if let Some(existing) = self
            .claim(&row, user.as_deref())
            .await
            .inspect_err(refused)?
        {
            drop(reservation);
            let lease = match self.tenant_lease(&caller.tenant, &existing.id) {
                Ok(lease) => lease,
                Err(_) => self.adopt(&caller.tenant, existing).await?,
            };
            return Ok((lease, false));
        }
        let held = match self
            .open_claimed(caller, options, conversation.as_ref())
            .await
        {
            Ok(held) => held,
            Err(e) => {
                self.unclaim(&id).await;
                return Err(e);
            }
        };
        // Where another replica finds it: written before anyone hears of it.
        if let Some(store) = self.store() {
            row.worker = held.session.reachable_at().map(str::to_owned);
            row.worker_session = Some(held.session.id().to_owned());
            row.worker_key = held.session.attach_key().map(|k| k.expose().to_owned());
            // Secrets from the vault another replica loads again, at these versions;
            // nothing is learned yet.
            row.secrets = held.loaded.versions();
            row.holds_secrets = !held.loaded.portable();
            row.fence = Some(held.fence.nonce().to_owned());
            row.policy_version = held.plan.version;
            match store.insert_live_session(&row).await {
                Err(e) => tracing::warn!(error = %e, "could not note a live session"),
                // Its running state is the fleet's from its first call.
                Ok(()) if store.is_shared() => held.reads.share(store, &row.id),
                Ok(()) => {}
            }
        }
        match self.sessions.insert(
            id.clone(),
            caller.clone(),
            conversation,
            terms,
            held.clone(),
            reservation,
        ) {
            Ok(lease) => Ok((lease, true)),
            Err(e) => {
                held.close().await;
                self.unclaim(&id).await;
                Err(e)
            }
        }
    }

    async fn open_claimed(
        &self,
        caller: &Principal,
        options: OpenOptions,
        conversation: Option<&ConversationKey>,
    ) -> Result<Arc<Held>> {
        let started = Instant::now();
        let asked = options.credentials.clone();
        let (held, refused) = self.open_held(caller, options, conversation).await?;
        // A session that cannot load what it was asked for is not opened: opened
        // clean, it would send the agent into placeholders that can never work.
        if let Some(why) = refused {
            held.close().await;
            self.record_event(
                Some(&caller.tenant),
                Event::CredentialRefusal(audit::CredentialRefusal {
                    caller: caller.caller(),
                    credentials: asked,
                    reason: why.clone(),
                }),
            )
            .await;
            return Err(Error::CredentialRefused { why });
        }
        held.opened_in.set(started.elapsed()).ok();
        Ok(held)
    }

    /// New sessions refused over a cap so far, by scope (`user`, `tenant`, `total`,
    /// `memory`).
    pub fn quota_refusals(&self) -> Vec<(&'static str, u64)> {
        lock(&self.quota_refused)
            .iter()
            .map(|(scope, n)| (*scope, *n))
            .collect()
    }

    /// Whether held calls may be put to the agent's own client as well.
    pub fn in_client_approval(&self) -> bool {
        self.config.in_client_approval
    }

    /// The vault lent to this gateway, if any (an operator's model key may live in
    /// it, bound to the model's origin).
    pub fn vault(&self) -> Option<&Arc<airlock_vault::Vault>> {
        self.config.credentials.vault.as_ref()
    }

    /// The store lent to this gateway, if any.
    pub fn store(&self) -> Option<&Store> {
        self.config.store.as_ref()
    }

    /// Where browser sessions run (diagnostics and tests).
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Pre-warmed sessions ready now, and handed out so far (diagnostics and tests).
    pub fn warm_sessions(&self) -> (usize, u64) {
        (self.warm.ready(), self.warm.claimed())
    }

    /// A new agent session with no browser session yet, for the gateway's configured
    /// caller (its tenant and role), serving the MCP tools.
    pub fn agent_session(self: &Arc<Self>) -> AgentSession {
        self.agent_session_as(self.principal(None), Surface::Mcp)
    }

    /// Tells `observer` of every call that finishes from now on.
    pub fn observe(&self, observer: Arc<dyn CallObserver>) {
        self.observers.add(observer);
    }

    /// The gateway's configured caller, known by `key` (a digest of its credentials)
    /// when it authenticated.
    pub fn principal(&self, key: Option<&str>) -> Principal {
        Principal {
            tenant: self.config.credentials.tenant.clone(),
            role: self.config.credentials.role,
            key: key.map(str::to_owned),
        }
    }

    /// Who an operator holding the approver's key (`key` names it) is: the admin of
    /// the default tenant, until keys of their own come with tenants.
    pub fn operator(&self, key: &str) -> Principal {
        Principal {
            tenant: self.config.credentials.tenant.clone(),
            role: airlock_core::Role::Admin,
            key: Some(key.to_owned()),
        }
    }

    /// A new agent session for `principal` on `surface`, with no browser session yet.
    pub fn agent_session_as(
        self: &Arc<Self>,
        principal: Principal,
        surface: Surface,
    ) -> AgentSession {
        self.agent_session_fenced(principal, surface, PageFence::new())
    }

    /// Like [`Gateway::agent_session_as`], fencing page content with `fence` (a
    /// surface that announced its nonce before the agent session existed).
    pub fn agent_session_fenced(
        self: &Arc<Self>,
        principal: Principal,
        surface: Surface,
        fence: PageFence,
    ) -> AgentSession {
        let inner = Arc::new(AgentInner {
            id: self.next_agent.fetch_add(1, Ordering::Relaxed),
            principal,
            surface,
            sessions: self.sessions.clone(),
            gateway: Arc::downgrade(self),
            config: self.config.clone(),
            recordings: self.recordings.clone(),
            policy: self.policy.clone(),
            audit: self.audit.clone(),
            observers: self.observers.clone(),
            approvals: self.approvals.clone(),
            activity: self.activity.clone(),
            slot: tokio::sync::Mutex::new(Slot::Empty),
            fence,
            last_used: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
            waiting: std::sync::atomic::AtomicBool::new(false),
            named: std::sync::atomic::AtomicBool::new(false),
            home: std::sync::OnceLock::new(),
        });
        AgentSession { inner }
    }

    /// The agent session `principal` names by `key` (within the principal's own
    /// names), created on first use; its browser session is closed by the idle TTL
    /// like any other, and the agent forgotten once idle.
    pub fn caller_agent(
        self: &Arc<Self>,
        principal: &Principal,
        key: &str,
        surface: Surface,
    ) -> Arc<AgentSession> {
        let key = format!("{}/{key}", principal.caller());
        if let Some(agent) = lock(&self.callers).get(&key) {
            return agent.clone();
        }
        let agent = Arc::new(self.agent_session_as(principal.clone(), surface));
        lock(&self.callers).entry(key).or_insert(agent).clone()
    }

    /// The agent through which `principal` drives the leased session `lease`: made
    /// on first use, one per caller and lease (each call is judged by its caller's
    /// role), and never ending the lease itself (that is the lease's terms' job, or a
    /// `DELETE`, or `browser_session_close`).
    pub(crate) fn pinned_agent(
        self: &Arc<Self>,
        principal: &Principal,
        lease: Arc<Lease>,
        surface: Surface,
    ) -> Arc<AgentSession> {
        let key = format!("{}/lease/{}", principal.caller(), lease.id);
        if let Some(agent) = lock(&self.callers).get(&key) {
            return agent.clone();
        }
        // Its results fenced with the session's nonce, on this replica as on the one
        // that opened it.
        let agent = Arc::new(self.agent_session_fenced(
            principal.clone(),
            surface,
            lease.held.fence.clone(),
        ));
        // Not yet shared with anyone: the slot is free.
        if let Ok(mut slot) = agent.inner.slot.try_lock() {
            *slot = Slot::Pinned(lease);
        }
        lock(&self.callers).entry(key).or_insert(agent).clone()
    }

    /// Names `agent` with a new unguessable handle, so that later requests of the same
    /// `caller` (a digest of its credentials) can reach it by that handle alone: how a
    /// stateless client keeps one browser across calls. Another caller's request with
    /// the handle is answered as if it did not exist.
    /// On a shared store the handle is a home (`homes.rs`): any replica serves it.
    pub async fn name_agent(&self, caller: &str, agent: Arc<AgentSession>) -> Result<String> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)
            .map_err(|e| Error::Internal(format!("no randomness for a session handle: {e}")))?;
        let handle: String = bytes.encode_hex::<String>();
        if self.has_homes() {
            let home = crate::home_name::url_home(&handle);
            self.make_home(&home, agent.principal(), agent.fence())
                .await?;
            agent.set_home(&home);
            if let Some(lease) = agent.inner.slot.lock().await.open_lease() {
                self.house(lease, &home).await;
            }
        }
        agent.inner.named.store(true, Ordering::Release);
        lock(&self.named).insert(handle.clone(), (caller.to_owned(), agent));
        Ok(handle)
    }

    // The agent `caller` named `handle` through another replica (or before this
    // replica forgot it), made here from its home; `None` when there is none, or it
    // is another caller's.
    pub(crate) async fn named_from_home(
        self: &Arc<Self>,
        caller: &Principal,
        handle: &str,
    ) -> Result<Option<Arc<AgentSession>>> {
        let home = crate::home_name::url_home(handle);
        let Some(found) = self.find_home(&home).await? else {
            return Ok(None);
        };
        if found.owner != caller.caller() {
            return Ok(None);
        }
        let agent = self.homed_agent(caller.clone(), Surface::Mcp, found.fence, &home);
        agent.inner.named.store(true, Ordering::Release);
        let agent = lock(&self.named)
            .entry(handle.to_owned())
            .or_insert((caller.caller(), Arc::new(agent)))
            .1
            .clone();
        Ok(Some(agent))
    }

    /// The agent session `caller` named `handle`, if there is one.
    pub fn named_agent(&self, caller: &str, handle: &str) -> Result<Arc<AgentSession>> {
        match lock(&self.named).get(handle) {
            Some((owner, agent)) if owner == caller => Ok(agent.clone()),
            _ => Err(Error::SessionExpired(
                "this session URL names no open browser session (it was closed for idleness, or never existed)",
            )),
        }
    }

    /// Number of open browser sessions (leases); never waits on one.
    pub async fn open_browser_sessions(&self) -> usize {
        self.sessions.count()
    }

    /// Every open browser session: id, owner, age, idleness, calls in it, actions,
    /// refused requests, terms.
    pub fn leases(&self) -> Vec<LeaseInfo> {
        self.sessions.list()
    }

    /// Holds a browser session for an operator (`true`: its agent's calls are refused
    /// with `session_held` until it is handed back) or hands it back (`false`).
    pub fn hold(&self, id: &SessionId, held: bool) -> Result<()> {
        let lease = self.sessions.get(id).ok_or(Error::NoSuchSession)?;
        lease.set_held(held);
        tracing::info!(session.id = %id, held, "browser session hold changed");
        Ok(())
    }

    /// The screenshots a `transient` recording keeps of one of `tenant`'s sessions,
    /// oldest first (another tenant's session is no such session).
    pub fn recorded_steps(
        &self,
        tenant: &str,
        id: &SessionId,
    ) -> Result<Vec<crate::recording::Step>> {
        let lease = self
            .sessions
            .get(id)
            .filter(|lease| lease.owner.tenant == tenant)
            .ok_or(Error::NoSuchSession)?;
        Ok(lease.held.recorder.steps())
    }

    // What a new lease may consume.
    pub(crate) fn terms(&self) -> LeaseTerms {
        LeaseTerms {
            idle_ttl: self.config.idle_ttl,
            max_lifetime: self.config.max_lifetime,
            action_budget: self.config.action_budget,
        }
    }

    /// Appends an event that is no tool call (an authentication failure on a
    /// surface, a session's end, an operator's step) to the audit log, when the
    /// gateway has one, under `tenant` (none: the gateway's own), now.
    pub async fn record_event(&self, tenant: Option<&str>, event: airlock_audit::Event) {
        let tenant = tenant.unwrap_or(&self.config.credentials.tenant);
        if let Err(e) = self
            .audit
            .append(&airlock_audit::Entry::now(tenant, event), None)
            .await
        {
            tracing::error!(error = %e, "could not record an audit event");
        }
    }

    async fn reap_idle(&self) {
        self.forget_ended_conversations();
        self.sweep_homes().await;
        self.recordings.prune_due();
        self.expire_overdue_approvals().await;
        self.operators.release_untended_holds().await;
        let ttl = self.config.idle_ttl;
        self.learn_others_use().await;
        // Leases past their idle TTL or lifetime with no call in them end; their
        // agents say so once.
        for (lease, end, idle) in self.sessions.expire_due() {
            tracing::info!(
                session.id = %lease.id,
                tenant = %lease.owner.tenant,
                idle_ms = idle.as_millis() as u64,
                reason = match end {
                    End::OutLived => "lifetime",
                    End::HostGone => "browser host gone",
                    _ => "idle",
                },
                "closing browser session"
            );
            lease.held.close().await;
        }
        // Agents reached by a handle or a caller key are forgotten once they hold no
        // open lease and went unused for a TTL: a handle names a browser, not a slot
        // for ever, and stateless callers must not accumulate.
        let forget = |agent: &AgentSession| {
            let inner = &agent.inner;
            let open = inner
                .slot
                .try_lock()
                .map_or(true, |slot| slot.open_lease().is_some());
            !open
                && inner.busy.load(Ordering::Acquire) == 0
                && lock(&inner.last_used).elapsed() >= ttl
        };
        lock(&self.named).retain(|_, (_, agent)| !forget(agent));
        lock(&self.callers).retain(|_, agent| !forget(agent));
    }

    /// Resolves once the gateway stops (or [`Gateway::stop_streams`] is called): a
    /// long-lived reader ends then, so a server's graceful shutdown does not wait on it.
    pub async fn stopped(&self) {
        let mut rx = self.stopping.subscribe();
        let _ = rx.wait_for(|stopping| *stopping).await;
    }

    /// Ends every long-lived reader (event streams) now: the first step of a graceful
    /// shutdown, before the server waits for its connections to close.
    pub fn stop_streams(&self) {
        self.stopping.send_replace(true);
    }

    /// The gateway's approvals.
    pub fn approvals(&self) -> &crate::approvals::Approvals {
        &self.approvals
    }

    /// The gateway's audit log: its live feed and the reads that catch up on it.
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// What operators do to sessions' pages.
    pub fn operators(&self) -> &crate::takeover::Operators {
        &self.operators
    }

    /// Closes every browser session and stops every Chromium.
    pub async fn shutdown(&self) {
        self.stop_streams();
        if let Some(reaper) = lock(&self.reaper).take() {
            reaper.abort();
        }
        // Hold the stateless callers' sessions until they are closed below.
        let _callers: Vec<_> = lock(&self.callers).drain().map(|(_, a)| a).collect();
        let _named: Vec<_> = lock(&self.named).drain().map(|(_, (_, a))| a).collect();
        // On a shared store, sessions on shared workers go on: another replica
        // serves them (their rows stay). Every other closes.
        let shared = self.shared_store().is_some();
        let kept = |lease: &crate::sessions::Lease| {
            shared && lease.held.session.reachable_at().is_some() && lease.held.loaded.portable()
        };
        for (lease, kept) in self.sessions.drain(kept) {
            if kept {
                lease.held.session.release().await;
            } else {
                lease.held.close().await;
            }
        }
        self.warm.stop().await;
        self.host.shutdown().await;
        self.sessions.flush().await;
        self.audit.settle(true).await;
        if let Some(heart) = lock(&self.heart).take() {
            heart.abort();
        }
        if let Some(store) = self.store() {
            self.fleet.leave(store).await;
        }
    }
}

// Brings other processes' writes to this one: audit events onto the live feed and
// approval decisions to the calls waiting here. Woken by the store where it can
// (Postgres), polled where it cannot and as a backstop for missed wake-ups.
async fn follow_store(gateway: std::sync::Weak<Gateway>, store: Store) {
    use crate::audit::{FOLLOW_BACKSTOP, FOLLOW_POLL};
    let mut wakeups = store.wakeups().await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot listen for other replicas' writes; polling");
        None
    });
    let every = |w: &Option<_>| {
        let period = if w.is_some() {
            FOLLOW_BACKSTOP
        } else {
            FOLLOW_POLL
        };
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick
    };
    let mut tick = every(&wakeups);
    loop {
        let woke = tokio::select! {
            _ = tick.tick() => None,
            woke = next_wakeup(&mut wakeups) => Some(woke),
        };
        let Some(gateway) = gateway.upgrade() else {
            return;
        };
        if *gateway.stopping.borrow() {
            return;
        }
        match woke {
            Some(Ok(airlock_store::Wakeup::Approvals)) => gateway.approvals.tell_waiters(),
            Some(Ok(airlock_store::Wakeup::Audit)) | None => gateway.audit.follow().await,
            Some(Err(e)) => {
                tracing::warn!(error = %e, "lost the store's wake-ups; polling");
                wakeups = None;
                tick = every(&wakeups);
            }
        }
    }
}

async fn next_wakeup(
    wakeups: &mut Option<airlock_store::Wakeups>,
) -> Result<airlock_store::Wakeup, airlock_store::StoreError> {
    match wakeups {
        Some(w) => w.next().await,
        None => std::future::pending().await,
    }
}

// Writes the registry's session events to the audit log, in the order they happened,
// and forgets a closed session's row (its row was written when it opened). On a
// shared store a session's close is recorded by the replica that takes its row: one
// that several replicas served ends on the record once.
async fn write_journal(
    store: Store,
    audit: Arc<AuditLog>,
    mut events: tokio::sync::mpsc::UnboundedReceiver<Journal>,
) {
    // Whether an event since the last flush could not be written.
    let mut lost = false;
    while let Some(item) = events.recv().await {
        match item {
            Journal::Event(entry) => {
                let closed = match &entry.event {
                    Event::SessionClose(close) => Some(close.session.clone()),
                    _ => None,
                };
                if let Some(id) = &closed
                    && store.is_shared()
                    && !matches!(store.take_live_session(id).await, Ok(true))
                {
                    continue;
                }
                if let Err(e) = audit.append(&entry, None).await {
                    tracing::error!(error = %e, "could not record a session event");
                    lost = true;
                }
                if let Some(id) = closed
                    && let Err(e) = store.remove_live_session(&id).await
                {
                    tracing::warn!(error = %e, "could not forget a live session");
                }
            }
            Journal::Flush(done) => {
                let _ = done.send(!std::mem::take(&mut lost));
            }
        }
    }
}

/// The names `device` may take, for messages.
pub(crate) fn device_names() -> String {
    airlock_browser::DEVICES
        .iter()
        .map(|d| d.name)
        .collect::<Vec<_>>()
        .join(", ")
}
