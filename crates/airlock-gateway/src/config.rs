//! The engine's settings, as the binary (or a test) gives them.

use std::time::Duration;

use airlock_core::Role;
use airlock_policy::Policy;
use airlock_store::Store;

use crate::audit::Checkpoints;
use crate::credentials::CredentialSource;

/// Engine settings.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// A browser session idle this long is closed.
    pub idle_ttl: Duration,
    /// An operator's hold on a session nobody tended this long (no input, no live
    /// view open) is released, handing the page back to its agent.
    pub hold_idle: Duration,
    /// A browser session open this long is closed, busy or not (`None`: no limit).
    pub max_lifetime: Option<Duration>,
    /// Most actions one browser session may run (`None`: no limit).
    pub action_budget: Option<u64>,
    /// Caps on live sessions, and the memory a new one needs (default: none).
    pub caps: Caps,
    /// What the browser may reach.
    pub policy: Policy,
    /// Stored credentials and who may use them.
    pub credentials: CredentialSource,
    /// Context sessions kept open ahead of demand, so `browser_session_open` (and an
    /// agent's first browser call) need not wait for a context and tab. 0 opens every
    /// session on demand, and Chromium only on the first one.
    pub warm_sessions: usize,
    /// The store the binary opened (the vault holds another handle to it); `None`
    /// runs without persistence (tests, stdio without a data dir).
    pub store: Option<Store>,
    /// How audit checkpoints are signed and kept (needs `store`); `None`: none.
    pub checkpoints: Option<Checkpoints>,
    /// Risk rules (empty: every call runs).
    pub rules: airlock_risk::Rules,
    /// How long a held call waits for a decision.
    pub approval_timeout: Duration,
    /// What sessions that do not ask keep of their steps.
    pub recording: airlock_config::RecordMode,
    /// Where `audit` recordings are stored; `None`: that mode is refused.
    pub recordings_dir: Option<std::path::PathBuf>,
    /// How long stored recordings are kept.
    pub recording_retention: Duration,
    /// Whether a held call may also be put to the person at the agent's own client
    /// (MCP elicitation), when the client can ask. Off by default: a headless
    /// client could answer for itself.
    pub in_client_approval: bool,
    /// Whether `browser_evaluate` runs agents' code in pages (`[tools] evaluate`).
    pub evaluate: bool,
    /// The only directory `browser_file_upload` takes files from; no uploads when
    /// `None` (`[tools] upload_dir`).
    pub upload_dir: Option<std::path::PathBuf>,
    /// Where downloads are kept, under generated names, absolute; refused when
    /// `None` (`[tools] download_dir`).
    pub download_dir: Option<std::path::PathBuf>,
    /// Origin sets and checks on data carried between sites (`[flow]`).
    pub flow: airlock_config::Flow,
    /// The deployment's own secrets (webhook key, model keys, worker tokens): hidden
    /// in every result and audit event, whatever a page or a model makes Airlock
    /// repeat.
    pub own_secrets: Option<std::sync::Arc<airlock_vault::Redactor>>,
    /// Web Bot Auth signing of sessions' requests (`[identity]`; off by default).
    pub identity: airlock_config::Identity,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            idle_ttl: Duration::from_secs(600),
            hold_idle: Duration::from_secs(300),
            max_lifetime: None,
            action_budget: None,
            caps: Caps::default(),
            policy: Policy::public_only(),
            credentials: CredentialSource {
                tenant: "default".to_owned(),
                ..CredentialSource::default()
            },
            warm_sessions: 0,
            store: None,
            checkpoints: None,
            rules: airlock_risk::Rules::default(),
            approval_timeout: Duration::from_secs(60),
            recording: airlock_config::RecordMode::Off,
            recordings_dir: None,
            recording_retention: Duration::from_secs(30 * 86_400),
            in_client_approval: false,
            evaluate: false,
            upload_dir: None,
            download_dir: None,
            flow: airlock_config::Flow::default(),
            own_secrets: None,
            identity: airlock_config::Identity::default(),
        }
    }
}

impl GatewayConfig {
    /// The defaults, with `policy` as what the browser may reach: where a config that
    /// is not the binary's (a test's, an embedder's) starts. Other settings are
    /// changed with the methods below or struct update (`..`).
    pub fn with_policy(policy: Policy) -> GatewayConfig {
        GatewayConfig {
            policy,
            ..GatewayConfig::default()
        }
    }

    /// These settings over `store` (approvals, audit, leases and homes persist).
    pub fn store(mut self, store: Store) -> GatewayConfig {
        self.store = Some(store);
        self
    }

    /// These settings with `vault`'s credentials, used by the default tenant's caller
    /// as `role`.
    pub fn vault(
        mut self,
        vault: std::sync::Arc<airlock_vault::Vault>,
        role: Role,
    ) -> GatewayConfig {
        self.credentials = CredentialSource {
            vault: Some(vault),
            tenant: "default".to_owned(),
            role,
        };
        self
    }
}

/// Caps on live sessions (`None`: no cap), and the memory a new one needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Caps {
    /// Live leased sessions per user of a tenant.
    pub per_user: Option<usize>,
    /// Live sessions per tenant.
    pub per_tenant: Option<usize>,
    /// Live sessions in the gateway.
    pub total: Option<usize>,
    /// Memory the machine must have available for a new session, in MiB (0: none).
    pub min_free_memory_mib: u64,
}
