//! A browser host behind a channel: the worker's server ([`serve`]) and the control
//! plane's client ([`RemoteHost`]).
//!
//! The channel is tarpc over a byte stream (a unix socket on one machine). Before
//! tarpc speaks, each side checks the other: the worker checks the peer's uid (unix
//! sockets), then reads a hello carrying the protocol version and the deployment's
//! worker token, compared in constant time; a mismatch is answered with one line
//! saying why and the connection closed. Every frame is bounded ([`MAX_MESSAGE`]).
//! A worker keeps every session on one shelf: the connection that opened it holds
//! it, and any other admitted connection may attach to it (a control-plane replica
//! serving a session another opened). When no connection holds a session any more
//! (its control plane died or let go) it is closed: at once by default, so a control
//! plane that dies leaves nothing running; after [`Admission::detached_grace`] on a
//! worker shared by replicas, so another may take it over first.

use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_browser::{Error, Result};
use airlock_config::Isolation;
use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tarpc::context::Context;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Framed, LengthDelimitedCodec};
use zeroize::Zeroizing;

mod connection;
mod refusals;
mod shelf;
mod signing;
mod wire;

use connection::Connection;
pub use connection::serve_connection;
pub use signing::{ASK_WITHIN, Ask};

use crate::local::LocalHost;
use crate::proto::{AttachKey, Call, Load, OpenSpec, PROTOCOL, Reply, SessionFacts};
use refusals::Refusal;
use shelf::Shelf;

/// The largest frame either side sends or accepts: a full-page screenshot or a PDF
/// fits; anything larger ends the connection.
pub const MAX_MESSAGE: usize = 64 << 20;

/// How long a peer has to say hello.
const HELLO_WITHIN: Duration = Duration::from_secs(10);

/// What a call may take beyond its budget before the host counts as hung.
pub const GRACE: Duration = Duration::from_secs(60);

/// How often a control plane asks each worker it is connected to how it is.
pub const BEAT: Duration = Duration::from_secs(1);

/// A worker that answers no heartbeat for this long is gone: a stopped or wedged
/// process fails its own sessions' calls after this, not after [`GRACE`], and no
/// other worker's.
pub const SILENT_AFTER: Duration = Duration::from_secs(5);

/// What a worker says of itself at the handshake.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct About {
    /// Its protocol version.
    pub protocol: u32,
    /// Its process id.
    pub pid: u32,
    /// The uid it runs as (outside any user namespace it is in).
    pub uid: u32,
    /// The uid its Chromium runs as, when not its own (outside the worker's user
    /// namespace).
    #[serde(default)]
    pub browser_uid: Option<u32>,
    /// Whether its Chromium runs with its own sandbox.
    pub sandbox: bool,
    /// The isolation of a session that asks for none.
    pub default_isolation: Isolation,
    /// The longest a call waits on a page by its budgets (action or navigation),
    /// in milliseconds.
    pub action_budget_ms: u64,
    /// No other process of its user can read its memory or trace it
    /// (`PR_SET_DUMPABLE` 0).
    #[serde(default)]
    pub undumpable: bool,
}

#[derive(Serialize, Deserialize)]
struct Hello {
    protocol: u32,
    token: Zeroizing<String>,
}

#[derive(Serialize, Deserialize)]
enum Welcome {
    Ok(About),
    Refused(String),
}

/// The browser session API a worker serves.
#[tarpc::service]
pub trait Worker {
    /// How many Chromium processes it has launched.
    async fn launches() -> u64;
    /// Opens a session.
    async fn open(spec: OpenSpec) -> std::result::Result<SessionFacts, Error>;
    /// Runs a call on session `id`, with this action budget (the worker's own when
    /// `None`).
    async fn call(
        id: String,
        call: Call,
        budget_ms: Option<u64>,
    ) -> std::result::Result<Reply, Error>;
    /// Closes session `id`.
    async fn close(id: String);
    /// Holds session `id`, opened by another connection, from this one on, if
    /// `key` is the one its opener was given.
    async fn attach(id: String, key: AttachKey) -> std::result::Result<SessionFacts, Error>;
    /// Stops holding session `id` without closing it for its other holders (with
    /// none left, it is closed as when a connection goes).
    async fn release(id: String);
    /// How loaded it is now.
    async fn load() -> Load;
    /// What it refused since a control plane last asked, by reason, with how many
    /// times (each handed over once).
    async fn refusals() -> Vec<(String, u64)>;
    /// The requests of sessions this connection holds that wait for a signature;
    /// waits up to `wait_ms` (at most 10 s) for one.
    async fn asks(wait_ms: u64) -> Vec<Ask>;
    /// The control plane's answers to asks: each one's headers, or `None` (the
    /// request goes unsigned).
    async fn answers(answers: Vec<(u64, Option<airlock_browser::SignedHeaders>)>);
}

