//! Sessions any replica serves. On a shared store (Postgres) a live session's row
//! says where it runs (its worker's `[[workers]]` address and its id there) and what
//! it was opened with; a replica asked for a session it does not hold finds the row,
//! attaches to the session on its worker and serves it as its own lease
//! ("adoption"). New sessions claim their place in the store first, so caps count
//! every replica's sessions and a conversation gets one session whichever replica
//! its requests reach. Idle expiry reads the last use any replica wrote.
//!
//! A session that loaded vault secrets is adopted with the same secrets, loaded
//! again at the versions its row names (authority was checked, and a grant redeemed,
//! when it opened). Not adopted: one whose secret changed since (the page may still
//! show the old value, which this replica cannot know to hide), one that learned a
//! value no vault holds (what an operator typed), and one on a replica's own local
//! worker (nobody else can reach it).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use airlock_core::Role;
use airlock_store::{ClaimCaps, Claimed, LiveSessionRecord, Store};

use crate::Gateway;
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::sessions::{ConversationKey, Held, Lease, LeaseTerms, Principal, SessionId};

/// How long a replica waits for another to finish opening a session both were asked
/// for, and how often it looks (an open takes a browser context and a tab: well
/// under a second, seconds for a cold Chromium).
const OPENING_WITHIN: Duration = Duration::from_secs(60);
const OPENING_POLL: Duration = Duration::from_millis(50);

/// How often, at most, a busy lease tells the store it was used.
const TELL_USED_EVERY: Duration = Duration::from_secs(2);

impl Gateway {
    /// The store, when other replicas share it.
    pub(crate) fn shared_store(&self) -> Option<&Store> {
        self.store().filter(|s| s.is_shared())
    }

    // The row a new session will have (where it runs is added once it opened).
    pub(crate) fn live_row(
        &self,
        id: &SessionId,
        caller: &Principal,
        conversation: Option<&ConversationKey>,
        terms: &LeaseTerms,
        record: airlock_config::RecordMode,
        allow_hosts: &[String],
    ) -> LiveSessionRecord {
        let now = now_ms();
        LiveSessionRecord {
            id: id.to_string(),
            tenant: caller.tenant.clone(),
            user_id: conversation.map(|c| c.user.clone()),
            conversation: conversation.map(|c| c.conversation.clone()),
            gateway_pid: i64::from(std::process::id()),
            opened_ms: now,
            replica: Some(self.fleet.id().to_owned()),
            worker: None,
            worker_session: None,
            worker_key: None,
            idle_ttl_ms: Some(millis(terms.idle_ttl)),
            record: Some(record.as_str().to_owned()),
            allow_hosts: (!allow_hosts.is_empty())
                .then(|| serde_json::to_string(allow_hosts).unwrap_or_default()),
            holds_secrets: false,
            used_ms: Some(now),
            held_by: None,
            home: None,
            secrets: None,
            origins: None,
            fence: None,
            owner_key: caller.key.clone(),
            owner_role: Some(caller.role.as_str().to_owned()),
            actions: 0,
            policy_version: None,
        }
    }

    // Takes the new session's place in a shared store: `Some` when the conversation
    // or home has a live session already (that one). A place another replica's just-closed
    // session still holds is looked at again once this replica's own closes are
    // written.
    pub(crate) async fn claim(
        &self,
        row: &LiveSessionRecord,
        cap_user: Option<&str>,
    ) -> Result<Option<LiveSessionRecord>> {
        let Some(store) = self.shared_store() else {
            return Ok(None);
        };
        let caps = self.config.caps;
        let caps = ClaimCaps {
            per_user: caps.per_user.map(|n| n as u64),
            per_tenant: caps.per_tenant.map(|n| n as u64),
            total: caps.total.map(|n| n as u64),
        };
        for attempt in 0..2 {
            match store
                .claim_session(row, cap_user, caps)
                .await
                .map_err(unanswered)?
            {
                Claimed::New => return Ok(None),
                Claimed::Existing(existing)
                    if existing.replica.as_deref() != Some(self.fleet.id())
                        || self.tenant_lease(&existing.tenant, &existing.id).is_ok() =>
                {
                    return Ok(Some(*existing));
                }
                // This replica's own row for the conversation, its lease gone: a close
                // not yet written. Write it, then look again.
                Claimed::Existing(stale) if attempt == 0 => {
                    self.sessions.flush().await;
                    let _ = store.take_live_session(&stale.id).await;
                }
                Claimed::Full { .. } if attempt == 0 => {
                    self.sessions.flush().await;
                }
                Claimed::Full { scope, count } => {
                    return Err(Error::QuotaExceeded {
                        scope,
                        message: format!(
                            "{count} live browser sessions over every replica fill this {scope} cap (sessions.max_{})",
                            match scope {
                                "user" => "per_user",
                                "tenant" => "per_tenant",
                                _ => "total",
                            }
                        ),
                        retry_after_secs: 30,
                    });
                }
                Claimed::Existing(_) => {
                    return Err(Error::Internal(
                        "this replica's own row for the conversation is still there".to_owned(),
                    ));
                }
            }
        }
        Err(Error::Internal("the claim did not settle".to_owned()))
    }

