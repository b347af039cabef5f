//! Workers that register themselves (`airlock worker --register`): a worker tells
//! any replica where it is, with the worker token, and the credential it made for
//! itself at its start; that replica writes the worker's row to the shared store,
//! and every replica learns of it there at its next heartbeat and places sessions on
//! it like on a listed one, saying that credential in each hello (a worker holding
//! the deployment's token reaches no other worker). An address a worker registered
//! within [`HELD_FOR`] is not taken by another credential. A registered worker no
//! replica reaches and that stopped registering is forgotten after [`FORGET_AFTER`]
//! (its sessions ended long before, at [`crate::GONE_AFTER`]).

use std::time::Duration;

use crate::Gateway;
use crate::clock::now_ms;
use crate::error::Error;

/// How long a registered worker that neither registers nor answers is kept.
pub const FORGET_AFTER: Duration = Duration::from_secs(60);

/// How long a worker's registration holds its address against another credential
/// (a worker registers every 2 s; one that restarted waits this long).
pub const HELD_FOR: Duration = Duration::from_secs(6);

/// Why a worker's registration was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// Not `host:port`, no credential, an address no worker may be at.
    #[error("{0}")]
    Invalid(String),
    /// Another worker registered that address with another credential moments ago.
    #[error("another worker holds {0}: it registered with another credential within the last {secs} s", secs = HELD_FOR.as_secs())]
    Held(String),
    /// The store did not answer.
    #[error("{0}")]
    Failed(#[from] Error),
}

impl Gateway {
    /// Whether workers may register themselves here (`[registration]`).
    pub fn takes_registrations(&self) -> bool {
        self.host.takes_registrations()
    }

    /// A worker registered itself at `address` (`host:port`) with its own
    /// credential `token`: it goes on the store for every replica, and into this
    /// replica's fleet now, reached with `token`.
    pub async fn register_worker(
        &self,
        address: &str,
        pid: u32,
        token: &zeroize::Zeroizing<String>,
    ) -> std::result::Result<(), Refused> {
        let valid = address.len() <= 255
            && !address.chars().any(|c| c.is_whitespace() || c.is_control())
            && address.rsplit_once(':').is_some_and(|(host, port)| {
                !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
            });
        if !valid {
            return Err(Refused::Invalid(
                "address must be host:port, where replicas reach the worker".to_owned(),
            ));
        }
        if token.len() < 32 || token.len() > 128 || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Refused::Invalid(
                "token must be the worker's own credential (32 to 128 printable characters)"
                    .to_owned(),
            ));
        }
        // Judged before anything is written: no replica learns an address no
        // worker may be at.
        self.host.admits_worker(address).map_err(|why| {
            tracing::warn!(%address, %why, "refused a worker's registration");
            Refused::Invalid(format!("a worker may not be at {address}: {why}"))
        })?;
        let now = now_ms();
        let held = i64::try_from(HELD_FOR.as_millis()).unwrap_or(i64::MAX);
        match self.shared_store() {
            Some(store) => {
                let taken = store
                    .register_worker(address, i64::from(pid), token, now, now - held)
                    .await
                    .map_err(|e| {
                        tracing::error!(error = %e, "could not note a registered worker");
                        Error::Internal("the store could not answer".to_owned())
                    })?;
                if !taken {
                    return Err(Refused::Held(address.to_owned()));
                }
            }
            None if self.host.held_by_another(address, token, HELD_FOR) => {
                return Err(Refused::Held(address.to_owned()));
            }
            None => {}
        }
        let learned = self
            .host
            .learn_worker(address, token)
            .map_err(Refused::Invalid)?;
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
        let Ok(workers) = store.registered_workers().await else {
            return;
        };
        let now = now_ms();
        let forget = i64::try_from(FORGET_AFTER.as_millis()).unwrap_or(i64::MAX);
        for worker in workers {
            let address = worker.address;
            if worker.token.is_empty() {
                // Registered by a worker of an older protocol: nothing to say to it.
                continue;
            }
            if now - worker.heartbeat_ms < forget {
                match self.host.learn_worker(&address, &worker.token) {
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
