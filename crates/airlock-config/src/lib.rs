//! Airlock configuration in two stages: [`RawConfig`] mirrors `airlock.toml` exactly;
//! [`Config::load`] layers built-in defaults < file < `AIRLOCK_*` environment and
//! validates the result, naming the key path of anything wrong.
//!
//! The loader takes the file's text and an [`EnvSource`], never the process itself,
//! so tests feed a map and nothing here does IO. Reading the file is the caller's job.

mod checks;
mod env;
mod error;
mod flow;
mod identity;
mod models;
mod raw;
mod server;
mod store;
mod tenant;
mod workers;

use std::path::{Path, PathBuf};
use std::time::Duration;

use airlock_core::Role;
use serde::Deserialize;

pub use airlock_policy::{Policy, PolicyConfig};
pub use airlock_risk::{ApprovalsConfig, Rules};
pub use env::{EnvSource, ProcessEnv, vars};
pub use error::{Error, Result};
pub use flow::{Flow, FlowMode, FlowScope, OriginSets, RawFlow, Standing};
pub use identity::{Identity, RawIdentity};
pub use models::{MAX_TASK_STEPS, Model, ModelKey, ModelStyle, RawModel, RawTasks, Tasks};
pub use raw::*;
pub use server::{ApiKey, ServerConfig};
pub use store::{DatabaseUrl, StoreLocation};
pub use tenant::{
    Narrowed, TenantApprovals, TenantFlow, TenantIdentity, TenantPolicy, TenantTools,
};

use checks::{jwt_config, public_url, publish_dir, webhook};
pub use workers::WorkerNetworks;

/// Default listen address: loopback only, so nothing is exposed by accident.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default state directory, relative to the working directory.
pub const DEFAULT_DATA_DIR: &str = "./airlock-data";

/// A browser worker on another machine.
#[derive(Clone)]
pub struct RemoteWorker {
    /// `host:port`.
    pub address: String,
    /// The name its certificate must carry.
    pub server_name: String,
    /// The CA its certificate must chain to.
    pub ca_file: PathBuf,
    /// The shared worker token.
    pub token: ApiKey,
}

impl std::fmt::Debug for RemoteWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteWorker")
            .field("address", &self.address)
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// Reads a worker token: the file's first line, else `AIRLOCK_WORKER_TOKEN`; at
/// least 32 characters (it is the only thing between a network and the browsers).
pub fn worker_token(file: Option<&Path>, env: &dyn EnvSource) -> Result<ApiKey, Error> {
    let (token, key) = match file {
        Some(path) => (
            std::fs::read_to_string(path)
                .map_err(|e| Error::Invalid {
                    key: "workers.token_file".to_owned(),
                    message: format!("cannot read `{}`: {e}", path.display()),
                })?
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned(),
            "workers.token_file",
        ),
        None => (
            env.get(vars::WORKER_TOKEN).unwrap_or_default(),
            vars::WORKER_TOKEN,
        ),
    };
    if token.len() < 32 {
        return Err(Error::Invalid {
            key: key.to_owned(),
            message: "a worker token must be at least 32 characters (`openssl rand -hex 32`)"
                .to_owned(),
        });
    }
    Ok(ApiKey(token))
}

/// Validated `[audit]`.
#[derive(Debug, Clone, Default)]
pub struct AuditConfig {
    /// Where signed checkpoints are also appended (absolute, outside the data dir).
    pub publish_dir: Option<PathBuf>,
    /// The checkpoint signing key every replica shares (absolute); `None`: the data
    /// dir's own.
    pub key_file: Option<PathBuf>,
}

/// What a session keeps of its steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecordMode {
    /// Nothing.
    Off,
    /// The last steps' screenshots, in memory, dropped when the session closes.
    #[default]
    Transient,
    /// A screenshot of every state-changing step, stored under the data dir, its
    /// SHA-256 in the step's audit event.
    Audit,
}

impl RecordMode {
    /// Parses `off`, `transient` or `audit`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "off" => Some(Self::Off),
            "transient" => Some(Self::Transient),
            "audit" => Some(Self::Audit),
            _ => None,
        }
    }

    /// The name it is written as.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Transient => "transient",
            Self::Audit => "audit",
        }
    }
}

