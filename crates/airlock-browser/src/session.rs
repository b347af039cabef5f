//! A session: one isolated browser context (own cookies, storage, cache) with its tabs,
//! and every action an agent can take in it. Actions run one at a time per session.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_core::sync::lock;
use airlock_core::text::ellipsize;
use airlock_core::{NoRedaction, NodeRef, Redact, RedactSlot};
use airlock_policy::Policy;
use airlock_snapshot::{Node, RenderOptions};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

mod attach;
mod dialogs;
mod held;
mod input;
mod live;
mod locate;
mod navigate;
mod open_options;
mod read;
mod shot;
mod tabs;
mod wait;
mod walk;

use attach::attach_tabs;
use navigate::{Landed, Quiet};
pub(crate) use walk::*;

pub use dialogs::MAX_DIALOG_WAIT;
pub use open_options::SessionOptions;
pub use tabs::{VIEWPORT_MAX, VIEWPORT_MIN};

use crate::action::*;
use crate::chromium::{Chromium, TargetNotice};
use crate::error::{Error, Result};
use crate::guard::NavGuard;
use crate::keys;
use crate::options::BrowserOptions;
use crate::outbound::{RequestGuard, Requests, watch_worker};
use crate::tab::{FrameEntry, Hooks, Screen, Tab};

/// Deepest nesting of frames a snapshot descends into.
const MAX_FRAME_DEPTH: usize = 4;
/// Tallest full-page screenshot, in CSS pixels.
const MAX_SCREENSHOT_HEIGHT: f64 = 16_384.0;
/// Longest `Session::evaluate` lets the agent's function run.
pub const EVALUATE_TIME: Duration = Duration::from_secs(10);
/// Characters of an evaluation's result handed over (after redaction).
pub const EVALUATE_CHARS: usize = 10_000;
/// Longest function source `Session::evaluate` takes.
pub const EVALUATE_SOURCE_BYTES: usize = 20_000;
/// Largest PDF `Session::pdf` hands over.
pub const MAX_PDF_BYTES: usize = 10 * 1024 * 1024;
/// Most tabs a session may have; popups beyond it are closed.
pub const MAX_TABS: usize = 10;
/// How long a loaded page must stay still before a wait for a target that is
/// missing (or disabled) gives up early (the walker's `IDLE_MS`).
const IDLE: Duration = Duration::from_millis(1000);
/// Longest fixed wait an agent may ask for.
const MAX_FIXED_WAIT: Duration = Duration::from_secs(60);
// A settle's frame: an animation frame, then a task (a 200 ms cap for pages whose
// frames are throttled). It says `closed`: a page that called `window.close()` is
// closing at once, though its tab goes a moment later.
const FRAME_AND_TASK: &str = "new Promise(r => { const done = () => r({ closed: window.closed }); requestAnimationFrame(() => setTimeout(done, 0)); setTimeout(done, 200); })";

// A settle's task: what an input handler posted (the start of a fetch) has run by
// then. It says `closed`, as `FRAME_AND_TASK` does.
const TASK: &str = "new Promise(r => setTimeout(() => r({ closed: window.closed }), 0))";

tokio::task_local! {
    // The action budget of the session calls made inside `with_action_budget`.
    static ACTION_BUDGET: Duration;
}

/// Runs `action` with `budget` as the action budget of every session call it makes,
/// instead of the pool's (a caller that knows its page is slow, or wants a quick no).
pub async fn with_action_budget<F: std::future::Future>(budget: Duration, action: F) -> F::Output {
    ACTION_BUDGET.scope(budget, action).await
}

struct Registry {
    tabs: Vec<Arc<Tab>>,
    active: usize,
    /// Popups closed because the session had MAX_TABS tabs, not yet reported.
    refused_popups: usize,
    /// Target ids of popups not yet reported in an action's outcome.
    unreported: Vec<String>,
    /// Popups that arrived (set up, refused over the cap, or failed), to match
    /// against the windows pages announced.
    popups_arrived: u64,
    /// The serial the next tab gets.
    next_serial: u32,
    /// The screen every tab has, new ones too.
    screen: Screen,
}

