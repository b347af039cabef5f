//! `airlock vault …` and `airlock grant …` through the real binary: values go in and
//! never come out, the wrong key changes nothing, rotation keeps every record.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::server::BIN;

const PASSWORD: &str = "hunter2-but-longer";

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn airlock(data: &Path, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("AIRLOCK_MASTER_KEY")
        .env("AIRLOCK_DATA_DIR", data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn assert_no_value(run: &Run, value: &str) {
    assert!(
        !run.stdout.contains(value) && !run.stderr.contains(value),
        "the value leaked: {} / {}",
        run.stdout,
        run.stderr
    );
}

#[test]
fn values_go_in_and_never_come_out() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let set = airlock(
        data,
        &[
            "vault",
            "set",
            "app",
            "--origin",
            "https://app.example.com",
            "--username",
            "alice",
            "--password-stdin",
            "--header-stdin",
            "X-Api-Key",
        ],
        &format!("{PASSWORD}\nheader-value-123\n"),
        &[],
    );
    assert_eq!(set.code, 0, "{}", set.stderr);
    assert_no_value(&set, PASSWORD);
    let key_file = data.join("master.key");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let list = airlock(data, &["vault", "list"], "", &[]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(
        list.stdout
            .contains("app\torigins: https://app.example.com\tfields: username,password,headers"),
        "{}",
        list.stdout
    );
    assert_no_value(&list, PASSWORD);
    assert_no_value(&list, "header-value-123");
    // Times read as dates, not Unix seconds.
    assert!(
        list.stdout.contains("\tcreated: 20") && list.stdout.contains(" UTC\tupdated: 20"),
        "{}",
        list.stdout
    );

    // Too short: refused, and the refusal does not echo it.
    let short = airlock(
        data,
        &["vault", "set", "app", "--password-stdin"],
        "abc12\n",
        &[],
    );
    assert_ne!(short.code, 0);
    assert!(short.stderr.contains("shorter than 6"), "{}", short.stderr);
    assert_no_value(&short, "abc12");

    // Nothing in the database file is the plaintext either.
    let db = std::fs::read(data.join("airlock.db")).unwrap();
    let wal = std::fs::read(data.join("airlock.db-wal")).unwrap_or_default();
    for bytes in [&db, &wal] {
        assert!(
            !bytes
                .windows(PASSWORD.len())
                .any(|w| w == PASSWORD.as_bytes())
        );
    }
}

#[test]
fn the_wrong_key_is_one_clear_error_and_rotation_keeps_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let set = airlock(
        data,
        &[
            "vault",
            "set",
            "app",
            "--origin",
            "http://127.0.0.1:9",
            "--password-stdin",
        ],
        &format!("{PASSWORD}\n"),
        &[],
    );
    assert_eq!(set.code, 0, "{}", set.stderr);
    let db_before = std::fs::read(data.join("airlock.db")).unwrap();

    // A wrong key from the environment: one clear error, nothing written.
    let wrong = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let run = airlock(
        data,
        &["vault", "list"],
        "",
        &[("AIRLOCK_MASTER_KEY", wrong)],
    );
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("the master key does not open this vault; nothing was changed"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read(data.join("airlock.db")).unwrap(), db_before);

    let old_key = std::fs::read_to_string(data.join("master.key")).unwrap();
    let rotate = airlock(data, &["vault", "rotate-key"], "", &[]);
    assert_eq!(rotate.code, 0, "{}", rotate.stderr);
    assert!(
        rotate.stdout.contains("re-encrypted 1 secret(s)"),
        "{}",
        rotate.stdout
    );
    assert_ne!(
        std::fs::read_to_string(data.join("master.key")).unwrap(),
        old_key
    );
    let list = airlock(data, &["vault", "list"], "", &[]);
    assert!(
        list.stdout.contains("app\t"),
        "{} {}",
        list.stdout,
        list.stderr
    );
    // The old key no longer opens it.
    let run = airlock(
        data,
        &["vault", "list"],
        "",
        &[("AIRLOCK_MASTER_KEY", old_key.trim())],
    );
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("does not open"), "{}", run.stderr);

    let rm = airlock(data, &["vault", "rm", "app"], "", &[]);
    assert_eq!(rm.code, 0, "{}", rm.stderr);
    let rm = airlock(data, &["vault", "rm", "app"], "", &[]);
    assert_ne!(rm.code, 0);
}

