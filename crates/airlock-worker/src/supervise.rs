//! A worker for other machines started as root (`airlock worker --listen` on a VM,
//! or in a pod whose root is no one outside it): it runs as a root gateway's local
//! worker does. This process stays root and does only what root must: it starts
//! itself again in a user namespace it maps (the worker's user 0, Chromium's 1; see
//! [`crate::userns`]), hands that worker what only root could read (the token, the
//! TLS certificate and key, the browser options) on its stdin, passes on its stdout
//! and the signals it gets, and exits as the worker does. The worker dies with it
//! (`PR_SET_PDEATHSIG`).

use std::ffi::OsString;
use std::path::PathBuf;

use airlock_config::BrowserConfig;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use zeroize::Zeroizing;

/// What the supervisor hands the worker it started. Debug shows nothing.
#[derive(Serialize, Deserialize)]
pub struct ListenStart {
    /// The deployment's worker token.
    pub token: Zeroizing<String>,
    /// The worker's certificate chain, PEM.
    pub cert_pem: Zeroizing<String>,
    /// The worker's key, PEM.
    pub key_pem: Zeroizing<String>,
    /// The browser options.
    pub browser: BrowserConfig,
    /// The supervisor's process id (the worker's parent while it lives).
    pub supervisor: u32,
}

impl std::fmt::Debug for ListenStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListenStart")
    }
}

/// Who the supervised worker and its Chromium run as.
pub struct Users {
    /// `[worker] user`.
    pub worker: String,
    /// `[worker] browser_user`.
    pub browser: String,
}

/// Starts this executable again with `args` (the worker's own, and
/// `--user-namespace`) in a user namespace mapped for `users`, hands it `start`,
/// and serves as its parent until it exits; its exit code.
pub async fn supervise(
    args: Vec<OsString>,
    start: ListenStart,
    users: Users,
) -> Result<i32, String> {
    crate::process::ensure_user(&users.worker)
        .await
        .map_err(|e| e.to_string())?;
    crate::process::ensure_user(&users.browser)
        .await
        .map_err(|e| e.to_string())?;
    let worker = crate::process::identity(&users.worker)
        .map_err(|e| e.to_string())?
        .ok_or("not root")?;
    let browser = crate::process::identity(&users.browser)
        .map_err(|e| e.to_string())?
        .ok_or("not root")?;
    if worker == browser {
        return Err("[worker] browser_user must be another user than [worker] user".to_owned());
    }
    // The worker's temp dir: one of its own, where it can reach it.
    let parent = std::env::temp_dir();
    let parent = if crate::process::passable(&parent) {
        parent
    } else {
        PathBuf::from("/tmp")
    };
    let tmp = tempfile::Builder::new()
        .prefix("airlock-worker-tmp-")
        .tempdir_in(&parent)
        .map_err(|e| format!("cannot make the worker's temp dir: {e}"))?;
    std::os::unix::fs::chown(tmp.path(), Some(worker.0), Some(worker.1))
        .map_err(|e| format!("cannot give the worker its temp dir: {e}"))?;

    // Itself again: the one executable this process runs.
    #[allow(clippy::disallowed_methods)]
    let mut command = tokio::process::Command::new("/proc/self/exe");
    command
        .args(args)
        .arg("--user-namespace")
        .env("TMPDIR", tmp.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start the worker: {e}"))?;
    let pid = child.id().ok_or("the worker exited")?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    match lines.next_line().await {
        Ok(Some(line)) if line == crate::userns::UNSHARED => {}
        _ => {
            let _ = child.kill().await;
            return Err(
                "the worker could not enter a user namespace (its log says why)".to_owned(),
            );
        }
    }
    crate::userns::map(pid, worker, browser)
        .map_err(|e| format!("cannot map the worker's namespace: {e}"))?;
    let line = Zeroizing::new(serde_json::to_string(&start).map_err(|e| e.to_string())? + "\n");
    drop(start);
    let handed = async {
        stdin.write_all(b"\n").await?;
        stdin.write_all(line.as_bytes()).await
    };
    handed
        .await
        .map_err(|e| format!("cannot hand the worker its start: {e}"))?;
    drop(line);
    // What it says (its address once it listens), said on.
    let said = tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let mut out = std::io::stdout().lock();
            let _ = std::io::Write::write_all(&mut out, format!("{line}\n").as_bytes());
            let _ = std::io::Write::flush(&mut out);
        }
    });
    let forward = |signal| {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal);
    };
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| e.to_string())?;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.map_err(|e| e.to_string())?,
            _ = term.recv() => forward(nix::sys::signal::Signal::SIGTERM),
            _ = interrupt.recv() => forward(nix::sys::signal::Signal::SIGINT),
        }
    };
    let _ = said.await;
    drop(stdin);
    Ok(status.code().unwrap_or(1))
}

/// In the supervised worker: it dies with its supervisor (a killed supervisor leaves
/// no worker serving without it).
pub fn die_with_parent(supervisor: u32) -> Result<(), String> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .map_err(|e| format!("cannot tie the worker to its supervisor: {e}"))?;
    // The supervisor may have gone before the line above.
    if nix::unistd::getppid().as_raw() as u32 != supervisor {
        return Err("the supervisor is gone".to_owned());
    }
    Ok(())
}

/// In the worker a supervisor started: what it handed over on stdin (after the
/// namespace's line) — its TLS configuration, token and browser options — once it
/// is tied to its supervisor and knows Chromium's user.
pub async fn supervised()
-> Result<(std::sync::Arc<rustls::ServerConfig>, String, BrowserConfig), String> {
    let mut line = Zeroizing::new(String::new());
    BufReader::new(tokio::io::stdin())
        .read_line(&mut line)
        .await
        .map_err(|e| e.to_string())?;
    let start: ListenStart = serde_json::from_str(&line).map_err(|e| {
        format!(
            "the supervisor's start line is not valid (column {})",
            e.column()
        )
    })?;
    die_with_parent(start.supervisor)?;
    airlock_core::browser_user::set(crate::userns::BROWSER, crate::userns::BROWSER);
    let tls = crate::tls::server_config_pem(start.cert_pem.as_bytes(), start.key_pem.as_bytes())
        .map_err(|e| e.to_string())?;
    Ok((tls, start.token.to_string(), start.browser.clone()))
}
