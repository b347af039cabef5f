//! Server-side tasks end to end: a scripted model endpoint on loopback (a real HTTP
//! server speaking chat completions, recording every request) drives real Chromium
//! through the gateway's pipeline. In every test, no recorded model request holds any
//! form of a secret value.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use airlock_config::Tasks;
use airlock_core::{ErrorCode, Role};
use airlock_gateway::{Gateway, GatewayConfig};
use airlock_policy::{Policy, PolicyConfig};
use airlock_risk::{ApprovalsConfig, Rules};
use airlock_task::{Runner, TaskResult, TaskStatus, Watch};
use airlock_test_support::{
    APP_PASSWORD, APP_USER, Harness, ModelServer, Reply, calls, finish, secret_forms, with_browser,
};
use airlock_vault::{Fields, MasterKey, Secret, Store, Vault};
use serde_json::{Value, json};

mod screen;

/// The scripted model's API key: it must reach the model endpoint, and only it.
const MODEL_KEY: &str = "sk-model-key-0c4e1d";

struct Setup {
    gateway: Arc<Gateway>,
    store: Store,
    runner: Runner,
}

// A gateway whose policy allows the fixture site `a` only, with the `login` secret
// bound to it and the built-in risk rules, and a runner over the scripted model.
async fn setup(h: &Harness, model: &ModelServer, approval_timeout: Duration) -> Setup {
    let store = Store::open_in_memory().await.unwrap();
    let vault = Arc::new(
        Vault::open(store.clone(), MasterKey::generate().unwrap())
            .await
            .unwrap(),
    );
    let mut login = Fields::default();
    login.username = Some(APP_USER.into());
    login.password = Some(APP_PASSWORD.into());
    vault
        .set(&Secret {
            tenant: "default".into(),
            name: "login".into(),
            origins: vec![format!("http://127.0.0.1:{}", h.site.a.port())],
            fields: login,
        })
        .await
        .unwrap();
    let policy = Policy::from_config(&PolicyConfig {
        allow_private: vec![format!("127.0.0.1:{}", h.site.a.port())],
        ..PolicyConfig::default()
    })
    .unwrap();
    let gateway = Gateway::new(
        h.host().await,
        GatewayConfig {
            rules: Rules::from_config(&ApprovalsConfig::default()).unwrap(),
            approval_timeout,
            ..GatewayConfig::with_policy(policy)
                .store(store.clone())
                .vault(vault.clone(), Role::Operate)
        },
    );
    let tasks = Tasks {
        retries: 2,
        ..model.tasks(Some(MODEL_KEY))
    };
    let runner = Runner::new(&tasks, Some(vault)).unwrap();
    Setup {
        gateway,
        store,
        runner,
    }
}

