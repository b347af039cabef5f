//! What the control plane holds: a [`Host`] to open sessions on, and for each session
//! a [`BrowserSession`] whose methods mirror the browser layer's. Whether the session
//! runs in this process or in a worker is the host's business; the call pipeline
//! sees one type.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use airlock_browser::{
    ActionOutcome, Browsers, ClickOptions, ConsoleLevel, ConsoleLog, Error, InjectedCookie,
    NetworkLog, PageText, Resolved, Result, Screenshot, ScreenshotOptions, Scroll, Snapshot,
    SnapshotOptions, TabInfo, Target, TypedText, WaitCondition, WaitUntil,
};
use airlock_config::Isolation;
use airlock_policy::{DenyReason, Policy};
use zeroize::Zeroizing;

use crate::fleet::{Fleet, Remote};
use crate::local::{LocalHost, LocalSession};
use crate::proto::{AttachKey, Call, Load, OpenSpec, Reply, SessionFacts, Watch, Watched};
use crate::remote::{About, RemoteSession};

mod registered;

tokio::task_local! {
    // The action budget of the session calls made inside `with_action_budget`.
    static BUDGET: Duration;
}

/// Runs `action` with `budget` as the action budget of every session call it makes,
/// instead of the host's (a caller that knows its page is slow, or wants a quick no).
pub async fn with_action_budget<F: std::future::Future>(budget: Duration, action: F) -> F::Output {
    BUDGET.scope(budget, action).await
}

/// Where browser sessions run.
#[derive(Clone)]
pub enum Host {
    /// In this process.
    Local(Arc<LocalHost>),
    /// In a worker process, reached over its channel.
    Remote(Arc<Remote>),
    /// In workers on other machines: each session opens on the next that answers.
    Fleet(Arc<Fleet>),
}

/// Where a session on a worker has its finished downloads brought.
#[derive(Clone)]
pub enum DownloadsTo {
    /// Files (0600) in this directory of the control plane's machine.
    Dir(PathBuf),
    /// Handed over whole to be kept elsewhere (the store replicas share); `dir` is
    /// where a session in this process has Chromium save them first.
    Keep {
        /// Where Chromium saves them, when it runs in this process.
        dir: PathBuf,
        /// Who keeps them.
        keeper: Arc<dyn KeepDownload>,
    },
}

/// Keeps a finished download (its generated name, its bytes) where the operator
/// finds it.
pub trait KeepDownload: Send + Sync {
    /// Keeps `data` as `saved_as`; why not, when it cannot.
    fn keep<'a>(
        &'a self,
        saved_as: &'a str,
        data: Vec<u8>,
    ) -> futures_util::future::BoxFuture<'a, std::result::Result<(), String>>;
}

impl From<Fleet> for Host {
    fn from(fleet: Fleet) -> Self {
        Host::Fleet(Arc::new(fleet))
    }
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Host::Local(_) => f.write_str("Host::Local"),
            Host::Remote(remote) => write!(f, "Host::Remote({:?})", remote.about()),
            Host::Fleet(fleet) => write!(f, "Host::Fleet({} workers)", fleet.all().len()),
        }
    }
}

impl From<Remote> for Host {
    fn from(remote: Remote) -> Self {
        Host::Remote(Arc::new(remote))
    }
}

impl From<Arc<Browsers>> for Host {
    fn from(browsers: Arc<Browsers>) -> Self {
        Host::Local(Arc::new(LocalHost::new(browsers)))
    }
}

impl From<LocalHost> for Host {
    fn from(host: LocalHost) -> Self {
        Host::Local(Arc::new(host))
    }
}

impl Host {
    /// Opens a session as `spec` says.
    pub async fn open(&self, spec: OpenSpec) -> Result<BrowserSession> {
        Box::pin(self.open_signed(spec, None)).await
    }

