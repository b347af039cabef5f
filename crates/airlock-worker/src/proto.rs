//! What crosses between the control plane and a browser host, as data: the open of a
//! session, one call per session method and its reply. In-process hosts take these
//! as they are; a worker receives them over its channel, so both run the same code.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use airlock_browser::{
    ActionOutcome, ClickOptions, ConsoleLevel, ConsoleLog, EventBatch, HeldEffect, InjectedCookie,
    Injection, NetworkLog, PageText, Resolved, Screenshot, ScreenshotOptions, Scroll, Snapshot,
    SnapshotOptions, TabInfo, Target, TypedText, WaitCondition, WaitUntil,
};
use airlock_config::Isolation;
use airlock_policy::{DenyReason, Policy};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::secrets::SecretSet;

/// The largest piece of a file one message carries (uploads and downloads).
pub const CHUNK: usize = 4 << 20;

/// The version of what crosses; a host and a control plane of another refuse each
/// other at the handshake.
pub const PROTOCOL: u32 = 9;

/// What a new browser session is given. Debug never shows a value.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct OpenSpec {
    /// Isolation; the host's default when `None`.
    pub isolation: Option<Isolation>,
    /// What its pages may reach: the host's egress proxy and navigation guard hold
    /// every request and navigation of the session to it.
    pub policy: Policy,
    /// Credentials put into it before the first action.
    pub injection: Option<Injection>,
    /// What it hides and keeps from other origins.
    pub secrets: SecretSet,
    /// The operator's effect rules: requests of its pages they hold wait for the
    /// control plane's decision ([`Call::DecideEffects`]).
    pub effects: airlock_risk::Effects,
    /// Whether its requests are signed (Web Bot Auth), and for which origins (empty:
    /// every origin it may reach). The worker holds no key: it asks the control
    /// plane, which decides again.
    #[serde(default)]
    pub signing: Option<airlock_policy::OriginSet>,
}

/// How loaded a worker is now: what a control plane places a new session by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Load {
    /// Sessions it holds or is opening.
    pub sessions: u64,
    /// Most it takes at once (`--sessions`), if bounded.
    pub capacity: Option<u64>,
    /// Stopping or spent (`--exit-after`): it takes no new session.
    pub closed: bool,
    /// Memory its machine has available, MiB.
    pub free_mib: u64,
}

impl Load {
    /// Memory a session is counted at when a worker sets no `--sessions` (a busy
    /// page; docs/scaling.md).
    pub const SESSION_MIB: u64 = 150;

    /// New sessions it could take now: its free places, and no more than its
    /// memory holds at [`Load::SESSION_MIB`] each; none when closed.
    pub fn room(&self) -> u64 {
        if self.closed {
            return 0;
        }
        let places = self
            .capacity
            .map_or(u64::MAX, |c| c.saturating_sub(self.sessions));
        places.min(self.free_mib / Self::SESSION_MIB)
    }
}

/// What a session is, as opened.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionFacts {
    /// The browser layer's id of it.
    pub id: String,
    /// A Chromium of its own (process isolation).
    pub dedicated: bool,
    /// The Chromium serving it.
    pub browser_pid: u32,
    /// Its browser context.
    pub context_id: String,
    /// What another connection must show to attach to it (a session on a worker;
    /// `None` in this process). Only its opener is told.
    pub key: Option<AttachKey>,
}

/// The capability to attach to one session on a worker: 32 random bytes, hex. A
/// connection holding the worker's token but not this reaches no session it did not
/// open. Debug never shows it.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct AttachKey(Zeroizing<String>);

impl AttachKey {
    /// A fresh key, or why the OS gave no randomness.
    pub fn random() -> Result<AttachKey, getrandom::Error> {
        let mut bytes = Zeroizing::new([0u8; 32]);
        getrandom::fill(bytes.as_mut())?;
        Ok(AttachKey(Zeroizing::new(hex::encode(bytes.as_ref()))))
    }

    /// A key as stored (the hex form).
    pub fn from_stored(text: &str) -> AttachKey {
        AttachKey(Zeroizing::new(text.to_owned()))
    }

    /// The hex form, to store where other replicas read it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `other` is this key, in constant time.
    pub fn matches(&self, other: &AttachKey) -> bool {
        subtle::ConstantTimeEq::ct_eq(self.0.as_bytes(), other.0.as_bytes()).into()
    }
}

impl std::fmt::Debug for AttachKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AttachKey(..)")
    }
}

