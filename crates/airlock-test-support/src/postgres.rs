//! A real PostgreSQL server for tests: Debian's binaries, a fresh cluster in a
//! temporary directory, run as an unprivileged user (PostgreSQL refuses root) on a
//! loopback port, and stopped by PID when dropped.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The database role tests connect as (trusted: the server listens on loopback only
/// and lives as long as the test).
pub const PG_USER: &str = "airlock";

/// How long a fresh cluster may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A running PostgreSQL server, owned by the test that started it.
pub struct Postgres {
    child: Child,
    port: u16,
    data: PathBuf,
    // Dropped after the server has stopped (fields drop after `Drop::drop`).
    _dir: tempfile::TempDir,
}

impl Postgres {
    /// Initialises a cluster in a new temporary directory and starts a server on it.
    /// Panics (this is a test helper) with the server's own words if it cannot.
    // The test helpers run tools; only launch.rs starts processes in Airlock itself.
    #[allow(clippy::disallowed_methods)]
    pub fn start() -> Postgres {
        let bin = binaries();
        let dir = tempfile::Builder::new()
            .prefix("airlock-pg-")
            .tempdir()
            .expect("a temporary directory");
        let data = dir.path().join("data");
        let user = unprivileged();
        if let Some((uid, gid)) = user {
            // The server's user must own its directory (and reach it).
            std::fs::create_dir(&data).expect("the data directory");
            for path in [dir.path(), data.as_path()] {
                std::os::unix::fs::chown(path, Some(uid.as_raw()), Some(gid.as_raw()))
                    .expect("chown");
            }
        }
        let mut initdb = Command::new(bin.join("initdb"));
        initdb
            .args([
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
                "--username",
                PG_USER,
            ])
            .arg("--pgdata")
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        as_user(&mut initdb, user);
        let out = initdb.output().expect("initdb runs");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A port taken by another test between choosing it and binding it: try again.
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port();
            match start_server(&bin, &data, port, user) {
                Ok(child) => {
                    return Postgres {
                        child,
                        port,
                        data,
                        _dir: dir,
                    };
                }
                Err(why) => last = why,
            }
        }
        panic!("postgres did not start: {last}");
    }

    /// A URL for the server's `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://{PG_USER}@127.0.0.1:{}/postgres", self.port)
    }

    /// The server's (postmaster's) process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the server (a fast shutdown: connections are cut, new ones refused),
    /// keeping its cluster for [`Postgres::restart`]: an outage.
    pub fn stop(&mut self) {
        let pid = Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        if kill(pid, Signal::SIGINT).is_err() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }

    /// Starts the server again on its cluster and port, once it is ready.
    pub fn restart(&mut self) {
        self.child = start_server(&binaries(), &self.data, self.port, unprivileged())
            .unwrap_or_else(|why| panic!("postgres did not start again: {why}"));
    }
}

impl Drop for Postgres {
    // An immediate shutdown (SIGQUIT: the postmaster stops its children, SIGKILLing
    // any that linger past 5 s, then exits), then the postmaster is reaped. The
    // cluster is thrown away with its directory, so its crash recovery never runs.
    fn drop(&mut self) {
        let pid = Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        if kill(pid, Signal::SIGQUIT).is_err() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

// Starts the server and waits for its "ready" line (or its exit, with why).
#[allow(clippy::disallowed_methods)]
fn start_server(
    bin: &Path,
    data: &Path,
    port: u16,
    user: Option<(nix::unistd::Uid, nix::unistd::Gid)>,
) -> Result<Child, String> {
    let mut command = Command::new(bin.join("postgres"));
    command
        .arg("-D")
        .arg(data)
        .args(["-p", &port.to_string()])
        .args(["-c", "listen_addresses=127.0.0.1"])
        // No Unix socket: nothing of the test's lands outside its directory.
        .args(["-c", "unix_socket_directories="])
        // A test cluster: durability against power loss is not what is under test.
        .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    as_user(&mut command, user);
    let mut child = command.spawn().map_err(|e| format!("spawn: {e}"))?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (ready_tx, ready_rx) = mpsc::channel();
    // Reads the server's log to its end (a full pipe would stall the server); says
    // when it is ready, or what it said before it stopped.
    std::thread::spawn(move || {
        let mut said = Vec::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.contains("ready to accept connections") {
                let _ = ready_tx.send(Ok(()));
            } else if said.len() < 20 {
                said.push(line);
            }
        }
        let _ = ready_tx.send(Err(said.join("\n")));
    });
    match ready_rx.recv_timeout(READY_WITHIN) {
        Ok(Ok(())) => Ok(child),
        Ok(Err(said)) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(said)
        }
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(format!("not ready within {READY_WITHIN:?}"))
        }
    }
}

// Debian's PostgreSQL binaries (the newest installed), or `AIRLOCK_PG_BIN`.
fn binaries() -> PathBuf {
    if let Some(dir) = std::env::var_os("AIRLOCK_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).expect(
        "PostgreSQL is not installed: `make postgres` (Debian's postgresql) or set AIRLOCK_PG_BIN",
    )
}

// Root runs the server as `nobody`; anyone else as themselves.
fn unprivileged() -> Option<(nix::unistd::Uid, nix::unistd::Gid)> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let user = nix::unistd::User::from_name("nobody")
        .ok()
        .flatten()
        .expect("a `nobody` user to run PostgreSQL as");
    Some((user.uid, user.gid))
}

fn as_user(command: &mut Command, user: Option<(nix::unistd::Uid, nix::unistd::Gid)>) {
    use std::os::unix::process::CommandExt as _;
    if let Some((uid, gid)) = user {
        command.uid(uid.as_raw()).gid(gid.as_raw());
        // The server's own environment, not root's home.
        command.env("HOME", "/nonexistent");
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
