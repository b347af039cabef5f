//! What an agent has read, as the data-flow check remembers it. The model's memory
//! is not one browser session's: data read in one session and sent from a second,
//! or from a one-off stateless call, is the same flow. So the history is kept per
//! scope (`[flow] scope`): by default one per caller — one per conversation for a
//! leased session that names one — shared by every browser session and one-off call
//! of that scope; `tenant` shares it over the tenant; `session` keeps one per
//! browser session. On a shared store a scope's reads are rows of their own (keyed
//! by the scope, not by a session), appended before a result returns and caught up
//! on before a send is judged, on every replica.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use airlock_config::{Flow, FlowScope};
use airlock_core::sync::lock;
use airlock_flow::{History, Settings};
use airlock_store::Store;

use crate::error::{Error, Result};
use crate::sessions::ConversationKey;

/// Most scopes one process keeps in memory beyond those a live session holds (the
/// least recently used goes; on a shared store it is read back from there when its
/// caller comes back).
const KEPT: usize = 256;

/// One scope's history.
pub(crate) struct Memory {
    // Its scope (empty: one browser session's own history).
    scope: String,
    history: std::sync::Mutex<History>,
    shared: std::sync::OnceLock<Shared>,
}

struct Shared {
    store: Store,
    // What its rows are keyed by in the store.
    key: String,
    // The last of the store's reads this history holds (by number).
    synced: AtomicI64,
}

impl Memory {
    fn new(scope: String, flow: &Flow) -> Memory {
        Memory {
            scope,
            history: std::sync::Mutex::new(History::new(Settings {
                min_length: flow.min_length,
                word_length: flow.word_length,
                capacity: flow.history_bytes,
            })),
            shared: std::sync::OnceLock::new(),
        }
    }

    /// A history of one browser session's own (`[flow] scope = "session"`).
    pub(crate) fn own(flow: &Flow) -> Arc<Memory> {
        Arc::new(Memory::new(String::new(), flow))
    }

    /// Shares this history through `store` from now on; `session` keys a history
    /// of one session's own.
    pub(crate) fn share(&self, store: &Store, session: &str) {
        let key = if self.scope.is_empty() {
            session.to_owned()
        } else {
            self.scope.clone()
        };
        let _ = self.shared.set(Shared {
            store: store.clone(),
            key,
            synced: AtomicI64::new(0),
        });
    }

    /// What was read so far (on a shared store, after [`Memory::catch_up`]).
    pub(crate) fn history(&self) -> std::sync::MutexGuard<'_, History> {
        lock(&self.history)
    }

    /// Keeps `text`, read on `origin`; on a shared store the lines kept are written
    /// there before this returns (a store that cannot take them is logged: this
    /// replica still holds them).
    pub(crate) async fn read(&self, origin: &str, text: &str) {
        let mut kept = String::new();
        lock(&self.history).read_kept(origin, text, |line| {
            kept.push_str(&String::from_utf8_lossy(line));
            kept.push('\n');
        });
        let Some(shared) = self.shared.get() else {
            return;
        };
        if kept.is_empty() {
            return;
        }
        if let Err(e) = shared.store.append_read(&shared.key, origin, &kept).await {
            tracing::warn!(error = %e, "could not share what was read with the other replicas");
        }
    }

    /// Takes in what other sessions and replicas of this scope read since this one
    /// last looked. A send is not judged on a partial history: a store that cannot
    /// answer refuses the call (`store_unavailable`).
    pub(crate) async fn catch_up(&self) -> Result<()> {
        let Some(shared) = self.shared.get() else {
            return Ok(());
        };
        let after = shared.synced.load(Ordering::Acquire);
        let rows = shared
            .store
            .reads_after(&shared.key, after)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "could not read the shared reads");
                Error::StoreUnavailable(
                    "the store that holds what was read on other replicas cannot be reached; nothing was sent, retry shortly".to_owned(),
                )
            })?;
        let Some(last) = rows.last().map(|r| r.n) else {
            return Ok(());
        };
        let mut history = lock(&self.history);
        for row in &rows {
            // Lines this process wrote itself are there already: kept once per origin.
            history.read(&row.origin, &row.lines);
        }
        shared.synced.fetch_max(last, Ordering::AcqRel);
        Ok(())
    }
}

/// The scope a session's reads are remembered in, by `[flow] scope`: `None` for a
/// history of its own.
pub(crate) fn scope_of(
    scope: FlowScope,
    tenant: &str,
    key: Option<&str>,
    conversation: Option<&ConversationKey>,
) -> Option<String> {
    let caller = format!("{tenant}/{}", key.unwrap_or("anonymous"));
    match (scope, conversation) {
        (FlowScope::Session, _) => None,
        (FlowScope::Tenant, _) => Some(format!("tenant:{tenant}")),
        (FlowScope::Caller, None) => Some(format!("caller:{caller}")),
        (FlowScope::Caller, Some(c)) => Some(format!(
            "conversation:{caller}/{}/{}",
            c.user, c.conversation
        )),
    }
}

/// The scopes' histories this process holds, the least recently used let go first.
#[derive(Default)]
pub(crate) struct Memories {
    kept: std::sync::Mutex<HashMap<String, (Arc<Memory>, u64)>>,
    clock: AtomicU64,
}

impl Memories {
    /// `scope`'s history (a fresh one of its own for `None`).
    pub(crate) fn of(&self, scope: Option<String>, flow: &Flow) -> Arc<Memory> {
        let Some(scope) = scope else {
            return Memory::own(flow);
        };
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let mut kept = lock(&self.kept);
        if let Some((memory, used)) = kept.get_mut(&scope) {
            *used = now;
            return memory.clone();
        }
        // Only a history no live session holds is let go: one a session still
        // holds would come back empty for the caller's next session.
        if kept.len() >= KEPT
            && let Some(oldest) = kept
                .iter()
                .filter(|(_, (memory, _))| Arc::strong_count(memory) == 1)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(scope, _)| scope.clone())
        {
            kept.remove(&oldest);
        }
        let memory = Arc::new(Memory::new(scope.clone(), flow));
        kept.insert(scope, (memory.clone(), now));
        memory
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A scope a live session holds is never let go for room, so the caller's next
    // session shares its history; one nobody holds goes, least recently used first.
    #[test]
    fn a_held_scope_outlives_the_cap_and_an_unheld_one_goes() {
        let flow = Flow::default();
        let memories = Memories::default();
        let held = memories.of(Some("caller:t/held".to_owned()), &flow);
        let first = Arc::downgrade(&memories.of(Some("caller:t/first".to_owned()), &flow));
        for i in 0..KEPT {
            memories.of(Some(format!("caller:t/{i}")), &flow);
        }
        let again = memories.of(Some("caller:t/held".to_owned()), &flow);
        assert!(Arc::ptr_eq(&held, &again));
        // The oldest nobody held was let go (and freed).
        assert!(first.upgrade().is_none());
        assert!(lock(&memories.kept).len() <= KEPT + 1);
        // A session's own history is never shared.
        assert!(!Arc::ptr_eq(
            &memories.of(None, &flow),
            &memories.of(None, &flow)
        ));
    }
}