    /// Opens a session as `spec` says, its requests signed by `signer` when the spec
    /// asks for signing: in this process directly; on a worker, which holds no key,
    /// by answering the worker's asks on this connection.
    pub async fn open_signed(
        &self,
        spec: OpenSpec,
        signer: Option<Arc<dyn airlock_browser::RequestSigner>>,
    ) -> Result<BrowserSession> {
        let session = match self {
            Host::Local(host) => {
                let session = Box::pin(host.open_signed(spec, signer)).await?;
                return Ok(BrowserSession {
                    facts: session.facts(),
                    inner: Inner::Local(Box::new(session)),
                    downloads: Default::default(),
                    reachable_at: None,
                });
            }
            _ => Box::pin(self.open_remote(spec)).await?,
        };
        if let Some(signer) = signer {
            session.sign_with(signer);
        }
        Ok(session)
    }

    async fn open_remote(&self, spec: OpenSpec) -> Result<BrowserSession> {
        match self {
            Host::Local(host) => {
                let session = host.open(spec).await?;
                Ok(BrowserSession {
                    facts: session.facts(),
                    inner: Inner::Local(Box::new(session)),
                    downloads: Default::default(),
                    reachable_at: None,
                })
            }
            Host::Remote(remote) => {
                let session = remote.host().await?.open(spec).await?;
                Ok(BrowserSession {
                    facts: session.facts(),
                    inner: Inner::Remote(session),
                    downloads: Default::default(),
                    reachable_at: None,
                })
            }
            Host::Fleet(fleet) => {
                let mut last = None;
                for remote in fleet.by_room().await {
                    // A worker that cannot be reached is passed over for this one.
                    let opened = match remote.host().await {
                        Ok(host) => host.open(spec.clone()).await,
                        Err(e) => Err(e),
                    };
                    match opened {
                        Ok(session) => {
                            return Ok(BrowserSession {
                                facts: session.facts(),
                                inner: Inner::Remote(session),
                                downloads: Default::default(),
                                reachable_at: Some(remote.connector.address()),
                            });
                        }
                        Err(e @ (Error::BrowserUnavailable { .. } | Error::HostGone { .. })) => {
                            tracing::warn!(error = %e, "a browser worker could not open a session");
                            last = Some(e);
                        }
                        Err(e) => return Err(e),
                    }
                }
                Err(last.unwrap_or(Error::BrowserUnavailable {
                    reason: "no browser worker is configured".to_owned(),
                }))
            }
        }
    }

    /// Holds session `id` that another control-plane replica opened on the worker
    /// at `address` (one of `[[workers]]`) and stored `key` for: from now on calls
    /// reach it from here too. Only workers on other machines are shared; anything else is a closed
    /// session.
    pub async fn attach(&self, address: &str, id: &str, key: &AttachKey) -> Result<BrowserSession> {
        let Host::Fleet(fleet) = self else {
            return Err(Error::SessionClosed);
        };
        let remote = fleet
            .all()
            .into_iter()
            .find(|w| w.address() == address)
            .ok_or(Error::SessionClosed)?;
        let session = remote.host().await?.attach(id, key).await?;
        Ok(BrowserSession {
            facts: session.facts(),
            inner: Inner::Remote(session),
            downloads: Default::default(),
            reachable_at: Some(address.to_owned()),
        })
    }

    /// Each worker on another machine by address, with its load if it answers
    /// now (connecting if it was not connected; one that has not within `within`
    /// does not), and what it said of itself; empty for any other host. The
    /// workers are asked together.
    pub async fn workers_status(&self, within: Duration) -> Vec<(String, Option<Load>, About)> {
        let Host::Fleet(fleet) = self else {
            return Vec::new();
        };
        futures_util::future::join_all(fleet.all().into_iter().map(|remote| async move {
            let load = tokio::time::timeout(within, remote.load())
                .await
                .ok()
                .and_then(|load| load.ok());
            (remote.address(), load, remote.about())
        }))
        .await
    }