/// One isolated browser session.
pub struct Session {
    id: String,
    chromium: Arc<Chromium>,
    dedicated: bool,
    context_id: String,
    options: Arc<BrowserOptions>,
    registry: Arc<Mutex<Registry>>,
    registry_changed: watch::Receiver<u64>,
    attach_task: JoinHandle<()>,
    guard: NavGuard,
    op: tokio::sync::Mutex<()>,
    // When the operation holding `op` began, and what of it went to locating and
    // settling (an action's outcome reports its stages from this).
    clock: Mutex<Clock>,
    closed: AtomicBool,
    /// A secret was typed into some field: screenshots paint such fields over.
    secret_typed: AtomicBool,
    /// Applied to everything taken from a page or Chromium before it is used (the
    /// slot below, as every part of the session holds it).
    redactor: Arc<dyn Redact>,
    slot: Arc<RedactSlot>,
    /// How the session's requests are paused and judged.
    requests: Requests,
    /// Requests the request guard refused, not yet reported.
    refused: Arc<AtomicU64>,
    /// Where downloads go, once the operator allows them (`allow_downloads`).
    downloads: Arc<Mutex<Option<Arc<crate::download::Downloads>>>>,
}

#[derive(Deserialize, Clone)]
struct Located {
    x: f64,
    y: f64,
    rect: Rect,
    desc: String,
    /// The element's ref in its frame; later steps of the action name it by this ref,
    /// so they act on the element that was located.
    #[serde(rename = "ref", default)]
    node: Option<u64>,
    /// The walker's mark as the element was found: what the action's settle judges
    /// the page's reaction against.
    #[serde(default)]
    mark: Option<u64>,
    /// The element was focused for typing as it was found (`Prepare::focus_for_typing`).
    #[serde(default)]
    focused: bool,
    /// What the walker's `inspect` says of the element (`Prepare::inspect`).
    #[serde(default)]
    inspected: Option<Value>,
    /// Focused for typing, an input that takes a value instead (`date`, `time`,
    /// `color` …; `crate::fields`): its type and the page's language.
    #[serde(default, rename = "valueType")]
    value_type: Option<String>,
    #[serde(default)]
    lang: Option<String>,
}

impl Located {
    // The located element as a ref target (a point stays a point).
    fn target(&self, tab: u32, frame: u32, original: &Target) -> Target {
        match self.node {
            Some(node) => Target::Ref(NodeRef { tab, frame, node }),
            None => original.clone(),
        }
    }
}

#[derive(Deserialize, Clone, Copy)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

#[derive(Clone, Copy)]
struct Prepare {
    need_enabled: bool,
    hit_test: bool,
    /// Focus the target for typing once it is ready (clearing it, with `true`), in
    /// the same call: typing takes no round trip of its own to focus.
    focus_for_typing: Option<bool>,
    /// Also say what the target is (the walker's `inspect`), in the same call.
    inspect: bool,
}

// What an action needs of its target before it acts.
const CLICKABLE: Prepare = Prepare {
    need_enabled: true,
    hit_test: true,
    focus_for_typing: None,
    inspect: false,
};
const HOVERABLE: Prepare = Prepare {
    need_enabled: false,
    hit_test: true,
    focus_for_typing: None,
    inspect: false,
};
const EDITABLE: Prepare = Prepare {
    need_enabled: true,
    hit_test: false,
    focus_for_typing: None,
    inspect: false,
};
const VISIBLE: Prepare = Prepare {
    need_enabled: false,
    hit_test: false,
    focus_for_typing: None,
    inspect: false,
};

