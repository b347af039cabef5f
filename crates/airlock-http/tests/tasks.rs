//! Server-side tasks over REST, in process through the real router, against real
//! Chromium and a scripted model endpoint on loopback: a backend leases a session,
//! runs a task in it, reads (and waits for) its result with the final screenshot,
//! and cancels another mid-way.

#![allow(clippy::unwrap_used)]

use airlock_config::{ApiKey, Tasks};
use airlock_gateway::{Gateway, GatewayConfig};
use airlock_http::{HttpConfig, router};
use airlock_test_support::{Harness, ModelServer, Reply, calls, finish, with_browser};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;

const AGENT: &str = "agent-key-0123456789abcdef0123456789";

async fn app(h: &Harness, model: Option<&ModelServer>) -> axum::Router {
    let gateway = Gateway::new(
        h.host().await,
        GatewayConfig::with_policy(h.site.policy())
            .store(airlock_store::Store::open_in_memory().await.unwrap()),
    );
    let tasks = model.map_or_else(Tasks::default, |model| model.tasks(None));
    router(
        gateway,
        HttpConfig {
            api_key: Some(ApiKey::new(AGENT)),
            admin_key: None,
            allowed_hosts: vec!["127.0.0.1".to_owned()],
            allowed_origins: Vec::new(),
            public_url: "http://127.0.0.1:8080".to_owned(),
            tool_profile: Default::default(),
            jwt: None,
            worker_token: None,
            tasks,
            trusted_proxies: Vec::new(),
        },
    )
}

async fn send(
    app: &axum::Router,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, "127.0.0.1")
        .header(header::AUTHORIZATION, format!("Bearer {AGENT}"));
    if body.is_some() {
        request = request.header(header::CONTENT_TYPE, "application/json");
    }
    let request = request
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn lease(app: &axum::Router, conversation: &str) -> String {
    let (status, body) = send(
        app,
        "POST",
        "/api/v1/sessions",
        Some(json!({"user_id": "u1", "conversation_id": conversation})),
    )
    .await;
    assert!(status.is_success(), "{status}: {body}");
    body["session_id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_runs_a_task_in_its_leased_session_and_reads_the_result() {
    with_browser(|h| async move {
        let model = ModelServer::start(vec![
            calls(&[("browser_click", json!({"role": "link", "name": "Page two"}))]),
            finish("reached page two"),
        ])
        .await;
        let app = app(&h, Some(&model)).await;
        let session = lease(&app, "c1").await;
        let (status, started) = send(
            &app,
            "POST",
            &format!("/api/v1/sessions/{session}/tasks"),
            Some(json!({"instruction": "open page two", "start_url": h.site.url("index.html")})),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{started}");
        assert_eq!(started["status"], "running");
        let task = started["task"].as_str().unwrap().to_owned();
        let path = format!("/api/v1/sessions/{session}/tasks/{task}");
        let (status, done) = send(&app, "GET", &format!("{path}?wait_secs=30"), None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(done["status"], "finished", "{done}");
        assert_eq!(done["answer"], "reached page two");
        assert_eq!(done["steps"], 1);
        assert_eq!(done["trace"]["session"], session.as_str());
        assert!(done["screenshot"]["data_base64"].as_str().unwrap().len() > 100);

        // Refusals, each with its code: options a lease owns, a task that is not
        // there, another session's task.
        let (status, body) = send(
            &app,
            "POST",
            &format!("/api/v1/sessions/{session}/tasks"),
            Some(json!({"instruction": "x", "credentials": ["login"]})),
        )
        .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (StatusCode::BAD_REQUEST, Some("invalid_argument"))
        );
        let (status, _) = send(
            &app,
            "GET",
            &format!("/api/v1/sessions/{session}/tasks/task_0000"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let other = lease(&app, "c2").await;
        let (status, _) = send(
            &app,
            "GET",
            &format!("/api/v1/sessions/{other}/tasks/{task}"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_cancelled_over_rest_and_none_runs_without_a_model() {
    with_browser(|h| async move {
        let model = ModelServer::start(vec![Reply::Hang]).await;
        let app = app(&h, Some(&model)).await;
        let session = lease(&app, "c1").await;
        let (_, started) = send(
            &app,
            "POST",
            &format!("/api/v1/sessions/{session}/tasks"),
            Some(json!({"instruction": "wait", "start_url": h.site.url("index.html")})),
        )
        .await;
        let task = started["task"].as_str().unwrap().to_owned();
        model.requests(1).await;
        let path = format!("/api/v1/sessions/{session}/tasks/{task}");
        let (status, _) = send(&app, "POST", &format!("{path}/cancel"), None).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        let (_, done) = send(&app, "GET", &format!("{path}?wait_secs=10"), None).await;
        assert_eq!(done["status"], "cancelled", "{done}");

        let bare = crate::app(&h, None).await;
        let session = lease(&bare, "c1").await;
        let (status, body) = send(
            &bare,
            "POST",
            &format!("/api/v1/sessions/{session}/tasks"),
            Some(json!({"instruction": "x"})),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    })
    .await;
}
