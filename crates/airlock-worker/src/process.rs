//! The local worker: a process of its own that hosts Chromium for the gateway on
//! one machine, started and restarted by the gateway ([`LocalWorker`]) and run by
//! `airlock worker` ([`run`]).
//!
//! Why a process: the gateway holds the vault's master key, the store, the audit
//! signing key and every tenant's keys; a page that breaks out of a renderer must
//! not land next to them. Started as root, the gateway starts its worker as an
//! unprivileged user (`[worker] user`, `nobody` by default), so Chromium runs with
//! its own sandbox, and in a directory of its own (0700, its user's): it cannot read
//! the data dir. Its environment is emptied (no `AIRLOCK_*` variable reaches it);
//! what it needs arrives on its stdin as one JSON line — the browser options, the
//! per-start channel token and the uid allowed to connect. When that stdin closes
//! (the gateway is gone, however it went) the worker closes its sessions and exits.

use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicBool, Ordering};

use command_fds::CommandFdExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use airlock_browser::{BrowserOptions, Browsers};
use airlock_config::BrowserConfig;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use zeroize::Zeroizing;

use crate::remote::{Admission, ConnectError, RemoteHost};
use crate::remote::{Connecting, Connector};

/// What the gateway tells a worker it starts, on its stdin.
#[derive(Serialize, Deserialize)]
pub struct WorkerStart {
    /// The browser options.
    pub browser: BrowserConfig,
    /// The token of this start's channel.
    pub token: Zeroizing<String>,
    /// The only uid that may connect (the gateway's, as the worker sees it).
    pub peer_uid: u32,
    /// The uid and gid Chromium runs as in the worker's user namespace, when the
    /// gateway made it one (`userns`).
    #[serde(default)]
    pub chromium_ids: Option<(u32, u32)>,
}

/// The descriptor the worker's executable is passed on.
const EXE_FD: i32 = 3;

// A worker, its stdin and its stdout, as spawned.
type Spawned = (
    tokio::process::Child,
    Option<tokio::process::ChildStdin>,
    Option<tokio::process::ChildStdout>,
);

// Set once a worker could not be given a user namespace: later ones are not tried.
static NO_NAMESPACE: AtomicBool = AtomicBool::new(false);

// Whether every directory from `/` down to `dir` lets other users pass through.
pub(crate) fn passable(dir: &Path) -> bool {
    dir.ancestors()
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// What the worker prints on stdout once it listens.
const READY: &str = "airlock-worker ready";

// Marks the worker non-dumpable before it holds anything: no other process of its
// user (which Chromium's unsandboxed processes, and anything else run as that user,
// are) may read its memory (`/proc/PID/mem`, `environ`, `maps`) or trace it, and it
// leaves no core file. Chromium, started by exec, gets the flag reset: it holds only
// what its pages hold.
fn undumpable() -> Result<(), RunError> {
    nix::sys::prctl::set_dumpable(false)
        .map_err(|e| RunError::Start(format!("cannot make the worker non-dumpable: {e}")))
}

// Where Chromium's profiles and a session's staged files and downloads go in the
// worker's directory `dir`: `dir` itself, or, with Chromium under a user of its own,
// `dir/browser`, Chromium's (this process, its namespace's root, still reads it),
// `dir` then letting it pass but not look or reach the socket.
fn chromium_files(dir: &Path) -> Result<PathBuf, RunError> {
    let Some((uid, gid)) = airlock_core::browser_user::get() else {
        return Ok(dir.to_owned());
    };
    let browser = dir.join("browser");
    let made = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711))
        .and_then(|()| std::fs::create_dir_all(&browser))
        .and_then(|()| std::os::unix::fs::chown(&browser, Some(uid), Some(gid)))
        .and_then(|()| std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o700)));
    made.map_err(|e| RunError::Start(format!("cannot make Chromium's directory: {e}")))?;
    Ok(browser)
}

