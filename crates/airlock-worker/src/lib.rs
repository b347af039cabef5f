//! Browser hosts: where browser sessions run, and the one interface the control plane
//! reaches them through. A host owns Chromium, the egress proxy of each session and
//! what each session must hide; the control plane owns everything with long-lived
//! authority (vault, store, audit, keys) and sends a host, per session, only what
//! that session needs.
//!
//! - [`local`]: the host side, in whatever process runs Chromium.
//! - [`handle`]: what the control plane holds — a [`Host`] and [`BrowserSession`]s.
//! - [`fleet`]: the workers a host reaches over a channel, one [`Remote`] each.
//! - [`proto`]: what crosses between them, as data.
//! - [`process`]: the local worker process: how the gateway starts it, how it runs.
//! - [`remote`]: the channel to a worker process: its server and the client.
//! - `watch`: a session's live stream of events and frames, on the host's side.
//! - [`secrets`]: a session's secrets as data, and the redactor and outbound guard
//!   built from them on either side.

pub mod fleet;
pub mod handle;
pub mod local;
pub mod process;
pub mod proto;
pub mod register;
pub mod remote;
pub mod secrets;
pub mod supervise;
pub mod tls;
pub mod userns;
mod watch;

pub use fleet::{Fleet, MakeRemote, Remote};
pub use handle::{BrowserSession, DownloadsTo, Host, KeepDownload, with_action_budget};
pub use local::{LocalHost, LocalSession};
pub use process::{LocalWorker, WorkerSpawn, WorkerStart};
pub use proto::{
    AttachKey, Call, Frame, Load, MAX_WATCH, OpenSpec, PROTOCOL, Painted, Reply, SessionFacts,
    Watch, Watched,
};
pub use remote::{
    About, Admission, Admit, ConnectError, Connecting, Connector, Listener, MAX_MESSAGE,
    RemoteHost, RemoteSession, SocketConnector, TlsConnector,
};
pub use secrets::{Known, SecretEntry, SecretSet, SecretsError};
