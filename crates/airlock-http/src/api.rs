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
use airlock_gateway::{ApprovalRecord, ApprovalStatus, Decision, FeedEvent, Gateway, Principal};

use crate::error::{ApiError, ApiJson, ApiQuery, ErrorBody, JsonBody};
use airlock_core::ErrorCode;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

/// Longest note or reason an approver may attach.
const MAX_NOTE_CHARS: usize = 1_000;

/// Largest request body `/api/v1` reads: room for the longest notes a decision may
/// carry, however escaped.
const MAX_API_BODY_BYTES: usize = 64 * 1024;

/// The `/api/v1` routes, and `/metrics` behind the same key.
pub(crate) fn routes(
    gateway: Arc<Gateway>,
    auth: Arc<crate::auth::Authenticator>,
    metrics: Arc<crate::metrics::Metrics>,
    public_url: &str,
    tasks: Option<Arc<airlock_task::Runner>>,
    logins: Option<Arc<airlock_login::Logins>>,
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
    // One role layer per router: the route decides nothing about who may call it.
    let metrics =
        Router::new()
            .route("/metrics", scrape)
            .route_layer(middleware::from_fn_with_state(
                Gatekeeper::new(&auth, Role::Admin, Local::Open),
                authenticate,
            ));
    let operator = Router::new()
        .route("/api/v1/approvals", get(list))
        .route("/api/v1/approvals/{id}", get(one))
        .route("/api/v1/approvals/{id}/screenshot", get(screenshot))
        .route("/api/v1/approvals/{id}/approve", post(approve))
        .route("/api/v1/approvals/{id}/deny", post(deny))
        .route("/api/v1/events", get(events))
        .route(
            "/api/v1/policy",
            get(crate::policy::get).put(crate::policy::put),
        )
        .route_layer(middleware::from_fn_with_state(
            Gatekeeper::new(&auth, Role::Admin, Local::Refused),
            authenticate,
        ));
    // Leasing is for the backend that runs agents (`act`); the rest is the operator's.
    // Tasks run in leased sessions, for the same backend.
    let leasing = crate::leases::routes(public_url)
        .merge(crate::tasks::routes(tasks))
        .route_layer(middleware::from_fn_with_state(
            Gatekeeper::new(&auth, Role::Act, Local::Caller),
            authenticate,
        ));
    // Stored logins are the tenant admin's, like its policy.
    let logins =
        crate::logins::routes(logins, public_url).route_layer(middleware::from_fn_with_state(
            Gatekeeper::new(&auth, Role::Admin, Local::Refused),
            authenticate,
        ));
    Router::new()
        .merge(metrics)
        .merge(operator)
        .merge(leasing)
        .with_state(gateway)
        .merge(logins)
        .layer(axum::extract::DefaultBodyLimit::max(MAX_API_BODY_BYTES))
}

/// What a router lets the local caller do where no key is configured at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Local {
    /// Call it as the local principal (leasing, like `/mcp` without keys).
    Caller,
    /// Read it with no principal (`/metrics` on a keyless dev server).
    Open,
    /// Nothing: the operator's routes need a configured key.
    Refused,
}

/// Who a router admits: a key of at least `needs`, and the local caller as `local`
/// says.
#[derive(Clone)]
struct Gatekeeper {
    auth: Arc<crate::auth::Authenticator>,
    needs: Role,
    local: Local,
}

impl Gatekeeper {
    fn new(auth: &Arc<crate::auth::Authenticator>, needs: Role, local: Local) -> Gatekeeper {
        Gatekeeper {
            auth: auth.clone(),
            needs,
            local,
        }
    }
}

// A key of the role the router needs, or 401 (no or a wrong key) / 403 (a key of a
// lower role, e.g. the agent's own: an agent cannot approve what it asked for).
async fn authenticate(
    State(Gatekeeper { auth, needs, local }): State<Gatekeeper>,
    mut request: Request,
    next: Next,
) -> Response {
    use crate::auth::Identity;
    let principal = match (auth.identify(&request, "api").await, local) {
        (Identity::Refused(response), _) => return response,
        (Identity::Local(_), Local::Open) => return next.run(request).await,
        (Identity::Local(principal), Local::Caller) => principal,
        (Identity::Local(_), Local::Refused) => {
            return ApiError::new(
                ErrorCode::Forbidden,
                "the operator API is off: set [server] admin_key (or AIRLOCK_ADMIN_KEY), or create an admin key with `airlock key create --tenant default --role admin` (then /mcp needs a key too)",
            )
            .into_response();
        }
        (Identity::Known(principal), _) => principal,
    };
    let client = crate::client_addr(&request);
    if let Some(refused) =
        crate::auth::refuse_below(&auth.gateway, &principal, needs, "api", client)
    {
        return refused;
    }
    request.extensions_mut().insert(principal);
    next.run(request).await
}

