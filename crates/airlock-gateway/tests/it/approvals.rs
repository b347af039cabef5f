//! Risk rules and approvals in the call pipeline, against real pages: a held call
//! runs once approved and not otherwise, on the element that was approved and no
//! other, while the session refuses other calls instead of queueing them.

use airlock_gateway::{Interaction, Reading};
use std::sync::Arc;
use std::time::Duration;

use airlock_core::ErrorCode;
use airlock_gateway::{AgentSession, Gateway, GatewayConfig, ToolCall, ToolOutput};
use airlock_risk::{ApprovalsConfig, Rules};
use airlock_store::{ApprovalRecord, ApprovalStatus, Decided};
use airlock_test_support::{Harness, with_browser};
use airlock_vault::Store;

use crate::{click_button, config, navigate};

async fn gateway(h: &Harness, timeout: Duration) -> (Arc<Gateway>, Store) {
    let store = Store::open_in_memory().await.unwrap();
    let gateway = Gateway::new(
        h.host().await,
        GatewayConfig {
            rules: Rules::from_config(&ApprovalsConfig::default()).unwrap(),
            approval_timeout: timeout,
            ..config(h).store(store.clone())
        },
    );
    (gateway, store)
}

// The one pending approval, once the held call has recorded it (within 20 s: a
// held navigation under a loaded CI machine took over 5).
pub(crate) async fn pending(store: &Store) -> ApprovalRecord {
    for _ in 0..1000 {
        if let Some(a) = store
            .approvals(None, Some(ApprovalStatus::Pending))
            .await
            .unwrap()
            .pop()
        {
            return a;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no approval was asked for");
}

/// Runs `call` until it is held, lets `while_held` look at the pending approval (and
/// the world meanwhile), decides it as `approve` (by `test:alice`), and returns the
/// approval and the call's result.
pub(crate) async fn held_then_decided(
    agent: &Arc<AgentSession>,
    store: &Store,
    call: ToolCall,
    approve: bool,
    while_held: impl FnOnce(&ApprovalRecord),
) -> (ApprovalRecord, ToolOutput) {
    let running = held(agent, call);
    let approval = pending(store).await;
    while_held(&approval);
    store
        .decide_approval(&approval.id, approve, "test:alice", None, now_ms())
        .await
        .unwrap();
    (approval, running.await.unwrap())
}

/// The `approval_requested` events on the record, oldest first.
pub(crate) async fn approval_requests(store: &Store) -> Vec<serde_json::Value> {
    store
        .audit_events(0, 1_000)
        .await
        .unwrap()
        .iter()
        .map(|e| serde_json::from_str::<serde_json::Value>(&e.body).unwrap())
        .filter(|e| e["kind"] == "approval_requested")
        .collect()
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn held(agent: &Arc<AgentSession>, call: ToolCall) -> tokio::task::JoinHandle<ToolOutput> {
    let agent = agent.clone();
    tokio::spawn(async move { agent.call(call).await })
}

async fn deleted(agent: &AgentSession) -> String {
    let out = agent
        .call(ToolCall::Read(Reading::Snapshot(
            airlock_browser::SnapshotOptions::default(),
        )))
        .await;
    out.text
        .lines()
        .find(|l| l.contains("deleted "))
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_click_runs_once_approved_and_never_when_denied() {
    with_browser(|h| async move {
        let (gateway, store) = gateway(&h, Duration::from_secs(30)).await;
        let agent = Arc::new(gateway.agent_session());
        agent.call(navigate(h.site.url("resolve.html"))).await;

        let call = held(&agent, click_button("Delete account"));
        let approval = pending(&store).await;
        assert_eq!(
            (
                approval.tool.as_str(),
                approval.rule.as_str(),
                approval.risk.as_str()
            ),
            ("browser_click", "destructive", "high")
        );
        assert!(
            approval
                .target
                .as_deref()
                .unwrap()
                .contains("Delete account")
        );
        assert_eq!(approval.page_url, Some(h.site.url("resolve.html")));
        // While it waits, the session refuses other calls at once.
        let out = agent
            .call(ToolCall::Read(Reading::Snapshot(Default::default())))
            .await;
        assert_eq!(out.error, Some(ErrorCode::ApprovalPending), "{}", out.text);
        assert_eq!(
            store
                .decide_approval(&approval.id, true, "test:alice", None, now_ms())
                .await
                .unwrap(),
            Decided::Done
        );
        let out = call.await.unwrap();
        assert_eq!(out.error, None, "{}", out.text);
        assert!(deleted(&agent).await.contains("deleted 1"));
        // Decided once: a second decision is refused.
        assert_eq!(
            store
                .decide_approval(&approval.id, false, "test:bob", None, now_ms())
                .await
                .unwrap(),
            Decided::Closed(ApprovalStatus::Approved)
        );

        let call = held(&agent, click_button("Delete account"));
        let approval = pending(&store).await;
        store
            .decide_approval(
                &approval.id,
                false,
                "test:alice",
                Some("not today"),
                now_ms(),
            )
            .await
            .unwrap();
        let out = call.await.unwrap();
        assert_eq!(out.error, Some(ErrorCode::ApprovalDenied), "{}", out.text);
        assert!(
            out.text.contains("test:alice") && out.text.contains("not today"),
            "{}",
            out.text
        );
        assert!(
            deleted(&agent).await.contains("deleted 1"),
            "a denied click ran"
        );

        // The record says who approved what under which rule.
        let events: Vec<serde_json::Value> = store
            .audit_events(0, 100)
            .await
            .unwrap()
            .iter()
            .map(|r| serde_json::from_str(&r.body).unwrap())
            .filter(|e: &serde_json::Value| {
                e["tool"] == "browser_click" && e["kind"] == "tool_call"
            })
            .collect();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["rule"], "destructive");
        assert_eq!(events[0]["approver"], "test:alice");
        assert_eq!(events[0]["error"], serde_json::Value::Null);
        assert_eq!(events[1]["error"], "approval_denied");
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_click_times_out_and_a_swapped_element_is_never_clicked() {
    with_browser(|h| async move {
        let (gateway, store) = gateway(&h, Duration::from_millis(500)).await;
        let agent = Arc::new(gateway.agent_session());
        agent.call(navigate(h.site.url("resolve.html"))).await;
        let out = agent.call(click_button("Delete account")).await;
        assert_eq!(out.error, Some(ErrorCode::ApprovalTimeout), "{}", out.text);
        let expired = store
            .approvals(None, Some(ApprovalStatus::Expired))
            .await
            .unwrap();
        assert_eq!(expired.len(), 1);
        assert!(deleted(&agent).await.contains("deleted 0"));
        gateway.shutdown().await;

        // The page swaps in a look-alike 300 ms after "Swap later": approve after that.
        let (gateway, store) = gateway_again(&h).await;
        let agent = Arc::new(gateway.agent_session());
        agent.call(navigate(h.site.url("resolve.html"))).await;
        let out = agent.call(click_button("Swap later")).await;
        assert_eq!(out.error, None, "{}", out.text);
        let call = held(&agent, click_button("Delete account"));
        let approval = pending(&store).await;
        // Outlasts the page's own 300 ms timer (the page gives no event to wait on).
        tokio::time::sleep(Duration::from_millis(600)).await;
        store
            .decide_approval(&approval.id, true, "test:alice", None, now_ms())
            .await
            .unwrap();
        let out = call.await.unwrap();
        assert_eq!(out.error, Some(ErrorCode::ApprovalStale), "{}", out.text);
        assert!(
            deleted(&agent).await.contains("deleted 0"),
            "the swapped-in button's handler ran"
        );
        gateway.shutdown().await;
    })
    .await;
}

async fn gateway_again(h: &Harness) -> (Arc<Gateway>, Store) {
    gateway(h, Duration::from_secs(30)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_literal_password_is_refused_and_a_placeholder_is_not() {
    with_browser(|h| async move {
        let (gateway, _store) = gateway(&h, Duration::from_secs(30)).await;
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("resolve.html"))).await;
        let typing = |text: &str| {
            ToolCall::Interact(Interaction::Type {
                target: airlock_gateway::action::Target::Selector("#pw".to_owned()),
                text: text.to_owned(),
                clear_first: true,
                submit: false,
            })
        };
        let out = agent.call(typing("hunter22")).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(
            out.text.contains("{{secret:NAME.password}}"),
            "{}",
            out.text
        );
        assert!(out.text.contains("literal-password"), "{}", out.text);
        // The same through a form fill, beside an ordinary field.
        let out = agent
            .call(ToolCall::Interact(Interaction::FillForm {
                fields: vec![(
                    airlock_gateway::action::Target::Selector("#pw".to_owned()),
                    "hunter22".to_owned(),
                )],
            }))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("literal-password"), "{}", out.text);
        // A placeholder is no risk to the rules.
        let out = agent
            .call(ToolCall::Interact(Interaction::Type {
                target: airlock_gateway::action::Target::Selector("#pw".to_owned()),
                text: "{{secret:nowhere.password}}".to_owned(),
                clear_first: true,
                submit: false,
            }))
            .await;
        // Not held or refused by a rule: refused because nothing is loaded.
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_the_page_made_and_the_proxy_refused_are_on_the_record_by_reason() {
    with_browser(|h| async move {
        let store = Store::open_in_memory().await.unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                warm_sessions: 1,
                ..config(&h).store(store.clone())
            },
        );
        let agent = gateway.agent_session();
        // Port b is not allowed: every request the probe fires at it is refused.
        let target = format!("http://127.0.0.1:{}", h.site.b.port());
        let out = agent
            .call(navigate(format!(
                "{}?target={target}",
                h.site.url("egress.html")
            )))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent
            .call(ToolCall::Read(Reading::WaitFor {
                condition: airlock_browser::WaitCondition::Text("done".into()),
                timeout: Some(Duration::from_secs(20)),
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        gateway.shutdown().await;
        assert_eq!(h.site.b.connections(), 0);
        let calls: Vec<serde_json::Value> = store
            .audit_events(0, 100)
            .await
            .unwrap()
            .iter()
            .filter(|r| r.kind == "tool_call")
            .map(|r| serde_json::from_str(&r.body).unwrap())
            .collect();
        let opened = store
            .audit_events(0, 100)
            .await
            .unwrap()
            .into_iter()
            .find(|r| r.kind == "session_open")
            .unwrap();
        let opened: serde_json::Value = serde_json::from_str(&opened.body).unwrap();
        assert_eq!(opened["start"], "warm", "{opened}");
        let blocked: u64 = calls.iter().map(|c| c["blocked"].as_u64().unwrap()).sum();
        let by_reason: u64 = calls
            .iter()
            .filter_map(|c| c["blocked_by"]["private address"].as_u64())
            .sum();
        assert!(blocked > 3, "{calls:?}");
        assert_eq!(by_reason, blocked, "{calls:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_default_rule_fires_however_the_agent_names_the_target() {
    use airlock_gateway::action::Target;
    use airlock_policy::{Policy, PolicyConfig};

    with_browser(|h| async move {
        let store = Store::open_in_memory().await.unwrap();
        let policy = Policy::from_config(&PolicyConfig {
            trusted_domains: vec!["127.0.0.1".to_owned()],
            ..h.site.policy_config()
        })
        .unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                policy,
                rules: Rules::from_config(&ApprovalsConfig::default()).unwrap(),
                approval_timeout: Duration::from_secs(30),
                ..config(&h).store(store.clone())
            },
        );
        let agent = Arc::new(gateway.agent_session());
        let out = agent.call(navigate(h.site.url("risky.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let snapshot = agent
            .call(ToolCall::Read(Reading::Snapshot(
                airlock_browser::SnapshotOptions::default(),
            )))
            .await
            .text;
        let ref_of = |needle: &str| -> Target {
            let line = snapshot
                .lines()
                .find(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no {needle} in {snapshot}"));
            Target::Ref(line.split_whitespace().nth(1).unwrap().parse().unwrap())
        };
        // Three ways to name each element: its ref, its role and name, a point on it.
        let forms = |role: &str, name: &str, y: f64| {
            [
                ("ref", ref_of(&format!("{role} \"{name}\""))),
                (
                    "role",
                    Target::Role {
                        role: role.to_owned(),
                        name: Some(name.to_owned()),
                        index: None,
                    },
                ),
                ("point", Target::Point { x: 120.0, y }),
            ]
        };
        for (role, name, y, rule, risk) in [
            ("button", "Delete account", 40.0, "destructive", "high"),
            ("button", "Pay now", 100.0, "payment", "critical"),
            (
                "link",
                "Partner offer",
                160.0,
                "leaves-trusted-domains",
                "medium",
            ),
        ] {
            for (form, target) in forms(role, name, y) {
                let call = held(
                    &agent,
                    ToolCall::Interact(Interaction::Click {
                        target,
                        options: Default::default(),
                    }),
                );
                let approval = pending(&store).await;
                assert_eq!(
                    (approval.rule.as_str(), approval.risk.as_str()),
                    (rule, risk),
                    "{name} by {form}"
                );
                assert!(
                    approval.target.as_deref().unwrap_or("").contains(name),
                    "{name} by {form}: {:?}",
                    approval.target
                );
                store
                    .decide_approval(&approval.id, false, "test", None, now_ms())
                    .await
                    .unwrap();
                let out = call.await.unwrap();
                assert_eq!(
                    out.error,
                    Some(ErrorCode::ApprovalDenied),
                    "{name} by {form}: {}",
                    out.text
                );
            }
        }
        // Literal text into the password field: refused outright, however named.
        for (form, target) in forms("textbox", "Password", 220.0) {
            let out = agent
                .call(ToolCall::Interact(Interaction::Type {
                    target,
                    text: "hunter22".to_owned(),
                    clear_first: true,
                    submit: false,
                }))
                .await;
            assert_eq!(
                out.error,
                Some(ErrorCode::PolicyDenied),
                "password by {form}: {}",
                out.text
            );
            assert!(out.text.contains("literal-password"), "{}", out.text);
        }
        let out = agent
            .call(ToolCall::Read(Reading::Snapshot(
                airlock_browser::SnapshotOptions::default(),
            )))
            .await;
        assert!(out.text.contains("hits none"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}
