//! The workers the control plane reaches over a channel: a [`Remote`] (one worker,
//! reconnected when its connection is gone) and a [`Fleet`] of them, ordered for each
//! new session by the room they report.

use std::sync::Arc;
use std::time::Duration;

use airlock_browser::{Error, Result};
use airlock_config::Isolation;

use crate::proto::Load;
use crate::remote::{About, ConnectError, Connector, RemoteHost};

/// Makes the [`Remote`] of a worker that registered itself at an address with its
/// own credential (said in each hello to it), or says why no worker may be there.
pub type MakeRemote =
    Box<dyn Fn(&str, &zeroize::Zeroizing<String>) -> Result<Remote, String> + Send + Sync>;

/// Workers listed in `[[workers]]`, and those that registered themselves.
pub struct Fleet {
    pub(crate) workers: std::sync::RwLock<Vec<Arc<Remote>>>,
    // How many of `workers`, from the first, are listed (never forgotten).
    pub(crate) listed: usize,
    // Makes a registered worker's Remote; `None`: only listed workers.
    pub(crate) make: Option<MakeRemote>,
    // Each registered worker's own credential, and when it last registered with it.
    pub(crate) credentials: std::sync::Mutex<
        std::collections::HashMap<String, (zeroize::Zeroizing<String>, tokio::time::Instant)>,
    >,
    pub(crate) isolation: Isolation,
    next: std::sync::atomic::AtomicUsize,
}

impl Fleet {
    /// Sessions spread over `workers` (at least one).
    pub fn new(workers: Vec<Remote>) -> Option<Fleet> {
        let isolation = workers.first()?.about().default_isolation;
        Some(Fleet::with(workers, None, isolation))
    }

    /// Sessions spread over `workers` (perhaps none yet) and every worker that
    /// registers itself ([`Host::learn_worker`](crate::Host::learn_worker)), reached as `make` says.
    pub fn registering(workers: Vec<Remote>, make: MakeRemote, isolation: Isolation) -> Fleet {
        Fleet::with(workers, Some(make), isolation)
    }

    fn with(workers: Vec<Remote>, make: Option<MakeRemote>, isolation: Isolation) -> Fleet {
        Fleet {
            listed: workers.len(),
            workers: std::sync::RwLock::new(workers.into_iter().map(Arc::new).collect()),
            make,
            credentials: Default::default(),
            isolation,
            next: Default::default(),
        }
    }

    // The workers now.
    pub(crate) fn all(&self) -> Vec<Arc<Remote>> {
        self.workers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Fleet {
    // The workers in the order a new session tries them: the most room first (free
    // places, within free memory), then fewer sessions, ties in turn; workers that
    // did not say (not answering within a second) or have no room last, still
    // tried, in turn.
    pub(crate) async fn by_room(&self) -> Vec<Arc<Remote>> {
        let workers = self.all();
        let n = workers.len();
        let first = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let loads = futures_util::future::join_all(workers.iter().map(|remote| async move {
            tokio::time::timeout(Duration::from_secs(1), remote.load())
                .await
                .ok()
                .and_then(|load| load.ok())
        }))
        .await;
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| {
            let turn = (i + n - first % n) % n;
            match loads[i] {
                Some(load) if load.room() > 0 => (0, u64::MAX - load.room(), load.sessions, turn),
                _ => (1, 0, 0, turn),
            }
        });
        order.into_iter().map(|i| workers[i].clone()).collect()
    }
}

/// A worker as the control plane keeps it: the live connection, and how to make
/// the next one when it breaks (a dead worker's sessions are gone; new ones open on
/// the next connection).
pub struct Remote {
    pub(crate) connector: Box<dyn Connector>,
    // None until the first connection (a worker not up yet when the control plane
    // started).
    current: tokio::sync::Mutex<Option<RemoteHost>>,
    // What it said of itself at its last connection (a stand-in until the first).
    about: std::sync::Mutex<About>,
    // Launches counted on connections before the current one.
    pub(crate) launched_before: std::sync::atomic::AtomicU64,
    pub(crate) launched_now: std::sync::atomic::AtomicU64,
}

impl Remote {
    /// Connects with `connector`; it is used again whenever the connection is gone.
    pub async fn new(connector: impl Connector) -> std::result::Result<Remote, ConnectError> {
        let host = connector.connect().await?;
        Ok(Remote {
            about: std::sync::Mutex::new(host.about().clone()),
            connector: Box::new(connector),
            current: tokio::sync::Mutex::new(Some(host)),
            launched_before: Default::default(),
            launched_now: Default::default(),
        })
    }

    /// A worker not reached yet (not up, or scaled away for now): `connector` is
    /// tried at its first use and whenever the connection is gone; until it answers,
    /// sessions open on other workers. `default_isolation` stands in for what it
    /// will say of itself.
    pub fn unconnected(connector: impl Connector, default_isolation: Isolation) -> Remote {
        Remote {
            about: std::sync::Mutex::new(About {
                protocol: crate::proto::PROTOCOL,
                pid: 0,
                uid: 0,
                browser_uid: None,
                sandbox: false,
                undumpable: false,
                default_isolation,
                action_budget_ms: 0,
            }),
            connector: Box::new(connector),
            current: tokio::sync::Mutex::new(None),
            launched_before: Default::default(),
            launched_now: Default::default(),
        }
    }

    /// What the worker said of itself at its last connection.
    pub fn about(&self) -> About {
        self.about.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Where it is reached, as configured.
    pub fn address(&self) -> String {
        self.connector.address()
    }

    /// How loaded it is now (connecting if it was not connected).
    pub async fn load(&self) -> Result<Load> {
        self.host().await?.load().await
    }

    /// What it refused since a control plane last asked (connecting if it was not
    /// connected): each reason with how many times.
    pub async fn refusals(&self) -> Result<Vec<(String, u64)>> {
        self.host().await?.refusals().await
    }

    /// Whether it answers now (connecting if it was not connected).
    pub async fn reachable(&self) -> bool {
        self.host().await.is_ok()
    }

    // The live connection, a new one made when the last is gone.
    pub(crate) async fn host(&self) -> Result<RemoteHost> {
        use std::sync::atomic::Ordering;
        let mut current = self.current.lock().await;
        if let Some(host) = current.as_ref()
            && !host.is_gone()
        {
            return Ok(host.clone());
        }
        let fresh = self
            .connector
            .connect()
            .await
            .map_err(|e| Error::BrowserUnavailable {
                reason: e.to_string(),
            })?;
        tracing::info!(pid = fresh.about().pid, "connected to a new browser worker");
        *self.about.lock().unwrap_or_else(|e| e.into_inner()) = fresh.about().clone();
        self.launched_before.fetch_add(
            self.launched_now.swap(0, Ordering::Relaxed),
            Ordering::Relaxed,
        );
        *current = Some(fresh.clone());
        Ok(fresh)
    }

    /// The worker's process id now (after reconnecting if it was gone).
    pub async fn pid(&self) -> Result<u32> {
        Ok(self.host().await?.about().pid)
    }
}
