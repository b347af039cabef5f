//! Accessibility snapshots: format, refs, redaction, filters, paging, diffs, and
//! agreement with Chromium's own accessibility tree.

use airlock_browser::{ClickOptions, SnapshotOptions, WaitUntil};
use airlock_core::{ErrorCode, HasErrorCode};
use airlock_test_support::with_browser;

use crate::{open, ref_of, role, snap};

/// A `<select>` whose placeholder option is hidden (`<option hidden>Choose…`) is
/// listed with the options a person can pick; it once vanished whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_with_a_hidden_option_is_listed_without_it() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("select-hidden.html"), WaitUntil::Load)
            .await
            .unwrap();
        let text = snap(&s).await.text;
        assert!(text.contains("combobox \"Country\""), "{text}");
        assert!(text.contains("option \"France\""), "{text}");
        assert!(text.contains("option \"Spain\""), "{text}");
        assert!(!text.contains("Choose"), "{text}");
        assert!(text.contains("combobox \"Size\""), "{text}");
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_page_reads_as_roles_and_names_without_the_password() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("login.html"), WaitUntil::Load)
            .await
            .unwrap();
        s.type_text(
            &role("textbox", "Password"),
            "correct horse battery",
            true,
            false,
        )
        .await
        .unwrap();
        let out = snap(&s).await;
        assert_eq!(out.title, "Sign in");
        let text = out.text;
        // The whole of it: an unnamed `main` and the empty status region cost no line;
        // each ref leads its line; the password shows a mask, never the value.
        let refs: Vec<String> = text
            .lines()
            .filter_map(crate::ref_on)
            .map(|r| r.to_string())
            .collect();
        assert_eq!(refs.len(), 5, "{text}");
        assert_eq!(
            text,
            format!(
                "- heading \"Sign in\" [level=1]\n\
                 - {} form\n  \
                   - {} textbox \"Username\"\n  \
                   - {} textbox \"Password\" [password=••••]\n  \
                   - {} checkbox \"Remember me\"\n  \
                   - {} button \"Sign in\"\n",
                refs[0], refs[1], refs[2], refs[3], refs[4]
            )
        );
        for secret in ["correct horse", "hunter2", "battery"] {
            assert!(!text.contains(secret), "password leaked into:\n{text}");
        }
        let page_text = s.read_text(0, 100_000).await.unwrap().text;
        assert!(!page_text.contains("correct horse"), "{page_text}");

        // Hidden nodes are left out: display:none, visibility:hidden.
        s.navigate(&h.site.url("controls.html"), WaitUntil::Load)
            .await
            .unwrap();
        let controls = snap(&s).await.text;
        assert!(
            crate::ref_in(&controls, "button \"Disabled button\"").is_some()
                && controls.contains("[disabled]")
        );
        for hidden in ["Hidden button", "Invisible button"] {
            assert!(!controls.contains(hidden), "{hidden} shown in:\n{controls}");
        }
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_are_stable_and_stale_refs_are_refused() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("mutate.html"), WaitUntil::Load)
            .await
            .unwrap();
        let first = snap(&s).await.text;
        let second = snap(&s).await.text;
        assert_eq!(first, second, "same DOM, same refs");
        let beta = ref_of(&first, "button \"Remove beta\"");
        s.click(
            &ref_of(&first, "button \"Remove alpha\""),
            &ClickOptions::default(),
        )
        .await
        .unwrap();
        s.click(&role("button", "Add gamma"), &ClickOptions::default())
            .await
            .unwrap();
        let third = snap(&s).await.text;
        // Beta's button kept its ref although the DOM around it changed.
        assert_eq!(ref_of(&third, "button \"Remove beta\""), beta);
        assert!(!third.contains("Remove alpha"));
        assert!(third.contains("listitem: Gamma"), "{third}");
        // The removed node's ref is gone for good.
        let alpha = ref_of(&first, "button \"Remove alpha\"");
        let err = s.click(&alpha, &ClickOptions::default()).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::RefNotFound, "{err}");
        // After a reload the old refs never name new nodes.
        s.click(&role("button", "Reload page"), &ClickOptions::default())
            .await
            .unwrap();
        let err = s.click(&beta, &ClickOptions::default()).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::RefNotFound, "{err}");
        let fourth = snap(&s).await.text;
        assert_ne!(ref_of(&fourth, "button \"Remove beta\""), beta);
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_after_an_action_are_a_small_diff() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("mutate.html"), WaitUntil::Load)
            .await
            .unwrap();
        let full = snap(&s).await.text;
        assert_eq!(s.changes().await.unwrap(), None, "nothing changed yet");
        s.click(&role("button", "Add gamma"), &ClickOptions::default())
            .await
            .unwrap();
        let diff = s.changes().await.unwrap().expect("a change");
        assert!(diff.contains("+ ") && diff.contains("Gamma"), "{diff}");
        assert!(
            diff.len() < full.len(),
            "diff {diff:?} not smaller than {full:?}"
        );
        s.click(&role("button", "Remove alpha"), &ClickOptions::default())
            .await
            .unwrap();
        let diff = s.changes().await.unwrap().expect("a change");
        assert!(
            diff.lines()
                .any(|l| l.starts_with("- ") && l.contains("Remove alpha")),
            "{diff}"
        );
        s.close().await;
    })
    .await;
}

