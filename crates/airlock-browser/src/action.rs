//! The action vocabulary: what an agent asks of a session (targets, options, waits)
//! and what comes back (outcomes, snapshots, screenshots, page text, tabs). Plain data;
//! the session's methods take and return these.

use std::time::Duration;

use airlock_core::NodeRef;
use serde_json::{Value, json};

/// Default snapshot byte cap: about 10k tokens.
pub const DEFAULT_SNAPSHOT_BYTES: usize = 40_000;
/// Default page-text byte cap.
pub const DEFAULT_TEXT_BYTES: usize = 40_000;

/// One cookie a session starts with. Debug never shows its value.
#[derive(serde::Serialize, serde::Deserialize, Clone, Default)]
pub struct InjectedCookie {
    /// Name.
    pub name: String,
    /// Value (secret).
    pub value: zeroize::Zeroizing<String>,
    /// Domain (`app.example.com`, or `.example.com` for subdomains too).
    pub domain: String,
    /// Path.
    pub path: String,
    /// Expiry, Unix seconds; a session cookie when absent.
    pub expires: Option<f64>,
    /// `HttpOnly`.
    pub http_only: bool,
    /// `Secure`.
    pub secure: bool,
    /// `Strict`, `Lax` or `None`.
    pub same_site: Option<String>,
}

impl std::fmt::Debug for InjectedCookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "InjectedCookie({} on {}) [REDACTED]",
            self.name, self.domain
        )
    }
}

impl InjectedCookie {
    /// CDP's `Network.CookieParam` for it (only this crate speaks CDP).
    pub(crate) fn cdp(&self) -> Value {
        let mut param = json!({
            "name": self.name,
            "value": self.value.as_str(),
            "domain": self.domain,
            "path": self.path,
            "httpOnly": self.http_only,
            "secure": self.secure,
        });
        if let Some(expires) = self.expires {
            param["expires"] = json!(expires);
        }
        if let Some(same_site) = &self.same_site {
            param["sameSite"] = json!(same_site);
        }
        param
    }
}

/// Credentials a session starts with. Debug shows only what is there.
#[derive(serde::Serialize, serde::Deserialize, Clone, Default)]
pub struct Injection {
    /// Cookies set into the session's own browser context.
    pub cookies: Vec<InjectedCookie>,
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
#[derive(serde::Serialize, serde::Deserialize, Clone, Default)]
pub struct TypedText(pub Vec<TextPiece>);

/// A piece of [`TypedText`].
#[derive(serde::Serialize, serde::Deserialize, Clone)]
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

    pub(crate) fn is_empty(&self) -> bool {
        self.0.iter().all(|p| match p {
            TextPiece::Plain(t) => t.is_empty(),
            TextPiece::Secret { value, .. } => value.is_empty(),
        })
    }

    // The plain pieces joined (for checkboxes and selects, which take no secrets).
    pub(crate) fn plain_text(&self) -> String {
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
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
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
    pub(crate) fn lifecycle_name(self) -> &'static str {
        match self {
            WaitUntil::Load => "load",
            WaitUntil::DomContentLoaded => "DOMContentLoaded",
            WaitUntil::NetworkIdle => "networkIdle",
        }
    }
}

/// What an action is aimed at.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub enum Target {
    /// A ref from a snapshot (`e12`, `f1e3`).
    Ref(#[serde(with = "crate::wire::node_ref")] NodeRef),
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
    /// The element whose visible text matches (Playwright's `getByText`): exact
    /// first, else a case-insensitive substring, the innermost element that holds
    /// it; a 0-based index among several.
    Text {
        /// The words, as the page shows them.
        text: String,
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
    pub(crate) fn describe(&self) -> String {
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
            // Like a name: the agent's words are not echoed.
            Target::Text { index, .. } => match index {
                Some(i) => format!("the element with the text given #{i}"),
                None => "the element with the text given".to_owned(),
            },
            Target::Selector(sel) => {
                format!("selector `{}`", sel.chars().take(80).collect::<String>())
            }
            Target::Point { x, y } => format!("point ({x}, {y})"),
        }
    }

    pub(crate) fn walker_json(&self) -> Value {
        match self {
            Target::Ref(r) => json!({ "ref": r.node }),
            Target::Role { role, name, index } => {
                json!({ "role": role, "name": name, "index": index })
            }
            Target::Selector(sel) => json!({ "selector": sel }),
            // Matched outside the page (`find_named`), then named by its ref.
            Target::Text { .. } | Target::Point { .. } => Value::Null,
        }
    }
}

