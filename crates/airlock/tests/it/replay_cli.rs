//! `airlock audit replay`: a session recorded in `audit` mode, with a secret typed
//! into a page that reflects it every way it can, becomes one HTML page with every
//! step and its screenshot, no form of the secret, and markup from the agent or the
//! page as text; an image altered after the fact is named, not shown.

use airlock_gateway::{Interaction, Navigation, SessionCall};
use std::sync::Arc;

use airlock_config::RecordMode;
use airlock_core::Role;
use airlock_gateway::action::{Target, WaitUntil};
use airlock_gateway::{Gateway, GatewayConfig, OpenOptions, PageView, ToolCall};
use airlock_test_support::with_browser;
use airlock_vault::{Fields, MasterKey, Secret, Store, Vault};
use base64::Engine as _;

use crate::server::BIN;

// Quote, ampersand, angle brackets, slash and plus: each encoding changes it.
const SECRET: &str = "s3\"cr&<Pw>/+9";

// The forms a page can give the secret, computed here, not by Airlock.
fn forms() -> Vec<String> {
    let url: String = SECRET
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("user:{SECRET}"));
    let html = SECRET
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;");
    let json = SECRET.replace('"', "\\\"");
    vec![
        SECRET.to_owned(),
        url,
        b64,
        html,
        json,
        "cr&<Pw>".to_owned(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_page_shows_every_step_and_no_secret_in_any_form() {
    with_browser(|h| async move {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let store = Store::open_sqlite(&data.join("airlock.db")).await.unwrap();
        let vault = Vault::open(store.clone(), MasterKey::generate().unwrap())
            .await
            .unwrap();
        let origin = format!("http://127.0.0.1:{}", h.site.a.port());
        let mut fields = Fields::default();
        fields.password = Some(SECRET.to_owned());
        vault
            .set(&Secret {
                tenant: "default".into(),
                name: "login".into(),
                origins: vec![origin.clone()],
                fields,
            })
            .await
            .unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                recording: RecordMode::Audit,
                recordings_dir: Some(data.join("recordings")),
                ..GatewayConfig::with_policy(h.site.policy())
                    .store(store.clone())
                    .vault(Arc::new(vault), Role::Operate)
            },
        );
        let agent = gateway.agent_session();
        let run = async |call: ToolCall| {
            let out = agent.call(call).await;
            assert_eq!(out.error, None, "{}", out.text);
        };
        run(ToolCall::Session(SessionCall::Open(OpenOptions {
            credentials: vec!["login".into()],
            ..OpenOptions::default()
        })))
        .await;
        let field = || Target::Role {
            role: "textbox".into(),
            name: Some("Anything".into()),
            index: None,
        };
        let typing = |text: &str| {
            ToolCall::Interact(Interaction::Type {
                target: field(),
                text: text.into(),
                clear_first: true,
                submit: false,
            })
        };
        run(ToolCall::Navigate(Navigation::To {
            url: h.site.url("app/reflect.html"),
            wait_until: WaitUntil::Load,
            snapshot: PageView::None,
        }))
        .await;
        // The page reflects it raw, URL-encoded, base64, HTML- and JSON-escaped, into
        // its title, body and URL.
        run(typing("{{secret:login.password}}")).await;
        // Markup from the agent, and then from the page's title.
        run(typing("<script>alert('agent')</script>")).await;
        let id = gateway.leases()[0].id.to_string();
        gateway.shutdown().await;
        store.close().await;

        let out_dir = tmp.path().join("replay");
        let replay = |dir: &std::path::Path| {
            std::process::Command::new(BIN)
                .args(["audit", "replay", &id, "--out"])
                .arg(dir)
                .env_remove("AIRLOCK_CONFIG")
                .env_remove("AIRLOCK_MASTER_KEY")
                .env("AIRLOCK_DATA_DIR", &data)
                .output()
                .unwrap()
        };
        let out = replay(&out_dir);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let page = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
        // Three steps changed the page, each with its screenshot embedded.
        assert_eq!(page.matches("<img alt=\"step ").count(), 3, "{page}");
        assert_eq!(page.matches("src=\"data:image/jpeg;base64,").count(), 3);
        for tool in ["browser_navigate", "browser_type", "browser_session_open"] {
            assert!(page.contains(tool), "{tool}");
        }
        assert!(page.contains("{{secret:login.password}}"));
        assert!(!page.contains("<script"), "markup went through");
        assert!(page.contains("&lt;script&gt;alert(&#39;agent&#39;)&lt;/script&gt;"));
        assert!(page.contains("default-src 'none'"));
        for form in forms() {
            assert!(!page.contains(&form), "`{form}` is in the replay page");
        }

        // A stored image changed afterwards is named, not shown, and the command fails.
        let recordings = data.join("recordings").join(&id);
        let first = std::fs::read_dir(&recordings)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mut image = std::fs::read(&first).unwrap();
        let last = image.len() - 3;
        image[last] ^= 0xff;
        std::fs::write(&first, image).unwrap();
        let altered_dir = tmp.path().join("replay2");
        let out = replay(&altered_dir);
        assert_eq!(out.status.code(), Some(1));
        let page = std::fs::read_to_string(altered_dir.join("index.html")).unwrap();
        assert!(page.contains("image altered"), "{page}");
        assert_eq!(page.matches("<img alt=\"step ").count(), 2);
    })
    .await;
}

