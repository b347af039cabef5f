//! The live view of one session over a WebSocket: frames of its active tab (JPEG, at
//! most 2.5 a second, sent when the page paints and none while the console's tab is
//! hidden), its URL and title, what happened in it (dialogs, tabs, downloads,
//! refusals) as it happens, the agent's last actions; and, once the operator has
//! taken the page over, their clicks, keys and text. It follows the session's
//! stream from its browser host (`Gateway::live_watch`), not a timer. The socket is the page's
//! own: the upgrade needs the login's cookie and this console's `Origin` (browsers
//! always send one on a WebSocket), so another site cannot open it in the
//! operator's name.

use std::time::Duration;

use airlock_gateway::{AuditFilter, LiveCursor, OperatorInput};
use axum::Extension;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use tokio::time::Instant;

use super::{Console, Login, pages, refused};

/// Least time between two frames.
const FRAME_EVERY: Duration = Duration::from_millis(400);

/// Longest a watch of the page waits for news before the socket says it lives again
/// (and the login's end, or another's hold, is noticed).
const HEARTBEAT: Duration = Duration::from_secs(2);

/// Least time between two reads of the agent's last actions.
const ACTIONS_EVERY: Duration = Duration::from_secs(2);

/// Largest message an operator's page sends (a click, a key, a line of text).
const MAX_MESSAGE: usize = 16 * 1024;

#[derive(Deserialize, Default)]
pub(super) struct LiveQuery {
    /// A login just saved while keeping the page: (name, cookies), said once.
    saved: Option<String>,
    cookies: Option<usize>,
}

pub(super) async fn page(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(id): Path<String>,
    axum::extract::Query(query): axum::extract::Query<LiveQuery>,
) -> Response {
    let saved = query.saved.as_deref().zip(query.cookies);
    match console
        .gateway
        .session_info(&login.operator.tenant, &id)
        .await
    {
        Ok(info) => pages::live(&login, &id, &info, saved).into_response(),
        Err(_) => refused(
            StatusCode::NOT_FOUND,
            "no such live session: it may have ended",
        ),
    }
}

pub(super) async fn take_over(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(id): Path<String>,
) -> Response {
    let by = login.controller();
    let done = console
        .gateway
        .operators()
        .take_over(&login.operator.tenant, &id, &by)
        .await;
    back_to_live(&id, done)
}

pub(super) async fn hand_back(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(id): Path<String>,
) -> Response {
    let by = login.controller();
    let done = console
        .gateway
        .operators()
        .hand_back(&login.operator.tenant, &id, &by)
        .await;
    back_to_live(&id, done)
}

/// An admin releases another login's hold (one who walked away, or signed in
/// elsewhere): the page goes back to the agent.
pub(super) async fn release(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(id): Path<String>,
) -> Response {
    let done = console
        .gateway
        .operators()
        .release_hold(&login.operator.tenant, &id, &login.controller())
        .await
        .map(|_| ());
    back_to_live(&id, done)
}

// After taking over or handing back: the live page again, or why not — another
// operator's hold is a conflict, a session not of this tenant (or gone) not found.
fn back_to_live(id: &str, done: airlock_gateway::Result<()>) -> Response {
    match done {
        Ok(()) => Redirect::to(&format!("/console/sessions/{id}/live")).into_response(),
        Err(e @ airlock_gateway::Error::NotController(_)) => {
            refused(StatusCode::CONFLICT, &e.to_string())
        }
        Err(_) => refused(
            StatusCode::NOT_FOUND,
            "no such live session: it may have ended",
        ),
    }
}

#[derive(Deserialize)]
pub(super) struct SaveLogin {
    name: String,
    origins: String,
    // Stay on the live page holding it; otherwise a hold of this login's is handed
    // back once the login is saved (logging in by hand is why one takes a page over).
    #[serde(default)]
    keep: Option<String>,
}

