//! Credentials end to end against the fixture app (a real login, a session cookie, a
//! localStorage token, an API that needs a header, a page that reflects typed text):
//! pre-authentication, placeholders bound to origins, authorization, and no byte of a
//! secret value in any output or log line.

use airlock_gateway::{Interaction, Navigation, Reading, SessionCall, Window};
use std::sync::Arc;
use std::time::Duration;

use airlock_browser::{SnapshotOptions, Target, WaitCondition};
use airlock_config::RecordMode;
use airlock_core::{ErrorCode, Role};
use airlock_gateway::{
    AgentSession, Gateway, GatewayConfig, OpenOptions, ReadFormat, TabAction, ToolCall, ToolOutput,
};
use airlock_policy::{Policy, PolicyConfig};
use airlock_test_support::{
    APP_API_KEY, APP_PASSWORD, APP_SESSION, APP_USER, Harness, secret_forms, with_browser,
};
use airlock_vault::{Cookie, Fields, Header, MasterKey, Secret, StorageItem, Store, Vault};
use base64::Engine as _;

use crate::navigate;

mod outputs;
mod recordings;

const STORAGE_TOKEN: &str = "storage-token-91ac";

/// Every form of every value the tests store, as a page or protocol might show it.
fn leaked_forms() -> Vec<String> {
    [APP_PASSWORD, APP_SESSION, APP_API_KEY, STORAGE_TOKEN]
        .iter()
        .flat_map(|value| secret_forms(value))
        .collect()
}

fn assert_clean(label: &str, text: &str) {
    for form in leaked_forms() {
        assert!(
            !text.contains(&form),
            "{label}: `{form}` leaked in:\n{text}"
        );
    }
}

fn secrets(h: &Harness) -> Vec<Secret> {
    let origin = format!("http://127.0.0.1:{}", h.site.a.port());
    let mut app = Fields::default();
    app.username = Some(APP_USER.into());
    app.password = Some(APP_PASSWORD.into());
    app.cookies = vec![Cookie {
        name: "sid".into(),
        value: APP_SESSION.into(),
        domain: "127.0.0.1".into(),
        path: "/".into(),
        expires: None,
        http_only: true,
        secure: false,
        same_site: None,
    }];
    app.local_storage = vec![StorageItem {
        origin: origin.clone(),
        key: "token".into(),
        value: STORAGE_TOKEN.into(),
    }];
    app.headers = vec![Header {
        name: "X-Api-Key".into(),
        value: APP_API_KEY.into(),
    }];
    let mut login = Fields::default();
    login.username = Some(APP_USER.into());
    login.password = Some(APP_PASSWORD.into());
    vec![
        Secret {
            tenant: "default".into(),
            name: "app".into(),
            origins: vec![origin.clone()],
            fields: app,
        },
        Secret {
            tenant: "default".into(),
            name: "login".into(),
            origins: vec![origin],
            fields: login,
        },
    ]
}

async fn gateway(h: &Harness, role: Role) -> (Arc<Gateway>, Arc<Vault>) {
    recording_gateway(h, role, RecordMode::Off, None).await
}

/// `gateway`, recording `mode` by default and storing `audit` recordings in `dir`.
async fn recording_gateway(
    h: &Harness,
    role: Role,
    mode: RecordMode,
    dir: Option<std::path::PathBuf>,
) -> (Arc<Gateway>, Arc<Vault>) {
    ruled_gateway(h, role, mode, dir, airlock_risk::Rules::default()).await
}

