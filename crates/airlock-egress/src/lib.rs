//! Airlock's egress proxy: the only way a browser context reaches the network.
//!
//! Each browser session gets its own proxy listener on loopback, so the port a
//! connection arrives on says which session (and which policy) it belongs to. The
//! proxy speaks HTTP/1.1 forward-proxy: absolute-form requests for `http://` (and
//! `ws://` upgrades) and `CONNECT` for TLS and `wss://`.
//!
//! For every request it resolves the host itself, checks **every** resolved address
//! against the policy, and connects to an address it checked. There is no second
//! lookup between the check and the connect, so a name that resolves to a public
//! address at check time and a private one a moment later (DNS rebinding) cannot slip
//! through. A name with any refused address is refused as a whole.
//!
//! A refusal is a `403` with a one-line plain body (`policy_denied: …`), and counted
//! per reason for the session's tool results.
//!
//! The listener is a loopback port any local process could dial; it serves only
//! connections whose socket belongs to its own user (Chromium runs as the worker's
//! user), as the kernel's socket table says. Another user's process cannot relay
//! through a session's proxy, nor learn what its policy allows.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use airlock_core::sync::lock;
use airlock_policy::{Decision, DenyReason, Policy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// Largest request head the proxy reads.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Budget for a client to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// Budget for resolving a name and for connecting to the checked address.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// A boxed future, for the object-safe [`Resolver`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Turns a host name into addresses; injectable so tests can script DNS.
pub trait Resolver: Send + Sync + 'static {
    /// All addresses of `host` for `port`.
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>>;
}

/// The system resolver (getaddrinfo through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// Requests refused, by reason.
#[derive(Debug, Default)]
struct Blocked {
    total: BTreeMap<DenyReason, u64>,
    unreported: BTreeMap<DenyReason, u64>,
    /// Recent requests the proxy could not carry out (the name did not resolve, no
    /// address took the connection): `host:port`, what happened, when.
    failures: std::collections::VecDeque<(String, String, tokio::time::Instant)>,
    /// Private `host:port`s whose refusal was logged with a hint for the operator.
    hinted: std::collections::HashSet<String>,
}

// Logs, once per private place a page was refused, how an operator would allow it.
fn hint_private(counts: &Mutex<Blocked>, host: &str, port: u16) {
    let key = authority(host, port);
    let mut blocked = lock(counts);
    if blocked.hinted.len() < 256 && blocked.hinted.insert(key.clone()) {
        tracing::info!(
            place = %key,
            "refused a private address; an operator allows it with policy.allow_private, AIRLOCK_ALLOW_PRIVATE or --allow-private"
        );
    }
}

/// Failures remembered, and for how long.
const MAX_FAILURES: usize = 32;
const FAILURE_MEMORY: Duration = Duration::from_secs(30);

fn record_failure(counts: &Mutex<Blocked>, host: &str, port: u16, what: String) {
    let mut blocked = lock(counts);
    if blocked.failures.len() >= MAX_FAILURES {
        blocked.failures.pop_front();
    }
    blocked
        .failures
        .push_back((authority(host, port), what, tokio::time::Instant::now()));
}

// `host:port` with any IPv6 brackets dropped, the form failures are looked up by.
fn authority(host: &str, port: u16) -> String {
    format!(
        "{}:{port}",
        host.trim_start_matches('[').trim_end_matches(']')
    )
}

// Whether the socket that connected from `peer` to `listener` belongs to this
// process's user, or to the user its Chromium runs as. Unknown (no socket table,
// no entry) is a no.
async fn own_user(peer: SocketAddr, listener: SocketAddr) -> bool {
    let me = nix::unistd::geteuid().as_raw();
    let browser = airlock_core::browser_user::get().map(|(uid, _)| uid);
    let owner = tokio::task::spawn_blocking(move || {
        let table = match (peer, listener) {
            (SocketAddr::V4(_), SocketAddr::V4(_)) => procfs::net::tcp(),
            _ => procfs::net::tcp6(),
        };
        table
            .ok()?
            .into_iter()
            .find(|e| e.local_address == peer && e.remote_address == listener)
            .map(|e| e.uid)
    })
    .await
    .ok()
    .flatten();
    owner.is_some_and(|owner| owner == me || Some(owner) == browser)
}

/// One session's proxy. Dropping it stops the listener and every connection.
pub struct EgressProxy {
    addr: SocketAddr,
    // Read when a request's head has arrived (one request per connection), so a
    // connection opened before `set_policy` is judged by the policy of its request.
    policy: Arc<RwLock<Arc<Policy>>>,
    blocked: Arc<Mutex<Blocked>>,
    tasks: JoinSet<()>,
}

