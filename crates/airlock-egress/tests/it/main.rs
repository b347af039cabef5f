//! The proxy over real sockets: counting listeners must see zero connections for
//! everything refused, and the allowed control must get through (so the tests can fail).

#![allow(clippy::unwrap_used)]

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use airlock_egress::{BoxFuture, EgressProxy, Resolver, SystemResolver};
use airlock_policy::{DenyReason, Policy, PolicyConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A loopback HTTP server that counts connections and answers `hello`.
struct Counting {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
}

async fn counting() -> Counting {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                    )
                    .await;
            });
        }
    });
    Counting { addr, connections }
}

impl Counting {
    fn count(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

fn policy(allow_private: &[String]) -> Arc<Policy> {
    Arc::new(
        Policy::from_config(&PolicyConfig {
            allow_private: allow_private.to_vec(),
            ..PolicyConfig::default()
        })
        .unwrap(),
    )
}

async fn via_proxy(proxy: &EgressProxy, request: &str) -> String {
    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

fn get(url: &str) -> String {
    format!("GET {url} HTTP/1.1\r\nHost: x\r\nProxy-Connection: keep-alive\r\n\r\n")
}

#[tokio::test]
async fn absolute_form_requests_are_checked_and_the_control_gets_through() {
    let allowed = counting().await;
    let denied = counting().await;
    let proxy = EgressProxy::start(
        policy(&[format!("127.0.0.1:{}", allowed.addr.port())]),
        Arc::new(SystemResolver),
    )
    .await
    .unwrap();

    let out = via_proxy(
        &proxy,
        &get(&format!("http://127.0.0.1:{}/x", denied.addr.port())),
    )
    .await;
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    assert!(
        out.ends_with("policy_denied: 127.0.0.1 is loopback\n"),
        "{out}"
    );
    for spelling in [
        "http://2130706433:{p}/",
        "http://0x7f.1:{p}/",
        "http://localhost:{p}/",
        "http://[::ffff:127.0.0.1]:{p}/",
        "http://127.0.0.1.:{p}/",
    ] {
        let url = spelling.replace("{p}", &denied.addr.port().to_string());
        let out = via_proxy(&proxy, &get(&url)).await;
        assert!(out.starts_with("HTTP/1.1 403"), "{url}: {out}");
    }
    assert_eq!(denied.count(), 0, "the refused listener saw a connection");

    let out = via_proxy(
        &proxy,
        &get(&format!("http://127.0.0.1:{}/x", allowed.addr.port())),
    )
    .await;
    assert!(
        out.starts_with("HTTP/1.1 200") && out.ends_with("hello"),
        "{out}"
    );
    assert_eq!(allowed.count(), 1);
    assert_eq!(proxy.blocked().get(&DenyReason::PrivateAddress), Some(&6));
    let summary = airlock_egress::summarize(&proxy.take_unreported()).unwrap();
    assert_eq!(summary, "blocked 6 requests: 6 private address");
    assert!(proxy.take_unreported().is_empty());
}

#[tokio::test]
async fn connect_tunnels_are_checked_too() {
    let allowed = counting().await;
    let denied = counting().await;
    let proxy = EgressProxy::start(
        policy(&[format!("127.0.0.1:{}", allowed.addr.port())]),
        Arc::new(SystemResolver),
    )
    .await
    .unwrap();
    let out = via_proxy(
        &proxy,
        &format!(
            "CONNECT 127.0.0.1:{0} HTTP/1.1\r\nHost: 127.0.0.1:{0}\r\n\r\n",
            denied.addr.port()
        ),
    )
    .await;
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    assert_eq!(denied.count(), 0);

    let mut s = TcpStream::connect(proxy.addr()).await.unwrap();
    s.write_all(
        format!(
            "CONNECT 127.0.0.1:{0} HTTP/1.1\r\nHost: 127.0.0.1:{0}\r\n\r\n",
            allowed.addr.port()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut buf = vec![0u8; 39];
    s.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"HTTP/1.1 200 Connection Established\r\n\r\n");
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest).await;
    assert!(String::from_utf8_lossy(&rest).ends_with("hello"));
    assert_eq!(allowed.count(), 1);
}

/// Answers from a script and counts lookups.
struct Scripted {
    answers: Vec<(&'static str, Vec<SocketAddr>, Vec<SocketAddr>)>,
    calls: AtomicUsize,
}

impl Resolver for Scripted {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        _port: u16,
    ) -> BoxFuture<'a, io::Result<Vec<SocketAddr>>> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let answer = self
            .answers
            .iter()
            .find(|(name, _, _)| *name == host)
            .map(|(_, first, later)| if n == 0 { first.clone() } else { later.clone() });
        Box::pin(async move {
            answer.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such name"))
        })
    }
}

#[tokio::test]
async fn resolves_once_checks_every_address_and_connects_to_the_checked_one() {
    let allowed = counting().await;
    let private = counting().await;
    let public: SocketAddr = "93.184.216.34:80".parse().unwrap();
    // `flip.test` answers the allowed listener first, then a private address: the
    // proxy must use its one checked answer, never look up again.
    let resolver = Arc::new(Scripted {
        answers: vec![
            ("flip.test", vec![allowed.addr], vec![private.addr]),
            ("rebind.test", vec![private.addr], vec![private.addr]),
            (
                "mixed.test",
                vec![public, private.addr],
                vec![public, private.addr],
            ),
        ],
        calls: AtomicUsize::new(0),
    });
    let proxy = EgressProxy::start(
        policy(&[format!("127.0.0.1:{}", allowed.addr.port())]),
        resolver.clone(),
    )
    .await
    .unwrap();

    let out = via_proxy(
        &proxy,
        &get(&format!("http://flip.test:{}/", allowed.addr.port())),
    )
    .await;
    assert!(out.ends_with("hello"), "{out}");
    assert_eq!(
        resolver.calls.load(Ordering::SeqCst),
        1,
        "one lookup per request"
    );
    assert_eq!(allowed.count(), 1);

    let out = via_proxy(
        &proxy,
        &get(&format!("http://rebind.test:{}/", private.addr.port())),
    )
    .await;
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    assert!(
        out.contains("rebind.test resolves to 127.0.0.1, which is loopback"),
        "{out}"
    );
    let out = via_proxy(
        &proxy,
        &get(&format!("http://mixed.test:{}/", private.addr.port())),
    )
    .await;
    assert!(
        out.starts_with("HTTP/1.1 403"),
        "a name with any private address is refused: {out}"
    );
    assert_eq!(private.count(), 0);

    let out = via_proxy(&proxy, &get("http://nothing.test/")).await;
    assert!(
        out.starts_with("HTTP/1.1 502") && out.contains("does not resolve"),
        "{out}"
    );
    assert_eq!(proxy.blocked().get(&DenyReason::Unresolvable), Some(&1));
}

#[tokio::test]
async fn airlocks_own_listener_and_metadata_are_always_refused() {
    let own = counting().await;
    let policy = Arc::new(
        Policy::from_config(&PolicyConfig {
            allow_private: vec!["127.0.0.0/8".into(), "169.254.0.0/16".into()],
            ..PolicyConfig::default()
        })
        .unwrap()
        .with_airlock_addresses(vec![own.addr]),
    );
    let proxy = EgressProxy::start(policy, Arc::new(SystemResolver))
        .await
        .unwrap();
    let out = via_proxy(
        &proxy,
        &get(&format!("http://127.0.0.1:{}/mcp", own.addr.port())),
    )
    .await;
    assert!(
        out.starts_with("HTTP/1.1 403") && out.contains("Airlock's own listener"),
        "{out}"
    );
    let out = via_proxy(
        &proxy,
        &format!(
            "CONNECT localhost:{0} HTTP/1.1\r\nHost: localhost:{0}\r\n\r\n",
            own.addr.port()
        ),
    )
    .await;
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    assert_eq!(own.count(), 0);
    // Bad input gets a clear answer.
    let out = via_proxy(&proxy, "NONSENSE\r\n\r\n").await;
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    let out = via_proxy(&proxy, &get("file:///etc/passwd")).await;
    assert!(
        out.starts_with("HTTP/1.1 403") && out.contains("scheme `file:`"),
        "{out}"
    );
}

#[tokio::test]
async fn a_deny_all_proxy_refuses_everything_until_its_policy_is_set() {
    let server = counting().await;
    let url = format!("http://127.0.0.1:{}/", server.addr.port());
    let connect = format!(
        "CONNECT 127.0.0.1:{0} HTTP/1.1\r\nHost: 127.0.0.1:{0}\r\n\r\n",
        server.addr.port()
    );
    let proxy = EgressProxy::start(Arc::new(Policy::deny_all()), Arc::new(SystemResolver))
        .await
        .unwrap();
    assert!(
        via_proxy(&proxy, &get(&url))
            .await
            .starts_with("HTTP/1.1 403")
    );
    assert!(
        via_proxy(&proxy, &connect)
            .await
            .starts_with("HTTP/1.1 403")
    );
    assert_eq!(server.count(), 0, "a deny-all proxy connected");

    // A connection opened before the policy is set (a preconnect) is judged by the
    // policy its request meets.
    let mut early = TcpStream::connect(proxy.addr()).await.unwrap();
    // The control: the same requests pass once the session's policy is set.
    proxy.set_policy(policy(&[format!("127.0.0.1:{}", server.addr.port())]));
    let reply = via_proxy(&proxy, &get(&url)).await;
    assert!(reply.ends_with("hello"), "{reply}");
    early.write_all(get(&url).as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = early.read_to_end(&mut out).await;
    let reply = String::from_utf8_lossy(&out);
    assert!(reply.ends_with("hello"), "{reply}");
    assert_eq!(server.count(), 2);
}

// A session's proxy is a loopback port every local user can dial: a process of
// another user (here `nobody`) is refused before its request is read, and reaches
// nothing through it; the same request from the proxy's own user goes through.
#[tokio::test]
async fn another_users_process_cannot_relay_through_a_sessions_proxy() {
    use std::os::unix::process::CommandExt as _;
    let allowed = counting().await;
    let proxy = EgressProxy::start(
        policy(&[format!("127.0.0.1:{}", allowed.addr.port())]),
        Arc::new(SystemResolver),
    )
    .await
    .unwrap();
    let request = get(&format!("http://127.0.0.1:{}/x", allowed.addr.port()));
    let script = format!(
        "import socket,sys\ns=socket.create_connection(('127.0.0.1',{}))\ns.sendall({:?}.encode())\nd=b''\ntry:\n  while True:\n    c=s.recv(4096)\n    if not c: break\n    d+=c\nexcept ConnectionResetError:\n  pass\nsys.stdout.write(d.decode())\n",
        proxy.addr().port(),
        request
    );
    let out = tokio::task::spawn_blocking(move || {
        // A tool run as another user, waited for here.
        #[allow(clippy::disallowed_methods)]
        std::process::Command::new("/usr/bin/python3")
            .args(["-c", &script])
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "",
        "another user was served"
    );
    assert_eq!(
        allowed.count(),
        0,
        "another user's request reached the listener"
    );

    let out = via_proxy(&proxy, &request).await;
    assert!(
        out.starts_with("HTTP/1.1 200") && out.ends_with("hello"),
        "{out}"
    );
    assert_eq!(allowed.count(), 1);
}
