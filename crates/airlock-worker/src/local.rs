//! The host side of a session, in whatever process runs Chromium: the browser
//! session, the egress proxy its context sends everything to, and what it must hide
//! and keep from other origins. [`LocalSession::call`] runs one [`Call`]; the
//! in-process host calls it directly and a worker calls it for each message, so both
//! run the same code.

use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;

use airlock_browser::{Browsers, Device, Error, Result, Session, SessionOptions};
use airlock_config::Isolation;
use airlock_egress::{EgressProxy, Resolver, SystemResolver};
use airlock_policy::{DenyReason, Policy};

use crate::proto::{Call, OpenSpec, Reply, SessionFacts};
use crate::secrets::Known;

/// Chromium, its pool and the egress proxies of this process's sessions.
pub struct LocalHost {
    browsers: Arc<Browsers>,
    resolver: Arc<dyn Resolver>,
    spool: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for LocalHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalHost").finish_non_exhaustive()
    }
}

impl LocalHost {
    /// Hosts sessions in `browsers`; proxies resolve names with the system resolver.
    pub fn new(browsers: Arc<Browsers>) -> LocalHost {
        LocalHost::with_resolver(browsers, Arc::new(SystemResolver))
    }

    /// Hosts sessions in `browsers`, resolving names with `resolver` (tests script
    /// DNS with one).
    pub fn with_resolver(browsers: Arc<Browsers>, resolver: Arc<dyn Resolver>) -> LocalHost {
        LocalHost {
            browsers,
            resolver,
            spool: None,
        }
    }

    /// Keeps each session's downloads and staged uploads under `dir` (a worker's
    /// own directory), not where the gateway asks: the gateway fetches downloads and
    /// sends uploads over the channel.
    pub fn with_spool(mut self, dir: std::path::PathBuf) -> LocalHost {
        self.spool = Some(dir);
        self
    }

    /// The browser pool.
    pub fn browsers(&self) -> &Arc<Browsers> {
        &self.browsers
    }

    /// The isolation a session gets when it asks for none.
    pub fn default_isolation(&self) -> Isolation {
        self.browsers.options().default_isolation
    }

    /// Opens a session: its proxy first, then the browser context that must use it,
    /// with the credentials, redactor and outbound guard `spec` describes.
    pub async fn open(&self, spec: OpenSpec) -> Result<LocalSession> {
        Box::pin(self.open_signed(spec, None)).await
    }

    /// [`LocalHost::open`], with `signer` signing the session's requests (when its
    /// spec asks for signing).
    pub async fn open_signed(
        &self,
        spec: OpenSpec,
        signer: Option<Arc<dyn airlock_browser::RequestSigner>>,
    ) -> Result<LocalSession> {
        let signer = signer.filter(|_| spec.signing.is_some());
        let known = Known::new(spec.secrets).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        let policy = Arc::new(spec.policy);
        let proxy = EgressProxy::start(policy.clone(), self.resolver.clone())
            .await
            .map_err(|e| Error::BrowserUnavailable {
                reason: format!("cannot start the egress proxy: {e}"),
            })?;
        let session = self
            .browsers
            .open_session(SessionOptions {
                isolation: spec.isolation,
                proxy_server: Some(proxy.proxy_server()),
                policy: Some(policy),
                injection: spec.injection.map(Arc::new),
                redactor: known.browser_redactor(),
                request_guard: known.holds_secrets().then(|| known.guard()),
                effects: (!spec.effects.is_empty()).then(|| Arc::new(spec.effects)),
                signer,
            })
            .await?;
        let spool = self.spool.as_ref().map(|dir| dir.join(session.id()));
        Ok(LocalSession {
            session,
            proxy,
            known,
            spool,
            staged: Default::default(),
        })
    }

    /// Stops every Chromium this host started.
    pub async fn shutdown(&self) {
        self.browsers.shutdown().await;
    }
}

/// One hosted session.
pub struct LocalSession {
    session: Session,
    proxy: EgressProxy,
    known: Arc<Known>,
    spool: Option<std::path::PathBuf>,
    staged: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for LocalSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSession")
            .field("id", &self.session.id())
            .finish_non_exhaustive()
    }
}

impl LocalSession {
    /// What it is.
    pub fn facts(&self) -> SessionFacts {
        SessionFacts {
            id: self.session.id().to_owned(),
            dedicated: self.session.is_dedicated(),
            browser_pid: self.session.browser_pid(),
            context_id: self.session.context_id().to_owned(),
            key: None,
        }
    }

