//! A session: one isolated browser context (own cookies, storage, cache) with its tabs,
//! and every action an agent can take in it. Actions run one at a time per session.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_config::Isolation;
use airlock_core::sync::lock;
use airlock_core::text::ellipsize;
use airlock_core::{NoRedaction, NodeRef, Redact};
use airlock_policy::Policy;
use airlock_snapshot::{Node, RenderOptions};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::browser::{BrowserOptions, Chromium, TargetNotice};
use crate::error::{Error, Result};
use crate::keys;
use crate::outbound::{RequestGuard, Requests, watch_worker};
use crate::tab::{FrameEntry, Hooks, NavGuard, Tab};

/// Deepest nesting of frames a snapshot descends into.
const MAX_FRAME_DEPTH: usize = 4;
/// Tallest full-page screenshot, in CSS pixels.
const MAX_SCREENSHOT_HEIGHT: f64 = 16_384.0;
/// Most tabs a session may have; popups beyond it are closed.
pub const MAX_TABS: usize = 10;
/// How long a loaded page must stay still before a wait for a target that is
/// missing (or disabled) gives up early (the walker's `IDLE_MS`).
const IDLE: Duration = Duration::from_millis(1000);
/// Longest fixed wait an agent may ask for.
const MAX_FIXED_WAIT: Duration = Duration::from_secs(60);
// What `settle` waits for in the page: an animation frame, then a task (a 200 ms cap
// for pages whose frames are throttled); or a task only.
const FRAME_AND_TASK: &str = "new Promise(r => { requestAnimationFrame(() => setTimeout(() => r(true), 0)); setTimeout(() => r(true), 200); })";
const TASK: &str = "new Promise(r => setTimeout(() => r(true), 0))";
/// Default snapshot byte cap: about 10k tokens.
pub const DEFAULT_SNAPSHOT_BYTES: usize = 40_000;
/// Default page-text byte cap.
pub const DEFAULT_TEXT_BYTES: usize = 40_000;

tokio::task_local! {
    // The action budget of the session calls made inside `with_action_budget`.
    static ACTION_BUDGET: Duration;
}

/// Runs `action` with `budget` as the action budget of every session call it makes,
/// instead of the pool's (a caller that knows its page is slow, or wants a quick no).
pub async fn with_action_budget<F: std::future::Future>(budget: Duration, action: F) -> F::Output {
    ACTION_BUDGET.scope(budget, action).await
}

/// Options for opening a session.
#[derive(Clone, Default)]
pub struct SessionOptions {
    /// Isolation mode; the pool's default when `None`.
    pub isolation: Option<Isolation>,
    /// Proxy every connection of the session goes through (`http://127.0.0.1:PORT`),
    /// loopback included. `None` only in tests of the browser layer itself.
    pub proxy_server: Option<String>,
    /// The policy pages' own navigations are held to: popups to denied URLs are
    /// closed, top-frame moves to denied schemes (`blob:`, `data:` …) stopped.
    pub policy: Option<Arc<Policy>>,
    /// Credentials put into the session before the agent's first action.
    pub injection: Option<Arc<Injection>>,
    /// Hides the session's secrets in every string a page or Chromium hands over,
    /// before anything reads, matches or cuts it. `None` hides nothing.
    pub redactor: Option<Arc<dyn Redact>>,
    /// Sees every request a page, frame or worker of the session makes before it
    /// leaves Chromium, and may refuse it. `None` pauses only requests that get
    /// injected headers.
    pub request_guard: Option<Arc<dyn RequestGuard>>,
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("isolation", &self.isolation)
            .field("proxy_server", &self.proxy_server)
            .field("policy", &self.policy.is_some())
            .field("injection", &self.injection)
            .field("redactor", &self.redactor.as_ref().map(|r| r.is_active()))
            .field("request_guard", &self.request_guard.is_some())
            .finish()
    }
}

/// Credentials a session starts with. Debug shows only what is there.
#[derive(Clone, Default)]
pub struct Injection {
    /// Cookies in CDP's `Network.CookieParam` shape, set into the session's own
    /// browser context.
    pub cookies: Vec<Value>,
    /// `(origin, key, value)`: written to the origin's localStorage (when absent) as
    /// its documents start, before their scripts run.
    pub storage: Vec<(String, String, zeroize::Zeroizing<String>)>,
    /// `(origin, name, value)`: added to requests to exactly that origin, nowhere else.
    pub headers: Vec<(String, String, zeroize::Zeroizing<String>)>,
}

impl std::fmt::Debug for Injection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Injection({} cookies, {} storage items, {} headers) [REDACTED]",
            self.cookies.len(),
            self.storage.len(),
            self.headers.len()
        )
    }
}

/// Text to type: literal pieces and secret values. Debug never shows a value.
#[derive(Clone, Default)]
pub struct TypedText(pub Vec<TextPiece>);

/// A piece of [`TypedText`].
#[derive(Clone)]
pub enum TextPiece {
    /// Typed as is.
    Plain(String),
    /// A secret value, typed only into a focused field of one of `origins`.
    Secret {
        /// What to call it in messages (`app.password`).
        label: String,
        /// Canonical origins it is bound to (`https://app.example.com`).
        origins: Vec<String>,
        /// The value; zeroed on drop.
        value: zeroize::Zeroizing<String>,
    },
}

impl std::fmt::Debug for TypedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut list = f.debug_list();
        for piece in &self.0 {
            match piece {
                TextPiece::Plain(text) => list.entry(text),
                TextPiece::Secret { label, .. } => list.entry(&format_args!("[secret {label}]")),
            };
        }
        list.finish()
    }
}

impl TypedText {
    /// Plain text only.
    pub fn plain(text: &str) -> TypedText {
        TypedText(vec![TextPiece::Plain(text.to_owned())])
    }

    /// Whether any piece is a secret.
    pub fn has_secret(&self) -> bool {
        self.0.iter().any(|p| matches!(p, TextPiece::Secret { .. }))
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|p| match p {
            TextPiece::Plain(t) => t.is_empty(),
            TextPiece::Secret { value, .. } => value.is_empty(),
        })
    }

    // The plain pieces joined (for checkboxes and selects, which take no secrets).
    fn plain_text(&self) -> String {
        self.0
            .iter()
            .filter_map(|p| match p {
                TextPiece::Plain(t) => Some(t.as_str()),
                TextPiece::Secret { .. } => None,
            })
            .collect()
    }
}

/// When a navigation counts as finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WaitUntil {
    /// The `load` event fired.
    #[default]
    Load,
    /// `DOMContentLoaded` fired.
    DomContentLoaded,
    /// No network activity for 500 ms after load.
    NetworkIdle,
}

impl WaitUntil {
    fn lifecycle_name(self) -> &'static str {
        match self {
            WaitUntil::Load => "load",
            WaitUntil::DomContentLoaded => "DOMContentLoaded",
            WaitUntil::NetworkIdle => "networkIdle",
        }
    }
}

/// What an action is aimed at.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A ref from a snapshot (`e12`, `f1e3`).
    Ref(NodeRef),
    /// Role and accessible name as the snapshot shows them, plus a 0-based index
    /// among several matches.
    Role {
        /// Role, e.g. `button`.
        role: String,
        /// Exact name (a case-insensitive substring matches when nothing is exact).
        name: Option<String>,
        /// Which match, when several.
        index: Option<usize>,
    },
    /// A CSS selector (searched through open shadow roots too).
    Selector(String),
    /// A point in the viewport, CSS pixels.
    Point {
        /// From the left edge.
        x: f64,
        /// From the top edge.
        y: f64,
    },
}

impl Target {
    fn describe(&self) -> String {
        match self {
            Target::Ref(r) => format!("ref `{r}`"),
            // The name is the agent's own words, not echoed: whether an echo came back
            // redacted would tell it whether its name was a secret.
            Target::Role { role, name, index } => {
                let mut s = role.clone();
                if name.is_some() {
                    s.push_str(" with the name given");
                }
                if let Some(i) = index {
                    s.push_str(&format!(" #{i}"));
                }
                s
            }
            Target::Selector(sel) => {
                format!("selector `{}`", sel.chars().take(80).collect::<String>())
            }
            Target::Point { x, y } => format!("point ({x}, {y})"),
        }
    }

    fn walker_json(&self) -> Value {
        match self {
            Target::Ref(r) => json!({ "ref": r.node }),
            Target::Role { role, name, index } => {
                json!({ "role": role, "name": name, "index": index })
            }
            Target::Selector(sel) => json!({ "selector": sel }),
            Target::Point { .. } => Value::Null,
        }
    }
}

/// A mouse button.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MouseButton {
    /// Primary.
    #[default]
    Left,
    /// Secondary (context menu).
    Right,
    /// Middle.
    Middle,
}

/// A keyboard modifier held during a click.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modifier {
    /// Alt / Option.
    Alt,
    /// Control.
    Control,
    /// Meta / Command.
    Meta,
    /// Shift.
    Shift,
}

/// How to click.
#[derive(Debug, Clone, Default)]
pub struct ClickOptions {
    /// Which button.
    pub button: MouseButton,
    /// Double click.
    pub double: bool,
    /// Modifiers held.
    pub modifiers: Vec<Modifier>,
}

/// What happened during an action, besides its own effect.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActionOutcome {
    /// URL of the active tab afterwards.
    pub url: String,
    /// Title of the active tab afterwards.
    pub title: String,
    /// One line per JavaScript dialog that was dismissed (or accepted) meanwhile.
    pub dialogs: Vec<String>,
    /// Tabs the page opened meanwhile (popups), as `[index] url`.
    pub new_tabs: Vec<String>,
    /// Whether the main frame navigated.
    pub navigated: bool,
    /// HTTP status of the main document, after a navigation.
    pub status: Option<u16>,
    /// A short note on the effect (`selected "Two"`, `already checked`).
    pub detail: Option<String>,
}

