//! Wire parameters of each tool (their doc comments become the JSON-schema
//! descriptions the model reads) and their conversion into gateway calls.

use airlock_gateway::{Interaction, Navigation, Reading, SessionCall, Window};
use std::time::Duration;

use airlock_config::{Isolation, RecordMode};
use airlock_gateway::action::{
    ClickOptions, Direction, ImageFormat, Modifier, MouseButton, ScreenshotOptions, Scroll,
    SnapshotOptions, Target, WaitCondition, WaitUntil,
};
use airlock_gateway::{OpenOptions, PageView, ReadFormat, TabAction, ToolCall};
use schemars::JsonSchema;
use serde::Deserialize;

/// Longest text accepted for typing; more is refused rather than truncated.
const MAX_TEXT_CHARS: usize = 100_000;

/// A problem with the arguments, reported as `invalid_argument`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadArgument(pub String);

fn bad<T>(message: impl Into<String>) -> Result<T, BadArgument> {
    Err(BadArgument(message.into()))
}

// `call` with its own action budget when the caller gave `timeout_ms`.
fn budgeted(call: ToolCall, timeout_ms: Option<u64>) -> Result<ToolCall, BadArgument> {
    match timeout_ms {
        None => Ok(call),
        Some(ms) if (100..=120_000).contains(&ms) => Ok(ToolCall::Budgeted(
            std::time::Duration::from_millis(ms),
            Box::new(call),
        )),
        Some(ms) => bad(format!("`timeout_ms` is 100 to 120000; got {ms}")),
    }
}

/// What to act on: give exactly one of `ref`; `role` (with `name`, optionally
/// `index`); `selector`; or `x` and `y`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct TargetParams {
    /// From the latest snapshot (`e12`, `f1e3`); preferred.
    #[serde(rename = "ref")]
    pub reference: Option<String>,
    /// As the snapshot shows it (`button`).
    pub role: Option<String>,
    /// Exact, else substring.
    pub name: Option<String>,
    /// Of several matches, 0-based.
    pub index: Option<usize>,
    /// CSS selector.
    pub selector: Option<String>,
    /// Viewport point, CSS px (with `y`).
    pub x: Option<f64>,
    /// Viewport point, CSS px (with `x`).
    pub y: Option<f64>,
    /// How long finding and acting on the target may take, ms (100–120000; default:
    /// the server's action budget).
    pub timeout_ms: Option<u64>,
}

impl TargetParams {
    fn is_empty(&self) -> bool {
        self.reference.is_none()
            && self.role.is_none()
            && self.selector.is_none()
            && self.x.is_none()
            && self.y.is_none()
    }

