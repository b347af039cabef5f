//! Tool semantics: what each browser tool does and how its result reads. Surfaces map
//! their wire parameters onto [`ToolCall`] and render [`ToolOutput`] as they must.

use std::time::Duration;

use airlock_browser::{
    ActionOutcome, ClickOptions, ConsoleLevel, DEFAULT_TEXT_BYTES, DialogAnswer, Effect,
    Error as BrowserError, NetworkEntry, Notice, ScreenshotOptions, Scroll, SnapshotOptions,
    TabInfo, Target, WaitCondition, WaitUntil, Waited,
};
use airlock_config::{Isolation, RecordMode};
use airlock_core::{ErrorCode, HasErrorCode, Role};
use airlock_worker::BrowserSession;

use crate::content::PageFence;
use crate::credentials::Loaded;
use crate::error::{Error, Result};
use crate::surface::{Step, Surface};

mod files;
mod interact;
mod navigate;
mod read;
mod tabs;
mod words;

use files::*;
pub use files::{MAX_DOWNLOAD_BYTES, MAX_UPLOAD_BYTES, MAX_UPLOAD_FILES};
pub(crate) use words::notice_line;
use words::*;

/// One tool call, already validated into browser-layer types.
#[derive(Debug, Clone)]
pub enum ToolCall {
    /// `browser_navigate`.
    Navigate {
        /// Where to.
        url: String,
        /// When it counts as loaded.
        wait_until: WaitUntil,
        /// What of the new page the result shows.
        snapshot: PageView,
    },
    /// `browser_snapshot`.
    Snapshot(SnapshotOptions),
    /// `browser_click`.
    Click {
        /// What to click.
        target: Target,
        /// Button, double click, modifiers.
        options: ClickOptions,
    },
    /// `browser_type`.
    Type {
        /// The field.
        target: Target,
        /// The text.
        text: String,
        /// Replace the field's content.
        clear_first: bool,
        /// Press Enter afterwards.
        submit: bool,
    },
    /// `browser_fill_form`.
    FillForm {
        /// Fields and values.
        fields: Vec<(Target, String)>,
    },
    /// `browser_press_key`.
    PressKey {
        /// `Enter`, `Control+A` …
        key: String,
    },
    /// `browser_select_option`.
    SelectOption {
        /// The `<select>`.
        target: Target,
        /// Values or labels.
        values: Vec<String>,
    },
    /// `browser_check`.
    Check {
        /// The checkbox, radio or switch.
        target: Target,
        /// Desired state.
        checked: bool,
    },
    /// `browser_drag`: press on `from`, move, release on `to`.
    Drag {
        /// Where the drag begins.
        from: Target,
        /// Where it ends.
        to: Target,
    },
    /// `browser_hover`.
    Hover {
        /// What to hover.
        target: Target,
    },
    /// `browser_scroll`.
    Scroll(Scroll),
    /// `browser_wait_for`.
    WaitFor {
        /// What to wait for.
        condition: WaitCondition,
        /// Budget (default: the action budget).
        timeout: Option<Duration>,
    },
    /// `browser_screenshot`.
    Screenshot(ScreenshotOptions),
    /// `browser_pdf`: the page as a PDF.
    Pdf,
    /// `browser_file_upload`: files of the operator's upload directory, given to the
    /// file chooser `target` opens.
    FileUpload {
        /// A file input, or what opens one.
        target: Target,
        /// Names inside the upload directory.
        files: Vec<String>,
    },
    /// `browser_evaluate`: the agent's function, run in the page's main world (off
    /// unless the server turns it on).
    Evaluate {
        /// A JavaScript function (`() => document.title`, `(el) => el.value`).
        function: String,
        /// The element passed to it, if any.
        target: Option<Target>,
    },
    /// `browser_read`.
    Read {
        /// Markdown-ish or plain.
        format: ReadFormat,
        /// Byte offset to continue from.
        offset: usize,
    },
    /// `browser_tabs`.
    Tabs(TabAction),
    /// `browser_back`.
    Back,
    /// `browser_forward`.
    Forward,
    /// `browser_reload`.
    Reload,
    /// `browser_console_messages`: what the active tab logged.
    ConsoleMessages {
        /// The least serious level shown.
        level: ConsoleLevel,
        /// The newest this many.
        limit: usize,
    },
    /// `browser_network_requests`: what the active tab requested.
    NetworkRequests {
        /// Only URLs containing this (case-insensitive).
        filter: Option<String>,
        /// The newest this many.
        limit: usize,
    },
    /// `browser_resize`: every tab's viewport, in CSS pixels.
    Resize {
        /// Width.
        width: u32,
        /// Height.
        height: u32,
    },
    /// `browser_handle_dialog`: answers the dialog holding the page.
    HandleDialog {
        /// Accept (OK) rather than dismiss (Cancel).
        accept: bool,
        /// A prompt's answer; may hold placeholders, typed like `browser_type`'s text.
        prompt_text: Option<String>,
        /// How long to wait for a dialog to open (zero: answer only an open one).
        wait: Duration,
    },
    /// `browser_session_open`.
    SessionOpen(OpenOptions),
    /// `browser_session_close`.
    SessionClose,
    /// Another call with its own action budget (`timeout_ms`): how long finding and
    /// acting on its target may take.
    Budgeted(Duration, Box<ToolCall>),
}

