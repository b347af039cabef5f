//! A thin CDP client over Chromium's `--remote-debugging-pipe`.
//!
//! Chromium reads commands from its fd 3 and writes replies and events to its fd 4,
//! each message a JSON object followed by a NUL byte. A pipe, unlike a debugging port,
//! cannot be reached by a page or another local process, and Chromium exits by itself
//! when the pipe closes, so a killed gateway leaves no browser behind.
//!
//! One reader task owns the receiving end: replies complete the pending call with the
//! same id; events go to the subscribers of their CDP session. When the pipe ends
//! (Chromium exited or crashed) every pending and later call fails with
//! [`CdpError::Closed`] at once, never hanging.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_core::sync::lock;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{mpsc, oneshot};

/// One CDP event.
#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) method: String,
    pub(crate) params: Value,
}

/// A CDP failure below the level of browser semantics.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CdpError {
    /// The pipe is closed: Chromium exited, crashed or was closed by us.
    #[error("the browser connection is closed")]
    Closed,
    /// No reply within the budget.
    #[error("`{method}` got no reply within {ms} ms")]
    Timeout { method: String, ms: u128 },
    /// Chromium answered with an error.
    #[error("`{method}` failed: {message}")]
    Protocol { method: String, message: String },
    /// A reply did not have the shape we expected.
    #[error("`{method}` returned an unexpected reply: {message}")]
    Decode { method: String, message: String },
}

type Reply = Result<Value, CdpError>;

/// A cloneable handle to one Chromium's CDP pipe.
#[derive(Clone)]
pub(crate) struct Connection {
    inner: Arc<Inner>,
}

struct Inner {
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, (String, oneshot::Sender<Reply>)>>,
    // Keyed by CDP session id; "" is the browser-level session.
    subscribers: Mutex<HashMap<String, Vec<mpsc::UnboundedSender<Event>>>>,
    closed: AtomicBool,
}

impl Connection {
    /// Starts the reader and writer tasks over the two pipe ends.
    pub(crate) fn start(to_browser: pipe::Sender, from_browser: pipe::Receiver) -> Connection {
        let (outgoing, outgoing_rx) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            outgoing,
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            subscribers: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        });
        tokio::spawn(write_loop(to_browser, outgoing_rx));
        tokio::spawn(read_loop(from_browser, Arc::downgrade(&inner)));
        Connection { inner }
    }

    /// Whether the pipe has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Acquire)
    }

    /// Sends `method` to `session` (None: the browser) and awaits the reply.
    pub(crate) async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Reply {
        self.send(session, method, params, timeout).await
    }

    /// Closes a page target (a tab or a popup).
    pub(crate) async fn close_target(&self, target_id: &str, timeout: Duration) -> Reply {
        self.call(
            None,
            "Target.closeTarget",
            json!({ "targetId": target_id }),
            timeout,
        )
        .await
    }

    /// Lets a target that attached paused (`waitForDebuggerOnStart`) run.
    pub(crate) async fn resume(&self, session: &str, timeout: Duration) -> Reply {
        self.call(
            Some(session),
            "Runtime.runIfWaitingForDebugger",
            json!({}),
            timeout,
        )
        .await
    }

    /// Sends a command now and returns the wait for its reply: commands sent one
    /// after another this way reach Chromium in that order without waiting for each
    /// other's replies.
    pub(crate) fn send(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> impl std::future::Future<Output = Reply> + Send + 'static {
        let sent = self.send_now(session, method, params);
        let inner = self.inner.clone();
        let method = method.to_owned();
        async move {
            let (id, rx) = sent?;
            match tokio::time::timeout(timeout, rx).await {
                Ok(Ok(reply)) => reply,
                Ok(Err(_)) => Err(CdpError::Closed),
                Err(_) => {
                    lock(&inner.pending).remove(&id);
                    Err(CdpError::Timeout {
                        method,
                        ms: timeout.as_millis(),
                    })
                }
            }
        }
    }

    fn send_now(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<(u64, oneshot::Receiver<Reply>), CdpError> {
        if self.is_closed() {
            return Err(CdpError::Closed);
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = Value::String(session.to_owned());
        }
        let mut bytes = serde_json::to_vec(&message).map_err(|e| CdpError::Decode {
            method: method.to_owned(),
            message: e.to_string(),
        })?;
        bytes.push(0);

        let (tx, rx) = oneshot::channel();
        lock(&self.inner.pending).insert(id, (method.to_owned(), tx));
        // The reader may have closed between the check above and the insert; check
        // again so the entry cannot be stranded.
        if self.is_closed() || self.inner.outgoing.send(bytes).is_err() {
            lock(&self.inner.pending).remove(&id);
            return Err(CdpError::Closed);
        }
        Ok((id, rx))
    }

    pub(crate) async fn call_as<T: DeserializeOwned>(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<T, CdpError> {
        let value = self.call(session, method, params, timeout).await?;
        serde_json::from_value(value).map_err(|e| CdpError::Decode {
            method: method.to_owned(),
            message: e.to_string(),
        })
    }

    /// Receives every later event of `session` (None: browser-level events).
    pub(crate) fn subscribe(&self, session: Option<&str>) -> mpsc::UnboundedReceiver<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        if !self.is_closed() {
            lock(&self.inner.subscribers)
                .entry(session.unwrap_or_default().to_owned())
                .or_default()
                .push(tx);
        }
        rx
    }

    /// Drops the subscribers of a detached session so their receivers end.
    pub(crate) fn forget_session(&self, session: &str) {
        lock(&self.inner.subscribers).remove(session);
    }
}