/// MessagePack with field names (structs as maps), so optional and defaulted fields
/// survive, and bytes as bytes.
struct Msgpack<In, Out>(PhantomData<fn(Out) -> In>);

impl<In, Out> Default for Msgpack<In, Out> {
    fn default() -> Self {
        Msgpack(PhantomData)
    }
}

impl<In, Out: Serialize> tokio_serde::Serializer<Out> for Msgpack<In, Out> {
    type Error = io::Error;

    fn serialize(self: Pin<&mut Self>, item: &Out) -> io::Result<Bytes> {
        rmp_serde::to_vec_named(item)
            .map(Bytes::from)
            .map_err(io::Error::other)
    }
}

impl<In: DeserializeOwned, Out> tokio_serde::Deserializer<In> for Msgpack<In, Out> {
    type Error = io::Error;

    fn deserialize(self: Pin<&mut Self>, src: &BytesMut) -> io::Result<In> {
        rmp_serde::from_slice(src).map_err(io::Error::other)
    }
}

// The channel's frames over `stream`, each wiped from the read buffer once taken.
fn framed<S: AsyncRead + AsyncWrite>(stream: S) -> Framed<S, wire::Wiping> {
    Framed::new(
        stream,
        wire::Wiping(
            LengthDelimitedCodec::builder()
                .max_frame_length(MAX_MESSAGE)
                .new_codec(),
        ),
    )
}

/// Who may connect to a worker, and on what terms it serves them.
#[derive(Default)]
pub struct Admission {
    /// The deployment's worker token.
    pub token: Zeroizing<String>,
    /// On a unix socket, the only uid allowed to connect (the control plane's).
    pub peer_uid: Option<u32>,
    /// How long a session no connection holds is kept for another control plane to
    /// attach to (zero: it is closed when its last connection goes).
    pub detached_grace: Duration,
    /// Most sessions it holds at once (`None`: as many as asked).
    pub max_sessions: Option<usize>,
    /// It serves this many sessions and then, once they have closed, stops (a pod
    /// per session: its Deployment starts a fresh one).
    pub exit_after: Option<usize>,
    /// How long, once told to stop, it keeps serving the sessions it holds (taking
    /// no new one) before it closes them (zero: at once).
    pub drain_within: Duration,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("peer_uid", &self.peer_uid)
            .field("detached_grace", &self.detached_grace)
            .field("max_sessions", &self.max_sessions)
            .field("exit_after", &self.exit_after)
            .field("drain_within", &self.drain_within)
            .finish_non_exhaustive()
    }
}

/// Where a worker takes connections.
pub enum Listener {
    /// A unix socket on the gateway's machine: the kernel names the peer's uid.
    Unix(tokio::net::UnixListener),
    /// TCP for gateways on other machines, always inside TLS.
    Tls(tokio::net::TcpListener, tokio_rustls::TlsAcceptor),
}

impl From<tokio::net::UnixListener> for Listener {
    fn from(listener: tokio::net::UnixListener) -> Self {
        Listener::Unix(listener)
    }
}

/// Serves `host` to every connection `listener` accepts that passes `admission`,
/// until `shutdown` resolves; then closes every session and stops every Chromium.
pub async fn serve(
    listener: impl Into<Listener>,
    host: Arc<LocalHost>,
    admission: Admission,
    shutdown: impl std::future::Future<Output = ()>,
) {
    serve_sessions(listener, host.clone(), admission, shutdown).await;
    host.shutdown().await;
}

