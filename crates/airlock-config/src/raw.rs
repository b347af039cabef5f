//! The configuration file as written: TOML sections deserialised as they are, before
//! `Config::from_raw` validates them and fills in defaults.

use serde::Deserialize;

use super::*;

/// `airlock.toml`, exactly as written (every field optional).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// Where Airlock keeps its state.
    pub data_dir: Option<PathBuf>,
    /// `[server]`.
    #[serde(default)]
    pub server: RawServer,
    /// `[browser]`.
    #[serde(default)]
    pub browser: RawBrowser,
    /// `[policy]`.
    #[serde(default)]
    pub policy: PolicyConfig,
    /// `[sessions]`.
    #[serde(default)]
    pub sessions: RawSessions,
    /// `[tools]`.
    #[serde(default)]
    pub tools: RawTools,
    /// `[approvals]`: risk rules and how long a call waits for a decision.
    #[serde(default)]
    pub approvals: ApprovalsConfig,
    /// `[recording]`: what sessions keep of their steps.
    #[serde(default)]
    pub recording: RawRecording,
    /// `[audit]`: where signed checkpoints are published.
    #[serde(default)]
    pub audit: RawAudit,
    /// `[worker]`: the local browser worker process.
    #[serde(default)]
    pub worker: RawWorker,
    /// `[[workers]]`: browser workers on other machines.
    #[serde(default)]
    pub workers: Vec<RawRemoteWorker>,
    /// `[store]`: where the shared state lives.
    #[serde(default)]
    pub store: RawStore,
    /// `[registration]`: browser workers that register themselves.
    pub registration: Option<RawRegistration>,
    /// `[[models]]`: the operator's models for server-side tasks.
    #[serde(default)]
    pub models: Vec<RawModel>,
    /// `[tasks]`: the bounds of every server-side task.
    #[serde(default)]
    pub tasks: RawTasks,
    /// `[flow]`: origin sets and checks on data carried between sites.
    #[serde(default)]
    pub flow: RawFlow,
    /// `[identity]`: Web Bot Auth signing of sessions' requests.
    #[serde(default)]
    pub identity: crate::identity::RawIdentity,
}

/// `[registration]` as written: how to reach workers that register themselves
/// (`airlock worker --register`), whose addresses no config lists.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRegistration {
    /// The name every registered worker's certificate carries.
    pub server_name: String,
    /// PEM CA certificate(s) their certificates must chain to.
    pub ca_file: PathBuf,
    /// A file holding the worker token (else `AIRLOCK_WORKER_TOKEN`).
    pub token_file: Option<PathBuf>,
    /// Networks (CIDR or one IP) a registered worker's address must resolve into;
    /// empty: any address but loopback. Link-local and cloud metadata addresses are
    /// never a worker's.
    #[serde(default)]
    pub allow_addresses: Vec<String>,
}

/// `[store]` as written.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStore {
    /// `postgres://…`; unset: SQLite in the data dir.
    pub url: Option<String>,
    /// `postgres://…` of the role owning the tables (runs the migrations).
    pub owner_url: Option<String>,
}

// The URL may carry a password: never printed.
impl std::fmt::Debug for RawStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawStore")
            .field("url", &self.url.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

/// One `[[workers]]` entry as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRemoteWorker {
    /// `host:port` of its `airlock worker --listen`.
    pub address: String,
    /// The name its certificate carries (default: the address's host).
    pub server_name: Option<String>,
    /// PEM CA certificate(s) its certificate must chain to.
    pub ca_file: PathBuf,
    /// A file holding the worker token (else `AIRLOCK_WORKER_TOKEN`).
    pub token_file: Option<PathBuf>,
    /// Networks (CIDR or one IP) a registered worker's address must resolve into;
    /// empty: any address but loopback. Link-local and cloud metadata addresses are
    /// never a worker's.
    #[serde(default)]
    pub allow_addresses: Vec<String>,
}

/// `[worker]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorker {
    /// The user the local worker runs as when Airlock is started as root
    /// (default `airlock-worker`, made if missing).
    pub user: Option<String>,
    /// The user the local worker's Chromium runs as, apart from the worker that
    /// holds the secrets (default `airlock-browser`, made if missing).
    pub browser_user: Option<String>,
}

/// `[audit]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAudit {
    /// A directory outside the data dir, ideally on another volume or machine, where
    /// every signed checkpoint is also appended as it is signed.
    pub publish_dir: Option<PathBuf>,
    /// The checkpoint signing key (base64 of 32 bytes) every replica shares; unset:
    /// `audit.key` in the data dir, made at first start.
    pub key_file: Option<PathBuf>,
}

/// `[recording]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRecording {
    /// `off`, `transient` (default) or `audit`: what a session keeps unless it asks.
    pub mode: Option<String>,
    /// Days an `audit` recording's screenshots are kept (default 30).
    pub retention_days: Option<u64>,
}