/// A mouse button.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
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
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Default)]
pub struct ClickOptions {
    /// Which button.
    pub button: MouseButton,
    /// Double click.
    pub double: bool,
    /// Modifiers held.
    pub modifiers: Vec<Modifier>,
}

/// What happened during an action: its effect, where the tab ended up and what the
/// page did on the side, as data. The words an agent reads are composed at the edge.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Default, PartialEq)]
pub struct ActionOutcome {
    /// URL of the active tab afterwards.
    pub url: String,
    /// Title of the active tab afterwards.
    pub title: String,
    /// The action's own effect; `None` for navigations, whose effect is the page.
    pub effect: Option<Effect>,
    /// JavaScript dialogs the page opened meanwhile, at most ten.
    pub dialogs: Vec<Dialog>,
    /// Dialogs past those listed, dismissed.
    pub dialogs_unlisted: u64,
    /// What the browser did about the page on the side (a popup or a navigation it
    /// stopped, a tab it closed, a request it refused).
    pub notices: Vec<Notice>,
    /// Tabs the page opened meanwhile (popups).
    pub new_tabs: Vec<NewTab>,
    /// Whether the main frame navigated.
    pub navigated: bool,
    /// HTTP status of the main document, after a navigation.
    pub status: Option<u16>,
    /// A navigation of the tab is held by an effect rule: its page runs nothing and
    /// paints nothing until the hold is decided.
    #[serde(default)]
    pub navigation_held: bool,
    /// How long its parts took.
    #[serde(default)]
    pub stages: Stages,
}

/// How long the parts of one action took, in microseconds: finding the element and
/// waiting until it can be acted on, sending the input, waiting for the page to
/// react, and reading where the tab ended up. The gateway adds the diff and the
/// wording; the bench and the `tool call` log line report them.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stages {
    /// Finding the target and waiting until it is actionable.
    pub locate_us: u64,
    /// Sending the input (mouse, keys, CDP calls of the action itself).
    pub dispatch_us: u64,
    /// Waiting for the page to react (a frame and a task, a navigation's load).
    pub settle_us: u64,
    /// Collecting the outcome (popups, dialogs, the tab's URL and title).
    pub outcome_us: u64,
    /// Walking the page and diffing it against the last walk (the gateway's).
    pub diff_us: u64,
    /// Wording the result and redacting it (the gateway's).
    pub render_us: u64,
}

/// An action's own effect. Element descriptions (`button "Save"`) and option labels
/// come from the page: redacted and cut like snapshot names.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub enum Effect {
    /// Clicked the element described.
    Clicked(String),
    /// Every tab's viewport is now this size (CSS pixels).
    Resized {
        /// Width.
        width: u32,
        /// Height.
        height: u32,
    },
    /// The mouse is over the element described.
    Hovered(String),
    /// Gave the file chooser the target opened these files (their names).
    Uploaded {
        /// The element clicked, described.
        target: String,
        /// The files' names.
        files: Vec<String>,
    },
    /// Dragged one element (or point) onto another.
    Dragged {
        /// Where the drag began, described.
        from: String,
        /// Where it ended, described.
        to: String,
    },
    /// Typed into the field described.
    Typed(String),
    /// Filled the fields described, in order.
    Filled(Vec<String>),
    /// These options (labels) are now selected.
    Selected(Vec<String>),
    /// A checkbox, radio or switch is in the state asked for.
    Checked {
        /// The control, described.
        target: String,
        /// Its state now.
        checked: bool,
        /// False when it already was in that state.
        changed: bool,
    },
    /// Pressed this key combination.
    Pressed(String),
    /// Scrolled the element described into view.
    ScrolledIntoView(String),
    /// Scrolled the page.
    Scrolled {
        /// Horizontal scroll position now, in CSS pixels.
        x: i64,
        /// Vertical scroll position now.
        y: i64,
        /// Height of the document.
        page_height: i64,
    },
    /// Waited this many milliseconds.
    Waited(u64),
    /// The condition waited for holds.
    WaitedFor(Waited),
    /// Answered the dialog that held the page.
    AnsweredDialog {
        /// `alert`, `confirm`, `prompt` or `beforeunload`.
        kind: String,
        /// Its message, redacted and cut.
        message: String,
        /// Accepted rather than dismissed.
        accepted: bool,
    },
}

