//! Frames (same-origin, cross-origin, cross-site out-of-process, nested) and open
//! shadow roots.

use airlock_browser::{ClickOptions, WaitUntil};
use airlock_test_support::with_browser;

use crate::{line_with, open, open_proxied, ref_of, role, snap};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_inside_every_kind_of_frame_are_prefixed_and_clickable() {
    with_browser(|h| async move {
        let (s, _proxy) = open_proxied(&h).await;
        let url = format!("{}?b={}", h.site.url("frames.html"), h.site.b.port());
        s.navigate(&url, WaitUntil::Load).await.unwrap();
        // Frames load after the top document; wait until the nested one is in.
        let mut text = String::new();
        for _ in 0..100 {
            text = snap(&s).await.text;
            if text.matches("button \"Inner button\"").count() == 3 {
                break;
            }
            s.wait_for(
                &airlock_browser::WaitCondition::Time(std::time::Duration::from_millis(50)),
                None,
            )
            .await
            .unwrap();
        }
        assert_eq!(text.matches("button \"Inner button\"").count(), 3, "{text}");
        assert!(
            crate::ref_in(&text, "Iframe \"Cross site\"").is_some(),
            "{text}"
        );
        assert!(text.contains("paragraph: Outer frame text"), "{text}");
        assert!(
            crate::ref_in(&text, "Iframe \"Same origin\"").is_some(),
            "{text}"
        );
        assert!(
            crate::ref_in(&text, "Iframe \"Nested inner\"").is_some_and(|r| r.frame != 0),
            "{text}"
        );
        let frame_refs: Vec<airlock_core::NodeRef> = text
            .lines()
            .filter(|l| l.contains("button \"Inner button\""))
            .map(|l| crate::ref_on(l).unwrap())
            .collect();
        assert!(frame_refs.iter().all(|r| r.frame != 0), "{frame_refs:?}");

        // The nested frame sits inside the cross-site (out-of-process) frame.
        for (i, label) in ["same", "cross-origin", "nested"].iter().enumerate() {
            let line = text
                .lines()
                .filter(|l| l.contains("button \"Inner button\""))
                .nth(i)
                .unwrap();
            s.click(&ref_of(line, "Inner button"), &ClickOptions::default())
                .await
                .unwrap();
            let after = snap(&s).await.text;
            assert!(
                after.contains(&format!("paragraph: clicked in {label}")),
                "{label}:\n{after}"
            );
        }
        // Typing reaches a field in a frame of the out-of-process frame's renderer.
        let cross_site_field = text
            .lines()
            .filter(|l| l.contains("textbox \"Inner field\""))
            .nth(2)
            .unwrap();
        s.type_text(
            &ref_of(cross_site_field, "Inner field"),
            "hello oopif",
            false,
            false,
        )
        .await
        .unwrap();
        assert!(snap(&s).await.text.contains("value=\"hello oopif\""));
        // The top frame's own button still works and has an unprefixed ref.
        let top = ref_of(&text, "button \"Top button\"");
        assert!(matches!(top, airlock_browser::Target::Ref(r) if r.frame == 0));
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_shadow_roots_are_walked_and_targetable() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("shadow.html"), WaitUntil::Load)
            .await
            .unwrap();
        let text = snap(&s).await.text;
        assert!(
            crate::ref_in(&text, "textbox \"Shadow query\"").is_some(),
            "{text}"
        );
        s.type_text(
            &ref_of(&text, "textbox \"Shadow query\""),
            "deep",
            false,
            false,
        )
        .await
        .unwrap();
        s.click(&role("button", "Shadow go"), &ClickOptions::default())
            .await
            .unwrap();
        assert!(line_with(&s, "went with").await.contains("went with deep"));
        s.click(
            &airlock_browser::Target::Selector("#go".into()),
            &ClickOptions::default(),
        )
        .await
        .unwrap();
        s.close().await;
    })
    .await;
}
