//! Tenants, keys and leasing through a real `airlock serve`: keys made with the CLI
//! (`airlock tenant`, `airlock key`), sessions leased over REST and driven over MCP
//! (`clients/leasing.py`), and a gateway killed with SIGKILL whose open sessions the
//! next start ends on the record.

use std::path::Path;
use std::time::Duration;

use airlock_test_support::FixtureSite;
use tokio::process::Command;

use crate::mcp_clients::{assert_clean, fixture_config, python, root};
use crate::server::{BIN, serve_with, stop};

// Runs the CLI on the test's data dir; its stdout.
async fn cli(tmp: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN)
        .args(args)
        .arg("--data-dir")
        .arg(tmp.join("data"))
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("AIRLOCK_API_KEY")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "airlock {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

async fn key(tmp: &Path, tenant: &str, role: &str) -> String {
    let out = cli(tmp, &["key", "create", "--tenant", tenant, "--role", role]).await;
    let key = out.trim().to_owned();
    assert!(key.starts_with("alk_"), "{out}");
    key
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_leases_sessions_per_conversation_and_tenants_stay_apart() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let tmp = tempfile::tempdir().unwrap();
    cli(tmp.path(), &["tenant", "create", "acme"]).await;
    cli(tmp.path(), &["tenant", "create", "beta"]).await;
    let acme_act = key(tmp.path(), "acme", "act").await;
    let acme_observe = key(tmp.path(), "acme", "observe").await;
    let acme_admin = key(tmp.path(), "acme", "admin").await;
    let beta_act = key(tmp.path(), "beta", "act").await;
    // Keys are listed by id, tenant and role, never printed again.
    let listed = cli(tmp.path(), &["key", "list"]).await;
    assert_eq!(listed.lines().count(), 4, "{listed}");
    assert!(!listed.contains(&acme_act[4..]), "{listed}");
    let config = fixture_config(
        tmp.path(),
        &site,
        "[sessions]\nmax_per_user = 2\nwarm = 0\n",
    );
    // No configured key: the store's keys alone make this server authenticate.
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    let root_url = served.url.trim_end_matches("/mcp").to_owned();
    let out = Command::new(python())
        .arg(root().join("crates/airlock/tests/clients/leasing.py"))
        .args([
            &root_url,
            &base,
            &acme_act,
            &acme_observe,
            &acme_admin,
            &beta_act,
        ])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(240), out)
        .await
        .expect("the leasing flow finished within 4 minutes")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "leasing flow failed:\n{stdout}\n--- stderr ---\n{stderr}"
    );
    stop(served).await;
    assert_clean(tmp.path()).await;

    // The hundred racing leases opened one browser session: one session_open for
    // that conversation on the record.
    let events = cli(tmp.path(), &["audit", "export"]).await;
    let opens = events
        .lines()
        .filter(|l| {
            l.contains("\"kind\":\"session_open\"") && l.contains("\"conversation\":\"c2\"")
        })
        .count();
    assert_eq!(opens, 1, "{events}");
    // A revoked key is refused from then on.
    let id = cli(tmp.path(), &["key", "list", "--tenant", "beta"]).await;
    let id = id.split_whitespace().next().unwrap().to_owned();
    cli(tmp.path(), &["key", "revoke", &id]).await;
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    let status = http_status(&served.url.replace("/mcp", "/api/v1/sessions"), &beta_act).await;
    assert_eq!(status, 401);
    let status = http_status(&served.url.replace("/mcp", "/api/v1/sessions"), &acme_act).await;
    assert_eq!(status, 200);
    stop(served).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_a_killed_gateway_left_open_are_ended_at_the_next_start() {
    let site = FixtureSite::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let config = fixture_config(tmp.path(), &site, "[sessions]\nwarm = 0\n");
    let token = "agent-token-0123456789abcdef";
    let served = serve_with(tmp.path(), Some(token), Some(&config)).await;
    let sessions = served.url.replace("/mcp", "/api/v1/sessions");
    let body = r#"{"user_id":"u","conversation_id":"left-open"}"#;
    let (status, text) = http_post(&sessions, token, body).await;
    assert_eq!(status, 201, "{text}");
    let old_pid = served.child.id().unwrap() as i32;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(old_pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let mut child = served.child;
    child.wait().await.unwrap();
    // Its Chromium goes with the pipe; its profile stays until the next start.
    let served = serve_with(tmp.path(), Some(token), Some(&config)).await;
    stop(served).await;
    assert_clean(tmp.path()).await;
    let events = cli(tmp.path(), &["audit", "export"]).await;
    let closed: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("\"kind\":\"session_close\"") && l.contains("gateway gone"))
        .collect();
    assert_eq!(closed.len(), 1, "{events}");
    assert!(
        closed[0].contains("left-open")
            && closed[0].contains(&format!("\"gateway_pid\":{old_pid}")),
        "{}",
        closed[0]
    );
    // And only once: a third start finds nothing left.
    let served = serve_with(tmp.path(), Some(token), Some(&config)).await;
    stop(served).await;
    let events = cli(tmp.path(), &["audit", "export"]).await;
    assert_eq!(events.matches("gateway gone").count(), 1);
    cli(tmp.path(), &["audit", "verify"]).await;
}