/// The walk behind an action's diff takes what did not change from the last walk.
/// After each action here it must read the page exactly as a whole walk does, above
/// all where CSS state, not a mutation, changed what shows: a `:hover` menu, a
/// `:checked` sibling, a `:focus-within` list, the menu closing when the pointer
/// leaves; and where mutations did (text, a class hiding a section, a value set from
/// script, a label elsewhere, a new style sheet).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_walk_behind_a_diff_reads_the_page_as_a_whole_walk_does() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("walk-cache.html"), WaitUntil::Load)
            .await
            .unwrap();
        snap(&s).await;
        let click = |r: &'static str, n: &'static str| {
            let s = &s;
            async move {
                s.click(&role(r, n), &ClickOptions::default())
                    .await
                    .unwrap();
            }
        };
        let steps: [(&str, &str, bool); 9] = [
            ("hover Products", "Alpha product", true),
            ("check Show panel", "Panel text", true),
            ("click Search", "Suggestion one", true),
            ("click Hide section", "Section words", false),
            ("click Finish", "done", true),
            ("click Fill mirror", "mirrored", true),
            ("click Rename", "region \"New label\"", true),
            ("click Pick 120", "Picked 120", true),
            ("click Add style", "text: done", false),
        ];
        for (step, shows, present) in steps {
            match step {
                "hover Products" => {
                    s.hover(&role("button", "Products")).await.unwrap();
                }
                "check Show panel" => {
                    s.set_checked(&role("checkbox", "Show panel"), true)
                        .await
                        .unwrap();
                }
                "click Search" => click("textbox", "Search").await,
                "click Hide section" => click("button", "Hide section").await,
                "click Finish" => click("button", "Finish").await,
                "click Fill mirror" => click("button", "Fill mirror").await,
                "click Rename" => click("button", "Rename").await,
                "click Pick 120" => click("button", "Pick 120").await,
                "click Add style" => click("button", "Add style").await,
                _ => unreachable!(),
            }
            // The diff an agent gets (its walk taking what did not change, the page
            // sending only the rest); the lines it leaves as the next base must be
            // the page as a whole walk reads it.
            s.changes().await.unwrap();
            let (base, whole) = s.diff_base_and_whole().await.unwrap();
            assert_eq!(base, whole, "after {step}");
            assert_eq!(base.contains(shows), present, "after {step}: {base}");
        }
        // The pointer left the menu: it closed, and the diff's walk saw that too.
        s.changes().await.unwrap();
        let (base, _) = s.diff_base_and_whole().await.unwrap();
        assert!(!base.contains("Alpha product"), "{base}");
        s.close().await;
    })
    .await;
}

/// A diff whose page reads exactly as the walk its base came from is "no change"
/// without the tree being sent again; but only against that walk: a change that
/// another walk saw in between is still reported against the base the agent has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_change_is_said_only_against_the_walk_the_base_came_from() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("walk-cache.html"), WaitUntil::Load)
            .await
            .unwrap();
        snap(&s).await;
        assert_eq!(s.changes().await.unwrap(), None);
        s.hover(&role("heading", "Walk cache")).await.unwrap();
        assert_eq!(s.changes().await.unwrap(), None, "hovering a heading");
        s.click(&role("button", "Finish"), &ClickOptions::default())
            .await
            .unwrap();
        // Another whole walk sees the change first; the diff still reports it.
        let (seen, _) = s.walks_for_diff_and_whole().await.unwrap();
        assert!(seen.contains("paragraph: done"), "{seen}");
        let diff = s.changes().await.unwrap().expect("the change");
        assert!(diff.contains("done"), "{diff}");
        assert_eq!(s.changes().await.unwrap(), None, "nothing since");
        s.close().await;
    })
    .await;
}

