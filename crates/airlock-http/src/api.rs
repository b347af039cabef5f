//! `/api/v1`: the operator's API. Approvals (list, read, screenshot, approve, deny)
//! and the live event stream (`/api/v1/events`, server-sent events); and `/metrics`
//! (see [`crate::metrics`]), which needs the same key once any key is configured.
//!
//! It needs the approver's key (`[server] admin_key`), never the agent's: the agent's
//! own key answers 403, so an agent cannot approve what it asked for. Every lookup is
//! the gateway's, scoped to the operator's tenant; another tenant's id is a 404 like a
//! missing one. Errors are JSON: `{"error": {"code", "message"}}`.

use std::convert::Infallible;
use std::sync::Arc;

use airlock_config::ApiKey;
use airlock_gateway::{ApprovalRecord, Decision, Error, FeedEvent, Gateway, Principal};
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::limit::AuthLimiter;

/// Longest note or reason an approver may attach.
const MAX_NOTE_CHARS: usize = 1_000;

/// Largest request body `/api/v1` reads.
const MAX_API_BODY_BYTES: usize = 16 * 1024;

/// What `/api/v1` checks callers against.
pub(crate) struct ApiAuth {
    pub(crate) admin: Option<ApiKey>,
    pub(crate) agent: Option<ApiKey>,
    pub(crate) gateway: Arc<Gateway>,
    pub(crate) limiter: AuthLimiter,
}

/// The `/api/v1` routes, and `/metrics` behind the same key.
pub(crate) fn routes(
    gateway: Arc<Gateway>,
    auth: ApiAuth,
    metrics: Arc<crate::metrics::Metrics>,
) -> Router {
    let scrape = get(move |State(gateway): State<Arc<Gateway>>| {
        let metrics = metrics.clone();
        async move {
            (
                [(
                    header::CONTENT_TYPE,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                )],
                metrics.render(&gateway).await,
            )
        }
    });
    Router::new()
        .route("/metrics", scrape)
        .route("/api/v1/approvals", get(list))
        .route("/api/v1/approvals/{id}", get(one))
        .route("/api/v1/approvals/{id}/screenshot", get(screenshot))
        .route("/api/v1/approvals/{id}/approve", post(approve))
        .route("/api/v1/approvals/{id}/deny", post(deny))
        .route("/api/v1/events", get(events))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_API_BODY_BYTES))
        .route_layer(middleware::from_fn_with_state(Arc::new(auth), authenticate))
        .with_state(gateway)
}

// The approver's key, or 401 (no or a wrong key) / 403 (the agent's key, or no
// approver key configured at all). `/metrics` is open only where nothing is
// authenticated (a loopback server without keys).
async fn authenticate(
    State(auth): State<Arc<ApiAuth>>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Some(refused) = crate::refuse_query_credentials(&request) {
        return refused;
    }
    if request.uri().path() == "/metrics" && auth.agent.is_none() && auth.admin.is_none() {
        return next.run(request).await;
    }
    let Some(admin) = auth.admin.as_ref() else {
        return error_response(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the operator API is off: set [server] admin_key (or AIRLOCK_ADMIN_KEY) to an approver's key",
        );
    };
    let client = crate::client_addr(&request);
    let now = tokio::time::Instant::now();
    if let Some(refused) = crate::refuse_if_limited(&auth.limiter, client, now) {
        return refused;
    }
    let presented = crate::bearer(&request);
    let matches = |key: &ApiKey| {
        presented
            .is_some_and(|token| crate::constant_time_eq(token.as_bytes(), key.expose().as_bytes()))
    };
    if matches(admin) {
        if let Some(addr) = client {
            auth.limiter.succeeded(addr);
        }
        let operator: Principal = auth.gateway.operator("admin_key");
        request.extensions_mut().insert(operator);
        return next.run(request).await;
    }
    if let Some(addr) = client {
        auth.limiter.failed(addr, now);
    }
    if auth.agent.as_ref().is_some_and(matches) {
        // An agent reaching for the approver's API is worth a line on the record.
        tracing::warn!("the agent's key was presented to the operator API");
        crate::record_auth_failure(&auth.gateway, "api", "agent key", client);
        return error_response(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the agent's key cannot use the operator API; approvals need the approver's key",
        );
    }
    let reason = if presented.is_some() {
        "wrong token"
    } else {
        "no token"
    };
    tracing::warn!(reason, "unauthorized /api/v1 request");
    crate::record_auth_failure(&auth.gateway, "api", reason, client);
    let mut response = error_response(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "send Authorization: Bearer <admin key>",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"airlock-api\""),
    );
    response
}

#[derive(Deserialize)]
struct ListQuery {
    status: Option<String>,
}

async fn list(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    Query(query): Query<ListQuery>,
) -> Response {
    let status = query.status.as_deref().filter(|s| *s != "all");
    if let Some(s) = status
        && !matches!(s, "pending" | "approved" | "denied" | "expired")
    {
        return error_response(
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "status is one of pending, approved, denied, expired, all",
        );
    }
    match gateway.approvals(&operator.tenant, status).await {
        Ok(approvals) => Json(json!({
            "approvals": approvals.iter().map(approval_json).collect::<Vec<_>>(),
        }))
        .into_response(),
        Err(e) => gateway_error(&e),
    }
}

async fn one(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    Path(id): Path<String>,
) -> Response {
    match gateway.approval(&operator.tenant, &id).await {
        Ok(a) => Json(approval_json(&a)).into_response(),
        Err(e) => gateway_error(&e),
    }
}

