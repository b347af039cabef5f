//! Pre-warmed sessions. Opening a context session costs a browser context, a tab and
//! its set-up (~100 ms); a warm session has paid that ahead of demand, so handing one
//! out is a few locks and two policy swaps.
//!
//! A warm session is a fresh browser context holding one `about:blank` tab, and the
//! egress proxy its context was created with. Until it is claimed, the proxy enforces
//! [`Policy::deny_all`] and the browser's navigation guard judges nothing (the tab has
//! loaded nothing and nothing drives it). The claimer sets both to the agent's policy
//! before the agent gets the session. Sessions with credentials or process isolation
//! are never served from here: they open cold, so injection happens at creation.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_config::Isolation;
use airlock_core::sync::lock;
use airlock_policy::Policy;
use airlock_worker::{BrowserSession, Host, OpenSpec, SecretSet};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// A session opened ahead of demand (its host holds the proxy its context sends
/// everything to).
pub(crate) struct Warm {
    pub(crate) session: BrowserSession,
}

impl Warm {
    /// Hands the session over: from here on its proxy and its navigation guard hold
    /// the agent's policy.
    pub(crate) async fn arm(&self, policy: &Policy) -> airlock_browser::Result<()> {
        self.session.set_policy(policy).await
    }
}

struct State {
    ready: Vec<Warm>,
    // Warm-ups scheduled (deferred until quiet, or under way).
    warming: usize,
    // Warm-ups under way: opening a context and its tab.
    building: usize,
    // Claimers waiting for a warm-up under way; never more than `building`.
    waiting: usize,
    stopped: bool,
    // Warm-ups under way: `stop` waits for them, so none launches a Chromium after
    // the gateway stopped the browsers.
    tasks: Vec<JoinHandle<()>>,
}

/// Keeps `target` warm sessions ready in the shared Chromium.
pub(crate) struct WarmPool {
    target: usize,
    /// The operator's effect rules: a warm session holds requests as a cold one would.
    effects: airlock_risk::Effects,
    state: Mutex<State>,
    claimed: AtomicU64,
    // Woken whenever a warm-up ends, ready or not.
    settled: Notify,
}

impl WarmPool {
    pub(crate) fn new(target: usize, effects: airlock_risk::Effects) -> Arc<WarmPool> {
        Arc::new(WarmPool {
            target,
            effects,
            state: Mutex::new(State {
                ready: Vec::new(),
                warming: 0,
                building: 0,
                waiting: 0,
                stopped: false,
                tasks: Vec::new(),
            }),
            claimed: AtomicU64::new(0),
            settled: Notify::new(),
        })
    }

    /// Starts as many warm-ups as the pool is short of, in the background, each once
    /// `activity` (if given) is quiet. Called at start and after each claim, never in a loop: if Chromium cannot start, the
    /// pool stays short and sessions open cold (and report why).
    pub(crate) fn refill(self: &Arc<Self>, host: &Host, activity: Option<&Arc<Activity>>) {
        let mut state = lock(&self.state);
        if state.stopped {
            return;
        }
        state.tasks.retain(|t| !t.is_finished());
        let missing = self
            .target
            .saturating_sub(state.ready.len() + state.warming);
        state.warming += missing;
        for _ in 0..missing {
            let pool = self.clone();
            let host = host.clone();
            let activity = activity.cloned();
            if activity.is_none() {
                // Counted at once, so a claimer arriving first waits for this one.
                state.building += 1;
            }
            state.tasks.push(tokio::spawn(async move {
                if let Some(activity) = &activity {
                    activity.quiet().await;
                    lock(&pool.state).building += 1;
                }
                let made = warm_up(&host, pool.effects.clone()).await;
                let leftover = {
                    let mut state = lock(&pool.state);
                    state.warming -= 1;
                    state.building -= 1;
                    match made {
                        Ok(warm) if !state.stopped => {
                            state.ready.push(warm);
                            None
                        }
                        Ok(warm) => Some(warm),
                        Err(error) => {
                            tracing::warn!(%error, "could not pre-warm a browser session");
                            None
                        }
                    }
                };
                pool.settled.notify_waiters();
                if let Some(warm) = leftover {
                    warm.session.close().await;
                }
            }));
        }
    }

