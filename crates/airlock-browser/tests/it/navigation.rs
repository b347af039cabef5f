//! Navigation: wait_until, status, history, failures and time-outs.

use std::time::Duration;

use airlock_browser::WaitUntil;
use airlock_config::BrowserConfig;
use airlock_core::{ErrorCode, HasErrorCode};
use airlock_test_support::{with_browser, with_browser_config};

use crate::{open, role, snap};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigate_reports_url_title_and_status_for_each_wait_mode() {
    with_browser(|h| async move {
        let s = open(&h).await;
        for wait in [
            WaitUntil::Load,
            WaitUntil::DomContentLoaded,
            WaitUntil::NetworkIdle,
        ] {
            let out = s.navigate(&h.site.url("login.html"), wait).await.unwrap();
            assert_eq!(out.url, h.site.url("login.html"));
            assert_eq!(out.title, "Sign in");
            assert_eq!(out.status, Some(200), "{wait:?}");
            assert!(out.navigated);
        }
        let missing = s
            .navigate(&h.site.url("status/404"), WaitUntil::Load)
            .await
            .unwrap();
        assert_eq!(missing.status, Some(404));
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn back_forward_and_reload() {
    with_browser(|h| async move {
        let s = open(&h).await;
        let err = s.back().await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
        s.navigate(&h.site.url("index.html"), WaitUntil::Load)
            .await
            .unwrap();
        s.navigate(&h.site.url("page2.html"), WaitUntil::Load)
            .await
            .unwrap();
        assert_eq!(s.back().await.unwrap().url, h.site.url("index.html"));
        assert_eq!(s.forward().await.unwrap().url, h.site.url("page2.html"));
        // A same-document navigation (fragment) is history too.
        s.click(&role("link", "Jump"), &Default::default())
            .await
            .unwrap();
        assert!(s.back().await.unwrap().url.ends_with("page2.html"));
        let out = s.reload().await.unwrap();
        assert_eq!(out.title, "Page two");
        assert!(snap(&s).await.text.contains("heading \"Second page\""));
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_and_timeouts_are_typed() {
    let config = BrowserConfig {
        navigation_timeout: Duration::from_millis(1500),
        ..BrowserConfig::default()
    };
    with_browser_config(config, |h| async move {
        let s = open(&h).await;
        // A port nobody listens on: bind one, note it, close it.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let err = s
            .navigate(&format!("http://127.0.0.1:{port}/"), WaitUntil::Load)
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::NavigationFailed, "{err}");
        assert!(err.to_string().contains("ERR_CONNECTION_REFUSED"), "{err}");

        let err = s
            .navigate(&h.site.url("slow?ms=5000"), WaitUntil::Load)
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Timeout, "{err}");
        // The session is still usable afterwards.
        let out = s
            .navigate(&h.site.url("slow?ms=100"), WaitUntil::Load)
            .await
            .unwrap();
        assert_eq!(out.title, "Slow");
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clicking_a_link_waits_for_the_new_page() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("index.html"), WaitUntil::Load)
            .await
            .unwrap();
        let out = s
            .click(&role("link", "Page two"), &Default::default())
            .await
            .unwrap();
        assert!(out.navigated);
        assert_eq!(out.url, h.site.url("page2.html"));
        assert!(snap(&s).await.text.contains("heading \"Second page\""));
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_resolves_no_name_itself() {
    with_browser(|h| async move {
        // No proxy here (browser-layer test), so a name would have to be resolved by
        // Chromium: it refuses, so nothing (DNS prefetch included) can query DNS
        // around the egress proxy.
        let s = open(&h).await;
        let err = s
            .navigate(
                &format!("http://localhost:{}/login.html", h.site.a.port()),
                WaitUntil::Load,
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("ERR_NAME_NOT_RESOLVED"), "{err}");
        assert_eq!(h.site.a.connections(), 0);
        // The same server by address is fine (the control).
        s.navigate(&h.site.url("login.html"), WaitUntil::Load)
            .await
            .unwrap();
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_replaced_by_a_javascript_url_can_still_be_read_and_used() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("jslink.html"), WaitUntil::Load)
            .await
            .unwrap();
        s.click(&crate::role("link", "Replace"), &Default::default())
            .await
            .unwrap();
        let mut text = String::new();
        for _ in 0..50 {
            text = s
                .snapshot(&airlock_browser::SnapshotOptions::default())
                .await
                .unwrap_or_else(|e| panic!("snapshot after the replacement: {e}"))
                .text;
            if text.contains("Replaced") {
                break;
            }
            s.wait_for(
                &airlock_browser::WaitCondition::Time(std::time::Duration::from_millis(20)),
                None,
            )
            .await
            .unwrap();
        }
        assert!(text.contains("heading \"Replaced\""), "{text}");
        s.click(&crate::role("button", "After"), &Default::default())
            .await
            .unwrap();
        s.close().await;
    })
    .await;
}
