//! How a session learns of its tabs: every page target of its context Chromium
//! attaches (the agent's, popups, past the tab cap refused), workers, detaches, and
//! the download events that belong to its frames.

use super::*;

pub(super) async fn attach_tabs(
    chromium: Arc<Chromium>,
    registry: Arc<Mutex<Registry>>,
    changed: watch::Sender<u64>,
    mut notices: mpsc::UnboundedReceiver<TargetNotice>,
    downloads: Arc<Mutex<Option<Arc<crate::download::Downloads>>>>,
    options: Arc<BrowserOptions>,
    hooks: Hooks,
) {
    while let Some(notice) = notices.recv().await {
        match notice {
            TargetNotice::Download { method, params } => {
                let Some(downloads) = lock(&downloads).clone() else {
                    continue;
                };
                if method == "Browser.downloadWillBegin" {
                    // Ours when it began in a frame of one of our tabs.
                    let frame = params["frameId"].as_str().unwrap_or_default();
                    let ours = lock(&registry).tabs.iter().any(|t| {
                        t.target_id == frame
                            || t.state.read(|s| {
                                s.main_frame == frame
                                    || s.frames.iter().any(|f| f.frame_id == frame)
                            })
                    });
                    if ours {
                        // Redacted whole, then cut.
                        let name = hooks
                            .redactor
                            .redact(params["suggestedFilename"].as_str().unwrap_or("download"));
                        downloads.begin(&params, ellipsize(&name, 120));
                    }
                } else {
                    downloads.progress(&chromium.conn, &hooks.guard, &params);
                }
            }
            TargetNotice::Attached {
                session_id,
                target_id,
                opener_id,
                kind,
            } => {
                if kind != "page" {
                    // A service or shared worker of this context: its requests are
                    // paused like the pages' when they are inspected.
                    let conn = chromium.conn.clone();
                    let (requests, notices) = (hooks.requests.clone(), hooks.guard.clone());
                    if requests.pauses_all() {
                        tokio::spawn(watch_worker(conn, session_id, requests, notices));
                    } else {
                        requests.unwatched_worker(session_id.clone());
                        tokio::spawn(async move {
                            let _ = conn.resume(&session_id, Duration::from_secs(5)).await;
                        });
                    }
                    continue;
                }
                // A page may not open tabs without end: past the cap, popups are closed.
                let full = lock(&registry).tabs.len() >= MAX_TABS;
                if full && opener_id.is_some() {
                    // Off this task: a paused popup must be let run before it can
                    // close, and the opener's window.open waits on all of this.
                    let conn = chromium.conn.clone();
                    let timeout = options.action_timeout;
                    tokio::spawn(async move {
                        let _ = conn.resume(&session_id, timeout).await;
                        let _ = conn.close_target(&target_id, timeout).await;
                    });
                    {
                        let mut r = lock(&registry);
                        r.refused_popups += 1;
                        r.popups_arrived += 1;
                    }
                    changed.send_modify(|v| *v += 1);
                    continue;
                }
                let (screen, serial) = {
                    let mut r = lock(&registry);
                    r.next_serial += 1;
                    (r.screen.clone(), r.next_serial - 1)
                };
                let tab = Tab::setup(
                    chromium.conn.clone(),
                    session_id,
                    serial,
                    target_id.clone(),
                    opener_id.clone(),
                    hooks.clone(),
                    screen,
                    options.action_timeout,
                )
                .await;
                match tab {
                    Ok(tab) => {
                        hooks
                            .guard
                            .events
                            .push(crate::events::PageEvent::TabOpened {
                                tab: serial,
                                by_page: opener_id.is_some(),
                            });
                        let mut r = lock(&registry);
                        r.tabs.push(Arc::new(tab));
                        if opener_id.is_some() {
                            r.unreported.push(target_id);
                            r.popups_arrived += 1;
                        }
                    }
                    Err(error) => {
                        if opener_id.is_some() {
                            lock(&registry).popups_arrived += 1;
                        }
                        tracing::warn!(%error, "could not set up a new tab");
                    }
                }
                changed.send_modify(|v| *v += 1);
            }
            TargetNotice::Detached { session_id } => {
                {
                    let mut r = lock(&registry);
                    if let Some(i) = r.tabs.iter().position(|t| t.cdp_session == session_id) {
                        // Not closed by Airlock: the page closed itself
                        // (`window.close()`), and the next outcome says so.
                        let (closing, url) = r.tabs[i].state.read(|s| (s.closing, s.url.clone()));
                        if !closing {
                            let url = ellipsize(&hooks.redactor.redact(&url), 120);
                            hooks
                                .guard
                                .notify(Notice::TabClosedByPage { index: i, url });
                        }
                        r.tabs[i].state.with(|s| s.detached = true);
                        r.tabs.remove(i);
                        if r.active >= r.tabs.len() || r.active > i {
                            r.active = r.active.saturating_sub(1);
                        }
                    }
                }
                changed.send_modify(|v| *v += 1);
            }
        }
    }
}
