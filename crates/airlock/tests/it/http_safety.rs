//! `/mcp` over real sockets: Origin, Host, bearer auth, query-string tokens, body
//! limit, malformed JSON-RPC, foreign session ids, DELETE — and the server keeps
//! serving others throughout. Raw HTTP, so nothing in between is lenient for us.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::server::{BIN, serve, stop};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// One request on its own connection; `extra` are raw header lines.
async fn request(
    url: &str,
    method: &str,
    path_suffix: &str,
    extra: &[String],
    body: &[u8],
) -> Reply {
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    // A server that is gone answers status 0.
    let Ok(mut stream) = TcpStream::connect(&authority).await else {
        return Reply {
            status: 0,
            head: String::new(),
            body: String::new(),
        };
    };
    let mut head = format!(
        "{method} /mcp{path_suffix} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for line in extra {
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    // A server may answer (413) before reading the whole body and close; that is fine.
    let _ = stream.write_all(body).await;
    let mut raw = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut raw)).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

async fn initialize(url: &str, extra: &[String]) -> Reply {
    request(url, "POST", "", extra, INIT.as_bytes()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origin_host_body_and_session_checks() {
    let tmp = tempfile::tempdir().unwrap();
    let served = serve(tmp.path(), None).await;
    let url = served.url.clone();

    let ok = initialize(&url, &[]).await;
    assert_eq!(ok.status, 200, "{}", ok.head);
    let session = ok.header("mcp-session-id").expect("a session id");
    assert!(
        session.len() >= 32,
        "session ids are long and random: {session}"
    );
    let second = initialize(&url, &[])
        .await
        .header("mcp-session-id")
        .unwrap();
    assert_ne!(session, second);

    let foreign = initialize(&url, &["Origin: http://evil.example".into()]).await;
    assert_eq!(foreign.status, 403, "foreign Origin: {}", foreign.head);
    let own_origin = url.trim_end_matches("/mcp").to_owned();
    let same_origin = initialize(&url, &[format!("Origin: {own_origin}")]).await;
    assert_eq!(
        same_origin.status, 200,
        "Airlock's own origin: {}",
        same_origin.head
    );
    let other_port = initialize(&url, &["Origin: http://127.0.0.1:1".into()]).await;
    assert_eq!(
        other_port.status, 403,
        "another local origin: {}",
        other_port.head
    );
    let null_origin = initialize(&url, &["Origin: null".into()]).await;
    assert_eq!(null_origin.status, 403, "null Origin: {}", null_origin.head);

    // A DNS-rebinding page would arrive with its own host name.
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut stream = TcpStream::connect(&authority).await.unwrap();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{INIT}",
        INIT.len()
    );
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 403"), "foreign Host: {raw}");

    let huge = vec![b' '; 5 * 1024 * 1024];
    let too_big = request(&url, "POST", "", &[], &huge).await;
    assert_eq!(too_big.status, 413, "{}", too_big.head);

    let malformed = request(&url, "POST", "", &[], b"{not json").await;
    assert_eq!(
        malformed.status, 400,
        "malformed: {} {}",
        malformed.head, malformed.body
    );
    assert!(malformed.body.contains("-32700"), "{}", malformed.body);

    let unknown = request(
        &url,
        "POST",
        "",
        &[
            "Mcp-Session-Id: not-a-session".into(),
            "MCP-Protocol-Version: 2025-11-25".into(),
        ],
        LIST.as_bytes(),
    )
    .await;
    assert_eq!(unknown.status, 404, "unknown session id: {}", unknown.head);

    let token_in_query = request(&url, "POST", "?access_token=abc", &[], INIT.as_bytes()).await;
    assert_eq!(token_in_query.status, 400, "{}", token_in_query.head);

    // DELETE ends the session; the id is dead afterwards.
    let deleted = request(
        &url,
        "DELETE",
        "",
        &[
            format!("Mcp-Session-Id: {session}"),
            "MCP-Protocol-Version: 2025-11-25".into(),
        ],
        b"",
    )
    .await;
    // 204: the session is gone (the Python SDK warns on rmcp's 202).
    assert_eq!(deleted.status, 204, "DELETE: {}", deleted.head);
    let after = request(
        &url,
        "POST",
        "",
        &[
            format!("Mcp-Session-Id: {session}"),
            "MCP-Protocol-Version: 2025-11-25".into(),
        ],
        LIST.as_bytes(),
    )
    .await;
    assert_eq!(after.status, 404, "deleted session: {}", after.head);

    // After all of that the server still serves a well-behaved client.
    assert_eq!(initialize(&url, &[]).await.status, 200);
    stop(served).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_token_is_required_when_configured() {
    let tmp = tempfile::tempdir().unwrap();
    let token = "bearer-token-0123456789abcdef";
    let served = serve(tmp.path(), Some(token)).await;
    let url = served.url.clone();

    let missing = initialize(&url, &[]).await;
    assert_eq!(missing.status, 401, "{}", missing.head);
    // RFC 9728: the challenge names where the resource describes itself.
    let root = url.trim_end_matches("/mcp");
    assert_eq!(
        missing.header("www-authenticate"),
        Some(format!(
            "Bearer realm=\"airlock\", resource_metadata=\"{root}/.well-known/oauth-protected-resource\""
        ))
    );
    let wrong = initialize(
        &url,
        &["Authorization: Bearer wrong-token-0123456789".into()],
    )
    .await;
    assert_eq!(wrong.status, 401);
    assert!(!wrong.body.contains(token) && !wrong.head.contains(token));
    let in_query = request(
        &url,
        "POST",
        &format!("?access_token={token}"),
        &[],
        INIT.as_bytes(),
    )
    .await;
    assert_eq!(
        in_query.status, 400,
        "a token in the query string is refused even when right"
    );
    let right = initialize(&url, &[format!("Authorization: Bearer {token}")]).await;
    assert_eq!(right.status, 200, "{}", right.head);
    // Both refusals are on the audit record, without the token tried.
    let mut exported = String::new();
    for _ in 0..100 {
        let out = std::process::Command::new(crate::server::BIN)
            .args(["audit", "export", "--data-dir"])
            .arg(tmp.path().join("data"))
            .env_remove("AIRLOCK_CONFIG")
            .output()
            .unwrap();
        exported = String::from_utf8_lossy(&out.stdout).into_owned();
        if exported.matches("auth_failure").count() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(exported.contains(r#""reason":"no token""#), "{exported}");
    assert!(exported.contains(r#""reason":"wrong token""#), "{exported}");
    assert!(!exported.contains("wrong-token-0123456789") && !exported.contains(token));
    // Health stays open for probes.
    let health = reqwest_free_get(&url, "/healthz").await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    stop(served).await;
}

async fn reqwest_free_get(url: &str, path: &str) -> String {
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut stream = TcpStream::connect(&authority).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    raw
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_a_public_address_without_auth() {
    let out = tokio::process::Command::new(BIN)
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env_remove("AIRLOCK_API_KEY")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0:0 without authentication"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_broken_clients_do_not_wedge_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let served = serve(tmp.path(), None).await;
    let url = served.url.clone();
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut stuck = Vec::new();
    // Half-sent headers, never finished (slowloris).
    for _ in 0..50 {
        let mut s = TcpStream::connect(&authority).await.unwrap();
        s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
            .await
            .unwrap();
        stuck.push(s);
    }
    // A body promised but never sent.
    let mut s = TcpStream::connect(&authority).await.unwrap();
    s.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{{").as_bytes())
        .await
        .unwrap();
    stuck.push(s);
    // Meanwhile a well-behaved client is served promptly.
    let ok = tokio::time::timeout(Duration::from_secs(10), initialize(&url, &[])).await;
    assert_eq!(ok.expect("served while others stall").status, 200);
    drop(stuck);
    stop(served).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_era_checks_headers_against_the_body() {
    let tmp = tempfile::tempdir().unwrap();
    let served = serve(tmp.path(), None).await;
    let url = served.url.clone();
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let list = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{meta}}}}}"#);
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"browser_snapshot","arguments":{{}},{meta}}}}}"#
    );
    let modern = |method: &str| {
        vec![
            "MCP-Protocol-Version: 2026-07-28".to_owned(),
            format!("Mcp-Method: {method}"),
        ]
    };

    let ok = request(&url, "POST", "", &modern("tools/list"), list.as_bytes()).await;
    assert_eq!(ok.status, 200, "{}", ok.head);
    assert!(
        ok.body.contains("browser_navigate"),
        "no handshake needed: {}",
        &ok.body[..ok.body.len().min(300)]
    );
    assert!(
        ok.header("mcp-session-id").is_none(),
        "stateless: no session id"
    );

    let method_mismatch = request(&url, "POST", "", &modern("tools/call"), list.as_bytes()).await;
    assert_eq!(
        method_mismatch.status, 400,
        "Mcp-Method differs from the body"
    );
    let mut headers = modern("tools/call");
    headers.push("Mcp-Name: browser_click".to_owned());
    let name_mismatch = request(&url, "POST", "", &headers, call.as_bytes()).await;
    assert_eq!(name_mismatch.status, 400, "Mcp-Name differs from the body");
    let unknown_version = request(
        &url,
        "POST",
        "",
        &[
            "MCP-Protocol-Version: 1999-01-01".to_owned(),
            "Mcp-Method: tools/list".to_owned(),
        ],
        list.as_bytes(),
    )
    .await;
    assert_eq!(unknown_version.status, 400);

    // Discovery declares tools and nothing else, and the lists it does not declare
    // are not served (an empty prompts list would be an undeclared handler).
    let discover =
        format!(r#"{{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{{{meta}}}}}"#);
    let found = request(
        &url,
        "POST",
        "",
        &modern("server/discover"),
        discover.as_bytes(),
    )
    .await;
    assert_eq!(found.status, 200, "{}", found.head);
    let json = found
        .body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(&found.body);
    let found: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    let declared = found["result"]["capabilities"].as_object().unwrap();
    assert!(declared.contains_key("tools"), "{found}");
    for absent in ["prompts", "resources", "logging"] {
        assert!(!declared.contains_key(absent), "{absent} declared: {found}");
    }
    for method in ["prompts/list", "resources/list", "resources/templates/list"] {
        let body = format!(r#"{{"jsonrpc":"2.0","id":4,"method":"{method}","params":{{{meta}}}}}"#);
        let refused = request(&url, "POST", "", &modern(method), body.as_bytes()).await;
        assert!(
            refused.body.contains("-32601"),
            "{method}: {} {}",
            refused.status,
            refused.body
        );
    }
    stop(served).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_authentication_is_limited_per_address() {
    let tmp = tempfile::tempdir().unwrap();
    let token = "bearer-token-0123456789abcdef";
    let served = serve(tmp.path(), Some(token)).await;
    let url = served.url.clone();
    let wrong = ["Authorization: Bearer wrong-token-0123456789".to_owned()];
    let mut statuses = Vec::new();
    for _ in 0..14 {
        statuses.push(initialize(&url, &wrong).await.status);
    }
    assert_eq!(&statuses[..10], &[401; 10], "{statuses:?}");
    assert_eq!(&statuses[10..], &[429; 4], "{statuses:?}");
    let limited = initialize(&url, &wrong).await;
    let retry: u64 = limited
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After: {}", limited.head));
    assert!((1..=60).contains(&retry), "{retry}");
    // While the window lasts, even the right token from this address waits.
    let right = initialize(&url, &[format!("Authorization: Bearer {token}")]).await;
    assert_eq!(right.status, 429, "{}", right.head);
    // Health stays open.
    let health = reqwest_free_get(&url, "/healthz").await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    stop(served).await;
}

/// Behind a proxy the operator trusts (`[server] trusted_proxies`), the limiter keys
/// on the client the proxy names: one client's wrong keys lock out that client, not
/// every client of the proxy, and a client cannot escape by writing its own
/// leftmost `X-Forwarded-For` entry. Without that line the header names nobody:
/// the same requests all count against the proxy's (here loopback's) address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_guesses_lock_out_the_client_it_names() {
    let token = "bearer-token-0123456789abcdef";
    for trusted in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("airlock.toml");
        let line = if trusted {
            "[server]\ntrusted_proxies = [\"127.0.0.1\", \"10.0.0.0/8\"]\n"
        } else {
            ""
        };
        std::fs::write(&config, line).unwrap();
        let served = crate::server::serve_with(tmp.path(), Some(token), Some(&config)).await;
        let url = served.url.clone();
        let from = |key: &str, forwarded: &str| {
            [
                format!("Authorization: Bearer {key}"),
                format!("X-Forwarded-For: {forwarded}"),
            ]
        };
        let wrong = "wrong-token-0123456789";
        for _ in 0..10 {
            let out = initialize(&url, &from(wrong, "203.0.113.9")).await;
            assert_eq!(out.status, 401, "{}", out.head);
        }
        let out = initialize(&url, &from(wrong, "203.0.113.9")).await;
        assert_eq!(out.status, 429, "trusted {trusted}: {}", out.head);
        // Another client behind the same proxy, with the right key.
        let other = initialize(&url, &from(token, "203.0.113.10")).await;
        assert_eq!(
            other.status,
            if trusted { 200 } else { 429 },
            "trusted {trusted}: {}",
            other.head
        );
        // The guesser writes another address first; the proxy appended its own.
        let forged = initialize(&url, &from(token, "203.0.113.10, 203.0.113.9, 10.1.2.3")).await;
        assert_eq!(forged.status, 429, "trusted {trusted}: {}", forged.head);
        stop(served).await;
    }
}

/// A guesser holding one valid low-role key slips it in after every five wrong
/// tokens (and then after five wrong console sign-ins): its successes do not erase
/// its failures, so it is limited at the same count as without them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_key_between_guesses_does_not_reset_the_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let token = "bearer-token-0123456789abcdef";
    let config = tmp.path().join("airlock.toml");
    std::fs::write(
        &config,
        "[server]\nadmin_key = \"admin-key-0123456789abcdef\"\n",
    )
    .unwrap();
    let served = crate::server::serve_with(tmp.path(), Some(token), Some(&config)).await;
    let url = served.url.clone();
    let wrong = ["Authorization: Bearer wrong-token-0123456789".to_owned()];
    let right = [format!("Authorization: Bearer {token}")];
    // A request with no token at all is no guess: a dozen of them lock nothing out.
    for _ in 0..12 {
        assert_eq!(initialize(&url, &[]).await.status, 401);
    }
    assert_eq!(initialize(&url, &right).await.status, 200);
    let mut guesses = Vec::new();
    for _ in 0..5 {
        guesses.push(initialize(&url, &wrong).await.status);
    }
    assert_eq!(initialize(&url, &right).await.status, 200);
    for _ in 0..5 {
        guesses.push(initialize(&url, &wrong).await.status);
    }
    assert_eq!(guesses, [401; 10], "{guesses:?}");
    // Ten failures in the window: the next guess is limited, successes or not.
    let limited = initialize(&url, &wrong).await;
    assert_eq!(limited.status, 429, "{}", limited.head);
    stop(served).await;

    // The console's sign-in shares the limiter.
    let tmp = tempfile::tempdir().unwrap();
    let served = crate::server::serve_with(tmp.path(), Some(token), Some(&config)).await;
    let url = served.url.clone();
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let sign_in = |key: &'static str| {
        let authority = authority.clone();
        async move {
            let body = format!("key={key}");
            let mut stream = TcpStream::connect(&authority).await.unwrap();
            let req = format!(
                "POST /console/sign-in HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(req.as_bytes()).await.unwrap();
            let mut raw = String::new();
            stream.read_to_string(&mut raw).await.unwrap();
            raw.split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<u16>().ok())
                .unwrap_or(0)
        }
    };
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(sign_in("wrong-key-0123456789abcdef").await);
    }
    // A right admin key signs in (a redirect), which must not forgive the rest.
    assert_eq!(sign_in("admin-key-0123456789abcdef").await, 303);
    for _ in 0..5 {
        statuses.push(sign_in("wrong-key-0123456789abcdef").await);
    }
    assert_eq!(statuses, [401; 10], "{statuses:?}");
    assert_eq!(sign_in("wrong-key-0123456789abcdef").await, 429);
    stop(served).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_killed_mid_write_leaves_a_log_that_verifies_to_its_last_durable_event() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let tmp = tempfile::tempdir().unwrap();
    let served = serve(tmp.path(), None).await;
    let url = served.url.clone();
    let init = initialize(&url, &[]).await;
    let session = init.header("mcp-session-id").expect("a session id");
    let header = [format!("Mcp-Session-Id: {session}")];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    request(&url, "POST", "", &header, initialized.as_bytes()).await;
    // An agent calling as fast as it can: each call is an audit write (and every
    // hundredth a signed checkpoint) when the gateway is killed.
    let calls = Arc::new(AtomicUsize::new(0));
    let stop_calling = Arc::new(AtomicBool::new(false));
    let agent = {
        let (url, header, calls, stop_calling) = (
            url.clone(),
            header.clone(),
            calls.clone(),
            stop_calling.clone(),
        );
        tokio::spawn(async move {
            let mut id = 10;
            while !stop_calling.load(Ordering::Acquire) {
                id += 1;
                let call = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"browser_tabs","arguments":{{"action":"list"}}}}}}"#
                );
                let reply = tokio::time::timeout(
                    Duration::from_secs(10),
                    request(&url, "POST", "", &header, call.as_bytes()),
                )
                .await;
                match reply {
                    // Answered: the result arrived (a stream the kill cut is not).
                    Ok(r) if r.body.contains(r#""isError":false"#) => {
                        calls.fetch_add(1, Ordering::AcqRel);
                    }
                    Ok(r) if r.status == 200 && r.body.contains(r#""result""#) => {
                        panic!("a call failed: {}", r.body)
                    }
                    _ => break,
                }
            }
        })
    };
    while calls.load(Ordering::Acquire) < 230 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = nix::unistd::Pid::from_raw(served.child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    let mut child = served.child;
    child.wait().await.unwrap();
    stop_calling.store(true, Ordering::Release);
    agent.await.unwrap();
    // Its Chromium reads EOF on the DevTools pipe and exits by itself.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !airlock_test_support::chromium_processes_under(tmp.path()).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "Chromium outlived its killed gateway"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let out = std::process::Command::new(BIN)
        .args(["audit", "verify"])
        .env_remove("AIRLOCK_CONFIG")
        .env("AIRLOCK_DATA_DIR", tmp.path().join("data"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: u64 = text
        .strip_prefix("ok: ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    // Every call answered was on the record before its answer (plus the session
    // opening); nothing durable was lost or left half-written.
    assert!(events > 230, "{text}");
    assert!(text.contains("checkpoint"), "{text}");
}

// A GET with extra header lines, the raw response back.
async fn get_with(url: &str, path: &str, headers: &[&str]) -> String {
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut stream = TcpStream::connect(&authority).await.unwrap();
    let mut head = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    raw
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_calls_sessions_and_refusals_by_bounded_labels() {
    let tmp = tempfile::tempdir().unwrap();
    let served = serve(tmp.path(), None).await;
    let url = served.url.clone();
    let init = initialize(&url, &[]).await;
    let session = init.header("mcp-session-id").expect("a session id");
    let header = [format!("Mcp-Session-Id: {session}")];
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    request(&url, "POST", "", &header, initialized.as_bytes()).await;
    let call = |id: u32, name: &str, args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{args}}}}}"#
        )
    };
    for (id, name, args) in [
        (2, "browser_tabs", r#"{"action":"list"}"#),
        (3, "browser_tabs", r#"{"action":"list"}"#),
        (4, "browser_navigate", r#"{"url":"file:///etc/passwd"}"#),
    ] {
        let reply = request(&url, "POST", "", &header, call(id, name, args).as_bytes()).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    // Session events reach the figures through the audit feed: wait for them.
    let mut text = String::new();
    for _ in 0..200 {
        text = get_with(&url, "/metrics", &[]).await;
        if text.contains("airlock_sessions_opened_total{") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains("content-type: application/openmetrics-text"),
        "{text}"
    );
    for line in [
        r#"airlock_tool_calls_total{tool="browser_tabs",outcome="ok"} 2"#,
        r#"airlock_tool_calls_total{tool="browser_navigate",outcome="policy_denied"} 1"#,
        r#"airlock_tool_call_duration_seconds_count{tool="browser_tabs"} 2"#,
        r#"airlock_sessions_opened_total{isolation="context",start="warm"} 1"#,
        "airlock_sessions_live 1",
        "airlock_approvals_pending 0",
        "airlock_browser_launches_total 1",
        r#"airlock_session_open_duration_seconds_count{start="warm"} 1"#,
    ] {
        assert!(text.contains(line), "no `{line}` in:\n{text}");
    }
    // No page, URL or tenant becomes a label.
    assert!(
        !text.contains("passwd") && !text.contains("tenant="),
        "{text}"
    );
    stop(served).await;

    // Once keys are configured, the figures need the approver's key.
    let tmp = tempfile::tempdir().unwrap();
    let admin = "admin-key-0123456789abcdef";
    let agent = "agent-key-0123456789abcdef";
    let config = tmp.path().join("airlock.toml");
    std::fs::write(&config, format!("[server]\nadmin_key = \"{admin}\"\n")).unwrap();
    let served = crate::server::serve_with(tmp.path(), Some(agent), Some(&config)).await;
    let status = |raw: &str| raw.split_whitespace().nth(1).unwrap_or("").to_owned();
    let none = get_with(&served.url, "/metrics", &[]).await;
    assert_eq!(status(&none), "401", "{none}");
    let by_agent = get_with(
        &served.url,
        "/metrics",
        &[&format!("Authorization: Bearer {agent}")],
    )
    .await;
    assert_eq!(status(&by_agent), "403", "{by_agent}");
    let bearer = format!("Authorization: Bearer {admin}");
    let by_admin = get_with(&served.url, "/metrics", &[&bearer]).await;
    assert_eq!(status(&by_admin), "200", "{by_admin}");
    // The two refusals are on the record, and so in the figures (through the feed).
    let mut text = by_admin;
    for _ in 0..200 {
        if text.contains("airlock_auth_failures_total{surface=\"api\"} 2") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = get_with(&served.url, "/metrics", &[&bearer]).await;
    }
    assert!(
        text.contains("airlock_auth_failures_total{surface=\"api\"} 2"),
        "{text}"
    );
    stop(served).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluate_and_uploads_are_listed_only_where_the_operator_turned_them_on() {
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let list = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{meta}}}}}"#);
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"browser_evaluate","arguments":{{"function":"() => 6 * 7"}},{meta}}}}}"#
    );
    let headers = |method: &str, name: Option<&str>| {
        let mut h = vec![
            "MCP-Protocol-Version: 2026-07-28".to_owned(),
            format!("Mcp-Method: {method}"),
        ];
        if let Some(name) = name {
            h.push(format!("Mcp-Name: {name}"));
        }
        h
    };
    for on in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("airlock.toml");
        let uploads = if on {
            format!("upload_dir = {:?}\n", tmp.path().display().to_string())
        } else {
            String::new()
        };
        std::fs::write(
            &config,
            format!("[tools]\nevaluate = {on}\n{uploads}[sessions]\nwarm = 0\n"),
        )
        .unwrap();
        let served = crate::server::serve_with(tmp.path(), None, Some(&config)).await;
        let url = served.url.clone();
        let listed = request(
            &url,
            "POST",
            "",
            &headers("tools/list", None),
            list.as_bytes(),
        )
        .await;
        assert_eq!(listed.status, 200, "{}", listed.head);
        assert_eq!(listed.body.contains("\"browser_evaluate\""), on, "on={on}");
        assert_eq!(
            listed.body.contains("\"browser_file_upload\""),
            on,
            "on={on}"
        );
        let called = request(
            &url,
            "POST",
            "",
            &headers("tools/call", Some("browser_evaluate")),
            call.as_bytes(),
        )
        .await;
        assert_eq!(called.status, 200, "{}", called.head);
        if on {
            assert!(called.body.contains("42"), "{}", called.body);
            assert!(!called.body.contains("\"isError\":true"), "{}", called.body);
        } else {
            // Called unlisted: no such tool here (and the gateway refuses it on
            // every surface; tested there).
            assert!(called.body.contains("tool not found"), "{}", called.body);
            assert!(!called.body.contains("42"), "{}", called.body);
        }
        stop(served).await;
    }
}

