//! A tab's event pump: what Chromium tells about the page (lifecycle, navigations,
//! dialogs, crashes, frames, console messages, requests, screencast frames) kept
//! in its `TabState`, and the navigation guard applied as pages move by themselves.

use super::*;

/// Longest dialog message kept for the report.
const MAX_DIALOG_TEXT: usize = 200;
/// Dialogs reported one by one in an outcome; the rest are counted.
const MAX_DIALOG_LINES: usize = 10;
/// A page opening this many dialogs within `DIALOG_STORM_WINDOW` has its tab closed
/// (the session opens a blank one in its place): it would otherwise keep every call
/// waiting behind its dialogs.
const DIALOG_STORM: usize = 30;
const DIALOG_STORM_WINDOW: Duration = Duration::from_secs(3);
/// Dialogs held for an answer between two actions on the page; past them, the next
/// ones are dismissed at once: a page that answers every answer with a new dialog
/// cannot hold the agent for ever (and meets `DIALOG_STORM`).
const DIALOG_CHAIN: u32 = 3;
/// Longest URL quoted in a notice.
const MAX_NOTICE_URL: usize = 120;

// Applies the tab's CDP events to its state. Ends when the session's events end
// (the tab detached or the browser died).
// Applies the session's navigation guard to a top-frame navigation to `url`, requested
// (`committed` false) or done. Acts off the event pump: the CDP calls it makes would
// otherwise wait on events this pump has yet to read.
fn guard_navigation(
    conn: &Connection,
    session: &str,
    state: &TabState,
    url: &str,
    committed: bool,
) {
    let guard = &state.guard;
    let Some(policy) = guard.policy() else {
        return;
    };
    if url.is_empty() || url == "about:blank" {
        return;
    }
    let decision = policy.check_url(url).decision;
    let shown = ellipsize(&guard.redactor.redact(url), MAX_NOTICE_URL);
    // Only a popup's first real URL is judged as a popup; `with` wakes waiters, so it
    // runs only for that one navigation.
    let popup =
        state.read(|s| s.popup_unjudged) && state.with(|s| std::mem::take(&mut s.popup_unjudged));
    let Decision::Deny { reason, detail } = decision else {
        return;
    };
    // The detail of an unparsable URL quotes a cut of it, which the redactor may no
    // longer recognise; the category says enough.
    let detail = if reason == DenyReason::InvalidUrl {
        reason.label().to_owned()
    } else {
        guard.redactor.redact(&detail).into_owned()
    };
    let conn = conn.clone();
    let session = session.to_owned();
    if popup {
        // A popup to a denied URL is closed, whatever the reason (the proxy would
        // only have refused it; the agent need not see a tab of refusals).
        guard.notify(Notice::PopupDenied {
            url: shown,
            reason: detail,
        });
        let target = state.target_id.clone();
        state.with(|s| s.closing = true);
        tokio::spawn(async move {
            let _ = conn.close_target(&target, Duration::from_secs(5)).await;
        });
        return;
    }
    // Network URLs the proxy judges (and answers with its refusal page); Chromium's
    // own error pages are not navigations to stop.
    if reason != DenyReason::Scheme || url.starts_with("chrome-error:") {
        return;
    }
    let (method, params) = if committed {
        ("Page.navigate", json!({ "url": "about:blank" }))
    } else {
        ("Page.stopLoading", json!({}))
    };
    guard.notify(Notice::NavigationStopped {
        url: shown,
        reason: detail,
        committed,
    });
    tokio::spawn(async move {
        let _ = conn
            .call(Some(&session), method, params, Duration::from_secs(5))
            .await;
    });
}

// A subframe that committed a `data:` document: its scripts were stopped at document
// start (`NO_DATA_FRAMES`); it is also emptied (sent to `about:blank`) and the agent
// told, as for a page that went to `data:` itself.
fn refuse_data_frame(conn: &Connection, session: &str, state: &TabState, frame: &str, url: &str) {
    if !url
        .get(..5)
        .is_some_and(|s| s.eq_ignore_ascii_case("data:"))
    {
        return;
    }
    let shown = ellipsize(&state.guard.redactor.redact(url), MAX_NOTICE_URL);
    state.guard.notify(Notice::FrameStopped {
        url: shown,
        reason: "a frame may not load a data: URL".to_owned(),
    });
    let (conn, session, frame) = (conn.clone(), session.to_owned(), frame.to_owned());
    tokio::spawn(async move {
        let _ = conn
            .call(
                Some(&session),
                "Page.navigate",
                json!({ "url": "about:blank", "frameId": frame }),
                Duration::from_secs(5),
            )
            .await;
    });
}

