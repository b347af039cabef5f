//! The SQLite store: WAL, upserts, atomic rewrites, single-use grants under races.

#![allow(clippy::unwrap_used)]

use super::*;

fn record(name: &str, byte: u8) -> SecretRecord {
    SecretRecord {
        tenant: "default".into(),
        name: name.into(),
        origins: vec!["https://app.example.com".into()],
        fields: vec!["password".into()],
        nonce: vec![byte; 24],
        ciphertext: vec![byte; 40],
        created_at: 100,
        updated_at: 100,
    }
}

#[test]
fn both_backends_carry_the_same_migrations() {
    let (sqlite, postgres) = Store::migration_versions();
    assert!(!sqlite.is_empty());
    assert_eq!(sqlite, postgres);
}

#[tokio::test]
async fn a_file_database_is_in_wal_mode_and_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("airlock.db");
    let store = Store::open_sqlite(&path).await.unwrap();
    assert_eq!(store.journal_mode().await.unwrap(), "wal");
    store.put_secret(&record("app", 1)).await.unwrap();
    // The database and its WAL are their owner's only.
    let mode = |p: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&dir.path().join("airlock.db-wal")), 0o600);
    store.close().await;
    // One made with wider permissions is narrowed when opened.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    // Reopening runs the migrations again: a no-op, the data stays.
    let store = Store::open_sqlite(&path).await.unwrap();
    assert_eq!(
        store.secret("default", "app").await.unwrap(),
        Some(record("app", 1))
    );
    assert_eq!(mode(&path), 0o600);
    store.close().await;
}

#[tokio::test]
async fn secrets_upsert_list_and_delete_per_tenant() {
    let store = Store::open_in_memory().await.unwrap();
    store.put_secret(&record("b", 1)).await.unwrap();
    store.put_secret(&record("a", 2)).await.unwrap();
    let mut other = record("a", 3);
    other.tenant = "other".into();
    store.put_secret(&other).await.unwrap();
    // An update keeps the creation time.
    let mut updated = record("b", 4);
    updated.created_at = 999;
    updated.updated_at = 200;
    store.put_secret(&updated).await.unwrap();
    let b = store.secret("default", "b").await.unwrap().unwrap();
    assert_eq!((b.created_at, b.updated_at, b.nonce[0]), (100, 200, 4));

    let names: Vec<_> = store
        .secrets(Some("default"))
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(store.secrets(None).await.unwrap().len(), 3);
    assert!(store.delete_secret("default", "a").await.unwrap());
    assert!(!store.delete_secret("default", "a").await.unwrap());
    assert!(store.secret("other", "a").await.unwrap().is_some());
}

#[tokio::test]
async fn a_failed_rewrite_changes_nothing() {
    let store = Store::open_in_memory().await.unwrap();
    store.put_secret(&record("a", 1)).await.unwrap();
    store.set_meta("check", b"old").await.unwrap();
    // The second record does not exist: the whole rewrite must roll back.
    let err = store
        .rewrite(
            &[record("a", 9), record("ghost", 9)],
            &[],
            &[("check", b"new".to_vec())],
        )
        .await;
    assert!(err.is_err());
    assert_eq!(
        store.secret("default", "a").await.unwrap().unwrap().nonce[0],
        1
    );
    assert_eq!(store.meta("check").await.unwrap().unwrap(), b"old");
    store
        .rewrite(&[record("a", 9)], &[], &[("check", b"new".to_vec())])
        .await
        .unwrap();
    assert_eq!(
        store.secret("default", "a").await.unwrap().unwrap().nonce[0],
        9
    );
    assert_eq!(store.meta("check").await.unwrap().unwrap(), b"new");
}

fn grant(id: &str, reusable: bool) -> GrantRecord {
    GrantRecord {
        id: id.into(),
        tenant: "default".into(),
        token_hash: id.as_bytes().to_vec(),
        domains: vec!["example.com".into()],
        created_at: 100,
        expires_at: 200,
        reusable,
        used_at: None,
        revoked_at: None,
    }
}