/// What `browser_session_open` asks for. Debug never shows the grant token.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Isolation mode; the pool's default when `None`.
    pub isolation: Option<Isolation>,
    /// Narrows the policy for this session: hosts must also be on this list (exact
    /// names, or `*.example.com` for a domain and its subdomains). Never widens it.
    pub allow_hosts: Vec<String>,
    /// Stored credentials to log in with.
    pub credentials: Vec<String>,
    /// A grant token authorizing them (callers without the `operate` role).
    pub grant: Option<String>,
    /// What to keep of the session's steps; the gateway's default when `None`.
    pub record: Option<RecordMode>,
    /// A device of [`airlock_browser::DEVICES`] the session looks like to pages
    /// (viewport, pixel density, touch, User-Agent); Chromium's own when `None`.
    pub device: Option<String>,
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("isolation", &self.isolation)
            .field("allow_hosts", &self.allow_hosts)
            .field("credentials", &self.credentials)
            .field("grant", &self.grant.as_ref().map(|_| "[REDACTED]"))
            .field("record", &self.record)
            .field("device", &self.device)
            .finish()
    }
}

impl ToolCall {
    /// The tool's name as every surface, the audit log and approval rules know it.
    pub fn tool_name(&self) -> &'static str {
        match self {
            ToolCall::Budgeted(_, call) => call.tool_name(),
            ToolCall::Navigate { .. } => "browser_navigate",
            ToolCall::Snapshot(_) => "browser_snapshot",
            ToolCall::Click { .. } => "browser_click",
            ToolCall::Type { .. } => "browser_type",
            ToolCall::FillForm { .. } => "browser_fill_form",
            ToolCall::PressKey { .. } => "browser_press_key",
            ToolCall::SelectOption { .. } => "browser_select_option",
            ToolCall::Check { .. } => "browser_check",
            ToolCall::Hover { .. } => "browser_hover",
            ToolCall::Drag { .. } => "browser_drag",
            ToolCall::Scroll(_) => "browser_scroll",
            ToolCall::WaitFor { .. } => "browser_wait_for",
            ToolCall::Screenshot(_) => "browser_screenshot",
            ToolCall::Read { .. } => "browser_read",
            ToolCall::Pdf => "browser_pdf",
            ToolCall::FileUpload { .. } => "browser_file_upload",
            ToolCall::Evaluate { .. } => "browser_evaluate",
            ToolCall::Tabs(_) => "browser_tabs",
            ToolCall::Back => "browser_back",
            ToolCall::Forward => "browser_forward",
            ToolCall::Reload => "browser_reload",
            ToolCall::Resize { .. } => "browser_resize",
            ToolCall::ConsoleMessages { .. } => "browser_console_messages",
            ToolCall::NetworkRequests { .. } => "browser_network_requests",
            ToolCall::HandleDialog { .. } => "browser_handle_dialog",
            ToolCall::SessionOpen(_) => "browser_session_open",
            ToolCall::SessionClose => "browser_session_close",
        }
    }

    /// The least role a caller needs for this call: `observe` may only look at the
    /// page it is given; everything that moves, types or opens needs `act`. (Using
    /// stored credentials needs more, checked where they are loaded.)
    pub fn min_role(&self) -> Role {
        match self {
            ToolCall::Budgeted(_, call) => call.min_role(),
            ToolCall::Snapshot(_)
            | ToolCall::Screenshot(_)
            | ToolCall::Read { .. }
            | ToolCall::WaitFor { .. }
            | ToolCall::ConsoleMessages { .. }
            | ToolCall::NetworkRequests { .. }
            | ToolCall::Pdf
            | ToolCall::Tabs(TabAction::List) => Role::Observe,
            _ => Role::Act,
        }
    }

    /// Whether this call runs the agent's own code in the page.
    pub fn runs_page_code(&self) -> bool {
        match self {
            ToolCall::Budgeted(_, call) => call.runs_page_code(),
            ToolCall::Evaluate { .. } => true,
            _ => false,
        }
    }

    /// Where a `{{secret:…}}` placeholder sits outside typed text (a URL, key,
    /// target, option, wait text): the name of that parameter. Checked once, here,
    /// over the call's typed fields, for every surface.
    pub fn misplaced_placeholder(&self) -> Option<&'static str> {
        let m = |text: &str| airlock_vault::placeholder::mentions(text);
        let target = |t: &Target| match t {
            Target::Role { role, name, .. } => m(role) || name.as_deref().is_some_and(m),
            Target::Selector(selector) => m(selector),
            Target::Ref(_) | Target::Point { .. } => false,
        };
        match self {
            ToolCall::Budgeted(_, call) => call.misplaced_placeholder(),
            ToolCall::Navigate { url, .. } | ToolCall::Tabs(TabAction::New(Some(url)))
                if m(url) =>
            {
                Some("url")
            }
            ToolCall::PressKey { key } if m(key) => Some("key"),
            ToolCall::Evaluate { function, .. } if m(function) => Some("function"),
            ToolCall::FileUpload { files, .. } if files.iter().any(|f| m(f)) => Some("files"),
            ToolCall::NetworkRequests {
                filter: Some(filter),
                ..
            } if m(filter) => Some("filter"),
            ToolCall::SelectOption { values, .. } if values.iter().any(|v| m(v)) => Some("values"),
            ToolCall::WaitFor {
                condition: WaitCondition::Text(text) | WaitCondition::TextGone(text),
                ..
            } if m(text) => Some("text"),
            ToolCall::WaitFor {
                condition: WaitCondition::Target(t),
                ..
            }
            | ToolCall::Click { target: t, .. }
            | ToolCall::Type { target: t, .. }
            | ToolCall::SelectOption { target: t, .. }
            | ToolCall::Check { target: t, .. }
            | ToolCall::FileUpload { target: t, .. }
            | ToolCall::Hover { target: t }
            | ToolCall::Scroll(Scroll::IntoView(t))
                if target(t) =>
            {
                Some("target")
            }
            ToolCall::FillForm { fields } if fields.iter().any(|(t, _)| target(t)) => {
                Some("target")
            }
            ToolCall::Drag { from, to } if target(from) || target(to) => Some("target"),
            ToolCall::Evaluate {
                target: Some(t), ..
            } if target(t) => Some("target"),
            _ => None,
        }
    }

    /// The call's arguments as the audit log records them: targets as described,
    /// URLs, keys, typed text and values as the agent wrote them (placeholders, never
    /// what they stand for). The audit stage redacts every string once more.
    pub fn audit_args(&self) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::{Value, json};
        let value = match self {
            ToolCall::Budgeted(budget, call) => {
                let mut args = call.audit_args();
                args.insert("timeout_ms".to_owned(), json!(budget.as_millis() as u64));
                return args;
            }
            ToolCall::Navigate { url, .. } => json!({ "url": url }),
            ToolCall::Click { target, options } => json!({
                "target": target_json(target),
                "double": options.double,
            }),
            ToolCall::Type {
                target,
                text,
                submit,
                ..
            } => json!({ "target": target_json(target), "text": text, "submit": submit }),
            ToolCall::FillForm { fields } => json!({
                "fields": fields
                    .iter()
                    .map(|(t, v)| json!({ "target": target_json(t), "value": v }))
                    .collect::<Vec<_>>(),
            }),
            ToolCall::PressKey { key } => json!({ "key": key }),
            ToolCall::SelectOption { target, values } => {
                json!({ "target": target_json(target), "values": values })
            }
            ToolCall::Check { target, checked } => {
                json!({ "target": target_json(target), "checked": checked })
            }
            ToolCall::Hover { target } | ToolCall::Scroll(Scroll::IntoView(target)) => {
                json!({ "target": target_json(target) })
            }
            ToolCall::Drag { from, to } => {
                json!({ "from": target_json(from), "to": target_json(to) })
            }
            ToolCall::WaitFor { condition, .. } => match condition {
                WaitCondition::Text(text) => json!({ "text": text }),
                WaitCondition::TextGone(text) => json!({ "text_gone": text }),
                WaitCondition::Target(target) => json!({ "target": target_json(target) }),
                WaitCondition::Time(d) => json!({ "ms": d.as_millis() as u64 }),
            },
            ToolCall::Tabs(TabAction::New(url)) => json!({ "new": url }),
            ToolCall::Tabs(TabAction::Select(i)) => json!({ "select": i }),
            ToolCall::Tabs(TabAction::Close(i)) => json!({ "close": i }),
            ToolCall::Resize { width, height } => json!({ "width": width, "height": height }),
            ToolCall::ConsoleMessages { level, limit } => {
                json!({ "level": level.as_str(), "limit": limit })
            }
            ToolCall::HandleDialog {
                accept,
                prompt_text,
                ..
            } => json!({ "accept": accept, "prompt_text": prompt_text }),
            ToolCall::NetworkRequests { filter, limit } => {
                json!({ "filter": filter, "limit": limit })
            }
            ToolCall::FileUpload { target, files } => {
                json!({ "target": target_json(target), "files": files })
            }
            // The code run in the page, whole: what it did is on the record.
            ToolCall::Evaluate { function, target } => json!({
                "function": function,
                "target": target.as_ref().map(target_json),
            }),
            ToolCall::SessionOpen(options) => json!({
                "credentials": options.credentials,
                "allow_hosts": options.allow_hosts,
                "grant": options.grant.is_some(),
                "record": options.record.map(RecordMode::as_str),
                "device": options.device,
            }),
            _ => json!({}),
        };
        match value {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        }
    }

    /// The fields and values of a form fill.
    pub fn form_fields(&self) -> Option<&[(Target, String)]> {
        match self {
            ToolCall::Budgeted(_, call) => call.form_fields(),
            ToolCall::FillForm { fields } => Some(fields),
            _ => None,
        }
    }

    /// The text this call types, as the agent wrote it.
    pub fn typed_text(&self) -> Option<&str> {
        match self {
            ToolCall::Budgeted(_, call) => call.typed_text(),
            ToolCall::Type { text, .. } => Some(text),
            ToolCall::HandleDialog {
                prompt_text: Some(text),
                ..
            } => Some(text),
            _ => None,
        }
    }

    /// The one element this call acts on, if it acts on one (a form fill acts on
    /// several, a wait looks for one that may not be there yet: neither).
    pub fn target_mut(&mut self) -> Option<&mut Target> {
        match self {
            ToolCall::Budgeted(_, call) => call.target_mut(),
            ToolCall::Click { target, .. }
            | ToolCall::Type { target, .. }
            | ToolCall::SelectOption { target, .. }
            | ToolCall::Check { target, .. }
            | ToolCall::Hover { target }
            | ToolCall::Scroll(Scroll::IntoView(target)) => Some(target),
            _ => None,
        }
    }

    /// The URL this call would navigate to, if it navigates.
    pub fn navigation_target(&self) -> Option<&str> {
        match self {
            ToolCall::Budgeted(_, call) => call.navigation_target(),
            ToolCall::Navigate { url, .. } => Some(url),
            ToolCall::Tabs(TabAction::New(Some(url))) => Some(url),
            _ => None,
        }
    }
}

