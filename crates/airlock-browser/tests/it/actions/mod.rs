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

fn dialog(kind: &str, message: &str, answer: DialogAnswer) -> Dialog {
    Dialog {
        kind: kind.to_owned(),
        message: message.to_owned(),
        answer,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_holds_the_page_until_it_is_answered() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("dialogs.html"), WaitUntil::Load)
            .await
            .unwrap();
        // Nothing open: answered at once, unless a wait was asked for (then at its end).
        let started = tokio::time::Instant::now();
        let none = s
            .handle_dialog(true, None, Duration::ZERO)
            .await
            .unwrap_err();
        assert!(
            matches!(none, airlock_browser::Error::NoDialog { .. }),
            "{none}"
        );
        assert_eq!(none.code(), ErrorCode::NotFound);
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "{:?}",
            started.elapsed()
        );
        let none = s
            .handle_dialog(true, None, Duration::from_millis(200))
            .await
            .unwrap_err();
        assert_eq!(none.code(), ErrorCode::NotFound, "{none}");

        let click = |name: &'static str| {
            let s = &s;
            async move {
                let r = s
                    .click(&role("button", name), &ClickOptions::default())
                    .await;
                s.or_dialog(r).await.unwrap()
            }
        };
        // The click comes back at once with the dialog open …
        let out = click("Alert").await;
        assert_eq!(
            out.dialogs,
            vec![dialog("alert", "Hello from alert", DialogAnswer::Open)]
        );
        // … and what needs the page is refused until it is answered.
        let held = s.snapshot(&Default::default()).await.unwrap_err();
        assert_eq!(held.code(), ErrorCode::DialogOpen, "{held}");
        let held = s
            .click(&role("button", "Confirm"), &ClickOptions::default())
            .await
            .unwrap_err();
        assert_eq!(held.code(), ErrorCode::DialogOpen, "{held}");
        let out = s.handle_dialog(true, None, Duration::ZERO).await.unwrap();
        assert_eq!(
            out.effect,
            Some(Effect::AnsweredDialog {
                kind: "alert".to_owned(),
                message: "Hello from alert".to_owned(),
                accepted: true
            })
        );
        assert!(line_with(&s, "after alert").await.contains("paragraph"));

        for (accept, returned) in [
            (true, "confirm returned true"),
            (false, "confirm returned false"),
        ] {
            let out = click("Confirm").await;
            assert_eq!(
                out.dialogs,
                vec![dialog("confirm", "Really delete?", DialogAnswer::Open)]
            );
            s.handle_dialog(accept, None, Duration::ZERO).await.unwrap();
            assert!(line_with(&s, "confirm returned").await.contains(returned));
        }

        click("Prompt").await;
        let answer = TypedText::plain("Ada Lovelace");
        s.handle_dialog(true, Some(&answer), Duration::ZERO)
            .await
            .unwrap();
        assert!(
            line_with(&s, "prompt returned")
                .await
                .contains("prompt returned Ada Lovelace")
        );
        click("Prompt").await;
        s.handle_dialog(false, Some(&answer), Duration::ZERO)
            .await
            .unwrap();
        assert!(
            line_with(&s, "prompt returned")
                .await
                .contains("prompt returned null")
        );

        // Leaving a guarded page asks first; accepting leaves.
        click("Guard").await;
        let r = s
            .click(&role("link", "Leave"), &ClickOptions::default())
            .await;
        let out = s.or_dialog(r).await.unwrap();
        assert_eq!(out.dialogs.len(), 1, "{out:?}");
        assert_eq!(out.dialogs[0].kind, "beforeunload");
        assert_eq!(out.dialogs[0].answer, DialogAnswer::Open);
        let out = s.handle_dialog(true, None, Duration::ZERO).await.unwrap();
        assert!(out.url.ends_with("page2.html"), "{out:?}");
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_dialog_is_dismissed_after_the_action_timeout_and_reported() {
    let config = BrowserConfig {
        action_timeout: Duration::from_secs(1),
        ..BrowserConfig::default()
    };
    with_browser_config(config, |h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("dialogs.html"), WaitUntil::Load)
            .await
            .unwrap();
        let r = s
            .click(&role("button", "Confirm"), &ClickOptions::default())
            .await;
        let out = s.or_dialog(r).await.unwrap();
        assert_eq!(out.dialogs[0].answer, DialogAnswer::Open);
        // The page goes on once the hold runs out: confirm() returned false. Until
        // then, the wait is refused.
        let mut refused = 0;
        let out = loop {
            let wait = s
                .wait_for(
                    &WaitCondition::Text("confirm returned false".to_owned()),
                    Some(Duration::from_secs(5)),
                )
                .await;
            match wait {
                Err(e) if e.code() == ErrorCode::DialogOpen && refused < 100 => {
                    refused += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                other => break other.unwrap(),
            }
        };
        assert!(refused > 0);
        assert_eq!(
            out.dialogs,
            vec![dialog(
                "confirm",
                "Really delete?",
                DialogAnswer::TimedOut { accepted: false }
            )]
        );
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn popups_become_tabs_and_tabs_can_be_managed() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("popup.html"), WaitUntil::Load)
            .await
            .unwrap();
        let out = s
            .click(&role("button", "Open popup"), &ClickOptions::default())
            .await
            .unwrap();
        // The popup attaches asynchronously; list tabs until it is there.
        let mut tabs = s.tabs().await.unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while tabs.len() < 2 && tokio::time::Instant::now() < deadline {
            s.wait_for(&WaitCondition::Time(Duration::from_millis(50)), None)
                .await
                .unwrap();
            tabs = s.tabs().await.unwrap();
        }
        assert_eq!(tabs.len(), 2, "{tabs:?} / {out:?}");
        assert!(tabs[1].opened_by_page && !tabs[1].active);
        s.select_tab(1).await.unwrap();
        s.wait_for(&WaitCondition::Text("Second page".into()), None)
            .await
            .unwrap();
        assert!(snap(&s).await.text.contains("heading \"Second page\""));

        let tabs = s.new_tab(Some(&h.site.url("login.html"))).await.unwrap();
        assert_eq!(tabs.len(), 3);
        assert!(tabs[2].active && tabs[2].url.ends_with("login.html"));
        let tabs = s.close_tab(2).await.unwrap();
        assert_eq!(tabs.len(), 2);
        let tabs = s.close_tab(1).await.unwrap();
        assert_eq!(tabs.len(), 1);
        assert!(tabs[0].active);
        let err = s.close_tab(0).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
        let err = s.select_tab(7).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::TabNotFound);
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloads_are_refused() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("popup.html"), WaitUntil::Load)
            .await
            .unwrap();
        s.click(&role("link", "Download file"), &ClickOptions::default())
            .await
            .unwrap();
        // Nothing was written to the profile or the user's download folder.
        let profile = s.profile_dir().unwrap();
        let home_downloads = std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join("Downloads");
        let saved = || {
            walk(&profile)
                .into_iter()
                .chain(walk(&home_downloads))
                .any(|p| p.ends_with("download.bin"))
        };
        assert!(!saved());
        let err = s
            .navigate(&h.site.url("download.bin"), WaitUntil::Load)
            .await;
        // A navigation that turns into a download is aborted, never saved.
        if let Err(err) = err {
            assert_eq!(err.code(), ErrorCode::NavigationFailed, "{err}");
        }
        assert!(!saved());
        s.close().await;
    })
    .await;
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tabs_are_capped_and_file_inputs_do_not_hang() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("many-popups.html"), WaitUntil::Load)
            .await
            .unwrap();
        let clicked = s
            .click(&role("button", "Open fifteen"), &ClickOptions::default())
            .await
            .unwrap();
        // Let every popup attach (or be refused), then read the outcomes.
        let mut reported = clicked.notices;
        for _ in 0..100 {
            let out = s
                .wait_for(&WaitCondition::Time(Duration::from_millis(50)), None)
                .await
                .unwrap();
            reported.extend(out.notices);
            if reported
                .iter()
                .any(|n| matches!(n, Notice::PopupsOverCap { .. }))
                && s.tabs().await.unwrap().len() == airlock_browser::MAX_TABS
            {
                break;
            }
        }
        assert_eq!(s.tabs().await.unwrap().len(), airlock_browser::MAX_TABS);
        assert!(
            reported
                .iter()
                .any(|n| matches!(n, Notice::PopupsOverCap { cap: 10, .. })),
            "{reported:?}"
        );
        let err = s.new_tab(None).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::QuotaExceeded, "{err}");

        // A file input's chooser never opens (headless has no picker): the click
        // returns and the page keeps working.
        s.click(&Target::Selector("#f".into()), &ClickOptions::default())
            .await
            .unwrap();
        s.click(&role("button", "Open fifteen"), &ClickOptions::default())
            .await
            .unwrap();
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
async fn a_page_that_opens_dialogs_without_end_is_closed_and_reported_briefly() {
    with_browser(|h| async move {
        let s = open(&h).await;
        for button in ["Loop", "Timer"] {
            s.navigate(&h.site.url("dialog-loop.html"), WaitUntil::Load)
                .await
                .unwrap();
            // The first dialogs hold the page and are answered; answered at once, the
            // next ones continue a chain and are dismissed without end, a storm.
            let r = s
                .click(&role("button", button), &ClickOptions::default())
                .await;
            let first = s.or_dialog(r).await;
            let mut answered = Vec::new();
            for _ in 0..4 {
                let quick = Duration::from_millis(300);
                let r = s.handle_dialog(true, None, quick).await;
                if let Ok(out) = r {
                    answered.extend(out.notices);
                }
            }
            // The storm may end the tab before it is reported.
            let mut reported = match first {
                Ok(out) => {
                    assert!(out.dialogs.len() <= 10, "{button}: {:?}", out.dialogs);
                    out.notices
                }
                Err(e) => {
                    assert_eq!(e.code(), ErrorCode::TabNotFound, "{button}: {e}");
                    Vec::new()
                }
            };
            reported.extend(answered);
            // The tab is closed a moment after the storm is seen: wait for both the
            // notice and the blank tab in its place. (Chromium may also stop a timer
            // whose dialogs are dismissed at once: then the page reads again.)
            let storm = Notice::DialogStorm {
                dialogs: 30,
                within_secs: 3,
            };
            let mut tabs = Vec::new();
            let mut answers = 0;
            for _ in 0..100 {
                match s
                    .wait_for(
                        &airlock_browser::WaitCondition::Time(Duration::from_millis(20)),
                        None,
                    )
                    .await
                {
                    Ok(out) => {
                        // Ten dialogs a result at most, then how many more there were.
                        assert!(out.dialogs.len() <= 10, "{button}: {:?}", out.dialogs);
                        reported.extend(out.notices);
                    }
                    Err(e) if e.code() == ErrorCode::DialogOpen => {
                        answers += 1;
                        let _ = s.handle_dialog(true, None, Duration::ZERO).await;
                    }
                    Err(e) => {
                        // The closed tab goes from the session a moment later.
                        assert_eq!(e.code(), ErrorCode::TabNotFound, "{button}: {e}");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                tabs = s.tabs().await.unwrap_or_default();
                if reported.contains(&storm) && tabs.len() == 1 && tabs[0].url == "about:blank" {
                    break;
                }
            }
            // Between two actions, at most three dialogs held the page.
            assert!(answers <= 3 * 100 / 2, "{button}: {answers}");
            if button == "Loop" || reported.contains(&storm) {
                assert!(reported.contains(&storm), "{button}: {reported:?}");
                assert_eq!(tabs.len(), 1, "{button}: {tabs:?}");
                assert_eq!(tabs[0].url, "about:blank", "{button}");
                // The session answers at once again (a call that began in the
                // closing tab says so, and the next one uses the blank tab).
                let mut tries = 0;
                let text = loop {
                    match s.snapshot(&Default::default()).await {
                        Err(airlock_browser::Error::TabClosed) if tries < 50 => {
                            tries += 1;
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                        other => break other.unwrap().text,
                    }
                };
                assert!(!text.contains("still here"), "{text}");
            } else {
                // Not held: the page reads.
                let text = snap(&s).await.text;
                assert!(text.contains("still here"), "{button}: {text}");
            }
        }
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_to_blank_and_noopener_windows_become_tabs_too() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("popup.html"), WaitUntil::Load)
            .await
            .unwrap();
        for (n, target) in [
            (2, role("link", "New tab link")),
            (3, role("button", "Open without opener")),
        ] {
            s.click(&target, &ClickOptions::default()).await.unwrap();
            let mut tabs = s.tabs().await.unwrap();
            for _ in 0..100 {
                if tabs.len() >= n {
                    break;
                }
                s.wait_for(&WaitCondition::Time(Duration::from_millis(50)), None)
                    .await
                    .unwrap();
                tabs = s.tabs().await.unwrap();
            }
            assert_eq!(tabs.len(), n, "{tabs:?}");
            assert!(!tabs[0].url.is_empty());
        }
        // A tab opened afterwards does not stall.
        let tabs = s.new_tab(Some(&h.site.url("login.html"))).await.unwrap();
        assert_eq!(tabs.len(), 4, "{tabs:?}");
        assert!(tabs[1].url.ends_with("index.html"), "{tabs:?}");
        assert!(tabs[2].url.ends_with("page2.html"), "{tabs:?}");
        assert!(tabs[1].opened_by_page && tabs[2].opened_by_page, "{tabs:?}");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_emulates_a_phone_in_every_tab() {
    with_browser(|h| async move {
        let s = open(&h).await;
        let phone = airlock_browser::Device::named("iphone-15").unwrap();
        s.emulate(phone).await.unwrap();
        s.navigate(&h.site.url("device.html"), WaitUntil::Load)
            .await
            .unwrap();
        let seen = line_with(&s, "width").await;
        for part in [
            "width 393 height 852 dpr 3 touch 5 coarse true",
            "iPhone; CPU iPhone OS",
        ] {
            assert!(seen.contains(part), "{part}: {seen}");
        }
        // A tab opened later is the same phone.
        s.new_tab(Some(&h.site.url("device.html"))).await.unwrap();
        let seen = line_with(&s, "width").await;
        assert!(seen.contains("width 393 height 852 dpr 3"), "{seen}");
        // Resizing keeps it a phone; the desktop is a desktop again.
        s.resize(400, 700).await.unwrap();
        s.reload().await.unwrap();
        let seen = line_with(&s, "width").await;
        assert!(
            seen.contains("width 400 height 700 dpr 3 touch 5"),
            "{seen}"
        );
        s.emulate(airlock_browser::Device::named("desktop").unwrap())
            .await
            .unwrap();
        s.reload().await.unwrap();
        let seen = line_with(&s, "width").await;
        assert!(seen.contains("width 1280 height 720 dpr 1 touch"), "{seen}");
        assert!(seen.contains("coarse false"), "{seen}");
        assert!(!seen.contains("iPhone"), "{seen}");
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloads_are_kept_under_generated_names_within_the_cap_and_reported() {
    use sha2::Digest as _;
    // The notice of a download's end, as the click's outcome or the next ones carry it.
    async fn report(s: &airlock_browser::Session, clicked: ActionOutcome) -> Notice {
        let download = |n: &Notice| {
            matches!(
                n,
                Notice::Downloaded { .. } | Notice::DownloadRefused { .. }
            )
        };
        if let Some(n) = clicked.notices.into_iter().find(download) {
            return n;
        }
        for _ in 0..100 {
            let out = s
                .wait_for(&WaitCondition::Time(Duration::from_millis(50)), None)
                .await
                .unwrap();
            if let Some(n) = out.notices.into_iter().find(download) {
                return n;
            }
        }
        panic!("no download was reported");
    }
    with_browser(|h| async move {
        let content = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../airlock-test-support/fixtures/site/report-data.txt"),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let s = open(&h).await;
        s.allow_downloads(dir.path(), 1024).await.unwrap();
        s.navigate(&h.site.url("download.html"), WaitUntil::Load)
            .await
            .unwrap();
        let clicked = s
            .click(&role("link", "Get report"), &ClickOptions::default())
            .await
            .unwrap();
        let Notice::Downloaded {
            name,
            saved_as,
            bytes,
            sha256,
        } = report(&s, clicked).await
        else {
            panic!("refused");
        };
        assert_eq!(name, "report.txt");
        assert_eq!(bytes, content.len() as u64);
        let want: String = sha2::Sha256::digest(&content)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(sha256, want);
        // Saved under the generated name, nowhere else.
        assert_ne!(saved_as, "report.txt");
        assert_eq!(std::fs::read(dir.path().join(&saved_as)).unwrap(), content);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        s.close().await;

        // Over the cap: cancelled, and nothing of it stays.
        let small = tempfile::tempdir().unwrap();
        let s = open(&h).await;
        s.allow_downloads(small.path(), 5).await.unwrap();
        s.navigate(&h.site.url("download.html"), WaitUntil::Load)
            .await
            .unwrap();
        let clicked = s
            .click(&role("link", "Get report"), &ClickOptions::default())
            .await
            .unwrap();
        let notice = report(&s, clicked).await;
        assert!(
            matches!(&notice, Notice::DownloadRefused { why, .. } if why.contains("5-byte cap")),
            "{notice:?}"
        );
        assert!(crate::eventually(|| std::fs::read_dir(small.path()).unwrap().count() == 0).await);
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

/// The action that opens a tab (a `target=_blank` link, `window.open`, with or
/// without an opener) says so in its own result, and so does the one after which a
/// page closed its own tab.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_action_that_opens_or_closes_a_tab_says_so_itself() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("popup.html"), WaitUntil::Load)
            .await
            .unwrap();
        let mut opened = 1;
        for (kind, name) in [
            ("link", "New tab link"),
            ("button", "Open popup"),
            ("button", "Open without opener"),
            ("button", "Open closer"),
        ] {
            let out = s
                .click(&role(kind, name), &ClickOptions::default())
                .await
                .unwrap();
            opened += 1;
            assert_eq!(out.new_tabs.len(), 1, "{name}: {out:?}");
            assert_eq!(out.new_tabs[0].index, opened - 1, "{name}: {out:?}");
        }
        // The closer's own button closes its tab.
        s.select_tab(opened - 1).await.unwrap();
        s.wait_for(&WaitCondition::Text("closes itself".into()), None)
            .await
            .unwrap();
        let notices = s
            .click(&role("button", "Close this tab"), &ClickOptions::default())
            .await
            .unwrap()
            .notices;
        let told = notices.iter().any(
            |n| matches!(n, Notice::TabClosedByPage { url, .. } if url.ends_with("closer.html")),
        );
        assert!(told, "{notices:?}");
        assert_eq!(s.tabs().await.unwrap().len(), opened - 1);
        s.close().await;
    })
    .await;
}

/// A ref carried from one tab to another names nothing there: refs of every tab but
/// the first carry its serial (`t1e2`), and a ref of another tab is refused, saying
/// which tab it is of, instead of acting on this tab's element of the same number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ref_never_resolves_in_another_tab() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("tabs-a.html"), WaitUntil::Load)
            .await
            .unwrap();
        let first = snap(&s).await.text;
        let beta = ref_of(&first, "button \"Beta\"");
        let opened = s
            .click(&role("link", "Open B"), &ClickOptions::default())
            .await
            .unwrap();
        assert_eq!(opened.new_tabs.len(), 1, "{opened:?}");
        s.select_tab(1).await.unwrap();
        s.wait_for(&WaitCondition::Text("Second tab".into()), None)
            .await
            .unwrap();
        let second = snap(&s).await.text;
        let delta = ref_of(&second, "button \"Delta\"");
        let Target::Ref(d) = &delta else {
            unreachable!()
        };
        assert!(d.to_string().starts_with("t1e"), "{second}");
        // Beta's ref, from tab 0, in tab 1 (whose Delta has the same number there).
        let e = s
            .click(&beta, &ClickOptions::default())
            .await
            .expect_err("a ref of another tab");
        assert_eq!(e.code(), ErrorCode::RefNotFound, "{e}");
        assert!(e.to_string().contains("is of tab [0]"), "{e}");
        assert!(snap(&s).await.text.contains("nothing clicked"));
        // Its own ref works.
        s.click(&delta, &ClickOptions::default()).await.unwrap();
        assert!(snap(&s).await.text.contains("clicked Delta"));
        s.close().await;
    })
    .await;
}