pub(super) async fn save_login(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<SaveLogin>,
) -> Response {
    let origins: Vec<String> = form
        .origins
        .split([',', ' '])
        .filter(|o| !o.is_empty())
        .map(str::to_owned)
        .collect();
    let name = form.name.trim();
    let plain = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !plain {
        return refused(
            StatusCode::BAD_REQUEST,
            "a secret's name is letters, digits, `_` and `-` (at most 64)",
        );
    }
    match console
        .gateway
        .operators()
        .save_login(
            &login.operator.tenant,
            &id,
            &login.controller(),
            name,
            &origins,
        )
        .await
    {
        Ok(saved) => {
            let by = login.controller();
            let holds = console
                .gateway
                .session_info(&login.operator.tenant, &id)
                .await
                .is_ok_and(|info| info.controller.as_deref() == Some(by.as_str()));
            if holds && form.keep.is_some() {
                let query =
                    serde_urlencoded::to_string([("saved", name), ("cookies", &saved.to_string())])
                        .unwrap_or_default();
                return Redirect::to(&format!("/console/sessions/{id}/live?{query}"))
                    .into_response();
            }
            let handed_back = holds
                && console
                    .gateway
                    .operators()
                    .hand_back(&login.operator.tenant, &id, &by)
                    .await
                    .is_ok();
            let query = serde_urlencoded::to_string([
                ("saved", name),
                ("cookies", &saved.to_string()),
                ("handed_back", if handed_back { "1" } else { "" }),
            ])
            .unwrap_or_default();
            Redirect::to(&format!("/console/vault?{query}")).into_response()
        }
        Err(airlock_gateway::Error::NoSuchSession) => refused(
            StatusCode::NOT_FOUND,
            "no such live session: it may have ended",
        ),
        Err(e) => refused(StatusCode::BAD_REQUEST, &e.to_string()),
    }
}

pub(super) async fn socket(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(id): Path<String>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    if headers.get(header::ORIGIN).is_none() || super::cross_site(&headers) {
        tracing::warn!("the console refused a WebSocket from another origin");
        return refused(
            StatusCode::FORBIDDEN,
            "this socket is for the console's own page",
        );
    }
    if console
        .gateway
        .session_info(&login.operator.tenant, &id)
        .await
        .is_err()
    {
        return refused(StatusCode::NOT_FOUND, "no such live session");
    }
    upgrade
        .max_message_size(MAX_MESSAGE)
        .on_upgrade(move |socket| run(console, login, id, socket))
}

/// What the operator's page sends.
#[derive(Deserialize)]
#[serde(tag = "t", rename_all = "lowercase")]
enum FromPage {
    /// The console's tab was hidden: no frames until `Resume`.
    Pause,
    Resume,
    Click {
        x: f64,
        y: f64,
    },
    Key {
        k: String,
    },
    Text {
        v: String,
    },
}

