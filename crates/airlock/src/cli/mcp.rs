//! `airlock mcp`: MCP over stdio for one local client. Nothing but MCP may reach
//! stdout; logs go to stderr.

use airlock_config::Config;
use anyhow::Context as _;

pub(crate) async fn run(config: Config) -> anyhow::Result<()> {
    let _data_dir = super::vault::hold_data_dir(&config.data_dir)?;
    // A SIGTERM or Ctrl-C closes every session (no Chromium, no profile directory
    // left) and exits 0.
    let (mut term, mut interrupt) = super::start::stop_signals()?;
    let role = super::start::local_role(&config);
    // The engine (store, vault, browser worker) starts beside the MCP handshake:
    // `initialize` needs none of it, and a client waits on that answer first.
    let profile = config.tool_profile;
    let tasks = config.tasks.clone();
    let starting = {
        let build = tokio::spawn(async move {
            super::start::gateway_as(&config, Vec::new(), role)
                .await
                .map_err(|e| format!("{e:#}"))
        });
        airlock_mcp::starting(async move {
            build
                .await
                .map_err(|e| format!("the start was cut short: {e}"))?
        })
    };
    let served = tokio::select! {
        served = airlock_mcp::serve_stdio(starting.clone(), profile, tasks) => served,
        _ = term.recv() => {
            tracing::info!("SIGTERM: closing every session");
            Ok(())
        }
        _ = interrupt.recv() => {
            tracing::info!("interrupted: closing every session");
            Ok(())
        }
    };
    // A start still under way is let finish, so what it started is stopped too.
    if let Ok(gateway) = starting.await {
        gateway.shutdown().await;
    }
    served.context("serving MCP over stdio")
}