/// [`serve`], but the pool is left running (its owner shuts it down).
pub async fn serve_sessions(
    listener: impl Into<Listener>,
    host: Arc<LocalHost>,
    admission: Admission,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let listener = listener.into();
    let shelf = Arc::new(Shelf::new(&admission));
    let drain_within = admission.drain_within;
    let admission = Arc::new(admission);
    let mut connections = tokio::task::JoinSet::new();
    // Connections are asked to stop, not aborted: each then closes its sessions
    // whole (an abort part-way through a close would leave its cgroup behind).
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let mut load = shelf.load.subscribe();
    // Set once told to stop: until then the sessions held are served, no new one.
    let mut draining: Option<tokio::time::Instant> = None;
    tokio::pin!(shutdown);
    loop {
        // Done: drained (or spent, with `exit_after`) and holding nothing.
        if (draining.is_some() || shelf.spent()) && *load.borrow_and_update() == 0 {
            break;
        }
        let drained = async {
            match draining {
                Some(until) => tokio::time::sleep_until(until).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = &mut shutdown, if draining.is_none() => {
                if drain_within.is_zero() {
                    break;
                }
                shelf.drain();
                tracing::info!(sessions = *load.borrow(), "stopping: serving the sessions held, taking no new one");
                draining = Some(tokio::time::Instant::now() + drain_within);
            }
            () = drained => break,
            _ = load.changed() => {}
            accepted = accept(&listener, &admission, &shelf) => match accepted {
                Ok(Some(stream)) => {
                    let connection = Connection::new(host.clone(), shelf.clone());
                    let admission = admission.clone();
                    let stopping = stopping.clone();
                    let shelf = shelf.clone();
                    connections.spawn(async move {
                        match stream {
                            Accepted::Unix(stream) => connection.run(stream, admission, stopping).await,
                            Accepted::Tcp(stream, tls) => {
                                // The TLS handshake runs in the connection's task, so
                                // a slow peer holds up no other.
                                match tokio::time::timeout(HELLO_WITHIN, tls.accept(stream)).await {
                                    Ok(Ok(stream)) => connection.run(stream, admission, stopping).await,
                                    Ok(Err(e)) => {
                                        shelf.refusals.note(Refusal::Tls);
                                        tracing::warn!(error = %e, "refused a connection: TLS failed");
                                    }
                                    Err(_) => {
                                        shelf.refusals.note(Refusal::Tls);
                                        tracing::warn!("refused a connection: no TLS handshake in time");
                                    }
                                }
                            }
                        }
                    });
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
    let _ = stop.send(true);
    while connections.join_next().await.is_some() {}
    // Sessions kept for a takeover go too: the worker stops.
    shelf.close_all().await;
}

enum Accepted {
    Unix(tokio::net::UnixStream),
    Tcp(tokio::net::TcpStream, tokio_rustls::TlsAcceptor),
}

// The next connection, `None` when one was refused at once (a foreign uid).
async fn accept(
    listener: &Listener,
    admission: &Admission,
    shelf: &Shelf,
) -> io::Result<Option<Accepted>> {
    match listener {
        Listener::Unix(listener) => {
            let (stream, _) = listener.accept().await?;
            let peer = stream.peer_cred().ok().map(|c| c.uid());
            if let Some(expected) = admission.peer_uid
                && peer != Some(expected)
            {
                shelf.refusals.note(Refusal::ForeignUid);
                tracing::warn!(?peer, expected, "refused a connection from a foreign uid");
                return Ok(None);
            }
            Ok(Some(Accepted::Unix(stream)))
        }
        Listener::Tls(listener, tls) => {
            let (stream, _) = listener.accept().await?;
            Ok(Some(Accepted::Tcp(stream, tls.clone())))
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Errors of reaching a worker.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// It could not be reached.
    #[error("cannot reach the browser worker at {at}: {source}")]
    Unreachable {
        /// Where.
        at: String,
        /// Why.
        source: io::Error,
    },
    /// It runs as another uid than the one it should.
    #[error("the browser worker at {at} runs as uid {found:?}, not {expected}: refusing it")]
    WrongUid {
        /// Where.
        at: String,
        /// Its uid.
        found: Option<u32>,
        /// The one expected.
        expected: u32,
    },
    /// It is at an address no worker may be at.
    #[error("not connecting to the browser worker at {at}: {why}")]
    NotAllowed {
        /// Where it said it is.
        at: String,
        /// Why not there.
        why: String,
    },
    /// It refused this control plane, saying why.
    #[error("the browser worker refused this control plane: {0}")]
    Refused(String),
    /// It spoke, but not the handshake.
    #[error("the browser worker did not answer the handshake: {0}")]
    Handshake(String),
    /// A local worker could not be started.
    #[error("cannot start the browser worker: {0}")]
    Spawn(String),
}

/// A connected worker, as the control plane holds it.
#[derive(Clone)]
pub struct RemoteHost {
    // Shared so the heartbeat holds it weakly: the connection closes when the
    // last handle goes.
    client: Arc<WorkerClient>,
    about: About,
    // Why the connection counts as gone, once it does.
    gone: Arc<tokio::sync::watch::Sender<Option<String>>>,
    grace: Duration,
    // What signs the requests of each session that signs (Web Bot Auth), and a wake
    // for the loop that answers the worker's asks when the first is registered.
    signers: signing::Signers,
    registered: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for RemoteHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteHost")
            .field("about", &self.about)
            .finish_non_exhaustive()
    }
}

impl RemoteHost {
    /// Connects to the worker on the unix socket at `path` with `token`; when
    /// `worker_uid` is given, a worker running as any other uid is refused.
    pub async fn connect_unix(
        path: &std::path::Path,
        token: &str,
        worker_uid: Option<u32>,
    ) -> std::result::Result<RemoteHost, ConnectError> {
        let at = path.display().to_string();
        let stream = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|source| ConnectError::Unreachable {
                at: at.clone(),
                source,
            })?;
        if let Some(expected) = worker_uid {
            let found = stream.peer_cred().ok().map(|c| c.uid());
            if found != Some(expected) {
                return Err(ConnectError::WrongUid {
                    at,
                    found,
                    expected,
                });
            }
        }
        RemoteHost::handshake(stream, token).await
    }

    /// Connects to the worker at `address` over TLS, checking its certificate names
    /// `server_name` under the CA of `tls`, then speaks the handshake with `token`.
    pub async fn connect_tls(
        address: &str,
        server_name: &str,
        tls: Arc<rustls::ClientConfig>,
        token: &str,
    ) -> std::result::Result<RemoteHost, ConnectError> {
        let unreachable = |source: io::Error| ConnectError::Unreachable {
            at: address.to_owned(),
            source,
        };
        let name = rustls::pki_types::ServerName::try_from(server_name.to_owned())
            .map_err(|e| unreachable(io::Error::other(e)))?;
        let stream = tokio::time::timeout(HELLO_WITHIN, tokio::net::TcpStream::connect(address))
            .await
            .map_err(|_| unreachable(io::ErrorKind::TimedOut.into()))?
            .map_err(unreachable)?;
        let stream = tokio::time::timeout(
            HELLO_WITHIN,
            tokio_rustls::TlsConnector::from(tls).connect(name, stream),
        )
        .await
        .map_err(|_| unreachable(io::ErrorKind::TimedOut.into()))?
        .map_err(unreachable)?;
        RemoteHost::handshake(stream, token).await
    }

    /// Speaks the handshake over `stream`, then tarpc.
    pub async fn handshake<S>(
        stream: S,
        token: &str,
    ) -> std::result::Result<RemoteHost, ConnectError>
    where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let mut framed = framed(stream);
        let hello = Hello {
            protocol: PROTOCOL,
            token: Zeroizing::new(token.to_owned()),
        };
        let bytes =
            rmp_serde::to_vec_named(&hello).map_err(|e| ConnectError::Handshake(e.to_string()))?;
        framed
            .send(Bytes::from(bytes))
            .await
            .map_err(|e| ConnectError::Handshake(e.to_string()))?;
        let answer = tokio::time::timeout(HELLO_WITHIN, framed.next())
            .await
            .map_err(|_| ConnectError::Handshake("no answer in time".to_owned()))?
            .ok_or_else(|| ConnectError::Handshake("the connection closed".to_owned()))?
            .map_err(|e| ConnectError::Handshake(e.to_string()))?;
        let about = match rmp_serde::from_slice::<Welcome>(&answer) {
            Ok(Welcome::Ok(about)) => about,
            Ok(Welcome::Refused(why)) => return Err(ConnectError::Refused(why)),
            Err(e) => return Err(ConnectError::Handshake(e.to_string())),
        };
        let transport = tokio_serde::Framed::new(framed, Msgpack::default());
        let new = WorkerClient::new(tarpc::client::Config::default(), transport);
        let gone = Arc::new(tokio::sync::watch::Sender::new(None));
        let flag = gone.clone();
        let dispatch = new.dispatch;
        tokio::spawn(async move {
            if let Err(e) = dispatch.await {
                tracing::warn!(error = %e, "the browser worker's connection broke");
            }
            mark_gone(&flag, "the connection to it closed");
        });
        let client = Arc::new(new.client);
        tokio::spawn(heartbeat(Arc::downgrade(&client), gone.clone(), about.pid));
        let signers = signing::Signers::default();
        let registered = Arc::new(tokio::sync::Notify::new());
        tokio::spawn(signing::answer_asks(
            Arc::downgrade(&client),
            signers.clone(),
            registered.clone(),
            gone.subscribe(),
        ));
        Ok(RemoteHost {
            client,
            about,
            gone,
            grace: GRACE,
            signers,
            registered,
        })
    }

    /// What the worker said of itself.
    pub fn about(&self) -> &About {
        &self.about
    }

    /// Whether the connection has ended.
    pub fn is_gone(&self) -> bool {
        self.gone.borrow().is_some()
    }

    // `call`, unless the connection counts as gone first (then the call is dropped,
    // which cancels it in the worker).
    async fn unless_gone<T>(
        &self,
        call: impl std::future::Future<Output = std::result::Result<T, tarpc::client::RpcError>>,
    ) -> Result<T> {
        let mut gone = self.gone.subscribe();
        tokio::select! {
            answer = call => answer.map_err(|e| self.failed(e)),
            why = gone.wait_for(Option::is_some) => Err(Error::HostGone {
                reason: why
                    .ok()
                    .and_then(|why| why.clone())
                    .unwrap_or_else(|| "the connection to it closed".to_owned()),
            }),
        }
    }

    /// Counts the worker as hung when a call runs `grace` past its budget (default
    /// [`GRACE`]).
    pub fn with_grace(mut self, grace: Duration) -> RemoteHost {
        self.grace = grace;
        self
    }

    fn context(&self, wait: Duration) -> Context {
        let mut context = tarpc::context::current();
        // tarpc's deadline is a std Instant; tokio's converts to one.
        context.deadline = (tokio::time::Instant::now() + wait + self.grace).into_std();
        context
    }

    // What a failed call means: the host is gone. A missed deadline marks the
    // connection gone too: a worker that hangs is replaced at the next open (a local
    // one is killed first), and no later call waits on it again.
    fn failed(&self, error: tarpc::client::RpcError) -> Error {
        if matches!(error, tarpc::client::RpcError::DeadlineExceeded) {
            tracing::warn!(
                pid = self.about.pid,
                "the browser worker did not answer in time: counting it as gone"
            );
            mark_gone(&self.gone, "it did not answer in time");
        }
        gone(error)
    }

    /// How many Chromium processes the worker has launched.
    pub async fn launches(&self) -> u64 {
        self.client
            .launches(self.context(Duration::ZERO))
            .await
            .unwrap_or(0)
    }

    /// Opens a session.
    pub async fn open(&self, spec: OpenSpec) -> Result<RemoteSession> {
        let budget = Duration::from_millis(self.about.action_budget_ms);
        let facts = self
            .unless_gone(self.client.open(self.context(budget), spec))
            .await??;
        Ok(RemoteSession {
            host: self.clone(),
            id: facts.id.clone(),
            facts,
            closed: AtomicBool::new(false),
        })
    }

    /// What the worker refused since a control plane last asked: each reason with
    /// how many times.
    pub async fn refusals(&self) -> Result<Vec<(String, u64)>> {
        self.client
            .refusals(self.context(Duration::ZERO))
            .await
            .map_err(|e| self.failed(e))
    }

    /// The channel itself, each request as the worker takes it: what any holder of
    /// the worker's token can send (tests play a hostile one through it).
    pub fn channel(&self) -> &WorkerClient {
        &self.client
    }

    /// Says why the connection is gone, once it is (`None` until then).
    pub fn gone_signal(&self) -> tokio::sync::watch::Receiver<Option<String>> {
        self.gone.subscribe()
    }

    /// How loaded the worker is now.
    pub async fn load(&self) -> Result<Load> {
        self.client
            .load(self.context(Duration::ZERO))
            .await
            .map_err(|e| self.failed(e))
    }

    /// Holds session `id`, which another connection (another control-plane
    /// replica) opened and was given `key` for, from this connection on.
    pub async fn attach(&self, id: &str, key: &AttachKey) -> Result<RemoteSession> {
        let facts = self
            .client
            .attach(self.context(Duration::ZERO), id.to_owned(), key.clone())
            .await
            .map_err(|e| self.failed(e))??;
        // Whoever attached may hand it on, as its opener did.
        let facts = SessionFacts {
            key: Some(key.clone()),
            ..facts
        };
        Ok(RemoteSession {
            host: self.clone(),
            id: facts.id.clone(),
            facts,
            closed: AtomicBool::new(false),
        })
    }
}

// Notes why the connection is gone, once: the first reason stands.
fn mark_gone(gone: &tokio::sync::watch::Sender<Option<String>>, why: &str) {
    gone.send_if_modified(|g| {
        if g.is_some() {
            return false;
        }
        *g = Some(why.to_owned());
        true
    });
}

// Asks the worker how it is every [`BEAT`]; no answer for [`SILENT_AFTER`] marks the
// connection gone (a SIGSTOPped or wedged worker: its socket stays open and calls
// would wait out their budget and [`GRACE`]). Ends with the connection or its last
// handle.
async fn heartbeat(
    client: std::sync::Weak<WorkerClient>,
    gone: Arc<tokio::sync::watch::Sender<Option<String>>>,
    pid: u32,
) {
    let mut tick = tokio::time::interval(BEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if gone.borrow().is_some() {
            return;
        }
        let Some(client) = client.upgrade() else {
            return;
        };
        let mut context = tarpc::context::current();
        context.deadline = (tokio::time::Instant::now() + SILENT_AFTER).into_std();
        let answered = tokio::time::timeout(SILENT_AFTER, client.load(context)).await;
        drop(client);
        if !matches!(answered, Ok(Ok(_))) {
            tracing::warn!(
                pid,
                "the browser worker answered no heartbeat for {} s: counting it as gone",
                SILENT_AFTER.as_secs()
            );
            mark_gone(&gone, "it stopped answering (no heartbeat)");
            return;
        }
    }
}

/// What a broken channel means to the caller: the host is gone.
fn gone(error: tarpc::client::RpcError) -> Error {
    let reason = match error {
        tarpc::client::RpcError::DeadlineExceeded => "it did not answer in time".to_owned(),
        tarpc::client::RpcError::Server(e) => format!("it aborted the call: {}", e.detail),
        _ => "the connection to it closed".to_owned(),
    };
    Error::HostGone { reason }
}

/// A session on a worker.
pub struct RemoteSession {
    host: RemoteHost,
    id: String,
    facts: SessionFacts,
    closed: AtomicBool,
}

impl RemoteSession {
    /// Signs its requests with `signer` from now on (it was opened with signing on;
    /// the worker asks this connection for each signature).
    pub fn sign_with(&self, signer: Arc<dyn airlock_browser::RequestSigner>) {
        lock(&self.host.signers).insert(self.id.clone(), signer);
        self.host.registered.notify_waiters();
    }

    // No more signatures for it from this connection.
    fn unsign(&self) {
        lock(&self.host.signers).remove(&self.id);
    }

    /// What it is.
    pub fn facts(&self) -> SessionFacts {
        self.facts.clone()
    }

    /// Whether the connection it was opened on has ended.
    pub fn host_gone(&self) -> bool {
        self.host.is_gone()
    }

    /// Runs a call with `budget` (the worker's own when `None`).
    pub async fn call(&self, call: Call, budget: Option<Duration>) -> Result<Reply> {
        let wait = budget.unwrap_or(Duration::from_millis(self.host.about.action_budget_ms))
            + call.own_wait();
        let budget_ms = budget.map(|b| u64::try_from(b.as_millis()).unwrap_or(u64::MAX));
        if self.host.is_gone() {
            return Err(Error::HostGone {
                reason: "the connection to it is gone".to_owned(),
            });
        }
        self.host
            .unless_gone(self.host.client.call(
                self.host.context(wait),
                self.id.clone(),
                call,
                budget_ms,
            ))
            .await?
    }

    /// Lets go of it: it stays open for its other holders (and, on a worker that
    /// keeps detached sessions, for a while for anyone to attach).
    pub async fn release(&self) {
        if self.closed.swap(true, Ordering::Relaxed) || self.host.is_gone() {
            return;
        }
        let _ = self
            .host
            .client
            .release(self.host.context(Duration::ZERO), self.id.clone())
            .await;
    }

    /// Drops this handle without a word to the worker, as a control plane that dies
    /// does: the worker lets go of the session when the connection closes.
    pub fn forget(self) {
        self.closed.store(true, Ordering::Relaxed);
    }

    /// Closes it, for every holder.
    pub async fn close(&self) {
        // Nothing to tell a worker that is gone (or hung).
        if self.closed.swap(true, Ordering::Relaxed) || self.host.is_gone() {
            return;
        }
        let _ = self
            .host
            .client
            .close(self.host.context(Duration::ZERO), self.id.clone())
            .await;
    }
}

impl Drop for RemoteSession {
    fn drop(&mut self) {
        self.unsign();
        // A session dropped unclosed is closed on the worker all the same.
        if !self.closed.load(Ordering::Relaxed)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let client = self.host.client.clone();
            let id = std::mem::take(&mut self.id);
            let context = self.host.context(Duration::ZERO);
            runtime.spawn(async move {
                let _ = client.close(context, id).await;
            });
        }
    }
}

/// A future the connector returns.
pub type Connecting<'a> = std::pin::Pin<
    Box<
        dyn std::future::Future<Output = std::result::Result<RemoteHost, ConnectError>> + Send + 'a,
    >,
>;

/// How a control plane (re)connects to its worker: a socket to dial, or a local
/// worker process to start first when the last one is gone.
pub trait Connector: Send + Sync + 'static {
    /// A fresh connection, the worker started first if need be.
    fn connect(&self) -> Connecting<'_>;
    /// Where it connects, as configured (a `[[workers]]` address).
    fn address(&self) -> String {
        String::new()
    }
    /// Stops what the connector started.
    fn shutdown(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async {})
    }
}

/// Dials a worker already listening on a unix socket.
pub struct SocketConnector {
    /// The socket.
    pub path: std::path::PathBuf,
    /// The deployment's worker token.
    pub token: Zeroizing<String>,
    /// The uid the worker must run as, if known.
    pub worker_uid: Option<u32>,
}

impl Connector for SocketConnector {
    fn address(&self) -> String {
        self.path.display().to_string()
    }

    fn connect(&self) -> Connecting<'_> {
        Box::pin(RemoteHost::connect_unix(
            &self.path,
            &self.token,
            self.worker_uid,
        ))
    }
}