/// Validated `[recording]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordingConfig {
    /// The mode of sessions that do not ask for one.
    pub mode: RecordMode,
    /// How long stored screenshots are kept.
    pub retention: Duration,
}

impl Default for RecordingConfig {
    fn default() -> Self {
        RecordingConfig {
            mode: RecordMode::default(),
            retention: Duration::from_secs(30 * 86_400),
        }
    }
}

/// Which MCP tools Airlock offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolProfile {
    /// Every `browser_*` tool.
    #[default]
    Browser,
    /// The single `browser-shell` tool for clients built around the agent-browser CLI.
    BrowserShell,
}

/// Validated `[server.jwt]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtConfig {
    /// The required `iss`.
    pub issuer: String,
    /// The required `aud`.
    pub audience: String,
    /// Where the verification keys come from.
    pub keys: JwtKeys,
    /// Clock skew tolerated.
    pub leeway: Duration,
    /// Tokens may name tenants that were never created.
    pub any_tenant: bool,
}

/// Where JWT verification keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwtKeys {
    /// A shared HS256 secret.
    Hs256(ApiKey),
    /// A JWKS file (read by the binary at start-up).
    JwksFile(PathBuf),
}

/// Validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where Airlock keeps its state.
    pub data_dir: PathBuf,
    /// Server settings.
    pub server: ServerConfig,
    /// Browser settings.
    pub browser: BrowserConfig,
    /// Egress policy, validated.
    pub policy: Policy,
    /// Session limits.
    pub sessions: SessionsConfig,
    /// Which tools MCP offers.
    pub tool_profile: ToolProfile,
    /// Whether `browser_evaluate` is offered (`[tools] evaluate`).
    pub evaluate: bool,
    /// Where uploads come from (`[tools] upload_dir`); none when unset.
    pub upload_dir: Option<PathBuf>,
    /// Where downloads are kept (`[tools] download_dir`, absolute); refused when
    /// unset.
    pub download_dir: Option<PathBuf>,
    /// Risk rules and approvals.
    pub approvals: Approvals,
    /// Session recording.
    pub recording: RecordingConfig,
    /// The audit log's checkpoints.
    pub audit: AuditConfig,
    /// The user the local worker runs as when started as root (`[worker] user`).
    pub worker_user: String,
    /// The user the local worker's Chromium runs as when started as root
    /// (`[worker] browser_user`): another than the worker's, so a compromised
    /// browser cannot signal the worker, reach its files or take its user.
    pub browser_user: String,
    /// Browser workers on other machines (`[[workers]]`); when any is listed,
    /// sessions open on them instead of a local worker.
    pub workers: Vec<RemoteWorker>,
    /// Where the shared state lives (`[store] url`, `AIRLOCK_DATABASE_URL`).
    pub store: StoreLocation,
    /// The role that owns the store's tables, when it is not the serving role
    /// (`[store] owner_url`, `AIRLOCK_DATABASE_OWNER_URL`): it migrates and grants;
    /// the serving role then cannot rewrite audit history.
    pub store_owner: Option<DatabaseUrl>,
    /// Workers may register themselves (`[registration]`): how to reach them.
    pub registration: Option<Registration>,
    /// The operator's models and the bounds of server-side tasks.
    pub tasks: Tasks,
    /// Origin sets and checks on data carried between sites (`[flow]`).
    pub flow: Flow,
    /// Web Bot Auth signing (`[identity]`).
    pub identity: Identity,
}

/// How to reach browser workers that register themselves: one certificate name and
/// CA for all of them, and the deployment's worker token (which they present to
/// register).
#[derive(Clone)]
pub struct Registration {
    /// The name every registered worker's certificate carries.
    pub server_name: String,
    /// The CA their certificates must chain to.
    pub ca_file: PathBuf,
    /// The shared worker token.
    pub token: ApiKey,
    /// Where a registered worker may be (`allow_addresses`; none listed: anywhere
    /// but loopback).
    pub allow: WorkerNetworks,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("server_name", &self.server_name)
            .field("ca_file", &self.ca_file)
            .field("allow", &self.allow)
            .finish_non_exhaustive()
    }
}

/// Validated `[approvals]`.
#[derive(Debug, Clone)]
pub struct Approvals {
    /// The rules in force (the operator's, then the defaults).
    pub rules: Rules,
    /// How long a call waits for a decision.
    pub timeout: Duration,
    /// Where requests and decisions are announced, if anywhere.
    pub webhook: Option<Webhook>,
    /// Whether a held call is also put to the agent's own client (elicitation).
    pub in_client: bool,
}

