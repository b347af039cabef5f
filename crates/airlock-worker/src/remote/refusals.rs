//! What a worker refused, kept for its control plane to put on the audit record: a
//! log line on the worker's own machine is where nobody auditing the deployment
//! looks. Counted by reason (a fixed, short list: a flood costs no memory) and handed
//! over once, to whichever control plane asks first ([`super::Worker::refusals`]).

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::lock;

/// Why a worker refused a peer or a request; each says what was tried, never what
/// was sent (a guessed token stays unsaid).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Refusal {
    /// A unix-socket peer of another uid than the control plane's.
    ForeignUid,
    /// TLS failed or did not finish in time.
    Tls,
    /// No hello, an unreadable one, or none in time.
    NoHello,
    /// Another protocol version.
    Protocol,
    /// Not the worker's token.
    Token,
    /// An attach without the session's key.
    AttachKey,
    /// A call or close of a session another connection holds.
    NotHeld,
}

impl Refusal {
    /// The reason as the audit record says it.
    pub(super) fn reason(self) -> &'static str {
        match self {
            Refusal::ForeignUid => "a connection from a foreign uid",
            Refusal::Tls => "a connection whose TLS failed",
            Refusal::NoHello => "a connection that said no hello",
            Refusal::Protocol => "a control plane of another protocol version",
            Refusal::Token => "a connection without the worker's token",
            Refusal::AttachKey => "an attach without the session's key",
            Refusal::NotHeld => "a call on a session another connection holds",
        }
    }
}

/// Refusals since a control plane last took them.
#[derive(Default)]
pub(super) struct Refusals(Mutex<BTreeMap<Refusal, u64>>);

impl Refusals {
    pub(super) fn note(&self, refusal: Refusal) {
        *lock(&self.0).entry(refusal).or_default() += 1;
    }

    // Each reason with how many times, once: the next take starts from nothing.
    pub(super) fn take(&self) -> Vec<(String, u64)> {
        std::mem::take(&mut *lock(&self.0))
            .into_iter()
            .map(|(r, n)| (r.reason().to_owned(), n))
            .collect()
    }
}
