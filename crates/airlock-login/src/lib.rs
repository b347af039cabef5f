//! Stored logins that stay alive. A login names the vault secret an agent's session
//! opens with (its cookies, username, password, TOTP seed) and says how to tell it
//! is alive (a probe page) and how to renew it (a flow of catalogue calls that types
//! only placeholders). Each is checked on a schedule by whichever replica claims it
//! first (one conditional update in the shared store), in a browser session of its
//! own opened through the gateway like any agent's, so the egress policy, origin
//! binding, risk rules and the audit record apply to every step. A renewal that
//! meets a step only a person can pass (a new device, an SMS code, a CAPTCHA — never
//! solved) marks the login `needs_user` and waits: a one-time link, single use,
//! short-lived and usable only by a console admin of the login's tenant, takes the
//! person's code straight into the waiting page (or a password into the vault),
//! never through an agent, a model or a log.
//!
//! Layer 2½ beside `airlock-task`: it uses the catalogue to run a flow's steps and
//! the gateway for everything else; the surfaces (`airlock-http`, the CLI) call it.

mod check;
mod links;
pub mod spec;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_gateway::Gateway;
use airlock_store::{SiteLoginRecord, Store};
use serde::Serialize;

pub use check::Report;
pub use links::{LINK_PATH, LINK_TTL, LinkView, OFFER_EVERY};
pub use spec::LoginSpec;

/// How often each replica looks for logins that are due.
pub const TICK: Duration = Duration::from_secs(5);
/// How long a replica's claim on a check holds before another may take it (a
/// replica that died mid-check lets go by then).
pub const CLAIM: Duration = Duration::from_secs(120);

/// What went wrong, in words for the operator.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A definition or argument is wrong.
    #[error("{0}")]
    Invalid(String),
    /// No such login in the caller's tenant.
    #[error("no stored login `{0}` in this tenant")]
    NotFound(String),
    /// Another check of it runs now.
    #[error("login `{0}` is being checked right now; its state changes when that check ends")]
    Busy(String),
    /// The link is unknown, used, expired or another tenant's (one answer for all).
    #[error(
        "this link was used, has expired, or is not for you; ask an admin for a new one (the console's Logins page)"
    )]
    Link,
    /// The renewal the link feeds waits on another replica.
    #[error("the renewal waiting for this code runs on replica {0}; open the link through it")]
    Elsewhere(String),
    /// The store did not answer.
    #[error("the store: {0}")]
    Store(#[from] airlock_store::StoreError),
    /// The gateway refused something (the vault, a session).
    #[error("{0}")]
    Gateway(String),
}

/// This crate's results.
pub type Result<T> = std::result::Result<T, Error>;

/// A login's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Defined, never checked.
    Unchecked,
    /// The probe saw it logged in.
    Alive,
    /// Its renewal flow runs now.
    Renewing,
    /// Only a person can renew it.
    NeedsUser,
    /// Its renewal failed (the site changed, the flow is wrong, the site is down).
    Failed,
}

impl State {
    /// Its word in the store and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Unchecked => "unchecked",
            State::Alive => "alive",
            State::Renewing => "renewing",
            State::NeedsUser => "needs_user",
            State::Failed => "failed",
        }
    }

    fn parse(word: &str) -> State {
        match word {
            "alive" => State::Alive,
            "renewing" => State::Renewing,
            "needs_user" => State::NeedsUser,
            "failed" => State::Failed,
            _ => State::Unchecked,
        }
    }
}

/// A login as the API and the console show it: its state and definition, never a
/// value (the definition holds none).
#[derive(Debug, Clone, Serialize)]
pub struct LoginView {
    /// Its name (the vault secret it keeps alive).
    pub name: String,
    /// Its state.
    pub state: State,
    /// Why, in one line.
    pub why: String,
    /// Whether it is checked.
    pub enabled: bool,
    /// When its last check ended (Unix ms).
    pub checked_ms: Option<i64>,
    /// When it is next checked.
    pub due_ms: i64,
    /// The replica checking it now.
    pub checking: Option<String>,
    /// Whether a renewal waits on this replica for a person's code.
    pub waiting: bool,
    /// Its definition.
    pub spec: serde_json::Value,
}

/// A change of state worth a person's attention, for watchers on this replica.
#[derive(Debug, Clone, Serialize)]
pub struct Notice {
    /// The tenant.
    pub tenant: String,
    /// The login.
    pub login: String,
    /// Its state now.
    pub state: State,
    /// Why.
    pub why: String,
}

/// The stored logins of a gateway: definitions, checks, the schedule, links.
pub struct Logins {
    gateway: Arc<Gateway>,
    store: Store,
    link_ttl: Duration,
    // Renewals on this replica waiting for a person's code, by (tenant, login).
    waiting: Mutex<HashMap<(String, String), check::Waiting>>,
    // When a link was last offered to an agent's client, by (tenant, login).
    offered: Mutex<HashMap<(String, String), tokio::time::Instant>>,
    notices: tokio::sync::broadcast::Sender<Notice>,
}

impl std::fmt::Debug for Logins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logins")
            .field("replica", &self.gateway.replica_id())
            .finish_non_exhaustive()
    }
}

pub(crate) use airlock_audit::event::now_ms;

