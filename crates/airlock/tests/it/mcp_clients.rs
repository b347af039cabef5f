//! The full agent flow through a client we did not write — the official MCP Python
//! SDK — against the real `airlock` binary, over stdio and Streamable HTTP, in both
//! protocol eras (2025-11-25 sessions and stateless 2026-07-28).

use std::path::{Path, PathBuf};
use std::time::Duration;

use airlock_test_support::{FixtureSite, chromium_processes_under};
use tokio::process::Command;

use crate::server::{serve_with, stop};

use crate::server::BIN;

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub(crate) use airlock_test_support::python;

async fn run_flow_with(args: &[&str], tmp: &Path, env: &[(&str, &Path)]) {
    let mut command = Command::new(python());
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command
        .arg(root().join("crates/airlock/tests/clients/flow.py"))
        .args(args)
        .env("TMPDIR", tmp)
        // The binary's vault and key file live in the test's temp dir.
        .env("AIRLOCK_DATA_DIR", tmp.join("data"))
        .env("RUST_LOG", "airlock=info,airlock_mcp=info")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(240), out)
        .await
        .expect("the Python flow finished within 4 minutes")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "flow {args:?} failed:\n{stdout}\n--- stderr ---\n{stderr}"
    );
}

/// A temp dir for the binary's Chromium profiles; after the binary exits nothing may
/// be running from it or left in it.
/// A config that lets the browser reach the fixture site's first port (loopback is
/// denied by default) and nothing else on loopback.
pub(crate) fn fixture_config(tmp: &Path, site: &FixtureSite, extra: &str) -> PathBuf {
    let path = tmp.join("airlock.toml");
    std::fs::write(
        &path,
        format!(
            "{extra}\n[policy]\nallow_private = [\"127.0.0.1:{}\"]\n",
            site.a.port()
        ),
    )
    .unwrap();
    path
}

fn denied_url(site: &FixtureSite) -> String {
    format!("http://127.0.0.1:{}/login.html", site.b.port())
}

pub(crate) async fn assert_clean(tmp: &Path) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let procs = chromium_processes_under(tmp);
        let profiles: Vec<_> = std::fs::read_dir(tmp)
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .starts_with("airlock-chromium-")
                    })
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        if procs.is_empty() && profiles.is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "left behind: processes {procs:?}, profiles {profiles:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_flow_over_stdio_in_both_eras() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture_config(tmp.path(), &site, "");
    for mode in ["legacy", "2026-07-28"] {
        run_flow_with(
            &["stdio", BIN, &base, mode, "", &denied_url(&site)],
            tmp.path(),
            &[("AIRLOCK_CONFIG", &config)],
        )
        .await;
    }
    assert_eq!(
        site.b.connections(),
        0,
        "the denied port was never contacted"
    );
    assert!(site.a.connections() > 0);
    assert_clean(tmp.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_flow_over_streamable_http_in_both_eras() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture_config(tmp.path(), &site, "");
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    for mode in ["legacy", "2026-07-28"] {
        run_flow_with(
            &["http", &served.url, &base, mode, "", &denied_url(&site)],
            tmp.path(),
            &[],
        )
        .await;
    }
    stop(served).await;
    assert_eq!(
        site.b.connections(),
        0,
        "the denied port was never contacted"
    );
    assert_clean(tmp.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_flow_with_a_bearer_token() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let token = "test-token-0123456789abcdef";
    let config = fixture_config(tmp.path(), &site, "");
    let served = serve_with(tmp.path(), Some(token), Some(&config)).await;
    run_flow_with(
        &[
            "http",
            &served.url,
            &base,
            "legacy",
            token,
            &denied_url(&site),
        ],
        tmp.path(),
        &[],
    )
    .await;
    stop(served).await;
    assert_clean(tmp.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_clients_never_share_a_browser_unless_they_name_it() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture_config(tmp.path(), &site, "");
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    run_flow_with(&["isolation", &served.url, &base, "auto"], tmp.path(), &[]).await;
    stop(served).await;
    assert_clean(tmp.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_clients_at_once_each_with_its_own_session() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture_config(tmp.path(), &site, "");
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    run_flow_with(&["concurrent", &served.url, &base, "10"], tmp.path(), &[]).await;
    stop(served).await;
    assert_clean(tmp.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_shell_profile_over_stdio() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture_config(tmp.path(), &site, "[tools]\nprofile = \"browser-shell\"");
    run_flow_with(
        &["shell", BIN, &base, "legacy"],
        tmp.path(),
        &[("AIRLOCK_CONFIG", &config)],
    )
    .await;
    assert_clean(tmp.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_closes_every_session_of_a_stdio_server_and_leaves_nothing() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

    let site = FixtureSite::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture_config(tmp.path(), &site, "");
    let mut child = Command::new(BIN)
        .arg("mcp")
        .env("TMPDIR", tmp.path())
        .env("AIRLOCK_DATA_DIR", tmp.path().join("data"))
        .env("AIRLOCK_CONFIG", &config)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let url = format!("http://127.0.0.1:{}/login.html", site.a.port());
    for message in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"browser_navigate","arguments":{{"url":"{url}"}}}}}}"#
        ),
    ] {
        stdin.write_all(message.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
    }
    // The navigation's answer: a browser session is open now.
    let answered = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains(r#""id":2"#) {
                return line;
            }
        }
        panic!("airlock mcp closed its output");
    })
    .await
    .expect("the navigation answered within 30 s");
    assert!(answered.contains(r#""isError":false"#), "{answered}");
    assert!(!chromium_processes_under(tmp.path()).is_empty());

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id().unwrap() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("airlock mcp stops on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert_clean(tmp.path()).await;
}

/// A stdio client's `initialize` is answered before the engine (store, vault, browser
/// worker) is up: here it never comes up, since the vault's key file is readable by
/// other users, and the answer still comes. The reason reaches stderr, and the
/// server exits failing instead of serving without its engine.
#[tokio::test]
async fn stdio_answers_initialize_before_the_engine_and_exits_if_it_cannot_start() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let key = data.join("master.key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let mut child = Command::new(BIN)
        .args(["mcp", "--data-dir"])
        .arg(&data)
        .env_remove("AIRLOCK_CONFIG")
        .env("TMPDIR", tmp.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}
    });
    stdin
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(20), stdout.next_line())
        .await
        .expect("initialize was answered")
        .unwrap()
        .expect("a line on stdout");
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "airlock",
        "{answer}"
    );
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("the server exits once its engine failed to start")
        .unwrap();
    assert!(!status.success(), "{status:?}");
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr)
        .await
        .unwrap();
    assert!(stderr.contains("could not start"), "{stderr}");
    assert!(stderr.contains("readable by other users"), "{stderr}");
}

