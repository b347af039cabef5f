//! One tab: its CDP session, the state its event pump keeps current (lifecycle,
//! navigations, dialogs, crash, out-of-process frames) and evaluation of the walker in
//! an isolated world per frame.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_core::Redact;
use airlock_core::text::ellipsize;
use airlock_policy::{Decision, DenyReason};
use airlock_snapshot::Line;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::action::{Dialog, DialogAnswer, Injection, Notice};
use crate::cdp::{CdpError, Connection, Event};
use crate::error::{Error, Result};
use crate::events::PageEvent;
use crate::guard::NavGuard;
use crate::outbound::{Requests, watch_worker};

mod closed;
mod events;
mod screen;
mod state;

use events::pump;
pub(crate) use screen::Screen;
pub(crate) use state::TabState;
pub use state::{CONSOLE_KEPT, NETWORK_KEPT};

/// The walker, installed once per isolated world.
const WALKER: &str = include_str!("walker.js");
/// Name of Airlock's isolated world; page scripts run in the main world and cannot
/// reach objects in this one.
const WORLD_NAME: &str = "__airlock_world";
/// The binding walker.js reports a leaving page through (see `leaving`).
pub(crate) const LEAVING_BINDING: &str = "__airlockLeaving";
/// The largest report of a leaving page kept (a larger one is dropped: no image).
pub(crate) const MAX_LEAVING: usize = 8 << 20;
/// Records inputs that stop being `type=password` (see walker.js `wasPassword`).
const WAS_PASSWORD: &str = "(() => { if (globalThis.__airlockWasPassword) return; \
    const seen = new WeakSet(); globalThis.__airlockWasPassword = seen; \
    new MutationObserver((records) => { for (const r of records) { \
      if (r.oldValue && r.oldValue.toLowerCase() === 'password') seen.add(r.target); } }) \
    .observe(document, { subtree: true, attributes: true, attributeFilter: ['type'], attributeOldValue: true }); })();";
/// Stops a `data:` frame's document before any of its scripts runs or anything it
/// names loads: a `data:` frame is refused as a `data:` page is. At document start, in
/// Airlock's world (the page cannot see or undo it), `window.stop()` aborts the parser.
const NO_DATA_FRAMES: &str =
    "if (location.protocol === 'data:' && window !== window.top) { window.stop(); }";