#[test]
fn grant_tokens_print_once_and_revoke() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let create = airlock(
        data,
        &[
            "grant",
            "create",
            "--domains",
            "app.example.com",
            "--ttl",
            "15m",
        ],
        "",
        &[],
    );
    assert_eq!(create.code, 0, "{}", create.stderr);
    let token = create.stdout.trim().to_owned();
    assert!(token.starts_with("agt_"), "{token}");
    let list = airlock(data, &["grant", "list"], "", &[]);
    assert!(
        list.stdout.contains("domains: app.example.com")
            && list.stdout.contains("\texpires: 20")
            && list.stdout.contains(" UTC\t")
            && list.stdout.contains("live"),
        "{}",
        list.stdout
    );
    assert_no_value(&list, &token);
    let id = list.stdout.split('\t').next().unwrap().to_owned();
    let revoke = airlock(data, &["grant", "revoke", &id], "", &[]);
    assert_eq!(revoke.code, 0, "{}", revoke.stderr);
    let list = airlock(data, &["grant", "list"], "", &[]);
    assert!(list.stdout.contains("revoked"), "{}", list.stdout);
    let bad = airlock(
        data,
        &["grant", "create", "--domains", "x.com", "--ttl", "90d"],
        "",
        &[],
    );
    assert_ne!(bad.code, 0);
}

#[test]
fn every_vault_and_grant_change_is_on_the_audit_record_by_name_only() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let env = [("USER", "sam")];
    let run = |args: &[&str], stdin: &str| {
        let run = airlock(data, args, stdin, &env);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        run
    };
    let origin = ["--origin", "https://app.example.com"];
    run(
        &[
            "vault",
            "set",
            "app",
            origin[0],
            origin[1],
            "--password-stdin",
        ],
        &format!("{PASSWORD}\n"),
    );
    let state = data.join("state.json");
    std::fs::write(
        &state,
        r#"{"cookies":[{"name":"sid","value":"cookie-value-789","domain":"app.example.com","path":"/"}]}"#,
    )
    .unwrap();
    run(
        &[
            "vault",
            "import",
            "web",
            origin[0],
            origin[1],
            "--storage-state",
            state.to_str().unwrap(),
        ],
        "",
    );
    let token = run(
        &[
            "grant",
            "create",
            "--domains",
            "app.example.com",
            "--ttl",
            "15m",
        ],
        "",
    )
    .stdout
    .trim()
    .to_owned();
    let id = run(&["grant", "list"], "")
        .stdout
        .split('\t')
        .next()
        .unwrap()
        .to_owned();
    run(&["grant", "revoke", &id], "");
    run(&["vault", "rm", "web"], "");
    run(&["vault", "rotate-key"], "");

    let export = run(&["audit", "export"], "");
    let events: Vec<serde_json::Value> = export
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let seen: Vec<(String, String, String)> = events
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_owned(),
                e["action"].as_str().unwrap().to_owned(),
                e["name"]
                    .as_str()
                    .or(e["grant"].as_str())
                    .unwrap_or("")
                    .to_owned(),
            )
        })
        .collect();
    let change = |action: &str, name: &str| {
        (
            "vault_change".to_owned(),
            action.to_owned(),
            name.to_owned(),
        )
    };
    assert_eq!(
        seen,
        [
            change("set", "app"),
            change("import", "web"),
            change("grant-create", &id),
            change("grant-revoke", &id),
            change("rm", "web"),
            change("rotate-key", ""),
        ]
    );
    assert!(events.iter().all(|e| e["by"] == "cli:sam"), "{events:?}");
    assert_eq!(events[0]["fields"], serde_json::json!(["password"]));
    for value in [PASSWORD, "cookie-value-789", token.as_str()] {
        assert!(!export.stdout.contains(value), "{value} is on the record");
    }
    // One chain; no gateway ran here to sign a checkpoint over it, and verify says so.
    let verify = airlock(data, &["audit", "verify"], "", &env);
    assert_eq!(verify.code, 2, "{}", verify.stdout);
    assert!(
        verify
            .stdout
            .starts_with("UNANCHORED: 6 events form one unbroken chain"),
        "{}",
        verify.stdout
    );
}