#[tokio::test]
async fn grants_are_used_once_expire_and_revoke() {
    let store = Store::open_in_memory().await.unwrap();
    store.insert_grant(&grant("once", false)).await.unwrap();
    store.insert_grant(&grant("many", true)).await.unwrap();
    store.insert_grant(&grant("gone", true)).await.unwrap();
    assert!(store.use_grant("once", 150).await.unwrap());
    assert!(!store.use_grant("once", 151).await.unwrap(), "single use");
    assert!(store.use_grant("many", 150).await.unwrap());
    assert!(store.use_grant("many", 160).await.unwrap());
    assert!(!store.use_grant("many", 200).await.unwrap(), "expired");
    assert!(store.revoke_grant("default", "gone", 120).await.unwrap());
    assert!(!store.revoke_grant("default", "gone", 121).await.unwrap());
    assert!(!store.use_grant("gone", 130).await.unwrap(), "revoked");
    assert!(
        !store.revoke_grant("other", "many", 130).await.unwrap(),
        "other tenant"
    );
    let found = store.grant_by_hash(b"once").await.unwrap().unwrap();
    assert_eq!(found.used_at, Some(150));
    assert_eq!(store.grants("default").await.unwrap().len(), 3);
}

#[tokio::test]
async fn racing_uses_of_a_single_use_grant_succeed_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(&dir.path().join("db")).await.unwrap();
    store.insert_grant(&grant("race", false)).await.unwrap();
    let tries: Vec<_> = (0..8)
        .map(|_| {
            let s = store.clone();
            tokio::spawn(async move { s.use_grant("race", 150).await.unwrap() })
        })
        .collect();
    let mut wins = 0;
    for t in tries {
        wins += usize::from(t.await.unwrap());
    }
    assert_eq!(wins, 1);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_events_racing_from_two_handles_form_one_unbroken_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("airlock.db");
    // Two pools on one file: a server and the CLI writing at once.
    let (a, b) = (
        Store::open_sqlite(&path).await.unwrap(),
        Store::open_sqlite(&path).await.unwrap(),
    );
    let event = |i: usize| {
        let serde_json::Value::Object(map) = serde_json::json!({
            "tenant": "default", "time_ms": 1_000 + i, "kind": "tool_call",
            "session": format!("s{}", i % 3), "tool": "browser_click",
        }) else {
            unreachable!()
        };
        map
    };
    let mut tasks = Vec::new();
    for i in 0..40 {
        let store = if i % 2 == 0 { a.clone() } else { b.clone() };
        let fields = event(i);
        tasks.push(tokio::spawn(
            async move { store.append_audit(&fields).await },
        ));
    }
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let records = a.audit_events(0, 1_000).await.unwrap();
    assert_eq!(records.len(), 40);
    let rows: Vec<_> = records.iter().map(AuditRecord::row).collect();
    assert_eq!(airlock_audit::verify(&rows, &[]).unwrap().events, 40);
    let tail = b.audit_tail(5).await.unwrap();
    assert_eq!(
        tail.iter().map(|r| r.seq).collect::<Vec<_>>(),
        vec![36, 37, 38, 39, 40]
    );
    assert_eq!(a.audit_events(38, 10).await.unwrap().len(), 2);
    // An event without its tenant is refused, and nothing is written.
    let mut bad = event(0);
    bad.remove("tenant");
    assert!(a.append_audit(&bad).await.is_err());
    assert_eq!(a.audit_tail(1).await.unwrap()[0].seq, 40);
}

fn approval(id: &str, expires_ms: i64) -> crate::ApprovalRecord {
    crate::ApprovalRecord {
        id: id.to_owned(),
        tenant: "default".to_owned(),
        caller: "default/k".to_owned(),
        session: Some("s1".to_owned()),
        tool: "browser_click".to_owned(),
        args: "{}".to_owned(),
        target: None,
        page_url: None,
        page_title: None,
        rule: "destructive".to_owned(),
        risk: "high".to_owned(),
        binding: vec![1, 2, 3],
        status: ApprovalStatus::Pending,
        created_ms: expires_ms - 60_000,
        expires_ms,
        decided_ms: None,
        decided_by: None,
        note: None,
        used_ms: None,
        detail: None,
        waiter: None,
    }
}

