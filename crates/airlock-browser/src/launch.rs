//! Finding and launching Chromium, and tearing it down by PID.
//!
//! Each Chromium runs in its own process group with a fresh profile directory named
//! `airlock-chromium-<gateway pid>-…`. Teardown closes the CDP pipe (Chromium exits by
//! itself when it closes), kills the whole group by PID, then removes the profile. If
//! the gateway itself is killed, the pipe still closes and Chromium still exits; the
//! profile directories it leaves are swept at the next launch.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use command_fds::{CommandFdExt, FdMapping};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::net::unix::pipe;

use crate::cdp::Connection;
use crate::cgroup::MemoryCgroup;
use crate::error::{Error, Result};

/// Prefix of every profile directory Airlock creates.
pub const PROFILE_PREFIX: &str = "airlock-chromium-";

/// Where Debian keeps the real binaries behind its `/usr/bin/chromium` wrapper script.
const DEBIAN_CHROMIUM: &str = "/usr/lib/chromium/chromium";
const DEBIAN_HEADLESS_SHELL: &str = "/usr/lib/chromium/chromium-headless-shell";

/// Which build of Chromium a binary is; they need slightly different flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChromiumKind {
    /// The full browser run with `--headless`.
    Chromium,
    /// `chromium-headless-shell`: headless only, ~4x less memory per session.
    HeadlessShell,
}

/// A Chromium binary that was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChromiumBinary {
    /// Absolute path.
    pub path: PathBuf,
    /// Which build it is.
    pub kind: ChromiumKind,
}

/// Finds Chromium: an explicit path (`AIRLOCK_CHROME` or config) as given; otherwise
/// the headless shell when preferred and installed; then `chromium`,
/// `chromium-browser`, `google-chrome` on `path_var`. Never downloads anything.
pub fn find_chromium(
    explicit: Option<&Path>,
    prefer_headless_shell: bool,
    path_var: Option<OsString>,
) -> Result<ChromiumBinary> {
    if let Some(path) = explicit {
        if !path.is_file() {
            return Err(Error::BrowserUnavailable {
                reason: format!("configured Chromium `{}` does not exist", path.display()),
            });
        }
        return Ok(binary(path.to_owned()));
    }
    let dirs: Vec<PathBuf> = path_var
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let on_path = |name: &str| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file());

    if prefer_headless_shell {
        if let Some(path) = on_path("chromium-headless-shell") {
            // Debian's wrapper runs the shell as a child instead of exec'ing it, so the
            // PID we would hold is the script's, not Chromium's.
            if is_script(&path) && Path::new(DEBIAN_HEADLESS_SHELL).is_file() {
                return Ok(binary(PathBuf::from(DEBIAN_HEADLESS_SHELL)));
            }
            return Ok(binary(path));
        }
        if Path::new(DEBIAN_HEADLESS_SHELL).is_file() {
            return Ok(binary(PathBuf::from(DEBIAN_HEADLESS_SHELL)));
        }
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Some(path) = on_path(name) {
            // Debian's wrapper script loads extensions and adds flags from
            // /etc/chromium.d; the gateway wants exactly its own flags.
            if is_script(&path) && Path::new(DEBIAN_CHROMIUM).is_file() {
                return Ok(binary(PathBuf::from(DEBIAN_CHROMIUM)));
            }
            return Ok(binary(path));
        }
    }
    Err(Error::BrowserUnavailable {
        reason:
            "no Chromium found (looked for chromium, chromium-browser, google-chrome on PATH); \
                 install Debian's `chromium` package or set AIRLOCK_CHROME"
                .to_owned(),
    })
}

fn binary(path: PathBuf) -> ChromiumBinary {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let kind = if name.contains("headless-shell") || name.contains("headless_shell") {
        ChromiumKind::HeadlessShell
    } else {
        ChromiumKind::Chromium
    };
    ChromiumBinary { path, kind }
}

fn is_script(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 2];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .map(|()| &head == b"#!")
        .unwrap_or(false)
}

