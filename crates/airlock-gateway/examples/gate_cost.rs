//! What the risk gate and the audit write add to one click, paired: two gateways on
//! one Chromium, one bare (no store, no rules, no data-flow stage) and one as `airlock` runs (SQLite
//! store with the audit chain and signed checkpoints, the default risk rules and data-flow stage), each
//! clicking the same checkbox on its own copy of the login page, alternately, so
//! both see the same machine. No rule fires on that click: the cost is resolving the
//! target for the rules, the intent event and the call's event. Prints a table, then
//! one JSON line. Run by `make bench` (release build).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use airlock_gateway::{Interaction, Navigation};
use std::sync::Arc;
use std::time::Duration;

use airlock_gateway::action::{Target, WaitUntil};
use airlock_gateway::{Checkpoints, Gateway, GatewayConfig, PageView, ToolCall};
use airlock_risk::{ApprovalsConfig, Rules};
use airlock_store::Store;
use airlock_test_support::with_browser;

const WARMUP: usize = 20;
const PAIRS: usize = 200;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn quantile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn trimmed_mean(values: &[f64], cut: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let drop = (v.len() as f64 * cut) as usize;
    let kept = &v[drop..v.len() - drop];
    kept.iter().sum::<f64>() / kept.len() as f64
}

#[tokio::main]
async fn main() {
    with_browser(|h| async move {
        let dir = tempfile::tempdir().unwrap();
        let policy = h.site.policy();
        let bare = Gateway::new(
            h.browsers.clone(),
            GatewayConfig {
                flow: airlock_config::Flow {
                    mode: airlock_config::FlowMode::Off,
                    ..airlock_config::Flow::default()
                },
..GatewayConfig::with_policy(policy.clone())
},
        );
        let store = Store::open_sqlite(&dir.path().join("airlock.db"))
            .await
            .unwrap();
        let full = Gateway::new(
            h.browsers.clone(),
            GatewayConfig {
                checkpoints: Some(Checkpoints {
                    name: "airlock.bench/audit".to_owned(),
                    key: Arc::new(airlock_audit::SigningKey::from_bytes(&[7; 32])),
                    path: dir.path().join("audit.checkpoints"),
                    every: 100,
                    publish_dir: None,
                }),
                rules: Rules::from_config(&ApprovalsConfig::default()).unwrap(),
..GatewayConfig::with_policy(policy).store(store.clone())
},
        );
        let agents = [bare.agent_session(), full.agent_session()];
        for agent in &agents {
            let out = agent
                .call(ToolCall::Navigate(Navigation::To {
                    url: h.site.url("login.html"),
                    wait_until: WaitUntil::Load,
                    snapshot: PageView::None,
                }))
                .await;
            assert_eq!(out.error, None, "{}", out.text);
        }
        let click = || ToolCall::Interact(Interaction::Click {
            target: Target::Role {
                role: "checkbox".into(),
                name: Some("Remember me".into()),
                index: None,
            },
            options: Default::default(),
        });
        let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        for i in 0..WARMUP + PAIRS {
            // Alternate which goes first, so neither always follows the other.
            let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
            for k in order {
                let start = tokio::time::Instant::now();
                let out = agents[k].call(click()).await;
                let took = start.elapsed();
                assert_eq!(out.error, None, "{}", out.text);
                if i >= WARMUP {
                    times[k].push(ms(took));
                }
            }
        }
        // A click waits for the page to settle, in whole frames (~16 ms), so single
        // pairs differ by frames either way; medians and trimmed means of the pairs'
        // differences see through that.
        let deltas: Vec<f64> = times[1]
            .iter()
            .zip(&times[0])
            .map(|(f, b)| f - b)
            .collect();
        let added = quantile(&times[1], 0.5) - quantile(&times[0], 0.5);
        let trimmed = trimmed_mean(&deltas, 0.1);
        let events = store.audit_tail(1).await.unwrap()[0].seq;
        println!("click, {PAIRS} pairs (ms)      median    p90");
        println!(
            "  bare (no store, no rules)  {:>6.2}  {:>6.2}",
            quantile(&times[0], 0.5),
            quantile(&times[0], 0.9)
        );
        println!(
            "  gate + audit               {:>6.2}  {:>6.2}",
            quantile(&times[1], 0.5),
            quantile(&times[1], 0.9)
        );
        println!(
            "  added per click            {added:>6.2}          (difference of medians)"
        );
        println!(
            "  added per click, paired    {trimmed:>6.2}          (10%-trimmed mean of pair differences; {events} audit events written)"
        );
        println!(
            "{}",
            serde_json::json!({
                "pairs": PAIRS,
                "bare_click_ms": quantile(&times[0], 0.5),
                "audited_click_ms": quantile(&times[1], 0.5),
                "gate_audit_added_ms": added,
                "gate_audit_added_paired_ms": trimmed,
            })
        );
        bare.shutdown().await;
        full.shutdown().await;
    })
    .await;
}
