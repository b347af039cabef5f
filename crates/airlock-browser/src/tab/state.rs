//! What a tab's event pump keeps current and its waiters read: the page's state
//! behind one lock with a change signal, and apart from it the tab's requests, so a
//! page's many requests wake no one waiting on the tab.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_core::Redact;
use airlock_core::text::ellipsize;
use serde_json::Value;
use tokio::sync::watch;

use super::{Interruption, TabInner};
use crate::guard::NavGuard;
use crate::outbound::{Pause, Requests};

/// Console messages a tab keeps.
pub const CONSOLE_KEPT: usize = 200;
/// Requests a tab keeps.
pub const NETWORK_KEPT: usize = 200;
/// Characters of a request's URL kept (after redaction).
const NETWORK_URL_CHARS: usize = 300;

/// The requests a tab made, newest last, each with Chromium's id for it (a redirect
/// reuses the id: its newest entry is the one updated).
#[derive(Default)]
pub(crate) struct NetworkBuffer {
    pub(crate) entries: std::collections::VecDeque<(String, crate::action::NetworkEntry)>,
    pub(crate) dropped: u64,
    /// Requests an action's settle waits for (see [`awaited`]) started so far.
    pub(crate) started: u64,
    /// Those still in flight, by Chromium's id, with the `started` count each got.
    pub(crate) in_flight: HashMap<String, u64>,
    /// Requests an effect rule holds: not in flight until released.
    pub(crate) held: HashSet<String>,
}

/// Most requests kept in flight per tab: one that never ends (a stream) must not
/// grow the map without bound.
const IN_FLIGHT_KEPT: usize = 256;

/// The kinds of request whose answer a page's handler is likely waiting on to update
/// the page (a fetch, an XHR, a lazily loaded script, a frame's document). Images,
/// fonts, media, beacons and event streams are not: media and streams may never end.
fn awaited(kind: &str) -> bool {
    matches!(kind, "Fetch" | "XHR" | "Script" | "Document")
}

impl NetworkBuffer {
    fn find(&mut self, id: &str) -> Option<&mut crate::action::NetworkEntry> {
        self.entries
            .iter_mut()
            .rev()
            .find(|(i, _)| i == id)
            .map(|(_, e)| e)
    }
}
/// Characters of one console message kept (after redaction).
const CONSOLE_CHARS: usize = 500;

pub(crate) struct TabState {
    pub(super) inner: Mutex<TabInner>,
    pub(super) changed: watch::Sender<u64>,
    /// The tab's serial (as its refs and events name it).
    pub(super) serial: u32,
    /// Counts the frames Chromium painted while a screencast runs on the tab: a
    /// watcher's signal that the pixels changed (the frames themselves are dropped;
    /// what a watcher is shown is a masked screenshot).
    pub(crate) painted: watch::Sender<u64>,
    /// A screencast runs on the tab.
    pub(crate) casting: std::sync::atomic::AtomicBool,
    pub(super) target_id: String,
    pub(super) guard: NavGuard,
    pub(super) requests: Requests,
    pub(super) redactor: Arc<dyn Redact>,
    /// How long a dialog holds the page unanswered before Airlock answers it.
    pub(super) dialog_hold: Duration,
    /// What the tab requested. Apart from `inner`: a page's many requests wake no
    /// one waiting on the tab.
    pub(crate) network: Mutex<NetworkBuffer>,
    /// Bumped whenever an awaited request ends: what a settle waiting on the page's
    /// requests wakes on.
    pub(crate) requests_ended: watch::Sender<u64>,
}

