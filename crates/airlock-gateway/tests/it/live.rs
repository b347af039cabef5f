//! The live stream of a session: a watcher sees the page change and its events when
//! they happen.

use super::*;

/// The console's live view follows a session's stream from its browser host: the
/// page at once, then nothing while it is idle, then what the agent's action changed
/// and the dialog it opened, when they happen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_watcher_sees_the_page_change_and_its_events_when_they_happen() {
    use airlock_gateway::LiveCursor;
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("dialogs.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let id = gateway.leases()[0].id.to_string();
        let mut cursor = LiveCursor::default();
        let wait = Duration::from_secs(20);

        let first = gateway
            .operators()
            .live_watch("default", &id, &mut cursor, true, wait)
            .await
            .unwrap();
        let frame = first.frame.expect("the page at once");
        assert!(frame.url.ends_with("/dialogs.html"), "{}", frame.url);
        assert_eq!(frame.title, "Dialogs");
        let idle = gateway
            .operators()
            .live_watch(
                "default",
                &id,
                &mut cursor,
                true,
                Duration::from_millis(600),
            )
            .await
            .unwrap();
        assert!(idle.frame.is_none() && idle.events.is_empty(), "{idle:?}");
        // Another tenant's operator sees nothing of it.
        assert!(
            gateway
                .operators()
                .live_watch("other", &id, &mut LiveCursor::default(), true, wait)
                .await
                .is_err()
        );

        let out = agent.call(click_button("Guard")).await;
        assert_eq!(out.error, None, "{}", out.text);
        let changed = gateway
            .operators()
            .live_watch("default", &id, &mut cursor, true, wait)
            .await
            .unwrap();
        assert!(
            changed.frame.is_some(),
            "the click changed the page: a frame"
        );

        let out = agent.call(click_button("Confirm")).await;
        assert_eq!(out.error, None, "{}", out.text);
        let mut lines = Vec::new();
        while !lines.iter().any(|l: &String| l.contains("dialog")) {
            let update = gateway
                .operators()
                .live_watch("default", &id, &mut cursor, false, wait)
                .await
                .unwrap();
            assert!(
                !update.events.is_empty(),
                "the dialog answers the watch before its wait runs out"
            );
            lines.extend(update.events);
        }
        assert!(
            lines
                .iter()
                .any(|l| l == "tab 0: a confirm dialog holds the page: “Really delete?”"),
            "{lines:?}"
        );
        gateway.operators().live_unwatch("default", &id).await;
        gateway.shutdown().await;
    })
    .await;
}
