//! Leasing: a backend gets (or creates) the browser session of a (user,
//! conversation) of its tenant, keeps it alive with heartbeats, lists and ends its
//! sessions, and hands the session's MCP URL to whichever agent run comes next. Any
//! key of the tenant reaches a leased session; each call is judged by that key's role.
//!
//! Every lookup is scoped to the caller's tenant: another tenant's session answers
//! exactly like one that does not exist.

use std::sync::Arc;
use std::time::Duration;

use airlock_core::sync::lock;

use crate::error::{Error, Result};
use crate::session::{AgentSession, Gateway};
use crate::sessions::{ConversationKey, LeaseInfo, LeaseTerms, Principal};
use crate::surface::Surface;
use crate::tools::OpenOptions;

/// Longest idle TTL a lease may ask for.
pub const MAX_LEASE_TTL: Duration = Duration::from_secs(24 * 3600);
/// Longest user or conversation id.
const MAX_KEY_CHARS: usize = 200;

/// A backend's request for the session of one (user, conversation).
#[derive(Debug, Default)]
pub struct LeaseRequest {
    /// The backend's user.
    pub user: String,
    /// The conversation (or agent run) of that user.
    pub conversation: String,
    /// Idle TTL of a new session (the gateway's default when `None`).
    pub ttl: Option<Duration>,
    /// How a new session opens; ignored when the session exists.
    pub options: OpenOptions,
}

/// A leased session and whether this request created it.
#[derive(Debug, Clone)]
pub struct Leased {
    /// The session as it is now.
    pub info: LeaseInfo,
    /// Created by this request (else it existed).
    pub created: bool,
}

fn valid_key(what: &str, text: &str) -> Result<()> {
    if text.is_empty() || text.chars().count() > MAX_KEY_CHARS || text.chars().any(char::is_control)
    {
        return Err(Error::InvalidArgument(format!(
            "{what} must be 1–{MAX_KEY_CHARS} characters with no control characters"
        )));
    }
    Ok(())
}

impl Gateway {
    /// The session of `request`'s (user, conversation) within `caller`'s tenant:
    /// the open one, or a new one. A hundred racing requests for one key get one
    /// session (one browser context is opened).
    pub async fn lease(&self, caller: &Principal, request: LeaseRequest) -> Result<Leased> {
        valid_key("user_id", &request.user)?;
        valid_key("conversation_id", &request.conversation)?;
        let ttl = match request.ttl {
            Some(ttl) if ttl.is_zero() || ttl > MAX_LEASE_TTL => {
                return Err(Error::InvalidArgument(format!(
                    "ttl_secs must be between 1 and {}",
                    MAX_LEASE_TTL.as_secs()
                )));
            }
            Some(ttl) => ttl,
            None => self.terms().idle_ttl,
        };
        let key = ConversationKey {
            user: request.user,
            conversation: request.conversation,
        };
        let slot = lock(&self.conversations)
            .entry((caller.tenant.clone(), key.clone()))
            .or_default()
            .clone();
        let mut slot = slot.lock().await;
        if let Some(id) = slot.as_ref()
            && let Some(lease) = self.sessions.get(id)
            && lease.ended().is_none()
            && lease.expires_in() != Some(Duration::ZERO)
        {
            return Ok(Leased {
                info: self.sessions.info(&lease),
                created: false,
            });
        }
        let terms = crate::sessions::LeaseTerms {
            idle_ttl: ttl,
            ..self.terms()
        };
        let (lease, created) = self
            .open_lease(caller, request.options, Some(key), None, terms)
            .await?;
        *slot = Some(lease.id.clone());
        if !created {
            return Ok(Leased {
                info: self.sessions.info(&lease),
                created: false,
            });
        }
        // On the record (and in `live_sessions`) before the backend hears of it: a
        // gateway killed a moment later still leaves a trace the next start ends. A
        // session whose opening is not on the record is not handed out.
        if !self.sessions.flush().await {
            self.sessions
                .close(&lease, crate::sessions::End::Closed)
                .await;
            // Its close may go unwritten too: that is this lease's, not the next's.
            self.sessions.flush().await;
            *slot = None;
            return Err(Error::StoreUnavailable(
                "the session could not be put on the audit record, so it was not handed out; try again shortly"
                    .to_owned(),
            ));
        }
        tracing::info!(
            session.id = %lease.id,
            tenant = %caller.tenant,
            "browser session leased"
        );
        Ok(Leased {
            info: self.sessions.info(&lease),
            created: true,
        })
    }

    /// One of `tenant`'s open sessions (another replica's too, on a shared store).
    pub async fn session_info(&self, tenant: &str, id: &str) -> Result<LeaseInfo> {
        let lease = self.find_lease(tenant, id).await?;
        Ok(self.sessions.info(&lease))
    }

    /// Extends the idle TTL of one of `tenant`'s sessions from now.
    pub async fn heartbeat(&self, tenant: &str, id: &str) -> Result<LeaseInfo> {
        let lease = self.find_lease(tenant, id).await?;
        if lease.touch().is_some() {
            return Err(Error::NoSuchSession);
        }
        self.tell_used(&lease).await;
        Ok(self.sessions.info(&lease))
    }