    /// The browser session itself (tests of this process).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Closes the browser session and forgets its files; the proxy goes with this
    /// value.
    pub async fn close(&self) {
        self.session.close().await;
        if let Some(spool) = &self.spool {
            let _ = tokio::fs::remove_dir_all(spool).await;
        }
    }

    fn spool(&self, what: &str) -> Result<std::path::PathBuf> {
        let dir = self
            .spool
            .as_ref()
            .ok_or_else(|| Error::InvalidArgument("this browser host takes paths".to_owned()))?
            .join(what);
        std::fs::create_dir_all(&dir).map_err(|e| Error::BrowserUnavailable {
            reason: format!("cannot keep files for the session: {e}"),
        })?;
        // Chromium under a user of its own reads what is staged (these directories
        // are inside its own, which no one else may enter) and writes downloads.
        if let Some((uid, gid)) = airlock_core::browser_user::get() {
            let given = if what == "downloads" {
                std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
            } else {
                Ok(())
            };
            given
                .and_then(|()| open_up(self.spool.as_deref(), &dir))
                .map_err(|e| Error::BrowserUnavailable {
                    reason: format!("cannot keep files for the session: {e}"),
                })?;
        }
        Ok(dir)
    }

    /// Runs one call.
    pub async fn call(&self, call: Call) -> Result<Reply> {
        let s = &self.session;
        // A dialog that opens while an action runs is the action's outcome.
        macro_rules! act {
            ($e:expr) => {
                Reply::Outcome(s.or_dialog($e.await).await?)
            };
        }
        Ok(match call {
            Call::Navigate { url, wait_until } => act!(s.navigate(&url, wait_until)),
            Call::Back => act!(s.back()),
            Call::Forward => act!(s.forward()),
            Call::Reload => act!(s.reload()),
            Call::Click { target, options } => act!(s.click(&target, &options)),
            Call::Drag { from, to } => act!(s.drag(&from, &to)),
            Call::Upload { target, paths } => {
                // A worker hands a page only files its session staged: a connection
                // holding the token cannot make it read another path of the host.
                if self.spool.is_some() {
                    let uploads = self.spool("uploads")?;
                    if let Some(foreign) = paths.iter().find(|p| !staged(&uploads, p)) {
                        tracing::warn!(session.id = %s.id(), "an upload named a file this session did not stage");
                        return Err(Error::InvalidArgument(format!(
                            "`{}` is not a file this session staged",
                            foreign.file_name().unwrap_or_default().to_string_lossy()
                        )));
                    }
                }
                act!(s.upload(&target, &paths))
            }
            Call::Hover(target) => act!(s.hover(&target)),
            Call::Type {
                target,
                text,
                clear_first,
                submit,
            } => act!(s.type_pieces(&target, &text, clear_first, submit)),
            Call::FillForm(fields) => act!(s.fill_form_pieces(&fields)),
            Call::PressKey(key) => act!(s.press_key(&key)),
            Call::SelectOption { target, values } => act!(s.select_option(&target, &values)),
            Call::SetChecked { target, checked } => act!(s.set_checked(&target, checked)),
            Call::Scroll(scroll) => act!(s.scroll(&scroll)),
            Call::WaitFor { condition, timeout } => act!(s.wait_for(&condition, timeout)),
            Call::HandleDialog {
                accept,
                prompt,
                wait,
            } => act!(s.handle_dialog(accept, prompt.as_ref(), wait)),
            Call::Resize { width, height } => act!(s.resize(width, height)),
            Call::Emulate(name) => {
                let device = Device::named(&name).ok_or_else(|| {
                    Error::InvalidArgument(format!("there is no device `{name}`"))
                })?;
                s.emulate(device).await?;
                Reply::Done
            }
            Call::Resolve(target) => Reply::Resolved(s.resolve(&target).await?),
            Call::Snapshot(options) => Reply::Snapshot(s.snapshot(&options).await?),
            Call::Changes => Reply::Changes(s.changes().await?),
            Call::ForgetChanges => {
                s.forget_changes().await?;
                Reply::Done
            }
            Call::Console { level, limit } => Reply::Console(s.console(level, limit).await?),
            Call::Evaluate { function, target } => {
                Reply::Text(s.evaluate(&function, target.as_ref()).await?)
            }
            Call::Pdf => Reply::File(s.pdf().await?),
            Call::NetworkRequests { filter, limit } => {
                Reply::Network(s.network_requests(filter.as_deref(), limit).await?)
            }
            Call::ReadText { offset, max_bytes } => {
                Reply::Page(s.read_text(offset, max_bytes).await?)
            }
            Call::Screenshot(options) => Reply::File(s.screenshot(&options).await?),
            Call::Tabs => Reply::Tabs(s.tabs().await?),
            Call::NewTab(url) => Reply::Tabs(s.new_tab(url.as_deref()).await?),
            Call::SelectTab(index) => Reply::Tabs(s.select_tab(index).await?),
            Call::CloseTab(index) => Reply::Tabs(s.close_tab(index).await?),
            Call::AllowDownloads { dir, cap } => {
                let dir = match self.spool {
                    Some(_) => self.spool("downloads")?,
                    None => dir,
                };
                s.allow_downloads(&dir, cap).await?;
                Reply::Done
            }
            Call::Stage { name, data, into } => {
                if data.len() > crate::proto::CHUNK {
                    return Err(Error::InvalidArgument(
                        "a piece larger than a chunk".to_owned(),
                    ));
                }
                let uploads = self.spool("uploads")?;
                let path = match into {
                    // Only a file this session staged: one directory down in its spool.
                    Some(path) => {
                        let path = std::path::PathBuf::from(path);
                        if !staged(&uploads, &path) {
                            return Err(Error::InvalidArgument(
                                "that is not a file this session staged".to_owned(),
                            ));
                        }
                        path
                    }
                    None => {
                        // Its own directory, so the page sees the file under the name
                        // given.
                        let name = std::path::Path::new(&name)
                            .file_name()
                            .ok_or_else(|| {
                                Error::InvalidArgument("a file needs a name".to_owned())
                            })?
                            .to_owned();
                        let n = self
                            .staged
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let dir = uploads.join(n.to_string());
                        std::fs::create_dir_all(&dir).map_err(|e| Error::BrowserUnavailable {
                            reason: format!("cannot keep a file for upload: {e}"),
                        })?;
                        dir.join(name)
                    }
                };
                let written = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .and_then(|mut file| std::io::Write::write_all(&mut file, &data));
                let readable = || {
                    if airlock_core::browser_user::get().is_none() {
                        return Ok(());
                    }
                    open_up(Some(&uploads), path.parent().unwrap_or(&uploads))?;
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))
                };
                written
                    .and_then(|()| readable())
                    .map_err(|e| Error::BrowserUnavailable {
                        reason: format!("cannot keep a file for upload: {e}"),
                    })?;
                Reply::Text(path.display().to_string())
            }
            Call::TakeDownload { saved_as, offset } => {
                // A download's name is a GUID the browser made: nothing else is read.
                let not_ours = || {
                    Error::InvalidArgument(format!(
                        "`{saved_as}` is not a download of this session"
                    ))
                };
                if saved_as.is_empty()
                    || !saved_as
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-')
                {
                    return Err(not_ours());
                }
                let path = self.spool("downloads")?.join(&saved_as);
                let mut file = std::fs::File::open(&path).map_err(|_| not_ours())?;
                let total = file.metadata().map_err(|_| not_ours())?.len();
                let mut data = Vec::new();
                std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(offset))
                    .and_then(|_| {
                        std::io::Read::read_to_end(
                            &mut std::io::Read::take(&mut file, crate::proto::CHUNK as u64),
                            &mut data,
                        )
                    })
                    .map_err(|_| not_ours())?;
                if offset + data.len() as u64 >= total {
                    let _ = std::fs::remove_file(&path);
                }
                Reply::Piece { data, total }
            }
            Call::Cookies(hosts) => {
                if hosts.is_empty() {
                    return Err(Error::InvalidArgument(
                        "name the hosts whose cookies to read".to_owned(),
                    ));
                }
                let cookies: Vec<_> = s
                    .cookies()
                    .await?
                    .into_iter()
                    .filter(|c| bound(&hosts, &c.domain))
                    .collect();
                // Values leave the worker only here: said in its log, never what.
                tracing::info!(
                    cookies = cookies.len(),
                    hosts = hosts.len(),
                    "handed a session's cookies to its control plane"
                );
                Reply::Cookies(cookies)
            }
            Call::Viewport => {
                let (width, height) = s.viewport();
                Reply::Viewport(width, height)
            }
            Call::SetPolicy(policy) => {
                self.set_policy(Arc::new(policy))?;
                Reply::Done
            }
            Call::Learn {
                name,
                value,
                origins,
            } => {
                let redactor = self
                    .known
                    .learn(&name, &value, &origins)
                    .map_err(|e| Error::InvalidArgument(e.to_string()))?;
                s.set_redactor(redactor).await;
                s.guard_requests(self.known.guard()).await;
                Reply::Done
            }
            Call::AllowSockets(origins) => {
                self.known.allow_sockets(&origins);
                Reply::Done
            }
            Call::ForeignSockets => {
                let allowed = self.known.guard().socket_origins();
                Reply::Sockets(
                    s.open_sockets()
                        .into_iter()
                        .filter(|url| {
                            url::Url::parse(url)
                                .map(|u| !allowed.contains(&u.origin().ascii_serialization()))
                                .unwrap_or(true)
                        })
                        .collect(),
                )
            }
            Call::TakeBlocked => {
                let mut blocked = self.proxy.take_unreported();
                let carried = s.take_refused_requests();
                if carried > 0 {
                    *blocked.entry(DenyReason::CarriedSecret).or_default() += carried;
                }
                let effects = s.take_refused_effects();
                if effects > 0 {
                    *blocked.entry(DenyReason::EffectRule).or_default() += effects;
                }
                Reply::Blocked(blocked)
            }
            Call::HeldEffects => Reply::Held(s.take_held_effects()),
            Call::DecideEffects { ids, send } => Reply::Decided(s.decide_effects(&ids, send).await),
            Call::ProxyFailures(urls) => Reply::Failures(
                urls.iter()
                    .map(|u| {
                        let u = url::Url::parse(u).ok()?;
                        self.proxy
                            .failure_for(u.host_str()?, u.port_or_known_default()?)
                    })
                    .collect(),
            ),
            Call::Health => Reply::Health {
                alive: s.browser_alive(),
                usable: s.is_usable(),
            },
            Call::ReplaceLostTabs => Reply::Replaced(s.replace_lost_tabs().await?),
            Call::Watch(watch) => Reply::Watched(crate::watch::watch(s, watch).await?),
            Call::Unwatch => {
                s.stop_paints().await;
                Reply::Done
            }
        })
    }

    /// Holds the proxy and the navigation guard to `policy`: once, any policy, for a
    /// warm session handed out (it held [`Policy::deny_all`] till then); after that
    /// only a narrowing of the one it holds. Whoever holds a session can never widen
    /// what its pages reach (with secrets loaded, that is where they could go).
    pub fn set_policy(&self, policy: Arc<Policy>) -> Result<()> {
        let current = self.proxy.policy();
        if *current != Policy::deny_all() && !policy.narrows(&current) {
            tracing::warn!("refused a policy that would widen a session's reach");
            return Err(Error::InvalidArgument(
                "a session's policy can only be narrowed once it holds one".to_owned(),
            ));
        }
        self.proxy.set_policy(policy.clone());
        self.session.set_policy(policy);
        Ok(())
    }
}

