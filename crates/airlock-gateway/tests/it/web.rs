//! A small web for tests: sites on their own loopback ports, each serving the pages a
//! test gives it (a search box and a contact form where it gave none) and recording
//! every request it gets (request line and body).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Every site's page when no flow gave it one: a search box and a contact form.
pub(crate) const DEFAULT_PAGE: &str = "<title>Welcome</title><form action=\"/search\"><input name=\"q\" aria-label=\"Search\"><button>Search</button></form>\
<form method=\"post\" action=\"/send\"><label>Name <input name=\"name\"></label><label>Email <input name=\"email\"></label><label>Message <input name=\"message\"></label><button>Send</button></form>";

/// The small web: every site on its own loopback port, serving the pages the flows
/// give it, and recording each request it gets.
pub(crate) struct Web {
    names: Vec<&'static str>,
    pub(crate) ports: Vec<u16>,
    pages: Arc<Mutex<HashMap<(usize, String), String>>>,
    seen: Arc<Mutex<Vec<(usize, String)>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Web {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Web {
    pub(crate) async fn start(names: &[&'static str]) -> Web {
        let pages: Arc<Mutex<HashMap<(usize, String), String>>> = Arc::default();
        let seen: Arc<Mutex<Vec<(usize, String)>>> = Arc::default();
        let mut ports = Vec::new();
        let mut tasks = Vec::new();
        for site in 0..names.len() {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            ports.push(listener.local_addr().unwrap().port());
            let (pages, seen) = (pages.clone(), seen.clone());
            tasks.push(tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (pages, seen) = (pages.clone(), seen.clone());
                    tokio::spawn(serve(site, stream, pages, seen));
                }
            }));
        }
        Web {
            names: names.to_vec(),
            ports,
            pages,
            seen,
            tasks,
        }
    }

    pub(crate) fn site(&self, name: &str) -> usize {
        self.names
            .iter()
            .position(|s| *s == name)
            .unwrap_or_else(|| panic!("no site {name}"))
    }

    pub(crate) fn origin(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}", self.ports[self.site(name)])
    }

    pub(crate) fn url(&self, name: &str, path: &str) -> String {
        format!("{}{path}", self.origin(name))
    }

    pub(crate) fn page(&self, name: &str, path: &str, html: String) {
        self.pages
            .lock()
            .unwrap()
            .insert((self.site(name), path.to_owned()), html);
    }

    /// `base` with every site of this web allowed (the policy denies loopback unless
    /// told).
    pub(crate) fn allowed_in(
        &self,
        mut base: airlock_policy::PolicyConfig,
    ) -> airlock_policy::Policy {
        for port in &self.ports {
            base.allow_private.push(format!("127.0.0.1:{port}"));
        }
        airlock_policy::Policy::from_config(&base).unwrap()
    }

    /// Serves `pages` (site → path → HTML) from now on, in place of every page before.
    pub(crate) fn set_pages(&self, pages: &serde_json::Value) {
        let mut map = self.pages.lock().unwrap();
        map.clear();
        for (site, paths) in pages.as_object().into_iter().flatten() {
            let Some(index) = self.names.iter().position(|s| s == site) else {
                continue;
            };
            for (path, html) in paths.as_object().into_iter().flatten() {
                map.insert(
                    (index, path.clone()),
                    html.as_str().unwrap_or_default().to_owned(),
                );
            }
        }
    }

    /// Requests `name` got so far (request line and body).
    pub(crate) fn requests(&self, name: &str) -> Vec<String> {
        let site = self.site(name);
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|(s, _)| *s == site)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

async fn serve(
    site: usize,
    mut stream: tokio::net::TcpStream,
    pages: Arc<Mutex<HashMap<(usize, String), String>>>,
    seen: Arc<Mutex<Vec<(usize, String)>>>,
) {
    let Some((line, body)) = read_request(&mut stream).await else {
        return;
    };
    let body = body.as_str();
    if line.contains("/favicon.ico") {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
        return;
    }
    seen.lock().unwrap().push((site, format!("{line} {body}")));
    let target = line.split(' ').nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or("/");
    let page = pages
        .lock()
        .unwrap()
        .get(&(site, path.to_owned()))
        .cloned()
        .unwrap_or_else(|| DEFAULT_PAGE.to_owned());
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
        page.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
}

/// One HTTP/1.1 request from `stream`: its request line and its body (as much as
/// Content-Length says, within 32 KiB); `None` when the peer went away first.
pub(crate) async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<(String, String)> {
    let mut buf = vec![0u8; 32 * 1024];
    let mut got = 0;
    loop {
        let n = stream.read(&mut buf[got..]).await.ok()?;
        if n == 0 {
            break;
        }
        got += n;
        let text = String::from_utf8_lossy(&buf[..got]).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if body.len() >= length || got == buf.len() {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&buf[..got]).to_string();
    let line = text.lines().next().unwrap_or_default().to_owned();
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    Some((line, body))
}