impl TabState {
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut TabInner) -> R) -> R {
        let mut guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let r = f(&mut guard);
        drop(guard);
        self.changed.send_modify(|v| *v += 1);
        r
    }

    /// Where the walker cuts names and values: far enough beyond Airlock's own cuts
    /// that it cannot split a secret the redactor must recognise.
    pub(crate) fn walker_cut(&self) -> usize {
        if self.redactor.is_active() {
            400 + self.redactor.reach()
        } else {
            400
        }
    }

    // A DevTools issue of the tab or a frame: a WebSocket the socket policy refused is
    // told to the agent and counted, as any refused request (the page's own policy
    // refusing a socket Airlock would allow is the page's business).
    pub(super) fn on_issue(&self, p: &Value) {
        let issue = &p["issue"];
        if issue["code"].as_str() != Some("ContentSecurityPolicyIssue") {
            return;
        }
        let details = &issue["details"]["contentSecurityPolicyIssueDetails"];
        let url = details["blockedURL"].as_str().unwrap_or_default();
        let socket = url.starts_with("ws://") || url.starts_with("wss://");
        if !socket
            || details["violatedDirective"].as_str() != Some("connect-src")
            || details["isReportOnly"].as_bool() == Some(true)
            || self.requests.socket_allowed(url)
        {
            return;
        }
        let origin = url::Url::parse(url)
            .map(|u| u.origin().ascii_serialization())
            .unwrap_or_else(|_| "a WebSocket".to_owned());
        self.requests
            .refused
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        self.guard.notify_once(crate::action::Notice::RequestRefused {
            origin,
            why: "a WebSocket's traffic cannot be inspected, and this session holds secrets none of which is bound to that origin (an operator may allow it: [policy] websocket_origins)".to_owned(),
        });
    }

    // Keeps a console message: redacted first, whole, then cut (the cut sits a
    // redactor's reach past what is shown, so no piece of a secret survives it).
    pub(super) fn log(&self, level: crate::action::ConsoleLevel, text: &str) {
        let redacted = self.redactor.redact(text);
        let text = airlock_core::text::ellipsize(&redacted, CONSOLE_CHARS);
        self.with(|s| {
            if s.console.len() >= CONSOLE_KEPT {
                s.console.pop_front();
                s.console_dropped += 1;
                s.console_before = s.console_before.saturating_sub(1);
            }
            s.console
                .push_back(crate::action::ConsoleEntry { level, text });
        });
    }

    /// Keeps what a `Network.*` event says about a request (an event of any other
    /// domain is no concern of this).
    pub(super) fn on_network(&self, method: &str, p: &Value) {
        let id = p["requestId"].as_str().unwrap_or_default();
        let mut network = self.network.lock().unwrap_or_else(|p| p.into_inner());
        match method {
            "Network.requestWillBeSent" => {
                let status = p["redirectResponse"]["status"].as_u64();
                if let (Some(status), Some(entry)) = (status, network.find(id)) {
                    entry.status = u16::try_from(status).ok();
                }
                let request = &p["request"];
                let url = request["url"].as_str().unwrap_or_default();
                // Data URLs are no request, and can be megabytes.
                if url.starts_with("data:") {
                    return;
                }
                let kind = p["type"].as_str().unwrap_or("Other");
                if awaited(kind)
                    && !network.in_flight.contains_key(id)
                    && !network.held.contains(id)
                {
                    network.started += 1;
                    let seq = network.started;
                    if network.in_flight.len() >= IN_FLIGHT_KEPT {
                        let oldest = network.in_flight.iter().min_by_key(|(_, s)| **s);
                        if let Some(oldest) = oldest.map(|(i, _)| i.clone()) {
                            network.in_flight.remove(&oldest);
                        }
                    }
                    network.in_flight.insert(id.to_owned(), seq);
                }
                let entry = crate::action::NetworkEntry {
                    method: request["method"].as_str().unwrap_or("GET").to_owned(),
                    url: ellipsize(&self.redactor.redact(url), NETWORK_URL_CHARS),
                    kind: p["type"].as_str().unwrap_or("other").to_ascii_lowercase(),
                    status: None,
                    failure: None,
                    refused: None,
                };
                if network.entries.len() >= NETWORK_KEPT {
                    network.entries.pop_front();
                    network.dropped += 1;
                }
                network.entries.push_back((id.to_owned(), entry));
            }
            "Network.responseReceived" => {
                if let Some(entry) = network.find(id) {
                    entry.status = p["response"]["status"]
                        .as_u64()
                        .and_then(|s| u16::try_from(s).ok());
                }
            }
            "Network.loadingFailed" => {
                if let Some(entry) = network.find(id) {
                    let text = p["errorText"].as_str().unwrap_or("failed");
                    entry.failure = Some(ellipsize(&self.redactor.redact(text), 120));
                }
                self.request_ended(&mut network, id);
            }
            "Network.loadingFinished" => self.request_ended(&mut network, id),
            _ => {}
        }
    }

    fn request_ended(&self, network: &mut NetworkBuffer, id: &str) {
        if network.in_flight.remove(id).is_some() {
            self.requests_ended.send_modify(|n| *n += 1);
        }
    }

    /// How many awaited requests the tab has started so far.
    pub(crate) fn requests_started(&self) -> u64 {
        let network = self.network.lock().unwrap_or_else(|p| p.into_inner());
        network.started
    }

    /// Whether an awaited request started after the first `after` is still in flight.
    pub(crate) fn requests_pending_since(&self, after: u64) -> bool {
        let network = self.network.lock().unwrap_or_else(|p| p.into_inner());
        network.in_flight.values().any(|seq| *seq > after)
    }

    /// Marks the request `id` as refused by the request guard, for `why`.
    pub(crate) fn network_refused(&self, id: &str, why: &str) {
        let mut network = self.network.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = network.find(id) {
            entry.refused = Some(why.to_owned());
        }
    }

    pub(crate) fn read<R>(&self, f: impl FnOnce(&TabInner) -> R) -> R {
        let guard = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&guard)
    }

    /// Returns once the tab has crashed or gone away, or a dialog holds its page
    /// (never, otherwise).
    pub(crate) async fn interrupted(&self) -> Interruption {
        let mut rx = self.changed.subscribe();
        loop {
            if self.read(|s| s.crashed || s.detached) {
                return Interruption::Lost;
            }
            if let Some(kind) = self.read(|s| s.dialog.as_ref().map(|d| d.kind.clone())) {
                return Interruption::Dialog(kind);
            }
            if rx.changed().await.is_err() {
                return Interruption::Lost;
            }
        }
    }

    /// Waits until `done` holds, the tab crashes or closes, a dialog holds its page,
    /// or `timeout` passes. Returns whether `done` held.
    pub(crate) async fn wait(&self, timeout: Duration, done: impl Fn(&TabInner) -> bool) -> bool {
        self.wait_unless(timeout, done, |s| s.dialog.is_some())
            .await
    }

    /// Like [`TabState::wait`], but a dialog stops the wait only when `stop` says so
    /// (waiting for a dialog to close must not stop because it is open).
    pub(crate) async fn wait_unless(
        &self,
        timeout: Duration,
        done: impl Fn(&TabInner) -> bool,
        stop: impl Fn(&TabInner) -> bool,
    ) -> bool {
        let mut rx = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.read(|s| done(s) || s.crashed || s.detached || stop(s)) {
                return self.read(&done);
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return self.read(&done),
            }
        }
    }
}

