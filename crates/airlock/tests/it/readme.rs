//! The programs and configuration of the README (and of the docs it sends readers to
//! for a feature's detail), run as written but for their addresses,
//! against the real binary with the pinned MCP Python SDK: a snippet that stops
//! working (an import the SDK dropped, a header it cannot send) fails here.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use airlock_test_support::{APP_PASSWORD, FixtureSite};
use tokio::process::Command;

use crate::mcp_clients::{assert_clean, fixture_config, python, root};
use crate::server::{BIN, serve_with, stop};

/// The code blocks of `doc` (a path from the repository's root) fenced as `lang`,
/// in order.
fn blocks_in(doc: &str, lang: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(root().join(doc)).unwrap();
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match &mut current {
            None if line.trim_start() == format!("```{lang}") => current = Some(String::new()),
            Some(block) if line.trim_start() == "```" => {
                out.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    out
}

/// The one block of `lang` in `doc` that contains `marker`.
fn block_in(doc: &str, lang: &str, marker: &str) -> String {
    let found: Vec<String> = blocks_in(doc, lang)
        .into_iter()
        .filter(|b| b.contains(marker))
        .collect();
    assert_eq!(found.len(), 1, "{doc} blocks of {lang} with {marker:?}");
    found.into_iter().next().unwrap()
}

/// The one block of `lang` in the README that contains `marker`.
fn block(lang: &str, marker: &str) -> String {
    block_in("README.md", lang, marker)
}

async fn run_python(program: &str, dir: &Path, env: &[(&str, &str)]) -> String {
    let file = dir.join("snippet.py");
    std::fs::write(&file, program).unwrap();
    let mut command = Command::new(python());
    command.arg(&file).current_dir(dir).kill_on_drop(true);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("the snippet finished within 2 minutes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the README's program failed:\n{program}\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_streamable_http_program_runs_with_and_without_a_key() {
    let site = FixtureSite::start().await;
    let page = site.url("login.html");
    let program = block("python", "browser_session_open");
    for key in [None, Some("agent-key-0123456789abcdef")] {
        let tmp = tempfile::tempdir().unwrap();
        let config = fixture_config(tmp.path(), &site, "");
        let served = serve_with(tmp.path(), key, Some(&config)).await;
        let program = program
            .replace("http://127.0.0.1:8080/mcp", &served.url)
            .replace("https://example.com", &page);
        let env: Vec<(&str, &str)> = key.map(|k| ("AIRLOCK_API_KEY", k)).into_iter().collect();
        let out = run_python(&program, tmp.path(), &env).await;
        assert_eq!(out.matches("<page ").count(), 2, "{out}");
        assert!(out.contains("button \"Sign in\""), "{out}");
        stop(served).await;
        assert_clean(tmp.path()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_program_runs_with_a_tenant_key() {
    let site = FixtureSite::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let cli = |args: &[&str]| {
        std::process::Command::new(BIN)
            .args(args)
            .arg("--data-dir")
            .arg(tmp.path().join("data"))
            .env_remove("AIRLOCK_CONFIG")
            .output()
            .unwrap()
    };
    assert!(cli(&["tenant", "create", "acme"]).status.success());
    let key =
        String::from_utf8(cli(&["key", "create", "--tenant", "acme", "--role", "act"]).stdout)
            .unwrap()
            .trim()
            .to_owned();
    let config = fixture_config(tmp.path(), &site, "");
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    let program = block("python", "api/v1/sessions")
        .replace("http://127.0.0.1:8080", served.url.trim_end_matches("/mcp"))
        .replace("https://app.example.com", &site.url("login.html"));
    let out = run_python(&program, tmp.path(), &[("AIRLOCK_KEY", &key)]).await;
    assert!(
        out.contains("\"App sign in\"") || out.contains("Sign in"),
        "{out}"
    );
    stop(served).await;
    assert_clean(tmp.path()).await;
}

/// The README's stdio configuration, its `vault set` line and its tool calls: the
/// local user logs in with a credential they stored themselves, no grant needed,
/// and a stray `airlock.toml` where the client starts the server is not read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_config_logs_in_with_the_users_own_stored_credential() {
    let site = FixtureSite::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let origin = format!("http://127.0.0.1:{}", site.a.port());
    // The README's `vault set` line, its origin the fixture's.
    let vault_set = block("sh", "airlock vault set app")
        .lines()
        .find(|l| l.contains("airlock vault set app"))
        .unwrap()
        .split('#')
        .next()
        .unwrap()
        .replace("airlock vault", &format!("{BIN} vault"))
        .replace("https://app.example.com", &origin);
    let out = Command::new("bash")
        .args(["-c", &vault_set])
        .env("APP_PASSWORD", APP_PASSWORD)
        .env("AIRLOCK_DATA_DIR", &data)
        .env_remove("AIRLOCK_CONFIG")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{vault_set}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The client's configuration, its paths filled in.
    let config: serde_json::Value = serde_json::from_str(&block("json", "mcpServers")).unwrap();
    let server = config["mcpServers"]["airlock"]
        .to_string()
        .replace("/path/to/airlock/target/release/airlock", BIN)
        .replace("/path/to/airlock/airlock-data", data.to_str().unwrap());
    let calls: Vec<serde_json::Value> = block("json", "browser_session_open")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let calls = serde_json::to_string(&calls)
        .unwrap()
        .replace("https://app.example.com/login", &site.url("app/login.html"));
    // Where the client starts it: a file that is not valid configuration.
    let cwd = tmp.path().join("client");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(cwd.join("airlock.toml"), "this is not = [toml").unwrap();
    let out = Command::new(python())
        .arg(root().join("crates/airlock/tests/clients/readme_stdio.py"))
        .args([&server, &calls])
        .current_dir(&cwd)
        .env(
            "AIRLOCK_ALLOW_PRIVATE",
            format!("127.0.0.1:{}", site.a.port()),
        )
        .env("TMPDIR", tmp.path())
        .env_remove("AIRLOCK_CONFIG")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), out)
        .await
        .expect("the stdio client finished within 2 minutes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n--- stderr ---\n{stderr}");
    assert!(stdout.contains("logged in with app"), "{stdout}");
    assert!(stdout.contains("Welcome back, alice"), "{stdout}");
    assert!(!stdout.contains(APP_PASSWORD), "{stdout}");
    assert!(stderr.contains("config: none"), "{stderr}");
    assert_clean(tmp.path()).await;
}

/// Where the README sends a reader for data-flow checks and effect rules.
const FLOW_DOC: &str = "docs/data-flow.md";
/// Where it sends one for server-side tasks.
const TASK_DOC: &str = "docs/tasks.md";

// The data-flow section's config loads as it is, and its `policy explain` line says
// what the README shows under it.
#[test]
fn the_flow_sections_config_and_explain_line_are_true() {
    let text = block_in(FLOW_DOC, "toml", "[flow]");
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("airlock.toml"), &text).unwrap();
    let env = std::collections::HashMap::<String, String>::new();
    let config =
        airlock_config::Config::load(Some((std::path::Path::new(FLOW_DOC), &text)), &env).unwrap();
    assert_eq!(config.flow.mode, airlock_config::FlowMode::Ask);
    assert!(config.flow.exempt.contains("https://eu.shop.example"));
    let shown = block_in(FLOW_DOC, "sh", "read-only-origin");
    let line = shown
        .lines()
        .find(|l| l.starts_with("airlock policy explain"))
        .unwrap()
        .replace("airlock policy", &format!("{BIN} policy"));
    let out = std::process::Command::new("bash")
        .args(["-c", &line])
        .env("AIRLOCK_CONFIG", tmp.path().join("airlock.toml"))
        .env("AIRLOCK_DATA_DIR", tmp.path())
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    for expected in shown.lines().filter_map(|l| l.strip_prefix("# ")) {
        assert!(said.contains(expected), "{expected:?} not in {said}");
    }
    assert_eq!(out.status.code(), Some(2), "{said}");
}

// The effect rule in the README loads as written and holds what it says it holds.
#[test]
fn the_effect_rule_section_loads_and_holds_a_payment_request() {
    let text = block_in(FLOW_DOC, "toml", "request_fields");
    let env = std::collections::HashMap::<String, String>::new();
    let config =
        airlock_config::Config::load(Some((std::path::Path::new(FLOW_DOC), &text)), &env).unwrap();
    let effects = config.approvals.rules.effects();
    let request = |url, body: &'static str| airlock_risk::Request {
        method: "POST",
        url,
        content_type: Some("application/json"),
        body: Some(body.as_bytes()),
        body_unseen: false,
    };
    let held = effects
        .judge(&request(
            "https://pay.example.com/v1/transfers",
            r#"{"amount": 10, "to": {"iban": "DE89"}}"#,
        ))
        .unwrap();
    assert_eq!(held.rule, "payments");
    assert_eq!(held.action, airlock_risk::Action::Approve);
    // Without the fields it names, the operator's rule lets it go; the built-in
    // payment-path rule after it still holds a transfer.
    let unnamed = effects
        .judge(&request(
            "https://pay.example.com/v1/transfers",
            r#"{"amount": 10}"#,
        ))
        .unwrap();
    assert_eq!(unnamed.rule, "payment-path");
    assert!(
        effects
            .judge(&request(
                "https://pay.example.com/v1/quotes",
                r#"{"amount": 10}"#
            ))
            .is_none()
    );
}

// The task section's config loads as it is, and its call's arguments are ones
// browser_run_task takes (the server's behaviour is the task suites').
#[test]
fn the_task_sections_config_and_call_are_valid() {
    let text = block_in(TASK_DOC, "toml", "[[models]]");
    let env = std::collections::HashMap::<String, String>::new();
    let config =
        airlock_config::Config::load(Some((std::path::Path::new(TASK_DOC), &text)), &env).unwrap();
    let model = config.tasks.model(None).unwrap();
    assert_eq!(model.name, "local");
    let call: serde_json::Value =
        serde_json::from_str(&block_in(TASK_DOC, "json", "\"browser_run_task\"")).unwrap();
    let runner = airlock_task::Runner::new(&config.tasks, None).unwrap();
    let spec = runner.parse(call["arguments"].as_object()).unwrap();
    assert_eq!(spec.max_steps, 15);
    assert!(spec.open.is_some() && spec.start.is_some());

    // The `airlock run` line's flags are the command's: with no model configured,
    // it gets as far as asking for one (a flag it does not know is exit 2).
    let run = block_in(TASK_DOC, "sh", "report the newest invoice")
        .lines()
        .find(|l| l.starts_with("airlock run"))
        .unwrap()
        .replace("airlock run", &format!("{BIN} run"));
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("bash")
        .args(["-c", &run])
        .env("AIRLOCK_DATA_DIR", tmp.path())
        .env_remove("AIRLOCK_CONFIG")
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("add a [[models]] entry"), "{stderr}");
}

