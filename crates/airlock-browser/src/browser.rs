//! The pool of Chromium processes: one shared Chromium for `context` sessions, one
//! dedicated Chromium per `process` session. The pool relaunches the shared Chromium
//! when it died, and routes every page target Chromium attaches to the session whose
//! browser context it belongs to (so popups become tabs of their session).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use airlock_config::{BrowserConfig, Isolation};
use airlock_core::sync::lock;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::mpsc;

use crate::cdp::{Connection, Event};
use crate::error::{Error, Result};
use crate::launch::{self, ChromiumBinary, ChromiumProcess, LaunchOptions};
use crate::session::{Session, SessionOptions};

/// Resolved settings every session of a pool shares.
#[derive(Debug, Clone)]
pub struct BrowserOptions {
    /// The Chromium binary.
    pub binary: ChromiumBinary,
    /// Parent directory of temporary profiles.
    pub profile_parent: PathBuf,
    /// Budget of one action.
    pub action_timeout: Duration,
    /// Budget of one navigation.
    pub navigation_timeout: Duration,
    /// Budget of a launch until the first CDP reply.
    pub launch_timeout: Duration,
    /// Viewport in CSS pixels.
    pub viewport: (u32, u32),
    /// Isolation of sessions opened without an explicit choice.
    pub default_isolation: Isolation,
    /// Bound on each Chromium's memory (all its processes), in bytes; kept by a cgroup
    /// where the host allows one.
    pub memory_limit: Option<u64>,
}

impl BrowserOptions {
    /// Finds Chromium as configured (explicit path, else PATH) and fills in defaults.
    pub fn from_config(config: &BrowserConfig) -> Result<BrowserOptions> {
        let binary = launch::find_chromium(
            config.chrome.as_deref(),
            config.headless_shell,
            std::env::var_os("PATH"),
        )?;
        Ok(BrowserOptions {
            binary,
            profile_parent: std::env::temp_dir(),
            action_timeout: config.action_timeout,
            navigation_timeout: config.navigation_timeout,
            launch_timeout: Duration::from_secs(20),
            viewport: config.viewport,
            default_isolation: config.isolation,
            memory_limit: config.memory_limit,
        })
    }
}

/// A page target Chromium attached to, on its way to the session that owns it.
#[derive(Debug)]
pub(crate) enum TargetNotice {
    /// A new page (created by us or opened by the page) waiting for set-up.
    Attached {
        session_id: String,
        target_id: String,
        opener_id: Option<String>,
        /// `page`, or `service_worker` / `shared_worker`.
        kind: String,
    },
    /// A page was closed or crashed away.
    Detached { session_id: String },
}

/// One running Chromium and its CDP connection.
pub(crate) struct Chromium {
    pub(crate) conn: Connection,
    process: Mutex<Option<ChromiumProcess>>,
    pid: u32,
    cgroup: Option<PathBuf>,
    version: String,
    // browserContextId -> the owning session's notice channel.
    contexts: Mutex<HashMap<String, mpsc::UnboundedSender<TargetNotice>>>,
    // CDP session id of each attached page -> its browserContextId.
    page_sessions: Mutex<HashMap<String, String>>,
}

#[derive(Deserialize)]
struct Version {
    product: String,
}

impl Chromium {
    async fn launch(options: &BrowserOptions, proxy_server: Option<&str>) -> Result<Arc<Chromium>> {
        let launch_options = LaunchOptions {
            binary: options.binary.clone(),
            profile_parent: options.profile_parent.clone(),
            proxy_server: proxy_server.map(str::to_owned),
            memory_limit: options.memory_limit,
        };
        let (process, conn) = launch::launch(&launch_options).await?;
        let pid = process.pid();
        let cgroup = process.cgroup_dir().map(Path::to_owned);
        let version: Version = match conn
            .call_as(
                None,
                "Browser.getVersion",
                json!({}),
                options.launch_timeout,
            )
            .await
        {
            Ok(v) => v,
            Err(e) => {
                process.shutdown(Duration::from_millis(100)).await;
                return Err(Error::BrowserUnavailable {
                    reason: format!(
                        "`{}` started but did not answer over CDP: {e}",
                        options.binary.path.display()
                    ),
                });
            }
        };
        let events = conn.subscribe(None);
        let chromium = Arc::new(Chromium {
            conn: conn.clone(),
            process: Mutex::new(Some(process)),
            pid,
            cgroup,
            version: version.product,
            contexts: Mutex::new(HashMap::new()),
            page_sessions: Mutex::new(HashMap::new()),
        });
        tokio::spawn(route_targets(Arc::downgrade(&chromium), events));
        // Every page in every context attaches paused, so a popup is set up (dialogs,
        // downloads, viewport) before its first script runs; so does every service and
        // shared worker, so a session that inspects requests sees theirs too.
        conn.call(
            None,
            "Target.setAutoAttach",
            json!({
                "autoAttach": true,
                "waitForDebuggerOnStart": true,
                "flatten": true,
                "filter": [{ "type": "page" }, { "type": "service_worker" }, { "type": "shared_worker" }],
            }),
            options.launch_timeout,
        )
        .await?;
        tracing::info!(chromium.pid = pid, version = %chromium.version, "Chromium ready");
        Ok(chromium)
    }

