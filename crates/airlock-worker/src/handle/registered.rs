//! The workers that register themselves, as a [`Host`] learns, judges and forgets
//! them: each reached with the credential it registered with.

use airlock_core::sync::lock;
use std::sync::Arc;
use subtle::ConstantTimeEq as _;

use zeroize::Zeroizing;

use super::Host;

impl Host {
    /// Whether workers register themselves here (then a fleet may have none yet).
    pub fn takes_registrations(&self) -> bool {
        matches!(self, Host::Fleet(fleet) if fleet.make.is_some())
    }

    /// Adds the worker that registered itself at `address` with its own credential
    /// `token`, unless it is known so (listed, or registered before with the same
    /// credential) or this host takes no registrations. A worker known at `address`
    /// with another credential is replaced (it restarted; whether that may be is
    /// judged before, see [`Host::held_by_another`]). Returns whether it was added, or
    /// why a worker may not be there.
    pub fn learn_worker(
        &self,
        address: &str,
        token: &Zeroizing<String>,
    ) -> std::result::Result<bool, String> {
        let Host::Fleet(fleet) = self else {
            return Ok(false);
        };
        let Some(make) = &fleet.make else {
            return Ok(false);
        };
        if fleet
            .all()
            .iter()
            .take(fleet.listed)
            .any(|w| w.address() == address)
        {
            return Ok(false);
        }
        {
            let mut credentials = lock(&fleet.credentials);
            if let Some((known, at)) = credentials.get_mut(address)
                && bool::from(known.as_bytes().ct_eq(token.as_bytes()))
            {
                *at = tokio::time::Instant::now();
                return Ok(false);
            }
        }
        let remote = make(address, token)?;
        let mut workers = fleet.workers.write().unwrap_or_else(|p| p.into_inner());
        let listed = fleet.listed;
        let mut i = 0;
        workers.retain(|w| {
            i += 1;
            i <= listed || w.address() != address
        });
        workers.push(Arc::new(remote));
        lock(&fleet.credentials).insert(
            address.to_owned(),
            (token.clone(), tokio::time::Instant::now()),
        );
        Ok(true)
    }

    /// Whether a worker may register at `address` (a literal address must be one the
    /// operator allows for workers; a name is judged at each connect), or why not.
    pub fn admits_worker(&self, address: &str) -> std::result::Result<(), String> {
        let Host::Fleet(fleet) = self else {
            return Ok(());
        };
        let Some(make) = &fleet.make else {
            return Ok(());
        };
        // Made and dropped unconnected: the judging is `make`'s.
        make(address, &Zeroizing::new(String::new())).map(drop)
    }

    /// Whether a worker registered at `address` with a credential other than
    /// `token` within `within`: a registration with `token` would take the address
    /// of a worker that is there (refused; a restarted worker waits that long).
    pub fn held_by_another(
        &self,
        address: &str,
        token: &Zeroizing<String>,
        within: std::time::Duration,
    ) -> bool {
        let Host::Fleet(fleet) = self else {
            return false;
        };
        lock(&fleet.credentials)
            .get(address)
            .is_some_and(|(known, at)| {
                !bool::from(known.as_bytes().ct_eq(token.as_bytes())) && at.elapsed() < within
            })
    }

    /// Drops a worker that registered itself at `address` (it stopped registering
    /// and answering); listed workers stay. Returns whether it was dropped.
    pub fn forget_worker(&self, address: &str) -> bool {
        let Host::Fleet(fleet) = self else {
            return false;
        };
        lock(&fleet.credentials).remove(address);
        let mut workers = fleet.workers.write().unwrap_or_else(|p| p.into_inner());
        let before = workers.len();
        let listed = fleet.listed;
        let mut i = 0;
        workers.retain(|w| {
            i += 1;
            i <= listed || w.address() != address
        });
        workers.len() != before
    }
}