async fn http_status(url: &str, token: &str) -> u16 {
    http(url, token, "GET", "").await.0
}

pub(crate) async fn http_post(url: &str, token: &str, body: &str) -> (u16, String) {
    http(url, token, "POST", body).await
}

// One HTTP/1.1 request over a plain socket: status and body.
async fn http(url: &str, token: &str, method: &str, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let request = format!(
        "{method} /{path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

// An HS256 JWT over `claims`, made here with HMAC-SHA256 (not with the code under test).
pub(crate) fn jwt(secret: &str, claims: &serde_json::Value) -> String {
    use base64::Engine as _;
    use hmac::{KeyInit as _, Mac as _};
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let signing_input = format!(
        "{}.{}",
        b64(br#"{"alg":"HS256","typ":"JWT"}"#),
        b64(claims.to_string().as_bytes())
    );
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(signing_input.as_bytes());
    format!("{signing_input}.{}", b64(&mac.finalize().into_bytes()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_leases_with_a_jwt_and_the_resource_describes_itself() {
    let site = FixtureSite::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let secret = "jwt-secret-0123456789abcdef-0123456789";
    // Tokens may only name tenants that exist: `tenant list` shows every holder.
    cli(tmp.path(), &["tenant", "create", "acme"]).await;
    cli(tmp.path(), &["tenant", "create", "beta"]).await;
    let config = fixture_config(
        tmp.path(),
        &site,
        &format!(
            "[sessions]\nwarm = 0\n[server.jwt]\nissuer = \"https://backend.test\"\naudience = \"airlock\"\nhs256_secret = \"{secret}\"\nleeway_secs = 5\n"
        ),
    );
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    let root_url = served.url.trim_end_matches("/mcp").to_owned();
    let sessions = format!("{root_url}/api/v1/sessions");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let claims = |tenant: Option<&str>, aud: &str, exp: i64| {
        let mut c = serde_json::json!({
            "iss": "https://backend.test", "aud": aud, "sub": "svc", "exp": exp, "role": "act",
        });
        if let Some(t) = tenant {
            c["tenant"] = serde_json::json!(t);
        }
        c
    };
    let body = r#"{"user_id":"u","conversation_id":"c"}"#;
    let good = jwt(secret, &claims(Some("acme"), "airlock", now + 300));
    let (status, text) = http_post(&sessions, &good, body).await;
    assert_eq!(status, 201, "{text}");
    let leased: serde_json::Value = serde_json::from_str(&text).unwrap();
    // The session is the JWT's tenant's: listed for it, not for another tenant.
    let (_, listed) = http(&sessions, &good, "GET", "").await;
    assert!(
        listed.contains(leased["session_id"].as_str().unwrap()),
        "{listed}"
    );
    let other = jwt(secret, &claims(Some("beta"), "airlock", now + 300));
    let (_, listed) = http(&sessions, &other, "GET", "").await;
    assert_eq!(listed, r#"{"sessions":[]}"#);
    for (token, why) in [
        (
            jwt(
                "another-secret-0123456789abcdef-012345",
                &claims(Some("acme"), "airlock", now + 300),
            ),
            "bad signature",
        ),
        (
            jwt(secret, &claims(Some("acme"), "someone-else", now + 300)),
            "wrong audience",
        ),
        (
            jwt(secret, &claims(Some("acme"), "airlock", now - 60)),
            "expired",
        ),
        (
            jwt(secret, &claims(None, "airlock", now + 300)),
            "missing tenant",
        ),
        (
            jwt(secret, &claims(Some("never-created"), "airlock", now + 300)),
            "unknown tenant",
        ),
    ] {
        let (head, _) = http_head(&sessions, &token, "GET").await;
        assert!(head.starts_with("HTTP/1.1 401"), "{why}: {head}");
        assert!(
            head.contains(&format!(
                "resource_metadata=\"{root_url}/.well-known/oauth-protected-resource\""
            )),
            "{why}: {head}"
        );
    }
    // RFC 9728: what this resource is and whose tokens it takes.
    let (status, metadata) = http(
        &format!("{root_url}/.well-known/oauth-protected-resource"),
        "",
        "GET",
        "",
    )
    .await;
    assert_eq!(status, 200, "{metadata}");
    let metadata: serde_json::Value = serde_json::from_str(&metadata).unwrap();
    assert_eq!(metadata["resource"], format!("{root_url}/mcp"));
    assert_eq!(metadata["authorization_servers"][0], "https://backend.test");
    stop(served).await;
    assert_clean(tmp.path()).await;
    // Each refusal is on the record with its reason.
    let events = cli(tmp.path(), &["audit", "export"]).await;
    for reason in [
        "jwt bad signature",
        "jwt wrong audience",
        "jwt expired",
        "jwt missing tenant",
        "jwt names an unknown tenant",
    ] {
        assert!(events.contains(reason), "{reason}: {events}");
    }
}

// The status line and headers of one request.
async fn http_head(url: &str, token: &str, method: &str) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let request = format!(
        "{method} /{path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.to_owned(), body.to_owned())
}

/// With the default caps, one tenant cannot take every session: it gets half the
/// gateway's, and another tenant still gets one. `doctor` says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_one_tenant_gets_half_the_sessions_and_another_still_gets_one() {
    let site = FixtureSite::start().await;
    let tmp = tempfile::tempdir().unwrap();
    cli(tmp.path(), &["tenant", "create", "acme"]).await;
    cli(tmp.path(), &["tenant", "create", "beta"]).await;
    let acme = key(tmp.path(), "acme", "act").await;
    let beta = key(tmp.path(), "beta", "act").await;
    let config = fixture_config(tmp.path(), &site, "[sessions]\nmax_total = 4\nwarm = 0\n");
    let doctor = Command::new(BIN)
        .arg("doctor")
        .env("AIRLOCK_CONFIG", &config)
        .env("AIRLOCK_DATA_DIR", tmp.path().join("data"))
        .output()
        .await
        .unwrap();
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        report.contains("4 live sessions in all") && report.contains("2 per tenant (half of them"),
        "{report}"
    );
    // The local worker's user and protections.
    assert!(
        report.contains("ok    browser worker: a process of its own"),
        "{report}"
    );
    assert!(
        report.contains("ok    worker memory: non-dumpable"),
        "{report}"
    );
    assert!(report.contains("as `airlock-worker`"), "{report}");
    assert!(!report.contains("note  worker user"), "{report}");
    // Its Chromium under a user of its own (the tests run as root).
    if nix::unistd::geteuid().is_root() {
        assert!(
            report.contains("ok    chromium user: `airlock-browser`"),
            "{report}"
        );
    }
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    let sessions = format!("{}/api/v1/sessions", served.url.trim_end_matches("/mcp"));
    let lease = |user: &str| format!(r#"{{"user_id":"{user}","conversation_id":"c"}}"#);
    for user in ["u1", "u2"] {
        let (status, text) = http_post(&sessions, &acme, &lease(user)).await;
        assert_eq!(status, 201, "{text}");
    }
    let (status, text) = http_post(&sessions, &acme, &lease("u3")).await;
    assert_eq!(status, 429, "{text}");
    assert!(text.contains("most allowed per tenant"), "{text}");
    let (status, text) = http_post(&sessions, &beta, &lease("u1")).await;
    assert_eq!(status, 201, "another tenant still gets a session: {text}");
    stop(served).await;
}
