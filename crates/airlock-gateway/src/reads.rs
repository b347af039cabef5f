//! What one browser session read, by origin, and where it may act: the lease keeps
//! it, the data-flow stage (`session/flow.rs`) feeds it after redaction and checks
//! each outbound string against it. What was read is its scope's memory
//! (`memory.rs`), which the caller's other sessions share.
//!
//! On a shared store the session's running state is the fleet's, not one replica's:
//! each replica appends the lines its results kept to the store before the result is
//! returned, and catches up on every other replica's before it judges a send; the
//! action budget is counted in the store in one conditional update. A read on A and
//! a send on B are judged as on one replica, and a replica killed after a result
//! took none of it with it.

use airlock_config::{OriginSets, Standing};
use airlock_flow::History;
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

/// What one browser session read, by origin, and where it may act. What it read
/// is its scope's memory ([`crate::memory`]): shared with the caller's other
/// sessions and one-off calls unless `[flow] scope = "session"`.
pub(crate) struct Reads {
    /// Where the session may act and where it may only read.
    pub(crate) sets: Sets,
    memory: std::sync::Arc<crate::memory::Memory>,
    // The store the session's running state is shared through, and its id there,
    // once it has a row other replicas can find.
    shared: std::sync::OnceLock<(Store, String)>,
    // The tails of the last strings this session sent toward sites, oldest first:
    // a value split over calls is judged with what went just before it.
    sent: std::sync::Mutex<std::collections::VecDeque<String>>,
}

/// How many earlier strings a send is joined with, and how much of each is kept: a
/// run that reaches over a join counts from `min_length` bytes, so a short tail
/// holds any run worth finding.
const SENT_KEPT: usize = 2;
const SENT_TAIL: usize = 128;

impl Reads {
    /// What `memory` holds, with `sets`.
    pub(crate) fn new(memory: std::sync::Arc<crate::memory::Memory>, sets: Sets) -> Reads {
        Reads {
            sets,
            memory,
            shared: std::sync::OnceLock::new(),
            sent: std::sync::Mutex::default(),
        }
    }

    /// Shares the session's running state through `store` from now on (`session`:
    /// its id, the row other replicas serve it by).
    pub(crate) fn share(&self, store: &Store, session: &str) {
        self.memory.share(store, session);
        let _ = self.shared.set((store.clone(), session.to_owned()));
    }

    /// What was read so far, for the data-flow stage to check a string against
    /// (on a shared store, after [`Reads::catch_up`]).
    pub(crate) fn history(&self) -> std::sync::MutexGuard<'_, History> {
        self.memory.history()
    }

    /// Keeps `text`, read on the page at `url`. A page with no origin of its own
    /// (`about:blank`, `data:`) holds nothing any site gave.
    pub(crate) async fn read(&self, url: &str, text: &str) {
        let Some(origin) = origin_of(url).filter(|o| o != "null") else {
            return;
        };
        self.memory.read(&origin, text).await;
    }

    /// The tails of the strings this session sent last, oldest first.
    pub(crate) fn sent_before(&self) -> Vec<String> {
        airlock_core::sync::lock(&self.sent)
            .iter()
            .cloned()
            .collect()
    }

    /// Remembers a string this session sends toward a site (its tail).
    pub(crate) fn sent(&self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        let mut cut = text.len().saturating_sub(SENT_TAIL);
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        let mut sent = airlock_core::sync::lock(&self.sent);
        if sent.len() == SENT_KEPT {
            sent.pop_front();
        }
        sent.push_back(text[cut..].to_owned());
    }

    /// Takes in what was read elsewhere since this one last looked.
    pub(crate) async fn catch_up(&self) -> Result<()> {
        self.memory.catch_up().await
    }

    /// Counts one action against `budget` over every replica's: `false` once they
    /// together ran it out. Without a shared store, the lease's own count is all.
    pub(crate) async fn count_action(&self, budget: u64) -> Result<bool> {
        let Some((store, session)) = self.shared.get() else {
            return Ok(true);
        };
        match store.count_action(session, budget).await {
            Ok(counted) => Ok(counted.is_some()),
            Err(e) => {
                tracing::warn!(error = %e, session.id = %session, "could not count an action");
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
