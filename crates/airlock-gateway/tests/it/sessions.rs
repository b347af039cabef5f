//! Browser sessions as leases: opened lazily, closed with their agent, expired when
//! idle, warm ones fresh, crashed tabs and hosts replaced, budgets and operator holds kept.

use super::*;
use airlock_gateway::{Interaction, Navigation, Reading, SessionCall, Window};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_sessions_open_lazily_and_close_with_their_agent() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
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
            out.text.contains(&format!("<page {nonce}>")),
            "{}",
            out.text
        );
        assert!(out.text.contains(&format!("</page {nonce}>")));
        // The page's words sit inside the fence, Airlock's outside it.
        let inside = out.text.split("<page ").nth(1).unwrap();
        assert!(inside.contains("heading \"Sign in\""));
        assert!(out.text.starts_with("page: \"Sign in\""), "{}", out.text);
        // A snapshot of the page the agent was just told about skips the page line;
        // once the page is another, it says it again.
        let snap = ToolCall::Read(Reading::Snapshot(
            airlock_browser::SnapshotOptions::default(),
        ));
        let out = agent.call(snap.clone()).await;
        assert!(
            out.text.starts_with(&format!("<page {nonce}>\n")),
            "{}",
            out.text
        );
        let out = agent.call(navigate(h.site.url("article.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(ToolCall::Navigate(Navigation::Back)).await;
        assert!(out.text.contains("page: \"Sign in\""), "{}", out.text);
        let out = agent.call(snap).await;
        assert!(
            out.text.starts_with(&format!("<page {nonce}>\n")),
            "{}",
            out.text
        );
        let out = agent.call(ToolCall::Session(SessionCall::Close)).await;
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
async fn chromiums_own_autofill_queries_are_off() {
    // Full Chromium (the headless shell has no autofill) asks Google about every form
    // it sees, through the session's proxy: page data leaving, and refusals in the
    // agent's results. There is no event for "would have asked", so the test waits.
    let full_chromium = airlock_config::BrowserConfig {
        chrome: Some("/usr/bin/chromium".into()),
        ..Default::default()
    };
    airlock_test_support::with_browser_config(full_chromium, |h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let waited = agent
            .call(ToolCall::Read(Reading::WaitFor {
                condition: airlock_browser::WaitCondition::Time(Duration::from_millis(1500)),
                timeout: None,
            }))
            .await;
        for text in [&out.text, &waited.text] {
            assert!(!text.contains("blocked"), "{text}");
        }
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_sessions_are_leases_with_an_id_and_an_owner() {
    with_browser(|h| async move {
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                idle_ttl: Duration::from_millis(300),
                ..config(&h)
            },
        );
        assert!(gateway.leases().is_empty());
        let agent =
            gateway.agent_session_as(gateway.principal(Some("caller-digest")), Surface::Mcp);
        agent.call(navigate(h.site.url("login.html"))).await;
        let leases = gateway.leases();
        assert_eq!(leases.len(), 1, "{leases:?}");
        let lease = &leases[0];
        assert_eq!(lease.id.as_str().len(), 32, "128 random bits in hex");
        assert!(lease.id.as_str().bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(lease.owner.tenant, "default");
        assert_eq!(lease.owner.key.as_deref(), Some("caller-digest"));
        assert_eq!(lease.busy, 0);
        // Closing ends the lease; a second agent's lease has another id.
        agent.call(ToolCall::Session(SessionCall::Close)).await;
        assert!(gateway.leases().is_empty());
        let other = gateway.agent_session();
        other.call(navigate(h.site.url("login.html"))).await;
        assert_ne!(gateway.leases()[0].id, lease.id);
        drop(other);
        assert!(
            eventually!(gateway.leases().is_empty()),
            "a dropped agent's lease ends"
        );

        // A stateless caller's agent is forgotten once its lease expired and it went
        // unused for the TTL: callers no longer accumulate.
        let caller = gateway.principal(Some("caller-digest"));
        let named = |key: &str| gateway.caller_agent(&caller, key, Surface::Shell);
        let first = named("shell-caller");
        first
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert!(Arc::ptr_eq(&first, &named("shell-caller")));
        // Another caller's same name is another agent.
        let stranger = gateway.principal(Some("another-digest"));
        assert!(!Arc::ptr_eq(
            &first,
            &gateway.caller_agent(&stranger, "shell-caller", Surface::Shell)
        ));
        assert!(
            eventually!(!Arc::ptr_eq(&first, &named("shell-caller"))),
            "an idle stateless caller was kept for ever"
        );
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_expires_once_then_starts_fresh() {
    with_browser(|h| async move {
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                idle_ttl: Duration::from_millis(300),
                ..config(&h)
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
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_sessions_are_fresh_and_replaced_and_dead_ones_passed_over() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, warm_config(&h));
        // Straight away: the first session waits for the warm-up under way rather
        // than opening cold beside it.
        let first = gateway.agent_session();
        let out = first
            .call(navigate(h.site.url("cookie.html?set=first")))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("cookie=[flavor=first]"), "{}", out.text);
        assert_eq!(gateway.warm_sessions().1, 1, "the session was opened cold");
        // The refill keeps out of the way of calls: none starts while one runs.
        let busy = first.call(ToolCall::Read(Reading::WaitFor {
            condition: airlock_browser::WaitCondition::Time(Duration::from_millis(800)),
            timeout: None,
        }));
        tokio::pin!(busy);
        let mut samples = 0;
        loop {
            tokio::select! {
                out = &mut busy => {
                    assert_eq!(out.error, None, "{}", out.text);
                    break;
                }
                () = tokio::time::sleep(Duration::from_millis(20)) => {
                    assert_eq!(gateway.warm_sessions().0, 0, "a warm-up ran beside a call");
                    samples += 1;
                }
            }
        }
        assert!(samples > 10);
        // Once quiet, the pool refills, and the next warm session shares nothing with
        // the first.
        assert!(
            eventually!(gateway.warm_sessions().0 == 1),
            "the pool was not refilled"
        );
        let second = gateway.agent_session();
        let out = second.call(navigate(h.site.url("cookie.html"))).await;
        assert!(out.text.contains("cookie=[] storage=[]"), "{}", out.text);
        assert_eq!(gateway.warm_sessions().1, 2);

        // Process isolation never takes a warm session (credentials neither: see
        // credentials.rs).
        assert!(eventually!(gateway.warm_sessions().0 == 1));
        let dedicated = gateway.agent_session();
        let out = dedicated
            .call(ToolCall::Session(SessionCall::Open(
                airlock_gateway::OpenOptions {
                    isolation: Some(airlock_config::Isolation::Process),
                    ..Default::default()
                },
            )))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(gateway.warm_sessions(), (1, 2));
        dedicated.call(ToolCall::Session(SessionCall::Close)).await;

        // A warm session that died with its Chromium is passed over, not handed out.
        assert!(eventually!(gateway.warm_sessions().0 == 1));
        let pid = h.browsers.shared_pid().await.unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        // Once the first session reports the crash, the pipe's end has been seen.
        assert!(eventually!(
            first
                .call(ToolCall::Read(
                    Reading::Snapshot(SnapshotOptions::default())
                ))
                .await
                .error
                == Some(ErrorCode::BrowserCrashed)
        ));
        // The crash's own report says what comes next, and it comes: a fresh session.
        let out = first.call(navigate(h.site.url("cookie.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let third = gateway.agent_session();
        let out = third.call(navigate(h.site.url("cookie.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("cookie=[] storage=[]"), "{}", out.text);
        assert_eq!(
            gateway.warm_sessions().1,
            2,
            "a dead warm session was handed out"
        );
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_longer_than_the_idle_ttl_is_not_cut_off() {
    with_browser(|h| async move {
        // The page takes 800 ms; the TTL is 200 ms. The session must survive the call.
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                idle_ttl: Duration::from_millis(200),
                ..config(&h)
            },
        );
        let agent = gateway.agent_session();
        let started = tokio::time::Instant::now();
        let out = agent.call(navigate(h.site.url("slow?ms=800"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("Finally loaded"), "{}", out.text);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
        gateway.shutdown().await;
    })
    .await;
}

/// PIDs of the renderer processes of the Chromiums `h` launched.
fn renderers(h: &Harness) -> Vec<i32> {
    airlock_test_support::processes_in_groups(&h.browsers.launched_pids())
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains("--type=renderer"))
                .unwrap_or(false)
        })
        .map(|pid| pid as i32)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_page_is_replaced_by_a_blank_tab_and_the_session_goes_on() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        let out = agent
            .call(navigate(h.site.url("cookie.html?set=kept")))
            .await;
        assert!(out.text.contains("cookie=[flavor=kept]"), "{}", out.text);
        // A renderer killed as the out-of-memory killer would.
        let renderers = renderers(&h);
        assert!(!renderers.is_empty(), "no renderer found");
        for pid in renderers {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let mut out = agent
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        // The crash event may trail the kill by a moment.
        for _ in 0..100 {
            if out.error.is_some() {
                break;
            }
            out = agent
                .call(ToolCall::Read(
                    Reading::Snapshot(SnapshotOptions::default()),
                ))
                .await;
        }
        assert_eq!(out.error, Some(ErrorCode::BrowserCrashed), "{}", out.text);
        assert!(out.text.contains("replaced by a blank one"), "{}", out.text);
        // The next call works, in the same session: its cookie is still there.
        let out = agent.call(navigate(h.site.url("cookie.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("cookie=[flavor=kept]"), "{}", out.text);
        let tabs = agent
            .call(ToolCall::Window(Window::Tabs(TabAction::List)))
            .await;
        assert_eq!(tabs.text.lines().count(), 1, "{}", tabs.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_replaced_by_a_javascript_url_leaves_the_session_usable() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        for link in ["Replace", "Rewrite"] {
            agent.call(navigate(h.site.url("jslink.html"))).await;
            let out = agent
                .call(ToolCall::Interact(Interaction::Click {
                    target: airlock_browser::Target::Role {
                        role: "link".into(),
                        name: Some(link.into()),
                        index: None,
                    },
                    options: Default::default(),
                }))
                .await;
            assert_eq!(out.error, None, "{}", out.text);
            for call in [
                ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())),
                ToolCall::Read(Reading::Text {
                    format: airlock_gateway::ReadFormat::Text,
                    offset: 0,
                }),
                navigate(h.site.url("login.html")),
                ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())),
            ] {
                let out = agent.call(call.clone()).await;
                assert_eq!(out.error, None, "{call:?}: {}", out.text);
                assert!(!out.text.contains("No frame"), "{}", out.text);
            }
        }
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_allocates_without_end_loses_its_tab_not_the_host() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("memory.html"))).await;
        // The renderer's JavaScript heap is bounded: it runs out and crashes.
        let out = click_until_crashed(&agent, "Eat memory", |_| {}).await;
        assert_eq!(out.error, Some(ErrorCode::BrowserCrashed), "{}", out.text);
        assert!(out.text.contains("replaced by a blank one"), "{}", out.text);
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_fills_native_memory_loses_its_tab_and_the_session_beside_it_goes_on() {
    // Canvas pixels live outside the JavaScript heap, so only the memory cgroup
    // Chromium runs in bounds them. The page stops at 3 GiB: without the bound it
    // ends painted and the test fails.
    let browser = BrowserConfig {
        memory_limit: Some(768 << 20),
        ..BrowserConfig::default()
    };
    with_browser_config(browser, |h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let bystander = gateway.agent_session();
        let out = bystander.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let cgroups = h.browsers.launched_cgroups();
        assert_eq!(
            cgroups.len(),
            1,
            "the shared Chromium runs in a memory cgroup"
        );

        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("canvas.html"))).await;
        let out = click_until_crashed(&agent, "Paint", |out| {
            assert!(!out.text.contains("painted"), "{}", out.text);
        })
        .await;
        assert_eq!(out.error, Some(ErrorCode::BrowserCrashed), "{}", out.text);
        assert!(out.text.contains("replaced by a blank one"), "{}", out.text);

        // The session beside it, in the same Chromium, lost nothing.
        let out = bystander
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("Sign in"), "{}", out.text);
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_can_set_its_own_action_budget() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        // The page never stops changing, so only the budget ends the search.
        agent.call(navigate(h.site.url("busy.html"))).await;
        let click = click_button("Never there");
        let out = tokio::time::timeout(
            Duration::from_secs(5),
            agent.call(ToolCall::Budgeted(
                Duration::from_millis(300),
                Box::new(click),
            )),
        )
        .await
        .expect("the call's own 300 ms budget, not the server's 10 s, ended it");
        assert_eq!(out.error, Some(ErrorCode::ElementNotFound), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_keeps_its_budget_lifetime_and_operator_hold() {
    with_browser(|h| async move {
        // The budget: actions count, looking does not.
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                action_budget: Some(2),
                ..config(&h)
            },
        );
        let agent = gateway.agent_session();
        let look = || ToolCall::Read(Reading::Snapshot(SnapshotOptions::default()));
        for call in [navigate(h.site.url("login.html")), look(), look()] {
            let out = agent.call(call).await;
            assert_eq!(out.error, None, "{}", out.text);
        }
        let out = agent.call(navigate(h.site.url("page2.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, Some(ErrorCode::BudgetExhausted), "{}", out.text);
        assert!(out.text.contains("budget of 2 actions"), "{}", out.text);
        assert_eq!(
            agent.call(look()).await.error,
            None,
            "looking is not an action"
        );
        let lease = gateway.leases().remove(0);
        assert_eq!(lease.actions, 2);
        // A new session gets a fresh budget.
        agent.call(ToolCall::Session(SessionCall::Close)).await;
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);

        // The hold: refused at once while an operator holds the page, then back.
        let id = gateway.leases()[0].id.clone();
        gateway.hold(&id, true).unwrap();
        assert!(gateway.leases()[0].held);
        let out = agent.call(look()).await;
        assert_eq!(out.error, Some(ErrorCode::SessionHeld), "{}", out.text);
        assert!(ErrorCode::SessionHeld.retryable());
        gateway.hold(&id, false).unwrap();
        assert_eq!(agent.call(look()).await.error, None);
        gateway.shutdown().await;

        // The lifetime: a busy session ends all the same, said once.
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                max_lifetime: Some(Duration::from_millis(400)),
                ..config(&h)
            },
        );
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let mut ended: Option<(ErrorCode, String)>;
        assert!(
            eventually!({
                let out = agent.call(look()).await;
                ended = out.error.map(|code| (code, out.text));
                ended.is_some()
            }),
            "the session outlived its lifetime"
        );
        let (code, text) = ended.unwrap();
        assert_eq!(code, ErrorCode::SessionExpired, "{text}");
        assert!(text.contains("maximum lifetime"), "{text}");
        assert!(gateway.leases().is_empty());
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "a fresh session follows: {}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

/// A console hold ends when its operator is gone: an admin may release anyone's, a
/// login that ends releases its own, and one nobody tends for `hold_idle` goes back
/// to the agent by itself. Meanwhile the agent is refused (`session_held`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_nobody_tends_goes_back_to_the_agent() {
    with_browser(|h| async move {
        let hold_idle = Duration::from_millis(400);
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                hold_idle,
                ..config(&h)
            },
        );
        let agent = gateway.agent_session();
        let look = || ToolCall::Read(Reading::Snapshot(SnapshotOptions::default()));
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let id = gateway.leases()[0].id.to_string();

        // Released by another admin of the tenant; the agent is told once.
        gateway
            .operators()
            .take_over("default", &id, "op-a")
            .await
            .unwrap();
        assert_eq!(agent.call(look()).await.error, Some(ErrorCode::SessionHeld));
        let e = gateway
            .operators()
            .take_over("default", &id, "op-b")
            .await
            .unwrap_err();
        assert!(e.to_string().contains("op-a holds this session"), "{e}");
        assert_eq!(
            gateway
                .operators()
                .release_hold("default", &id, "op-b")
                .await
                .unwrap(),
            "op-a"
        );
        let out = agent.call(look()).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("handed it back"), "{}", out.text);
        assert!(
            gateway
                .operators()
                .release_hold("default", &id, "op-b")
                .await
                .is_err()
        );
        assert!(
            gateway
                .operators()
                .release_hold("other-tenant", &id, "op-b")
                .await
                .is_err(),
            "another tenant's admin releases nothing"
        );

        // A login that ended releases what it held, and only that.
        gateway
            .operators()
            .take_over("default", &id, "op-a")
            .await
            .unwrap();
        assert_eq!(
            gateway
                .operators()
                .release_holds_of("op-b", "console login ended")
                .await,
            0
        );
        assert_eq!(agent.call(look()).await.error, Some(ErrorCode::SessionHeld));
        assert_eq!(
            gateway
                .operators()
                .release_holds_of("op-a", "console login ended")
                .await,
            1
        );
        assert_eq!(agent.call(look()).await.error, None);

        // Tended (watched, typed into), a hold lasts past `hold_idle`; untended, it
        // goes back by itself.
        gateway
            .operators()
            .take_over("default", &id, "op-a")
            .await
            .unwrap();
        let tended_until = tokio::time::Instant::now() + hold_idle * 3;
        while tokio::time::Instant::now() < tended_until {
            gateway.operators().tend_hold("default", &id, "op-a");
            tokio::time::sleep(hold_idle / 4).await;
        }
        assert_eq!(
            gateway.leases()[0].controller.as_deref(),
            Some("op-a"),
            "a tended hold stays"
        );
        assert_eq!(agent.call(look()).await.error, Some(ErrorCode::SessionHeld));
        assert!(
            eventually!(gateway.leases()[0].controller.is_none()),
            "an untended hold was never released"
        );
        let out = agent.call(look()).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("handed it back"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_as_a_phone_looks_like_one_to_pages() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        let open = |device: &str| {
            ToolCall::Session(SessionCall::Open(airlock_gateway::OpenOptions {
                device: Some(device.to_owned()),
                ..Default::default()
            }))
        };
        let out = agent.call(open("nokia-3310")).await;
        assert_eq!(out.error, Some(ErrorCode::InvalidArgument), "{}", out.text);
        assert!(out.text.contains("iphone-15, pixel-8"), "{}", out.text);
        let out = agent.call(open("pixel-8")).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(navigate(h.site.url("device.html"))).await;
        assert!(
            out.text
                .contains("width 412 height 915 dpr 2.625 touch 5 coarse true"),
            "{}",
            out.text
        );
        assert!(out.text.contains("Android 14; Pixel 8"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}
