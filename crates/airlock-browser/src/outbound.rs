//! Outbound protection: in a session holding secrets, every request a page, frame or
//! worker makes is paused before it leaves Chromium (`Fetch.requestPaused`, request
//! stage) and shown to the session's [`RequestGuard`] with its URL, headers and body,
//! as the browser would send them; a refused request fails with `BlockedByClient`.
//! The same pause adds injected headers to requests of their bound origins.
//!
//! WebSockets never pass `Fetch` (nor DevTools request blocking), and what a socket
//! carries cannot be inspected. In a session holding secrets, every document is given
//! a `Content-Security-Policy: connect-src` that allows `ws:`/`wss:` only to the
//! guard's [socket origins](RequestGuard::socket_origins) (what its secrets are bound
//! to, and what the operator allows): a `<meta>` put into its head from Airlock's
//! isolated world before any of its scripts runs (a policy added by a response header
//! through DevTools is not enforced, and answering the document ourselves would change
//! its address space). Frames a document makes without a document of their own
//! (`about:blank`, `srcdoc`, `blob:`) inherit it, and a page cannot lift it by removing
//! the element. Workers lose their socket constructors before their first script runs.
//! A socket the policy refuses is told to the agent like any refused request.
//!
//! A session that signs its requests (Web Bot Auth) pauses every request too: its
//! [`RequestSigner`] is asked for the headers of the request's origin (the signer
//! decides whether that origin is signed for; a page's own `Signature*` headers are
//! dropped from every request either way, so a page can neither forge nor replay
//! one through the session), and the request goes on with them.
//!
//! A session starts inspecting when it opens holding secrets, or later, when it
//! learns one ([`Session::guard_requests`](crate::Session::guard_requests)): an
//! operator types into its page.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use airlock_core::sync::lock;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use airlock_core::Redact;
use airlock_risk::Effects;

use crate::action::{Injection, Notice};
use crate::cdp::{Connection, Event};
use crate::effects::{Holds, Paused};
use crate::guard::NavGuard;

