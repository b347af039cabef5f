//! `/api/v1/sessions`: leasing browser sessions per (user, conversation) for a
//! backend. Needs a key with the `act` role; every id is looked up in the caller's
//! tenant (another tenant's answers 404, like one that never existed).

use std::sync::Arc;
use std::time::Duration;

use airlock_config::{Isolation, RecordMode};
use airlock_gateway::{Gateway, LeaseInfo, LeaseRequest, OpenOptions, Principal};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiJson, ApiQuery, JsonBody};

/// Where clients reach this server (no trailing `/`), for the `mcp_url`s handed out.
#[derive(Debug, Clone)]
pub(crate) struct PublicUrl(pub(crate) Arc<str>);

/// The leasing routes (auth is the caller's layer).
pub(crate) fn routes(public_url: &str) -> Router<Arc<Gateway>> {
    Router::new()
        .route("/api/v1/sessions", post(lease).get(list))
        .route("/api/v1/sessions/{id}", get(one).delete(end))
        .route("/api/v1/sessions/{id}/heartbeat", post(heartbeat))
        .layer(Extension(PublicUrl(public_url.into())))
}

/// A lease request: the session of this (user, conversation), opened as asked if
/// there is none yet (the options are ignored when it exists).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LeaseBody {
    /// The backend's user.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    user_id: String,
    /// The conversation (or agent run) of that user.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    conversation_id: String,
    /// Idle seconds before the session ends (default: the gateway's idle TTL).
    // Read as a number: JSON Schema counts 900.0 as an integer, so must we.
    #[schema(value_type = Option<u64>, minimum = 1, maximum = 86400)]
    ttl_secs: Option<f64>,
    /// What the session keeps of its steps.
    #[schema(value_type = Option<String>, pattern = "^(off|transient|audit)$")]
    record: Option<String>,
    /// A browser context in the shared Chromium, or a Chromium of its own.
    #[schema(value_type = Option<String>, pattern = "^(context|process)$")]
    isolation: Option<String>,
    /// Stored credentials to log the session in with (needs `operate`, or `grant`).
    #[serde(default)]
    #[schema(max_items = 16, inline, value_type = Vec<CredentialName>)]
    credentials: Vec<String>,
    /// A grant token authorizing `credentials`.
    grant: Option<String>,
    /// Narrows the egress policy to these hosts (`*.example.com` for a domain).
    #[serde(default)]
    #[schema(max_items = 64, inline, value_type = Vec<HostName>)]
    allow_hosts: Vec<String>,
    /// The device the session looks like to pages (viewport, pixel density, touch,
    /// User-Agent); Chromium's own when left out.
    #[schema(value_type = Option<String>, pattern = "^(desktop|iphone-15|pixel-8|ipad)$")]
    device: Option<String>,
    /// Origin sets: the only origins the session may change (`https://a.com`,
    /// `a.com`, `*.a.com`); with `read_origins`, an origin in neither may not be
    /// visited. They narrow the deployment's `[flow]` sets.
    #[serde(default)]
    #[schema(max_items = 64)]
    act_origins: Vec<String>,
    /// Origins the session may only read: links are followed, nothing is changed.
    #[serde(default)]
    #[schema(max_items = 64)]
    read_origins: Vec<String>,
}

/// A stored credential's name.
#[derive(ToSchema)]
#[schema(pattern = "^[A-Za-z0-9_-]{1,64}$")]
#[allow(dead_code)] // A schema only.
pub(crate) struct CredentialName(String);

/// A host name, or `*.` and a domain (the ASCII forms; an IDN host is accepted too).
#[derive(ToSchema)]
#[schema(
    pattern = "^(\\*\\.)?([A-Za-z0-9]+(-[A-Za-z0-9]+)*\\.)*[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*$"
)]
#[allow(dead_code)] // A schema only.
pub(crate) struct HostName(String);

