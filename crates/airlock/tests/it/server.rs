//! Starting and stopping the real `airlock serve` for black-box tests.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_airlock");

pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) url: String,
}

pub(crate) async fn serve(tmp: &Path, api_key: Option<&str>) -> Served {
    serve_with(tmp, api_key, None).await
}

/// `airlock serve` with an optional config file.
pub(crate) async fn serve_with(tmp: &Path, api_key: Option<&str>, config: Option<&Path>) -> Served {
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(tmp.join("data"))
        .env("TMPDIR", tmp)
        .env("RUST_LOG", "airlock=info")
        .env_remove("AIRLOCK_API_KEY")
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(key) = api_key {
        command.env("AIRLOCK_API_KEY", key);
    }
    match config {
        Some(path) => command.env("AIRLOCK_CONFIG", path),
        None => command.env_remove("AIRLOCK_CONFIG"),
    };
    let mut child = command.spawn().expect("airlock serve starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(i) = line.find("MCP endpoint: ") {
                return line[i + 14..].split_whitespace().next().unwrap().to_owned();
            }
        }
        panic!("airlock serve exited before listening");
    })
    .await
    .expect("airlock serve listens within 30 s");
    // Keep draining stderr so the server never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Served { child, url }
}

pub(crate) async fn stop(mut served: Served) {
    let pid = served.child.id().unwrap() as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(15), served.child.wait())
        .await
        .expect("airlock serve stops on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_lets_calls_finish_closes_every_session_and_leaves_nothing() {
    let site = airlock_test_support::FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let config = crate::mcp_clients::fixture_config(tmp.path(), &site, "");
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    let mut load = Command::new(crate::mcp_clients::python())
        .arg(crate::mcp_clients::root().join("crates/airlock/tests/clients/busy.py"))
        .args([&served.url, &base, "6"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(load.stdout.take().unwrap()).lines();
    let busy = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
        .await
        .expect("six agents finished a round within 2 minutes")
        .unwrap();
    assert_eq!(busy.as_deref(), Some("busy"));
    // SIGTERM while six agents are mid-call: exit 0, in time, nothing left behind.
    let started = tokio::time::Instant::now();
    stop(served).await;
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    crate::mcp_clients::assert_clean(tmp.path()).await;
    let stopped = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the agents noticed the server stopped")
        .unwrap();
    assert_eq!(stopped.as_deref(), Some("stopped 6"));
    let _ = load.wait().await;
    // Every session the agents had open is closed on the record.
    let out = Command::new(BIN)
        .args(["audit", "export", "--data-dir"])
        .arg(tmp.path().join("data"))
        .env_remove("AIRLOCK_CONFIG")
        .output()
        .await
        .unwrap();
    let events = String::from_utf8_lossy(&out.stdout);
    let opened = events.matches("\"kind\":\"session_open\"").count();
    let closed = events.matches("\"kind\":\"session_close\"").count();
    assert!(opened >= 6, "{events}");
    assert_eq!(opened, closed, "{events}");
}