/// Runs a worker on the unix socket `socket`, reading its [`WorkerStart`] from stdin;
/// returns when stdin closes or SIGTERM arrives, every session closed.
pub async fn run(socket: &Path) -> Result<(), RunError> {
    undumpable()?;
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut line = Zeroizing::new(String::new());
    stdin
        .read_line(&mut line)
        .await
        .map_err(|e| RunError::Start(e.to_string()))?;
    // The error says where, never what: the line holds the token.
    let start: WorkerStart = serde_json::from_str(&line).map_err(|e| {
        RunError::Start(format!(
            "the start line is not valid (line {}, column {})",
            e.line(),
            e.column()
        ))
    })?;
    drop(line);
    let mut options =
        BrowserOptions::from_config(&start.browser).map_err(|e| RunError::Start(e.to_string()))?;
    // Profiles and the spool beside the socket: the one directory this process may
    // write to. With Chromium under a user of its own, they are in a directory of
    // Chromium's (this process, its namespace's root, still reads them), and the
    // worker's directory lets it pass but not look or reach the socket.
    if let Some((uid, gid)) = start.chromium_ids {
        airlock_core::browser_user::set(uid, gid);
    }
    let files = socket.parent().map(chromium_files).transpose()?;
    if let Some(dir) = &files {
        options.profile_parent = dir.clone();
    }
    let mut host = crate::LocalHost::new(Arc::new(Browsers::new(options)));
    if let Some(dir) = &files {
        host = host.with_spool(dir.join("spool"));
    }
    let host = Arc::new(host);
    let _ = std::fs::remove_file(socket);
    let listener = tokio::net::UnixListener::bind(socket)
        .map_err(|e| RunError::Start(format!("cannot listen on {}: {e}", socket.display())))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| RunError::Start(e.to_string()))?;
    announce(READY.to_owned(), "unix socket").await?;
    let admission = Admission {
        token: start.token,
        peer_uid: Some(start.peer_uid),
        // The gateway's own worker: its sessions go with the gateway, at once.
        ..Admission::default()
    };
    let stop = async move {
        let mut rest = String::new();
        tokio::select! {
            // EOF: the gateway closed our stdin or died.
            _ = stdin.read_line(&mut rest) => {}
            () = terminated() => {}
        }
    };
    crate::remote::serve(listener, host, admission, stop).await;
    Ok(())
}

