//! What every serving command starts: the browser host (a worker process, remote
//! workers, or this process) and the gateway over it, with the caps the config sets.

use airlock_config::Config;
use anyhow::Context as _;

use super::{audit, vault};

// The log flags this process was started with, for the worker it starts.
pub(super) static LOG_ARGS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Where sessions run, as configured: a local worker process (started now, as an
/// unprivileged user when root), or this process.
pub(crate) async fn browser_host(config: &Config) -> anyhow::Result<airlock_worker::Host> {
    if !config.workers.is_empty() || config.registration.is_some() {
        let mut remotes = Vec::with_capacity(config.workers.len());
        for worker in &config.workers {
            let tls = airlock_worker::tls::client_config(&worker.ca_file)?;
            let connector = airlock_worker::TlsConnector {
                address: worker.address.clone(),
                server_name: worker.server_name.clone(),
                tls,
                token: zeroize::Zeroizing::new(worker.token.expose().to_owned()),
                admit: None,
            };
            // A worker not up yet (starting, scaled away) is passed over until it
            // answers; /readyz says whether any does.
            let remote = match airlock_worker::Remote::new(connector).await {
                Ok(remote) => {
                    tracing::info!(address = %worker.address, pid = remote.about().pid, "browser worker connected");
                    remote
                }
                Err(e) => {
                    tracing::warn!(address = %worker.address, error = %e, "browser worker not reachable yet");
                    let tls = airlock_worker::tls::client_config(&worker.ca_file)?;
                    airlock_worker::Remote::unconnected(
                        airlock_worker::TlsConnector {
                            address: worker.address.clone(),
                            server_name: worker.server_name.clone(),
                            tls,
                            token: zeroize::Zeroizing::new(worker.token.expose().to_owned()),
                            admit: None,
                        },
                        config.browser.isolation,
                    )
                }
            };
            remotes.push(remote);
        }
        let Some(registration) = &config.registration else {
            let fleet = airlock_worker::Fleet::new(remotes).context("no browser worker")?;
            return Ok(fleet.into());
        };
        // Workers that register themselves (through any replica, into the store) are
        // reached with one name and CA; connected when first used.
        let tls = airlock_worker::tls::client_config(&registration.ca_file)?;
        let server_name = registration.server_name.clone();
        let isolation = config.browser.isolation;
        // Where a registered worker may be: judged at registration for a literal
        // address, and at every connect for each address a name resolves to.
        let admit: airlock_worker::Admit = {
            let networks = registration.allow.clone();
            std::sync::Arc::new(move |ip| networks.admits(ip))
        };
        // Each is reached with the credential it registered with (its own, made
        // at its start), never the deployment's token, which it does not take.
        let make: airlock_worker::MakeRemote = Box::new(move |address: &str, own| {
            let host = address
                .rsplit_once(':')
                .map_or(address, |(host, _)| host)
                .trim_start_matches('[')
                .trim_end_matches(']');
            if let Ok(ip) = host.parse() {
                admit(ip)?;
            }
            Ok(airlock_worker::Remote::unconnected(
                airlock_worker::TlsConnector {
                    address: address.to_owned(),
                    server_name: server_name.clone(),
                    tls: tls.clone(),
                    token: own.clone(),
                    admit: Some(admit.clone()),
                },
                isolation,
            ))
        });
        return Ok(airlock_worker::Fleet::registering(remotes, make, isolation).into());
    }
    let options = airlock_browser::BrowserOptions::from_config(&config.browser)
        .context("finding Chromium")?;
    match config.browser.worker {
        airlock_config::WorkerMode::Embedded => {
            tracing::info!(
                "browser sessions run in this process ([browser] worker = \"embedded\")"
            );
            Ok(std::sync::Arc::new(airlock_browser::Browsers::new(options)).into())
        }
        airlock_config::WorkerMode::Local => {
            let spawn = airlock_worker::WorkerSpawn {
                exe: std::env::current_exe().context("finding the airlock executable")?,
                browser: config.browser.clone(),
                user: config.worker_user.clone(),
                browser_user: config.browser_user.clone(),
                parent: None,
                args: LOG_ARGS.get().cloned().unwrap_or_default(),
                grace: airlock_worker::remote::GRACE,
            };
            let remote = airlock_worker::Remote::new(airlock_worker::LocalWorker::new(spawn))
                .await
                .context("starting the browser worker")?;
            Ok(remote.into())
        }
    }
}

/// The engine as configured: browser host (Chromium found, not yet started), vault
/// and gateway. `own_addresses` are Airlock's listeners, which no page may reach.
pub(crate) async fn gateway(
    config: &Config,
    own_addresses: Vec<std::net::SocketAddr>,
) -> anyhow::Result<std::sync::Arc<airlock_gateway::Gateway>> {
    gateway_as(config, own_addresses, config.server.role).await
}

/// The engine, its configured caller acting with `role`.
/// The role a command run by the local user has: whoever can run it against the data
/// dir can read its vault key, so the local user is the operator and uses their own
/// stored credentials, unless `[server] role` says otherwise.
pub(crate) fn local_role(config: &Config) -> airlock_core::Role {
    if config.server.role_set {
        config.server.role
    } else {
        airlock_core::Role::Operate
    }
}

/// SIGTERM and Ctrl-C, registered before the first session opens, so either one
/// from then on is the command's to answer (closing every session).
pub(crate) fn stop_signals()
-> anyhow::Result<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)> {
    use tokio::signal::unix::{SignalKind, signal};
    Ok((
        signal(SignalKind::terminate()).context("listening for SIGTERM")?,
        signal(SignalKind::interrupt()).context("listening for Ctrl-C")?,
    ))
}