    pub fn target(&self) -> Result<Target, BadArgument> {
        let kinds = [
            self.reference.is_some(),
            self.role.is_some(),
            self.selector.is_some(),
            self.x.is_some() || self.y.is_some(),
        ];
        match kinds.iter().filter(|k| **k).count() {
            0 => {
                return bad(
                    "give a target: `ref` (from browser_snapshot), `role` with `name`, `selector`, or `x` and `y`",
                );
            }
            1 => {}
            _ => {
                return bad(
                    "give only one kind of target: `ref`, `role`/`name`, `selector`, or `x`/`y`",
                );
            }
        }
        if let Some(reference) = &self.reference {
            return reference
                .trim()
                .parse()
                .map(Target::Ref)
                .map_err(|e: airlock_core::ParseNodeRefError| BadArgument(e.to_string()));
        }
        if let Some(role) = &self.role {
            if role.is_empty() || role.len() > 64 {
                return bad("`role` must be a role name such as `button`");
            }
            return Ok(Target::Role {
                role: role.clone(),
                name: self.name.clone(),
                index: self.index,
            });
        }
        if let Some(selector) = &self.selector {
            if selector.is_empty() || selector.len() > 2_000 {
                return bad("`selector` must be a CSS selector of at most 2000 characters");
            }
            if self.index.is_some() {
                return bad("`index` goes with `role`; make the selector more specific instead");
            }
            return Ok(Target::Selector(selector.clone()));
        }
        match (self.x, self.y) {
            (Some(x), Some(y)) if x.is_finite() && y.is_finite() => Ok(Target::Point { x, y }),
            _ => bad("give both `x` and `y` as numbers"),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NavigateParams {
    /// Absolute http(s) URL.
    pub url: String,
    /// Default `load`.
    #[schemars(extend("enum" = ["load", "domcontentloaded", "networkidle"]))]
    pub wait_until: Option<String>,
    /// What of the page the result shows (default `full`, at most 16,000 bytes).
    #[schemars(extend("enum" = ["full", "interactive", "none"]))]
    pub snapshot: Option<String>,
}

impl NavigateParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        if self.url.len() > 8_192 {
            return bad("`url` is longer than 8192 characters");
        }
        // Schemes and hosts are the policy's to judge (policy_denied, in the gateway).
        let wait_until = match self.wait_until.as_deref() {
            None | Some("load") => WaitUntil::Load,
            Some("domcontentloaded") => WaitUntil::DomContentLoaded,
            Some("networkidle") => WaitUntil::NetworkIdle,
            Some(other) => {
                return bad(format!(
                    "`wait_until` is one of load, domcontentloaded, networkidle; got `{other}`"
                ));
            }
        };
        let snapshot = match self.snapshot.as_deref() {
            None | Some("full") => PageView::Full,
            Some("interactive") => PageView::Interactive,
            Some("none") => PageView::None,
            Some(other) => {
                return bad(format!(
                    "`snapshot` is one of full, interactive, none; got `{other}`"
                ));
            }
        };
        Ok(ToolCall::Navigate(Navigation::To {
            url: self.url.trim().to_owned(),
            wait_until,
            snapshot,
        }))
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct SnapshotParams {
    /// Only what can be acted on, with the headings and rows that locate it.
    #[serde(default)]
    pub interactive_only: bool,
    /// Most lines to return.
    pub max_nodes: Option<usize>,
    /// Only this ref's subtree (a table, a dialog).
    pub scope_ref: Option<String>,
    /// Lines containing this text, with subtree, ancestors and heading.
    pub find: Option<String>,
    /// From a previous snapshot's truncation line.
    pub offset: Option<usize>,
    /// Levels shown (1: top only); cut subtrees end `[+N]`.
    pub depth: Option<usize>,
    /// Each ref's `[box=x,y,w,h]` in viewport CSS px.
    #[serde(default)]
    pub boxes: bool,
}

impl SnapshotParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let scope = match &self.scope_ref {
            Some(r) => Some(
                r.trim()
                    .parse()
                    .map_err(|e: airlock_core::ParseNodeRefError| BadArgument(e.to_string()))?,
            ),
            None => None,
        };
        Ok(ToolCall::Read(Reading::Snapshot(SnapshotOptions {
            interactive_only: self.interactive_only,
            max_nodes: self.max_nodes.unwrap_or(usize::MAX).max(1),
            scope,
            find: self.find,
            offset: self.offset.unwrap_or(0),
            depth: match self.depth {
                Some(0) => return bad("`depth` is at least 1"),
                depth => depth,
            },
            boxes: self.boxes,
            ..SnapshotOptions::default()
        })))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ClickParams {
    #[serde(flatten)]
    pub target: TargetParams,
    // Or the element showing this text (the description says it).
    pub text: Option<String>,
    /// Default `left`.
    #[schemars(extend("enum" = ["left", "right", "middle"]))]
    pub button: Option<String>,
    /// Double-click.
    #[serde(default)]
    pub double: bool,
    /// Held keys.
    #[serde(default)]
    #[schemars(extend("items" = { "type": "string", "enum": ["Alt", "Control", "Meta", "Shift"] }))]
    pub modifiers: Vec<String>,
}

impl ClickParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let button = match self.button.as_deref() {
            None | Some("left") => MouseButton::Left,
            Some("right") => MouseButton::Right,
            Some("middle") => MouseButton::Middle,
            Some(other) => {
                return bad(format!(
                    "`button` is one of left, right, middle; got `{other}`"
                ));
            }
        };
        let mut modifiers = Vec::new();
        for m in &self.modifiers {
            modifiers.push(match m.as_str() {
                "Alt" => Modifier::Alt,
                "Control" | "Ctrl" => Modifier::Control,
                "Meta" | "Command" => Modifier::Meta,
                "Shift" => Modifier::Shift,
                other => {
                    return bad(format!(
                        "unknown modifier `{other}` (Alt, Control, Meta, Shift)"
                    ));
                }
            });
        }
        let target = text_or(&self.target, self.text)?;
        let call = ToolCall::Interact(Interaction::Click {
            target,
            options: ClickOptions {
                button,
                double: self.double,
                modifiers,
            },
        });
        budgeted(call, self.target.timeout_ms)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TypeParams {
    #[serde(flatten)]
    pub target: TargetParams,
    // What to type; the tool's description says the rest (as for the fields below
    // whose doc would only repeat it: tools/list is paid on every model request).
    pub text: String,
    // Type after the field's value instead of replacing it (Playwright's
    // `browser_type` replaces: agents trained on it expect that).
    #[serde(default)]
    pub append: bool,
    /// Press Enter afterwards.
    #[serde(default)]
    pub submit: bool,
}

impl TypeParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        check_text(&self.text)?;
        let call = ToolCall::Interact(Interaction::Type {
            target: self.target.target()?,
            text: self.text,
            clear_first: !self.append,
            submit: self.submit,
        });
        budgeted(call, self.target.timeout_ms)
    }
}

fn check_text(text: &str) -> Result<(), BadArgument> {
    if text.chars().count() > MAX_TEXT_CHARS {
        return bad(format!("`text` is longer than {MAX_TEXT_CHARS} characters"));
    }
    Ok(())
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FormField {
    #[serde(flatten)]
    pub target: TargetParams,
    // Text; `true`/`false` for a checkbox; an option for a select (the tool's
    // description says so).
    pub value: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FillFormParams {
    /// In order.
    pub fields: Vec<FormField>,
}

impl FillFormParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        if self.fields.is_empty() || self.fields.len() > 100 {
            return bad("`fields` must hold 1 to 100 fields");
        }
        let mut fields = Vec::with_capacity(self.fields.len());
        // A field's `timeout_ms` sets the whole call's budget (the largest given).
        let timeout_ms = self.fields.iter().filter_map(|f| f.target.timeout_ms).max();
        for field in self.fields {
            check_text(&field.value)?;
            fields.push((field.target.target()?, field.value));
        }
        budgeted(
            ToolCall::Interact(Interaction::FillForm { fields }),
            timeout_ms,
        )
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PressKeyParams {
    /// `Enter`, `Tab`, `Escape`, `ArrowDown`, `a`, `Control+A` …
    pub key: String,
}

impl PressKeyParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        if self.key.len() > 64 {
            return bad("`key` is a key name or combo such as `Control+A`");
        }
        Ok(ToolCall::Interact(Interaction::PressKey { key: self.key }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SelectParams {
    #[serde(flatten)]
    pub target: TargetParams,
    /// Values or labels (several for a multi-select).
    pub values: Vec<String>,
}

impl SelectParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        if self.values.is_empty() {
            return bad("`values` must name at least one option");
        }
        let call = ToolCall::Interact(Interaction::SelectOption {
            target: self.target.target()?,
            values: self.values,
        });
        budgeted(call, self.target.timeout_ms)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckParams {
    #[serde(flatten)]
    pub target: TargetParams,
    /// Default `true`.
    pub checked: Option<bool>,
}

impl CheckParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let call = ToolCall::Interact(Interaction::Check {
            target: self.target.target()?,
            checked: self.checked.unwrap_or(true),
        });
        budgeted(call, self.target.timeout_ms)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct HoverParams {
    #[serde(flatten)]
    pub target: TargetParams,
}

impl HoverParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let call = ToolCall::Interact(Interaction::Hover {
            target: self.target.target()?,
        });
        budgeted(call, self.target.timeout_ms)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScrollParams {
    /// Give a target to scroll it into view; otherwise the page scrolls by `direction`.
    #[serde(flatten)]
    pub target: TargetParams,
    /// Default `down`.
    #[schemars(extend("enum" = ["down", "up", "left", "right"]))]
    pub direction: Option<String>,
    /// CSS pixels (default: most of a viewport).
    pub amount: Option<f64>,
}

impl ScrollParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        if !self.target.is_empty() {
            let call =
                ToolCall::Interact(Interaction::Scroll(Scroll::IntoView(self.target.target()?)));
            return budgeted(call, self.target.timeout_ms);
        }
        let direction = match self.direction.as_deref() {
            None | Some("down") => Direction::Down,
            Some("up") => Direction::Up,
            Some("left") => Direction::Left,
            Some("right") => Direction::Right,
            Some(other) => {
                return bad(format!(
                    "`direction` is one of up, down, left, right; got `{other}`"
                ));
            }
        };
        Ok(ToolCall::Interact(Interaction::Scroll(Scroll::Page {
            direction,
            amount: self.amount,
        })))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WaitForParams {
    // Text to appear (the description names both).
    pub text: Option<String>,
    // Text to disappear.
    pub text_gone: Option<String>,
    /// Wait until this target exists and is visible.
    #[serde(flatten)]
    pub target: TargetParams,
    /// Fixed wait, ms (at most 60000).
    pub time_ms: Option<u64>,
    /// Give up after (ms; default 10000).
    pub timeout_ms: Option<u64>,
}

impl WaitForParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let mut conditions = Vec::new();
        if let Some(t) = self.text {
            conditions.push(WaitCondition::Text(t));
        }
        if let Some(t) = self.text_gone {
            conditions.push(WaitCondition::TextGone(t));
        }
        if !self.target.is_empty() {
            conditions.push(WaitCondition::Target(self.target.target()?));
        }
        if let Some(ms) = self.time_ms {
            conditions.push(WaitCondition::Time(Duration::from_millis(ms)));
        }
        if conditions.len() != 1 {
            return bad("give exactly one of `text`, `text_gone`, a target, or `time_ms`");
        }
        let timeout = match self.timeout_ms {
            Some(ms) if ms == 0 || ms > 120_000 => {
                return bad("`timeout_ms` must be within 1..=120000");
            }
            other => other.map(Duration::from_millis),
        };
        Ok(ToolCall::Read(Reading::WaitFor {
            condition: conditions.remove(0),
            timeout,
        }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScreenshotParams {
    // Not just the viewport.
    #[serde(default)]
    pub full_page: bool,
    /// Only this element.
    #[serde(flatten)]
    pub target: TargetParams,
    /// Default `png`.
    #[schemars(extend("enum" = ["png", "jpeg"]))]
    pub format: Option<String>,
    /// JPEG quality 1–100 (default 80).
    pub quality: Option<u8>,
}

impl ScreenshotParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let format = match self.format.as_deref() {
            None | Some("png") => {
                if self.quality.is_some() {
                    return bad("`quality` applies to `jpeg` only");
                }
                ImageFormat::Png
            }
            Some("jpeg" | "jpg") => ImageFormat::Jpeg {
                quality: self.quality.unwrap_or(80),
            },
            Some(other) => return bad(format!("`format` is png or jpeg; got `{other}`")),
        };
        let target = if self.target.is_empty() {
            None
        } else {
            Some(self.target.target()?)
        };
        if target.is_some() && self.full_page {
            return bad("give a target or `full_page`, not both");
        }
        Ok(ToolCall::Read(Reading::Screenshot(ScreenshotOptions {
            full_page: self.full_page,
            target,
            format,
            outline: None,
            fast: false,
        })))
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ReadParams {
    /// Default `markdown`.
    #[schemars(extend("enum" = ["markdown", "text"]))]
    pub format: Option<String>,
    /// From a previous read's truncation line.
    pub offset: Option<usize>,
}

impl ReadParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let format = match self.format.as_deref() {
            None | Some("markdown") => ReadFormat::Markdown,
            Some("text") => ReadFormat::Text,
            Some(other) => return bad(format!("`format` is markdown or text; got `{other}`")),
        };
        Ok(ToolCall::Read(Reading::Text {
            format,
            offset: self.offset.unwrap_or(0),
        }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConsoleParams {
    /// Least level shown (default `info`).
    #[schemars(extend("enum" = ["debug", "info", "warning", "error"]))]
    pub level: Option<String>,
    /// Newest N (default 50, max 200).
    pub limit: Option<usize>,
    /// Earlier pages too.
    pub all: Option<bool>,
}

impl ConsoleParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let level = match self.level.as_deref() {
            None => airlock_gateway::action::ConsoleLevel::Info,
            Some(text) => airlock_gateway::action::ConsoleLevel::parse(text).ok_or_else(|| {
                BadArgument("`level` is debug, info, warning or error".to_owned())
            })?,
        };
        let limit = self.limit.unwrap_or(50);
        if !(1..=airlock_gateway::CONSOLE_KEPT).contains(&limit) {
            return bad(format!("`limit` is 1 to {}", airlock_gateway::CONSOLE_KEPT));
        }
        Ok(ToolCall::Read(Reading::ConsoleMessages {
            level,
            limit,
            all: self.all.unwrap_or(false),
        }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NetworkParams {
    /// Only URLs containing this.
    pub filter: Option<String>,
    /// Newest N (default 50, max 200).
    pub limit: Option<usize>,
    /// Also loaded images, scripts, styles.
    pub r#static: Option<bool>,
}

impl NetworkParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let limit = self.limit.unwrap_or(50);
        if !(1..=airlock_gateway::NETWORK_KEPT).contains(&limit) {
            return bad(format!("`limit` is 1 to {}", airlock_gateway::NETWORK_KEPT));
        }
        if self.filter.as_ref().is_some_and(|f| f.len() > 2_000) {
            return bad("`filter` is at most 2000 characters");
        }
        Ok(ToolCall::Read(Reading::NetworkRequests {
            filter: self.filter.filter(|f| !f.is_empty()),
            limit,
            with_static: self.r#static.unwrap_or(false),
        }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EvaluateParams {
    /// A JavaScript function: `() => document.title`, or `(el) => el.value` with a
    /// target.
    pub function: String,
    #[serde(flatten)]
    pub target: TargetParams,
}

impl EvaluateParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let call = ToolCall::Read(Reading::Evaluate {
            function: self.function,
            target: if self.target.is_empty() {
                None
            } else {
                Some(self.target.target()?)
            },
        });
        budgeted(call, self.target.timeout_ms)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct UploadParams {
    #[serde(flatten)]
    pub target: TargetParams,
    /// Names in the server's upload directory.
    pub files: Vec<String>,
}

impl UploadParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let call = ToolCall::Interact(Interaction::FileUpload {
            target: self.target.target()?,
            files: self.files,
        });
        budgeted(call, self.target.timeout_ms)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DragParams {
    // What to drag (the description says it).
    pub from: DragEnd,
    // Where to drop it.
    pub to: DragEnd,
}

/// One end of a drag: a target, or the element showing a text.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DragEnd {
    #[serde(flatten)]
    pub target: TargetParams,
    // Or the element showing this text (the description says it).
    pub text: Option<String>,
}

impl DragEnd {
    fn target(&self) -> Result<Target, BadArgument> {
        text_or(&self.target, self.text.clone())
    }
}

// `text` as a target (alone), else the target the other fields give.
fn text_or(target: &TargetParams, text: Option<String>) -> Result<Target, BadArgument> {
    let Some(text) = text else {
        return target.target();
    };
    if !target.is_empty() {
        return bad(
            "give only one kind of target: `ref`, `role`/`name`, `text`, `selector`, or `x`/`y`",
        );
    }
    if text.trim().is_empty() || text.len() > 1_000 {
        return bad("`text` is the words the element shows, at most 1000 characters");
    }
    Ok(Target::Text {
        text,
        index: target.index,
    })
}

impl DragParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let call = ToolCall::Interact(Interaction::Drag {
            from: self.from.target()?,
            to: self.to.target()?,
        });
        budgeted(
            call,
            self.from.target.timeout_ms.max(self.to.target.timeout_ms),
        )
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct DialogParams {
    /// OK (true) or Cancel (false).
    pub accept: bool,
    /// A prompt's answer.
    pub prompt_text: Option<String>,
    /// Wait this long (ms) for one to open (default 0).
    pub timeout_ms: Option<u64>,
}

impl DialogParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        if self.prompt_text.is_some() && !self.accept {
            return bad("`prompt_text` goes with accept: true".to_owned());
        }
        let wait = match self.timeout_ms {
            Some(ms) if ms > 30_000 => return bad("`timeout_ms` is at most 30000"),
            other => Duration::from_millis(other.unwrap_or(0)),
        };
        Ok(ToolCall::Interact(Interaction::HandleDialog {
            accept: self.accept,
            prompt_text: self.prompt_text,
            wait,
        }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResizeParams {
    /// 200–3840.
    pub width: u32,
    /// 200–2160.
    pub height: u32,
}

impl ResizeParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let (min, max) = (airlock_gateway::VIEWPORT_MIN, airlock_gateway::VIEWPORT_MAX);
        if !(min.0..=max.0).contains(&self.width) || !(min.1..=max.1).contains(&self.height) {
            return bad(format!(
                "the viewport is {}–{} CSS pixels wide and {}–{} high",
                min.0, max.0, min.1, max.1
            ));
        }
        Ok(ToolCall::Window(Window::Resize {
            width: self.width,
            height: self.height,
        }))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TabsParams {
    #[schemars(extend("enum" = ["list", "new", "select", "close"]))]
    pub action: String,
    /// For `select` and `close`.
    pub index: Option<usize>,
    /// For `new`.
    pub url: Option<String>,
}

impl TabsParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let index = || {
            self.index
                .ok_or_else(|| BadArgument(format!("`{}` needs `index`", self.action)))
        };
        let action = match self.action.as_str() {
            "list" => TabAction::List,
            "new" => {
                if let Some(url) = &self.url {
                    NavigateParams {
                        url: url.clone(),
                        wait_until: None,
                        snapshot: None,
                    }
                    .call()?;
                }
                TabAction::New(self.url.clone())
            }
            "select" => TabAction::Select(index()?),
            "close" => TabAction::Close(self.index),
            other => {
                return bad(format!(
                    "`action` is one of list, new, select, close; got `{other}`"
                ));
            }
        };
        Ok(ToolCall::Window(Window::Tabs(action)))
    }
}

// Debug by hand below: the grant token is a credential.
#[derive(Default, Deserialize, JsonSchema)]
pub struct SessionOpenParams {
    /// Stored credentials to log in with; type values as `{{secret:NAME.password}}`.
    #[serde(default)]
    pub credentials: Vec<String>,
    /// Grant token for the credentials.
    pub grant: Option<String>,
    /// Screenshots of your steps (`transient`: the last 50).
    #[schemars(extend("enum" = ["off", "transient", "audit"]))]
    pub record: Option<String>,
    /// `process`: own Chromium.
    #[schemars(extend("enum" = ["context", "process"]))]
    pub isolation: Option<String>,
    /// Only these hosts (`*.a.com` too), within the policy.
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// Emulated device (viewport, touch, User-Agent).
    #[schemars(extend("enum" = ["desktop", "iphone-15", "pixel-8", "ipad"]))]
    pub device: Option<String>,
    /// Only these origins (`a.com`, `*.a.com`) may be changed.
    #[serde(default)]
    pub act_origins: Vec<String>,
    /// These may only be read.
    #[serde(default)]
    pub read_origins: Vec<String>,
}

impl std::fmt::Debug for SessionOpenParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOpenParams")
            .field("credentials", &self.credentials)
            .field("grant", &self.grant.as_ref().map(|_| "[REDACTED]"))
            .field("record", &self.record)
            .field("isolation", &self.isolation)
            .field("allow_hosts", &self.allow_hosts)
            .field("device", &self.device)
            .field("act_origins", &self.act_origins)
            .field("read_origins", &self.read_origins)
            .finish()
    }
}

impl SessionOpenParams {
    pub fn call(self) -> Result<ToolCall, BadArgument> {
        let record = match self.record.as_deref() {
            None => None,
            Some(text) => Some(RecordMode::parse(text).ok_or_else(|| {
                BadArgument(format!("`record` is off, transient or audit; got `{text}`"))
            })?),
        };
        let isolation = match self.isolation.as_deref() {
            None => None,
            Some(text) => Some(Isolation::parse(text).ok_or_else(|| {
                BadArgument(format!("`isolation` is context or process; got `{text}`"))
            })?),
        };
        Ok(ToolCall::Session(SessionCall::Open(OpenOptions {
            isolation,
            allow_hosts: self.allow_hosts,
            credentials: self.credentials,
            grant: self.grant,
            record,
            device: self.device,
            act_origins: self.act_origins,
            read_origins: self.read_origins,
            // Only a stored login's own check skips the gate on dead logins.
            login_check: false,
        })))
    }
}

/// For tools without parameters.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct NoParams {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_list_in_the_schema_is_the_browsers() {
        let schema = serde_json::to_value(schemars::schema_for!(SessionOpenParams)).unwrap();
        let listed: Vec<&str> = schema["properties"]["device"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let known: Vec<&str> = airlock_gateway::action::DEVICES
            .iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(listed, known);
    }

    #[test]
    fn a_grant_token_never_shows_in_debug() {
        let p: SessionOpenParams =
            serde_json::from_str(r#"{"credentials":["app"],"grant":"agt_sekrit-token"}"#).unwrap();
        let shown = format!("{p:?}");
        assert!(
            !shown.contains("sekrit") && shown.contains("[REDACTED]"),
            "{shown}"
        );
        let Ok(ToolCall::Session(SessionCall::Open(options))) = p.call() else {
            panic!("not a session open");
        };
        assert!(!format!("{options:?}").contains("sekrit"));
    }

    fn target(json: &str) -> Result<Target, String> {
        let p: TargetParams = serde_json::from_str(json).unwrap();
        p.target().map_err(|e| e.0)
    }

    #[test]
    fn targets_need_exactly_one_kind() {
        assert!(matches!(target(r#"{"ref":"e3"}"#), Ok(Target::Ref(_))));
        assert!(matches!(
            target(r#"{"role":"button","name":"Go"}"#),
            Ok(Target::Role { .. })
        ));
        assert!(matches!(
            target(r##"{"selector":"#x"}"##),
            Ok(Target::Selector(_))
        ));
        assert!(matches!(
            target(r#"{"x":1,"y":2}"#),
            Ok(Target::Point { .. })
        ));
        assert!(target("{}").unwrap_err().contains("give a target"));
        assert!(
            target(r#"{"ref":"e3","selector":"a"}"#)
                .unwrap_err()
                .contains("only one")
        );
        assert!(target(r#"{"x":1}"#).unwrap_err().contains("both"));
        assert!(
            target(r#"{"ref":"button"}"#)
                .unwrap_err()
                .contains("not a snapshot ref")
        );
    }

    #[test]
    fn navigate_validates_its_parameters() {
        let p = |url: &str, wait: Option<&str>| {
            NavigateParams {
                url: url.to_owned(),
                wait_until: wait.map(str::to_owned),
                snapshot: None,
            }
            .call()
        };
        assert!(p("https://example.com", Some("networkidle")).is_ok());
        assert!(p("https://example.com", Some("idle")).is_err());
        let view = |v: &str| {
            NavigateParams {
                url: "https://example.com".to_owned(),
                wait_until: None,
                snapshot: Some(v.to_owned()),
            }
            .call()
        };
        assert!(view("none").is_ok() && view("interactive").is_ok());
        assert!(view("some").is_err());
        // Placeholders and schemes are judged in the gateway, for every surface.
        assert!(p("https://x/{{secret:a.b}}", None).is_ok());
        assert!(p("file:///etc/passwd", None).is_ok());
    }
}