    /// What each worker refused since a control plane last asked: its address,
    /// the reason, how many times. Each refusal is handed to one asker only; a
    /// worker that does not answer within `within` is asked again next time.
    pub async fn worker_refusals(&self, within: Duration) -> Vec<(String, String, u64)> {
        let remotes = match self {
            Host::Local(_) => Vec::new(),
            Host::Remote(remote) => vec![remote.clone()],
            Host::Fleet(fleet) => fleet.all(),
        };
        let answers =
            futures_util::future::join_all(remotes.into_iter().map(|remote| async move {
                let refused = tokio::time::timeout(within, remote.refusals())
                    .await
                    .ok()
                    .and_then(|r| r.ok())
                    .unwrap_or_default();
                (remote.address(), refused)
            }))
            .await;
        answers
            .into_iter()
            .flat_map(|(address, refused)| {
                refused
                    .into_iter()
                    .map(move |(reason, n)| (address.clone(), reason, n))
            })
            .collect()
    }

    /// The isolation a session gets when it asks for none.
    pub fn default_isolation(&self) -> Isolation {
        match self {
            Host::Local(host) => host.default_isolation(),
            Host::Remote(remote) => remote.about().default_isolation,
            Host::Fleet(fleet) => fleet.isolation,
        }
    }

    /// How many Chromium processes the host has launched (a worker's, over every
    /// connection to it).
    pub async fn launches(&self) -> u64 {
        use std::sync::atomic::Ordering;
        async fn of(remote: &Remote) -> u64 {
            if let Ok(host) = remote.host().await {
                remote
                    .launched_now
                    .fetch_max(host.launches().await, Ordering::Relaxed);
            }
            remote.launched_before.load(Ordering::Relaxed)
                + remote.launched_now.load(Ordering::Relaxed)
        }
        match self {
            Host::Local(host) => host.browsers().launched_pids().len() as u64,
            Host::Remote(remote) => of(remote).await,
            Host::Fleet(fleet) => {
                let mut sum = 0;
                for remote in fleet.all() {
                    sum += of(&remote).await;
                }
                sum
            }
        }
    }

    /// The in-process host, if this is one.
    pub fn local(&self) -> Option<&Arc<LocalHost>> {
        match self {
            Host::Local(host) => Some(host),
            Host::Remote(_) | Host::Fleet(_) => None,
        }
    }

    /// The worker, if sessions run in one (the first of several).
    pub fn remote(&self) -> Option<Arc<Remote>> {
        match self {
            Host::Local(_) => None,
            Host::Remote(remote) => Some(remote.clone()),
            Host::Fleet(fleet) => fleet.all().first().cloned(),
        }
    }

    /// Stops every Chromium of the host.
    pub async fn shutdown(&self) {
        match self {
            Host::Local(host) => host.shutdown().await,
            Host::Remote(remote) => remote.connector.shutdown().await,
            Host::Fleet(fleet) => {
                for remote in fleet.all() {
                    remote.connector.shutdown().await;
                }
            }
        }
    }
}

enum Inner {
    Local(Box<LocalSession>),
    Remote(RemoteSession),
}

/// One browser session, wherever it runs.
pub struct BrowserSession {
    facts: SessionFacts,
    inner: Inner,
    // On a worker: where the gateway keeps downloads (the worker keeps them in its
    // own directory until fetched).
    downloads: std::sync::Mutex<Option<DownloadsTo>>,
    // On a worker of `[[workers]]`: its address, where another replica reaches it.
    reachable_at: Option<String>,
}

impl std::fmt::Debug for BrowserSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserSession")
            .field("id", &self.facts.id)
            .finish_non_exhaustive()
    }
}

// The reply a call must have; anything else is a host that does not speak our
// protocol.
macro_rules! expect {
    ($reply:expr, $pattern:pat => $value:expr) => {
        match $reply {
            $pattern => Ok($value),
            other => Err(unexpected(&other)),
        }
    };
}

fn unexpected(reply: &Reply) -> Error {
    Error::Protocol(format!(
        "the browser host answered out of turn ({})",
        reply.kind()
    ))
}

impl BrowserSession {
    /// Signs the requests of a session on a worker (opened with signing on) with
    /// `signer`, answered from this connection: for a session another replica opened
    /// and this one attached to. A session in this process is given its signer when
    /// it opens ([`Host::open_signed`]).
    pub fn sign_with(&self, signer: Arc<dyn airlock_browser::RequestSigner>) {
        if let Inner::Remote(session) = &self.inner {
            session.sign_with(signer);
        }
    }

