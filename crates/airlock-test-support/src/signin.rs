//! A site whose sign-in a stored login keeps alive, served on loopback by a test:
//! a password form, an optional TOTP step (RFC 6238 over the seed the vault holds),
//! an optional "new device" step only a person can pass (a code "sent to a phone"
//! the test knows), sessions the test expires on command, and counters of what the
//! site saw.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;

/// The account's user name.
pub const USER: &str = "alice";
/// The account's password.
pub const PASSWORD: &str = "correct-horse-battery-7";
/// A base32 TOTP seed (RFC 6238's SHA-1 test key).
pub const SEED: &str = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
/// What the site "texts to the phone" for a new device.
pub const DEVICE_CODE: &str = "731946";

/// What the site saw.
#[derive(Default)]
pub struct Seen {
    /// Sessions issued (completed sign-ins).
    pub logins: u32,
    /// Probes of the admin page.
    pub probes: u32,
    /// TOTP codes it accepted.
    pub totp_codes: Vec<String>,
    /// Sign-ins that stopped at the new-device step.
    pub device_prompts: u32,
    /// What the lookalike on another origin received (`METHOD path body`).
    pub elsewhere: Vec<String>,
}

#[derive(Default)]
struct Inner {
    totp: bool,
    device: bool,
    sessions: HashSet<String>,
    // A sign-in part-way, by its cookie: the steps still to pass.
    pending: HashMap<String, Vec<&'static str>>,
    seen: Seen,
    next: u64,
    // The new-device page sends the browser here a second after it loads.
    leave_to: Option<String>,
}

/// The running site (its server stops with the test's runtime).
#[derive(Clone)]
pub struct Site {
    inner: Arc<Mutex<Inner>>,
    /// Its loopback port.
    pub port: u16,
    _server: Arc<tokio::task::JoinHandle<()>>,
}

impl Site {
    /// Starts it: with a TOTP step, with a new-device step.
    pub async fn start(totp: bool, device: bool) -> Site {
        let inner = Arc::new(Mutex::new(Inner {
            totp,
            device,
            ..Inner::default()
        }));
        let app = Router::new()
            .route("/admin/", get(admin))
            .route("/login/", get(login_page).post(login))
            .route("/totp/", get(totp_page).post(totp_check))
            .route("/device/", get(device_page).post(device_check))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let port = listener.local_addr().expect("a bound port").port();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Site {
            inner,
            port,
            _server: Arc::new(server),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A URL of the site.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    /// From now on the new-device page sends the browser, a second after it loads,
    /// to a lookalike on another origin (started now; its port is returned): a
    /// page that moved while a person was being asked for the code.
    pub async fn leave_device_page(&self) -> u16 {
        let app = Router::new()
            .route("/device/", get(lookalike).post(lookalike_post))
            .route("/loaded.png", get(lookalike_loaded))
            .with_state(self.inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let port = listener.local_addr().expect("a bound port").port();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        lock(&self.inner).leave_to = Some(format!("http://127.0.0.1:{port}/device/"));
        port
    }

    /// Ends every session (the site's sessions expire).
    pub fn expire(&self) {
        lock(&self.inner).sessions.clear();
    }

    /// Reads what the site saw.
    pub fn seen<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(&lock(&self.inner).seen)
    }
}

type Shared = State<Arc<Mutex<Inner>>>;

// A panicking handler must not wedge the site for the rest of the test.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

fn page(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"
    ))
}

async fn admin(State(inner): Shared, headers: HeaderMap) -> Response {
    let mut inner = lock(&inner);
    inner.seen.probes += 1;
    let signed_in = cookie(&headers, "sid").is_some_and(|sid| inner.sessions.contains(&sid));
    if signed_in {
        page(
            "Site administration",
            "<h1>Site administration</h1><p>Welcome, alice.</p><a href=\"/logout/\">Log out</a>",
        )
        .into_response()
    } else {
        Redirect::to("/login/?next=/admin/").into_response()
    }
}

async fn login_page() -> Html<String> {
    page(
        "Log in",
        "<h1>Log in</h1><form method=post action=\"/login/\">\
         <label>Username <input name=username autocomplete=username></label>\
         <label>Password <input type=password name=password></label>\
         <button>Log in</button></form>",
    )
}

#[derive(serde::Deserialize)]
struct Credentials {
    username: String,
    password: String,
}

// The next step of a sign-in that passed one, or its session.
fn next_step(inner: &mut Inner, id: String, mut rest: Vec<&'static str>) -> Response {
    if rest.is_empty() {
        inner.next += 1;
        let sid = format!("sess-{}-{:x}", inner.next, rand_word(inner.next));
        inner.sessions.insert(sid.clone());
        inner.seen.logins += 1;
        inner.pending.remove(&id);
        return (
            StatusCode::SEE_OTHER,
            [
                (header::SET_COOKIE, format!("sid={sid}; Path=/; HttpOnly")),
                (header::LOCATION, "/admin/".to_owned()),
            ],
        )
            .into_response();
    }
    let step = rest.remove(0);
    if step == "/device/" {
        inner.seen.device_prompts += 1;
    }
    inner.pending.insert(id.clone(), rest);
    (
        StatusCode::SEE_OTHER,
        [
            (
                header::SET_COOKIE,
                format!("pending={id}; Path=/; HttpOnly"),
            ),
            (header::LOCATION, step.to_owned()),
        ],
    )
        .into_response()
}

