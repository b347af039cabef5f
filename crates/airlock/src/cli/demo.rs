//! `airlock demo`: everything Airlock does in two minutes, without writing an agent.
//! A bundled demo site on loopback, a demo credential in a throwaway vault, the
//! gateway with a policy that allows only that site and the console, and a scripted
//! agent speaking MCP to the gateway (an rmcp client on an in-process pipe, the same
//! gateway the console shows): it logs in with placeholders, reads a page, tries to
//! leave for a host the policy denies, and clicks "Delete account", which waits for
//! the operator's decision in the console. Ctrl-C stops everything and removes the
//! throwaway data.

#![allow(clippy::print_stdout)] // The tour's narration is its product.

use hex::ToHex as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use airlock_config::{Config, EnvSource, ProcessEnv, vars};
use anyhow::Context as _;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

/// How long the demo's "Delete account" waits for a decision in the console.
const APPROVAL_WAIT_SECS: u64 = 600;

/// Runs the tour. `keep`: a data directory of the caller's (`--data-dir`), new or
/// empty, where the demo's vault, audit log and recordings stay afterwards for
/// `airlock audit verify` and `replay`; otherwise a throwaway one is removed.
pub(crate) async fn run(
    listen: Option<SocketAddr>,
    open: bool,
    keep: Option<std::path::PathBuf>,
) -> anyhow::Result<()> {
    let Some(dir) = keep else {
        let data = tempdir()?;
        say(&format!(
            "data: {} (thrown away when the demo stops; keep it with --data-dir DIR)",
            data.display()
        ));
        let result = demo(&data, listen, open).await;
        // The throwaway vault, store and recordings go, whatever happened.
        let _ = std::fs::remove_dir_all(&data);
        if result.is_ok() {
            say("stopped: no browser, no server, no demo data left");
        }
        return result;
    };
    // The demo's vault holds a credential of its own under a key of its own: it
    // never writes into a data directory that holds something else (an operator's).
    let occupied = std::fs::read_dir(&dir)
        .map(|mut entries| entries.next().is_some())
        .unwrap_or(false);
    anyhow::ensure!(
        !occupied,
        "{} is not empty: the demo keeps its data only in a new or empty directory, so it never mixes with a real vault or audit log",
        dir.display()
    );
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    say(&format!(
        "data: {} (kept: `airlock audit verify --data-dir {0}` after the demo)",
        dir.display()
    ));
    let result = demo(&dir, listen, open).await;
    if result.is_ok() {
        say(&format!(
            "stopped: no browser, no server; the demo's data is kept in {}",
            dir.display()
        ));
    }
    result
}

async fn demo(
    data: &std::path::Path,
    listen: Option<SocketAddr>,
    open: bool,
) -> anyhow::Result<()> {
    let password = random_token(12);
    let site = DemoSite::start(password.clone()).await?;
    say(&format!(
        "demo site: {} (user alice; her password is in the vault, never shown)",
        site.origin
    ));

    let admin_key = random_token(16);
    let config = demo_config(data, &site, &admin_key)?;
    let (vault, _) = super::vault::open_vault(&config).await?;
    let mut fields = airlock_vault::Fields::default();
    fields.username = Some("alice".to_owned());
    fields.password = Some(password.to_string());
    vault
        .set(&airlock_vault::Secret {
            tenant: "default".to_owned(),
            name: "demo".to_owned(),
            origins: vec![site.origin.clone()],
            fields,
        })
        .await
        .context("storing the demo credential")?;
    drop(vault);

    // The server stops on Ctrl-C or SIGTERM, as `airlock serve` does.
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let stop = super::serve::shutdown_signal()?;
    let (stopped_tx, stopped_rx) = tokio::sync::watch::channel(false);
    let stop = async move {
        stop.await;
        let _ = stopped_tx.send(true);
    };
    let server = tokio::spawn(super::serve::serve_until(
        config,
        listen,
        stop,
        Some(ready_tx),
    ));
    let Ok((addr, gateway)) = ready_rx.await else {
        return server.await.context("the server task")?;
    };
    let console = format!("http://{addr}/");
    say(&format!(
        "console: {console}  (sign in with the admin key {})",
        admin_key.as_str()
    ));
    if open {
        open_in_browser(&console);
    }

    let agent = tokio::spawn(scripted_agent(
        gateway,
        site.origin.clone(),
        console.clone(),
    ));
    let mut stopped = stopped_rx.clone();
    tokio::select! {
        finished = agent => match finished {
            Ok(Ok(())) => say("the agent is done. The console stays up: look at Audit and Replay. Ctrl-C stops everything."),
            Ok(Err(e)) => say(&format!("the agent stopped: {e:#}")),
            Err(e) => say(&format!("the agent stopped: {e}")),
        },
        _ = stopped.changed() => {}
    }
    let served = server.await.context("the server task")?;
    site.stop().await;
    served
}