/// Cap of the snapshot in a navigation's result, below `browser_snapshot`'s 40,000.
/// A page that fits (the bench's login and article pages: 139 and 2,695 tokens)
/// reads the same; a larger one costs ~5,000 tokens instead of ~13,000, and its
/// result ends saying at which offset `browser_snapshot` goes on.
pub(crate) const NAVIGATION_SNAPSHOT_BYTES: usize = 16_000;

/// What of a new page a navigation's result shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PageView {
    /// The capped snapshot.
    #[default]
    Full,
    /// Only what can be acted on, and the headings that locate it.
    Interactive,
    /// Nothing: the agent reads the page when it wants to.
    None,
}

/// Page text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadFormat {
    /// Headings, lists, links and tables in markdown.
    #[default]
    Markdown,
    /// Plain text: no markdown syntax.
    Text,
}

/// `browser_tabs` actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TabAction {
    /// List tabs.
    List,
    /// Open a tab, optionally at a URL, and make it active.
    New(Option<String>),
    /// Make tab N active.
    Select(usize),
    /// Close tab N.
    Close(usize),
}

/// A file a tool returns (a screenshot, a PDF): the browser's encoded bytes and
/// their MIME type, one type for both layers.
pub use airlock_browser::Screenshot as ToolFile;

/// A tool's result as every surface reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// For the agent; on error it starts with the code (`ref_not_found: …`).
    pub text: String,
    /// A screenshot or PDF, if any.
    pub file: Option<ToolFile>,
    /// The error code, when the call failed.
    pub error: Option<ErrorCode>,
    /// The failure's message without the code, when the call failed (what a surface
    /// puts in a structured error; already redacted like `text`).
    pub message: Option<String>,
    /// When a retry may succeed (`quota_exceeded`).
    pub retry_after_secs: Option<u64>,
}