/// One call on a session. Actions answer with their outcome; a dialog that opens
/// while one runs is its outcome, not an error (the host applies `or_dialog`).
/// Debug shows only which call it is: a learned value, a typed secret or a policy
/// never reaches a log through it.
#[derive(Clone, Serialize, Deserialize)]
pub enum Call {
    /// Go to a URL.
    Navigate {
        /// Where.
        url: String,
        /// When it counts as loaded.
        wait_until: WaitUntil,
    },
    /// History back.
    Back,
    /// History forward.
    Forward,
    /// Reload.
    Reload,
    /// Click.
    Click {
        /// What.
        target: Target,
        /// How.
        options: ClickOptions,
    },
    /// Drag one element onto another.
    Drag {
        /// From.
        from: Target,
        /// Onto.
        to: Target,
    },
    /// Give the file chooser `target` opens these files (paths on the host).
    Upload {
        /// What opens the chooser.
        target: Target,
        /// The files.
        paths: Vec<PathBuf>,
    },
    /// Hover.
    Hover(Target),
    /// Type, secrets checked against the field's origin at each insertion.
    Type {
        /// Into what.
        target: Target,
        /// The pieces.
        text: TypedText,
        /// Replace the content.
        clear_first: bool,
        /// Press Enter afterwards.
        submit: bool,
    },
    /// Fill several fields.
    FillForm(Vec<(Target, TypedText)>),
    /// A key or combination.
    PressKey(String),
    /// Select options.
    SelectOption {
        /// The select.
        target: Target,
        /// Its options.
        values: Vec<String>,
    },
    /// Check or uncheck.
    SetChecked {
        /// What.
        target: Target,
        /// Checked or not.
        checked: bool,
    },
    /// Scroll.
    Scroll(Scroll),
    /// Wait for a condition.
    WaitFor {
        /// What.
        condition: WaitCondition,
        /// At most this long (the action budget when `None`).
        timeout: Option<Duration>,
    },
    /// Answer the dialog holding the page.
    HandleDialog {
        /// OK or Cancel.
        accept: bool,
        /// A prompt's answer.
        prompt: Option<TypedText>,
        /// How long to wait for one to open.
        wait: Duration,
    },
    /// Every tab's viewport.
    Resize {
        /// Width, CSS px.
        width: u32,
        /// Height, CSS px.
        height: u32,
    },
    /// Look like a device of `airlock_browser::DEVICES`.
    Emulate(String),
    /// What a target names now.
    Resolve(Target),
    /// A snapshot.
    Snapshot(SnapshotOptions),
    /// The change since the last snapshot.
    Changes,
    /// Start the next diff from the page as it is.
    ForgetChanges,
    /// What the page logged.
    Console {
        /// Least level.
        level: ConsoleLevel,
        /// Newest N.
        limit: usize,
    },
    /// Run an agent's function in the page.
    Evaluate {
        /// Its source.
        function: String,
        /// On this element.
        target: Option<Target>,
    },
    /// The page as a PDF.
    Pdf,
    /// What the page requested.
    NetworkRequests {
        /// Only URLs containing this.
        filter: Option<String>,
        /// Newest N.
        limit: usize,
    },
    /// The page's text.
    ReadText {
        /// From here.
        offset: usize,
        /// At most.
        max_bytes: usize,
    },
    /// A screenshot.
    Screenshot(ScreenshotOptions),
    /// The tabs.
    Tabs,
    /// A new tab.
    NewTab(Option<String>),
    /// Make a tab the active one.
    SelectTab(usize),
    /// Close a tab.
    CloseTab(usize),
    /// Keep downloads in `dir`, each at most `cap` bytes.
    AllowDownloads {
        /// Where.
        dir: PathBuf,
        /// Largest file.
        cap: u64,
    },
    /// The cookies of the context for these hosts (or a parent domain of one),
    /// values included: an operator saving a login. Never every cookie at once.
    Cookies(Vec<String>),
    /// The viewport in CSS pixels.
    Viewport,
    /// Hold the proxy and the navigation guard to this policy from now on.
    SetPolicy(Policy),
    /// A value learned after open (what an operator typed): hidden and guarded like a
    /// secret from now on.
    Learn {
        /// Its name.
        name: String,
        /// The value.
        value: Zeroizing<String>,
        /// Where it may go.
        origins: Vec<String>,
    },
    /// WebSocket origins allowed besides the secrets'.
    AllowSockets(Vec<String>),
    /// WebSockets the page holds open to origins the session's guard does not allow.
    ForeignSockets,
    /// Requests refused since the last time asked, by reason (the proxy's, the
    /// outbound guard's and the effect rules').
    TakeBlocked,
    /// Requests effect rules held that the control plane was not told of yet.
    HeldEffects,
    /// Release (`send`) or drop the held requests `ids`; answers once what released
    /// ones brought has settled.
    DecideEffects {
        /// Which.
        ids: Vec<u64>,
        /// Release them; else drop them.
        send: bool,
    },
    /// For each URL, why the proxy lately refused, or could not carry out, a
    /// request to its host and port, if it did.
    ProxyFailures(Vec<String>),
    /// Whether the browser lives and the session can still be used.
    Health,
    /// Keep a file for a later upload (a worker cannot read the gateway's upload
    /// directory), sent in pieces of at most [`CHUNK`] bytes so no message holds up
    /// the connection's other calls; answers the path it is kept at on the host.
    Stage {
        /// Its name, as the page will see it.
        name: String,
        /// The next piece of it.
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        /// Where earlier pieces went (the answer to the first); `None` starts it.
        into: Option<String>,
    },
    /// The next piece (at most [`CHUNK`] bytes from `offset`) of a finished
    /// download (`saved_as` of its notice); it is forgotten once the last is taken.
    TakeDownload {
        /// The name it was saved under.
        saved_as: String,
        /// Where to read from.
        offset: u64,
    },
    /// Replace crashed tabs with blank ones; how many.
    ReplaceLostTabs,
    /// What happened since a watcher last looked, answered as soon as there is
    /// something (or its wait ran out): the session's stream of events and, when
    /// asked, of frames. A watcher keeps one of these outstanding.
    Watch(Watch),
    /// No one watches the session's frames any more.
    Unwatch,
}

