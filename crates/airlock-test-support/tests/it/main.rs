//! The test helpers' own promises: the PostgreSQL server the store's tests run on is
//! real, unprivileged, on loopback, and gone with everything it started once dropped.

use std::path::Path;

use airlock_test_support::Postgres;

// Processes whose parent is `pid` (a postmaster's backends and helpers).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let child: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid: u32 = stat[stat.rfind(')')? + 2..]
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            (ppid == pid).then_some(child)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_postgres_runs_unprivileged_on_loopback_and_is_stopped_by_pid() {
    let pg = Postgres::start();
    let pid = pg.pid();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    assert_ne!(uid, "0", "PostgreSQL runs as an unprivileged user");

    let pool = sqlx::PgPool::connect(&pg.url()).await.unwrap();
    let one: i32 = sqlx::query_scalar("SELECT 1")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(one, 1);
    let listening: String = sqlx::query_scalar("SHOW listen_addresses")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(listening, "127.0.0.1");
    let started = children_of(pid);
    assert!(!started.is_empty(), "a postmaster has helpers");
    pool.close().await;

    drop(pg);
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
    for child in started {
        assert!(
            !Path::new(&format!("/proc/{child}")).exists(),
            "process {child} outlived its postmaster"
        );
    }
}
