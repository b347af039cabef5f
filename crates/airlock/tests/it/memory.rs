//! What a session that held a secret leaves behind, measured the way an attacker on
//! the host would: every readable page of every process that remains (the worker,
//! any Chromium) scanned for every form of the secret it typed, once the session
//! is closed.

use std::sync::Arc;
use std::time::Duration;

use airlock_gateway::{Gateway, GatewayConfig, Interaction, OpenOptions, SessionCall, ToolCall};
use airlock_test_support::{chromium_processes_under, with_browser};
use airlock_worker::{Host, Remote};
use base64::Engine as _;

const SECRET: &str = "Wq7-vault-pw-3e9c41d2";

// Every form of `value` a process may hold it in: its UTF-8 and UTF-16 bytes, base64
// and percent-encoded.
fn forms(value: &str) -> Vec<(String, Vec<u8>)> {
    let utf16: Vec<u8> = value.encode_utf16().flat_map(u16::to_le_bytes).collect();
    vec![
        ("utf-8".to_owned(), value.as_bytes().to_vec()),
        ("utf-16".to_owned(), utf16),
        (
            "base64".to_owned(),
            base64::engine::general_purpose::STANDARD
                .encode(value)
                .trim_end_matches('=')
                .as_bytes()[..20]
                .to_vec(),
        ),
    ]
}

// Each place a form is in the readable memory of process `pid`: which form, which
// mapping, and the bytes around it (for whoever reads a failure).
fn scan(pid: u32, forms: &[(String, Vec<u8>)]) -> Vec<String> {
    use std::io::{Read as _, Seek as _};
    let mut found = Vec::new();
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return found;
    };
    let Ok(mut mem) = std::fs::File::open(format!("/proc/{pid}/mem")) else {
        return found;
    };
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let path = fields.nth(3).unwrap_or("");
        if !perms.starts_with('r') || path.starts_with('/') && !perms.contains('w') {
            continue; // code and read-only files hold no secret
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16))
        else {
            continue;
        };
        if end - start > 1 << 30 || path == "[vvar]" || path == "[vsyscall]" {
            continue;
        }
        let mut buf = vec![0u8; (end - start) as usize];
        if mem.seek(std::io::SeekFrom::Start(start)).is_err() || mem.read_exact(&mut buf).is_err() {
            continue;
        }
        for (form, needle) in forms {
            for at in memchr::memmem::find_iter(&buf, needle) {
                let near = &buf[at.saturating_sub(120)..(at + 120).min(buf.len())];
                found.push(format!(
                    "{form} in pid {pid} {path} {perms} near {:?}",
                    String::from_utf8_lossy(near)
                ));
            }
        }
    }
    found
}

