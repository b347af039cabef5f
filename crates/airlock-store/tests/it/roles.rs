//! The roles a Postgres store is served as: what the serving role may not do.

use airlock_store::Store;
use airlock_test_support::Postgres;

use crate::{event, served_by_another_role};

/// On Postgres, the role a replica serves as cannot take history back: the owner
/// migrates and grants, and as the serving role every way to change, remove or
/// unhook an audit row is refused by the database, while appends and reads work and
/// the chain verifies. A store served as the owner says it could.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serving_role_cannot_rewrite_audit_history() {
    let pg = Postgres::start();
    let owned = Store::open_postgres(&pg.url()).await.unwrap();
    assert_eq!(owned.can_rewrite_audit().await.unwrap(), Some(true));
    owned.close().await;
    let sqlite = Store::open_sqlite(&tempfile::tempdir().unwrap().path().join("a.db"))
        .await
        .unwrap();
    assert_eq!(sqlite.can_rewrite_audit().await.unwrap(), None);

    let (serving, owner) = served_by_another_role(&pg, "history").await;
    let store = Store::open_postgres_as(&serving, Some(&owner))
        .await
        .unwrap();
    assert_eq!(store.can_rewrite_audit().await.unwrap(), Some(false));
    for i in 0..5 {
        store.append_audit(&event(0, i)).await.unwrap();
    }
    let raw = sqlx::PgPool::connect(&serving).await.unwrap();
    for attack in [
        "UPDATE audit_events SET kind = 'nothing_happened'",
        "DELETE FROM audit_events WHERE seq > 2",
        "TRUNCATE audit_events",
        "DROP TABLE audit_events",
        "ALTER TABLE audit_events RENAME TO old_events",
    ] {
        let refused = sqlx::query(attack).execute(&raw).await.unwrap_err();
        let said = refused.to_string();
        assert!(
            said.contains("permission denied") || said.contains("must be owner"),
            "{attack}: {said}"
        );
    }
    raw.close().await;
    // Another replica opening the same store (the owner grants again) changes none
    // of it, and the log is whole.
    let again = Store::open_postgres_as(&serving, Some(&owner))
        .await
        .unwrap();
    again.append_audit(&event(1, 5)).await.unwrap();
    let rows: Vec<_> = again
        .audit_events(0, 100)
        .await
        .unwrap()
        .iter()
        .map(airlock_store::AuditRecord::row)
        .collect();
    assert_eq!(rows.len(), 6);
    airlock_audit::verify(&rows, &[]).unwrap();
}
