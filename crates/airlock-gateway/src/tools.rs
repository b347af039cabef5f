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
mod session;
mod tabs;
mod words;

use files::*;
pub use files::{MAX_DOWNLOAD_BYTES, MAX_UPLOAD_BYTES, MAX_UPLOAD_FILES};
pub use interact::Interaction;
pub use navigate::{Navigation, PageView};
pub use read::{ReadFormat, Reading};
pub use session::{OpenOptions, SessionCall};
pub use tabs::{TabAction, Window};
pub(crate) use words::notice_line;
use words::*;

/// One tool call, already validated into browser-layer types: a call of one family of
/// tools, each family in a file of its own that owns its arguments, what the pipeline
/// asks of them ([`Family`]) and how they run.
#[derive(Debug, Clone)]
pub enum ToolCall {
    /// Going places: navigate, back, forward, reload.
    Navigate(Navigation),
    /// Acting on the page: clicks, typing, forms, keys, uploads, dialogs …
    Interact(Interaction),
    /// Reading the page: snapshots, screenshots, text, logs, evaluate, waits.
    Read(Reading),
    /// Tabs and the viewport.
    Window(Window),
    /// Opening and closing the browser session itself.
    Session(SessionCall),
    /// Another call with its own action budget (`timeout_ms`): how long finding and
    /// acting on its target may take.
    Budgeted(Duration, Box<ToolCall>),
}

/// What the call pipeline asks of any call, answered by the family whose arguments
/// they are. Defaults fit a call that acts on nothing in particular.
trait Family {
    /// The tool's name as every surface, the audit log and approval rules know it.
    fn tool_name(&self) -> &'static str;

    /// The least role a caller needs.
    fn min_role(&self) -> Role {
        Role::Act
    }

    /// The parameter where a placeholder sits outside typed text, if one does: by
    /// default, the URL the call would navigate to.
    fn misplaced_placeholder(&self) -> Option<&'static str> {
        self.navigation_target()
            .is_some_and(mentions)
            .then_some("url")
    }

    /// The arguments as the audit log records them (a JSON object).
    fn audit_args(&self) -> serde_json::Value {
        serde_json::json!({})
    }

    /// The text this call types, as the agent wrote it.
    fn typed_text(&self) -> Option<&str> {
        None
    }

    /// The fields and values of a form fill.
    fn form_fields(&self) -> Option<&[(Target, String)]> {
        None
    }

    /// The one element this call acts on.
    fn target_mut(&mut self) -> Option<&mut Target> {
        None
    }

    /// The URL this call would navigate to.
    fn navigation_target(&self) -> Option<&str> {
        None
    }

    /// Whether this call runs the agent's own code in the page.
    fn runs_page_code(&self) -> bool {
        false
    }

    /// The strings this call sends toward a site, and where each goes (the
    /// data-flow stage checks them against what the session read elsewhere).
    fn outbound(&self) -> Vec<Outbound<'_>> {
        Vec::new()
    }

    /// What this call may change on a page, for origin sets: by default nothing.
    fn changes(&self) -> Changes<'_> {
        Changes::Nothing
    }
}

/// A string a call sends toward a site.
#[derive(Debug, Clone, Copy)]
pub struct Outbound<'a> {
    /// What it is, for a person (`url`, `text`, `value` …).
    pub what: &'static str,
    /// The string, as the agent wrote it.
    pub text: &'a str,
    /// Where it goes.
    pub to: Sink<'a>,
}

