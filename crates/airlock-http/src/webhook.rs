//! The approval webhook: every approval request and decision, POSTed as JSON to the
//! operator's URL, signed, retried, and never on the decision's path (a slow or dead
//! receiver delays nothing; past a bounded queue, announcements are dropped with a
//! warning, and the audit log still has them).
//!
//! Also a stored login's check that left it needing a person, or failed
//! (`login_check` whose state is not `alive`): the operator hears of it at once.
//!
//! Body: `{"seq": N, "kind": "approval_requested" | "approval_decided" | "login_check", "event": {…}}`,
//! the event as the audit log holds it (redacted). Headers: `X-Airlock-Event` (the
//! kind), `X-Airlock-Delivery` (the seq: a receiver drops repeats by it), and
//! `X-Airlock-Signature: t=UNIX_SECONDS,v1=HEX` where HEX is HMAC-SHA256 under the
//! webhook secret of `"{t}.{body}"`: a receiver recomputes it and rejects old `t`.

use hex::ToHex as _;
use std::sync::Arc;
use std::time::Duration;

use airlock_config::Webhook;
use airlock_gateway::{FeedEvent, Gateway};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use tokio::task::JoinHandle;

/// The event kinds the webhook announces (a `login_check` only when the login is
/// not alive: see [`announced`]).
pub const ANNOUNCED: &[&str] = &["approval_requested", "approval_decided", "login_check"];

/// Whether `event` is announced: its kind is, and a login check is news (a person
/// must act, or the renewal failed), not a routine `alive`.
fn announced(event: &FeedEvent) -> bool {
    ANNOUNCED.contains(&event.kind.as_str())
        && (event.kind != "login_check"
            || airlock_audit::Entry::parse(&event.body).is_ok_and(|entry| {
                matches!(entry.event, airlock_audit::Event::LoginCheck(c) if c.state != "alive")
            }))
}

/// Announcements waiting to be delivered, at most.
const QUEUE: usize = 256;

/// Waits between attempts of one delivery (so four attempts in all).
const BACKOFF: [Duration; 3] = [
    Duration::from_millis(500),
    Duration::from_secs(2),
    Duration::from_secs(8),
];

/// How long one attempt may take, connect to response.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts announcing the gateway's approval events to `hook` until the gateway stops.
pub fn spawn(gateway: &Arc<Gateway>, hook: Webhook) -> JoinHandle<()> {
    let mut feed = gateway.audit().appended_here();
    let stopping = gateway.clone();
    let (tx, rx) = tokio::sync::mpsc::channel::<FeedEvent>(QUEUE);
    let hook = Arc::new(hook);
    tokio::spawn(deliver_all(hook, rx));
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            let event = tokio::select! {
                event = feed.recv() => event,
                () = stopping.stopped() => return,
            };
            match event {
                Ok(event) if announced(&event) => {
                    if tx.try_send(event).is_err() {
                        tracing::warn!(
                            "the approval webhook is {QUEUE} announcements behind; dropping one (it is in the audit log)"
                        );
                    }
                }
                Ok(_) => {}
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(
                        missed = n,
                        "the approval webhook fell behind the audit feed"
                    );
                }
                Err(RecvError::Closed) => return,
            }
        }
    })
}

async fn deliver_all(hook: Arc<Webhook>, mut rx: tokio::sync::mpsc::Receiver<FeedEvent>) {
    while let Some(event) = rx.recv().await {
        let body = serde_json::json!({
            "seq": event.seq,
            "kind": event.kind,
            "event": serde_json::from_str::<serde_json::Value>(&event.body)
                .unwrap_or(serde_json::Value::Null),
        })
        .to_string();
        let mut attempt = 0;
        loop {
            let result = tokio::time::timeout(ATTEMPT_TIMEOUT, post(&hook, &event, &body)).await;
            let why = match result {
                Ok(Ok(status)) if (200..300).contains(&status) => break,
                Ok(Ok(status)) => format!("answered {status}"),
                Ok(Err(e)) => e,
                Err(_) => format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs()),
            };
            let Some(wait) = BACKOFF.get(attempt) else {
                tracing::error!(seq = event.seq, kind = %event.kind, why, "the approval webhook gave up on an announcement");
                break;
            };
            tracing::warn!(
                seq = event.seq,
                attempt = attempt + 1,
                why,
                "the approval webhook will retry"
            );
            attempt += 1;
            tokio::time::sleep(*wait).await;
        }
    }
}

// One attempt: the response's status, or why there was none.
async fn post(hook: &Webhook, event: &FeedEvent, body: &str) -> Result<u16, String> {
    let url = &hook.url;
    if url.scheme() != "http" {
        return Err(format!("{} webhooks are not supported", url.scheme()));
    }
    let host = url.host_str().ok_or("the URL has no host")?;
    let port = url.port_or_known_default().unwrap_or(80);
    // An IPv6 literal connects without its URL brackets.
    let connect_host = host.trim_start_matches('[').trim_end_matches(']');
    let stream = tokio::net::TcpStream::connect((connect_host, port))
        .await
        .map_err(|e| format!("could not connect: {e}"))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("HTTP handshake failed: {e}"))?;
    let driver = tokio::spawn(connection);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    let authority = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_owned(),
    };
    let request = hyper::Request::post(path)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::USER_AGENT, "airlock-webhook")
        .header("x-airlock-event", event.kind.as_str())
        .header("x-airlock-delivery", event.seq.to_string())
        .header(
            "x-airlock-signature",
            format!("t={t},v1={}", signature(hook.secret.expose(), t, body)),
        )
        .body(Full::new(Bytes::from(body.to_owned())))
        .map_err(|e| format!("could not build the request: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("the request failed: {e}"))?;
    let status = response.status().as_u16();
    // Read (and drop) the answer so the connection ends cleanly.
    let _ = response.into_body().collect().await;
    driver.abort();
    Ok(status)
}

/// HMAC-SHA256 under `secret` of `"{t}.{body}"`, as lowercase hex.
pub fn signature(secret: &str, t: u64, body: &str) -> String {
    use hmac::{KeyInit as _, Mac as _};
    let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(format!("{t}.").as_bytes());
    mac.update(body.as_bytes());
    mac.finalize().into_bytes().encode_hex::<String>()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values from Python's hmac module, not from this code.
    #[test]
    fn the_signature_is_hmac_sha256_of_time_dot_body() {
        assert_eq!(
            signature("Jefe", 0, "what do ya want for nothing?"),
            "37f471929915ccd2cbbe79feb84ffcff4f2bb25e15fc41c2506687331ae179cc"
        );
        assert_ne!(
            signature("Jefe", 1, "what do ya want for nothing?"),
            signature("Jefe", 0, "what do ya want for nothing?")
        );
    }
}