fn args(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn role(role: &str, name: &str) -> Value {
    json!({"role": role, "name": name})
}

fn typing(role_name: (&str, &str), text: &str) -> (&'static str, Value) {
    let mut args = role(role_name.0, role_name.1);
    args["text"] = json!(text);
    ("browser_type", args)
}

// Every request the model was sent: clean of every form of the secret, and carrying
// the model's key in its header (the only place that key goes).
fn assert_requests_clean(model: &ModelServer) {
    let seen = model.seen();
    assert!(!seen.is_empty());
    for (i, request) in seen.iter().enumerate() {
        for form in secret_forms(APP_PASSWORD) {
            assert!(
                !request.body.contains(&form),
                "request {i} holds `{form}`:\n{}",
                request.body
            );
        }
        assert!(!request.body.contains(MODEL_KEY));
        assert_eq!(
            request.authorization.as_deref(),
            Some(format!("Bearer {MODEL_KEY}").as_str())
        );
    }
}

// The `user` message of request `i`.
fn user_text(model: &ModelServer, i: usize) -> String {
    let body: Value = serde_json::from_str(&model.seen()[i].body).unwrap();
    body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn events(store: &Store) -> Vec<Value> {
    store
        .audit_events(0, 500)
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect()
}

async fn run(setup: &Setup, agent: &airlock_gateway::AgentSession, task: Value) -> TaskResult {
    let spec = setup.runner.parse(Some(&args(task))).unwrap();
    setup.runner.run(agent, spec, Watch::default()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_through_placeholders_finishes_and_no_model_request_holds_the_secret() {
    with_browser(|h| async move {
        let model = ModelServer::start(vec![
            calls(&[
                typing(("textbox", "Username"), "{{secret:login.username}}"),
                typing(("textbox", "Password"), "{{secret:login.password}}"),
                ("browser_click", role("button", "Sign in")),
            ]),
            // Then the page shows the secret back in every form it can compute.
            calls(&[(
                "browser_navigate",
                json!({"url": h.site.url("app/reflect.html")}),
            )]),
            calls(&[typing(("textbox", "Anything"), "{{secret:login.password}}")]),
            finish("Welcome back, alice"),
        ])
        .await;
        let setup = setup(&h, &model, Duration::from_secs(30)).await;
        let agent = setup.gateway.agent_session();
        let result = run(
            &setup,
            &agent,
            json!({
                "instruction": "sign in and say who is logged in",
                "start_url": h.site.url("app/login.html"),
                "credentials": ["login"],
            }),
        )
        .await;
        assert_eq!(result.status, TaskStatus::Finished, "{result:?}");
        assert_eq!(result.answer.as_deref(), Some("Welcome back, alice"));
        assert_eq!(result.steps, 5);
        assert_eq!(result.tokens, 4 * 1020);
        assert!(result.task.starts_with("task_"));
        let shot = result.screenshot.as_ref().expect("a final screenshot");
        assert!(shot.mime.starts_with("image/"));

        // The model was told the placeholders, never a value; it read the home page
        // after the login, and the reflector's page only redacted.
        assert_eq!(model.seen().len(), 4);
        let first = user_text(&model, 0);
        assert!(first.contains("{{secret:login.password}}"), "{first}");
        assert!(first.contains("sign in and say who is logged in"));
        assert!(user_text(&model, 1).contains("Welcome back, alice"));
        let last = user_text(&model, 3);
        assert!(last.contains("[REDACTED:login]"), "{last}");
        assert!(last.contains(&format!("<page {}>", agent.fence().nonce())));
        assert_requests_clean(&model);

        // On the record: the task's start and end, and each step naming the task.
        let events = events(&setup.store).await;
        let started = events.iter().find(|e| e["kind"] == "task_started").unwrap();
        assert_eq!(started["task"], result.task.as_str());
        assert_eq!(started["model"], "scripted");
        let ended = events.iter().find(|e| e["kind"] == "task_ended").unwrap();
        assert_eq!(ended["status"], "finished");
        assert_eq!(ended["steps"], 5);
        let steps: Vec<&Value> = events
            .iter()
            .filter(|e| e["kind"] == "tool_call" && e["task"] == result.task.as_str())
            .collect();
        let clicks = steps
            .iter()
            .filter(|e| e["tool"] == "browser_click")
            .count();
        assert_eq!(clicks, 1);
        assert!(steps.iter().any(|e| e["tool"] == "browser_snapshot"));
        for e in &events {
            for form in secret_forms(APP_PASSWORD) {
                assert!(!e.to_string().contains(&form), "{e}");
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_the_policy_refuses_ends_the_task_denied_and_nothing_is_sent() {
    with_browser(|h| async move {
        let model = ModelServer::start(vec![
            calls(&[(
                "browser_navigate",
                json!({"url": h.site.other_origin("index.html?d=1")}),
            )]),
            finish("never"),
        ])
        .await;
        let setup = setup(&h, &model, Duration::from_secs(30)).await;
        let agent = setup.gateway.agent_session();
        let before = h.site.b.connections();
        let result = run(
            &setup,
            &agent,
            json!({"instruction": "go elsewhere", "start_url": h.site.url("index.html")}),
        )
        .await;
        assert_eq!(result.status, TaskStatus::Denied, "{result:?}");
        assert_eq!(result.error, Some(ErrorCode::PolicyDenied));
        assert!(
            result.summary.contains("browser_navigate"),
            "{}",
            result.summary
        );
        assert_eq!(result.steps, 1);
        assert_eq!(
            h.site.b.connections(),
            before,
            "the refused site was reached"
        );
        assert_eq!(model.seen().len(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_steps_bad_arguments_and_words_are_bounded_steps() {
    with_browser(|h| async move {
        let model = ModelServer::start(vec![
            // A misspelt argument comes back to the model as invalid_argument.
            calls(&[("browser_click", json!({"reff": "e1"}))]),
            Reply::Json(json!({"choices": [{"message": {"content": "I think I am done?"}}]})),
            calls(&[("browser_evaluate", json!({"function": "() => 1"}))]),
            finish("too late"),
        ])
        .await;
        let setup = setup(&h, &model, Duration::from_secs(30)).await;
        let agent = setup.gateway.agent_session();
        let result = run(
            &setup,
            &agent,
            json!({"instruction": "click around", "start_url": h.site.url("index.html"), "max_steps": 3}),
        )
        .await;
        assert_eq!(result.status, TaskStatus::MaxSteps, "{result:?}");
        assert_eq!(result.steps, 3);
        assert_eq!(model.seen().len(), 3);
        let second = user_text(&model, 1);
        assert!(second.contains("invalid_argument") && second.contains("reff"), "{second}");
        let third = user_text(&model, 2);
        assert!(third.contains("no tool was called"), "{third}");
        // The model's code is no step a task runs.
        assert!(!result.summary.is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_retried_after_its_retry_after_then_the_task_goes_on() {
    with_browser(|h| async move {
        let model = ModelServer::start(vec![
            Reply::Status(429, Some("1")),
            Reply::Status(503, None),
            finish("read it"),
        ])
        .await;
        let setup = setup(&h, &model, Duration::from_secs(30)).await;
        let agent = setup.gateway.agent_session();
        let result = run(
            &setup,
            &agent,
            json!({"instruction": "read", "start_url": h.site.url("index.html")}),
        )
        .await;
        assert_eq!(result.status, TaskStatus::Finished, "{result:?}");
        let seen = model.seen();
        assert_eq!(seen.len(), 3);
        // Retry-After: 1 was honoured; the 503 without one waited the backoff.
        assert!(seen[1].at - seen[0].at >= Duration::from_millis(950));
        assert!(seen[2].at - seen[1].at >= Duration::from_millis(950));
        // The same request each time.
        assert_eq!(seen[0].body, seen[2].body);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_answer_or_a_model_that_keeps_refusing_ends_with_a_clear_error() {
    with_browser(|h| async move {
        let model = ModelServer::start(vec![
            Reply::Raw("<html>bad gateway</html>"),
            Reply::Json(json!({"choices": []})),
            Reply::Status(500, None),
            Reply::Status(500, None),
            Reply::Status(500, None),
        ])
        .await;
        let setup = setup(&h, &model, Duration::from_secs(30)).await;
        let agent = setup.gateway.agent_session();
        for why in [
            "not JSON",
            "no choices[0].message",
            "HTTP 500 and went on refusing",
        ] {
            let result = run(
                &setup,
                &agent,
                json!({"instruction": "read", "start_url": h.site.url("index.html")}),
            )
            .await;
            assert_eq!(result.status, TaskStatus::Error, "{result:?}");
            assert_eq!(result.error, Some(ErrorCode::ModelFailed));
            assert!(result.summary.contains(why), "{}", result.summary);
            // The operator's endpoint is named only by its config name.
            assert!(!result.summary.contains("127.0.0.1"), "{}", result.summary);
        }
        // The later tasks joined the session open, without a refused open on the
        // record.
        assert!(
            !events(&setup.store)
                .await
                .iter()
                .any(|e| e["error"] == "session_already_open"),
        );
        // The session is still good for the agent's own calls.
        let out = agent
            .call(
                airlock_tools::find("browser_snapshot")
                    .unwrap()
                    .parse(None)
                    .unwrap(),
            )
            .await;
        assert_eq!(out.error, None, "{}", out.text);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_while_the_model_thinks_ends_cancelled_at_once() {
    with_browser(|h| async move {
        let model = ModelServer::start(vec![Reply::Hang]).await;
        let setup = Arc::new(setup(&h, &model, Duration::from_secs(30)).await);
        let agent = Arc::new(setup.gateway.agent_session());
        let watch = Watch::default();
        let cancel = watch.cancel.clone();
        let task = spawn_task(
            &setup,
            &agent,
            json!({"instruction": "wait", "start_url": h.site.url("index.html")}),
            watch,
        );
        model.requests(1).await;
        cancel.cancel();
        let result = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the task did not stop")
            .unwrap();
        assert_eq!(result.status, TaskStatus::Cancelled, "{result:?}");
        let ended = events(&setup.store)
            .await
            .into_iter()
            .find(|e| e["kind"] == "task_ended")
            .unwrap();
        assert_eq!(ended["status"], "cancelled");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ended_under_a_task_cancels_it_at_once() {
    with_browser(|h| async move {
        let model = ModelServer::start(vec![Reply::Hang]).await;
        let setup = Arc::new(setup(&h, &model, Duration::from_secs(30)).await);
        let agent = Arc::new(setup.gateway.agent_session());
        let task = spawn_task(
            &setup,
            &agent,
            json!({"instruction": "wait", "start_url": h.site.url("index.html")}),
            Watch::default(),
        );
        // The model thinks (it never answers); an operator ends the session.
        model.requests(1).await;
        let session = agent.open_session().await.unwrap();
        setup
            .gateway
            .end_session("default", &session)
            .await
            .unwrap();
        let result = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the task did not stop with its session")
            .unwrap();
        assert_eq!(result.status, TaskStatus::Cancelled, "{result:?}");
        assert_eq!(result.error, Some(ErrorCode::SessionExpired));
        assert!(result.summary.contains("session ended"), "{result:?}");
        assert!(result.screenshot.is_none());
        let ended = events(&setup.store)
            .await
            .into_iter()
            .find(|e| e["kind"] == "task_ended")
            .unwrap();
        assert_eq!(ended["status"], "cancelled");
        assert_eq!(ended["session"], session.as_str());
        assert_eq!(model.seen().len(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_step_pauses_the_task_until_approved_and_a_timeout_ends_it_needs_user() {
    with_browser(|h| async move {
        let delete = || calls(&[("browser_click", role("button", "Delete account"))]);
        let model = ModelServer::start(vec![delete(), finish("deleted"), delete()]).await;
        let setup = Arc::new(setup(&h, &model, Duration::from_secs(30)).await);
        let agent = Arc::new(setup.gateway.agent_session());
        let task = spawn_task(
            &setup,
            &agent,
            json!({"instruction": "delete the account", "start_url": h.site.url("resolve.html")}),
            Watch::default(),
        );
        // The click waits for a person; the task waits with it.
        let pending = pending_approval(&setup.gateway).await;
        assert_eq!(pending.rule, "destructive");
        assert!(!task.is_finished());
        decide(&setup.gateway, &pending, true).await;
        let result = task.await.unwrap();
        assert_eq!(result.status, TaskStatus::Finished, "{result:?}");
        assert!(
            user_text(&model, 1).contains("deleted 1"),
            "{}",
            user_text(&model, 1)
        );
        // The task's record (what the console's transcript reads) holds its own
        // events, its steps and the approval it waited for, in order, and nothing else.
        let record = setup
            .gateway
            .audit_events(
                "default",
                &airlock_gateway::AuditFilter {
                    task: Some(result.task.clone()),
                    limit: 100,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let kinds: Vec<&str> = record.iter().rev().map(|r| r.kind.as_str()).collect();
        // The call that opened its session comes first: the start names that session.
        assert_eq!(kinds[..2], ["tool_call", "task_started"], "{kinds:?}");
        assert!(record.last().unwrap().body.contains("browser_session_open"));
        assert_eq!(kinds.last(), Some(&"task_ended"), "{kinds:?}");
        let asked = kinds.iter().position(|k| *k == "approval_requested");
        let decided = kinds.iter().position(|k| *k == "approval_decided");
        assert!(asked.is_some() && asked < decided, "{kinds:?}");
        assert!(
            record.iter().all(|r| r.body.contains(&result.task)),
            "{kinds:?}"
        );
        let everything = events(&setup.store).await;
        let untagged = everything
            .iter()
            .filter(|e| e["kind"] == "session_open" || e["kind"] == "session_close")
            .count();
        assert_eq!(record.len() + untagged, everything.len(), "{everything:?}");

        // Unanswered, the hold ends the task needs_user.
        let short = setup_short(&h, &model).await;
        let agent = short.gateway.agent_session();
        let result = run(
            &short,
            &agent,
            json!({"instruction": "delete the account", "start_url": h.site.url("resolve.html")}),
        )
        .await;
        assert_eq!(result.status, TaskStatus::NeedsUser, "{result:?}");
        assert_eq!(result.error, Some(ErrorCode::ApprovalTimeout));
    })
    .await;
}

// Runs `task` in `agent`'s session on a task of its own, for a test that acts
// while it runs.
fn spawn_task(
    setup: &Arc<Setup>,
    agent: &Arc<airlock_gateway::AgentSession>,
    task: Value,
    watch: Watch,
) -> tokio::task::JoinHandle<TaskResult> {
    let spec = setup.runner.parse(Some(&args(task))).unwrap();
    let (setup, agent) = (setup.clone(), agent.clone());
    tokio::spawn(async move { setup.runner.run(&agent, spec, watch).await })
}

// The first pending approval: one already asked for, else the next the audit feed
// announces (subscribed before looking, so none is missed).
async fn pending_approval(gateway: &Gateway) -> airlock_store::ApprovalRecord {
    let mut feed = gateway.audit().appended_here();
    loop {
        let pending = gateway
            .approvals()
            .list("default", Some(airlock_store::ApprovalStatus::Pending))
            .await
            .unwrap();
        if let Some(one) = pending.into_iter().next() {
            return one;
        }
        tokio::time::timeout(Duration::from_secs(30), feed.recv())
            .await
            .expect("an approval is asked for within 30 s")
            .unwrap();
    }
}

// Decides `pending` as alice would in the console.
async fn decide(gateway: &Gateway, pending: &airlock_store::ApprovalRecord, approve: bool) {
    gateway
        .approvals()
        .decide("default", &pending.id, approve, "test:alice", None)
        .await
        .unwrap();
}

async fn setup_short(h: &Harness, model: &ModelServer) -> Setup {
    setup(h, model, Duration::from_secs(1)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_echoes_its_key_gets_it_repeated_nowhere() {
    with_browser(|h| async move {
        // The endpoint repeats the key it was sent, plainly and base64-encoded.
        let echoed = format!(
            "done; my key is {MODEL_KEY} ({})",
            base64::Engine::encode(&base64::engine::general_purpose::STANDARD, MODEL_KEY)
        );
        let model = ModelServer::start(vec![finish(&echoed)]).await;
        let setup = setup(&h, &model, Duration::from_secs(30)).await;
        let agent = setup.gateway.agent_session();
        let result = run(
            &setup,
            &agent,
            json!({"instruction": "say anything", "start_url": h.site.url("index.html")}),
        )
        .await;
        assert_eq!(result.status, TaskStatus::Finished, "{result:?}");
        let answer = result.answer.clone().unwrap_or_default();
        assert!(answer.contains("[REDACTED:endpoint-key]"), "{answer}");
        let everything = format!(
            "{result:?}{}",
            serde_json::to_string(&events(&setup.store).await).unwrap()
        );
        for form in secret_forms(MODEL_KEY) {
            assert!(!everything.contains(&form), "`{form}` in {everything}");
        }
        // It still reached the endpoint, in its header (the one place it goes).
        assert!(!model.seen().is_empty());
    })
    .await;
}