// One console argument as text: a primitive's value, else how DevTools describes it.
fn console_arg(arg: &Value) -> String {
    match arg.get("value") {
        Some(Value::String(s)) => s.clone(),
        // Present, even `null`: a primitive.
        Some(other) => other.to_string(),
        None => arg["description"]
            .as_str()
            .or_else(|| arg["unserializableValue"].as_str())
            .or_else(|| arg["type"].as_str())
            .unwrap_or_default()
            .to_owned(),
    }
}

pub(super) async fn pump(
    conn: Connection,
    session: String,
    state: Arc<TabState>,
    mut events: mpsc::UnboundedReceiver<Event>,
) {
    while let Some(event) = events.recv().await {
        handle_event(&conn, &session, &state, event).await;
    }
    state.with(|s| {
        if conn.is_closed() {
            s.crashed = true;
        } else {
            s.detached = true;
        }
    });
}

type BoxFuture<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;

// Boxed with an explicit `Send` because it recurses through `watch_child`.
fn handle_event<'a>(
    conn: &'a Connection,
    session: &'a str,
    state: &'a Arc<TabState>,
    event: Event,
) -> BoxFuture<'a> {
    Box::pin(async move { handle_event_inner(conn, session, state, event).await })
}

async fn handle_event_inner(conn: &Connection, session: &str, state: &Arc<TabState>, event: Event) {
    let p = &event.params;
    let str_of = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    match event.method.as_str() {
        "Runtime.consoleAPICalled" => {
            use crate::action::ConsoleLevel;
            let level = match p["type"].as_str().unwrap_or_default() {
                "debug" => ConsoleLevel::Debug,
                "warning" => ConsoleLevel::Warning,
                "error" | "assert" => ConsoleLevel::Error,
                _ => ConsoleLevel::Info,
            };
            let text = p["args"]
                .as_array()
                .map(|args| args.iter().map(console_arg).collect::<Vec<_>>().join(" "))
                .unwrap_or_default();
            state.log(level, &text);
        }
        "Runtime.exceptionThrown" => {
            let details = &p["exceptionDetails"];
            let text = details["exception"]["description"]
                .as_str()
                .or_else(|| details["text"].as_str())
                .unwrap_or("uncaught exception");
            state.log(crate::action::ConsoleLevel::Error, text);
        }
        "Page.lifecycleEvent" => {
            let frame = str_of(&p["frameId"]);
            let loader = str_of(&p["loaderId"]);
            let name = str_of(&p["name"]);
            state.with(|s| {
                if frame != s.main_frame {
                    return;
                }
                if name == "init" {
                    s.loader_id = loader;
                    s.lifecycle.clear();
                } else if loader != s.loader_id {
                    return; // A late event of an older document.
                }
                s.lifecycle.insert(name);
            });
        }
        "Page.frameNavigated" => {
            let frame = &p["frame"];
            let id = str_of(&frame["id"]);
            let is_main = frame.get("parentId").is_none();
            let url = str_of(&frame["url"]);
            let loader = str_of(&frame["loaderId"]);
            if is_main {
                guard_navigation(conn, session, state, &url, true);
            } else {
                refuse_data_frame(conn, session, state, &id, &url);
            }
            state.with(|s| {
                s.worlds.retain(|(_, f), _| f != &id);
                if is_main {
                    s.main_frame = id.clone();
                    s.url = url;
                    s.navigations += 1;
                    // What the old page logged stays readable (`all`), apart.
                    s.console_before = s.console.len();
                    s.uncommitted = false;
                    // What the old page showed (its secrets among it) is no use now.
                    s.leaving = None;
                    if loader != s.loader_id {
                        s.loader_id = loader;
                        s.lifecycle.clear();
                    }
                }
            });
        }
        "Page.navigatedWithinDocument" => {
            let id = str_of(&p["frameId"]);
            let url = str_of(&p["url"]);
            state.with(|s| {
                if id == s.main_frame {
                    s.url = url;
                    s.navigations += 1;
                }
            });
        }
        "Page.frameRequestedNavigation" | "Page.frameStartedNavigating" => {
            let id = str_of(&p["frameId"]);
            if state.read(|s| s.main_frame == id) {
                guard_navigation(conn, session, state, &str_of(&p["url"]), false);
            }
            state.with(|s| {
                if id == s.main_frame {
                    s.nav_requests += 1;
                    s.loading = true;
                    s.uncommitted = true;
                }
            });
        }
        "Page.frameStartedLoading" => {
            let id = str_of(&p["frameId"]);
            state.with(|s| {
                if id == s.main_frame {
                    s.loading = true;
                }
            });
        }
        "Page.frameStoppedLoading" => {
            let id = str_of(&p["frameId"]);
            state.with(|s| {
                if id == s.main_frame {
                    s.loading = false;
                    s.uncommitted = false;
                }
            });
        }
        "Page.frameDetached" => {
            let id = str_of(&p["frameId"]);
            state.with(|s| s.worlds.retain(|(_, f), _| f != &id));
        }
        "Fetch.requestPaused" => {
            let target = Some(state.target_id.as_str());
            let paused = state
                .requests
                .on_paused(conn, session, &state.guard, p, target);
            state.on_pause(p, paused);
        }
        "Network.requestWillBeSent"
        | "Network.responseReceived"
        | "Network.loadingFailed"
        | "Network.loadingFinished" => {
            state.on_network(&event.method, p);
        }
        "Audits.issueAdded" => state.on_issue(p),
        "Runtime.bindingCalled" if p["name"].as_str() == Some(crate::tab::LEAVING_BINDING) => {
            // Only from Airlock's world of the main frame (the binding exists in no
            // other; the check keeps it so).
            let context = p["executionContextId"].as_i64();
            let payload = str_of(&p["payload"]);
            state.with(|s| {
                let ours = s
                    .worlds
                    .get(&(session.to_owned(), s.main_frame.clone()))
                    .copied();
                if ours.is_some() && ours == context && payload.len() <= crate::tab::MAX_LEAVING {
                    s.leaving = Some((s.navigations, payload.into()));
                }
            });
        }
        // A popup is on its way (a target=_blank link, window.open, a form): the
        // action that caused it waits for it to arrive, so its result can say so.
        "Page.windowOpen" => {
            state
                .guard
                .windows_opened
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        }
        "Network.webSocketCreated" => {
            let (id, url) = (str_of(&p["requestId"]), str_of(&p["url"]));
            state.with(|s| {
                if s.sockets.len() < 256 {
                    s.sockets.insert(id, url);
                }
            });
        }
        "Network.webSocketClosed" => {
            let id = str_of(&p["requestId"]);
            state.with(|s| s.sockets.remove(&id));
        }
        "Page.javascriptDialogOpening" => {
            on_dialog(conn, session, state, p).await;
        }
        "Page.fileChooserOpened" => {
            let node = p["backendNodeId"].clone();
            let multiple = p["mode"].as_str() == Some("selectMultiple");
            state.with(|s| s.file_chooser = Some((node, multiple)));
        }
        "Input.dragIntercepted" => {
            let data = p["data"].clone();
            state.with(|s| s.drag = Some(data));
        }
        "Page.javascriptDialogClosed" => {
            let accepted = p["result"].as_bool().unwrap_or(false);
            state.with(|s| {
                if let Some(open) = s.dialog.take() {
                    // Answered by the page's own going (a navigation) or by the agent:
                    // the report says how it ended.
                    for d in s.dialogs.iter_mut().rev() {
                        if d.answer == DialogAnswer::Open && d.kind == open.kind {
                            d.answer = if accepted {
                                DialogAnswer::Accepted
                            } else {
                                DialogAnswer::Dismissed
                            };
                            break;
                        }
                    }
                }
            });
        }
        "Inspector.targetCrashed" => {
            state.with(|s| s.crashed = true);
            state
                .guard
                .events
                .push(PageEvent::TabCrashed { tab: state.serial });
        }
        "Page.screencastFrame" => {
            // Acknowledged off the pump (Chromium sends the next frame only then);
            // only that it came counts.
            state.painted.send_modify(|n| *n += 1);
            let (conn, session) = (conn.clone(), session.to_owned());
            let ack = json!({ "sessionId": p["sessionId"] });
            tokio::spawn(async move {
                let _ = conn
                    .call(
                        Some(&session),
                        "Page.screencastFrameAck",
                        ack,
                        Duration::from_secs(5),
                    )
                    .await;
            });
        }
        "Inspector.detached" => {
            state.with(|s| s.detached = true);
        }
        "Target.attachedToTarget" => {
            // An out-of-process iframe: its frame id equals its target id.
            let child = str_of(&p["sessionId"]);
            let info = &p["targetInfo"];
            let conn = conn.clone();
            if info["type"].as_str() == Some("iframe") {
                let frame_id = str_of(&info["targetId"]);
                state.with(|s| s.frame_sessions.insert(frame_id, child.clone()));
                let state = state.clone();
                tokio::spawn(async move { watch_child(conn, child, state).await });
            } else if state.requests.pauses_all() {
                // A worker, waiting for its requests to be paused.
                let (requests, notices) = (state.requests.clone(), state.guard.clone());
                tokio::spawn(watch_worker(conn, child, requests, notices));
            } else {
                // Running unwatched; watched if the session starts inspecting.
                state.requests.unwatched_worker(child);
            }
        }
        "Target.detachedFromTarget" => {
            let child = str_of(&p["sessionId"]);
            conn.forget_session(&child);
            state.with(|s| {
                s.frame_sessions.retain(|_, v| v != &child);
                s.worlds.retain(|(sess, _), _| sess != &child);
            });
        }
        _ => {}
    }
}

