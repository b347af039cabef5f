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

use airlock_core::Role;
use airlock_gateway::{ApprovalRecord, Decision, FeedEvent, Gateway, Principal};

use crate::leases::gateway_error;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

/// Longest note or reason an approver may attach.
const MAX_NOTE_CHARS: usize = 1_000;

/// Largest request body `/api/v1` reads.
const MAX_API_BODY_BYTES: usize = 16 * 1024;

/// The `/api/v1` routes, and `/metrics` behind the same key.
pub(crate) fn routes(
    gateway: Arc<Gateway>,
    auth: Arc<crate::auth::Authenticator>,
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
        .merge(crate::leases::routes())
        .layer(axum::extract::DefaultBodyLimit::max(MAX_API_BODY_BYTES))
        .route_layer(middleware::from_fn_with_state(auth, authenticate))
        .with_state(gateway)
}

// A key of the role the route needs (`admin` for approvals, events and metrics), or
// 401 (no or a wrong key) / 403 (a key of a lower role, e.g. the agent's own: an
// agent cannot approve what it asked for). Where no key is configured at all, the
// local caller may use `/metrics` but not the operator's routes.
async fn authenticate(
    State(auth): State<Arc<crate::auth::Authenticator>>,
    mut request: Request,
    next: Next,
) -> Response {
    use crate::auth::Identity;
    // Leasing is for the backend that runs agents (`act`); the rest is the operator's.
    let leasing = request.uri().path().starts_with("/api/v1/sessions");
    let needed = if leasing { Role::Act } else { Role::Admin };
    let principal = match auth.identify(&request, "api").await {
        Identity::Refused(response) => return response,
        Identity::Local(_) if request.uri().path() == "/metrics" => {
            return next.run(request).await;
        }
        Identity::Local(principal) if leasing => principal,
        Identity::Local(_) => {
            return error_response(
                StatusCode::FORBIDDEN,
                "forbidden",
                "the operator API is off: set [server] admin_key (or AIRLOCK_ADMIN_KEY), or create an admin key with `airlock key create --role admin`",
            );
        }
        Identity::Known(principal) => principal,
    };
    let client = crate::client_addr(&request);
    if let Some(refused) =
        crate::auth::refuse_below(&auth.gateway, &principal, needed, "api", client)
    {
        return refused;
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
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

pub(crate) fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({ "error": { "code": code, "message": message } })),
    )
        .into_response()
}
