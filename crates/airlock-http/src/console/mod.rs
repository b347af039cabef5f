//! The operator's web console at `/`: server-rendered pages (see [`pages`]) with a
//! little JavaScript of its own, every asset embedded in the binary.
//!
//! Sign-in takes a key of the `admin` role (as `/api/v1` does) and gives an
//! `HttpOnly`, `SameSite=Strict` cookie naming a login kept in memory (only its
//! SHA-256 is kept), eight hours at most. Every mutation is a form POST that must
//! carry the login's CSRF token and, when the browser sends one, this console's own
//! `Origin`; anything else is refused before it is read. Every page is scoped to the
//! operator's tenant and served with a strict Content-Security-Policy: no inline
//! script or style, no frames, nothing from another origin. Page-controlled text (a
//! title, a URL, an argument) only ever reaches HTML through maud's escaping.

mod describe;
mod live;
mod logins;
mod pages;

use hex::ToHex as _;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use subtle::ConstantTimeEq as _;

use airlock_core::Role;
use airlock_gateway::{ApprovalStatus, AuditFilter, Decision, Gateway, Principal};
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Form, Router};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::auth::Authenticator;

/// The cookie naming a console login.
const COOKIE: &str = "airlock_console";

/// How long a console login lasts.
const LOGIN_TTL: Duration = Duration::from_secs(8 * 3600);

/// Most console logins kept at once (the oldest goes first).
const MAX_LOGINS: usize = 256;

/// Most audit events one page shows.
const AUDIT_PAGE: usize = 200;

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; \
connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// What the console's handlers share.
#[derive(Clone)]
pub(crate) struct Console {
    gateway: Arc<Gateway>,
    auth: Arc<Authenticator>,
    logins: Arc<Mutex<HashMap<[u8; 32], Login>>>,
    // The tenant's stored logins (none without a store and a vault).
    stored: Option<Arc<airlock_login::Logins>>,
}

/// One signed-in operator. Kept in the store (any replica knows it; only the
/// cookie's SHA-256 is stored), or in memory for a gateway without one.
#[derive(Clone)]
pub(crate) struct Login {
    pub(crate) operator: Principal,
    // Names this login (not secret): two operators signed in with one key are still
    // two controllers of a live session.
    pub(crate) id: String,
    // Sent back in every form; compared in constant time. Derived from the cookie,
    // so nothing but its hash need be stored.
    pub(crate) csrf: String,
    pub(crate) expires_ms: i64,
}

// A login's CSRF token: a hash of its cookie under a label of its own (the cookie is
// HttpOnly; the token is in every form, so it must not reveal the cookie).
fn csrf_of(token: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(b"airlock console csrf\0");
    hash.update(token.as_bytes());
    hash.finalize().encode_hex::<String>()
}

impl Login {
    /// Who this login is to a live session it holds.
    pub(crate) fn controller(&self) -> String {
        format!("{} (console login {})", self.operator.caller(), self.id)
    }
}

