//! The operator's console end to end: a real `airlock serve`, an agent on the MCP
//! Python SDK whose clicks wait for approval (`clients/console_agent.py`), and an
//! operator in Debian's Chromium driven by playwright-core (`console/console.mjs`):
//! sign-in, CSRF refusals, approve and deny in the page unblocking the agent, a page
//! title full of markup shown as text, audit filters and export, replay, the vault
//! without values, the live view with takeover, a login saved from it that a new
//! session then injects, a server-side task a backend starts over REST (a scripted
//! model on loopback) listed and transcribed step by step with its screenshots, an
//! axe-core check of each page. Screenshots of every page land in
//! `target/console-screens/` for reviewers.

use std::process::Stdio;
use std::time::Duration;

use airlock_test_support::{FixtureSite, ModelServer, calls, finish};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::mcp_clients::{assert_clean, fixture_config, python, root};
use crate::server::{BIN, serve_with, stop};

const SECRET: &str = "console-secret-9f3b2a71";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_decides_in_the_console_while_an_agent_waits() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let agent_token = "agent-token-0123456789abcdef";
    let admin_key = "admin-key-fedcba9876543210";
    let node_modules = root().join("crates/airlock/tests/console/node_modules");
    assert!(
        node_modules.join("playwright-core").is_dir(),
        "{} is missing: `make test` installs playwright-core and axe-core there",
        node_modules.display()
    );

    // A secret in the vault: its name and origin show in the console, never its value.
    let mut vault = Command::new(BIN)
        .args([
            "vault",
            "set",
            "demo",
            "--origin",
            &base,
            "--username",
            "alice",
            "--password-stdin",
        ])
        .env("AIRLOCK_DATA_DIR", tmp.path().join("data"))
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("AIRLOCK_MASTER_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = vault.stdin.take().unwrap();
    stdin
        .write_all(format!("{SECRET}\n").as_bytes())
        .await
        .unwrap();
    drop(stdin);
    assert!(vault.wait().await.unwrap().success());

    // An admin of another tenant: the console shows them nothing of `default`'s.
    let airlock = |args: &[&str]| {
        let out = std::process::Command::new(BIN)
            .args(args)
            .env("AIRLOCK_DATA_DIR", tmp.path().join("data"))
            .env_remove("AIRLOCK_CONFIG")
            .env_remove("AIRLOCK_MASTER_KEY")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    airlock(&["tenant", "create", "other"]);
    let other_admin = airlock(&["key", "create", "--tenant", "other", "--role", "admin"]);

    // The task the operator's run starts: one click, then an answer.
    let model = ModelServer::start(vec![
        calls(&[(
            "browser_click",
            serde_json::json!({"role": "link", "name": "Page two"}),
        )]),
        finish("reached page two"),
    ])
    .await;
    let config = fixture_config(
        tmp.path(),
        &site,
        // The agent may open sessions with credentials (the saved login); every step
        // is stored, for the replay.
        &format!(
            "[server]\nadmin_key = \"{admin_key}\"\nrole = \"operate\"\n[approvals]\ntimeout_secs = 60\n[recording]\nmode = \"audit\"\n\
             [[models]]\nname = \"scripted\"\nurl = \"{}\"\nmodel = \"scripted-1\"\n[tasks]\nmodel = \"scripted\"\n",
            model.url()
        ),
    );
    let served = serve_with(tmp.path(), Some(agent_token), Some(&config)).await;
    let console_url = served.url.rsplit_once("/mcp").unwrap().0.to_owned();
    let screens = root().join("target/console-screens");

    let agent = Command::new(python())
        .arg(root().join("crates/airlock/tests/clients/console_agent.py"))
        .args([&served.url, &base, agent_token])
        .kill_on_drop(true)
        .output();
    let operator = Command::new("node")
        .arg(root().join("crates/airlock/tests/console/console.mjs"))
        .args([&console_url, admin_key, agent_token, SECRET])
        .arg(&screens)
        .arg(&other_admin)
        .arg(&base)
        .kill_on_drop(true)
        .output();
    let (agent, operator) = tokio::time::timeout(Duration::from_secs(150), async {
        tokio::join!(agent, operator)
    })
    .await
    .expect("the console run finished within 150 s");
    let (agent, operator) = (agent.expect("python runs"), operator.expect("node runs"));
    let said = |out: &std::process::Output| {
        format!(
            "{}\n--- stderr ---\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    assert!(
        operator.status.success()
            && String::from_utf8_lossy(&operator.stdout).contains(" passed, 0 failed"),
        "the operator's run failed:\n{}",
        said(&operator)
    );
    assert!(
        agent.status.success()
            && String::from_utf8_lossy(&agent.stdout).contains("13 passed, 0 failed"),
        "the agent's run failed:\n{}",
        said(&agent)
    );
    for page in [
        "sign-in",
        "sessions",
        "approvals",
        "audit",
        "replay",
        "vault",
        "tasks",
        "task",
    ] {
        assert!(
            screens.join(format!("{page}.png")).is_file(),
            "no screenshot of {page}"
        );
    }
    stop(served).await;
    assert_clean(tmp.path()).await;
}
