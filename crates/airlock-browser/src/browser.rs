//! The pool of Chromium processes: one shared Chromium for `context` sessions, one
//! dedicated Chromium per `process` session. The pool relaunches the shared Chromium
//! when it died.

use hex::ToHex as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use airlock_config::Isolation;
use airlock_core::sync::lock;

use crate::chromium::Chromium;
use crate::error::Result;
use crate::options::BrowserOptions;
use crate::session::{Session, SessionOptions};

/// Owns every Chromium process Airlock starts. Sessions come from here.
pub struct Browsers {
    options: Arc<BrowserOptions>,
    shared: tokio::sync::Mutex<Option<Arc<Chromium>>>,
    dedicated: Mutex<Vec<Weak<Chromium>>>,
    launched: Mutex<Vec<u32>>,
    cgroups: Mutex<Vec<PathBuf>>,
    next_session: AtomicU64,
}

impl Browsers {
    /// A pool that launches Chromium lazily, on the first session.
    pub fn new(options: BrowserOptions) -> Browsers {
        // A gateway killed before it could stop its Chromium left profiles behind.
        crate::launch::sweep_stale_profiles(&options.profile_parent);
        Browsers {
            options: Arc::new(options),
            shared: tokio::sync::Mutex::new(None),
            dedicated: Mutex::new(Vec::new()),
            launched: Mutex::new(Vec::new()),
            cgroups: Mutex::new(Vec::new()),
            next_session: AtomicU64::new(1),
        }
    }

    /// The resolved options.
    pub fn options(&self) -> &BrowserOptions {
        &self.options
    }

    /// Opens an isolated session: a fresh browser context in the shared Chromium
    /// (relaunched if it died), or a dedicated Chromium for `Isolation::Process`.
    pub async fn open_session(&self, options: SessionOptions) -> Result<Session> {
        let isolation = options.isolation.unwrap_or(self.options.default_isolation);
        let id = session_id(self.next_session.fetch_add(1, Ordering::Relaxed));
        match isolation {
            Isolation::Context => {
                let chromium = self.shared_chromium().await?;
                Session::open(id, chromium, false, self.options.clone(), options).await
            }
            Isolation::Process => {
                // The dedicated Chromium gets the proxy on its command line too, so
                // not even its default context has a way around it.
                let chromium =
                    Chromium::launch(&self.options, options.proxy_server.as_deref()).await?;
                self.note_launch(&chromium);
                lock(&self.dedicated).push(Arc::downgrade(&chromium));
                let opened =
                    Session::open(id, chromium.clone(), true, self.options.clone(), options).await;
                if opened.is_err() {
                    chromium.shutdown().await;
                }
                opened
            }
        }
    }

    async fn shared_chromium(&self) -> Result<Arc<Chromium>> {
        let mut shared = self.shared.lock().await;
        if let Some(chromium) = shared.as_ref() {
            if chromium.is_alive() {
                return Ok(chromium.clone());
            }
            tracing::warn!(
                chromium.pid = chromium.pid(),
                "shared Chromium died; relaunching"
            );
            chromium.shutdown().await;
        }
        let chromium = Chromium::launch(&self.options, None).await?;
        self.note_launch(&chromium);
        *shared = Some(chromium.clone());
        Ok(chromium)
    }

    /// PID of the shared Chromium, if one is running (tests kill it to prove crash handling).
    pub async fn shared_pid(&self) -> Option<u32> {
        self.shared.lock().await.as_ref().map(|c| c.pid())
    }

    fn note_launch(&self, chromium: &Chromium) {
        lock(&self.launched).push(chromium.pid());
        if let Some(dir) = chromium.cgroup() {
            lock(&self.cgroups).push(dir.to_owned());
        }
    }

    /// The memory cgroups of every Chromium this pool ever launched (none where the
    /// host allows no cgroup, or no limit is set).
    pub fn launched_cgroups(&self) -> Vec<PathBuf> {
        lock(&self.cgroups).clone()
    }

    /// PIDs (and process-group ids) of every Chromium this pool ever launched.
    pub fn launched_pids(&self) -> Vec<u32> {
        lock(&self.launched).clone()
    }

    /// Stops every Chromium this pool started, by PID, and removes their profiles.
    pub async fn shutdown(&self) {
        let shared = self.shared.lock().await.take();
        if let Some(chromium) = shared {
            chromium.shutdown().await;
        }
        let dedicated: Vec<_> = lock(&self.dedicated).drain(..).collect();
        for chromium in dedicated.iter().filter_map(Weak::upgrade) {
            chromium.shutdown().await;
        }
    }
}

/// Launches Chromium once, reads its version and stops it: `airlock doctor`'s check.
pub async fn probe(options: &BrowserOptions) -> Result<Probe> {
    let chromium = Chromium::launch(options, None).await?;
    let probe = Probe {
        version: chromium.version().to_owned(),
        cgroup: chromium.cgroup().map(Path::to_owned),
    };
    chromium.shutdown().await;
    Ok(probe)
}

/// What [`probe`] learnt of one Chromium launch.
#[derive(Debug, Clone)]
pub struct Probe {
    /// Chromium's product string, e.g. `HeadlessChrome/156.0…`.
    pub version: String,
    /// The memory cgroup it ran in, if a limit is set and the host allowed one.
    pub cgroup: Option<PathBuf>,
}

// Session ids are random so one client cannot guess another's.
fn session_id(counter: u64) -> String {
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        // Only reached if the OS has no randomness; the counter keeps ids unique.
        return format!("s{counter:024x}");
    }
    let hex: String = bytes.encode_hex::<String>();
    format!("s{hex}")
}
