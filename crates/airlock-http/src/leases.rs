//! `/api/v1/sessions`: leasing browser sessions per (user, conversation) for a
//! backend. Needs a key with the `act` role; every id is looked up in the caller's
//! tenant (another tenant's answers 404, like one that never existed).

use std::sync::Arc;
use std::time::Duration;

use airlock_config::{Isolation, RecordMode};
use airlock_gateway::{Error, Gateway, LeaseInfo, LeaseRequest, OpenOptions, Principal};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::error_response;

/// The leasing routes (auth is the caller's layer).
pub(crate) fn routes() -> Router<Arc<Gateway>> {
    Router::new()
        .route("/api/v1/sessions", post(lease).get(list))
        .route("/api/v1/sessions/{id}", get(one).delete(end))
        .route("/api/v1/sessions/{id}/heartbeat", post(heartbeat))
}

/// `POST /api/v1/sessions`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LeaseBody {
    user_id: String,
    conversation_id: String,
    ttl_secs: Option<u64>,
    record: Option<String>,
    isolation: Option<String>,
    #[serde(default)]
    credentials: Vec<String>,
    grant: Option<String>,
    #[serde(default)]
    allow_hosts: Vec<String>,
}

async fn lease(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let body: LeaseBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                "invalid_argument",
                &format!("the body is not a lease request: {e}"),
            );
        }
    };
    let record = match body.record.as_deref().map(|r| (r, RecordMode::parse(r))) {
        None => None,
        Some((_, Some(mode))) => Some(mode),
        Some((text, None)) => {
            return bad(&format!(
                "record is one of off, transient, audit, not {text:?}"
            ));
        }
    };
    let isolation = match body.isolation.as_deref().map(|i| (i, Isolation::parse(i))) {
        None => None,
        Some((_, Some(isolation))) => Some(isolation),
        Some((text, None)) => {
            return bad(&format!(
                "isolation is one of context, process, not {text:?}"
            ));
        }
    };
    if body.credentials.len() > 16 || body.allow_hosts.len() > 64 {
        return bad("at most 16 credentials and 64 allow_hosts");
    }
    let request = LeaseRequest {
        user: body.user_id,
        conversation: body.conversation_id,
        ttl: body.ttl_secs.map(Duration::from_secs),
        options: OpenOptions {
            isolation,
            allow_hosts: body.allow_hosts,
            credentials: body.credentials,
            grant: body.grant,
            record,
        },
    };
    match gateway.lease(&caller, request).await {
        Ok(leased) => {
            let mut out = session_json(&leased.info, &headers);
            out["created"] = json!(leased.created);
            if let Some(why) = leased.credentials_refused {
                out["credentials_refused"] = json!(why);
            }
            let status = if leased.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            (status, Json(out)).into_response()
        }
        Err(e) => gateway_error(&e),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    user_id: Option<String>,
}

async fn list(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    Query(query): Query<ListQuery>,
    headers: HeaderMap,
) -> Response {
    let sessions: Vec<Value> = gateway
        .tenant_sessions(&caller.tenant, query.user_id.as_deref())
        .iter()
        .map(|info| session_json(info, &headers))
        .collect();
    Json(json!({ "sessions": sessions })).into_response()
}

async fn one(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    match gateway.session_info(&caller.tenant, &id) {
        Ok(info) => Json(session_json(&info, &headers)).into_response(),
        Err(e) => gateway_error(&e),
    }
}

async fn heartbeat(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    match gateway.heartbeat(&caller.tenant, &id) {
        Ok(info) => Json(session_json(&info, &headers)).into_response(),
        Err(e) => gateway_error(&e),
    }
}

async fn end(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Response {
    match gateway.end_session(&caller.tenant, &id).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => gateway_error(&e),
    }
}

fn bad(message: &str) -> Response {
    error_response(StatusCode::BAD_REQUEST, "invalid_argument", message)
}

// A session as the API shows it. `mcp_url` is on the host the caller reached.
fn session_json(info: &LeaseInfo, headers: &HeaderMap) -> Value {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
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
    json!({
        "session_id": info.id.as_str(),
        "mcp_url": format!("http://{host}/mcp/s/{}", info.id),
        "status": status,
        "user_id": info.conversation.as_ref().map(|c| c.user.as_str()),
        "conversation_id": info.conversation.as_ref().map(|c| c.conversation.as_str()),
        "isolation": if info.dedicated { "process" } else { "context" },
        "record": info.record.as_str(),
        "age_secs": info.age.as_secs(),
        "idle_secs": info.idle.as_secs(),
        "ttl_secs": info.terms.idle_ttl.as_secs(),
        "expires_at": expires_at,
        "actions": info.actions,
        "action_budget": info.terms.action_budget,
        "blocked_requests": info.blocked,
    })
}

// A gateway error as JSON with its HTTP status; over a cap, 429 with `Retry-After`.
pub(crate) fn gateway_error(e: &Error) -> Response {
    use airlock_core::HasErrorCode as _;
    let code = e.code();
    let status =
        StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = error_response(status, code.as_str(), &e.to_string());
    if let Some(secs) = e.retry_after_secs() {
        response = (
            status,
            Json(json!({ "error": {
                "code": code.as_str(),
                "message": e.to_string(),
                "retry_after_secs": secs,
            }})),
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    response
}
