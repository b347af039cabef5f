//! An operator's view of a live session and their hands on it: frames of the active
//! tab (masked as the agent's screenshots are), taking the page over (one controller
//! at a time; meanwhile the agent's calls are refused with `session_held`), input
//! (clicks, keys, text typed like a secret), and handing it back (the agent's next
//! result says the page may have changed). None of it counts against the agent's
//! action budget; each step is on the audit record, without what was typed.

use airlock_browser::{ClickOptions, PageEvent, Target, TextPiece, TypedText};
use airlock_worker::{Painted, Watch};
use zeroize::Zeroizing;

use std::sync::Arc;

use crate::audit::AuditLog;
use crate::config::GatewayConfig;
use crate::error::{Error, Result};
use crate::sessions::{Lease, Sessions};

/// One frame of a live session.
pub struct LiveFrame {
    /// The active tab's viewport, JPEG.
    pub jpeg: Vec<u8>,
    /// Its URL (redacted).
    pub url: String,
    /// Its title (redacted).
    pub title: String,
    /// Who holds the page, if an operator does.
    pub controller: Option<String>,
    /// The viewport in CSS pixels, which clicks are in (the image is in device
    /// pixels: larger on a high-density device).
    pub viewport: (u32, u32),
}

impl std::fmt::Debug for LiveFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveFrame")
            .field("bytes", &self.jpeg.len())
            .field("url", &self.url)
            .finish()
    }
}

/// Where a live watcher stands: the last event and frame it was shown.
#[derive(Debug, Default, Clone)]
pub struct LiveCursor {
    after: u64,
    shown: Option<Painted>,
}

/// What a live watcher is shown next.
#[derive(Debug, Default)]
pub struct LiveUpdate {
    /// A new frame, if the page changed.
    pub frame: Option<LiveFrame>,
    /// What happened, one line each, redacted.
    pub events: Vec<String>,
    /// Events that went before the watcher asked for them (it fell behind).
    pub missed: u64,
    /// Who holds the page, if an operator does.
    pub controller: Option<String>,
}

// One event in the words an operator reads.
fn event_line(event: &PageEvent) -> String {
    match event {
        PageEvent::DialogOpened { tab, kind, message } => {
            format!("tab {tab}: a {kind} dialog holds the page: “{message}”")
        }
        PageEvent::TabOpened { tab, by_page: true } => format!("tab {tab}: a page opened it"),
        PageEvent::TabOpened {
            tab,
            by_page: false,
        } => format!("tab {tab}: opened"),
        PageEvent::TabCrashed { tab } => format!("tab {tab}: its page crashed"),
        PageEvent::Notice(notice) => crate::tools::notice_line(notice),
    }
}

/// What an operator does to a page they hold.
pub enum OperatorInput {
    /// A click at a viewport point, in CSS pixels (`LiveFrame::viewport`).
    Click {
        /// From the left.
        x: f64,
        /// From the top.
        y: f64,
    },
    /// A key or combination (`Enter`, `Tab`, `Control+A`).
    Key(String),
    /// Text for the field last clicked, typed as a secret is: never logged, the field
    /// masked in later snapshots and painted over in screenshots.
    Text(zeroize::Zeroizing<String>),
}

impl std::fmt::Debug for OperatorInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OperatorInput::Click { x, y } => write!(f, "Click({x}, {y})"),
            OperatorInput::Key(key) => write!(f, "Key({key})"),
            OperatorInput::Text(_) => f.write_str("Text([typed])"),
        }
    }
}

/// The name what an operator types is redacted under (`[REDACTED:operator]`).
pub(crate) const OPERATOR_SECRET: &str = "operator";

/// Operators on sessions' pages: watching them live, taking them over and handing them
/// back, typing into them, saving their logins. One per gateway, over the lease
/// registry, the audit log and the gateway's settings; the console is its caller.
pub struct Operators {
    sessions: Arc<Sessions>,
    audit: Arc<AuditLog>,
    config: Arc<GatewayConfig>,
}

