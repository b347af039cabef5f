//! The local browser worker as `airlock serve` starts it: a process of its own, as
//! `nobody` when the gateway is root, with Chromium in its sandbox; unable to read
//! the data dir; and when it is killed mid-call the call says so, the session ends
//! on the record, the next session gets a new worker and nothing is left running.

use airlock_gateway::{Interaction, Navigation};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use airlock_core::ErrorCode;
use airlock_gateway::{Gateway, GatewayConfig, ToolCall};
use airlock_store::Store;
use airlock_test_support::{chromium_processes_under, with_browser};
use airlock_worker::{Host, LocalWorker, Remote, WorkerSpawn};

use crate::server::BIN;

pub(crate) fn navigate(url: String) -> ToolCall {
    ToolCall::Navigate(Navigation::To {
        url,
        wait_until: airlock_gateway::action::WaitUntil::Load,
        snapshot: airlock_gateway::PageView::None,
    })
}

// The local worker as `serve` starts it, under `parent`, hung after `grace`.
pub(crate) fn local_worker(parent: &Path, grace: Duration) -> Arc<LocalWorker> {
    Arc::new(LocalWorker::new(WorkerSpawn {
        exe: BIN.into(),
        browser: airlock_config::BrowserConfig {
            chrome: std::env::var_os("AIRLOCK_CHROME").map(Into::into),
            ..Default::default()
        },
        user: airlock_config::DEFAULT_WORKER_USER.to_owned(),
        browser_user: airlock_config::DEFAULT_BROWSER_USER.to_owned(),
        parent: Some(parent.to_owned()),
        args: vec![],
        grace,
    }))
}

// A temp dir any user may pass through (a worker's user makes its directory there).
pub(crate) fn passable_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

// A session with `policy` and nothing else.
fn plain_spec(policy: airlock_policy::Policy) -> airlock_worker::OpenSpec {
    airlock_worker::OpenSpec {
        isolation: None,
        policy,
        injection: None,
        secrets: airlock_worker::SecretSet::default(),
        effects: Default::default(),
        signing: None,
    }
}

// The real uid of a process, from /proc.
fn uid_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn cmdline(pid: u32) -> String {
    String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
        .replace('\0', " ")
}

// A process's v1 memory cgroup path, if it has one.
fn memory_cgroup(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .ok()?
        .lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers
                .split(',')
                .any(|c| c == "memory")
                .then(|| path.to_owned())
        })
}

async fn gone(pids: &[u32]) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while pids
        .iter()
        .any(|p| Path::new(&format!("/proc/{p}")).exists())
    {
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    true
}