// Whether a cookie of `domain` is one of `hosts`' (set by a host itself or for a
// parent domain of it).
fn bound(hosts: &[String], domain: &str) -> bool {
    let domain = domain.trim_start_matches('.').to_ascii_lowercase();
    !domain.is_empty()
        && hosts.iter().any(|h| {
            let h = h.to_ascii_lowercase();
            h == domain || h.ends_with(&format!(".{domain}"))
        })
}

// Whether `path` is a file staged in `uploads` (a session's): one directory down in
// it, named by plain components only, a regular file (never a link out).
fn staged(uploads: &std::path::Path, path: &std::path::Path) -> bool {
    path.parent().and_then(|p| p.parent()) == Some(uploads)
        && path.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::RootDir
            )
        })
        && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

// Lets Chromium's user pass through every directory from the spool `root` down to
// `dir` (0755: they sit inside Chromium's own directory, which no one else enters).
fn open_up(root: Option<&std::path::Path>, dir: &std::path::Path) -> std::io::Result<()> {
    let Some(root) = root else {
        return Ok(());
    };
    for d in dir.ancestors().take_while(|d| d.starts_with(root)) {
        let mode = std::fs::metadata(d)?.permissions().mode();
        if mode & 0o055 != 0o055 {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode | 0o755))?;
        }
    }
    Ok(())
}