/// Options of a snapshot.
#[derive(Debug, Clone)]
pub struct SnapshotOptions {
    /// Only what can be acted on, plus locating headings and rows.
    pub interactive_only: bool,
    /// Most lines returned.
    pub max_nodes: usize,
    /// Most bytes returned.
    pub max_bytes: usize,
    /// First line to return (continues a truncated snapshot).
    pub offset: usize,
    /// Only this ref's subtree.
    pub scope: Option<NodeRef>,
    /// Only lines containing this text, with context.
    pub find: Option<String>,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        SnapshotOptions {
            interactive_only: false,
            max_nodes: usize::MAX,
            max_bytes: DEFAULT_SNAPSHOT_BYTES,
            offset: 0,
            scope: None,
            find: None,
        }
    }
}

/// A rendered snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The text, with a truncation line when paged.
    pub text: String,
    /// Page URL.
    pub url: String,
    /// Page title.
    pub title: String,
    /// Lines in the whole (filtered) snapshot.
    pub total_lines: usize,
    /// Index one past the last line shown; pass it as `offset` to continue.
    pub end: usize,
}

/// What to wait for.
#[derive(Debug, Clone, PartialEq)]
pub enum WaitCondition {
    /// Text appears in the page.
    Text(String),
    /// Text is gone from the page.
    TextGone(String),
    /// A target exists and is visible.
    Target(Target),
    /// A fixed time (at most 60 s).
    Time(Duration),
}

/// Scroll direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Towards the top.
    Up,
    /// Towards the bottom.
    Down,
    /// Towards the left.
    Left,
    /// Towards the right.
    Right,
}

/// What to scroll.
#[derive(Debug, Clone, PartialEq)]
pub enum Scroll {
    /// The page under the viewport centre, by `amount` CSS pixels (default: most of
    /// a viewport).
    Page {
        /// Which way.
        direction: Direction,
        /// How far.
        amount: Option<f64>,
    },
    /// Until the target is in view.
    IntoView(Target),
}

/// Screenshot encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageFormat {
    /// Lossless PNG.
    #[default]
    Png,
    /// JPEG with quality 1–100.
    Jpeg {
        /// Quality.
        quality: u8,
    },
}

/// What to capture.
#[derive(Debug, Clone, Default)]
pub struct ScreenshotOptions {
    /// The whole page rather than the viewport.
    pub full_page: bool,
    /// Only this element.
    pub target: Option<Target>,
    /// Encoding.
    pub format: ImageFormat,
}

/// An encoded image.
#[derive(Clone, PartialEq)]
pub struct Screenshot {
    /// Encoded bytes.
    pub data: Vec<u8>,
    /// `image/png` or `image/jpeg`.
    pub mime: &'static str,
}

impl std::fmt::Debug for Screenshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Screenshot({}, {} bytes)", self.mime, self.data.len())
    }
}

/// Page text, paged by bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct PageText {
    /// The text of this page of output.
    pub text: String,
    /// Length of the whole text in bytes.
    pub total_bytes: usize,
    /// Where the next page starts, if there is more.
    pub next_offset: Option<usize>,
}

/// One tab as listed to an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct TabInfo {
    /// Position in the list.
    pub index: usize,
    /// Current URL.
    pub url: String,
    /// Current title.
    pub title: String,
    /// Whether actions go to this tab.
    pub active: bool,
    /// Whether the page opened it (a popup).
    pub opened_by_page: bool,
}

struct Registry {
    tabs: Vec<Arc<Tab>>,
    active: usize,
    /// Popups closed because the session had MAX_TABS tabs, not yet reported.
    refused_popups: usize,
    /// Target ids of popups not yet reported in an action's outcome.
    unreported: Vec<String>,
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
    closed: AtomicBool,
    /// A secret was typed into some field: screenshots paint such fields over.
    secret_typed: AtomicBool,
    /// Applied to everything taken from a page or Chromium before it is used.
    redactor: Arc<dyn Redact>,
    /// Requests the request guard refused, not yet reported.
    refused: Arc<AtomicU64>,
}

#[derive(Deserialize)]
struct Located {
    x: f64,
    y: f64,
    rect: Rect,
    desc: String,
    /// The element's ref in its frame; later steps of the action name it by this ref,
    /// so they act on the element that was located.
    #[serde(rename = "ref", default)]
    node: Option<u64>,
}

