//! What an operator types into a held page: never shown to the agent, never sent to
//! another origin, and not typed at all while the page holds a socket open.

use super::*;
use airlock_gateway::{Reading, Window};

/// Where the field named `name` is on the page, in CSS pixels (its box's centre), as
/// the agent's snapshot with boxes gives it.
pub(crate) async fn centre_of(agent: &AgentSession, name: &str) -> (f64, f64) {
    let snap = agent
        .call(ToolCall::Read(Reading::Snapshot(SnapshotOptions {
            boxes: true,
            ..SnapshotOptions::default()
        })))
        .await;
    let line = snap
        .text
        .lines()
        .find(|l| l.contains(&format!("\"{name}\"")) && l.contains("[box="))
        .unwrap_or_else(|| panic!("no box for {name}: {}", snap.text));
    let b = &line[line.find("[box=").unwrap() + 5..];
    let n: Vec<f64> = b[..b.find(']').unwrap()]
        .split(',')
        .map(|v| v.trim().parse().unwrap())
        .collect();
    (n[0] + n[2] / 2.0, n[1] + n[3] / 2.0)
}

/// An operator holds the page and types `value` into the field named `field`, then
/// hands the page back.
async fn operator_types(gateway: &Gateway, agent: &AgentSession, field: &str, value: &str) {
    use airlock_gateway::OperatorInput;
    let (x, y) = centre_of(agent, field).await;
    let id = gateway.tenant_sessions("default", None)[0].id.to_string();
    gateway
        .operators()
        .take_over("default", &id, "op")
        .await
        .unwrap();
    gateway
        .operators()
        .operator_input("default", &id, "op", OperatorInput::Click { x, y }, None)
        .await
        .unwrap();
    gateway
        .operators()
        .operator_input(
            "default",
            &id,
            "op",
            OperatorInput::Text(zeroize::Zeroizing::new(value.to_owned())),
            Some((x, y)),
        )
        .await
        .unwrap();
    gateway
        .operators()
        .hand_back("default", &id, "op")
        .await
        .unwrap();
}

/// What an operator types during a take-over is the session's secret from then on:
/// a page that echoes it (title, URL, a mirror, a button's name, every encoding its
/// JavaScript makes) shows the agent `[REDACTED:operator]`, in every output and every
/// cut, and the page cannot send it to another origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_an_operator_types_never_reaches_the_agent_nor_another_origin() {
    with_browser(|h| async move {
        let collector = FixtureServer::start(std::env::temp_dir()).await;
        let gateway = gateway_allowing(&h, &[collector.port()]).await;
        // The forms the page's own JavaScript makes of the value, read without Airlock.
        let (forms, _) = page_forms(&h, LATIN, 0).await;
        let pieces = pieces(&forms, LATIN);
        let agent = gateway.agent_session();
        let out = agent
            .call(navigate(format!("{}?forms=1", h.site.url("app/echo.html"))))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        operator_types(&gateway, &agent, "Anything", LATIN).await;

        let mut seen = String::new();
        for call in [
            ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())),
            read_at(0),
            ToolCall::Window(Window::Tabs(TabAction::List)),
            find("form"),
            find("Log in as"),
        ] {
            let out = agent.call(call).await;
            seen.push_str(&out.text);
            seen.push('\n');
        }
        assert!(seen.contains("[REDACTED:operator]"), "{seen}");
        assert!(
            seen.contains("form raw: [REDACTED:operator]")
                && seen.contains("form b64utf8: dXNlcjp[REDACTED:operator]"),
            "{seen}"
        );
        assert_clean("after the take-over", &seen, &pieces);
        // Code and documents are refused now that the session holds a secret.
        let out = agent.call(ToolCall::Read(Reading::Pdf)).await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);

        // The page tries to send what the operator typed to an origin the policy
        // allows but the value is not bound to: every channel is refused.
        let url = format!(
            "{}?b={}&c={}",
            h.site.url("app/exfil.html"),
            h.site.b.port(),
            collector.port()
        );
        agent.call(navigate(url)).await;
        operator_types(&gateway, &agent, "Secret", LATIN).await;
        press(&agent, "Control", "control: sent").await;
        assert_eq!(collector.connections(), 1);
        let seen = press(&agent, "Send everywhere", "attempts done").await;
        assert!(seen.contains("it carried a form of `operator`"), "{seen}");
        assert!(
            seen.contains("a WebSocket's traffic cannot be inspected"),
            "{seen}"
        );
        assert_eq!(
            collector.connections(),
            1,
            "what the operator typed reached another origin"
        );
        gateway.shutdown().await;
    })
    .await;
}

/// A WebSocket server on loopback that accepts every handshake (RFC 6455) and keeps
/// the connection open, counting what arrives; returns its port and the byte count.
async fn socket_server() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    use base64::Engine as _;
    use sha1::Digest as _;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = received.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read_exact(&mut byte).await.is_ok() {
                    head.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&head);
                let key = text
                    .lines()
                    .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
                    .unwrap_or_default()
                    .trim()
                    .to_owned();
                let mut sha = sha1::Sha1::new();
                sha.update(format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes());
                let accept = base64::engine::general_purpose::STANDARD.encode(sha.finalize());
                let _ = stream
                    .write_all(format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n").as_bytes())
                    .await;
                let mut buf = [0u8; 1024];
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    counter.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    (port, received)
}

/// A page holding a WebSocket open before an operator takes over could carry what
/// they type away unseen: nothing is typed, and the operator is told why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_types_nothing_while_the_page_holds_a_socket_open() {
    with_browser(|h| async move {
        let (port, received) = socket_server().await;
        let gateway = gateway_allowing(&h, &[port]).await;
        let agent = gateway.agent_session();
        agent
            .call(navigate(format!("{}?c={port}", h.site.url("socket.html"))))
            .await;
        let out = agent
            .call(ToolCall::Read(Reading::WaitFor {
                condition: WaitCondition::Text("socket open".into()),
                timeout: Some(Duration::from_secs(10)),
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let (x, y) = centre_of(&agent, "Code").await;
        let id = gateway.tenant_sessions("default", None)[0].id.to_string();
        gateway
            .operators()
            .take_over("default", &id, "op")
            .await
            .unwrap();
        gateway
            .operators()
            .operator_input(
                "default",
                &id,
                "op",
                airlock_gateway::OperatorInput::Click { x, y },
                None,
            )
            .await
            .unwrap();
        let typed = gateway
            .operators()
            .operator_input(
                "default",
                &id,
                "op",
                airlock_gateway::OperatorInput::Text(zeroize::Zeroizing::new(LATIN.to_owned())),
                Some((x, y)),
            )
            .await;
        let e = typed.expect_err("typing while a socket is open");
        assert!(e.to_string().contains("holds a WebSocket open"), "{e}");
        assert_eq!(received.load(std::sync::atomic::Ordering::SeqCst), 0);
        gateway
            .operators()
            .hand_back("default", &id, "op")
            .await
            .unwrap();
        let out = agent.call(read_at(0)).await;
        assert!(!out.text.contains("Pä$$"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}