    /// Runs one call as it is sent to the host, none of the gateway's own checks
    /// or file transfers added (tests that ask a worker directly); the pipeline uses
    /// the typed methods below.
    pub async fn call(&self, call: Call) -> Result<Reply> {
        let budget = BUDGET.try_with(|b| *b).ok();
        match &self.inner {
            // Boxed: one future for every kind of call is large, and nested in a
            // tool's own it would not fit a worker thread's stack.
            Inner::Local(session) => match budget {
                Some(budget) => {
                    Box::pin(airlock_browser::with_action_budget(
                        budget,
                        session.call(call),
                    ))
                    .await
                }
                None => Box::pin(session.call(call)).await,
            },
            Inner::Remote(session) => Box::pin(session.call(call, budget)).await,
        }
    }

    async fn act(&self, call: Call) -> Result<ActionOutcome> {
        let mut outcome = expect!(self.call(call).await?, Reply::Outcome(o) => o)?;
        self.fetch_downloads(&mut outcome).await;
        Ok(outcome)
    }

    // A worker keeps a finished download in its own directory: bring each one the
    // outcome reports to where the agent's operator finds it (the gateway's download
    // directory, or the shared store). One that cannot be brought is reported
    // refused.
    async fn fetch_downloads(&self, outcome: &mut ActionOutcome) {
        use airlock_browser::Notice;
        let to = self
            .downloads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some(to) = to else {
            return;
        };
        let remote = matches!(self.inner, Inner::Remote(_));
        for notice in &mut outcome.notices {
            let Notice::Downloaded { name, saved_as, .. } = notice else {
                continue;
            };
            let fetched = match (&to, remote) {
                // In this process Chromium saved it in the directory already.
                (DownloadsTo::Dir(_), false) => continue,
                (DownloadsTo::Dir(dir), true) => {
                    self.fetch_download(saved_as, &dir.join(&*saved_as)).await
                }
                (DownloadsTo::Keep { keeper, .. }, true) => {
                    match self.download_bytes(saved_as).await {
                        Ok(data) => keeper.keep(saved_as, data).await,
                        Err(why) => Err(why),
                    }
                }
                // Saved here by Chromium: handed over, and gone from this disk.
                (DownloadsTo::Keep { dir, keeper }, false) => {
                    let path = dir.join(&*saved_as);
                    let kept = match tokio::fs::read(&path).await {
                        Ok(data) => keeper.keep(saved_as, data).await,
                        Err(e) => Err(e.to_string()),
                    };
                    let _ = tokio::fs::remove_file(&path).await;
                    kept
                }
            };
            if let Err(why) = fetched {
                tracing::warn!(%why, "a download could not be brought from the worker");
                *notice = Notice::DownloadRefused {
                    name: name.clone(),
                    why: "it could not be brought from the browser worker".to_owned(),
                };
            }
        }
    }

    // Brings one download over in pieces into `to` (created 0600, as Chromium would
    // have); a part-written file is removed.
    async fn fetch_download(
        &self,
        saved_as: &str,
        to: &std::path::Path,
    ) -> std::result::Result<(), String> {
        use tokio::io::AsyncWriteExt;
        let mut file = tokio::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(to)
            .await
            .map_err(|e| e.to_string())?;
        let mut offset = 0u64;
        let fetched = async {
            loop {
                let call = Call::TakeDownload {
                    saved_as: saved_as.to_owned(),
                    offset,
                };
                let (data, total) = match self.call(call).await.map_err(|e| e.to_string())? {
                    Reply::Piece { data, total } => (data, total),
                    other => return Err(unexpected(&other).to_string()),
                };
                file.write_all(&data).await.map_err(|e| e.to_string())?;
                offset += data.len() as u64;
                if offset >= total || data.is_empty() {
                    return file.flush().await.map_err(|e| e.to_string());
                }
            }
        }
        .await;
        if fetched.is_err() {
            let _ = tokio::fs::remove_file(to).await;
        }
        fetched
    }