/// A leased browser session as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SessionView {
    /// Its id (128 random bits in hex).
    session_id: String,
    /// The MCP endpoint that drives it (any key of the tenant).
    mcp_url: String,
    /// `active`, `busy` (a call is in it) or `held` (an operator holds the page).
    status: &'static str,
    /// The user it was leased for (none for an agent's own session).
    user_id: Option<String>,
    /// The conversation it was leased for.
    conversation_id: Option<String>,
    /// `context` or `process`.
    isolation: &'static str,
    /// `off`, `transient` or `audit`.
    record: &'static str,
    /// Seconds since it opened.
    age_secs: u64,
    /// Seconds since a call last left it.
    idle_secs: u64,
    /// Its idle TTL.
    ttl_secs: u64,
    /// When it ends if unused (RFC 3339, UTC); none while a call is in it.
    expires_at: Option<String>,
    /// Actions it ran.
    actions: u64,
    /// Most actions it may run (none: unlimited).
    action_budget: Option<u64>,
    /// Requests the egress policy refused in it.
    blocked_requests: u64,
    /// Set on a lease: whether this request created it.
    #[serde(skip_serializing_if = "Option::is_none")]
    created: Option<bool>,
    /// The control-plane replica (its id) that opened it, when replicas share a
    /// store: every replica lists every replica's sessions, and any serves them.
    #[serde(skip_serializing_if = "Option::is_none")]
    replica: Option<String>,
    /// Whether the replica that answered holds it now.
    here: bool,
    /// The version of the tenant's policy it runs under (none: the operator's
    /// config alone; `GET /api/v1/policy` shows the newest).
    #[serde(skip_serializing_if = "Option::is_none")]
    policy_version: Option<i64>,
}

/// A tenant's sessions.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct SessionList {
    /// Oldest first.
    sessions: Vec<SessionView>,
}

/// Gets or creates the session of a (user, conversation).
#[utoipa::path(
    post,
    path = "/api/v1/sessions",
    tag = "sessions",
    request_body = LeaseBody,
    responses(
        (status = 201, description = "A new session", body = SessionView),
        (status = 200, description = "The open session of this key", body = SessionView),
        (status = 400, description = "A bad request", body = crate::error::ErrorBody),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `act`, or credentials this key may not use (nothing is opened)", body = crate::error::ErrorBody),
        (status = 404, description = "A credential that does not exist", body = crate::error::ErrorBody),
        (status = 413, description = "A body over 64 KiB"),
        (status = 429, description = "Over a cap (see Retry-After)", body = crate::error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds until a place may free up"))),
        (status = 503, description = "The browser could not start", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn lease(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    Extension(public_url): Extension<PublicUrl>,
    ApiJson(body): ApiJson<LeaseBody>,
) -> Result<(StatusCode, Json<SessionView>), ApiError> {
    let record = match body.record.as_deref().map(|r| (r, RecordMode::parse(r))) {
        None => None,
        Some((_, Some(mode))) => Some(mode),
        Some((text, None)) => {
            return Err(ApiError::invalid(format!(
                "record is one of off, transient, audit, not {text:?}"
            )));
        }
    };
    let isolation = match body.isolation.as_deref().map(|i| (i, Isolation::parse(i))) {
        None => None,
        Some((_, Some(isolation))) => Some(isolation),
        Some((text, None)) => {
            return Err(ApiError::invalid(format!(
                "isolation is one of context, process, not {text:?}"
            )));
        }
    };
    let ttl = match body.ttl_secs {
        None => None,
        Some(secs) if secs.fract() == 0.0 && (1.0..=86_400.0).contains(&secs) => {
            Some(Duration::from_secs(secs as u64))
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "ttl_secs is a whole number of seconds from 1 to 86400",
            ));
        }
    };
    if body.credentials.len() > 16
        || body.allow_hosts.len() > 64
        || body.act_origins.len() > 64
        || body.read_origins.len() > 64
    {
        return Err(ApiError::invalid(
            "at most 16 credentials and 64 each of allow_hosts, act_origins and read_origins",
        ));
    }
    let request = LeaseRequest {
        user: body.user_id,
        conversation: body.conversation_id,
        ttl,
        options: OpenOptions {
            isolation,
            allow_hosts: body.allow_hosts,
            credentials: body.credentials,
            grant: body.grant,
            record,
            device: body.device,
            act_origins: body.act_origins,
            read_origins: body.read_origins,
            // Only a stored login's own check skips the gate on dead logins.
            login_check: false,
        },
    };
    let leased = gateway.lease(&caller, request).await?;
    let mut out = session_view(&leased.info, &public_url);
    out.created = Some(leased.created);
    let status = if leased.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(out)))
}