/// Runs a worker for gateways on other machines: TLS on `listen` with the
/// certificate `tls`, admitting whoever says hello with the token of `admission`,
/// on its terms; prints the bound address on stdout, then serves until SIGTERM or
/// Ctrl-C (then drains), or until it served its `exit_after` sessions; every
/// session closed.
pub async fn run_listening(
    listen: std::net::SocketAddr,
    tls: Arc<rustls::ServerConfig>,
    mut admission: Admission,
    browser: &BrowserConfig,
    register: Option<Register>,
) -> Result<(), RunError> {
    undumpable()?;
    let dir = tempfile::Builder::new()
        .prefix("airlock-worker-")
        .tempdir()
        .map_err(|e| RunError::Start(format!("cannot make the worker's directory: {e}")))?;
    let mut options =
        BrowserOptions::from_config(browser).map_err(|e| RunError::Start(e.to_string()))?;
    let files = chromium_files(dir.path())?;
    options.profile_parent = files.clone();
    let host = Arc::new(
        crate::LocalHost::new(Arc::new(Browsers::new(options))).with_spool(files.join("spool")),
    );
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| RunError::Start(format!("cannot listen on {listen}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| RunError::Start(e.to_string()))?;
    announce(format!("{READY} {bound}"), "TLS").await?;
    // Registering until the worker stops (the task goes with the runtime).
    let registering = match register {
        None => None,
        Some(register) => {
            let address = match register.advertise {
                Some(address) => address,
                None if bound.ip().is_unspecified() => {
                    return Err(RunError::Start(
                        "--register needs --advertise: the address replicas reach this worker at"
                            .to_owned(),
                    ));
                }
                None => bound.to_string(),
            };
            // A credential of this worker's own, made for this start and told only
            // to the control plane as it registers: replicas say it in their hello,
            // and the deployment's token (which every worker holds) no longer
            // admits anyone here. A stolen worker credential is that worker's alone.
            let own = Zeroizing::new(hex::encode({
                let mut bytes = [0u8; 32];
                getrandom::fill(&mut bytes)
                    .map_err(|e| RunError::Start(format!("no randomness: {e}")))?;
                bytes
            }));
            let registering = crate::register::Registering::new(
                &register.control_plane,
                &address,
                &admission.token,
                &own,
            )
            .map_err(RunError::Start)?;
            admission.token = own;
            Some(tokio::spawn(registering.run()))
        }
    };
    let stop = async {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = terminated() => {}
        }
    };
    let admission = Admission {
        peer_uid: None,
        ..admission
    };
    crate::remote::serve(
        crate::remote::Listener::Tls(listener, tokio_rustls::TlsAcceptor::from(tls)),
        host,
        admission,
        stop,
    )
    .await;
    if let Some(registering) = registering {
        registering.abort();
    }
    drop(dir);
    Ok(())
}

/// `--register` and `--advertise`, as given.
#[derive(Debug, Clone)]
pub struct Register {
    /// The control plane's root URL.
    pub control_plane: String,
    /// The address replicas reach this worker at (default: where it listens).
    pub advertise: Option<String>,
}

// Says the worker listens: in its log, and as `line` on stdout for whoever started
// it (the gateway waits for that line rather than for time to pass).
async fn announce(line: String, on: &str) -> Result<(), RunError> {
    tracing::info!(
        on,
        pid = std::process::id(),
        uid = nix::unistd::geteuid().as_raw(),
        sandbox = !airlock_browser::needs_no_sandbox(),
        "browser worker listening"
    );
    let mut stdout = tokio::io::stdout();
    stdout
        .write_all(format!("{line}\n").as_bytes())
        .await
        .and(stdout.flush().await)
        .map_err(|e| RunError::Start(e.to_string()))
}

// Resolves on SIGTERM (never, where no handler can be installed).
async fn terminated() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut terminate) => {
            terminate.recv().await;
        }
        Err(_) => std::future::pending::<()>().await,
    }
}

/// Why a worker could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Its start failed.
    #[error("the browser worker could not start: {0}")]
    Start(String),
}

/// How the gateway starts its local worker.
#[derive(Debug, Clone)]
pub struct WorkerSpawn {
    /// The `airlock` executable (it runs `airlock worker`).
    pub exe: PathBuf,
    /// The browser options the worker gets.
    pub browser: BrowserConfig,
    /// The user to run it as when this process is root.
    pub user: String,
    /// The user its Chromium runs as when this process is root (another than
    /// `user`; the same: no split).
    pub browser_user: String,
    /// Where the worker's own directory is made (the system's temp dir when `None`).
    pub parent: Option<PathBuf>,
    /// Extra arguments before `worker` (the log format and level).
    pub args: Vec<String>,
    /// How long past its budget a call may run before the worker counts as hung
    /// (and is replaced): [`crate::remote::GRACE`] but in tests.
    pub grace: Duration,
}

/// The local worker process, started on first use and again whenever the last one
/// is gone (died, hung, or its channel broke).
pub struct LocalWorker {
    spawn: WorkerSpawn,
    // Shared with the watcher of the running worker's connection.
    running: Arc<tokio::sync::Mutex<Option<Running>>>,
}

struct Running {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    dir: tempfile::TempDir,
    // Dropped after the worker and its Chromiums are gone.
    cgroup: Option<airlock_browser::DelegatedCgroup>,
}

impl std::fmt::Debug for LocalWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalWorker")
            .field("user", &self.spawn.user)
            .finish_non_exhaustive()
    }
}

