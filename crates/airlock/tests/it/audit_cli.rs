//! `airlock audit verify|tail` through the real binary, against a log written by the
//! store and then tampered with by hand, as someone with the database file could.

use std::path::Path;
use std::process::Command;

use airlock_store::Store;

use crate::server::BIN;

fn airlock(data: &Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("AIRLOCK_CONFIG")
        .env("AIRLOCK_DATA_DIR", data)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

// The database as someone with the file opens it, around Airlock.
async fn by_hand(data: &Path) -> sqlx::SqlitePool {
    sqlx::SqlitePool::connect(&format!("sqlite://{}", data.join("airlock.db").display()))
        .await
        .unwrap()
}

async fn written(data: &Path, names: &[&str]) -> Store {
    let store = Store::open_sqlite(&data.join("airlock.db")).await.unwrap();
    for (i, name) in names.iter().enumerate() {
        let serde_json::Value::Object(fields) = serde_json::json!({
            "tenant": "default", "time_ms": 1_700_000_000_000_i64 + i as i64,
            "kind": "tool_call", "tool": "browser_click",
            "target": {"role": "button", "name": name},
        }) else {
            unreachable!()
        };
        store.append_audit(&fields).await.unwrap();
    }
    store
}

#[tokio::test]
async fn verify_names_the_event_someone_edited_or_removed() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["Item 1", "Item 2", "Item 3", "Item 4", "Item 5"];
    let store = written(dir.path(), &names).await;
    // One chain, but nothing signed over it: said loudly, with its own exit code.
    let (code, out) = airlock(dir.path(), &["audit", "verify"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.starts_with("UNANCHORED: 5 events form one unbroken chain, but no signed checkpoint covers any of them"),
        "{out}"
    );

    let pool = by_hand(dir.path()).await;
    sqlx::query("UPDATE audit_events SET body = replace(body, 'Item 3', 'Item 9') WHERE seq = 3")
        .execute(&pool)
        .await
        .unwrap();
    let (code, out) = airlock(dir.path(), &["audit", "verify"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out.trim(),
        "broken: edited: event 3 is not what was written"
    );

    let other = tempfile::tempdir().unwrap();
    written(other.path(), &names).await;
    let pool = by_hand(other.path()).await;
    sqlx::query("DELETE FROM audit_events WHERE seq = 2")
        .execute(&pool)
        .await
        .unwrap();
    let (code, out) = airlock(other.path(), &["audit", "verify"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(out.trim(), "broken: missing: event 2 is not there");
    store.close().await;
}

#[tokio::test]
async fn tail_prints_one_line_an_event_whatever_a_page_named_things() {
    let dir = tempfile::tempdir().unwrap();
    // A page-controlled name that tries to start a line and colour the terminal.
    let hostile = "Save\n{\"kind\":\"forged\"}\u{1b}[31m";
    written(dir.path(), &["Open", hostile, "Close"]).await;
    let (code, out) = airlock(dir.path(), &["audit", "tail", "-n", "2"]);
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].contains(r#""seq":2"#), "{out}");
    assert!(
        lines[0].contains(r#"Save\n{\"kind\":\"forged\"}\u001b[31m"#),
        "{out}"
    );
    assert!(!out.contains('\u{1b}'), "{out:?}");
    assert!(lines[1].contains(r#""seq":3"#), "{out}");

    let (code, out) = airlock(dir.path(), &["audit", "export", "--since", "1"]);
    assert_eq!(code, 0, "{out}");
    let seqs: Vec<u64> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(seqs, [2, 3]);
    let (_, out) = airlock(dir.path(), &["audit", "export", "--session", "nope"]);
    assert_eq!(out, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_follow_prints_new_events_as_they_are_written_and_defuses_terminal_tricks() {
    use tokio::io::AsyncBufReadExt as _;

    let dir = tempfile::tempdir().unwrap();
    let store = written(dir.path(), &["Open"]).await;
    let mut follow = tokio::process::Command::new(BIN)
        .args(["audit", "tail", "-n", "1", "--follow"])
        .env_remove("AIRLOCK_CONFIG")
        .env("AIRLOCK_DATA_DIR", dir.path())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(follow.stdout.take().unwrap()).lines();
    let next = async |lines: &mut tokio::io::Lines<_>| {
        tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
            .await
            .expect("a line within 20 s")
            .unwrap()
            .expect("still running")
    };
    let first: String = next(&mut lines).await;
    assert!(first.contains(r#""seq":1"#), "{first}");
    // Written while it follows, by another handle (as a running gateway would): a
    // C1 CSI (U+009B) and a right-to-left override, which JSON leaves raw.
    let hostile = "Pay\u{9b}31m \u{202e}yap";
    let serde_json::Value::Object(fields) = serde_json::json!({
        "tenant": "default", "time_ms": 1_700_000_000_500_i64,
        "kind": "tool_call", "tool": "browser_click",
        "target": {"role": "button", "name": hostile},
    }) else {
        unreachable!()
    };
    store.append_audit(&fields).await.unwrap();
    let second: String = next(&mut lines).await;
    assert!(second.contains(r#""seq":2"#), "{second}");
    assert!(second.contains(r"Pay\u009b31m \u202eyap"), "{second}");
    assert!(
        !second.contains('\u{9b}') && !second.contains('\u{202e}'),
        "{second:?}"
    );
    // Still JSON, naming the same string.
    let parsed: serde_json::Value = serde_json::from_str(&second).unwrap();
    assert_eq!(parsed["target"]["name"], hostile);
    let pid = nix::unistd::Pid::from_raw(follow.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), follow.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    store.close().await;
}

#[tokio::test]
async fn signed_checkpoints_catch_a_log_cut_short_and_a_foreign_key() {
    use std::os::unix::fs::PermissionsExt as _;

    use airlock_audit::{Checkpoint, SigningKey, merkle};
    use base64::Engine as _;

    let dir = tempfile::tempdir().unwrap();
    let key = SigningKey::from_bytes(&[42u8; 32]);
    let key_path = dir.path().join("audit.key");
    std::fs::write(
        &key_path,
        base64::engine::general_purpose::STANDARD.encode([42u8; 32]),
    )
    .unwrap();
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let store = written(dir.path(), &["a", "b", "c", "d", "e"]).await;
    let records = store.audit_events(0, 10).await.unwrap();
    let leaves: Vec<_> = records
        .iter()
        .map(|r| merkle::leaf_hash(r.body.as_bytes()))
        .collect();
    let mut notes = String::new();
    for size in [3, 5] {
        let checkpoint = Checkpoint {
            origin: "airlock.local/audit".to_owned(),
            size: size as u64,
            root: merkle::root(&leaves[..size]),
        };
        notes.push_str(&checkpoint.sign("airlock.local/audit", &key));
    }
    std::fs::write(dir.path().join("audit.checkpoints"), notes).unwrap();

    let (code, out) = airlock(dir.path(), &["audit", "verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("ok: 5 events, 2 signed checkpoints"),
        "{out}"
    );
    let (code, vkey) = airlock(dir.path(), &["audit", "public-key"]);
    assert_eq!(code, 0, "{vkey}");
    assert!(vkey.starts_with("airlock.local/audit+"), "{vkey}");
    let (code, out) = airlock(
        dir.path(),
        &["audit", "verify", "--public-key", vkey.trim()],
    );
    assert_eq!(code, 0, "{out}");

    // Offline: an export, the checkpoints and the public key, elsewhere.
    let away = tempfile::tempdir().unwrap();
    let (code, exported) = airlock(dir.path(), &["audit", "export"]);
    assert_eq!(code, 0);
    let export = away.path().join("events.jsonl");
    std::fs::write(&export, &exported).unwrap();
    let copied = away.path().join("checkpoints");
    std::fs::copy(dir.path().join("audit.checkpoints"), &copied).unwrap();
    let offline = |export: &Path| {
        airlock(
            away.path(),
            &[
                "audit",
                "verify",
                "--export",
                export.to_str().unwrap(),
                "--checkpoints",
                copied.to_str().unwrap(),
                "--public-key",
                vkey.trim(),
            ],
        )
    };
    let (code, out) = offline(&export);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("ok: 5 events, 2 signed checkpoints"),
        "{out}"
    );
    // An edited line in the export: the chain is recomputed, the checkpoint is not.
    let edited = away.path().join("edited.jsonl");
    std::fs::write(
        &edited,
        exported.replacen(r#""name":"b""#, r#""name":"x""#, 1),
    )
    .unwrap();
    let (code, out) = offline(&edited);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("the checkpoint at 3 does not match"), "{out}");

    // Another key's verifier key does not open these checkpoints.
    let other = airlock_audit::verifier_key(
        "airlock.local/audit",
        &SigningKey::from_bytes(&[9u8; 32]).verifying_key(),
    );
    let (code, out) = airlock(dir.path(), &["audit", "verify", "--public-key", &other]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("broken: bad checkpoint"), "{out}");

    // The last event deleted, chain and all: only the checkpoint can tell.
    let pool = by_hand(dir.path()).await;
    sqlx::query("DELETE FROM audit_events WHERE seq = 5")
        .execute(&pool)
        .await
        .unwrap();
    let (code, out) = airlock(dir.path(), &["audit", "verify"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out.trim(),
        "broken: truncated: 4 events, but a checkpoint saw 5"
    );
}

/// Someone with the database edits only the columns readers filter on: the event's
/// tenant (moving it out of its tenant's view), its session, its kind. The hashed
/// body still says the truth: readers go by it, and `verify` names the column.
#[tokio::test]
async fn an_edit_of_a_filtered_column_alone_is_named_and_moves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // Closed, so the database file holds every event (copies of it are edited).
    written(dir.path(), &["a", "b", "c", "d"])
        .await
        .close()
        .await;
    for (column, edit, seq) in [
        (
            "tenant",
            "UPDATE audit_events SET tenant = 'intruder' WHERE seq = 2",
            2,
        ),
        (
            "session",
            "UPDATE audit_events SET session = 's-forged' WHERE seq = 3",
            3,
        ),
        (
            "kind",
            "UPDATE audit_events SET kind = 'session_open' WHERE seq = 4",
            4,
        ),
        (
            "time_ms",
            "UPDATE audit_events SET time_ms = 1 WHERE seq = 1",
            1,
        ),
    ] {
        let fresh = tempfile::tempdir().unwrap();
        std::fs::copy(
            dir.path().join("airlock.db"),
            fresh.path().join("airlock.db"),
        )
        .unwrap();
        let pool = by_hand(fresh.path()).await;
        sqlx::query(edit).execute(&pool).await.unwrap();
        pool.close().await;
        let (code, out) = airlock(fresh.path(), &["audit", "verify"]);
        assert_eq!(code, 1, "{column}: {out}");
        assert_eq!(
            out.trim(),
            format!(
                "broken: edited: the `{column}` column of event {seq} does not match its hashed body"
            )
        );
    }
    // What readers see comes from the body: the event is still the default tenant's.
    let pool = by_hand(dir.path()).await;
    sqlx::query("UPDATE audit_events SET tenant = 'intruder' WHERE seq = 2")
        .execute(&pool)
        .await
        .unwrap();
    let store = Store::open_sqlite(&dir.path().join("airlock.db"))
        .await
        .unwrap();
    let records = store.audit_events(0, 10).await.unwrap();
    assert_eq!(records[1].tenant, "default");
    assert!(records.iter().all(|r| r.tenant == "default"));
    store.close().await;
}

/// A tamperer rewrites an event, re-chains the whole log and deletes the local
/// checkpoints: `verify` alone says loudly that nothing anchors the log, and against
/// the checkpoints the gateway published off the data dir it names the rewrite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rechained_log_is_caught_by_the_checkpoints_published_off_the_box() {
    let tmp = tempfile::tempdir().unwrap();
    let published = tempfile::tempdir().unwrap();
    let config = tmp.path().join("airlock.toml");
    std::fs::write(
        &config,
        format!(
            "[audit]\npublish_dir = \"{}\"\n",
            published.path().join("witness").display()
        ),
    )
    .unwrap();
    let served = crate::server::serve_with(
        tmp.path(),
        Some("agent-key-0123456789abcdef"),
        Some(&config),
    )
    .await;
    // A few events: refused tokens are on the record.
    let authority = served
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    for _ in 0..3 {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut s = tokio::net::TcpStream::connect(&authority).await.unwrap();
        s.write_all(
            format!("GET /api/v1/sessions HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer wrong-0123456789abcdef\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        assert!(out.starts_with("HTTP/1.1 401"), "{out}");
    }
    // Stopping signs a checkpoint over everything, here and in the published dir.
    crate::server::stop(served).await;
    let data = tmp.path().join("data");
    let published_file = published.path().join("witness/airlock.checkpoints");
    let notes = std::fs::read_to_string(&published_file).unwrap();
    assert!(notes.starts_with("airlock.local/audit\n"), "{notes}");
    let (code, out) = airlock(&data, &["audit", "verify"]);
    assert_eq!(code, 0, "{out}");

    // The rewrite: the first event's reason changed, every chain hash recomputed.
    let pool = by_hand(&data).await;
    let rows: Vec<(i64, String)> =
        sqlx::query_as("SELECT seq, body FROM audit_events ORDER BY seq")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert!(rows.len() >= 3, "{rows:?}");
    let mut previous = [0u8; 32];
    for (seq, body) in rows {
        let body = if seq == 1 {
            body.replacen("wrong token", "right token", 1)
        } else {
            body
        };
        let chain = airlock_audit::chain(
            &previous,
            &airlock_audit::merkle::leaf_hash(body.as_bytes()),
        );
        sqlx::query("UPDATE audit_events SET body = ?, chain = ? WHERE seq = ?")
            .bind(&body)
            .bind(chain.as_slice())
            .bind(seq)
            .execute(&pool)
            .await
            .unwrap();
        previous = chain;
    }
    pool.close().await;
    // With the local checkpoints there, the rewrite is caught; the tamperer deletes them.
    let (code, out) = airlock(&data, &["audit", "verify"]);
    assert_eq!(code, 1, "{out}");
    std::fs::remove_file(data.join("audit.checkpoints")).unwrap();
    let (code, out) = airlock(&data, &["audit", "verify"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.starts_with("UNANCHORED: "), "{out}");
    // The published copy still holds what was signed.
    let (code, out) = airlock(
        &data,
        &[
            "audit",
            "verify",
            "--checkpoints",
            published_file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.starts_with("broken: edited: an event after 0 and up to"),
        "{out}"
    );
}