    // One download, whole, in memory (at most the session's download cap).
    async fn download_bytes(&self, saved_as: &str) -> std::result::Result<Vec<u8>, String> {
        let mut data = Vec::new();
        loop {
            let call = Call::TakeDownload {
                saved_as: saved_as.to_owned(),
                offset: data.len() as u64,
            };
            let (piece, total) = match self.call(call).await.map_err(|e| e.to_string())? {
                Reply::Piece { data, total } => (data, total),
                other => return Err(unexpected(&other).to_string()),
            };
            data.extend_from_slice(&piece);
            if data.len() as u64 >= total || piece.is_empty() {
                return Ok(data);
            }
        }
    }

    async fn done(&self, call: Call) -> Result<()> {
        expect!(self.call(call).await?, Reply::Done => ())
    }

    /// The browser layer's id of the session.
    pub fn id(&self) -> &str {
        &self.facts.id
    }

    /// Whether the worker hosting it went away (its browser is gone with it).
    pub fn host_gone(&self) -> bool {
        match &self.inner {
            Inner::Local(_) => false,
            Inner::Remote(session) => session.host_gone(),
        }
    }

    /// Whether it has a Chromium of its own.
    pub fn is_dedicated(&self) -> bool {
        self.facts.dedicated
    }

    /// The PID of the Chromium serving it.
    pub fn browser_pid(&self) -> u32 {
        self.facts.browser_pid
    }

    /// Its browser context's id.
    pub fn context_id(&self) -> &str {
        &self.facts.context_id
    }

    /// The session as the browser layer has it, when it runs in this process (tests).
    pub fn local(&self) -> Option<&airlock_browser::Session> {
        match &self.inner {
            Inner::Local(session) => Some(session.session()),
            Inner::Remote(_) => None,
        }
    }

    /// Closes it.
    pub async fn close(&self) {
        match &self.inner {
            Inner::Local(session) => session.close().await,
            Inner::Remote(session) => session.close().await,
        }
    }

    /// Lets go of it: on a shared worker it stays open for the other replicas
    /// holding it (or for one to take it over); anywhere else it is closed.
    pub async fn release(&self) {
        match &self.inner {
            Inner::Remote(session) if self.reachable_at.is_some() => session.release().await,
            _ => self.close().await,
        }
    }

    /// Where another control-plane replica reaches this session (its worker's
    /// `[[workers]]` address), if it can.
    pub fn reachable_at(&self) -> Option<&str> {
        self.reachable_at.as_deref()
    }

    /// What another replica must show its worker to attach to it, when one can.
    pub fn attach_key(&self) -> Option<&AttachKey> {
        self.reachable_at.as_ref().and(self.facts.key.as_ref())
    }

    /// Goes to `url`.
    pub async fn navigate(&self, url: &str, wait_until: WaitUntil) -> Result<ActionOutcome> {
        self.act(Call::Navigate {
            url: url.to_owned(),
            wait_until,
        })
        .await
    }

    /// History back.
    pub async fn back(&self) -> Result<ActionOutcome> {
        self.act(Call::Back).await
    }

    /// History forward.
    pub async fn forward(&self) -> Result<ActionOutcome> {
        self.act(Call::Forward).await
    }

    /// Reloads.
    pub async fn reload(&self) -> Result<ActionOutcome> {
        self.act(Call::Reload).await
    }

    /// Clicks.
    pub async fn click(&self, target: &Target, options: &ClickOptions) -> Result<ActionOutcome> {
        self.act(Call::Click {
            target: target.clone(),
            options: options.clone(),
        })
        .await
    }

    /// Drags `from` onto `to`.
    pub async fn drag(&self, from: &Target, to: &Target) -> Result<ActionOutcome> {
        self.act(Call::Drag {
            from: from.clone(),
            to: to.clone(),
        })
        .await
    }

    /// Gives the chooser `target` opens these files (paths of this process; a worker
    /// is sent their bytes first).
    pub async fn upload(&self, target: &Target, paths: &[PathBuf]) -> Result<ActionOutcome> {
        let paths = match &self.inner {
            Inner::Local(_) => paths.to_vec(),
            Inner::Remote(_) => {
                let mut staged = Vec::with_capacity(paths.len());
                for path in paths {
                    staged.push(self.stage(path).await?);
                }
                staged
            }
        };
        self.act(Call::Upload {
            target: target.clone(),
            paths,
        })
        .await
    }