fn rand_word(n: u64) -> u64 {
    n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d
}

async fn login(State(inner): Shared, Form(form): Form<Credentials>) -> Response {
    let mut inner = lock(&inner);
    if form.username != USER || form.password != PASSWORD {
        return page(
            "Log in",
            "<h1>Log in</h1><p>Please enter a correct username and password.</p>",
        )
        .into_response();
    }
    inner.next += 1;
    let id = format!("p{}", inner.next);
    let mut rest = Vec::new();
    if inner.totp {
        rest.push("/totp/");
    }
    if inner.device {
        rest.push("/device/");
    }
    next_step(&mut inner, id, rest)
}

async fn totp_page() -> Html<String> {
    totp_html()
}

fn totp_html() -> Html<String> {
    page(
        "Two-step verification",
        "<h1>Two-step verification</h1><form method=post action=\"/totp/\">\
         <label>Authentication code <input name=code inputmode=numeric></label>\
         <button>Verify</button></form>",
    )
}

async fn device_page(State(inner): Shared) -> Html<String> {
    let leave_to = lock(&inner).leave_to.clone();
    match leave_to {
        Some(to) => page(
            "New device",
            &format!(
                "<meta http-equiv=\"refresh\" content=\"1;url={to}\"><h1>New device</h1><p>Enter the code we sent to your phone.</p>\
                 <form method=post action=\"/device/\">\
                 <label>Device code <input name=code autofocus></label><button>Confirm</button></form>"
            ),
        ),
        None => device_html(),
    }
}

async fn lookalike(State(inner): Shared) -> Html<String> {
    lock(&inner).seen.elsewhere.push("GET /device/".to_owned());
    page(
        "New device",
        "<h1>New device</h1><form method=post action=\"/device/\">\
         <label>Device code <input name=code autofocus></label><button>Confirm</button></form>\
         <img src=\"/loaded.png\" alt=\"\">",
    )
}

async fn lookalike_loaded(State(inner): Shared) -> StatusCode {
    lock(&inner)
        .seen
        .elsewhere
        .push("GET /loaded.png".to_owned());
    StatusCode::NO_CONTENT
}

async fn lookalike_post(State(inner): Shared, body: String) -> StatusCode {
    lock(&inner)
        .seen
        .elsewhere
        .push(format!("POST /device/ {body}"));
    StatusCode::NO_CONTENT
}

fn device_html() -> Html<String> {
    page(
        "New device",
        "<h1>New device</h1><p>Enter the code we sent to your phone.</p>\
         <form method=post action=\"/device/\">\
         <label>Device code <input name=code autofocus></label><button>Confirm</button></form>",
    )
}

#[derive(serde::Deserialize)]
struct Code {
    code: String,
}

fn pending(inner: &Inner, headers: &HeaderMap) -> Option<(String, Vec<&'static str>)> {
    let id = cookie(headers, "pending")?;
    let rest = inner.pending.get(&id)?.clone();
    Some((id, rest))
}

async fn totp_check(State(inner): Shared, headers: HeaderMap, Form(form): Form<Code>) -> Response {
    let mut inner = lock(&inner);
    let Some((id, rest)) = pending(&inner, &headers) else {
        return Redirect::to("/login/").into_response();
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let key = data_encoding_base32(SEED);
    // The current step or the one before (a code typed at a step's edge).
    let ok = [now, now.saturating_sub(30)].iter().any(|t| {
        airlock_vault::totp::totp(&key, *t, 30, 6, airlock_vault::totp::Algorithm::Sha1)
            == form.code
    });
    if !ok {
        return totp_html().into_response();
    }
    inner.seen.totp_codes.push(form.code.clone());
    next_step(&mut inner, id, rest)
}

async fn device_check(
    State(inner): Shared,
    headers: HeaderMap,
    Form(form): Form<Code>,
) -> Response {
    let mut inner = lock(&inner);
    let Some((id, rest)) = pending(&inner, &headers) else {
        return Redirect::to("/login/").into_response();
    };
    if form.code.trim() != DEVICE_CODE {
        return device_html().into_response();
    }
    next_step(&mut inner, id, rest)
}

// RFC 4648 base32 without padding, as authenticator apps write seeds.
fn data_encoding_base32(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut bits: u64 = 0;
    let mut n = 0;
    let mut out = Vec::new();
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|a| *a == c).unwrap_or(0) as u64;
        bits = (bits << 5) | v;
        n += 5;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
        }
    }
    out
}
