//! A live session's running state, told against both backends with three stores
//! standing for replicas: forty racing actions under a budget of six run six,
//! whichever replica counts them; reads appended by racing replicas are numbered
//! without gaps and read back in order by any; both go when the session's row goes.

use airlock_store::Store;

use crate::{claim, on_both};

async fn the_budget_and_the_reads_are_one_across_replicas(replicas: [Store; 3]) {
    let [a, b, c] = &replicas;
    a.insert_live_session(&claim("run-1", "acme", "u", "c"))
        .await
        .unwrap();

    // Forty actions racing over three replicas, budget six: six counted, in order.
    let counted: Vec<_> = (0..40)
        .map(|i| {
            let store = replicas[i % 3].clone();
            tokio::spawn(async move { store.count_action("run-1", 6).await.unwrap() })
        })
        .collect();
    let mut ran = Vec::new();
    for task in counted {
        ran.extend(task.await.unwrap());
    }
    ran.sort_unstable();
    assert_eq!(ran, vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(b.actions("run-1").await.unwrap(), 6);
    assert_eq!(c.count_action("run-1", 6).await.unwrap(), None);
    // A session with no row has nothing to count against.
    assert_eq!(c.count_action("no-such", 6).await.unwrap(), Some(0));

    // Reads written by racing replicas: numbered 1..=30, none lost, any reads all.
    let appended: Vec<_> = (0..30)
        .map(|i| {
            let store = replicas[i % 3].clone();
            tokio::spawn(async move {
                let line = format!("line {i}");
                store
                    .append_read("run-1", "http://127.0.0.1:1", &line)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut numbers = Vec::new();
    for task in appended {
        numbers.push(task.await.unwrap());
    }
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=30).collect::<Vec<_>>());
    let all = c.reads_after("run-1", 0).await.unwrap();
    assert_eq!(all.len(), 30);
    assert!(all.windows(2).all(|w| w[1].n == w[0].n + 1));
    let mut lines: Vec<String> = all.iter().map(|r| r.lines.clone()).collect();
    lines.sort();
    let mut wanted: Vec<String> = (0..30).map(|i| format!("line {i}")).collect();
    wanted.sort();
    assert_eq!(lines, wanted);
    // A replica that caught up to 25 reads the rest.
    let rest = b.reads_after("run-1", 25).await.unwrap();
    assert_eq!(
        rest.iter().map(|r| r.n).collect::<Vec<_>>(),
        [26, 27, 28, 29, 30]
    );

    // The session ends: its reads go with it.
    assert!(b.take_live_session("run-1").await.unwrap());
    assert!(a.reads_after("run-1", 0).await.unwrap().is_empty());
    assert_eq!(a.actions("run-1").await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_budget_and_reads_are_shared_by_racing_replicas() {
    on_both(the_budget_and_the_reads_are_one_across_replicas).await;
}