    // Gives back a place claimed for a session that did not open.
    pub(crate) async fn unclaim(&self, id: &SessionId) {
        if let Some(store) = self.shared_store()
            && let Err(e) = store.take_live_session(id.as_str()).await
        {
            tracing::warn!(error = %e, "could not give back a session's place");
        }
    }

    /// One of `tenant`'s sessions: held here, or (on a shared store) another
    /// replica's, adopted now.
    pub(crate) async fn find_lease(&self, tenant: &str, id: &str) -> Result<Arc<Lease>> {
        match self.tenant_lease(tenant, id) {
            Ok(lease) => self.as_stored(lease).await,
            Err(e) => {
                let Some(store) = self.shared_store() else {
                    return Err(e);
                };
                match store.live_session(id).await.map_err(unanswered)? {
                    Some(row) if row.tenant == tenant => self.adopt(tenant, row).await,
                    _ => Err(e),
                }
            }
        }
    }

    /// `lease`, held here, as the store has it now: a shared session another
    /// replica ended is gone here too (the store's row is the truth; its close is
    /// recorded there, once), and an operator's hold on any replica holds it here.
    pub(crate) async fn as_stored(&self, lease: Arc<Lease>) -> Result<Arc<Lease>> {
        let Some(store) = self.shared_store() else {
            return Ok(lease);
        };
        if lease.held.session.reachable_at().is_none() {
            return Ok(lease);
        }
        let Some(row) = store
            .live_session(lease.id.as_str())
            .await
            .map_err(unanswered)?
        else {
            self.sessions
                .close(&lease, crate::sessions::End::Closed)
                .await;
            return Err(Error::NoSuchSession);
        };
        if row.holds_secrets && lease.held.loaded.portable() {
            // It learned a value on another replica (an operator typed there): this
            // one cannot redact it, so it lets go.
            self.sessions.forget(&lease.id);
            lease.held.session.release().await;
            return Err(elsewhere(Some(store), row.replica.as_deref(), KNOWS_SECRETS).await);
        }
        lease.hold_as_stored(row.held_by.as_deref());
        Ok(lease)
    }