    /// Ends one of `tenant`'s sessions now (a call in it fails on the closed browser).
    pub async fn end_session(&self, tenant: &str, id: &str) -> Result<()> {
        let lease = self.find_lease(tenant, id).await?;
        self.sessions
            .close(&lease, crate::sessions::End::Closed)
            .await;
        Ok(())
    }

    /// The screenshots a recording keeps of one of `tenant`'s open sessions, oldest
    /// first.
    pub async fn session_steps(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Vec<crate::recording::Step>> {
        let lease = self.find_lease(tenant, id).await?;
        Ok(lease.held.recorder.steps())
    }

    /// `tenant`'s open sessions (of one user, if given) on every replica: this
    /// one's, then (on a shared store) those the store shows open elsewhere, each
    /// saying which replica opened it. Oldest first.
    pub async fn sessions_everywhere(
        &self,
        tenant: &str,
        user: Option<&str>,
    ) -> Result<Vec<LeaseInfo>> {
        let mut listed = self.tenant_sessions(tenant, user);
        for info in &mut listed {
            info.replica = self.shared_store().map(|_| self.fleet.id().to_owned());
        }
        let Some(store) = self.shared_store() else {
            return Ok(listed);
        };
        let rows = store.live_sessions().await.map_err(|e| {
            tracing::warn!(error = %e, "could not list the fleet's sessions");
            Error::StoreUnavailable(
                "the store that lists every replica's sessions cannot be reached; retry shortly"
                    .to_owned(),
            )
        })?;
        let now = crate::clock::now_ms();
        let ago = |ms: i64| Duration::from_millis((now - ms).max(0) as u64);
        for row in rows {
            if row.tenant != tenant
                || user.is_some_and(|u| row.user_id.as_deref() != Some(u))
                || listed.iter().any(|l| l.id.as_str() == row.id)
                // A place claimed for a session still opening.
                || row.worker_session.is_none()
            {
                continue;
            }
            let idle = ago(row.used_ms.unwrap_or(row.opened_ms));
            let terms = LeaseTerms {
                idle_ttl: row.idle_ttl_ms.map_or(self.config.idle_ttl, |ms| {
                    Duration::from_millis(ms.max(0) as u64)
                }),
                ..self.terms()
            };
            listed.push(LeaseInfo {
                id: crate::sessions::SessionId::stored(row.id.clone()),
                owner: Principal {
                    tenant: row.tenant.clone(),
                    role: row
                        .owner_role
                        .as_deref()
                        .and_then(airlock_core::Role::parse)
                        .unwrap_or(airlock_core::Role::Act),
                    key: row.owner_key.clone(),
                },
                age: ago(row.opened_ms),
                idle,
                busy: 0,
                dedicated: false,
                conversation: match (&row.user_id, &row.conversation) {
                    (Some(user), Some(conversation)) => Some(ConversationKey {
                        user: user.clone(),
                        conversation: conversation.clone(),
                    }),
                    _ => None,
                },
                terms,
                actions: row.actions.max(0) as u64,
                blocked: 0,
                held: row.held_by.is_some(),
                controller: row.held_by.clone(),
                expires_in: Some(terms.idle_ttl.saturating_sub(idle)),
                record: row
                    .record
                    .as_deref()
                    .and_then(airlock_config::RecordMode::parse)
                    .unwrap_or(self.config.recording),
                replica: row.replica.clone(),
                here: false,
                policy_version: row.policy_version,
            });
        }
        listed.sort_by_key(|l| std::cmp::Reverse(l.age));
        Ok(listed)
    }

    /// `tenant`'s open sessions held by this replica (of one user, if given),
    /// oldest first.
    pub fn tenant_sessions(&self, tenant: &str, user: Option<&str>) -> Vec<LeaseInfo> {
        self.sessions
            .list()
            .into_iter()
            .filter(|l| l.owner.tenant == tenant)
            .filter(|l| {
                user.is_none_or(|user| l.conversation.as_ref().is_some_and(|c| c.user == user))
            })
            .collect()
    }

    /// The agent through which `caller` drives the session `handle` names: a
    /// stateless client's own named session, or a leased session of the caller's
    /// tenant. Anything else — another caller's handle, another tenant's session, an
    /// ended one — answers `session_expired`, all alike.
    pub async fn session_agent(
        self: &Arc<Self>,
        caller: &Principal,
        handle: &str,
    ) -> Result<Arc<AgentSession>> {
        if let Ok(agent) = self.named_agent(&caller.caller(), handle) {
            return Ok(agent);
        }
        // Not a lease held here: perhaps a session URL named through another replica.
        if self.tenant_lease(&caller.tenant, handle).is_err()
            && let Some(agent) = self.named_from_home(caller, handle).await?
        {
            return Ok(agent);
        }
        let gone = || {
            Error::SessionExpired(
                "this session URL names no open browser session (it ended, or never existed); lease a new one",
            )
        };
        let lease = self
            .find_lease(&caller.tenant, handle)
            .await
            .map_err(|e| match e {
                // The tenant's own session, alive but served on another replica (or
                // ended): say so.
                e @ (Error::SessionExpired(_) | Error::SessionElsewhere(_)) => e,
                _ => gone(),
            })?;
        if lease.conversation.is_none() {
            // An agent's own session is reached through its agent only.
            return Err(gone());
        }
        Ok(self.pinned_agent(caller, lease, Surface::Mcp))
    }

    /// `caller`'s browser named `name` (a stateless MCP client's `/mcp/b/NAME`): the
    /// one open for (caller, name), or a new one, kept until it idles out like any
    /// leased session. Scoped by caller: two keys naming the same name get two
    /// browsers.
    pub async fn named_browser(
        self: &Arc<Self>,
        caller: &Principal,
        name: &str,
    ) -> Result<Arc<AgentSession>> {
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !valid {
            return Err(Error::InvalidArgument(
                "a browser's name in /mcp/b/NAME is 1 to 64 letters, digits, `-`, `_` or `.`"
                    .to_owned(),
            ));
        }
        let leased = self
            .lease(
                caller,
                LeaseRequest {
                    user: caller.caller(),
                    conversation: format!("mcp-browser:{name}"),
                    ttl: None,
                    options: OpenOptions::default(),
                },
            )
            .await?;
        self.session_agent(caller, &leased.info.id.to_string())
            .await
    }

    pub(crate) fn tenant_lease(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Arc<crate::sessions::Lease>> {
        self.sessions.tenant_lease(tenant, id)
    }

    // Conversation slots whose session ended go (the reaper's tick).
    pub(crate) fn forget_ended_conversations(&self) {
        lock(&self.conversations).retain(|_, slot| match slot.try_lock() {
            // Being created or looked up now: keep.
            Err(_) => true,
            Ok(id) => id
                .as_ref()
                .and_then(|id| self.sessions.get(id))
                .is_some_and(|lease| lease.ended().is_none()),
        });
    }
}

impl Gateway {
    /// Ends, on the record, the sessions the store shows open for replicas that are
    /// gone (killed before they could close them; see `fleet.rs` for how that is
    /// judged), and forgets the gone replicas. Returns how many sessions this replica
    /// ended: a row is ended by the one replica that takes it, however many look.
    pub async fn end_orphaned_sessions(&self) -> Result<usize> {
        let Some(store) = self.store() else {
            return Ok(0);
        };
        let unanswered = |e: airlock_store::StoreError| {
            Error::Internal(format!("cannot read live sessions: {e}"))
        };
        let live = store.live_sessions().await.map_err(unanswered)?;
        let hosts = store.hosts().await.map_err(unanswered)?;
        let (live, gone_hosts) = self.fleet.gone(live, &hosts);
        let mut ended = 0;
        let now = crate::clock::now_ms();
        for row in live {
            // A session on a shared worker outlives its replica: another serves it
            // (adoption), and it ends when idle past its TTL on every replica.
            let adoptable = store.is_shared() && row.worker.is_some() && !row.holds_secrets;
            let idle_until = row.used_ms.unwrap_or(row.opened_ms)
                + row
                    .idle_ttl_ms
                    .unwrap_or(self.config.idle_ttl.as_millis() as i64);
            if adoptable && now < idle_until {
                continue;
            }
            let reason = if adoptable { "idle" } else { "gateway gone" };
            if !self.end_gone_row(&row, reason).await {
                continue; // another replica took it
            }
            // Its browser, if its worker still keeps it, goes now.
            if let Some((address, on_worker, key)) = crate::adoption::on_worker(&row)
                && let Ok(session) = self.host.attach(address, on_worker, &key).await
            {
                session.close().await;
            }
            ended += 1;
        }
        for host in gone_hosts {
            self.close_what_is_left(store, &host, now).await;
            store.remove_host(&host).await.map_err(unanswered)?;
        }
        if ended > 0 {
            tracing::warn!(
                sessions = ended,
                "ended browser sessions left open by a gateway that stopped without closing them"
            );
        }
        Ok(ended)
    }

    /// Tells the agents of `tenant`'s sessions on this replica that loaded stored
    /// login `name` (its secret) that it ended, in their next result, once: they
    /// stop trusting pages of its site to be signed in. Not the login's own check.
    /// Returns how many were told.
    pub fn login_ended(&self, tenant: &str, name: &str, why: &str) -> usize {
        let own = format!("login:{name}");
        let mut told = 0;
        for lease in self.sessions.leases() {
            if lease.owner.tenant != tenant
                || lease.owner.key.as_deref() == Some(own.as_str())
                || !lease.held.loaded.names().contains(&name)
            {
                continue;
            }
            lease.note_login(format!(
                "stored login `{name}` has ended ({why}); pages of its site may ask to sign in again — do not try to sign in yourself: the operator has been told"
            ));
            told += 1;
        }
        told
    }
}
