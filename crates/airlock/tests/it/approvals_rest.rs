//! Approvals through the operator's API of a real `airlock serve`, with an agent on
//! the official MCP Python SDK: REST approve and deny, a CLI decision from a second
//! process, a timeout, the agent's key refused, and the event stream (see
//! `clients/approvals.py`).

use std::time::Duration;

use airlock_test_support::FixtureSite;
use tokio::process::Command;

use crate::mcp_clients::{assert_clean, fixture_config, python, root};
use crate::server::{BIN, serve_with, stop};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_waits_while_an_operator_decides_over_rest_and_the_cli() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let agent_token = "agent-token-0123456789abcdef";
    let admin_key = "admin-key-fedcba9876543210";
    let config = fixture_config(
        tmp.path(),
        &site,
        &format!("[server]\nadmin_key = \"{admin_key}\"\n[approvals]\ntimeout_secs = 4\n"),
    );
    let served = serve_with(tmp.path(), Some(agent_token), Some(&config)).await;
    let out = Command::new(python())
        .arg(root().join("crates/airlock/tests/clients/approvals.py"))
        .args([&served.url, &base, agent_token, admin_key, BIN])
        .env("TMPDIR", tmp.path())
        .env("AIRLOCK_DATA_DIR", tmp.path().join("data"))
        .env("AIRLOCK_CONFIG", &config)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), out)
        .await
        .expect("the approvals flow finished within 3 minutes")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "approvals flow failed:\n{stdout}\n--- stderr ---\n{stderr}"
    );
    stop(served).await;
    assert_clean(tmp.path()).await;
}