/// Where an outbound string goes.
#[derive(Debug, Clone, Copy)]
pub enum Sink<'a> {
    /// A URL navigated to: its origin.
    Url(&'a str),
    /// A field: the origin of the document holding it.
    Field(&'a Target),
    /// The active page: its origin.
    Page,
}

/// What a call may change, for origin sets: a read-only origin refuses a change.
#[derive(Debug, Clone, Copy)]
pub enum Changes<'a> {
    /// Nothing (reads, hovering, scrolling; navigations are judged by where they go).
    Nothing,
    /// The element it acts on (a click on a link follows it: no change).
    Element(&'a Target),
    /// The fields it fills.
    Fields(&'a [(Target, String)]),
    /// The active page as a whole (keys, a dialog's answer, the agent's code).
    Page,
}

// Whether `text` holds a `{{secret:…}}` placeholder.
fn mentions(text: &str) -> bool {
    airlock_vault::placeholder::mentions(text)
}

// Whether a target's description (a role's name, a selector) holds a placeholder.
fn target_mentions(target: &Target) -> bool {
    match target {
        Target::Role { role, name, .. } => mentions(role) || name.as_deref().is_some_and(mentions),
        Target::Text { text, .. } => mentions(text),
        Target::Selector(selector) => mentions(selector),
        Target::Ref(_) | Target::Point { .. } => false,
    }
}

impl ToolCall {
    // The family's answers for this call (through any budget around it).
    fn family(&self) -> &dyn Family {
        match self {
            ToolCall::Navigate(call) => call,
            ToolCall::Interact(call) => call,
            ToolCall::Read(call) => call,
            ToolCall::Window(call) => call,
            ToolCall::Session(call) => call,
            ToolCall::Budgeted(_, call) => call.family(),
        }
    }

    fn family_mut(&mut self) -> &mut dyn Family {
        match self {
            ToolCall::Navigate(call) => call,
            ToolCall::Interact(call) => call,
            ToolCall::Read(call) => call,
            ToolCall::Window(call) => call,
            ToolCall::Session(call) => call,
            ToolCall::Budgeted(_, call) => call.family_mut(),
        }
    }

    /// The tool's name as every surface, the audit log and approval rules know it.
    pub fn tool_name(&self) -> &'static str {
        self.family().tool_name()
    }

    /// The least role a caller needs for this call: `observe` may only look at the
    /// page it is given; everything that moves, types or opens needs `act`. (Using
    /// stored credentials needs more, checked where they are loaded.)
    pub fn min_role(&self) -> Role {
        self.family().min_role()
    }

    /// Whether this call runs the agent's own code in the page.
    pub fn runs_page_code(&self) -> bool {
        self.family().runs_page_code()
    }

    /// Where a `{{secret:…}}` placeholder sits outside typed text (a URL, key,
    /// target, option, wait text): the name of that parameter. Checked once, here,
    /// over the call's typed fields, for every surface.
    pub fn misplaced_placeholder(&self) -> Option<&'static str> {
        self.family().misplaced_placeholder()
    }

    /// The call's arguments as the audit log records them: targets as described,
    /// URLs, keys, typed text and values as the agent wrote them (placeholders, never
    /// what they stand for). The audit stage redacts every string once more.
    pub fn audit_args(&self) -> serde_json::Map<String, serde_json::Value> {
        if let ToolCall::Budgeted(budget, call) = self {
            let mut args = call.audit_args();
            let ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX);
            args.insert("timeout_ms".to_owned(), ms.into());
            return args;
        }
        match self.family().audit_args() {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        }
    }

    /// The fields and values of a form fill.
    pub fn form_fields(&self) -> Option<&[(Target, String)]> {
        self.family().form_fields()
    }

    /// The text this call types, as the agent wrote it.
    pub fn typed_text(&self) -> Option<&str> {
        self.family().typed_text()
    }

    /// The one element this call acts on, if it acts on one (a form fill acts on
    /// several, a wait looks for one that may not be there yet: neither).
    pub fn target_mut(&mut self) -> Option<&mut Target> {
        self.family_mut().target_mut()
    }

    /// The URL this call would navigate to, if it navigates.
    pub fn navigation_target(&self) -> Option<&str> {
        self.family().navigation_target()
    }

    /// The strings this call sends toward a site, and where each goes.
    pub fn outbound(&self) -> Vec<Outbound<'_>> {
        self.family().outbound()
    }

    /// What this call may change on a page.
    pub fn changes(&self) -> Changes<'_> {
        self.family().changes()
    }
}

