//! The worker's side of one connection: the handshake (the peer's hello, its
//! protocol and token), then the [`Worker`] API over the sessions this connection
//! opened or attached to with their key. A request for any other session is
//! answered as a closed session and put on the record ([`Refusal::NotHeld`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_browser::{Error, Result};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tarpc::context::Context;
use tarpc::server::{BaseChannel, Channel};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::Framed;

use super::refusals::Refusal;
use super::shelf::Shelf;
use super::signing::{Ask, AskingSigner};
use super::{About, Admission, HELLO_WITHIN, Hello, Msgpack, Welcome, Worker, framed, lock};
use crate::local::{LocalHost, LocalSession};
use crate::proto::{AttachKey, Call, Load, OpenSpec, PROTOCOL, Reply, SessionFacts};
use airlock_browser::SignedHeaders;

/// Serves one connection over `stream` (any byte stream: a TLS stream for a remote
/// control plane): the handshake, then calls until it closes; then its sessions
/// are closed.
pub async fn serve_connection<S>(stream: S, host: Arc<LocalHost>, admission: Arc<Admission>)
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let shelf = Arc::new(Shelf::new(&admission));
    Connection::new(host, shelf.clone())
        .run(stream, admission, tokio::sync::watch::channel(false).1)
        .await;
    shelf.close_all().await;
}

impl Connection {
    // Serves until the peer goes or `stopping` turns true; then lets go of every
    // session this connection holds.
    pub(super) async fn run<S>(
        self,
        stream: S,
        admission: Arc<Admission>,
        mut stopping: tokio::sync::watch::Receiver<bool>,
    ) where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let serving = async {
            let Some(framed) = handshake(stream, &self.host, &admission, &self.shelf).await else {
                return;
            };
            let transport = tokio_serde::Framed::new(framed, Msgpack::default());
            BaseChannel::with_defaults(transport)
                .execute(Worker::serve(self.clone()))
                .for_each(|request| async {
                    tokio::spawn(request);
                })
                .await;
        };
        tokio::select! {
            () = serving => {}
            _ = stopping.wait_for(|stop| *stop) => {}
        }
        self.let_go().await;
    }
}

// The worker's side of the handshake: the framed stream, ready for tarpc, when the
// peer said the right hello; `None` (the peer told why) otherwise.
async fn handshake<S>(
    stream: S,
    host: &LocalHost,
    admission: &Admission,
    shelf: &Shelf,
) -> Option<Framed<S, super::wire::Wiping>>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let mut framed = framed(stream);
    let about = about(host);
    match tokio::time::timeout(HELLO_WITHIN, framed.next()).await {
        Ok(Some(Ok(frame))) => {
            let refusal = match rmp_serde::from_slice::<Hello>(&frame) {
                Err(_) => Some((
                    Refusal::NoHello,
                    "the first message was not a hello".to_owned(),
                )),
                Ok(hello) if hello.protocol != PROTOCOL => Some((
                    Refusal::Protocol,
                    format!(
                        "this worker speaks protocol {PROTOCOL} and the control plane {}: run the same Airlock version on both",
                        hello.protocol
                    ),
                )),
                Ok(hello) => {
                    let same: bool = subtle::ConstantTimeEq::ct_eq(
                        hello.token.as_bytes(),
                        admission.token.as_bytes(),
                    )
                    .into();
                    (!same).then(|| {
                        (
                            Refusal::Token,
                            "the worker token is not this worker's".to_owned(),
                        )
                    })
                }
            };
            let welcome = match &refusal {
                Some((_, why)) => Welcome::Refused(why.clone()),
                None => Welcome::Ok(about),
            };
            let sent = match rmp_serde::to_vec_named(&welcome) {
                Ok(bytes) => framed.send(Bytes::from(bytes)).await.is_ok(),
                Err(_) => false,
            };
            if let Some((refusal, why)) = refusal {
                shelf.refusals.note(refusal);
                tracing::warn!(%why, "refused a control plane");
                return None;
            }
            sent.then_some(framed)
        }
        Ok(Some(Err(e))) => {
            shelf.refusals.note(Refusal::NoHello);
            tracing::warn!(error = %e, "refused a connection: its hello could not be read");
            None
        }
        Ok(None) => None,
        Err(_) => {
            shelf.refusals.note(Refusal::NoHello);
            tracing::warn!("refused a connection: no hello in time");
            None
        }
    }
}

fn about(host: &LocalHost) -> About {
    let options = host.browsers().options();
    About {
        protocol: PROTOCOL,
        pid: std::process::id(),
        uid: crate::userns::outside(nix::unistd::geteuid().as_raw()),
        browser_uid: airlock_core::browser_user::get().map(|(uid, _)| crate::userns::outside(uid)),
        sandbox: !airlock_browser::needs_no_sandbox(),
        undumpable: nix::sys::prctl::get_dumpable().is_ok_and(|dumpable| !dumpable),
        default_isolation: options.default_isolation,
        action_budget_ms: u64::try_from(
            options
                .action_timeout
                .max(options.navigation_timeout)
                .as_millis(),
        )
        .unwrap_or(u64::MAX),
    }
}

