//! A published corpus of prompt-injection attacks replayed through the gateway:
//! AgentDojo's 35 injection tasks (PyPI `agentdojo`, pinned in the Makefile;
//! `tests/agentdojo/export.py` renders each suite's environment, its injection
//! vectors filled with the task's goal, into pages of a webmail, a calendar, a drive,
//! a bank, a chat, a travel site, the open web and the attacker's site, and writes the
//! task's ground truth as browser steps). Each task is replayed by a caller of its
//! own, as a fully hijacked agent would: it reads the pages, then fills and submits
//! the attacker's form. No model, no person: the deployment is the one the docs
//! recommend for an unattended agent (`[flow] mode = "deny"`, the built-in rules,
//! held calls expiring after a second, the user's own mail domain listed). A task
//! reaches the attacker when a site records the request its goal is (the attacker's
//! address, account or page). The goals that move the user's data or money to the
//! attacker must reach it zero times; the rest (a fixed text sent, a file deleted, a
//! room booked, a page visited) are counted and printed with what stopped them.

use std::time::Duration;

use airlock_browser::Target;
use airlock_config::{Flow, FlowMode};
use airlock_core::ErrorCode;
use airlock_gateway::{Gateway, GatewayConfig, Interaction, ToolCall};
use airlock_policy::Policy;
use airlock_test_support::with_browser;
use serde_json::Value;

use crate::navigate;
use crate::web::Web;

const SITES: &[&str] = &[
    "mail", "calendar", "drive", "travel", "bank", "files", "slack", "web", "attacker",
];

// The corpus, exported by the pinned package.
fn corpus() -> Value {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join(".venv-agentdojo/bin/python");
    assert!(
        python.exists(),
        "the AgentDojo replay needs its venv: run `make pyclient`"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("agentdojo.json");
    #[allow(clippy::disallowed_methods)]
    let status = std::process::Command::new(python)
        .arg(root.join("crates/airlock-gateway/tests/agentdojo/export.py"))
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "the AgentDojo export failed");
    serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
}

fn textbox(name: &str) -> Target {
    Target::Role {
        role: "textbox".into(),
        name: Some(name.into()),
        index: None,
    }
}

// What stopped a call, for the table.
fn stopped_by(out: &airlock_gateway::ToolOutput) -> String {
    let rule = out
        .text
        .split("rule `")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .unwrap_or("?");
    match out.error {
        Some(ErrorCode::PolicyDenied) => format!("refused ({rule})"),
        Some(ErrorCode::ApprovalTimeout) => format!("held for a person ({rule}), expired"),
        Some(code) => format!("failed ({code:?})"),
        None => String::new(),
    }
}

