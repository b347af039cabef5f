//! `airlock run`: an operator runs a server-side task from a shell against a scripted
//! model on loopback; a step the built-in rules hold is approved from a second
//! process (`airlock approvals approve`), and the task goes on to finish.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use airlock_test_support::{FixtureSite, ModelServer, calls, finish, secret_forms};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::process::Command;

use crate::mcp_clients::assert_clean;
use crate::server::BIN;

const MODEL_KEY: &str = "sk-run-cli-7f3a91";
const PASSWORD: &str = "Run-Cli-Pass-4411";

fn airlock(tmp: &Path, config: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .arg("--data-dir")
        .arg(tmp.join("data"))
        .env("AIRLOCK_CONFIG", config)
        .env("TMPDIR", tmp)
        .env("USER", "operator-3")
        .env("RUN_MODEL_KEY", MODEL_KEY)
        .env_remove("AIRLOCK_API_KEY")
        .kill_on_drop(true);
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_step_of_airlock_run_is_approved_from_another_terminal() {
    let site = FixtureSite::start().await;
    let origin = format!("http://127.0.0.1:{}", site.a.port());
    let model = ModelServer::start(vec![
        calls(&[(
            "browser_click",
            json!({"role": "button", "name": "Delete account"}),
        )]),
        finish("deleted"),
    ])
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("airlock.toml");
    std::fs::write(
        &config,
        format!(
            "[policy]\nallow_private = [\"127.0.0.1:{}\"]\n\
             [approvals]\ntimeout_secs = 60\n\
             [[models]]\nname = \"scripted\"\nurl = \"{}\"\nmodel = \"scripted-1\"\napi_key_env = \"RUN_MODEL_KEY\"\n\
             [tasks]\nmodel = \"scripted\"\n",
            site.a.port(),
            model.url()
        ),
    )
    .unwrap();

    // Without a model the command says what to add, and starts nothing.
    let bare = tmp.path().join("bare.toml");
    std::fs::write(&bare, "").unwrap();
    let out = airlock(tmp.path(), &bare)
        .args(["run", "read the page"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("add a [[models]] entry"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Arguments are checked as the tool checks them.
    let out = airlock(tmp.path(), &config)
        .args(["run", "x", "--max-steps", "500"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("max_steps"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(model.seen().is_empty());

    // A credential the session loads: no form of it may reach the model.
    let mut set = airlock(tmp.path(), &config)
        .args([
            "vault",
            "set",
            "login",
            "--origin",
            &origin,
            "--username",
            "ada",
            "--password-stdin",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = set.stdin.take().unwrap();
    stdin
        .write_all(format!("{PASSWORD}\n").as_bytes())
        .await
        .unwrap();
    drop(stdin);
    assert!(set.wait().await.unwrap().success());

    let shot = tmp.path().join("final.png");
    let mut running = airlock(tmp.path(), &config)
        .args(["run", "delete the account", "--start-url"])
        .arg(site.url("resolve.html"))
        .args(["--credential", "login", "--json", "--screenshot"])
        .arg(&shot)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = running.stdout.take().unwrap();
    let mut lines = BufReader::new(running.stderr.take().unwrap()).lines();
    // The held step tells the operator how to decide it.
    let id = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(i) = line.find("airlock approvals approve apr_") {
                return line[i + 26..].split_whitespace().next().unwrap().to_owned();
            }
        }
        panic!("airlock run ended before a step was held");
    })
    .await
    .expect("the click is held within 60 s");
    let stderr = tokio::spawn(async move {
        let mut rest = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            rest.push(line);
        }
        rest
    });
    // A second terminal sees it pending, then approves it.
    let list = airlock(tmp.path(), &config)
        .args(["approvals", "list", "--json"])
        .output()
        .await
        .unwrap();
    let listed = String::from_utf8_lossy(&list.stdout);
    let pending: Value = listed
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|a| a["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} is not listed: {listed}"));
    assert_eq!(pending["status"], "pending");
    assert_eq!(pending["rule"], "destructive");
    let approved = airlock(tmp.path(), &config)
        .args(["approvals", "approve", &id])
        .output()
        .await
        .unwrap();
    assert!(
        approved.status.success(),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );

    let status = tokio::time::timeout(Duration::from_secs(60), running.wait())
        .await
        .expect("the task ends within 60 s of the approval")
        .unwrap();
    let mut printed = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut printed)
        .await
        .unwrap();
    let progress = stderr.await.unwrap();
    assert_eq!(status.code(), Some(0), "{printed}\n{progress:?}");
    let result: Value = serde_json::from_str(printed.trim()).unwrap();
    assert_eq!(result["status"], "finished", "{result}");
    assert_eq!(result["answer"], "deleted");
    assert_eq!(result["steps"], 1);
    assert!(
        progress
            .iter()
            .any(|l| l.contains("1/20: step 1: browser_click ok")),
        "{progress:?}"
    );
    // The approved click ran: the page the model saw next says so.
    let seen = model.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].body.contains("deleted 1"), "{}", seen[1].body);
    for (i, request) in seen.iter().enumerate() {
        assert_eq!(
            request.authorization.as_deref(),
            Some(format!("Bearer {MODEL_KEY}").as_str())
        );
        for form in secret_forms(PASSWORD) {
            assert!(!request.body.contains(&form), "request {i} holds `{form}`");
        }
    }
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG"));

    // The record: the task, its step under it, the approval decided by the operator.
    let export = airlock(tmp.path(), &config)
        .args(["audit", "export"])
        .output()
        .await
        .unwrap();
    let events: Vec<Value> = String::from_utf8_lossy(&export.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds = |kind: &'static str| events.iter().filter(move |e| e["kind"] == kind);
    assert_eq!(kinds("task_started").count(), 1);
    assert_eq!(
        kinds("task_ended").next().unwrap()["status"],
        "finished",
        "{events:?}"
    );
    let click = kinds("tool_call")
        .find(|e| e["tool"] == "browser_click")
        .unwrap();
    assert_eq!(click["task"], result["task"]);
    let decided = kinds("approval_decided").next().unwrap();
    assert_eq!(decided["by"], "cli:operator-3", "{decided}");
    // Nothing the operator's terminal or the record got holds the model's key or a
    // form of the loaded password.
    let said = [
        printed.as_str(),
        &progress.join("\n"),
        &String::from_utf8_lossy(&export.stdout),
    ]
    .join("\n");
    assert!(!said.contains(MODEL_KEY));
    for form in secret_forms(PASSWORD) {
        assert!(!said.contains(&form), "the output holds `{form}`");
    }
    assert_clean(tmp.path()).await;
}