async fn write_loop(mut pipe: pipe::Sender, mut outgoing: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(bytes) = outgoing.recv().await {
        if pipe.write_all(&bytes).await.is_err() {
            break;
        }
    }
    // Dropping `pipe` closes Chromium's fd 3, which makes it exit.
}

#[derive(serde::Deserialize)]
struct Incoming {
    id: Option<u64>,
    result: Option<Value>,
    error: Option<IncomingError>,
    method: Option<String>,
    params: Option<Value>,
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

#[derive(serde::Deserialize)]
struct IncomingError {
    message: String,
    #[serde(default)]
    data: Option<String>,
}

async fn read_loop(mut pipe: pipe::Receiver, inner: std::sync::Weak<Inner>) {
    let mut buffer: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut chunk = vec![0u8; 1 << 16];
    let mut scanned = 0;
    loop {
        let n = match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buffer.extend_from_slice(&chunk[..n]);
        let Some(inner) = inner.upgrade() else { return };
        let mut start = 0;
        while let Some(pos) = buffer[scanned..].iter().position(|&b| b == 0) {
            let end = scanned + pos;
            dispatch(&inner, &buffer[start..end]);
            start = end + 1;
            scanned = start;
        }
        buffer.drain(..start);
        scanned = buffer.len();
    }
    if let Some(inner) = inner.upgrade() {
        inner.closed.store(true, Ordering::Release);
        for (_, (_, tx)) in lock(&inner.pending).drain() {
            let _ = tx.send(Err(CdpError::Closed));
        }
        lock(&inner.subscribers).clear();
    }
}

fn dispatch(inner: &Inner, bytes: &[u8]) {
    let parsed = serde_json::from_slice::<Incoming>(bytes).or_else(|error| {
        // A page's string can hold half of a surrogate pair, which Chromium writes as
        // a lone `\uD8xx` escape that no JSON parser accepts; a dropped reply would
        // leave its call waiting out its budget.
        match repair_surrogates(bytes) {
            Some(repaired) => serde_json::from_slice(&repaired),
            None => Err(error),
        }
    });
    let message: Incoming = match parsed {
        Ok(message) => message,
        Err(error) => {
            tracing::debug!(%error, "unparseable CDP message dropped");
            return;
        }
    };
    if let Some(id) = message.id {
        let Some((method, tx)) = lock(&inner.pending).remove(&id) else {
            return; // The caller timed out and left.
        };
        let reply = match message.error {
            Some(e) => Err(CdpError::Protocol {
                method,
                message: match e.data {
                    Some(data) => format!("{} ({data})", e.message),
                    None => e.message,
                },
            }),
            None => Ok(message.result.unwrap_or(Value::Null)),
        };
        let _ = tx.send(reply);
        return;
    }
    let Some(method) = message.method else { return };
    let event = Event {
        method,
        params: message.params.unwrap_or(Value::Null),
    };
    let key = message.session_id.unwrap_or_default();
    let mut subscribers = lock(&inner.subscribers);
    if let Some(list) = subscribers.get_mut(&key) {
        list.retain(|tx| tx.send(event.clone()).is_ok());
    }
}

/// `bytes` with every `\uXXXX` escape of a lone surrogate replaced by `\ufffd`, or
/// `None` when there is none.
pub(crate) fn repair_surrogates(bytes: &[u8]) -> Option<Vec<u8>> {
    let unit = |at: usize| -> Option<u16> {
        if bytes.get(at) != Some(&b'\\') || bytes.get(at + 1) != Some(&b'u') {
            return None;
        }
        let hex = std::str::from_utf8(bytes.get(at + 2..at + 6)?).ok()?;
        u16::from_str_radix(hex, 16).ok()
    };
    let mut out = Vec::with_capacity(bytes.len());
    let mut changed = false;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match unit(i) {
            Some(high @ 0xD800..=0xDBFF) if matches!(unit(i + 6), Some(0xDC00..=0xDFFF)) => {
                let _ = high;
                out.extend_from_slice(&bytes[i..i + 12]);
                i += 12;
            }
            Some(0xD800..=0xDFFF) => {
                out.extend_from_slice(b"\\ufffd");
                changed = true;
                i += 6;
            }
            _ => {
                // Any other escape: copy it whole, so `\\u…` is not read as an escape.
                let end = (i + 2).min(bytes.len());
                out.extend_from_slice(&bytes[i..end]);
                i = end;
            }
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        let repaired =
            |s: &str| repair_surrogates(s.as_bytes()).map(|b| String::from_utf8(b).unwrap());
        assert_eq!(
            repaired(r#"{"a":"x\ud800y"}"#).as_deref(),
            Some(r#"{"a":"x\ufffdy"}"#)
        );
        assert_eq!(
            repaired(r#"{"a":"\udc00"}"#).as_deref(),
            Some(r#"{"a":"\ufffd"}"#)
        );
        assert_eq!(repaired(r#"{"a":"\ud83d\ude00 ok"}"#), None);
        assert_eq!(repaired(r#"{"a":"\\ud800 is text"}"#), None);
        let v: serde_json::Value =
            serde_json::from_slice(&repair_surrogates(br#"["\ud83d","\ud83d\ude00"]"#).unwrap())
                .unwrap();
        assert_eq!(v, serde_json::json!(["\u{fffd}", "😀"]));
    }
}