/// The uid and gid a worker runs as, and whether that is a drop from root.
pub(crate) fn identity(user: &str) -> Result<Option<(u32, u32)>, ConnectError> {
    if !nix::unistd::geteuid().is_root() {
        // Not root: the worker runs as this user, which is no more than it is.
        return Ok(None);
    }
    let found = nix::unistd::User::from_name(user)
        .ok()
        .flatten()
        .ok_or_else(|| ConnectError::Spawn(format!("there is no user `{user}` ([worker] user)")))?;
    if found.uid.is_root() {
        return Err(ConnectError::Spawn(format!(
            "[worker] user `{user}` is root: the worker must run unprivileged"
        )));
    }
    Ok(Some((found.uid.as_raw(), found.gid.as_raw())))
}

// The default worker user is the worker's own: a root gateway that finds none makes
// it (a system user of its own group, no home, no login shell). Any other user must
// exist already.
pub(crate) async fn ensure_user(user: &str) -> Result<(), ConnectError> {
    if !nix::unistd::geteuid().is_root()
        || (user != airlock_config::DEFAULT_WORKER_USER
            && user != airlock_config::DEFAULT_BROWSER_USER)
        || nix::unistd::User::from_name(user).ok().flatten().is_some()
    {
        return Ok(());
    }
    let user = user.to_owned();
    tokio::task::spawn_blocking(move || make_user(&user))
        .await
        .map_err(|e| ConnectError::Spawn(e.to_string()))?
}

// Makes `user`, one process at a time: `useradd` does not look again once it holds
// the user database, so two made at once become two uids for one name (measured:
// four gateways starting together made it twice). A lock file orders them; the
// ones that wait find the user made.
fn make_user(user: &str) -> Result<(), ConnectError> {
    let failed = |why: String| {
        ConnectError::Spawn(format!(
            "there is no user `{user}` for the browser worker and it could not be made ({why}): \
             make it (`useradd --system --user-group --no-create-home --shell /usr/sbin/nologin {user}`) or set [worker] user"
        ))
    };
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/run/lock/airlock-worker-user.lock")
        .or_else(|_| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(std::env::temp_dir().join("airlock-worker-user.lock"))
        })
        .map_err(|e| failed(e.to_string()))?;
    lock.lock().map_err(|e| failed(e.to_string()))?;
    if nix::unistd::User::from_name(user).ok().flatten().is_some() {
        return Ok(());
    }
    // A third process Airlock starts (Chromium and the worker are the others): the
    // system's own tool for adding a user, waited for here.
    #[allow(clippy::disallowed_methods)]
    let made = std::process::Command::new("useradd")
        .args([
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            user,
        ])
        .output()
        .map_err(|e| failed(e.to_string()))?;
    if nix::unistd::User::from_name(user).ok().flatten().is_none() {
        return Err(failed(
            String::from_utf8_lossy(&made.stderr).trim().to_owned(),
        ));
    }
    tracing::info!(user, "made the browser worker's own user");
    Ok(())
}

impl LocalWorker {
    /// A worker started as `spawn` says, on first connect.
    pub fn new(spawn: WorkerSpawn) -> LocalWorker {
        LocalWorker {
            spawn,
            running: Arc::default(),
        }
    }

    /// The uid the worker runs as.
    pub fn worker_uid(&self) -> Result<u32, ConnectError> {
        Ok(identity(&self.spawn.user)?
            .map_or_else(|| nix::unistd::geteuid().as_raw(), |(uid, _)| uid))
    }

    /// The worker's process id, if one runs.
    pub async fn pid(&self) -> Option<u32> {
        self.running
            .lock()
            .await
            .as_ref()
            .and_then(|r| r.child.id())
    }

