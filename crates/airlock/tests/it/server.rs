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