impl Located {
    // The located element as a ref target (a point stays a point).
    fn target(&self, frame: u32, original: &Target) -> Target {
        match self.node {
            Some(node) => Target::Ref(NodeRef { frame, node }),
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
}

// What an action needs of its target before it acts.
const CLICKABLE: Prepare = Prepare {
    need_enabled: true,
    hit_test: true,
};
const HOVERABLE: Prepare = Prepare {
    need_enabled: false,
    hit_test: true,
};
const EDITABLE: Prepare = Prepare {
    need_enabled: true,
    hit_test: false,
};
const VISIBLE: Prepare = Prepare {
    need_enabled: false,
    hit_test: false,
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
        }));
        let (changed_tx, registry_changed) = watch::channel(0u64);
        let redactor: Arc<dyn Redact> = session_options
            .redactor
            .clone()
            .unwrap_or_else(|| Arc::new(NoRedaction));
        let guard = NavGuard::new(session_options.policy, redactor.clone());
        let requests = Requests {
            guard: session_options.request_guard.clone(),
            injection: session_options.injection.clone(),
            refused: Arc::new(AtomicU64::new(0)),
        };
        let attach_task = tokio::spawn(attach_tabs(
            chromium.clone(),
            registry.clone(),
            changed_tx,
            notices,
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
            closed: AtomicBool::new(false),
            secret_typed: AtomicBool::new(false),
            redactor,
            refused: requests.refused.clone(),
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
                        json!({ "cookies": injection.cookies, "browserContextId": session.context_id }),
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
        let _op = self.op.lock().await;
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
                .call(
                    None,
                    "Target.closeTarget",
                    json!({ "targetId": tab.target_id }),
                    self.budget(),
                )
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
        if tab.state.read(|s| s.unresponsive) {
            return self.revive(tab).await;
        }
        Ok(tab)
    }

    // A tab whose page did not answer: its running script is stopped
    // (`Runtime.terminateExecution` ends a busy loop at once); if it still does not
    // answer, the tab is closed and a blank one takes its place. Either way the
    // agent is told in the next outcome.
    async fn revive(&self, tab: Arc<Tab>) -> Result<Arc<Tab>> {
        let probe = Duration::from_secs(2);
        tab.state.with(|s| s.unresponsive = false);
        let _ = tab
            .conn
            .call(
                Some(&tab.session),
                "Runtime.terminateExecution",
                json!({}),
                probe,
            )
            .await;
        if tab.eval(0, "true", false, probe).await.is_ok() {
            self.guard.notify(
                "the page did not answer, so the script it was running was stopped".to_owned(),
            );
            return Ok(tab);
        }
        let _ = self
            .chromium
            .conn
            .call(
                None,
                "Target.closeTarget",
                json!({ "targetId": tab.target_id }),
                probe,
            )
            .await;
        lock(&self.registry)
            .tabs
            .retain(|t| t.target_id != tab.target_id);
        self.guard.notify(
            "the page did not answer even with its scripts stopped: its tab was closed and a blank one opened in its place".to_owned(),
        );
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
            .await?;
        let target_id = reply["targetId"]
            .as_str()
            .ok_or_else(|| Error::Protocol("createTarget returned no id".to_owned()))?
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
                return Err(Error::BrowserCrashed);
            }
            match tokio::time::timeout_at(deadline, changed.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    return Err(Error::Timeout {
                        what: "opening a tab".to_owned(),
                        ms: timeout.as_millis(),
                    });
                }
            }
        }
    }

    async fn outcome(&self, tab: &Tab, navigated: bool) -> ActionOutcome {
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
                        .map(|i| {
                            let url = registry.tabs[i].state.read(|s| s.url.clone());
                            format!("[{i}] {}", self.scrub(&url))
                        })
                })
                .collect()
        };
        let mut dialogs = tab.take_dialogs();
        dialogs.append(&mut lock(&self.guard.notices));
        if refused > 0 {
            dialogs.push(format!(
                "closed {refused} popup(s) the page opened: a session has at most {MAX_TABS} tabs"
            ));
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
            dialogs,
            new_tabs,
            navigated,
            status: None,
            detail: None,
        }
    }

    // ---- navigation ---------------------------------------------------------------

    /// Navigates the active tab and waits until `wait_until`.
    pub async fn navigate(&self, url: &str, wait_until: WaitUntil) -> Result<ActionOutcome> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let timeout = self.options.navigation_timeout;
        let reply = tab
            .call("Page.navigate", json!({ "url": url }), timeout)
            .await?;
        if let Some(error) = reply["errorText"].as_str().filter(|e| !e.is_empty()) {
            return Err(Error::NavigationFailed {
                url: ellipsize(url, 200),
                reason: error.to_owned(),
            });
        }
        if let Some(loader) = reply["loaderId"].as_str().map(str::to_owned) {
            let event = wait_until.lifecycle_name();
            let done = tab
                .state
                .wait(timeout, |s| {
                    s.loader_id == loader && s.lifecycle.contains(event)
                })
                .await;
            tab.check()?;
            if !done {
                return Err(Error::Timeout {
                    what: format!(
                        "navigation to `{}` (waiting for {event})",
                        ellipsize(url, 200)
                    ),
                    ms: timeout.as_millis(),
                });
            }
        }
        let mut outcome = self.outcome(&tab, true).await;
        outcome.status = self.document_status(&tab).await;
        Ok(outcome)
    }

    async fn document_status(&self, tab: &Tab) -> Option<u16> {
        let value = tab
            .eval(
                0,
                "(performance.getEntriesByType('navigation')[0] || {}).responseStatus || 0",
                false,
                self.budget(),
            )
            .await
            .ok()?;
        value
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .filter(|s| *s > 0)
    }

    /// Goes back one entry in the active tab's history.
    pub async fn back(&self) -> Result<ActionOutcome> {
        self.history(-1).await
    }

    /// Goes forward one entry in the active tab's history.
    pub async fn forward(&self) -> Result<ActionOutcome> {
        self.history(1).await
    }

    async fn history(&self, delta: i64) -> Result<ActionOutcome> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let timeout = self.options.navigation_timeout;
        let history = tab
            .call("Page.getNavigationHistory", json!({}), timeout)
            .await?;
        let current = history["currentIndex"].as_i64().unwrap_or(0);
        let entries = history["entries"].as_array().cloned().unwrap_or_default();
        let wanted = current + delta;
        let entry = usize::try_from(wanted)
            .ok()
            .and_then(|i| entries.get(i))
            .ok_or_else(|| {
                Error::InvalidArgument(if delta < 0 {
                    "there is no previous page in this tab's history".to_owned()
                } else {
                    "there is no next page in this tab's history".to_owned()
                })
            })?;
        let before = tab.state.read(|s| s.navigations);
        tab.call(
            "Page.navigateToHistoryEntry",
            json!({ "entryId": entry["id"] }),
            timeout,
        )
        .await?;
        self.wait_for_load_after(&tab, before, timeout).await?;
        let mut outcome = self.outcome(&tab, true).await;
        outcome.status = self.document_status(&tab).await;
        Ok(outcome)
    }

    /// Reloads the active tab.
    pub async fn reload(&self) -> Result<ActionOutcome> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let timeout = self.options.navigation_timeout;
        let before = tab.state.read(|s| s.navigations);
        tab.call("Page.reload", json!({}), timeout).await?;
        self.wait_for_load_after(&tab, before, timeout).await?;
        let mut outcome = self.outcome(&tab, true).await;
        outcome.status = self.document_status(&tab).await;
        Ok(outcome)
    }

    async fn wait_for_load_after(&self, tab: &Tab, before: u64, timeout: Duration) -> Result<()> {
        let done = tab
            .state
            .wait(timeout, |s| {
                s.navigations > before && s.lifecycle.contains("load")
            })
            .await;
        tab.check()?;
        if done {
            Ok(())
        } else {
            Err(Error::Timeout {
                what: "the page load".to_owned(),
                ms: timeout.as_millis(),
            })
        }
    }

    // After input, give the page an animation frame and a task to react; if that
    // started a main-frame navigation, wait for it to load (bounded by the navigation
    // budget).
    async fn settle(&self, tab: &Tab, before: (u64, u64)) -> bool {
        self.settle_with(tab, before, FRAME_AND_TASK).await
    }

    async fn settle_with(&self, tab: &Tab, before: (u64, u64), script: &str) -> bool {
        let _ = tokio::time::timeout(
            Duration::from_millis(500),
            tab.eval(0, script, true, Duration::from_millis(500)),
        )
        .await;
        let (requests, navigations) = tab.state.read(|s| (s.nav_requests, s.navigations));
        if requests == before.0 && navigations == before.1 {
            return false;
        }
        tab.state
            .wait(self.options.navigation_timeout, |s| {
                !s.loading || (s.navigations > before.1 && s.lifecycle.contains("load"))
            })
            .await;
        tab.state.read(|s| s.navigations > before.1)
    }

    fn nav_counters(tab: &Tab) -> (u64, u64) {
        tab.state.read(|s| (s.nav_requests, s.navigations))
    }

    // ---- targets ------------------------------------------------------------------

    async fn frame_chain(&self, tab: &Tab, frame: u32) -> Result<Vec<(u32, u64)>> {
        let mut chain = Vec::new();
        let mut current = frame;
        while let Some(owner) = tab
            .state
            .read(|s| s.frames.get(current as usize).and_then(|f| f.owner))
        {
            chain.push(owner);
            current = owner.0;
            if chain.len() > MAX_FRAME_DEPTH + 1 {
                break;
            }
        }
        chain.reverse();
        Ok(chain)
    }

    // Offset of frame `frame`'s viewport within the top viewport.
    async fn frame_offset(&self, tab: &Tab, frame: u32) -> Result<(f64, f64)> {
        let mut x = 0.0;
        let mut y = 0.0;
        for (parent, owner) in self.frame_chain(tab, frame).await? {
            let v = tab
                .eval(
                    parent,
                    &format!("__airlock.frameOwnerOffset({owner})"),
                    false,
                    self.budget(),
                )
                .await?;
            if v.get("error").is_some() {
                return Err(Error::RefNotFound {
                    reference: NodeRef { frame, node: 0 }.to_string(),
                });
            }
            x += v["x"].as_f64().unwrap_or(0.0);
            y += v["y"].as_f64().unwrap_or(0.0);
        }
        Ok((x, y))
    }

    // Finds the target, scrolls it (and the frames holding it) into view and waits
    // until it is actionable. Returns its frame, its centre in top-viewport
    // coordinates, and the element as a ref target, which the action's later steps use
    // so they act on the element that was located.
    async fn locate(
        &self,
        tab: &Tab,
        target: &Target,
        prepare: Prepare,
    ) -> Result<(u32, Located, Target)> {
        if let Target::Point { x, y } = target {
            let (w, h) = self.options.viewport;
            if !(0.0..f64::from(w)).contains(x) || !(0.0..f64::from(h)).contains(y) {
                return Err(Error::InvalidArgument(format!(
                    "point ({x}, {y}) is outside the {w}x{h} viewport"
                )));
            }
            let located = Located {
                x: *x,
                y: *y,
                rect: Rect {
                    x: *x,
                    y: *y,
                    w: 1.0,
                    h: 1.0,
                },
                desc: target.describe(),
                node: None,
            };
            return Ok((0, located, target.clone()));
        }
        self.check_selector(target)?;
        let budget = self.budget();
        if let Target::Role {
            role,
            name: Some(name),
            index,
        } = target
        {
            let deadline = tokio::time::Instant::now() + budget;
            let (frame, node) = self
                .find_named(tab, role, name, *index, deadline, true)
                .await?;
            let named = Target::Ref(NodeRef { frame, node });
            let left = deadline
                .saturating_duration_since(tokio::time::Instant::now())
                .max(Duration::from_millis(500));
            let located = self
                .prepare_in_frame(tab, frame, &named, prepare, true, left)
                .await?;
            let located = self.in_top_viewport(tab, frame, located).await?;
            return Ok((frame, located, named));
        }
        let frames: Vec<u32> = match target {
            Target::Ref(r) => vec![r.frame],
            _ => {
                let n = tab.state.read(|s| s.frames.len()) as u32;
                (0..n.max(1)).collect()
            }
        };
        let only_frame = frames.len() == 1;
        let mut last_error = None;
        for (pass, frame) in frames.iter().copied().chain(std::iter::once(0)).enumerate() {
            // Pass 1 looks in every frame without waiting; the last pass waits in the
            // top frame for the target to appear (pages that render late).
            let last_pass = pass == frames.len();
            if last_pass && only_frame {
                break;
            }
            let wait = only_frame || last_pass;
            match self
                .prepare_in_frame(tab, frame, target, prepare, wait, budget)
                .await
            {
                Ok(located) => {
                    let located = self.in_top_viewport(tab, frame, located).await?;
                    let resolved = located.target(frame, target);
                    return Ok((frame, located, resolved));
                }
                Err(Error::ElementNotFound { .. }) if !only_frame && !last_pass => {}
                Err(e) => {
                    last_error = Some(e);
                    break;
                }
            }
        }
        Err(last_error.unwrap_or_else(|| Error::ElementNotFound {
            target: target.describe(),
        }))
    }

    // A frame's located element, moved into top-viewport coordinates.
    async fn in_top_viewport(&self, tab: &Tab, frame: u32, located: Located) -> Result<Located> {
        let (dx, dy) = self.frame_offset(tab, frame).await?;
        Ok(Located {
            x: located.x + dx,
            y: located.y + dy,
            rect: Rect {
                x: located.rect.x + dx,
                y: located.rect.y + dy,
                ..located.rect
            },
            ..located
        })
    }

    // A role target with a name. The elements of that role in every frame are matched
    // here by the names the agent would be shown (redacted), exactly first, else as a
    // case-insensitive substring: matched in the page, on raw names, a name holding a
    // secret would answer yes or no to the agent's guesses. Waits for a match until
    // `deadline` (pages that render late).
    async fn find_named(
        &self,
        tab: &Tab,
        role: &str,
        name: &str,
        index: Option<usize>,
        deadline: tokio::time::Instant,
        fail_fast: bool,
    ) -> Result<(u32, u64)> {
        let wanted = collapse_ws(name);
        let wanted_lower = wanted.to_lowercase();
        let call = format!("__airlock.candidates({})", Value::from(role));
        let what = format!("{role} with the name given");
        // When the top document last changed, and its count of changes then.
        let mut last_change = (tokio::time::Instant::now(), -1_i64);
        loop {
            let frames = tab.state.read(|s| s.frames.len()).max(1) as u32;
            let (mut exact, mut loose) = (Vec::new(), Vec::new());
            let mut seen = -1;
            let mut ready = false;
            for frame in 0..frames {
                let reply = match tab.eval(frame, &call, false, self.budget()).await {
                    Ok(reply) => reply,
                    // A child frame that went away, or the top frame between documents.
                    Err(Error::Protocol(_) | Error::RefNotFound { .. }) => continue,
                    Err(e) => return Err(e),
                };
                if frame == 0 {
                    seen = reply["v"].as_i64().unwrap_or(-1);
                    ready = reply["ready"].as_bool() == Some(true);
                }
                for candidate in reply["list"].as_array().into_iter().flatten() {
                    let Some(node) = candidate["ref"].as_u64() else {
                        continue;
                    };
                    let shown = collapse_ws(
                        &self
                            .redactor
                            .redact(candidate["name"].as_str().unwrap_or_default()),
                    );
                    if shown == wanted {
                        exact.push((frame, node));
                    } else if shown.to_lowercase().contains(&wanted_lower) {
                        loose.push((frame, node));
                    }
                }
            }
            let matches = if exact.is_empty() { loose } else { exact };
            let found = match index {
                Some(i) => matches
                    .get(i)
                    .copied()
                    .ok_or_else(|| Error::ElementNotFound {
                        target: format!(
                            "{what} at index {i} (it has {} {}; index counts from 0)",
                            matches.len(),
                            if matches.len() == 1 {
                                "match"
                            } else {
                                "matches"
                            }
                        ),
                    }),
                None if matches.len() == 1 => Ok(matches[0]),
                None if matches.is_empty() => Err(Error::ElementNotFound {
                    target: what.clone(),
                }),
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "{what} matches {} elements; pass `index` (0-based) or a ref from browser_snapshot",
                        matches.len()
                    )));
                }
            };
            let now = tokio::time::Instant::now();
            if seen != last_change.1 {
                last_change = (now, seen);
            }
            // A loaded page that has stayed still this long will not grow the target.
            let settled = fail_fast && ready && now.duration_since(last_change.0) > IDLE;
            match found {
                Ok(found) => return Ok(found),
                Err(e) if now >= deadline || settled => return Err(e),
                Err(_) => {}
            }
            // Look again once the page has changed (or after a quarter second).
            let wait = deadline
                .saturating_duration_since(now)
                .min(Duration::from_millis(250));
            let _ = tab
                .eval(
                    0,
                    &format!("__airlock.changedSince({seen}, {})", wait.as_millis()),
                    true,
                    wait + Duration::from_secs(2),
                )
                .await;
        }
    }

    // In a session holding secrets, a selector may not match part of an attribute
    // (`[value^="a"]`): whether it matched would tell the agent, guess by guess, a
    // secret a page put into an attribute. Exact matches stay allowed.
    fn check_selector(&self, target: &Target) -> Result<()> {
        if let Target::Selector(selector) = target
            && self.redactor.is_active()
            && matches_part_of_attribute(selector)
        {
            return Err(Error::InvalidArgument(
                "in a session holding secrets a selector may not match part of an attribute \
                 (^=, $=, *=, |=); use a ref, a role and name, or an exact [attr=value]"
                    .to_owned(),
            ));
        }
        Ok(())
    }

    fn render_options(&self, url: &str) -> RenderOptions {
        RenderOptions {
            page_url: Some(url.to_owned()),
            redactor: self.redactor.is_active().then(|| self.redactor.clone()),
        }
    }

    // What a page-derived description may show: redacted, then cut.
    fn shown(&self, text: &str) -> String {
        ellipsize(&self.redactor.redact(text), 80)
    }

    // Everything else taken from a page or Chromium: redacted.
    fn scrub(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    async fn prepare_in_frame(
        &self,
        tab: &Tab,
        frame: u32,
        target: &Target,
        prepare: Prepare,
        wait_for_match: bool,
        budget: Duration,
    ) -> Result<Located> {
        // The frames holding the target must be in view before the target can be.
        for (parent, owner) in self.frame_chain(tab, frame).await? {
            tab.eval(
                parent,
                &format!("__airlock.scrollIntoView({{\"ref\": {owner}}})"),
                false,
                budget,
            )
            .await?;
        }
        let opts = json!({
            "timeoutMs": budget.as_millis() as u64,
            "needEnabled": prepare.need_enabled,
            "hitTest": prepare.hit_test,
            "waitForMatch": wait_for_match,
        });
        let expression = format!("__airlock.prepare({}, {opts})", target.walker_json());
        let value = tab
            .eval(frame, &expression, true, budget + Duration::from_secs(2))
            .await
            .map_err(|e| match e {
                Error::RefNotFound { .. } => Error::RefNotFound {
                    reference: match target {
                        Target::Ref(r) => r.to_string(),
                        other => other.describe(),
                    },
                },
                other => other,
            })?;
        self.walker_error(&value, target)?;
        let mut located: Located = serde_json::from_value(value)
            .map_err(|e| Error::Protocol(format!("bad prepare reply: {e}")))?;
        located.desc = self.shown(&located.desc);
        Ok(located)
    }

    // Runs a walker helper that takes a target and returns `{ok…}` or `{error…}`.
    async fn helper(&self, tab: &Tab, frame: u32, call: &str, target: &Target) -> Result<Value> {
        let value = tab.eval(frame, call, false, self.budget()).await?;
        self.walker_error(&value, target)?;
        Ok(value)
    }

    // The walker's `{error, message, desc}` as an error, its page-derived words
    // redacted.
    fn walker_error(&self, value: &Value, target: &Target) -> Result<()> {
        walker_error(value, target).map_err(|e| match e {
            Error::NotActionable { target, why } => Error::NotActionable {
                target: self.shown(&target),
                why: self.scrub(&why),
            },
            Error::ElementNotFound { target } => Error::ElementNotFound {
                target: self.scrub(&target),
            },
            Error::InvalidArgument(message) => Error::InvalidArgument(self.scrub(&message)),
            other => other,
        })
    }

    // ---- mouse and keyboard -------------------------------------------------------

    async fn mouse(&self, tab: &Tab, kind: &str, x: f64, y: f64, extra: Value) -> Result<()> {
        let mut params = json!({ "type": kind, "x": x, "y": y });
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                p.insert(k.clone(), v.clone());
            }
        }
        tab.call("Input.dispatchMouseEvent", params, self.budget())
            .await?;
        Ok(())
    }

    /// Clicks the target.
    pub async fn click(&self, target: &Target, options: &ClickOptions) -> Result<ActionOutcome> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let (_, located, _) = self.locate(&tab, target, CLICKABLE).await?;
        let before = Self::nav_counters(&tab);
        let button = match options.button {
            MouseButton::Left => "left",
            MouseButton::Right => "right",
            MouseButton::Middle => "middle",
        };
        let modifiers: u32 = options
            .modifiers
            .iter()
            .map(|m| match m {
                Modifier::Alt => keys::ALT,
                Modifier::Control => keys::CONTROL,
                Modifier::Meta => keys::META,
                Modifier::Shift => keys::SHIFT,
            })
            .fold(0, |a, b| a | b);
        let (x, y) = (located.x, located.y);
        self.mouse(&tab, "mouseMoved", x, y, json!({ "modifiers": modifiers }))
            .await?;
        let clicks = if options.double { 2 } else { 1 };
        for count in 1..=clicks {
            let extra = json!({ "button": button, "clickCount": count, "modifiers": modifiers });
            self.mouse(&tab, "mousePressed", x, y, extra.clone())
                .await?;
            self.mouse(&tab, "mouseReleased", x, y, extra).await?;
        }
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.detail = Some(format!("clicked {}", located.desc));
        Ok(outcome)
    }

    /// Moves the mouse over the target.
    pub async fn hover(&self, target: &Target) -> Result<ActionOutcome> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let (_, located, _) = self.locate(&tab, target, HOVERABLE).await?;
        let before = Self::nav_counters(&tab);
        self.mouse(&tab, "mouseMoved", located.x, located.y, json!({}))
            .await?;
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.detail = Some(format!("hovering over {}", located.desc));
        Ok(outcome)
    }

    /// Types `text` into the target field (replacing its content when `clear_first`),
    /// then presses Enter when `submit`.
    pub async fn type_text(
        &self,
        target: &Target,
        text: &str,
        clear_first: bool,
        submit: bool,
    ) -> Result<ActionOutcome> {
        self.type_pieces(target, &TypedText::plain(text), clear_first, submit)
            .await
    }

    /// Like [`Session::type_text`], with secret pieces: each is typed only if, right
    /// before it is inserted, the target is still the focused element and its own
    /// frame's origin is one the secret is bound to.
    pub async fn type_pieces(
        &self,
        target: &Target,
        text: &TypedText,
        clear_first: bool,
        submit: bool,
    ) -> Result<ActionOutcome> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let before = Self::nav_counters(&tab);
        let desc = self.type_into(&tab, target, text, clear_first).await?;
        let navigated = if submit {
            self.press_combo(&tab, &keys::parse_combo("Enter")?).await?;
            self.settle(&tab, before).await
        } else {
            // Input handlers ran during insertText; a task more lets what they queued
            // run too. Typing alone starts no navigation, so no frame is waited for
            // (~8 ms a call on average, half of what typing cost).
            self.settle_with(&tab, before, TASK).await
        };
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.detail = Some(format!("typed into {desc}"));
        Ok(outcome)
    }

    async fn type_into(
        &self,
        tab: &Tab,
        target: &Target,
        text: &TypedText,
        clear_first: bool,
    ) -> Result<String> {
        let (frame, located, target) = self.locate(tab, target, EDITABLE).await?;
        let target = &target;
        let call = format!(
            "__airlock.focusForTyping({}, {clear_first})",
            target.walker_json()
        );
        self.helper(tab, frame, &call, target).await?;
        // Every secret is checked once before anything is typed, so a wrong origin
        // types nothing at all …
        for piece in &text.0 {
            if let TextPiece::Secret { label, origins, .. } = piece {
                let call = format!("__airlock.secretDestination({})", target.walker_json());
                let found = self.helper(tab, frame, &call, target).await?;
                self.judge_destination(&found, label, origins)?;
            }
        }
        if text.is_empty() && clear_first {
            self.press_combo(tab, &keys::parse_combo("Delete")?).await?;
        }
        let mut secret_typed = false;
        for piece in &text.0 {
            match piece {
                TextPiece::Plain(text) if text.is_empty() => {}
                TextPiece::Plain(text) => {
                    tab.call("Input.insertText", json!({ "text": text }), self.budget())
                        .await?;
                }
                TextPiece::Secret { value, .. } if value.is_empty() => {}
                TextPiece::Secret {
                    label,
                    origins,
                    value,
                } => {
                    // … and checked again in the same task as the insertion: the page
                    // may have moved the focus or navigated meanwhile.
                    self.insert_secret(tab, frame, target, label, origins, value)
                        .await?;
                    secret_typed = true;
                }
            }
        }
        if secret_typed {
            self.secret_typed.store(true, Ordering::Release);
        }
        if secret_typed || clear_first {
            // Replaced by plain text, a field is no longer masked; with a secret, it is.
            let verb = if secret_typed {
                "markSecret"
            } else {
                "unmarkSecret"
            };
            let call = format!("__airlock.{verb}({})", target.walker_json());
            self.helper(tab, frame, &call, target).await?;
        }
        Ok(located.desc)
    }

    // Inserts a secret into the focused field, checking in the page, in the same task,
    // that what receives the text is a text field inside the target, of a frame whose
    // origin and every ancestor frame's origin the secret is bound to.
    async fn insert_secret(
        &self,
        tab: &Tab,
        frame: u32,
        target: &Target,
        label: &str,
        origins: &[String],
        value: &str,
    ) -> Result<()> {
        let reply = tab
            .call_function(
                frame,
                "function (target, text, origins) { return __airlock.typeSecret(target, text, origins); }",
                &[target.walker_json(), Value::from(value), Value::from(origins.to_vec())],
                self.budget(),
            )
            .await?;
        self.walker_error(&reply, target)?;
        self.judge_destination(&reply, label, origins)?;
        if reply["inserted"].as_bool() != Some(true) {
            return Err(Error::NotActionable {
                target: target.describe(),
                why: "it did not take the typed text".to_owned(),
            });
        }
        Ok(())
    }

    // Whether a secret may go where `found` (from the walker's `secretDestination` or
    // `typeSecret`) says keystrokes would go now.
    fn judge_destination(&self, found: &Value, label: &str, origins: &[String]) -> Result<()> {
        let mismatch = |detail: String| Error::SecretOriginMismatch {
            secret: label.to_owned(),
            allowed: origins.join(", "),
            detail: self.scrub(&detail),
        };
        let origin = found["origin"].as_str().unwrap_or_default();
        if !origins.iter().any(|o| o == origin) {
            return Err(mismatch(format!("the field is on {origin}")));
        }
        // A bound login framed by another site would capture the keystrokes for it.
        for ancestor in found["ancestors"].as_array().into_iter().flatten() {
            let ancestor = ancestor.as_str().unwrap_or("an unknown origin");
            if !origins.iter().any(|o| o == ancestor) {
                return Err(mismatch(format!(
                    "the field's page is framed by {ancestor}"
                )));
            }
        }
        match found["focus"].as_str() {
            Some("ok") => Ok(()),
            Some(why) => Err(mismatch(why.to_owned())),
            None => Err(mismatch(
                "the field's focus could not be checked".to_owned(),
            )),
        }
    }

    /// Fills several fields: text fields are replaced, checkboxes take `true`/`false`,
    /// selects take an option value or label.
    pub async fn fill_form(&self, fields: &[(Target, String)]) -> Result<ActionOutcome> {
        let typed: Vec<(Target, TypedText)> = fields
            .iter()
            .map(|(t, v)| (t.clone(), TypedText::plain(v)))
            .collect();
        self.fill_form_pieces(&typed).await
    }

    /// [`Session::fill_form`] with secret pieces in text fields (checkboxes and
    /// selects take plain values only).
    pub async fn fill_form_pieces(&self, fields: &[(Target, TypedText)]) -> Result<ActionOutcome> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let before = Self::nav_counters(&tab);
        let mut done = Vec::new();
        for (target, value) in fields {
            let (frame, located, target) = self.locate(&tab, target, EDITABLE).await?;
            let target = &target;
            let kind = self
                .helper(
                    &tab,
                    frame,
                    &format!("__airlock.fieldKind({})", target.walker_json()),
                    target,
                )
                .await?;
            let kind = kind["kind"].as_str().unwrap_or("text");
            if kind != "text" && value.has_secret() {
                return Err(Error::InvalidArgument(format!(
                    "{} is not a text field: a secret placeholder can only be typed",
                    located.desc
                )));
            }
            let plain = value.plain_text();
            match kind {
                "check" => {
                    let want = match plain.as_str() {
                        "true" | "on" | "checked" | "yes" => true,
                        "false" | "off" | "unchecked" | "no" => false,
                        _ => {
                            return Err(Error::InvalidArgument(format!(
                                "{} is a checkbox: give `true` or `false`",
                                located.desc
                            )));
                        }
                    };
                    self.set_checked_in(&tab, target, want).await?;
                }
                "select" => {
                    self.select_in(&tab, frame, target, std::slice::from_ref(&plain))
                        .await?;
                }
                _ => {
                    self.type_into(&tab, target, value, true).await?;
                }
            }
            done.push(located.desc);
        }
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.detail = Some(format!("filled {}", done.join(", ")));
        Ok(outcome)
    }

    async fn press_combo(&self, tab: &Tab, combo: &keys::Combo) -> Result<()> {
        let timeout = self.budget();
        let mut held = 0;
        for (bit, key) in &combo.modifiers {
            held |= bit;
            tab.call(
                "Input.dispatchKeyEvent",
                key_event("rawKeyDown", key, held, None),
                timeout,
            )
            .await?;
        }
        let key = &combo.key;
        // Text is produced only when no command modifier is held (Control+A selects
        // all rather than typing "a").
        let command = held & (keys::CONTROL | keys::ALT | keys::META) != 0;
        let text = if command { None } else { key.text.clone() };
        let down = if text.is_some() {
            "keyDown"
        } else {
            "rawKeyDown"
        };
        tab.call(
            "Input.dispatchKeyEvent",
            key_event(down, key, held, text.as_deref()),
            timeout,
        )
        .await?;
        tab.call(
            "Input.dispatchKeyEvent",
            key_event("keyUp", key, held, None),
            timeout,
        )
        .await?;
        for (bit, key) in combo.modifiers.iter().rev() {
            held &= !bit;
            tab.call(
                "Input.dispatchKeyEvent",
                key_event("keyUp", key, held, None),
                timeout,
            )
            .await?;
        }
        Ok(())
    }

    /// Presses a key or combo (`Enter`, `Control+A`, `Shift+Tab`) in the focused element.
    pub async fn press_key(&self, combo: &str) -> Result<ActionOutcome> {
        let combo = keys::parse_combo(combo)?;
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let before = Self::nav_counters(&tab);
        self.press_combo(&tab, &combo).await?;
        let navigated = self.settle(&tab, before).await;
        Ok(self.outcome(&tab, navigated).await)
    }

    /// Selects option(s) of a `<select>` by value or visible label.
    pub async fn select_option(&self, target: &Target, values: &[String]) -> Result<ActionOutcome> {
        if values.is_empty() {
            return Err(Error::InvalidArgument(
                "give at least one value to select".to_owned(),
            ));
        }
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let (frame, _, target) = self.locate(&tab, target, EDITABLE).await?;
        let before = Self::nav_counters(&tab);
        let selected = self.select_in(&tab, frame, &target, values).await?;
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.detail = Some(format!("selected {selected}"));
        Ok(outcome)
    }

    async fn select_in(
        &self,
        tab: &Tab,
        frame: u32,
        target: &Target,
        values: &[String],
    ) -> Result<String> {
        let call = format!(
            "__airlock.selectOptions({}, {})",
            target.walker_json(),
            Value::from(values.to_vec())
        );
        let v = self.helper(tab, frame, &call, target).await?;
        Ok(v["selected"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(|s| format!("\"{}\"", self.shown(s))))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default())
    }

    /// Checks (`true`) or unchecks a checkbox, radio or switch, by clicking it when its
    /// state differs; verifies the state changed.
    pub async fn set_checked(&self, target: &Target, checked: bool) -> Result<ActionOutcome> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let before = Self::nav_counters(&tab);
        let detail = self.set_checked_in(&tab, target, checked).await?;
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.detail = Some(detail);
        Ok(outcome)
    }

    async fn set_checked_in(&self, tab: &Tab, target: &Target, want: bool) -> Result<String> {
        let (frame, located, target) = self.locate(tab, target, CLICKABLE).await?;
        let target = &target;
        let read = format!("__airlock.checked({})", target.walker_json());
        let state = self.helper(tab, frame, &read, target).await?;
        let verb = if want { "checked" } else { "unchecked" };
        if state["checked"].as_bool() == Some(want) {
            return Ok(format!("{} was already {verb}", located.desc));
        }
        if !want && state["checked"].as_bool() == Some(true) {
            // A checked radio cannot be unchecked by clicking it.
            let role = located.desc.split(' ').next().unwrap_or_default();
            if role == "radio" {
                return Err(Error::NotActionable {
                    target: located.desc,
                    why: "a radio button is unchecked by checking another one of its group"
                        .to_owned(),
                });
            }
        }
        let extra = json!({ "button": "left", "clickCount": 1 });
        self.mouse(tab, "mouseMoved", located.x, located.y, json!({}))
            .await?;
        self.mouse(tab, "mousePressed", located.x, located.y, extra.clone())
            .await?;
        self.mouse(tab, "mouseReleased", located.x, located.y, extra)
            .await?;
        let after = self.helper(tab, frame, &read, target).await?;
        if after["checked"].as_bool() != Some(want) {
            return Err(Error::NotActionable {
                target: located.desc,
                why: format!("clicking it did not make it {verb}"),
            });
        }
        Ok(format!("{verb} {}", located.desc))
    }

    /// Scrolls the page, or brings a target into view.
    pub async fn scroll(&self, scroll: &Scroll) -> Result<ActionOutcome> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let before = Self::nav_counters(&tab);
        let detail = match scroll {
            Scroll::IntoView(target) => {
                let (_, located, _) = self.locate(&tab, target, VISIBLE).await?;
                format!("scrolled {} into view", located.desc)
            }
            Scroll::Page { direction, amount } => {
                let (w, h) = self.options.viewport;
                let amount = amount.unwrap_or(f64::from(h) * 0.8);
                if !amount.is_finite() || amount <= 0.0 || amount > 100_000.0 {
                    return Err(Error::InvalidArgument(format!(
                        "scroll amount {amount} is outside 1..=100000"
                    )));
                }
                let (dx, dy) = match direction {
                    Direction::Up => (0.0, -amount),
                    Direction::Down => (0.0, amount),
                    Direction::Left => (-amount, 0.0),
                    Direction::Right => (amount, 0.0),
                };
                self.mouse(
                    &tab,
                    "mouseWheel",
                    f64::from(w) / 2.0,
                    f64::from(h) / 2.0,
                    json!({ "deltaX": dx, "deltaY": dy }),
                )
                .await?;
                let pos = tab
                    .eval(
                        0,
                        "new Promise(r => requestAnimationFrame(() => r({x: Math.round(scrollX), y: Math.round(scrollY), h: document.documentElement.scrollHeight})))",
                        true,
                        self.budget(),
                    )
                    .await?;
                format!(
                    "scrolled to x={} y={} of page height {}",
                    pos["x"], pos["y"], pos["h"]
                )
            }
        };
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.detail = Some(detail);
        Ok(outcome)
    }

    /// Waits for text to appear or go, a target to appear, or a fixed time.
    pub async fn wait_for(
        &self,
        condition: &WaitCondition,
        timeout: Option<Duration>,
    ) -> Result<ActionOutcome> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let budget = timeout.unwrap_or(self.budget());
        let what = match condition {
            WaitCondition::Time(d) => {
                if *d > MAX_FIXED_WAIT {
                    return Err(Error::InvalidArgument(format!(
                        "a fixed wait is at most {} ms",
                        MAX_FIXED_WAIT.as_millis()
                    )));
                }
                tokio::time::sleep(*d).await;
                let mut outcome = self.outcome(&tab, false).await;
                outcome.detail = Some(format!("waited {} ms", d.as_millis()));
                return Ok(outcome);
            }
            WaitCondition::Text(text) => {
                self.wait_for_text(&tab, text, false, budget).await?;
                "the text given to appear".to_owned()
            }
            WaitCondition::TextGone(text) => {
                self.wait_for_text(&tab, text, true, budget).await?;
                "the text given to go".to_owned()
            }
            WaitCondition::Target(target) => {
                let what = format!("{} to appear", target.describe());
                self.wait_for_target(&tab, target, budget)
                    .await
                    .map_err(|e| match e {
                        Error::Timeout { ms, .. } => Error::Timeout {
                            what: format!("waiting for {what}"),
                            ms,
                        },
                        other => other,
                    })?;
                what
            }
        };
        let mut outcome = self.outcome(&tab, false).await;
        outcome.detail = Some(format!("done waiting for {what}"));
        Ok(outcome)
    }

    // Waits until the page's visible text (redacted, compared without case) holds
    // `text`, or no longer does. The page is asked for its text each time its DOM
    // changes (at least every quarter second) and the comparison is made here: made in
    // the page, on raw text, it would answer yes or no about a secret the page shows.
    async fn wait_for_text(
        &self,
        tab: &Tab,
        text: &str,
        gone: bool,
        budget: Duration,
    ) -> Result<()> {
        let wanted = collapse_runs(text).to_lowercase();
        let deadline = tokio::time::Instant::now() + budget;
        let mut seen: i64 = -1;
        loop {
            let now = tokio::time::Instant::now();
            let wait = if seen < 0 {
                Duration::ZERO
            } else {
                deadline
                    .saturating_duration_since(now)
                    .min(Duration::from_millis(250))
            };
            let call = format!("__airlock.textAfter({seen}, {})", wait.as_millis());
            match tab
                .eval(0, &call, true, wait + Duration::from_secs(2))
                .await
            {
                Ok(reply) => {
                    seen = reply["v"].as_i64().unwrap_or(0);
                    let mut raw = reply["text"].as_str().unwrap_or_default();
                    if reply["cut"].as_bool() == Some(true) {
                        // Cut in the page: leave off what may be the start of a secret.
                        let mut end = raw.len().saturating_sub(self.redactor.reach());
                        while !raw.is_char_boundary(end) {
                            end -= 1;
                        }
                        raw = &raw[..end];
                    }
                    let page = self.redactor.redact(raw).to_lowercase();
                    if page.contains(&wanted) != gone {
                        return Ok(());
                    }
                }
                // The page navigated under the wait: try again in the new document.
                Err(Error::Protocol(_) | Error::RefNotFound { .. }) if now < deadline => {
                    seen = -1;
                    tab.state
                        .wait(Duration::from_millis(200), |s| {
                            s.lifecycle.contains("DOMContentLoaded")
                        })
                        .await;
                }
                Err(e) => return Err(e),
            }
            if tokio::time::Instant::now() >= deadline {
                let what = if gone { "go" } else { "appear" };
                return Err(Error::Timeout {
                    what: format!("waiting for the text given to {what}"),
                    ms: budget.as_millis(),
                });
            }
        }
    }

    // Waits until a target exists and is visible. A name is matched here (see
    // `find_named`); what is left is waited for in the page.
    async fn wait_for_target(&self, tab: &Tab, target: &Target, budget: Duration) -> Result<()> {
        self.check_selector(target)?;
        let deadline = tokio::time::Instant::now() + budget;
        let (frame, target) = match target {
            Target::Role {
                role,
                name: Some(name),
                index,
            } => {
                let (frame, node) = self
                    .find_named(tab, role, name, *index, deadline, false)
                    .await
                    .map_err(|e| match e {
                        Error::ElementNotFound { .. } => Error::Timeout {
                            what: String::new(),
                            ms: budget.as_millis(),
                        },
                        other => other,
                    })?;
                (frame, Target::Ref(NodeRef { frame, node }))
            }
            Target::Ref(r) => (r.frame, target.clone()),
            _ => (0, target.clone()),
        };
        let cond = json!({ "target": target.walker_json() });
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let call = format!("__airlock.waitFor({cond}, {})", left.as_millis());
            match tab
                .eval(frame, &call, true, left + Duration::from_secs(2))
                .await
            {
                Ok(v) if v["ok"].as_bool() == Some(true) => return Ok(()),
                Ok(v) => {
                    self.walker_error(&v, &target)?;
                    return Err(Error::Timeout {
                        what: String::new(),
                        ms: budget.as_millis(),
                    });
                }
                // The page navigated under the wait: try again in the new document.
                Err(Error::Protocol(_)) | Err(Error::RefNotFound { .. })
                    if tokio::time::Instant::now() < deadline
                        && !matches!(target, Target::Ref(_)) =>
                {
                    tab.state
                        .wait(Duration::from_millis(200), |s| {
                            s.lifecycle.contains("DOMContentLoaded")
                        })
                        .await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    // ---- reading --------------------------------------------------------------------

    /// Takes an accessibility snapshot of the active tab and remembers it as the base
    /// for [`Session::changes`].
    pub async fn snapshot(&self, options: &SnapshotOptions) -> Result<Snapshot> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let url = tab.state.read(|s| s.url.clone());
        tab.state.with(|s| s.walk_truncated = None);
        let tree = match options.scope {
            None => self.walk_frame(&tab, 0, 0).await?,
            Some(scope) => self.walk_scope(&tab, scope).await?,
        };
        let truncated = tab.state.with(|s| s.walk_truncated.take());
        let title = self.scrub(&tree.name);
        let all = airlock_snapshot::lines(&tree, &self.render_options(&url));
        let url = self.scrub(&url);
        if options.scope.is_none() {
            tab.state.with(|s| s.last_snapshot = Some(all.clone()));
        }
        let mut lines = all;
        if options.interactive_only {
            lines = airlock_snapshot::interactive_only(&lines);
        }
        if let Some(query) = options.find.as_deref().filter(|q| !q.is_empty()) {
            // The lines are redacted already: a query can only find what it would show.
            lines = airlock_snapshot::find(&lines, query);
            if lines.is_empty() {
                // The query is the agent's own; not echoed, so the answer is the same
                // whatever it was.
                return Ok(Snapshot {
                    text: "no line of the snapshot contains the text given\n".to_owned(),
                    url,
                    title,
                    total_lines: 0,
                    end: 0,
                });
            }
        }
        let window = airlock_snapshot::window(
            &lines,
            options.offset,
            options.max_nodes.max(1),
            options.max_bytes.max(256),
        );
        let mut text = window.text;
        if let Some(why) = truncated {
            text.push_str(&walk_stopped(&why));
        }
        Ok(Snapshot {
            text,
            url,
            title,
            total_lines: window.total,
            end: window.end,
        })
    }

    /// What changed since the previous snapshot (or `changes` call) of the active tab,
    /// or `None` when nothing did; the new state becomes the base of the next call.
    pub async fn changes(&self) -> Result<Option<String>> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let url = tab.state.read(|s| s.url.clone());
        tab.state.with(|s| s.walk_truncated = None);
        let tree = self.walk_frame(&tab, 0, 0).await?;
        let truncated = tab.state.with(|s| s.walk_truncated.take());
        let new = airlock_snapshot::lines(&tree, &self.render_options(&url));
        let old = tab.state.with(|s| s.last_snapshot.replace(new.clone()));
        let changes = match old {
            Some(old) => airlock_snapshot::diff(&old, &new),
            None => {
                Some(airlock_snapshot::window(&new, 0, usize::MAX, DEFAULT_SNAPSHOT_BYTES).text)
            }
        };
        Ok(match (changes, truncated) {
            (changes, None) => changes,
            (Some(text), Some(why)) => Some(text + &walk_stopped(&why)),
            (None, Some(_)) => None,
        })
    }

    /// Forgets the base of [`Session::changes`]: the next call returns the page
    /// whole (capped), as after a navigation whose snapshot nobody read.
    pub async fn forget_changes(&self) -> Result<()> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        tab.state.with(|s| s.last_snapshot = None);
        Ok(())
    }

    async fn walk_scope(&self, tab: &Tab, scope: NodeRef) -> Result<Node> {
        let base = frame_base(tab, scope.frame)?;
        let value = tab
            .eval(
                scope.frame,
                &format!(
                    "__airlock.snapshot({{\"base\": {base}, \"scope\": {}}})",
                    scope.node
                ),
                false,
                self.budget(),
            )
            .await?;
        let walked = WalkResult::decode(value)?;
        if walked.error.is_some() {
            return Err(Error::RefNotFound {
                reference: scope.to_string(),
            });
        }
        self.finish_walk(tab, scope.frame, 0, walked).await
    }

    fn walk_frame<'a>(
        &'a self,
        tab: &'a Tab,
        frame: u32,
        depth: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Node>> + Send + 'a>> {
        Box::pin(async move {
            let base = frame_base(tab, frame)?;
            let value = tab
                .eval(
                    frame,
                    &format!("__airlock.snapshot({{\"base\": {base}}})"),
                    false,
                    self.budget(),
                )
                .await?;
            self.finish_walk(tab, frame, depth, WalkResult::decode(value)?)
                .await
        })
    }

    async fn finish_walk(
        &self,
        tab: &Tab,
        frame: u32,
        depth: usize,
        walked: WalkResult,
    ) -> Result<Node> {
        if let Some(next) = walked.next {
            tab.state.with(|s| {
                if let Some(f) = s.frames.get_mut(frame as usize) {
                    f.next_ref = f.next_ref.max(next);
                }
            });
        }
        if let Some(why) = walked.truncated {
            tab.state
                .with(|s| s.walk_truncated.get_or_insert(why).clone());
        }
        let mut tree = walked
            .tree
            .ok_or_else(|| Error::Protocol("the page helper returned no snapshot".to_owned()))?;
        tree.set_frame(frame);
        if depth >= MAX_FRAME_DEPTH {
            return Ok(tree);
        }
        let mut owners = Vec::new();
        collect_frame_owners(&tree, &mut Vec::new(), &mut owners);
        for (path, owner_ref) in owners {
            let child = match self.child_frame(tab, frame, owner_ref).await {
                Ok(Some(index)) => self.walk_frame(tab, index, depth + 1).await.ok(),
                _ => None,
            };
            if let Some(owner) = node_at(&mut tree, &path) {
                match child {
                    Some(child) => owner.children = child.children,
                    None => owner.text = Some("(frame content not available)".to_owned()),
                }
            }
        }
        Ok(tree)
    }

    // Registers (or finds) the frame held by `<iframe>` ref `owner_ref` of `frame`.
    async fn child_frame(&self, tab: &Tab, frame: u32, owner_ref: u64) -> Result<Option<u32>> {
        let (session, object) = tab.object_of_ref(frame, owner_ref, self.budget()).await?;
        let described = tab
            .conn
            .call(
                Some(&session),
                "DOM.describeNode",
                json!({ "objectId": object }),
                self.budget(),
            )
            .await?;
        let _ = tab
            .conn
            .call(
                Some(&session),
                "Runtime.releaseObject",
                json!({ "objectId": object }),
                self.budget(),
            )
            .await;
        let Some(frame_id) = described["node"]["frameId"].as_str().map(str::to_owned) else {
            return Ok(None);
        };
        Ok(Some(tab.state.with(|s| {
            if let Some(i) = s.frames.iter().position(|f| f.frame_id == frame_id) {
                s.frames[i].owner = Some((frame, owner_ref));
                s.frames[i].parent_session = Some(session);
                i as u32
            } else {
                s.frames.push(FrameEntry {
                    frame_id,
                    owner: Some((frame, owner_ref)),
                    next_ref: 1,
                    parent_session: Some(session),
                });
                (s.frames.len() - 1) as u32
            }
        })))
    }

    /// The page's text as markdown-ish lines (headings, lists, links, tables), paged
    /// by bytes from `offset`.
    pub async fn read_text(&self, offset: usize, max_bytes: usize) -> Result<PageText> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let value = tab
            .eval(0, "__airlock.readText()", false, self.budget())
            .await?;
        let raw = value["text"].as_str().unwrap_or_default();
        let mut text = match value["truncated"].as_str() {
            // Cut in the page: the end may hold the start of a secret the redactor
            // cannot recognise, so a redactor's reach is left off it.
            Some(why) => {
                let mut end = raw.len().saturating_sub(self.redactor.reach());
                while !raw.is_char_boundary(end) {
                    end -= 1;
                }
                let mut kept = self.scrub(&raw[..end]);
                kept.push_str(&format!(
                    "\n[the rest of the page's text is not read: {why}]"
                ));
                kept
            }
            // Redacted whole before it is paged: no page may end or start inside a
            // secret.
            None => self.scrub(raw),
        };
        text.shrink_to_fit();
        Ok(page_of(&text, offset, max_bytes.max(256)))
    }

    /// Captures the viewport, the full page or one element.
    pub async fn screenshot(&self, options: &ScreenshotOptions) -> Result<Screenshot> {
        let _op = self.op.lock().await;
        let tab = self.tab().await?;
        let timeout = self.budget();
        let (format, mime, quality) = match options.format {
            ImageFormat::Png => ("png", "image/png", None),
            ImageFormat::Jpeg { quality } => {
                if !(1..=100).contains(&quality) {
                    return Err(Error::InvalidArgument(format!(
                        "JPEG quality {quality} is outside 1..=100"
                    )));
                }
                ("jpeg", "image/jpeg", Some(quality))
            }
        };
        let mut params = json!({ "format": format });
        if let Some(q) = quality {
            params["quality"] = json!(q);
        }
        if let Some(target) = &options.target {
            let (_, located, _) = self.locate(&tab, target, VISIBLE).await?;
            let metrics = tab
                .call("Page.getLayoutMetrics", json!({}), timeout)
                .await?;
            let page_x = metrics["cssVisualViewport"]["pageX"]
                .as_f64()
                .unwrap_or(0.0);
            let page_y = metrics["cssVisualViewport"]["pageY"]
                .as_f64()
                .unwrap_or(0.0);
            let r = located.rect;
            params["clip"] = json!({ "x": r.x + page_x, "y": r.y + page_y, "width": r.w.max(1.0), "height": r.h.max(1.0), "scale": 1 });
            params["captureBeyondViewport"] = json!(true);
        } else if options.full_page {
            let metrics = tab
                .call("Page.getLayoutMetrics", json!({}), timeout)
                .await?;
            let width = metrics["cssContentSize"]["width"]
                .as_f64()
                .unwrap_or(0.0)
                .max(1.0);
            let height = metrics["cssContentSize"]["height"]
                .as_f64()
                .unwrap_or(0.0)
                .clamp(1.0, MAX_SCREENSHOT_HEIGHT);
            params["clip"] =
                json!({ "x": 0, "y": 0, "width": width, "height": height, "scale": 1 });
            params["captureBeyondViewport"] = json!(true);
        }
        // Fields showing a secret are painted over for the capture, in every frame (a
        // session that never typed a secret skips the round trips).
        let frames = if self.secret_typed.load(Ordering::Acquire) {
            tab.state.read(|s| s.frames.len()) as u32
        } else {
            0
        };
        for frame in 0..frames {
            let masked = tab
                .eval(frame, "__airlock.maskSecrets(true)", false, timeout)
                .await;
            if frame == 0 {
                masked?;
            }
        }
        let reply = tab
            .call(
                "Page.captureScreenshot",
                params,
                timeout.max(Duration::from_secs(20)),
            )
            .await;
        for frame in 0..frames {
            let _ = tab
                .eval(frame, "__airlock.maskSecrets(false)", false, timeout)
                .await;
        }
        let reply = reply?;
        let data = base64::engine::general_purpose::STANDARD
            .decode(reply["data"].as_str().unwrap_or_default())
            .map_err(|e| Error::Protocol(format!("screenshot was not base64: {e}")))?;
        Ok(Screenshot { data, mime })
    }

    // ---- tabs -----------------------------------------------------------------------

    /// Lists the session's tabs.
    pub async fn tabs(&self) -> Result<Vec<TabInfo>> {
        let _op = self.op.lock().await;
        self.tab().await?;
        self.list_tabs().await
    }

    async fn list_tabs(&self) -> Result<Vec<TabInfo>> {
        let (tabs, active) = {
            let registry = lock(&self.registry);
            (registry.tabs.clone(), registry.active)
        };
        let mut out = Vec::with_capacity(tabs.len());
        for (index, tab) in tabs.iter().enumerate() {
            let info = self
                .chromium
                .conn
                .call(
                    None,
                    "Target.getTargetInfo",
                    json!({ "targetId": tab.target_id }),
                    self.budget(),
                )
                .await
                .unwrap_or_default();
            out.push(TabInfo {
                index,
                url: self.scrub(
                    &info["targetInfo"]["url"]
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| tab.state.read(|s| s.url.clone())),
                ),
                title: self.scrub(info["targetInfo"]["title"].as_str().unwrap_or_default()),
                active: index == active,
                opened_by_page: tab.opener.is_some(),
            });
        }
        lock(&self.registry).unreported.clear();
        Ok(out)
    }

    /// Opens a new tab (optionally navigating it) and makes it active.
    pub async fn new_tab(&self, url: Option<&str>) -> Result<Vec<TabInfo>> {
        {
            let _op = self.op.lock().await;
            self.tab().await?;
            if lock(&self.registry).tabs.len() >= MAX_TABS {
                return Err(Error::TabLimit { max: MAX_TABS });
            }
            let tab = self.create_tab().await?;
            tab.call("Page.bringToFront", json!({}), self.budget())
                .await?;
        }
        if let Some(url) = url {
            self.navigate(url, WaitUntil::Load).await?;
        }
        let _op = self.op.lock().await;
        self.list_tabs().await
    }

    /// Makes tab `index` active.
    pub async fn select_tab(&self, index: usize) -> Result<Vec<TabInfo>> {
        let _op = self.op.lock().await;
        self.tab().await?;
        let tab = {
            let mut registry = lock(&self.registry);
            let tab = registry
                .tabs
                .get(index)
                .cloned()
                .ok_or(Error::TabNotFound { index })?;
            registry.active = index;
            tab
        };
        tab.call("Page.bringToFront", json!({}), self.budget())
            .await?;
        self.list_tabs().await
    }

    /// Closes tab `index`; the last tab cannot be closed (close the session instead).
    pub async fn close_tab(&self, index: usize) -> Result<Vec<TabInfo>> {
        let _op = self.op.lock().await;
        self.tab().await?;
        let tab = {
            let registry = lock(&self.registry);
            if registry.tabs.len() <= 1 && index == 0 {
                return Err(Error::InvalidArgument(
                    "cannot close the last tab; close the session instead".to_owned(),
                ));
            }
            registry
                .tabs
                .get(index)
                .cloned()
                .ok_or(Error::TabNotFound { index })?
        };
        self.chromium
            .conn
            .call(
                None,
                "Target.closeTarget",
                json!({ "targetId": tab.target_id }),
                self.budget(),
            )
            .await?;
        tab.state.wait(self.budget(), |s| s.detached).await;
        {
            let mut registry = lock(&self.registry);
            let active_id = registry
                .tabs
                .get(registry.active)
                .map(|t| t.target_id.clone());
            registry.tabs.retain(|t| t.target_id != tab.target_id);
            registry.active = active_id
                .and_then(|id| registry.tabs.iter().position(|t| t.target_id == id))
                .unwrap_or(registry.tabs.len().saturating_sub(1));
        }
        self.list_tabs().await
    }
}

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

