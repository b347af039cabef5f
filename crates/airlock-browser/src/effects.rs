//! Requests held by an effect rule: a request a page is about to send that one of the
//! operator's effect rules ([`airlock_risk::Effects`]) holds stays paused in
//! Chromium (`Fetch.requestPaused`, unanswered) until someone decides it: released
//! as the page made it, or dropped (it fails in the page as an aborted request).
//!
//! The action during which it was held does not wait for it: the tab marks it as
//! held, so the action's settle neither waits for its answer nor for the load of a
//! navigation it is (a form's submit), and answers at once. The gateway then learns
//! of it ([`Session::take_held_effects`](crate::Session::take_held_effects)), asks a human, and decides it
//! ([`Session::decide_effects`](crate::Session::decide_effects)), which waits for what the released request brings
//! as an action's settle would.

use std::sync::{Arc, Mutex};

use airlock_core::Redact;
use airlock_core::sync::lock;
use airlock_core::text::ellipsize;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cdp::Connection;

/// A request an effect rule holds, as the person deciding it is shown it. Strings
/// are the page's, passed through the session's redactor, and cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldEffect {
    /// The session's number for it (what
    /// [`Session::decide_effects`](crate::Session::decide_effects) takes).
    pub id: u64,
    /// The rule that holds it.
    pub rule: String,
    /// The rule's risk.
    pub risk: airlock_risk::Risk,
    /// Which of the rule's conditions held.
    pub why: String,
    /// `POST`, …
    pub method: String,
    /// Where it goes.
    pub url: String,
    /// What it carries, `name`/`value` (query, then body), at most [`FIELDS_SHOWN`].
    pub fields: Vec<(String, String)>,
    /// It is a document's request (a form's submit, a navigation): released, the
    /// page moves.
    pub navigation: bool,
    /// What the page said about it, as the session's last snapshot of the page
    /// showed it (redacted, cut): the line naming a delete or payment, with a
    /// quoted name first ("Are you sure you want to delete the user “carol”?").
    #[serde(default)]
    pub page_words: Option<String>,
}

/// What became of one held request a decision was given for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decided {
    /// The request's number ([`HeldEffect::id`]).
    pub id: u64,
    /// Chromium took the decision: released, it went; dropped, it failed in the page.
    pub done: bool,
    /// Why not, when it did not.
    pub why: Option<String>,
}

/// Most fields shown of one request, and the longest value shown.
pub const FIELDS_SHOWN: usize = 16;
const VALUE_CHARS: usize = 80;
/// Longest URL shown.
const URL_CHARS: usize = 300;
/// Most requests held at once in a session: past it, a matching request is dropped
/// (a page must not pile up paused requests).
const MAX_HELD: usize = 32;

/// One held request: what decides it needs.
pub(crate) struct Hold {
    pub(crate) effect: HeldEffect,
    pub(crate) conn: Connection,
    /// The CDP session it was paused in.
    pub(crate) session: String,
    pub(crate) request_id: String,
    pub(crate) network_id: String,
    /// The tab whose page (or frame) sent it (`None`: a worker's).
    pub(crate) tab: Option<String>,
    /// What `Fetch.continueRequest` is sent (the injected headers already in).
    pub(crate) release: Value,
    /// The request as paused and its origin: in a session that signs, its
    /// signature is made when it is released, not when it was held.
    pub(crate) request: Value,
    pub(crate) origin: String,
    reported: bool,
}

/// A session's held requests.
#[derive(Clone, Default)]
pub(crate) struct Holds {
    inner: Arc<Mutex<HoldsInner>>,
}

#[derive(Default)]
struct HoldsInner {
    next: u64,
    held: Vec<Hold>,
}

/// What [`Holds::hold`] is given of a paused request.
pub(crate) struct Paused<'a> {
    pub(crate) conn: &'a Connection,
    pub(crate) session: &'a str,
    pub(crate) params: &'a Value,
    pub(crate) tab: Option<&'a str>,
    pub(crate) release: Value,
}

impl Holds {
    /// Keeps `paused` unanswered under `verdict`; `false` when the session holds too
    /// many already (the caller drops it).
    pub(crate) fn hold(
        &self,
        paused: Paused<'_>,
        verdict: &airlock_risk::EffectVerdict,
        fields: &airlock_risk::Fields,
        redactor: &dyn Redact,
    ) -> bool {
        let mut inner = lock(&self.inner);
        if inner.held.len() >= MAX_HELD {
            return false;
        }
        inner.next += 1;
        let request = &paused.params["request"];
        let shown = |text: &str, cut: usize| ellipsize(&redactor.redact(text), cut);
        let effect = HeldEffect {
            id: inner.next,
            rule: verdict.rule.clone(),
            risk: verdict.risk,
            why: verdict.why.clone(),
            method: shown(request["method"].as_str().unwrap_or("GET"), 16),
            url: shown(request["url"].as_str().unwrap_or_default(), URL_CHARS),
            fields: fields
                .pairs
                .iter()
                .take(FIELDS_SHOWN)
                .map(|(k, v)| (shown(k, VALUE_CHARS), shown(v, VALUE_CHARS)))
                .collect(),
            navigation: paused.params["resourceType"].as_str() == Some("Document"),
            page_words: None,
        };
        inner.held.push(Hold {
            effect,
            conn: paused.conn.clone(),
            session: paused.session.to_owned(),
            request_id: paused.params["requestId"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            network_id: paused.params["networkId"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            tab: paused.tab.map(str::to_owned),
            release: paused.release,
            request: request.clone(),
            origin: request["url"]
                .as_str()
                .and_then(|u| url::Url::parse(u).ok())
                .map(|u| u.origin().ascii_serialization())
                .unwrap_or_default(),
            reported: false,
        });
        true
    }

    /// Adds what the page said about the held request `network_id`.
    pub(crate) fn annotate(&self, network_id: &str, words: String) {
        let mut inner = lock(&self.inner);
        if let Some(hold) = inner.held.iter_mut().find(|h| h.network_id == network_id) {
            hold.effect.page_words = Some(words);
        }
    }

    /// The held requests no one was told of yet; told of now.
    pub(crate) fn take_new(&self) -> Vec<HeldEffect> {
        let mut inner = lock(&self.inner);
        inner
            .held
            .iter_mut()
            .filter_map(|h| (!std::mem::replace(&mut h.reported, true)).then(|| h.effect.clone()))
            .collect()
    }

    /// Takes the held requests numbered in `ids` out of the hold.
    pub(crate) fn remove(&self, ids: &[u64]) -> Vec<Hold> {
        let mut inner = lock(&self.inner);
        let (taken, kept) = std::mem::take(&mut inner.held)
            .into_iter()
            .partition(|h| ids.contains(&h.effect.id));
        inner.held = kept;
        taken
    }
}
