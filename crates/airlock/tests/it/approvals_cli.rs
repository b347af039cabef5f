//! A call held for approval in a running gateway, decided from a second process with
//! `airlock approvals …` through the shared store, as an operator in another terminal.

use airlock_gateway::{Interaction, Navigation};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use airlock_gateway::action::Target;
use airlock_gateway::{Gateway, GatewayConfig, ToolCall};
use airlock_policy::{Policy, PolicyConfig};
use airlock_risk::{ApprovalsConfig, Rules};
use airlock_store::Store;
use airlock_test_support::with_browser;
use tokio::io::AsyncBufReadExt as _;

use crate::server::BIN;

fn airlock(data: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("AIRLOCK_CONFIG")
        .env("AIRLOCK_DATA_DIR", data)
        .env("USER", "operator-7")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `airlock approvals watch` running on the data dir `data`, read a line at a time.
struct Watch {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Watch {
    fn start(data: &Path) -> Watch {
        let mut child = tokio::process::Command::new(BIN)
            .args(["approvals", "watch"])
            .env_remove("AIRLOCK_CONFIG")
            .env("AIRLOCK_DATA_DIR", data)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        Watch { child, lines }
    }

    /// Its next line, within 20 s.
    async fn next(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("watch prints within 20 s")
            .unwrap()
            .expect("watch still runs")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_approves_a_held_click_from_another_process() {
    with_browser(|h| async move {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("airlock.db"))
            .await
            .unwrap();
        let policy = h.site.policy();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                rules: Rules::from_config(&ApprovalsConfig::default()).unwrap(),
                ..GatewayConfig::with_policy(policy).store(store.clone())
            },
        );
        // A third terminal watches requests and decisions as they happen.
        let mut watch = Watch::start(dir.path());
        let mut next_watched = async || watch.next().await;
        assert_eq!(next_watched().await, "no pending approvals");
        let agent = Arc::new(gateway.agent_session());
        let out = agent
            .call(ToolCall::Navigate(Navigation::To {
                url: h.site.url("resolve.html"),
                wait_until: airlock_gateway::action::WaitUntil::Load,
                snapshot: airlock_gateway::PageView::None,
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let clicking = {
            let agent = agent.clone();
            tokio::spawn(async move {
                agent
                    .call(ToolCall::Interact(Interaction::Click {
                        target: Target::Role {
                            role: "button".to_owned(),
                            name: Some("Delete account".to_owned()),
                            index: None,
                        },
                        options: Default::default(),
                    }))
                    .await
            })
        };
        // The operator's terminal: list (JSON) until the request shows, then approve.
        let mut listed = String::new();
        for _ in 0..100 {
            let (code, out, err) = airlock(dir.path(), &["approvals", "list", "--json"]);
            assert_eq!(code, 0, "{err}");
            if !out.trim().is_empty() {
                listed = out;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let request: serde_json::Value = serde_json::from_str(listed.trim()).unwrap();
        assert_eq!(request["rule"], "destructive");
        assert_eq!(request["target"]["name"], "Delete account");
        let id = request["id"].as_str().unwrap().to_owned();
        // For a person: the element as the snapshot names it, not escaped JSON.
        let (_, text, _) = airlock(dir.path(), &["approvals", "list"]);
        assert!(
            text.contains(r#"  button "Delete account"  rule "destructive""#),
            "{text}"
        );
        let (code, out, err) = airlock(dir.path(), &["approvals", "approve", &id, "--note", "ok"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(out.trim(), format!("approved {id}"));

        let out = clicking.await.unwrap();
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("deleted 1"), "{}", out.text);
        let line = next_watched().await;
        assert!(
            line.starts_with(&format!("requested {id}  high    browser_click")),
            "{line}"
        );
        assert!(
            line.contains(r#""Delete account"  rule "destructive"  on "http://127.0.0.1:"#)
                && line.ends_with(r#"/resolve.html""#),
            "{line}"
        );
        assert_eq!(
            next_watched().await,
            format!(r#"approved {id}  by "cli:operator-7"  "ok""#)
        );
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(watch.child.id().unwrap() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let status = tokio::time::timeout(Duration::from_secs(10), watch.child.wait())
            .await
            .expect("watch ends on Ctrl-C")
            .unwrap();
        assert!(status.success(), "{status:?}");
        let record = store.approval(&id).await.unwrap().unwrap();
        assert_eq!(record.decided_by.as_deref(), Some("cli:operator-7"));

        // Decided once; an unknown id is said to be unknown.
        let (code, _, err) = airlock(dir.path(), &["approvals", "deny", &id]);
        assert_eq!(code, 1);
        assert!(err.contains("approved already"), "{err}");
        let (code, _, err) = airlock(dir.path(), &["approvals", "approve", "apr_nope"]);
        assert_eq!(code, 1);
        assert!(err.contains("no approval has the id"), "{err}");
        let (code, out, _) = airlock(dir.path(), &["approvals", "list"]);
        assert_eq!((code, out.trim()), (0, "no pending approvals"));
        gateway.shutdown().await;
    })
    .await;
}

/// A navigation held off the trusted domains to a homograph host (`bundе.test`, a
/// Cyrillic `е`): the operator's list names where it goes with the punycode host
/// first, so it cannot pass for `bunde.test`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_navigation_to_a_homograph_host_is_listed_punycode_first() {
    with_browser(|h| async move {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("airlock.db"))
            .await
            .unwrap();
        let policy = Policy::from_config(&PolicyConfig {
            trusted_domains: vec!["bunde.test".to_owned()],
            ..PolicyConfig::default()
        })
        .unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                rules: Rules::from_config(&ApprovalsConfig::default()).unwrap(),
                approval_timeout: Duration::from_secs(30),
                ..GatewayConfig::with_policy(policy).store(store.clone())
            },
        );
        let agent = Arc::new(gateway.agent_session());
        let going = {
            let agent = agent.clone();
            tokio::spawn(async move {
                agent
                    .call(ToolCall::Navigate(Navigation::To {
                        url: "https://bund\u{435}.test/pay".to_owned(),
                        wait_until: airlock_gateway::action::WaitUntil::Load,
                        snapshot: airlock_gateway::PageView::None,
                    }))
                    .await
            })
        };
        let mut listed = String::new();
        for _ in 0..200 {
            let (code, out, err) = airlock(dir.path(), &["approvals", "list"]);
            assert_eq!(code, 0, "{err}");
            if out.starts_with("apr_") {
                listed = out;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(listed.contains("leaves-trusted-domains"), "{listed}");
        let to = listed.find("  to \"").expect("a destination") + 6;
        assert!(
            listed[to..].starts_with("https://xn--bund-"),
            "the canonical host first: {listed}"
        );
        assert!(
            listed.contains("(host in Unicode: bund\u{435}.test)"),
            "{listed}"
        );
        let id = listed.split_whitespace().next().unwrap().to_owned();
        // Decided from a container with no $USER: the decider is who `--as` names.
        let out = Command::new(BIN)
            .args(["approvals", "deny", &id, "--as", "ops-lead"])
            .env_remove("AIRLOCK_CONFIG")
            .env_remove("USER")
            .env_remove("LOGNAME")
            .env("AIRLOCK_DATA_DIR", dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = going.await.unwrap();
        assert_eq!(
            out.error,
            Some(airlock_core::ErrorCode::ApprovalDenied),
            "{}",
            out.text
        );
        assert!(out.text.contains("cli:ops-lead"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

/// A held link click names where it goes, punycode host first, on `approvals list`
/// (from the approval's target) and on `approvals watch` (from the audit event).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_link_click_names_its_destination_in_list_and_watch() {
    with_browser(|h| async move {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("airlock.db"))
            .await
            .unwrap();
        let policy = Policy::from_config(&PolicyConfig {
            trusted_domains: vec!["127.0.0.1".to_owned()],
            ..h.site.policy_config()
        })
        .unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                rules: Rules::from_config(&ApprovalsConfig::default()).unwrap(),
                approval_timeout: Duration::from_secs(30),
                ..GatewayConfig::with_policy(policy).store(store.clone())
            },
        );
        let mut watch = Watch::start(dir.path());
        let mut next_watched = async || watch.next().await;
        assert_eq!(next_watched().await, "no pending approvals");
        let agent = Arc::new(gateway.agent_session());
        let out = agent
            .call(ToolCall::Navigate(Navigation::To {
                url: h.site.url("effects/invoice.html"),
                wait_until: airlock_gateway::action::WaitUntil::Load,
                snapshot: airlock_gateway::PageView::None,
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let clicking = {
            let agent = agent.clone();
            tokio::spawn(async move {
                agent
                    .call(ToolCall::Interact(Interaction::Click {
                        target: Target::Role {
                            role: "link".into(),
                            name: Some("Open invoice".into()),
                            index: None,
                        },
                        options: Default::default(),
                    }))
                    .await
            })
        };
        let watched_line = next_watched().await;
        assert!(watched_line.starts_with("requested apr_"), "{watched_line}");
        let to = watched_line.find("  to \"").expect("a destination") + 6;
        assert!(
            watched_line[to..].starts_with("https://xn--bund-"),
            "{watched_line}"
        );
        let (code, listed, err) = airlock(dir.path(), &["approvals", "list"]);
        assert_eq!(code, 0, "{err}");
        assert!(listed.contains("leaves-trusted-domains"), "{listed}");
        let to = listed.find("  to \"").expect("a destination") + 6;
        assert!(listed[to..].starts_with("https://xn--bund-"), "{listed}");
        assert!(listed.contains("/invoice/7"), "{listed}");
        let id = listed.split_whitespace().next().unwrap().to_owned();
        let (code, _, err) = airlock(dir.path(), &["approvals", "deny", &id]);
        assert_eq!(code, 0, "{err}");
        let out = clicking.await.unwrap();
        assert_eq!(
            out.error,
            Some(airlock_core::ErrorCode::ApprovalDenied),
            "{}",
            out.text
        );
        gateway.shutdown().await;
    })
    .await;
}