fn say(line: &str) {
    println!("[demo] {line}");
}

// A data directory of the demo's own, so it never touches the operator's.
fn tempdir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("airlock-demo-{}", random_token(6).as_str()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

fn random_token(bytes: usize) -> zeroize::Zeroizing<String> {
    let mut raw = vec![0u8; bytes];
    getrandom::fill(&mut raw).expect("the OS gives random bytes");
    zeroize::Zeroizing::new(raw.encode_hex::<String>())
}

// The demo's configuration: only the demo site is reachable, approvals go to the
// console, the agent (the gateway's local caller) may use the demo credential.
fn demo_config(data: &std::path::Path, site: &DemoSite, admin_key: &str) -> anyhow::Result<Config> {
    let text = format!(
        "data_dir = {data:?}\n\
         [server]\nadmin_key = \"{admin_key}\"\nrole = \"operate\"\n\
         [policy]\nallow_hosts = [\"127.0.0.1\"]\nallow_private = [\"{addr}\"]\n\
         [approvals]\ntimeout_secs = {APPROVAL_WAIT_SECS}\nin_client = false\n\
         [sessions]\nwarm = 0\n",
        data = data.display().to_string(),
        addr = site.addr,
    );
    let path = data.join("airlock.toml");
    std::fs::write(&path, &text).context("writing the demo's config")?;
    Config::load(Some((&path, &text)), &DemoEnv).context("the demo's config")
}

// Only where Chromium is comes from the environment: the demo's keys, data and
// policy are its own.
struct DemoEnv;

impl EnvSource for DemoEnv {
    fn get(&self, name: &str) -> Option<String> {
        (name == vars::CHROME)
            .then(|| ProcessEnv.get(name))
            .flatten()
    }
}

// Hands the URL to the desktop's browser. `xdg-open` returns once it has, so it is
// waited for (off the runtime) rather than stopped: no process of it outlives this.
fn open_in_browser(url: &str) {
    #[allow(clippy::disallowed_methods)]
    let opened = std::process::Command::new("xdg-open")
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match opened {
        Ok(mut child) => {
            tokio::task::spawn_blocking(move || child.wait());
        }
        Err(_) => say("(open the console URL above in your browser)"),
    }
}

// ---- the scripted agent ------------------------------------------------------------

async fn scripted_agent(
    gateway: Arc<airlock_gateway::Gateway>,
    site: String,
    console: String,
) -> anyhow::Result<()> {
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    let server = airlock_mcp::AirlockMcp::new(gateway, airlock_config::ToolProfile::default());
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    let agent = ().serve(client_end).await.context("the MCP handshake")?;
    let call = |name: &'static str, args: Value| {
        let agent = &agent;
        async move {
            let Value::Object(args) = args else {
                anyhow::bail!("arguments are an object");
            };
            let result = agent
                .call_tool(CallToolRequestParams::new(name).with_arguments(args))
                .await
                .with_context(|| format!("calling {name}"))?;
            let text: Vec<String> = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            Ok::<_, anyhow::Error>((result.is_error == Some(true), text.join("\n")))
        }
    };
    let show = |text: &str, lines: usize| {
        for line in text.lines().take(lines) {
            println!("         {line}");
        }
    };

    say(
        "agent 1/5: opens a browser session with the `demo` credential (the agent never sees its values)",
    );
    let (_, text) = call("browser_session_open", json!({"credentials": ["demo"]})).await?;
    show(&text, 2);

    say("agent 2/5: logs in, typing {{secret:demo.username}} and {{secret:demo.password}}");
    call(
        "browser_navigate",
        json!({"url": format!("{site}/login"), "snapshot": "none"}),
    )
    .await?;
    call(
        "browser_type",
        json!({"role": "textbox", "name": "Username", "text": "{{secret:demo.username}}"}),
    )
    .await?;
    let (failed, text) = call(
        "browser_type",
        json!({"role": "textbox", "name": "Password", "text": "{{secret:demo.password}}", "submit": true}),
    )
    .await?;
    show(&text, if failed { 3 } else { 2 });

    say("agent 3/5: reads the page (page text arrives fenced as untrusted)");
    let (_, text) = call("browser_snapshot", json!({})).await?;
    show(&text, 12);

    say("agent 4/5: tries to follow a link off the allowed site");
    let (_, text) = call(
        "browser_navigate",
        json!({"url": "https://example.com/offers"}),
    )
    .await?;
    show(&text, 2);
    call(
        "browser_navigate",
        json!({"url": format!("{site}/account"), "snapshot": "none"}),
    )
    .await?;

    say(&format!(
        "agent 5/5: clicks \"Delete account\": held for your decision. Open {console}console/approvals and Approve or Deny (it waits up to {} min)",
        APPROVAL_WAIT_SECS / 60
    ));
    let (_, text) = call(
        "browser_click",
        json!({"role": "button", "name": "Delete account"}),
    )
    .await?;
    // The click, the page then, the request it caused (sent under the approval), and
    // the page that request brought.
    show(&text, 10);
    agent.cancel().await.ok();
    Ok(())
}

