//! A minimal HTTP/1.1 server for fixture pages, bound to 127.0.0.1:0.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The fixture app's login: user name.
pub const APP_USER: &str = "alice";
/// The fixture app's password (a test stores it in the vault).
pub const APP_PASSWORD: &str = "Fixture-Pass&<9>\"q'/Z";
/// The session cookie `/app/login` sets and `/app/home` requires.
pub const APP_SESSION: &str = "sess-7f3a9c2e1177";
/// The header value `/app/api` requires in `X-Api-Key`.
pub const APP_API_KEY: &str = "api-key-5d8e2b44";

/// One fixture server on an ephemeral loopback port.
pub struct FixtureServer {
    port: u16,
    connections: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FixtureServer {
    /// Serves `root` on `127.0.0.1:0`.
    pub async fn start(root: PathBuf) -> FixtureServer {
        FixtureServer::start_at(root, "127.0.0.1:0".parse().expect("an address")).await
    }

    /// Serves the bundled pages on `addr` (e.g. `127.0.0.2` on the port of another
    /// server, so a name can be re-pointed from one to the other).
    pub async fn start_bundled_at(addr: std::net::SocketAddr) -> FixtureServer {
        FixtureServer::start_at(bundled_root(), addr).await
    }

    async fn start_at(root: PathBuf, addr: std::net::SocketAddr) -> FixtureServer {
        let listener = TcpListener::bind(addr)
            .await
            .unwrap_or_else(|e| panic!("bind {addr}: {e}"));
        let port = listener.local_addr().expect("local addr").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counter = connections.clone();
        let root = Arc::new(root);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let root = root.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, &root).await;
                });
            }
        });
        FixtureServer {
            port,
            connections,
            task,
        }
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Two fixture servers on different ports: `a` is the site under test at
/// `http://127.0.0.1:PA`, `b` a cross-origin one; `b` is also reachable as
/// `http://localhost:PB`, a different *site*, which Chromium puts out of process.
pub struct FixtureSite {
    /// The site under test.
    pub a: FixtureServer,
    /// The other origin.
    pub b: FixtureServer,
}

impl FixtureSite {
    /// The egress settings tests run under: public addresses plus the site under
    /// test's one loopback port (the policy denies loopback unless told). Add to it
    /// for more.
    pub fn policy_config(&self) -> airlock_policy::PolicyConfig {
        airlock_policy::PolicyConfig {
            allow_private: vec![format!("127.0.0.1:{}", self.a.port())],
            ..airlock_policy::PolicyConfig::default()
        }
    }

    /// [`FixtureSite::policy_config`] as a policy.
    pub fn policy(&self) -> airlock_policy::Policy {
        match airlock_policy::Policy::from_config(&self.policy_config()) {
            Ok(policy) => policy,
            // One allowed loopback port is always a valid policy.
            Err(e) => unreachable!("the fixture policy is invalid: {e}"),
        }
    }

    /// Starts both servers over the bundled `fixtures/site` pages.
    pub async fn start() -> FixtureSite {
        let root = bundled_root();
        FixtureSite {
            a: FixtureServer::start(root.clone()).await,
            b: FixtureServer::start(root).await,
        }
    }

    /// `http://127.0.0.1:PA/<path>`.
    pub fn url(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}/{}",
            self.a.port(),
            path.trim_start_matches('/')
        )
    }

    /// `http://127.0.0.1:PB/<path>`: cross-origin, same site.
    pub fn other_origin(&self, path: &str) -> String {
        format!(
            "http://127.0.0.1:{}/{}",
            self.b.port(),
            path.trim_start_matches('/')
        )
    }

    /// `http://localhost:PB/<path>`: cross-site (an out-of-process frame).
    pub fn other_site(&self, path: &str) -> String {
        format!(
            "http://localhost:{}/{}",
            self.b.port(),
            path.trim_start_matches('/')
        )
    }
}

fn bundled_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/site")
}

