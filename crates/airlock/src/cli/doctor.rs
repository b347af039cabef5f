//! `airlock doctor`: one pass/fail line per check, non-zero exit on any failure.

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use std::path::Path;
use std::process::ExitCode;

use airlock_browser::{BrowserOptions, ChromiumKind};
use airlock_config::vars;

struct Report {
    failed: bool,
}

impl Report {
    fn pass(&mut self, check: &str, detail: &str) {
        println!("ok    {check}: {detail}");
    }

    fn fail(&mut self, check: &str, detail: &str) {
        self.failed = true;
        println!("FAIL  {check}: {detail}");
    }

    fn note(&mut self, check: &str, detail: &str) {
        println!("note  {check}: {detail}");
    }
}

pub(crate) async fn run(config_flag: Option<&Path>, overrides: &super::Overrides) -> ExitCode {
    let mut report = Report { failed: false };
    let config = match super::load_config(config_flag, overrides) {
        Ok(config) => {
            let source = super::config_path(config_flag, overrides.ignore_local_file)
                .map(|p| format!("`{}`", p.display()))
                .unwrap_or_else(|| "built-in defaults (no airlock.toml)".to_owned());
            report.pass("config", &format!("valid, from {source}"));
            Some(config)
        }
        Err(e) => {
            report.fail("config", &format!("{e:#}"));
            None
        }
    };
    let Some(config) = config else {
        return ExitCode::FAILURE;
    };
    for name in vars::ALL {
        if let Ok(value) = std::env::var(name) {
            let shown = if vars::SECRET.contains(name) {
                "[set, not shown]"
            } else {
                value.as_str()
            };
            report.note("env", &format!("{name}={shown}"));
        }
    }

    match BrowserOptions::from_config(&config.browser) {
        Ok(options) => {
            let kind = match options.binary.kind {
                ChromiumKind::HeadlessShell => "chromium-headless-shell",
                ChromiumKind::Chromium => "chromium",
            };
            report.pass(
                "chromium found",
                &format!("{} ({kind})", options.binary.path.display()),
            );
            // Embedded, Chromium runs as this process; a local worker runs it as the
            // worker's user, whose sandbox the worker reports below.
            let embedded = config.browser.worker == airlock_config::WorkerMode::Embedded;
            if embedded && let Some(reason) = airlock_browser::no_sandbox_reason() {
                report.note(
                    "sandbox",
                    &format!("{reason}: Chromium will start with --no-sandbox ([browser] worker = \"embedded\")"),
                );
            }
            let flags = airlock_browser::chromium_flags(
                options.binary.kind,
                embedded && airlock_browser::needs_no_sandbox(),
            );
            // Shell-quoted, so the line can be pasted (and split by `shlex`).
            let shown: Vec<String> = flags
                .iter()
                .map(|f| {
                    if f.contains([' ', '*', '\'']) {
                        format!("'{}'", f.replace('\'', r"'\''"))
                    } else {
                        f.clone()
                    }
                })
                .collect();
            report.note("chromium flags", &shown.join(" "));
            let started = tokio::time::Instant::now();
            match airlock_browser::probe(&options).await {
                Ok(probe) => {
                    report.pass(
                        "chromium starts headless",
                        &format!("{} in {} ms", probe.version, started.elapsed().as_millis()),
                    );
                    match (options.memory_limit, &probe.cgroup) {
                        (None, _) => report.note(
                            "chromium memory",
                            "not bounded (browser.memory_limit_mb = 0)",
                        ),
                        (Some(limit), Some(cgroup)) => report.pass(
                            "chromium memory",
                            &format!(
                                "bounded to {} MiB per Chromium by a cgroup under `{}`",
                                limit >> 20,
                                cgroup.parent().unwrap_or(cgroup).display()
                            ),
                        ),
                        // A note, not a failure: the V8 heap bound still holds, and
                        // many hosts give no cgroup to an unprivileged process.
                        (Some(_), None) => report.note(
                            "chromium memory",
                            "NOT bounded: this process cannot make a memory cgroup \
                             (run as root, or in a delegated systemd scope; see the README)",
                        ),
                    }
                }
                Err(e) => report.fail("chromium starts headless", &e.to_string()),
            }
        }
        Err(e) => report.fail("chromium found", &e.to_string()),
    }

    if config.browser.worker == airlock_config::WorkerMode::Local {
        check_worker(&config, &mut report).await;
    } else {
        report.note(
            "browser worker",
            "embedded: Chromium runs inside this process, beside the vault and audit keys ([browser] worker)",
        );
    }

    let caps = super::start::session_caps(&config);
    let show = |cap: Option<usize>| cap.map_or("none".to_owned(), |n| n.to_string());
    let memory = airlock_browser::host::memory().map_or("unknown".to_owned(), |m| {
        format!("{} of {} MiB available", m.available_mib, m.total_mib)
    });
    report.note(
        "session caps",
        &format!(
            "{} live sessions in all{} ({} isolation), {} per tenant{}, {} per user; none opens under {} MiB available (now: {memory})",
            show(caps.total),
            if config.sessions.max_total.is_none() { " (derived from memory and browser.memory_limit_mb)" } else { "" },
            match config.browser.isolation {
                airlock_config::Isolation::Context => "context",
                airlock_config::Isolation::Process => "process",
            },
            show(caps.per_tenant),
            if config.sessions.max_per_tenant == airlock_config::TenantCap::Fair {
                " (half of them, so no tenant takes every session; sessions.max_per_tenant)"
            } else {
                ""
            },
            show(caps.per_user),
            caps.min_free_memory_mib,
        ),
    );

    match check_writable(&config.data_dir) {
        Ok(()) => report.pass("data dir writable", &config.data_dir.display().to_string()),
        Err(e) => report.fail(
            "data dir writable",
            &format!("{}: {e}", config.data_dir.display()),
        ),
    }
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(&config.data_dir)
            && meta.permissions().mode() & 0o077 != 0
        {
            report.note(
                "data dir private",
                &format!(
                    "other users can enter `{}`: `chmod 700` it, so the browser worker's user cannot list it",
                    config.data_dir.display()
                ),
            );
        }
    }

    match &config.store {
        airlock_config::StoreLocation::Sqlite => report.pass(
            "store",
            &format!(
                "SQLite at {} (one process; set [store] url for replicas)",
                config.data_dir.join(super::vault::DB_FILE).display()
            ),
        ),
        airlock_config::StoreLocation::Postgres(url) => {
            match super::vault::open_store(&config).await {
                Ok(store) => {
                    report.pass(
                        "store",
                        &format!("Postgres at {}, migrations current", url.location()),
                    );
                    // Whether whoever takes this replica could erase history, not
                    // only fail to add to it.
                    match store.can_rewrite_audit().await {
                        Ok(Some(false)) => report.pass(
                            "audit history",
                            "append-only for the serving role (it may read and add audit events, never change or delete one)",
                        ),
                        Ok(Some(true)) => report.note(
                            "audit history",
                            "the serving role can update, delete or truncate audit events (it owns the tables): set [store] owner_url (AIRLOCK_DATABASE_OWNER_URL) to a role that owns them, and serve as another role",
                        ),
                        Ok(None) => {}
                        Err(e) => report.fail("audit history", &url.scrub(&e.to_string())),
                    }
                    store.close().await;
                }
                Err(e) => report.fail("store", &format!("{e:#}")),
            }
        }
    }

    if report.failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

