//! A per-test browser pool with guaranteed teardown and a leak check.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use airlock_browser::{BrowserOptions, Browsers};
use airlock_config::{BrowserConfig, EnvSource, ProcessEnv, vars};
use airlock_egress::{Resolver, SystemResolver};
use airlock_worker::{Admission, Host, LocalHost, Remote, SocketConnector};
use zeroize::Zeroizing;

use crate::fixtures::FixtureSite;

/// What a test gets: a browser pool and the fixture site.
pub struct Harness {
    /// The pool; sessions come from here.
    pub browsers: Arc<Browsers>,
    /// The fixture site.
    pub site: FixtureSite,
    profile_parent: PathBuf,
    sockets: tempfile::TempDir,
    workers: std::sync::Mutex<
        Vec<(
            tokio::sync::oneshot::Sender<()>,
            tokio::task::JoinHandle<()>,
        )>,
    >,
}

/// Where the sessions of [`Harness::host`] run: `AIRLOCK_TEST_HOST=embedded` runs
/// them in the test's process, as `[browser] worker = "embedded"` does; anything
/// else (the default) behind a worker's channel, as `airlock serve` does, so every
/// call, reply and error of the suite crosses it.
pub fn worker_mode() -> bool {
    std::env::var("AIRLOCK_TEST_HOST").map_or(true, |mode| mode != "embedded")
}

impl Harness {
    /// The directory under which this harness's Chromium profiles live.
    pub fn profile_parent(&self) -> &Path {
        &self.profile_parent
    }

    /// A browser host over this harness's pool, in the mode [`worker_mode`] says.
    pub async fn host(&self) -> Host {
        self.host_with_resolver(Arc::new(SystemResolver)).await
    }

    /// The same, its egress proxies resolving names with `resolver`.
    pub async fn host_with_resolver(&self, resolver: Arc<dyn Resolver>) -> Host {
        let local = LocalHost::with_resolver(self.browsers.clone(), resolver);
        if !worker_mode() {
            return local.into();
        }
        self.worker_host(local).await
    }

    /// A worker serving `local` on a unix socket of this harness, and a host
    /// connected to it; the worker stops at teardown.
    pub async fn worker_host(&self, local: LocalHost) -> Host {
        let token = "harness-worker-token";
        let n = self.workers.lock().unwrap_or_else(|e| e.into_inner()).len();
        let path = self.sockets.path().join(format!("w{n}.sock"));
        // Downloads and uploads cross the channel as bytes, as with a worker
        // process that cannot see the gateway's directories.
        let local = local.with_spool(self.sockets.path().join(format!("spool{n}")));
        let listener = tokio::net::UnixListener::bind(&path).expect("bind the worker socket");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let admission = Admission {
            token: Zeroizing::new(token.to_owned()),
            peer_uid: Some(nix::unistd::geteuid().as_raw()),
            ..Admission::default()
        };
        // The worker's serve would shut the shared pool down as it ends; the harness
        // does that itself, after every worker has closed its sessions.
        let served = tokio::spawn(airlock_worker::remote::serve_sessions(
            listener,
            Arc::new(local),
            admission,
            async move {
                let _ = stopped.await;
            },
        ));
        self.workers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((stop, served));
        let connector = SocketConnector {
            path,
            token: Zeroizing::new(token.to_owned()),
            worker_uid: Some(nix::unistd::geteuid().as_raw()),
        };
        Remote::new(connector)
            .await
            .expect("connect to the harness's worker")
            .into()
    }

    async fn stop_workers(&self) {
        let workers: Vec<_> = self
            .workers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        for (stop, served) in workers {
            let _ = stop.send(());
            let _ = served.await;
        }
    }
}

/// Runs `body` with a fresh pool and fixture site; see [`with_browser_config`].
pub async fn with_browser<F, Fut>(body: F)
where
    F: FnOnce(Arc<Harness>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    with_browser_config(BrowserConfig::default(), body).await;
}

/// Runs `body` with a pool built from `config` (Chromium from `AIRLOCK_CHROME` or PATH),
/// then shuts the pool down — also when `body` panics — and asserts that no Chromium
/// process and no profile directory of this pool is left.
pub async fn with_browser_config<F, Fut>(mut config: BrowserConfig, body: F)
where
    F: FnOnce(Arc<Harness>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    if config.chrome.is_none() {
        config.chrome = ProcessEnv.get(vars::CHROME).map(PathBuf::from);
    }
    let parent = tempfile::Builder::new()
        .prefix("airlock-test-")
        .tempdir()
        .expect("create a temp dir for profiles");
    let mut options =
        BrowserOptions::from_config(&config).expect("Chromium must be installed for browser tests");
    options.profile_parent = parent.path().to_owned();
    let harness = Arc::new(Harness {
        browsers: Arc::new(Browsers::new(options)),
        site: FixtureSite::start().await,
        profile_parent: parent.path().to_owned(),
        sockets: tempfile::Builder::new()
            .prefix("airlock-sock-")
            .tempdir()
            .expect("create a temp dir for worker sockets"),
        workers: std::sync::Mutex::default(),
    });
    // The body runs as its own task so a panic in it comes back as a JoinError and
    // the teardown below still runs.
    let outcome = tokio::spawn(body(harness.clone())).await;
    harness.stop_workers().await;
    harness.browsers.shutdown().await;
    assert_no_leaks(
        parent.path(),
        &harness.browsers.launched_pids(),
        &harness.browsers.launched_cgroups(),
    )
    .await;
    drop(parent);
    if let Err(error) = outcome {
        if error.is_panic() {
            std::panic::resume_unwind(error.into_panic());
        }
        panic!("test body was cancelled: {error}");
    }
}

async fn assert_no_leaks(parent: &Path, groups: &[u32], cgroups: &[PathBuf]) {
    // Processes killed by PID take a few milliseconds to disappear from /proc.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let mut procs = chromium_processes_under(parent);
        procs.extend(processes_in_groups(groups));
        let dirs: Vec<_> = std::fs::read_dir(parent)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        let cgroups: Vec<_> = cgroups.iter().filter(|d| d.exists()).collect();
        if procs.is_empty() && dirs.is_empty() && cgroups.is_empty() {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            panic!(
                "leaked after shutdown: processes {procs:?}, profile dirs {dirs:?}, cgroups {cgroups:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// PIDs of live processes whose command line mentions `dir` (Chromium processes get
/// their profile path in `--user-data-dir`, renderers inherit it in their flags).
pub fn chromium_processes_under(dir: &Path) -> Vec<u32> {
    let needle = dir.to_string_lossy().into_owned();
    pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(&needle))
                .unwrap_or(false)
        })
        .collect()
}

/// Live (non-zombie) processes whose process group is one of `groups`.
pub fn processes_in_groups(groups: &[u32]) -> Vec<u32> {
    pids()
        .into_iter()
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // Fields after the command name: state ppid pgrp …
            let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next().unwrap_or("Z");
            let pgrp = fields.nth(1).and_then(|g| g.parse::<u32>().ok());
            state != "Z" && pgrp.is_some_and(|g| groups.contains(&g))
        })
        .collect()
}

fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .collect()
        })
        .unwrap_or_default()
}
