//! Approvals through the operator's API of a real `airlock serve`, with an agent on
//! the official MCP Python SDK: REST approve and deny, a CLI decision from a second
//! process, a timeout, the agent's key refused, and the event stream (see
//! `clients/approvals.py`); and the approval webhook, received here, checked against
//! an HMAC computed here.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_test_support::FixtureSite;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::Command;

use crate::mcp_clients::{assert_clean, fixture_config, python, root};
use crate::server::{BIN, serve_with, stop};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_waits_while_an_operator_decides_over_rest_and_the_cli() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let agent_token = "agent-token-0123456789abcdef";
    let admin_key = "admin-key-fedcba9876543210";
    let hook_secret = "hook-secret-0123456789abcdef";
    let hook = Receiver::start().await;
    let config = fixture_config(
        tmp.path(),
        &site,
        &format!(
            "[server]\nadmin_key = \"{admin_key}\"\n[approvals]\ntimeout_secs = 4\nwebhook_url = \"http://127.0.0.1:{}/hooks/airlock?x=1\"\nwebhook_secret = \"{hook_secret}\"\n",
            hook.port
        ),
    );
    let served = serve_with(tmp.path(), Some(agent_token), Some(&config)).await;
    let out = Command::new(python())
        .arg(root().join("crates/airlock/tests/clients/approvals.py"))
        .args([&served.url, &base, agent_token, admin_key, BIN])
        .env("TMPDIR", tmp.path())
        .env("AIRLOCK_DATA_DIR", tmp.path().join("data"))
        .env("AIRLOCK_CONFIG", &config)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), out)
        .await
        .expect("the approvals flow finished within 3 minutes")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "approvals flow failed:\n{stdout}\n--- stderr ---\n{stderr}"
    );

    // The webhook announced the four requests and four decisions, each signed; the
    // first answer was a 503, so the first announcement came twice.
    let deliveries = hook.until(9).await;
    let mut seqs: Vec<u64> = Vec::new();
    let mut kinds = Vec::new();
    for d in &deliveries {
        assert_eq!(d.path, "/hooks/airlock?x=1");
        let seq: u64 = d.header("x-airlock-delivery").parse().unwrap();
        let sig = d.header("x-airlock-signature");
        let (t, v1) = sig
            .strip_prefix("t=")
            .and_then(|rest| rest.split_once(",v1="))
            .unwrap_or_else(|| panic!("signature header {sig:?}"));
        assert_eq!(
            v1,
            hmac_hex(hook_secret, &format!("{t}.{}", d.body)),
            "{d:?}"
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(now.abs_diff(t.parse().unwrap()) < 300);
        let body: serde_json::Value = serde_json::from_str(&d.body).unwrap();
        assert_eq!(body["seq"], seq);
        assert_eq!(body["kind"], d.header("x-airlock-event"));
        assert!(!d.body.contains(agent_token) && !d.body.contains(admin_key));
        if !seqs.contains(&seq) {
            seqs.push(seq);
            kinds.push(format!(
                "{}:{}",
                body["kind"].as_str().unwrap(),
                body["event"]["status"].as_str().unwrap_or("")
            ));
        }
    }
    assert_eq!(
        deliveries[0].header("x-airlock-delivery"),
        deliveries[1].header("x-airlock-delivery"),
        "the first announcement is retried after the 503"
    );
    assert_eq!(
        kinds,
        [
            "approval_requested:",
            "approval_decided:approved",
            "approval_requested:",
            "approval_decided:denied",
            "approval_requested:",
            "approval_decided:approved",
            "approval_requested:",
            "approval_decided:expired",
        ]
    );
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    stop(served).await;
    assert_clean(tmp.path()).await;
}