/// A call held for a human, as an operator reads it (redacted).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApprovalView {
    /// `apr_…`.
    id: String,
    /// `pending`, `approved`, `denied` or `expired`.
    status: String,
    tenant: String,
    /// Who made the call (tenant and key id).
    caller: String,
    /// The browser session, if one was open.
    session: Option<String>,
    /// The tool called.
    tool: String,
    /// The arguments as the agent gave them, redacted.
    #[schema(value_type = Object)]
    args: Value,
    /// The element the call would act on (role, name, frame), redacted.
    #[schema(value_type = Option<Object>)]
    target: Option<Value>,
    page_url: Option<String>,
    page_title: Option<String>,
    /// The rule that held it.
    rule: String,
    /// `low`, `medium`, `high` or `critical`.
    risk: String,
    /// Why the rule held it, in a person's words: what data would flow from which
    /// origin to which (`data-flow`), why an origin is read-only, a model's safety
    /// check. Redacted.
    detail: Option<String>,
    created_ms: i64,
    expires_ms: i64,
    decided_ms: Option<i64>,
    decided_by: Option<String>,
    note: Option<String>,
    /// Where its outlined screenshot is.
    screenshot: String,
}

/// Approvals, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ApprovalList {
    approvals: Vec<ApprovalView>,
}

/// What a decision recorded.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct DecisionView {
    id: String,
    /// `approved` or `denied`.
    status: &'static str,
    decided_by: String,
}

/// Which approvals to list.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// `pending`, `approved`, `denied`, `expired` or `all` (default: all).
    #[param(pattern = "^(pending|approved|denied|expired|all)$")]
    status: Option<String>,
}