impl EgressProxy {
    /// Starts a proxy on `127.0.0.1:0` enforcing `policy`.
    pub async fn start(
        policy: Arc<Policy>,
        resolver: Arc<dyn Resolver>,
    ) -> io::Result<EgressProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let blocked = Arc::new(Mutex::new(Blocked::default()));
        let policy = Arc::new(RwLock::new(policy));
        let current = policy.clone();
        let mut tasks = JoinSet::new();
        let counts = blocked.clone();
        tasks.spawn(async move {
            // Connections live in their own set, owned by this task: when the proxy
            // is dropped, this task is aborted and the set with it.
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, peer)) = accepted else { continue };
                        let policy = current.clone();
                        let resolver = resolver.clone();
                        let counts = counts.clone();
                        connections.spawn(async move {
                            if !own_user(peer, addr).await {
                                tracing::warn!(%peer, "refused a connection to a session's proxy from another user");
                                return;
                            }
                            if let Err(error) = serve(stream, &policy, resolver.as_ref(), &counts).await {
                                tracing::debug!(%error, "egress connection ended");
                            }
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        tracing::debug!(%addr, "egress proxy listening");
        Ok(EgressProxy {
            addr,
            policy,
            blocked,
            tasks,
        })
    }

    /// The policy requests are held to now.
    pub fn policy(&self) -> Arc<Policy> {
        self.policy
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the policy for requests arriving from now on. A pre-warmed session's
    /// proxy starts with [`Policy::deny_all`] and gets the agent's policy when the
    /// session is handed out, before any page of the agent's can connect.
    pub fn set_policy(&self, policy: Arc<Policy>) {
        *self.policy.write().unwrap_or_else(|p| p.into_inner()) = policy;
    }

    /// Where the browser context must send everything (`http://ADDR`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The `proxyServer` value for `Target.createBrowserContext`.
    pub fn proxy_server(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Refusals since the proxy started, by reason.
    pub fn blocked(&self) -> BTreeMap<DenyReason, u64> {
        lock(&self.blocked).total.clone()
    }

    /// Refusals since the last call, by reason (for a tool result's summary).
    pub fn take_unreported(&self) -> BTreeMap<DenyReason, u64> {
        std::mem::take(&mut lock(&self.blocked).unreported)
    }

    /// What went wrong, lately, with a request to `host:port` the proxy refused or
    /// could not carry out (the policy's denial, `does not resolve`, `could not
    /// connect …`): a navigation that ends on the proxy's error page failed, and this
    /// says why.
    pub fn failure_for(&self, host: &str, port: u16) -> Option<String> {
        let key = authority(host, port);
        let blocked = lock(&self.blocked);
        blocked
            .failures
            .iter()
            .rev()
            .find(|(a, _, at)| *a == key && at.elapsed() < FAILURE_MEMORY)
            .map(|(_, what, _)| what.clone())
    }

    /// Stops the listener and every open connection now.
    pub fn shutdown(&mut self) {
        self.tasks.abort_all();
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        self.tasks.abort_all();
    }
}

/// `blocked 3 requests: 2 private address, 1 host not allowed`, or `None`.
pub fn summarize(blocked: &BTreeMap<DenyReason, u64>) -> Option<String> {
    let total: u64 = blocked.values().sum();
    if total == 0 {
        return None;
    }
    let mut parts: Vec<(u64, &str)> = blocked.iter().map(|(r, n)| (*n, r.label())).collect();
    parts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let parts: Vec<String> = parts.iter().map(|(n, l)| format!("{n} {l}")).collect();
    let noun = if total == 1 { "request" } else { "requests" };
    Some(format!("blocked {total} {noun}: {}", parts.join(", ")))
}

struct Head {
    method: String,
    target: String,
    version: String,
    headers: Vec<(String, String)>,
    // Bytes the client sent after the head (a request body or TLS data).
    rest: Vec<u8>,
}

async fn read_head(stream: &mut TcpStream) -> io::Result<Option<Head>> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Ok(None);
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let text = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = text.split("\r\n");
    let mut parts = lines.next().unwrap_or_default().split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Ok(None);
    };
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Ok(Some(Head {
        method: method.to_owned(),
        target: target.to_owned(),
        version: version.to_owned(),
        headers,
        rest: buf[end + 4..].to_vec(),
    }))
}

async fn refuse(stream: &mut TcpStream, status: &str, body: &str) -> io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

fn count(counts: &Mutex<Blocked>, reason: DenyReason) {
    let mut blocked = lock(counts);
    *blocked.total.entry(reason).or_default() += 1;
    *blocked.unreported.entry(reason).or_default() += 1;
}

async fn serve(
    mut client: TcpStream,
    policy: &RwLock<Arc<Policy>>,
    resolver: &dyn Resolver,
    counts: &Mutex<Blocked>,
) -> io::Result<()> {
    let Ok(head) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await else {
        return Ok(());
    };
    let Some(head) = head? else {
        return refuse(&mut client, "400 Bad Request", "bad proxy request\n").await;
    };
    let policy = policy.read().unwrap_or_else(|p| p.into_inner()).clone();
    let connect = head.method.eq_ignore_ascii_case("CONNECT");
    // What the policy judges: the URL for absolute-form requests; for CONNECT the
    // authority, as the https:// URL it stands for.
    let url = if connect {
        format!("https://{}/", head.target)
    } else {
        head.target.clone()
    };
    let checked = policy.check_url(&url);
    let (Some(host), Some(port)) = (checked.host.clone(), checked.port) else {
        let reason = match &checked.decision {
            Decision::Deny { reason, .. } => *reason,
            Decision::Allow => DenyReason::InvalidUrl,
        };
        count(counts, reason);
        return refuse(
            &mut client,
            "403 Forbidden",
            &format!("{}\n", deny_text(&checked.decision, &url)),
        )
        .await;
    };
    if let Decision::Deny { reason, .. } = &checked.decision {
        count(counts, *reason);
        if *reason == DenyReason::PrivateAddress {
            hint_private(counts, &host, port);
        }
        // Remembered like a failure: what the page's request met is on record for
        // the agent (`browser_network_requests`, a failed navigation's reason).
        record_failure(counts, &host, port, format!("{}", checked.decision));
        tracing::debug!(host, port, decision = %checked.decision, "egress refused");
        return refuse(
            &mut client,
            "403 Forbidden",
            &format!("{}\n", checked.decision),
        )
        .await;
    }
    let addresses = match checked.ip {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => match tokio::time::timeout(CONNECT_TIMEOUT, resolver.resolve(&host, port)).await {
            Ok(Ok(list)) if !list.is_empty() => list,
            _ => {
                count(counts, DenyReason::Unresolvable);
                record_failure(counts, &host, port, format!("{host} does not resolve"));
                tracing::debug!(host, port, "egress refused: does not resolve");
                return refuse(
                    &mut client,
                    "502 Bad Gateway",
                    &format!("policy_denied: {host} does not resolve\n"),
                )
                .await;
            }
        },
    };
    // Every address must pass; the connection then goes to one of those checked
    // addresses, never to a fresh lookup.
    for address in &addresses {
        let decision = policy.check_address(&host, *address);
        if let Decision::Deny { reason, .. } = &decision {
            count(counts, *reason);
            if *reason == DenyReason::PrivateAddress {
                hint_private(counts, &host, port);
            }
            tracing::debug!(host, %address, %decision, "egress refused");
            return refuse(&mut client, "403 Forbidden", &format!("{decision}\n")).await;
        }
    }
    let mut upstream = None;
    for address in &addresses {
        if let Ok(Ok(stream)) =
            tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await
        {
            upstream = Some(stream);
            break;
        }
    }
    let Some(mut upstream) = upstream else {
        record_failure(
            counts,
            &host,
            port,
            format!("could not connect to {host}:{port} (refused or no answer)"),
        );
        return refuse(
            &mut client,
            "502 Bad Gateway",
            &format!("could not connect to {host}:{port}\n"),
        )
        .await;
    };
    // A relay's small writes must not wait on Nagle's algorithm for an ACK.
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    if connect {
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        upstream.write_all(&head.rest).await?;
    } else {
        // Head and whatever body arrived with it, in one write.
        let mut request = origin_form(&head, &checked.url.unwrap_or_default());
        request.extend_from_slice(&head.rest);
        upstream.write_all(&request).await?;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    Ok(())
}

fn deny_text(decision: &Decision, url: &str) -> String {
    match decision {
        Decision::Deny { .. } => decision.to_string(),
        Decision::Allow => format!("policy_denied: `{url}` has no host"),
    }
}

// Rewrites an absolute-form request for the origin server: origin-form target, hop-by-
// hop proxy headers dropped, and `Connection: close` (the next request on this client
// connection may be for another host) unless it is a WebSocket upgrade.
fn origin_form(head: &Head, canonical: &str) -> Vec<u8> {
    let path = canonical
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("/");
    let path = path.split('#').next().unwrap_or("/");
    let upgrade = head
        .headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("upgrade"));
    let mut out = format!("{} {} {}\r\n", head.method, path, head.version);
    for (name, value) in &head.headers {
        let lower = name.to_ascii_lowercase();
        if lower == "proxy-connection"
            || lower == "proxy-authorization"
            || (lower == "connection" && !upgrade)
            || lower == "keep-alive"
        {
            continue;
        }
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    if !upgrade {
        out.push_str("Connection: close\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_read_well() {
        let mut blocked = BTreeMap::new();
        assert_eq!(summarize(&blocked), None);
        blocked.insert(DenyReason::PrivateAddress, 2);
        blocked.insert(DenyReason::HostNotAllowed, 1);
        assert_eq!(
            summarize(&blocked).unwrap(),
            "blocked 3 requests: 2 private address, 1 host not allowed"
        );
    }
}
