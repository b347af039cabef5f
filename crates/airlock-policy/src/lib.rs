//! Airlock's egress policy: which URLs and addresses the browser may reach, decided as a
//! pure function of the policy and the input, with a reason an operator understands.
//!
//! For now this crate holds only the configuration section; the egress issue adds URL
//! canonicalization, address classification and decisions. It will never do IO:
//! resolving names and connecting belong to `airlock-egress`.

use serde::Deserialize;

/// The `[policy]` section of `airlock.toml`, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Private addresses (CIDRs or host names) the browser may reach although the
    /// default denies them; tests list loopback here explicitly.
    #[serde(default)]
    pub allow_private: Vec<String>,
}