    // Serves `row`'s session from here: attaches to it on its worker and holds it as
    // a lease of this replica.
    pub(crate) async fn adopt(&self, tenant: &str, row: LiveSessionRecord) -> Result<Arc<Lease>> {
        let row = self.opened(row).await?;
        if row.tenant != tenant {
            return Err(Error::NoSuchSession);
        }
        let not_here = |why| elsewhere(self.shared_store(), row.replica.as_deref(), why);
        let Some((address, on_worker, key)) = on_worker(&row) else {
            return Err(not_here(KNOWS_SECRETS).await);
        };
        if row.holds_secrets {
            return Err(not_here(KNOWS_SECRETS).await);
        }
        // The vault's secrets it loaded, loaded again here at the same versions.
        let loaded = match &row.secrets {
            None => crate::credentials::Loaded::default(),
            Some(stored) => match self.config.credentials.reload(tenant, stored).await? {
                Some(loaded) => loaded,
                None => return Err(not_here(CHANGED).await),
            },
        };
        // One adoption at a time: two would attach twice and hold one session twice.
        let _one = self.adopting.lock().await;
        if let Ok(lease) = self.tenant_lease(tenant, &row.id) {
            return Ok(lease);
        }
        let allow_hosts: Vec<String> = row
            .allow_hosts
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| Error::Internal(format!("a live session's host list: {e}")))?
            .unwrap_or_default();
        // Judged as where it opened: its tenant's policy at the version it opened under.
        let plan = self.plan(tenant, row.policy_version).await?;
        let policy = self.narrowed_policy(&plan.egress, &allow_hosts)?;
        // Its own origin sets, judged here as where it opened.
        let own = match &row.origins {
            None => None,
            Some(stored) => {
                let lists: std::collections::BTreeMap<String, Vec<String>> =
                    serde_json::from_str(stored).map_err(|e| {
                        Error::Internal(format!("a live session's origin sets: {e}"))
                    })?;
                let list = |k: &str| lists.get(k).cloned().unwrap_or_default();
                crate::tools::OpenOptions {
                    act_origins: list("act"),
                    read_origins: list("read"),
                    ..Default::default()
                }
                .origin_sets()?
            }
        };
        let sets = crate::reads::Sets::new(&self.config.flow.origins, plan.origins.clone(), own);
        let signer = Box::pin(self.session_signer(tenant, &plan, &policy)).await?;
        let session = match self.host.attach(address, on_worker, &key).await {
            Ok(session) => {
                // The worker asks whichever connection holds the session: this one
                // answers with the tenant's key too.
                if let Some(signer) = &signer {
                    session.sign_with(Arc::new(crate::identity::Signs(signer.clone())));
                }
                // Its worker allows downloads already (told at open); they come here
                // from now on too.
                if let Some(dir) = &self.config.download_dir {
                    session.keep_downloads(self.downloads_to(tenant, dir));
                }
                session
            }
            Err(airlock_browser::Error::SessionClosed) => {
                // Gone on its worker (nobody held it past the grace): gone here too.
                let _ = self.end_gone_row(&row, "closed on its worker").await;
                return Err(Error::NoSuchSession);
            }
            Err(e) => return Err(e.into()),
        };
        loaded.allow_sockets(self.policy.websocket_origins());
        let record = row
            .record
            .as_deref()
            .and_then(airlock_config::RecordMode::parse)
            .unwrap_or(self.config.recording);
        let conversation = match (&row.user_id, &row.conversation) {
            (Some(user), Some(conversation)) => Some(ConversationKey {
                user: user.clone(),
                conversation: conversation.clone(),
            }),
            _ => None,
        };
        let held = Arc::new(Held::new(crate::sessions::Opening {
            session,
            memory: self.memories.of(
                crate::memory::scope_of(
                    plan.flow.scope,
                    tenant,
                    row.owner_key.as_deref(),
                    conversation.as_ref(),
                ),
                &plan.flow,
            ),
            plan,
            policy,
            sets,
            loaded,
            recorder: Arc::new(crate::recording::Recorder::new(record)),
            // A row from before fences were kept: a nonce of this replica's own.
            fence: row
                .fence
                .as_deref()
                .and_then(crate::content::PageFence::with_nonce)
                .unwrap_or_default(),
            warm: false,
            signer,
        }));
        // What the session read and the actions it ran are the fleet's: this replica
        // catches up on them, never starts them afresh.
        if let Some(store) = self.shared_store() {
            held.reads.share(store, &row.id);
        }
        let terms = LeaseTerms {
            idle_ttl: row.idle_ttl_ms.map_or(self.config.idle_ttl, |ms| {
                Duration::from_millis(ms.max(0) as u64)
            }),
            ..self.terms()
        };
        let now = now_ms();
        let ago = |ms: i64| Duration::from_millis((now - ms).max(0) as u64);
        let lease = self.sessions.adopt(
            SessionId::stored(row.id.clone()),
            // Its caller as it opened it (a row from before owners were kept: an
            // agent of the tenant).
            Principal {
                tenant: row.tenant.clone(),
                role: row
                    .owner_role
                    .as_deref()
                    .and_then(Role::parse)
                    .unwrap_or(Role::Act),
                key: row.owner_key.clone(),
            },
            conversation.clone(),
            terms,
            held,
            (
                ago(row.opened_ms),
                ago(row.used_ms.unwrap_or(row.opened_ms)),
            ),
        );
        if let Some(key) = conversation {
            let slot = crate::sessions::ConversationSlot::default();
            *slot.try_lock().expect("a new slot is free") = Some(lease.id.clone());
            airlock_core::sync::lock(&self.conversations)
                .entry((row.tenant.clone(), key))
                .or_insert(slot);
        }
        tracing::info!(
            session.id = %lease.id,
            tenant = %row.tenant,
            opened_by = row.replica.as_deref().unwrap_or(""),
            "serving a browser session another replica opened"
        );
        Ok(lease)
    }

    // `row` once its session has opened: a row claimed by a replica still opening
    // it says where it runs only after. A row that goes meanwhile (the open failed)
    // is no session.
    async fn opened(&self, mut row: LiveSessionRecord) -> Result<LiveSessionRecord> {
        let Some(store) = self.store() else {
            return Ok(row);
        };
        let deadline = tokio::time::Instant::now() + OPENING_WITHIN;
        while row.worker_session.is_none() {
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Internal(
                    "another replica is still opening this session".to_owned(),
                ));
            }
            tokio::time::sleep(OPENING_POLL).await;
            row = store
                .live_session(&row.id)
                .await
                .map_err(unanswered)?
                .ok_or(Error::NoSuchSession)?;
        }
        Ok(row)
    }

    // Ends on the record, once (whoever takes the row), a session whose browser is
    // gone though its row stayed.
    pub(crate) async fn end_gone_row(&self, row: &LiveSessionRecord, reason: &str) -> bool {
        let Some(store) = self.store() else {
            return false;
        };
        if !matches!(store.take_live_session(&row.id).await, Ok(true)) {
            return false;
        }
        let close = airlock_audit::SessionChange {
            session: row.id.clone(),
            caller: None,
            isolation: None,
            credentials: None,
            grant: None,
            record: None,
            start: None,
            open_ms: None,
            user: row.user_id.clone(),
            conversation: row.conversation.clone(),
            reason: Some(reason.to_owned()),
            gateway_pid: Some(row.gateway_pid),
            signing_key: None,
        };
        self.record_event(Some(&row.tenant), airlock_audit::Event::SessionClose(close))
            .await;
        true
    }

    /// Whether this replica can serve: its store answers, and when its sessions run
    /// on workers of other machines, at least one answers. Says what is missing.
    pub async fn ready(&self) -> std::result::Result<(), String> {
        if let Some(store) = self.store() {
            // A probe's answer is due in a second or two, not at the pool's timeout.
            match tokio::time::timeout(Duration::from_secs(2), store.ping()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "not ready: the store does not answer");
                    return Err("the store does not answer".to_owned());
                }
                Err(_) => return Err("the store does not answer within 2 s".to_owned()),
            }
        }
        let workers = self.host.workers_status(Duration::from_millis(1500)).await;
        if workers.is_empty() && self.host.takes_registrations() {
            return Err("no browser worker has registered yet".to_owned());
        }
        if !workers.is_empty() && !workers.iter().any(|(_, load, _)| load.is_some()) {
            return Err(format!(
                "none of the {} browser workers answers",
                workers.len()
            ));
        }
        Ok(())
    }

    /// Puts what the browser workers refused (a wrong token, a foreign uid, an
    /// attach without a session's key …) on the record: one event per worker and
    /// reason, with how many times. The heartbeat's step; each refusal reaches one
    /// replica only.
    pub(crate) async fn record_worker_refusals(&self) {
        for (worker, reason, count) in self.host.worker_refusals(Duration::from_secs(2)).await {
            // A worker this control plane started has no address of its own.
            let worker = if worker.is_empty() {
                "the local worker".to_owned()
            } else {
                worker
            };
            tracing::warn!(%worker, %reason, count, "a browser worker refused a peer");
            let failure = airlock_audit::AuthFailure {
                surface: "worker".to_owned(),
                reason,
                client: Some(worker),
                count: Some(count),
            };
            self.record_event(None, airlock_audit::Event::AuthFailure(failure))
                .await;
        }
    }

    /// Ends, on the record and once over every replica, the shared sessions of a
    /// worker that has not answered for [`crate::GONE_AFTER`]: its browsers went
    /// with it. The heartbeat's step; returns how many it ended here.
    pub(crate) async fn end_sessions_of_gone_workers(&self) -> usize {
        let Some(store) = self.shared_store() else {
            return 0;
        };
        let now = tokio::time::Instant::now();
        let mut gone = Vec::new();
        for (address, load, about) in self.host.workers_status(Duration::from_secs(2)).await {
            if let Some(load) = load {
                airlock_core::sync::lock(&self.workers_down).remove(&address);
                // Every replica that reaches a worker writes its row: what each
                // holds and has room for, seen from the whole fleet.
                let _ = store
                    .upsert_host(&worker_row(&address, &load, &about))
                    .await;
                continue;
            }
            let mut down = airlock_core::sync::lock(&self.workers_down);
            let since = *down.entry(address.clone()).or_insert(now);
            if now.duration_since(since) >= crate::fleet::GONE_AFTER {
                gone.push(address);
            }
        }
        if gone.is_empty() {
            return 0;
        }
        let Ok(live) = store.live_sessions().await else {
            return 0;
        };
        let mut ended = 0;
        for row in live {
            if row.worker.as_ref().is_some_and(|w| gone.contains(w)) {
                if let Some(lease) = self.sessions.get(&SessionId::stored(row.id.clone())) {
                    // Held here: it ends as any lease whose host went (its close is
                    // recorded by whoever takes the row, this replica included).
                    self.sessions
                        .close(&lease, crate::sessions::End::HostGone)
                        .await;
                    ended += 1;
                } else if self.end_gone_row(&row, "browser host gone").await {
                    ended += 1;
                }
            }
        }
        if ended > 0 {
            tracing::warn!(sessions = ended, workers = ?gone, "ended the sessions of browser workers that stopped answering");
        }
        ended
    }

    /// Live sessions over every replica (the store's count), for `/metrics`; `None`
    /// without a shared store.
    pub async fn fleet_sessions(&self) -> Option<usize> {
        self.shared_store()?
            .live_sessions()
            .await
            .ok()
            .map(|l| l.len())
    }

    /// Tells a shared store `lease` was used now, at most every few seconds.
    pub(crate) async fn tell_used(&self, lease: &Lease) {
        let Some(store) = self.shared_store() else {
            return;
        };
        let now = now_ms();
        let told = lease.told_store.load(Ordering::Relaxed);
        if now - told < millis(TELL_USED_EVERY) {
            return;
        }
        lease.told_store.store(now, Ordering::Relaxed);
        if let Err(e) = store.touch_live_session(lease.id.as_str(), now).await {
            tracing::warn!(error = %e, "could not note a session's use");
        }
    }

    /// Before the reaper ends idle leases: each shared lease idle here learns when
    /// another replica last used it.
    pub(crate) async fn learn_others_use(&self) {
        let Some(store) = self.shared_store() else {
            return;
        };
        for lease in self.sessions.leases() {
            if lease.expires_in() != Some(Duration::ZERO) {
                continue;
            }
            if let Ok(Some(row)) = store.live_session(lease.id.as_str()).await
                && let Some(used) = row.used_ms
            {
                lease.used_ago(Duration::from_millis((now_ms() - used).max(0) as u64));
            }
        }
    }
}

