//! The deployment's own secrets (a webhook's signing key, a model's API key, a worker
//! token) are in no result and no audit event, whatever a page shows: a page that
//! learned one cannot have Airlock repeat it to the agent or into the record.

use std::sync::Arc;

use airlock_browser::SnapshotOptions;
use airlock_gateway::{GatewayConfig, Reading, ToolCall};
use airlock_store::Store;
use airlock_test_support::with_browser;

use crate::navigate;

const WEBHOOK_KEY: &str = "whsec-0f3a9c1e77d2b845";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_cannot_make_airlock_repeat_its_own_secrets() {
    with_browser(|h| async move {
        let store = Store::open_in_memory().await.unwrap();
        let own = airlock_vault::Redactor::new([("webhook-secret", WEBHOOK_KEY)]).unwrap();
        let url = format!("{}?v={WEBHOOK_KEY}", h.site.url("app/echo.html"));
        // Without it, the page's words reach the agent as they are (the test can fail).
        let plain = airlock_gateway::Gateway::new(
            h.host().await,
            GatewayConfig::with_policy(h.site.policy()),
        );
        let out = plain.agent_session().call(navigate(url.clone())).await;
        assert!(out.text.contains(WEBHOOK_KEY), "{}", out.text);
        plain.shutdown().await;

        let gateway = airlock_gateway::Gateway::new(
            h.host().await,
            GatewayConfig {
                own_secrets: Some(Arc::new(own)),
                ..GatewayConfig::with_policy(h.site.policy()).store(store.clone())
            },
        );
        let agent = gateway.agent_session();
        let mut shown = vec![agent.call(navigate(url)).await];
        shown.push(
            agent
                .call(ToolCall::Read(
                    Reading::Snapshot(SnapshotOptions::default()),
                ))
                .await,
        );
        for out in &shown {
            assert_eq!(out.error, None, "{}", out.text);
            assert!(!out.text.contains(WEBHOOK_KEY), "{}", out.text);
            assert!(
                out.text.contains("[REDACTED:webhook-secret]"),
                "{}",
                out.text
            );
        }
        drop(agent);
        gateway.shutdown().await;
        let events = store.audit_events(0, 10_000).await.unwrap();
        assert!(events.iter().any(|e| e.kind == "tool_call"));
        for event in events {
            assert!(!event.body.contains(WEBHOOK_KEY), "{}", event.body);
        }
    })
    .await;
}