// ---- the demo site -----------------------------------------------------------------

struct DemoSite {
    addr: SocketAddr,
    origin: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct SiteState {
    password: Arc<zeroize::Zeroizing<String>>,
    session: Arc<zeroize::Zeroizing<String>>,
}

impl DemoSite {
    async fn start(password: zeroize::Zeroizing<String>) -> anyhow::Result<DemoSite> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the demo site")?;
        let addr = listener.local_addr()?;
        let state = SiteState {
            password: Arc::new(password),
            session: Arc::new(random_token(16)),
        };
        let app = Router::new()
            .route("/", get(|| async { Redirect::to("/login") }))
            .route("/login", get(login_page).post(login))
            .route("/account", get(account))
            .route("/account/delete", post(delete))
            .with_state(state);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(DemoSite {
            addr,
            origin: format!("http://{addr}"),
            stop,
            task,
        })
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
    }
}

fn page(title: &str, body: &str) -> Html<String> {
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head><body>{body}</body></html>"
    ))
}

async fn login_page() -> Html<String> {
    login_form("")
}

fn login_form(error: &str) -> Html<String> {
    page(
        "Demo Bank — sign in",
        &format!(
            "<main><h1>Demo Bank</h1>{error}<form method=\"post\" action=\"/login\">\
             <label for=\"u\">Username</label> <input id=\"u\" name=\"username\" autocomplete=\"username\"><br>\
             <label for=\"p\">Password</label> <input id=\"p\" name=\"password\" type=\"password\" autocomplete=\"current-password\"><br>\
             <button type=\"submit\">Sign in</button></form></main>"
        ),
    )
}

#[derive(serde::Deserialize)]
struct LoginForm {
    username: String,
    password: String,
}

async fn login(State(state): State<SiteState>, Form(form): Form<LoginForm>) -> Response {
    if form.username != "alice" || form.password != state.password.as_str() {
        return (
            StatusCode::UNAUTHORIZED,
            login_form("<p role=\"alert\">Wrong username or password.</p>"),
        )
            .into_response();
    }
    let cookie = format!(
        "demo_session={}; HttpOnly; SameSite=Lax; Path=/",
        state.session.as_str()
    );
    ([(header::SET_COOKIE, cookie)], Redirect::to("/account")).into_response()
}

fn signed_in(state: &SiteState, headers: &HeaderMap) -> bool {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .any(|c| c.trim() == format!("demo_session={}", state.session.as_str()))
}

async fn account(State(state): State<SiteState>, headers: HeaderMap) -> Response {
    if !signed_in(&state, &headers) {
        return Redirect::to("/login").into_response();
    }
    page(
        "Demo Bank — your account",
        "<main><h1>Your account</h1><p>Signed in as alice. Balance: 1,024.00 credits.</p>\
         <p><a href=\"https://example.com/offers\">Partner offers</a></p>\
         <form method=\"post\" action=\"/account/delete\"><button type=\"submit\">Delete account</button></form></main>",
    )
    .into_response()
}

async fn delete(State(state): State<SiteState>, headers: HeaderMap) -> Response {
    if !signed_in(&state, &headers) {
        return Redirect::to("/login").into_response();
    }
    page(
        "Demo Bank — deleted",
        "<main><h1>Account deleted</h1><p>Goodbye, alice.</p></main>",
    )
    .into_response()
}
