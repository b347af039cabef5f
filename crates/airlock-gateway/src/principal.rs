//! Who a call comes from: a tenant, a role, and the digest of the credentials it
//! authenticated with. Every surface makes one; admission, leases, vault access and
//! the audit record read it.

use airlock_core::Role;

/// Who a call comes from: what a lease's owner is, and what admission checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The tenant whose policy, vault and sessions the caller uses.
    pub tenant: String,
    /// What the caller may do.
    pub role: Role,
    /// A digest naming the caller's credentials (never the credentials), when it
    /// authenticated; `None` for the local stdio user.
    pub key: Option<String>,
}

impl Principal {
    /// What names this caller among others: its tenant and key. Callers without a
    /// key (no auth configured: the local user) are one caller per tenant.
    pub fn caller(&self) -> String {
        format!(
            "{}/{}",
            self.tenant,
            self.key.as_deref().unwrap_or("anonymous")
        )
    }
}