impl Operators {
    pub(crate) fn new(
        sessions: Arc<Sessions>,
        audit: Arc<AuditLog>,
        config: Arc<GatewayConfig>,
    ) -> Operators {
        Operators {
            sessions,
            audit,
            config,
        }
    }

    // One of `tenant`'s live sessions.
    fn tenant_lease(&self, tenant: &str, id: &str) -> Result<Arc<Lease>> {
        self.sessions.tenant_lease(tenant, id)
    }

    // An operator's event on the record, under `tenant`, now.
    async fn record_event(&self, tenant: &str, event: airlock_audit::Event) {
        if let Err(e) = self
            .audit
            .append(&airlock_audit::Entry::now(tenant, event), None)
            .await
        {
            tracing::error!(error = %e, "could not record an operator's step");
        }
    }

    /// What happened in one of `tenant`'s live sessions since `cursor` last saw it:
    /// its events as lines, and (with `frames`) a new frame if the page changed.
    /// Answers as soon as there is something, or with nothing after `wait`: the
    /// console keeps one outstanding, so a page's changes reach the operator when
    /// they happen, through the worker's channel as in process.
    pub async fn live_watch(
        &self,
        tenant: &str,
        id: &str,
        cursor: &mut LiveCursor,
        frames: bool,
        wait: std::time::Duration,
    ) -> Result<LiveUpdate> {
        let lease = self.tenant_lease(tenant, id)?;
        let watched = lease
            .held
            .session
            .watch(Watch {
                after: cursor.after,
                frames,
                shown: cursor.shown,
                wait,
            })
            .await?;
        let loaded = &lease.held.loaded;
        let events = watched
            .events
            .events
            .iter()
            .map(|(_, event)| loaded.redact(&event_line(event)))
            .collect();
        cursor.after = watched.events.last;
        let frame = watched.frame.map(|frame| {
            cursor.shown = Some(frame.painted);
            LiveFrame {
                jpeg: frame.jpeg,
                url: loaded.redact(&frame.url),
                title: loaded.redact(&frame.title),
                controller: lease.controller(),
                viewport: frame.viewport,
            }
        });
        Ok(LiveUpdate {
            frame,
            events,
            missed: watched.events.missed,
            controller: lease.controller(),
        })
    }

    /// No one watches one of `tenant`'s sessions live any more.
    pub async fn live_unwatch(&self, tenant: &str, id: &str) {
        if let Ok(lease) = self.tenant_lease(tenant, id) {
            let _ = lease.held.session.unwatch().await;
        }
    }

    // The store, when the session is one other replicas serve too: its hold is
    // kept there, so an agent is refused on every replica.
    fn shared(&self, lease: &Lease) -> Option<&airlock_store::Store> {
        self.config
            .store
            .as_ref()
            .filter(|s| s.is_shared() && lease.held.session.reachable_at().is_some())
    }

    // Ends a hold in the store too (`by`'s, or whoever's).
    async fn unhold(&self, lease: &Lease, by: Option<&str>) {
        if let Some(store) = self.shared(lease)
            && let Err(e) = store.unhold_live_session(lease.id.as_str(), by).await
        {
            tracing::warn!(error = %e, "could not end a hold in the store");
        }
    }

    /// Operator `by` takes one of `tenant`'s sessions over.
    pub async fn take_over(&self, tenant: &str, id: &str, by: &str) -> Result<()> {
        let lease = self.tenant_lease(tenant, id)?;
        let held_by = |other: String| {
            Error::NotController(format!(
                "{other} holds this session; they must hand it back first"
            ))
        };
        if let Some(store) = self.shared(&lease) {
            let other = store
                .hold_live_session(id, by)
                .await
                .map_err(|e| Error::Internal(format!("cannot hold the session: {e}")))?;
            if let Some(other) = other {
                lease.hold_as_stored(Some(&other));
                return Err(held_by(other));
            }
        }
        if let Err(other) = lease.take_over(by) {
            self.unhold(&lease, Some(by)).await;
            return Err(held_by(other));
        }
        tracing::info!(session.id = %id, operator = by, "an operator took a session over");
        self.operator_event(tenant, id, by, airlock_audit::Event::OperatorTakeover, None)
            .await;
        Ok(())
    }