#[test]
fn every_command_takes_the_data_dir_and_vault_commands_say_which_vault() {
    let dir = tempfile::tempdir().unwrap();
    let env_dir = dir.path().join("from-env");
    let flag_dir = dir.path().join("from-flag");
    let flag = flag_dir.to_str().unwrap();
    // The flag beats AIRLOCK_DATA_DIR, before or after the subcommand.
    let set = airlock(
        &env_dir,
        &[
            "--data-dir",
            flag,
            "vault",
            "set",
            "app",
            "--origin",
            "https://app.example.com",
            "--password-stdin",
        ],
        &format!("{PASSWORD}\n"),
        &[],
    );
    assert_eq!(set.code, 0, "{}", set.stderr);
    assert!(
        set.stderr
            .contains(&format!("vault: {}", flag_dir.join("airlock.db").display())),
        "{}",
        set.stderr
    );
    let listed = airlock(&env_dir, &["vault", "list", "--data-dir", flag], "", &[]);
    assert!(listed.stdout.contains("app"), "{}", listed.stdout);
    let other = airlock(&env_dir, &["vault", "list"], "", &[]);
    assert!(!other.stdout.contains("app"), "{}", other.stdout);
    // Listing where there is no vault creates none (no key file appears).
    assert!(other.stdout.contains("no vault in"), "{}", other.stdout);
    assert!(!env_dir.join("master.key").exists());
    let grants = airlock(&env_dir, &["grant", "list", "--data-dir", flag], "", &[]);
    assert_eq!(grants.code, 0, "{}", grants.stderr);
    let doctor = airlock(&env_dir, &["doctor", "--data-dir", flag], "", &[]);
    assert!(doctor.stdout.contains(flag), "{}", doctor.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_the_key_under_a_running_gateway_is_refused_and_said_so() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let set = airlock(
        &data,
        &[
            "vault",
            "set",
            "app",
            "--origin",
            "https://app.example.com",
            "--password-stdin",
        ],
        &format!("{PASSWORD}\n"),
        &[],
    );
    assert_eq!(set.code, 0, "{}", set.stderr);
    let served = crate::server::serve(tmp.path(), None).await;
    let refused = airlock(&data, &["vault", "rotate-key"], "", &[]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("error: a gateway") && refused.stderr.contains("is running"),
        "{}",
        refused.stderr
    );
    crate::server::stop(served).await;
    let rotated = airlock(&data, &["vault", "rotate-key"], "", &[]);
    assert_eq!(rotated.code, 0, "{}", rotated.stderr);
    assert!(
        rotated.stdout.contains("re-encrypted 1 secret"),
        "{}",
        rotated.stdout
    );
}

#[test]
fn a_data_dir_other_users_could_enter_is_closed_to_them() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let set = airlock(
        &data,
        &[
            "vault",
            "set",
            "app",
            "--origin",
            "https://app.example.com",
            "--password-stdin",
        ],
        &format!("{PASSWORD}\n"),
        &[],
    );
    assert_eq!(set.code, 0, "{}", set.stderr);
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
    assert!(set.stderr.contains("open to other users"), "{}", set.stderr);
}
