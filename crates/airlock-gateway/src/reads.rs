//! What one browser session read, by origin, and where it may act: the lease keeps
//! it, the data-flow stage (`session/flow.rs`) feeds it after redaction and checks
//! each outbound string against it.
//!
//! On a shared store the session's running state is the fleet's, not one replica's:
//! each replica appends the lines its results kept to the store before the result is
//! returned, and catches up on every other replica's before it judges a send; the
//! action budget is counted in the store in one conditional update. A read on A and
//! a send on B are judged as on one replica, and a replica killed after a result
//! took none of it with it.

use std::sync::atomic::{AtomicI64, Ordering};

use airlock_config::{OriginSets, Standing};
use airlock_core::sync::lock;
use airlock_flow::{History, Settings};
use airlock_policy::origin_of;
use airlock_store::Store;

use crate::error::{Error, Result};

/// Where a session may act: the deployment's default origin sets, then the
/// session's own, each only narrowing (an origin stands as the strictest layer puts
/// it), as a session's host list narrows the egress policy.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sets(Vec<OriginSets>);

impl Sets {
    /// The deployment's `default` sets narrowed by its tenant's, then a session's
    /// `own`.
    pub(crate) fn new(
        default: &OriginSets,
        tenant: Option<OriginSets>,
        own: Option<OriginSets>,
    ) -> Sets {
        Sets(
            [Some(default.clone()), tenant, own]
                .into_iter()
                .flatten()
                .filter(OriginSets::is_set)
                .collect(),
        )
    }

    /// Whether any layer gives sets.
    pub(crate) fn is_set(&self) -> bool {
        !self.0.is_empty()
    }

    /// How `origin` stands, and the layer that put it there when it is not `Act`.
    pub(crate) fn standing(&self, origin: &str) -> (Standing, Option<&OriginSets>) {
        let mut worst = (Standing::Act, None);
        for layer in &self.0 {
            match layer.standing(origin) {
                Standing::Act => {}
                Standing::Read if worst.0 == Standing::Act => worst = (Standing::Read, Some(layer)),
                Standing::Read => {}
                Standing::Outside => return (Standing::Outside, Some(layer)),
            }
        }
        worst
    }
}

/// What one browser session read, by origin, and where it may act.
pub(crate) struct Reads {
    /// Where the session may act and where it may only read.
    pub(crate) sets: Sets,
    history: std::sync::Mutex<History>,
    // The store the session's running state is shared through, once it has a row
    // other replicas can find.
    shared: std::sync::OnceLock<Shared>,
}

struct Shared {
    store: Store,
    session: String,
    // The last of the store's reads this history holds (by number).
    synced: AtomicI64,
}

impl Reads {
    /// Nothing read yet, under `flow`'s settings, with `sets`.
    pub(crate) fn new(flow: &airlock_config::Flow, sets: Sets) -> Reads {
        Reads {
            sets,
            history: std::sync::Mutex::new(History::new(Settings {
                min_length: flow.min_length,
                word_length: flow.word_length,
                capacity: flow.history_bytes,
            })),
            shared: std::sync::OnceLock::new(),
        }
    }

    /// Shares the session's running state through `store` from now on (`session`:
    /// its id, the row other replicas serve it by).
    pub(crate) fn share(&self, store: &Store, session: &str) {
        let _ = self.shared.set(Shared {
            store: store.clone(),
            session: session.to_owned(),
            synced: AtomicI64::new(0),
        });
    }

    /// What was read so far, for the data-flow stage to check a string against
    /// (on a shared store, after [`Reads::catch_up`]).
    pub(crate) fn history(&self) -> std::sync::MutexGuard<'_, History> {
        lock(&self.history)
    }

    /// Keeps `text`, read on the page at `url`. A page with no origin of its own
    /// (`about:blank`, `data:`) holds nothing any site gave. On a shared store the
    /// lines kept are written there before this returns; a store that cannot take
    /// them is logged (this replica still holds them).
    pub(crate) async fn read(&self, url: &str, text: &str) {
        let Some(origin) = origin_of(url).filter(|o| o != "null") else {
            return;
        };
        let mut kept = String::new();
        lock(&self.history).read_kept(&origin, text, |line| {
            kept.push_str(&String::from_utf8_lossy(line));
            kept.push('\n');
        });
        let Some(shared) = self.shared.get() else {
            return;
        };
        if kept.is_empty() {
            return;
        }
        if let Err(e) = shared
            .store
            .append_read(&shared.session, &origin, &kept)
            .await
        {
            tracing::warn!(
                error = %e,
                session.id = %shared.session,
                "could not share what a session read with the other replicas"
            );
        }
    }

    /// Takes in what other replicas' results showed since this one last looked. A
    /// send is not judged on a partial history: a store that cannot answer refuses
    /// the call (`store_unavailable`).
    pub(crate) async fn catch_up(&self) -> Result<()> {
        let Some(shared) = self.shared.get() else {
            return Ok(());
        };
        let after = shared.synced.load(Ordering::Acquire);
        let rows = shared
            .store
            .reads_after(&shared.session, after)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, session.id = %shared.session, "could not read a session's shared reads");
                Error::StoreUnavailable(
                    "the store that holds what this session read on other replicas cannot be reached; nothing was sent, retry shortly".to_owned(),
                )
            })?;
        let Some(last) = rows.last().map(|r| r.n) else {
            return Ok(());
        };
        let mut history = lock(&self.history);
        for row in &rows {
            // Lines this replica wrote itself are there already: kept once per origin.
            history.read(&row.origin, &row.lines);
        }
        shared.synced.fetch_max(last, Ordering::AcqRel);
        Ok(())
    }

    /// Counts one action against `budget` over every replica's: `false` once they
    /// together ran it out. Without a shared store, the lease's own count is all.
    pub(crate) async fn count_action(&self, budget: u64) -> Result<bool> {
        let Some(shared) = self.shared.get() else {
            return Ok(true);
        };
        match shared.store.count_action(&shared.session, budget).await {
            Ok(counted) => Ok(counted.is_some()),
            Err(e) => {
                tracing::warn!(error = %e, session.id = %shared.session, "could not count an action");
                Err(Error::StoreUnavailable(
                    "the store that counts this session's actions over every replica cannot be reached; nothing was done, retry shortly".to_owned(),
                ))
            }
        }
    }
}

impl std::fmt::Debug for Reads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reads")
            .field("sets", &self.sets)
            .finish_non_exhaustive()
    }
}
