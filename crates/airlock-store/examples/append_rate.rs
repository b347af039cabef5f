//! How many audit events a second one Postgres takes, from one writer and from
//! three replicas racing (each append holds the table lock that keeps the chain
//! one): the ceiling docs/scaling.md quotes for a fleet's actions.
//!
//!   cargo run --release -p airlock-store --example append_rate

#![allow(clippy::print_stdout, clippy::expect_used)]

use airlock_store::Store;
use airlock_test_support::Postgres;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

fn event(i: usize) -> Map<String, Value> {
    let Value::Object(fields) = json!({
        "tenant": "default", "time_ms": 1, "kind": "tool_call",
        "session": "s", "tool": "browser_click", "n": i,
    }) else {
        unreachable!()
    };
    fields
}

#[tokio::main]
async fn main() {
    let pg = Postgres::start();
    let url = pg.url();
    for writers in [1usize, 3] {
        let mut stores = Vec::new();
        for _ in 0..writers {
            stores.push(Store::open_postgres(&url).await.expect("open"));
        }
        let per = 600 / writers;
        let started = Instant::now();
        let tasks: Vec<_> = stores
            .iter()
            .cloned()
            .map(|store| {
                tokio::spawn(async move {
                    for i in 0..per {
                        store.append_audit(&event(i)).await.expect("append");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("writer");
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{writers} writer(s): {} appends in {secs:.2} s = {:.0}/s",
            per * writers,
            (per * writers) as f64 / secs
        );
        for store in stores {
            store.close().await;
        }
    }
}