async fn attach_tabs(
    chromium: Arc<Chromium>,
    registry: Arc<Mutex<Registry>>,
    changed: watch::Sender<u64>,
    mut notices: mpsc::UnboundedReceiver<TargetNotice>,
    options: Arc<BrowserOptions>,
    hooks: Hooks,
) {
    while let Some(notice) = notices.recv().await {
        match notice {
            TargetNotice::Attached {
                session_id,
                target_id,
                opener_id,
                kind,
            } => {
                if kind != "page" {
                    // A service or shared worker of this context: its requests are
                    // paused like the pages' when they are inspected.
                    let conn = chromium.conn.clone();
                    let (requests, notices) = (hooks.requests.clone(), hooks.guard.clone());
                    if requests.inspects_all() {
                        tokio::spawn(watch_worker(conn, session_id, requests, notices));
                    } else {
                        tokio::spawn(async move {
                            let _ = conn
                                .call(
                                    Some(&session_id),
                                    "Runtime.runIfWaitingForDebugger",
                                    json!({}),
                                    Duration::from_secs(5),
                                )
                                .await;
                        });
                    }
                    continue;
                }
                // A page may not open tabs without end: past the cap, popups are closed.
                let full = lock(&registry).tabs.len() >= MAX_TABS;
                if full && opener_id.is_some() {
                    // Off this task: a paused popup must be let run before it can
                    // close, and the opener's window.open waits on all of this.
                    let conn = chromium.conn.clone();
                    let timeout = options.action_timeout;
                    tokio::spawn(async move {
                        let _ = conn
                            .call(
                                Some(&session_id),
                                "Runtime.runIfWaitingForDebugger",
                                json!({}),
                                timeout,
                            )
                            .await;
                        let _ = conn
                            .call(
                                None,
                                "Target.closeTarget",
                                json!({ "targetId": target_id }),
                                timeout,
                            )
                            .await;
                    });
                    lock(&registry).refused_popups += 1;
                    changed.send_modify(|v| *v += 1);
                    continue;
                }
                let tab = Tab::setup(
                    chromium.conn.clone(),
                    session_id,
                    target_id.clone(),
                    opener_id.clone(),
                    hooks.clone(),
                    options.viewport,
                    options.action_timeout,
                )
                .await;
                match tab {
                    Ok(tab) => {
                        let mut r = lock(&registry);
                        r.tabs.push(Arc::new(tab));
                        if opener_id.is_some() {
                            r.unreported.push(target_id);
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "could not set up a new tab");
                    }
                }
                changed.send_modify(|v| *v += 1);
            }
            TargetNotice::Detached { session_id } => {
                {
                    let mut r = lock(&registry);
                    if let Some(i) = r.tabs.iter().position(|t| t.session == session_id) {
                        r.tabs[i].state.with(|s| s.detached = true);
                        r.tabs.remove(i);
                        if r.active >= r.tabs.len() || r.active > i {
                            r.active = r.active.saturating_sub(1);
                        }
                    }
                }
                changed.send_modify(|v| *v += 1);
            }
        }
    }
}

