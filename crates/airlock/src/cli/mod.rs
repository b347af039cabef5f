//! Command-line entry: one module per subcommand, each with a `run`.

mod approvals;
mod audit;
mod demo;
mod doctor;
mod identity;
mod login;
mod mcp;
mod policy;
mod replay;
mod run;
mod serve;
mod start;
mod tenant;
mod tenant_policy;
mod vault;
mod worker;

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
    /// State directory: the vault, its key file (overrides config and AIRLOCK_DATA_DIR).
    /// Every command takes it, so `vault set` and the server use the same vault.
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// Also let the browser reach this private address, `host:port` or CIDR (repeat
    /// for several); adds to `policy.allow_private` and AIRLOCK_ALLOW_PRIVATE.
    #[arg(long = "allow-private", global = true, value_name = "ADDRESS")]
    allow_private: Vec<String>,
    /// How log lines are written on stderr: `text` (default) or `json` (one object a
    /// line, for a log collector).
    #[arg(long, global = true, value_name = "FORMAT", default_value = "text")]
    log_format: LogFormat,
    /// Who runs this command, as decisions and changes are recorded (`cli:NAME`);
    /// default: $USER, else $LOGNAME, else the numeric user id (as in a container).
    #[arg(long = "as", global = true, value_name = "NAME")]
    as_user: Option<String>,
    /// The least level logged (error, warn, info, debug, trace); `RUST_LOG`, when
    /// set, says more finely.
    #[arg(long, global = true, value_name = "LEVEL")]
    log_level: Option<tracing::Level>,
    #[command(subcommand)]
    command: Command,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// For a person.
    Text,
    /// One JSON object a line.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the gateway's HTTP server.
    Serve {
        /// Address to listen on (overrides config and AIRLOCK_LISTEN).
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
    },
    /// Serve MCP over stdin/stdout for a local client (Claude Desktop, Cursor).
    Mcp,
    /// A two-minute tour: a demo site, the console, and a scripted agent whose
    /// "Delete account" waits for your approval. Ctrl-C leaves nothing running.
    Demo {
        /// Address of the gateway and console (default: a free port on 127.0.0.1).
        #[arg(long)]
        listen: Option<std::net::SocketAddr>,
        /// Do not open the console in a browser.
        #[arg(long)]
        no_open: bool,
    },
    /// Check that Chromium, the data directory and the configuration work.
    Doctor,
    /// Run one browser task server-side with the configured model (`[[models]]`):
    /// every step goes through the policy, the risk rules and approvals, and the
    /// audit log. Exit 0 when finished, 3 when a person must go on, 1 otherwise.
    Run(run::RunArgs),
    /// Host browser sessions for a gateway: Chromium, the egress proxy, what each
    /// session must hide. `serve`, `mcp` and `demo` start one themselves (as an
    /// unprivileged user when root) and give it its options on stdin.
    Worker {
        /// The unix socket to serve on (the gateway's own worker).
        #[arg(long, conflicts_with = "listen", required_unless_present = "listen")]
        socket: Option<PathBuf>,
        /// Serve gateways on other machines on this address, over TLS (`[[workers]]`
        /// on their side); browser options from this machine's config.
        #[arg(long, requires_all = ["tls_cert", "tls_key"])]
        listen: Option<std::net::SocketAddr>,
        /// The worker's certificate chain (PEM), with --listen.
        #[arg(long)]
        tls_cert: Option<PathBuf>,
        /// The worker's private key (PEM), with --listen.
        #[arg(long)]
        tls_key: Option<PathBuf>,
        /// A file holding the worker token, with --listen (else AIRLOCK_WORKER_TOKEN).
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// With --listen: how long a session whose control plane went away is kept
        /// for another control-plane replica to take over (0: closed at once).
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=3600))]
        detached_grace_secs: u64,
        /// With --listen: the most sessions it holds at once (others open elsewhere).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        sessions: Option<u64>,
        /// With --listen: serve this many sessions, then exit once they closed (with
        /// --sessions 1 --exit-after 1, a pod per session).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        exit_after: Option<u64>,
        /// With --listen: on SIGTERM, keep serving the sessions held (taking no new
        /// one) this long before closing them.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=3600))]
        drain_secs: u64,
        /// With --listen: register with the control plane at this http:// URL (any
        /// replica, through its Service) every 2 s, so that replicas with
        /// `[registration]` find this worker without a list.
        #[arg(long, requires = "listen")]
        register: Option<String>,
        /// With --register: the host:port replicas reach this worker at (default:
        /// the address it listens on).
        #[arg(long, requires = "register")]
        advertise: Option<String>,
        /// With --socket, started by a root gateway: enter a user namespace of its
        /// own and wait for the gateway to map it (Chromium then runs as another
        /// user than the worker). Not for operators.
        #[arg(long, hide = true)]
        user_namespace: bool,
    },
    /// Explain egress policy decisions.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Store credentials (values are write-only: nothing ever prints them).
    Vault {
        /// Tenant the secrets belong to.
        #[arg(long, default_value = "default", global = true)]
        tenant: String,
        #[command(subcommand)]
        command: VaultCommand,
    },
    /// Stored logins kept alive: define, list, check on demand, follow.
    Login {
        /// Tenant the logins belong to.
        #[arg(long, default_value = "default", global = true)]
        tenant: String,
        #[command(subcommand)]
        command: login::LoginCommand,
    },
    /// Web Bot Auth: the tenant's signing keys (create, rotate, show).
    Identity {
        /// Tenant the keys belong to.
        #[arg(long, default_value = "default", global = true)]
        tenant: String,
        #[command(subcommand)]
        command: identity::IdentityCommand,
    },
    /// Calls held for a human: list them, approve or deny one.
    Approvals {
        #[command(subcommand)]
        command: ApprovalsCommand,
    },
    /// The audit log: check it has not been tampered with, read it.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Tenants: each has its own sessions, secrets, grants, approvals and audit events.
    Tenant {
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// API keys: each acts in one tenant with one role.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Grant tokens: short-lived authority for an agent to use credentials.
    Grant {
        /// Tenant the grant belongs to.
        #[arg(long, default_value = "default", global = true)]
        tenant: String,
        #[command(subcommand)]
        command: GrantCommand,
    },
}