impl ToolOutput {
    pub(crate) fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            file: None,
            error: None,
            message: None,
            retry_after_secs: None,
        }
    }

    /// A failure with `code` and a one-line message.
    pub fn error(code: ErrorCode, message: impl std::fmt::Display) -> ToolOutput {
        let message = message.to_string();
        ToolOutput {
            text: format!("{code}: {message}"),
            file: None,
            error: Some(code),
            message: Some(message),
            retry_after_secs: None,
        }
    }

    /// The output of a failed call: the one place an error becomes words.
    pub fn from_error(error: &Error) -> ToolOutput {
        let mut out = ToolOutput::error(error.code(), error);
        out.retry_after_secs = error.retry_after_secs();
        out
    }

    /// Adds to the message (a failure's too) what the agent should know next.
    pub fn push_note(&mut self, note: &str) {
        self.text.push_str(note);
        if let Some(message) = &mut self.message {
            message.push_str(note);
        }
    }

    /// Passes every text of the output through `redact`.
    pub(crate) fn redact_with(&mut self, redact: impl Fn(&str) -> String) {
        self.text = redact(&self.text);
        if let Some(message) = &mut self.message {
            *message = redact(message);
        }
    }
}

// The `page: "title" — URL` line of the active tab, said above page content read
// outside an action's outcome.
async fn page_line(session: &BrowserSession, fence: &PageFence) -> Result<String> {
    let tabs = session.tabs().await?;
    let (title, url) = tabs
        .iter()
        .find(|t| t.active)
        .map(|t| (t.title.as_str(), t.url.as_str()))
        .unwrap_or_default();
    let whose = whose(title, url);
    fence.seen(&whose);
    Ok(format!("page: {whose}"))
}