/// What `__airlock.snapshot` returns, as a JSON string.
#[derive(Deserialize)]
pub(crate) struct WalkResult {
    pub(crate) tree: Option<Node>,
    pub(crate) next: Option<u64>,
    pub(crate) error: Option<String>,
    /// Why the walk stopped early (a page too large, too deep or too slow to walk).
    #[serde(default)]
    pub(crate) truncated: Option<String>,
}

impl WalkResult {
    pub(crate) fn decode(value: Value) -> Result<WalkResult> {
        let text = value.as_str().ok_or_else(|| {
            Error::Protocol("the page helper returned no snapshot text".to_owned())
        })?;
        // JSON.stringify writes half of a surrogate pair as a lone `\uD8xx` escape;
        // such a page must still read (as U+FFFD), not fail every snapshot.
        serde_json::from_str(text)
            .or_else(|e| match crate::cdp::repair_surrogates(text.as_bytes()) {
                Some(repaired) => serde_json::from_slice(&repaired),
                None => Err(e),
            })
            .map_err(|e| Error::Protocol(format!("bad snapshot from the page helper: {e}")))
    }
}

fn frame_base(tab: &Tab, frame: u32) -> Result<u64> {
    tab.state
        .read(|s| s.frames.get(frame as usize).map(|f| f.next_ref))
        .ok_or_else(|| Error::RefNotFound {
            reference: format!("f{frame}"),
        })
}