/// Judges what a page is about to send.
pub trait RequestGuard: Send + Sync {
    /// Why `request` must not leave the browser, or `None` to let it go. The reason
    /// names what it carried and where to, never a value.
    fn refuse(&self, request: &OutgoingRequest<'_>) -> Option<String>;

    /// The `ws://` and `wss://` origins pages may open WebSockets to (a socket's
    /// traffic cannot be inspected, so every other one is refused).
    fn socket_origins(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The headers that sign one request, `(name, value)`.
pub type SignedHeaders = Vec<(String, String)>;

/// A signature on its way.
pub type Signing =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<SignedHeaders>> + Send + 'static>>;

/// Signs a session's requests (Web Bot Auth). Holds no key where the browser runs
/// in another process: it asks the control plane, which decides.
pub trait RequestSigner: Send + Sync {
    /// The headers for a request to `origin` (`scheme://host[:port]`), or `None` when
    /// it goes unsigned (an origin not named for signing, or no answer in time).
    fn sign(&self, origin: &str) -> Signing;
}

/// The request headers a signature consists of: never taken from a page.
const SIGNATURE_HEADERS: [&str; 3] = ["signature", "signature-input", "signature-agent"];

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

/// What a session's pauses need: the guard (once the session holds secrets), the
/// headers to inject, where refusals are counted and reported.
#[derive(Clone)]
pub(crate) struct Requests {
    /// Set when the session opens holding secrets, or when it learns one later; never
    /// unset. Shared by the session's tabs, frames and workers.
    guard: Arc<RwLock<Option<Arc<dyn RequestGuard>>>>,
    pub(crate) injection: Option<Arc<Injection>>,
    /// Requests refused since the gateway last asked (shared by the session's tabs
    /// and workers).
    pub(crate) refused: Arc<AtomicU64>,
    /// Requests an effect rule refused since the gateway last asked.
    pub(crate) effects_refused: Arc<AtomicU64>,
    /// Workers that attached while nothing was inspected: watched from the moment
    /// the session starts inspecting.
    unwatched: Arc<Mutex<Vec<String>>>,
    /// The operator's effect rules, when there are any: every request is paused
    /// for them, and one they hold waits in `holds`.
    effects: Option<Arc<Effects>>,
    pub(crate) holds: Holds,
    /// Hides the session's secrets in what a held request shows.
    redactor: Arc<dyn Redact>,
    /// Signs its requests, when the session signs.
    signer: Option<Arc<dyn RequestSigner>>,
}

/// The kinds of request (CDP `Network.ResourceType`) that can carry an effect and
/// are paused for effect rules when nothing else needs every request paused:
/// documents (navigations, form posts, frames), fetches and XHRs, beacons and pings
/// (`Ping`), event streams, and what Chromium cannot name (`Other`). Images,
/// styles, scripts, fonts and media go unpaused: a GET of them changes nothing, and
/// a page that needs them waits on none of Airlock's round trips.
const EFFECT_TYPES: &[&str] = &["Document", "XHR", "Fetch", "Ping", "EventSource", "Other"];

/// What became of a paused request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pause {
    /// It went on.
    Sent,
    /// It was refused, for this reason.
    Refused(String),
    /// An effect rule holds it until someone decides.
    Held,
}

impl Requests {
    pub(crate) fn new(
        guard: Option<Arc<dyn RequestGuard>>,
        injection: Option<Arc<Injection>>,
        effects: Option<Arc<Effects>>,
        signer: Option<Arc<dyn RequestSigner>>,
        redactor: Arc<dyn Redact>,
    ) -> Requests {
        Requests {
            guard: Arc::new(RwLock::new(guard)),
            injection,
            refused: Arc::new(AtomicU64::new(0)),
            effects_refused: Arc::new(AtomicU64::new(0)),
            unwatched: Arc::default(),
            effects: effects.filter(|e| !e.is_empty()),
            holds: Holds::default(),
            redactor,
            signer,
        }
    }

    fn guard(&self) -> Option<Arc<dyn RequestGuard>> {
        self.guard.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Installs `guard`; `true` when the session was not inspecting before (its
    /// tabs, frames and workers must then be told to pause everything).
    pub(crate) fn set_guard(&self, guard: Arc<dyn RequestGuard>) -> bool {
        self.guard
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .replace(guard)
            .is_none()
    }

    /// Whether the session holds secrets (every request is judged by the guard,
    /// and documents get the socket policy).
    pub(crate) fn inspects_all(&self) -> bool {
        self.guard
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Whether every request of the session is paused: it holds secrets, effect
    /// rules judge its requests, or it signs them.
    pub(crate) fn pauses_all(&self) -> bool {
        self.effects.is_some() || self.signer.is_some() || self.inspects_all()
    }

    /// A worker of the session attached while nothing is inspected.
    pub(crate) fn unwatched_worker(&self, session: String) {
        let mut unwatched = lock(&self.unwatched);
        if unwatched.len() >= 256 {
            unwatched.remove(0);
        }
        unwatched.push(session);
    }

    /// The workers to watch now that the session inspects.
    pub(crate) fn take_unwatched(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.unwatched))
    }

    /// `Fetch.enable` patterns: every request when inspecting; else those that can
    /// carry an effect when effect rules judge them ([`EFFECT_TYPES`]), and those of
    /// origins that get headers; `None` when nothing needs pausing.
    pub(crate) fn patterns(&self) -> Option<Vec<Value>> {
        if self.inspects_all() || self.signer.is_some() {
            return Some(vec![
                json!({ "urlPattern": "*", "requestStage": "Request" }),
            ]);
        }
        let mut patterns = Vec::new();
        if self.effects.is_some() {
            patterns.extend(EFFECT_TYPES.iter().map(|kind| {
                json!({ "urlPattern": "*", "resourceType": kind, "requestStage": "Request" })
            }));
        }
        if let Some(injection) = self.injection.as_ref().filter(|i| !i.headers.is_empty()) {
            let mut origins: Vec<&str> = injection
                .headers
                .iter()
                .map(|(o, _, _)| o.as_str())
                .collect();
            origins.sort_unstable();
            origins.dedup();
            patterns.extend(
                origins
                    .iter()
                    .map(|o| json!({ "urlPattern": format!("{o}/*"), "requestStage": "Request" })),
            );
        }
        (!patterns.is_empty()).then_some(patterns)
    }

    /// The `Content-Security-Policy` that allows WebSockets only to the guard's
    /// socket origins (and leaves every other connection to the guard and proxy).
    fn socket_policy(&self) -> String {
        let mut policy = "connect-src http: https: data: blob:".to_owned();
        for origin in self.guard().map(|g| g.socket_origins()).unwrap_or_default() {
            // An origin is scheme, host and port: nothing that could end the directive.
            if origin
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b":/.-[]".contains(&b))
            {
                policy.push(' ');
                policy.push_str(&origin);
            }
        }
        policy
    }

    /// The script, run in Airlock's world at every document's start and once in the
    /// documents already there, that gives the document the socket policy: a
    /// `<meta http-equiv>` first in its head, put there before any of its scripts runs
    /// (a mutation observer's callback runs at the parser's checkpoint before the
    /// first script).
    pub(crate) fn socket_policy_script(&self) -> String {
        let policy = serde_json::to_string(&self.socket_policy()).unwrap_or_default();
        format!(
            "(() => {{ const put = () => {{ const head = document.head; if (!head) return false; \
             const meta = document.createElement('meta'); meta.httpEquiv = 'Content-Security-Policy'; \
             meta.content = {policy}; head.prepend(meta); return true; }}; \
             if (!put()) {{ const seen = new MutationObserver(() => {{ if (put()) seen.disconnect(); }}); \
             seen.observe(document, {{ childList: true, subtree: true }}); }} }})();"
        )
    }

    /// Whether a WebSocket to `url` is one the guard allows.
    pub(crate) fn socket_allowed(&self, url: &str) -> bool {
        let Ok(parsed) = url::Url::parse(url) else {
            return false;
        };
        let origin = parsed.origin().ascii_serialization();
        self.guard()
            .is_none_or(|g| g.socket_origins().contains(&origin))
    }

    /// Answers one `Fetch.requestPaused` of CDP session `session` (of tab `tab`'s
    /// page or frames, or of a worker): refused, held by an effect rule (left
    /// unanswered), or let go with the headers its origin gets. Replies off the
    /// caller's task (the reply may wait on events the caller must read).
    pub(crate) fn on_paused(
        &self,
        conn: &Connection,
        session: &str,
        notices: &NavGuard,
        p: &Value,
        tab: Option<&str>,
    ) -> Pause {
        let id = p["requestId"].as_str().unwrap_or_default().to_owned();
        let request = &p["request"];
        let url = request["url"].as_str().unwrap_or_default();
        let origin = url::Url::parse(url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_default();
        let outgoing = OutgoingRequest::from_cdp(request);
        let mut refusal = self.guard().and_then(|g| g.refuse(&outgoing));
        let mut counter = &self.refused;
        if refusal.is_none()
            && let Some(effects) = &self.effects
        {
            let method = request["method"].as_str().unwrap_or("GET");
            // The rules see the request as the session's redactor leaves it: a
            // pattern matched on a secret's characters would tell whoever typed it,
            // by held or not, something of its value.
            let mut judged = airlock_risk::Request {
                method,
                url,
                content_type: outgoing
                    .headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
                    .map(|(_, v)| *v),
                body: outgoing.body.as_deref(),
                body_unseen: outgoing.body_unseen,
            };
            let mut fields = airlock_risk::Fields::of(&judged);
            for (name, value) in &mut fields.pairs {
                *name = self.redactor.redact(name).into_owned();
                *value = self.redactor.redact(value).into_owned();
            }
            // Canonical first (what the server reads), then redacted: a secret
            // written with some of its letters escaped is whole again to the
            // redactor.
            let mut canonical = airlock_risk::CanonicalUrl::of(url);
            for part in [
                &mut canonical.url,
                &mut canonical.path,
                &mut canonical.query,
            ] {
                *part = self.redactor.redact(part).into_owned();
            }
            let shown_url = self.redactor.redact(url);
            judged.url = &shown_url;
            match effects.judge_fields(&judged, &canonical, &fields) {
                Some(v) if v.action == airlock_risk::Action::Deny => {
                    refusal = Some(format!("rule {} refuses this {method} request", v.rule));
                    counter = &self.effects_refused;
                }
                Some(v) if v.action == airlock_risk::Action::Approve => {
                    let paused = Paused {
                        conn,
                        session,
                        params: p,
                        tab,
                        release: self.continue_params(id.clone(), &origin, request, None),
                    };
                    if self.holds.hold(paused, &v, &fields, &*self.redactor) {
                        return Pause::Held;
                    }
                    refusal = Some(format!(
                        "rule {} holds this {method} request, and the session already holds as many as it may",
                        v.rule
                    ));
                    counter = &self.effects_refused;
                }
                _ => {}
            }
        }
        let (method, params) = match refusal.clone() {
            Some(why) => {
                counter.fetch_add(1, Ordering::AcqRel);
                notices.notify_once(Notice::RequestRefused {
                    origin: origin.clone(),
                    why,
                });
                (
                    "Fetch.failRequest",
                    json!({ "requestId": id, "errorReason": "BlockedByClient" }),
                )
            }
            None => {
                if let Some(signer) = &self.signer
                    && (url.starts_with("https://") || url.starts_with("http://"))
                {
                    // Signed off the caller's task: in a worker the signer asks the
                    // control plane.
                    let signing = signer.sign(&origin);
                    let requests = self.clone();
                    let (conn, session, request) =
                        (conn.clone(), session.to_owned(), request.clone());
                    tokio::spawn(async move {
                        let signed = signing.await;
                        let params =
                            requests.continue_params(id, &origin, &request, signed.as_deref());
                        let _ = conn
                            .call(
                                Some(&session),
                                "Fetch.continueRequest",
                                params,
                                Duration::from_secs(5),
                            )
                            .await;
                    });
                    return Pause::Sent;
                }
                (
                    "Fetch.continueRequest",
                    self.continue_params(id, &origin, request, None),
                )
            }
        };
        let conn = conn.clone();
        let session = session.to_owned();
        tokio::spawn(async move {
            let _ = conn
                .call(Some(&session), method, params, Duration::from_secs(5))
                .await;
        });
        match refusal {
            Some(why) => Pause::Refused(why),
            None => Pause::Sent,
        }
    }

    /// What a held request is released with: in a session that signs, signed now
    /// (a signature made when it was held could have expired while a person
    /// decided).
    pub(crate) async fn release_params(&self, hold: &crate::effects::Hold) -> Value {
        let Some(signer) = &self.signer else {
            return hold.release.clone();
        };
        let url = hold.request["url"].as_str().unwrap_or_default();
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return hold.release.clone();
        }
        let signed = signer.sign(&hold.origin).await;
        self.continue_params(
            hold.request_id.clone(),
            &hold.origin,
            &hold.request,
            signed.as_deref(),
        )
    }

    // Headers are added only on an exact origin match (the pattern matched by
    // prefix), so no other site ever receives them. In a session that signs, a
    // page's own signature headers are dropped and `signed` (made for this very
    // origin) put in their place.
    fn continue_params(
        &self,
        id: String,
        origin: &str,
        request: &Value,
        signed: Option<&[(String, String)]>,
    ) -> Value {
        let mut params = json!({ "requestId": id });
        let extra: Vec<(&str, &str)> = self
            .injection
            .iter()
            .flat_map(|i| i.headers.iter())
            .filter(|(o, _, _)| o == origin)
            .map(|(_, n, v)| (n.as_str(), v.as_str()))
            .chain(
                signed
                    .into_iter()
                    .flatten()
                    .map(|(n, v)| (n.as_str(), v.as_str())),
            )
            .collect();
        let existing = request["headers"].as_object();
        let strip = self.signer.is_some()
            && existing.is_some_and(|h| {
                h.keys()
                    .any(|k| SIGNATURE_HEADERS.iter().any(|s| k.eq_ignore_ascii_case(s)))
            });
        if extra.is_empty() && !strip {
            return params;
        }
        let mut headers: Vec<Value> = Vec::new();
        for (name, value) in existing.into_iter().flatten() {
            let replaced = extra.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
            let forged = self.signer.is_some()
                && SIGNATURE_HEADERS
                    .iter()
                    .any(|s| name.eq_ignore_ascii_case(s));
            if !replaced && !forged {
                headers.push(json!({ "name": name, "value": value }));
            }
        }
        for (name, value) in extra {
            headers.push(json!({ "name": name, "value": value }));
        }
        params["headers"] = Value::Array(headers);
        params
    }
}

/// Removes the socket constructors of a worker's global scope.
const NO_WORKER_SOCKETS: &str = "for (const name of ['WebSocket', 'WebSocketStream', 'WebTransport']) { try { delete self[name]; } catch (e) {} }";

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
    // A worker's policy comes from its own script's response, which Airlock cannot
    // give one: it loses its socket constructors before its first script runs (a worker
    // has no other realm to fetch them from).
    let _ = conn
        .call(
            Some(&session),
            "Runtime.evaluate",
            json!({ "expression": NO_WORKER_SOCKETS }),
            timeout,
        )
        .await;
    let _ = conn.resume(&session, timeout).await;
    while let Some(Event { method, params, .. }) = events.recv().await {
        if method == "Fetch.requestPaused" {
            requests.on_paused(&conn, &session, &notices, &params, None);
        }
    }
}
