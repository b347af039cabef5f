//! The call pipeline's stages seen from outside: results as asked, observers, hints,
//! resolved targets, audit checkpoints, evaluate, and page text shown as it is.

use super::*;
use airlock_gateway::{Interaction, Navigation, Reading, Window};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_navigation_shows_as_much_of_the_new_page_as_asked() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        let go = |view| {
            ToolCall::Navigate(Navigation::To {
                url: h.site.url("article.html"),
                wait_until: WaitUntil::Load,
                snapshot: view,
            })
        };
        let full = agent.call(go(airlock_gateway::PageView::Full)).await;
        let interactive = agent.call(go(airlock_gateway::PageView::Interactive)).await;
        let none = agent.call(go(airlock_gateway::PageView::None)).await;
        for out in [&full, &interactive, &none] {
            assert_eq!(out.error, None, "{}", out.text);
            assert!(out.text.contains("article.html"), "{}", out.text);
        }
        assert!(full.text.contains("paragraph"), "{}", full.text);
        assert!(
            !interactive.text.contains("paragraph"),
            "{}",
            interactive.text
        );
        assert!(interactive.text.len() < full.text.len());
        assert!(!none.text.contains("<page "), "{}", none.text);
        // The next action's changes start from the new page.
        let snap = agent
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert!(snap.text.contains("paragraph"), "{}", snap.text);

        // A large page: the navigation shows its first 16,000 bytes and where
        // browser_snapshot goes on; browser_snapshot itself keeps its 40,000.
        let nav = agent.call(navigate(h.site.url("admin?rows=2000"))).await;
        assert_eq!(nav.error, None, "{}", nav.text);
        let fenced = |text: &str| {
            let start = text.find("<page ").expect("fenced page");
            text[start..].len()
        };
        assert!(fenced(&nav.text) <= 16_000 + 400, "{}", fenced(&nav.text));
        let next: usize = nav
            .text
            .split("offset=")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no offset to go on from: {}", nav.text));
        let last_row = nav
            .text
            .lines()
            .filter_map(|l| l.split("user").nth(1))
            .filter_map(|rest| {
                rest.split(|c: char| !c.is_ascii_digit())
                    .next()?
                    .parse::<u32>()
                    .ok()
            })
            .max()
            .expect("rows in the navigation's snapshot");
        let more = agent
            .call(ToolCall::Read(Reading::Snapshot(SnapshotOptions {
                offset: next,
                ..SnapshotOptions::default()
            })))
            .await;
        assert!(
            more.text.contains(&format!("user{}", last_row + 1)),
            "the next page starts after row {last_row}: {}",
            &more.text[..more.text.len().min(600)]
        );
        let whole = agent
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert!(fenced(&whole.text) > 30_000, "{}", fenced(&whole.text));
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_may_look_but_not_act() {
    with_browser(|h| async move {
        let observer = GatewayConfig {
            credentials: airlock_gateway::CredentialSource {
                role: airlock_core::Role::Observe,
                ..Default::default()
            },
            ..config(&h)
        };
        let gateway = Gateway::new(h.host().await, observer);
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        assert_eq!(
            out.message.as_deref(),
            Some("`browser_navigate` needs the `act` role; this caller has `observe`")
        );
        let out = agent
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

// What an observer saw of one call.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    tool: &'static str,
    caller: String,
    session: Option<String>,
    error: Option<ErrorCode>,
}

#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<Seen>>);

impl CallObserver for Recorder {
    fn call_finished(&self, record: &CallRecord<'_>) {
        self.0.lock().unwrap().push(Seen {
            tool: record.context.tool,
            caller: record.context.principal.caller(),
            session: record.context.session.as_ref().map(|s| s.to_string()),
            error: record.error,
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_is_observed_once_with_its_caller_session_and_outcome() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let recorder = Arc::new(Recorder::default());
        gateway.observe(recorder.clone());
        let agent =
            gateway.agent_session_as(gateway.principal(Some("caller-digest")), Surface::Mcp);
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        // Refused at admission, before entering the lease: recorded with the session
        // that was open.
        let out = agent.call(navigate("file:///etc/passwd".to_owned())).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        let lease = gateway.leases()[0].id.to_string();
        let seen = recorder.0.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![
                Seen {
                    tool: "browser_navigate",
                    caller: "default/caller-digest".to_owned(),
                    session: Some(lease.clone()),
                    error: None,
                },
                Seen {
                    tool: "browser_navigate",
                    caller: "default/caller-digest".to_owned(),
                    session: Some(lease),
                    error: Some(ErrorCode::PolicyDenied),
                },
            ]
        );
        gateway.shutdown().await;
    })
    .await;
}

/// An action's result carries how long its stages took (for the log line and the
/// bench, never for the agent); a read, which has no stages, carries none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_says_how_long_each_of_its_stages_took() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("login.html"))).await;
        let read = agent
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert_eq!(read.stages, None);
        let out = agent
            .call(ToolCall::Interact(Interaction::Click {
                target: Target::Role {
                    role: "checkbox".into(),
                    name: Some("Remember me".into()),
                    index: None,
                },
                options: Default::default(),
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let stages = out.stages.expect("a click's stages");
        // Three mouse events are sent and a frame is waited for: neither takes no time.
        assert!(stages.dispatch_us > 0 && stages.settle_us > 0, "{stages:?}");
        assert!(stages.diff_us > 0, "{stages:?}");
        assert!(!out.text.contains("_us"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hint_names_only_tools_the_callers_surface_has() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let typing = || {
            ToolCall::Interact(Interaction::Type {
                target: airlock_gateway::action::Target::Selector("#user".to_owned()),
                text: "{{secret:nowhere.password}}".to_owned(),
                clear_first: true,
                submit: false,
            })
        };
        let mcp = gateway.agent_session_as(gateway.principal(None), Surface::Mcp);
        let shell = gateway.agent_session_as(gateway.principal(None), Surface::Shell);
        for agent in [&mcp, &shell] {
            agent.call(navigate(h.site.url("login.html"))).await;
        }
        let out = mcp.call(typing()).await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        assert!(
            out.text
                .contains("browser_session_open {credentials: [\"nowhere\"]}"),
            "{}",
            out.text
        );
        let out = shell.call(typing()).await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        assert!(out.text.contains("`nowhere` is not loaded"), "{}", out.text);
        assert!(!out.text.contains("browser_"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

// Records targets: the stage resolves them only for an observer that asks.
#[derive(Default)]
struct TargetRecorder(std::sync::Mutex<Vec<Option<airlock_gateway::action::Resolved>>>);

impl CallObserver for TargetRecorder {
    fn call_finished(&self, record: &CallRecord<'_>) {
        self.0.lock().unwrap().push(record.context.target.clone());
    }

    fn wants_targets(&self) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pipeline_resolves_the_target_and_acts_on_that_element() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let recorder = Arc::new(TargetRecorder::default());
        gateway.observe(recorder.clone());
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("resolve.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(click_button("Delete account")).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("deleted 1"), "{}", out.text);
        let seen = recorder.0.lock().unwrap().clone();
        assert_eq!(seen.len(), 2);
        assert!(seen[0].is_none(), "a navigation has no element target");
        let target = seen[1].as_ref().expect("the click's target was resolved");
        assert_eq!(
            (target.role.as_str(), target.name.as_str()),
            ("button", "Delete account")
        );
        assert_eq!(target.frame_url, h.site.url("resolve.html"));
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_signs_audit_checkpoints_as_the_log_grows_and_at_shutdown() {
    use airlock_audit::{Checkpoint, SigningKey};

    with_browser(|h| async move {
        let dir = tempfile::tempdir().unwrap();
        let store = airlock_vault::Store::open_sqlite(&dir.path().join("airlock.db"))
            .await
            .unwrap();
        let key = SigningKey::from_bytes(&[5u8; 32]);
        let path = dir.path().join("audit.checkpoints");
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                checkpoints: Some(airlock_gateway::Checkpoints {
                    name: "airlock.test/audit".to_owned(),
                    key: Arc::new(key.clone()),
                    path: path.clone(),
                    every: 2,
                    publish_dir: None,
                }),
                ..config(&h).store(store.clone())
            },
        );
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("login.html"))).await;
        for _ in 0..5 {
            agent
                .call(ToolCall::Read(
                    Reading::Snapshot(SnapshotOptions::default()),
                ))
                .await;
        }
        gateway.shutdown().await;
        let notes = airlock_audit::split_notes(&std::fs::read_to_string(&path).unwrap());
        let checkpoints: Vec<Checkpoint> = notes
            .iter()
            .map(|n| Checkpoint::open(n, "airlock.test/audit", &key.verifying_key()).unwrap())
            .collect();
        // Nine events: the session's opening and closing, the navigation's intent and
        // result, five snapshots. A checkpoint every 2 or so (session events are
        // written beside the calls'), and the rest at shutdown.
        let sizes: Vec<u64> = checkpoints.iter().map(|c| c.size).collect();
        assert_eq!(sizes.last(), Some(&9), "{sizes:?}");
        assert!(
            sizes.len() >= 4 && sizes.windows(2).all(|w| w[0] < w[1] && w[1] - w[0] <= 3),
            "{sizes:?}"
        );
        let rows: Vec<_> = store
            .audit_events(0, 100)
            .await
            .unwrap()
            .iter()
            .map(|r| r.row())
            .collect();
        let verified = airlock_audit::verify(&rows, &checkpoints).unwrap();
        assert_eq!(verified.events, 9);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_is_off_unless_turned_on_then_bounded_audited_and_fenced() {
    with_browser(|h| async move {
        let eval = |function: &str, target: Option<Target>| {
            ToolCall::Read(Reading::Evaluate {
                function: function.to_owned(),
                target,
            })
        };
        // Off (the default): refused on every surface, nothing runs.
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("login.html"))).await;
        let out = agent
            .call(eval("() => { document.title = 'ran'; return 1 }", None))
            .await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        assert!(out.text.contains("[tools] evaluate = true"), "{}", out.text);
        let out = agent
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert!(out.text.contains("\"Sign in\""), "{}", out.text);
        gateway.shutdown().await;

        let store = airlock_store::Store::open_in_memory().await.unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                evaluate: true,
                ..config(&h).store(store.clone())
            },
        );
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("login.html"))).await;
        // Runs in the page's own world: the page's globals are there.
        let out = agent
            .call(eval(
                "() => ({ title: document.title, n: 6 * 7, own: typeof window.__airlock })",
                None,
            ))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text
                .contains(r#"{"n":42,"own":"undefined","title":"Sign in"}"#),
            "{}",
            out.text
        );
        assert!(out.text.contains("<page "), "fenced: {}", out.text);
        // With a target, the function gets its element.
        let out = agent
            .call(eval(
                "(el) => el.tagName + ' ' + el.textContent.trim()",
                Some(Target::Role {
                    role: "button".into(),
                    name: Some("Sign in".into()),
                    index: None,
                }),
            ))
            .await;
        assert!(out.text.contains("\"BUTTON Sign in\""), "{}", out.text);
        // A throw says so; a placeholder is refused before anything runs.
        let out = agent
            .call(eval("() => { throw new Error('nope') }", None))
            .await;
        assert_eq!(out.error, Some(ErrorCode::InvalidArgument), "{}", out.text);
        assert!(
            out.text.contains("the function threw: Error: nope"),
            "{}",
            out.text
        );
        let out = agent
            .call(eval("() => '{{secret:app.password}}'", None))
            .await;
        assert_eq!(
            out.error,
            Some(ErrorCode::SecretOriginMismatch),
            "{}",
            out.text
        );
        // A result is cut; an endless loop is stopped and the session goes on.
        let out = agent.call(eval("() => 'x'.repeat(50000)", None)).await;
        assert!(
            out.text.contains(&"x".repeat(9_000)) && !out.text.contains(&"x".repeat(10_001)),
            "cut"
        );
        let out = agent
            .call(ToolCall::Budgeted(
                Duration::from_millis(500),
                Box::new(eval("() => { for (;;) {} }", None)),
            ))
            .await;
        assert_eq!(out.error, Some(ErrorCode::Timeout), "{}", out.text);
        let out = agent
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        gateway.shutdown().await;
        // Each call is on the record with its source.
        let events = store.audit_events(0, 10_000).await.unwrap();
        assert!(
            events.iter().any(|e| e.kind == "tool_call"
                && e.body.contains("browser_evaluate")
                && e.body.contains("6 * 7")),
            "no evaluate call with its source on the record"
        );
    })
    .await;
}

/// A page's bidirectional overrides and control characters reach the agent written
/// out (`\u{202e}`), never as the characters themselves, in every result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_text_that_reads_other_than_it_is_is_shown_as_it_is() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        let mut seen = agent.call(navigate(h.site.url("bidi.html"))).await.text;
        seen.push_str(
            &agent
                .call(ToolCall::Read(
                    Reading::Snapshot(SnapshotOptions::default()),
                ))
                .await
                .text,
        );
        seen.push_str(
            &agent
                .call(ToolCall::Window(Window::Tabs(
                    airlock_gateway::TabAction::List,
                )))
                .await
                .text,
        );
        for raw in ['\u{202e}', '\u{2067}', '\u{2069}', '\u{9b}'] {
            assert!(!seen.contains(raw), "{raw:?} reached the agent: {seen:?}");
        }
        assert!(seen.contains("Invoice \\u{202e}fdp.exe"), "{seen}");
        assert!(seen.contains("Pay \\u{2067}now\\u{2069}"), "{seen}");
        gateway.shutdown().await;
    })
    .await;
}

/// A log that goes quiet is checkpointed within seconds, not at the next hundredth
/// event: what could be cut off its tail unseen is a few seconds' worth.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_audit_log_gets_a_checkpoint_over_its_tail_within_seconds() {
    use airlock_audit::{Checkpoint, SigningKey};

    with_browser(|h| async move {
        let dir = tempfile::tempdir().unwrap();
        let store = airlock_vault::Store::open_sqlite(&dir.path().join("airlock.db"))
            .await
            .unwrap();
        let key = SigningKey::from_bytes(&[6u8; 32]);
        let path = dir.path().join("audit.checkpoints");
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                checkpoints: Some(airlock_gateway::Checkpoints {
                    name: "airlock.test/audit".to_owned(),
                    key: Arc::new(key.clone()),
                    path: path.clone(),
                    every: 1_000,
                    publish_dir: None,
                }),
                ..config(&h).store(store.clone())
            },
        );
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("login.html"))).await;
        let written = store.audit_tail(1).await.unwrap()[0].seq;
        let covered = || {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            airlock_audit::split_notes(&text)
                .iter()
                .filter_map(|n| {
                    Checkpoint::open(n, "airlock.test/audit", &key.verifying_key()).ok()
                })
                .map(|c| c.size)
                .max()
                .unwrap_or(0)
        };
        // The gateway is still running: no shutdown signed this.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while covered() < written && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(covered(), written);
        gateway.shutdown().await;
    })
    .await;
}