/// Everything needed to start one Chromium.
#[derive(Debug, Clone)]
pub(crate) struct LaunchOptions {
    /// The binary.
    pub(crate) binary: ChromiumBinary,
    /// Parent of the fresh profile directory (usually the system temp dir).
    pub(crate) profile_parent: PathBuf,
    /// A proxy for the whole browser (process isolation), loopback not bypassed.
    pub(crate) proxy_server: Option<String>,
    /// Bound on the memory of Chromium and all its processes, in bytes, kept by a
    /// cgroup where the host allows one.
    pub(crate) memory_limit: Option<u64>,
}

/// The command-line flags Airlock starts Chromium with (without the profile dir).
pub fn chromium_flags(kind: ChromiumKind, no_sandbox: bool) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--headless",
        "--remote-debugging-pipe",
        // Without these Chromium stalls or spams a closed network with retries.
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--password-store=basic",
        "--use-mock-keychain",
        "--mute-audio",
        "--hide-scrollbars",
        // WebRTC may not send UDP around the proxy the egress issue forces.
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        // Chromium never resolves a name itself: the egress proxy does, after policy.
        // So DNS prefetch and anything else that would query DNS around the proxy
        // fails inside Chromium instead (the proxy's own address is a literal).
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        // Pages are created with Target.createTarget in their own contexts.
        "--no-startup-window",
        // A page's JavaScript heap is bounded: a page that allocates without end runs
        // its renderer out of memory (the session replaces the tab) long before the
        // host's memory is gone. Native memory (canvas, images) is bounded by the
        // cgroup Chromium runs in where the host allows one (cgroup.rs).
        "--js-flags=--max-old-space-size=1024",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    // Chromium honours only the last --disable-features flag, so all go in one.
    // The omnibox WebUI popups cost a renderer per context; the back-forward cache
    // would make history navigation skip the load events actions wait for; autofill
    // would send every form's signature to Google through the session's proxy (and
    // show up as refused requests in the agent's results). Chromium 148 also asks
    // www.google.com, from every context, whether "AI mode" is on offer (AimEnabled)
    // and preconnects to the search engine (PreconnectToSearch).
    flags.push(
        "--disable-features=WebUIOmniboxPopup,WebUIOmniboxFullPopup,WebUIOmniboxAimPopup,\
         BackForwardCache,Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,\
         AimEnabled,PreconnectToSearch"
            .to_owned(),
    );
    // Screenshots from a fresh compositor surface: no wait for the next frame of the
    // page's own (~60 ms a capture to ~35).
    flags.push("--enable-features=CDPScreenshotNewSurface".to_owned());
    if kind == ChromiumKind::HeadlessShell {
        // The shell has no site isolation by default; cross-site frames must not
        // share a renderer with their embedder.
        flags.push("--site-per-process".to_owned());
    }
    if no_sandbox {
        flags.push("--no-sandbox".to_owned());
    }
    flags
}

/// Whether Chromium must run without its sandbox: it refuses to start sandboxed as
/// root, and unprivileged it needs user namespaces the kernel may not offer.
pub fn needs_no_sandbox() -> bool {
    no_sandbox_reason().is_some()
}

/// Why Chromium runs without its sandbox here, if it does.
pub fn no_sandbox_reason() -> Option<&'static str> {
    // Chromium's own user decides (in a worker's namespace, not the worker's).
    if airlock_core::browser_user::get().is_none() && nix::unistd::geteuid().is_root() {
        return Some("running as root");
    }
    let is =
        |path: &str, value: &str| std::fs::read_to_string(path).is_ok_and(|v| v.trim() == value);
    if is("/proc/sys/kernel/unprivileged_userns_clone", "0")
        || is("/proc/sys/user/max_user_namespaces", "0")
        || is(
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "1",
        )
    {
        return Some("the kernel offers no user namespaces to an unprivileged process");
    }
    userns_refused().then_some(
        "this process may not create user namespaces (a seccomp profile refuses them, as container runtimes' default profiles do)",
    )
}