    /// Operator `by` hands one of `tenant`'s sessions back to its agent.
    pub async fn hand_back(&self, tenant: &str, id: &str, by: &str) -> Result<()> {
        let lease = self.tenant_lease(tenant, id)?;
        if !lease.hand_back(by) {
            return Err(Error::NotController(
                "you do not hold this session".to_owned(),
            ));
        }
        self.unhold(&lease, Some(by)).await;
        tracing::info!(session.id = %id, operator = by, "an operator handed a session back");
        self.operator_event(tenant, id, by, airlock_audit::Event::OperatorHandback, None)
            .await;
        Ok(())
    }

    /// Operator `by` still watches the page they hold (the console's live view, while
    /// shown): their hold stays. Nothing if they do not hold it.
    pub fn tend_hold(&self, tenant: &str, id: &str, by: &str) {
        if let Ok(lease) = self.tenant_lease(tenant, id) {
            lease.tend(by);
        }
    }

    /// Operator `by` (an admin of `tenant`) releases whoever holds one of its
    /// sessions: an operator who walked away must not keep an agent refused. Returns
    /// who held it; `Err(NotController)` when no one did.
    pub async fn release_hold(&self, tenant: &str, id: &str, by: &str) -> Result<String> {
        let lease = self.tenant_lease(tenant, id)?;
        let Some(holder) = lease.release() else {
            return Err(Error::NotController("no one holds this session".to_owned()));
        };
        self.unhold(&lease, None).await;
        tracing::info!(session.id = %id, operator = by, holder = %holder, "an operator released a hold");
        self.released_event(tenant, id, &holder, Some(by), "released")
            .await;
        Ok(holder)
    }

    /// Releases every hold of operator `by` (their console login ended): returns how
    /// many.
    pub async fn release_holds_of(&self, by: &str, why: &str) -> usize {
        let mut released = 0;
        for lease in self.sessions.leases() {
            if lease.controller().as_deref() == Some(by) && lease.release().is_some() {
                self.unhold(&lease, Some(by)).await;
                released += 1;
                tracing::info!(session.id = %lease.id, holder = by, why, "a hold was released");
                self.released_event(&lease.owner.tenant, &lease.id.to_string(), by, None, why)
                    .await;
            }
        }
        released
    }

    // Holds nobody tended for `hold_idle` go back to their agents (the reaper).
    pub(crate) async fn release_untended_holds(&self) {
        for lease in self.sessions.leases() {
            if let Some(holder) = lease.untended(self.config.hold_idle)
                && lease.release().is_some()
            {
                self.unhold(&lease, Some(&holder)).await;
                tracing::info!(session.id = %lease.id, holder = %holder, "an untended hold was released");
                self.released_event(
                    &lease.owner.tenant,
                    &lease.id.to_string(),
                    &holder,
                    None,
                    "idle",
                )
                .await;
            }
        }
    }

    // The record of a hold ended by someone or something other than its holder.
    async fn released_event(
        &self,
        tenant: &str,
        id: &str,
        holder: &str,
        by: Option<&str>,
        reason: &str,
    ) {
        let step = airlock_audit::OperatorStep {
            session: id.to_owned(),
            by: by.map(str::to_owned),
            input: None,
            holder: Some(holder.to_owned()),
            reason: Some(reason.to_owned()),
        };
        self.record_event(tenant, airlock_audit::Event::OperatorHandback(step))
            .await;
    }