/// The tenant's approvals.
#[utoipa::path(
    get,
    path = "/api/v1/approvals",
    tag = "approvals",
    params(ListQuery),
    responses(
        (status = 200, description = "Newest first", body = ApprovalList),
        (status = 400, description = "A bad status", body = ErrorBody),
        (status = 401, description = "No or a wrong key", body = ErrorBody),
        (status = 403, description = "A key below `admin`", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn list(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<ApprovalList>, ApiError> {
    let status = match query.status.as_deref().filter(|s| *s != "all") {
        None => None,
        Some(word) => Some(word.parse::<ApprovalStatus>().map_err(|_| {
            ApiError::invalid("status is one of pending, approved, denied, expired, all")
        })?),
    };
    let approvals = gateway.approvals().list(&operator.tenant, status).await?;
    Ok(Json(ApprovalList {
        approvals: approvals.iter().map(approval_view).collect(),
    }))
}

/// One approval.
#[utoipa::path(
    get,
    path = "/api/v1/approvals/{id}",
    tag = "approvals",
    params(("id" = String, Path, description = "The approval's id")),
    responses(
        (status = 200, description = "The approval", body = ApprovalView),
        (status = 401, description = "No or a wrong key", body = ErrorBody),
        (status = 403, description = "A key below `admin`", body = ErrorBody),
        (status = 404, description = "No such approval (or another tenant's)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn one(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Json<ApprovalView>, ApiError> {
    let approval = gateway.approvals().get(&operator.tenant, &id).await?;
    Ok(Json(approval_view(&approval)))
}

/// The viewport when the call was held, the target outlined (JPEG).
#[utoipa::path(
    get,
    path = "/api/v1/approvals/{id}/screenshot",
    tag = "approvals",
    params(("id" = String, Path, description = "The approval's id")),
    responses(
        (status = 200, description = "The image", content_type = "image/jpeg", body = Vec<u8>),
        (status = 401, description = "No or a wrong key", body = ErrorBody),
        (status = 403, description = "A key below `admin`", body = ErrorBody),
        (status = 404, description = "No such approval, or no screenshot", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn screenshot(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (mime, data) = gateway
        .approvals()
        .screenshot(&operator.tenant, &id)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::NotFound,
                "no screenshot was taken for this approval",
            )
        })?;
    Ok((
        [
            (header::CONTENT_TYPE, mime),
            (header::CACHE_CONTROL, "no-store".to_owned()),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
        ],
        data,
    )
        .into_response())
}

/// A decision's note (approve) or reason (deny); the body may also be empty.
#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecideBody {
    /// Kept with the decision.
    #[schema(max_length = 1000)]
    note: Option<String>,
    /// Told to the agent (a denial).
    #[schema(max_length = 1000)]
    reason: Option<String>,
}

/// Lets the held call run (once, on the element approved).
#[utoipa::path(
    post,
    path = "/api/v1/approvals/{id}/approve",
    tag = "approvals",
    params(("id" = String, Path, description = "The approval's id")),
    request_body(content = Option<DecideBody>, description = "Optional note"),
    responses(
        (status = 200, description = "Recorded", body = DecisionView),
        (status = 400, description = "A bad body", body = ErrorBody),
        (status = 401, description = "No or a wrong key", body = ErrorBody),
        (status = 403, description = "A key below `admin`", body = ErrorBody),
        (status = 404, description = "No such approval (or another tenant's)", body = ErrorBody),
        (status = 409, description = "Decided or expired already", body = ErrorBody),
        (status = 413, description = "A body over 64 KiB"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn approve(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<DecideBody>,
) -> Result<Json<DecisionView>, ApiError> {
    decide(&gateway, &operator, &id, true, body).await
}

/// Refuses the held call; the agent is told, with the reason.
#[utoipa::path(
    post,
    path = "/api/v1/approvals/{id}/deny",
    tag = "approvals",
    params(("id" = String, Path, description = "The approval's id")),
    request_body(content = Option<DecideBody>, description = "Optional reason"),
    responses(
        (status = 200, description = "Recorded", body = DecisionView),
        (status = 400, description = "A bad body", body = ErrorBody),
        (status = 401, description = "No or a wrong key", body = ErrorBody),
        (status = 403, description = "A key below `admin`", body = ErrorBody),
        (status = 404, description = "No such approval (or another tenant's)", body = ErrorBody),
        (status = 409, description = "Decided or expired already", body = ErrorBody),
        (status = 413, description = "A body over 64 KiB"),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn deny(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<DecideBody>,
) -> Result<Json<DecisionView>, ApiError> {
    decide(&gateway, &operator, &id, false, body).await
}

impl JsonBody for DecideBody {
    const WHAT: &'static str = "{\"note\": …} or {\"reason\": …}";

    fn empty() -> Option<DecideBody> {
        Some(DecideBody::default())
    }
}

async fn decide(
    gateway: &Gateway,
    operator: &Principal,
    id: &str,
    approve: bool,
    body: DecideBody,
) -> Result<Json<DecisionView>, ApiError> {
    let note = body.note.or(body.reason);
    if note
        .as_ref()
        .is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS)
    {
        return Err(ApiError::invalid(format!(
            "a note is at most {MAX_NOTE_CHARS} characters"
        )));
    }
    let by = format!("api:{}", operator.key.as_deref().unwrap_or("operator"));
    match gateway
        .approvals()
        .decide(&operator.tenant, id, approve, &by, note.as_deref())
        .await?
    {
        Decision::Recorded => Ok(Json(DecisionView {
            id: id.to_owned(),
            status: ApprovalStatus::decided(approve).as_str(),
            decided_by: by,
        })),
        Decision::Closed(status) => Err(ApiError::new(
            ErrorCode::ApprovalClosed,
            format!("this approval is {status} already; nothing was changed"),
        )),
    }
}

/// Where to resume the event stream.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct EventsQuery {
    /// Send events after this sequence number (else only new ones; `Last-Event-ID`
    /// does the same).
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
                    .audit()
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
/// The tenant's audit events as they are written (server-sent events: `id` the seq,
/// `event` the kind, `data` the canonical JSON).
#[utoipa::path(
    get,
    path = "/api/v1/events",
    tag = "events",
    params(EventsQuery),
    responses(
        (status = 200, description = "An endless event stream", content_type = "text/event-stream", body = String),
        (status = 401, description = "No or a wrong key", body = ErrorBody),
        (status = 403, description = "A key below `admin`", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn events(
    State(gateway): State<Arc<Gateway>>,
    Extension(operator): Extension<Principal>,
    ApiQuery(query): ApiQuery<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or(query.after);
    // Subscribed before the store is read: nothing written in between is lost.
    let rx = gateway.audit().feed();
    let last = match resume {
        Some(seq) => seq,
        None => gateway.audit().last_event_seq().await?,
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
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

fn sse_event(event: &FeedEvent) -> Event {
    Event::default()
        .id(event.seq.to_string())
        .event(event.kind.as_str())
        .data(event.body.as_str())
}

fn approval_view(a: &ApprovalRecord) -> ApprovalView {
    let parse = |text: &str| serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
    ApprovalView {
        id: a.id.clone(),
        status: a.status.to_string(),
        tenant: a.tenant.clone(),
        caller: a.caller.clone(),
        session: a.session.clone(),
        tool: a.tool.clone(),
        args: parse(&a.args),
        target: a.target.as_deref().map(parse),
        page_url: a.page_url.clone(),
        page_title: a.page_title.clone(),
        rule: a.rule.clone(),
        risk: a.risk.clone(),
        detail: a.detail.clone(),
        created_ms: a.created_ms,
        expires_ms: a.expires_ms,
        decided_ms: a.decided_ms,
        decided_by: a.decided_by.clone(),
        note: a.note.clone(),
        screenshot: format!("/api/v1/approvals/{}/screenshot", a.id),
    }
}