/// `[tools]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTools {
    /// `browser` (default: every browser_* tool) or `browser-shell` (one tool).
    pub profile: Option<String>,
    /// Offer `browser_evaluate`, which runs an agent's JavaScript in the page
    /// (default off).
    pub evaluate: Option<bool>,
    /// Offer `browser_file_upload`, with files from this directory only (default:
    /// no uploads).
    pub upload_dir: Option<PathBuf>,
    /// Keep downloads here, under generated names (default: downloads refused).
    pub download_dir: Option<PathBuf>,
}

/// `[server]` as written.
#[derive(Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    /// `host:port` to listen on.
    pub listen: Option<String>,
    /// Bearer token required on `/mcp` (`AIRLOCK_API_KEY` beats it).
    pub api_key: Option<String>,
    /// Bearer token of approvers on `/api/v1` (`AIRLOCK_ADMIN_KEY` beats it).
    pub admin_key: Option<String>,
    /// Extra `Origin` values allowed to call `/mcp` from a browser.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// The URL clients reach this server at (`https://airlock.example.com`), which
    /// the `mcp_url`s Airlock hands out start with (`AIRLOCK_PUBLIC_URL` beats it).
    pub public_url: Option<String>,
    /// Role of callers (the API key holder, the stdio user): `observe`, `act`
    /// (default over HTTP), `operate` (may use stored credentials without a grant;
    /// the default of `airlock mcp`, whose user is the operator of the data dir), `admin`.
    pub role: Option<String>,
    /// `[server.jwt]`: bearer JWTs of service callers.
    pub jwt: Option<RawJwt>,
    /// Proxies (addresses or networks) in front of Airlock whose `X-Forwarded-For`
    /// names the client.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
}

/// `[server.jwt]` as written.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawJwt {
    /// The `iss` every token must carry.
    pub issuer: Option<String>,
    /// The `aud` every token must carry.
    pub audience: Option<String>,
    /// A shared HS256 secret (`AIRLOCK_JWT_SECRET` beats it).
    pub hs256_secret: Option<String>,
    /// A JWKS file of the issuer's public keys (RS256, ES256, EdDSA).
    pub jwks_file: Option<PathBuf>,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds (default 60, at most 300).
    pub leeway_secs: Option<u64>,
    /// Accept tokens naming a tenant `airlock tenant create` never made (default
    /// false: such a token is refused, so no session lives in a tenant no one listed).
    pub any_tenant: Option<bool>,
}

impl std::fmt::Debug for RawJwt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawJwt")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("jwks_file", &self.jwks_file)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for RawServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawServer")
            .field("listen", &self.listen)
            .field("allowed_origins", &self.allowed_origins)
            .field("public_url", &self.public_url)
            .field("role", &self.role)
            .finish()
    }
}

/// `[sessions]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSessions {
    /// Close a browser session after this many idle seconds (default 600).
    pub idle_ttl_secs: Option<u64>,
    /// Release an operator's console hold on a session after this many seconds
    /// without their input or live view (default 300).
    pub hold_idle_secs: Option<u64>,
    /// Context sessions kept ready ahead of demand (default 1; 0 to 16).
    pub warm: Option<usize>,
    /// Close a browser session this many seconds after it opened, busy or not
    /// (default 0: no limit).
    pub max_lifetime_secs: Option<u64>,
    /// Most actions one browser session may run (default 100; 0: unlimited).
    pub action_budget: Option<u64>,
    /// Most live leased sessions per user of a tenant (default 3; 0: no cap).
    pub max_per_user: Option<usize>,
    /// Most live sessions per tenant (default: half the global cap, so one tenant
    /// cannot take every session; 0: no cap but the global one).
    pub max_per_tenant: Option<usize>,
    /// Most live sessions in this gateway (default 0: derived from the machine's
    /// memory and `[browser] isolation`; `airlock doctor` prints it).
    pub max_total: Option<usize>,
    /// Refuse new sessions while the machine has less memory available than this,
    /// in MiB (default 512; 0: never).
    pub min_free_memory_mb: Option<u64>,
}

/// `[browser]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBrowser {
    /// Path to the Chromium binary; otherwise it is searched on PATH.
    pub chrome: Option<PathBuf>,
    /// Prefer Debian's `chromium-headless-shell` when installed (default true).
    pub headless_shell: Option<bool>,
    /// Default isolation for new sessions: `context` or `process`.
    pub isolation: Option<String>,
    /// Time budget of one action, in milliseconds.
    pub action_timeout_ms: Option<u64>,
    /// Time budget of one navigation, in milliseconds.
    pub navigation_timeout_ms: Option<u64>,
    /// Viewport width in CSS pixels.
    pub viewport_width: Option<u32>,
    /// Viewport height in CSS pixels.
    pub viewport_height: Option<u32>,
    /// Memory bound of each Chromium and all its processes, in MiB (default 4096;
    /// 0 for none). Kept by a cgroup where the host allows one.
    pub memory_limit_mb: Option<u64>,
    /// Where sessions run: `local` (a worker process of its own, unprivileged;
    /// the default) or `embedded` (in the gateway's process).
    pub worker: Option<String>,
}