/// A wait condition that held, as an outcome may tell it: never the text waited for,
/// which the agent wrote and may be a guess about a secret.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub enum Waited {
    /// The text given appeared.
    TextAppeared,
    /// The text given went.
    TextGone,
    /// The target (as described) appeared.
    Target(String),
}

/// Something the browser did about the page on the side of an action. URLs, origins
/// and reasons are redacted, and URLs cut.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Closed a popup the page opened to a URL the policy denies.
    PopupDenied {
        /// Where the popup went.
        url: String,
        /// The policy's reason.
        reason: String,
    },
    /// Stopped a navigation the page started to a URL of a denied scheme (`blob:`,
    /// `data:`), or left it for `about:blank` when it had committed already.
    NavigationStopped {
        /// Where the page went.
        url: String,
        /// The policy's reason.
        reason: String,
        /// It had committed: the tab was sent to `about:blank`.
        committed: bool,
    },
    /// A frame of the page was stopped and emptied: it loaded what the policy refuses
    /// (a `data:` URL).
    FrameStopped {
        /// What it loaded.
        url: String,
        /// Why it was stopped.
        reason: String,
    },
    /// A page closed its own tab (`window.close()`).
    TabClosedByPage {
        /// Where the tab was among the session's tabs.
        index: usize,
        /// Its URL, redacted.
        url: String,
    },
    /// Closed popups past the session's tab cap.
    PopupsOverCap {
        /// How many.
        closed: u64,
        /// The cap.
        cap: usize,
    },
    /// Closed a tab whose page opened dialogs without end; a blank one took its place.
    DialogStorm {
        /// Dialogs seen.
        dialogs: usize,
        /// Within this many seconds.
        within_secs: u64,
    },
    /// Stopped the script of a page that did not answer.
    ScriptStopped,
    /// Closed the tab of a page that did not answer even with its scripts stopped; a
    /// blank one took its place.
    UnresponsiveTabReplaced,
    /// Refused a request the page made (the session's outbound protection).
    RequestRefused {
        /// The request's origin.
        origin: String,
        /// Why.
        why: String,
    },
    /// A download finished in the operator's download directory.
    Downloaded {
        /// The name the page suggested (redacted, cut).
        name: String,
        /// The name it was saved under (generated).
        saved_as: String,
        /// Its size.
        bytes: u64,
        /// Its SHA-256, hex.
        sha256: String,
    },
    /// A download was refused, cancelled or removed.
    DownloadRefused {
        /// The name the page suggested (redacted, cut).
        name: String,
        /// Why.
        why: String,
    },
}

/// A JavaScript dialog the page opened during an action.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct Dialog {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub kind: String,
    /// Its message, redacted and cut.
    pub message: String,
    /// Where it stands.
    pub answer: DialogAnswer,
}