/// Reading a byte of `path` as `uid`:`gid` is refused ("Permission denied").
fn refused_as(uid: u32, gid: u32, path: &str) {
    let read = std::process::Command::new("head")
        .args(["-c", "1", path])
        .uid(uid)
        .gid(gid)
        .output()
        .unwrap();
    assert!(!read.status.success(), "{path} was readable as uid {uid}");
    assert!(
        String::from_utf8_lossy(&read.stderr).contains("Permission denied"),
        "{read:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_is_unprivileged_and_sandboxed_and_a_killed_one_ends_only_its_sessions() {
    with_browser(|h| async move {
        let root = nix::unistd::geteuid().is_root();
        // Where the worker makes its directory: any user may pass through it.
        let parent = passable_dir();
        // A data dir as the CLI makes it: store and master key.
        let data = tempfile::tempdir().unwrap();
        let data_dir = data.path().join("data");
        let made = {
            use std::io::Write as _;
            let mut child = std::process::Command::new(BIN)
                .args(["vault", "set", "demo", "--origin", "https://example.com"])
                .arg("--password-stdin")
                .env_remove("AIRLOCK_CONFIG")
                .env("AIRLOCK_DATA_DIR", &data_dir)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"a-long-password\n")
                .unwrap();
            child.wait_with_output().unwrap()
        };
        assert!(made.status.success(), "{made:?}");
        let store = Store::open_sqlite(&data_dir.join("airlock.db"))
            .await
            .unwrap();

        let worker = local_worker(parent.path(), airlock_worker::remote::GRACE);
        let remote = Remote::new(worker.clone())
            .await
            .expect("the worker starts");
        let sandboxed = remote.about().sandbox;
        let host: Host = remote.into();
        let asker = host.clone();
        let gateway = Gateway::new(
            host,
            GatewayConfig {
                // The reaper comes by every 2 s.
                idle_ttl: Duration::from_secs(8),
..GatewayConfig::with_policy(h.site.policy()).store(store.clone())
},
        );
        let agent = Arc::new(gateway.agent_session());
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);

        // Who runs: the worker and every Chromium process, never root.
        let pid = worker.pid().await.expect("a worker runs");
        let uid = uid_of(pid).unwrap();
        // Its own user, made by the gateway if missing; never the shared `nobody`.
        let own = nix::unistd::User::from_name(airlock_config::DEFAULT_WORKER_USER)
            .unwrap()
            .expect("a root gateway makes the worker's user");
        if root {
            assert_eq!(
                uid,
                own.uid.as_raw(),
                "a root gateway's worker runs as its own user"
            );
            assert_ne!(uid, 65534, "not as nobody");
            assert!(
                sandboxed,
                "this kernel lets Chromium sandbox itself as the worker's user"
            );
        }
        // (The worker's own command line names its directory too.)
        let chromium: Vec<u32> = chromium_processes_under(parent.path())
            .into_iter()
            .filter(|p| *p != pid)
            .collect();
        assert!(
            !chromium.is_empty(),
            "its Chromium profiles live in its directory"
        );
        // Chromium runs as a user of its own, apart from the worker that holds the
        // secrets (a root gateway maps both into the worker's user namespace).
        let browser = nix::unistd::User::from_name(airlock_config::DEFAULT_BROWSER_USER)
            .unwrap()
            .filter(|_| root);
        let chromium_uid = browser.as_ref().map_or(uid, |b| b.uid.as_raw());
        for p in &chromium {
            assert_eq!(uid_of(*p), Some(chromium_uid), "{}", cmdline(*p));
            if sandboxed {
                assert!(!cmdline(*p).contains("--no-sandbox"), "{}", cmdline(*p));
            }
        }
        if root {
            let browser = browser.expect("a root gateway makes the browser's user");
            assert_ne!(browser.uid.as_raw(), uid, "Chromium is not the worker's user");
            let (b_uid, b_gid) = (browser.uid.as_raw(), browser.gid.as_raw());
            let as_browser = |program: &str, args: &[&str]| {
                std::process::Command::new(program)
                    .args(args)
                    .uid(b_uid)
                    .gid(b_gid)
                    .output()
                    .unwrap()
            };
            // As Chromium's user: the worker cannot be signalled, its memory and
            // environment not read, its directory not listed.
            let signalled = as_browser("kill", &["-0", &pid.to_string()]);
            assert!(!signalled.status.success(), "{signalled:?}");
            refused_as(b_uid, b_gid, &format!("/proc/{pid}/environ"));
            let dir = std::fs::read_dir(parent.path())
                .unwrap()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("airlock-worker-")))
                .expect("the worker's directory");
            let listed = as_browser("ls", &[&dir.display().to_string()]);
            assert!(!listed.status.success(), "{listed:?}");
            // Its own directory the worker still reads (a namespace's root).
            assert!(dir.join("browser").is_dir());
        }
        // Root can bound memory with cgroups: the worker's Chromiums are bounded in
        // groups it made inside the one the gateway handed it.
        let mut cgroup_dirs = vec![];
        if root && memory_cgroup(std::process::id()).is_some() {
            let worker_group = memory_cgroup(pid).expect("the worker has a memory cgroup");
            let dir = Path::new("/sys/fs/cgroup/memory").join(worker_group.trim_start_matches('/'));
            if dir.is_dir() {
                cgroup_dirs.push(dir);
            }
            assert!(worker_group.contains("/airlock-"), "{worker_group}");
            for p in &chromium {
                let group = memory_cgroup(*p).unwrap_or_default();
                assert!(
                    group.starts_with(&format!("{worker_group}/airlock-")),
                    "Chromium {p} is in `{group}`, not a bounded group of the worker's `{worker_group}`"
                );
            }
        }
        // Its environment carries nothing of the gateway's.
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        assert!(
            !String::from_utf8_lossy(&environ).contains("AIRLOCK_"),
            "the worker's environment is emptied"
        );

        // As its own user, its memory cannot be read: it is non-dumpable, so its
        // /proc files are root's (a same-uid probe read every loaded secret before).
        // Nor can the data dir's store and keys.
        if root {
            for file in ["environ", "mem", "maps"] {
                refused_as(uid, own.gid.as_raw(), &format!("/proc/{pid}/{file}"));
            }
            for file in ["master.key", "airlock.db"] {
                let path = data_dir.join(file);
                assert!(path.exists(), "{file} is made by the CLI");
                refused_as(uid, own.gid.as_raw(), &path.display().to_string());
            }
        }

        // Asked by a page's session to hand it the master key, it cannot read it:
        // the file input gets nothing of it (as root it would get its 45 bytes).
        if root {
            let key = data_dir.join("master.key");
            let size = std::fs::metadata(&key).unwrap().len();
            let session = asker
                .open(plain_spec(h.site.policy()))
                .await
                .unwrap();
            session
                .navigate(&h.site.url("upload.html"), airlock_gateway::action::WaitUntil::Load)
                .await
                .unwrap();
            let _ = session
                .call(airlock_worker::Call::Upload {
                    target: airlock_gateway::action::Target::Selector("#one".to_owned()),
                    paths: vec![key.clone()],
                })
                .await;
            let page = session.read_text(0, 4096).await.unwrap();
            assert!(
                !page.text.contains(&format!("master.key {size}")),
                "the worker read the master key: {}",
                page.text
            );
            // Nor any other file of the host, readable or not: a worker hands a page
            // only what its session staged (it gave /etc/passwd away before).
            let refused = session
                .call(airlock_worker::Call::Upload {
                    target: airlock_gateway::action::Target::Selector("#one".to_owned()),
                    paths: vec!["/etc/passwd".into()],
                })
                .await;
            assert!(
                refused.as_ref().is_err_and(|e| e.to_string().contains("not a file this session staged")),
                "{refused:?}"
            );
            let page = session.read_text(0, 4096).await.unwrap();
            assert!(!page.text.contains("passwd"), "{}", page.text);
            session.close().await;
        }

        // Killed in the middle of a call: the page is still loading when it dies.
        let before = h.site.a.connections();
        let slow = h.site.url("slow?ms=20000");
        let loading = {
            let agent = agent.clone();
            tokio::spawn(async move { agent.call(navigate(slow)).await })
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while h.site.a.connections() == before {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the slow page was never asked for"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let out = loading.await.unwrap();
        assert_eq!(out.error, Some(ErrorCode::BrowserCrashed), "{}", out.text);
        assert!(out.text.contains("browser host"), "{}", out.text);
        assert!(
            out.text.contains("next call opens a fresh one"),
            "{}",
            out.text
        );

        // The next call gets a new worker; what the dead one started is gone.
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let next = worker.pid().await.expect("a new worker runs");
        assert_ne!(next, pid);
        if let Some(group) = memory_cgroup(next).filter(|_| !cgroup_dirs.is_empty()) {
            cgroup_dirs.push(Path::new("/sys/fs/cgroup/memory").join(group.trim_start_matches('/')));
        }
        assert!(
            gone(&chromium).await,
            "the dead worker's Chromium was left running"
        );

        // Killed while its session sits idle: the session ends on the record at
        // once, not at its agent's next call.
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(next as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let closes = || async {
            store
                .audit_events(0, 1000)
                .await
                .unwrap()
                .iter()
                .map(|r| serde_json::from_str::<serde_json::Value>(&r.body).unwrap())
                .filter(|e| e["kind"] == "session_close")
                .map(|e| e["reason"].as_str().unwrap_or("").to_owned())
                .collect::<Vec<_>>()
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while closes().await != ["browser host gone", "browser host gone"] {
            assert!(
                tokio::time::Instant::now() < deadline,
                "an idle session of a dead worker did not end: {:?}",
                closes().await
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let next = worker.pid().await.expect("a third worker runs");
        if let Some(group) = memory_cgroup(next).filter(|_| !cgroup_dirs.is_empty()) {
            cgroup_dirs.push(Path::new("/sys/fs/cgroup/memory").join(group.trim_start_matches('/')));
        }

        drop(agent);
        gateway.shutdown().await;
        assert!(
            gone(&[next]).await,
            "the worker outlived the gateway's shutdown"
        );
        assert!(
            gone(&chromium_processes_under(parent.path())).await,
            "a Chromium outlived the gateway's shutdown"
        );
        assert_eq!(
            std::fs::read_dir(parent.path()).unwrap().count(),
            0,
            "the worker's directory is removed"
        );
        for dir in &cgroup_dirs {
            assert!(!dir.exists(), "the worker's cgroup {} is left", dir.display());
        }

        // On the record: the session the worker took with it ended, saying why.
        let records = store.audit_events(0, 1000).await.unwrap();
        let reasons: Vec<String> = records
            .iter()
            .map(|r| serde_json::from_str::<serde_json::Value>(&r.body).unwrap())
            .filter(|e| e["kind"] == "session_close")
            .map(|e| e["reason"].as_str().unwrap_or("").to_owned())
            .collect();
        assert_eq!(
            reasons,
            ["browser host gone", "browser host gone", "closed"],
            "{reasons:?}"
        );
    })
    .await;
}

// A certificate for `localhost` signed by a CA of the test's own: (CA PEM, cert
// PEM, key PEM).
pub(crate) fn certificates() -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &rcgen::Issuer::from_params(&ca_params, &ca_key))
        .unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

const TOKEN: &str = "a-worker-token-of-at-least-thirty-two-characters";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_on_another_machine_serves_gateways_over_tls_with_the_deployment_token() {
    with_browser(|h| async move {
        let tmp = tempfile::tempdir().unwrap();
        let (ca, cert, key) = certificates();
        let write = |name: &str, text: &str| {
            let path = tmp.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let (ca_file, cert_file, key_file) =
            (write("ca.pem", &ca), write("cert.pem", &cert), write("key.pem", &key));
        let token_file = write("token", TOKEN);
        let wrong_token_file = write("wrong-token", &TOKEN.replace('a', "b"));
        let other_ca = write("other-ca.pem", &certificates().0);
        let profiles = tmp.path().join("worker-tmp");
        std::fs::create_dir(&profiles).unwrap();
        // Started as root, the worker runs under users of its own: they pass through
        // to its temp dir.
        for dir in [tmp.path(), profiles.as_path()] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }

        let mut worker = tokio::process::Command::new(BIN)
            .args(["worker", "--listen", "127.0.0.1:0", "--tls-cert"])
            .arg(&cert_file)
            .arg("--tls-key")
            .arg(&key_file)
            .env_remove("AIRLOCK_CONFIG")
            .env("AIRLOCK_WORKER_TOKEN", TOKEN)
            .env("TMPDIR", &profiles)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let address = {
            use tokio::io::AsyncBufReadExt as _;
            let mut lines = tokio::io::BufReader::new(worker.stdout.take().unwrap()).lines();
            let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
                .await
                .expect("the worker says where it listens")
                .unwrap()
                .expect("the worker printed its address");
            line.rsplit(' ').next().unwrap().to_owned()
        };

        // The gateway's side as configured: doctor connects as serve would.
        let doctor = |token_file: &Path, ca_file: &Path| {
            let config = tmp.path().join("gateway.toml");
            std::fs::write(
                &config,
                format!(
                    "[[workers]]\naddress = \"{address}\"\nserver_name = \"localhost\"\nca_file = \"{}\"\ntoken_file = \"{}\"\n",
                    ca_file.display(),
                    token_file.display()
                ),
            )
            .unwrap();
            let out = std::process::Command::new(BIN)
                .arg("doctor")
                .env("AIRLOCK_CONFIG", &config)
                .env("AIRLOCK_DATA_DIR", tmp.path().join("data"))
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr)
        };
        let out = doctor(&token_file, &ca_file);
        assert!(out.contains("ok    chromium starts in the worker"), "{out}");
        // Who the worker on the other machine runs as, and what protects it: started
        // as root (as this test's is), it runs itself as `airlock-worker` with
        // Chromium as `airlock-browser`; no word of `[worker] user`, which is this
        // machine's setting.
        if nix::unistd::geteuid().is_root() {
            let uid = |name: &str| {
                nix::unistd::User::from_name(name)
                    .unwrap()
                    .expect("made by the worker's supervisor")
                    .uid
            };
            let worker_uid = uid(airlock_config::DEFAULT_WORKER_USER);
            assert!(
                out.contains(&format!("ok    browser worker {address}: pid "))
                    && out.contains(&format!(" as uid {worker_uid}")),
                "{out}"
            );
            assert!(
                out.contains(&format!(
                    "ok    chromium user: `airlock-browser` (uid {})",
                    uid(airlock_config::DEFAULT_BROWSER_USER)
                )),
                "{out}"
            );
        }
        assert!(out.contains("ok    worker memory: non-dumpable"), "{out}");
        assert!(!out.contains("[worker] user"), "{out}");
        let out = doctor(&wrong_token_file, &ca_file);
        assert!(
            out.contains("FAIL  browser worker") && out.contains("worker token is not this worker's"),
            "{out}"
        );
        assert!(!out.contains(TOKEN) && !out.contains(&TOKEN.replace('a', "b")), "{out}");
        let out = doctor(&token_file, &other_ca);
        assert!(out.contains("FAIL  browser worker") && out.contains("certificate"), "{out}");

        // A gateway drives a page through it.
        let connector = airlock_worker::TlsConnector {
            address: address.clone(),
            server_name: "localhost".to_owned(),
            tls: airlock_worker::tls::client_config(&ca_file).unwrap(),
            token: zeroize::Zeroizing::new(TOKEN.to_owned()),
            admit: None,
        };
        let host: Host = airlock_worker::Fleet::new(vec![Remote::new(connector).await.unwrap()])
            .unwrap()
            .into();
        let gateway = Gateway::new(
            host,
            GatewayConfig::with_policy(h.site.policy()),
        );
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("Sign in"), "{}", out.text);
        // The token was in the worker's environment; no Chromium inherits it (nor
        // anything of Airlock's).
        let chromium = chromium_processes_under(&profiles);
        assert!(!chromium.is_empty());
        for p in chromium {
            let environ = std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
            let environ = String::from_utf8_lossy(&environ);
            assert!(
                !environ.contains(TOKEN) && !environ.contains("AIRLOCK_"),
                "Chromium {p} inherited: {environ}"
            );
        }
        drop(agent);
        gateway.shutdown().await;

        // Stopped, it leaves nothing running.
        let pid = worker.id().unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let status = tokio::time::timeout(Duration::from_secs(15), worker.wait())
            .await
            .expect("the worker stops on SIGTERM")
            .unwrap();
        assert!(status.success(), "{status:?}");
        assert!(gone(&chromium_processes_under(&profiles)).await);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_worker_is_counted_gone_and_replaced() {
    with_browser(|h| async move {
        let parent = passable_dir();
        // A call 1 s past its budget means the worker hangs.
        let worker = local_worker(parent.path(), Duration::from_secs(1));
        let host: Host = Remote::new(worker.clone()).await.unwrap().into();
        let gateway = Gateway::new(host, GatewayConfig::with_policy(h.site.policy()));
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let pid = worker.pid().await.unwrap();

        // The worker stops answering (stopped, not dead: its socket stays open).
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGSTOP,
        )
        .unwrap();
        let click = ToolCall::Interact(Interaction::Click {
            target: airlock_gateway::action::Target::Role {
                role: "checkbox".into(),
                name: Some("Remember me".into()),
                index: None,
            },
            options: Default::default(),
        });
        let out = tokio::time::timeout(
            Duration::from_secs(20),
            agent.call(ToolCall::Budgeted(
                Duration::from_millis(500),
                Box::new(click),
            )),
        )
        .await
        .expect("a call to a hung worker ends at its budget plus the grace");
        assert_eq!(out.error, Some(ErrorCode::BrowserCrashed), "{}", out.text);
        assert!(out.text.contains("did not answer in time"), "{}", out.text);

        // The next call gets a new worker; the hung one is killed, not left behind.
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let next = worker.pid().await.unwrap();
        assert_ne!(next, pid);
        assert!(gone(&[pid]).await, "the hung worker was left running");

        drop(agent);
        gateway.shutdown().await;
        assert!(gone(&chromium_processes_under(parent.path())).await);
    })
    .await;
}

// A worker stopped mid-flight (SIGSTOP: its socket stays open, nothing answers)
// fails its own sessions' calls at the heartbeat, seconds later, not after the
// call's budget and the 60 s grace; a session on the other worker of the fleet
// answers all along, and the stopped worker is replaced, not left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_worker_fails_only_its_own_sessions_within_seconds() {
    with_browser(|h| async move {
        let parents = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let mut workers = Vec::new();
        let mut remotes = Vec::new();
        for parent in &parents {
            std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755))
                .unwrap();
            let worker = local_worker(parent.path(), airlock_worker::remote::GRACE);
            remotes.push(Remote::new(worker.clone()).await.unwrap());
            workers.push(worker);
        }
        let host: Host = airlock_worker::Fleet::new(remotes).unwrap().into();
        let gateway = Gateway::new(
            host,
            GatewayConfig {
                warm_sessions: 0,
                ..GatewayConfig::with_policy(h.site.policy())
            },
        );
        let (one, other) = (gateway.agent_session(), gateway.agent_session());
        for agent in [&one, &other] {
            let out = agent.call(navigate(h.site.url("login.html"))).await;
            assert_eq!(out.error, None, "{}", out.text);
        }
        // Each on a worker of its own (the one with the most room took each).
        let on = |i: usize| !chromium_processes_under(parents[i].path()).is_empty();
        assert!(on(0) && on(1), "a session on each worker");
        let stopped = workers[0].pid().await.unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(stopped as i32),
            nix::sys::signal::Signal::SIGSTOP,
        )
        .unwrap();
        let started = tokio::time::Instant::now();
        let (first, second) = tokio::join!(
            one.call(navigate(h.site.url("resolve.html"))),
            other.call(navigate(h.site.url("resolve.html")))
        );
        let took = started.elapsed();
        // Which agent's session ran on the stopped worker: the one whose call failed.
        let (failed, served, survivor) = if first.error.is_some() {
            (first, second, &other)
        } else {
            (second, first, &one)
        };
        assert_eq!(served.error, None, "{}", served.text);
        assert_eq!(
            failed.error,
            Some(ErrorCode::BrowserCrashed),
            "{}",
            failed.text
        );
        assert!(failed.text.contains("no heartbeat"), "{}", failed.text);
        assert!(
            took < airlock_worker::remote::SILENT_AFTER + Duration::from_secs(5),
            "the stopped worker's call ended after {took:?}"
        );
        // The other session answers on.
        let out = survivor.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        // The stopped worker and every Chromium it started are gone with it, not
        // at the next call or the gateway's stop.
        assert!(
            gone(&[stopped]).await,
            "the stopped worker was left running"
        );
        assert!(gone(&chromium_processes_under(parents[0].path())).await);
        assert!(!chromium_processes_under(parents[1].path()).is_empty());
        drop((one, other));
        gateway.shutdown().await;
        for parent in &parents {
            assert!(gone(&chromium_processes_under(parent.path())).await);
        }
    })
    .await;
}