    async fn start(&self) -> Result<RemoteHost, ConnectError> {
        let mut running = self.running.lock().await;
        // Whatever ran before is done with: its channel broke, so it died or hung.
        if let Some(old) = running.take() {
            stop(old, Duration::ZERO).await;
        }
        ensure_user(&self.spawn.user).await?;
        let ids = identity(&self.spawn.user)?;
        // Chromium under a user of its own, when root can give it one (see
        // `userns`): never the same as the worker's.
        let browser_ids = match ids {
            Some(_) if self.spawn.browser_user != self.spawn.user => {
                ensure_user(&self.spawn.browser_user).await?;
                identity(&self.spawn.browser_user)?
            }
            _ => None,
        };
        // The worker's user must be able to reach its directory: the temp dir when
        // every directory above it lets others pass, else /tmp.
        let parent = self.spawn.parent.clone().unwrap_or_else(std::env::temp_dir);
        let parent = if ids.is_none() || passable(&parent) {
            parent
        } else {
            PathBuf::from("/tmp")
        };
        let dir = tempfile::Builder::new()
            .prefix("airlock-worker-")
            .tempdir_in(&parent)
            .map_err(|e| ConnectError::Spawn(format!("cannot make the worker's directory: {e}")))?;
        let spawn_error = |e: std::io::Error| ConnectError::Spawn(e.to_string());
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .map_err(spawn_error)?;
        if let Some((uid, gid)) = ids {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).map_err(spawn_error)?;
        }
        let socket = dir.path().join("worker.sock");
        let token = Zeroizing::new(hex::encode({
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes)
                .map_err(|e| ConnectError::Spawn(format!("no randomness: {e}")))?;
            bytes
        }));

        let split = match (ids, browser_ids) {
            (Some(worker), Some(browser)) if !NO_NAMESPACE.load(Ordering::Relaxed) => {
                Some((worker, browser))
            }
            _ => None,
        };
        let (child, stdin, stdout, chromium_ids) = match split {
            Some((worker, browser)) => match self
                .spawn_mapped(dir.path(), &socket, worker, browser)
                .await
            {
                Ok(spawned) => spawned,
                Err(reason) => {
                    // Once: a kernel or sandbox that refuses the namespace refuses
                    // it every time.
                    NO_NAMESPACE.store(true, Ordering::Relaxed);
                    tracing::warn!(
                        %reason,
                        "Chromium runs as the worker's user: no user namespace could be made for the worker"
                    );
                    let (child, stdin, stdout) = self.spawn_plain(dir.path(), &socket, ids)?;
                    (child, stdin, stdout, None)
                }
            },
            None => {
                let (child, stdin, stdout) = self.spawn_plain(dir.path(), &socket, ids)?;
                (child, stdin, stdout, None)
            }
        };
        let mut stdin = stdin;
        let start = WorkerStart {
            browser: self.spawn.browser.clone(),
            token: token.clone(),
            // In the worker's namespace this process (root, not mapped there)
            // shows as the overflow uid.
            peer_uid: if chromium_ids.is_some() {
                crate::userns::overflow_uid()
            } else {
                nix::unistd::geteuid().as_raw()
            },
            chromium_ids,
        };
        let line = Zeroizing::new(
            serde_json::to_string(&start).map_err(|e| ConnectError::Spawn(e.to_string()))? + "\n",
        );
        if let Some(stdin) = stdin.as_mut() {
            stdin
                .write_all(line.as_bytes())
                .await
                .map_err(spawn_error)?;
        }
        // Root can bound Chromium's memory with cgroups; the worker's user cannot
        // make them unless given a group of its own. Moved in before it says ready,
        // so before it starts any Chromium.
        let cgroup = match (ids, self.spawn.browser.memory_limit, child.id()) {
            (Some((uid, gid)), Some(_), Some(pid)) => {
                match airlock_browser::DelegatedCgroup::create(uid, gid)
                    .and_then(|group| group.adopt(pid).map(|()| group))
                {
                    Ok(group) => Some(group),
                    Err(reason) => {
                        tracing::warn!(%reason, "the browser worker gets no memory cgroup of its own");
                        None
                    }
                }
            }
            _ => None,
        };
        let running_now = Running {
            child,
            stdin,
            dir,
            cgroup,
        };
        // Ready when it says so; a worker that exits first ends the read at EOF.
        let ready = async {
            let mut lines = BufReader::new(stdout?).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if line == READY {
                    return Some(());
                }
            }
            None
        };
        let within = self
            .spawn
            .browser
            .navigation_timeout
            .max(Duration::from_secs(30));
        if !matches!(tokio::time::timeout(within, ready).await, Ok(Some(()))) {
            stop(running_now, Duration::ZERO).await;
            return Err(ConnectError::Spawn(
                "the browser worker exited or did not become ready (its log says why)".to_owned(),
            ));
        }
        let worker_uid = ids.map_or_else(|| nix::unistd::geteuid().as_raw(), |(uid, _)| uid);
        match RemoteHost::connect_unix(&socket, &token, Some(worker_uid)).await {
            Ok(host) => {
                let host = host.with_grace(self.spawn.grace);
                tokio::spawn(stop_when_gone(
                    Arc::downgrade(&self.running),
                    running_now.dir.path().to_owned(),
                    host.gone_signal(),
                ));
                tracing::info!(
                    pid = host.about().pid,
                    uid = host.about().uid,
                    sandbox = host.about().sandbox,
                    "browser worker started"
                );
                *running = Some(running_now);
                Ok(host)
            }
            Err(e) => {
                stop(running_now, Duration::ZERO).await;
                Err(e)
            }
        }
    }

    // The worker as `ids` (root's choice), or as this process's user.
    fn command(&self, dir: &Path, socket: &Path) -> Result<tokio::process::Command, ConnectError> {
        // The executable is opened here and run from that descriptor: the worker's
        // user may not be able to reach its path (a checkout under /root), and
        // need not: the file itself is executable by anyone.
        let exe = std::fs::File::open(&self.spawn.exe).map_err(|e| {
            ConnectError::Spawn(format!("cannot open {}: {e}", self.spawn.exe.display()))
        })?;
        // The second place Airlock starts a process (Chromium is the first).
        #[allow(clippy::disallowed_methods)]
        let mut command = tokio::process::Command::new(format!("/proc/self/fd/{EXE_FD}"));
        command
            .fd_mappings(vec![command_fds::FdMapping {
                parent_fd: exe.into(),
                child_fd: EXE_FD,
            }])
            .map_err(|e| ConnectError::Spawn(e.to_string()))?;
        command
            .arg0("airlock")
            .args(&self.spawn.args)
            .arg("worker")
            .arg("--socket")
            .arg(socket)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", dir)
            .env("LANG", "C.UTF-8")
            .current_dir(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true);
        Ok(command)
    }

    // Starts the worker as `ids` (or this process's user).
    fn spawn_plain(
        &self,
        dir: &Path,
        socket: &Path,
        ids: Option<(u32, u32)>,
    ) -> Result<Spawned, ConnectError> {
        let mut command = self.command(dir, socket)?;
        if let Some((uid, gid)) = ids {
            // std drops the supplementary groups when root sets a uid.
            command.uid(uid).gid(gid);
        }
        let mut child = command.spawn().map_err(|e| {
            ConnectError::Spawn(format!("cannot start {}: {e}", self.spawn.exe.display()))
        })?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        Ok((child, stdin, stdout))
    }

    // Starts the worker in a user namespace of its own (`userns`): it enters it
    // as root, says so, is mapped here (its 0 the worker's user, its 1 the
    // browser's) and told, then becomes its 0. Returns what `spawn_plain` does, and
    // the ids Chromium runs as inside.
    async fn spawn_mapped(
        &self,
        dir: &Path,
        socket: &Path,
        worker: (u32, u32),
        browser: (u32, u32),
    ) -> Result<
        (
            tokio::process::Child,
            Option<tokio::process::ChildStdin>,
            Option<tokio::process::ChildStdout>,
            Option<(u32, u32)>,
        ),
        String,
    > {
        let mut command = self.command(dir, socket).map_err(|e| e.to_string())?;
        command.arg("--user-namespace");
        let mut child = command.spawn().map_err(|e| e.to_string())?;
        let (mut stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let mut reader = BufReader::new(stdout.ok_or("no stdout")?);
        let mut line = String::new();
        let said = tokio::time::timeout(Duration::from_secs(10), reader.read_line(&mut line)).await;
        if !matches!(said, Ok(Ok(_))) || line.trim_end() != crate::userns::UNSHARED {
            let _ = child.kill().await;
            return Err(
                "the worker could not enter a user namespace (its log says why)".to_owned(),
            );
        }
        let pid = child.id().ok_or("the worker exited")?;
        if let Err(e) = crate::userns::map(pid, worker, browser) {
            let _ = child.kill().await;
            return Err(format!("cannot map the worker's namespace: {e}"));
        }
        if let Some(stdin) = stdin.as_mut()
            && let Err(e) = stdin.write_all(b"\n").await
        {
            let _ = child.kill().await;
            return Err(e.to_string());
        }
        // Nothing more was printed before the line that lets it go on.
        let stdout = reader.into_inner();
        let inside = (crate::userns::BROWSER, crate::userns::BROWSER);
        Ok((child, stdin, Some(stdout), Some(inside)))
    }

    /// Stops the worker: asks it to close its sessions (its stdin closes), then
    /// kills it and whatever it started if it has not gone within a few seconds.
    pub async fn stop(&self) {
        if let Some(running) = self.running.lock().await.take() {
            stop(running, Duration::from_secs(10)).await;
        }
    }
}

