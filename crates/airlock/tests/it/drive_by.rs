//! A web page the operator has open attacks the gateway on loopback in its default
//! configuration (no keys): a cross-site form post that needs no preflight, and a
//! DNS-rebinding page that reaches 127.0.0.1 under its own name. Every surface (REST,
//! console, its live socket, `/metrics`, the event stream, `/mcp`) refuses both, and
//! the `mcp_url`s handed out never come from the request's `Host`.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::server::{serve, serve_with, stop};

struct Reply {
    status: u16,
    body: String,
}

/// One raw request on its own connection: `host` is the `Host` header sent.
async fn raw(
    authority: &str,
    host: &str,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> Reply {
    let mut stream = TcpStream::connect(authority).await.unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for line in headers {
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head.push_str(body);
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Reply {
        status: head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        body: body.to_owned(),
    }
}

fn authority(url: &str) -> String {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned()
}

const LEASE: &str = r#"{"user_id":"u1","conversation_id":"c1"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_page_cannot_drive_the_default_gateway() {
    let tmp = tempfile::tempdir().unwrap();
    let served = serve(tmp.path(), None).await;
    let at = authority(&served.url);
    let port = at.rsplit(':').next().unwrap().to_owned();

    // A cross-site form post (`text/plain`: no preflight) to open a session.
    let posted = raw(
        &at,
        &at,
        "POST",
        "/api/v1/sessions",
        &[
            "Content-Type: text/plain",
            "Origin: http://evil.example",
            "Sec-Fetch-Site: cross-site",
        ],
        LEASE,
    )
    .await;
    assert_eq!(posted.status, 403, "{}", posted.body);
    assert!(posted.body.contains("\"forbidden\""), "{}", posted.body);
    // A browser that sent no Origin but says the request is cross-site.
    let no_origin = raw(
        &at,
        &at,
        "POST",
        "/api/v1/sessions",
        &["Content-Type: text/plain", "Sec-Fetch-Site: cross-site"],
        LEASE,
    )
    .await;
    assert_eq!(no_origin.status, 403, "{}", no_origin.body);
    // Not JSON, from anywhere: refused before it is read.
    let plain = raw(
        &at,
        &at,
        "POST",
        "/api/v1/sessions",
        &["Content-Type: text/plain"],
        LEASE,
    )
    .await;
    assert_eq!(plain.status, 415, "{}", plain.body);
    assert!(plain.body.contains("application/json"), "{}", plain.body);
    let listed = raw(&at, &at, "GET", "/api/v1/sessions", &[], "").await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.contains(r#""sessions":[]"#), "{}", listed.body);

    // A rebinding page names its own host: every surface refuses it.
    let evil = format!("evil.example:{port}");
    let upgrade = [
        "Connection: Upgrade",
        "Upgrade: websocket",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    ];
    for (method, path, headers) in [
        ("GET", "/api/v1/sessions", &[][..]),
        ("DELETE", "/api/v1/sessions/0123456789abcdef", &[][..]),
        ("GET", "/api/v1/events", &[][..]),
        ("GET", "/api/v1/approvals", &[][..]),
        ("GET", "/metrics", &[][..]),
        ("GET", "/", &[][..]),
        ("GET", "/console/sign-in", &[][..]),
        ("GET", "/console/sessions/x/live/ws", &upgrade[..]),
        ("GET", "/mcp", &["Accept: text/event-stream"][..]),
    ] {
        let reply = raw(&at, &evil, method, path, headers, "").await;
        assert_eq!(reply.status, 403, "{method} {path}: {}", reply.body);
    }
    let lease = raw(
        &at,
        &evil,
        "POST",
        "/api/v1/sessions",
        &["Content-Type: application/json"],
        LEASE,
    )
    .await;
    assert_eq!(lease.status, 403, "{}", lease.body);
    // Probes say nothing and answer any host.
    assert_eq!(
        raw(&at, &evil, "GET", "/healthz", &[], "").await.status,
        200
    );

    // A session leased the proper way is named at the bound address, whatever name
    // the request used to reach it.
    let leased = raw(
        &at,
        &format!("localhost:{port}"),
        "POST",
        "/api/v1/sessions",
        &["Content-Type: application/json"],
        LEASE,
    )
    .await;
    assert_eq!(leased.status, 201, "{}", leased.body);
    let view: serde_json::Value = serde_json::from_str(&leased.body).unwrap();
    let mcp_url = view["mcp_url"].as_str().unwrap();
    assert!(
        mcp_url.starts_with(&format!("http://{at}/mcp/s/")),
        "{mcp_url}"
    );
    let id = view["session_id"].as_str().unwrap();
    let ended = raw(
        &at,
        &at,
        "DELETE",
        &format!("/api/v1/sessions/{id}"),
        &[],
        "",
    )
    .await;
    assert_eq!(ended.status, 204, "{}", ended.body);
    stop(served).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_urls_start_with_the_configured_public_url() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("airlock.toml");
    std::fs::write(
        &config,
        "[server]\npublic_url = \"https://airlock.test:8443/\"\n",
    )
    .unwrap();
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    let at = authority(&served.url);
    // The public name is one the server answers to (a TLS proxy in front forwards it).
    let leased = raw(
        &at,
        "airlock.test:8443",
        "POST",
        "/api/v1/sessions",
        &[
            "Content-Type: application/json",
            "Origin: https://airlock.test:8443",
        ],
        LEASE,
    )
    .await;
    assert_eq!(leased.status, 201, "{}", leased.body);
    let view: serde_json::Value = serde_json::from_str(&leased.body).unwrap();
    let mcp_url = view["mcp_url"].as_str().unwrap();
    assert!(
        mcp_url.starts_with("https://airlock.test:8443/mcp/s/"),
        "{mcp_url}"
    );
    // Listing over the bound address names the same URL.
    let listed = raw(&at, &at, "GET", "/api/v1/sessions", &[], "").await;
    assert!(
        listed.body.contains("https://airlock.test:8443/mcp/s/"),
        "{}",
        listed.body
    );
    stop(served).await;
}