// Every process below `pid`, by parent links.
fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
            // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
            let after = &stat[stat.rfind(')')? + 2..];
            Some((p, after.split_whitespace().nth(1)?.parse().ok()?))
        })
        .collect();
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        out.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    out.remove(0);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_session_leaves_no_copy_of_its_secret_in_any_process() {
    with_browser(|h| async move {
        let parent = crate::worker::passable_dir();
        let worker = crate::worker::local_worker(parent.path(), airlock_worker::remote::GRACE);
        let host: Host = Remote::new(worker.clone()).await.unwrap().into();
        let vault = airlock_vault::Vault::open(
            airlock_vault::Store::open_in_memory().await.unwrap(),
            airlock_vault::MasterKey::generate().unwrap(),
        )
        .await
        .unwrap();
        let mut fields = airlock_vault::Fields::default();
        fields.username = Some("alice".into());
        fields.password = Some(SECRET.into());
        vault
            .set(&airlock_vault::Secret {
                tenant: "default".into(),
                name: "login".into(),
                origins: vec![format!("http://127.0.0.1:{}", h.site.a.port())],
                fields,
            })
            .await
            .unwrap();
        let gateway = Gateway::new(
            host,
            GatewayConfig {
                warm_sessions: 0,
                ..GatewayConfig::with_policy(h.site.policy())
                    .vault(Arc::new(vault), airlock_core::Role::Operate)
            },
        );
        let agent = gateway.agent_session();
        let out = agent
            .call(ToolCall::Session(SessionCall::Open(OpenOptions {
                credentials: vec!["login".into()],
                ..OpenOptions::default()
            })))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent
            .call(crate::worker::navigate(h.site.url("login.html")))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent
            .call(ToolCall::Interact(Interaction::Type {
                target: airlock_gateway::action::Target::Role {
                    role: "textbox".into(),
                    name: Some("Password".into()),
                    index: None,
                },
                text: "{{secret:login.password}}".into(),
                clear_first: true,
                submit: true,
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        // The scan finds the secret while its session lives (the worker holds it to
        // type and to hide it): it would find a copy left behind.
        let forms = forms(SECRET);
        let worker_pid = worker.pid().await.unwrap();
        assert!(
            !scan(worker_pid, &forms).is_empty(),
            "the scan does not find the secret the worker holds"
        );
        let out = agent.call(ToolCall::Session(SessionCall::Close)).await;
        assert_eq!(out.error, None, "{}", out.text);
        // What a close frees goes within moments (a renderer exits, a context's
        // buffers drop): looked for again until none is found, or 10 s have passed.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            // The worker and everything it started that still runs: the shared
            // Chromium, its zygotes, renderers, network and GPU processes.
            let remaining = descendants(worker_pid);
            assert!(
                remaining
                    .iter()
                    .any(|p| chromium_processes_under(parent.path()).contains(p)),
                "the shared Chromium runs on and is scanned: {remaining:?}"
            );
            let found: Vec<String> = std::iter::once(worker_pid)
                .chain(remaining)
                .flat_map(|pid| scan(pid, &forms))
                .collect();
            if found.is_empty() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "left behind: {found:#?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        drop(agent);
        gateway.shutdown().await;
    })
    .await;
}

// Every form a 32-byte key may sit in memory as: raw, base64 (both alphabets), hex.
fn key_forms(seed: &[u8; 32]) -> Vec<(String, Vec<u8>)> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    vec![
        ("raw".to_owned(), seed.to_vec()),
        (
            "base64".to_owned(),
            STANDARD_NO_PAD.encode(seed).into_bytes()[..40].to_vec(),
        ),
        (
            "base64url".to_owned(),
            URL_SAFE_NO_PAD.encode(seed).into_bytes()[..40].to_vec(),
        ),
        ("hex".to_owned(), hex::encode(seed).into_bytes()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_sessions_sign_every_request_never_holds_the_signing_key() {
    with_browser(|_h| async move {
        let parent = crate::worker::passable_dir();
        let worker = crate::worker::local_worker(parent.path(), airlock_worker::remote::GRACE);
        let host: Host = Remote::new(worker.clone()).await.unwrap().into();
        let vault = Arc::new(
            airlock_vault::Vault::open(
                airlock_vault::Store::open_in_memory().await.unwrap(),
                airlock_vault::MasterKey::generate().unwrap(),
            )
            .await
            .unwrap(),
        );
        // The operator brings the key, so the scan knows what to look for.
        let mut seed = zeroize::Zeroizing::new([0u8; 32]);
        getrandom::fill(seed.as_mut()).unwrap();
        let key = vault
            .import_identity("default", &seed, false)
            .await
            .unwrap();
        let site = airlock_test_support::botauth::VerifyingSite::start().await;
        site.trust(&key.kid, &key.public_key);
        let policy = airlock_policy::Policy::from_config(&airlock_policy::PolicyConfig {
            allow_private: vec![format!("127.0.0.1:{}", site.port)],
            ..Default::default()
        })
        .unwrap();
        let gateway = Gateway::new(
            host,
            GatewayConfig {
                warm_sessions: 0,
                identity: airlock_config::Identity {
                    sign: true,
                    agent_url: Some("http://127.0.0.1:9".to_owned()),
                    ..Default::default()
                },
                ..GatewayConfig::with_policy(policy)
                    .vault(vault.clone(), airlock_core::Role::Operate)
            },
        );
        let agent = gateway.agent_session();
        let out = agent.call(crate::worker::navigate(site.url("/page"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent
            .call(ToolCall::Read(airlock_gateway::Reading::WaitFor {
                condition: airlock_browser::WaitCondition::Text("done".into()),
                timeout: Some(Duration::from_secs(10)),
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        // Signed across the worker boundary, and verified by the site.
        let received = site.received();
        assert!(received.len() >= 3, "{received:?}");
        assert!(
            received.iter().all(|r| r.verified == Ok(key.kid.clone())),
            "{received:?}"
        );
        // While the session is open and signing, neither the worker nor any
        // Chromium it started holds the key in any form.
        let forms = key_forms(&seed);
        let worker_pid = worker.pid().await.unwrap();
        let found: Vec<String> = std::iter::once(worker_pid)
            .chain(descendants(worker_pid))
            .flat_map(|pid| scan(pid, &forms))
            .collect();
        assert!(
            found.is_empty(),
            "the signing key is in the worker: {found:#?}"
        );
        drop(agent);
        gateway.shutdown().await;
    })
    .await;
}