    /// What operator `by`, who holds the session, does to its page. `last_click` is
    /// where they last clicked: typed text goes to the field there.
    pub async fn operator_input(
        &self,
        tenant: &str,
        id: &str,
        by: &str,
        input: OperatorInput,
        last_click: Option<(f64, f64)>,
    ) -> Result<()> {
        let lease = self.tenant_lease(tenant, id)?;
        if !lease.tend(by) {
            return Err(Error::NotController(
                "take the session over first".to_owned(),
            ));
        }
        let session = &lease.held.session;
        let what = match input {
            OperatorInput::Click { x, y } => {
                session
                    .click(&Target::Point { x, y }, &ClickOptions::default())
                    .await?;
                "click"
            }
            OperatorInput::Key(key) => {
                session.press_key(&key).await?;
                "key"
            }
            OperatorInput::Text(text) => {
                let (x, y) = last_click.ok_or_else(|| {
                    Error::InvalidArgument("click the field to type into first".to_owned())
                })?;
                self.type_as_operator(&lease, &Target::Point { x, y }, text, None)
                    .await?;
                "text"
            }
        };
        self.operator_event(
            tenant,
            id,
            by,
            airlock_audit::Event::OperatorInput,
            Some(what),
        )
        .await;
        Ok(())
    }

    /// What a person types into the page of one of `tenant`'s sessions without
    /// holding it: a code given through a login's one-time link, typed into the
    /// field at `field` of its renewal's waiting page — only while that field and
    /// its page are on one of `origins` (the login's own: a page that went
    /// elsewhere meanwhile gets nothing). Learnt as the session's own secret first,
    /// like any operator text; on the record as `operator_input` (its kind, never
    /// the text).
    pub async fn give_text(
        &self,
        tenant: &str,
        id: &str,
        by: &str,
        field: &Target,
        text: Zeroizing<String>,
        origins: &[String],
    ) -> Result<()> {
        let lease = self.tenant_lease(tenant, id)?;
        self.type_as_operator(&lease, field, text, Some(origins))
            .await?;
        self.operator_event(
            tenant,
            id,
            by,
            airlock_audit::Event::OperatorInput,
            Some("text"),
        )
        .await;
        Ok(())
    }

    // Types `text` into the field at `target` as the session's own secret.
    // `bound`: the origins the field and its page must be on, when the text is for
    // them only.
    async fn type_as_operator(
        &self,
        lease: &Lease,
        target: &Target,
        text: Zeroizing<String>,
        bound: Option<&[String]>,
    ) -> Result<()> {
        let session = &lease.held.session;
        // The element at the target, by ref (typing a secret needs one), and
        // the text bound to its frame's origin and the page's, so the checks
        // that guard a vault secret guard this too.
        let field = session.resolve(target).await?;
        let tabs = session.tabs().await?;
        let page_origin = tabs
            .iter()
            .find(|t| t.active)
            .and_then(|t| url::Url::parse(&t.url).ok())
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        let mut origins = vec![field.frame_origin.clone()];
        if page_origin != field.frame_origin {
            origins.push(page_origin);
        }
        if let Some(bound) = bound
            && let Some(elsewhere) = origins.iter().find(|o| !bound.contains(o))
        {
            return Err(Error::PolicyDenied {
                detail: format!(
                    "nothing was typed: the page is on {elsewhere}, not an origin this text is for"
                ),
            });
        }
        // Before a key reaches the page: what the operator types becomes the
        // session's own secret, so a page echoing it (in its title, a URL, an
        // encoding, a mirror field) shows the agent `[REDACTED:operator]`, and
        // no request, socket or screenshot carries it anywhere else.
        let held = &lease.held;
        // Other replicas serving it cannot redact what they never learned:
        // on the record first that it holds a secret, so they stop.
        if let Some(store) = self.shared(lease) {
            store
                .mark_live_secrets(lease.id.as_str())
                .await
                .map_err(|e| Error::Internal(format!("cannot note the session's secret: {e}")))?;
        }
        held.loaded.learn(OPERATOR_SECRET, &text, &origins)?;
        session.learn(OPERATOR_SECRET, &text, &origins).await?;
        // A socket the page opened before could carry the text away unseen
        // (only new ones are refused now): nothing is typed while one is open.
        let open = session.foreign_sockets().await?;
        if let Some(url) = open.first() {
            return Err(Error::PolicyDenied {
                detail: format!(
                    "nothing was typed: the page holds a WebSocket open to {}, which could carry what you type where nobody can see it; reload the page first",
                    airlock_core::text::ellipsize(url, 120)
                ),
            });
        }
        let typed = TypedText(vec![TextPiece::Secret {
            label: "operator input".to_owned(),
            origins,
            value: text,
        }]);
        session
            .type_pieces(&Target::Ref(field.node), &typed, false, false)
            .await?;
        Ok(())
    }