    /// A warm session for a context-isolated session without credentials, if one is
    /// ready and still usable (a dead one, say after a Chromium crash, is dropped).
    /// With none ready but one under way that no other claimer waits for, waits for
    /// it: a session opened cold beside a warm-up would compete with it (the first
    /// session after start would otherwise open cold while Chromium still starts).
    pub(crate) async fn claim(&self, isolation: Isolation) -> Option<Warm> {
        if isolation != Isolation::Context {
            return None;
        }
        loop {
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            let ready = {
                let mut state = lock(&self.state);
                let ready = state.ready.pop();
                if ready.is_none() {
                    if state.stopped || state.building <= state.waiting {
                        return None;
                    }
                    state.waiting += 1;
                }
                ready
            };
            if let Some(warm) = ready {
                if matches!(warm.session.health().await, Ok((_, true))) {
                    self.claimed.fetch_add(1, Ordering::Relaxed);
                    return Some(warm);
                }
                warm.session.close().await;
                continue;
            }
            // Counted out again however the wait ends, a cancelled call included.
            let _waiting = Waiting(self);
            settled.await;
        }
    }

    /// Sessions handed out so far (diagnostics and tests).
    pub(crate) fn claimed(&self) -> u64 {
        self.claimed.load(Ordering::Relaxed)
    }

    /// Sessions ready now (diagnostics and tests).
    pub(crate) fn ready(&self) -> usize {
        lock(&self.state).ready.len()
    }

    /// Closes every ready session, after waiting for the warm-ups under way (each
    /// closes its session itself once it sees the pool stopped).
    pub(crate) async fn stop(&self) {
        let tasks = {
            let mut state = lock(&self.state);
            state.stopped = true;
            std::mem::take(&mut state.tasks)
        };
        for task in tasks {
            let _ = task.await;
        }
        let ready = std::mem::take(&mut lock(&self.state).ready);
        for warm in ready {
            warm.session.close().await;
        }
    }
}

/// When agents' calls run, so warm-ups can keep out of their way: on two cores a
/// context and its renderer starting beside an agent's click or typing slowed them by
/// half. A warm-up waits until no call has run for [`QUIET`], at most [`MAX_DEFER`].
pub(crate) struct Activity {
    busy: AtomicUsize,
    last_end: Mutex<Instant>,
}

/// No call for this long counts as quiet (an agent's model thinks for longer).
const QUIET: Duration = Duration::from_millis(250);
/// A warm-up under steady load waits no longer than this (a busy gateway opens
/// sessions cold meanwhile, ~100 ms each, rather than slow every call down).
const MAX_DEFER: Duration = Duration::from_secs(30);

impl Activity {
    pub(crate) fn new() -> Arc<Activity> {
        Arc::new(Activity {
            busy: AtomicUsize::new(0),
            last_end: Mutex::new(Instant::now()),
        })
    }

    pub(crate) fn begin(&self) {
        self.busy.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn end(&self) {
        *lock(&self.last_end) = Instant::now();
        self.busy.fetch_sub(1, Ordering::AcqRel);
    }

    // Polls: a warm-up is not worth a wake-up per call.
    async fn quiet(&self) {
        let deadline = Instant::now() + MAX_DEFER;
        loop {
            let since = lock(&self.last_end).elapsed();
            if self.busy.load(Ordering::Acquire) == 0 && since >= QUIET {
                return;
            }
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            let nap = QUIET.saturating_sub(since).max(Duration::from_millis(20));
            tokio::time::sleep(nap.min(deadline - now)).await;
        }
    }
}

struct Waiting<'a>(&'a WarmPool);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        lock(&self.0.state).waiting -= 1;
    }
}

async fn warm_up(
    host: &Host,
    effects: airlock_risk::Effects,
) -> Result<Warm, airlock_browser::Error> {
    // Denies everything until a claim arms it with the session's policy; sessions
    // with secrets never come from the pool.
    let session = host
        .open(OpenSpec {
            isolation: Some(Isolation::Context),
            policy: Policy::deny_all(),
            injection: None,
            secrets: SecretSet::default(),
            effects,
            signing: None,
        })
        .await?;
    Ok(Warm { session })
}