    pub(crate) fn cgroup(&self) -> Option<&Path> {
        self.cgroup.as_deref()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    pub(crate) fn version(&self) -> &str {
        &self.version
    }

    pub(crate) fn is_alive(&self) -> bool {
        !self.conn.is_closed()
    }

    pub(crate) fn profile_dir(&self) -> Option<PathBuf> {
        lock(&self.process)
            .as_ref()
            .and_then(|p| p.profile_dir().map(PathBuf::from))
    }

    pub(crate) fn register_context(
        &self,
        context_id: &str,
        notices: mpsc::UnboundedSender<TargetNotice>,
    ) {
        lock(&self.contexts).insert(context_id.to_owned(), notices);
    }

    pub(crate) fn unregister_context(&self, context_id: &str) {
        lock(&self.contexts).remove(context_id);
        lock(&self.page_sessions).retain(|_, c| c != context_id);
    }

    /// Closes the pipe and tears the process down by PID; idempotent.
    pub(crate) async fn shutdown(&self) {
        let process = lock(&self.process).take();
        if let Some(process) = process {
            // Browser.close asks for an orderly exit; the pipe closing would too.
            let _ = self
                .conn
                .call(None, "Browser.close", json!({}), Duration::from_millis(500))
                .await;
            process.shutdown(Duration::from_secs(2)).await;
            tracing::debug!(chromium.pid = self.pid, "Chromium stopped");
        }
    }
}

async fn route_targets(chromium: Weak<Chromium>, mut events: mpsc::UnboundedReceiver<Event>) {
    while let Some(event) = events.recv().await {
        let Some(chromium) = chromium.upgrade() else {
            return;
        };
        match event.method.as_str() {
            "Target.attachedToTarget" => {
                let p = &event.params;
                let session_id = p["sessionId"].as_str().unwrap_or_default().to_owned();
                let info = &p["targetInfo"];
                let context = info["browserContextId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let notice = TargetNotice::Attached {
                    session_id: session_id.clone(),
                    target_id: info["targetId"].as_str().unwrap_or_default().to_owned(),
                    opener_id: info["openerId"].as_str().map(str::to_owned),
                    kind: info["type"].as_str().unwrap_or("page").to_owned(),
                };
                let sender = lock(&chromium.contexts).get(&context).cloned();
                let delivered = sender.is_some_and(|tx| tx.send(notice).is_ok());
                if delivered {
                    lock(&chromium.page_sessions).insert(session_id, context);
                } else {
                    // A page of no live session (a context being closed): let it run
                    // so it does not hold Chromium up; its context is disposed anyway.
                    let conn = chromium.conn.clone();
                    tokio::spawn(async move {
                        let _ = conn
                            .call(
                                Some(&session_id),
                                "Runtime.runIfWaitingForDebugger",
                                json!({}),
                                Duration::from_secs(2),
                            )
                            .await;
                    });
                }
            }
            "Target.detachedFromTarget" => {
                let Some(session_id) = event.params["sessionId"].as_str() else {
                    continue;
                };
                chromium.conn.forget_session(session_id);
                let context = lock(&chromium.page_sessions).remove(session_id);
                if let Some(context) = context {
                    let sender = lock(&chromium.contexts).get(&context).cloned();
                    if let Some(tx) = sender {
                        let _ = tx.send(TargetNotice::Detached {
                            session_id: session_id.to_owned(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
}

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
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("s{hex}")
}
