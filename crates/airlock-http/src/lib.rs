//! Airlock's HTTP surface, on axum: MCP Streamable HTTP at `/mcp` (POST, GET for the
//! SSE stream, DELETE to end the session) and at `/mcp/s/<handle>` (a stateless
//! client's named browser session), `/api/v1` (the operator's API: approvals and the
//! live event stream, see [`api`]), the operator's console at `/` (see [`console`]),
//! `/metrics`, `/healthz` and `/readyz`. Only this crate knows axum.
//!
//! Every route is behind [`edge`]: `Host` against the bound names, `Origin` against
//! the allowed origins, a cross-site browser's writes and non-JSON bodies refused.
//! `/mcp` then checks, in order: no credentials in the query string (400), the bearer
//! token when one is configured (401 with `WWW-Authenticate`), and rmcp checks `Host`
//! and `Origin` once more and caps the body (413).
//!
//! Every URL Airlock hands out (`mcp_url`, the resource metadata) starts with the
//! configured public URL, or the bound address: never with a request's `Host`.

mod api;
mod auth;
mod client;
mod console;
mod edge;
mod error;
mod identity;
pub mod jwt;
mod leases;
mod limit;
mod logins;
mod metrics;
mod openapi;
mod policy;
mod tasks;
pub mod webhook;
mod workers;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use airlock_config::ApiKey;
use airlock_gateway::Gateway;
use airlock_mcp::HttpOptions;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;

/// Largest `/mcp` request body.
pub const MAX_MCP_BODY_BYTES: usize = 4 * 1024 * 1024;

/// What the HTTP surface needs besides the gateway.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Bearer token required on `/mcp`; `None` only when bound to loopback.
    pub api_key: Option<ApiKey>,
    /// Host names requests may name (every route); empty: any.
    pub allowed_hosts: Vec<String>,
    /// Browser `Origin` values accepted (every route).
    pub allowed_origins: Vec<String>,
    /// Where clients reach this server (`http://127.0.0.1:8080`, no trailing `/`):
    /// the start of every URL handed out.
    pub public_url: String,
    /// Which MCP tools to offer.
    pub tool_profile: airlock_config::ToolProfile,
    /// Bearer token of approvers on `/api/v1`; `None`: the API answers 403.
    pub admin_key: Option<ApiKey>,
    /// Bearer JWTs of service callers, when configured.
    pub jwt: Option<Arc<jwt::JwtVerifier>>,
    /// The worker token registering workers present (`[registration]`); `None`:
    /// workers do not register here.
    pub worker_token: Option<ApiKey>,
    /// The operator's models and task bounds (`[[models]]`, `[tasks]`).
    pub tasks: airlock_config::Tasks,
    /// Proxies whose `X-Forwarded-For` names the client (`[server] trusted_proxies`).
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