// Who a worker's Chromium runs as: a user of its own (a root gateway's local worker),
// or the worker's.
fn chromium_user(report: &mut Report, about: &airlock_worker::About, worker: &str) {
    match about.browser_uid {
        Some(uid) if uid != about.uid => report.pass(
            "chromium user",
            &format!(
                "`{}` (uid {uid}), not the worker's: a compromised browser process cannot signal the worker, \
                 read its memory or open its directory",
                user_name(uid)
            ),
        ),
        _ => report.note(
            "chromium user",
            &format!(
                "Chromium runs as the worker's user (`{worker}`): a compromised browser process can do what that \
                 user can, but cannot read the worker's memory (a root gateway gives it a user of its own, \
                 [worker] browser_user; docs/workers.md)"
            ),
        ),
    }
}

// Starts the local worker as `serve` would, opens one session in it, and says who
// it runs as and whether its Chromium has its sandbox.
async fn check_worker(config: &airlock_config::Config, report: &mut Report) {
    let host = match super::start::browser_host(config).await {
        Ok(host) => host,
        Err(e) => {
            report.fail("browser worker", &format!("{e:#}"));
            return;
        }
    };
    if !config.workers.is_empty() || config.registration.is_some() {
        remote_workers(config, &host, report).await;
    } else if let Some(remote) = host.remote() {
        let about = remote.about().clone();
        let user = user_name(about.uid);
        if about.uid == 0 {
            report.fail(
                "browser worker",
                "runs as root: set [worker] user to an unprivileged user",
            );
        } else {
            report.pass(
                "browser worker",
                &format!(
                    "a process of its own (pid {}) as `{user}` (uid {}, [worker] user = \"{}\")",
                    about.pid, about.uid, config.worker_user
                ),
            );
        }
        if user == "nobody" {
            report.note(
                "worker user",
                "`nobody` is shared with whatever else runs as it on this host: give the worker a user of its own \
                 (drop [worker] user for the default, `airlock-worker`, made when missing)",
            );
        }
        memory(report, &about);
        chromium_user(report, &about, &user);
        sandbox(report, &about);
    }
    let spec = airlock_worker::OpenSpec {
        isolation: None,
        policy: airlock_policy::Policy::deny_all(),
        injection: None,
        secrets: airlock_worker::SecretSet::default(),
        effects: Default::default(),
        signing: None,
    };
    match host.open(spec).await {
        Ok(session) => {
            report.pass(
                "chromium starts in the worker",
                &format!("pid {}", session.browser_pid()),
            );
            session.close().await;
        }
        Err(e) => report.fail("chromium starts in the worker", &e.to_string()),
    }
    host.shutdown().await;
}

