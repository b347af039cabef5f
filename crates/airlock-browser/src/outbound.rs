//! Outbound protection: in a session holding secrets, every request a page, frame or
//! worker makes is paused before it leaves Chromium (`Fetch.requestPaused`, request
//! stage) and shown to the session's [`RequestGuard`] with its URL, headers and body,
//! as the browser would send them; a refused request fails with `BlockedByClient`.
//! The same pause adds injected headers to requests of their bound origins.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::action::{Injection, Notice};
use crate::cdp::{Connection, Event};
use crate::guard::NavGuard;

/// Judges what a page is about to send.
pub trait RequestGuard: Send + Sync {
    /// Why `request` must not leave the browser, or `None` to let it go. The reason
    /// names what it carried and where to, never a value.
    fn refuse(&self, request: &OutgoingRequest<'_>) -> Option<String>;
}

/// A request as Chromium is about to send it.
#[derive(Debug)]
pub struct OutgoingRequest<'a> {
    /// The full URL.
    pub url: &'a str,
    /// Its headers (cookies are added later by the network stack, and only for their
    /// own domains).
    pub headers: Vec<(&'a str, &'a str)>,
    /// The body, when it has one Chromium handed over.
    pub body: Option<Cow<'a, [u8]>>,
    /// It has a body Chromium did not hand over (a file, a blob, a large upload).
    pub body_unseen: bool,
}

impl<'a> OutgoingRequest<'a> {
    fn from_cdp(request: &'a Value) -> OutgoingRequest<'a> {
        let headers = request["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default();
        let entries: Option<Vec<u8>> = request["postDataEntries"].as_array().map(|entries| {
            entries
                .iter()
                .filter_map(|e| e["bytes"].as_str())
                .filter_map(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                .flatten()
                .collect()
        });
        let body = match (entries, request["postData"].as_str()) {
            (Some(bytes), _) if !bytes.is_empty() => Some(Cow::Owned(bytes)),
            (_, Some(text)) => Some(Cow::Borrowed(text.as_bytes())),
            _ => None,
        };
        let body_unseen = body.is_none() && request["hasPostData"].as_bool() == Some(true);
        OutgoingRequest {
            url: request["url"].as_str().unwrap_or_default(),
            headers,
            body,
            body_unseen,
        }
    }
}

/// What a session's pauses need: the guard (if the session holds secrets), the
/// headers to inject, where refusals are counted and reported.
#[derive(Clone)]
pub(crate) struct Requests {
    pub(crate) guard: Option<Arc<dyn RequestGuard>>,
    pub(crate) injection: Option<Arc<Injection>>,
    /// Requests refused since the gateway last asked (shared by the session's tabs
    /// and workers).
    pub(crate) refused: Arc<AtomicU64>,
}

impl Requests {
    /// Whether every request must be paused (the session holds secrets).
    pub(crate) fn inspects_all(&self) -> bool {
        self.guard.is_some()
    }

    /// `Fetch.enable` patterns: every request when inspecting, else only those of
    /// origins that get headers; `None` when nothing needs pausing.
    pub(crate) fn patterns(&self) -> Option<Vec<Value>> {
        if self.inspects_all() {
            return Some(vec![
                json!({ "urlPattern": "*", "requestStage": "Request" }),
            ]);
        }
        let injection = self.injection.as_ref().filter(|i| !i.headers.is_empty())?;
        let mut origins: Vec<&str> = injection
            .headers
            .iter()
            .map(|(o, _, _)| o.as_str())
            .collect();
        origins.sort_unstable();
        origins.dedup();
        Some(
            origins
                .iter()
                .map(|o| json!({ "urlPattern": format!("{o}/*"), "requestStage": "Request" }))
                .collect(),
        )
    }

    /// Answers one `Fetch.requestPaused` of CDP session `session`: refused, or let
    /// go with the headers its origin gets. Replies off the caller's task (the reply
    /// may wait on events the caller must read).
    /// Judges a paused request and lets it go or fails it; returns why it was
    /// refused, if it was.
    pub(crate) fn on_paused(
        &self,
        conn: &Connection,
        session: &str,
        notices: &NavGuard,
        p: &Value,
    ) -> Option<String> {
        let id = p["requestId"].as_str().unwrap_or_default().to_owned();
        let request = &p["request"];
        let url = request["url"].as_str().unwrap_or_default();
        let origin = url::Url::parse(url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        let refusal = self
            .guard
            .as_ref()
            .and_then(|g| g.refuse(&OutgoingRequest::from_cdp(request)));
        let (method, params) = match refusal.clone() {
            Some(why) => {
                self.refused.fetch_add(1, Ordering::AcqRel);
                notices.notify_once(Notice::RequestRefused {
                    origin: origin.clone(),
                    why,
                });
                (
                    "Fetch.failRequest",
                    json!({ "requestId": id, "errorReason": "BlockedByClient" }),
                )
            }
            None => (
                "Fetch.continueRequest",
                self.continue_params(id, &origin, request),
            ),
        };
        let conn = conn.clone();
        let session = session.to_owned();
        tokio::spawn(async move {
            let _ = conn
                .call(Some(&session), method, params, Duration::from_secs(5))
                .await;
        });
        refusal
    }

    // Headers are added only on an exact origin match (the pattern matched by
    // prefix), so no other site ever receives them.
    fn continue_params(&self, id: String, origin: &str, request: &Value) -> Value {
        let mut params = json!({ "requestId": id });
        let Some(injection) = &self.injection else {
            return params;
        };
        let extra: Vec<_> = injection
            .headers
            .iter()
            .filter(|(o, _, _)| o == origin)
            .collect();
        if extra.is_empty() {
            return params;
        }
        let mut headers: Vec<Value> = Vec::new();
        if let Some(existing) = request["headers"].as_object() {
            for (name, value) in existing {
                if !extra.iter().any(|(_, n, _)| n.eq_ignore_ascii_case(name)) {
                    headers.push(json!({ "name": name, "value": value }));
                }
            }
        }
        for (_, name, value) in extra {
            headers.push(json!({ "name": name, "value": value.as_str() }));
        }
        params["headers"] = Value::Array(headers);
        params
    }
}

/// A worker (dedicated, shared or service) of a session that inspects requests: its
/// requests are paused like a page's, then it is let run. Ends when the worker does.
pub(crate) async fn watch_worker(
    conn: Connection,
    session: String,
    requests: Requests,
    notices: NavGuard,
) {
    let mut events = conn.subscribe(Some(&session));
    let timeout = Duration::from_secs(5);
    if let Some(patterns) = requests.patterns() {
        let _ = conn
            .call(
                Some(&session),
                "Fetch.enable",
                json!({ "patterns": patterns }),
                timeout,
            )
            .await;
    }
    let _ = conn.resume(&session, timeout).await;
    while let Some(Event { method, params, .. }) = events.recv().await {
        if method == "Fetch.requestPaused" {
            requests.on_paused(&conn, &session, &notices, &params);
        }
    }
}