fn collect_frame_owners(node: &Node, path: &mut Vec<usize>, out: &mut Vec<(Vec<usize>, u64)>) {
    if node.frame_owner.is_some() {
        if let Some(n) = node.node {
            out.push((path.clone(), n));
        }
        return;
    }
    for (i, child) in node.children.iter().enumerate() {
        path.push(i);
        collect_frame_owners(child, path, out);
        path.pop();
    }
}

fn node_at<'a>(node: &'a mut Node, path: &[usize]) -> Option<&'a mut Node> {
    let mut current = node;
    for &i in path {
        current = current.children.get_mut(i)?;
    }
    Some(current)
}

fn walker_error(value: &Value, target: &Target) -> Result<()> {
    let Some(code) = value.get("error").and_then(Value::as_str) else {
        return Ok(());
    };
    let message = value["message"].as_str().unwrap_or_default().to_owned();
    let desc = value["desc"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| target.describe());
    Err(match code {
        "ref_not_found" => Error::RefNotFound {
            reference: match target {
                Target::Ref(r) => r.to_string(),
                other => other.describe(),
            },
        },
        "not_found" => Error::ElementNotFound {
            target: if message.is_empty() {
                target.describe()
            } else {
                message
            },
        },
        "invalid_argument" => Error::InvalidArgument(message),
        _ => Error::NotActionable {
            target: desc,
            why: message,
        },
    })
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

// The line a snapshot ends with when the walk stopped early.
fn walk_stopped(why: &str) -> String {
    format!("\n[the page was too large to walk whole ({why}): the snapshot stops there]\n")
}

// Whitespace runs as one space (not trimmed): how page text is compared.
fn collapse_runs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    out
}