/// Keys made with `airlock key create` are authentication enough to listen off
/// loopback, and the start-up line says authentication is on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_keys_let_the_server_listen_off_loopback_and_say_auth_is_on() {
    use tokio::io::AsyncBufReadExt as _;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let cli = |args: &[&str]| {
        std::process::Command::new(BIN)
            .args(args)
            .arg("--data-dir")
            .arg(&data)
            .env_remove("AIRLOCK_CONFIG")
            .env_remove("AIRLOCK_API_KEY")
            .output()
            .unwrap()
    };
    assert!(cli(&["tenant", "create", "acme"]).status.success());
    assert!(
        cli(&["key", "create", "--tenant", "acme", "--role", "act"])
            .status
            .success()
    );
    let mut child = tokio::process::Command::new(BIN)
        .args(["serve", "--listen", "0.0.0.0:0", "--data-dir"])
        .arg(&data)
        .env("TMPDIR", tmp.path())
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("AIRLOCK_API_KEY")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("MCP endpoint") {
                return line;
            }
        }
        panic!("serve exited before listening");
    })
    .await
    .expect("listening within 30 s");
    assert!(line.contains("auth=true"), "{line}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id().unwrap() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(child.wait().await.unwrap().success());
}

/// `--log-format json` writes one JSON object a line on stderr (for a collector),
/// and `--log-level` filters by level.
#[test]
fn logs_are_json_lines_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(BIN)
        .args([
            "--log-format",
            "json",
            "--log-level",
            "info",
            "mcp",
            "--data-dir",
        ])
        .arg(tmp.path().join("data"))
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("RUST_LOG")
        .env("TMPDIR", tmp.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let logs: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        logs.iter().any(|l| l["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("config: none"))),
        "{stderr}"
    );
    assert!(logs.iter().all(|l| l["level"] != "DEBUG"), "{stderr}");
}