// A dialog the page opened: held open for the agent to answer (`handle_dialog`),
// answered by Airlock once its hold runs out; dismissed at once when it only
// continues a chain of dialogs, and the tab closed when they come without end.
async fn on_dialog(conn: &Connection, session: &str, state: &Arc<TabState>, p: &Value) {
    let str_of = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let kind = str_of(&p["type"]);
    // Redacted whole, then cut: a cut first could leave a piece of a secret the
    // redactor no longer recognises.
    let message = ellipsize(
        &state.redactor.redact(&str_of(&p["message"])),
        MAX_DIALOG_TEXT,
    );
    let url = str_of(&p["url"]);
    let shown = message.clone();
    let now = tokio::time::Instant::now();
    let (storm, held) = state.with(|s| {
        s.dialog_chain += 1;
        let held = s.dialog_chain <= DIALOG_CHAIN;
        s.dialog_seq += 1;
        let answer = if held {
            s.dialog = Some(OpenDialog {
                id: s.dialog_seq,
                kind: kind.clone(),
                message: message.clone(),
                url,
            });
            DialogAnswer::Open
        } else {
            DialogAnswer::Dismissed
        };
        if s.dialogs.len() < MAX_DIALOG_LINES {
            s.dialogs.push(Dialog {
                kind: kind.clone(),
                message,
                answer,
            });
        } else {
            s.dialogs_unlisted += 1;
        }
        s.dialog_times.push_back(now);
        while s
            .dialog_times
            .front()
            .is_some_and(|t| now.duration_since(*t) > DIALOG_STORM_WINDOW)
        {
            s.dialog_times.pop_front();
        }
        let storm = s.dialog_times.len() >= DIALOG_STORM;
        if storm {
            s.dialog_times.clear();
        }
        (storm, held.then_some(s.dialog_seq))
    });
    state.guard.events.push(PageEvent::DialogOpened {
        tab: state.serial,
        kind: kind.clone(),
        message: shown,
    });
    match held {
        Some(id) => {
            let (conn, session, state) = (conn.clone(), session.to_owned(), state.clone());
            tokio::spawn(async move {
                tokio::time::sleep(state.dialog_hold).await;
                expire_dialog(&conn, &session, &state, id).await;
            });
        }
        None => {
            let _ = conn
                .call(
                    Some(session),
                    "Page.handleJavaScriptDialog",
                    json!({ "accept": false }),
                    Duration::from_secs(5),
                )
                .await;
        }
    }
    if storm {
        // Off the pump: stopping the page waits on events this pump reads.
        state.guard.notify(Notice::DialogStorm {
            dialogs: DIALOG_STORM,
            within_secs: DIALOG_STORM_WINDOW.as_secs(),
        });
        let conn = conn.clone();
        let target = state.target_id.clone();
        state.with(|s| s.closing = true);
        tokio::spawn(async move {
            // Closed, not stopped: a script stopped between two dialogs opens the
            // next one before a navigation can commit.
            let _ = conn.close_target(&target, Duration::from_secs(5)).await;
        });
    }
}