/// `recording_gateway`, judging calls and requests by `rules`.
async fn ruled_gateway(
    h: &Harness,
    role: Role,
    mode: RecordMode,
    dir: Option<std::path::PathBuf>,
    rules: airlock_risk::Rules,
) -> (Arc<Gateway>, Arc<Vault>) {
    let vault = Vault::open(
        Store::open_in_memory().await.unwrap(),
        MasterKey::generate().unwrap(),
    )
    .await
    .unwrap();
    for secret in secrets(h) {
        vault.set(&secret).await.unwrap();
    }
    let vault = Arc::new(vault);
    let (a, b) = (h.site.a.port(), h.site.b.port());
    let policy = Policy::from_config(&PolicyConfig {
        allow_private: vec![
            format!("127.0.0.1:{a}"),
            format!("127.0.0.1:{b}"),
            format!("[::1]:{b}"),
        ],
        ..PolicyConfig::default()
    })
    .unwrap();
    let gateway = Gateway::new(
        h.host().await,
        GatewayConfig {
            // A warm session is ready, and sessions with credentials must not take it.
            warm_sessions: 1,
            recording: mode,
            recordings_dir: dir,
            rules,
            // Every call goes on the audit record in the vault's store.
            ..GatewayConfig::with_policy(policy)
                .store(vault.store().clone())
                .vault(vault.clone(), role)
        },
    );
    (gateway, vault)
}

/// A single-use grant of the default tenant for `domain`, valid ten minutes.
async fn single_use_grant(vault: &Vault, domain: &str) -> airlock_vault::grant::GrantToken {
    let ttl = Duration::from_secs(600);
    airlock_vault::grant::create(vault.store(), "default", &[domain.into()], ttl, false)
        .await
        .unwrap()
        .0
}

fn open_with(names: &[&str], grant: Option<String>) -> ToolCall {
    ToolCall::Session(SessionCall::Open(OpenOptions {
        credentials: names.iter().map(|n| (*n).to_owned()).collect(),
        grant,
        ..OpenOptions::default()
    }))
}

/// Calls and checks that nothing of a secret is in the output, then returns it.
async fn call(agent: &AgentSession, call: ToolCall) -> ToolOutput {
    let label = format!("{call:?}");
    let out = agent.call(call).await;
    assert_clean(&label, &out.text);
    out
}

async fn read(agent: &AgentSession) -> String {
    call(
        agent,
        ToolCall::Read(Reading::Text {
            format: ReadFormat::Text,
            offset: 0,
        }),
    )
    .await
    .text
}

fn role(role: &str, name: &str) -> Target {
    Target::Role {
        role: role.into(),
        name: Some(name.into()),
        index: None,
    }
}

fn typing(target: Target, text: &str) -> ToolCall {
    ToolCall::Interact(Interaction::Type {
        target,
        text: text.into(),
        clear_first: true,
        submit: false,
    })
}

