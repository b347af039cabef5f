//! Command-line entry: one module per subcommand, each with a `run`.

mod doctor;
mod mcp;
mod policy;
mod serve;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use airlock_config::{Config, EnvSource, ProcessEnv, vars};
use anyhow::Context as _;
use clap::{Parser, Subcommand};

/// Exit code for a configuration that cannot be used (sysexits' EX_CONFIG).
const EXIT_CONFIG: u8 = 78;

/// Airlock: a secure browser gateway for AI agents.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about)]
struct Cli {
    /// Path of airlock.toml (default: $AIRLOCK_CONFIG, else ./airlock.toml if present).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the gateway's HTTP server.
    Serve {
        /// Address to listen on (overrides config and AIRLOCK_LISTEN).
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// State directory (overrides config and AIRLOCK_DATA_DIR).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Serve MCP over stdin/stdout for a local client (Claude Desktop, Cursor).
    Mcp,
    /// Check that Chromium, the data directory and the configuration work.
    Doctor,
    /// Explain egress policy decisions.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Print the decision and reason for URL under the loaded policy.
    Check {
        /// The URL, as an agent or page would give it.
        url: String,
        /// Also resolve the host and judge every address (as the egress proxy does).
        #[arg(long)]
        resolve: bool,
    },
}

/// Runs the CLI and maps the outcome to an exit code.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the async runtime");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Command::Doctor => runtime.block_on(doctor::run(cli.config.as_deref())),
        Command::Policy {
            command: PolicyCommand::Check { url, resolve },
        } => {
            let config = match load_config(cli.config.as_deref()) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!("{e:#}");
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            runtime.block_on(policy::check(&config, &url, resolve))
        }
        Command::Mcp => {
            let config = match load_config(cli.config.as_deref()) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!("{e:#}");
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            match runtime.block_on(mcp::run(config)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!("{e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Serve { listen, data_dir } => {
            let config = match load_config(cli.config.as_deref()) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!("{e:#}");
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            match runtime.block_on(serve::run(config, listen, data_dir)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!("{e:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("airlock=info,airlock_browser=info,airlock_http=info"));
    // Logs go to stderr: stdout is reserved for command output (and MCP over stdio).
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// Which config file applies: the flag, then AIRLOCK_CONFIG, then ./airlock.toml if
/// it exists; `None` means built-in defaults.
pub(crate) fn config_path(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_owned)
        .or_else(|| ProcessEnv.get(vars::CONFIG).map(PathBuf::from))
        .or_else(|| {
            let local = PathBuf::from("airlock.toml");
            local.is_file().then_some(local)
        })
}

/// The engine as configured: browser pool (Chromium found, not yet started) and
/// gateway. `own_addresses` are Airlock's listeners, which no page may reach.
pub(crate) fn gateway(
    config: &Config,
    own_addresses: Vec<std::net::SocketAddr>,
) -> anyhow::Result<std::sync::Arc<airlock_gateway::Gateway>> {
    let options = airlock_browser::BrowserOptions::from_config(&config.browser)
        .context("finding Chromium")?;
    let browsers = std::sync::Arc::new(airlock_browser::Browsers::new(options));
    Ok(airlock_gateway::Gateway::new(
        browsers,
        airlock_gateway::GatewayConfig {
            idle_ttl: config.sessions.idle_ttl,
            policy: config.policy.clone().with_airlock_addresses(own_addresses),
        },
    ))
}

/// Loads configuration the one way `serve`, `doctor` and tests share.
pub(crate) fn load_config(flag: Option<&Path>) -> anyhow::Result<Config> {
    let path = config_path(flag);
    let text = match &path {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .with_context(|| format!("reading config `{}`", p.display()))?,
        ),
        None => None,
    };
    let file = path.as_deref().zip(text.as_deref());
    Ok(Config::load(file, &ProcessEnv)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
