//! The fleet the process-level replica tests start: one real Postgres, the vault's
//! key, the workers' token and certificates, the approvers' key; workers listening
//! over TLS, replicas (`airlock serve`) with data dirs of their own, and the CLI
//! against the shared store.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use airlock_test_support::{FixtureSite, Postgres};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::mcp_clients::fixture_config;
use crate::server::BIN;

pub(crate) const WORKER_TOKEN: &str = "a-worker-token-of-at-least-thirty-two-characters";
// A registering worker's own credential, as one names it in its registration.
pub(crate) const OWN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const ADMIN_KEY: &str = "admin-key-fedcba9876543210-fleet";
// The fleet's global cap on live sessions (`sessions.max_total`; its one tenant may
// fill it).
pub(crate) const MAX_TOTAL: usize = 12;

// What every process of the fleet shares: the database, the vault's key, the
// workers' token and the approvers' key.
pub(crate) struct Fleet {
    pub(crate) tmp: tempfile::TempDir,
    pub(crate) pg: Postgres,
    pub(crate) master_key: String,
    pub(crate) certs: (PathBuf, PathBuf, PathBuf),
}

impl Fleet {
    pub(crate) fn new() -> Fleet {
        let tmp = tempfile::tempdir().unwrap();
        let (ca, cert, key) = crate::worker::certificates();
        let write = |name: &str, text: &str| {
            let path = tmp.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let certs = (
            write("ca.pem", &ca),
            write("cert.pem", &cert),
            write("key.pem", &key),
        );
        // The checkpoint key every replica signs with ([audit] key_file).
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).unwrap();
        use base64::Engine as _;
        let audit_key = write(
            "audit.key",
            &base64::engine::general_purpose::STANDARD.encode(seed),
        );
        std::fs::set_permissions(
            &audit_key,
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        let mut raw = [0u8; 32];
        getrandom::fill(&mut raw).unwrap();
        Fleet {
            master_key: base64::engine::general_purpose::STANDARD.encode(raw),
            pg: Postgres::start(),
            tmp,
            certs,
        }
    }

    pub(crate) fn env(&self, command: &mut Command) {
        command
            .env_remove("AIRLOCK_CONFIG")
            .env_remove("AIRLOCK_API_KEY")
            .env("AIRLOCK_DATABASE_URL", self.pg.url())
            .env("AIRLOCK_MASTER_KEY", &self.master_key)
            .env("AIRLOCK_WORKER_TOKEN", WORKER_TOKEN)
            .env("AIRLOCK_ADMIN_KEY", ADMIN_KEY)
            .env("TMPDIR", self.tmp.path());
    }

    // A new key of tenant acme with `role`.
    pub(crate) async fn key(&self, role: &str) -> String {
        self.cli(&["key", "create", "--tenant", "acme", "--role", role])
            .await
            .trim()
            .to_owned()
    }

    // The CLI against the shared store; its stdout.
    pub(crate) async fn cli(&self, args: &[&str]) -> String {
        let none = self.tmp.path().join("no-config.toml");
        std::fs::write(&none, "").unwrap();
        self.cli_in("cli", &none, args).await
    }

    // The CLI with the data dir `dir` and the replicas' `config`.
    pub(crate) async fn cli_in(&self, dir: &str, config: &Path, args: &[&str]) -> String {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .arg("--data-dir")
            .arg(self.tmp.path().join(dir));
        self.env(&mut command);
        command.env("AIRLOCK_CONFIG", config);
        let out = command.output().await.unwrap();
        assert!(
            out.status.success(),
            "airlock {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    // A worker on `listen`, keeping a session whose replica went for a minute.
    pub(crate) async fn worker(&self, listen: &str) -> (Child, String) {
        self.worker_with(listen, &[]).await
    }

    // A worker on `listen` with `extra` arguments.
    pub(crate) async fn worker_with(&self, listen: &str, extra: &[&str]) -> (Child, String) {
        let mut command = Command::new(BIN);
        command
            .args(["worker", "--listen", listen, "--detached-grace-secs", "60"])
            .args(extra)
            .arg("--tls-cert")
            .arg(&self.certs.1)
            .arg("--tls-key")
            .arg(&self.certs.2)
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        self.env(&mut command);
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the worker says where it listens")
            .unwrap()
            .expect("the worker printed its address");
        (child, line.rsplit(' ').next().unwrap().to_owned())
    }

    // The replicas' config: the fixture site allowed, these workers listed.
    pub(crate) fn config(&self, site: &FixtureSite, workers: &[&str]) -> PathBuf {
        let dir = self.tmp.path().join(format!("config-{}", workers.len()));
        std::fs::create_dir_all(&dir).unwrap();
        fixture_config(&dir, site, &self.fleet_toml(workers, ""))
    }

    // The replicas' config as `file`: the fleet's sessions, audit key and workers;
    // `rest` goes on in `[sessions]` and opens the sections it needs (the policy's
    // among them: nothing is allowed but what it says).
    pub(crate) fn config_as(&self, file: &str, workers: &[&str], rest: &str) -> PathBuf {
        let path = self.tmp.path().join(file);
        std::fs::write(&path, self.fleet_toml(workers, rest)).unwrap();
        path
    }

    pub(crate) fn fleet_toml(&self, workers: &[&str], sessions: &str) -> String {
        let mut toml = format!(
            "[sessions]\nwarm = 0\nmax_total = {MAX_TOTAL}\nmax_per_tenant = {MAX_TOTAL}\n{sessions}[audit]\nkey_file = \"{}\"\n",
            self.tmp.path().join("audit.key").display()
        );
        for address in workers {
            toml.push_str(&format!(
                "[[workers]]\naddress = \"{address}\"\nserver_name = \"localhost\"\nca_file = \"{}\"\n",
                self.certs.0.display()
            ));
        }
        toml
    }

    // The replicas' config when workers register themselves: none listed.
    // Replicas taking registrations of workers on loopback (`allow_loopback`: the
    // line tests need, loopback being no worker's address by default).
    pub(crate) fn registering_config(&self, site: &FixtureSite, allow_loopback: bool) -> PathBuf {
        let extra = format!(
            "[sessions]\nwarm = 0\n[registration]\nserver_name = \"localhost\"\nca_file = \"{}\"\n{}",
            self.certs.0.display(),
            if allow_loopback {
                "allow_addresses = [\"127.0.0.1\"]\n"
            } else {
                ""
            }
        );
        let dir = self
            .tmp
            .path()
            .join(format!("config-registering-{allow_loopback}"));
        std::fs::create_dir_all(&dir).unwrap();
        fixture_config(&dir, site, &extra)
    }

    // A replica with a data dir of its own; its root URL.
    pub(crate) async fn replica(&self, name: &str, config: &Path) -> (Child, String) {
        self.replica_with(name, config, &[]).await
    }

    // A replica with these variables besides the fleet's.
    pub(crate) async fn replica_with(
        &self,
        name: &str,
        config: &Path,
        env: &[(&str, &str)],
    ) -> (Child, String) {
        let mut command = Command::new(BIN);
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(self.tmp.path().join(name))
            .env("RUST_LOG", "airlock=info")
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        self.env(&mut command);
        command.env("AIRLOCK_CONFIG", config);
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(i) = line.find("MCP endpoint: ") {
                    return line[i + 14..].split_whitespace().next().unwrap().to_owned();
                }
            }
            panic!("airlock serve exited before listening");
        })
        .await
        .expect("a replica listens within 30 s");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        (child, url.trim_end_matches("/mcp").to_owned())
    }
}

pub(crate) async fn stop(mut child: Child) {
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("stops on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
}
