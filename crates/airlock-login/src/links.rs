//! One-time links through which a person gives what only they have. A link is a
//! random token in a URL fragment (never sent to a server by a browser, so no access
//! log holds it); only its SHA-256 is stored. It is used once (one conditional
//! update), lives [`LINK_TTL`], and only a console admin of the login's tenant can
//! use it: another tenant's admin, a used or an expired link all get one answer. The
//! value goes into the waiting page as the session's own secret, or into the vault;
//! never into a result, a log or the audit record.

use std::sync::Arc;
use std::time::Duration;

use airlock_core::sync::lock;
use hex::ToHex as _;
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use crate::check::Given;
use crate::{Error, Logins, Result, State, now_ms};

/// How long a link lives unless the gateway says otherwise.
pub const LINK_TTL: Duration = Duration::from_secs(10 * 60);
/// Where the console takes a link's value; the token follows `#`.
pub const LINK_PATH: &str = "/console/logins/give";
/// An agent's client is offered a login's link at most this often.
pub const OFFER_EVERY: Duration = Duration::from_secs(60);
/// Longest value a person may give.
const MAX_VALUE_CHARS: usize = 1024;

/// What a link's page shows before it is used.
#[derive(Debug, Clone, Serialize)]
pub struct LinkView {
    /// The login.
    pub login: String,
    /// `code` (typed into the waiting sign-in page), `takeover` (a person signs in
    /// by hand in the waiting session) or `password` (into the vault).
    pub kind: String,
    /// When it stops working (Unix ms).
    pub expires_ms: i64,
}

fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.trim().as_bytes()).to_vec()
}

impl Logins {
    // A new link for `name` (older ones of it end), as the console path with the
    // token in its fragment.
    pub(crate) async fn make_link(
        &self,
        tenant: &str,
        name: &str,
        kind: &str,
        session: Option<String>,
    ) -> Result<String> {
        self.store.close_login_links(tenant, name, now_ms()).await?;
        self.mint_link(tenant, name, kind, session).await
    }

    // A new link beside any open ones.
    async fn mint_link(
        &self,
        tenant: &str,
        name: &str,
        kind: &str,
        session: Option<String>,
    ) -> Result<String> {
        let mut bytes = Zeroizing::new([0u8; 32]);
        getrandom::fill(bytes.as_mut())
            .map_err(|e| Error::Gateway(format!("no randomness for a link: {e}")))?;
        let token: Zeroizing<String> = Zeroizing::new(bytes.encode_hex());
        // A take-over link names the session to take over (no secret: the console
        // lists the tenant's sessions anyway).
        let path = match (kind, &session) {
            ("takeover", Some(id)) => format!("{LINK_PATH}?session={id}"),
            _ => LINK_PATH.to_owned(),
        };
        let now = now_ms();
        self.store
            .insert_login_link(&airlock_store::LoginLinkRecord {
                token_hash: hash(&token),
                tenant: tenant.to_owned(),
                login: name.to_owned(),
                kind: kind.to_owned(),
                session,
                replica: Some(self.gateway.replica_id().to_owned()),
                created_ms: now,
                expires_ms: now + i64::try_from(self.link_ttl.as_millis()).unwrap_or(i64::MAX),
                used_ms: None,
            })
            .await?;
        Ok(format!("{path}#{}", token.as_str()))
    }

    /// A fresh link for a login that needs a person (older links of it end): for
    /// the code its waiting renewal wants, else for its password.
    pub async fn link(&self, tenant: &str, name: &str) -> Result<String> {
        let row = self.row(tenant, name).await?;
        if row.state != State::NeedsUser.as_str() {
            return Err(Error::Invalid(format!(
                "login `{name}` is {}: a link is for a login that needs a person",
                row.state
            )));
        }
        let waiting = lock(&self.waiting)
            .get(&(tenant.to_owned(), name.to_owned()))
            .map(|w| (w.kind, w.session.clone()));
        match waiting {
            Some((kind, session)) => self.make_link(tenant, name, kind, Some(session)).await,
            None => self.make_link(tenant, name, "password", None).await,
        }
    }

