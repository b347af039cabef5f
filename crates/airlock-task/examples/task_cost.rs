//! What a server-side task costs besides its model: a gateway as `airlock` runs it
//! (SQLite store, the audit chain, the default risk rules) runs tasks of 20 steps
//! (each a snapshot, a model request, a click on the login page's checkbox) against
//! a scripted model on loopback that answers at once, so the wall time per step is
//! the gateway's own overhead (the pipeline, the snapshot, building, redacting and
//! sending the request, parsing the answer). Then the size of one step's request
//! against the whole page it describes, on the 2,000-row admin table. Prints a
//! table, then one JSON line. Run by `make bench` (release build).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::sync::Arc;
use tokio::time::Instant;

use airlock_gateway::{Gateway, GatewayConfig, ToolCall};
use airlock_risk::{ApprovalsConfig, Rules};
use airlock_store::Store;
use airlock_task::{Runner, TaskStatus, Watch};
use airlock_test_support::{ModelServer, calls, finish, with_browser};
use serde_json::json;

const RUNS: usize = 7;
const STEPS: usize = 20;

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn snapshot_at(offset: usize) -> ToolCall {
    airlock_tools::find("browser_snapshot")
        .unwrap()
        .parse(Some(json!({ "offset": offset }).as_object().unwrap()))
        .unwrap()
}

#[tokio::main]
async fn main() {
    with_browser(|h| async move {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("airlock.db"))
            .await
            .unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                rules: Rules::from_config(&ApprovalsConfig::default()).unwrap(),
..GatewayConfig::with_policy(h.site.policy()).store(store)
},
        );
        let click = || {
            calls(&[(
                "browser_click",
                json!({"role": "checkbox", "name": "Remember me"}),
            )])
        };
        let mut per_step = Vec::new();
        for run in 0..=RUNS {
            let mut replies: Vec<_> = (0..STEPS).map(|_| click()).collect();
            replies.push(finish("toggled"));
            let model = ModelServer::start(replies).await;
            let runner = Runner::new(&model.tasks(None), None).unwrap();
            let agent = Arc::new(gateway.agent_session());
            let spec = runner
                .parse(Some(
                    json!({"instruction": "toggle remember me", "start_url": h.site.url("login.html"), "max_steps": STEPS + 1})
                        .as_object()
                        .unwrap(),
                ))
                .unwrap();
            let started = Instant::now();
            let result = runner.run(&agent, spec, Watch::default()).await;
            let took = started.elapsed();
            assert_eq!(result.status, TaskStatus::Finished, "{result:?}");
            assert_eq!(result.steps as usize, STEPS);
            // The first run warms the browser and the store.
            if run > 0 {
                per_step.push(took.as_secs_f64() * 1000.0 / STEPS as f64);
            }
            agent.close().await;
        }

        // One step's request on a large page, against the whole page.
        let model = ModelServer::start(vec![finish("read")]).await;
        let runner = Runner::new(&model.tasks(None), None).unwrap();
        let agent = gateway.agent_session();
        let url = h.site.url("admin?rows=2000");
        let spec = runner
            .parse(Some(
                json!({"instruction": "read the table", "start_url": url})
                    .as_object()
                    .unwrap(),
            ))
            .unwrap();
        let result = runner.run(&agent, spec, Watch::default()).await;
        assert_eq!(result.status, TaskStatus::Finished, "{result:?}");
        let request = model.seen()[0].body.len();
        // The whole snapshot, every page of it, as an agent reading it all would.
        let (mut snapshot, mut offset) = (0usize, 0usize);
        loop {
            let out = agent.call(snapshot_at(offset)).await;
            assert_eq!(out.error, None, "{}", out.text);
            snapshot += out.text.len();
            match out.text.split("with offset=").nth(1) {
                Some(rest) => {
                    offset = rest
                        .split(|c: char| !c.is_ascii_digit())
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap();
                }
                None => break,
            }
        }
        let html = reqwest::get(&url).await.unwrap().bytes().await.unwrap().len();
        agent.close().await;

        let p50 = median(&per_step);
        println!("| server-side task, per step ({STEPS} steps, medians of {RUNS} runs) | ms |");
        println!("|---|---|");
        println!("| gateway overhead per step (snapshot + request + click, model answering at once) | {p50:.1} |");
        println!();
        println!("| one step's model request on the 2,000-row table | bytes |");
        println!("|---|---|");
        println!("| the step's request (capped snapshot, history, tools) | {request} |");
        println!("| the whole snapshot (every page) | {snapshot} |");
        println!("| the page's HTML | {html} |");
        println!(
            "{}",
            json!({
                "task_step_overhead_ms_p50": p50,
                "task_step_overhead_ms_runs": per_step,
                "step_request_bytes": request,
                "full_snapshot_bytes": snapshot,
                "page_html_bytes": html,
            })
        );
    })
    .await;
}
