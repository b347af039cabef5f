//! The store's stories, told against both backends: the embedded SQLite file and a
//! real PostgreSQL server (started by the test, see `airlock_test_support::Postgres`),
//! with several stores on one database standing for control-plane replicas.

#![allow(clippy::unwrap_used)]

use airlock_store::{
    ApprovalRecord, ApprovalStatus, ClaimCaps, Claimed, Decided, GrantRecord, HostRecord,
    KeyRecord, LiveSessionRecord, SecretRecord, Store, Wakeup,
};
use airlock_test_support::Postgres;
use serde_json::{Map, Value, json};

mod roles;
mod running;

/// Tells `story` three times: to three stores on one SQLite file, to three replicas
/// on one real Postgres (opened together: the database is migrated once), and to
/// three replicas served as a role that owns nothing (the owner migrates and grants:
/// every story must work with what the serving role is granted).
pub(crate) async fn on_both<F, Fut>(story: F)
where
    F: Fn([Store; 3]) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("airlock.db");
    let open = || Store::open_sqlite(&path);
    story([
        open().await.unwrap(),
        open().await.unwrap(),
        open().await.unwrap(),
    ])
    .await;
    let pg = Postgres::start();
    let url = pg.url();
    let (a, b, c) = tokio::join!(
        Store::open_postgres(&url),
        Store::open_postgres(&url),
        Store::open_postgres(&url)
    );
    story([a.unwrap(), b.unwrap(), c.unwrap()]).await;
    let (serving, owner) = served_by_another_role(&pg, "stories").await;
    let (a, b, c) = tokio::join!(
        Store::open_postgres_as(&serving, Some(&owner)),
        Store::open_postgres_as(&serving, Some(&owner)),
        Store::open_postgres_as(&serving, Some(&owner))
    );
    story([a.unwrap(), b.unwrap(), c.unwrap()]).await;
}

/// A new database `name` on `pg`, owned by the cluster's owner role, and a login role
/// that owns nothing: (the serving role's URL, the owner's URL), both for `name`.
pub(crate) async fn served_by_another_role(pg: &Postgres, name: &str) -> (String, String) {
    let admin = sqlx::PgPool::connect(&pg.url()).await.unwrap();
    // `name` is one of this file's literals.
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin)
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE ROLE serve_{name} LOGIN"
    )))
    .execute(&admin)
    .await
    .unwrap();
    admin.close().await;
    let owner = pg.url().replace("/postgres", &format!("/{name}"));
    let serving = owner.replacen(
        &format!("{}@", airlock_test_support::PG_USER),
        &format!("serve_{name}@"),
        1,
    );
    (serving, owner)
}

pub(crate) fn event(replica: usize, i: usize) -> Map<String, Value> {
    let Value::Object(fields) = json!({
        "tenant": "default",
        "time_ms": 1_700_000_000_000_i64 + i as i64,
        "kind": "tool_call",
        "session": format!("replica-{replica}"),
        "n": i,
    }) else {
        unreachable!()
    };
    fields
}