async fn run(console: Console, login: Login, id: String, socket: WebSocket) {
    let (mut tx, mut rx) = socket.split();
    let tenant = login.operator.tenant.clone();
    let by = login.controller();
    let mut paused = false;
    let mut last_click: Option<(f64, f64)> = None;
    let mut cursor = LiveCursor::default();
    // What the last frame showed: every status line says it again.
    let mut page = (String::new(), String::new(), (0u32, 0u32));
    let mut actions: Vec<String> = Vec::new();
    let mut actions_read: Option<Instant> = None;
    // Frames are paced (at most one per `FRAME_EVERY`), not polled: the next watch
    // starts once this moment has passed.
    let mut next_watch = Instant::now();
    loop {
        let frames = !paused;
        let watch = async {
            tokio::time::sleep_until(next_watch).await;
            console
                .gateway
                .operators()
                .live_watch(&tenant, &id, &mut cursor, frames, HEARTBEAT)
                .await
        };
        tokio::select! {
            update = watch => {
                // A login that ended holds nothing: its page goes back to the agent.
                if !console.alive(&login).await {
                    console.gateway.operators().release_holds_of(&by, "console login ended").await;
                    let _ = tx.send(Message::Text(r#"{"signed_out":true}"#.into())).await;
                    break;
                }
                // Watching the page it holds, shown: the hold is tended.
                console.gateway.operators().tend_hold(&tenant, &id, &by);
                let update = match update {
                    Ok(update) => update,
                    Err(e) => {
                        // Gone, or only unshowable this moment (a dialog holds the page).
                        let gone = console.gateway.session_info(&tenant, &id).await.is_err();
                        let message = if gone {
                            serde_json::json!({"ended": true})
                        } else {
                            serde_json::json!({"error": e.to_string()})
                        };
                        if tx.send(Message::Text(message.to_string().into())).await.is_err() || gone {
                            break;
                        }
                        next_watch = Instant::now() + FRAME_EVERY;
                        continue;
                    }
                };
                if actions_read.is_none_or(|at| at.elapsed() >= ACTIONS_EVERY) {
                    actions = last_actions(&console, &tenant, &id).await;
                    actions_read = Some(Instant::now());
                }
                if !update.events.is_empty() || update.missed > 0 {
                    let events: Vec<String> = update
                        .events
                        .iter()
                        .map(|line| airlock_core::text::display_safe(line).into_owned())
                        .collect();
                    let message = serde_json::json!({"events": events, "missed": update.missed});
                    if tx.send(Message::Text(message.to_string().into())).await.is_err() {
                        break;
                    }
                }
                let jpeg = update.frame.map(|frame| {
                    page = (frame.url, frame.title, frame.viewport);
                    frame.jpeg
                });
                let status = serde_json::json!({
                    "url": airlock_core::text::display_safe(&airlock_policy::display_url(&page.0)),
                    "title": airlock_core::text::display_safe(&page.1),
                    "controller": update.controller,
                    "mine": update.controller.as_deref() == Some(by.as_str()),
                    "viewport": [page.2.0, page.2.1],
                    "actions": actions,
                });
                if tx.send(Message::Text(status.to_string().into())).await.is_err() {
                    break;
                }
                if let Some(jpeg) = jpeg {
                    if tx.send(Message::Binary(jpeg.into())).await.is_err() {
                        break;
                    }
                    next_watch = Instant::now() + FRAME_EVERY;
                }
            }
            message = rx.next() => {
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Binary(_))) => continue,
                    _ => break,
                };
                let Ok(message) = serde_json::from_str::<FromPage>(&text) else {
                    let _ = tx.send(Message::Text(r#"{"error":"a message the console does not know"}"#.into())).await;
                    continue;
                };
                let input = match message {
                    FromPage::Pause => { paused = true; continue; }
                    FromPage::Resume => { paused = false; continue; }
                    FromPage::Click { x, y } if x.is_finite() && y.is_finite() => {
                        last_click = Some((x, y));
                        OperatorInput::Click { x, y }
                    }
                    FromPage::Click { .. } => continue,
                    FromPage::Key { k } => OperatorInput::Key(k),
                    FromPage::Text { v } => OperatorInput::Text(zeroize::Zeroizing::new(v)),
                };
                let done = console
                    .gateway
                    .operators()
                    .operator_input(&tenant, &id, &by, input, last_click)
                    .await;
                let reply = match done {
                    Ok(()) => serde_json::json!({"done": true}),
                    Err(e) => serde_json::json!({"error": e.to_string()}),
                };
                // What the input changed is shown once it paints, paced as ever.
                if tx.send(Message::Text(reply.to_string().into())).await.is_err() {
                    break;
                }
            }
        }
    }
    // The page need not be watched for this socket any more (another console's
    // watch starts it again).
    console.gateway.operators().live_unwatch(&tenant, &id).await;
}

// The agent's last five calls in the session, newest first, as one line each.
async fn last_actions(console: &Console, tenant: &str, id: &str) -> Vec<String> {
    let filter = AuditFilter {
        session: Some(id.to_owned()),
        limit: 40,
        ..AuditFilter::default()
    };
    let events = console
        .gateway
        .audit_events(tenant, &filter)
        .await
        .unwrap_or_default();
    events
        .iter()
        .filter(|e| e.kind == "tool_call" || e.kind.starts_with("operator_"))
        .take(5)
        .map(pages::event_line)
        .collect()
}