// A worker's row in `hosts`, as a replica that reaches it sees it now (its id is its
// address: every replica names it the same).
fn worker_row(
    address: &str,
    load: &airlock_worker::Load,
    about: &airlock_worker::About,
) -> airlock_store::HostRecord {
    let now = now_ms();
    airlock_store::HostRecord {
        id: address.to_owned(),
        role: "worker".to_owned(),
        address: Some(address.to_owned()),
        capacity: load.capacity.map_or(0, |c| c as i64),
        sessions: load.sessions as i64,
        free_mb: load.free_mib as i64,
        version: format!("protocol {}", about.protocol),
        hostname: address
            .rsplit_once(':')
            .map_or(address, |(host, _)| host)
            .to_owned(),
        pid: i64::from(about.pid),
        started_ms: now,
        heartbeat_ms: now,
        draining: load.closed,
    }
}

/// Where `row`'s session runs on a shared worker: the worker's address, the
/// session's id there and what attaching to it takes (a row without a key was
/// written by no replica of this version: nothing attaches to it).
pub(crate) fn on_worker(
    row: &LiveSessionRecord,
) -> Option<(&str, &str, airlock_worker::AttachKey)> {
    Some((
        row.worker.as_deref()?,
        row.worker_session.as_deref()?,
        airlock_worker::AttachKey::from_stored(row.worker_key.as_deref()?),
    ))
}