/// Dials a worker on another machine over TLS.
pub struct TlsConnector {
    /// `host:port`.
    pub address: String,
    /// The name its certificate must carry.
    pub server_name: String,
    /// Trusts the workers' CA.
    pub tls: Arc<rustls::ClientConfig>,
    /// The deployment's worker token.
    pub token: Zeroizing<String>,
    /// Which addresses it may connect to (a worker that registered itself names
    /// its own address: each it resolves to is judged at every connect); `None`:
    /// any (a listed worker, the operator's own words).
    pub admit: Option<Admit>,
}

/// Whether a worker may be reached at an address, or why not.
pub type Admit = Arc<dyn Fn(std::net::IpAddr) -> std::result::Result<(), String> + Send + Sync>;

impl Connector for TlsConnector {
    fn address(&self) -> String {
        self.address.clone()
    }

    fn connect(&self) -> Connecting<'_> {
        Box::pin(async move {
            let Some(admit) = &self.admit else {
                return RemoteHost::connect_tls(
                    &self.address,
                    &self.server_name,
                    self.tls.clone(),
                    &self.token,
                )
                .await;
            };
            // Resolved here, once, and only an admitted address dialled: a name
            // that resolves to the metadata service reaches nothing.
            let resolved =
                tokio::time::timeout(HELLO_WITHIN, tokio::net::lookup_host(self.address.as_str()))
                    .await
                    .map_err(|_| ConnectError::Unreachable {
                        at: self.address.clone(),
                        source: io::ErrorKind::TimedOut.into(),
                    })?
                    .map_err(|source| ConnectError::Unreachable {
                        at: self.address.clone(),
                        source,
                    })?;
            // Each admitted address in turn, as a dial of the name would.
            let mut last = None;
            for addr in resolved {
                if let Err(why) = admit(addr.ip()) {
                    last.get_or_insert(ConnectError::NotAllowed {
                        at: self.address.clone(),
                        why,
                    });
                    continue;
                }
                match RemoteHost::connect_tls(
                    &addr.to_string(),
                    &self.server_name,
                    self.tls.clone(),
                    &self.token,
                )
                .await
                {
                    Err(e @ ConnectError::Unreachable { .. }) => last = Some(e),
                    done => return done,
                }
            }
            Err(last.unwrap_or_else(|| ConnectError::NotAllowed {
                at: self.address.clone(),
                why: "it resolves to no address".to_owned(),
            }))
        })
    }
}