/// Where a watcher of a session stands.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Watch {
    /// The number of the newest event it saw (0: none).
    pub after: u64,
    /// It wants frames.
    pub frames: bool,
    /// What the last frame it was shown showed (`None`: it has none yet).
    pub shown: Option<Painted>,
    /// How long to wait for something to happen (at most [`MAX_WATCH`]).
    pub wait: Duration,
}

/// The longest a watch waits before answering with nothing.
pub const MAX_WATCH: Duration = Duration::from_secs(30);

/// Which paint of which tab a frame shows.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Painted {
    /// The tab's serial.
    pub tab: u32,
    /// Frames the tab had painted when it was taken.
    pub paints: u64,
}

/// What a watch found.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Watched {
    /// Events after the one asked about.
    pub events: EventBatch,
    /// A new frame, if one was asked for and the page changed.
    pub frame: Option<Frame>,
}

/// One frame of a live session. Debug shows its size and URL only.
#[derive(Clone, Serialize, Deserialize)]
pub struct Frame {
    /// The active tab's viewport, JPEG, masked like every screenshot.
    #[serde(with = "serde_bytes")]
    pub jpeg: Vec<u8>,
    /// Its URL (redacted).
    pub url: String,
    /// Its title (redacted).
    pub title: String,
    /// The viewport in CSS pixels.
    pub viewport: (u32, u32),
    /// What it shows (for the next watch).
    pub painted: Painted,
}

impl std::fmt::Debug for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frame")
            .field("bytes", &self.jpeg.len())
            .field("url", &self.url)
            .finish()
    }
}

/// The answer to a [`Call`]. Debug shows only which answer it is (cookies carry
/// values).
#[derive(Clone, Serialize, Deserialize)]
pub enum Reply {
    /// Done, nothing to say.
    Done,
    /// An action's outcome.
    Outcome(ActionOutcome),
    /// A resolved target.
    Resolved(Resolved),
    /// A snapshot.
    Snapshot(Snapshot),
    /// A diff, if anything changed.
    Changes(Option<String>),
    /// The console.
    Console(ConsoleLog),
    /// Text (an evaluation's result).
    Text(String),
    /// An image or PDF.
    File(Screenshot),
    /// The requests.
    Network(NetworkLog),
    /// Page text.
    Page(PageText),
    /// The tabs.
    Tabs(Vec<TabInfo>),
    /// Cookies.
    Cookies(Vec<InjectedCookie>),
    /// Viewport, CSS pixels.
    Viewport(u32, u32),
    /// Socket URLs.
    Sockets(Vec<String>),
    /// Refusals by reason.
    Blocked(BTreeMap<DenyReason, u64>),
    /// Requests effect rules hold.
    Held(Vec<HeldEffect>),
    /// What became of each held request a decision was given for.
    Decided(Vec<airlock_browser::Decided>),
    /// Proxy failures, one per URL asked about.
    Failures(Vec<Option<String>>),
    /// Health.
    Health {
        /// The browser process lives.
        alive: bool,
        /// The session can take calls.
        usable: bool,
    },
    /// How many tabs were replaced.
    Replaced(usize),
    /// What a watch found.
    Watched(Watched),
    /// A piece of a file.
    Piece {
        /// Its bytes.
        #[serde(with = "serde_bytes")]
        data: Vec<u8>,
        /// The whole file's size.
        total: u64,
    },
}