impl Session {
    pub(crate) async fn open(
        id: String,
        chromium: Arc<Chromium>,
        dedicated: bool,
        options: Arc<BrowserOptions>,
        session_options: SessionOptions,
    ) -> Result<Session> {
        let timeout = options.action_timeout;
        let conn = chromium.conn.clone();
        let mut params = json!({ "disposeOnDetach": true });
        if let Some(proxy) = &session_options.proxy_server {
            params["proxyServer"] = json!(proxy);
            // Without `<-loopback>` Chromium sends localhost, 127/8, [::1], 169.254/16
            // and fe80::/10 direct, around the proxy.
            params["proxyBypassList"] = json!("<-loopback>");
        }
        let context: Value = conn
            .call(None, "Target.createBrowserContext", params, timeout)
            .await?;
        let context_id = context["browserContextId"]
            .as_str()
            .ok_or_else(|| Error::Protocol("createBrowserContext returned no id".to_owned()))?
            .to_owned();

        let (notices_tx, notices) = mpsc::unbounded_channel();
        chromium.register_context(&context_id, notices_tx);
        let registry = Arc::new(Mutex::new(Registry {
            tabs: Vec::new(),
            active: 0,
            refused_popups: 0,
            unreported: Vec::new(),
            popups_arrived: 0,
            next_serial: 0,
            screen: Screen {
                viewport: options.viewport,
                scale: 1.0,
                mobile: false,
                user_agent: None,
            },
        }));
        let (changed_tx, registry_changed) = watch::channel(0u64);
        // One slot every part of the session holds: when the session learns a value
        // (`set_redactor`), all of them hide it from then on.
        let slot = Arc::new(RedactSlot::new(
            session_options
                .redactor
                .clone()
                .unwrap_or_else(|| Arc::new(NoRedaction)),
        ));
        let redactor: Arc<dyn Redact> = slot.clone();
        let guard = NavGuard::new(session_options.policy, redactor.clone());
        let requests = Requests::new(
            session_options.request_guard.clone(),
            session_options.injection.clone(),
            session_options.effects.clone(),
            session_options.signer.clone(),
            redactor.clone(),
        );
        let downloads: Arc<Mutex<Option<Arc<crate::download::Downloads>>>> = Arc::default();
        let attach_task = tokio::spawn(attach_tabs(
            chromium.clone(),
            registry.clone(),
            changed_tx,
            notices,
            downloads.clone(),
            options.clone(),
            Hooks {
                guard: guard.clone(),
                injection: session_options.injection.clone(),
                requests: requests.clone(),
                redactor: redactor.clone(),
            },
        ));
        // From here on the session owns the context; dropping it on an early return
        // below disposes the context (nothing half-open is left behind).
        let session = Session {
            id,
            chromium,
            dedicated,
            context_id,
            options,
            registry,
            registry_changed,
            attach_task,
            guard,
            op: tokio::sync::Mutex::new(()),
            clock: Mutex::new(Clock::default()),
            closed: AtomicBool::new(false),
            secret_typed: AtomicBool::new(false),
            redactor,
            slot,
            refused: requests.refused.clone(),
            requests,
            downloads,
        };
        let setup = async {
            session
                .chromium
                .conn
                .call(
                    None,
                    "Browser.setDownloadBehavior",
                    json!({ "behavior": "deny", "browserContextId": session.context_id }),
                    timeout,
                )
                .await?;
            if let Some(injection) = &session_options.injection
                && !injection.cookies.is_empty()
            {
                session
                    .chromium
                    .conn
                    .call(
                        None,
                        "Storage.setCookies",
                        json!({
                            "cookies": injection.cookies.iter().map(InjectedCookie::cdp).collect::<Vec<_>>(),
                            "browserContextId": session.context_id,
                        }),
                        timeout,
                    )
                    .await?;
            }
            session.create_tab().await?;
            Ok::<_, Error>(())
        };
        match setup.await {
            Ok(()) => {
                tracing::info!(session.id = %session.id, dedicated, "session opened");
                Ok(session)
            }
            Err(e) => {
                session.close().await;
                Err(e)
            }
        }
    }

    /// Hides what `redactor` hides, from now on, in everything the session takes from
    /// its pages (every tab, frame and notice holds the session's one redactor). The
    /// walker's cut of names moves out with the redactor's reach.
    pub async fn set_redactor(&self, redactor: Arc<dyn Redact>) {
        self.slot.set(redactor);
        let cut = 400 + self.redactor.reach();
        let tabs = lock(&self.registry).tabs.clone();
        for tab in tabs {
            tab.raise_walker_cut(cut, self.budget()).await;
        }
    }

    /// The WebSockets the session's pages hold open now (URLs, redacted).
    pub fn open_sockets(&self) -> Vec<String> {
        let tabs = lock(&self.registry).tabs.clone();
        tabs.iter()
            .flat_map(|t| t.open_sockets())
            .map(|url| self.redactor.redact(&url).into_owned())
            .collect()
    }

    /// Puts `guard` in front of every request of the session from now on; a session
    /// that was not inspecting starts pausing every request of its tabs, frames and
    /// workers, and serves its documents with the socket policy. Returns once every
    /// tab was told.
    pub async fn guard_requests(&self, guard: Arc<dyn RequestGuard>) {
        if !self.requests.set_guard(guard) {
            return;
        }
        let tabs = lock(&self.registry).tabs.clone();
        for tab in tabs {
            tab.inspect_requests(self.budget()).await;
        }
        for worker in self.requests.take_unwatched() {
            tokio::spawn(watch_worker(
                self.chromium.conn.clone(),
                worker,
                self.requests.clone(),
                self.guard.clone(),
            ));
        }
    }