pub(crate) use airlock_test_support::capture_logs;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_with_credentials_is_logged_in_and_shows_no_value() {
    let logs = capture_logs();
    with_browser(|h| async move {
        let (gateway, _) = gateway(&h, Role::Operate).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while gateway.warm_sessions().0 == 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(gateway.warm_sessions().0, 1, "nothing was pre-warmed");
        let agent = gateway.agent_session();
        let out = call(&agent, open_with(&["app"], None)).await;
        assert_eq!(out.error, None, "{}", out.text);
        // It says what the agent may type and what was put into the browser.
        assert!(
            out.text.contains("logged in with app for http://127.0.0.1:")
                && out.text.contains(
                    "(type {{secret:app.username}}, {{secret:app.password}}; 1 cookies set; localStorage set on its first load; headers added to its requests)"
                ),
            "{}",
            out.text
        );
        // Credentials are injected as a session is created: never into a warm one.
        assert_eq!(gateway.warm_sessions(), (1, 0));
        // The cookie: the protected page opens without typing anything.
        let out = call(&agent, navigate(h.site.url("app/home"))).await;
        assert!(out.text.contains("Welcome back, alice"), "{}", out.text);
        // localStorage: there before the page's first script ran (shown redacted).
        call(&agent, navigate(h.site.url("app/storage.html"))).await;
        let text = read(&agent).await;
        assert!(text.contains("token: [REDACTED:app]"), "{text}");
        // The header: on the bound origin only.
        call(&agent, navigate(h.site.url("fetch.html?url=/app/api"))).await;
        let out = call(
            &agent,
            ToolCall::Read(Reading::WaitFor {
                condition: WaitCondition::Text("done".into()),
                timeout: Some(Duration::from_secs(5)),
            }),
        )
        .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(read(&agent).await.contains("fetched 200 ok"));
        call(&agent, navigate(h.site.url("app/headers"))).await;
        let text = read(&agent).await;
        assert!(
            text.to_lowercase().contains("x-api-key: [redacted:app]"),
            "{text}"
        );
        assert!(text.contains("sid=[REDACTED:app]"), "{text}");
        // A second loopback origin (another host, so cookies would not be shared by
        // host anyway) receives neither the header nor the cookie.
        call(&agent, navigate(h.site.other_site("app/headers"))).await;
        let text = read(&agent).await;
        assert!(text.contains("Request headers"), "{text}");
        assert!(
            !text.to_lowercase().contains("x-api-key") && !text.contains("sid="),
            "{text}"
        );
        // Tab titles and URLs pass the redactor too.
        call(
            &agent,
            navigate(h.site.url(&format!(
                "app/reflect.html?q={}",
                url::form_urlencoded::byte_serialize(APP_SESSION.as_bytes()).collect::<String>()
            ))),
        )
        .await;
        let tabs = call(&agent, ToolCall::Window(Window::Tabs(TabAction::List))).await;
        assert!(tabs.text.contains("[REDACTED:app]"), "{}", tabs.text);
        gateway.shutdown().await;
    })
    .await;
    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert_clean("logs", &logs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placeholders_type_only_on_their_origin_and_every_reflection_is_redacted() {
    let logs = capture_logs();
    with_browser(|h| async move {
        let (gateway, _) = gateway(&h, Role::Operate).await;
        let agent = gateway.agent_session();
        call(&agent, open_with(&["login"], None)).await;
        // A real login through placeholders.
        call(&agent, navigate(h.site.url("app/login.html"))).await;
        let out = call(
            &agent,
            typing(role("textbox", "Username"), "{{secret:login.username}}"),
        )
        .await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = call(
            &agent,
            typing(role("textbox", "Password"), "{{secret:login.password}}"),
        )
        .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text.contains("typed {{secret:login.password}} into"),
            "{}",
            out.text
        );
        let out = call(
            &agent,
            ToolCall::Interact(Interaction::Click {
                target: role("button", "Sign in"),
                options: Default::default(),
            }),
        )
        .await;
        assert!(out.text.contains("Welcome back, alice"), "{}", out.text);

        // The same placeholder on another origin: refused, nothing typed.
        call(&agent, navigate(h.site.other_site("app/login.html"))).await;
        let out = call(
            &agent,
            typing(role("textbox", "Password"), "x{{secret:login.password}}"),
        )
        .await;
        assert_eq!(
            out.error,
            Some(ErrorCode::SecretOriginMismatch),
            "{}",
            out.text
        );
        assert!(out.text.contains("login.password"), "{}", out.text);
        let snap = call(
            &agent,
            ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())),
        )
        .await;
        assert!(
            !snap.text.contains("value=") && !snap.text.contains("••••"),
            "something was typed: {}",
            snap.text
        );

        // A bound top page with a foreign frame: the field's own frame decides.
        call(
            &agent,
            navigate(
                h.site
                    .url(&format!("app/framed.html?b={}", h.site.b.port())),
            ),
        )
        .await;
        let mut frame_ref = None;
        for _ in 0..50 {
            let snap = call(
                &agent,
                ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())),
            )
            .await;
            if let Some(line) = snap
                .text
                .lines()
                .find(|l| l.contains("textbox \"Password\"") && l.contains("- f"))
            {
                frame_ref = line.split_whitespace().nth(1).map(str::to_owned);
                break;
            }
            call(
                &agent,
                ToolCall::Read(Reading::WaitFor {
                    condition: WaitCondition::Time(Duration::from_millis(50)),
                    timeout: None,
                }),
            )
            .await;
        }
        let frame_ref = frame_ref.expect("the frame's password field");
        let target = Target::Ref(frame_ref.parse().unwrap());
        let out = call(&agent, typing(target, "{{secret:login.password}}")).await;
        assert_eq!(
            out.error,
            Some(ErrorCode::SecretOriginMismatch),
            "{}",
            out.text
        );
        assert!(
            out.text.contains(&format!(
                "the field is on http://localhost:{}",
                h.site.b.port()
            )),
            "{}",
            out.text
        );

        // The reflector echoes the typed secret raw, URL-encoded, base64, HTML- and
        // JSON-escaped into its title, body and query string: every output is clean.
        call(&agent, navigate(h.site.url("app/reflect.html"))).await;
        let out = call(
            &agent,
            typing(role("textbox", "Anything"), "{{secret:login.password}}"),
        )
        .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("[REDACTED:login]"), "{}", out.text);
        let text = read(&agent).await;
        for line in [
            "raw [REDACTED:login]",
            "url [REDACTED:login]",
            "html [REDACTED:login]",
            "json {\"v\":\"[REDACTED:login]\"}",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        let snap = call(
            &agent,
            ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())),
        )
        .await;
        assert!(
            snap.text.contains("textbox \"Anything\"") && snap.text.contains("value=\"••••\""),
            "{}",
            snap.text
        );
        call(&agent, ToolCall::Window(Window::Tabs(TabAction::List))).await;
        call(&agent, ToolCall::Navigate(Navigation::Reload)).await;

        // Placeholders anywhere but typed text are refused.
        let out = call(
            &agent,
            navigate(h.site.url("app/reflect.html?q={{secret:login.password}}")),
        )
        .await;
        assert_eq!(
            out.error,
            Some(ErrorCode::SecretOriginMismatch),
            "{}",
            out.text
        );
        let out = call(
            &agent,
            ToolCall::Interact(Interaction::PressKey {
                key: "{{secret:login.password}}".into(),
            }),
        )
        .await;
        assert_eq!(
            out.error,
            Some(ErrorCode::SecretOriginMismatch),
            "{}",
            out.text
        );
        // An unloaded secret is not typed.
        let out = call(
            &agent,
            typing(role("textbox", "Anything"), "{{secret:app.password}}"),
        )
        .await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert_clean("logs", &logs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_need_operate_or_a_grant_and_sessions_never_share_them() {
    with_browser(|h| async move {
        let (gateway, vault) = gateway(&h, Role::Act).await;
        // No authority: nothing is opened, and the error says why and what to do
        // instead (not the call that just failed).
        let agent = gateway.agent_session();
        let out = call(&agent, open_with(&["app"], None)).await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        assert!(
            out.text.contains("was not opened")
                && out.text.contains("`operate`")
                && out.text.contains("airlock grant create")
                && out.text.contains("open without `credentials`"),
            "{}",
            out.text
        );
        assert!(gateway.tenant_sessions("default", None).is_empty());
        let out = call(&agent, navigate(h.site.url("app/home"))).await;
        assert!(out.text.contains("Login required"), "{}", out.text);

        // A grant for another domain does not authorize, and is not used up.
        let wrong = single_use_grant(&vault, "example.com").await;
        let other = gateway.agent_session();
        let out = call(&other, open_with(&["app"], Some(wrong.expose().to_owned()))).await;
        assert!(out.text.contains("does not cover `app`"), "{}", out.text);
        // A name that does not exist gets the same answer, with or without a grant:
        // names cannot be enumerated without authority.
        let probe = gateway.agent_session();
        let out = call(
            &probe,
            open_with(&["no-such-name"], Some(wrong.expose().to_owned())),
        )
        .await;
        assert!(
            out.text.contains("does not cover `no-such-name`"),
            "{}",
            out.text
        );
        let no_grant = |name: &str| open_with(&[name], None);
        let known = call(&gateway.agent_session(), no_grant("app")).await;
        let unknown = call(&gateway.agent_session(), no_grant("no-such-name")).await;
        assert_eq!(
            (known.error, known.text.replace("app", "X")),
            (unknown.error, unknown.text.replace("no-such-name", "X")),
            "a missing name and an unauthorised one answer differently"
        );
        // A single-use grant for the app authorizes once.
        let token = single_use_grant(&vault, "127.0.0.1").await;
        let granted = gateway.agent_session();
        let out = call(
            &granted,
            open_with(&["app"], Some(token.expose().to_owned())),
        )
        .await;
        assert!(out.text.contains("logged in with app"), "{}", out.text);
        let out = call(&granted, navigate(h.site.url("app/home"))).await;
        assert!(out.text.contains("Welcome back"), "{}", out.text);
        let again = gateway.agent_session();
        let out = call(&again, open_with(&["app"], Some(token.expose().to_owned()))).await;
        assert!(out.text.contains("already used"), "{}", out.text);
        // Another session at the same time never sees the granted session's cookie.
        let out = call(&again, navigate(h.site.url("app/home"))).await;
        assert!(out.text.contains("Login required"), "{}", out.text);
        // For a caller with the authority, an unknown name is an error, and nothing
        // opens.
        let (operator, _) = self::gateway(&h, Role::Operate).await;
        let fresh = operator.agent_session();
        let out = call(&fresh, open_with(&["nope"], None)).await;
        assert_eq!(out.error, Some(ErrorCode::NotFound), "{}", out.text);
        operator.shutdown().await;
        gateway.shutdown().await;

        // On the record: each refusal, and the one redemption by the grant's id (no
        // token anywhere).
        let records = vault.store().audit_events(0, 200).await.unwrap();
        let events: Vec<serde_json::Value> = records
            .iter()
            .map(|r| serde_json::from_str(&r.body).unwrap())
            .collect();
        let refusals = events
            .iter()
            .filter(|e| e["kind"] == "credential_refusal")
            .count();
        assert_eq!(refusals, 6);
        let grants: Vec<&str> = events
            .iter()
            .filter(|e| e["kind"] == "session_open")
            .filter_map(|e| e["grant"].as_str())
            .collect();
        // Two grants were made; only the one for 127.0.0.1 was used.
        let used: Vec<String> = vault
            .store()
            .grants("default")
            .await
            .unwrap()
            .into_iter()
            .filter(|g| g.used_at.is_some())
            .map(|g| g.id)
            .collect();
        assert_eq!(grants, used);
        for record in &records {
            assert!(
                !record.body.contains(token.expose()) && !record.body.contains(wrong.expose()),
                "{}",
                record.body
            );
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_goes_on_the_audit_record_and_no_secret_with_it() {
    with_browser(|h| async move {
        let (gateway, vault) = gateway(&h, Role::Operate).await;
        let agent = gateway.agent_session();
        call(&agent, open_with(&["login"], None)).await;
        call(&agent, navigate(h.site.url("app/login.html"))).await;
        let out = call(
            &agent,
            typing(role("textbox", "Password"), "{{secret:login.password}}"),
        )
        .await;
        assert_eq!(out.error, None, "{}", out.text);
        // The agent guesses the value in a wait: the record must not keep the guess.
        agent
            .call(ToolCall::Read(Reading::WaitFor {
                condition: WaitCondition::Text(APP_PASSWORD.into()),
                timeout: Some(Duration::from_millis(200)),
            }))
            .await;
        let out = call(&agent, navigate("file:///etc/passwd".to_owned())).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied));
        // The placeholder aimed at another origin: refused, and flagged.
        call(&agent, navigate(h.site.other_site("app/login.html"))).await;
        let out = agent
            .call(typing(
                role("textbox", "Password"),
                "{{secret:login.password}}",
            ))
            .await;
        assert_eq!(
            out.error,
            Some(ErrorCode::SecretOriginMismatch),
            "{}",
            out.text
        );
        // Shutdown closes the session and writes every event still on its way.
        gateway.shutdown().await;

        let records = vault.store().audit_events(0, 100).await.unwrap();
        let events: Vec<serde_json::Value> = records
            .iter()
            .map(|r| serde_json::from_str(&r.body).unwrap())
            .collect();
        let sessions: Vec<(&str, &str)> = events
            .iter()
            .filter(|e| e["kind"] == "session_open" || e["kind"] == "session_close")
            .map(|e| {
                (
                    e["kind"].as_str().unwrap(),
                    e["reason"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            sessions,
            [("session_open", ""), ("session_close", "shutdown")]
        );
        let opened = events.iter().find(|e| e["kind"] == "session_open").unwrap();
        assert_eq!(opened["credentials"][0], "login");
        // A session with credentials never takes a warm one: injection comes first.
        assert_eq!(opened["start"], "cold");
        // Each action's intent is on the record before the action ran.
        let intents: Vec<&str> = events
            .iter()
            .filter(|e| e["kind"] == "tool_intent")
            .map(|e| e["tool"].as_str().unwrap())
            .collect();
        assert_eq!(
            intents,
            [
                "browser_navigate",
                "browser_type",
                "browser_navigate",
                "browser_type"
            ]
        );
        // Refusals are events of their own; a secret aimed elsewhere is suspicious.
        let refusals: Vec<(&str, &str, bool)> = events
            .iter()
            .filter(|e| e["kind"] == "policy_refusal" || e["kind"] == "secret_refusal")
            .map(|e| {
                (
                    e["kind"].as_str().unwrap(),
                    e["error"].as_str().unwrap(),
                    e["suspicious"] == true,
                )
            })
            .collect();
        assert_eq!(
            refusals,
            [
                ("policy_refusal", "policy_denied", false),
                ("secret_refusal", "secret_origin_mismatch", true)
            ]
        );
        let refused = events
            .iter()
            .find(|e| e["kind"] == "policy_refusal")
            .unwrap();
        assert!(
            refused["reason"].as_str().unwrap().contains("file:"),
            "{refused}"
        );
        let events: Vec<&serde_json::Value> =
            events.iter().filter(|e| e["kind"] == "tool_call").collect();
        let tools: Vec<&str> = events.iter().map(|e| e["tool"].as_str().unwrap()).collect();
        assert_eq!(
            tools,
            [
                "browser_session_open",
                "browser_navigate",
                "browser_type",
                "browser_wait_for",
                "browser_navigate",
                "browser_navigate",
                "browser_type"
            ]
        );
        assert_eq!(events[0]["args"]["credentials"][0], "login");
        assert_eq!(events[2]["args"]["text"], "{{secret:login.password}}");
        assert_eq!(events[2]["args"]["target"]["name"], "Password");
        assert_eq!(events[4]["error"], "policy_denied");
        assert_eq!(events[4]["session"], events[1]["session"]);
        assert_eq!(events[1]["caller"], "default/anonymous");
        for record in &records {
            assert_clean("audit event", &record.body);
        }
        let rows: Vec<_> = records.iter().map(|r| r.row()).collect();
        assert_eq!(airlock_audit::verify(&rows, &[]).unwrap().events, 15);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_reads_only_its_own_tenants_credentials() {
    with_browser(|h| async move {
        // The secrets are the `default` tenant's.
        let (gateway, vault) = gateway(&h, Role::Act).await;
        let caller = |tenant: &str| airlock_gateway::Principal {
            tenant: tenant.to_owned(),
            role: Role::Operate,
            key: Some(format!("key_{tenant}")),
        };
        let other = gateway.agent_session_as(caller("beta"), airlock_gateway::Surface::Mcp);
        let out = call(&other, open_with(&["login"], None)).await;
        assert_eq!(out.error, Some(ErrorCode::NotFound), "{}", out.text);
        // Nor through another tenant's grant for the same domain: it names nothing.
        let grant = single_use_grant(&vault, "127.0.0.1").await;
        let granted = gateway.agent_session_as(
            airlock_gateway::Principal {
                role: Role::Act,
                ..caller("beta")
            },
            airlock_gateway::Surface::Mcp,
        );
        let out = call(
            &granted,
            open_with(&["login"], Some(grant.expose().to_owned())),
        )
        .await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        assert!(out.text.contains("was not opened"), "{}", out.text);
        // The owner's caller, with its own key and role, logs in.
        let owner = gateway.agent_session_as(caller("default"), airlock_gateway::Surface::Mcp);
        let out = call(&owner, open_with(&["login"], None)).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("logged in with login"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}
