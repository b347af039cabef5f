//! Airlock's MCP surface, on the official Rust SDK (`rmcp`): every `browser_*` tool of
//! SPEC.md with JSON schemas and truthful annotations, served over stdio
//! ([`serve_stdio`]) and Streamable HTTP ([`http_service`], mounted by `airlock-http`).
//!
//! Each MCP session gets its own [`AgentSession`](airlock_gateway::AgentSession) and so
//! its own browser session; tool calls go straight to the gateway and its
//! [`ToolOutput`](airlock_gateway::ToolOutput) becomes the tool result. Only this crate
//! knows rmcp. The tools it lists and the checks of their arguments are the
//! catalogue's (`airlock-tools`), which every surface shares.

mod elicit;
#[cfg(feature = "conformance-fixtures")]
mod fixtures;
mod homes;
mod login_offer;
mod server;
mod shell;
mod stdio;
mod tasks;

use std::sync::Arc;

use airlock_config::ToolProfile;
use airlock_gateway::Gateway;
use rmcp::ServiceExt as _;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

pub use homes::Sessions;
pub use server::AirlockMcp;
pub use stdio::{Starting, starting};

// The suite's fixtures answer whatever a caller asks them, around every check:
// they exist to test the protocol layer and must never ship.
#[cfg(all(feature = "conformance-fixtures", not(debug_assertions)))]
compile_error!(
    "the conformance fixtures are for test builds only: build without `conformance-fixtures`"
);

/// What serves each MCP session over HTTP: Airlock's server, or in a conformance test
/// build that server with the suite's fixtures beside it.
#[cfg(not(feature = "conformance-fixtures"))]
pub type Served = AirlockMcp;
/// What serves each MCP session over HTTP (a conformance test build: Airlock's server
/// with the suite's fixtures beside it).
#[cfg(feature = "conformance-fixtures")]
pub type Served = fixtures::WithFixtures;

/// The Streamable HTTP service type `airlock-http` mounts at `/mcp`.
pub type McpHttpService = StreamableHttpService<Served, Sessions>;

/// Settings of the HTTP transport.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Which tools to offer.
    pub profile: ToolProfile,
    /// `Host` values accepted (DNS-rebinding defence).
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted; every other present Origin gets 403.
    pub allowed_origins: Vec<String>,
    /// Largest request body; bigger ones get 413.
    pub max_body_bytes: usize,
    /// Where clients reach the server (`http://127.0.0.1:8080`): the start of every
    /// `mcp_url` handed out.
    pub public_url: Option<String>,
    /// What runs `browser_run_task` (offered when the operator configured a model).
    pub tasks: Option<Arc<airlock_task::Runner>>,
    /// Stored logins: a client that can show a URL is offered the link of one that
    /// needs a person.
    pub logins: Option<Arc<airlock_login::Logins>>,
}

/// The Streamable HTTP service: one [`AirlockMcp`] (and agent session) per MCP session;
/// on a shared store a session's next request may reach any replica (`homes.rs`). With
/// it, its sessions: who may end which.
pub fn http_service(
    gateway: Arc<Gateway>,
    options: HttpOptions,
) -> (McpHttpService, Arc<Sessions>) {
    let profile = options.profile;
    let public_url = options.public_url.clone();
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts)
        .with_max_request_body_bytes(options.max_body_bytes);
    // rmcp leaves Origin checking off when the list is empty; Airlock always checks,
    // so an empty list means "no browser origin at all".
    config = if options.allowed_origins.is_empty() {
        config.enforce_origin_validation()
    } else {
        config.with_allowed_origins(options.allowed_origins)
    };
    if gateway.has_homes() {
        config.session_store = Some(Arc::new(homes::HomeStore(gateway.clone())));
    }
    let sessions = Arc::new(Sessions::new(&gateway));
    let tasks = options.tasks.clone();
    let logins = options.logins.clone();
    let ending = Arc::downgrade(&sessions);
    let task_store = tasks::Tasks::default();
    let service = StreamableHttpService::new(
        move || {
            let server = AirlockMcp::new(gateway.clone(), profile)
                .at(public_url.clone())
                .with_tasks(tasks.clone())
                .with_logins(logins.clone())
                .in_sessions_weak(ending.clone())
                .with_task_store(task_store.clone());
            #[cfg(feature = "conformance-fixtures")]
            let server = fixtures::WithFixtures::new(server);
            Ok(server)
        },
        sessions.clone(),
        config,
    );
    (service, sessions)
}

/// Serves MCP over stdin/stdout until the client disconnects; logs must go to stderr.
/// `initialize` is answered at once; requests that need the engine wait for
/// `gateway`, and if it cannot start, serving ends with its reason.
pub async fn serve_stdio(
    gateway: Starting,
    profile: ToolProfile,
    tasks: airlock_config::Tasks,
) -> Result<(), std::io::Error> {
    let server = stdio::Deferred::new(gateway.clone(), profile, tasks);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| std::io::Error::other(format!("MCP handshake failed: {e}")))?;
    let failed = async {
        match gateway.await {
            Err(why) => why,
            Ok(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        served = running.waiting() => {
            served.map_err(|e| std::io::Error::other(format!("MCP service failed: {e}")))?;
            Ok(())
        }
        why = failed => Err(std::io::Error::other(format!("Airlock could not start: {why}"))),
    }
}