/// Runs client script `script` (in `clients/`) with `args` and `env`, its temp dir
/// `tmp`; fails the test unless every check passed. Its stdout.
pub(crate) async fn run_client(
    script: &str,
    args: &[&str],
    tmp: &Path,
    env: &[(&str, &Path)],
) -> String {
    run_script(&python(), script, args, tmp, env).await
}

/// `run_client` with another interpreter: `program` runs `script` (in `clients/`).
async fn run_script(
    program: &Path,
    script: &str,
    args: &[&str],
    tmp: &Path,
    env: &[(&str, &Path)],
) -> String {
    assert!(
        program.is_file(),
        "{} is missing: `make test` installs the clients",
        program.display()
    );
    let mut command = Command::new(program);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command
        .arg(root().join("crates/airlock/tests/clients").join(script))
        .args(args)
        .env("TMPDIR", tmp)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(240), out)
        .await
        .unwrap_or_else(|_| panic!("{script} finished within 4 minutes"))
        .expect("the client runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "{script} failed:\n{stdout}\n--- stderr ---\n{stderr}"
    );
    stdout
}

/// The tools as the OpenAI Agents SDK and google-genai (pinned, from PyPI) make them
/// for their models: every tool with arguments converts to OpenAI's strict mode by
/// the SDK's own conversion, every tool converts for Gemini, and calls made as a
/// strict-mode model makes them (`null` for every key it does not mean) work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_sdks_take_every_tool_and_strict_calls_work() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture_config(tmp.path(), &site, "");
    let data = tmp.path().join("data");
    let stdout = run_client(
        "strict.py",
        &[BIN, &base],
        tmp.path(),
        &[("AIRLOCK_DATA_DIR", &data), ("AIRLOCK_CONFIG", &config)],
    )
    .await;
    let summary: serde_json::Value = stdout
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .expect("a summary line");
    assert_eq!(summary["tools"], 25, "{summary}");
    assert_eq!(summary["gemini"], 25, "{summary}");
    // The five without arguments stay non-strict (nothing to be strict about).
    assert_eq!(summary["strict"], 20, "{summary}");
    assert_eq!(
        summary["no_arguments"],
        serde_json::json!([
            "browser_back",
            "browser_forward",
            "browser_pdf",
            "browser_reload",
            "browser_session_close"
        ]),
        "{summary}"
    );
    assert_clean(tmp.path()).await;
}

