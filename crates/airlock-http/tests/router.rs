//! The REST surface in process: every status, envelope and role case of `/api`, sent
//! through the real router with `tower::ServiceExt::oneshot` (no socket, no browser:
//! none of these requests opens a session). What needs a real client, a browser or a
//! socket stays in the gateway's and the binary's suites.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use airlock_config::ApiKey;
use airlock_gateway::{ApprovalRecord, ApprovalStatus, Caps, Gateway, GatewayConfig};
use airlock_http::{HttpConfig, router};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;

const AGENT: &str = "agent-key-0123456789abcdef0123456789";
const ADMIN: &str = "admin-key-0123456789abcdef0123456789";
const HOST: &str = "127.0.0.1";

/// A gateway with an in-memory store and a browser pool that never launches (no
/// request here opens a session), behind the full router.
struct Server {
    router: axum::Router,
    store: airlock_store::Store,
    _profiles: tempfile::TempDir,
}

async fn server(keys: bool, caps: Caps) -> Server {
    let profiles = tempfile::tempdir().unwrap();
    let options = airlock_browser::BrowserOptions {
        profile_parent: profiles.path().to_owned(),
        ..airlock_browser::BrowserOptions::from_config(&Default::default()).unwrap()
    };
    let browsers = Arc::new(airlock_browser::Browsers::new(options));
    let store = airlock_store::Store::open_in_memory().await.unwrap();
    let gateway = Gateway::new(
        browsers,
        GatewayConfig {
            caps,
            ..GatewayConfig::default().store(store.clone())
        },
    );
    let config = HttpConfig {
        api_key: keys.then(|| ApiKey::new(AGENT)),
        admin_key: keys.then(|| ApiKey::new(ADMIN)),
        allowed_hosts: vec![HOST.to_owned()],
        allowed_origins: Vec::new(),
        public_url: format!("http://{HOST}:8080"),
        tool_profile: Default::default(),
        jwt: None,
        worker_token: None,
        tasks: Default::default(),
        trusted_proxies: Vec::new(),
    };
    Server {
        router: router(gateway, config),
        store,
        _profiles: profiles,
    }
}

/// One answer: its status, headers and JSON body (null when it is not JSON).
struct Answer {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Value,
}

impl Answer {
    /// The error envelope's code, asserting the envelope's shape on the way.
    fn code(&self) -> &str {
        let error = &self.body["error"];
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "an error has one line for a person: {}",
            self.body
        );
        error["code"].as_str().unwrap_or_default()
    }
}

async fn send(
    server: &Server,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> Answer {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, HOST);
    if let Some(key) = key {
        request = request.header(header::AUTHORIZATION, format!("Bearer {key}"));
    }
    if body.is_some() {
        request = request.header(header::CONTENT_TYPE, "application/json");
    }
    let request = request
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_owned())))
        .unwrap();
    let response = server.router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

async fn pending_approval(store: &airlock_store::Store, id: &str) {
    let now = airlock_audit::event::now_ms();
    let record = ApprovalRecord {
        id: id.to_owned(),
        tenant: "default".to_owned(),
        caller: "default/api_key".to_owned(),
        session: None,
        tool: "browser_click".to_owned(),
        args: json!({"ref": "e3"}).to_string(),
        target: None,
        page_url: Some("http://127.0.0.1/pay".to_owned()),
        page_title: Some("Pay".to_owned()),
        rule: "payments".to_owned(),
        risk: "high".to_owned(),
        binding: vec![1],
        status: ApprovalStatus::Pending,
        created_ms: now,
        expires_ms: now + 600_000,
        decided_ms: None,
        decided_by: None,
        note: None,
        used_ms: None,
        detail: None,
        waiter: None,
    };
    store.insert_approval(&record, None).await.unwrap();
}

#[tokio::test]
async fn each_router_admits_its_role_and_refuses_the_rest_in_one_envelope() {
    let s = server(true, Caps::default()).await;
    // No key: 401 naming where to read how the resource is protected.
    let a = send(&s, "GET", "/api/v1/approvals", None, None).await;
    assert_eq!(a.status, StatusCode::UNAUTHORIZED);
    assert_eq!(a.code(), "unauthorized");
    let challenge = a.headers[header::WWW_AUTHENTICATE].to_str().unwrap();
    assert!(challenge.contains("resource_metadata="), "{challenge}");
    // The agent's key on the operator's routes: 403 (it cannot approve its own call).
    for path in ["/api/v1/approvals", "/api/v1/events", "/metrics"] {
        let a = send(&s, "GET", path, Some(AGENT), None).await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(a.code(), "forbidden", "{path}");
        assert!(
            a.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("`admin`")
        );
    }
    // The agent's key leases (act); the approver's key does everything.
    let a = send(&s, "GET", "/api/v1/sessions", Some(AGENT), None).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body, json!({"sessions": []}));
    let a = send(&s, "GET", "/api/v1/approvals", Some(ADMIN), None).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body, json!({"approvals": []}));
    let a = send(&s, "GET", "/metrics", Some(ADMIN), None).await;
    assert_eq!(a.status, StatusCode::OK);
}