// Three stores on one database append at once; afterwards the log is one chain with
// every event in it, whichever store reads it.
async fn one_chain_from_three_writers(replicas: [Store; 3]) {
    const EACH: usize = 40;
    let writers: Vec<_> = replicas
        .iter()
        .enumerate()
        .map(|(r, store)| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..EACH {
                    store.append_audit(&event(r, i)).await.unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    for store in &replicas {
        let records = store.audit_events(0, 1_000).await.unwrap();
        assert_eq!(records.len(), 3 * EACH);
        let rows: Vec<_> = records.iter().map(|r| r.row()).collect();
        let verified = airlock_audit::verify(&rows, &[]).unwrap();
        assert_eq!(verified.events, (3 * EACH) as u64);
        for r in 0..3 {
            let mine = records
                .iter()
                .filter(|e| e.session.as_deref() == Some(&format!("replica-{r}")))
                .count();
            assert_eq!(mine, EACH);
        }
    }
    let tail = replicas[2].audit_tail(5).await.unwrap();
    assert_eq!(tail.last().unwrap().seq, (3 * EACH) as u64);
    for store in replicas {
        store.close().await;
    }
}

fn grant(id: &str, reusable: bool) -> GrantRecord {
    GrantRecord {
        id: id.to_owned(),
        tenant: "default".to_owned(),
        token_hash: id.as_bytes().to_vec(),
        domains: vec!["example.com".to_owned()],
        created_at: 100,
        expires_at: 1_000,
        reusable,
        used_at: None,
        revoked_at: None,
    }
}

// A single-use grant, redeemed by 30 racing calls spread over three stores, is
// redeemed once; a reusable one every time; a revoked one never.
async fn a_single_use_grant_is_redeemed_once(replicas: [Store; 3]) {
    replicas[0]
        .insert_grant(&grant("once", false))
        .await
        .unwrap();
    replicas[1]
        .insert_grant(&grant("often", true))
        .await
        .unwrap();
    let redeem = |id: &'static str| {
        let attempts: Vec<_> = (0..30)
            .map(|i| {
                let store = replicas[i % 3].clone();
                tokio::spawn(async move { store.use_grant(id, 200).await.unwrap() })
            })
            .collect();
        async move {
            let mut won = 0;
            for attempt in attempts {
                won += usize::from(attempt.await.unwrap());
            }
            won
        }
    };
    assert_eq!(redeem("once").await, 1);
    assert_eq!(redeem("often").await, 30);
    let seen = replicas[2].grant_by_hash(b"once").await.unwrap().unwrap();
    assert_eq!(seen.used_at, Some(200));
    assert!(
        replicas[2]
            .revoke_grant("default", "often", 300)
            .await
            .unwrap()
    );
    assert!(
        !replicas[0]
            .revoke_grant("default", "often", 301)
            .await
            .unwrap()
    );
    assert!(!replicas[1].use_grant("often", 302).await.unwrap());
    // Expired: unusable from `expires_at` on.
    replicas[0]
        .insert_grant(&grant("late", true))
        .await
        .unwrap();
    assert!(!replicas[0].use_grant("late", 1_000).await.unwrap());
    let listed = replicas[1].grants("default").await.unwrap();
    assert_eq!(listed.len(), 3);
    for store in replicas {
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_use_grant_is_redeemed_once_by_racing_replicas() {
    on_both(a_single_use_grant_is_redeemed_once).await;
}

fn approval(id: &str) -> ApprovalRecord {
    ApprovalRecord {
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
        created_ms: 1_000,
        expires_ms: 61_000,
        decided_ms: None,
        decided_by: None,
        note: None,
        used_ms: None,
        detail: None,
        waiter: None,
    }
}

// Ten approvals racing ten denials over three stores: one decision counts, every
// other is told the approval is closed with that decision; the approved run is used
// once however many replicas try.
async fn an_approval_is_decided_once(replicas: [Store; 3]) {
    let shot: &[u8] = b"png";
    replicas[0]
        .insert_approval(&approval("a1"), Some(("image/png", shot)))
        .await
        .unwrap();
    let deciders: Vec<_> = (0..20)
        .map(|i| {
            let store = replicas[i % 3].clone();
            tokio::spawn(async move {
                store
                    .decide_approval("a1", i % 2 == 0, "op", None, 2_000)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for decider in deciders {
        outcomes.push(decider.await.unwrap());
    }
    assert_eq!(outcomes.iter().filter(|o| **o == Decided::Done).count(), 1);
    let decided = replicas[1].approval("a1").await.unwrap().unwrap();
    assert_ne!(decided.status, ApprovalStatus::Pending);
    for outcome in outcomes.iter().filter(|o| **o != Decided::Done) {
        assert_eq!(*outcome, Decided::Closed(decided.status));
    }
    if decided.status == ApprovalStatus::Approved {
        let mut used = 0;
        for store in &replicas {
            used += usize::from(store.use_approval("a1", 3_000).await.unwrap());
        }
        assert_eq!(used, 1);
    }
    assert_eq!(
        replicas[2].approval_screenshot("a1").await.unwrap(),
        Some(("image/png".to_owned(), shot.to_vec()))
    );
    // One nobody decided in time expires, and is listed as such on every replica.
    replicas[0]
        .insert_approval(&approval("a2"), None)
        .await
        .unwrap();
    let expired = replicas[1].expire_overdue(70_000, 70_000).await.unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(
        replicas[2]
            .decide_approval("a2", true, "op", None, 70_001)
            .await
            .unwrap(),
        Decided::Closed(ApprovalStatus::Expired)
    );
    let listed = replicas[2]
        .approvals(Some("default"), Some(ApprovalStatus::Expired))
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    for store in replicas {
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_decided_once_by_racing_replicas() {
    on_both(an_approval_is_decided_once).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_stays_one_chain_with_three_writers_racing() {
    on_both(one_chain_from_three_writers).await;
}

// The vault's records and bookkeeping, tenants, keys and live sessions, written on
// one store and read on another.
async fn the_vault_and_tenants_are_shared(replicas: [Store; 3]) {
    let secret = SecretRecord {
        tenant: "default".to_owned(),
        name: "app".to_owned(),
        origins: vec!["https://app.example.com".to_owned()],
        fields: vec!["password".to_owned()],
        nonce: vec![1; 24],
        ciphertext: vec![2; 40],
        created_at: 100,
        updated_at: 100,
    };
    replicas[0].put_secret(&secret).await.unwrap();
    // An update keeps the creation time.
    let updated = SecretRecord {
        ciphertext: vec![3; 40],
        created_at: 999,
        updated_at: 200,
        ..secret.clone()
    };
    replicas[1].put_secret(&updated).await.unwrap();
    let read = replicas[2].secret("default", "app").await.unwrap().unwrap();
    assert_eq!((read.created_at, read.updated_at), (100, 200));
    assert_eq!(read.ciphertext, vec![3; 40]);
    replicas[0].set_meta("check", b"one").await.unwrap();
    replicas[1].set_meta("check", b"two").await.unwrap();
    assert_eq!(
        replicas[2].meta("check").await.unwrap(),
        Some(b"two".to_vec())
    );
    // A rotation rewrites all or nothing.
    let rotated = SecretRecord {
        nonce: vec![9; 24],
        ..read.clone()
    };
    let gone = SecretRecord {
        name: "gone".to_owned(),
        ..read.clone()
    };
    assert!(
        replicas[0]
            .rewrite(
                &[rotated.clone(), gone],
                &[],
                &[("check", b"three".to_vec())]
            )
            .await
            .is_err()
    );
    assert_eq!(
        replicas[1].meta("check").await.unwrap(),
        Some(b"two".to_vec())
    );
    replicas[0]
        .rewrite(&[rotated], &[], &[("check", b"three".to_vec())])
        .await
        .unwrap();
    assert_eq!(
        replicas[1]
            .secret("default", "app")
            .await
            .unwrap()
            .unwrap()
            .nonce,
        vec![9; 24]
    );
    assert_eq!(replicas[2].secrets(None).await.unwrap().len(), 1);
    assert!(replicas[2].delete_secret("default", "app").await.unwrap());
    assert!(!replicas[0].delete_secret("default", "app").await.unwrap());

    // Racing creations of one tenant: one creates it.
    let creates: Vec<_> = (0..9)
        .map(|i| {
            let store = replicas[i % 3].clone();
            tokio::spawn(async move { store.create_tenant("acme", 5).await.unwrap() })
        })
        .collect();
    let mut created = 0;
    for create in creates {
        created += usize::from(create.await.unwrap());
    }
    assert_eq!(created, 1);
    let key = KeyRecord {
        id: "k1".to_owned(),
        tenant: "acme".to_owned(),
        role: "act".to_owned(),
        name: None,
        key_hash: vec![7; 32],
        created_ms: 6,
        revoked_ms: None,
    };
    replicas[0].insert_key(&key).await.unwrap();
    assert_eq!(replicas[1].key_by_hash(&[7; 32]).await.unwrap(), Some(key));
    assert!(replicas[2].has_live_keys().await.unwrap());
    assert!(replicas[1].revoke_key("k1", 7).await.unwrap());
    assert!(!replicas[0].revoke_key("k1", 8).await.unwrap());
    assert!(!replicas[2].has_live_keys().await.unwrap());
    assert_eq!(replicas[0].keys(Some("acme")).await.unwrap().len(), 1);
    let live = LiveSessionRecord {
        id: "s1".to_owned(),
        tenant: "acme".to_owned(),
        user_id: Some("u".to_owned()),
        conversation: None,
        gateway_pid: 4242,
        opened_ms: 9,
        replica: Some("r1".into()),
        ..Default::default()
    };
    replicas[0].insert_live_session(&live).await.unwrap();
    replicas[1].insert_live_session(&live).await.unwrap();
    assert_eq!(replicas[2].live_sessions().await.unwrap(), vec![live]);
    replicas[2].remove_live_session("s1").await.unwrap();
    assert!(replicas[0].live_sessions().await.unwrap().is_empty());
    assert_eq!(replicas[1].tenants().await.unwrap().len(), 1);
    for store in replicas {
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vault_and_tenants_are_shared_by_replicas() {
    on_both(the_vault_and_tenants_are_shared).await;
}

fn host(id: &str, heartbeat_ms: i64) -> HostRecord {
    HostRecord {
        id: id.to_owned(),
        role: "control".to_owned(),
        address: None,
        capacity: 0,
        sessions: 0,
        free_mb: 1024,
        version: "test".to_owned(),
        hostname: format!("pod-{id}"),
        pid: 1,
        started_ms: 1,
        heartbeat_ms,
        draining: false,
    }
}

// Replicas see each other's rows and heartbeats; a gone replica's live session is
// taken (and so ended on the record) by exactly one of many racing replicas.
async fn replicas_see_each_other_and_end_a_gone_ones_sessions_once(replicas: [Store; 3]) {
    for (i, store) in replicas.iter().enumerate() {
        store
            .upsert_host(&host(&format!("r{i}"), 10))
            .await
            .unwrap();
    }
    let mut beat = host("r1", 99);
    beat.sessions = 3;
    beat.draining = true;
    replicas[1].upsert_host(&beat).await.unwrap();
    let seen = replicas[2].hosts().await.unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen.iter().find(|h| h.id == "r1"), Some(&beat));

    for n in 0..5 {
        replicas[0]
            .insert_live_session(&LiveSessionRecord {
                id: format!("gone-{n}"),
                tenant: "acme".to_owned(),
                user_id: None,
                conversation: None,
                gateway_pid: 1,
                opened_ms: 1,
                replica: Some("r0".to_owned()),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let takes: Vec<_> = (0..30)
        .map(|i| {
            let store = replicas[i % 3].clone();
            tokio::spawn(async move {
                let mut took = 0;
                for n in 0..5 {
                    took +=
                        usize::from(store.take_live_session(&format!("gone-{n}")).await.unwrap());
                }
                took
            })
        })
        .collect();
    let mut took = 0;
    for take in takes {
        took += take.await.unwrap();
    }
    assert_eq!(took, 5, "each gone session is taken once");
    assert!(replicas[1].live_sessions().await.unwrap().is_empty());
    replicas[2].remove_host("r0").await.unwrap();
    assert_eq!(replicas[0].hosts().await.unwrap().len(), 2);
    for store in replicas {
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_see_each_other_and_end_a_gone_replicas_sessions_once() {
    on_both(replicas_see_each_other_and_end_a_gone_ones_sessions_once).await;
}

// A replica listening hears another's append and another's decision, and nothing of
// their rows; SQLite has no listener (its readers poll).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_hears_of_anothers_appends_and_decisions_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open_sqlite(&dir.path().join("db")).await.unwrap();
    assert!(sqlite.wakeups().await.unwrap().is_none());
    let pg = Postgres::start();
    let url = pg.url();
    let (a, b) = tokio::join!(Store::open_postgres(&url), Store::open_postgres(&url));
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut heard = a.wakeups().await.unwrap().expect("Postgres listens");
    b.append_audit(&event(1, 0)).await.unwrap();
    assert_eq!(next_wakeup(&mut heard).await, Wakeup::Audit);
    b.insert_approval(&approval("w1"), None).await.unwrap();
    let now = 2_000;
    assert_eq!(
        b.decide_approval("w1", true, "op", None, now)
            .await
            .unwrap(),
        Decided::Done
    );
    assert_eq!(next_wakeup(&mut heard).await, Wakeup::Approvals);
    // A decision that changes nothing wakes nobody: the next wake-up is the append.
    assert_ne!(
        b.decide_approval("w1", false, "op", None, now)
            .await
            .unwrap(),
        Decided::Done
    );
    b.append_audit(&event(1, 1)).await.unwrap();
    assert_eq!(next_wakeup(&mut heard).await, Wakeup::Audit);
    // The listener holds one of the pool's connections: the pool closes once it goes.
    drop(heard);
    a.close().await;
    b.close().await;
}

async fn next_wakeup(heard: &mut airlock_store::Wakeups) -> Wakeup {
    tokio::time::timeout(std::time::Duration::from_secs(5), heard.next())
        .await
        .expect("a wake-up within 5 s")
        .unwrap()
}

pub(crate) fn claim(id: &str, tenant: &str, user: &str, conversation: &str) -> LiveSessionRecord {
    LiveSessionRecord {
        id: id.to_owned(),
        tenant: tenant.to_owned(),
        user_id: Some(user.to_owned()),
        conversation: Some(conversation.to_owned()),
        gateway_pid: 1,
        opened_ms: 1,
        replica: Some("r".to_owned()),
        ..Default::default()
    }
}

// Thirty replicas' requests for one conversation get one session; forty racing for
// seven places get seven; per-tenant and per-user caps count every replica's rows.
async fn claims_give_one_session_per_conversation_and_respect_the_caps(replicas: [Store; 3]) {
    let racing = |claims: Vec<(LiveSessionRecord, ClaimCaps)>| {
        let replicas = replicas.clone();
        async move {
            let tasks: Vec<_> = claims
                .into_iter()
                .enumerate()
                .map(|(i, (live, caps))| {
                    let store = replicas[i % 3].clone();
                    tokio::spawn(async move {
                        store.claim_session(&live, Some("u"), caps).await.unwrap()
                    })
                })
                .collect();
            let mut got = Vec::new();
            for task in tasks {
                got.push(task.await.unwrap());
            }
            got
        }
    };
    let got = racing(
        (0..30)
            .map(|i| {
                (
                    claim(&format!("one-{i}"), "acme", "u", "c1"),
                    ClaimCaps::default(),
                )
            })
            .collect(),
    )
    .await;
    let winners: Vec<_> = got.iter().filter(|c| **c == Claimed::New).collect();
    assert_eq!(winners.len(), 1, "{got:?}");
    let live = replicas[0].live_sessions().await.unwrap();
    assert_eq!(live.len(), 1);
    assert!(got.iter().all(|c| match c {
        Claimed::New => true,
        Claimed::Existing(row) => row.id == live[0].id,
        Claimed::Full { .. } => false,
    }));

    let seven = ClaimCaps {
        total: Some(7),
        ..ClaimCaps::default()
    };
    let got = racing(
        (0..40)
            .map(|i| {
                (
                    claim(&format!("many-{i}"), "beta", "u", &format!("c{i}")),
                    seven,
                )
            })
            .collect(),
    )
    .await;
    assert_eq!(
        got.iter().filter(|c| **c == Claimed::New).count(),
        6,
        "{got:?}"
    );
    assert!(got.iter().all(|c| matches!(
        c,
        Claimed::New
            | Claimed::Full {
                scope: "total",
                count: 7
            }
    )));
    assert_eq!(replicas[2].live_sessions().await.unwrap().len(), 7);

    // Tenant and user caps count that tenant's (and user's) rows on every replica.
    let caps = ClaimCaps {
        per_user: Some(2),
        per_tenant: Some(3),
        total: None,
    };
    let gamma = |i: usize, user: &str| claim(&format!("g-{i}"), "gamma", user, &format!("c{i}"));
    let store = &replicas[1];
    assert_eq!(
        store
            .claim_session(&gamma(0, "u"), Some("u"), caps)
            .await
            .unwrap(),
        Claimed::New
    );
    assert_eq!(
        store
            .claim_session(&gamma(1, "u"), Some("u"), caps)
            .await
            .unwrap(),
        Claimed::New
    );
    assert_eq!(
        replicas[2]
            .claim_session(&gamma(2, "u"), Some("u"), caps)
            .await
            .unwrap(),
        Claimed::Full {
            scope: "user",
            count: 2
        }
    );
    assert_eq!(
        store
            .claim_session(&gamma(3, "v"), Some("v"), caps)
            .await
            .unwrap(),
        Claimed::New
    );
    assert_eq!(
        replicas[0]
            .claim_session(&gamma(4, "w"), Some("w"), caps)
            .await
            .unwrap(),
        Claimed::Full {
            scope: "tenant",
            count: 3
        }
    );
    // A use on any replica is seen by all; it never moves back in time.
    assert!(replicas[2].touch_live_session("g-1", 500).await.unwrap());
    assert!(replicas[0].touch_live_session("g-1", 400).await.unwrap());
    let row = replicas[1].live_session("g-1").await.unwrap().unwrap();
    assert_eq!(
        (row.used_ms, row.user_id.as_deref()),
        (Some(500), Some("u"))
    );
    assert!(
        !replicas[1]
            .touch_live_session("no-such", 500)
            .await
            .unwrap()
    );
    assert_eq!(replicas[1].live_session("no-such").await.unwrap(), None);
    // A place given back is free again.
    assert!(replicas[0].take_live_session("g-0").await.unwrap());
    assert_eq!(
        store
            .claim_session(&gamma(5, "u"), Some("u"), caps)
            .await
            .unwrap(),
        Claimed::New
    );
    for store in replicas {
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_replicas_get_one_session_per_conversation_within_the_caps() {
    on_both(claims_give_one_session_per_conversation_and_respect_the_caps).await;
}

fn login(n: u8, expires_ms: i64) -> airlock_store::ConsoleLoginRecord {
    airlock_store::ConsoleLoginRecord {
        token_hash: vec![n; 32],
        id: format!("login{n}"),
        tenant: "acme".to_owned(),
        role: "admin".to_owned(),
        key_digest: Some(format!("key{n}")),
        created_ms: 1_000,
        expires_ms,
    }
}

// A console login made on one replica is known on the others until it expires or
// is signed out anywhere; only the newest `most` are kept.
async fn console_logins_are_shared(replicas: [Store; 3]) {
    replicas[0]
        .insert_console_login(&login(1, 50_000), 3)
        .await
        .unwrap();
    let seen = replicas[1].console_login(&[1; 32], 2_000).await.unwrap();
    assert_eq!(seen, Some(login(1, 50_000)));
    assert!(
        replicas[2]
            .console_login_alive("login1", 2_000)
            .await
            .unwrap()
    );
    assert_eq!(
        replicas[2].console_login(&[1; 32], 50_000).await.unwrap(),
        None
    );
    assert!(
        !replicas[2]
            .console_login_alive("login1", 50_000)
            .await
            .unwrap()
    );
    for n in 2..=5 {
        replicas[n as usize % 3]
            .insert_console_login(&login(n, 50_000 + i64::from(n)), 3)
            .await
            .unwrap();
    }
    // Five made, three kept: the newest.
    let kept: Vec<bool> = {
        let mut kept = Vec::new();
        for n in 1..=5u8 {
            kept.push(
                replicas[0]
                    .console_login(&[n; 32], 2_000)
                    .await
                    .unwrap()
                    .is_some(),
            );
        }
        kept
    };
    assert_eq!(kept, [false, false, true, true, true]);
    assert_eq!(
        replicas[1]
            .remove_console_login(&[4; 32])
            .await
            .unwrap()
            .map(|l| l.id),
        Some("login4".to_owned())
    );
    assert_eq!(
        replicas[2].console_login(&[4; 32], 2_000).await.unwrap(),
        None
    );
    assert_eq!(
        replicas[2].remove_console_login(&[4; 32]).await.unwrap(),
        None
    );
    for store in replicas {
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_logins_are_shared_by_replicas() {
    on_both(console_logins_are_shared).await;
}

fn home(name: &str, used_ms: i64) -> airlock_store::HomeRecord {
    airlock_store::HomeRecord {
        home: name.to_owned(),
        tenant: "acme".to_owned(),
        owner: "acme/key1".to_owned(),
        nonce: "123456".to_owned(),
        state: None,
        created_ms: used_ms,
        used_ms,
    }
}

// An agent home made on one replica is found on the others with its owner and
// nonce; it is made once, its state written later, its use noted; its browser
// session is found by home, twenty racing claims for it give one session, and a
// home nobody used since a bound goes unless its browser session is live.
async fn agent_homes_are_shared(replicas: [Store; 3]) {
    assert!(replicas[0].insert_home(&home("h1", 1_000)).await.unwrap());
    let mut other = home("h1", 9_000);
    other.owner = "acme/key2".to_owned();
    assert!(!replicas[1].insert_home(&other).await.unwrap());
    assert_eq!(
        replicas[2].home("h1").await.unwrap(),
        Some(home("h1", 1_000))
    );
    assert!(replicas[1].set_home_state("h1", "{}").await.unwrap());
    assert!(!replicas[1].set_home_state("nowhere", "{}").await.unwrap());
    replicas[2].touch_home("h1", 5_000).await.unwrap();
    replicas[0].touch_home("h1", 4_000).await.unwrap();
    let seen = replicas[0].home("h1").await.unwrap().unwrap();
    assert_eq!((seen.state.as_deref(), seen.used_ms), (Some("{}"), 5_000));

    let at_home = |id: &str| LiveSessionRecord {
        id: id.to_owned(),
        tenant: "acme".to_owned(),
        gateway_pid: 1,
        opened_ms: 1,
        home: Some("h1".to_owned()),
        ..Default::default()
    };
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = replicas[i % 3].clone();
            let live = at_home(&format!("s{i}"));
            tokio::spawn(async move {
                store
                    .claim_session(&live, None, ClaimCaps::default())
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut got = Vec::new();
    for task in tasks {
        got.push(task.await.unwrap());
    }
    assert_eq!(got.iter().filter(|c| **c == Claimed::New).count(), 1);
    let live = replicas[1]
        .live_session_at_home("acme", "h1")
        .await
        .unwrap()
        .expect("the home's session");
    assert!(got.iter().all(|c| match c {
        Claimed::New => true,
        Claimed::Existing(row) => row.id == live.id,
        Claimed::Full { .. } => false,
    }));
    assert_eq!(
        replicas[1]
            .live_session_at_home("beta", "h1")
            .await
            .unwrap(),
        None,
        "another tenant's home is no home"
    );
    // A session opened first and named for a home later (a session URL).
    let mut plain = at_home("later");
    plain.home = None;
    replicas[0].insert_live_session(&plain).await.unwrap();
    assert!(replicas[1].set_live_home("later", "h2").await.unwrap());
    assert_eq!(
        replicas[2]
            .live_session_at_home("acme", "h2")
            .await
            .unwrap()
            .map(|l| l.id),
        Some("later".to_owned())
    );
    assert!(!replicas[1].set_live_home("gone", "h2").await.unwrap());

    // Unused since the bound: gone, unless its browser session is live.
    assert!(replicas[0].insert_home(&home("h3", 2_000)).await.unwrap());
    assert!(replicas[0].insert_home(&home("h2", 2_000)).await.unwrap());
    assert_eq!(replicas[1].drop_unused_homes(3_000).await.unwrap(), 1);
    assert_eq!(replicas[2].home("h3").await.unwrap(), None);
    assert!(replicas[2].home("h2").await.unwrap().is_some());
    assert!(replicas[2].take_home("h1").await.unwrap());
    assert!(!replicas[0].take_home("h1").await.unwrap());
    assert_eq!(replicas[1].home("h1").await.unwrap(), None);
    for store in replicas {
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_homes_are_shared_by_replicas() {
    on_both(agent_homes_are_shared).await;
}

// An artifact stored through one replica is read through the others; a name is
// stored once; retention removes what is older than its bound, on every replica.
async fn artifacts_are_shared(replicas: [Store; 3]) {
    let image = vec![0xff, 0xd8, 0, 1, 2, 3];
    replicas[0]
        .put_artifact("s1/000001.jpg", "acme", 1_000, &image)
        .await
        .unwrap();
    assert!(
        replicas[1]
            .put_artifact("s1/000001.jpg", "acme", 1_500, b"other")
            .await
            .is_err(),
        "never rewritten"
    );
    assert_eq!(
        replicas[2].artifact("s1/000001.jpg").await.unwrap(),
        Some(image.clone())
    );
    replicas[1]
        .put_artifact("s1/000002.jpg", "acme", 5_000, &image)
        .await
        .unwrap();
    assert_eq!(replicas[2].drop_artifacts_before(2_000).await.unwrap(), 1);
    assert_eq!(replicas[0].artifact("s1/000001.jpg").await.unwrap(), None);
    assert!(
        replicas[0]
            .artifact("s1/000002.jpg")
            .await
            .unwrap()
            .is_some()
    );
    for store in replicas {
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_are_shared_by_replicas() {
    on_both(artifacts_are_shared).await;
}