// Whether creating a user namespace is refused to this process although the kernel
// offers them: a seccomp filter (Docker's and Kubernetes' `RuntimeDefault` refuse
// `unshare`/`clone` with `CLONE_NEWUSER` without `CAP_SYS_ADMIN`) that no switch
// shows. Chromium would not start sandboxed then ("No usable sandbox!"). Asked once,
// by trying: util-linux's `unshare --user` (without it, the switches decide).
fn userns_refused() -> bool {
    static REFUSED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REFUSED.get_or_init(|| {
        // launch.rs starts processes; this one exits at once (`status` waits for it).
        #[allow(clippy::disallowed_methods)]
        std::process::Command::new("unshare")
            .args(["--user", "true"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| !status.success())
    })
}

/// One running Chromium process and its profile directory; the only owner of both.
pub(crate) struct ChromiumProcess {
    child: tokio::process::Child,
    pid: u32,
    profile: Option<tempfile::TempDir>,
    cgroup: Option<MemoryCgroup>,
}

impl ChromiumProcess {
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    pub(crate) fn profile_dir(&self) -> Option<&Path> {
        self.profile.as_ref().map(|p| p.path())
    }

    /// The memory cgroup this Chromium runs in, if the host allowed one.
    pub(crate) fn cgroup_dir(&self) -> Option<&Path> {
        self.cgroup.as_ref().map(MemoryCgroup::dir)
    }

    /// Waits for the main process to exit (it does once the pipe is closed), up to
    /// `grace`; then kills the whole group by PID and removes the profile.
    pub(crate) async fn shutdown(mut self, grace: Duration) {
        if tokio::time::timeout(grace, self.child.wait())
            .await
            .is_err()
        {
            tracing::debug!(
                chromium.pid = self.pid,
                "Chromium did not exit in time; killing it"
            );
        }
        self.kill_group();
        let _ = self.child.wait().await;
        self.remove_profile();
        if let Some(cgroup) = self.cgroup.take() {
            cgroup.remove(grace.max(Duration::from_secs(1))).await;
        }
    }

    fn kill_group(&self) {
        // The group id is the main process's PID (process_group(0) at spawn); renderers
        // and the zygote are in the same group, so this reaches them too.
        if let Ok(pid) = i32::try_from(self.pid) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }

    fn remove_profile(&mut self) {
        if let Some(profile) = self.profile.take() {
            let path = profile.path().to_owned();
            if let Err(error) = profile.close() {
                tracing::warn!(path = %path.display(), %error, "could not remove Chromium profile");
            }
        }
    }
}

impl Drop for ChromiumProcess {
    // Fallback for paths that never reach `shutdown` (a panic, a dropped session):
    // kill by PID, then the TempDir removes the profile.
    fn drop(&mut self) {
        if self.profile.is_some() {
            self.kill_group();
            self.remove_profile();
            // A killed group leaves its cgroup only once its processes have exited:
            // removed with patience where a runtime is left to wait (MemoryCgroup's
            // own drop tries once, and the next launch sweeps what remains).
            if let Some(cgroup) = self.cgroup.take()
                && let Ok(runtime) = tokio::runtime::Handle::try_current()
            {
                runtime.spawn(cgroup.remove(Duration::from_secs(5)));
            }
        }
    }
}

/// Starts Chromium and connects to it over the pipe.
pub(crate) async fn launch(options: &LaunchOptions) -> Result<(ChromiumProcess, Connection)> {
    sweep_stale_profiles(&options.profile_parent);
    let unavailable = |reason: String| Error::BrowserUnavailable { reason };
    let profile = tempfile::Builder::new()
        .prefix(&format!("{PROFILE_PREFIX}{}-", std::process::id()))
        .tempdir_in(&options.profile_parent)
        .map_err(|e| {
            unavailable(format!(
                "cannot create a profile directory in `{}`: {e}",
                options.profile_parent.display()
            ))
        })?;
    // Chromium of its own user writes its profile; this process still removes it.
    let runs_as = airlock_core::browser_user::get();
    if let Some((uid, gid)) = runs_as {
        std::os::unix::fs::chown(profile.path(), Some(uid), Some(gid))
            .map_err(|e| unavailable(format!("cannot give Chromium its profile: {e}")))?;
    }

    let (child_reads, we_write) =
        std::io::pipe().map_err(|e| unavailable(format!("cannot create a pipe: {e}")))?;
    let (we_read, child_writes) =
        std::io::pipe().map_err(|e| unavailable(format!("cannot create a pipe: {e}")))?;

    let cgroup = options.memory_limit.and_then(|limit| {
        MemoryCgroup::create(limit)
            .inspect_err(|reason| {
                static SAID: AtomicBool = AtomicBool::new(false);
                if !SAID.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        %reason,
                        "Chromium's memory is not bounded: no cgroup could be made for it \
                         (docs/internals.md, \"Crashes\")"
                    );
                }
            })
            .ok()
    });

    let no_sandbox = needs_no_sandbox();
    if let Some(reason) = no_sandbox_reason() {
        static SAID: AtomicBool = AtomicBool::new(false);
        if !SAID.swap(true, Ordering::Relaxed) {
            tracing::warn!(%reason, "Chromium starts with --no-sandbox");
        }
    }
    // In a memory cgroup, Chromium is started by a shell that moves itself into the
    // group and then becomes Chromium (`exec` keeps the PID and the pipe fds), so the
    // group holds Chromium before its first fork, without unsafe code in the gateway.
    // The one place Airlock starts a process.
    #[allow(clippy::disallowed_methods)]
    let mut command = match (&cgroup, runs_as) {
        // Moved into the group as this process's user (the group is ours), then
        // Chromium's user (util-linux's `setpriv`, which a namespace's root may run).
        (Some(cgroup), Some((uid, gid))) => {
            let mut command = tokio::process::Command::new("/bin/sh");
            command
                .arg("-c")
                .arg(r#"echo 0 > "$0" && u="$1" g="$2" && shift 2 && exec setpriv --reuid="$u" --regid="$g" --clear-groups -- "$@""#)
                .arg(cgroup.procs())
                .arg(uid.to_string())
                .arg(gid.to_string())
                .arg(&options.binary.path);
            command
        }
        (Some(cgroup), None) => {
            let mut command = tokio::process::Command::new("/bin/sh");
            command
                .arg("-c")
                .arg(r#"echo 0 > "$0" && exec "$@""#)
                .arg(cgroup.procs())
                .arg(&options.binary.path);
            command
        }
        (None, runs_as) => {
            let mut command = tokio::process::Command::new(&options.binary.path);
            if let Some((uid, gid)) = runs_as {
                // std drops the supplementary groups when root sets a uid.
                command.uid(uid).gid(gid);
            }
            command
        }
    };
    // Chromium gets an environment of its own: what it needs to find its files,
    // fonts, locale and time zone, and nothing else of the process that starts it (a
    // worker's token from the deployment's environment, anything an operator set).
    command
        .env_clear()
        .envs(std::env::vars_os().filter(|(name, _)| inherited(&name.to_string_lossy())));
    command
        .args(chromium_flags(options.binary.kind, no_sandbox))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(options.proxy_server.iter().flat_map(|p| {
            [
                format!("--proxy-server={p}"),
                "--proxy-bypass-list=<-loopback>".to_owned(),
            ]
        }))
        .arg("about:blank")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    command
        .fd_mappings(vec![
            FdMapping {
                parent_fd: child_reads.into(),
                child_fd: 3,
            },
            FdMapping {
                parent_fd: child_writes.into(),
                child_fd: 4,
            },
        ])
        .map_err(|e| unavailable(format!("cannot map the CDP pipe: {e}")))?;
    let child = command.spawn().map_err(|e| {
        unavailable(format!(
            "cannot start `{}`: {e}",
            options.binary.path.display()
        ))
    })?;
    // The command still holds the child's pipe ends; drop it so that our read end
    // sees EOF when Chromium exits.
    drop(command);
    let pid = child.id().unwrap_or_default();
    let process = ChromiumProcess {
        child,
        pid,
        profile: Some(profile),
        cgroup,
    };

    let to_browser = pipe::Sender::from_owned_fd(we_write.into())
        .map_err(|e| unavailable(format!("cannot use the CDP pipe: {e}")))?;
    let from_browser = pipe::Receiver::from_owned_fd(we_read.into())
        .map_err(|e| unavailable(format!("cannot use the CDP pipe: {e}")))?;
    let connection = Connection::start(to_browser, from_browser);
    tracing::debug!(chromium.pid = pid, binary = %options.binary.path.display(), "Chromium started");
    Ok((process, connection))
}

/// Removes the profile directories a gateway that died (its PID is in their name)
/// left in `parent`, and says what it did: each one removed, or why one could not be.
pub(crate) fn sweep_stale_profiles(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PROFILE_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let path = entry.path();
            // A Chromium of the dead gateway may still be exiting (or, stuck, not
            // exiting) and writing into the profile: stop it first, by PID.
            stop_chromium_under(&path);
            // A Chromium of the dead gateway may still be writing as it exits: a
            // second try catches what it added during the first.
            let removed = std::fs::remove_dir_all(&path)
                .or_else(|_| std::fs::remove_dir_all(&path))
                .or_else(|e| if path.exists() { Err(e) } else { Ok(()) });
            match removed {
                Ok(()) => {
                    tracing::info!(path = %path.display(), "removed a stale Chromium profile")
                }
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "could not remove a stale Chromium profile")
                }
            }
        }
    }
}