// Once the connection to a worker is gone (it died, hung, or stopped answering the
// heartbeat), that worker is stopped at once with whatever it started: a Chromium
// holding a session's secrets does not wait for the next call to be reaped. A
// worker already stopped or replaced (another directory) is left alone.
async fn stop_when_gone(
    running: std::sync::Weak<tokio::sync::Mutex<Option<Running>>>,
    dir: std::path::PathBuf,
    mut gone: tokio::sync::watch::Receiver<Option<String>>,
) {
    let why = match gone.wait_for(Option::is_some).await {
        Ok(why) => why.clone().unwrap_or_default(),
        Err(_) => return,
    };
    let Some(running) = running.upgrade() else {
        return;
    };
    let mut running = running.lock().await;
    if running.as_ref().is_some_and(|r| r.dir.path() == dir) {
        tracing::warn!(%why, "the browser worker is gone: stopping it and what it started");
        if let Some(old) = running.take() {
            stop(old, Duration::ZERO).await;
        }
    }
}

// Ends a worker: given `grace`, it closes its sessions itself; after that, it and
// every process under its directory (its Chromiums) are killed and the directory
// removed.
async fn stop(mut running: Running, grace: Duration) {
    drop(running.stdin.take());
    if tokio::time::timeout(grace, running.child.wait())
        .await
        .is_err()
        || grace.is_zero()
    {
        let _ = running.child.start_kill();
        let _ = running.child.wait().await;
    }
    let dir = running.dir.path().to_owned();
    let _ = tokio::task::spawn_blocking(move || airlock_browser::stop_chromium_under(&dir)).await;
    if let Some(cgroup) = running.cgroup.take() {
        cgroup.remove(Duration::from_secs(2)).await;
    }
    if let Err(e) = running.dir.close() {
        tracing::warn!(error = %e, "could not remove the worker's directory");
    }
}

impl Connector for LocalWorker {
    fn connect(&self) -> Connecting<'_> {
        Box::pin(self.start())
    }

    fn shutdown(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(self.stop())
    }
}

impl Connector for Arc<LocalWorker> {
    fn connect(&self) -> Connecting<'_> {
        Box::pin(self.start())
    }

    fn shutdown(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(LocalWorker::stop(self))
    }
}
