//! Agent sessions over real browser sessions: lazy open, explicit and implicit close,
//! idle expiry, and results that fence page content.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use airlock_browser::{SnapshotOptions, Target, WaitUntil};
use airlock_config::BrowserConfig;
use airlock_core::ErrorCode;
use airlock_gateway::{
    CallObserver, CallRecord, Gateway, GatewayConfig, Surface, TabAction, ToolCall,
};
use airlock_policy::{Policy, PolicyConfig};
use airlock_test_support::{Harness, with_browser, with_browser_config};

mod approvals;
mod credentials;
mod leaks;
mod leasing;
mod roles;
mod view;

/// The policy tests run under: public addresses plus the fixture site's one port.
fn fixture_policy(h: &Harness) -> Policy {
    Policy::from_config(&PolicyConfig {
        allow_private: vec![format!("127.0.0.1:{}", h.site.a.port())],
        ..PolicyConfig::default()
    })
    .unwrap()
}

fn config(h: &Harness) -> GatewayConfig {
    GatewayConfig {
        policy: fixture_policy(h),
        ..GatewayConfig::default()
    }
}

/// `config`, with one pre-warmed session kept ready.
fn warm_config(h: &Harness) -> GatewayConfig {
    GatewayConfig {
        warm_sessions: 1,
        ..config(h)
    }
}

pub(crate) fn navigate(url: String) -> ToolCall {
    ToolCall::Navigate {
        url,
        wait_until: WaitUntil::Load,
        snapshot: airlock_gateway::PageView::Full,
    }
}

/// A click on the button named `name`.
fn click_button(name: &str) -> ToolCall {
    ToolCall::Click {
        target: airlock_browser::Target::Role {
            role: "button".into(),
            name: Some(name.into()),
            index: None,
        },
        options: Default::default(),
    }
}

/// Clicks the button named `name` on a page that will crash its renderer, then reads
/// until a call reports the crash; every output before it must pass `before`.
async fn click_until_crashed(
    agent: &airlock_gateway::AgentSession,
    name: &str,
    before: impl Fn(&airlock_gateway::ToolOutput),
) -> airlock_gateway::ToolOutput {
    let mut out = agent.call(click_button(name)).await;
    for _ in 0..100 {
        if out.error == Some(ErrorCode::BrowserCrashed) {
            break;
        }
        before(&out);
        out = agent
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
            .await;
    }
    out
}

