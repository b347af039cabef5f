//! `airlock demo` as a newcomer runs it: the scripted agent logs in with placeholders,
//! reads the page, is refused off the allowed site, and its "Delete account" waits
//! until an operator approves it (here over the operator API, with the admin key the
//! demo printed); Ctrl-C then leaves no process, no browser and no demo data behind.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::server::BIN;

// One request to the demo's gateway, answered in full (`Connection: close`).
async fn http(port: u16, method: &str, path: &str, key: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_tours_everything_and_ctrl_c_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["demo", "--no-open"])
        .env("TMPDIR", tmp.path())
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("AIRLOCK_DATA_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let said = std::cell::RefCell::new(Vec::<String>::new());
    let mut until = async |needle: &str| -> String {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "no {needle:?} within 60 s; the demo said:\n{}",
                        said.borrow().join("\n")
                    )
                })
                .unwrap()
                .unwrap_or_else(|| {
                    panic!(
                        "the demo ended before {needle:?}:\n{}",
                        said.borrow().join("\n")
                    )
                });
            said.borrow_mut().push(line.clone());
            if line.contains(needle) {
                return line;
            }
        }
    };
    let console = until("console: http://").await;
    let port: u16 = console
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap();
    let key = console
        .split("admin key ")
        .nth(1)
        .unwrap()
        .trim_end_matches(')')
        .to_owned();
    until("agent 5/5").await;

    // The held click shows as a pending approval; the operator approves it.
    let mut pending = String::new();
    for _ in 0..100 {
        let (status, body) = http(port, "GET", "/api/v1/approvals?status=pending", &key).await;
        assert_eq!(status, 200, "{body}");
        let list: serde_json::Value = serde_json::from_str(&body).unwrap();
        if let Some(id) = list["approvals"][0]["id"].as_str() {
            assert_eq!(
                list["approvals"][0]["target"]["name"], "Delete account",
                "{body}"
            );
            pending = id.to_owned();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!pending.is_empty(), "no approval showed");
    let (status, body) = http(
        port,
        "POST",
        &format!("/api/v1/approvals/{pending}/approve"),
        &key,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    until("the agent is done").await;
    let all = said.borrow().join("\n");
    assert!(
        all.contains(&format!("data: {}", tmp.path().display())) && all.contains("thrown away"),
        "the demo says where its data is:\n{all}"
    );
    assert!(all.contains("logged in with demo"), "{all}");
    assert!(
        all.contains("Demo Bank — your account"),
        "the placeholders logged in:\n{all}"
    );
    assert!(all.contains("policy_denied: host example.com"), "{all}");
    assert!(
        all.contains("Account deleted"),
        "the approved click ran:\n{all}"
    );

    // Ctrl-C: everything stops, and nothing of the demo is left.
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    until("stopped: no browser").await;
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the demo stops on Ctrl-C")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    assert!(left.is_empty(), "left behind in TMPDIR: {left:?}");
    let needle = tmp.path().to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&cmdline).contains(&needle),
            "a process of the demo is still running: {}",
            String::from_utf8_lossy(&cmdline)
        );
    }
}

/// `--data-dir` is honoured: the demo's vault and audit log stay there, verifiable
/// after it stops; and it refuses a directory that holds anything else, so it never
/// mixes a demo credential into a real vault.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_keeps_its_data_where_asked_and_only_in_a_new_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = |dir: &std::path::Path| {
        let mut command = Command::new(BIN);
        command
            .args(["demo", "--no-open", "--data-dir"])
            .arg(dir)
            .env("TMPDIR", tmp.path())
            .env_remove("AIRLOCK_CONFIG")
            .env_remove("AIRLOCK_DATA_DIR")
            .kill_on_drop(true);
        command
    };
    let occupied = tmp.path().join("occupied");
    std::fs::create_dir_all(&occupied).unwrap();
    std::fs::write(occupied.join("airlock.toml"), "").unwrap();
    let out = demo(&occupied).output().await.unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not empty"), "{err}");

    let kept = tmp.path().join("kept");
    let mut child = demo(&kept)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    let mut until = async |needle: &str| loop {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no {needle:?} within 60 s: {said:?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("the demo ended before {needle:?}: {said:?}"));
        said.push(line.clone());
        if line.contains(needle) {
            return line;
        }
    };
    let data = until("data: ").await;
    assert!(
        data.contains(&*kept.to_string_lossy()) && data.contains("kept"),
        "{data}"
    );
    until("agent 2/5").await;
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let stopped = until("stopped:").await;
    assert!(stopped.contains("kept in"), "{stopped}");
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the demo stops on Ctrl-C")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let verify = Command::new(BIN)
        .args(["audit", "verify", "--data-dir"])
        .arg(&kept)
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("AIRLOCK_DATA_DIR")
        .output()
        .await
        .unwrap();
    let report = String::from_utf8_lossy(&verify.stdout);
    assert!(
        verify.status.success()
            && report.starts_with("ok: ")
            && !report.starts_with("ok: 0 events"),
        "{report}{}",
        String::from_utf8_lossy(&verify.stderr)
    );
}
