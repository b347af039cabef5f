//! The egress policy through a real Chromium: navigations, every request kind, redirects,
//! local schemes, name rebinding, session allowlists, and what the agent is told.

use super::*;
use airlock_gateway::{Reading, SessionCall, Window};

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
            .call(ToolCall::Window(Window::Tabs(TabAction::New(Some(
                h.site.url("login.html"),
            )))))
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

/// A policy allowing the fixture site and, for the control, the counting port too.
fn policy_allowing(ports: &[u16]) -> Policy {
    Policy::from_config(&PolicyConfig {
        allow_private: ports.iter().map(|p| format!("127.0.0.1:{p}")).collect(),
        ..PolicyConfig::default()
    })
    .unwrap()
}

async fn probe_egress(h: &Harness, policy: Policy, target: String) -> String {
    let gateway = Gateway::new(h.host().await, GatewayConfig::with_policy(policy));
    let agent = gateway.agent_session();
    let url = format!("{}?target={}", h.site.url("egress.html"), target);
    let first = agent.call(navigate(url)).await;
    assert_eq!(first.error, None, "{}", first.text);
    let out = agent
        .call(ToolCall::Read(Reading::WaitFor {
            condition: airlock_browser::WaitCondition::Text("done".into()),
            timeout: Some(Duration::from_secs(20)),
        }))
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
            GatewayConfig::with_policy(policy_allowing(&[a])),
        );
        let agent = gateway.agent_session();
        let wait_denied = || {
            ToolCall::Read(Reading::WaitFor {
                condition: airlock_browser::WaitCondition::Text("policy_denied".into()),
                timeout: Some(Duration::from_secs(10)),
            })
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
            Some(opened.text.clone())
        } else {
            poll_outputs(&agent, |text| text.contains(&notice)).await
        };
        assert!(
            said.is_some(),
            "no notice of the closed popup: {}",
            opened.text
        );
        // The notice comes as the close is sent; the tab goes when Chromium detaches it.
        assert!(
            eventually!(
                agent
                    .call(ToolCall::Window(Window::Tabs(TabAction::List)))
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
                    .call(ToolCall::Window(Window::Tabs(TabAction::List)))
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
            .call(ToolCall::Read(Reading::WaitFor {
                condition: airlock_browser::WaitCondition::Time(Duration::from_millis(50)),
                timeout: None,
            }))
            .await;
        if done(&out.text) {
            return Some(out.text);
        }
        let tabs = agent
            .call(ToolCall::Window(Window::Tabs(TabAction::List)))
            .await;
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
                .call(ToolCall::Read(Reading::WaitFor {
                    condition: airlock_browser::WaitCondition::Text("still here".into()),
                    timeout: Some(Duration::from_secs(3)),
                }))
                .await;
            text.push_str(&out.text);
            let tabs = agent
                .call(ToolCall::Window(Window::Tabs(TabAction::List)))
                .await;
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
        .call(ToolCall::Read(Reading::WaitFor {
            condition: airlock_browser::WaitCondition::Text("done".into()),
            timeout: Some(Duration::from_secs(10)),
        }))
        .await;
    assert_eq!(out.error, None, "{}", out.text);
    let read = agent
        .call(ToolCall::Read(Reading::Text {
            format: airlock_gateway::ReadFormat::Text,
            offset: 0,
        }))
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
                GatewayConfig::with_policy(policy_allowing_addrs(&entries)),
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
            .call(ToolCall::Session(SessionCall::Open(
                airlock_gateway::OpenOptions {
                    allow_hosts: vec!["app.test".into(), "127.0.0.1".into()],
                    ..Default::default()
                },
            )))
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
            .call(ToolCall::Session(SessionCall::Open(
                airlock_gateway::OpenOptions {
                    allow_hosts: vec!["not a host/".into()],
                    ..Default::default()
                },
            )))
            .await;
        assert_eq!(out.error, Some(ErrorCode::InvalidArgument), "{}", out.text);

        // A narrowing asked for after a browser tool opened the session lazily is
        // refused with a code, never reported as done while silently dropped.
        let lazy = gateway.agent_session();
        lazy.call(navigate(h.site.url("login.html"))).await;
        let out = lazy
            .call(ToolCall::Session(SessionCall::Open(
                airlock_gateway::OpenOptions {
                    allow_hosts: vec!["app.test".into()],
                    ..Default::default()
                },
            )))
            .await;
        assert_eq!(
            out.error,
            Some(ErrorCode::SessionAlreadyOpen),
            "{}",
            out.text
        );
        assert!(out.text.contains("browser_session_close"), "{}", out.text);
        lazy.call(ToolCall::Session(SessionCall::Close)).await;
        let out = lazy
            .call(ToolCall::Session(SessionCall::Open(
                airlock_gateway::OpenOptions {
                    allow_hosts: vec!["app.test".into()],
                    ..Default::default()
                },
            )))
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
                GatewayConfig::with_policy(policy_allowing(allowed)),
            );
            let agent = gateway.agent_session();
            let out = agent
                .call(ToolCall::Window(Window::Tabs(TabAction::New(Some(
                    icon_page.clone(),
                )))))
                .await;
            assert_eq!(out.error, None, "{}", out.text);
            // The browser fetches favicons on its own schedule, with no page event to
            // await; give it a second.
            agent
                .call(ToolCall::Read(Reading::WaitFor {
                    condition: airlock_browser::WaitCondition::Time(Duration::from_secs(1)),
                    timeout: None,
                }))
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_does_not_resolve_or_a_closed_port_is_navigation_failed() {
    with_browser(|h| async move {
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let gateway = Gateway::new(
            h.host_with_resolver(Scripted::new(vec![])).await,
            GatewayConfig::with_policy(policy_allowing_addrs(&[format!("127.0.0.1:{closed}")])),
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
async fn network_requests_say_what_the_page_asked_for_and_why_the_proxy_refused() {
    with_browser(|h| async move {
        let (a, b) = (h.site.a.port(), h.site.b.port());
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig::with_policy(policy_allowing(&[a])),
        );
        let agent = gateway.agent_session();
        let requests = |filter: Option<&str>| {
            ToolCall::Read(Reading::NetworkRequests {
                filter: filter.map(str::to_owned),
                limit: 50,
                with_static: true,
            })
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
