//! A session's running state over a fleet, all real processes: three `airlock serve`
//! replicas over one real Postgres and one shared worker, with `[flow] mode = "deny"`
//! and an action budget. The account number an agent read through A and sends toward
//! another origin through B is refused as on one replica, and still after A is
//! killed (-9) and the send goes through C; the other origin's server sees no
//! connection until the agent goes there with nothing of it. The budget counts every
//! replica's actions: the one past it fails `budget_exhausted` wherever it lands. A
//! leased session's page fences carry one nonce whichever replica renders them. A
//! held call whose replica is killed has its approval closed as expired everywhere.
//! Every replica lists every session; one only its replica can serve (on that
//! replica's own worker) is answered `session_elsewhere` naming it. A REST task
//! started on one replica is read, waited on and cancelled on the others, and one
//! whose replica is killed is reported ended in error, on any replica; an MCP task
//! made through one replica is polled, cancelled and read finished through others.
//! (`clients/fleet_state.py` drives the MCP parts, one client per call.)

use std::time::Duration;

use airlock_test_support::FixtureSite;
use tokio::process::Command;

use crate::fleet::Fleet;
use crate::mcp_clients::{python, root};

const BUDGET: usize = 8;

async fn client(args: &[&str]) -> String {
    let out = Command::new(python())
        .arg(root().join("crates/airlock/tests/clients/fleet_state.py"))
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), out)
        .await
        .expect("the fleet state client finished within 3 minutes")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "fleet state client failed:\n{stdout}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_reads_budget_fence_waits_and_listing_are_the_fleets() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let other = format!("http://127.0.0.1:{}", site.b.port());
    let fleet = Fleet::new();
    fleet.cli(&["tenant", "create", "acme"]).await;
    let key = fleet.key("act").await;
    let (worker, at) = fleet.worker("127.0.0.1:0").await;
    // Both origins allowed: what stops the send is the data-flow check alone.
    // A stand-in model whose task's first step (a click) waits for a person.
    let (mut model, model_port) = crate::mcp_clients::scripted_model().await;
    let page = format!("http://127.0.0.1:{model_port}/");
    let rest = format!(
        "action_budget = {BUDGET}\n[flow]\nmode = \"deny\"\n[policy]\nallow_private = [\"127.0.0.1:{}\", \"127.0.0.1:{}\", \"127.0.0.1:{model_port}\"]\n\
         [[models]]\nname = \"scripted\"\nurl = \"http://127.0.0.1:{model_port}/v1/chat/completions\"\nmodel = \"scripted\"\n",
        site.a.port(),
        site.b.port()
    );
    let config = fleet.config_as("state.toml", &[&at], &rest);
    let (mut a, a_root) = fleet.replica("a", &config).await;
    let (b, b_root) = fleet.replica("b", &config).await;
    let (c, c_root) = fleet.replica("c", &config).await;

    // Read through A, sent through B: refused, nothing reached the other origin.
    client(&["read", &a_root, &base, &key, "acct"]).await;
    client(&["send", &b_root, &other, &key, "acct"]).await;
    assert_eq!(site.b.connections(), 0);

    // The budget: its actions go round the three replicas; the one past it fails on
    // each.
    let roots = [a_root.as_str(), b_root.as_str(), c_root.as_str()].join(",");
    client(&["budget", &roots, &base, &key, "budget", &BUDGET.to_string()]).await;
    // A session a backend leased fences page content with one nonce on all three.
    client(&["fence", &roots, &base, &key]).await;
    // A REST task started on A is read, waited on and cancelled on B and C.
    let approver = fleet.key("admin").await;
    client(&["tasks", &a_root, &b_root, &c_root, &page, &key, &approver]).await;
    // So is an MCP task (the Tasks extension): polled and cancelled through B,
    // finished and read through C; another key of the tenant cannot see it.
    let other_key = fleet.key("act").await;
    let mcp_tasks = [
        "mcp-tasks",
        &a_root,
        &b_root,
        &c_root,
        &page,
        &key,
        &other_key,
        &approver,
    ];
    client(&mcp_tasks).await;
    // A fourth replica on a local worker of its own: every replica lists its
    // session, and the others say which replica serves it, never `session_expired`.
    let local = fleet.config_as("local.toml", &[], &rest);
    let (d, d_root) = fleet.replica("d", &local).await;
    client(&["fleet", &roots, &d_root, &key]).await;
    crate::fleet::stop(d).await;

    // A, which served the read, is killed (-9) while a call of its waits for
    // approval: the approval closes as expired and approving it says so; the send
    // through C is still refused.
    let a_pid = a.id().unwrap().to_string();
    let dead_wait = [
        "dead-wait",
        &a_root,
        &b_root,
        &base,
        &page,
        &key,
        &approver,
        &a_pid,
    ];
    client(&dead_wait).await;
    assert!(!a.wait().await.unwrap().success());
    client(&["send", &c_root, &other, &key, "acct"]).await;
    assert_eq!(site.b.connections(), 0);
    // The same browser goes to the other origin with nothing of the account: it
    // arrives (the refusals above were the data-flow check's, not the policy's).
    client(&["read", &c_root, &other, &key, "acct"]).await;
    assert!(site.b.connections() > 0);

    model.kill().await.unwrap();
    for child in [b, c, worker] {
        crate::fleet::stop(child).await;
    }
}