impl JsonBody for LeaseBody {
    const WHAT: &'static str = "a lease request";
}

/// Which sessions to list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// Only this user's.
    user_id: Option<String>,
}

/// The tenant's open sessions.
#[utoipa::path(
    get,
    path = "/api/v1/sessions",
    tag = "sessions",
    params(ListQuery),
    responses(
        (status = 200, description = "Oldest first", body = SessionList),
        (status = 400, description = "A bad query", body = crate::error::ErrorBody),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `act`", body = crate::error::ErrorBody),
        (status = 503, description = "The shared store does not answer", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn list(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    ApiQuery(query): ApiQuery<ListQuery>,
    Extension(public_url): Extension<PublicUrl>,
) -> Result<Json<SessionList>, ApiError> {
    let sessions = gateway
        .sessions_everywhere(&caller.tenant, query.user_id.as_deref())
        .await?
        .iter()
        .map(|info| session_view(info, &public_url))
        .collect();
    Ok(Json(SessionList { sessions }))
}

/// One of the tenant's sessions.
#[utoipa::path(
    get,
    path = "/api/v1/sessions/{id}",
    tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 200, description = "The session", body = SessionView),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `act`", body = crate::error::ErrorBody),
        (status = 404, description = "No such session (or another tenant's)", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn one(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    Extension(public_url): Extension<PublicUrl>,
) -> Result<Json<SessionView>, ApiError> {
    let info = gateway.session_info(&caller.tenant, &id).await?;
    Ok(Json(session_view(&info, &public_url)))
}

/// Starts the session's idle TTL over.
#[utoipa::path(
    post,
    path = "/api/v1/sessions/{id}/heartbeat",
    tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 200, description = "The session, idle from now", body = SessionView),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `act`", body = crate::error::ErrorBody),
        (status = 404, description = "No such session (or another tenant's)", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn heartbeat(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    Extension(public_url): Extension<PublicUrl>,
) -> Result<Json<SessionView>, ApiError> {
    let info = gateway.heartbeat(&caller.tenant, &id).await?;
    Ok(Json(session_view(&info, &public_url)))
}

/// Ends the session now.
#[utoipa::path(
    delete,
    path = "/api/v1/sessions/{id}",
    tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 204, description = "Ended"),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `act`", body = crate::error::ErrorBody),
        (status = 404, description = "No such session (or another tenant's)", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn end(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    gateway.end_session(&caller.tenant, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

// A session as the API shows it. `mcp_url` starts with the server's public URL, never
// with the `Host` a request named (a rebinding page would name its own).
fn session_view(info: &LeaseInfo, public_url: &PublicUrl) -> SessionView {
    let status = if info.held {
        "held"
    } else if info.busy > 0 {
        "busy"
    } else {
        "active"
    };
    let expires_at = info.expires_in.map(|left| {
        let at = chrono::Utc::now() + chrono::Duration::from_std(left).unwrap_or_default();
        at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    });
    SessionView {
        session_id: info.id.to_string(),
        mcp_url: format!("{}/mcp/s/{}", public_url.0, info.id),
        status,
        user_id: info.conversation.as_ref().map(|c| c.user.clone()),
        conversation_id: info.conversation.as_ref().map(|c| c.conversation.clone()),
        isolation: if info.dedicated { "process" } else { "context" },
        record: info.record.as_str(),
        age_secs: info.age.as_secs(),
        idle_secs: info.idle.as_secs(),
        ttl_secs: info.terms.idle_ttl.as_secs(),
        expires_at,
        actions: info.actions,
        action_budget: info.terms.action_budget,
        blocked_requests: info.blocked,
        created: None,
        replica: info.replica.clone(),
        here: info.here,
        policy_version: info.policy_version,
    }
}
