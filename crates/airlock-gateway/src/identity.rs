//! Web Bot Auth for a session whose plan signs: its tenant's active key, loaded from
//! the vault into this control plane (never sent to a browser worker), and the
//! decision, per request, whether an origin is signed for. The browser asks with the
//! origin a paused request goes to; the signer signs only an `http(s)` origin the
//! plan names (every origin the session's egress policy allows, when it names none)
//! and only for that origin's own authority, so no page (and no worker) can have a
//! signature made for another.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use airlock_browser::{RequestSigner, SignedHeaders, Signing};
use airlock_config::Identity;
use airlock_policy::Policy;
use airlock_vault::webbotauth::{self, Agent};
use airlock_vault::{IdentitySigner, Vault};

use crate::error::{Error, Result};

/// How long a site may cache a key directory (`Cache-Control: max-age`).
pub const DIRECTORY_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(300);

/// How long a rotated-out key stays listed: until every signature it made has
/// expired, with a directory's cache life to spare.
pub fn keep_retired(identity: &Identity) -> std::time::Duration {
    identity.lifetime + DIRECTORY_MAX_AGE
}

/// Where `tenant`'s key directory is, under `agent_url`: the well-known directory at
/// that origin for the `default` tenant; another tenant's own key set, named as a
/// `jwks_uri`, under `/identity/<tenant>/directory`.
pub fn agent_of(agent_url: &str, tenant: &str) -> Agent {
    if tenant == "default" {
        Agent {
            url: agent_url.to_owned(),
            kind: None,
        }
    } else {
        Agent {
            url: format!("{agent_url}/identity/{tenant}/directory"),
            kind: Some("jwks_uri"),
        }
    }
}

/// How long a session signs with the key it loaded before it looks for a newer one:
/// a rotation reaches open sessions within this, well inside the time a rotated-out
/// key stays listed.
pub(crate) const KEY_REFRESH: std::time::Duration = std::time::Duration::from_secs(5);

/// The signer of one session's requests.
pub(crate) struct SessionSigner {
    // The tenant's active key as last loaded, and when.
    key: std::sync::RwLock<(Arc<IdentitySigner>, tokio::time::Instant)>,
    vault: Arc<Vault>,
    tenant: String,
    agent: Agent,
    identity: Identity,
    policy: Arc<Policy>,
    // Requests signed since the session's last call event took the count.
    signed: AtomicU64,
}

impl std::fmt::Debug for SessionSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionSigner({})", self.kid())
    }
}

impl SessionSigner {
    /// A signer for a session of `tenant` under `identity`, reaching what `policy`
    /// allows; the tenant's key is made on first use (the operator turned signing on).
    pub(crate) async fn open(
        vault: &Arc<Vault>,
        tenant: &str,
        identity: &Identity,
        policy: Arc<Policy>,
    ) -> Result<SessionSigner> {
        let internal = |e: airlock_vault::VaultError| {
            Error::Internal(format!("the tenant's signing key could not be loaded: {e}"))
        };
        let key = match vault.identity_signer(tenant).await.map_err(internal)? {
            Some(key) => key,
            None => {
                // Two replicas may race here; the loser reads the winner's key.
                if let Ok(made) = vault.create_identity(tenant).await {
                    tracing::info!(%tenant, kid = %made.kid, "made the tenant's Web Bot Auth signing key");
                }
                vault
                    .identity_signer(tenant)
                    .await
                    .map_err(internal)?
                    .ok_or_else(|| Error::Internal("the tenant has no signing key".to_owned()))?
            }
        };
        let agent_url = identity.agent_url.as_deref().ok_or_else(|| {
            Error::InvalidArgument(
                "requests are to be signed but sites could not find the key directory: set [identity] agent_url or [server] public_url".to_owned(),
            )
        })?;
        Ok(SessionSigner {
            key: std::sync::RwLock::new((Arc::new(key), tokio::time::Instant::now())),
            vault: vault.clone(),
            tenant: tenant.to_owned(),
            agent: agent_of(agent_url, tenant),
            identity: identity.clone(),
            policy,
            signed: AtomicU64::new(0),
        })
    }