// A call held for approval on a worker that is killed: the card closes at once (on
// the record, expired with why), the call says its browser is gone, nobody can
// approve it afterwards, and the worker's Chromium is gone with it, not at the next
// call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_workers_held_approval_closes_and_cannot_be_approved() {
    with_browser(|h| async move {
        let parent = passable_dir();
        let worker = local_worker(parent.path(), airlock_worker::remote::GRACE);
        let host: Host = Remote::new(worker.clone()).await.unwrap().into();
        let store = Store::open_in_memory().await.unwrap();
        let gateway = Gateway::new(
            host,
            GatewayConfig {
                rules: airlock_risk::Rules::from_config(&Default::default()).unwrap(),
                approval_timeout: Duration::from_secs(600),
                ..GatewayConfig::with_policy(h.site.policy()).store(store.clone())
            },
        );
        let agent = Arc::new(gateway.agent_session());
        let out = agent.call(navigate(h.site.url("resolve.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let held = {
            let agent = agent.clone();
            tokio::spawn(async move {
                agent
                    .call(ToolCall::Interact(Interaction::Click {
                        target: airlock_gateway::action::Target::Role {
                            role: "button".into(),
                            name: Some("Delete account".into()),
                            index: None,
                        },
                        options: Default::default(),
                    }))
                    .await
            })
        };
        let mut feed = gateway.audit().feed();
        let approval = loop {
            let event = feed.recv().await.unwrap();
            if event.kind == "approval_requested" {
                let body: serde_json::Value = serde_json::from_str(&event.body).unwrap();
                break body["approval"].as_str().unwrap().to_owned();
            }
        };
        let pid = worker.pid().await.unwrap();
        let chromium = chromium_processes_under(parent.path());
        assert!(!chromium.is_empty());
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let out = tokio::time::timeout(Duration::from_secs(15), held)
            .await
            .expect("the held call ends when its worker does")
            .unwrap();
        assert_eq!(out.error, Some(ErrorCode::BrowserCrashed), "{}", out.text);
        let record = store.approval(&approval).await.unwrap().unwrap();
        assert_eq!(record.status, airlock_store::ApprovalStatus::Expired);
        assert!(matches!(
            store
                .decide_approval(&approval, true, "ops", None, 0)
                .await
                .unwrap(),
            airlock_store::Decided::Closed(airlock_store::ApprovalStatus::Expired)
        ));
        let decided = store.audit_events(0, 10_000).await.unwrap();
        assert!(
            decided
                .iter()
                .any(|e| e.kind == "approval_decided"
                    && e.body.contains("its browser worker is gone"))
        );
        assert!(
            gone(&chromium).await,
            "the killed worker's Chromium outlived it"
        );
        drop(agent);
        gateway.shutdown().await;
    })
    .await;
}

/// Container runtimes' default seccomp profiles (Kubernetes' `RuntimeDefault`)
/// refuse user namespaces to a process without `CAP_SYS_ADMIN` though the kernel
/// offers them, so Chromium would not start sandboxed ("No usable sandbox!"). Run
/// as an unprivileged user under such a filter, Airlock says why its sandbox is off
/// and Chromium starts; the same user without the filter gets the sandbox.
#[test]
fn under_a_seccomp_profile_that_refuses_user_namespaces_chromium_starts_and_says_why() {
    use std::os::unix::process::CommandExt as _;
    let tmp = tempfile::tempdir().unwrap();
    let nobody = nix::unistd::Uid::from_raw(65534);
    let nogroup = nix::unistd::Gid::from_raw(65534);
    nix::unistd::chown(tmp.path(), Some(nobody), Some(nogroup)).unwrap();
    let config = tmp.path().join("airlock.toml");
    std::fs::write(&config, "[browser]\nworker = \"embedded\"\n").unwrap();
    let doctor = |filtered: bool| {
        let mut command = if filtered {
            let mut c = std::process::Command::new("/usr/bin/python3");
            c.arg(crate::mcp_clients::root().join("crates/airlock/tests/clients/refuse_userns.py"))
                .arg(BIN);
            c
        } else {
            std::process::Command::new(BIN)
        };
        let out = command
            .arg("doctor")
            .arg("--data-dir")
            .arg(tmp.path().join("data"))
            .current_dir(tmp.path())
            .env("AIRLOCK_CONFIG", &config)
            .env("TMPDIR", tmp.path())
            .uid(nobody.as_raw())
            .gid(nogroup.as_raw())
            .output()
            .unwrap();
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let filtered = doctor(true);
    assert!(
        filtered.contains("note  sandbox: this process may not create user namespaces"),
        "{filtered}"
    );
    assert!(
        filtered.contains("ok    chromium starts headless"),
        "{filtered}"
    );
    let plain = doctor(false);
    assert!(!plain.contains("note  sandbox:"), "{plain}");
    assert!(plain.contains("ok    chromium starts headless"), "{plain}");
}

/// Chromium under a user of its own still does its work: a page reads the bytes of
/// a file the session staged, and a download lands where the worker takes it from.
/// (Without the worker handing Chromium its directories, the file is unreadable
/// and the download never arrives.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_under_its_own_user_reads_what_is_staged_and_writes_downloads() {
    with_browser(|h| async move {
        let parent = passable_dir();
        let worker = local_worker(parent.path(), airlock_worker::remote::GRACE);
        let host: Host = Remote::new(worker.clone()).await.unwrap().into();
        if nix::unistd::geteuid().is_root() {
            let about = host.remote().unwrap().about();
            assert!(
                about.browser_uid.is_some_and(|b| b != about.uid),
                "Chromium runs as its own user: {about:?}"
            );
        }
        let session = host.open(plain_spec(h.site.policy())).await.unwrap();
        session
            .navigate(
                &h.site.url("upload.html"),
                airlock_gateway::action::WaitUntil::Load,
            )
            .await
            .unwrap();
        let staged = session
            .call(airlock_worker::Call::Stage {
                name: "notes.txt".to_owned(),
                data: b"staged words".to_vec(),
                into: None,
            })
            .await
            .unwrap();
        let airlock_worker::Reply::Text(path) = staged else {
            panic!("no path: {staged:?}");
        };
        session
            .call(airlock_worker::Call::Upload {
                target: airlock_gateway::action::Target::Selector("#one".to_owned()),
                paths: vec![path.into()],
            })
            .await
            .unwrap();
        let read = session
            .call(airlock_worker::Call::Evaluate {
                function: "async () => await document.getElementById('one').files[0].text()"
                    .to_owned(),
                target: None,
            })
            .await
            .unwrap();
        let airlock_worker::Reply::Text(read) = read else {
            panic!("{read:?}");
        };
        assert!(read.contains("staged words"), "{read}");
        session.close().await;

        // A download, through the gateway as `serve` runs it.
        let dir = tempfile::tempdir().unwrap();
        let gateway = Gateway::new(
            host,
            GatewayConfig {
                download_dir: Some(dir.path().canonicalize().unwrap()),
                ..GatewayConfig::with_policy(h.site.policy())
            },
        );
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("download.html"))).await;
        let mut text = agent
            .call(ToolCall::Interact(Interaction::Click {
                target: airlock_gateway::action::Target::Role {
                    role: "link".into(),
                    name: Some("Get report".into()),
                    index: None,
                },
                options: Default::default(),
            }))
            .await
            .text;
        // A download finishes after the click; a later result reports it.
        for _ in 0..200 {
            if text.contains("downloaded \"report.txt\"") {
                break;
            }
            text = agent
                .call(ToolCall::Read(airlock_gateway::Reading::WaitFor {
                    condition: airlock_gateway::action::WaitCondition::Time(Duration::from_millis(
                        50,
                    )),
                    timeout: None,
                }))
                .await
                .text;
        }
        assert!(
            text.contains("downloaded \"report.txt\""),
            "never reported: {text}"
        );
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1, "the file reached the download directory");
        gateway.shutdown().await;
        worker.stop().await;
    })
    .await;
}