    // This call's action budget: its caller's (`with_action_budget`), else the pool's.
    fn budget(&self) -> Duration {
        ACTION_BUDGET
            .try_with(|b| *b)
            .unwrap_or(self.options.action_timeout)
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Sets the policy pages' own navigations are held to, replacing the one the
    /// session was opened with. For a pre-warmed session, handed out with its
    /// agent's policy before anything but `about:blank` was loaded.
    pub fn set_policy(&self, policy: Arc<Policy>) {
        self.guard.set_policy(policy);
    }

    /// Lets the session's pages download into `dir` (absolute): each file under a
    /// generated name (its GUID), at most `cap` bytes (a larger one is cancelled and
    /// removed), each end reported in the next outcome. Without this, downloads are
    /// refused.
    pub async fn allow_downloads(&self, dir: &std::path::Path, cap: u64) -> Result<()> {
        *lock(&self.downloads) = Some(Arc::new(crate::download::Downloads::new(
            dir.to_owned(),
            cap,
            self.context_id.clone(),
        )));
        self.chromium
            .conn
            .call(
                None,
                "Browser.setDownloadBehavior",
                json!({
                    "behavior": "allowAndName",
                    "browserContextId": self.context_id,
                    "downloadPath": dir.display().to_string(),
                    "eventsEnabled": true,
                }),
                self.budget(),
            )
            .await?;
        Ok(())
    }

    /// Requests the session's request guard refused since the last call (each is also
    /// described once in the next action's outcome).
    pub fn take_refused_requests(&self) -> u64 {
        self.refused.swap(0, Ordering::AcqRel)
    }

    /// Whether the Chromium serving this session is still running.
    pub fn browser_alive(&self) -> bool {
        self.chromium.is_alive()
    }

    /// Replaces tabs whose renderer crashed or that went away with nothing behind
    /// them: they are dropped, and if the active one was among them a fresh blank tab
    /// becomes active. Cookies, storage and the other tabs are kept. Fails when the
    /// session is closed or its Chromium is gone.
    pub async fn replace_lost_tabs(&self) -> Result<usize> {
        let _op = self.begin().await;
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::SessionClosed);
        }
        if !self.chromium.is_alive() {
            return Err(Error::BrowserCrashed);
        }
        let (lost, active_lost) = {
            let mut registry = lock(&self.registry);
            let active_id = registry
                .tabs
                .get(registry.active)
                .map(|t| t.target_id.clone());
            let (lost, kept): (Vec<_>, Vec<_>) =
                registry.tabs.drain(..).partition(|t| t.check().is_err());
            registry.tabs = kept;
            let active =
                active_id.and_then(|id| registry.tabs.iter().position(|t| t.target_id == id));
            registry.active = active.unwrap_or(0);
            (lost, active.is_none())
        };
        for tab in &lost {
            let _ = self
                .chromium
                .conn
                .close_target(&tab.target_id, self.budget())
                .await;
        }
        if active_lost {
            self.create_tab().await?;
        }
        Ok(lost.len())
    }

    /// Whether the session can still act: not closed, its Chromium running, its first
    /// tab alive (a pre-warmed session is checked before it is handed out).
    pub fn is_usable(&self) -> bool {
        self.active().is_ok()
    }

    /// PID of the Chromium serving this session.
    pub fn browser_pid(&self) -> u32 {
        self.chromium.pid()
    }

    /// The viewport pages see, in CSS pixels (screenshots are in device pixels:
    /// this times the device's pixel density).
    pub fn viewport(&self) -> (u32, u32) {
        lock(&self.registry).screen.viewport
    }

    /// The browser context's id (diagnostics and tests).
    pub fn context_id(&self) -> &str {
        &self.context_id
    }

    /// Profile directory of the Chromium serving this session.
    pub fn profile_dir(&self) -> Option<std::path::PathBuf> {
        self.chromium.profile_dir()
    }

    /// Whether this session has its own Chromium.
    pub fn is_dedicated(&self) -> bool {
        self.dedicated
    }

    /// Every cookie this session's browser context holds, values included: for an
    /// operator saving a login into the vault, never for an agent.
    pub async fn cookies(&self) -> Result<Vec<InjectedCookie>> {
        let reply = self
            .chromium
            .conn
            .call(
                None,
                "Storage.getCookies",
                json!({ "browserContextId": self.context_id }),
                self.budget(),
            )
            .await?;
        let text = |c: &Value, k: &str| c[k].as_str().unwrap_or_default().to_owned();
        Ok(reply["cookies"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|c| InjectedCookie {
                name: text(c, "name"),
                value: zeroize::Zeroizing::new(text(c, "value")),
                domain: text(c, "domain"),
                path: text(c, "path"),
                // Chromium says -1 for a session cookie.
                expires: c["expires"].as_f64().filter(|e| *e > 0.0),
                http_only: c["httpOnly"].as_bool() == Some(true),
                secure: c["secure"].as_bool() == Some(true),
                same_site: c["sameSite"].as_str().map(str::to_owned),
            })
            .collect())
    }

    /// Browser context ids alive in this session's Chromium (diagnostics and tests).
    pub async fn browser_contexts(&self) -> Result<Vec<String>> {
        let reply = self
            .chromium
            .conn
            .call(None, "Target.getBrowserContexts", json!({}), self.budget())
            .await?;
        Ok(reply["browserContextIds"]
            .as_array()
            .map(|ids| {
                ids.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Closes the session: disposes its context (or stops its dedicated Chromium by
    /// PID and deletes the profile). Idempotent; never fails.
    pub async fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.chromium.unregister_context(&self.context_id);
        self.attach_task.abort();
        lock(&self.registry).tabs.clear();
        if self.dedicated {
            self.chromium.shutdown().await;
        } else if self.chromium.is_alive() {
            let started = tokio::time::Instant::now();
            let disposed = self
                .chromium
                .conn
                .call(
                    None,
                    "Target.disposeBrowserContext",
                    json!({ "browserContextId": self.context_id }),
                    self.budget(),
                )
                .await;
            tracing::debug!(session.id = %self.id, duration_ms = started.elapsed().as_millis() as u64, ok = disposed.is_ok(), "browser context disposed");
        }
        tracing::info!(session.id = %self.id, "session closed");
    }

    pub(crate) fn oracle_tab(&self) -> Result<(Arc<Tab>, Duration)> {
        Ok((self.active()?, self.budget()))
    }

    // The active tab; when the session has none left (its last one closed, by its
    // page or by Airlock), a fresh blank one.
    async fn tab(&self) -> Result<Arc<Tab>> {
        let tab = match self.active() {
            Err(Error::SessionClosed)
                if !self.closed.load(Ordering::Acquire)
                    && self.chromium.is_alive()
                    && lock(&self.registry).tabs.is_empty() =>
            {
                return self.create_tab().await;
            }
            other => other?,
        };
        // A held navigation answers nothing until it is decided: not a hung page.
        if tab
            .state
            .read(|s| s.unresponsive && s.navigations_held == 0)
        {
            return self.revive(tab).await;
        }
        Ok(tab)
    }

    // A tab whose page did not answer a command: first asked again, once what it
    // was loading has loaded (a navigation in flight answers nothing until it
    // commits, so a miss then proves nothing); a page that answers is left alone.
    // One that still does not has its running script stopped
    // (`Runtime.terminateExecution` ends a busy loop at once); if it still does not
    // answer, the tab is closed and a blank one takes its place. Either way the
    // agent is told in the next outcome.
    async fn revive(&self, tab: Arc<Tab>) -> Result<Arc<Tab>> {
        let probe = Duration::from_secs(2);
        tab.state.with(|s| s.unresponsive = false);
        tab.state.wait(probe, |s| !s.uncommitted).await;
        if tab.eval(0, "true", false, probe).await.is_ok() {
            tab.state.with(|s| s.unresponsive = false);
            return Ok(tab);
        }
        tab.state.with(|s| s.unresponsive = false);
        let _ = tab
            .conn
            .call(
                Some(&tab.cdp_session),
                "Runtime.terminateExecution",
                json!({}),
                probe,
            )
            .await;
        if tab.eval(0, "true", false, probe).await.is_ok() {
            tab.state.with(|s| s.unresponsive = false);
            self.guard.notify(Notice::ScriptStopped);
            return Ok(tab);
        }
        tab.state.with(|s| s.closing = true);
        let _ = self.chromium.conn.close_target(&tab.target_id, probe).await;
        lock(&self.registry)
            .tabs
            .retain(|t| t.target_id != tab.target_id);
        self.guard.notify(Notice::UnresponsiveTabReplaced);
        self.create_tab().await
    }

    fn active(&self) -> Result<Arc<Tab>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::SessionClosed);
        }
        if !self.chromium.is_alive() {
            return Err(Error::BrowserCrashed);
        }
        let registry = lock(&self.registry);
        let tab = registry
            .tabs
            .get(registry.active)
            .cloned()
            .ok_or(Error::SessionClosed)?;
        drop(registry);
        tab.check()?;
        Ok(tab)
    }

    async fn create_tab(&self) -> Result<Arc<Tab>> {
        match self.try_create_tab().await {
            // A new page may be given a renderer that died just before (Chromium's
            // spare one, killed with the page that crashed): it never answers. That
            // tab is closed, and another one, with a renderer of its own, tried once.
            Err((Error::Timeout { .. }, Some(stuck))) => {
                let _ = self.chromium.conn.close_target(&stuck, self.budget()).await;
                tracing::warn!(session.id = %self.id, "a new tab did not start; trying another");
                self.try_create_tab().await.map_err(|(e, _)| e)
            }
            other => other.map_err(|(e, _)| e),
        }
    }

    // Opens a tab and waits until the attach task has set it up; on failure, the error
    // and the target made, if one was.
    async fn try_create_tab(&self) -> std::result::Result<Arc<Tab>, (Error, Option<String>)> {
        let timeout = self.budget();
        let reply = self
            .chromium
            .conn
            .call(
                None,
                "Target.createTarget",
                json!({ "url": "about:blank", "browserContextId": self.context_id }),
                timeout,
            )
            .await
            .map_err(|e| (e.into(), None))?;
        let target_id = reply["targetId"]
            .as_str()
            .ok_or_else(|| {
                (
                    Error::Protocol("createTarget returned no id".to_owned()),
                    None,
                )
            })?
            .to_owned();
        let mut changed = self.registry_changed.clone();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            {
                let mut registry = lock(&self.registry);
                if let Some(i) = registry.tabs.iter().position(|t| t.target_id == target_id) {
                    registry.active = i;
                    return Ok(registry.tabs[i].clone());
                }
            }
            if !self.chromium.is_alive() {
                return Err((Error::BrowserCrashed, Some(target_id)));
            }
            match tokio::time::timeout_at(deadline, changed.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    return Err((
                        Error::Timeout {
                            what: "opening a tab".to_owned(),
                            ms: timeout.as_millis(),
                        },
                        Some(target_id),
                    ));
                }
            }
        }
    }

    // Takes the session's one operation at a time, and starts its clock.
    async fn begin(&self) -> tokio::sync::MutexGuard<'_, ()> {
        let guard = self.op.lock().await;
        *lock(&self.clock) = Clock {
            start: Some(tokio::time::Instant::now()),
            ..Clock::default()
        };
        guard
    }

    // Adds the time since `from` to locating (or, with `settling`, settling).
    fn clocked(&self, from: tokio::time::Instant, settling: bool) {
        let mut clock = lock(&self.clock);
        if settling {
            clock.settle += from.elapsed();
        } else {
            clock.locate += from.elapsed();
        }
    }

    async fn outcome(&self, tab: &Tab, navigated: bool) -> ActionOutcome {
        let collecting = tokio::time::Instant::now();
        self.await_popups().await;
        let info = tab
            .conn
            .call(
                None,
                "Target.getTargetInfo",
                json!({ "targetId": tab.target_id }),
                self.budget(),
            )
            .await
            .unwrap_or_default();
        let refused = std::mem::take(&mut lock(&self.registry).refused_popups);
        let new_tabs = {
            let mut registry = lock(&self.registry);
            let ids = std::mem::take(&mut registry.unreported);
            ids.iter()
                .filter_map(|id| {
                    registry
                        .tabs
                        .iter()
                        .position(|t| &t.target_id == id)
                        .map(|index| {
                            let url = registry.tabs[index].state.read(|s| s.url.clone());
                            NewTab {
                                index,
                                url: self.scrub(&url),
                            }
                        })
                })
                .collect()
        };
        let (dialogs, dialogs_unlisted) = tab.take_dialogs();
        let mut notices = std::mem::take(&mut *lock(&self.guard.notices));
        if refused > 0 {
            notices.push(Notice::PopupsOverCap {
                closed: refused as u64,
                cap: MAX_TABS,
            });
        }
        // Chromium's own words too: an error page's title is its URL, partly unescaped.
        ActionOutcome {
            url: self.scrub(
                &info["targetInfo"]["url"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| tab.state.read(|s| s.url.clone())),
            ),
            title: self.scrub(info["targetInfo"]["title"].as_str().unwrap_or_default()),
            effect: None,
            dialogs,
            dialogs_unlisted,
            notices,
            new_tabs,
            navigated,
            status: None,
            navigation_held: tab.state.read(|s| s.navigations_held > 0),
            stages: self.stages(collecting),
        }
    }

    // The stages of the operation under way, its outcome collected since `collecting`.
    fn stages(&self, collecting: tokio::time::Instant) -> crate::action::Stages {
        let clock = lock(&self.clock);
        let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let before = clock
            .start
            .map_or(Duration::ZERO, |start| collecting.duration_since(start));
        crate::action::Stages {
            locate_us: us(clock.locate),
            dispatch_us: us(before.saturating_sub(clock.locate + clock.settle)),
            settle_us: us(clock.settle),
            outcome_us: us(collecting.elapsed()),
            ..Default::default()
        }
    }
}