/// A click in a large page costs what its change costs: the diff's walk sends the
/// row that changed and refers to the other 1,999 by number, and reads the page as
/// a whole walk does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diff_in_a_large_page_sends_what_changed_not_the_page() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("admin?rows=2000"), WaitUntil::Load)
            .await
            .unwrap();
        let whole = s
            .snapshot(&SnapshotOptions {
                max_bytes: usize::MAX,
                ..Default::default()
            })
            .await
            .unwrap()
            .text;
        let edit = airlock_browser::Target::Role {
            role: "button".into(),
            name: Some("Edit".into()),
            index: Some(1000),
        };
        s.click(&edit, &ClickOptions::default()).await.unwrap();
        let diff = s.changes().await.unwrap().expect("the change");
        assert!(diff.contains("Editing"), "{diff}");
        assert_eq!(
            diff.lines().filter(|l| l.starts_with("~ ")).count(),
            1,
            "{diff}"
        );
        // ~24 KB: the changed row and one short number per other row. The page's
        // tree whole is ~40 times that, its rendering (below) ~8 times.
        let sent = s.last_diff_walk_bytes().await.unwrap();
        assert!(
            sent * 4 < whole.len(),
            "the walk sent {sent} bytes; the whole snapshot is {}",
            whole.len()
        );
        let (base, again) = s.diff_base_and_whole().await.unwrap();
        assert_eq!(base, again);
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_table_pages_filters_and_finds() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("admin?rows=2000"), WaitUntil::Load)
            .await
            .unwrap();
        let first = s.snapshot(&SnapshotOptions::default()).await.unwrap();
        assert!(first.text.len() <= airlock_browser::DEFAULT_SNAPSHOT_BYTES + 300);
        let last_line = first.text.lines().last().unwrap();
        assert!(
            last_line.starts_with("[snapshot truncated: lines 1-"),
            "{last_line}"
        );
        assert!(
            last_line.contains(&format!("offset={}", first.end)),
            "{last_line}"
        );
        let next = s
            .snapshot(&SnapshotOptions {
                offset: first.end,
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(
            crate::ref_on(next.text.lines().next().unwrap()).is_some(),
            "{}",
            &next.text[..200]
        );
        assert!(!next.text.contains("row: user0 |"));

        let all = SnapshotOptions {
            max_bytes: usize::MAX,
            ..Default::default()
        };
        let full = s.snapshot(&all).await.unwrap();
        let interactive = s
            .snapshot(&SnapshotOptions {
                interactive_only: true,
                ..all.clone()
            })
            .await
            .unwrap();
        assert!(interactive.text.len() < full.text.len());
        assert!(full.text.contains("row: user0 |") && full.text.contains("user1999@example.com"));
        let limited = s
            .snapshot(&SnapshotOptions {
                max_nodes: 10,
                ..all.clone()
            })
            .await
            .unwrap();
        assert_eq!(
            limited.text.lines().count(),
            11,
            "10 lines and the truncation line"
        );

        let found = s
            .snapshot(&SnapshotOptions {
                find: Some("user1234@".into()),
                ..all.clone()
            })
            .await
            .unwrap();
        assert!(found.text.contains("heading \"Users\""), "{}", found.text);
        assert!(
            found.text.contains("user1234@example.com"),
            "{}",
            found.text
        );
        // Scope: the table's subtree, without the page around it.
        let airlock_browser::Target::Ref(table) = ref_of(&found.text, "table \"Accounts\"") else {
            unreachable!()
        };
        let scoped = s
            .snapshot(&SnapshotOptions {
                scope: Some(table),
                max_nodes: 4,
                ..all.clone()
            })
            .await
            .unwrap();
        assert!(
            scoped.text.contains("table \"Accounts\""),
            "{}",
            scoped.text
        );
        assert!(scoped.text.contains("row: user0 |"), "{}", scoped.text);
        assert!(
            !scoped.text.contains("heading \"Users\""),
            "{}",
            scoped.text
        );
        // The row comes with its subtree: the buttons that act on it.
        assert!(found.text.contains("button \"Delete\""), "{}", found.text);
        assert!(found.text.lines().count() <= 7, "{}", found.text);
        s.click(
            &ref_of(&found.text, "button \"Delete\""),
            &ClickOptions::default(),
        )
        .await
        .unwrap();
        let after = s
            .snapshot(&SnapshotOptions {
                find: Some("user1234@".into()),
                ..all
            })
            .await
            .unwrap();
        assert!(
            after.text.starts_with("no line of the snapshot contains"),
            "{}",
            after.text
        );
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_and_names_agree_with_chromiums_accessibility_tree() {
    with_browser(|h| async move {
        let (s, _proxy) = crate::open_proxied(&h).await;
        let pages = [
            h.site.url("login.html"),
            h.site.url("controls.html"),
            h.site.url("article.html"),
            h.site.url("admin?rows=30"),
            h.site.url("dialogs.html"),
            h.site.url("popup.html"),
            h.site.url("delayed.html"),
            h.site.url("shadow.html"),
            h.site.url("mutate.html"),
            h.site.url("cookie.html"),
            h.site.url("select-hidden.html"),
            h.site.url("walk-cache.html"),
            format!("{}?b={}", h.site.url("frames.html"), h.site.b.port()),
        ];
        let mut failures = Vec::new();
        let mut compared = 0;
        for url in &pages {
            s.navigate(url, WaitUntil::Load).await.unwrap();
            for pair in s.ax_oracle().await.unwrap() {
                compared += 1;
                let (role, name) = &pair.ours;
                match &pair.chromium {
                    // Chromium 148 keeps a label's edge spaces in the name ("Password ");
                    // names are compared as the agent reads them, trimmed.
                    Some((c_role, c_name)) if c_role == role && c_name.trim() == name => {}
                    // An unnamed form is `generic` to Chromium 148 (HTML-AAM); the
                    // snapshot keeps it a `form` with a ref on purpose: the agent scopes
                    // a snapshot to it and sees which fields submit together.
                    Some((c_role, c_name))
                        if role == "form"
                            && name.is_empty()
                            && c_role == "generic"
                            && c_name.is_empty() => {}
                    other => {
                        failures.push(format!("{url}: ours {role} {name:?}, Chromium {other:?}"))
                    }
                }
            }
        }
        assert!(compared > 150, "only {compared} nodes compared");
        assert!(
            failures.is_empty(),
            "{} of {compared} differ:\n{}",
            failures.len(),
            failures.join("\n")
        );
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_unpaired_surrogates_still_reads_with_replacement_characters() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("surrogates.html"), WaitUntil::Load)
            .await
            .unwrap();
        let text = snap(&s).await.text;
        assert!(
            text.contains("paragraph: high \u{fffd} alone, low \u{fffd} alone, pair 😀 fine"),
            "{text}"
        );
        assert!(text.contains("button \"Button \u{fffd}\""), "{text}");
        assert!(text.contains("value=\"value \u{fffd}\""), "{text}");
        let page = s.read_text(0, 10_000).await.unwrap().text;
        assert!(page.contains("pair 😀 fine"), "{page}");
        let tabs = s.tabs().await.unwrap();
        assert!(tabs[0].title.starts_with("lone "), "{tabs:?}");
        // Actions still work on such a page.
        s.click(&crate::role("button", "Button"), &Default::default())
            .await
            .unwrap();
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_too_large_to_walk_gives_a_snapshot_that_says_where_it_stopped() {
    with_browser(|h| async move {
        let s = open(&h).await;
        for (kind, why) in [
            ("deep", "nests deeper than"),
            ("wide", "more than 50000 nodes"),
            ("text", ""),
        ] {
            s.navigate(
                &h.site.url(&format!("bomb.html?kind={kind}")),
                WaitUntil::Load,
            )
            .await
            .unwrap();
            let snap = s
                .snapshot(&SnapshotOptions::default())
                .await
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert!(snap.text.contains("A page too large to walk"), "{kind}");
            if why.is_empty() {
                assert!(!snap.text.contains("too large to walk whole"), "{kind}");
            } else {
                assert!(
                    snap.text.contains("too large to walk whole") && snap.text.contains(why),
                    "{kind}: {}",
                    &snap.text[snap.text.len().saturating_sub(300)..]
                );
            }
            let page = s
                .read_text(0, 40_000)
                .await
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert!(
                page.text.starts_with("# A page too large to walk"),
                "{kind}"
            );
            if kind == "text" {
                let last = s
                    .read_text(page.total_bytes.saturating_sub(200), 40_000)
                    .await
                    .unwrap();
                assert!(last.text.contains("is not read"), "{}", last.text);
            }
        }
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_element_made_to_be_clicked_gets_a_ref() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("clickable.html"), WaitUntil::Load)
            .await
            .unwrap();
        let text = snap(&s).await.text;
        let line = text
            .lines()
            .find(|l| l.contains("[cursor=pointer]"))
            .unwrap_or_else(|| panic!("no clickable line in:\n{text}"));
        assert!(
            line.contains(" generic")
                && crate::ref_on(line).is_some()
                && line.contains("Open the menu"),
            "{line}"
        );
        // One line: the card's spans and the link's text are not clickable roots.
        assert_eq!(text.matches("[cursor=pointer]").count(), 1, "{text}");
        let interactive = s
            .snapshot(&SnapshotOptions {
                interactive_only: true,
                ..SnapshotOptions::default()
            })
            .await
            .unwrap()
            .text;
        assert!(interactive.contains("[cursor=pointer]"), "{interactive}");
        s.click(&ref_of(&text, "[cursor=pointer]"), &ClickOptions::default())
            .await
            .unwrap();
        assert!(snap(&s).await.text.contains("menu opened"));
        // An onclick attribute without a pointer also makes one.
        let text = snap(&s).await.text;
        let line = text
            .lines()
            .find(|l| l.contains("[onclick]"))
            .unwrap_or_else(|| panic!("no onclick line in:\n{text}"));
        assert!(line.contains("Tab two"), "{line}");
        assert_eq!(text.matches("[onclick]").count(), 1, "{text}");
        s.click(&ref_of(&text, "[onclick]"), &ClickOptions::default())
            .await
            .unwrap();
        assert!(snap(&s).await.text.contains("tab two shown"));
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boxes_place_refs_in_the_top_viewport_and_depth_cuts_the_tree() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("frames.html"), WaitUntil::Load)
            .await
            .unwrap();
        // Frames load after the top document: wait until the framed button is in.
        for _ in 0..100 {
            if snap(&s).await.text.contains("button \"Inner button\"") {
                break;
            }
            s.wait_for(
                &airlock_browser::WaitCondition::Time(std::time::Duration::from_millis(50)),
                None,
            )
            .await
            .unwrap();
        }
        let options = SnapshotOptions {
            boxes: true,
            ..SnapshotOptions::default()
        };
        let text = s.snapshot(&options).await.unwrap().text;
        let box_of = |needle: &str| -> [f64; 4] {
            let line = text
                .lines()
                .find(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("no {needle} in:\n{text}"));
            let start = line
                .find("[box=")
                .unwrap_or_else(|| panic!("no box: {line}"))
                + 5;
            let end = start + line[start..].find(']').unwrap();
            let v: Vec<f64> = line[start..end]
                .split(',')
                .map(|n| n.parse().unwrap())
                .collect();
            [v[0], v[1], v[2], v[3]]
        };
        // Each box is where the element really is: resolve's bounds, in the top
        // viewport, for the top frame's button and the framed one.
        for (needle, target) in [
            ("button \"Top button\"", role("button", "Top button")),
            ("button \"Inner", ref_of(&text, "button \"Inner")),
        ] {
            let b = box_of(needle);
            let r = s.resolve(&target).await.unwrap().bounds;
            for (got, want) in b.iter().zip([r.x, r.y, r.width, r.height]) {
                assert!((got - want).abs() <= 1.0, "{needle}: {b:?} vs {r:?}");
            }
        }
        // Lines without a ref get no box; a plain snapshot has none.
        assert!(
            !text
                .lines()
                .any(|l| l.contains("[box=") && crate::ref_on(l).is_none())
        );
        assert!(!snap(&s).await.text.contains("[box="));
        // Depth 1: the top level only, cut subtrees counted.
        let top = s
            .snapshot(&SnapshotOptions {
                depth: Some(1),
                ..SnapshotOptions::default()
            })
            .await
            .unwrap()
            .text;
        assert!(top.lines().all(|l| l.starts_with("- ")), "{top}");
        assert!(top.contains("[+"), "{top}");
        s.close().await;
    })
    .await;
}
