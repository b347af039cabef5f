//! `[[models]]` and `[tasks]`: the operator's models a server-side task
//! (`browser_run_task`) runs with, and the bounds every task keeps. The model is the
//! operator's, never the agent's: an agent names one of these by name at most, and
//! the control plane reaches it only at the URL written here.

use std::net::IpAddr;
use std::time::Duration;

use serde::Deserialize;

use crate::{ApiKey, EnvSource, Error, Result};

/// `[[models]]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    /// What tasks and the operator call it.
    pub name: String,
    /// Its wire format: `tools` (OpenAI-compatible chat completions with function
    /// calling), or one that acts on screenshots: `openai-computer-use`,
    /// `anthropic-computer-use`, `ui-tars` (0–1000 grid), `ui-tars-1.5` (resized).
    pub style: Option<String>,
    /// The endpoint, whole (`https://…/v1/chat/completions`).
    pub url: String,
    /// The model id sent in each request.
    pub model: String,
    /// The environment variable holding its API key (never an `AIRLOCK_*` one).
    pub api_key_env: Option<String>,
    /// A vault secret (of the default tenant) whose password is its API key; the
    /// secret must be bound to the endpoint's origin.
    pub api_key_secret: Option<String>,
    /// How long one request may take, in seconds (default 60).
    pub timeout_secs: Option<u64>,
}

/// `[tasks]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTasks {
    /// The model a task uses when it names none (default: the first listed).
    pub model: Option<String>,
    /// Steps a task takes when it asks for no number (default 20, at most 100).
    pub max_steps: Option<u32>,
    /// Wall clock per task, in seconds, approvals included (default 600).
    pub max_secs: Option<u64>,
    /// Model tokens per task, prompts and answers (default 200,000).
    pub max_tokens: Option<u64>,
    /// Retries of one model request on 429 or 5xx (default 3).
    pub retries: Option<u32>,
    /// Bytes of the page's snapshot a step's request carries (default 12,000).
    pub snapshot_bytes: Option<usize>,
    /// Earlier steps a request recalls (default 8).
    pub history: Option<usize>,
}

/// How a model is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelStyle {
    /// OpenAI-compatible chat completions with function calling: the model calls
    /// Airlock's own browser tools.
    Tools,
    /// OpenAI's Responses API with the `computer_use_preview` tool: actions at
    /// absolute pixels of the screenshot.
    OpenAiComputerUse,
    /// Anthropic's Messages API with the `computer_20250124` tool: actions at
    /// absolute pixels of the screenshot.
    AnthropicComputerUse,
    /// UI-TARS' action grammar over chat completions, points on a 0–1000 grid.
    UiTars,
    /// UI-TARS-1.5's grammar: points in pixels of the screenshot as the model
    /// resized it (multiples of 28 within its pixel budget).
    UiTars15,
}

impl ModelStyle {
    /// Every style, by its name in config.
    pub const ALL: [ModelStyle; 5] = [
        ModelStyle::Tools,
        ModelStyle::OpenAiComputerUse,
        ModelStyle::AnthropicComputerUse,
        ModelStyle::UiTars,
        ModelStyle::UiTars15,
    ];

    /// Its name in config.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelStyle::Tools => "tools",
            ModelStyle::OpenAiComputerUse => "openai-computer-use",
            ModelStyle::AnthropicComputerUse => "anthropic-computer-use",
            ModelStyle::UiTars => "ui-tars",
            ModelStyle::UiTars15 => "ui-tars-1.5",
        }
    }
}

/// Where a model's API key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelKey {
    /// No key (a local server).
    None,
    /// Read from the environment at start-up.
    Value(ApiKey),
    /// A vault secret's password, loaded when the model is first used.
    Vault(String),
}

/// One `[[models]]` entry, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// Its name.
    pub name: String,
    /// Its wire format.
    pub style: ModelStyle,
    /// The endpoint (https, or http on a loopback address).
    pub url: url::Url,
    /// The model id sent in each request.
    pub model: String,
    /// Its API key.
    pub key: ModelKey,
    /// How long one request may take.
    pub timeout: Duration,
}

/// Validated `[[models]]` and `[tasks]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tasks {
    /// The models, in the order listed; none: no task can run.
    pub models: Vec<Model>,
    /// The default model's name.
    pub default_model: Option<String>,
    /// Steps when a task asks for no number.
    pub max_steps: u32,
    /// Wall clock per task.
    pub max_time: Duration,
    /// Model tokens per task.
    pub max_tokens: u64,
    /// Retries of one model request.
    pub retries: u32,
    /// Snapshot bytes per step's request.
    pub snapshot_bytes: usize,
    /// Earlier steps a request recalls.
    pub history: usize,
}

/// The most steps any task may take.
pub const MAX_TASK_STEPS: u32 = 100;

impl Default for Tasks {
    fn default() -> Tasks {
        Tasks {
            models: Vec::new(),
            default_model: None,
            max_steps: 20,
            max_time: Duration::from_secs(600),
            max_tokens: 200_000,
            retries: 3,
            snapshot_bytes: 12_000,
            history: 8,
        }
    }
}

impl Tasks {
    /// The model called `name`, or the default one.
    pub fn model(&self, name: Option<&str>) -> Option<&Model> {
        let name = name.or(self.default_model.as_deref())?;
        self.models.iter().find(|m| m.name == name)
    }
}

