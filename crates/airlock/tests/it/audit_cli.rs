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
    let (code, out) = airlock(dir.path(), &["audit", "verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("ok: 5 events, tree root "), "{out}");

    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        dir.path().join("airlock.db").display()
    ))
    .await
    .unwrap();
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
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        other.path().join("airlock.db").display()
    ))
    .await
    .unwrap();
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
}