/// The console's routes (`/` and `/console/…`).
pub(crate) fn routes(
    gateway: Arc<Gateway>,
    auth: Arc<Authenticator>,
    stored: Option<Arc<airlock_login::Logins>>,
) -> Router {
    let console = Console {
        gateway,
        auth,
        logins: Arc::default(),
        stored,
    };
    let signed_in = Router::new()
        .route("/console/sessions", get(sessions))
        .route("/console/sessions/{id}/end", post(end_session))
        .route("/console/sessions/{id}/replay", get(replay))
        .route("/console/sessions/{id}/live", get(live::page))
        .route("/console/sessions/{id}/live/ws", get(live::socket))
        .route("/console/sessions/{id}/take-over", post(live::take_over))
        .route("/console/sessions/{id}/hand-back", post(live::hand_back))
        .route("/console/sessions/{id}/release", post(live::release))
        .route("/console/sessions/{id}/save-login", post(live::save_login))
        .route("/console/sessions/{id}/steps/{step}", get(step_image))
        .route("/console/tasks", get(tasks))
        .route("/console/tasks/{id}", get(task))
        .route("/console/approvals", get(approvals))
        .route(
            "/console/approvals/{id}/screenshot",
            get(approval_screenshot),
        )
        .route("/console/approvals/{id}/{verdict}", post(decide))
        .route("/console/audit", get(audit))
        .route("/console/audit/export", get(audit_export))
        .route("/console/audit/{seq}/image", get(recorded_image))
        .route("/console/vault", get(vault))
        .route("/console/logins", get(logins::list))
        .route(
            "/console/logins/give",
            get(logins::give_page).post(logins::give),
        )
        .route("/console/logins/{name}/check", post(logins::check))
        .route("/console/logins/{name}/link", post(logins::link))
        .route("/console/logins/{name}/spec", post(logins::spec))
        .route("/console/logins/{name}/{verb}", post(logins::switch))
        .route("/console/sign-out", post(sign_out))
        .route_layer(middleware::from_fn_with_state(
            console.clone(),
            require_login,
        ));
    Router::new()
        .route("/", get(index))
        .route("/console/sign-in", get(sign_in_page).post(sign_in))
        .route("/console/assets/console.css", get(css))
        .route("/console/assets/console.js", get(js))
        // Browsers ask for one on every page; nothing to show is not an error.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .merge(signed_in)
        .layer(middleware::from_fn(security_headers))
        .with_state(console)
}

// Headers on every console response: what a page may load, and that it is never
// framed, cached or sniffed.
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Not `no-referrer`: under it Chromium sends `Origin: null` even on the console's
    // own forms, and the origin check below would refuse them.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

impl Console {
    async fn login_of(&self, headers: &HeaderMap) -> Option<Login> {
        let token = cookie(headers, COOKIE)?;
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = now_ms();
        if let Some(store) = self.gateway.store() {
            let record = match store.console_login(&key, now).await {
                Ok(record) => record?,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read console logins");
                    return None;
                }
            };
            return Some(Login {
                operator: Principal {
                    tenant: record.tenant,
                    role: Role::parse(&record.role)?,
                    key: record.key_digest,
                },
                id: record.id,
                csrf: csrf_of(token),
                expires_ms: record.expires_ms,
            });
        }
        let mut logins = lock(&self.logins);
        match logins.get(&key) {
            Some(login) if login.expires_ms > now => Some(login.clone()),
            Some(_) => {
                logins.remove(&key);
                None
            }
            None => None,
        }
    }

    // Whether `login` is still signed in (not signed out, not expired).
    async fn alive(&self, login: &Login) -> bool {
        let now = now_ms();
        if login.expires_ms <= now {
            return false;
        }
        if let Some(store) = self.gateway.store() {
            return store
                .console_login_alive(&login.id, now)
                .await
                .unwrap_or(false);
        }
        lock(&self.logins)
            .values()
            .any(|l| l.id == login.id && l.expires_ms > now)
    }

    // A new login for `operator`: the cookie value to set.
    async fn sign_in(&self, operator: Principal) -> Option<String> {
        let token = random_hex();
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = now_ms();
        let login = Login {
            operator,
            id: random_hex()[..8].to_owned(),
            csrf: csrf_of(&token),
            expires_ms: now + LOGIN_TTL.as_millis() as i64,
        };
        if let Some(store) = self.gateway.store() {
            let record = airlock_gateway::ConsoleLoginRecord {
                token_hash: key.to_vec(),
                id: login.id,
                tenant: login.operator.tenant,
                role: login.operator.role.as_str().to_owned(),
                key_digest: login.operator.key,
                created_ms: now,
                expires_ms: login.expires_ms,
            };
            if let Err(e) = store.insert_console_login(&record, MAX_LOGINS as i64).await {
                tracing::error!(error = %e, "cannot keep a console login");
                return None;
            }
            return Some(token);
        }
        let mut logins = lock(&self.logins);
        logins.retain(|_, l| l.expires_ms > now);
        if logins.len() >= MAX_LOGINS
            && let Some(oldest) = logins
                .iter()
                .min_by_key(|(_, l)| l.expires_ms)
                .map(|(k, _)| *k)
        {
            logins.remove(&oldest);
        }
        logins.insert(key, login);
        Some(token)
    }

    // Ends the login whose cookie is `token`; it, if there was one.
    async fn sign_out(&self, token: &str) -> Option<Login> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(store) = self.gateway.store() {
            let record = store.remove_console_login(&key).await.ok()??;
            return Some(Login {
                operator: Principal {
                    tenant: record.tenant,
                    role: Role::parse(&record.role)?,
                    key: record.key_digest,
                },
                id: record.id,
                csrf: csrf_of(token),
                expires_ms: record.expires_ms,
            });
        }
        lock(&self.logins).remove(&key)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    // Without OS randomness no login can be safe: refuse to make one guessable.
    getrandom::fill(&mut bytes).expect("the OS gives random bytes");
    bytes.encode_hex::<String>()
}

fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

// This console's own origin, as the browser names it (`http://host:port`).
pub(super) fn own_origin(headers: &HeaderMap) -> Option<String> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    Some(format!("http://{host}"))
}

// A cross-site POST is refused: when the browser says where the form came from, it
// must be here (`Origin`, `Sec-Fetch-Site`).
pub(super) fn cross_site(headers: &HeaderMap) -> bool {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let own = own_origin(headers);
        let https = own.as_ref().map(|o| o.replacen("http://", "https://", 1));
        let origin = origin.to_str().unwrap_or_default();
        if Some(origin) != own.as_deref() && Some(origin) != https.as_deref() {
            return true;
        }
    }
    headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| site != "same-origin" && site != "none")
}

// Pages need a login; POSTs also the login's CSRF token (a form field, checked
// here so no handler can forget it) and no cross-site origin.
async fn require_login(State(console): State<Console>, request: Request, next: Next) -> Response {
    let Some(login) = console.login_of(request.headers()).await else {
        return if request.method() == axum::http::Method::GET {
            Redirect::to("/console/sign-in").into_response()
        } else {
            refused(
                StatusCode::UNAUTHORIZED,
                "sign in again: this console login ended",
            )
        };
    };
    if request.method() != axum::http::Method::POST {
        let mut request = request;
        request.extensions_mut().insert(login);
        return next.run(request).await;
    }
    if cross_site(request.headers()) {
        tracing::warn!("the console refused a cross-site form");
        return refused(
            StatusCode::FORBIDDEN,
            "this form did not come from this console",
        );
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return refused(StatusCode::PAYLOAD_TOO_LARGE, "this form is too large");
    };
    let token = form_field(&bytes, "csrf").unwrap_or_default();
    if !bool::from(token.as_bytes().ct_eq(login.csrf.as_bytes())) {
        tracing::warn!("the console refused a form without its CSRF token");
        return refused(
            StatusCode::FORBIDDEN,
            "this form is stale or forged: reload the page",
        );
    }
    let mut request = Request::from_parts(parts, axum::body::Body::from(bytes));
    request.extensions_mut().insert(login);
    next.run(request).await
}

fn form_field(body: &[u8], name: &str) -> Option<String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(body).ok()?;
    pairs.into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

pub(super) fn refused(status: StatusCode, message: &str) -> Response {
    (status, pages::message_page(status.as_u16(), message)).into_response()
}

async fn index(State(console): State<Console>, headers: HeaderMap) -> Response {
    if console.login_of(&headers).await.is_some() {
        return Redirect::to("/console/sessions").into_response();
    }
    Redirect::to("/console/sign-in").into_response()
}

async fn sign_in_page(State(console): State<Console>, headers: HeaderMap) -> Response {
    if console.login_of(&headers).await.is_some() {
        return Redirect::to("/console/sessions").into_response();
    }
    pages::sign_in(None, console.auth.admin_possible().await).into_response()
}

#[derive(Deserialize)]
struct SignIn {
    key: String,
}