/// What a tab or frame of an inspecting session also turns on: CSP issues (a refused
/// WebSocket is one), and no service worker between its requests and the network (a
/// worker could serve documents without the socket policy, or answer requests the
/// guard never saw).
pub(crate) fn inspecting() -> [(&'static str, Value); 2] {
    [
        ("Audits.enable", json!({})),
        ("Network.setBypassServiceWorker", json!({ "bypass": true })),
    ]
}

/// What a tab or frame of a session whose requests only effect rules judge turns on:
/// no service worker between its requests and the network (one could answer a
/// request the rules never saw). CSP issues matter only to the secrets' socket policy.
pub(crate) fn judging() -> [(&'static str, Value); 1] {
    [("Network.setBypassServiceWorker", json!({ "bypass": true }))]
}

/// What a session adds to each of its tabs.
#[derive(Clone)]
pub(crate) struct Hooks {
    pub(crate) guard: NavGuard,
    pub(crate) injection: Option<Arc<Injection>>,
    /// How the tab's requests (and its frames' and workers') are paused and judged.
    pub(crate) requests: Requests,
    /// The session's redactor: dialog texts and notices pass it before they are cut.
    pub(crate) redactor: Arc<dyn Redact>,
}

/// A frame known to the tab, numbered in the order first seen (0 is the top frame).
#[derive(Debug, Clone)]
pub(crate) struct FrameEntry {
    pub(crate) frame_id: String,
    /// Frame number and owner ref of the `<iframe>` holding this frame.
    pub(crate) owner: Option<(u32, u64)>,
    /// Next ref number to hand out in this frame; never goes down, so a ref from an
    /// older document cannot name a node of a newer one.
    pub(crate) next_ref: u64,
    /// CDP session of the frame's embedder; an in-process child of an out-of-process
    /// frame lives in that frame's session, not the tab's.
    pub(crate) parent_session: Option<String>,
}

/// What the event pump keeps current.
#[derive(Default)]
pub(crate) struct TabInner {
    pub(crate) main_frame: String,
    pub(crate) loader_id: String,
    pub(crate) lifecycle: HashSet<String>,
    pub(crate) url: String,
    /// Main-frame navigations requested or started (link clicks, form posts, scripts).
    pub(crate) nav_requests: u64,
    /// Main-frame navigations committed, cross- or same-document.
    pub(crate) navigations: u64,
    pub(crate) loading: bool,
    /// What the main frame's page showed as it last began to leave (walker.js
    /// `leaving`), with the count of navigations committed when it did.
    pub(crate) leaving: Option<(u64, Arc<str>)>,
    /// A main-frame navigation started and has neither committed nor stopped:
    /// Chromium answers no command for the frame meanwhile.
    pub(crate) uncommitted: bool,
    /// Requests of the tab an effect rule held so far (an action's settle stops
    /// waiting when one is).
    pub(crate) effects_held: u64,
    /// Navigation requests of the tab an effect rule holds now: the page's scripts
    /// are not run meanwhile (Chromium does not answer until it is decided).
    pub(crate) navigations_held: u32,
    pub(crate) dialogs: Vec<Dialog>,
    /// Dialogs dismissed beyond `MAX_DIALOG_LINES`, not yet reported.
    pub(crate) dialogs_unlisted: u64,
    /// When the most recent dialogs opened (for `DIALOG_STORM`).
    pub(crate) dialog_times: std::collections::VecDeque<tokio::time::Instant>,
    /// The dialog holding the page until it is answered (or its hold runs out).
    pub(crate) dialog: Option<OpenDialog>,
    /// Numbers dialogs, so a hold's expiry answers only its own.
    pub(crate) dialog_seq: u64,
    /// Dialogs opened since the last action on the page began (answers aside).
    pub(crate) dialog_chain: u32,
    /// Data of an HTML5 drag the page started while drags are intercepted.
    pub(crate) drag: Option<Value>,
    /// A file chooser the page opened while choosers are intercepted: its input's
    /// backend node id and whether it takes several files.
    pub(crate) file_chooser: Option<(Value, bool)>,
    pub(crate) crashed: bool,
    pub(crate) detached: bool,
    /// (CDP session, frame id) -> isolated world context id.
    pub(crate) worlds: HashMap<(String, String), i64>,
    /// Out-of-process frame (target id == frame id) -> its CDP session.
    pub(crate) frame_sessions: HashMap<String, String>,
    /// WebSockets the tab's pages hold open: request id → URL (at most 256).
    pub(crate) sockets: HashMap<String, String>,
    /// Airlock is closing this tab (the agent asked, a storm, a refused popup): its
    /// going is not the page's doing.
    pub(crate) closing: bool,
    pub(crate) frames: Vec<FrameEntry>,
    pub(crate) last_snapshot: Option<Vec<Line>>,
    /// Why the current walk stopped early, if it did (any of its frames).
    pub(crate) walk_truncated: Option<String>,
    /// The number of the top frame's last whole walk, and of the walk
    /// `last_snapshot` was rendered from.
    pub(crate) walk_gen: Option<u64>,
    pub(crate) last_gen: Option<u64>,
    /// Whether the top frame's last whole walk found frames in the page.
    pub(crate) walk_framed: bool,
    /// The top frame's tree of walk N (a page without frames): a diff's walk sends
    /// only what it did not take whole from it.
    pub(crate) last_tree: Option<(u64, airlock_snapshot::Node)>,
    /// How many bytes the page sent for the last diff's walk.
    pub(crate) diff_walk_bytes: usize,
    /// A command to the renderer timed out: the next call first stops its scripts.
    pub(crate) unresponsive: bool,
    /// A popup whose first real URL the guard has not judged yet.
    pub(crate) popup_unjudged: bool,
    /// What the page logged, redacted and cut, newest last (at most `CONSOLE_KEPT`).
    pub(crate) console: std::collections::VecDeque<crate::action::ConsoleEntry>,
    /// Messages let go of when the buffer was full.
    pub(crate) console_dropped: u64,
    /// How many of `console` (the oldest) came before the last main-frame navigation.
    pub(crate) console_before: usize,
}

/// A JavaScript dialog the page is blocked on.
#[derive(Debug, Clone)]
pub(crate) struct OpenDialog {
    pub(crate) id: u64,
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    pub(crate) kind: String,
    /// Its message, redacted and cut.
    pub(crate) message: String,
    /// URL of the frame that opened it (what a secret in a prompt answer is bound to).
    pub(crate) url: String,
}

/// Why a call to the renderer was given up.
pub(crate) enum Interruption {
    /// The tab crashed or went away.
    Lost,
    /// A dialog holds the page: nothing the renderer does goes on until it is answered.
    Dialog(String),
}

/// One page target of a session.
pub(crate) struct Tab {
    /// The tab's serial in its session (0 for the first, never reused): every ref
    /// the tab hands out carries it.
    pub(crate) serial: u32,
    pub(crate) target_id: String,
    pub(crate) cdp_session: String,
    pub(crate) opener: Option<String>,
    pub(crate) conn: Connection,
    pub(crate) state: Arc<TabState>,
    pump: JoinHandle<()>,
}

impl Drop for Tab {
    fn drop(&mut self) {
        self.pump.abort();
    }
}

#[derive(Deserialize)]
struct FrameTree {
    #[serde(rename = "frameTree")]
    frame_tree: FrameTreeNode,
}

#[derive(Deserialize)]
struct FrameTreeNode {
    frame: FrameInfo,
}

#[derive(Deserialize)]
struct FrameInfo {
    id: String,
    #[serde(rename = "loaderId", default)]
    loader_id: String,
    #[serde(default)]
    url: String,
}

impl Tab {
    /// Sets up a freshly attached (paused) page target, then lets it run.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn setup(
        conn: Connection,
        session: String,
        serial: u32,
        target_id: String,
        opener: Option<String>,
        hooks: Hooks,
        screen: Screen,
        timeout: Duration,
    ) -> Result<Tab> {
        let Hooks {
            guard,
            injection,
            requests,
            redactor,
        } = hooks;
        let events = conn.subscribe(Some(&session));
        let (changed, _) = watch::channel(0);
        let state = Arc::new(TabState {
            inner: Mutex::new(TabInner {
                popup_unjudged: opener.is_some(),
                ..TabInner::default()
            }),
            changed,
            serial,
            painted: watch::channel(0).0,
            requests_ended: watch::channel(0).0,
            casting: std::sync::atomic::AtomicBool::new(false),
            target_id: target_id.clone(),
            guard,
            requests,
            redactor,
            dialog_hold: timeout,
            network: Mutex::default(),
        });
        let pump = tokio::spawn(pump(conn.clone(), session.clone(), state.clone(), events));
        let tab = Tab {
            serial,
            target_id,
            cdp_session: session,
            opener,
            conn,
            state,
            pump,
        };
        // Every set-up command is sent at once, in order, and the target told to run
        // last: the commands take effect before its first script, and a popup opened
        // without an opener (a new renderer, paused) answers none of them until it
        // runs, so waiting for each reply in turn would wait for ever.
        let inspects = tab.state.requests.pauses_all();
        let mut commands: Vec<(&str, Value)> = vec![
            ("Page.enable", json!({})),
            ("Page.setLifecycleEventsEnabled", json!({ "enabled": true })),
            ("Inspector.enable", json!({})),
            // Console messages and uncaught exceptions (`browser_console_messages`).
            ("Runtime.enable", json!({})),
            // What the page requests (`browser_network_requests`).
            ("Network.enable", json!({})),
            // Keyboard focus and :focus styles behave as in a foreground window even
            // when another tab of the session is in front.
            (
                "Emulation.setFocusEmulationEnabled",
                json!({ "enabled": true }),
            ),
            // Out-of-process (cross-site) iframes become child sessions of this tab,
            // and so do workers; when requests are inspected they wait until their
            // requests are paused too.
            (
                "Target.setAutoAttach",
                json!({ "autoAttach": true, "waitForDebuggerOnStart": inspects, "flatten": true }),
            ),
        ];
        commands.extend(screen.commands(true));
        // Where a leaving page showed secrets (walker.js `leaving`): only Airlock's
        // world has the binding.
        commands.push((
            "Runtime.addBinding",
            json!({ "name": LEAVING_BINDING, "executionContextName": WORLD_NAME }),
        ));
        if let Some(patterns) = tab.state.requests.patterns() {
            commands.push(("Fetch.enable", json!({ "patterns": patterns })));
        }
        if tab.state.requests.inspects_all() {
            commands.extend(inspecting());
        } else if inspects {
            commands.extend(judging());
        }
        if tab.state.requests.inspects_all() {
            commands.push((
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": tab.state.requests.socket_policy_script(), "worldName": WORLD_NAME }),
            ));
        }
        // From document start, in Airlock's world: remember inputs a script turns
        // from type=password into anything else, so their values stay masked.
        commands.push((
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": WAS_PASSWORD, "worldName": WORLD_NAME }),
        ));
        commands.push((
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": NO_DATA_FRAMES, "worldName": WORLD_NAME }),
        ));
        if let Some(injection) = &injection {
            commands.extend(seeding_scripts(injection));
        }
        let frame_tree = tab.conn.send(
            Some(&tab.cdp_session),
            "Page.getFrameTree",
            json!({}),
            timeout,
        );
        let mut replies: Vec<_> = commands
            .into_iter()
            .map(|(method, params)| {
                tab.conn
                    .send(Some(&tab.cdp_session), method, params, timeout)
            })
            .collect();
        replies.push(tab.conn.send(
            Some(&tab.cdp_session),
            "Runtime.runIfWaitingForDebugger",
            json!({}),
            timeout,
        ));
        let tree = frame_tree.await?;
        for reply in replies {
            reply.await?;
        }
        let tree: FrameTree = serde_json::from_value(tree)
            .map_err(|e| Error::Protocol(format!("bad frame tree: {e}")))?;
        let frame = tree.frame_tree.frame;
        tab.state.with(|s| {
            if s.main_frame.is_empty() {
                s.main_frame = frame.id.clone();
            }
            if s.loader_id.is_empty() {
                s.loader_id = frame.loader_id;
            }
            if s.url.is_empty() {
                s.url = frame.url;
            }
            s.frames.push(FrameEntry {
                frame_id: frame.id,
                owner: None,
                next_ref: 1,
                parent_session: None,
            });
        });
        Ok(tab)
    }

    /// A CDP call on this tab's session.
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value> {
        self.send(method, params, timeout).await
    }

    /// Sends a CDP command on this tab's session now and returns the wait for its
    /// reply: commands sent one after another this way reach Chromium in that order
    /// without waiting for each other's replies.
    pub(crate) fn send(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> impl std::future::Future<Output = Result<Value>> + '_ {
        let sent = self.check().map(|()| {
            self.conn
                .send(Some(&self.cdp_session), method, params, timeout)
        });
        async move { self.unless_lost(sent?).await }
    }

    // A call to the tab's renderer, given up as soon as the tab crashes or goes away
    // (its reply would never come, and the call would wait out its whole budget).
    async fn unless_lost<T>(
        &self,
        call: impl std::future::Future<Output = std::result::Result<T, CdpError>>,
    ) -> Result<T> {
        tokio::select! {
            reply = call => reply.map_err(|e| self.missed(e)),
            why = self.state.interrupted() => Err(self.interruption(why)),
        }
    }

    fn interruption(&self, why: Interruption) -> Error {
        match why {
            Interruption::Lost => self.check().err().unwrap_or(Error::PageCrashed),
            Interruption::Dialog(kind) => Error::DialogOpened { kind },
        }
    }

    // A CDP failure of this tab; a command the renderer did not answer in time marks
    // the tab unresponsive, for the next call to deal with, unless the page was
    // navigating: Chromium holds every command for a frame between the start of a
    // navigation and its commit (and for as long as an effect rule holds its
    // request), so a miss then says nothing of the page's scripts.
    fn missed(&self, error: CdpError) -> Error {
        match error {
            CdpError::Timeout { method, ms } => {
                if self.state.navigating() {
                    return Error::Timeout {
                        what: format!("{method} (the page was navigating)"),
                        ms,
                    };
                }
                self.state.with(|s| s.unresponsive = true);
                Error::PageUnresponsive { ms }
            }
            other => other.into(),
        }
    }

    /// Fails fast when the tab or its browser is gone.
    pub(crate) fn check(&self) -> Result<()> {
        if self.conn.is_closed() {
            return Err(Error::BrowserCrashed);
        }
        let (crashed, detached) = self.state.read(|s| (s.crashed, s.detached));
        if crashed {
            return Err(Error::PageCrashed);
        }
        if detached {
            return Err(Error::TabClosed);
        }
        Ok(())
    }

    /// The CDP session that hosts `frame_id` (its own if it is out of process).
    pub(crate) fn session_for_frame(&self, frame_id: &str) -> String {
        self.state
            .read(|s| {
                s.frame_sessions.get(frame_id).cloned().or_else(|| {
                    s.frames
                        .iter()
                        .find(|f| f.frame_id == frame_id)
                        .and_then(|f| f.parent_session.clone())
                })
            })
            .unwrap_or_else(|| self.cdp_session.clone())
    }

    /// Evaluates `expression` in Airlock's isolated world of frame number `frame`,
    /// installing the walker first when the world is new. Returns the value.
    /// Starts pausing every request of this tab and its out-of-process frames (the
    /// session began inspecting): the new patterns, workers attached paused, the
    /// inspecting extras. Best effort per CDP session: a frame that went is skipped.
    pub(crate) async fn inspect_requests(&self, timeout: Duration) {
        let Some(patterns) = self.state.requests.patterns() else {
            return;
        };
        let mut sessions = vec![self.cdp_session.clone()];
        sessions.extend(
            self.state
                .read(|s| s.frame_sessions.values().cloned().collect::<Vec<_>>()),
        );
        for session in sessions {
            let mut commands: Vec<(&str, Value)> = vec![
                ("Fetch.enable", json!({ "patterns": patterns })),
                (
                    "Target.setAutoAttach",
                    json!({ "autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true }),
                ),
            ];
            commands.extend(inspecting());
            commands.push((
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": self.state.requests.socket_policy_script(), "worldName": WORLD_NAME }),
            ));
            let replies: Vec<_> = commands
                .into_iter()
                .map(|(method, params)| self.conn.send(Some(&session), method, params, timeout))
                .collect();
            for reply in replies {
                let _ = reply.await;
            }
        }
        // The documents already there get the socket policy now, in every frame.
        let script = self.state.requests.socket_policy_script();
        let frames = self.state.read(|s| s.frames.len()) as u32;
        for frame in 0..frames {
            let _ = self.eval(frame, &script, false, timeout).await;
        }
    }

    /// The WebSockets the tab's pages hold open now (their URLs, as Chromium reports
    /// them; not yet redacted).
    pub(crate) fn open_sockets(&self) -> Vec<String> {
        self.state.read(|s| s.sockets.values().cloned().collect())
    }

    /// Moves the walker's cut of names and values out to `cut` in every world made
    /// so far (worlds made later are made with it).
    pub(crate) async fn raise_walker_cut(&self, cut: usize, timeout: Duration) {
        let worlds: Vec<(String, i64)> = self.state.read(|s| {
            s.worlds
                .iter()
                .map(|((session, _), id)| (session.clone(), *id))
                .collect()
        });
        for (session, context) in worlds {
            let _ = self
                .conn
                .call(
                    Some(&session),
                    "Runtime.evaluate",
                    json!({ "expression": format!("__airlock.init(0, {cut})"), "contextId": context }),
                    timeout,
                )
                .await;
        }
    }

    pub(crate) async fn eval(
        &self,
        frame: u32,
        expression: &str,
        await_promise: bool,
        timeout: Duration,
    ) -> Result<Value> {
        self.in_world(frame, timeout, |context| {
            (
                "Runtime.evaluate",
                json!({
                    "expression": expression,
                    "contextId": context,
                    "returnByValue": true,
                    "awaitPromise": await_promise,
                }),
            )
        })
        .await
    }

    /// Calls `declaration` (a JavaScript function) with `args` as values in Airlock's
    /// isolated world of frame `frame`. Values passed this way never become source
    /// text, which is how a secret reaches the page for insertion.
    pub(crate) async fn call_function(
        &self,
        frame: u32,
        declaration: &str,
        args: &[Value],
        timeout: Duration,
    ) -> Result<Value> {
        let arguments: Vec<Value> = args.iter().map(|a| json!({ "value": a })).collect();
        self.in_world(frame, timeout, |context| {
            (
                "Runtime.callFunctionOn",
                json!({
                    "functionDeclaration": declaration,
                    "executionContextId": context,
                    "arguments": arguments,
                    "returnByValue": true,
                    "awaitPromise": false,
                }),
            )
        })
        .await
    }

    async fn in_world(
        &self,
        frame: u32,
        timeout: Duration,
        request: impl Fn(i64) -> (&'static str, Value),
    ) -> Result<Value> {
        let (frame_id, base) = self
            .state
            .read(|s| {
                s.frames
                    .get(frame as usize)
                    .map(|f| (f.frame_id.clone(), f.next_ref))
            })
            .ok_or_else(|| Error::RefNotFound {
                reference: format!("f{frame}"),
            })?;
        let session = self.session_for_frame(&frame_id);
        for attempt in 0..2 {
            let context = match self.world(&session, &frame_id, base, timeout).await {
                // The frame itself went (removed, or its page navigated) mid-action.
                Err(Error::Protocol(message)) if message.contains("No frame for given id") => {
                    return Err(Error::PageChanged);
                }
                other => other?,
            };
            let (method, params) = request(context);
            let reply = tokio::select! {
                reply = self.conn.call(Some(&session), method, params, timeout) => reply,
                why = self.state.interrupted() => return Err(self.interruption(why)),
            };
            match reply {
                Ok(value) => return evaluation_value(value),
                Err(CdpError::Protocol { message, .. })
                    if attempt == 0 && is_context_gone(&message) =>
                {
                    // The frame navigated and took the world with it; make a new one.
                    self.state
                        .with(|s| s.worlds.remove(&(session.clone(), frame_id.clone())));
                }
                Err(CdpError::Protocol { message, .. }) if is_context_gone(&message) => {
                    return Err(Error::PageChanged);
                }
                Err(e) => {
                    self.check()?;
                    return Err(self.missed(e));
                }
            }
        }
        Err(Error::Protocol(
            "isolated world kept disappearing".to_owned(),
        ))
    }

    /// The remote object id of ref `node` in frame `frame`, for DOM.* calls.
    pub(crate) async fn object_of_ref(
        &self,
        frame: u32,
        node: u64,
        timeout: Duration,
    ) -> Result<(String, String)> {
        let frame_id = self
            .state
            .read(|s| s.frames.get(frame as usize).map(|f| f.frame_id.clone()))
            .ok_or_else(|| Error::RefNotFound {
                reference: format!("f{frame}e{node}"),
            })?;
        let session = self.session_for_frame(&frame_id);
        let base = self.state.read(|s| s.frames[frame as usize].next_ref);
        let context = self.world(&session, &frame_id, base, timeout).await?;
        let reply = self
            .conn
            .call(
                Some(&session),
                "Runtime.evaluate",
                json!({
                    "expression": format!("__airlock.elementByRef({node})"),
                    "contextId": context,
                    "returnByValue": false,
                }),
                timeout,
            )
            .await?;
        match reply["result"]["objectId"].as_str() {
            Some(id) => Ok((session, id.to_owned())),
            None => Err(Error::RefNotFound {
                reference: format!("f{frame}e{node}"),
            }),
        }
    }

    /// `DOM.describeNode` of ref `node` in frame `frame` (its backend node id, the
    /// frame an `<iframe>` holds …), and the CDP session it lives in. The remote
    /// object made to reach it is released again.
    pub(crate) async fn describe_ref(
        &self,
        frame: u32,
        node: u64,
        timeout: Duration,
    ) -> Result<(String, Value)> {
        let (session, object) = self.object_of_ref(frame, node, timeout).await?;
        let described = self
            .conn
            .call(
                Some(&session),
                "DOM.describeNode",
                json!({ "objectId": object }),
                timeout,
            )
            .await;
        let _ = self
            .conn
            .call(
                Some(&session),
                "Runtime.releaseObject",
                json!({ "objectId": object }),
                timeout,
            )
            .await;
        Ok((session, described?["node"].take()))
    }

    async fn world(
        &self,
        session: &str,
        frame_id: &str,
        base: u64,
        timeout: Duration,
    ) -> Result<i64> {
        let key = (session.to_owned(), frame_id.to_owned());
        if let Some(id) = self.state.read(|s| s.worlds.get(&key).copied()) {
            return Ok(id);
        }
        let reply = self
            .conn
            .call(
                Some(session),
                "Page.createIsolatedWorld",
                json!({ "frameId": frame_id, "worldName": WORLD_NAME, "grantUniveralAccess": false }),
                timeout,
            )
            .await?;
        let context = reply["executionContextId"]
            .as_i64()
            .ok_or_else(|| Error::Protocol("createIsolatedWorld returned no context".to_owned()))?;
        // A world of the main frame in a session that hides secrets tells where the
        // page showed them as it leaves (see walker.js `leaving`).
        let hiding = frame_id == self.state.read(|s| s.main_frame.clone())
            && session == self.cdp_session
            && self.state.redactor.is_active();
        let install = format!(
            "{WALKER};\n__airlock.init({base}, {}, {hiding}); true",
            self.state.walker_cut()
        );
        let installed = self
            .conn
            .call(
                Some(session),
                "Runtime.evaluate",
                json!({ "expression": install, "contextId": context, "returnByValue": true }),
                timeout,
            )
            .await?;
        evaluation_value(installed)?;
        self.state.with(|s| s.worlds.insert(key, context));
        Ok(context)
    }

    /// Takes the dialogs collected since the last call (at most `MAX_DIALOG_LINES`)
    /// and how many more there were.
    pub(crate) fn take_dialogs(&self) -> (Vec<Dialog>, u64) {
        self.state.with(|s| {
            (
                std::mem::take(&mut s.dialogs),
                std::mem::take(&mut s.dialogs_unlisted),
            )
        })
    }
}

// Before the page runs: localStorage seeding as each document of a bound origin
// starts (in an isolated world, so page scripts cannot intercept it). Headers are
// added where requests are paused (`Requests`).
fn seeding_scripts(injection: &Injection) -> Vec<(&'static str, Value)> {
    let mut by_origin: HashMap<&str, Vec<(&str, &str)>> = HashMap::new();
    for (origin, key, value) in &injection.storage {
        by_origin
            .entry(origin.as_str())
            .or_default()
            .push((key.as_str(), value.as_str()));
    }
    by_origin
        .into_iter()
        .map(|(origin, items)| {
            let source = zeroize::Zeroizing::new(format!(
                "(() => {{ if (location.origin !== {origin}) return; \
                 for (const [k, v] of {items}) {{ try {{ if (localStorage.getItem(k) === null) localStorage.setItem(k, v); }} catch (_) {{}} }} }})();",
                origin = serde_json::to_string(origin).unwrap_or_default(),
                items = serde_json::to_string(&items).unwrap_or_default(),
            ));
            (
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": source.as_str(), "worldName": "__airlock_seed" }),
            )
        })
        .collect()
}

fn is_context_gone(message: &str) -> bool {
    message.contains("Cannot find context")
        || message.contains("Inspected target navigated or closed")
        || message.contains("Execution context was destroyed")
        || message.contains("Cannot find default execution context")
        || message.contains("No frame")
}

fn evaluation_value(reply: Value) -> Result<Value> {
    if let Some(details) = reply.get("exceptionDetails") {
        let text = details["exception"]["description"]
            .as_str()
            .or_else(|| details["text"].as_str())
            .unwrap_or("exception");
        let first_line = text.lines().next().unwrap_or(text);
        // The document went (and took Airlock's world, or its helper, with it): a
        // navigation mid-action, not a fault of Airlock's.
        if first_line.contains("Execution context was destroyed")
            || first_line.contains("__airlock is not defined")
        {
            return Err(Error::PageChanged);
        }
        return Err(Error::Protocol(format!("page helper failed: {first_line}")));
    }
    Ok(reply["result"]["value"].clone())
}