    // Sends a file to the worker in pieces; where it keeps it.
    async fn stage(&self, path: &std::path::Path) -> Result<PathBuf> {
        use tokio::io::AsyncReadExt;
        let unreadable = |e: std::io::Error| {
            Error::InvalidArgument(format!("cannot read a file to upload: {e}"))
        };
        let mut file = tokio::fs::File::open(path).await.map_err(unreadable)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut into: Option<String> = None;
        loop {
            let mut data = Vec::with_capacity(crate::proto::CHUNK);
            (&mut file)
                .take(crate::proto::CHUNK as u64)
                .read_to_end(&mut data)
                .await
                .map_err(unreadable)?;
            // An empty file is still one (empty) piece; after that, an empty read ends it.
            if data.is_empty() && into.is_some() {
                break;
            }
            let last = data.len() < crate::proto::CHUNK;
            let call = Call::Stage {
                name: name.clone(),
                data,
                into: into.clone(),
            };
            into = Some(expect!(self.call(call).await?, Reply::Text(at) => at)?);
            if last {
                break;
            }
        }
        Ok(PathBuf::from(into.unwrap_or_default()))
    }

    /// Hovers.
    pub async fn hover(&self, target: &Target) -> Result<ActionOutcome> {
        self.act(Call::Hover(target.clone())).await
    }

    /// Types pieces, secrets checked at each insertion.
    pub async fn type_pieces(
        &self,
        target: &Target,
        text: &TypedText,
        clear_first: bool,
        submit: bool,
    ) -> Result<ActionOutcome> {
        self.act(Call::Type {
            target: target.clone(),
            text: text.clone(),
            clear_first,
            submit,
        })
        .await
    }

    /// Fills several fields.
    pub async fn fill_form_pieces(&self, fields: &[(Target, TypedText)]) -> Result<ActionOutcome> {
        self.act(Call::FillForm(fields.to_vec())).await
    }

    /// Presses a key or combination.
    pub async fn press_key(&self, key: &str) -> Result<ActionOutcome> {
        self.act(Call::PressKey(key.to_owned())).await
    }

    /// Selects options.
    pub async fn select_option(&self, target: &Target, values: &[String]) -> Result<ActionOutcome> {
        self.act(Call::SelectOption {
            target: target.clone(),
            values: values.to_vec(),
        })
        .await
    }

    /// Checks or unchecks.
    pub async fn set_checked(&self, target: &Target, checked: bool) -> Result<ActionOutcome> {
        self.act(Call::SetChecked {
            target: target.clone(),
            checked,
        })
        .await
    }

    /// Scrolls.
    pub async fn scroll(&self, scroll: &Scroll) -> Result<ActionOutcome> {
        self.act(Call::Scroll(scroll.clone())).await
    }

    /// Waits for a condition.
    pub async fn wait_for(
        &self,
        condition: &WaitCondition,
        timeout: Option<Duration>,
    ) -> Result<ActionOutcome> {
        self.act(Call::WaitFor {
            condition: condition.clone(),
            timeout,
        })
        .await
    }

    /// Answers the dialog holding the page.
    pub async fn handle_dialog(
        &self,
        accept: bool,
        prompt: Option<&TypedText>,
        wait: Duration,
    ) -> Result<ActionOutcome> {
        self.act(Call::HandleDialog {
            accept,
            prompt: prompt.cloned(),
            wait,
        })
        .await
    }

    /// Every tab's viewport.
    pub async fn resize(&self, width: u32, height: u32) -> Result<ActionOutcome> {
        self.act(Call::Resize { width, height }).await
    }

    /// Looks like the device named `name`.
    pub async fn emulate(&self, name: &str) -> Result<()> {
        self.done(Call::Emulate(name.to_owned())).await
    }

    /// What `target` names now.
    pub async fn resolve(&self, target: &Target) -> Result<Resolved> {
        expect!(self.call(Call::Resolve(target.clone())).await?, Reply::Resolved(r) => r)
    }

