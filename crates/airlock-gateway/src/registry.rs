//! Workers that register themselves (`airlock worker --register`): a worker tells
//! any replica where it is, with the worker token; that replica writes the worker's
//! row to the shared store, and every replica learns of it there at its next
//! heartbeat and places sessions on it like on a listed one. A registered worker no
//! replica reaches and that stopped registering is forgotten after [`FORGET_AFTER`]
//! (its sessions ended long before, at [`crate::GONE_AFTER`]).

use std::time::Duration;

use crate::Gateway;
use crate::clock::now_ms;
use crate::error::{Error, Result};

/// How long a registered worker that neither registers nor answers is kept.
pub const FORGET_AFTER: Duration = Duration::from_secs(60);

impl Gateway {
    /// Whether workers may register themselves here (`[registration]`).
    pub fn takes_registrations(&self) -> bool {
        self.host.takes_registrations()
    }

    /// A worker registered itself at `address` (`host:port`): it goes on the store
    /// for every replica, and into this replica's fleet now.
    pub async fn register_worker(&self, address: &str, pid: u32) -> Result<()> {
        let valid = address.len() <= 255
            && !address.chars().any(|c| c.is_whitespace() || c.is_control())
            && address.rsplit_once(':').is_some_and(|(host, port)| {
                !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
            });
        if !valid {
            return Err(Error::InvalidArgument(
                "address must be host:port, where replicas reach the worker".to_owned(),
            ));
        }
        // Judged before anything is written: no replica learns an address no
        // worker may be at.
        let learned = self.host.learn_worker(address).map_err(|why| {
            tracing::warn!(%address, %why, "refused a worker's registration");
            Error::InvalidArgument(format!("a worker may not be at {address}: {why}"))
        })?;
        if let Some(store) = self.shared_store() {
            store
                .register_worker(address, i64::from(pid), now_ms())
                .await
                .map_err(|e| {
                    tracing::error!(error = %e, "could not note a registered worker");
                    Error::Internal("the store could not answer".to_owned())
                })?;
        }
        if learned {
            tracing::info!(%address, "a browser worker registered");
        }
        Ok(())
    }

    /// At each heartbeat: the registered workers other replicas wrote to the store
    /// join this replica's fleet; those gone for [`FORGET_AFTER`] leave it (and the
    /// store).
    pub(crate) async fn learn_registered_workers(&self) {
        if !self.host.takes_registrations() {
            return;
        }
        let Some(store) = self.shared_store() else {
            return;
        };
        let Ok(hosts) = store.hosts().await else {
            return;
        };
        let now = now_ms();
        let forget = i64::try_from(FORGET_AFTER.as_millis()).unwrap_or(i64::MAX);
        for host in hosts.into_iter().filter(|h| h.role == "worker") {
            let Some(address) = host.address else {
                continue;
            };
            if now - host.heartbeat_ms < forget {
                match self.host.learn_worker(&address) {
                    Ok(true) => tracing::info!(
                        %address,
                        "a browser worker registered through another replica"
                    ),
                    Ok(false) => {}
                    // Written by a replica that allows what this one does not.
                    Err(why) => tracing::warn!(%address, %why, "not using a registered worker"),
                }
            } else if self.host.forget_worker(&address) {
                tracing::info!(%address, "forgot a registered browser worker that went away");
                let _ = store.remove_host(&address).await;
            }
        }
    }
}
