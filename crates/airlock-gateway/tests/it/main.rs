//! Agent sessions over real browser sessions: lazy open, explicit and implicit close,
//! idle expiry, and results that fence page content.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use airlock_browser::{SnapshotOptions, WaitUntil};
use airlock_core::ErrorCode;
use airlock_gateway::{Gateway, GatewayConfig, ToolCall};
use airlock_test_support::with_browser;

fn navigate(url: String) -> ToolCall {
    ToolCall::Navigate {
        url,
        wait_until: WaitUntil::Load,
    }
}

/// Polls until `$cond` holds or 5 s pass (idle expiry and background close have no
/// event to await).
macro_rules! eventually {
    ($cond:expr) => {{
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            if $cond {
                break true;
            }
            if tokio::time::Instant::now() > deadline {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_sessions_open_lazily_and_close_with_their_agent() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.browsers.clone(), GatewayConfig::default());
        let agent = gateway.agent_session();
        assert_eq!(
            gateway.open_browser_sessions().await,
            0,
            "nothing opens before a browser tool"
        );
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(gateway.open_browser_sessions().await, 1);
        let nonce = agent.fence().nonce().to_owned();
        assert!(
            out.text.contains(&format!(
                "<page-content origin=\"http://127.0.0.1:{}\" nonce=\"{nonce}\">",
                h.site.a.port()
            )),
            "{}",
            out.text
        );
        assert!(
            out.text
                .contains(&format!("</page-content nonce=\"{nonce}\">"))
        );
        // The page's words sit inside the fence, Airlock's outside it.
        let inside = out.text.split("<page-content").nth(1).unwrap();
        assert!(inside.contains("heading \"Sign in\""));
        assert!(out.text.starts_with("page: \"Sign in\""), "{}", out.text);

        let out = agent.call(ToolCall::SessionClose).await;
        assert!(out.text.contains("closed"), "{}", out.text);
        assert_eq!(gateway.open_browser_sessions().await, 0);

        // Dropping the agent (its MCP session ended) closes its browser session too.
        let other = gateway.agent_session();
        other.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(gateway.open_browser_sessions().await, 1);
        let probe = h.browsers.open_session(Default::default()).await.unwrap();
        let before = probe.browser_contexts().await.unwrap().len();
        drop(other);
        assert!(
            eventually!(probe.browser_contexts().await.unwrap().len() == before - 1),
            "context survived the agent"
        );
        probe.close().await;
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_expires_once_then_starts_fresh() {
    with_browser(|h| async move {
        let gateway = Gateway::new(
            h.browsers.clone(),
            GatewayConfig {
                idle_ttl: Duration::from_millis(300),
            },
        );
        let agent = gateway.agent_session();
        agent
            .call(navigate(h.site.url("cookie.html?set=before")))
            .await;
        assert!(
            eventually!(gateway.open_browser_sessions().await == 0),
            "idle session was not closed"
        );
        let out = agent
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
            .await;
        assert_eq!(out.error, Some(ErrorCode::SessionExpired), "{}", out.text);
        assert!(out.text.starts_with("session_expired: "), "{}", out.text);
        // The next call opens a fresh session: the old cookie is gone.
        let out = agent.call(navigate(h.site.url("cookie.html"))).await;
        assert!(out.text.contains("cookie=[] storage=[]"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}