    /// A snapshot.
    pub async fn snapshot(&self, options: &SnapshotOptions) -> Result<Snapshot> {
        expect!(self.call(Call::Snapshot(options.clone())).await?, Reply::Snapshot(s) => s)
    }

    /// The change since the last snapshot.
    pub async fn changes(&self) -> Result<Option<String>> {
        expect!(self.call(Call::Changes).await?, Reply::Changes(c) => c)
    }

    /// Starts the next diff from the page as it is.
    pub async fn forget_changes(&self) -> Result<()> {
        self.done(Call::ForgetChanges).await
    }

    /// What the page logged.
    pub async fn console(&self, level: ConsoleLevel, limit: usize) -> Result<ConsoleLog> {
        expect!(self.call(Call::Console { level, limit }).await?, Reply::Console(c) => c)
    }

    /// Runs an agent's function in the page.
    pub async fn evaluate(&self, function: &str, target: Option<&Target>) -> Result<String> {
        let call = Call::Evaluate {
            function: function.to_owned(),
            target: target.cloned(),
        };
        expect!(self.call(call).await?, Reply::Text(t) => t)
    }

    /// The page as a PDF.
    pub async fn pdf(&self) -> Result<Screenshot> {
        expect!(self.call(Call::Pdf).await?, Reply::File(f) => f)
    }

    /// What the page requested.
    pub async fn network_requests(&self, filter: Option<&str>, limit: usize) -> Result<NetworkLog> {
        let call = Call::NetworkRequests {
            filter: filter.map(str::to_owned),
            limit,
        };
        expect!(self.call(call).await?, Reply::Network(n) => n)
    }

    /// The page's text.
    pub async fn read_text(&self, offset: usize, max_bytes: usize) -> Result<PageText> {
        expect!(self.call(Call::ReadText { offset, max_bytes }).await?, Reply::Page(p) => p)
    }

    /// A screenshot.
    pub async fn screenshot(&self, options: &ScreenshotOptions) -> Result<Screenshot> {
        expect!(self.call(Call::Screenshot(options.clone())).await?, Reply::File(f) => f)
    }

    /// The tabs.
    pub async fn tabs(&self) -> Result<Vec<TabInfo>> {
        expect!(self.call(Call::Tabs).await?, Reply::Tabs(t) => t)
    }

    /// Opens a tab.
    pub async fn new_tab(&self, url: Option<&str>) -> Result<Vec<TabInfo>> {
        expect!(self.call(Call::NewTab(url.map(str::to_owned))).await?, Reply::Tabs(t) => t)
    }

    /// Makes a tab the active one.
    pub async fn select_tab(&self, index: usize) -> Result<Vec<TabInfo>> {
        expect!(self.call(Call::SelectTab(index)).await?, Reply::Tabs(t) => t)
    }

    /// Closes a tab.
    pub async fn close_tab(&self, index: usize) -> Result<Vec<TabInfo>> {
        expect!(self.call(Call::CloseTab(index)).await?, Reply::Tabs(t) => t)
    }

    /// Keeps downloads in `dir`.
    pub async fn allow_downloads(&self, dir: &std::path::Path, cap: u64) -> Result<()> {
        self.allow_downloads_to(dir, cap, DownloadsTo::Dir(dir.to_owned()))
            .await
    }

    /// From now on brings this session's downloads as `to` says (a session another
    /// replica opened, and told its worker to allow downloads).
    pub fn keep_downloads(&self, to: DownloadsTo) {
        *self.downloads.lock().unwrap_or_else(|e| e.into_inner()) = Some(to);
    }

    /// Keeps downloads as `to` says. A session in this process writes them in `dir`
    /// itself; one on a worker brings each there, or hands it to `to`'s keeper.
    pub async fn allow_downloads_to(
        &self,
        dir: &std::path::Path,
        cap: u64,
        to: DownloadsTo,
    ) -> Result<()> {
        *self.downloads.lock().unwrap_or_else(|e| e.into_inner()) = Some(to);
        self.done(Call::AllowDownloads {
            dir: dir.to_owned(),
            cap,
        })
        .await
    }

