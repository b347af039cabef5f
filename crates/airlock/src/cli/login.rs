//! `airlock login list|set|show|rm|enable|disable|check|watch`: stored logins kept
//! alive, through the data dir's store. A check runs on a serving replica (the one
//! whose schedule claims it first, within seconds): `check` makes the login due now
//! and follows it until that check has ended. What only a person has is never typed
//! here: a login that needs one says so, and the console's one-time link takes it.

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use std::process::ExitCode;
use std::time::Duration;

use airlock_config::Config;
use airlock_login::LoginSpec;
use anyhow::{Context as _, bail};
use clap::Subcommand;

use super::audit::{FOLLOW_POLL, terminal_safe};

/// What `airlock login` does.
#[derive(Debug, Subcommand)]
pub(crate) enum LoginCommand {
    /// The tenant's stored logins: name, state, why, last and next check.
    List {
        /// One JSON object a line.
        #[arg(long)]
        json: bool,
    },
    /// Defines a login for the vault secret NAME (or replaces its definition) from
    /// a JSON file: `probe`, `steps` (placeholders only), `human`, `every_secs`.
    Set {
        /// The vault secret it keeps signed in.
        name: String,
        /// The definition (JSON).
        #[arg(long)]
        file: std::path::PathBuf,
    },
    /// One login with its definition.
    Show {
        /// Its name.
        name: String,
    },
    /// Forgets a login (its secret stays in the vault).
    Rm {
        /// Its name.
        name: String,
    },
    /// Turns a login's checks on (checked at once).
    Enable {
        /// Its name.
        name: String,
    },
    /// Turns a login's checks off: sessions open with its secret whatever its state.
    Disable {
        /// Its name.
        name: String,
    },
    /// Checks a login now on a serving replica and prints what it found (exit 0
    /// alive, 3 a person must act, 1 otherwise).
    Check {
        /// Its name.
        name: String,
        /// How long to wait for a replica to run it, in seconds.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
    },
    /// Prints each check as it ends (and what a person must give), until Ctrl-C.
    Watch {
        /// One JSON object a line.
        #[arg(long)]
        json: bool,
    },
}

use airlock_audit::event::now_ms;

fn line(l: &airlock_store::SiteLoginRecord) -> String {
    let checked = l.checked_ms.map_or_else(
        || "never".to_owned(),
        |t| format!("{} s ago", (now_ms() - t) / 1000),
    );
    terminal_safe(&format!(
        "{:<20}  {:<10}  {}  checked {checked}  {}",
        l.name,
        l.state,
        if l.enabled { "on " } else { "off" },
        l.why
    ))
}