/// An approval webhook: an `http(s)` URL and the key its bodies are signed with.
#[derive(Debug, Clone)]
pub struct Webhook {
    /// Where to POST.
    pub url: url::Url,
    /// HMAC-SHA256 key.
    pub secret: ApiKey,
}

/// How long a call waits for a decision unless `approvals.timeout_secs` says.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(60);

/// Validated `[sessions]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionsConfig {
    /// Idle time after which a browser session is closed.
    pub idle_ttl: Duration,
    /// Untended time after which an operator's hold is released.
    pub hold_idle: Duration,
    /// Context sessions kept ready ahead of demand.
    pub warm: usize,
    /// A browser session open this long is closed, busy or not.
    pub max_lifetime: Option<Duration>,
    /// Most actions one browser session may run.
    pub action_budget: Option<u64>,
    /// Most live leased sessions per user of a tenant.
    pub max_per_user: Option<usize>,
    /// Most live sessions per tenant.
    pub max_per_tenant: TenantCap,
    /// Most live sessions in the gateway; `None`: derived from the machine.
    pub max_total: Option<usize>,
    /// Memory the machine must have available for a new session, in MiB (0: none).
    pub min_free_memory_mb: u64,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig {
            idle_ttl: Duration::from_secs(600),
            hold_idle: Duration::from_secs(300),
            warm: 1,
            max_lifetime: None,
            action_budget: Some(100),
            max_per_user: Some(3),
            max_per_tenant: TenantCap::Fair,
            max_total: None,
            min_free_memory_mb: 512,
        }
    }
}

/// How many live sessions one tenant may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TenantCap {
    /// Half the global cap (at least one): no tenant can take every session.
    #[default]
    Fair,
    /// No cap but the global one (`max_per_tenant = 0`).
    Unlimited,
    /// This many.
    At(usize),
}

impl TenantCap {
    /// The cap under a global cap of `total`.
    pub fn under(self, total: Option<usize>) -> Option<usize> {
        match self {
            TenantCap::Fair => total.map(|t| t.div_ceil(2).max(1)),
            TenantCap::Unlimited => None,
            TenantCap::At(n) => Some(n),
        }
    }
}

/// How a session is isolated from the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// A fresh browser context in a shared Chromium: own cookies, storage and cache.
    #[default]
    Context,
    /// A dedicated Chromium process with its own temporary profile.
    Process,
}

impl Isolation {
    /// Parses `context` or `process`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "context" => Some(Self::Context),
            "process" => Some(Self::Process),
            _ => None,
        }
    }
}

/// Where browser sessions run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerMode {
    /// A worker process of its own, started by the gateway on a unix socket; as an
    /// unprivileged user when the gateway runs as root.
    #[default]
    Local,
    /// In the gateway's own process (development, tests).
    Embedded,
}

/// The user a local worker runs as when `[worker] user` is not set: one of its own
/// (made, as a system user without a home or a shell, by a root gateway that finds
/// none), never `nobody`, which whatever else on the host may run as.
pub const DEFAULT_WORKER_USER: &str = "airlock-worker";

/// The user a local worker's Chromium runs as when `[worker] browser_user` is not
/// set (made like [`DEFAULT_WORKER_USER`]).
pub const DEFAULT_BROWSER_USER: &str = "airlock-browser";

/// Validated `[browser]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct BrowserConfig {
    /// Explicit Chromium path (`AIRLOCK_CHROME` beats the file).
    pub chrome: Option<PathBuf>,
    /// Prefer `chromium-headless-shell` when it is installed.
    pub headless_shell: bool,
    /// Default isolation.
    pub isolation: Isolation,
    /// Budget of one action.
    pub action_timeout: Duration,
    /// Budget of one navigation.
    pub navigation_timeout: Duration,
    /// Viewport in CSS pixels.
    pub viewport: (u32, u32),
    /// Memory bound of each Chromium in bytes, `None` for none.
    pub memory_limit: Option<u64>,
    /// Where sessions run.
    pub worker: WorkerMode,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            chrome: None,
            headless_shell: true,
            isolation: Isolation::Context,
            action_timeout: Duration::from_secs(10),
            navigation_timeout: Duration::from_secs(30),
            viewport: (1280, 720),
            memory_limit: Some(4096 << 20),
            worker: WorkerMode::Local,
        }
    }
}