#[tokio::test]
async fn an_approval_is_decided_once_used_once_and_expires_when_nobody_waits() {
    let store = Store::open_in_memory().await.unwrap();
    let now = 1_800_000_000_000;
    store
        .insert_approval(
            &approval("apr_old", now - 10_000),
            Some(("image/jpeg", b"\xff\xd8")),
        )
        .await
        .unwrap();
    store
        .insert_approval(&approval("apr_new", now + 60_000), None)
        .await
        .unwrap();
    assert_eq!(
        store.approval_screenshot("apr_old").await.unwrap(),
        Some(("image/jpeg".to_owned(), b"\xff\xd8".to_vec()))
    );
    assert_eq!(store.approval_screenshot("apr_new").await.unwrap(), None);
    // Scoped by tenant in the query itself: another tenant's id reads as none.
    assert!(
        store
            .tenant_approval("default", "apr_new")
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .tenant_approval("acme", "apr_new")
            .await
            .unwrap()
            .is_none()
    );
    // Overdue by more than the grace: expired; the live one is left alone.
    let expired = store.expire_overdue(now - 5_000, now).await.unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(
        (expired[0].id.as_str(), expired[0].status.as_str()),
        ("apr_old", "expired")
    );
    assert_eq!(
        store
            .decide_approval("apr_old", true, "x", None, now)
            .await
            .unwrap(),
        crate::Decided::Closed(ApprovalStatus::Expired)
    );
    // Not approved yet: nothing to use.
    assert!(!store.use_approval("apr_new", now).await.unwrap());
    assert_eq!(
        store
            .decide_approval("apr_new", true, "x", None, now)
            .await
            .unwrap(),
        crate::Decided::Done
    );
    assert!(store.use_approval("apr_new", now).await.unwrap());
    assert!(
        !store.use_approval("apr_new", now).await.unwrap(),
        "used twice"
    );
    assert_eq!(
        store.approval("apr_new").await.unwrap().unwrap().used_ms,
        Some(now)
    );
}

#[tokio::test]
async fn keys_belong_to_a_tenant_are_found_by_hash_and_revoked_once() {
    let store = Store::open_in_memory().await.unwrap();
    assert!(store.create_tenant("acme", 1).await.unwrap());
    assert!(
        !store.create_tenant("acme", 2).await.unwrap(),
        "names are unique"
    );
    let key = KeyRecord {
        id: "key_1".into(),
        tenant: "acme".into(),
        role: "act".into(),
        name: Some("ci".into()),
        key_hash: vec![7; 32],
        created_ms: 5,
        revoked_ms: None,
    };
    store.insert_key(&key).await.unwrap();
    // A key of a tenant that does not exist is refused by the database.
    let orphan = KeyRecord {
        id: "key_2".into(),
        tenant: "nobody".into(),
        key_hash: vec![8; 32],
        ..key.clone()
    };
    assert!(store.insert_key(&orphan).await.is_err());
    assert_eq!(
        store.key_by_hash(&[7; 32]).await.unwrap(),
        Some(key.clone())
    );
    assert_eq!(store.key_by_hash(&[9; 32]).await.unwrap(), None);
    assert_eq!(store.keys(Some("other")).await.unwrap(), vec![]);
    assert!(store.revoke_key("key_1", 10).await.unwrap());
    assert!(!store.revoke_key("key_1", 11).await.unwrap());
    let revoked = store.key_by_hash(&[7; 32]).await.unwrap().unwrap();
    assert_eq!(revoked.revoked_ms, Some(10));
}

#[tokio::test]
async fn live_sessions_are_noted_and_forgotten() {
    let store = Store::open_in_memory().await.unwrap();
    let live = LiveSessionRecord {
        id: "s1".into(),
        tenant: "default".into(),
        user_id: Some("u".into()),
        conversation: None,
        gateway_pid: 42,
        opened_ms: 3,
        replica: Some("r1".into()),
        ..Default::default()
    };
    store.insert_live_session(&live).await.unwrap();
    assert_eq!(store.live_sessions().await.unwrap(), vec![live]);
    store.remove_live_session("s1").await.unwrap();
    assert!(store.live_sessions().await.unwrap().is_empty());
}