/// Kills every Chromium process whose profile is `dir` or lies under it (what a
/// gateway or a browser worker that died left running) and waits, at most ~3 s,
/// until they are gone. Blocks: call it off the async threads.
pub fn stop_chromium_under(dir: &Path) {
    let exact = format!("--user-data-dir={}", dir.display());
    let under = format!("{exact}/");
    let using = || -> Vec<i32> {
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        procs
            .flatten()
            .filter_map(|p| p.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmd| {
                    cmd.split(|b| *b == 0)
                        .any(|arg| arg == exact.as_bytes() || arg.starts_with(under.as_bytes()))
                })
            })
            .collect()
    };
    // At most ~3 s, once, at start-up and only when a dead gateway left processes.
    for _ in 0..150 {
        let pids = using();
        if pids.is_empty() {
            return;
        }
        for pid in &pids {
            tracing::info!(pid, "stopping a Chromium process left running");
            let _ = nix::sys::signal::kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        // Reaped by init, not by us: poll until /proc no longer lists them.
        #[allow(clippy::disallowed_methods)] // Off the async threads (see above).
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Whether Chromium inherits the environment variable `name`: the few it reads to
/// find its files, fonts, locale and time zone.
fn inherited(name: &str) -> bool {
    matches!(
        name,
        "PATH"
            | "HOME"
            | "TMPDIR"
            | "TZ"
            | "LANG"
            | "LANGUAGE"
            | "FONTCONFIG_FILE"
            | "FONTCONFIG_PATH"
    ) || name.starts_with("LC_")
        || name.starts_with("XDG_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_path_must_exist() {
        let err = find_chromium(Some(Path::new("/nonexistent/chrome")), true, None).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/chrome"), "{err}");
    }

    #[test]
    fn nothing_on_path_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = find_chromium(None, false, Some(dir.path().as_os_str().to_owned())).unwrap_err();
        assert!(
            err.to_string().contains("install Debian's `chromium`"),
            "{err}"
        );
    }

    #[test]
    fn flags_put_all_disabled_features_in_one_flag() {
        let flags = chromium_flags(ChromiumKind::HeadlessShell, true);
        assert_eq!(
            flags
                .iter()
                .filter(|f| f.starts_with("--disable-features"))
                .count(),
            1
        );
        assert!(flags.contains(&"--site-per-process".to_owned()));
        assert!(flags.contains(&"--remote-debugging-pipe".to_owned()));
        assert!(
            !flags
                .iter()
                .any(|f| f.starts_with("--remote-debugging-port"))
        );
    }
}