async fn serve(mut stream: TcpStream, root: &Path) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await?;
        if n == 0 || buf.len() > 64 * 1024 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(0) + 4;
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let header_value = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    // A request body (the login form's POST), up to its Content-Length.
    let length: usize = header_value("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
        .min(64 * 1024);
    let mut body_in = buf[head_end.min(buf.len())..].to_vec();
    while body_in.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body_in.extend_from_slice(&chunk[..n]);
    }
    let form = String::from_utf8_lossy(&body_in).into_owned();
    let form_field = |name: &str| {
        form.split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| percent_decode(&v.replace('+', " ")))
    };
    let cookie_sid = header_value("cookie").is_some_and(|c| {
        c.split(';')
            .any(|kv| kv.trim() == format!("sid={APP_SESSION}"))
    });
    let target = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_owned())
    };
    let (status, content_type, body): (&str, &str, Vec<u8>) = match path {
        "/slow" => {
            let ms: u64 = param("ms").and_then(|v| v.parse().ok()).unwrap_or(1000);
            tokio::time::sleep(Duration::from_millis(ms.min(30_000))).await;
            (
                "200 OK",
                "text/html",
                b"<!doctype html><title>Slow</title><h1>Finally loaded</h1>".to_vec(),
            )
        }
        "/admin" => {
            let rows: usize = param("rows").and_then(|v| v.parse().ok()).unwrap_or(2000);
            (
                "200 OK",
                "text/html",
                admin_table(rows.min(20_000)).into_bytes(),
            )
        }
        "/redirect" => {
            let to = param("to")
                .map(|t| percent_decode(&t))
                .unwrap_or_else(|| "/".to_owned());
            let head = format!(
                "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).await?;
            return stream.shutdown().await;
        }
        "/app/login" => {
            if form_field("username").as_deref() == Some(APP_USER)
                && form_field("password").as_deref() == Some(APP_PASSWORD)
            {
                let head = format!(
                    "HTTP/1.1 302 Found\r\nLocation: /app/home\r\nSet-Cookie: sid={APP_SESSION}; Path=/; HttpOnly\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                stream.write_all(head.as_bytes()).await?;
                return stream.shutdown().await;
            }
            (
                "401 Unauthorized",
                "text/html",
                b"<!doctype html><title>Sign in failed</title><h1>Wrong user name or password</h1>"
                    .to_vec(),
            )
        }
        "/app/home" if cookie_sid => (
            "200 OK",
            "text/html",
            format!("<!doctype html><title>Home</title><h1>Welcome back, {APP_USER}</h1>")
                .into_bytes(),
        ),
        "/app/home" => (
            "401 Unauthorized",
            "text/html",
            b"<!doctype html><title>Login required</title><h1>Login required</h1>".to_vec(),
        ),
        "/app/api" if header_value("x-api-key").as_deref() == Some(APP_API_KEY) => {
            ("200 OK", "text/plain", b"api ok".to_vec())
        }
        "/app/api" => ("403 Forbidden", "text/plain", b"api key missing".to_vec()),
        "/app/headers" => {
            // Every request header, as the server received it.
            let mut html =
                String::from("<!doctype html><title>Headers</title><h1>Request headers</h1><ul>");
            for line in head.lines().skip(1).filter(|l| l.contains(':')) {
                let escaped = line.replace('&', "&amp;").replace('<', "&lt;");
                html.push_str(&format!("<li>{escaped}</li>"));
            }
            html.push_str("</ul>");
            ("200 OK", "text/html", html.into_bytes())
        }
        "/status/404" => (
            "404 Not Found",
            "text/html",
            b"<!doctype html><title>Missing</title><p>not here</p>".to_vec(),
        ),
        "/download.bin" => ("200 OK", "application/octet-stream", b"binary".to_vec()),
        // `bytes` bytes (at most 20 MiB): a download larger than one message's piece.
        "/big.bin" => {
            let n: usize = param("bytes").and_then(|v| v.parse().ok()).unwrap_or(1024);
            (
                "200 OK",
                "application/octet-stream",
                vec![b'x'; n.min(20 << 20)],
            )
        }
        _ => {
            let relative = path.trim_start_matches('/');
            let relative = if relative.is_empty() {
                "index.html"
            } else {
                relative
            };
            if relative.contains("..") {
                ("403 Forbidden", "text/plain", b"no".to_vec())
            } else {
                match tokio::fs::read(root.join(relative)).await {
                    Ok(bytes) => ("200 OK", content_type_of(relative), bytes),
                    Err(_) => ("404 Not Found", "text/plain", b"not found".to_vec()),
                }
            }
        }
    };
    let header = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(header.as_bytes()).await?;
    stream.write_all(&body).await?;
    stream.shutdown().await
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(&text[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn content_type_of(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html",
        Some("js") => "text/javascript",
        Some("css") => "text/css",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

/// The admin page: a table of `rows` users with an Edit and a Delete button per row.
fn admin_table(rows: usize) -> String {
    let mut html = String::with_capacity(rows * 220);
    html.push_str("<!doctype html><html><head><title>Admin</title></head><body><h1>Users</h1><table><caption>Accounts</caption><thead><tr><th>Name</th><th>Email</th><th>Role</th><th>Actions</th></tr></thead><tbody>");
    for i in 0..rows {
        let role = if i % 7 == 0 { "admin" } else { "member" };
        html.push_str(&format!(
            "<tr><td>user{i}</td><td>user{i}@example.com</td><td>{role}</td><td><button onclick=\"this.textContent='Editing'\">Edit</button> <button onclick=\"this.closest('tr').remove()\">Delete</button></td></tr>"
        ));
    }
    html.push_str("</tbody></table></body></html>");
    html
}