    /// The key id that signs now.
    pub(crate) fn kid(&self) -> String {
        self.current().kid().to_owned()
    }

    fn current(&self) -> Arc<IdentitySigner> {
        self.key.read().unwrap_or_else(|p| p.into_inner()).0.clone()
    }

    // The tenant's active key: the one loaded, unless it is older than
    // [`KEY_REFRESH`] (then the vault's, which a rotation changed).
    async fn fresh(&self) -> Arc<IdentitySigner> {
        let (key, loaded) = self.key.read().unwrap_or_else(|p| p.into_inner()).clone();
        if loaded.elapsed() < KEY_REFRESH {
            return key;
        }
        let key = match self.vault.identity_signer(&self.tenant).await {
            Ok(Some(newer)) => Arc::new(newer),
            // No key now, or the vault not answering: the one held still verifies.
            _ => key,
        };
        *self.key.write().unwrap_or_else(|p| p.into_inner()) =
            (key.clone(), tokio::time::Instant::now());
        key
    }

    /// Requests signed since the last take.
    pub(crate) fn take_signed(&self) -> u64 {
        self.signed.swap(0, Ordering::AcqRel)
    }

    /// The headers for a request to `origin`, when the plan signs for it.
    fn headers(&self, key: &IdentitySigner, origin: &str) -> Option<SignedHeaders> {
        let url = url::Url::parse(origin).ok()?;
        // Exactly an origin, of the web: nothing else is asked about.
        if !matches!(url.scheme(), "http" | "https") || url.origin().ascii_serialization() != origin
        {
            return None;
        }
        if !self.identity.origins.is_empty() && !self.identity.origins.contains(origin) {
            return None;
        }
        if !self
            .policy
            .check_url(&format!("{origin}/"))
            .decision
            .is_allowed()
        {
            return None;
        }
        let authority = webbotauth::authority(&url)?;
        let signed = key
            .sign(&authority, &self.agent, self.identity.lifetime)
            .inspect_err(|e| tracing::warn!(error = %e, "a request could not be signed"))
            .ok()?;
        self.signed.fetch_add(1, Ordering::AcqRel);
        Some(
            signed
                .headers()
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }
}

/// A session's signer as its browser asks it.
pub(crate) struct Signs(pub(crate) Arc<SessionSigner>);

impl RequestSigner for Signs {
    fn sign(&self, origin: &str) -> Signing {
        let signer = self.0.clone();
        let origin = origin.to_owned();
        Box::pin(async move {
            let key = signer.fresh().await;
            signer.headers(&key, &origin)
        })
    }
}

impl crate::session::Gateway {
    // The signer of a session of `tenant` under `plan` reaching what `policy`
    // allows, when the plan signs (the key stays in this process).
    pub(crate) async fn session_signer(
        &self,
        tenant: &str,
        plan: &crate::plan::Plan,
        policy: &Arc<airlock_policy::Policy>,
    ) -> Result<Option<Arc<SessionSigner>>> {
        let Some(identity) = &plan.signing else {
            return Ok(None);
        };
        let vault = self.config.credentials.vault.as_ref().ok_or_else(|| {
            Error::Internal("signing is on but this gateway has no vault for its keys".to_owned())
        })?;
        Ok(Some(Arc::new(
            SessionSigner::open(vault, tenant, identity, policy.clone()).await?,
        )))
    }

    /// Signers of the keys `tenant`'s directory lists now (the active one first, then
    /// those retired less than [`keep_retired`] ago); none without a vault or keys.
    pub async fn directory_signers(&self, tenant: &str) -> Result<Vec<IdentitySigner>> {
        let Some(vault) = self.vault() else {
            return Ok(Vec::new());
        };
        vault
            .identity_signers(tenant, keep_retired(&self.config.identity))
            .await
            .map_err(|e| Error::Internal(format!("the tenant's signing keys: {e}")))
    }
}
