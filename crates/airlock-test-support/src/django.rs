//! A real Django admin for tests (`django/site.py`): Django from PyPI, pinned and
//! installed into `.venv` by `make test`, its admin app as Django ships it, served by
//! Django's own threaded development server on a loopback port the kernel picks, with
//! a superuser and six users made at start. Stopped by PID when dropped.
//!
//! What happened is asked of Django itself: [`Django::users`] reads its database
//! through its ORM, [`Django::requests`] lists every request the server received.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The superuser's name.
pub const DJANGO_ADMIN: &str = "admin";
/// The superuser's password (a test value, stored in the test's vault).
pub const DJANGO_PASSWORD: &str = "Dj4ngo-adm1n-s3cret!";
/// The users made at start, besides the superuser.
pub const DJANGO_USERS: [&str; 6] = ["carol", "dave", "erin", "frank", "grace", "heidi"];

/// How long migrating a fresh database and starting may take on a loaded machine.
const READY_WITHIN: Duration = Duration::from_secs(90);

/// A running Django admin, owned by the test that started it.
pub struct Django {
    child: Child,
    origin: String,
    port: u16,
    _dir: tempfile::TempDir,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Python of `.venv` (or `AIRLOCK_TEST_PYTHON`), which has the test's Python
/// packages (the MCP SDK, Django, MiniWoB++'s pages).
pub fn python() -> PathBuf {
    let path = std::env::var_os("AIRLOCK_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv/bin/python"));
    assert!(
        path.is_file(),
        "{} is missing: `make test` installs Python's test packages into .venv",
        path.display()
    );
    path
}

impl Django {
    /// Migrates a fresh database in a temporary directory, makes the users, and
    /// serves the admin. Panics (a test helper) with Django's own words if it cannot.
    #[allow(clippy::disallowed_methods)]
    pub fn start() -> Django {
        let dir = tempfile::Builder::new()
            .prefix("airlock-django-")
            .tempdir()
            .expect("a temporary directory");
        let mut child = Command::new(python())
            .arg(root().join("crates/airlock-test-support/django/site.py"))
            .arg(dir.path())
            .arg(DJANGO_PASSWORD)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            // Keep reading so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let Ok(line) = rx.recv_timeout(READY_WITHIN) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the Django admin did not start (its errors are above)");
        };
        let origin = line
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("unexpected first line from the Django site: {line}"))
            .to_owned();
        let port = origin
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port");
        Django {
            child,
            origin,
            port,
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The URL of `path` (`/admin/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// The usernames in Django's database, sorted.
    pub async fn users(&self) -> Vec<String> {
        let body = self.get("/_test/users").await;
        serde_json::from_str::<serde_json::Value>(&body).expect("users as JSON")["users"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|u| u.as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Every request the server received (`METHOD /path?query`), in order; the
    /// test's own routes and static files aside.
    pub async fn requests(&self) -> Vec<String> {
        let body = self.get("/_test/requests").await;
        serde_json::from_str::<serde_json::Value>(&body).expect("requests as JSON")["requests"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|u| u.as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Ends every login: Django's sessions are deleted, as when they expire.
    pub async fn expire_sessions(&self) {
        self.get("/_test/expire-sessions").await;
    }

    // A plain HTTP/1.0 GET on loopback (the test's own question, not the browser's).
    async fn get(&self, path: &str) -> String {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .expect("the Django site answers");
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
            .await
            .expect("write");
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.expect("read");
        let text = String::from_utf8_lossy(&response).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
        assert!(
            head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
            "{head}"
        );
        body.to_owned()
    }
}

impl Drop for Django {
    fn drop(&mut self) {
        let pid = Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        if kill(pid, Signal::SIGTERM).is_err() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