    /// The cookies of `hosts` (set by each or for a parent domain), values
    /// included: an operator saving a login.
    pub async fn cookies(&self, hosts: &[String]) -> Result<Vec<InjectedCookie>> {
        expect!(self.call(Call::Cookies(hosts.to_vec())).await?, Reply::Cookies(c) => c)
    }

    /// The viewport in CSS pixels.
    pub async fn viewport(&self) -> Result<(u32, u32)> {
        expect!(self.call(Call::Viewport).await?, Reply::Viewport(w, h) => (w, h))
    }

    /// What happened since `watch.after` (and a new frame, if asked and the page
    /// changed since `watch.shown`), as soon as there is any; empty when `watch.wait`
    /// runs out first. Keep one outstanding to follow the session live.
    pub async fn watch(&self, watch: Watch) -> Result<Watched> {
        expect!(self.call(Call::Watch(watch)).await?, Reply::Watched(w) => w)
    }

    /// No one watches the session's frames any more: the host stops looking.
    pub async fn unwatch(&self) -> Result<()> {
        expect!(self.call(Call::Unwatch).await?, Reply::Done => ())
    }

    /// Holds the session to `policy` from now on (a warm session handed out).
    pub async fn set_policy(&self, policy: &Policy) -> Result<()> {
        match &self.inner {
            // In this process the policy is shared as it is, no copy.
            Inner::Local(session) => session.set_policy(Arc::new(policy.clone())),
            Inner::Remote(_) => self.done(Call::SetPolicy(policy.clone())).await,
        }
    }

    /// Learns a value (what an operator typed): hidden and guarded from now on.
    pub async fn learn(&self, name: &str, value: &str, origins: &[String]) -> Result<()> {
        self.done(Call::Learn {
            name: name.to_owned(),
            value: Zeroizing::new(value.to_owned()),
            origins: origins.to_vec(),
        })
        .await
    }

    /// WebSocket origins allowed besides the secrets'.
    pub async fn allow_sockets(&self, origins: &[String]) -> Result<()> {
        self.done(Call::AllowSockets(origins.to_vec())).await
    }

    /// Sockets the page holds open to origins its guard does not allow.
    pub async fn foreign_sockets(&self) -> Result<Vec<String>> {
        expect!(self.call(Call::ForeignSockets).await?, Reply::Sockets(s) => s)
    }

    /// Requests refused since last asked, by reason.
    pub async fn take_blocked(&self) -> Result<BTreeMap<DenyReason, u64>> {
        expect!(self.call(Call::TakeBlocked).await?, Reply::Blocked(b) => b)
    }

    /// Requests effect rules hold that the control plane was not told of yet.
    pub async fn held_effects(&self) -> Result<Vec<airlock_browser::HeldEffect>> {
        expect!(self.call(Call::HeldEffects).await?, Reply::Held(h) => h)
    }

    /// Releases (`send`) or drops the held requests `ids`, waits for what the
    /// released ones bring, and says of each whether Chromium took the decision.
    pub async fn decide_effects(
        &self,
        ids: &[u64],
        send: bool,
    ) -> Result<Vec<airlock_browser::Decided>> {
        let call = Call::DecideEffects {
            ids: ids.to_vec(),
            send,
        };
        expect!(self.call(call).await?, Reply::Decided(d) => d)
    }

    /// Why the proxy lately failed a request to each URL's host, if it did.
    pub async fn proxy_failures(&self, urls: &[&str]) -> Result<Vec<Option<String>>> {
        let call = Call::ProxyFailures(urls.iter().map(|u| (*u).to_owned()).collect());
        expect!(self.call(call).await?, Reply::Failures(f) => f)
    }

    /// Whether the browser lives, and whether the session can take calls.
    pub async fn health(&self) -> Result<(bool, bool)> {
        expect!(self.call(Call::Health).await?, Reply::Health { alive, usable } => (alive, usable))
    }

    /// Replaces crashed tabs; how many.
    pub async fn replace_lost_tabs(&self) -> Result<usize> {
        expect!(self.call(Call::ReplaceLostTabs).await?, Reply::Replaced(n) => n)
    }
}