// On Postgres (replicas share it) an `audit` recording's images go to the store, not
// to the recordings directory of the machine that took them, and so do downloads: a
// replay made from another machine's data dir, against the same database, embeds
// every image, and `audit download` there gives back the download as reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_shared_store_recordings_live_in_it_and_replay_anywhere() {
    with_browser(|h| async move {
        let pg = airlock_test_support::Postgres::start();
        let tmp = tempfile::tempdir().unwrap();
        let recordings = tmp.path().join("replica-a").join("recordings");
        let downloads = tmp.path().join("replica-a").join("downloads");
        std::fs::create_dir_all(&downloads).unwrap();
        let store = Store::open_postgres(&pg.url()).await.unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                recording: RecordMode::Audit,
                recordings_dir: Some(recordings.clone()),
                download_dir: Some(downloads.clone()),
                ..GatewayConfig::with_policy(h.site.policy()).store(store.clone())
            },
        );
        let agent = gateway.agent_session();
        for page in ["login.html", "download.html"] {
            let out = agent
                .call(ToolCall::Navigate(Navigation::To {
                    url: h.site.url(page),
                    wait_until: WaitUntil::Load,
                    snapshot: PageView::None,
                }))
                .await;
            assert_eq!(out.error, None, "{}", out.text);
        }
        let click = agent
            .call(ToolCall::Interact(Interaction::Click {
                target: Target::Role {
                    role: "link".into(),
                    name: Some("Get report".into()),
                    index: None,
                },
                options: Default::default(),
            }))
            .await;
        assert_eq!(click.error, None, "{}", click.text);
        // The download finishes after the click: a later result reports it.
        let mut text = click.text;
        for _ in 0..200 {
            if text.contains("downloaded ") {
                break;
            }
            text = agent
                .call(ToolCall::Read(airlock_gateway::Reading::WaitFor {
                    condition: airlock_gateway::action::WaitCondition::Time(
                        std::time::Duration::from_millis(50),
                    ),
                    timeout: None,
                }))
                .await
                .text;
        }
        let line = text
            .lines()
            .find(|l| l.starts_with("downloaded "))
            .unwrap_or_else(|| panic!("no download reported:\n{text}"))
            .to_owned();
        let saved_as = line
            .split(" as ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap()
            .to_owned();
        let sha256 = line
            .split("SHA-256 ")
            .nth(1)
            .unwrap()
            .trim_end_matches(')')
            .to_owned();
        let id = gateway.leases()[0].id.to_string();
        gateway.shutdown().await;
        store.close().await;
        assert!(!recordings.exists(), "no recording on this machine's disk");
        assert_eq!(
            std::fs::read_dir(&downloads).unwrap().count(),
            0,
            "no download on this machine's disk"
        );

        // The CLI on another machine: its own data dir, the same database.
        let elsewhere = |args: &[&str], out: &std::path::Path| {
            std::process::Command::new(BIN)
                .args(args)
                .arg("--out")
                .arg(out)
                .env_remove("AIRLOCK_CONFIG")
                .env_remove("AIRLOCK_MASTER_KEY")
                .env("AIRLOCK_DATABASE_URL", pg.url())
                .env("AIRLOCK_DATA_DIR", tmp.path().join("replica-b"))
                .output()
                .unwrap()
        };
        let out_dir = tmp.path().join("replay");
        let out = elsewhere(&["audit", "replay", &id], &out_dir);
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let page = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
        assert_eq!(
            page.matches("src=\"data:image/jpeg;base64,").count(),
            3,
            "{page}"
        );
        assert!(!page.contains("pruned or missing"), "{page}");

        let file = tmp.path().join("report.txt");
        let out = elsewhere(&["audit", "download", &saved_as], &file);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains(&sha256), "{said} vs {sha256}");
        let data = std::fs::read(&file).unwrap();
        use sha2::Digest as _;
        assert_eq!(hex::encode(sha2::Sha256::digest(&data)), sha256);
    })
    .await;
}
