//! A tenant's own policy, as its admin writes it (TOML or JSON, the shape of the
//! config sections it narrows): `[policy]` (hosts, schemes), `[approvals]` (rules on
//! calls and on the requests pages send, judged before the operator's, holding or
//! refusing only; a shorter wait for a human), `[flow]` (a mode
//! at least as strict, origin sets) and `[tools]` (tools its sessions may not call). The operator's config is the ceiling: what
//! would widen it is refused by key ([`TenantPolicy::check`] with the gateway's
//! policy and rules; the gateway applies it when a session opens).

use airlock_policy::{Policy, PolicyConfig};
use airlock_risk::{RuleConfig, Rules};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, Flow, FlowMode, OriginSets, Result};

/// A tenant's policy as written.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantPolicy {
    /// Narrows `[policy]`: allowlists (a layer every host must pass), denylists,
    /// schemes (a subset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyConfig>,
    /// Rules judged before the operator's (`approve` or `deny` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<TenantApprovals>,
    /// The data-flow check: a stricter mode, origin sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<TenantFlow>,
    /// Tools its sessions may not call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<TenantTools>,
    /// Whether its sessions sign their requests (Web Bot Auth), and for which origins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<TenantIdentity>,
}

/// `[identity]` of a tenant's policy: its sessions' Web Bot Auth signing, with its
/// own key. Turning it on reaches no origin a session could not reach already.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantIdentity {
    /// Sign (or not) its sessions' requests; unset: as the operator's `[identity]`.
    pub sign: Option<bool>,
    /// The origins signed for (origins, hosts, `*.domains`; empty: every origin a
    /// session may reach); unset: the operator's.
    pub origins: Option<Vec<String>>,
}

/// `[tools]` of a tenant's policy: only ever fewer tools.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantTools {
    /// Tools its sessions may not call (`browser_pdf`, `browser_file_upload`, …).
    #[serde(default)]
    pub deny: Vec<String>,
    /// `false` refuses `browser_evaluate` in its sessions; it cannot turn it on.
    pub evaluate: Option<bool>,
}

/// What a tenant's sessions run under: the operator's egress, rules and data-flow
/// settings, narrowed by the tenant's policy.
#[derive(Debug, Clone)]
pub struct Narrowed {
    /// Egress (before a lease's own narrowing).
    pub policy: Policy,
    /// The tenant's rules first, then the operator's and the built-ins.
    pub rules: Rules,
    /// The data-flow settings.
    pub flow: Flow,
    /// The tenant's origin sets: a layer between the operator's and a lease's.
    pub origins: Option<OriginSets>,
    /// Tools its sessions may not call.
    pub denied_tools: Vec<String>,
    /// How long its held calls wait for a human.
    pub approval_timeout: std::time::Duration,
}

/// `[approvals]` of a tenant's policy.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantApprovals {
    /// The tenant's rules, first match wins, before the operator's.
    #[serde(default)]
    pub rules: Vec<RuleConfig>,
    /// How long its held calls wait for a human, at most the operator's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

/// `[flow]` of a tenant's policy.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantFlow {
    /// `ask` or `deny`, at least as strict as the operator's.
    pub mode: Option<String>,
    /// Origins its sessions may change things on (narrows the operator's sets).
    #[serde(default)]
    pub act_origins: Vec<String>,
    /// Origins its sessions may only read.
    #[serde(default)]
    pub read_origins: Vec<String>,
}