/// How a dialog ended, or that it has not.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialogAnswer {
    /// It holds the page until `Session::handle_dialog` answers it.
    Open,
    /// Accepted (by the agent, or by the page going away).
    Accepted,
    /// Dismissed (by the agent, by the page going away, or at once: it only
    /// continued a chain of dialogs).
    Dismissed,
    /// Nobody answered it within the action timeout: Airlock dismissed it (accepted,
    /// for `beforeunload`: leaving was what the agent asked for).
    TimedOut {
        /// Accepted rather than dismissed.
        accepted: bool,
    },
}

/// An element a target names, as the page has it now: what later stages (risk
/// rules, approvals) judge, and how to act on that element and no other. Page-derived
/// words are redacted like a snapshot's.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct Resolved {
    /// Names exactly this element: an action on it acts on this element, or fails
    /// with `ref_not_found` once the page replaced it. A point stays a point (a click
    /// lands where it was asked to); `node` says which element is there now.
    pub target: Target,
    /// The element's ref.
    #[serde(with = "crate::wire::node_ref")]
    pub node: NodeRef,
    /// Its role, as a snapshot shows it.
    pub role: String,
    /// Its accessible name.
    pub name: String,
    /// A password field, or a field that was one or looks like one.
    pub password: bool,
    /// Where the link around it goes, if it is in one.
    pub href: Option<String>,
    /// The URL of the document (frame) holding it.
    pub frame_url: String,
    /// That document's origin.
    pub frame_origin: String,
    /// Where it is in the viewport, in CSS pixels (for outlining it).
    pub bounds: Bounds,
}

/// A rectangle in the top viewport, in CSS pixels.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct Bounds {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// A tab the page opened.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct NewTab {
    /// Its index among the session's tabs.
    pub index: usize,
    /// Its URL, redacted.
    pub url: String,
}

/// Options of a snapshot.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
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
    #[serde(with = "crate::wire::opt_node_ref")]
    pub scope: Option<NodeRef>,
    /// Only lines containing this text, with context.
    pub find: Option<String>,
    /// Only lines this many levels deep (1: the top level); deeper subtrees are
    /// counted on their last shown ancestor.
    pub depth: Option<usize>,
    /// Each ref's box in the top viewport (`[box=x,y,w,h]`, CSS px), for agents that
    /// also look at screenshots.
    pub boxes: bool,
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
            depth: None,
            boxes: false,
        }
    }
}

/// A rendered snapshot.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
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
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
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
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
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
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
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
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Default)]
pub struct ScreenshotOptions {
    /// The whole page rather than the viewport.
    pub full_page: bool,
    /// Only this element.
    pub target: Option<Target>,
    /// Encoding.
    pub format: ImageFormat,
    /// A box drawn around this rectangle of the viewport for the capture (an approver
    /// sees which element a held call acts on).
    pub outline: Option<Bounds>,
    /// Encode for speed over size (about half the time on a small page; PNGs come
    /// out larger): for captures Airlock keeps itself, such as session recordings.
    pub fast: bool,
}

/// An encoded image.
#[derive(serde::Serialize, Clone, PartialEq)]
pub struct Screenshot {
    /// Encoded bytes.
    #[serde(with = "serde_bytes")]
    pub data: Vec<u8>,
    /// `image/png`, `image/jpeg`, or `application/pdf` for a PDF.
    pub mime: &'static str,
    /// The whole image is painted over: the page shows a secret where its place in
    /// the image cannot be known (it moves, it is drawn where Airlock cannot read).
    pub covered: bool,
}

impl std::fmt::Debug for Screenshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Screenshot({}, {} bytes)", self.mime, self.data.len())
    }
}

/// Page text, paged by bytes.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct PageText {
    /// The text of this page of output.
    pub text: String,
    /// Length of the whole text in bytes.
    pub total_bytes: usize,
    /// Where the next page starts, if there is more.
    pub next_offset: Option<usize>,
}

/// How serious a console message is, least first.
#[derive(
    serde::Serialize, serde::Deserialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord,
)]
pub enum ConsoleLevel {
    /// `console.debug`.
    Debug,
    /// `console.log`, `info` and the rest.
    Info,
    /// `console.warn`.
    Warning,
    /// `console.error`, failed assertions, uncaught exceptions.
    Error,
}