// Answers dialog `id` if it is still open when its hold runs out: leaving a page is
// what the agent asked for, so beforeunload is accepted; every other dialog is
// dismissed (confirm → false, prompt → null).
async fn expire_dialog(conn: &Connection, session: &str, state: &TabState, id: u64) {
    let Some(kind) = state.read(|s| {
        s.dialog
            .as_ref()
            .filter(|d| d.id == id)
            .map(|d| d.kind.clone())
    }) else {
        return;
    };
    let accept = kind == "beforeunload";
    let answer = DialogAnswer::TimedOut { accepted: accept };
    state.with(|s| {
        // Its opening not reported yet: reported as timed out instead. Reported
        // already: the next outcome says how it ended.
        match s
            .dialogs
            .iter_mut()
            .rev()
            .find(|d| d.answer == DialogAnswer::Open)
        {
            Some(d) => d.answer = answer,
            None => {
                if let Some(open) = &s.dialog
                    && s.dialogs.len() < MAX_DIALOG_LINES
                {
                    let entry = Dialog {
                        kind: open.kind.clone(),
                        message: open.message.clone(),
                        answer,
                    };
                    s.dialogs.push(entry);
                }
            }
        }
    });
    let _ = conn
        .call(
            Some(session),
            "Page.handleJavaScriptDialog",
            json!({ "accept": accept }),
            Duration::from_secs(5),
        )
        .await;
}

