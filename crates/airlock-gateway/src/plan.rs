//! A session's plan: what the stages judge its calls by, built once when it opens
//! and the same on every replica that serves it. Layers, each only narrowing: the
//! operator's config, then the tenant's own policy at the version current when the
//! session opened (egress tightened, rules judged first, a stricter data-flow mode,
//! origin sets), then the lease's own narrowing (`allow_hosts`, its origin sets). A
//! replica adopting the session rebuilds it from the version its row names, never
//! the newest. A tenant without a policy shares the gateway's one default plan.
//! The plan also holds the rules the session's browser judges the requests its
//! pages send by (handed to the worker when the browser opens) and how long its
//! held calls wait for a human.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use airlock_config::{Flow, OriginSets, TenantPolicy};
use airlock_policy::Policy;
use airlock_risk::Rules;

use crate::error::{Error, Result};
use crate::session::Gateway;

/// What a session's calls are judged by.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The tenant policy version it opened under (`None`: the operator's config).
    pub(crate) version: Option<i64>,
    /// Egress before the lease's own narrowing.
    pub(crate) egress: Arc<Policy>,
    /// Risk rules: the tenant's first, then the operator's and the built-ins.
    pub(crate) rules: Arc<Rules>,
    /// The data-flow settings.
    pub(crate) flow: Arc<Flow>,
    /// The tenant's origin sets, a layer between the operator's and the lease's.
    pub(crate) origins: Option<OriginSets>,
    /// Tools its tenant refuses its sessions.
    pub(crate) denied_tools: Vec<String>,
    /// How long a held call or held request waits for a human.
    pub(crate) approval_timeout: Duration,
    /// Its tenant adds effect rules of its own: the rules its browser judges
    /// requests by are not the operator's alone, so no warm browser (armed with
    /// the operator's) will do.
    pub(crate) own_effects: bool,
    /// Whether its requests are signed (Web Bot Auth), for which origins and how
    /// long a signature lives; the key is its tenant's active one when it opens.
    pub(crate) signing: Option<airlock_config::Identity>,
    /// The operator's `[identity]`, which a tenant's policy may turn on or off.
    pub(crate) identity: Arc<airlock_config::Identity>,
}

impl Plan {
    /// The operator's config alone.
    pub(crate) fn operator(
        policy: &Arc<Policy>,
        rules: &Rules,
        flow: &Flow,
        approval_timeout: Duration,
        identity: &airlock_config::Identity,
    ) -> Plan {
        Plan {
            version: None,
            egress: policy.clone(),
            rules: Arc::new(rules.clone()),
            flow: Arc::new(flow.clone()),
            origins: None,
            denied_tools: Vec::new(),
            approval_timeout,
            own_effects: false,
            signing: identity.sign.then(|| identity.clone()),
            identity: Arc::new(identity.clone()),
        }
    }

    /// Why its tenant refuses `tool` in this session, if it does.
    pub(crate) fn refuses(&self, tool: &str) -> Option<crate::error::Error> {
        self.denied_tools.iter().any(|t| t == tool).then(|| crate::error::Error::RuleDenied {
            rule: "tenant-tools".to_owned(),
            message: format!(
                "this tenant's policy does not let its sessions call {tool} (policy version {})",
                self.version.unwrap_or(0)
            ),
        })
    }

    /// The operator's plan narrowed by `tenant` (version `version`); a key of
    /// `tenant` that would widen the operator's config is refused by name.
    pub(crate) fn narrowed_by(&self, version: i64, tenant: &TenantPolicy) -> Result<Plan> {
        let invalid = |e: airlock_config::Error| Error::InvalidArgument(e.to_string());
        let narrowed = tenant
            .narrow(&self.egress, &self.rules, &self.flow, self.approval_timeout)
            .map_err(invalid)?;
        let own_effects = narrowed.rules.effects().names() != self.rules.effects().names();
        Ok(Plan {
            version: Some(version),
            egress: Arc::new(narrowed.policy),
            rules: Arc::new(narrowed.rules),
            flow: Arc::new(narrowed.flow),
            origins: narrowed.origins,
            denied_tools: narrowed.denied_tools,
            approval_timeout: narrowed.approval_timeout,
            own_effects,
            signing: Some(tenant.identity(&self.identity).map_err(invalid)?).filter(|i| i.sign),
            identity: self.identity.clone(),
        })
    }
}