    /// A link for the person at an agent's own client (an MCP URL elicitation), when
    /// login `name` needs a person: beside the operator's links (which keep
    /// working), and at most one per login per [`OFFER_EVERY`] on this replica, so
    /// an agent retrying cannot flood anyone. `None` when it needs no person, or one
    /// was offered just now.
    pub async fn offer_link(&self, tenant: &str, name: &str) -> Result<Option<String>> {
        let row = self.row(tenant, name).await?;
        if row.state != State::NeedsUser.as_str() || !row.enabled {
            return Ok(None);
        }
        let key = (tenant.to_owned(), name.to_owned());
        {
            let mut offered = lock(&self.offered);
            let now = tokio::time::Instant::now();
            if offered.get(&key).is_some_and(|at| now < *at + OFFER_EVERY) {
                return Ok(None);
            }
            offered.insert(key.clone(), now);
        }
        let waiting = lock(&self.waiting)
            .get(&key)
            .map(|w| (w.kind, w.session.clone()));
        let link = match waiting {
            Some((kind, session)) => self.mint_link(tenant, name, kind, Some(session)).await?,
            None => self.mint_link(tenant, name, "password", None).await?,
        };
        Ok(Some(link))
    }

    /// What `token`'s page shows, to a console admin of `tenant`.
    pub async fn link_view(&self, tenant: &str, token: &str) -> Result<LinkView> {
        let link = self
            .store
            .login_link(&hash(token), tenant, now_ms())
            .await?
            .ok_or(Error::Link)?;
        Ok(LinkView {
            login: link.login,
            kind: link.kind,
            expires_ms: link.expires_ms,
        })
    }

    /// Uses `token` once, as console admin `by` of `tenant`, giving `value`: a code
    /// is typed into the renewal's waiting page (it then finishes on its own), a
    /// password goes into the login's secret and the login is checked again; for a
    /// take-over link, `value` is not read: the person signed in by hand in the
    /// waiting session and says so.
    pub async fn give(
        self: &Arc<Self>,
        tenant: &str,
        by: &str,
        token: &str,
        value: Zeroizing<String>,
    ) -> Result<LinkView> {
        let token_hash = hash(token);
        let now = now_ms();
        // Before it is used: a code is typed only where its renewal waits.
        let seen = self
            .store
            .login_link(&token_hash, tenant, now)
            .await?
            .ok_or(Error::Link)?;
        let chars = value.chars().count();
        if seen.kind != "takeover"
            && (chars == 0 || chars > MAX_VALUE_CHARS || value.chars().any(char::is_control))
        {
            return Err(Error::Invalid(format!(
                "give 1–{MAX_VALUE_CHARS} characters, no control characters"
            )));
        }
        let replica = self.gateway.replica_id();
        if seen.kind != "password" && seen.replica.as_deref().is_some_and(|r| r != replica) {
            return Err(Error::Elsewhere(seen.replica.unwrap_or_default()));
        }
        let link = self
            .store
            .use_login_link(&token_hash, tenant, now)
            .await?
            .ok_or(Error::Link)?;
        let view = LinkView {
            login: link.login.clone(),
            kind: link.kind.clone(),
            expires_ms: link.expires_ms,
        };
        match link.kind.as_str() {
            "code" | "takeover" => {
                let waiting = lock(&self.waiting).remove(&(tenant.to_owned(), link.login.clone()));
                let Some(waiting) = waiting.filter(|w| Some(&w.session) == link.session.as_ref())
                else {
                    return Err(Error::Link);
                };
                let (typed, done) = tokio::sync::oneshot::channel();
                let given = Given {
                    code: (link.kind == "code").then_some(value),
                    by: by.to_owned(),
                    typed,
                };
                if waiting.give.send(given).is_err() {
                    return Err(Error::Link);
                }
                done.await.map_err(|_| {
                    Error::Gateway("the renewal ended before the code was typed".to_owned())
                })??;
            }
            _ => {
                let vault = self.vault()?;
                let mut secret = vault
                    .get(tenant, &link.login)
                    .await
                    .map_err(|e| Error::Gateway(e.to_string()))?;
                secret.fields.password = Some(value.to_string());
                vault
                    .set(&secret)
                    .await
                    .map_err(|e| Error::Gateway(e.to_string()))?;
                // Checked again by the next tick of whichever replica.
                self.store
                    .enable_site_login(tenant, &link.login, true, now_ms())
                    .await?;
            }
        }
        // On the record once it went where it goes (typed, or in the vault): what
        // kind, by whom, never the value.
        self.gateway
            .record_event(
                Some(tenant),
                airlock_audit::Event::LoginGiven(airlock_audit::LoginGiven {
                    login: link.login.clone(),
                    by: by.to_owned(),
                    gave: link.kind.clone(),
                    session: link.session.clone(),
                }),
            )
            .await;
        tracing::info!(%tenant, login = %link.login, kind = %link.kind, "a person gave what a login needed");
        Ok(view)
    }
}
