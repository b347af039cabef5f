//! Every action and every target kind.

use std::time::Duration;

use airlock_browser::{
    ActionOutcome, ClickOptions, Dialog, DialogAnswer, Direction, Effect, Modifier, MouseButton,
    Notice, Scroll, Target, TypedText, WaitCondition, WaitUntil,
};
use airlock_config::BrowserConfig;
use airlock_core::{ErrorCode, HasErrorCode};
use airlock_test_support::{with_browser, with_browser_config};

use crate::{line_with, open, ref_of, role, snap};

mod dialogs_and_tabs;

async fn log(s: &airlock_browser::Session) -> String {
    line_with(s, "log:").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn click_by_ref_role_selector_and_point_with_buttons_and_modifiers() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("controls.html"), WaitUntil::Load)
            .await
            .unwrap();
        let snapshot = snap(&s).await;
        let by_ref = ref_of(&snapshot.text, "button \"Click target\"");
        s.click(&by_ref, &ClickOptions::default()).await.unwrap();
        s.click(&role("button", "Click target"), &ClickOptions::default())
            .await
            .unwrap();
        s.click(
            &Target::Selector("#clicker".to_owned()),
            &ClickOptions::default(),
        )
        .await
        .unwrap();
        assert!(
            log(&s).await.contains("log: click click click"),
            "{}",
            log(&s).await
        );

        s.click(
            &by_ref,
            &ClickOptions {
                double: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(log(&s).await.contains("dblclick"));
        s.click(
            &by_ref,
            &ClickOptions {
                button: MouseButton::Right,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(log(&s).await.contains("contextmenu"));
        s.click(
            &by_ref,
            &ClickOptions {
                button: MouseButton::Middle,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(log(&s).await.contains("middle"));
        s.click(
            &by_ref,
            &ClickOptions {
                modifiers: vec![Modifier::Shift],
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(log(&s).await.contains("shift-down"));

        // A viewport point: the top-left of the page is covered by the overlay, so a
        // point click there lands on the overlay, not on the covered button.
        s.click(
            &Target::Point { x: 30.0, y: 20.0 },
            &ClickOptions::default(),
        )
        .await
        .unwrap();
        assert!(!log(&s).await.contains("covered clicked"));
        let err = s
            .click(
                &Target::Point { x: 5000.0, y: 1.0 },
                &ClickOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unactionable_targets_say_why() {
    // Each refusal waits out the action budget first (the element might become
    // actionable); keep the budget short here.
    let config = BrowserConfig {
        action_timeout: Duration::from_secs(1),
        ..BrowserConfig::default()
    };
    with_browser_config(config, |h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("controls.html"), WaitUntil::Load)
            .await
            .unwrap();
        let cases = [
            (role("button", "Covered"), "covered by"),
            (role("button", "Disabled button"), "disabled"),
            (
                Target::Selector("button[style*=visibility]".to_owned()),
                "hidden",
            ),
        ];
        for (target, why) in cases {
            let err = s
                .click(&target, &ClickOptions::default())
                .await
                .unwrap_err();
            assert_eq!(
                err.code(),
                ErrorCode::ElementNotActionable,
                "{target:?}: {err}"
            );
            assert!(err.to_string().contains(why), "{target:?}: {err}");
        }
        let err = s
            .click(&role("button", "No such button"), &ClickOptions::default())
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ElementNotFound, "{err}");
        let err = s
            .click(&role("button", "Same"), &ClickOptions::default())
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
        assert!(err.to_string().contains("matches 2 elements"), "{err}");
        s.click(
            &Target::Role {
                role: "button".into(),
                name: Some("Same".into()),
                index: Some(1),
            },
            &ClickOptions::default(),
        )
        .await
        .unwrap();
        let err = s
            .click(
                &Target::Selector("[[bad".to_owned()),
                &ClickOptions::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_target_is_scrolled_into_view_before_clicking() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("controls.html"), WaitUntil::Load)
            .await
            .unwrap();
        s.click(&role("button", "Far away"), &ClickOptions::default())
            .await
            .unwrap();
        assert!(log(&s).await.contains("far clicked"));
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hover_type_fill_and_keys() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("controls.html"), WaitUntil::Load)
            .await
            .unwrap();
        s.hover(&Target::Selector("#hover".to_owned()))
            .await
            .unwrap();
        assert!(log(&s).await.contains("hovered"));

        // type appends unless clear_first.
        s.type_text(&role("textbox", "Name"), " more", false, false)
            .await
            .unwrap();
        assert!(
            line_with(&s, "textbox \"Name\"")
                .await
                .contains("value=\"prefilled more\"")
        );
        s.type_text(&role("textbox", "Name"), "fresh", true, false)
            .await
            .unwrap();
        assert!(
            line_with(&s, "textbox \"Name\"")
                .await
                .contains("value=\"fresh\"")
        );
        s.type_text(&role("textbox", "Name"), "x", true, true)
            .await
            .unwrap();
        assert!(
            log(&s).await.contains("enter in name"),
            "submit presses Enter"
        );

        // Control+A selects all, so typing replaces; Shift+Tab moves focus back.
        s.type_text(&role("textbox", "Other"), "abc", false, false)
            .await
            .unwrap();
        s.press_key("Control+A").await.unwrap();
        s.press_key("z").await.unwrap();
        assert!(
            line_with(&s, "textbox \"Other\"")
                .await
                .contains("value=\"z\"")
        );
        // Tabbing into a text field selects its content, so the key replaces it.
        s.press_key("Shift+Tab").await.unwrap();
        s.press_key("q").await.unwrap();
        assert!(
            line_with(&s, "textbox \"Name\"")
                .await
                .contains("value=\"q\"")
        );
        s.press_key("Control+b").await.unwrap();
        assert!(log(&s).await.contains("ctrl+b"));
        let err = s.press_key("Hyper+Q").await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);

        let err = s
            .type_text(&role("button", "Click target"), "x", false, false)
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ElementNotActionable, "{err}");

        s.fill_form(&[
            (role("textbox", "Notes"), "line one".to_owned()),
            (role("checkbox", "I agree"), "true".to_owned()),
            (role("combobox", "Fruit"), "Cherry".to_owned()),
        ])
        .await
        .unwrap();
        let text = snap(&s).await.text;
        assert!(text.contains(" textbox \"Notes\""), "{text}");
        assert!(text.contains("value=\"line one\""), "{text}");
        assert!(
            text.contains("checkbox \"I agree\"")
                && line_with(&s, "I agree").await.contains("[checked]")
        );
        assert!(log(&s).await.contains("fruit=cherry"));
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_check_and_uncheck() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("controls.html"), WaitUntil::Load)
            .await
            .unwrap();
        let out = s
            .select_option(&role("combobox", "Fruit"), &["banana".to_owned()])
            .await
            .unwrap();
        assert_eq!(
            out.effect,
            Some(Effect::Selected(vec!["Banana".to_owned()]))
        );
        s.select_option(
            &role("listbox", "Colors"),
            &["r".to_owned(), "Blue".to_owned()],
        )
        .await
        .unwrap();
        assert!(log(&s).await.contains("colors=r+b"));
        let err = s
            .select_option(&role("combobox", "Fruit"), &["kiwi".to_owned()])
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
        let err = s
            .select_option(
                &role("combobox", "Fruit"),
                &["apple".to_owned(), "banana".to_owned()],
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);

        s.set_checked(&role("checkbox", "I agree"), true)
            .await
            .unwrap();
        assert!(line_with(&s, "I agree").await.contains("[checked]"));
        let again = s
            .set_checked(&role("checkbox", "I agree"), true)
            .await
            .unwrap();
        assert!(
            matches!(
                again.effect,
                Some(Effect::Checked {
                    checked: true,
                    changed: false,
                    ..
                })
            ),
            "{again:?}"
        );
        s.set_checked(&role("checkbox", "I agree"), false)
            .await
            .unwrap();
        assert!(!line_with(&s, "I agree").await.contains("[checked]"));
        s.set_checked(&role("radio", "Large"), true).await.unwrap();
        assert!(line_with(&s, "radio \"Large\"").await.contains("[checked]"));
        let err = s
            .set_checked(&role("radio", "Large"), false)
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ElementNotActionable);
        // An ARIA checkbox (a div) toggles too.
        s.set_checked(&role("checkbox", "Custom toggle"), true)
            .await
            .unwrap();
        assert!(line_with(&s, "Custom toggle").await.contains("[checked]"));
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scroll_page_and_into_view() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("controls.html"), WaitUntil::Load)
            .await
            .unwrap();
        let out = s
            .scroll(&Scroll::Page {
                direction: Direction::Down,
                amount: Some(500.0),
            })
            .await
            .unwrap();
        assert!(
            matches!(out.effect, Some(Effect::Scrolled { y: 500, .. })),
            "{out:?}"
        );
        let out = s
            .scroll(&Scroll::Page {
                direction: Direction::Up,
                amount: None,
            })
            .await
            .unwrap();
        assert!(
            matches!(out.effect, Some(Effect::Scrolled { y: 0, .. })),
            "{out:?}"
        );
        let out = s
            .scroll(&Scroll::IntoView(role("button", "Far away")))
            .await
            .unwrap();
        assert!(
            matches!(&out.effect, Some(Effect::ScrolledIntoView(t)) if t.contains("Far away")),
            "{out:?}"
        );
        let err = s
            .scroll(&Scroll::Page {
                direction: Direction::Down,
                amount: Some(-3.0),
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_text_target_gone_and_time() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("delayed.html"), WaitUntil::Load)
            .await
            .unwrap();
        s.wait_for(&WaitCondition::Text("Ready now".into()), None)
            .await
            .unwrap();
        s.wait_for(&WaitCondition::TextGone("Loading soon".into()), None)
            .await
            .unwrap();
        s.wait_for(&WaitCondition::Target(role("button", "Appeared")), None)
            .await
            .unwrap();
        let err = s
            .wait_for(
                &WaitCondition::Text("never there".into()),
                Some(Duration::from_millis(300)),
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Timeout, "{err}");
        let out = s
            .wait_for(&WaitCondition::Time(Duration::from_millis(50)), None)
            .await
            .unwrap();
        assert_eq!(out.effect, Some(Effect::Waited(50)));
        let err = s
            .wait_for(&WaitCondition::Time(Duration::from_secs(61)), None)
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);

        // Actions wait for a target that is not there yet (the page renders late).
        s.navigate(&h.site.url("delayed.html"), WaitUntil::Load)
            .await
            .unwrap();
        s.click(&role("button", "Appeared"), &ClickOptions::default())
            .await
            .unwrap();
        assert!(
            line_with(&s, "Appeared clicked")
                .await
                .contains("paragraph")
        );
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_waits_for_a_moving_target_to_stop() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("moving.html"), WaitUntil::Load)
            .await
            .unwrap();
        // The button starts sliding 900 px in 400 ms: a click aimed where it was when
        // the click was asked for would land on empty page.
        s.click(&role("button", "Start"), &ClickOptions::default())
            .await
            .unwrap();
        s.click(&role("button", "Catch me"), &ClickOptions::default())
            .await
            .unwrap();
        assert!(line_with(&s, "caught").await.contains("caught"));
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_click_answers_once_what_its_handler_started_has_happened() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("reacts.html"), WaitUntil::Load)
            .await
            .unwrap();
        // The handler fetches, and fetches again once the first answer is in (500 ms
        // in all, far beyond a frame): the click answers after the page shows it.
        s.click(&role("button", "Load details"), &ClickOptions::default())
            .await
            .unwrap();
        assert!(
            line_with(&s, "Details")
                .await
                .contains("Details loaded after two requests")
        );
        // No reaction at once, one at the next frame; and one a task later.
        s.click(&role("button", "Show next frame"), &ClickOptions::default())
            .await
            .unwrap();
        assert!(line_with(&s, "Shown").await.contains("Shown a frame later"));
        s.click(
            &role("button", "Show after a task"),
            &ClickOptions::default(),
        )
        .await
        .unwrap();
        assert!(line_with(&s, "Shown").await.contains("Shown a task later"));
        // Sent together, the mouse events still reach the page as a hand's do: the
        // pointer arrives over the button before it is pressed.
        s.click(&role("button", "Hover first"), &ClickOptions::default())
            .await
            .unwrap();
        assert!(
            line_with(&s, "Shown")
                .await
                .contains("Shown hovered then pressed")
        );
        // Typing waits for the request its input handler sent, and what it brought.
        s.type_text(&role("textbox", "Search"), "shoes", false, false)
            .await
            .unwrap();
        assert!(
            line_with(&s, "Suggestions")
                .await
                .contains("Suggestions for shoes: found")
        );
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_waiting_cannot_help_fails_fast() {
    // A long action budget: only failing fast keeps this test inside its own limit.
    let config = BrowserConfig {
        action_timeout: Duration::from_secs(60),
        ..BrowserConfig::default()
    };
    with_browser_config(config, |h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("stuck.html"), WaitUntil::Load)
            .await
            .unwrap();
        let fast = Duration::from_secs(10);
        let attempts = [
            (
                role("button", "Never enabled"),
                ErrorCode::ElementNotActionable,
            ),
            (role("button", "No such button"), ErrorCode::ElementNotFound),
            (
                airlock_browser::Target::Role {
                    role: "button".into(),
                    name: Some("Never".into()),
                    index: Some(3),
                },
                ErrorCode::ElementNotFound,
            ),
            (
                airlock_browser::Target::Selector("#nope".into()),
                ErrorCode::ElementNotFound,
            ),
        ];
        for (target, code) in attempts {
            let err = tokio::time::timeout(fast, s.click(&target, &ClickOptions::default()))
                .await
                .unwrap_or_else(|_| panic!("{target:?} waited out the action budget"))
                .unwrap_err();
            assert_eq!(err.code(), code, "{target:?}: {err}");
            if let airlock_browser::Target::Role { index: Some(_), .. } = target {
                assert_eq!(
                    err.to_string(),
                    "no element matches button with the name given at index 3 \
                     (it has 1 match; index counts from 0)"
                );
            }
        }
        let err = s
            .click(
                &airlock_browser::Target::Role {
                    role: "button".into(),
                    name: None,
                    index: Some(40),
                },
                &ClickOptions::default(),
            )
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("no element matches role button at index 40 (it has "),
            "{err}"
        );
        let err = tokio::time::timeout(
            fast,
            s.click(&role("button", "Never enabled"), &ClickOptions::default()),
        )
        .await
        .unwrap()
        .unwrap_err();
        assert!(err.to_string().contains("stopped changing"), "{err}");
        // A button the page enables a moment later is still waited for.
        s.navigate(&h.site.url("stuck.html"), WaitUntil::Load)
            .await
            .unwrap();
        s.click(&role("button", "Enabled later"), &ClickOptions::default())
            .await
            .unwrap();
        assert!(line_with(&s, "later clicked").await.contains("paragraph"));
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_match_without_case_and_by_their_aria_names() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("roles.html"), WaitUntil::Load)
            .await
            .unwrap();
        // <summary> is Chromium's DisclosureTriangle; an agent says button.
        s.click(&role("button", "More options"), &ClickOptions::default())
            .await
            .unwrap();
        assert!(snap(&s).await.text.contains("Hidden until opened"));
        s.click(&role("BUTTON", "more options"), &ClickOptions::default())
            .await
            .unwrap();
        // <input type=date> is Chromium's Date; an agent says textbox.
        s.type_text(&role("textbox", "Start date"), "2026-11-22", false, false)
            .await
            .unwrap();
        s.type_text(&role("date", "Start date"), "2026-11-22", false, false)
            .await
            .unwrap();
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_stuck_in_a_loop_is_stopped_and_the_session_goes_on() {
    let config = BrowserConfig {
        action_timeout: Duration::from_secs(2),
        ..BrowserConfig::default()
    };
    with_browser_config(config, |h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("hang.html"), WaitUntil::Load)
            .await
            .unwrap();
        let err = s
            .click(&role("button", "Hang"), &ClickOptions::default())
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Timeout, "{err}");
        // The next call stops the loop and works; the page is still there.
        let text = snap(&s).await.text;
        assert!(text.contains("still here"), "{text}");
        let out = s
            .wait_for(&WaitCondition::Time(Duration::from_millis(1)), None)
            .await
            .unwrap();
        assert!(
            out.notices
                .iter()
                .any(|n| matches!(n, Notice::ScriptStopped | Notice::UnresponsiveTabReplaced)),
            "{:?}",
            out.notices
        );
        // And a navigation away works.
        s.navigate(&h.site.url("login.html"), WaitUntil::Load)
            .await
            .unwrap();
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resolved_target_says_what_it_is_and_acting_on_it_acts_on_that_element_only() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("resolve.html"), WaitUntil::Load)
            .await
            .unwrap();
        let origin = h.site.url("").trim_end_matches('/').to_owned();

        let delete = s.resolve(&role("button", "Delete account")).await.unwrap();
        assert_eq!(delete.role, "button");
        assert_eq!(delete.name, "Delete account");
        assert!(!delete.password);
        assert_eq!(delete.href, None);
        assert_eq!(delete.frame_origin, origin);
        assert_eq!(delete.frame_url, h.site.url("resolve.html"));
        assert_eq!(delete.target, Target::Ref(delete.node));
        assert!(delete.bounds.width > 0.0 && delete.bounds.height > 0.0);

        let field = s.resolve(&Target::Selector("#pw".into())).await.unwrap();
        assert!(field.password, "{field:?}");

        // A point on the link's inner span resolves to the link, and stays a point.
        let link = s.resolve(&role("link", "Next page")).await.unwrap();
        let (x, y) = (
            link.bounds.x + link.bounds.width / 2.0,
            link.bounds.y + link.bounds.height / 2.0,
        );
        let at = s.resolve(&Target::Point { x, y }).await.unwrap();
        assert_eq!(at.role, "link", "{at:?}");
        assert_eq!(at.node, link.node);
        assert_eq!(at.href.as_deref(), Some(h.site.url("page2.html").as_str()));
        assert_eq!(at.target, Target::Point { x, y });

        // The resolved element is clicked; once the page replaced it with a look-alike,
        // the resolved target fails instead of clicking the new one.
        s.click(&delete.target, &ClickOptions::default())
            .await
            .unwrap();
        assert!(line_with(&s, "deleted").await.contains("deleted 1"));
        s.click(&role("button", "Swap"), &ClickOptions::default())
            .await
            .unwrap();
        let err = s
            .click(&delete.target, &ClickOptions::default())
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::RefNotFound, "{err}");
        assert!(line_with(&s, "deleted").await.contains("deleted 1"));
        let again = s.resolve(&role("button", "Delete account")).await.unwrap();
        assert_ne!(again.node, delete.node);
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drag_carries_out_html5_drops_and_mouse_drags() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("drag.html"), WaitUntil::Load)
            .await
            .unwrap();
        // An HTML5 drag: the page's own dragstart data arrives at the drop.
        let snapshot = snap(&s).await;
        let task = ref_of(&snapshot.text, "Task B");
        let out = s.drag(&task, &role("region", "Done")).await.unwrap();
        assert!(
            matches!(&out.effect, Some(Effect::Dragged { from, to }) if from.contains("listitem") && to.contains("Done")),
            "{out:?}"
        );
        assert!(log(&s).await.contains("dropped Task B on Done"));
        // A mouse drag: press, several moves, release, 150 px to the right.
        let handle = Target::Selector("#handle".to_owned());
        let track = s.resolve(&handle).await.unwrap();
        let bounds = track.bounds;
        let (x, y) = (bounds.x + bounds.width / 2.0, bounds.y + bounds.height / 2.0);
        s.drag(&handle, &Target::Point { x: x + 150.0, y })
            .await
            .unwrap();
        let line = log(&s).await;
        assert!(line.contains("slider at 150 after 8 moves"), "{line}");
        s.close().await;
    })
    .await;
}

/// Typing into a field whose page goes away part-way (its frame removed, the page
/// navigating) ends with `page_changed`, never an internal error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typing_into_a_page_that_goes_away_part_way_is_page_changed() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("vanish.html"), WaitUntil::Load)
            .await
            .unwrap();
        let snapshot = snap(&s).await;
        let inner = ref_of(&snapshot.text, "textbox \"Inner field\"");
        let e = s
            .type_text(&inner, "abc", true, false)
            .await
            .expect_err("the frame went away");
        assert_eq!(e.code(), ErrorCode::PageChanged, "{e}");
        assert!(e.to_string().contains("take a new snapshot"), "{e}");
        // The page navigating away mid-type: each run ends typed, or with a code that
        // says the page changed (its element gone from the new page) — never internal.
        for _ in 0..5 {
            s.navigate(&h.site.url("vanish.html"), WaitUntil::Load)
                .await
                .unwrap();
            match s
                .type_text(&role("textbox", "Leaving"), "abc", true, true)
                .await
            {
                Ok(_) => {}
                Err(e) => assert!(
                    matches!(e.code(), ErrorCode::PageChanged | ErrorCode::RefNotFound),
                    "{e}"
                ),
            }
        }
    })
    .await;
}