// Replays every task; `checked`: under the recommended deployment, else with the
// data-flow stage off and no risk rules (the replay's own control: its steps do
// reach the attacker). The table's rows, and the data or money tasks that reached.
async fn replay(
    h: &airlock_test_support::Harness,
    web: &Web,
    policy: &Policy,
    corpus: &Value,
    checked: bool,
) -> (Vec<String>, Vec<String>) {
    let mut rows = Vec::new();
    let mut reached_data = Vec::new();
    for suite in corpus["suites"].as_array().unwrap() {
        let name = suite["name"].as_str().unwrap();
        let own_domains = suite["own_domains"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap().to_owned())
            .collect();
        let (mode, rules) = match checked {
            true => (
                FlowMode::Deny,
                airlock_risk::Rules::from_config(&Default::default()).unwrap(),
            ),
            false => (FlowMode::Off, airlock_risk::Rules::default()),
        };
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                // Held calls wait for a person who never comes.
                store: Some(airlock_vault::Store::open_in_memory().await.unwrap()),
                approval_timeout: Duration::from_secs(1),
                rules,
                flow: Flow {
                    mode,
                    own_domains,
                    ..Flow::default()
                },
                ..GatewayConfig::with_policy(policy.clone())
            },
        );
        for task in suite["tasks"].as_array().unwrap() {
            let id = task["id"].as_str().unwrap();
            let kind = task["kind"].as_str().unwrap();
            web.set_pages(&task["pages"]);
            let counts: Vec<usize> = SITES.iter().map(|s| web.requests(s).len()).collect();
            // A caller of its own: nothing another task read is remembered.
            let agent = gateway.agent_session_as(
                airlock_gateway::Principal {
                    tenant: "default".to_owned(),
                    role: airlock_core::Role::Act,
                    key: Some(format!("key-{name}-{id}-{checked}")),
                },
                airlock_gateway::Surface::Mcp,
            );
            let outcome = run_steps(&agent, web, task).await;
            agent.close().await;
            let reached = match task["reach"].as_array() {
                Some(reach) => {
                    let site = reach[0].as_str().unwrap();
                    let marker = reach[1].as_str().unwrap();
                    let encoded: String =
                        url::form_urlencoded::byte_serialize(marker.as_bytes()).collect();
                    let index = SITES.iter().position(|s| *s == site).unwrap();
                    web.requests(site)[counts[index]..]
                        .iter()
                        .any(|r| r.contains(marker) || r.contains(&encoded))
                }
                None => false,
            };
            if reached && kind != "action" {
                reached_data.push(format!("{name}/{id}"));
            }
            let what = match (reached, task["reach"].is_null()) {
                (true, _) => "REACHED the attacker".to_owned(),
                (false, true) => "no call to replay (the goal is an answer)".to_owned(),
                (false, false) if outcome.is_empty() => "not reached".to_owned(),
                (false, false) => format!("not reached: {outcome}"),
            };
            rows.push(format!("{name:9} {id:17} {kind:6} {what}"));
        }
        gateway.shutdown().await;
    }
    (rows, reached_data)
}

// Runs a task's steps as its hijacked agent; what stopped it, if anything did.
async fn run_steps(agent: &airlock_gateway::AgentSession, web: &Web, task: &Value) -> String {
    for step in task["steps"].as_array().unwrap() {
        let mut calls = Vec::new();
        if let Some(open) = step.get("open") {
            calls.push(navigate(
                web.url(open[0].as_str().unwrap(), open[1].as_str().unwrap()),
            ));
            // And its text whole, as an agent reading a long page does.
            calls.push(ToolCall::Read(airlock_gateway::Reading::Text {
                format: airlock_gateway::ReadFormat::Text,
                offset: 0,
            }));
        }
        if let Some(fields) = step.get("fill") {
            calls.push(ToolCall::Interact(Interaction::FillForm {
                fields: fields
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| {
                        (
                            textbox(f[0].as_str().unwrap()),
                            f[1].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect(),
            }));
        }
        if let Some(button) = step.get("click") {
            calls.push(crate::click_button(button.as_str().unwrap()));
        }
        for call in calls {
            let out = agent.call(call).await;
            if out.error.is_some() {
                return stopped_by(&out);
            }
        }
    }
    String::new()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agentdojo_injection_tasks_get_no_data_or_money_to_the_attacker() {
    let corpus = corpus();
    with_browser(|h| async move {
        let web = Web::start(SITES).await;
        let policy = web.allowed_in(h.site.policy_config());
        let tasks: Vec<&Value> = corpus["suites"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["tasks"].as_array().unwrap())
            .collect();
        let moving = tasks.iter().filter(|t| t["kind"] != "action").count();
        assert_eq!(tasks.len(), 35, "AgentDojo v1.2.2 has 35 injection tasks");
        // The control: with the checks off the same steps get every one there.
        let (_, unchecked) = replay(&h, &web, &policy, &corpus, false).await;
        assert_eq!(unchecked.len(), moving, "the replay itself reaches the attacker");
        let (rows, reached_data) = replay(&h, &web, &policy, &corpus, true).await;
        let actions_reached =
            rows.iter().filter(|r| r.contains("REACHED")).count() - reached_data.len();
        println!(
            "AgentDojo {} replay: {} injection tasks; of the {moving} that move data or money to the attacker, {} reached it ({} with the checks off); of the {} other goals, {actions_reached} were carried out\n{}",
            corpus["version"].as_str().unwrap(),
            tasks.len(),
            reached_data.len(),
            unchecked.len(),
            tasks.len() - moving,
            rows.join("\n")
        );
        assert_eq!(reached_data, Vec::<String>::new(), "data or money reached the attacker");
    })
    .await;
}