pub(crate) async fn gateway_as(
    config: &Config,
    own_addresses: Vec<std::net::SocketAddr>,
    role: airlock_core::Role,
) -> anyhow::Result<std::sync::Arc<airlock_gateway::Gateway>> {
    let host = browser_host(config).await?;
    let store = vault::open_store(config).await?;
    let (vault, source) = vault::open_vault_in(config, store.clone())
        .await
        .context("opening the vault")?;
    tracing::info!(key = %source, role = role.as_str(), "vault open");
    let gateway = airlock_gateway::Gateway::new(
        host,
        airlock_gateway::GatewayConfig {
            idle_ttl: config.sessions.idle_ttl,
            hold_idle: config.sessions.hold_idle,
            max_lifetime: config.sessions.max_lifetime,
            action_budget: config.sessions.action_budget,
            caps: session_caps(config),
            policy: config.policy.clone().with_airlock_addresses(own_addresses),
            credentials: airlock_gateway::CredentialSource {
                vault: Some(std::sync::Arc::new(vault)),
                tenant: "default".to_owned(),
                role,
            },
            warm_sessions: config.sessions.warm,
            store: Some(store),
            checkpoints: Some(audit::checkpoints(config)?),
            rules: config.approvals.rules.clone(),
            approval_timeout: config.approvals.timeout,
            recording: config.recording.mode,
            recordings_dir: Some(config.data_dir.join(audit::RECORDINGS_DIR)),
            recording_retention: config.recording.retention,
            in_client_approval: config.approvals.in_client,
            evaluate: config.evaluate,
            upload_dir: config.upload_dir.clone(),
            download_dir: config.download_dir.clone(),
            flow: config.flow.clone(),
            identity: config.identity.clone(),
            own_secrets: own_secrets(config)?,
        },
    );
    // Sessions a killed gateway of this data dir left open end on the record now.
    gateway
        .end_orphaned_sessions()
        .await
        .context("ending sessions a stopped gateway left open")?;
    if let Some(hook) = config.approvals.webhook.clone() {
        tracing::info!(url = %hook.url, "approval requests and decisions are announced to a webhook");
        airlock_http::webhook::spawn(&gateway, hook);
    }
    Ok(gateway)
}

// The deployment's own secrets as one redactor, if it has any.
fn own_secrets(config: &Config) -> anyhow::Result<Option<std::sync::Arc<airlock_vault::Redactor>>> {
    let secrets = config.own_secrets();
    if secrets.is_empty() {
        return Ok(None);
    }
    let redactor = airlock_vault::Redactor::new(secrets)
        .context("building the redactor of Airlock's own secrets")?;
    Ok(Some(std::sync::Arc::new(redactor)))
}

/// The caps on live sessions: as configured, the global one derived from the
/// machine's memory when not set.
pub(crate) fn session_caps(config: &Config) -> airlock_gateway::Caps {
    let total = config.sessions.max_total.unwrap_or_else(|| {
        airlock_browser::host::default_session_cap(
            config.browser.isolation,
            config.browser.memory_limit.map(|bytes| bytes >> 20),
        )
    });
    airlock_gateway::Caps {
        per_user: config.sessions.max_per_user,
        per_tenant: config.sessions.max_per_tenant.under(Some(total)),
        total: Some(total),
        min_free_memory_mib: config.sessions.min_free_memory_mb,
    }
}