// A TOML error as an operator can act on it: the dotted key at fault (found from the
// error's span: the key on that line, under the last table header before it) and,
// for a value of the wrong type, an example of the right one.
fn explain_parse_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim_end().to_owned();
    let Some(span) = error.span() else {
        return message;
    };
    let before = &text[..span.start.min(text.len())];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |i| line_start + i);
    let line = text[line_start..line_end].trim();
    let Some((key, _)) = line.split_once('=') else {
        return message;
    };
    let key = key.trim().trim_matches('"');
    let table = before[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && l.ends_with(']'))
        .map(|l| l.trim_matches(|c| c == '[' || c == ']').trim());
    let path = match table {
        Some(table) => format!("{table}.{key}"),
        None => key.to_owned(),
    };
    let example = if message.contains("expected u") || message.contains("expected i") {
        Some("10")
    } else if message.contains("expected a boolean") {
        Some("true")
    } else if message.contains("expected a sequence") {
        Some("[\"…\"]")
    } else if message.contains("expected a string") {
        Some("\"…\"")
    } else {
        None
    };
    match example {
        Some(example) => format!("{path}: {message} (for example `{key} = {example}`)"),
        None => format!("{path}: {message}"),
    }
}

impl Config {
    /// Every secret the configuration gives Airlock itself (never a vault secret), by
    /// what it is: API keys, the webhook's signing key, model API keys, worker tokens,
    /// a JWT secret. Nothing a page or a model makes Airlock repeat may carry one.
    pub fn own_secrets(&self) -> Vec<(&'static str, &str)> {
        let mut out = Vec::new();
        for key in [&self.server.api_key, &self.server.admin_key]
            .into_iter()
            .flatten()
        {
            out.push(("api-key", key.expose()));
        }
        if let Some(hook) = &self.approvals.webhook {
            out.push(("webhook-secret", hook.secret.expose()));
        }
        for model in &self.tasks.models {
            if let ModelKey::Value(key) = &model.key {
                out.push(("model-key", key.expose()));
            }
        }
        for worker in &self.workers {
            out.push(("worker-token", worker.token.expose()));
        }
        if let Some(registration) = &self.registration {
            out.push(("worker-token", registration.token.expose()));
        }
        if let Some(JwtConfig {
            keys: JwtKeys::Hs256(secret),
            ..
        }) = &self.server.jwt
        {
            out.push(("jwt-secret", secret.expose()));
        }
        out
    }

    /// Layers defaults < `file` (path and text, if any) < environment, then validates.
    pub fn load(file: Option<(&Path, &str)>, env: &dyn EnvSource) -> Result<Config> {
        let raw = match file {
            Some((path, text)) => toml::from_str::<RawConfig>(text).map_err(|e| Error::Parse {
                path: path.to_owned(),
                message: explain_parse_error(text, &e),
            })?,
            None => RawConfig::default(),
        };
        Self::from_raw(raw, env)
    }