/// Polls until `$cond` holds or 5 s pass (idle expiry and background close have no
/// event to await).
#[macro_export]
macro_rules! eventually {
    ($cond:expr) => {{
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            if $cond {
                break true;
            }
            if tokio::time::Instant::now() > deadline {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }};
}

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
        let snap = ToolCall::Snapshot(airlock_browser::SnapshotOptions::default());
        let out = agent.call(snap.clone()).await;
        assert!(
            out.text.starts_with(&format!("<page {nonce}>\n")),
            "{}",
            out.text
        );
        let out = agent.call(navigate(h.site.url("article.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(ToolCall::Back).await;
        assert!(out.text.contains("page: \"Sign in\""), "{}", out.text);
        let out = agent.call(snap).await;
        assert!(
            out.text.starts_with(&format!("<page {nonce}>\n")),
            "{}",
            out.text
        );
        let out = agent.call(ToolCall::SessionClose).await;
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
            .call(ToolCall::WaitFor {
                condition: airlock_browser::WaitCondition::Time(Duration::from_millis(1500)),
                timeout: None,
            })
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
        agent.call(ToolCall::SessionClose).await;
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
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
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
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
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
        let busy = first.call(ToolCall::WaitFor {
            condition: airlock_browser::WaitCondition::Time(Duration::from_millis(800)),
            timeout: None,
        });
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
            .call(ToolCall::SessionOpen(airlock_gateway::OpenOptions {
                isolation: Some(airlock_config::Isolation::Process),
                ..Default::default()
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(gateway.warm_sessions(), (1, 2));
        dedicated.call(ToolCall::SessionClose).await;

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
                .call(ToolCall::Snapshot(SnapshotOptions::default()))
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
async fn navigation_is_refused_before_chromium_sees_it() {
    with_browser(|h| async move {
        // Without an allow_private entry the fixture site on loopback is refused …
        let strict = Gateway::new(h.host().await, GatewayConfig::default());
        let agent = strict.agent_session();
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(
            out.text.starts_with("policy_denied: 127.0.0.1 is loopback"),
            "{}",
            out.text
        );
        let out = agent
            .call(ToolCall::Tabs(TabAction::New(Some(
                h.site.url("login.html"),
            ))))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        // … so nothing reached it and no browser was even opened.
        assert_eq!(h.site.a.connections(), 0);
        assert_eq!(strict.open_browser_sessions().await, 0);

        // With the port listed, the same request goes through (the negative control).
        let allowed = Gateway::new(h.host().await, config(&h));
        let out = allowed
            .agent_session()
            .call(navigate(h.site.url("login.html")))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(h.site.a.connections() > 0);
        // The other loopback port stays refused.
        let out = allowed
            .agent_session()
            .call(navigate(h.site.other_origin("login.html")))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert_eq!(h.site.b.connections(), 0);
        strict.shutdown().await;
        allowed.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dangerous_schemes_are_each_refused() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        for url in [
            "file:///etc/passwd",
            "data:text/html,<h1>hi</h1>",
            "javascript:alert(document.cookie)",
            "chrome://version",
            "chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/x.html",
            "devtools://devtools/bundled/inspector.html",
            "view-source:https://example.com/",
            "blob:https://example.com/0f0f0f0f-0000-0000-0000-000000000000",
            "filesystem:https://example.com/temporary/x",
            "ftp://example.com/file",
        ] {
            let out = agent.call(navigate(url.to_owned())).await;
            assert_eq!(
                out.error,
                Some(ErrorCode::PolicyDenied),
                "{url}: {}",
                out.text
            );
            assert!(out.text.contains("is not allowed"), "{url}: {}", out.text);
        }
        // A URL that does not parse is a mistake to fix, not a refusal.
        for url in ["example.com/login", "http://", "https://exa mple.com/"] {
            let out = agent.call(navigate(url.to_owned())).await;
            assert_eq!(
                out.error,
                Some(ErrorCode::InvalidArgument),
                "{url}: {}",
                out.text
            );
        }
        let out = agent.call(navigate("example.com/login".to_owned())).await;
        assert!(out.text.contains("https://example.com/"), "{}", out.text);
        assert_eq!(
            gateway.open_browser_sessions().await,
            0,
            "Chromium never saw any of them"
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

/// A policy allowing the fixture site and, for the control, the counting port too.
fn policy_allowing(ports: &[u16]) -> Policy {
    Policy::from_config(&PolicyConfig {
        allow_private: ports.iter().map(|p| format!("127.0.0.1:{p}")).collect(),
        ..PolicyConfig::default()
    })
    .unwrap()
}

async fn probe_egress(h: &Harness, policy: Policy, target: String) -> String {
    let gateway = Gateway::new(
        h.host().await,
        GatewayConfig {
            policy,
            ..GatewayConfig::default()
        },
    );
    let agent = gateway.agent_session();
    let url = format!("{}?target={}", h.site.url("egress.html"), target);
    let first = agent.call(navigate(url)).await;
    assert_eq!(first.error, None, "{}", first.text);
    let out = agent
        .call(ToolCall::WaitFor {
            condition: airlock_browser::WaitCondition::Text("done".into()),
            timeout: Some(Duration::from_secs(20)),
        })
        .await;
    assert_eq!(out.error, None, "{}", out.text);
    gateway.shutdown().await;
    format!("{}\n{}", first.text, out.text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_kind_to_a_denied_port_is_stopped_at_the_proxy() {
    with_browser(|h| async move {
        let (a, b) = (h.site.a.port(), h.site.b.port());
        // A UDP port that counts datagrams, for WebRTC's STUN/TURN.
        let udp = std::sync::Arc::new(tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let udp_port = udp.local_addr().unwrap().port();
        let datagrams = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = datagrams.clone();
        let socket = udp.clone();
        let udp_task = tokio::spawn(async move {
            let mut buf = [0u8; 2048];
            while socket.recv_from(&mut buf).await.is_ok() {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        });
        for host in ["127.0.0.1", "localhost", "[::1]"] {
            let text = probe_egress(
                &h,
                policy_allowing(&[a]),
                format!("http://{host}:{b}&udp={udp_port}"),
            )
            .await;
            // ICE gathering ran to completion, so zero datagrams below means none were sent.
            assert!(text.contains("ice complete"), "{text}");
            assert_eq!(
                h.site.b.connections(),
                0,
                "a request to {host}:{b} got through"
            );
            // The tool results tell the agent what was refused.
            assert!(
                text.contains("blocked ") && text.contains("private address"),
                "{text}"
            );
        }
        assert_eq!(
            datagrams.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "WebRTC sent UDP around the proxy"
        );
        udp_task.abort();
        // The control: with the counting port allowed, the same page reaches it.
        probe_egress(
            &h,
            policy_allowing(&[a, b]),
            format!("http://127.0.0.1:{b}"),
        )
        .await;
        assert!(
            h.site.b.connections() >= 5,
            "only {} connections in the control",
            h.site.b.connections()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_initiated_navigations_and_redirects_are_stopped_too() {
    with_browser(|h| async move {
        let (a, b) = (h.site.a.port(), h.site.b.port());
        let target = format!("http://127.0.0.1:{b}");
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                policy: policy_allowing(&[a]),
                ..GatewayConfig::default()
            },
        );
        let agent = gateway.agent_session();
        let wait_denied = || ToolCall::WaitFor {
            condition: airlock_browser::WaitCondition::Text("policy_denied".into()),
            timeout: Some(Duration::from_secs(10)),
        };
        // A 302 from the allowed site to the denied port.
        let out = agent
            .call(navigate(h.site.url(&format!("redirect?to={target}/r"))))
            .await;
        assert!(
            out.text.contains("(HTTP 403)")
                && out.text.contains("policy_denied: 127.0.0.1 is loopback"),
            "{}",
            out.text
        );
        // Meta refresh and a script's location change.
        for kind in ["meta", "location"] {
            agent
                .call(navigate(
                    h.site.url(&format!("nav.html?kind={kind}&target={target}")),
                ))
                .await;
            let out = agent.call(wait_denied()).await;
            assert_eq!(out.error, None, "{kind}: {}", out.text);
        }
        // A popup opened by the page to the denied port is closed, and the agent told.
        let opened = agent
            .call(navigate(
                h.site.url(&format!("nav.html?kind=open&target={target}")),
            ))
            .await;
        let notice =
            format!("closed a popup the page opened to {target}/popup: 127.0.0.1 is loopback");
        let said = if opened.text.contains(&notice) {
            Some(opened.text)
        } else {
            poll_outputs(&agent, |text| text.contains(&notice)).await
        };
        assert!(said.is_some(), "no notice of the closed popup");
        // The notice comes as the close is sent; the tab goes when Chromium detaches it.
        assert!(
            eventually!(
                agent
                    .call(ToolCall::Tabs(TabAction::List))
                    .await
                    .text
                    .lines()
                    .count()
                    == 1
            ),
            "the popup to the denied port stayed open"
        );
        // The control: a popup to the allowed site stays open.
        agent
            .call(navigate(h.site.url(&format!(
                "nav.html?kind=open&target=http://127.0.0.1:{a}"
            ))))
            .await;
        let popup = format!("127.0.0.1:{a}/popup");
        assert!(
            eventually!(
                agent
                    .call(ToolCall::Tabs(TabAction::List))
                    .await
                    .text
                    .contains(&popup)
            ),
            "the popup to the allowed site did not stay open"
        );
        assert_eq!(
            h.site.b.connections(),
            0,
            "a page-initiated navigation reached the denied port"
        );
        gateway.shutdown().await;
    })
    .await;
}

/// Runs short waits until an output (of the wait or of a tab listing) satisfies
/// `done`, for up to 5 s; returns that output. A popup opening or closing has no
/// event an agent can await, so this polls like an agent would. (The popup may show
/// in the listing for a moment before it is judged and closed.)
async fn poll_outputs(
    agent: &airlock_gateway::AgentSession,
    done: impl Fn(&str) -> bool,
) -> Option<String> {
    for _ in 0..100 {
        let out = agent
            .call(ToolCall::WaitFor {
                condition: airlock_browser::WaitCondition::Time(Duration::from_millis(50)),
                timeout: None,
            })
            .await;
        if done(&out.text) {
            return Some(out.text);
        }
        let tabs = agent.call(ToolCall::Tabs(TabAction::List)).await;
        if done(&tabs.text) {
            return Some(tabs.text);
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_initiated_navigations_to_local_schemes_go_nowhere() {
    with_browser(|h| async move {
        // A warm session: its navigation guard must be armed when it is handed out.
        let gateway = Gateway::new(h.host().await, warm_config(&h));
        assert!(eventually!(gateway.warm_sessions().0 == 1));
        let agent = gateway.agent_session();
        // `javascript:` is left out: it runs in the page like any of the page's scripts.
        for target in [
            "file:///etc/hostname",
            "data:text/html,<title>data page</title>",
            "chrome://version",
            "chrome-extension://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/x.html",
            "devtools://devtools/bundled/inspector.html",
            "view-source:http://example.com/",
            "filesystem:http://127.0.0.1/temporary/x",
            "ftp://example.com/x",
            // A blob: URL the page made itself: Chromium loads it; Airlock stops it.
            "blob",
        ] {
            let encoded: String = target.bytes().map(|b| format!("%{b:02X}")).collect();
            let mut text = agent
                .call(navigate(
                    h.site
                        .url(&format!("nav.html?kind=scheme&target={encoded}")),
                ))
                .await
                .text;
            let out = agent
                .call(ToolCall::WaitFor {
                    condition: airlock_browser::WaitCondition::Text("still here".into()),
                    timeout: Some(Duration::from_secs(3)),
                })
                .await;
            text.push_str(&out.text);
            let tabs = agent.call(ToolCall::Tabs(TabAction::List)).await;
            let scheme = if target == "blob" {
                "blob:"
            } else {
                target.split(':').next().unwrap()
            };
            assert_eq!(tabs.text.lines().count(), 1, "{target}: {}", tabs.text);
            assert!(
                !tabs.text.contains(&format!("— {scheme}"))
                    && !tabs.text.contains("data page")
                    && !tabs.text.contains("blob page"),
                "{target}: the tab went there: {}",
                tabs.text
            );
            if target == "blob" {
                // Told in the next result that succeeds: the navigation, the wait, or
                // (when the wait timed out on the blank page left behind) a later one.
                let notice = "page-initiated navigation to blob:http://127.0.0.1";
                if !text.contains(notice) {
                    text.push_str(
                        &poll_outputs(&agent, |t| t.contains(notice))
                            .await
                            .unwrap_or_default(),
                    );
                }
                assert!(text.contains(notice), "{text}");
            }
        }
        gateway.shutdown().await;
    })
    .await;
}

/// DNS as a test scripts it: each name answers `first` on its first lookup and
/// `later` after that (a rebinding name), with the port asked for.
struct Scripted {
    names: Vec<(&'static str, [u8; 4], [u8; 4])>,
    lookups: std::sync::Mutex<std::collections::HashMap<String, usize>>,
}

impl Scripted {
    fn new(names: Vec<(&'static str, [u8; 4], [u8; 4])>) -> std::sync::Arc<Scripted> {
        std::sync::Arc::new(Scripted {
            names,
            lookups: Default::default(),
        })
    }
}

impl airlock_egress::Resolver for Scripted {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> airlock_egress::BoxFuture<'a, std::io::Result<Vec<std::net::SocketAddr>>> {
        let n = {
            let mut lookups = self.lookups.lock().unwrap();
            let n = lookups.entry(host.to_owned()).or_default();
            *n += 1;
            *n
        };
        let answer =
            self.names
                .iter()
                .find(|(name, _, _)| *name == host)
                .map(|(_, first, later)| {
                    let ip = if n == 1 { *first } else { *later };
                    vec![std::net::SocketAddr::from((ip, port))]
                });
        Box::pin(async move {
            answer.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such name"))
        })
    }
}

fn policy_allowing_addrs(entries: &[String]) -> Policy {
    Policy::from_config(&PolicyConfig {
        allow_private: entries.to_vec(),
        ..PolicyConfig::default()
    })
    .unwrap()
}

async fn wait_done(agent: &airlock_gateway::AgentSession) -> String {
    let out = agent
        .call(ToolCall::WaitFor {
            condition: airlock_browser::WaitCondition::Text("done".into()),
            timeout: Some(Duration::from_secs(10)),
        })
        .await;
    assert_eq!(out.error, None, "{}", out.text);
    let read = agent
        .call(ToolCall::Read {
            format: airlock_gateway::ReadFormat::Text,
            offset: 0,
        })
        .await;
    format!("{}\n{}", out.text, read.text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_rebinding_to_a_private_address_is_refused_through_chromium() {
    with_browser(|h| async move {
        let a = h.site.a.port();
        // The same pages on 127.0.0.2 at the same port: where `rebind.test` moves to.
        let twin =
            airlock_test_support::FixtureServer::start_bundled_at(([127, 0, 0, 2], a).into()).await;
        let page = format!("http://rebind.test:{a}/fetch.html");
        for (entries, refused) in [
            (vec![format!("127.0.0.1:{a}")], true),
            // The control: with the twin allowed too, the same fetch reaches it.
            (
                vec![format!("127.0.0.1:{a}"), format!("127.0.0.2:{a}")],
                false,
            ),
        ] {
            let gateway = Gateway::new(
                h.host_with_resolver(Scripted::new(vec![(
                    "rebind.test",
                    [127, 0, 0, 1],
                    [127, 0, 0, 2],
                )]))
                .await,
                GatewayConfig {
                    policy: policy_allowing_addrs(&entries),
                    ..GatewayConfig::default()
                },
            );
            let agent = gateway.agent_session();
            let out = agent.call(navigate(page.clone())).await;
            assert_eq!(out.error, None, "{}", out.text);
            // The page loaded from the first answer; its same-origin fetch asks again.
            let text = format!("{}\n{}", out.text, wait_done(&agent).await);
            if refused {
                assert!(text.contains("fetched 403 refused"), "{text}");
                assert!(text.contains("private address"), "{text}");
                assert_eq!(twin.connections(), 0, "the rebound name was reached");
            } else {
                assert!(text.contains("fetched 200 ok"), "{text}");
                assert!(twin.connections() > 0);
            }
            gateway.shutdown().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_allowlist_narrows_the_policy_and_never_widens_it() {
    with_browser(|h| async move {
        let (a, b) = (h.site.a.port(), h.site.b.port());
        // Sessions come pre-warmed here: a warm session's proxy and guard must take
        // the narrowed policy when it is handed out (the rest of this file opens cold).
        let gateway = Gateway::new(
            h.host_with_resolver(Scripted::new(vec![
                ("app.test", [127, 0, 0, 1], [127, 0, 0, 1]),
                ("sibling.test", [127, 0, 0, 1], [127, 0, 0, 1]),
            ]))
            .await,
            warm_config(&h),
        );
        assert!(eventually!(gateway.warm_sessions().0 == 1));
        let fetching = |host: &str, target: &str| {
            navigate(format!(
                "http://{host}:{a}/fetch.html?url=http://{target}:{a}/login.html"
            ))
        };
        // The control: without a session allowlist the sibling host is reachable.
        let open = gateway.agent_session();
        open.call(fetching("app.test", "sibling.test")).await;
        let text = wait_done(&open).await;
        assert!(!text.contains("blocked"), "{text}");

        assert!(eventually!(gateway.warm_sessions().0 == 1));
        let narrow = gateway.agent_session();
        let out = narrow
            .call(ToolCall::SessionOpen(airlock_gateway::OpenOptions {
                allow_hosts: vec!["app.test".into(), "127.0.0.1".into()],
                ..Default::default()
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text.contains("only the hosts it listed"),
            "{}",
            out.text
        );
        // The listed host passes; a request to its sibling is refused at the proxy …
        let out = narrow.call(fetching("app.test", "sibling.test")).await;
        assert_eq!(out.error, None, "{}", out.text);
        let text = format!("{}\n{}", out.text, wait_done(&narrow).await);
        assert!(text.contains("fetch failed"), "{text}");
        assert!(
            text.contains("blocked 1 request: 1 host not allowed"),
            "{text}"
        );
        // … and navigating there is refused before Chromium.
        let out = narrow
            .call(navigate(format!("http://sibling.test:{a}/login.html")))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        // Listing a host the tenant policy refuses does not open it.
        let out = narrow
            .call(navigate(format!("http://127.0.0.1:{b}/login.html")))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert_eq!(h.site.b.connections(), 0);
        assert_eq!(
            gateway.warm_sessions().1,
            2,
            "the sessions were not the warm ones"
        );
        // A bad entry is a clear error, not a session that allows everything.
        let bad = gateway.agent_session();
        let out = bad
            .call(ToolCall::SessionOpen(airlock_gateway::OpenOptions {
                allow_hosts: vec!["not a host/".into()],
                ..Default::default()
            }))
            .await;
        assert_eq!(out.error, Some(ErrorCode::InvalidArgument), "{}", out.text);

        // A narrowing asked for after a browser tool opened the session lazily is
        // refused with a code, never reported as done while silently dropped.
        let lazy = gateway.agent_session();
        lazy.call(navigate(h.site.url("login.html"))).await;
        let out = lazy
            .call(ToolCall::SessionOpen(airlock_gateway::OpenOptions {
                allow_hosts: vec!["app.test".into()],
                ..Default::default()
            }))
            .await;
        assert_eq!(
            out.error,
            Some(ErrorCode::SessionAlreadyOpen),
            "{}",
            out.text
        );
        assert!(out.text.contains("browser_session_close"), "{}", out.text);
        lazy.call(ToolCall::SessionClose).await;
        let out = lazy
            .call(ToolCall::SessionOpen(airlock_gateway::OpenOptions {
                allow_hosts: vec!["app.test".into()],
                ..Default::default()
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = lazy.call(fetching("127.0.0.1", "127.0.0.1")).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_tabs_favicon_reaches_no_denied_port() {
    with_browser(|h| async move {
        let (a, b) = (h.site.a.port(), h.site.b.port());
        let icon_page = h
            .site
            .url(&format!("icon.html?href=http://127.0.0.1:{b}/favicon.ico"));
        for allowed in [&[a][..], &[a, b][..]] {
            let gateway = Gateway::new(
                h.host().await,
                GatewayConfig {
                    policy: policy_allowing(allowed),
                    ..GatewayConfig::default()
                },
            );
            let agent = gateway.agent_session();
            let out = agent
                .call(ToolCall::Tabs(TabAction::New(Some(icon_page.clone()))))
                .await;
            assert_eq!(out.error, None, "{}", out.text);
            // The browser fetches favicons on its own schedule, with no page event to
            // await; give it a second.
            agent
                .call(ToolCall::WaitFor {
                    condition: airlock_browser::WaitCondition::Time(Duration::from_secs(1)),
                    timeout: None,
                })
                .await;
            gateway.shutdown().await;
        }
        // Denied: nothing. Allowed: nothing either — this headless Chromium fetches no
        // favicons at all. If an update starts to, this fails and the denied case above
        // becomes a real test (favicon fetches go through the context's proxy too).
        assert_eq!(
            h.site.b.connections(),
            0,
            "Chromium now fetches favicons in headless mode: check the denied case"
        );
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
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
            .await;
        // The crash event may trail the kill by a moment.
        for _ in 0..100 {
            if out.error.is_some() {
                break;
            }
            out = agent
                .call(ToolCall::Snapshot(SnapshotOptions::default()))
                .await;
        }
        assert_eq!(out.error, Some(ErrorCode::BrowserCrashed), "{}", out.text);
        assert!(out.text.contains("replaced by a blank one"), "{}", out.text);
        // The next call works, in the same session: its cookie is still there.
        let out = agent.call(navigate(h.site.url("cookie.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("cookie=[flavor=kept]"), "{}", out.text);
        let tabs = agent.call(ToolCall::Tabs(TabAction::List)).await;
        assert_eq!(tabs.text.lines().count(), 1, "{}", tabs.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_does_not_resolve_or_a_closed_port_is_navigation_failed() {
    with_browser(|h| async move {
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let gateway = Gateway::new(
            h.host_with_resolver(Scripted::new(vec![])).await,
            GatewayConfig {
                policy: policy_allowing_addrs(&[format!("127.0.0.1:{closed}")]),
                ..GatewayConfig::default()
            },
        );
        let agent = gateway.agent_session();
        for (url, why) in [
            (
                "http://nowhere.test/".to_owned(),
                "nowhere.test does not resolve",
            ),
            (
                "https://nowhere.test/".to_owned(),
                "nowhere.test does not resolve",
            ),
            (
                format!("http://127.0.0.1:{closed}/"),
                "could not connect to 127.0.0.1",
            ),
        ] {
            let out = agent.call(navigate(url.clone())).await;
            assert_eq!(
                out.error,
                Some(ErrorCode::NavigationFailed),
                "{url}: {}",
                out.text
            );
            assert!(out.text.contains(why), "{url}: {}", out.text);
            // Airlock's words, not a page: nothing inside the untrusted fence.
            assert!(!out.text.contains("<page "), "{url}: {}", out.text);
        }
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
                .call(ToolCall::Click {
                    target: airlock_browser::Target::Role {
                        role: "link".into(),
                        name: Some(link.into()),
                        index: None,
                    },
                    options: Default::default(),
                })
                .await;
            assert_eq!(out.error, None, "{}", out.text);
            for call in [
                ToolCall::Snapshot(SnapshotOptions::default()),
                ToolCall::Read {
                    format: airlock_gateway::ReadFormat::Text,
                    offset: 0,
                },
                navigate(h.site.url("login.html")),
                ToolCall::Snapshot(SnapshotOptions::default()),
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
async fn a_navigation_shows_as_much_of_the_new_page_as_asked() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        let go = |view| ToolCall::Navigate {
            url: h.site.url("article.html"),
            wait_until: WaitUntil::Load,
            snapshot: view,
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
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
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
            .call(ToolCall::Snapshot(SnapshotOptions {
                offset: next,
                ..SnapshotOptions::default()
            }))
            .await;
        assert!(
            more.text.contains(&format!("user{}", last_row + 1)),
            "the next page starts after row {last_row}: {}",
            &more.text[..more.text.len().min(600)]
        );
        let whole = agent
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
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
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
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
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hint_names_only_tools_the_callers_surface_has() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let typing = || ToolCall::Type {
            target: airlock_gateway::action::Target::Selector("#user".to_owned()),
            text: "{{secret:nowhere.password}}".to_owned(),
            clear_first: true,
            submit: false,
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
        let look = || ToolCall::Snapshot(SnapshotOptions::default());
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
        agent.call(ToolCall::SessionClose).await;
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
        let look = || ToolCall::Snapshot(SnapshotOptions::default());
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let id = gateway.leases()[0].id.to_string();

        // Released by another admin of the tenant; the agent is told once.
        gateway.take_over("default", &id, "op-a").await.unwrap();
        assert_eq!(agent.call(look()).await.error, Some(ErrorCode::SessionHeld));
        let e = gateway.take_over("default", &id, "op-b").await.unwrap_err();
        assert!(e.to_string().contains("op-a holds this session"), "{e}");
        assert_eq!(
            gateway.release_hold("default", &id, "op-b").await.unwrap(),
            "op-a"
        );
        let out = agent.call(look()).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("handed it back"), "{}", out.text);
        assert!(gateway.release_hold("default", &id, "op-b").await.is_err());
        assert!(
            gateway
                .release_hold("other-tenant", &id, "op-b")
                .await
                .is_err(),
            "another tenant's admin releases nothing"
        );

        // A login that ended releases what it held, and only that.
        gateway.take_over("default", &id, "op-a").await.unwrap();
        assert_eq!(
            gateway
                .release_holds_of("op-b", "console login ended")
                .await,
            0
        );
        assert_eq!(agent.call(look()).await.error, Some(ErrorCode::SessionHeld));
        assert_eq!(
            gateway
                .release_holds_of("op-a", "console login ended")
                .await,
            1
        );
        assert_eq!(agent.call(look()).await.error, None);

        // Tended (watched, typed into), a hold lasts past `hold_idle`; untended, it
        // goes back by itself.
        gateway.take_over("default", &id, "op-a").await.unwrap();
        let tended_until = tokio::time::Instant::now() + hold_idle * 3;
        while tokio::time::Instant::now() < tended_until {
            gateway.tend_hold("default", &id, "op-a");
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
                store: Some(store.clone()),
                checkpoints: Some(airlock_gateway::Checkpoints {
                    name: "airlock.test/audit".to_owned(),
                    key: Arc::new(key.clone()),
                    path: path.clone(),
                    every: 2,
                    publish_dir: None,
                }),
                ..config(&h)
            },
        );
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("login.html"))).await;
        for _ in 0..5 {
            agent
                .call(ToolCall::Snapshot(SnapshotOptions::default()))
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
async fn network_requests_say_what_the_page_asked_for_and_why_the_proxy_refused() {
    with_browser(|h| async move {
        let (a, b) = (h.site.a.port(), h.site.b.port());
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                policy: policy_allowing(&[a]),
                ..GatewayConfig::default()
            },
        );
        let agent = gateway.agent_session();
        let requests = |filter: Option<&str>| ToolCall::NetworkRequests {
            filter: filter.map(str::to_owned),
            limit: 50,
        };
        let denied = format!("http://127.0.0.1:{b}/login.html");
        agent
            .call(navigate(format!(
                "{}?url={denied}",
                h.site.url("fetch.html")
            )))
            .await;
        wait_done(&agent).await;
        let out = agent.call(requests(None)).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text
                .contains(&format!("GET 200 document http://127.0.0.1:{a}/fetch.html")),
            "{}",
            out.text
        );
        let refused = out
            .text
            .lines()
            .find(|l| l.starts_with("GET ") && l.ends_with(&format!(" {denied}")))
            .unwrap_or_else(|| panic!("no line for {denied}:\n{}", out.text));
        assert!(
            refused.starts_with("GET refused by the egress proxy (policy_denied: ")
                && refused.contains("loopback"),
            "{refused}"
        );
        assert!(out.text.contains("<page "), "fenced: {}", out.text);
        assert_eq!(h.site.b.connections(), 0, "the refused request got through");
        // A filter keeps only matching URLs; a status that is no refusal is shown.
        agent
            .call(navigate(format!(
                "{}?url=/missing.html",
                h.site.url("fetch.html")
            )))
            .await;
        wait_done(&agent).await;
        let out = agent
            .call(requests(Some(&format!("{a}/MISSING.html"))))
            .await;
        let lines: Vec<&str> = out.text.lines().filter(|l| l.starts_with("GET ")).collect();
        assert_eq!(lines.len(), 1, "{}", out.text);
        assert!(lines[0].starts_with("GET 404 fetch "), "{}", out.text);
        // A placeholder is no filter.
        let out = agent.call(requests(Some("{{secret:app.password}}"))).await;
        assert_eq!(
            out.error,
            Some(ErrorCode::SecretOriginMismatch),
            "{}",
            out.text
        );
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
            ToolCall::SessionOpen(airlock_gateway::OpenOptions {
                device: Some(device.to_owned()),
                ..Default::default()
            })
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_prints_to_a_pdf() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("article.html"))).await;
        let out = agent.call(ToolCall::Pdf).await;
        assert_eq!(out.error, None, "{}", out.text);
        let pdf = out.file.expect("a PDF");
        assert_eq!(pdf.mime, "application/pdf");
        assert!(pdf.data.starts_with(b"%PDF-"), "not a PDF");
        assert!(pdf.data.len() > 1_000 && pdf.data.len() <= airlock_browser::MAX_PDF_BYTES);
        assert!(out.text.starts_with("PDF of \""), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_is_off_unless_turned_on_then_bounded_audited_and_fenced() {
    with_browser(|h| async move {
        let eval = |function: &str, target: Option<Target>| ToolCall::Evaluate {
            function: function.to_owned(),
            target,
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
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
            .await;
        assert!(out.text.contains("\"Sign in\""), "{}", out.text);
        gateway.shutdown().await;

        let store = airlock_store::Store::open_in_memory().await.unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                evaluate: true,
                store: Some(store.clone()),
                ..config(&h)
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
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_come_only_from_the_upload_directory() {
    with_browser(|h| async move {
        let upload = |target: Target, files: &[&str]| ToolCall::FileUpload {
            target,
            files: files.iter().map(|f| (*f).to_owned()).collect(),
        };
        let button = Target::Role {
            role: "button".into(),
            name: Some("Choose files".into()),
            index: None,
        };
        // No directory: no uploads.
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("upload.html"))).await;
        let out = agent.call(upload(button.clone(), &["ok.txt"])).await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        gateway.shutdown().await;

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ok.txt"), "hello").unwrap();
        std::fs::write(dir.path().join("two.txt"), "hi").unwrap();
        std::fs::File::create(dir.path().join("big.bin"))
            .unwrap()
            .set_len(airlock_gateway::MAX_UPLOAD_BYTES + 1)
            .unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link.txt")).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                upload_dir: Some(dir.path().to_owned()),
                ..config(&h)
            },
        );
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("upload.html"))).await;
        for (files, code, words) in [
            (
                vec!["../ok.txt"],
                ErrorCode::InvalidArgument,
                "not a plain name",
            ),
            (
                vec!["/etc/hostname"],
                ErrorCode::InvalidArgument,
                "not a plain name",
            ),
            (
                vec!["link.txt"],
                ErrorCode::InvalidArgument,
                "leads outside",
            ),
            (vec!["missing.txt"], ErrorCode::NotFound, "no file"),
            (vec!["sub"], ErrorCode::NotFound, "no file"),
            (vec!["big.bin"], ErrorCode::InvalidArgument, "over the"),
        ] {
            let out = agent.call(upload(button.clone(), &files)).await;
            assert_eq!(out.error, Some(code), "{files:?}: {}", out.text);
            assert!(out.text.contains(words), "{files:?}: {}", out.text);
        }
        // Nothing reached the page.
        let out = agent
            .call(ToolCall::Snapshot(SnapshotOptions::default()))
            .await;
        assert!(out.text.contains("got nothing"), "{}", out.text);
        // A hidden input opened by a button takes several files …
        let out = agent.call(upload(button, &["ok.txt", "two.txt"])).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("got ok.txt 5, two.txt 2"), "{}", out.text);
        // … a single-file input one.
        let single = Target::Role {
            role: "button".into(),
            name: Some("Single file".into()),
            index: None,
        };
        let out = agent
            .call(upload(single.clone(), &["ok.txt", "two.txt"]))
            .await;
        assert_eq!(out.error, Some(ErrorCode::InvalidArgument), "{}", out.text);
        let out = agent.call(upload(single.clone(), &["two.txt"])).await;
        assert!(out.text.contains("got two.txt 2"), "{}", out.text);
        // A file larger than one message's piece arrives whole (a worker is sent
        // it in pieces).
        let big = 9 * 1024 * 1024 + 3;
        std::fs::write(dir.path().join("big.bin"), vec![7u8; big]).unwrap();
        let out = agent.call(upload(single, &["big.bin"])).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text.contains(&format!("got big.bin {big}")),
            "{}",
            out.text
        );
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloads_go_only_to_the_download_directory_and_are_reported_not_returned() {
    with_browser(|h| async move {
        let click = || ToolCall::Click {
            target: Target::Role {
                role: "link".into(),
                name: Some("Get report".into()),
                index: None,
            },
            options: Default::default(),
        };
        // No directory: refused (Chromium denies it), nothing reported.
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("download.html"))).await;
        let out = agent.call(click()).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(!out.text.contains("downloaded"), "{}", out.text);
        gateway.shutdown().await;

        let dir = tempfile::tempdir().unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                download_dir: Some(dir.path().canonicalize().unwrap()),
                ..config(&h)
            },
        );
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("download.html"))).await;
        // A download finishes after the click; a later result reports it.
        let reported = |first: String, needle: &'static str| {
            let agent = &agent;
            async move {
                let mut text = first;
                for _ in 0..200 {
                    if text.contains(needle) {
                        break;
                    }
                    text = agent
                        .call(ToolCall::WaitFor {
                            condition: airlock_browser::WaitCondition::Time(Duration::from_millis(
                                50,
                            )),
                            timeout: None,
                        })
                        .await
                        .text;
                }
                text
            }
        };
        let text = reported(agent.call(click()).await.text, "downloaded ").await;
        let line = text
            .lines()
            .find(|l| l.starts_with("downloaded "))
            .unwrap_or_else(|| panic!("no download reported:\n{text}"));
        assert!(
            line.starts_with("downloaded \"report.txt\" into the download directory as "),
            "{line}"
        );
        assert!(line.contains("(22 bytes, SHA-256 "), "{line}");
        // The file's bytes are in the directory, never in a result.
        assert!(!text.contains("quarterly numbers"), "{text}");
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1);
        // A file larger than one message's piece arrives whole (from a worker, in
        // pieces).
        let out = agent
            .call(ToolCall::Click {
                target: Target::Role {
                    role: "link".into(),
                    name: Some("Get big file".into()),
                    index: None,
                },
                options: Default::default(),
            })
            .await;
        let text = reported(out.text, "downloaded \"big.bin\"").await;
        assert!(text.contains("downloaded \"big.bin\""), "{text}");
        let sizes: Vec<u64> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|f| f.unwrap().metadata().unwrap().len())
            .collect();
        assert!(sizes.contains(&9_437_187), "{sizes:?}");
        gateway.shutdown().await;
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
                .call(ToolCall::Snapshot(SnapshotOptions::default()))
                .await
                .text,
        );
        seen.push_str(
            &agent
                .call(ToolCall::Tabs(airlock_gateway::TabAction::List))
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
                store: Some(store.clone()),
                checkpoints: Some(airlock_gateway::Checkpoints {
                    name: "airlock.test/audit".to_owned(),
                    key: Arc::new(key.clone()),
                    path: path.clone(),
                    every: 1_000,
                    publish_dir: None,
                }),
                ..config(&h)
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
            .live_watch("default", &id, &mut cursor, true, wait)
            .await
            .unwrap();
        let frame = first.frame.expect("the page at once");
        assert!(frame.url.ends_with("/dialogs.html"), "{}", frame.url);
        assert_eq!(frame.title, "Dialogs");
        let idle = gateway
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
                .live_watch("other", &id, &mut LiveCursor::default(), true, wait)
                .await
                .is_err()
        );

        let out = agent.call(click_button("Guard")).await;
        assert_eq!(out.error, None, "{}", out.text);
        let changed = gateway
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
        gateway.live_unwatch("default", &id).await;
        gateway.shutdown().await;
    })
    .await;
}