async fn sign_in(State(console): State<Console>, headers: HeaderMap, request: Request) -> Response {
    if cross_site(&headers) {
        return refused(
            StatusCode::FORBIDDEN,
            "this form did not come from this console",
        );
    }
    let client = crate::client_addr(&request);
    let Ok(bytes) = axum::body::to_bytes(request.into_body(), 16 * 1024).await else {
        return refused(StatusCode::PAYLOAD_TOO_LARGE, "this form is too large");
    };
    let Ok(form) = serde_urlencoded::from_bytes::<SignIn>(&bytes) else {
        return (
            StatusCode::BAD_REQUEST,
            pages::sign_in(Some("Enter a key."), true),
        )
            .into_response();
    };
    let operator = match console
        .auth
        .console_principal(form.key.trim(), client)
        .await
    {
        Ok(operator) if operator.role >= Role::Admin => operator,
        Ok(_) => {
            return (
                StatusCode::FORBIDDEN,
                pages::sign_in(
                    Some("This key cannot sign in here: the console needs an admin key."),
                    true,
                ),
            )
                .into_response();
        }
        Err(response) => {
            if response.status() == StatusCode::TOO_MANY_REQUESTS {
                return response;
            }
            return (
                StatusCode::UNAUTHORIZED,
                pages::sign_in(Some("That key is not valid."), true),
            )
                .into_response();
        }
    };
    tracing::info!(operator = %operator.caller(), "an operator signed in to the console");
    let Some(token) = console.sign_in(operator).await else {
        return refused(
            StatusCode::SERVICE_UNAVAILABLE,
            "the console cannot keep a login now; try again",
        );
    };
    let mut response = Redirect::to("/console/sessions").into_response();
    let cookie = format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        LOGIN_TTL.as_secs()
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

async fn sign_out(State(console): State<Console>, headers: HeaderMap) -> Response {
    let ended = match cookie(&headers, COOKIE) {
        Some(token) => console.sign_out(token).await,
        None => None,
    };
    // A page this login held goes back to its agent: no one is left to hand it back.
    if let Some(login) = ended {
        console
            .gateway
            .operators()
            .release_holds_of(&login.controller(), "console login ended")
            .await;
    }
    let mut response = Redirect::to("/console/sign-in").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("airlock_console=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    );
    response
}

async fn css() -> Response {
    asset("text/css; charset=utf-8", include_str!("console.css"))
}

async fn js() -> Response {
    asset("text/javascript; charset=utf-8", include_str!("console.js"))
}

fn asset(mime: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, mime),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        body,
    )
        .into_response()
}