    /// Validates a raw configuration, letting the environment override it.
    pub fn from_raw(raw: RawConfig, env: &dyn EnvSource) -> Result<Config> {
        let data_dir = env
            .get(vars::DATA_DIR)
            .map(PathBuf::from)
            .or(raw.data_dir)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));

        let (listen_key, listen_text) = match env.get(vars::LISTEN) {
            Some(v) => (vars::LISTEN, v),
            None => (
                "server.listen",
                raw.server
                    .listen
                    .unwrap_or_else(|| DEFAULT_LISTEN.to_owned()),
            ),
        };
        let listen = listen_text.parse().map_err(|_| Error::Invalid {
            key: listen_key.to_owned(),
            message: format!("`{listen_text}` is not a host:port socket address"),
        })?;

        let defaults = BrowserConfig::default();
        let b = raw.browser;
        let isolation = match b.isolation {
            None => defaults.isolation,
            Some(text) => Isolation::parse(&text).ok_or_else(|| Error::Invalid {
                key: "browser.isolation".to_owned(),
                message: format!("`{text}` is not one of `context`, `process`"),
            })?,
        };
        let ms = |key: &str, value: Option<u64>, default: Duration| -> Result<Duration> {
            match value {
                None => Ok(default),
                Some(0) => Err(Error::Invalid {
                    key: key.to_owned(),
                    message: "must be greater than 0".to_owned(),
                }),
                Some(v) => Ok(Duration::from_millis(v)),
            }
        };
        let dim = |key: &str, value: Option<u32>, default: u32| -> Result<u32> {
            match value {
                None => Ok(default),
                Some(v @ 100..=8192) => Ok(v),
                Some(v) => Err(Error::Invalid {
                    key: key.to_owned(),
                    message: format!("{v} is outside 100..=8192"),
                }),
            }
        };
        let browser = BrowserConfig {
            chrome: env.get(vars::CHROME).map(PathBuf::from).or(b.chrome),
            headless_shell: b.headless_shell.unwrap_or(defaults.headless_shell),
            isolation,
            action_timeout: ms(
                "browser.action_timeout_ms",
                b.action_timeout_ms,
                defaults.action_timeout,
            )?,
            navigation_timeout: ms(
                "browser.navigation_timeout_ms",
                b.navigation_timeout_ms,
                defaults.navigation_timeout,
            )?,
            viewport: (
                dim(
                    "browser.viewport_width",
                    b.viewport_width,
                    defaults.viewport.0,
                )?,
                dim(
                    "browser.viewport_height",
                    b.viewport_height,
                    defaults.viewport.1,
                )?,
            ),
            memory_limit: match b.memory_limit_mb {
                None => defaults.memory_limit,
                Some(0) => None,
                Some(mb @ 256..=1_048_576) => Some(mb << 20),
                Some(mb) => {
                    return Err(Error::Invalid {
                        key: "browser.memory_limit_mb".to_owned(),
                        message: format!("{mb} is outside 256..=1048576 (or 0 for no bound)"),
                    });
                }
            },
            worker: match b.worker.as_deref() {
                None | Some("local") => WorkerMode::Local,
                Some("embedded") => WorkerMode::Embedded,
                Some(other) => {
                    return Err(Error::Invalid {
                        key: "browser.worker".to_owned(),
                        message: format!("`{other}` is not `local` or `embedded`"),
                    });
                }
            },
        };

        let api_key = env
            .get(vars::API_KEY)
            .or(raw.server.api_key)
            .filter(|k| !k.is_empty())
            .map(ApiKey);
        if let Some(key) = &api_key
            && key.0.len() < 16
        {
            return Err(Error::Invalid {
                key: "server.api_key".to_owned(),
                message: "must be at least 16 characters".to_owned(),
            });
        }
        let admin_key = env
            .get(vars::ADMIN_KEY)
            .or(raw.server.admin_key)
            .filter(|k| !k.is_empty())
            .map(ApiKey);
        if let Some(key) = &admin_key {
            if key.0.len() < 16 {
                return Err(Error::Invalid {
                    key: "server.admin_key".to_owned(),
                    message: "must be at least 16 characters".to_owned(),
                });
            }
            // An agent holding the approver's key could approve its own calls.
            if api_key.as_ref() == Some(key) {
                return Err(Error::Invalid {
                    key: "server.admin_key".to_owned(),
                    message: "must differ from server.api_key: the agent's key must never approve"
                        .to_owned(),
                });
            }
        }
        let public_url = match env
            .get(vars::PUBLIC_URL)
            .or(raw.server.public_url.clone())
            .filter(|u| !u.is_empty())
        {
            None => None,
            Some(text) => Some(public_url(&text)?),
        };
        let jwt_secret = env.get(vars::JWT_SECRET).filter(|k| !k.is_empty());
        let jwt = match (raw.server.jwt.clone(), jwt_secret) {
            (None, None) => None,
            (raw_jwt, secret) => Some(jwt_config(raw_jwt.unwrap_or_default(), secret)?),
        };
        let role_set = raw.server.role.is_some();
        let role = match raw.server.role.as_deref() {
            None => Role::default(),
            Some(text) => Role::parse(text).ok_or_else(|| Error::Invalid {
                key: "server.role".to_owned(),
                message: format!("`{text}` is not one of observe, act, operate, admin"),
            })?,
        };
        let sessions = SessionsConfig {
            idle_ttl: ms(
                "sessions.idle_ttl_secs",
                raw.sessions.idle_ttl_secs.map(|s| s.saturating_mul(1000)),
                SessionsConfig::default().idle_ttl,
            )?,
            hold_idle: ms(
                "sessions.hold_idle_secs",
                raw.sessions.hold_idle_secs.map(|s| s.saturating_mul(1000)),
                SessionsConfig::default().hold_idle,
            )?,
            warm: match raw.sessions.warm {
                None => SessionsConfig::default().warm,
                Some(n @ 0..=16) => n,
                Some(n) => {
                    return Err(Error::Invalid {
                        key: "sessions.warm".to_owned(),
                        message: format!("{n} is outside 0..=16"),
                    });
                }
            },
            // 0 means "no limit" for each of these, as the file documents.
            max_lifetime: raw
                .sessions
                .max_lifetime_secs
                .filter(|s| *s > 0)
                .map(Duration::from_secs),
            action_budget: match raw.sessions.action_budget {
                None => SessionsConfig::default().action_budget,
                Some(0) => None,
                Some(n) => Some(n),
            },
            max_per_user: match raw.sessions.max_per_user {
                None => SessionsConfig::default().max_per_user,
                Some(0) => None,
                Some(n) => Some(n),
            },
            max_per_tenant: match raw.sessions.max_per_tenant {
                None => TenantCap::Fair,
                Some(0) => TenantCap::Unlimited,
                Some(n) => TenantCap::At(n),
            },
            max_total: raw.sessions.max_total.filter(|n| *n > 0),
            min_free_memory_mb: raw
                .sessions
                .min_free_memory_mb
                .unwrap_or(SessionsConfig::default().min_free_memory_mb),
        };

        let evaluate = raw.tools.evaluate.unwrap_or(false);
        // Absolute: Chromium writes downloads to the path as given.
        let download_dir =
            match raw.tools.download_dir {
                None => None,
                Some(dir) => Some(dir.canonicalize().ok().filter(|d| d.is_dir()).ok_or_else(
                    || Error::Invalid {
                        key: "tools.download_dir".to_owned(),
                        message: format!("{} is not a directory", dir.display()),
                    },
                )?),
            };
        let upload_dir = match raw.tools.upload_dir {
            None => None,
            Some(dir) if dir.is_dir() => Some(dir),
            Some(dir) => {
                return Err(Error::Invalid {
                    key: "tools.upload_dir".to_owned(),
                    message: format!("{} is not a directory", dir.display()),
                });
            }
        };
        let tool_profile = match raw.tools.profile.as_deref() {
            None | Some("browser") => ToolProfile::Browser,
            Some("browser-shell") => ToolProfile::BrowserShell,
            Some(other) => {
                return Err(Error::Invalid {
                    key: "tools.profile".to_owned(),
                    message: format!("`{other}` is not one of `browser`, `browser-shell`"),
                });
            }
        };

        // The environment adds to the file's private allowances; an entry it added
        // that is wrong is named by the variable.
        let from_file = raw.policy.allow_private.len();
        let mut policy_config = raw.policy;
        if let Some(extra) = env.get(vars::ALLOW_PRIVATE) {
            policy_config.allow_private.extend(
                extra
                    .split(',')
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .map(str::to_owned),
            );
        }
        let policy = Policy::from_config(&policy_config).map_err(|e| {
            let from_env = e
                .key
                .strip_prefix("policy.allow_private[")
                .and_then(|rest| rest.strip_suffix(']'))
                .and_then(|i| i.parse::<usize>().ok())
                .is_some_and(|i| i >= from_file);
            Error::Invalid {
                key: if from_env {
                    vars::ALLOW_PRIVATE.to_owned()
                } else {
                    e.key
                },
                message: e.message,
            }
        })?;

        let approvals = Approvals {
            rules: Rules::from_config(&raw.approvals).map_err(|e| Error::Invalid {
                key: e.key,
                message: e.why,
            })?,
            timeout: match raw.approvals.timeout_secs {
                None => DEFAULT_APPROVAL_TIMEOUT,
                Some(secs @ 1..=3_600) => Duration::from_secs(secs),
                Some(secs) => {
                    return Err(Error::Invalid {
                        key: "approvals.timeout_secs".to_owned(),
                        message: format!("{secs} is outside 1..=3600"),
                    });
                }
            },
            webhook: webhook(&raw.approvals, env.get(vars::WEBHOOK_SECRET))?,
            in_client: raw.approvals.in_client.unwrap_or(false),
        };

        let flow = flow::validate(&raw.flow)?;
        let identity = identity::validate(&raw.identity, public_url.as_deref())?;

        let recording = RecordingConfig {
            mode: match raw.recording.mode.as_deref() {
                None => RecordMode::default(),
                Some(text) => RecordMode::parse(text).ok_or_else(|| Error::Invalid {
                    key: "recording.mode".to_owned(),
                    message: format!("`{text}` is not one of off, transient, audit"),
                })?,
            },
            retention: match raw.recording.retention_days {
                None => RecordingConfig::default().retention,
                Some(days @ 1..=3_650) => Duration::from_secs(days * 86_400),
                Some(days) => {
                    return Err(Error::Invalid {
                        key: "recording.retention_days".to_owned(),
                        message: format!("{days} is outside 1..=3650"),
                    });
                }
            },
        };

        let audit = AuditConfig {
            publish_dir: match raw.audit.publish_dir {
                None => None,
                Some(dir) => Some(publish_dir(&dir, &data_dir)?),
            },
            key_file: match raw.audit.key_file {
                Some(path) if !path.is_absolute() => {
                    return Err(Error::Invalid {
                        key: "audit.key_file".to_owned(),
                        message: format!("{} is not an absolute path", path.display()),
                    });
                }
                other => other,
            },
        };

        let mut workers = Vec::with_capacity(raw.workers.len());
        for w in &raw.workers {
            let host = w
                .address
                .rsplit_once(':')
                .filter(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
                .map(|(host, _)| {
                    host.trim_start_matches('[')
                        .trim_end_matches(']')
                        .to_owned()
                })
                .ok_or_else(|| Error::Invalid {
                    key: "workers.address".to_owned(),
                    message: format!("`{}` is not host:port", w.address),
                })?;
            workers.push(RemoteWorker {
                address: w.address.clone(),
                server_name: w.server_name.clone().unwrap_or(host),
                ca_file: w.ca_file.clone(),
                token: worker_token(w.token_file.as_deref(), env)?,
            });
        }

        let registration = match &raw.registration {
            None => None,
            Some(r) if r.server_name.trim().is_empty() => {
                return Err(Error::Invalid {
                    key: "registration.server_name".to_owned(),
                    message: "the name every registered worker's certificate carries".to_owned(),
                });
            }
            Some(r) => Some(Registration {
                server_name: r.server_name.clone(),
                ca_file: r.ca_file.clone(),
                token: worker_token(r.token_file.as_deref(), env)?,
                allow: WorkerNetworks(workers::networks(&r.allow_addresses)?),
            }),
        };

        let store = match env
            .get(vars::DATABASE_URL)
            .or(raw.store.url)
            .filter(|u| !u.is_empty())
        {
            None => StoreLocation::Sqlite,
            Some(text) => {
                StoreLocation::Postgres(DatabaseUrl::parse(&text).map_err(|message| {
                    Error::Invalid {
                        key: "store.url".to_owned(),
                        message,
                    }
                })?)
            }
        };

        let store_owner = store::owner(env, raw.store.owner_url, &store)?;

        let tasks = models::tasks(&raw.models, &raw.tasks, env)?;
        Ok(Config {
            data_dir,
            server: ServerConfig {
                listen,
                api_key,
                admin_key,
                allowed_origins: raw.server.allowed_origins,
                public_url,
                role,
                role_set,
                jwt,
                trusted_proxies: server::trusted_proxies(&raw.server.trusted_proxies)?,
            },
            browser,
            policy,
            sessions,
            tool_profile,
            evaluate,
            upload_dir,
            download_dir,
            approvals,
            recording,
            audit,
            worker_user: raw
                .worker
                .user
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| DEFAULT_WORKER_USER.to_owned()),
            browser_user: raw
                .worker
                .browser_user
                .filter(|u| !u.is_empty())
                .unwrap_or_else(|| DEFAULT_BROWSER_USER.to_owned()),
            workers,
            store,
            store_owner,
            registration,
            tasks,
            flow,
            identity,
        })
    }
}

#[cfg(test)]
mod tests;