/// The clock of the operation under way.
#[derive(Default)]
struct Clock {
    start: Option<tokio::time::Instant>,
    locate: Duration,
    settle: Duration,
}

impl Session {
    // Waits (at most `POPUP_WAIT`) until every window the pages announced has
    // arrived as a tab, so the action that opened one says so in its own result.
    /// Waits (up to the session's budget) until a tab its page closed is out of the
    /// session's list. The tab's own event stream can say `detached` before the
    /// browser-level detach reaches the attach loop, which is what queues the
    /// "closed by the page" notice: an outcome collected in between would miss it.
    pub(super) async fn until_unlisted(&self, tab: &Tab) {
        let mut changed = self.registry_changed.clone();
        let deadline = tokio::time::Instant::now() + self.budget();
        let listed = || {
            lock(&self.registry)
                .tabs
                .iter()
                .any(|t| t.target_id == tab.target_id)
        };
        while listed() {
            match tokio::time::timeout_at(deadline, changed.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return,
            }
        }
    }

    async fn await_popups(&self) {
        let announced = self
            .guard
            .windows_opened
            .load(std::sync::atomic::Ordering::Acquire);
        if lock(&self.registry).popups_arrived >= announced {
            return;
        }
        let mut changed = self.registry_changed.clone();
        let deadline = tokio::time::Instant::now() + POPUP_WAIT;
        while lock(&self.registry).popups_arrived < announced {
            if tokio::time::timeout_at(deadline, changed.changed())
                .await
                .is_err()
            {
                break;
            }
        }
        // One that never came (blocked, or gone at once) is not waited for again.
        let mut registry = lock(&self.registry);
        registry.popups_arrived = registry.popups_arrived.max(announced);
    }
}