/// What running a call needs: its browser session, the fence around page content, the
/// credentials it loaded, where uploads may come from, and the surface it came by.
#[derive(Clone, Copy)]
pub(crate) struct Cx<'a> {
    session: &'a BrowserSession,
    fence: &'a PageFence,
    loaded: &'a Loaded,
    uploads: Option<&'a std::path::Path>,
    surface: Surface,
}

/// Runs one browser call in `session` and words its result: each family of tools in a
/// file of its own (`navigate`, `interact`, `read`, `tabs`).
pub(crate) async fn execute(
    session: &BrowserSession,
    fence: &PageFence,
    loaded: &Loaded,
    uploads: Option<&std::path::Path>,
    surface: Surface,
    call: ToolCall,
) -> Result<ToolOutput> {
    let cx = Cx {
        session,
        fence,
        loaded,
        uploads,
        surface,
    };
    match call {
        ToolCall::Budgeted(budget, call) => {
            let inner = Box::pin(execute(session, fence, loaded, uploads, surface, *call));
            Ok(airlock_worker::with_action_budget(budget, inner).await?)
        }
        call @ (ToolCall::Navigate { .. }
        | ToolCall::Back
        | ToolCall::Forward
        | ToolCall::Reload) => navigate::run(cx, call).await,
        call @ (ToolCall::Snapshot(_)
        | ToolCall::Screenshot(_)
        | ToolCall::Pdf
        | ToolCall::Read { .. }
        | ToolCall::ConsoleMessages { .. }
        | ToolCall::NetworkRequests { .. }
        | ToolCall::Evaluate { .. }
        | ToolCall::WaitFor { .. }) => read::run(cx, call).await,
        call @ (ToolCall::Tabs(_) | ToolCall::Resize { .. }) => tabs::run(cx, call).await,
        // Handled by the agent session, which owns the browser session.
        ToolCall::SessionOpen(_) | ToolCall::SessionClose => Err(Error::Internal(
            "session calls are not browser actions".to_owned(),
        )),
        call => interact::run(cx, call).await,
    }
}