fn hmac_hex(key: &str, data: &str) -> String {
    use hmac::{KeyInit as _, Mac as _};
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key.as_bytes()).unwrap();
    mac.update(data.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Delivery {
    pub(crate) fn header(&self, name: &str) -> String {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }
}

/// A webhook receiver on loopback: answers its first request 503, then 200.
pub(crate) struct Receiver {
    pub(crate) port: u16,
    got: Arc<Mutex<Vec<Delivery>>>,
    arrived: Arc<tokio::sync::Notify>,
}

impl Receiver {
    pub(crate) async fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(tokio::sync::Notify::new());
        let (g, a) = (got.clone(), arrived.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                reader.read_line(&mut line).await.unwrap();
                let path = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                let mut headers = Vec::new();
                loop {
                    line.clear();
                    reader.read_line(&mut line).await.unwrap();
                    let l = line.trim_end();
                    if l.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = l.split_once(':') {
                        headers.push((k.trim().to_owned(), v.trim().to_owned()));
                    }
                }
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .map_or(0, |(_, v)| v.parse().unwrap());
                let mut body = vec![0; len];
                reader.read_exact(&mut body).await.unwrap();
                let first = {
                    let mut got = g.lock().unwrap();
                    got.push(Delivery {
                        path,
                        headers,
                        body: String::from_utf8(body).unwrap(),
                    });
                    got.len() == 1
                };
                let status = if first {
                    "503 Service Unavailable"
                } else {
                    "200 OK"
                };
                let mut stream = reader.into_inner();
                let _ = stream
                    .write_all(
                        format!(
                            "HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        )
                        .as_bytes(),
                    )
                    .await;
                a.notify_one();
            }
        });
        Receiver { port, got, arrived }
    }

    /// The deliveries, once there are `n` of them (within 30 s).
    pub(crate) async fn until(&self, n: usize) -> Vec<Delivery> {
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let got = self.got.lock().unwrap().clone();
                if got.len() >= n {
                    return got;
                }
                self.arrived.notified().await;
            }
        })
        .await
        .unwrap_or_else(|_| {
            panic!(
                "fewer than {n} webhook deliveries: {:?}",
                self.got.lock().unwrap()
            )
        })
    }
}

/// In-client approval, opt-in: the official Python SDK answers the elicitation, over
/// stdio and over Streamable HTTP, in both protocol eras (see `clients/elicit.py`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_at_the_agents_client_approves_when_the_operator_allows_it() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture_config(
        tmp.path(),
        &site,
        // Long enough for the client to answer on a loaded machine; the dismissed case
        // waits it out.
        "[approvals]\ntimeout_secs = 10\nin_client = true\n",
    );
    let run = async |args: &[&str]| {
        let out = Command::new(python())
            .arg(root().join("crates/airlock/tests/clients/elicit.py"))
            .args(args)
            .env("TMPDIR", tmp.path())
            .env("AIRLOCK_DATA_DIR", tmp.path().join("data"))
            .env("AIRLOCK_CONFIG", &config)
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(120), out)
            .await
            .expect("the elicitation flow finished within 2 minutes")
            .expect("python runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(" passed, 0 failed"),
            "elicitation flow {args:?} failed:\n{stdout}\n--- stderr ---\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    for mode in ["legacy", "2026-07-28"] {
        run(&["stdio", BIN, &base, mode]).await;
    }
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    for mode in ["legacy", "2026-07-28"] {
        run(&["http", &served.url, &base, mode]).await;
    }
    stop(served).await;
    assert_clean(tmp.path()).await;
}

/// A held call whose client gave up (the official MCP Python SDK's read timeout, which
/// cancels the request) is withdrawn: its approval closes with the reason, approving
/// it is refused, and the click never runs; a client that asked for progress hears
/// while it waits that it waits for a person (`clients/ghost.py`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_call_whose_client_gave_up_is_withdrawn_and_one_that_waits_hears_why() {
    crate::mcp_clients::run_keyed(&python(), "ghost.py", "").await;
}

/// A held call whose client went away without cancelling (`clients/dropped.py`, raw
/// HTTP): a dropped stateless stream withdraws it at once (a named browser's, and a
/// one-off call's); in an MCP session a dropped stream leaves it pending, since the
/// client may resume the stream, and the session's `DELETE` withdraws it at once.
/// Approving a withdrawn call is refused, and the click never ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_call_whose_client_dropped_its_stream_or_session_is_withdrawn() {
    crate::mcp_clients::run_keyed(
        &python(),
        "dropped.py",
        "[[approvals.rules]]\nname = \"hold-one-off\"\ntools = [\"browser_navigate\"]\n\
         url = 'one-off'\nrisk = \"high\"\naction = \"approve\"\n",
    )
    .await;
}