/// Cap of the snapshot in a navigation's result, below `browser_snapshot`'s 40,000.
/// A page that fits (the bench's login and article pages: 139 and 2,695 tokens)
/// reads the same; a larger one costs ~5,000 tokens instead of ~13,000, and its
/// result ends saying at which offset `browser_snapshot` goes on.
pub(crate) const NAVIGATION_SNAPSHOT_BYTES: usize = 16_000;

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
    /// How long the parts of an action took (never shown to the agent: the log line
    /// and the bench read it).
    pub stages: Option<Box<airlock_browser::Stages>>,
    /// The URL of the page whose content the text shows, if it shows a page's (the
    /// data-flow stage keeps what was read there, by its origin).
    /// Boxed: an error result stays small.
    pub source: Option<Box<String>>,
}

impl ToolOutput {
    pub(crate) fn text(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            file: None,
            error: None,
            message: None,
            retry_after_secs: None,
            stages: None,
            source: None,
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
            stages: None,
            source: None,
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

    /// Says which page's content the text shows.
    pub(crate) fn read_on(mut self, url: &str) -> ToolOutput {
        self.source = Some(Box::new(url.to_owned()));
        self
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
pub(crate) async fn page_line(
    session: &BrowserSession,
    fence: &PageFence,
) -> Result<(String, String)> {
    let tabs = session.tabs().await?;
    let (title, url) = tabs
        .iter()
        .find(|t| t.active)
        .map(|t| (t.title.as_str(), t.url.as_str()))
        .unwrap_or_default();
    let whose = whose(title, url);
    fence.seen(&whose);
    Ok((format!("page: {whose}"), url.to_owned()))
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
/// file of its own (`navigate`, `interact`, `read`, `tabs`); `session` calls are the
/// agent session's own.
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
        ToolCall::Navigate(call) => navigate::run(cx, call).await,
        ToolCall::Interact(call) => interact::run(cx, call).await,
        ToolCall::Read(call) => read::run(cx, call).await,
        ToolCall::Window(call) => tabs::run(cx, call).await,
        // Handled by the agent session, which owns the browser session.
        ToolCall::Session(_) => Err(Error::Internal(
            "session calls are not browser actions".to_owned(),
        )),
    }
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
    let mut stages = outcome.stages;
    let mut text = header(&outcome, fence, surface, typed);
    if holds_page(&outcome) {
        return Ok(ToolOutput::text(text.trim_end()).read_on(&outcome.url));
    }
    let diffing = tokio::time::Instant::now();
    let changes = session.changes().await;
    stages.diff_us = micros(diffing);
    let wording = tokio::time::Instant::now();
    match changes {
        Ok(Some(diff)) => {
            text.push_str("changes (+ new, ~ changed, - gone):\n");
            text.push_str(&fence.wrap(&diff));
        }
        Ok(None) => text.push_str("the page did not change"),
        // It opened after the action's outcome was taken.
        Err(BrowserError::DialogOpen { kind }) => text.push_str(&dialog_line(&kind, surface)),
        Err(e) => return Err(e.into()),
    }
    stages.render_us = micros(wording);
    let mut out = ToolOutput::text(text).read_on(&outcome.url);
    out.stages = Some(Box::new(stages));
    Ok(out)
}

fn micros(since: tokio::time::Instant) -> u64 {
    crate::clock::micros(since.elapsed())
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
        return Ok(ToolOutput::text(text.trim_end()).read_on(&outcome.url));
    }
    match session.snapshot(&SnapshotOptions::default()).await {
        Ok(snapshot) => text.push_str(&fence.wrap(&snapshot.text)),
        Err(BrowserError::DialogOpen { kind }) => text.push_str(&dialog_line(&kind, surface)),
        Err(e) => return Err(e.into()),
    }
    Ok(ToolOutput::text(text).read_on(&outcome.url))
}

#[cfg(test)]
mod tests;
