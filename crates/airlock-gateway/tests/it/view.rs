//! The viewport: `browser_resize` sets it for every tab, tabs opened later too, as the
//! browser renders it (screenshots measured here from the PNG's own header).

use airlock_browser::{ScreenshotOptions, SnapshotOptions};
use airlock_core::ErrorCode;
use airlock_gateway::{Gateway, TabAction, ToolCall};
use airlock_gateway::{Reading, Window};
use airlock_test_support::with_browser;

use crate::{config, navigate};

// Width and height from a PNG's IHDR chunk.
fn png_size(data: &[u8]) -> (u32, u32) {
    assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&data[16..20]), be(&data[20..24]))
}

async fn viewport(agent: &airlock_gateway::AgentSession) -> (u32, u32) {
    let out = agent
        .call(ToolCall::Read(Reading::Screenshot(
            ScreenshotOptions::default(),
        )))
        .await;
    assert_eq!(out.error, None, "{}", out.text);
    png_size(&out.file.expect("a screenshot").data)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resize_sets_the_viewport_of_every_tab_and_of_new_ones() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let before = viewport(&agent).await;
        let out = agent
            .call(ToolCall::Window(Window::Tabs(TabAction::New(None))))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent
            .call(ToolCall::Window(Window::Resize {
                width: 390,
                height: 844,
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("viewport is 390×844"), "{}", out.text);
        assert_eq!(viewport(&agent).await, (390, 844));
        assert_ne!(before, (390, 844));
        // The tab opened before the resize…
        agent
            .call(ToolCall::Window(Window::Tabs(TabAction::Select(0))))
            .await;
        assert_eq!(viewport(&agent).await, (390, 844));
        // …and one opened after it.
        agent
            .call(ToolCall::Window(Window::Tabs(TabAction::New(None))))
            .await;
        assert_eq!(viewport(&agent).await, (390, 844));
        // The page laid out at the new width: the snapshot still reads it.
        let out = agent
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        // Out of bounds: refused, nothing changed.
        for (width, height) in [(10, 844), (390, 99_999), (0, 0)] {
            let out = agent
                .call(ToolCall::Window(Window::Resize { width, height }))
                .await;
            assert_eq!(out.error, Some(ErrorCode::InvalidArgument), "{}", out.text);
        }
        assert_eq!(viewport(&agent).await, (390, 844));
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_messages_are_filtered_by_level_limited_and_fenced() {
    use airlock_browser::ConsoleLevel;

    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("app/console.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let console = |level, limit| {
            ToolCall::Read(Reading::ConsoleMessages {
                level,
                limit,
                all: true,
            })
        };
        let out = agent.call(console(ConsoleLevel::Debug, 200)).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text
                .starts_with("3 console messages (level debug and up)"),
            "{}",
            out.text
        );
        let fenced = out.text.split("<page ").nth(1).expect("fenced");
        for line in [
            "[info] console page ready",
            "[debug] a debug line",
            "[warning] a warning 42 true null",
        ] {
            assert!(fenced.contains(line), "{line}: {}", out.text);
        }
        // `info` and up leaves the debug line out; `error` and up leaves nothing.
        let out = agent.call(console(ConsoleLevel::Info, 200)).await;
        assert!(out.text.starts_with("2 console messages"), "{}", out.text);
        assert!(!out.text.contains("a debug line"), "{}", out.text);
        let out = agent.call(console(ConsoleLevel::Error, 200)).await;
        assert!(out.text.starts_with("0 console messages"), "{}", out.text);
        // The newest N.
        let out = agent.call(console(ConsoleLevel::Debug, 1)).await;
        assert!(out.text.starts_with("1 console message "), "{}", out.text);
        assert!(out.text.contains("a warning"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

/// Playwright MCP's defaults for the same tool names, on MiniWoB++'s pages (their
/// scripts and styles are jQuery UI's and MiniWoB's, not ours): the console shows
/// what the page now showing logged, and says how many earlier messages `all`
/// would add; the request list leaves out static resources that loaded fine, says
/// how many, and `static: true` shows them; `browser_tabs close` without an index
/// closes the active tab.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_and_requests_default_to_the_page_now_showing_and_what_is_news() {
    use airlock_browser::ConsoleLevel;

    with_browser(|h| async move {
        let wob = airlock_test_support::MiniWob::start().await;
        let policy = airlock_policy::Policy::from_config(&airlock_policy::PolicyConfig {
            allow_private: vec![
                format!("127.0.0.1:{}", h.site.a.port()),
                format!("127.0.0.1:{}", wob.port()),
            ],
            ..Default::default()
        })
        .unwrap();
        let gateway = Gateway::new(
            h.host().await,
            airlock_gateway::GatewayConfig::with_policy(policy),
        );
        let agent = gateway.agent_session();
        let console = |all| {
            ToolCall::Read(Reading::ConsoleMessages {
                level: ConsoleLevel::Debug,
                limit: 200,
                all,
            })
        };
        let requests = |with_static| {
            ToolCall::Read(Reading::NetworkRequests {
                filter: None,
                limit: 50,
                with_static,
            })
        };
        let out = agent.call(navigate(h.site.url("app/console.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(console(false)).await;
        assert!(out.text.starts_with("3 console messages"), "{}", out.text);

        let task = wob.task("click-tab-2");
        let out = agent.call(navigate(task.clone())).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(console(false)).await;
        assert!(!out.text.contains("console page ready"), "{}", out.text);
        assert!(
            out.text
                .contains("3 from before the last navigation not shown (`all: true` shows them)"),
            "{}",
            out.text
        );
        let out = agent.call(console(true)).await;
        assert!(out.text.contains("console page ready"), "{}", out.text);

        let out = agent.call(requests(false)).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text.contains(&format!("GET 200 document {task}")),
            "{}",
            out.text
        );
        assert!(
            !out.text
                .lines()
                .any(|l| l.starts_with("GET 200 script ") || l.starts_with("GET 200 stylesheet ")),
            "{}",
            out.text
        );
        let hidden: usize = out
            .text
            .lines()
            .next()
            .unwrap_or_default()
            .split("; ")
            .find_map(|part| {
                part.strip_suffix(
                    " static resources that loaded fine not shown (`static: true` shows them)",
                )
            })
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no count of what was left out:\n{}", out.text));
        let all = agent.call(requests(true)).await;
        let scripts = all
            .text
            .lines()
            .filter(|l| l.starts_with("GET 200 script ") || l.starts_with("GET 200 stylesheet "))
            .count();
        assert!(scripts >= 2, "{}", all.text);
        assert!(hidden >= scripts, "{hidden} < {scripts}:\n{}", all.text);

        // `close` without an index closes the active tab, as there.
        let out = agent
            .call(ToolCall::Window(Window::Tabs(TabAction::New(Some(
                h.site.url("app/console.html"),
            )))))
            .await;
        assert!(out.text.contains("[1] (active)"), "{}", out.text);
        let out = agent
            .call(ToolCall::Window(Window::Tabs(TabAction::Close(None))))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.starts_with("[0] (active)"), "{}", out.text);
        assert!(!out.text.contains("[1]"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}