// One control plane's connection: the sessions it opened.
#[derive(Clone)]
pub(super) struct Connection {
    host: Arc<LocalHost>,
    shelf: Arc<Shelf>,
    // The sessions this connection holds (opened or attached).
    held: Arc<Mutex<std::collections::HashSet<String>>>,
    // The signature asks this connection took: it answers those and no others.
    taken: Arc<Mutex<std::collections::HashSet<u64>>>,
}

impl Connection {
    pub(super) fn new(host: Arc<LocalHost>, shelf: Arc<Shelf>) -> Connection {
        Connection {
            host,
            shelf,
            held: Arc::default(),
            taken: Arc::default(),
        }
    }

    // A session this connection holds.
    fn session(&self, id: &str) -> Result<Arc<LocalSession>> {
        if !lock(&self.held).contains(id) {
            self.not_held(id);
            return Err(Error::SessionClosed);
        }
        self.shelf.get(id)
    }

    // A request for session `id`, which this connection does not hold: on the
    // record when another does (a connection's own closed session is no intrusion).
    fn not_held(&self, id: &str) {
        if self.shelf.has(id) {
            self.shelf.refusals.note(Refusal::NotHeld);
            tracing::warn!("refused a request for a session another connection holds");
        }
    }

    async fn let_go(&self) {
        let held: Vec<String> = lock(&self.held).drain().collect();
        if !held.is_empty() {
            tracing::info!(
                sessions = held.len(),
                "the control plane went away: letting go of its sessions"
            );
        }
        for id in held {
            self.shelf.release(&id).await;
        }
    }
}

impl Worker for Connection {
    async fn launches(self, _: Context) -> u64 {
        self.host.browsers().launched_pids().len() as u64
    }

    async fn open(self, _: Context, spec: OpenSpec) -> Result<SessionFacts> {
        let place = self.shelf.admit()?;
        let key = AttachKey::random().map_err(|e| Error::BrowserUnavailable {
            reason: format!("the worker's OS gave no randomness: {e}"),
        })?;
        // A session that signs asks the control plane for each signature; its id is
        // known once it is open.
        let named = Arc::new(std::sync::OnceLock::new());
        let signer = spec.signing.clone().map(|scope| {
            Arc::new(AskingSigner {
                asks: self.shelf.asks.clone(),
                session: named.clone(),
                scope,
            }) as Arc<dyn airlock_browser::RequestSigner>
        });
        let session = self.host.open_signed(spec, signer).await?;
        let mut facts = session.facts();
        let _ = named.set(facts.id.clone());
        lock(&self.held).insert(facts.id.clone());
        self.shelf
            .put(place, facts.id.clone(), key.clone(), session);
        facts.key = Some(key);
        Ok(facts)
    }

    async fn attach(self, _: Context, id: String, key: AttachKey) -> Result<SessionFacts> {
        let session = match self.shelf.hold(&id, &key) {
            Ok(session) => session,
            Err(e) => {
                if self.shelf.has(&id) {
                    self.shelf.refusals.note(Refusal::AttachKey);
                }
                tracing::warn!("refused an attach: no session of that id holds that key");
                return Err(e);
            }
        };
        if !lock(&self.held).insert(id.clone()) {
            // Held already: one hold per connection.
            self.shelf.release(&id).await;
        }
        Ok(session.facts())
    }

    async fn call(
        self,
        _: Context,
        id: String,
        call: Call,
        budget_ms: Option<u64>,
    ) -> Result<Reply> {
        let session = self.session(&id)?;
        match budget_ms {
            Some(ms) => {
                Box::pin(airlock_browser::with_action_budget(
                    Duration::from_millis(ms),
                    session.call(call),
                ))
                .await
            }
            None => Box::pin(session.call(call)).await,
        }
    }

    async fn load(self, _: Context) -> Load {
        self.shelf.load()
    }

    async fn refusals(self, _: Context) -> Vec<(String, u64)> {
        self.shelf.refusals.take()
    }

    async fn asks(self, _: Context, wait_ms: u64) -> Vec<Ask> {
        let wait = Duration::from_millis(wait_ms).min(Duration::from_secs(10));
        let asks = self.shelf.asks.take(&self.held, wait).await;
        let mut taken = lock(&self.taken);
        // An ask unanswered this long ago went unsigned: a control plane that
        // stops answering does not grow this without bound.
        if taken.len() > 4096 {
            taken.clear();
        }
        taken.extend(asks.iter().map(|a| a.id));
        drop(taken);
        asks
    }

    async fn answers(self, _: Context, answers: Vec<(u64, Option<SignedHeaders>)>) {
        // Only what this connection took: another holder of the token cannot put
        // headers of its choosing on a session it does not hold.
        for (id, headers) in answers {
            if lock(&self.taken).remove(&id) {
                self.shelf.asks.answer(id, headers);
            }
        }
    }

    async fn release(self, _: Context, id: String) {
        if lock(&self.held).remove(&id) {
            self.shelf.release(&id).await;
        }
    }

    async fn close(self, _: Context, id: String) {
        // Closed for every holder: the others' next call finds it gone. Only a
        // holder closes it.
        if !lock(&self.held).remove(&id) {
            self.not_held(&id);
            return;
        }
        if let Some(session) = self.shelf.take(&id) {
            session.close().await;
        }
    }
}