// Whitespace runs as one space, trimmed: how the walker compares names.
fn collapse_ws(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c == '\u{a0}')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

// Whether a CSS selector holds an attribute condition that matches part of a value
// (`^=`, `$=`, `*=`, `|=`), outside strings.
fn matches_part_of_attribute(selector: &str) -> bool {
    let mut quote = None;
    let mut chars = selector.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '^' | '$' | '*' | '|') if chars.peek() == Some(&'=') => return true,
            _ => {}
        }
    }
    false
}

// Cuts `text` at `offset` into a page of at most `max_bytes`, on char boundaries,
// preferring to end at a line break.
fn page_of(text: &str, offset: usize, max_bytes: usize) -> PageText {
    let total = text.len();
    let mut start = offset.min(total);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + max_bytes).min(total);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    // End at a line break when one is in the page's second half; a page is not
    // shortened to a few bytes because a long line follows.
    if end < total
        && let Some(nl) = text[start..end]
            .rfind('\n')
            .filter(|&i| i > 0 && i >= (end - start) / 2)
    {
        end = start + nl + 1;
    }
    let mut page = text[start..end].to_owned();
    let next_offset = (end < total).then_some(end);
    if let Some(next) = next_offset {
        page.push_str(&format!(
            "\n[text truncated: bytes {start}-{end} of {total} shown; call browser_read with offset={next} for more]"
        ));
    }
    PageText {
        text: page,
        total_bytes: total,
        next_offset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_attribute_matches_are_found_outside_strings() {
        for selector in [
            "[value^=a]",
            "input[data-x$='z' i]",
            "a[href*=\"k\"]",
            "[lang|=en]",
            ":is(div, [title^=x])",
        ] {
            assert!(matches_part_of_attribute(selector), "{selector}");
        }
        for selector in [
            "[value=a]",
            "[class~=big]",
            "[title=\"a^=b\"]",
            "[title='$=']",
            "div > p.x",
            "[a\\^=b]",
        ] {
            assert!(!matches_part_of_attribute(selector), "{selector}");
        }
    }

    #[test]
    fn names_compare_with_whitespace_collapsed() {
        assert_eq!(collapse_ws("  Log \n in\u{a0}now "), "Log in now");
        assert_eq!(collapse_runs(" a \t b "), " a b ");
    }

    #[test]
    fn pages_text_on_line_breaks() {
        let text = "line one\nline two\nline three\n";
        let first = page_of(text, 0, 12);
        assert!(first.text.starts_with("line one\n"));
        assert_eq!(first.next_offset, Some(9));
        let rest = page_of(text, 9, 1000);
        assert_eq!(rest.text, "line two\nline three\n");
        assert_eq!(rest.next_offset, None);
        // A long line after a short one: the page is filled, not cut at the break.
        let long = format!("# Big\n\n{}", "w".repeat(1000));
        let first = page_of(&long, 0, 256);
        assert_eq!(first.next_offset, Some(256));
        let multibyte = page_of("ééééé", 1, 3);
        assert!(multibyte.text.starts_with('é'));
    }
}