#[derive(Debug, Subcommand)]
enum ApprovalsCommand {
    /// Pending approvals (all with --all): id, status, risk, tool, target, rule.
    List {
        /// Decided and expired ones too.
        #[arg(long)]
        all: bool,
        /// One JSON object a line.
        #[arg(long)]
        json: bool,
    },
    /// Let a held call run (it checks the element is still the one approved).
    Approve {
        /// The approval's id (`apr_…`).
        id: String,
        /// A note kept with the decision.
        #[arg(long)]
        note: Option<String>,
    },
    /// Refuse a held call; the agent is told, with the reason.
    Deny {
        /// The approval's id (`apr_…`).
        id: String,
        /// Why, for the agent and the record.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Print requests as they arrive and decisions as they are made, until Ctrl-C
    /// (pending ones first).
    Watch {
        /// One JSON object a line.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Recompute every event's hash and chain and check the signed checkpoints;
    /// print `ok: N events …` or the first event edited, removed, moved or cut off
    /// (exit 1).
    Verify {
        /// Check checkpoints with this verifier key (`airlock audit public-key`
        /// prints it) instead of the data dir's own key.
        #[arg(long)]
        public_key: Option<String>,
        /// Check this `audit export` file (from the first event) instead of the
        /// database: offline, with --public-key and --checkpoints.
        #[arg(long)]
        export: Option<PathBuf>,
        /// The signed checkpoints to check against (default: the data dir's).
        #[arg(long)]
        checkpoints: Option<PathBuf>,
    },
    /// Print the verifier key of this data dir's audit signing key.
    PublicKey,
    /// Print events as JSON lines, oldest first.
    Export {
        /// Only events after this sequence number.
        #[arg(long, default_value_t = 0)]
        since: u64,
        /// Only events of this browser session.
        #[arg(long)]
        session: Option<String>,
    },
    /// Write a self-contained HTML page of one session's steps (actions, decisions,
    /// blocked requests, the screenshots of an `audit` recording) into a directory.
    Replay {
        /// The browser session's id (as in its events' `session`).
        session: String,
        /// Directory to write `index.html` into (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
    /// Write a download a session kept in the shared store (replicas on Postgres
    /// keep them there, not on one machine's disk) into a file.
    Download {
        /// The name it was saved as (the `saved_as` its session reported).
        saved_as: String,
        /// The file to write (created; an existing one is left alone).
        #[arg(long)]
        out: PathBuf,
    },
    /// Print the last events, one JSON line each.
    Tail {
        /// How many.
        #[arg(short = 'n', long, default_value_t = 20)]
        lines: u32,
        /// Keep printing events as they are written, until Ctrl-C.
        #[arg(short = 'f', long)]
        follow: bool,
    },
}

#[derive(Debug, Subcommand)]
enum VaultCommand {
    /// Add or update a secret; given fields replace stored ones, others are kept.
    /// Values come from stdin, one line each: password, then TOTP seed, then header.
    Set {
        /// Secret name (letters, digits, `_`, `-`), used as {{secret:NAME.password}}.
        name: String,
        /// Origin the secret may be used on (repeat for several).
        #[arg(long = "origin")]
        origins: Vec<String>,
        /// Login name (not secret: pages show it).
        #[arg(long)]
        username: Option<String>,
        /// Read the password from stdin.
        #[arg(long)]
        password_stdin: bool,
        /// Read a base32 TOTP seed from stdin.
        #[arg(long)]
        totp_stdin: bool,
        /// Read the value of this HTTP header from stdin.
        #[arg(long, value_name = "HEADER")]
        header_stdin: Option<String>,
    },
    /// List secrets: names, origins, fields present and times, never values.
    List,
    /// Delete a secret.
    Rm {
        /// Secret name.
        name: String,
    },
    /// Import cookies (and localStorage) into a secret.
    Import {
        /// Secret name.
        name: String,
        /// Origin the secret may be used on (repeat for several).
        #[arg(long = "origin")]
        origins: Vec<String>,
        /// Playwright storage-state JSON (cookies + origins/localStorage).
        #[arg(long)]
        storage_state: Option<PathBuf>,
        /// Netscape cookies.txt.
        #[arg(long)]
        cookies_txt: Option<PathBuf>,
    },
    /// Re-encrypt every secret under a new master key, atomically.
    RotateKey,
}

#[derive(Debug, Subcommand)]
enum GrantCommand {
    /// Create a grant and print its token (once).
    Create {
        /// Domains it covers, with their subdomains (comma-separated).
        #[arg(long, value_delimiter = ',', required = true)]
        domains: Vec<String>,
        /// Lifetime: 90s, 15m, 2h, 1d (at most 30d).
        #[arg(long, default_value = "15m")]
        ttl: String,
        /// Usable more than once until it expires.
        #[arg(long)]
        reusable: bool,
    },
    /// List grants (never their tokens).
    List,
    /// Revoke a grant by id.
    Revoke {
        /// The grant id (`g_…`).
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum TenantCommand {
    /// Create a tenant (names: a-z, 0-9, `-`, `_`, `.`).
    Create {
        /// The tenant's name.
        name: String,
    },
    /// List tenants.
    List,
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Create an API key and print it (once).
    Create {
        /// The tenant it acts in (`default` always exists).
        #[arg(long)]
        tenant: String,
        /// observe (read pages), act (drive the browser), operate (also use stored
        /// credentials), admin (also approvals, audit and sessions over /api/v1).
        #[arg(long)]
        role: String,
        /// A label for listings.
        #[arg(long)]
        name: Option<String>,
    },
    /// List keys: id, tenant, role, label, state (never the key).
    List {
        /// Only this tenant's.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Revoke a key by id (`key_…`); requests with it are refused from then on.
    Revoke {
        /// The key's id.
        id: String,
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
    /// Print which risk rule a call would fire, and why (exit 0: runs, 1: waits for
    /// approval, 2: refused).
    Explain(policy::ExplainArgs),
    /// Print a tenant's own policy (its newest version).
    Show {
        /// The tenant.
        #[arg(long)]
        tenant: String,
    },
    /// Set a tenant's own policy from FILE (TOML, or JSON): it narrows the operator's
    /// config for the tenant's sessions opened from now on, on every replica.
    Set {
        /// The tenant.
        #[arg(long)]
        tenant: String,
        /// The policy: `[policy]`, `[[approvals.rules]]`, `[flow]`.
        file: std::path::PathBuf,
    },
}

/// Runs the CLI and maps the outcome to an exit code.
pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_format, cli.log_level);
    if let Some(name) = cli.as_user.clone() {
        let _ = ACTOR.set(name);
    }
    // Before the runtime: a process with threads cannot enter a user namespace.
    if let Command::Worker {
        user_namespace: true,
        ..
    } = &cli.command
        && let Err(e) = airlock_worker::userns::enter()
    {
        tracing::error!(error = %e, "the browser worker could not start");
        return ExitCode::FAILURE;
    }
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
    let overrides = Overrides {
        data_dir: cli.data_dir.clone(),
        allow_private: cli.allow_private.clone(),
        // A stdio server is started by a client from wherever the client runs: a
        // stray airlock.toml there is not the operator's choice.
        ignore_local_file: matches!(cli.command, Command::Mcp),
    };
    let config_or_exit = |flag: Option<&Path>| config_or_exit(flag, &overrides);
    let log_args = {
        let mut args = vec![
            "--log-format".to_owned(),
            match cli.log_format {
                LogFormat::Text => "text",
                LogFormat::Json => "json",
            }
            .to_owned(),
        ];
        if let Some(level) = cli.log_level {
            args.extend(["--log-level".to_owned(), level.to_string()]);
        }
        args
    };
    let _ = start::LOG_ARGS.set(log_args);
    match cli.command {
        Command::Worker {
            socket,
            listen,
            tls_cert,
            tls_key,
            token_file,
            detached_grace_secs,
            sessions,
            exit_after,
            drain_secs,
            register,
            advertise,
            user_namespace,
        } => {
            let outcome = match (socket, listen, tls_cert, tls_key) {
                (Some(socket), _, _, _) => runtime
                    .block_on(airlock_worker::process::run(&socket))
                    .map_err(anyhow::Error::from),
                (None, Some(listen), Some(cert), Some(key)) => {
                    let started = if user_namespace {
                        // Started by its root supervisor, which read what this
                        // process's user cannot.
                        runtime
                            .block_on(airlock_worker::supervise::supervised())
                            .map_err(anyhow::Error::msg)
                    } else {
                        let config = match config_or_exit(cli.config.as_deref()) {
                            Ok(c) => c,
                            Err(code) => return code,
                        };
                        if nix::unistd::geteuid().is_root() {
                            match runtime.block_on(worker::supervise(
                                &config,
                                &cert,
                                &key,
                                token_file.as_deref(),
                            )) {
                                Ok(code) => {
                                    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
                                    return ExitCode::from(u8::try_from(code).unwrap_or(1));
                                }
                                Err(why) => tracing::warn!(
                                    %why,
                                    "the worker runs as root, with Chromium: it could not start itself under users of its own"
                                ),
                            }
                        }
                        let read = || -> anyhow::Result<_> {
                            let tls = airlock_worker::tls::server_config(&cert, &key)?;
                            let token =
                                airlock_config::worker_token(token_file.as_deref(), &ProcessEnv)?;
                            Ok((tls, token.expose().to_owned(), config.browser.clone()))
                        };
                        read()
                    };
                    match started {
                        Ok((tls, token, browser)) => runtime
                            .block_on(airlock_worker::process::run_listening(
                                listen,
                                tls,
                                airlock_worker::Admission {
                                    token: zeroize::Zeroizing::new(token),
                                    peer_uid: None,
                                    detached_grace: std::time::Duration::from_secs(
                                        detached_grace_secs,
                                    ),
                                    max_sessions: sessions.map(|n| n as usize),
                                    exit_after: exit_after.map(|n| n as usize),
                                    drain_within: std::time::Duration::from_secs(drain_secs),
                                },
                                &browser,
                                register.map(|control_plane| airlock_worker::process::Register {
                                    control_plane,
                                    advertise,
                                }),
                            ))
                            .map_err(anyhow::Error::from),
                        Err(e) => Err(e),
                    }
                }
                _ => Err(anyhow::anyhow!(
                    "airlock worker needs --socket, or --listen with --tls-cert and --tls-key"
                )),
            };
            // Its stdin is read on a blocking thread that never ends on its own; the
            // sessions are closed, so leave without waiting for it.
            runtime.shutdown_timeout(std::time::Duration::from_millis(100));
            match outcome {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    report_error(&e);
                    ExitCode::FAILURE
                }
            }
        }
        Command::Doctor => runtime.block_on(doctor::run(cli.config.as_deref(), &overrides)),
        Command::Policy {
            command: PolicyCommand::Check { url, resolve },
        } => {
            let config = match config_or_exit(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            runtime.block_on(policy::check(&config, &url, resolve))
        }
        Command::Policy {
            command: PolicyCommand::Explain(args),
        } => match config_or_exit(cli.config.as_deref()) {
            Ok(config) => match &args.tenant {
                None => policy::explain(&config, None, &args),
                Some(tenant) => match runtime.block_on(tenant_policy::narrowed(&config, tenant)) {
                    Ok((config, sets)) => policy::explain(&config, sets.as_ref(), &args),
                    Err(e) => finish(Err(e)),
                },
            },
            Err(code) => code,
        },
        Command::Policy {
            command: PolicyCommand::Show { tenant },
        } => match config_or_exit(cli.config.as_deref()) {
            Ok(config) => finish(runtime.block_on(tenant_policy::show(&config, &tenant))),
            Err(code) => code,
        },
        Command::Policy {
            command: PolicyCommand::Set { tenant, file },
        } => match config_or_exit(cli.config.as_deref()) {
            Ok(config) => finish(runtime.block_on(tenant_policy::set(&config, &tenant, &file))),
            Err(code) => code,
        },
        Command::Vault { tenant, command } => {
            let config = match config_or_exit(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let run = async {
                match command {
                    VaultCommand::Set {
                        name,
                        origins,
                        username,
                        password_stdin,
                        totp_stdin,
                        header_stdin,
                    } => {
                        let stdin = vault::StdinFields {
                            password: password_stdin,
                            totp: totp_stdin,
                            header: header_stdin,
                        };
                        vault::set(&config, &tenant, &name, origins, username, stdin).await
                    }
                    VaultCommand::List => vault::list(&config, &tenant).await,
                    VaultCommand::Rm { name } => vault::remove(&config, &tenant, &name).await,
                    VaultCommand::Import {
                        name,
                        origins,
                        storage_state,
                        cookies_txt,
                    } => {
                        vault::import(
                            &config,
                            &tenant,
                            &name,
                            origins,
                            storage_state.as_deref(),
                            cookies_txt.as_deref(),
                        )
                        .await
                    }
                    VaultCommand::RotateKey => vault::rotate(&config).await,
                }
            };
            finish(runtime.block_on(run))
        }
        Command::Login { tenant, command } => {
            let config = match config_or_exit(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            match runtime.block_on(login::run(&config, &tenant, command)) {
                Ok(code) => code,
                Err(e) => finish(Err(e)),
            }
        }
        Command::Identity { tenant, command } => match config_or_exit(cli.config.as_deref()) {
            Ok(config) => finish(runtime.block_on(identity::run(&config, &tenant, command))),
            Err(code) => code,
        },
        Command::Approvals { command } => {
            let config = match config_or_exit(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let run = async {
                match command {
                    ApprovalsCommand::List { all, json } => {
                        approvals::list(&config, all, json).await
                    }
                    ApprovalsCommand::Approve { id, note } => {
                        approvals::decide(&config, &id, true, note.as_deref()).await
                    }
                    ApprovalsCommand::Deny { id, reason } => {
                        approvals::decide(&config, &id, false, reason.as_deref()).await
                    }
                    ApprovalsCommand::Watch { json } => approvals::watch(&config, json).await,
                }
            };
            match runtime.block_on(run) {
                Ok(code) => code,
                Err(e) => finish(Err(e)),
            }
        }
        Command::Audit { command } => {
            let config = match config_or_exit(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let run = async {
                match command {
                    AuditCommand::Verify {
                        public_key,
                        export,
                        checkpoints,
                    } => {
                        audit::verify(
                            &config,
                            public_key.as_deref(),
                            export.as_deref(),
                            checkpoints.as_deref(),
                        )
                        .await
                    }
                    AuditCommand::PublicKey => audit::public_key(&config),
                    AuditCommand::Export { since, session } => {
                        audit::export(&config, since, session.as_deref()).await
                    }
                    AuditCommand::Replay { session, out } => {
                        audit::replay(&config, &session, &out).await
                    }
                    AuditCommand::Download { saved_as, out } => {
                        audit::download(&config, &saved_as, &out).await
                    }
                    AuditCommand::Tail { lines, follow } => {
                        audit::tail(&config, lines, follow).await
                    }
                }
            };
            match runtime.block_on(run) {
                Ok(code) => code,
                Err(e) => finish(Err(e)),
            }
        }
        Command::Tenant { command } => {
            let config = match config_or_exit(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            finish(runtime.block_on(async {
                match command {
                    TenantCommand::Create { name } => tenant::create_tenant(&config, &name).await,
                    TenantCommand::List => tenant::list_tenants(&config).await,
                }
            }))
        }
        Command::Key { command } => {
            let config = match config_or_exit(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            finish(runtime.block_on(async {
                match command {
                    KeyCommand::Create { tenant, role, name } => {
                        tenant::create_key(&config, &tenant, &role, name.as_deref()).await
                    }
                    KeyCommand::List { tenant } => {
                        tenant::list_keys(&config, tenant.as_deref()).await
                    }
                    KeyCommand::Revoke { id } => tenant::revoke_key(&config, &id).await,
                }
            }))
        }
        Command::Grant { tenant, command } => {
            let config = match config_or_exit(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let run = async {
                match command {
                    GrantCommand::Create {
                        domains,
                        ttl,
                        reusable,
                    } => vault::grant_create(&config, &tenant, &domains, &ttl, reusable).await,
                    GrantCommand::List => vault::grant_list(&config, &tenant).await,
                    GrantCommand::Revoke { id } => vault::grant_revoke(&config, &tenant, &id).await,
                }
            };
            finish(runtime.block_on(run))
        }
        Command::Mcp => {
            announce_config(cli.config.as_deref(), &overrides);
            let config = match config_or_exit(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let code = match runtime.block_on(mcp::run(config)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    report_error(&e);
                    ExitCode::FAILURE
                }
            };
            // Reading stdin occupies a blocking thread until the client closes it; a
            // server stopped by a signal must not wait for that (everything it owns
            // is closed already).
            runtime.shutdown_background();
            code
        }
        Command::Run(args) => {
            announce_config(cli.config.as_deref(), &overrides);
            let config = match config_or_exit(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            let code = match runtime.block_on(run::run(config, args)) {
                Ok(code) => ExitCode::from(code),
                Err(e) => {
                    report_error(&e);
                    ExitCode::FAILURE
                }
            };
            runtime.shutdown_background();
            code
        }
        Command::Demo { listen, no_open } => {
            let listen = listen.or_else(|| "127.0.0.1:0".parse().ok());
            match runtime.block_on(demo::run(listen, !no_open, cli.data_dir.clone())) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    report_error(&e);
                    ExitCode::FAILURE
                }
            }
        }
        Command::Serve { listen } => {
            announce_config(cli.config.as_deref(), &overrides);
            let config = match config_or_exit(cli.config.as_deref()) {
                Ok(c) => c,
                Err(code) => return code,
            };
            match runtime.block_on(serve::run(config, listen)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    report_error(&e);
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// What the command line says over the config file and the environment.
#[derive(Debug, Default)]
pub(crate) struct Overrides {
    pub(crate) data_dir: Option<PathBuf>,
    pub(crate) allow_private: Vec<String>,
    /// Read no `./airlock.toml` (only `--config` and `AIRLOCK_CONFIG` name one).
    pub(crate) ignore_local_file: bool,
}

// The configuration with the command line's overrides, or the exit status that says
// it cannot be used (reported).
fn config_or_exit(flag: Option<&Path>, overrides: &Overrides) -> Result<Config, ExitCode> {
    load_config(flag, overrides).map_err(|e| {
        report_error(&e);
        ExitCode::from(EXIT_CONFIG)
    })
}

// Exit status of a command that printed its own output.
fn finish(outcome: anyhow::Result<()>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report_error(&e);
            ExitCode::FAILURE
        }
    }
}

// A command's failure, for a person: `error: …` on stderr, not a log line.
#[allow(clippy::print_stderr)]
fn report_error(error: &anyhow::Error) {
    eprintln!("error: {error:#}");
}

fn init_tracing(format: LogFormat, level: Option<tracing::Level>) {
    use tracing_subscriber::EnvFilter;
    // `--log-level` sets every Airlock crate's level; RUST_LOG, when set, wins.
    let level = level.map_or("info".to_owned(), |l| l.as_str().to_ascii_lowercase());
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new(format!(
            "airlock={level},airlock_gateway={level},airlock_browser={level},airlock_http={level},airlock_mcp={level},airlock_egress={level}"
        ))
    });
    // Logs go to stderr: stdout is reserved for command output (and MCP over stdio).
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
    }
}

/// Which config file applies: the flag, then AIRLOCK_CONFIG, then ./airlock.toml if
/// it exists (unless `ignore_local`); `None` means built-in defaults.
pub(crate) fn config_path(flag: Option<&Path>, ignore_local: bool) -> Option<PathBuf> {
    flag.map(Path::to_owned)
        .or_else(|| ProcessEnv.get(vars::CONFIG).map(PathBuf::from))
        .or_else(|| {
            let local = PathBuf::from("airlock.toml");
            (!ignore_local && local.is_file()).then_some(local)
        })
}

/// `--as NAME`, when given.
static ACTOR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Who runs this CLI command, as decisions and changes are recorded: `cli:` and
/// `--as`, $USER, $LOGNAME, or the numeric user id (`uid-0` in a container where no
/// name is set).
pub(crate) fn os_user() -> String {
    let name = ACTOR
        .get()
        .cloned()
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .or_else(|| std::env::var("LOGNAME").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| {
            use std::os::unix::fs::MetadataExt as _;
            // The owner of /proc/self is this process's user.
            std::fs::metadata("/proc/self")
                .map_or_else(|_| "unknown".to_owned(), |m| format!("uid-{}", m.uid()))
        });
    // Page-controlled text never reaches this, but a name is shown in consoles and
    // terminals: nothing in it may read as something else.
    let name: String = name.chars().filter(|c| !c.is_control()).take(64).collect();
    format!("cli:{name}")
}

/// The process environment, with `--allow-private` entries added to
/// AIRLOCK_ALLOW_PRIVATE (so the config loader validates and names them alike).
struct CliEnv<'a>(&'a [String]);

impl EnvSource for CliEnv<'_> {
    fn get(&self, name: &str) -> Option<String> {
        let value = ProcessEnv.get(name);
        if name != vars::ALLOW_PRIVATE || self.0.is_empty() {
            return value;
        }
        let mut entries: Vec<String> = value.into_iter().collect();
        entries.extend(self.0.iter().cloned());
        Some(entries.join(","))
    }
}

/// Loads configuration the one way every command shares: file < environment <
/// command line.
/// Says, on the log, which configuration a server runs with.
pub(crate) fn announce_config(flag: Option<&Path>, overrides: &Overrides) {
    match config_path(flag, overrides.ignore_local_file) {
        Some(p) => tracing::info!(config = %p.display(), "config: {}", p.display()),
        None => tracing::info!("config: none (built-in defaults and AIRLOCK_* variables)"),
    }
}

pub(crate) fn load_config(flag: Option<&Path>, overrides: &Overrides) -> anyhow::Result<Config> {
    let path = config_path(flag, overrides.ignore_local_file);
    let text = match &path {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .with_context(|| format!("reading config `{}`", p.display()))?,
        ),
        None => None,
    };
    let file = path.as_deref().zip(text.as_deref());
    let mut config = Config::load(file, &CliEnv(&overrides.allow_private))?;
    if let Some(dir) = &overrides.data_dir {
        config.data_dir = dir.clone();
    }
    Ok(config)
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