impl TenantPolicy {
    /// Reads a policy written as TOML, or as JSON when it starts with `{`.
    pub fn parse(text: &str) -> Result<TenantPolicy> {
        let invalid = |message: String| Error::Invalid {
            key: "policy".to_owned(),
            message,
        };
        if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| invalid(e.to_string()))
        } else {
            toml::from_str(text).map_err(|e| invalid(e.message().to_owned()))
        }
    }

    /// Its canonical JSON (what is stored and hashed).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }

    /// SHA-256 of its canonical JSON, hex: what names a version on the record.
    pub fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.to_json().as_bytes()))
    }

    /// The data-flow settings of its sessions: the operator's, with this mode if it
    /// is stricter (a looser one is refused by key) and these origin sets.
    pub fn flow(&self, operator: &Flow) -> Result<(Flow, Option<OriginSets>)> {
        let Some(own) = &self.flow else {
            return Ok((operator.clone(), None));
        };
        let mut flow = operator.clone();
        if let Some(word) = &own.mode {
            let mode = match word.as_str() {
                "off" => FlowMode::Off,
                "ask" => FlowMode::Ask,
                "deny" => FlowMode::Deny,
                other => {
                    return Err(Error::Invalid {
                        key: "flow.mode".to_owned(),
                        message: format!("`{other}` is not `ask` or `deny`"),
                    });
                }
            };
            if strictness(mode) < strictness(operator.mode) {
                return Err(Error::Invalid {
                    key: "flow.mode".to_owned(),
                    message: format!(
                        "`{}` is looser than the operator's `{}`: a tenant's policy may only narrow",
                        mode.as_str(),
                        operator.mode.as_str()
                    ),
                });
            }
            flow.mode = mode;
        }
        let sets = OriginSets::parse("flow", &own.act_origins, &own.read_origins)?;
        Ok((flow, sets.is_set().then_some(sets)))
    }

    /// The operator's `policy`, `rules`, `flow` and wait for a human (`timeout`)
    /// narrowed by this policy; a key that would widen them (or does not parse) is
    /// refused by name, and nothing is narrowed.
    pub fn narrow(
        &self,
        policy: &Policy,
        rules: &Rules,
        flow: &Flow,
        timeout: std::time::Duration,
    ) -> Result<Narrowed> {
        let mut denied_tools = Vec::new();
        if let Some(tools) = &self.tools {
            for (i, name) in tools.deny.iter().enumerate() {
                if !name.starts_with("browser_")
                    || !name[8..]
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b == b'_')
                    || name.len() == 8
                {
                    return Err(Error::Invalid {
                        key: format!("tools.deny[{i}]"),
                        message: format!("`{name}` is not a tool's name (`browser_pdf`, …)"),
                    });
                }
                denied_tools.push(name.clone());
            }
            if tools.evaluate == Some(false) {
                denied_tools.push("browser_evaluate".to_owned());
            }
            if tools.evaluate == Some(true) {
                return Err(Error::Invalid {
                    key: "tools.evaluate".to_owned(),
                    message: "a tenant's policy may only turn `browser_evaluate` off; whether it is offered at all is the operator's `[tools] evaluate`".to_owned(),
                });
            }
        }
        let policy = match &self.policy {
            None => policy.clone(),
            Some(own) => policy.tightened(own).map_err(|e| Error::Invalid {
                key: e.key,
                message: e.message,
            })?,
        };
        let rules = rules.with_first(self.rules()).map_err(|e| Error::Invalid {
            key: e.key,
            message: e.why,
        })?;
        let (flow, origins) = self.flow(flow)?;
        Ok(Narrowed {
            policy,
            rules,
            flow,
            origins,
            denied_tools,
            approval_timeout: self.approval_timeout(timeout)?,
        })
    }

    /// The operator's `[identity]` as this tenant's sessions sign under it: its own
    /// switch and origins where it set them.
    pub fn identity(&self, operator: &crate::Identity) -> Result<crate::Identity> {
        let mut identity = operator.clone();
        let Some(own) = &self.identity else {
            return Ok(identity);
        };
        if let Some(sign) = own.sign {
            identity.sign = sign;
        }
        if let Some(origins) = &own.origins {
            identity.origins = airlock_policy::OriginSet::parse("identity.origins", origins)
                .map_err(|e| Error::Invalid {
                    key: e.key,
                    message: e.message,
                })?;
        }
        Ok(identity)
    }

    /// The first tool its `[tools] deny` names that `known` does not know, as the
    /// error naming its key (the surfaces, which hold the catalogue, ask).
    pub fn unknown_tool(&self, known: impl Fn(&str) -> bool) -> Option<Error> {
        let tools = self.tools.as_ref()?;
        tools
            .deny
            .iter()
            .enumerate()
            .find(|(_, name)| !known(name))
            .map(|(i, name)| Error::Invalid {
                key: format!("tools.deny[{i}]"),
                message: format!("no tool is named `{name}`"),
            })
    }

    /// How long its sessions' held calls wait for a human: its own
    /// `[approvals] timeout_secs` when set (from 1 s up to the operator's
    /// `operator`; longer is refused by key), else the operator's.
    pub fn approval_timeout(&self, operator: std::time::Duration) -> Result<std::time::Duration> {
        let Some(secs) = self.approvals.as_ref().and_then(|a| a.timeout_secs) else {
            return Ok(operator);
        };
        let own = std::time::Duration::from_secs(secs);
        if secs == 0 || own > operator {
            return Err(Error::Invalid {
                key: "approvals.timeout_secs".to_owned(),
                message: format!(
                    "{secs} s is outside 1 s to the operator's {} s: a tenant's policy may only shorten the wait",
                    operator.as_secs()
                ),
            });
        }
        Ok(own)
    }

    /// Its `[[approvals.rules]]`.
    pub fn rules(&self) -> &[RuleConfig] {
        self.approvals.as_ref().map_or(&[], |a| &a.rules)
    }
}

fn strictness(mode: FlowMode) -> u8 {
    match mode {
        FlowMode::Off => 0,
        FlowMode::Ask => 1,
        FlowMode::Deny => 2,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::TenantPolicy;

    #[test]
    fn a_tenant_may_shorten_the_wait_for_a_human_and_never_lengthen_it() {
        let operator = Duration::from_secs(60);
        let wait = |text: &str| {
            TenantPolicy::parse(text)
                .unwrap()
                .approval_timeout(operator)
        };
        assert_eq!(wait("").unwrap(), operator);
        assert_eq!(
            wait("[approvals]\ntimeout_secs = 15\n").unwrap(),
            Duration::from_secs(15)
        );
        assert_eq!(wait("[approvals]\ntimeout_secs = 60\n").unwrap(), operator);
        for longer in ["61", "0"] {
            let refused = wait(&format!("[approvals]\ntimeout_secs = {longer}\n")).unwrap_err();
            assert!(
                refused.to_string().starts_with("approvals.timeout_secs"),
                "{refused}"
            );
        }
        // It travels: the canonical JSON keeps it, and so does its hash.
        let policy = TenantPolicy::parse("[approvals]\ntimeout_secs = 15\n").unwrap();
        let again = TenantPolicy::parse(&policy.to_json()).unwrap();
        assert_eq!(
            again.approval_timeout(operator).unwrap(),
            Duration::from_secs(15)
        );
        assert_ne!(policy.hash(), TenantPolicy::default().hash());
    }
}