// A call routed to a family it is not of: a bug in `execute`, said as one.
fn not_of_family(call: &ToolCall) -> Error {
    Error::Internal(format!(
        "{} was routed to the wrong tool family",
        call.tool_name()
    ))
}

// After an action: what changed on the page since the agent last saw it; after a
// navigation it is a new page, so the (capped) snapshot instead.
// `typed` as for `header`.
async fn after_action(
    session: &BrowserSession,
    fence: &PageFence,
    surface: Surface,
    outcome: ActionOutcome,
    typed: Option<&str>,
) -> Result<ToolOutput> {
    if outcome.navigated {
        return after_navigation(session, fence, surface, outcome, typed).await;
    }
    let mut text = header(&outcome, fence, surface, typed);
    if holds_page(&outcome) {
        return Ok(ToolOutput::text(text.trim_end()));
    }
    match session.changes().await {
        Ok(Some(diff)) => {
            text.push_str("changes (+ new, ~ changed, - gone):\n");
            text.push_str(&fence.wrap(&diff));
        }
        Ok(None) => text.push_str("the page did not change"),
        // It opened after the action's outcome was taken.
        Err(BrowserError::DialogOpen { kind }) => text.push_str(&dialog_line(&kind, surface)),
        Err(e) => return Err(e.into()),
    }
    Ok(ToolOutput::text(text))
}

// Whether a dialog the outcome reports holds the page (it cannot be read until the
// dialog is answered).
fn holds_page(outcome: &ActionOutcome) -> bool {
    outcome
        .dialogs
        .iter()
        .any(|d| d.answer == DialogAnswer::Open)
}

async fn after_navigation(
    session: &BrowserSession,
    fence: &PageFence,
    surface: Surface,
    outcome: ActionOutcome,
    typed: Option<&str>,
) -> Result<ToolOutput> {
    let mut text = header(&outcome, fence, surface, typed);
    if holds_page(&outcome) {
        return Ok(ToolOutput::text(text.trim_end()));
    }
    match session.snapshot(&SnapshotOptions::default()).await {
        Ok(snapshot) => text.push_str(&fence.wrap(&snapshot.text)),
        Err(BrowserError::DialogOpen { kind }) => text.push_str(&dialog_line(&kind, surface)),
        Err(e) => return Err(e.into()),
    }
    Ok(ToolOutput::text(text))
}

#[cfg(test)]
mod tests;
