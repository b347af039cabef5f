//! One running Chromium: its process, its CDP connection, and the routing of every
//! page target it attaches to the session whose browser context the target is in
//! (so popups become tabs of their session).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use airlock_core::sync::lock;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::cdp::{Connection, Event};
use crate::error::{Error, Result};
use crate::launch::{self, ChromiumProcess, LaunchOptions};
use crate::options::BrowserOptions;

/// A page target Chromium attached to, on its way to the session that owns it.
#[derive(Debug)]
pub(crate) enum TargetNotice {
    /// A new page (created by us or opened by the page) waiting for set-up.
    Attached {
        session_id: String,
        target_id: String,
        opener_id: Option<String>,
        /// `page`, or `service_worker` / `shared_worker`.
        kind: String,
    },
    /// A page was closed or crashed away.
    Detached { session_id: String },
    /// `Browser.downloadWillBegin` or `Browser.downloadProgress`, of some context:
    /// sent to every session, each keeps what is its own.
    Download { method: String, params: Value },
}

/// One running Chromium and its CDP connection.
pub(crate) struct Chromium {
    pub(crate) conn: Connection,
    process: Mutex<Option<ChromiumProcess>>,
    pid: u32,
    cgroup: Option<PathBuf>,
    version: String,
    // browserContextId -> the owning session's notice channel.
    contexts: Mutex<HashMap<String, mpsc::UnboundedSender<TargetNotice>>>,
    // CDP session id of each attached page -> its browserContextId.
    page_sessions: Mutex<HashMap<String, String>>,
}

#[derive(Deserialize)]
struct Version {
    product: String,
}

impl Chromium {
    pub(crate) async fn launch(
        options: &BrowserOptions,
        proxy_server: Option<&str>,
    ) -> Result<Arc<Chromium>> {
        let launch_options = LaunchOptions {
            binary: options.binary.clone(),
            profile_parent: options.profile_parent.clone(),
            proxy_server: proxy_server.map(str::to_owned),
            memory_limit: options.memory_limit,
        };
        let (process, conn) = launch::launch(&launch_options).await?;
        let pid = process.pid();
        let cgroup = process.cgroup_dir().map(Path::to_owned);
        let version: Version = match conn
            .call_as(
                None,
                "Browser.getVersion",
                json!({}),
                options.launch_timeout,
            )
            .await
        {
            Ok(v) => v,
            Err(e) => {
                process.shutdown(Duration::from_millis(100)).await;
                return Err(Error::BrowserUnavailable {
                    reason: format!(
                        "`{}` started but did not answer over CDP: {e}",
                        options.binary.path.display()
                    ),
                });
            }
        };
        let events = conn.subscribe(None);
        let chromium = Arc::new(Chromium {
            conn: conn.clone(),
            process: Mutex::new(Some(process)),
            pid,
            cgroup,
            version: version.product,
            contexts: Mutex::new(HashMap::new()),
            page_sessions: Mutex::new(HashMap::new()),
        });
        tokio::spawn(route_targets(Arc::downgrade(&chromium), events));
        // Every page in every context attaches paused, so a popup is set up (dialogs,
        // downloads, viewport) before its first script runs; so does every service and
        // shared worker, so a session that inspects requests sees theirs too.
        conn.call(
            None,
            "Target.setAutoAttach",
            json!({
                "autoAttach": true,
                "waitForDebuggerOnStart": true,
                "flatten": true,
                "filter": [{ "type": "page" }, { "type": "service_worker" }, { "type": "shared_worker" }],
            }),
            options.launch_timeout,
        )
        .await?;
        tracing::info!(chromium.pid = pid, version = %chromium.version, "Chromium ready");
        Ok(chromium)
    }

    pub(crate) fn cgroup(&self) -> Option<&Path> {
        self.cgroup.as_deref()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    pub(crate) fn version(&self) -> &str {
        &self.version
    }

    pub(crate) fn is_alive(&self) -> bool {
        !self.conn.is_closed()
    }

    pub(crate) fn profile_dir(&self) -> Option<PathBuf> {
        lock(&self.process)
            .as_ref()
            .and_then(|p| p.profile_dir().map(PathBuf::from))
    }

    pub(crate) fn register_context(
        &self,
        context_id: &str,
        notices: mpsc::UnboundedSender<TargetNotice>,
    ) {
        lock(&self.contexts).insert(context_id.to_owned(), notices);
    }

    pub(crate) fn unregister_context(&self, context_id: &str) {
        lock(&self.contexts).remove(context_id);
        lock(&self.page_sessions).retain(|_, c| c != context_id);
    }

    /// Closes the pipe and tears the process down by PID; idempotent.
    pub(crate) async fn shutdown(&self) {
        let process = lock(&self.process).take();
        if let Some(process) = process {
            // Browser.close asks for an orderly exit; the pipe closing would too.
            let _ = self
                .conn
                .call(None, "Browser.close", json!({}), Duration::from_millis(500))
                .await;
            process.shutdown(Duration::from_secs(2)).await;
            tracing::debug!(chromium.pid = self.pid, "Chromium stopped");
        }
    }
}

async fn route_targets(chromium: Weak<Chromium>, mut events: mpsc::UnboundedReceiver<Event>) {
    while let Some(event) = events.recv().await {
        let Some(chromium) = chromium.upgrade() else {
            return;
        };
        match event.method.as_str() {
            "Target.attachedToTarget" => {
                let p = &event.params;
                let session_id = p["sessionId"].as_str().unwrap_or_default().to_owned();
                let info = &p["targetInfo"];
                let context = info["browserContextId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let notice = TargetNotice::Attached {
                    session_id: session_id.clone(),
                    target_id: info["targetId"].as_str().unwrap_or_default().to_owned(),
                    opener_id: info["openerId"].as_str().map(str::to_owned),
                    kind: info["type"].as_str().unwrap_or("page").to_owned(),
                };
                let sender = lock(&chromium.contexts).get(&context).cloned();
                let delivered = sender.is_some_and(|tx| tx.send(notice).is_ok());
                if delivered {
                    lock(&chromium.page_sessions).insert(session_id, context);
                } else {
                    // A page of no live session (a context being closed): let it run
                    // so it does not hold Chromium up; its context is disposed anyway.
                    let conn = chromium.conn.clone();
                    tokio::spawn(async move {
                        let _ = conn.resume(&session_id, Duration::from_secs(2)).await;
                    });
                }
            }
            "Target.detachedFromTarget" => {
                let Some(session_id) = event.params["sessionId"].as_str() else {
                    continue;
                };
                chromium.conn.forget_session(session_id);
                let context = lock(&chromium.page_sessions).remove(session_id);
                if let Some(context) = context {
                    let sender = lock(&chromium.contexts).get(&context).cloned();
                    if let Some(tx) = sender {
                        let _ = tx.send(TargetNotice::Detached {
                            session_id: session_id.to_owned(),
                        });
                    }
                }
            }
            "Browser.downloadWillBegin" | "Browser.downloadProgress" => {
                let senders: Vec<_> = lock(&chromium.contexts).values().cloned().collect();
                for tx in senders {
                    let _ = tx.send(TargetNotice::Download {
                        method: event.method.clone(),
                        params: event.params.clone(),
                    });
                }
            }
            _ => {}
        }
    }
}