fn invalid(key: String, message: impl Into<String>) -> Error {
    Error::Invalid {
        key,
        message: message.into(),
    }
}

/// Checks `[[models]]` and `[tasks]`; an `api_key_env` is read from `env` now, so a
/// missing key fails at start-up, not at the first task.
pub(crate) fn tasks(models: &[RawModel], raw: &RawTasks, env: &dyn EnvSource) -> Result<Tasks> {
    let defaults = Tasks::default();
    let mut checked: Vec<Model> = Vec::new();
    for (i, m) in models.iter().enumerate() {
        let key = |field: &str| format!("models[{i}].{field}");
        if m.name.is_empty()
            || !m
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            return Err(invalid(
                key("name"),
                "must be letters, digits, `-`, `_` or `.`",
            ));
        }
        if checked.iter().any(|c| c.name == m.name) {
            return Err(invalid(
                key("name"),
                format!("`{}` is listed twice", m.name),
            ));
        }
        let named = m.style.as_deref().unwrap_or("tools");
        let Some(style) = ModelStyle::ALL.into_iter().find(|s| s.as_str() == named) else {
            let known: Vec<&str> = ModelStyle::ALL.iter().map(|s| s.as_str()).collect();
            return Err(invalid(
                key("style"),
                format!(
                    "`{}` is not a style this build speaks ({})",
                    airlock_core::text::prefix(named, 40),
                    known.join(", ")
                ),
            ));
        };
        let url = endpoint(&m.url).map_err(|why| invalid(key("url"), why))?;
        if m.model.is_empty() {
            return Err(invalid(
                key("model"),
                "names the model id each request sends",
            ));
        }
        let api_key = match (&m.api_key_env, &m.api_key_secret) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    key("api_key_env"),
                    "give api_key_env or api_key_secret, not both",
                ));
            }
            (Some(var), None) => {
                // An Airlock variable holds Airlock's own keys (the master key, the
                // admin key …): none of them is ever sent to a model.
                if var.starts_with("AIRLOCK_") || var.is_empty() {
                    return Err(invalid(
                        key("api_key_env"),
                        "must name a variable of its own, not an AIRLOCK_* one",
                    ));
                }
                match env.get(var).filter(|v| !v.is_empty()) {
                    Some(value) => ModelKey::Value(ApiKey::new(value)),
                    None => {
                        return Err(invalid(key("api_key_env"), format!("`{var}` is not set")));
                    }
                }
            }
            (None, Some(secret)) => ModelKey::Vault(secret.clone()),
            (None, None) => ModelKey::None,
        };
        let timeout = match m.timeout_secs {
            None => Duration::from_secs(60),
            Some(secs @ 1..=600) => Duration::from_secs(secs),
            Some(secs) => {
                return Err(invalid(
                    key("timeout_secs"),
                    format!("{secs} is outside 1..=600"),
                ));
            }
        };
        checked.push(Model {
            name: m.name.clone(),
            style,
            url,
            model: m.model.clone(),
            key: api_key,
            timeout,
        });
    }
    let default_model = match &raw.model {
        Some(name) if !checked.iter().any(|m| &m.name == name) => {
            return Err(invalid(
                "tasks.model".to_owned(),
                format!("`{name}` is not a [[models]] name"),
            ));
        }
        Some(name) => Some(name.clone()),
        None => checked.first().map(|m| m.name.clone()),
    };
    let bounded =
        |field: &str, value: Option<u64>, range: std::ops::RangeInclusive<u64>, default: u64| {
            match value {
                None => Ok(default),
                Some(v) if range.contains(&v) => Ok(v),
                Some(v) => Err(invalid(
                    format!("tasks.{field}"),
                    format!("{v} is outside {}..={}", range.start(), range.end()),
                )),
            }
        };
    Ok(Tasks {
        models: checked,
        default_model,
        max_steps: bounded(
            "max_steps",
            raw.max_steps.map(u64::from),
            1..=u64::from(MAX_TASK_STEPS),
            u64::from(defaults.max_steps),
        )? as u32,
        max_time: Duration::from_secs(bounded(
            "max_secs",
            raw.max_secs,
            10..=86_400,
            defaults.max_time.as_secs(),
        )?),
        max_tokens: bounded(
            "max_tokens",
            raw.max_tokens,
            1_000..=100_000_000,
            defaults.max_tokens,
        )?,
        retries: bounded(
            "retries",
            raw.retries.map(u64::from),
            0..=10,
            u64::from(defaults.retries),
        )? as u32,
        snapshot_bytes: bounded(
            "snapshot_bytes",
            raw.snapshot_bytes.map(|b| b as u64),
            1_000..=200_000,
            defaults.snapshot_bytes as u64,
        )? as usize,
        history: bounded(
            "history",
            raw.history.map(|h| h as u64),
            0..=50,
            defaults.history as u64,
        )? as usize,
    })
}

// A model endpoint: https, or plain http only to a loopback address (a model served
// on this machine); no user or password in the URL (a key goes in a header, from
// the environment or the vault).
fn endpoint(text: &str) -> std::result::Result<url::Url, String> {
    let url = url::Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "carries no user or password; give the key as api_key_env or api_key_secret".to_owned(),
        );
    }
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => return Err("needs a host".to_owned()),
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        "http" => Err("must be https (plain http only to a loopback address)".to_owned()),
        other => Err(format!("`{other}` is not https")),
    }
}
