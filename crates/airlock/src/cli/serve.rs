//! `airlock serve`: the HTTP server with MCP at `/mcp`.

use std::net::SocketAddr;

use airlock_config::Config;
use anyhow::Context as _;

/// How long calls in flight may take to finish once a stop is asked for.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

pub(crate) async fn run(config: Config, listen: Option<SocketAddr>) -> anyhow::Result<()> {
    serve_until(config, listen, shutdown_signal()?, None).await
}

/// Serves until `stop` resolves; `ready`, if given, learns the bound address and the
/// gateway once the server listens (`airlock demo` drives an agent through it).
pub(crate) async fn serve_until(
    mut config: Config,
    listen: Option<SocketAddr>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
    ready: Option<
        tokio::sync::oneshot::Sender<(SocketAddr, std::sync::Arc<airlock_gateway::Gateway>)>,
    >,
) -> anyhow::Result<()> {
    if let Some(listen) = listen {
        config.server.listen = listen;
    }
    let loopback = config.server.listen.ip().is_loopback();
    let configured_auth = config.server.api_key.is_some()
        || config.server.admin_key.is_some()
        || config.server.jwt.is_some();
    // Keys made with `airlock key create` count too: then every request needs one.
    if !loopback && !configured_auth && !store_has_keys(&config).await? {
        anyhow::bail!(
            "refusing to listen on {} without authentication; create a key (`airlock key create --tenant T --role R`), set AIRLOCK_API_KEY (or server.api_key) or [server.jwt], or bind 127.0.0.1",
            config.server.listen
        );
    }
    super::vault::create_data_dir(&config.data_dir)
        .with_context(|| format!("creating data dir `{}`", config.data_dir.display()))?;
    let listener = tokio::net::TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("binding {}", config.server.listen))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    let _data_dir = super::vault::hold_data_dir(&config.data_dir)?;
    let jwt = jwt_verifier(&config)?;
    // Sites find the key directory where clients find Airlock (the public URL, else
    // the bound address), unless `[identity] agent_url` says otherwise.
    if config.identity.agent_url.is_none() && !addr.ip().is_unspecified() {
        config.identity.agent_url = Some(format!("http://{addr}"));
    }
    let gateway = super::start::gateway(&config, vec![addr]).await?;
    // Every URL handed out starts with this: the configured public URL, else the
    // bound address. Never a request's `Host`, which a rebinding page chooses.
    let public_url = config
        .server
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"));
    if config.server.public_url.is_none() && addr.ip().is_unspecified() {
        tracing::warn!(%addr, "the session URLs Airlock hands out name the unspecified address; set [server] public_url (or AIRLOCK_PUBLIC_URL) to where clients reach it");
    }
    let public_host = url::Url::parse(&public_url)
        .ok()
        .and_then(|u| u.host_str().map(|h| h.trim_matches(['[', ']']).to_owned()));
    // Host checking defends unauthenticated loopback servers against DNS rebinding;
    // a non-loopback server requires a token instead and answers to any host name.
    let allowed_hosts = if loopback {
        let mut hosts = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            addr.ip().to_string(),
        ];
        hosts.extend(public_host);
        hosts
    } else {
        Vec::new()
    };
    // Airlock's own pages (the console) call it from Airlock's own origin; every
    // other browser origin must be listed in server.allowed_origins.
    let mut allowed_origins = config.server.allowed_origins.clone();
    allowed_origins.push(format!("http://{addr}"));
    if loopback {
        allowed_origins.push(format!("http://localhost:{}", addr.port()));
    }
    if !allowed_origins.contains(&public_url) {
        allowed_origins.push(public_url.clone());
    }
    let router = airlock_http::router(
        gateway.clone(),
        airlock_http::HttpConfig {
            api_key: config.server.api_key.clone(),
            allowed_hosts,
            allowed_origins,
            public_url,
            tool_profile: config.tool_profile,
            admin_key: config.server.admin_key.clone(),
            jwt,
            worker_token: config.registration.as_ref().map(|r| r.token.clone()),
            tasks: config.tasks.clone(),
            trusted_proxies: config.server.trusted_proxies.clone(),
        },
    );
    let signalled = stop;
    if let Some(ready) = ready {
        let _ = ready.send((addr, gateway.clone()));
    }
    let auth = configured_auth || gateway.has_api_keys().await;
    tracing::info!(%addr, data_dir = %config.data_dir.display(), auth, "Airlock listening; MCP endpoint: http://{addr}/mcp");
    // Event streams never end by themselves: they are ended first, or the graceful
    // shutdown would wait on them forever.
    let stopping = gateway.clone();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = airlock_http::serve(listener, router, async move {
        signalled.await;
        tracing::info!("stopping: no new connections; letting calls in flight finish");
        stopping.stop_streams();
        let _ = stop_tx.send(());
    });
    // Calls in flight get a bounded grace; then their connections are dropped (the
    // calls fail on closed browsers) and every session closes all the same.
    let grace = async {
        if stop_rx.await.is_ok() {
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let served = tokio::select! {
        served = served => served,
        () = grace => {
            tracing::warn!(
                grace_s = SHUTDOWN_GRACE.as_secs(),
                "calls still in flight after the grace period; ending them"
            );
            Ok(())
        }
    };
    gateway.shutdown().await;
    served.context("serving HTTP")?;
    tracing::info!("Airlock stopped");
    Ok(())
}

// Whether the store holds API keys (`airlock key create`); a data dir without a
// SQLite store yet holds none.
async fn store_has_keys(config: &Config) -> anyhow::Result<bool> {
    if config.store == airlock_config::StoreLocation::Sqlite
        && !config.data_dir.join(super::vault::DB_FILE).exists()
    {
        return Ok(false);
    }
    let store = super::vault::open_store(config).await?;
    let keys = store
        .has_live_keys()
        .await
        .context("reading the API keys")?;
    store.close().await;
    Ok(keys)
}

// The JWT verifier `[server.jwt]` describes (its JWKS file read now), if any.
fn jwt_verifier(
    config: &Config,
) -> anyhow::Result<Option<std::sync::Arc<airlock_http::jwt::JwtVerifier>>> {
    let Some(jwt) = &config.server.jwt else {
        return Ok(None);
    };
    let jwks = match &jwt.keys {
        airlock_config::JwtKeys::JwksFile(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading server.jwt.jwks_file {}", path.display()))?,
        ),
        airlock_config::JwtKeys::Hs256(_) => None,
    };
    let verifier = airlock_http::jwt::JwtVerifier::new(jwt, jwks.as_deref())
        .map_err(|e| anyhow::anyhow!("server.jwt: {e}"))?;
    tracing::info!(issuer = %jwt.issuer, audience = %jwt.audience, "accepting bearer JWTs");
    Ok(Some(std::sync::Arc::new(verifier)))
}

// SIGTERM or SIGINT, registered when called: a signal that arrives once the server
// said it listens is never lost (one before registration would kill the process
// without cleanup).
pub(crate) fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("registering for SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("registering for SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}