async fn sessions(State(console): State<Console>, Extension(login): Extension<Login>) -> Response {
    let tenant = &login.operator.tenant;
    // Every replica's: the console behind a load balancer shows one fleet.
    let leases = match console.gateway.sessions_everywhere(tenant, None).await {
        Ok(leases) => leases,
        Err(e) => return refused(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    };
    let pending = console
        .gateway
        .approvals()
        .list(tenant, Some(ApprovalStatus::Pending))
        .await
        .unwrap_or_default();
    pages::sessions(&login, &leases, &pending).into_response()
}

async fn end_session(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(id): Path<String>,
) -> Response {
    match console
        .gateway
        .end_session(&login.operator.tenant, &id)
        .await
    {
        Ok(()) => {
            tracing::info!(session.id = %id, operator = %login.operator.caller(), "an operator ended a session");
            Redirect::to("/console/sessions").into_response()
        }
        Err(_) => refused(
            StatusCode::NOT_FOUND,
            "no such session: it may have ended already",
        ),
    }
}

/// Most events a replay or a task's transcript shows.
const TRANSCRIPT: usize = 2_000;

// The events `filter` picks (a session's, a task's), oldest first, for a replay or
// a transcript; the refusal to send when the log cannot be read.
async fn transcript(
    console: &Console,
    tenant: &str,
    filter: AuditFilter,
) -> Result<Vec<airlock_gateway::AuditRecord>, Response> {
    let filter = AuditFilter {
        limit: TRANSCRIPT,
        ..filter
    };
    let mut events = console
        .gateway
        .audit_events(tenant, &filter)
        .await
        .map_err(|e| refused(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()))?;
    events.reverse();
    Ok(events)
}

async fn replay(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(id): Path<String>,
) -> Response {
    let tenant = &login.operator.tenant;
    let filter = AuditFilter {
        session: Some(id.clone()),
        ..AuditFilter::default()
    };
    let events = match transcript(&console, tenant, filter).await {
        Ok(events) => events,
        Err(response) => return response,
    };
    if events.is_empty() {
        return refused(StatusCode::NOT_FOUND, "no such session on the record");
    }
    let steps = console
        .gateway
        .session_steps(tenant, &id)
        .await
        .unwrap_or_default();
    pages::replay(&login, &id, &events, &steps).into_response()
}

/// Most task events the tasks list reads (a start and an end a task).
const TASKS_SCANNED: usize = 400;

// The ids of the tenant's sessions open now (a task without an end whose session is
// gone did not finish on the record).
async fn live_sessions(console: &Console, tenant: &str) -> Vec<String> {
    let leases = match console.gateway.sessions_everywhere(tenant, None).await {
        Ok(leases) => leases,
        // The store not answering: this replica's own, which it knows.
        Err(_) => console.gateway.tenant_sessions(tenant, None),
    };
    leases.iter().map(|lease| lease.id.to_string()).collect()
}

async fn tasks(State(console): State<Console>, Extension(login): Extension<Login>) -> Response {
    let tenant = &login.operator.tenant;
    let filter = AuditFilter {
        kinds: vec!["task_started".to_owned(), "task_ended".to_owned()],
        limit: TASKS_SCANNED,
        ..AuditFilter::default()
    };
    match console.gateway.audit_events(tenant, &filter).await {
        Ok(events) => {
            let rows = pages::task_rows(&events);
            pages::tasks(&login, &rows, &live_sessions(&console, tenant).await).into_response()
        }
        Err(e) => refused(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
}

async fn task(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(id): Path<String>,
) -> Response {
    let tenant = &login.operator.tenant;
    let filter = AuditFilter {
        task: Some(id.clone()),
        ..AuditFilter::default()
    };
    let events = match transcript(&console, tenant, filter).await {
        Ok(events) => events,
        Err(response) => return response,
    };
    match pages::task_rows(&events)
        .into_iter()
        .find(|row| row.id == id)
    {
        Some(row) => pages::task(
            &login,
            &row,
            &events,
            &live_sessions(&console, tenant).await,
        )
        .into_response(),
        None => refused(StatusCode::NOT_FOUND, "no such task on the record"),
    }
}

async fn step_image(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path((id, step)): Path<(String, u64)>,
) -> Response {
    let steps = console
        .gateway
        .session_steps(&login.operator.tenant, &id)
        .await
        .unwrap_or_default();
    match steps.into_iter().find(|s| s.step == step) {
        Some(s) => image(s.mime, s.data.to_vec()),
        None => refused(StatusCode::NOT_FOUND, "no such step"),
    }
}

async fn recorded_image(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(seq): Path<u64>,
) -> Response {
    match console
        .gateway
        .recorded_image(&login.operator.tenant, seq)
        .await
    {
        Ok(Some(data)) => image("image/jpeg", data),
        _ => refused(
            StatusCode::NOT_FOUND,
            "no stored image for this step (pruned, altered since, or never recorded)",
        ),
    }
}

fn image(mime: &str, data: Vec<u8>) -> Response {
    let mime = HeaderValue::from_str(mime).unwrap_or(HeaderValue::from_static("image/jpeg"));
    ([(header::CONTENT_TYPE, mime)], data).into_response()
}

async fn approvals(State(console): State<Console>, Extension(login): Extension<Login>) -> Response {
    let all = console
        .gateway
        .approvals()
        .list(&login.operator.tenant, None)
        .await
        .unwrap_or_default();
    pages::approvals(&login, &all, now_ms()).into_response()
}

async fn approval_screenshot(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(id): Path<String>,
) -> Response {
    match console
        .gateway
        .approvals()
        .screenshot(&login.operator.tenant, &id)
        .await
    {
        Ok(Some((mime, data))) => image(&mime, data),
        _ => refused(StatusCode::NOT_FOUND, "no screenshot for this approval"),
    }
}

#[derive(Deserialize)]
struct DecideForm {
    #[serde(default)]
    note: String,
}

async fn decide(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path((id, verdict)): Path<(String, String)>,
    Form(form): Form<DecideForm>,
) -> Response {
    let approve = match verdict.as_str() {
        "approve" => true,
        "deny" => false,
        _ => return refused(StatusCode::NOT_FOUND, "no such decision"),
    };
    let note = form.note.trim();
    if note.chars().count() > 1_000 {
        return refused(
            StatusCode::BAD_REQUEST,
            "a note is at most 1,000 characters",
        );
    }
    let note = (!note.is_empty()).then_some(note);
    let by = format!(
        "console:{}",
        login.operator.key.as_deref().unwrap_or("operator")
    );
    match console
        .gateway
        .approvals()
        .decide(&login.operator.tenant, &id, approve, &by, note)
        .await
    {
        Ok(Decision::Recorded) => Redirect::to("/console/approvals").into_response(),
        Ok(Decision::Closed(status)) => refused(
            StatusCode::CONFLICT,
            &format!("this approval is {status} already; nothing was changed"),
        ),
        Err(_) => refused(StatusCode::NOT_FOUND, "no such approval"),
    }
}

#[derive(Deserialize, Default)]
pub(crate) struct AuditQuery {
    #[serde(default)]
    pub(crate) session: String,
    #[serde(default)]
    pub(crate) tool: String,
    #[serde(default)]
    pub(crate) decision: String,
    /// Only the last this many minutes.
    #[serde(default)]
    pub(crate) minutes: String,
}

impl AuditQuery {
    fn filter(&self, limit: usize) -> AuditFilter {
        let given = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_owned());
        AuditFilter {
            session: given(&self.session),
            tool: given(&self.tool),
            decision: given(&self.decision),
            kinds: Vec::new(),
            task: None,
            since_ms: self
                .minutes
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|m| *m > 0)
                .map(|m| now_ms() - m.saturating_mul(60_000)),
            limit,
        }
    }
}

async fn audit(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Query(query): Query<AuditQuery>,
) -> Response {
    let events = console
        .gateway
        .audit_events(&login.operator.tenant, &query.filter(AUDIT_PAGE))
        .await;
    let chain = console.gateway.audit_chain(&login.operator.tenant).await;
    match (events, chain) {
        (Ok(events), Ok(chain)) => pages::audit(&login, &query, &events, &chain).into_response(),
        (Err(e), _) | (_, Err(e)) => refused(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
}

async fn audit_export(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Query(query): Query<AuditQuery>,
) -> Response {
    let events = match console
        .gateway
        .audit_events(&login.operator.tenant, &query.filter(100_000))
        .await
    {
        Ok(events) => events,
        Err(e) => return refused(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    };
    // Oldest first, one canonical event a line, as `airlock audit export` writes.
    let mut body = String::new();
    for event in events.iter().rev() {
        body.push_str(&event.body);
        body.push('\n');
    }
    (
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"airlock-audit.jsonl\"",
            ),
        ],
        body,
    )
        .into_response()
}

#[derive(Deserialize, Default)]
struct VaultQuery {
    /// A login just saved: (name, cookies), said once on the page.
    saved: Option<String>,
    cookies: Option<usize>,
    /// The page held was handed back with it.
    #[serde(default)]
    handed_back: String,
}

async fn vault(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Query(query): Query<VaultQuery>,
) -> Response {
    let saved = query.saved.as_deref().zip(query.cookies);
    match console.gateway.secret_infos(&login.operator.tenant).await {
        Ok(secrets) => {
            pages::vault(&login, &secrets, saved, query.handed_back == "1").into_response()
        }
        Err(e) => refused(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
