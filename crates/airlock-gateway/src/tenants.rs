//! Callers of tenants: API keys of the store as principals.

use std::sync::atomic::Ordering;

use crate::error::{Error, Result};
use crate::session::Gateway;
use crate::sessions::Principal;

impl Gateway {
    /// The principal an API key of the store names (its tenant, its role), or `None`
    /// for a token that is no live key. Without a store, no key is.
    pub async fn authenticate_key(&self, token: &str) -> Result<Option<Principal>> {
        let Some(store) = self.store() else {
            return Ok(None);
        };
        let holder = airlock_vault::apikey::authenticate(store, token)
            .await
            .map_err(|e| Error::Internal(format!("cannot check an API key: {e}")))?;
        Ok(holder.map(|holder| Principal {
            tenant: holder.tenant,
            role: holder.role,
            key: Some(holder.id),
        }))
    }

    /// Whether `tenant` exists: made with `airlock tenant create`, or the default one.
    pub async fn tenant_exists(&self, tenant: &str) -> bool {
        self.tenant_known(tenant).await.unwrap_or(false)
    }

    /// [`Gateway::tenant_exists`], or `Err` when the store cannot say (an outage is
    /// no answer about the tenant).
    pub async fn tenant_known(&self, tenant: &str) -> Result<bool> {
        if tenant == self.config.credentials.tenant {
            return Ok(true);
        }
        let Some(store) = self.store() else {
            return Ok(false);
        };
        match store.tenants().await {
            Ok(tenants) => Ok(tenants.iter().any(|t| t.name == tenant)),
            Err(e) => {
                tracing::error!(error = %e, "cannot read the tenants");
                Err(Error::StoreUnavailable(format!(
                    "cannot read the tenants: {e}"
                )))
            }
        }
    }

    /// Whether the store holds a live API key (then every caller must authenticate).
    /// Once seen, remembered: keys are created far more often than all revoked.
    pub async fn has_api_keys(&self) -> bool {
        if self.keys_seen.load(Ordering::Acquire) {
            return true;
        }
        let Some(store) = self.store() else {
            return false;
        };
        match store.has_live_keys().await {
            Ok(true) => {
                self.keys_seen.store(true, Ordering::Release);
                true
            }
            Ok(false) => false,
            // Fail closed: an unreadable store means authenticating.
            Err(e) => {
                tracing::error!(error = %e, "cannot tell whether API keys exist");
                true
            }
        }
    }
}