/// The router with every endpoint this surface serves.
pub fn router(gateway: Arc<Gateway>, config: HttpConfig) -> Router {
    // One runner of server-side tasks for MCP and REST alike.
    let tasks = airlock_task::Runner::for_gateway(&config.tasks, &gateway);
    // Stored logins, checked on a schedule by whichever replica claims each first.
    let logins = airlock_login::Logins::for_gateway(&gateway);
    if let Some(logins) = &logins {
        tokio::spawn(logins.clone().run_schedule(airlock_login::TICK));
    }
    let (mcp, mcp_sessions) = airlock_mcp::http_service(
        gateway.clone(),
        HttpOptions {
            profile: config.tool_profile,
            allowed_hosts: config.allowed_hosts.clone(),
            allowed_origins: config.allowed_origins.clone(),
            max_body_bytes: MAX_MCP_BODY_BYTES,
            public_url: Some(config.public_url.clone()),
            tasks: tasks.clone(),
            logins: logins.clone(),
        },
    );
    let edge = Arc::new(edge::Edge {
        hosts: config.allowed_hosts.clone(),
        origins: config.allowed_origins.clone(),
    });
    // One authenticator (and one limiter of failures) for every route.
    let auth = Arc::new(auth::Authenticator {
        api_key: config.api_key,
        admin_key: config.admin_key,
        jwt: config.jwt,
        gateway: gateway.clone(),
        limiter: limit::AuthLimiter::default(),
        unauthenticated: limit::AuthLimiter::default(),
        public_url: config.public_url.clone(),
    });
    let api = api::routes(
        gateway.clone(),
        auth.clone(),
        metrics::Metrics::install(&gateway),
        &config.public_url,
        tasks,
        logins.clone(),
    );
    let console = console::routes(gateway.clone(), auth.clone(), logins);
    let metadata = Router::new()
        .route(auth::RESOURCE_METADATA, get(protected_resource))
        .route(
            &format!("{}/mcp", auth::RESOURCE_METADATA),
            get(protected_resource),
        )
        .with_state(auth.clone());
    Router::new()
        // A stateless client's named browser session: the same MCP service, which
        // reads the handle from the path.
        .route_service("/mcp/s/{handle}", mcp.clone())
        // A caller's own named browser, kept across its calls until it idles out.
        .route_service("/mcp/b/{name}", mcp.clone())
        .route_service("/mcp", mcp)
        .route_layer(middleware::from_fn(parse_json_body))
        .route_layer(middleware::from_fn(deleted_is_no_content))
        .route_layer(middleware::from_fn_with_state(mcp_sessions, owner_ends))
        .route_layer(middleware::from_fn_with_state(auth.clone(), authenticate))
        .merge(api)
        .merge(metadata)
        .merge(
            Router::new()
                .route("/api/v1/workers", axum::routing::post(workers::register))
                .with_state(Arc::new(workers::Registrar {
                    auth: auth.clone(),
                    token: config.worker_token,
                })),
        )
        .route("/api/v1/openapi.json", get(openapi_json))
        .merge(console)
        .merge(
            Router::new()
                .route(
                    airlock_gateway::webbotauth::DIRECTORY_PATH,
                    get(identity::well_known),
                )
                .route("/identity/{tenant}/directory", get(identity::of_tenant))
                .with_state(gateway.clone()),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(move || readyz(gateway.clone())))
        .layer(middleware::from_fn_with_state(edge, edge::check))
        .layer(middleware::from_fn_with_state(
            Arc::new(client::TrustedProxies(config.trusted_proxies)),
            client::resolve,
        ))
}

// RFC 9728 protected-resource metadata: what this resource is, how a token is sent,
// and (with JWTs) which issuer's tokens it takes. Served only when callers must
// authenticate; otherwise there is nothing to describe.
async fn protected_resource(State(auth): State<Arc<auth::Authenticator>>) -> Response {
    if !auth.required().await {
        return StatusCode::NOT_FOUND.into_response();
    }
    let mut body = serde_json::json!({
        "resource": format!("{}/mcp", auth.public_url),
        "resource_name": "Airlock",
        "bearer_methods_supported": ["header"],
    });
    if let Some(issuer) = auth.jwt_issuer() {
        body["authorization_servers"] = serde_json::json!([issuer]);
    }
    axum::Json(body).into_response()
}

async fn openapi_json() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        openapi::document(),
    )
        .into_response()
}

async fn healthz() -> &'static str {
    "ok\n"
}

// Ready when the store answers and, with workers on other machines, one of them
// does: a load balancer then sends nothing to a replica that could only fail.
async fn readyz(gateway: Arc<Gateway>) -> Response {
    match gateway.ready().await {
        Ok(()) => "ok\n".into_response(),
        Err(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        )
            .into_response(),
    }
}

const QUERY_CREDENTIALS: &[&str] = &[
    "access_token",
    "token",
    "api_key",
    "apikey",
    "key",
    "auth",
    "authorization",
];