async fn screenshot(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    Path(id): Path<String>,
) -> Response {
    match gateway.approval_screenshot(&operator.tenant, &id).await {
        Ok(Some((mime, data))) => (
            [
                (header::CONTENT_TYPE, mime),
                (header::CACHE_CONTROL, "no-store".to_owned()),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
            ],
            data,
        )
            .into_response(),
        Ok(None) => error_response(
            StatusCode::NOT_FOUND,
            "not_found",
            "no screenshot was taken for this approval",
        ),
        Err(e) => gateway_error(&e),
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct DecideBody {
    note: Option<String>,
    reason: Option<String>,
}

async fn approve(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    decide(&gateway, &operator, &id, true, &body).await
}

async fn deny(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Response {
    decide(&gateway, &operator, &id, false, &body).await
}

async fn decide(
    gateway: &Gateway,
    operator: &Principal,
    id: &str,
    approve: bool,
    body: &[u8],
) -> Response {
    // No body, or JSON with a note (approve) or reason (deny).
    let parsed = if body.iter().all(u8::is_ascii_whitespace) {
        DecideBody::default()
    } else {
        match serde_json::from_slice::<DecideBody>(body) {
            Ok(b) => b,
            Err(e) => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    "invalid_argument",
                    &format!("the body is not {{\"note\": …}} or {{\"reason\": …}}: {e}"),
                );
            }
        }
    };
    let note = parsed.note.or(parsed.reason);
    if note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS)
    {
        return error_response(
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            &format!("a note is at most {MAX_NOTE_CHARS} characters"),
        );
    }
    let by = format!("api:{}", operator.key.as_deref().unwrap_or("operator"));
    match gateway
        .decide(&operator.tenant, id, approve, &by, note.as_deref())
        .await
    {
        Ok(Decision::Recorded) => Json(json!({
            "id": id,
            "status": if approve { "approved" } else { "denied" },
            "decided_by": by,
        }))
        .into_response(),
        Ok(Decision::Closed(status)) => error_response(
            StatusCode::CONFLICT,
            "approval_closed",
            &format!("this approval is {status} already; nothing was changed"),
        ),
        Err(e) => gateway_error(&e),
    }
}

#[derive(Deserialize)]
struct EventsQuery {
    after: Option<u64>,
}

// Where a feed reader is: the last seq it read (of any tenant), whether the store
// may hold events it has not read, and what it has yet to send.
struct Cursor {
    gateway: Arc<Gateway>,
    tenant: String,
    rx: tokio::sync::broadcast::Receiver<FeedEvent>,
    last: u64,
    behind: bool,
    backlog: std::collections::VecDeque<FeedEvent>,
}

impl Cursor {
    async fn next(&mut self) -> Option<FeedEvent> {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            if let Some(event) = self.backlog.pop_front() {
                return Some(event);
            }
            if self.behind {
                match self
                    .gateway
                    .events_after(&self.tenant, self.last, 500)
                    .await
                {
                    Ok(Some((seq, events))) => {
                        self.last = seq;
                        self.backlog.extend(events);
                    }
                    Ok(None) => self.behind = false,
                    Err(_) => return None,
                }
                continue;
            }
            let received = tokio::select! {
                received = self.rx.recv() => received,
                () = self.gateway.stopped() => return None,
            };
            match received {
                Ok(event) if event.seq <= self.last => {}
                Ok(event) if event.seq == self.last + 1 => {
                    self.last = event.seq;
                    if event.tenant == self.tenant {
                        return Some(event);
                    }
                }
                // A gap (another process wrote) or a lag: the store has what the feed
                // lacks.
                Ok(_) | Err(RecvError::Lagged(_)) => self.behind = true,
                Err(RecvError::Closed) => return None,
            }
        }
    }
}

// The audit events of the operator's tenant as they are written, each as one SSE
// event (`id` its seq, `event` its kind, `data` its canonical JSON). A reader that
// gives `?after=SEQ` or `Last-Event-ID` first gets what it missed, from the store;
// one that falls behind, or sees a gap, catches up the same way: no event is skipped.
async fn events(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
) -> Response {
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or(query.after);
    // Subscribed before the store is read: nothing written in between is lost.
    let rx = gateway.feed();
    let last = match resume {
        Some(seq) => seq,
        None => match gateway.last_event_seq().await {
            Ok(seq) => seq,
            Err(e) => return gateway_error(&e),
        },
    };
    let cursor = Cursor {
        gateway,
        tenant: operator.tenant,
        rx,
        last,
        behind: resume.is_some(),
        backlog: Default::default(),
    };
    let stream = futures_util::stream::unfold(cursor, |mut cursor| async move {
        let event = cursor.next().await?;
        Some((Ok::<_, Infallible>(sse_event(&event)), cursor))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

fn sse_event(event: &FeedEvent) -> Event {
    Event::default()
        .id(event.seq.to_string())
        .event(event.kind.as_str())
        .data(event.body.as_str())
}

fn approval_json(a: &ApprovalRecord) -> Value {
    let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
    json!({
        "id": a.id,
        "status": a.status,
        "tenant": a.tenant,
        "caller": a.caller,
        "session": a.session,
        "tool": a.tool,
        "args": parse(&a.args),
        "target": a.target.as_deref().map(parse),
        "page_url": a.page_url,
        "page_title": a.page_title,
        "rule": a.rule,
        "risk": a.risk,
        "created_ms": a.created_ms,
        "expires_ms": a.expires_ms,
        "decided_ms": a.decided_ms,
        "decided_by": a.decided_by,
        "note": a.note,
        "screenshot": format!("/api/v1/approvals/{}/screenshot", a.id),
    })
}

fn gateway_error(e: &Error) -> Response {
    use airlock_core::HasErrorCode as _;
    let code = e.code();
    let status =
        StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    error_response(status, code.as_str(), &e.to_string())
}

fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({ "error": { "code": code, "message": message } })),
    )
        .into_response()
}
