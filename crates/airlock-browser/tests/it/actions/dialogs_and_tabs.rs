//! Actions that open things: dialogs held until answered, popups and links that become
//! tabs, tab caps, downloads, and a device emulated in every tab.

use super::*;

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