// Lets an out-of-process frame run (its requests paused first, when they are
// inspected) and watches it for nested out-of-process frames and workers.
async fn watch_child(conn: Connection, child: String, state: Arc<TabState>) {
    let mut events = conn.subscribe(Some(&child));
    let timeout = Duration::from_secs(5);
    let inspects = state.requests.pauses_all();
    let _ = conn
        .call(
            Some(&child),
            "Target.setAutoAttach",
            json!({ "autoAttach": true, "waitForDebuggerOnStart": inspects, "flatten": true }),
            timeout,
        )
        .await;
    let _ = conn
        .call(Some(&child), "Network.enable", json!({}), timeout)
        .await;
    let _ = conn
        .call(
            Some(&child),
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": NO_DATA_FRAMES, "worldName": WORLD_NAME }),
            timeout,
        )
        .await;
    if let Some(patterns) = state.requests.patterns() {
        let _ = conn
            .call(
                Some(&child),
                "Fetch.enable",
                json!({ "patterns": patterns }),
                timeout,
            )
            .await;
    }
    if state.requests.inspects_all() {
        for (method, params) in inspecting() {
            let _ = conn.call(Some(&child), method, params, timeout).await;
        }
    } else if inspects {
        for (method, params) in crate::tab::judging() {
            let _ = conn.call(Some(&child), method, params, timeout).await;
        }
    }
    if state.requests.inspects_all() {
        let _ = conn
            .call(
                Some(&child),
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": state.requests.socket_policy_script(), "worldName": WORLD_NAME }),
                timeout,
            )
            .await;
    }
    let _ = conn.resume(&child, timeout).await;
    while let Some(event) = events.recv().await {
        match event.method.as_str() {
            "Target.attachedToTarget" | "Target.detachedFromTarget" => {
                handle_event(&conn, &child, &state, event).await;
            }
            "Fetch.requestPaused" => {
                let p = &event.params;
                let target = Some(state.target_id.as_str());
                let paused = state
                    .requests
                    .on_paused(&conn, &child, &state.guard, p, target);
                state.on_pause(p, paused);
            }
            "Network.requestWillBeSent"
            | "Network.responseReceived"
            | "Network.loadingFailed"
            | "Network.loadingFinished" => {
                state.on_network(&event.method, &event.params);
            }
            "Audits.issueAdded" => state.on_issue(&event.params),
            "Page.frameNavigated" | "Page.frameDetached" => {
                let id = event.params["frame"]["id"]
                    .as_str()
                    .or_else(|| event.params["frameId"].as_str())
                    .unwrap_or_default()
                    .to_owned();
                state.with(|s| s.worlds.retain(|(_, f), _| f != &id));
            }
            _ => {}
        }
    }
}