impl Call {
    /// Which call this is, for logs and errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Call::Navigate { .. } => "navigate",
            Call::Back => "back",
            Call::Forward => "forward",
            Call::Reload => "reload",
            Call::Click { .. } => "click",
            Call::Drag { .. } => "drag",
            Call::Upload { .. } => "upload",
            Call::Hover(_) => "hover",
            Call::Type { .. } => "type",
            Call::FillForm(_) => "fill_form",
            Call::PressKey(_) => "press_key",
            Call::SelectOption { .. } => "select_option",
            Call::SetChecked { .. } => "set_checked",
            Call::Scroll(_) => "scroll",
            Call::WaitFor { .. } => "wait_for",
            Call::HandleDialog { .. } => "handle_dialog",
            Call::Resize { .. } => "resize",
            Call::Emulate(_) => "emulate",
            Call::Resolve(_) => "resolve",
            Call::Snapshot(_) => "snapshot",
            Call::Changes => "changes",
            Call::ForgetChanges => "forget_changes",
            Call::Console { .. } => "console",
            Call::Evaluate { .. } => "evaluate",
            Call::Pdf => "pdf",
            Call::NetworkRequests { .. } => "network_requests",
            Call::ReadText { .. } => "read_text",
            Call::Screenshot(_) => "screenshot",
            Call::Tabs => "tabs",
            Call::NewTab(_) => "new_tab",
            Call::SelectTab(_) => "select_tab",
            Call::CloseTab(_) => "close_tab",
            Call::AllowDownloads { .. } => "allow_downloads",
            Call::Cookies(_) => "cookies",
            Call::Viewport => "viewport",
            Call::SetPolicy(_) => "set_policy",
            Call::Learn { .. } => "learn",
            Call::AllowSockets(_) => "allow_sockets",
            Call::ForeignSockets => "foreign_sockets",
            Call::TakeBlocked => "take_blocked",
            Call::HeldEffects => "held_effects",
            Call::DecideEffects { .. } => "decide_effects",
            Call::ProxyFailures(_) => "proxy_failures",
            Call::Health => "health",
            Call::Stage { .. } => "stage",
            Call::TakeDownload { .. } => "take_download",
            Call::ReplaceLostTabs => "replace_lost_tabs",
            Call::Watch(_) => "watch",
            Call::Unwatch => "unwatch",
        }
    }

    /// How long the call may wait on the page by its own say, beyond the action
    /// budget (a wait's or a dialog's timeout).
    pub fn own_wait(&self) -> Duration {
        match self {
            Call::WaitFor { timeout, .. } => timeout.unwrap_or_default(),
            Call::HandleDialog { wait, .. } => *wait,
            Call::Watch(watch) => watch.wait.min(MAX_WATCH),
            _ => Duration::ZERO,
        }
    }
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Call::{}", self.kind())
    }
}

impl Reply {
    /// Which answer this is, for logs and errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Reply::Done => "done",
            Reply::Outcome(_) => "outcome",
            Reply::Resolved(_) => "resolved",
            Reply::Snapshot(_) => "snapshot",
            Reply::Changes(_) => "changes",
            Reply::Console(_) => "console",
            Reply::Text(_) => "text",
            Reply::File(_) => "file",
            Reply::Network(_) => "network",
            Reply::Page(_) => "page",
            Reply::Tabs(_) => "tabs",
            Reply::Cookies(_) => "cookies",
            Reply::Viewport(..) => "viewport",
            Reply::Sockets(_) => "sockets",
            Reply::Blocked(_) => "blocked",
            Reply::Held(_) => "held",
            Reply::Decided(_) => "decided",
            Reply::Failures(_) => "failures",
            Reply::Health { .. } => "health",
            Reply::Replaced(_) => "replaced",
            Reply::Watched(_) => "watched",
            Reply::Piece { .. } => "piece",
        }
    }
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Reply::{}", self.kind())
    }
}