// What became of the requests an effect rule or the secrets guard paused.
impl TabState {
    /// Marks a paused request of the tab as what became of it.
    pub(crate) fn on_pause(&self, params: &Value, pause: Pause) {
        let id = params["networkId"].as_str().unwrap_or_default();
        match pause {
            Pause::Sent => {}
            Pause::Refused(why) => self.network_refused(id, &why),
            Pause::Held => {
                if params["resourceType"].as_str() == Some("Document") {
                    self.with(|s| s.navigations_held += 1);
                }
                if let Some(words) = self.read(|s| page_words(s.last_snapshot.as_deref())) {
                    self.requests.holds.annotate(id, words);
                }
                self.network_held(id);
            }
        }
    }

    /// The request `network_id` is held: the tab's settles no longer wait for it,
    /// and an action in progress answers now.
    pub(crate) fn network_held(&self, network_id: &str) {
        {
            let mut network = self.network.lock().unwrap_or_else(|p| p.into_inner());
            network.held.insert(network_id.to_owned());
            if network.in_flight.remove(network_id).is_some() {
                self.requests_ended.send_modify(|n| *n += 1);
            }
        }
        self.with(|s| s.effects_held += 1);
    }

    /// The held request `network_id` was decided: in flight again, as a request
    /// started now, until it ends (answered, or failed as dropped). Returns the count of requests started before it (what a settle waits
    /// beyond).
    pub(crate) fn network_released(&self, network_id: &str) -> u64 {
        let mut network = self.network.lock().unwrap_or_else(|p| p.into_inner());
        network.held.remove(network_id);
        let before = network.started;
        network.started += 1;
        let seq = network.started;
        network.in_flight.insert(network_id.to_owned(), seq);
        before
    }

    /// A dropped request is forgotten.
    pub(crate) fn network_dropped(&self, network_id: &str) {
        let mut network = self.network.lock().unwrap_or_else(|p| p.into_inner());
        network.held.remove(network_id);
    }

    /// Whether the main frame is navigating (a navigation started and not yet
    /// committed, or one an effect rule holds): Chromium answers no command for it
    /// meanwhile. (A page busy in a script while it loads is not navigating.)
    pub(crate) fn navigating(&self) -> bool {
        self.read(|s| s.navigations_held > 0 || s.uncommitted)
    }

    /// A held navigation request was decided.
    pub(crate) fn navigation_decided(&self) {
        self.with(|s| s.navigations_held = s.navigations_held.saturating_sub(1));
    }
}

/// Words that make a line of the page worth showing with a held request.
const TELLING: &[&str] = &[
    "delete", "remove", "destroy", "erase", "purge", "pay", "purchase", "transfer", "checkout",
    "order", "sure", "confirm",
];

// The line of the page (as the session last read it, redacted) that says what a
// held request is about: one with a telling word and a quoted name first, else the
// first with a telling word. Cut to a sentence or two.
fn page_words(lines: Option<&[airlock_snapshot::Line]>) -> Option<String> {
    let lines = lines?;
    let telling = |text: &str| {
        let lower = text.to_lowercase();
        TELLING.iter().any(|w| lower.contains(w))
    };
    let quoted = |text: &str| ['“', '"', '«', '‘'].iter().any(|q| text.contains(*q));
    // The page's words only (what follows `role: `): a line's role, name quoting
    // and ref are the snapshot's.
    let candidates = lines
        .iter()
        .filter(|l| l.reference.is_none())
        .filter_map(|l| l.text.split_once(": ").map(|(_, words)| words.trim()))
        .filter(|words| telling(words));
    let mut first = None;
    for words in candidates {
        if quoted(words) {
            return Some(airlock_core::text::ellipsize(words, 200));
        }
        first.get_or_insert_with(|| airlock_core::text::ellipsize(words, 200));
    }
    first
}