impl ConsoleLevel {
    /// Parses `debug`, `info`, `warning`, `error`.
    pub fn parse(text: &str) -> Option<ConsoleLevel> {
        match text {
            "debug" => Some(ConsoleLevel::Debug),
            "info" => Some(ConsoleLevel::Info),
            "warning" => Some(ConsoleLevel::Warning),
            "error" => Some(ConsoleLevel::Error),
            _ => None,
        }
    }

    /// The name as parsed.
    pub fn as_str(self) -> &'static str {
        match self {
            ConsoleLevel::Debug => "debug",
            ConsoleLevel::Info => "info",
            ConsoleLevel::Warning => "warning",
            ConsoleLevel::Error => "error",
        }
    }
}

/// One message a page logged (redacted and cut when it was taken).
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct ConsoleEntry {
    /// How serious.
    pub level: ConsoleLevel,
    /// What it said (the arguments, space-separated; an exception's description).
    pub text: String,
}

/// What the active tab logged, newest last.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq, Default)]
pub struct ConsoleLog {
    /// The messages asked for.
    pub entries: Vec<ConsoleEntry>,
    /// Messages the tab's bounded buffer let go of.
    pub dropped: u64,
    /// How many of `entries` (the last ones) the page now showing logged: the rest
    /// came before its last main-frame navigation. `None` from a worker that does not
    /// count them.
    #[serde(default)]
    pub since_navigation: Option<usize>,
}

/// One request a page made, as far as it got. Its URL was redacted whole, then cut.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct NetworkEntry {
    /// `GET`, `POST` …
    pub method: String,
    /// Where to.
    pub url: String,
    /// Chromium's resource type, lower case (`document`, `script`, `fetch` …).
    pub kind: String,
    /// The response's status, once one came.
    pub status: Option<u16>,
    /// Chromium's reason it failed (`net::ERR_…`), if it did.
    pub failure: Option<String>,
    /// Why Airlock's request guard refused it, if it did.
    pub refused: Option<String>,
}

/// What the active tab requested, newest last.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq, Default)]
pub struct NetworkLog {
    /// The requests asked for.
    pub entries: Vec<NetworkEntry>,
    /// Requests the tab's bounded buffer let go of.
    pub dropped: u64,
}

/// A device a session can look like to pages: its viewport, pixel density, touch
/// and mobile layout, and the browser it claims to be.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    /// How it is asked for (`iphone-15`).
    pub name: &'static str,
    /// Viewport width, CSS pixels.
    pub width: u32,
    /// Viewport height, CSS pixels.
    pub height: u32,
    /// Device pixels per CSS pixel.
    pub scale: f64,
    /// A phone or tablet: mobile viewport rules, touch events.
    pub mobile: bool,
    /// The User-Agent it sends; Chromium's own when `None`.
    pub user_agent: Option<&'static str>,
}

/// The devices a session may be opened as. Phone and tablet sizes are those the
/// devices report to pages; their browsers' own User-Agent strings.
pub const DEVICES: &[Device] = &[
    Device {
        name: "desktop",
        width: 1280,
        height: 720,
        scale: 1.0,
        mobile: false,
        user_agent: None,
    },
    Device {
        name: "iphone-15",
        width: 393,
        height: 852,
        scale: 3.0,
        mobile: true,
        user_agent: Some(
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
        ),
    },
    Device {
        name: "pixel-8",
        width: 412,
        height: 915,
        scale: 2.625,
        mobile: true,
        user_agent: Some(
            "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36",
        ),
    },
    Device {
        name: "ipad",
        width: 820,
        height: 1180,
        scale: 2.0,
        mobile: true,
        user_agent: Some(
            "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1",
        ),
    },
];

impl Device {
    /// The device named `name`, if there is one.
    pub fn named(name: &str) -> Option<&'static Device> {
        DEVICES.iter().find(|d| d.name == name)
    }
}

/// One tab as listed to an agent.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
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
