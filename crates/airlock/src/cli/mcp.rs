//! `airlock mcp`: MCP over stdio for one local client. Nothing but MCP may reach
//! stdout; logs go to stderr.

use airlock_config::Config;
use anyhow::Context as _;

pub(crate) async fn run(config: Config) -> anyhow::Result<()> {
    let _data_dir = super::vault::hold_data_dir(&config.data_dir)?;
    let gateway = super::gateway(&config, Vec::new()).await?;
    let served = airlock_mcp::serve_stdio(gateway.clone(), config.tool_profile).await;
    gateway.shutdown().await;
    served.context("serving MCP over stdio")
}