    /// Saves the cookies one of `tenant`'s sessions holds for `origins` into the
    /// vault as secret `name` (its other fields kept if it exists): how an operator
    /// who logged in by hand — MFA included — refreshes a login agents then open
    /// sessions with. Returns how many cookies were saved; no value leaves here.
    pub async fn save_login(
        &self,
        tenant: &str,
        id: &str,
        by: &str,
        name: &str,
        origins: &[String],
    ) -> Result<usize> {
        let lease = self.tenant_lease(tenant, id)?;
        let vault = self
            .config
            .credentials
            .vault
            .clone()
            .ok_or(Error::NoVault)?;
        let mut canonical = Vec::new();
        for origin in origins {
            canonical.push(airlock_vault::canonical_origin(origin).map_err(|e| {
                Error::InvalidArgument(format!("`{origin}` is not an origin: {e}"))
            })?);
        }
        if canonical.is_empty() {
            return Err(Error::InvalidArgument(
                "name at least one origin".to_owned(),
            ));
        }
        let hosts: Vec<String> = canonical
            .iter()
            .filter_map(|o| url::Url::parse(o).ok()?.host_str().map(str::to_owned))
            .collect();
        // The worker hands over only the cookies of those hosts (or of a parent
        // domain of one, as the site set it).
        let cookies: Vec<airlock_vault::Cookie> = lease
            .held
            .session
            .cookies(&hosts)
            .await?
            .into_iter()
            .map(|c| airlock_vault::Cookie {
                name: c.name.clone(),
                value: c.value.to_string(),
                domain: c.domain.clone(),
                path: c.path.clone(),
                expires: c.expires,
                http_only: c.http_only,
                secure: c.secure,
                same_site: c.same_site.clone(),
            })
            .collect();
        if cookies.is_empty() {
            return Err(Error::InvalidArgument(
                "the session holds no cookie for those origins: log in first".to_owned(),
            ));
        }
        let saved = cookies.len();
        let mut secret = match vault.get(tenant, name).await {
            Ok(existing) => existing,
            Err(airlock_vault::VaultError::NotFound(_)) => airlock_vault::Secret {
                tenant: tenant.to_owned(),
                name: name.to_owned(),
                origins: Vec::new(),
                fields: airlock_vault::Fields::default(),
            },
            Err(e) => return Err(Error::InvalidArgument(e.to_string())),
        };
        for origin in canonical {
            if !secret.origins.contains(&origin) {
                secret.origins.push(origin);
            }
        }
        secret.fields.cookies = cookies;
        vault
            .set(&secret)
            .await
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        tracing::info!(session.id = %id, operator = by, secret = name, cookies = saved, "an operator saved a login");
        let saved_login = airlock_audit::LoginSaved {
            session: id.to_owned(),
            by: by.to_owned(),
            secret: name.to_owned(),
            origins: secret.origins.clone(),
            cookies: saved as u64,
        };
        self.record_event(tenant, airlock_audit::Event::LoginSaved(saved_login))
            .await;
        Ok(saved)
    }

    // The audit record of an operator's step: who, which session, what kind — never
    // what was typed.
    async fn operator_event(
        &self,
        tenant: &str,
        id: &str,
        by: &str,
        kind: fn(airlock_audit::OperatorStep) -> airlock_audit::Event,
        input: Option<&str>,
    ) {
        let step = airlock_audit::OperatorStep {
            session: id.to_owned(),
            by: Some(by.to_owned()),
            input: input.map(str::to_owned),
            holder: None,
            reason: None,
        };
        self.record_event(tenant, kind(step)).await;
    }
}