/// docs/tasks.md's "try the loop in a minute", run as written but for the port (8000
/// may be taken here): the scripted model and its page, the config, `airlock run`; the
/// held click is approved from a second process, the task finishes with the page's
/// answer, and the record holds the transcript.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_docs_scripted_model_runs_a_held_task_to_its_end() {
    use tokio::io::AsyncBufReadExt as _;

    let lines = block_in(TASK_DOC, "sh", "scripted_model.py");
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (mut model, port) = crate::mcp_clients::scripted_model().await;
    let port = port.to_string();
    let toml: String = lines
        .lines()
        .skip_while(|l| !l.contains("<<'END'"))
        .skip(1)
        .take_while(|l| *l != "END")
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(
        tmp.path().join("try-task.toml"),
        toml.replace("8000", &port),
    )
    .unwrap();
    let run = lines
        .lines()
        .find(|l| l.starts_with("airlock run"))
        .unwrap()
        .replace("airlock run", &format!("{BIN} run"))
        .replace("8000", &port);
    let mut running = Command::new("bash")
        .args(["-c", &run])
        .current_dir(tmp.path())
        .env("AIRLOCK_DATA_DIR", &data)
        .env("TMPDIR", tmp.path())
        .env_remove("AIRLOCK_CONFIG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut progress = tokio::io::BufReader::new(running.stderr.take().unwrap()).lines();
    let approve = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = progress.next_line().await.unwrap() {
            if let Some(at) = line.find("airlock approvals approve apr_") {
                return line[at..].split("    ").next().unwrap().trim().to_owned();
            }
        }
        panic!("airlock run ended before its click was held");
    })
    .await
    .expect("the click is held within 60 s");
    // The second terminal runs the line as printed.
    let approved = Command::new("bash")
        .args([
            "-c",
            &approve.replace("airlock approvals", &format!("{BIN} approvals")),
        ])
        .env("AIRLOCK_DATA_DIR", &data)
        .env_remove("AIRLOCK_CONFIG")
        .output()
        .await
        .unwrap();
    assert!(
        approved.status.success(),
        "{approve}: {}",
        String::from_utf8_lossy(&approved.stderr)
    );
    let rest = tokio::spawn(async move {
        let mut rest = Vec::new();
        while let Ok(Some(line)) = progress.next_line().await {
            rest.push(line);
        }
        rest
    });
    let out = tokio::time::timeout(Duration::from_secs(60), running.wait_with_output())
        .await
        .expect("the task ends within 60 s of the approval")
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    let rest = rest.await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{printed}\n{rest:?}");
    assert!(printed.contains("answer: Account deleted"), "{printed}");
    assert!(
        rest.iter()
            .any(|l| l.contains("1/20: step 1: browser_click ok")),
        "{rest:?}"
    );
    // The transcript on the record.
    let tail = Command::new(BIN)
        .args(["audit", "tail", "-n", "20"])
        .env("AIRLOCK_DATA_DIR", &data)
        .env_remove("AIRLOCK_CONFIG")
        .output()
        .await
        .unwrap();
    let events: Vec<serde_json::Value> = String::from_utf8_lossy(&tail.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kind = |k: &str| events.iter().find(|e| e["kind"] == k).cloned();
    assert!(kind("task_started").is_some(), "{events:?}");
    assert_eq!(kind("approval_decided").unwrap()["status"], "approved");
    assert_eq!(kind("task_ended").unwrap()["answer"], "Account deleted");
    model.kill().await.unwrap();
    assert_clean(tmp.path()).await;
}

// The identity section's config loads as written: signing on, for every origin, with
// the directory at the public URL.
#[test]
fn the_identity_sections_config_loads_and_signs() {
    for doc in ["README.md", "docs/identity.md"] {
        let text = block_in(doc, "toml", "[identity]");
        let env = std::collections::HashMap::<String, String>::new();
        let config = airlock_config::Config::load(Some((Path::new(doc), &text)), &env).unwrap();
        assert!(config.identity.sign, "{doc}");
        assert!(config.identity.origins.is_empty(), "{doc}");
        assert_eq!(config.identity.lifetime, Duration::from_secs(60), "{doc}");
        assert_eq!(
            config.identity.agent_url.as_deref(),
            Some("https://airlock.example.com"),
            "{doc}"
        );
    }
}