// Every worker on another machine: who it runs as and what protects it, as each
// says at its handshake.
async fn remote_workers(
    config: &airlock_config::Config,
    host: &airlock_worker::Host,
    report: &mut Report,
) {
    let workers = host.workers_status(std::time::Duration::from_secs(5)).await;
    if workers.is_empty() && config.registration.is_some() {
        report.note(
            "browser workers",
            "none registered yet: each says who it runs as when a replica first connects (run `airlock doctor` on a worker's host)",
        );
    }
    for (address, load, about) in workers {
        let check = format!("browser worker {address}");
        if load.is_none() {
            report.fail(&check, "does not answer");
            continue;
        }
        if about.uid == 0 {
            report.fail(&check, "runs as root: run it as an unprivileged user");
        } else {
            report.pass(&check, &format!("pid {} as uid {}", about.pid, about.uid));
        }
        memory(report, &about);
        chromium_user(report, &about, &user_name(about.uid));
        sandbox(report, &about);
    }
}

// Whether the worker's memory is closed to its user's other processes.
fn memory(report: &mut Report, about: &airlock_worker::About) {
    if about.undumpable {
        report.pass(
            "worker memory",
            "non-dumpable: no other process of its user can read or trace it",
        );
    } else {
        report.fail(
            "worker memory",
            "dumpable: any process of its user can read its secrets (an older worker? run this version)",
        );
    }
}

fn sandbox(report: &mut Report, about: &airlock_worker::About) {
    if about.sandbox {
        report.pass(
            "sandbox",
            "Chromium runs with its own sandbox in the worker",
        );
    } else {
        report.note(
            "sandbox",
            "the kernel offers the worker's user no sandbox: Chromium starts with --no-sandbox",
        );
    }
}

fn user_name(uid: u32) -> String {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map_or_else(|| format!("uid {uid}"), |u| u.name)
}

fn check_writable(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    std::fs::write(&probe, b"ok")?;
    std::fs::remove_file(&probe)
}