/// The agent's key and the approvers' key of the tests that approve a held call over
/// REST, as at the console.
pub(crate) const AGENT_TOKEN: &str = "agent-token-0123456789abcdef";
pub(crate) const ADMIN_KEY: &str = "admin-key-fedcba9876543210";

// A recipe's script (Python) against a real `airlock serve` of the fixture site.
async fn recipe(script: &str) {
    run_keyed(&python(), script, "").await;
}

/// Client script `script` (run by `program`) against a real `airlock serve` of the
/// fixture site with [`AGENT_TOKEN`] and [`ADMIN_KEY`] (so its held calls can be
/// approved over REST) and `extra` configuration; its arguments: the MCP URL, the
/// site, the agent's key, the approvers' key.
pub(crate) async fn run_keyed(program: &Path, script: &str, extra: &str) {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture_config(
        tmp.path(),
        &site,
        &format!("[server]\nadmin_key = \"{ADMIN_KEY}\"\n[approvals]\ntimeout_secs = 120\n{extra}"),
    );
    let served = serve_with(tmp.path(), Some(AGENT_TOKEN), Some(&config)).await;
    run_script(
        program,
        script,
        &[&served.url, &base, AGENT_TOKEN, ADMIN_KEY],
        tmp.path(),
        &[],
    )
    .await;
    stop(served).await;
    assert_clean(tmp.path()).await;
}

/// examples/scripted_model.py on a free loopback port: the process and its port.
pub(crate) async fn scripted_model() -> (tokio::process::Child, u16) {
    use tokio::io::AsyncBufReadExt as _;
    let mut model = Command::new(python())
        .arg(root().join("examples/scripted_model.py"))
        .arg("0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut said = tokio::io::BufReader::new(model.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), said.next_line())
        .await
        .expect("the scripted model starts")
        .unwrap()
        .unwrap();
    let port = first
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    (model, port)
}

/// The README's recipe for the OpenAI Agents SDK (pinned, its own MCP client): one
/// fixed URL, `/mcp/b/<name>`, keeps one browser across calls and clients, another
/// name is another browser, and the SDK makes every tool with arguments strict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_agents_sdk_keeps_one_browser_at_a_named_url() {
    recipe("agents_sdk.py").await;
}

/// The README's recipe for FastMCP's client (pinned): `/mcp/b/<name>` keeps one
/// browser across its calls and clients; a held click is approved and its result
/// arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fastmcp_keeps_one_browser_at_a_named_url() {
    recipe("fastmcp_recipe.py").await;
}

/// The README's recipe for LangChain's MCP adapters (pinned, in `.venv-langchain`:
/// they need the 1.x MCP SDK): `get_tools()` opens a session per call, and
/// `/mcp/b/<name>` keeps one browser across them; a held click is approved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langchain_keeps_one_browser_across_its_per_call_sessions() {
    run_keyed(
        &root().join(".venv-langchain/bin/python"),
        "langchain_recipe.py",
        "",
    )
    .await;
}

/// The README's recipe for Vercel's AI SDK MCP client (`@ai-sdk/mcp`, pinned): the
/// tools it hands a model keep one browser at `/mcp/b/<name>`; a held click is
/// approved and its result arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vercel_ai_sdk_keeps_one_browser_at_a_named_url() {
    run_keyed(&node(), "vercel/recipe.mjs", "").await;
}

/// Node, from `PATH` (as the console tests run it).
pub(crate) fn node() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("/usr/bin/node"))
}

/// `browser_run_task` as an MCP task (the Tasks extension), raw HTTP against `airlock
/// serve` with examples/scripted_model.py as its model (`clients/mcp_tasks.py`):
/// answered at once with a task, working while its held step waits, completed with
/// the result inlined once approved; cancelled while held, its step withdrawn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_run_task_runs_as_an_mcp_task_that_can_be_polled_and_cancelled() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut model, port) = scripted_model().await;
    let config = tmp.path().join("airlock.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nadmin_key = \"{ADMIN_KEY}\"\n[approvals]\ntimeout_secs = 120\n\
             [policy]\nallow_private = [\"127.0.0.1:{port}\"]\n\
             [[models]]\nname = \"scripted\"\nurl = \"http://127.0.0.1:{port}/v1/chat/completions\"\nmodel = \"scripted\"\n"
        ),
    )
    .unwrap();
    let served = serve_with(tmp.path(), Some(AGENT_TOKEN), Some(&config)).await;
    let page = format!("http://127.0.0.1:{port}/");
    run_client(
        "mcp_tasks.py",
        &[&served.url, &page, AGENT_TOKEN, ADMIN_KEY],
        tmp.path(),
        &[],
    )
    .await;
    stop(served).await;
    model.kill().await.unwrap();
    assert_clean(tmp.path()).await;
}
