//! What one browser session read, by origin, and where it may act: the lease keeps
//! it, the data-flow stage (`session/flow.rs`) feeds it after redaction and checks
//! each outbound string against it.

use airlock_config::{OriginSets, Standing};
use airlock_core::sync::lock;
use airlock_flow::{History, Settings};
use airlock_policy::origin_of;

/// Where a session may act: the deployment's default origin sets, then the
/// session's own, each only narrowing (an origin stands as the strictest layer puts
/// it), as a session's host list narrows the egress policy.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sets(Vec<OriginSets>);

impl Sets {
    /// The deployment's `default` sets narrowed by a session's `own`.
    pub(crate) fn new(default: &OriginSets, own: Option<OriginSets>) -> Sets {
        Sets(
            [Some(default.clone()), own]
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
        }
    }

    /// What was read so far, for the data-flow stage to check a string against.
    pub(crate) fn history(&self) -> std::sync::MutexGuard<'_, History> {
        lock(&self.history)
    }

    /// Keeps `text`, read on the page at `url`. A page with no origin of its own
    /// (`about:blank`, `data:`) holds nothing any site gave.
    pub(crate) fn read(&self, url: &str, text: &str) {
        match origin_of(url) {
            Some(origin) if origin != "null" => lock(&self.history).read(&origin, text),
            _ => {}
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
