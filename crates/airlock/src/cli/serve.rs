//! `airlock serve`: the HTTP server.

use std::net::SocketAddr;
use std::path::PathBuf;

use airlock_config::Config;
use anyhow::Context as _;

pub(crate) async fn run(
    mut config: Config,
    listen: Option<SocketAddr>,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    if let Some(listen) = listen {
        config.server.listen = listen;
    }
    if let Some(dir) = data_dir {
        config.data_dir = dir;
    }
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating data dir `{}`", config.data_dir.display()))?;
    let listener = tokio::net::TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("binding {}", config.server.listen))?;
    let addr = listener.local_addr().context("reading the bound address")?;
    tracing::info!(%addr, data_dir = %config.data_dir.display(), "Airlock listening on http://{addr}/");
    airlock_http::serve(listener, shutdown_signal())
        .await
        .context("serving HTTP")?;
    tracing::info!("Airlock stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {}
        () = term => {}
    }
}