async fn authenticate(
    State(auth): State<Arc<auth::Authenticator>>,
    mut request: Request,
    next: Next,
) -> Response {
    match auth.identify(&request, "mcp").await {
        auth::Identity::Known(principal) | auth::Identity::Local(principal) => {
            // The surfaces read who calls from the request; the gateway's admission
            // checks each tool against the caller's role.
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        auth::Identity::Refused(response) => response,
    }
}

// Tokens in URLs end up in logs and browser history; refuse them outright.
fn refuse_query_credentials(request: &Request) -> Option<Response> {
    let query = request.uri().query()?;
    let has_credential = query.split('&').any(|pair| {
        let name = pair
            .split('=')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        QUERY_CREDENTIALS.contains(&name.as_str())
    });
    has_credential.then(|| {
        (
            StatusCode::BAD_REQUEST,
            "credentials are not accepted in the query string; send an Authorization: Bearer header\n",
        )
            .into_response()
    })
}

// 429 for an address that failed authentication too often lately.
fn refuse_if_limited(
    limiter: &limit::AuthLimiter,
    client: Option<std::net::IpAddr>,
    now: tokio::time::Instant,
) -> Option<Response> {
    let addr = client?;
    let limit::Admission::Refused { retry_after, first } = limiter.admit(addr, now) else {
        return None;
    };
    if first {
        tracing::warn!(
            client = %addr,
            failures = limit::MAX_FAILURES,
            window_s = limit::WINDOW.as_secs(),
            "too many failed authentications: refusing this address until its window ends"
        );
    }
    let seconds = retry_after.as_secs().max(1);
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        format!("too many failed authentications from this address; retry in {seconds} s\n"),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    Some(response)
}

// The bearer token a request presents, if any.
fn bearer(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
}

// An authentication failure on the audit record (why and from where, never the token
// tried), written off the response's path; under the caller's tenant when the key was
// known (a role refusal), else the gateway's own.
fn record_auth_failure(
    gateway: &Arc<Gateway>,
    surface: &'static str,
    reason: &'static str,
    client: Option<std::net::IpAddr>,
    tenant: Option<&str>,
) {
    let gateway = gateway.clone();
    let client = client.map(|c| c.to_string());
    let tenant = tenant.map(str::to_owned);
    tokio::spawn(async move {
        let failure = airlock_audit::AuthFailure {
            surface: surface.to_owned(),
            reason: reason.to_owned(),
            client,
            count: None,
        };
        gateway
            .record_event(
                tenant.as_deref(),
                airlock_audit::Event::AuthFailure(failure),
            )
            .await;
    });
}

// The client's address (absent only when the router is used without a socket): the
// peer, or whom a trusted proxy says it forwards (`client.rs`).
fn client_addr(request: &Request) -> Option<std::net::IpAddr> {
    request
        .extensions()
        .get::<client::ClientAddr>()
        .map(|c| c.0)
}

// Only the caller that began an MCP session reaches it: another caller's request with
// its id (a call, the SSE stream, a DELETE) is answered exactly as one for a session
// that is not there, byte for byte as rmcp answers that, so a leaked id cannot be
// confirmed live (rmcp would also end any session on a DELETE, and accept an unknown
// id there).
async fn owner_ends(
    State(sessions): State<Arc<airlock_mcp::Sessions>>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(id) = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
    {
        let allowed = match request.extensions().get::<airlock_gateway::Principal>() {
            Some(caller) => sessions.owns(id, caller).await,
            None => false,
        };
        if !allowed {
            let mut refused = Response::new(axum::body::Body::from("Not Found: Session not found"));
            *refused.status_mut() = StatusCode::NOT_FOUND;
            return refused;
        }
    }
    next.run(request).await
}

// rmcp answers a DELETE that ended a session with 202 Accepted, which clients read as
// "not done yet" (the Python SDK warns); it is done: 204.
async fn deleted_is_no_content(request: Request, next: Next) -> Response {
    let delete = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
        *response.body_mut() = axum::body::Body::empty();
        response.headers_mut().remove(header::CONTENT_LENGTH);
        response.headers_mut().remove(header::CONTENT_TYPE);
    }
    response
}

// rmcp answers unparseable JSON with 415; the transport wants 400 and a JSON-RPC parse
// error. Buffering here (bounded) also makes the size limit independent of rmcp.
async fn parse_json_body(request: Request, next: Next) -> Response {
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_MCP_BODY_BYTES).await else {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body is larger than {MAX_MCP_BODY_BYTES} bytes\n"),
        )
            .into_response();
    };
    if serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_err() {
        let error = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the request body is not valid JSON"}}"#;
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "application/json")],
            error,
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// Serves `router` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // The client's address reaches the auth layer, which limits failures by it.
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}