impl Logins {
    /// The logins of `gateway`; `None` when it keeps no store (nothing to keep them
    /// in) or no vault (nothing to keep alive).
    pub fn for_gateway(gateway: &Arc<Gateway>) -> Option<Arc<Logins>> {
        Some(Arc::new(Logins::new(gateway, LINK_TTL)?))
    }

    /// Like [`Logins::for_gateway`], with links living `link_ttl`.
    pub fn new(gateway: &Arc<Gateway>, link_ttl: Duration) -> Option<Logins> {
        let store = gateway.store()?.clone();
        gateway.vault()?;
        Some(Logins {
            gateway: gateway.clone(),
            store,
            link_ttl,
            waiting: Mutex::new(HashMap::new()),
            offered: Mutex::new(HashMap::new()),
            notices: tokio::sync::broadcast::channel(64).0,
        })
    }

    /// State changes from now on (on this replica).
    pub fn notices(&self) -> tokio::sync::broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }

    /// Defines `tenant`'s login `name` (the vault secret of that name must exist),
    /// or replaces its definition; it is checked at once.
    pub async fn define(&self, tenant: &str, name: &str, spec: &str) -> Result<LoginView> {
        let parsed = LoginSpec::parse(name, spec)?;
        let vault = self.vault()?;
        match vault.get(tenant, name).await {
            Ok(_) => {}
            Err(airlock_vault::VaultError::NotFound(_)) => {
                return Err(Error::Invalid(format!(
                    "no vault secret `{name}` in this tenant: a login keeps a stored secret alive (`airlock vault set {name} …` first)"
                )));
            }
            Err(e) => return Err(Error::Gateway(e.to_string())),
        }
        let json = serde_json::to_string(&parsed)
            .map_err(|e| Error::Invalid(format!("the definition: {e}")))?;
        self.store
            .put_site_login(tenant, name, &json, now_ms())
            .await?;
        self.get(tenant, name).await
    }

    /// `tenant`'s logins.
    pub async fn list(&self, tenant: &str) -> Result<Vec<LoginView>> {
        let rows = self.store.site_logins(Some(tenant)).await?;
        Ok(rows.iter().map(|r| self.view(r)).collect())
    }

    /// One of `tenant`'s logins.
    pub async fn get(&self, tenant: &str, name: &str) -> Result<LoginView> {
        let row = self.row(tenant, name).await?;
        Ok(self.view(&row))
    }

    /// Forgets a login (its secret stays in the vault).
    pub async fn remove(&self, tenant: &str, name: &str) -> Result<()> {
        if !self.store.delete_site_login(tenant, name).await? {
            return Err(Error::NotFound(name.to_owned()));
        }
        self.store.close_login_links(tenant, name, now_ms()).await?;
        Ok(())
    }

    /// Turns a login's checks on (due at once) or off (sessions then open with it
    /// whatever it was).
    pub async fn enable(&self, tenant: &str, name: &str, on: bool) -> Result<LoginView> {
        if !self
            .store
            .enable_site_login(tenant, name, on, now_ms())
            .await?
        {
            return Err(Error::NotFound(name.to_owned()));
        }
        self.get(tenant, name).await
    }

    /// Runs the schedule until the gateway stops: every [`TICK`], the logins due
    /// that nobody holds are checked, one at a time on this replica.
    pub async fn run_schedule(self: Arc<Self>, tick: Duration) {
        let stopped = {
            let gateway = self.gateway.clone();
            async move { gateway.stopped().await }
        };
        tokio::pin!(stopped);
        loop {
            tokio::select! {
                () = &mut stopped => return,
                () = tokio::time::sleep(tick) => {}
            }
            let due = match self.store.due_site_logins(now_ms(), 8).await {
                Ok(due) => due,
                Err(e) => {
                    tracing::warn!(error = %e, "stored logins could not be read; checks wait");
                    continue;
                }
            };
            for login in due {
                match self.check(&login.tenant, &login.name, "schedule").await {
                    Ok(_) | Err(Error::Busy(_)) => {}
                    Err(e) => {
                        tracing::warn!(tenant = %login.tenant, login = %login.name, error = %e, "a scheduled login check failed");
                    }
                }
            }
        }
    }

    async fn row(&self, tenant: &str, name: &str) -> Result<SiteLoginRecord> {
        self.store
            .site_login(tenant, name)
            .await?
            .ok_or_else(|| Error::NotFound(name.to_owned()))
    }

    fn view(&self, row: &SiteLoginRecord) -> LoginView {
        let waiting = airlock_core::sync::lock(&self.waiting)
            .contains_key(&(row.tenant.clone(), row.name.clone()));
        LoginView {
            name: row.name.clone(),
            state: State::parse(&row.state),
            why: row.why.clone(),
            enabled: row.enabled,
            checked_ms: row.checked_ms,
            due_ms: row.due_ms,
            checking: row
                .holder
                .clone()
                .filter(|_| row.held_until_ms.is_some_and(|until| until > now_ms())),
            waiting,
            spec: serde_json::from_str(&row.spec).unwrap_or(serde_json::Value::Null),
        }
    }

    fn vault(&self) -> Result<&Arc<airlock_vault::Vault>> {
        self.gateway
            .vault()
            .ok_or_else(|| Error::Gateway("this gateway has no vault".to_owned()))
    }

    fn notify(&self, tenant: &str, login: &str, state: State, why: &str) {
        let _ = self.notices.send(Notice {
            tenant: tenant.to_owned(),
            login: login.to_owned(),
            state,
            why: why.to_owned(),
        });
    }
}