/// How long an action's outcome waits for a popup its page announced.
const POPUP_WAIT: Duration = Duration::from_millis(1500);

impl Drop for Session {
    // Fallback for sessions dropped without `close`: a dedicated Chromium dies with
    // its last handle (ChromiumProcess kills by PID); a shared one is told to dispose
    // the context if a runtime is still there to send it.
    fn drop(&mut self) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        self.attach_task.abort();
        self.chromium.unregister_context(&self.context_id);
        if !self.dedicated
            && self.chromium.is_alive()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            {
                let conn = self.chromium.conn.clone();
                let context = self.context_id.clone();
                handle.spawn(async move {
                    let _ = conn
                        .call(
                            None,
                            "Target.disposeBrowserContext",
                            json!({ "browserContextId": context }),
                            Duration::from_secs(5),
                        )
                        .await;
                });
            }
        }
    }
}

fn key_event(kind: &str, key: &keys::Key, modifiers: u32, text: Option<&str>) -> Value {
    let mut event = json!({
        "type": kind,
        "key": key.key,
        "code": key.code,
        "windowsVirtualKeyCode": key.key_code,
        "nativeVirtualKeyCode": key.key_code,
        "modifiers": modifiers,
    });
    if let Some(text) = text {
        event["text"] = json!(text);
        event["unmodifiedText"] = json!(text);
    }
    event
}

#[cfg(test)]
mod tests;