/// Runs one `airlock login` command for `tenant`.
pub(crate) async fn run(
    config: &Config,
    tenant: &str,
    command: LoginCommand,
) -> anyhow::Result<ExitCode> {
    let store = super::vault::open_store(config).await?;
    let missing = |name: &str| anyhow::anyhow!("no stored login `{name}` in tenant `{tenant}`");
    match command {
        LoginCommand::List { json } => {
            for l in store.site_logins(Some(tenant)).await? {
                if json {
                    let value = serde_json::json!({
                        "name": l.name, "state": l.state, "why": l.why, "enabled": l.enabled,
                        "checked_ms": l.checked_ms, "due_ms": l.due_ms,
                    });
                    println!("{}", terminal_safe(&value.to_string()));
                } else {
                    println!("{}", line(&l));
                }
            }
        }
        LoginCommand::Set { name, file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            let spec = LoginSpec::parse(&name, &text)?;
            if store.secret(tenant, &name).await?.is_none() {
                bail!(
                    "no vault secret `{name}` in tenant `{tenant}`: a login keeps a stored secret alive (`airlock vault set {name} …` first)"
                );
            }
            store
                .put_site_login(tenant, &name, &serde_json::to_string(&spec)?, now_ms())
                .await?;
            println!("login `{name}` set; a serving replica checks it within seconds");
        }
        LoginCommand::Show { name } => {
            let l = store
                .site_login(tenant, &name)
                .await?
                .ok_or_else(|| missing(&name))?;
            println!("{}", line(&l));
            let spec: serde_json::Value = serde_json::from_str(&l.spec)?;
            println!("{}", terminal_safe(&serde_json::to_string_pretty(&spec)?));
        }
        LoginCommand::Rm { name } => {
            if !store.delete_site_login(tenant, &name).await? {
                return Err(missing(&name));
            }
            store.close_login_links(tenant, &name, now_ms()).await?;
            println!("login `{name}` removed (its vault secret stays)");
        }
        LoginCommand::Enable { name } => {
            if !store
                .enable_site_login(tenant, &name, true, now_ms())
                .await?
            {
                return Err(missing(&name));
            }
            println!("login `{name}` on; checked within seconds");
        }
        LoginCommand::Disable { name } => {
            if !store
                .enable_site_login(tenant, &name, false, now_ms())
                .await?
            {
                return Err(missing(&name));
            }
            println!("login `{name}` off");
        }
        LoginCommand::Check { name, timeout } => {
            let asked = now_ms();
            if !store.enable_site_login(tenant, &name, true, asked).await? {
                return Err(missing(&name));
            }
            let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout);
            let mut tick = tokio::time::interval(FOLLOW_POLL);
            loop {
                tick.tick().await;
                let l = store
                    .site_login(tenant, &name)
                    .await?
                    .ok_or_else(|| missing(&name))?;
                if l.checked_ms.is_some_and(|t| t >= asked) && l.holder.is_none()
                    || l.state == "needs_user" && l.updated_ms >= asked
                {
                    println!("{}", line(&l));
                    return Ok(match l.state.as_str() {
                        "alive" => ExitCode::SUCCESS,
                        "needs_user" => {
                            println!(
                                "a person must act: the console's Logins page makes the one-time link"
                            );
                            ExitCode::from(3)
                        }
                        _ => ExitCode::FAILURE,
                    });
                }
                if tokio::time::Instant::now() >= deadline {
                    bail!(
                        "no serving replica checked `{name}` within {timeout} s (is `airlock serve` running on this store?)"
                    );
                }
            }
        }
        LoginCommand::Watch { json } => return watch(&store, tenant, json).await,
    }
    Ok(ExitCode::SUCCESS)
}

async fn watch(store: &airlock_store::Store, tenant: &str, json: bool) -> anyhow::Result<ExitCode> {
    let mut interrupted = super::audit::interrupts()?;
    let last = store.audit_tail(1).await?.last().map_or(0, |r| r.seq);
    for l in store.site_logins(Some(tenant)).await? {
        println!("{}", line(&l));
    }
    super::audit::follow(store, last, &mut interrupted, |record| {
        if let Some(line) = check_line(record, tenant, json) {
            println!("{line}");
        }
    })
    .await
}

// A check or a person's answer as `watch` prints it (a JSON line with `json`);
// `None` for any other event, or another tenant's.
fn check_line(record: &airlock_store::AuditRecord, tenant: &str, json: bool) -> Option<String> {
    if record.tenant != tenant || !matches!(record.kind.as_str(), "login_check" | "login_given") {
        return None;
    }
    if json {
        return Some(terminal_safe(&record.body));
    }
    let Ok(entry) = airlock_audit::Entry::parse(&record.body) else {
        return None;
    };
    let text = match entry.event {
        airlock_audit::Event::LoginCheck(c) => format!(
            "{}  {:<10}  {}{}",
            c.login,
            c.state,
            if c.renewed { "renewed; " } else { "" },
            c.why
        ),
        airlock_audit::Event::LoginGiven(g) => {
            format!("{}  a person gave its {} ({})", g.login, g.gave, g.by)
        }
        _ => return None,
    };
    Some(terminal_safe(&text))
}