/// Plans built from tenants' policies, by (tenant, version): a version never
/// changes, so one build serves every session opened under it.
#[derive(Default)]
pub(crate) struct Plans(std::sync::Mutex<HashMap<(String, i64), Arc<Plan>>>);

impl Gateway {
    /// The plan of a session of `tenant` opening now (`version: None`: the tenant's
    /// newest policy), or of one that opened under `version`.
    pub(crate) async fn plan(&self, tenant: &str, version: Option<i64>) -> Result<Arc<Plan>> {
        let Some(store) = self.store() else {
            return Ok(self.default_plan.clone());
        };
        let record = store.tenant_policy(tenant, version).await.map_err(|e| {
            tracing::warn!(error = %e, "could not read a tenant's policy");
            Error::StoreUnavailable(
                "the store that holds the tenant's policy cannot be reached; nothing was opened, retry shortly"
                    .to_owned(),
            )
        })?;
        let Some(record) = record else {
            return Ok(self.default_plan.clone());
        };
        let key = (tenant.to_owned(), record.version);
        if let Some(plan) = airlock_core::sync::lock(&self.plans.0).get(&key) {
            return Ok(plan.clone());
        }
        let policy = TenantPolicy::parse(&record.body)
            .map_err(|e| Error::Internal(format!("a stored tenant policy: {e}")))?;
        let plan = Arc::new(self.default_plan.narrowed_by(record.version, &policy)?);
        airlock_core::sync::lock(&self.plans.0).insert(key, plan.clone());
        Ok(plan)
    }

    // `base` (a plan's egress), narrowed by a session's own allowlist if it gave one.
    pub(crate) fn narrowed_policy(
        &self,
        base: &Arc<Policy>,
        allow_hosts: &[String],
    ) -> Result<Arc<Policy>> {
        if allow_hosts.is_empty() {
            return Ok(base.clone());
        }
        let (suffixes, exact): (Vec<String>, Vec<String>) = allow_hosts
            .iter()
            .map(|h| h.trim().to_owned())
            .partition(|h| h.starts_with("*."));
        let suffixes: Vec<String> = suffixes.iter().map(|h| h[2..].to_owned()).collect();
        let narrowed = base
            .narrowed(&exact, &suffixes)
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        Ok(Arc::new(narrowed))
    }

    /// Checks `policy` against the operator's config (the ceiling) and stores it as
    /// `tenant`'s next version, on the record (`policy_change`); sessions opened
    /// from now on, on every replica, run under it. Its version and hash.
    pub async fn set_tenant_policy(
        &self,
        tenant: &str,
        policy: &TenantPolicy,
        by: &str,
    ) -> Result<(i64, String)> {
        // Refused before anything is stored: a bad key names itself, nothing changes.
        self.default_plan.narrowed_by(0, policy)?;
        let store = self.store().ok_or_else(|| {
            Error::InvalidArgument(
                "this gateway keeps no store, so tenants have no policies".to_owned(),
            )
        })?;
        let hash = policy.hash();
        let version = store
            .set_tenant_policy(tenant, &hash, &policy.to_json(), by, crate::clock::now_ms())
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "could not store a tenant's policy");
                Error::StoreUnavailable(
                    "the store cannot take the policy now; nothing was changed, retry shortly"
                        .to_owned(),
                )
            })?;
        self.record_event(
            Some(tenant),
            airlock_audit::Event::PolicyChange(airlock_audit::PolicyChange {
                by: by.to_owned(),
                version: u64::try_from(version).unwrap_or(0),
                hash: hash.clone(),
            }),
        )
        .await;
        Ok((version, hash))
    }

    /// `tenant`'s newest policy: its version, hash and body (`None`: it has none,
    /// and its sessions run under the operator's config alone).
    pub async fn tenant_policy(&self, tenant: &str) -> Result<Option<(i64, String, TenantPolicy)>> {
        let Some(store) = self.store() else {
            return Ok(None);
        };
        let record = store.tenant_policy(tenant, None).await.map_err(|e| {
            tracing::warn!(error = %e, "could not read a tenant's policy");
            Error::StoreUnavailable("the store cannot be reached; retry shortly".to_owned())
        })?;
        record
            .map(|r| {
                let policy = TenantPolicy::parse(&r.body)
                    .map_err(|e| Error::Internal(format!("a stored tenant policy: {e}")))?;
                Ok((r.version, r.hash, policy))
            })
            .transpose()
    }
}
