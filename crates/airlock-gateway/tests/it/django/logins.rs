//! No false alarm on a working page: twenty logins into Django's admin (a form post,
//! a redirect, a new page each) and no result says the page did not answer.

use airlock_config::RecordMode;
use airlock_gateway::{SessionCall, ToolCall};
use airlock_test_support::with_browser;

use super::{admin, click, role};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_logins_and_no_page_is_declared_unresponsive() {
    with_browser(|h| async move {
        let a = admin(&h, RecordMode::Transient).await;
        for round in 0..20 {
            // `Admin::call` fails on any "did not answer" in a result.
            let out = a.log_in().await;
            assert!(
                out.text.contains("Site administration"),
                "round {round}:\n{}",
                out.text
            );
            let out = a.ok(click(role("button", "Log out"))).await;
            assert!(
                out.text.contains("Logged out"),
                "round {round}:\n{}",
                out.text
            );
            a.ok(ToolCall::Session(SessionCall::Close)).await;
        }
        let logins = a
            .django
            .requests()
            .await
            .iter()
            .filter(|r| r.starts_with("POST /admin/login/"))
            .count();
        assert_eq!(logins, 20);
    })
    .await;
}
