//! Web Bot Auth across the worker boundary. The worker holds no signing key: a
//! session that signs pauses each request, and its [`AskingSigner`] puts an [`Ask`]
//! (the session, the request's origin) on the worker's [`Asks`]; a control-plane
//! connection holding that session takes it ([`super::Worker::asks`], a long poll),
//! signs it if the session's plan names that origin, and answers
//! ([`super::Worker::answers`]). A request nobody answers within [`ASK_WITHIN`] goes
//! unsigned. So a compromised worker can obtain signatures only for origins the
//! control plane signs for its sessions, each valid for the signature's lifetime.
//!
//! [`answer_asks`] is the control plane's side: one loop per connection, answering
//! with the signer the gateway registered for each session.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use airlock_browser::{RequestSigner, SignedHeaders, Signing};
use airlock_policy::OriginSet;
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, oneshot};

use super::{WorkerClient, lock};

/// How long a paused request waits for its signature before it goes unsigned.
pub const ASK_WITHIN: Duration = Duration::from_secs(2);

/// How many asks may wait at once; beyond it requests go unsigned (a page firing
/// requests faster than the control plane answers costs no memory).
const MAX_WAITING: usize = 4096;

/// How long one long poll for asks waits.
pub(super) const POLL: Duration = Duration::from_secs(1);

/// A request's ask for a signature.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Ask {
    /// Its number on this worker.
    pub id: u64,
    /// The session whose request it is.
    pub session: String,
    /// The request's origin (`scheme://host[:port]`).
    pub origin: String,
}

#[derive(Default)]
struct State {
    next: u64,
    queue: Vec<Ask>,
    waiting: HashMap<u64, oneshot::Sender<Option<SignedHeaders>>>,
}

/// The asks a worker's sessions wait on.
#[derive(Default)]
pub(super) struct Asks {
    state: Mutex<State>,
    ready: Notify,
}

impl Asks {
    // Puts an ask on the queue; `None` when too many wait already.
    fn ask(
        &self,
        session: &str,
        origin: &str,
    ) -> Option<(u64, oneshot::Receiver<Option<SignedHeaders>>)> {
        let mut state = lock(&self.state);
        if state.waiting.len() >= MAX_WAITING {
            return None;
        }
        state.next += 1;
        let id = state.next;
        let (tx, rx) = oneshot::channel();
        state.waiting.insert(id, tx);
        state.queue.push(Ask {
            id,
            session: session.to_owned(),
            origin: origin.to_owned(),
        });
        drop(state);
        self.ready.notify_waiters();
        Some((id, rx))
    }

    // An ask nobody answered in time: gone from the queue and the waiters.
    fn forget(&self, id: u64) {
        let mut state = lock(&self.state);
        state.waiting.remove(&id);
        state.queue.retain(|a| a.id != id);
    }

    // The asks of sessions in `held`, taken off the queue; waits up to `wait` for one.
    pub(super) async fn take(&self, held: &Mutex<HashSet<String>>, wait: Duration) -> Vec<Ask> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.ready.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let held = lock(held);
                let mut state = lock(&self.state);
                let (mine, rest): (Vec<Ask>, Vec<Ask>) = std::mem::take(&mut state.queue)
                    .into_iter()
                    .partition(|a| held.contains(&a.session));
                state.queue = rest;
                if !mine.is_empty() {
                    return mine;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Vec::new();
            }
        }
    }

    // The control plane's answer to ask `id`.
    pub(super) fn answer(&self, id: u64, headers: Option<SignedHeaders>) {
        if let Some(tx) = lock(&self.state).waiting.remove(&id) {
            let _ = tx.send(headers);
        }
    }
}

/// The worker's signer of one session: asks the control plane.
pub(super) struct AskingSigner {
    pub(super) asks: Arc<Asks>,
    /// The session's id, set once it is open.
    pub(super) session: Arc<OnceLock<String>>,
    /// The origins the plan signs for (empty: every origin it may reach); others are
    /// not asked about.
    pub(super) scope: OriginSet,
}

impl RequestSigner for AskingSigner {
    fn sign(&self, origin: &str) -> Signing {
        let asked = match self.session.get() {
            Some(session) if self.scope.is_empty() || self.scope.contains(origin) => {
                self.asks.ask(session, origin)
            }
            _ => None,
        };
        let asks = self.asks.clone();
        Box::pin(async move {
            let (id, rx) = asked?;
            match tokio::time::timeout(ASK_WITHIN, rx).await {
                Ok(Ok(headers)) => headers,
                _ => {
                    asks.forget(id);
                    tracing::warn!(
                        "a request went unsigned: the control plane did not answer in time"
                    );
                    None
                }
            }
        })
    }
}

/// The control plane's signers, by the id of the session each signs for.
pub(super) type Signers = Arc<Mutex<HashMap<String, Arc<dyn RequestSigner>>>>;

/// The control plane's side of one connection: while it has a session that signs,
/// takes the worker's asks and answers each with that session's signer (`None` for
/// a session it registered none for). Ends when the connection is gone or dropped.
pub(super) async fn answer_asks(
    client: std::sync::Weak<WorkerClient>,
    signers: Signers,
    registered: Arc<Notify>,
    gone: tokio::sync::watch::Receiver<Option<String>>,
) {
    loop {
        if gone.borrow().is_some() {
            return;
        }
        if lock(&signers).is_empty() {
            // Nothing signs here: no poll until a session registers a signer.
            let wake = registered.notified();
            tokio::pin!(wake);
            wake.as_mut().enable();
            if !lock(&signers).is_empty() {
                continue;
            }
            if tokio::time::timeout(Duration::from_secs(5), wake)
                .await
                .is_err()
                && client.strong_count() == 0
            {
                return;
            }
            continue;
        }
        let Some(strong) = client.upgrade() else {
            return;
        };
        let mut context = tarpc::context::current();
        context.deadline = (tokio::time::Instant::now() + POLL + Duration::from_secs(5)).into_std();
        let asks = strong
            .asks(context, u64::try_from(POLL.as_millis()).unwrap_or(1000))
            .await;
        let Ok(asks) = asks else {
            drop(strong);
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        if asks.is_empty() {
            continue;
        }
        let mut answers = Vec::with_capacity(asks.len());
        for ask in asks {
            let signer = lock(&signers).get(&ask.session).cloned();
            let headers = match signer {
                Some(signer) => signer.sign(&ask.origin).await,
                None => None,
            };
            answers.push((ask.id, headers));
        }
        let mut context = tarpc::context::current();
        context.deadline = (tokio::time::Instant::now() + Duration::from_secs(5)).into_std();
        let _ = strong.answers(context, answers).await;
    }
}