// Why a replica does not serve a session another one does.
// Why a replica does not serve a session alive on another: the one that can, by its
// id and machine (a pod's name), and why only it can.
async fn elsewhere(store: Option<&Store>, replica: Option<&str>, why: &str) -> Error {
    let host = match (store, replica) {
        (Some(store), Some(id)) => store
            .hosts()
            .await
            .ok()
            .and_then(|hosts| hosts.into_iter().find(|h| h.id == id))
            .map(|h| h.hostname),
        _ => None,
    };
    let which = match (replica, host) {
        (Some(id), Some(host)) => format!("replica {id} (on {host})"),
        (Some(id), None) => format!("replica {id}"),
        _ => "the replica that opened it".to_owned(),
    };
    Error::SessionElsewhere(format!(
        "this browser session is alive, but only {which} can serve it ({why}); send its requests there, or lease a new session"
    ))
}

// Why only its replica serves it.
const KNOWS_SECRETS: &str = "it knows values no vault holds: an operator typed into it, or it runs on that replica's own worker";
const CHANGED: &str = "a credential it loaded was changed or removed since it opened, and only that replica can hide what it loaded";

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn unanswered(e: airlock_store::StoreError) -> Error {
    tracing::error!(error = %e, "the store failed a sessions request");
    Error::Internal("the store could not answer".to_owned())
}