#[tokio::test]
async fn without_keys_the_local_caller_leases_and_reads_metrics_but_not_approvals() {
    let s = server(false, Caps::default()).await;
    let a = send(&s, "GET", "/api/v1/approvals", None, None).await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    assert_eq!(a.code(), "forbidden");
    assert!(
        a.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("admin_key")
    );
    assert_eq!(
        send(&s, "GET", "/metrics", None, None).await.status,
        StatusCode::OK
    );
    let a = send(&s, "GET", "/api/v1/sessions", None, None).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
}

#[tokio::test]
async fn bad_queries_and_bodies_are_invalid_argument_with_what_was_expected() {
    let s = server(true, Caps::default()).await;
    let cases: [(&str, &str, Option<&str>, &str); 8] = [
        (
            "GET",
            "/api/v1/approvals?status=maybe",
            None,
            "status is one of",
        ),
        ("GET", "/api/v1/sessions?colour=red", None, "colour"),
        ("GET", "/api/v1/events?after=minus", None, "after"),
        (
            "POST",
            "/api/v1/sessions",
            Some("{}"),
            "the body is not a lease request",
        ),
        (
            "POST",
            "/api/v1/sessions",
            Some(""),
            "the body is not a lease request",
        ),
        (
            "POST",
            "/api/v1/sessions",
            Some(r#"{"user_id":"u","conversation_id":"c","record":"all"}"#),
            "record is one of off, transient, audit",
        ),
        (
            "POST",
            "/api/v1/sessions",
            Some(r#"{"user_id":"u","conversation_id":"c","ttl_secs":0.5}"#),
            "ttl_secs is a whole number",
        ),
        (
            "POST",
            "/api/v1/approvals/apr_x/approve",
            Some(r#"{"verdict":"yes"}"#),
            "the body is not {\"note\": …} or {\"reason\": …}",
        ),
    ];
    for (method, path, body, says) in cases {
        let a = send(&s, method, path, Some(ADMIN), body).await;
        assert_eq!(
            a.status,
            StatusCode::BAD_REQUEST,
            "{method} {path}: {}",
            a.body
        );
        assert_eq!(a.code(), "invalid_argument", "{method} {path}");
        let message = a.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{method} {path}: {message}");
    }
    // A body that is not JSON at all is refused at the edge, in the same envelope.
    let request = Request::builder()
        .method("POST")
        .uri("/api/v1/sessions")
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, format!("Bearer {AGENT}"))
        .header(header::CONTENT_TYPE, "text/plain")
        .header(header::CONTENT_LENGTH, "6")
        .body(Body::from("user=u"))
        .unwrap();
    let response = s.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["error"]["code"], "invalid_argument");
}

#[tokio::test]
async fn unknown_ids_are_404_and_a_decided_approval_is_409() {
    let s = server(true, Caps::default()).await;
    for (method, path) in [
        ("GET", "/api/v1/approvals/apr_nope"),
        ("GET", "/api/v1/approvals/apr_nope/screenshot"),
        ("POST", "/api/v1/approvals/apr_nope/deny"),
        ("GET", "/api/v1/sessions/nope"),
        ("POST", "/api/v1/sessions/nope/heartbeat"),
        ("DELETE", "/api/v1/sessions/nope"),
    ] {
        let a = send(&s, method, path, Some(ADMIN), None).await;
        assert_eq!(
            a.status,
            StatusCode::NOT_FOUND,
            "{method} {path}: {}",
            a.body
        );
        assert_eq!(a.code(), "not_found", "{method} {path}");
    }
    pending_approval(&s.store, "apr_one").await;
    let a = send(&s, "GET", "/api/v1/approvals/apr_one", Some(ADMIN), None).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.body["status"], "pending");
    // Its screenshot was never taken: 404 in the envelope, not an empty image.
    let a = send(
        &s,
        "GET",
        "/api/v1/approvals/apr_one/screenshot",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(a.code(), "not_found");
    // A note over the limit changes nothing.
    let long = json!({ "note": "n".repeat(1_001) }).to_string();
    let a = send(
        &s,
        "POST",
        "/api/v1/approvals/apr_one/approve",
        Some(ADMIN),
        Some(&long),
    )
    .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert_eq!(a.code(), "invalid_argument");
    // An empty body approves; the second decision finds it closed.
    let a = send(
        &s,
        "POST",
        "/api/v1/approvals/apr_one/approve",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert_eq!(a.body["status"], "approved");
    assert_eq!(a.body["decided_by"], "api:admin_key");
    let a = send(
        &s,
        "POST",
        "/api/v1/approvals/apr_one/deny",
        Some(ADMIN),
        Some("null"),
    )
    .await;
    assert_eq!(a.status, StatusCode::CONFLICT);
    assert_eq!(a.code(), "approval_closed");
    let a = send(
        &s,
        "GET",
        "/api/v1/approvals?status=approved",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(a.body["approvals"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn over_a_cap_is_429_with_retry_after_in_the_header_and_the_body() {
    let s = server(
        true,
        Caps {
            per_tenant: Some(0),
            ..Caps::default()
        },
    )
    .await;
    let body = r#"{"user_id":"u","conversation_id":"c"}"#;
    let a = send(&s, "POST", "/api/v1/sessions", Some(AGENT), Some(body)).await;
    assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS, "{}", a.body);
    assert_eq!(a.code(), "quota_exceeded");
    let secs = a.body["error"]["retry_after_secs"].as_u64().unwrap();
    assert_eq!(
        a.headers[header::RETRY_AFTER].to_str().unwrap(),
        secs.to_string()
    );
}

// One MCP request on the router as `key`, in `session` if given: its status, the
// session id it names, and its body.
async fn mcp(
    s: &Server,
    method: &str,
    key: &str,
    session: Option<&str>,
    body: Option<&str>,
) -> (StatusCode, Option<String>, String) {
    let mut request = Request::builder()
        .method(method)
        .uri("/mcp")
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, format!("Bearer {key}"))
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(id) = session {
        request = request
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let request = request
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_owned())))
        .unwrap();
    let response = s.router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let id = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, id, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn only_the_caller_that_began_an_mcp_session_ends_it() {
    let s = server(false, Caps::default()).await;
    s.store.create_tenant("acme", 1).await.unwrap();
    let key = |_| async {
        let (key, _) =
            airlock_vault::apikey::create(&s.store, "acme", airlock_core::Role::Act, None, 1)
                .await
                .unwrap();
        key.expose().to_owned()
    };
    let (mine, theirs) = (key(1).await, key(2).await);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let (status, id, body) = mcp(&s, "POST", &mine, None, Some(init)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = id.expect("a session id");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _, _) = mcp(&s, "POST", &mine, Some(&id), Some(initialized)).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;

    // Another caller's DELETE, and one for an id that names nothing, answer alike:
    // no yes/no on whether an id is someone's session.
    let (status, _, foreign) = mcp(&s, "DELETE", &theirs, Some(&id), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another caller's DELETE");
    let unknown = "0b9c2f4e-0000-4000-8000-000000000000";
    let (status, _, nothing) = mcp(&s, "DELETE", &theirs, Some(unknown), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a DELETE for no session");
    assert_eq!(foreign, nothing);
    let (status, _, body) = mcp(&s, "POST", &mine, Some(&id), Some(list)).await;
    assert_eq!(status, StatusCode::OK, "the session goes on: {body}");
    assert!(body.contains("browser_navigate"), "{body}");

    let (status, _, _) = mcp(&s, "DELETE", &mine, Some(&id), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "its own caller's DELETE");
    let (status, _, _) = mcp(&s, "POST", &mine, Some(&id), Some(list)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "then it is gone");
    let (status, _, _) = mcp(&s, "DELETE", &mine, Some(&id), None).await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "and a second DELETE finds nothing"
    );
}

// The worker registration route has the edge's checks every route has: a browser
// origin, a cross-site request or a body that is not JSON is refused before it; a
// gateway without `[registration]` has no such route.
#[tokio::test]
async fn worker_registration_passes_the_edge_checks_and_is_absent_unless_configured() {
    let s = server(true, Caps::default()).await;
    let post = |headers: Vec<(&'static str, &'static str)>, body: &'static str| {
        let mut request = Request::builder()
            .method("POST")
            .uri("/api/v1/workers")
            .header(header::HOST, HOST)
            .header(
                header::AUTHORIZATION,
                "Bearer a-worker-token-of-thirty-two-characters",
            );
        for (name, value) in headers {
            request = request.header(name, value);
        }
        // As a client sends it: the edge judges a body by its length.
        let request = request
            .header(header::CONTENT_LENGTH, body.len())
            .body(Body::from(body))
            .unwrap();
        let router = s.router.clone();
        async move { router.oneshot(request).await.unwrap().status() }
    };
    let json = ("content-type", "application/json");
    let body = r#"{"address":"10.0.0.9:7443","token":"0123456789abcdef0123456789abcdef"}"#;
    assert_eq!(
        post(vec![json, ("origin", "https://evil.example")], body).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        post(vec![json, ("sec-fetch-site", "cross-site")], body).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        post(vec![("content-type", "text/plain")], body).await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    assert_eq!(post(vec![json], body).await, StatusCode::NOT_FOUND);
}
