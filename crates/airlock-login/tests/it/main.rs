//! Stored logins against a site of the test's own (`site.rs`) in real Chromium: a
//! login checked alive; expired and renewed by its flow with no person (password and
//! TOTP by placeholder); a "new device" step only a person can pass, asked once
//! through a one-time link; a session opened with a dead login refused at once; two
//! replicas on one PostgreSQL never checking one login at once.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use airlock_core::{ErrorCode, Role};
use airlock_gateway::{AgentSession, Gateway, GatewayConfig, OpenOptions, SessionCall, ToolCall};
use airlock_login::{Error, Logins, Notice, State};
use airlock_policy::{Policy, PolicyConfig};
use airlock_test_support::{
    DJANGO_ADMIN, DJANGO_PASSWORD, Django, Harness, Postgres, capture_logs, secret_forms,
    with_browser,
};
use airlock_vault::{Fields, MasterKey, Secret, Store, Vault};
use serde_json::json;
use zeroize::Zeroizing;

use airlock_test_support::signin::{self as site, Site};

const TENANT: &str = "default";

fn secret(site: &Site, totp: bool) -> Secret {
    let mut fields = Fields::default();
    fields.username = Some(site::USER.into());
    fields.password = Some(site::PASSWORD.into());
    if totp {
        fields.totp = Some(site::SEED.into());
    }
    Secret {
        tenant: TENANT.into(),
        name: "admin".into(),
        origins: vec![site.origin()],
        fields,
    }
}

/// A gateway over `store` (its vault under `key`) whose policy allows loopback
/// `ports` only.
async fn gateway_for(h: &Harness, ports: &[u16], store: Store, key: MasterKey) -> Arc<Gateway> {
    let policy = Policy::from_config(&PolicyConfig {
        allow_private: ports.iter().map(|p| format!("127.0.0.1:{p}")).collect(),
        ..PolicyConfig::default()
    })
    .unwrap();
    let vault = Arc::new(Vault::open(store.clone(), key).await.unwrap());
    Gateway::new(
        h.host().await,
        GatewayConfig::with_policy(policy)
            .store(store)
            .vault(vault, Role::Operate),
    )
}

async fn gateway(h: &Harness, site: &Site, store: Store, key: MasterKey) -> Arc<Gateway> {
    gateway_for(h, &[site.port], store, key).await
}

/// The login's definition: probe the admin page; renew by signing in with the
/// secret's placeholders (and its TOTP when `totp`); a person's device code goes
/// into "Device code".
fn spec(site: &Site, totp: bool) -> String {
    let mut steps = vec![
        json!({"tool": "browser_navigate", "arguments": {"url": site.url("/login/")}}),
        json!({"tool": "browser_type", "arguments": {"role": "textbox", "name": "Username", "text": "{{secret:admin.username}}"}}),
        json!({"tool": "browser_type", "arguments": {"role": "textbox", "name": "Password", "text": "{{secret:admin.password}}"}}),
        json!({"tool": "browser_click", "arguments": {"role": "button", "name": "Log in"}}),
    ];
    if totp {
        steps.push(json!({"tool": "browser_type", "arguments": {"role": "textbox", "name": "Authentication code", "text": "{{secret:admin.totp}}"}}));
        steps.push(
            json!({"tool": "browser_click", "arguments": {"role": "button", "name": "Verify"}}),
        );
    }
    json!({
        "probe": {"url": site.url("/admin/"), "expect": "Site administration", "stay": true},
        "steps": steps,
        "human": {
            "field": {"role": "textbox", "name": "Device code"},
            "submit": {"role": "button", "name": "Confirm"},
        },
    })
    .to_string()
}

fn open_with_login() -> ToolCall {
    ToolCall::Session(SessionCall::Open(OpenOptions {
        credentials: vec!["admin".to_owned()],
        ..OpenOptions::default()
    }))
}

/// Opens a session with the stored login as an agent would and reads the admin page.
async fn agent_sees_admin(gateway: &Arc<Gateway>, site: &Site) -> String {
    let agent: AgentSession = gateway.agent_session();
    let out = agent.call(open_with_login()).await;
    assert_eq!(out.error, None, "{}", out.text);
    let tool = airlock_tools::find("browser_navigate").unwrap();
    let call = tool
        .parse(Some(
            json!({"url": site.url("/admin/")}).as_object().unwrap(),
        ))
        .unwrap();
    let out = agent.call(call).await;
    agent.call(ToolCall::Session(SessionCall::Close)).await;
    out.text
}

/// No form of any of `values` in `text`.
fn assert_clean(label: &str, text: &str, values: &[String]) {
    for value in values {
        for form in secret_forms(value) {
            assert!(!text.contains(&form), "{label}: `{form}` leaked");
        }
    }
}

async fn audit_text(store: &Store) -> String {
    store
        .audit_events(0, 100_000)
        .await
        .unwrap()
        .iter()
        .map(|e| format!("{} {}\n", e.kind, e.body))
        .collect()
}

async fn next_notice(
    notices: &mut tokio::sync::broadcast::Receiver<Notice>,
    state: State,
) -> Notice {
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let notice = notices.recv().await.unwrap();
            if notice.state == state {
                return notice;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {state:?} notice within 60 s"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_login_is_renewed_by_its_flow_with_password_and_totp_and_no_person() {
    let logs = capture_logs();
    with_browser(move |h| async move {
        let site = Site::start(true, false).await;
        let store = Store::open_in_memory().await.unwrap();
        let gateway = gateway(&h, &site, store.clone(), MasterKey::generate().unwrap()).await;
        gateway
            .vault()
            .unwrap()
            .set(&secret(&site, true))
            .await
            .unwrap();
        let logins = Logins::for_gateway(&gateway).unwrap();
        let defined = logins
            .define(TENANT, "admin", &spec(&site, true))
            .await
            .unwrap();
        assert_eq!(defined.state, State::Unchecked);

        // Never signed in: the probe is sent to the sign-in page, so the flow runs:
        // password, then the TOTP the vault computes, by placeholder.
        let first = logins
            .check(TENANT, "admin", "operator:test")
            .await
            .unwrap();
        assert_eq!(
            (first.state, first.renewed),
            (State::Alive, true),
            "{}",
            first.why
        );
        assert_eq!(site.seen(|s| (s.logins, s.totp_codes.len())), (1, 1));

        // Checked again: alive with the saved cookies, nobody signs in.
        let again = logins.check(TENANT, "admin", "schedule").await.unwrap();
        assert_eq!(
            (again.state, again.renewed),
            (State::Alive, false),
            "{}",
            again.why
        );
        assert_eq!(site.seen(|s| s.logins), 1);
        // An agent's session opened with it is signed in.
        assert!(
            agent_sees_admin(&gateway, &site)
                .await
                .contains("Site administration")
        );

        // The site ends its sessions: the next check renews it, without a person.
        site.expire();
        let renewed = logins.check(TENANT, "admin", "schedule").await.unwrap();
        assert_eq!(
            (renewed.state, renewed.renewed),
            (State::Alive, true),
            "{}",
            renewed.why
        );
        assert_eq!(site.seen(|s| (s.logins, s.totp_codes.len())), (2, 2));
        assert!(
            agent_sees_admin(&gateway, &site)
                .await
                .contains("Site administration")
        );
        let view = logins.get(TENANT, "admin").await.unwrap();
        assert_eq!(view.state, State::Alive);
        assert!(view.due_ms > view.checked_ms.unwrap());

        // The record: three checks, two renewals; no value anywhere.
        let audit = audit_text(&store).await;
        let checks: Vec<&str> = audit
            .lines()
            .filter(|l| l.starts_with("login_check "))
            .collect();
        assert_eq!(checks.len(), 3, "{audit}");
        assert_eq!(
            checks
                .iter()
                .filter(|l| l.contains("\"renewed\":true"))
                .count(),
            2
        );
        let mut values = vec![site::PASSWORD.to_owned(), site::SEED.to_owned()];
        values.extend(site.seen(|s| s.totp_codes.clone()));
        assert_clean("audit", &audit, &values);
        for report in [&first, &again, &renewed] {
            assert_clean("report", &serde_json::to_string(report).unwrap(), &values);
        }
        let logged = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
        assert!(
            logged.contains("a stored login's check ended"),
            "the log capture saw nothing"
        );
        assert_clean("logs", &logged, &values);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_only_a_person_can_pass_asks_once_through_a_link_and_dead_logins_refuse_sessions() {
    let logs = capture_logs();
    with_browser(move |h| async move {
        let site = Site::start(false, true).await;
        let store = Store::open_in_memory().await.unwrap();
        let gateway = gateway(&h, &site, store.clone(), MasterKey::generate().unwrap()).await;
        gateway
            .vault()
            .unwrap()
            .set(&secret(&site, false))
            .await
            .unwrap();
        let logins = Logins::for_gateway(&gateway).unwrap();
        let mut notices = logins.notices();
        logins
            .define(TENANT, "admin", &spec(&site, false))
            .await
            .unwrap();

        // The flow meets the new-device page: a person is asked, the session waits.
        let asked = logins.check(TENANT, "admin", "schedule").await.unwrap();
        assert_eq!(asked.state, State::NeedsUser, "{}", asked.why);
        assert!(asked.why.contains("new device"), "{}", asked.why);
        let link = asked.link.clone().unwrap();
        let token = link.split_once('#').unwrap().1.to_owned();
        assert!(link.starts_with(airlock_login::LINK_PATH));
        assert_eq!(
            next_notice(&mut notices, State::NeedsUser).await.login,
            "admin"
        );
        assert_eq!(site.seen(|s| (s.device_prompts, s.logins)), (1, 0));
        let view = logins.get(TENANT, "admin").await.unwrap();
        assert!(view.waiting && view.checking.is_some(), "{view:?}");
        // Another check meanwhile is refused: this one holds it.
        assert!(matches!(
            logins.check(TENANT, "admin", "schedule").await,
            Err(Error::Busy(_))
        ));

        // An agent opening a session with it is refused at once, with the next step.
        let agent = gateway.agent_session();
        let started = tokio::time::Instant::now();
        let refused = agent.call(open_with_login()).await;
        assert_eq!(
            refused.error,
            Some(ErrorCode::LoginNeedsUser),
            "{}",
            refused.text
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
        assert!(refused.text.contains("one-time link"), "{}", refused.text);

        // The link is the tenant's admin's only: another tenant's is refused (and
        // that does not use it up), as is a token that is not the link's.
        assert!(logins.link_view("beta", &token).await.is_err());
        let code = || Zeroizing::new(site::DEVICE_CODE.to_owned());
        assert!(matches!(
            logins.give("beta", "beta-admin", &token, code()).await,
            Err(Error::Link)
        ));
        assert!(matches!(
            logins.give(TENANT, "admin", &"0".repeat(64), code()).await,
            Err(Error::Link)
        ));
        assert_eq!(logins.link_view(TENANT, &token).await.unwrap().kind, "code");

        // The person gives the code once: typed into the waiting page, the login
        // is alive again, and the session an agent opens is signed in.
        logins.give(TENANT, "admin", &token, code()).await.unwrap();
        let alive = next_notice(&mut notices, State::Alive).await;
        assert_eq!(site.seen(|s| s.logins), 1, "{alive:?}");
        assert!(matches!(
            logins.give(TENANT, "admin", &token, code()).await,
            Err(Error::Link)
        ));
        let kept = gateway.vault().unwrap().get(TENANT, "admin").await.unwrap();
        let names: Vec<String> = kept
            .fields
            .cookies
            .iter()
            .map(|c| format!("{} {} {}", c.name, c.domain, c.path))
            .collect();
        let seen = agent_sees_admin(&gateway, &site).await;
        assert!(
            seen.contains("Site administration"),
            "{alive:?}\n{names:?}\n{seen}"
        );

        // An agent works signed in; the site then ends its sessions and the next
        // check finds the login needs a person: the agent's next result says so.
        let working = gateway.agent_session();
        assert_eq!(working.call(open_with_login()).await.error, None);

        // Expired again; this time nobody answers: a link that lived its time is refused.
        site.expire();
        let short = Arc::new(Logins::new(&gateway, Duration::from_millis(1500)).unwrap());
        let mut short_notices = short.notices();
        let asked = short.check(TENANT, "admin", "schedule").await.unwrap();
        let token = asked.link.unwrap().split_once('#').unwrap().1.to_owned();
        let ended = next_notice(&mut short_notices, State::NeedsUser).await;
        let ended = if ended.why.contains("nobody gave") {
            ended
        } else {
            next_notice(&mut short_notices, State::NeedsUser).await
        };
        assert!(ended.why.contains("nobody gave the code"), "{}", ended.why);
        let next = working
            .call(
                airlock_tools::find("browser_snapshot")
                    .unwrap()
                    .parse(None)
                    .unwrap(),
            )
            .await;
        assert!(
            next.text
                .contains("stored login `admin` has ended (needs_user)"),
            "{}",
            next.text
        );
        let after = working
            .call(
                airlock_tools::find("browser_snapshot")
                    .unwrap()
                    .parse(None)
                    .unwrap(),
            )
            .await;
        assert!(
            !after.text.contains("has ended"),
            "said once: {}",
            after.text
        );
        working.call(ToolCall::Session(SessionCall::Close)).await;
        assert!(matches!(
            short.give(TENANT, "admin", &token, code()).await,
            Err(Error::Link)
        ));
        assert_eq!(
            gateway.agent_session().call(open_with_login()).await.error,
            Some(ErrorCode::LoginNeedsUser)
        );

        let audit = audit_text(&store).await;
        assert!(audit.contains("login_given "), "{audit}");
        let values = [site::PASSWORD.to_owned(), site::DEVICE_CODE.to_owned()];
        assert_clean("audit", &audit, &values);
        assert_clean(
            "logs",
            &String::from_utf8_lossy(&logs.lock().unwrap()),
            &values,
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_who_signs_in_by_hand_in_the_waiting_session_renews_it() {
    with_browser(|h| async move {
        let site = Site::start(false, true).await;
        let store = Store::open_in_memory().await.unwrap();
        let gateway = gateway(&h, &site, store.clone(), MasterKey::generate().unwrap()).await;
        gateway
            .vault()
            .unwrap()
            .set(&secret(&site, false))
            .await
            .unwrap();
        let logins = Logins::for_gateway(&gateway).unwrap();
        let mut notices = logins.notices();
        // No field for a code: a person must sign in by hand (as for a CAPTCHA).
        let mut spec: serde_json::Value = serde_json::from_str(&spec(&site, false)).unwrap();
        spec.as_object_mut().unwrap().remove("human");
        logins
            .define(TENANT, "admin", &spec.to_string())
            .await
            .unwrap();
        let asked = logins.check(TENANT, "admin", "schedule").await.unwrap();
        assert_eq!(asked.state, State::NeedsUser, "{}", asked.why);
        let session = asked.session.clone().unwrap();
        let link = asked.link.unwrap();
        assert!(
            link.starts_with(&format!("{}?session={session}#", airlock_login::LINK_PATH)),
            "{link}"
        );
        let token = link.split_once('#').unwrap().1.to_owned();

        // The person takes the waiting page over and passes the new-device step
        // with keys of their own; Done (the link, once) checks and keeps it.
        let operators = gateway.operators();
        operators
            .take_over(TENANT, &session, "person")
            .await
            .unwrap();
        for key in site::DEVICE_CODE
            .chars()
            .map(String::from)
            .chain(["Enter".to_owned()])
        {
            operators
                .operator_input(
                    TENANT,
                    &session,
                    "person",
                    airlock_gateway::OperatorInput::Key(key),
                    None,
                )
                .await
                .unwrap();
        }
        let view = logins
            .give(TENANT, "person", &token, Zeroizing::new(String::new()))
            .await
            .unwrap();
        assert_eq!(view.kind, "takeover");
        let alive = next_notice(&mut notices, State::Alive).await;
        assert!(alive.why.contains("signed in by hand"), "{alive:?}");
        assert_eq!(site.seen(|s| s.logins), 1);
        assert!(
            agent_sees_admin(&gateway, &site)
                .await
                .contains("Site administration")
        );
        assert!(matches!(
            logins
                .give(TENANT, "person", &token, Zeroizing::new(String::new()))
                .await,
            Err(Error::Link)
        ));
    })
    .await;
}

/// A waiting sign-in page that moved to another origin (a lookalike with the same
/// field) while a person was asked gets nothing of their code: nothing is typed,
/// the lookalike receives nothing, and the login is `failed`, not alive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_is_never_typed_into_a_page_that_moved_to_another_origin() {
    with_browser(|h| async move {
        let site = Site::start(false, true).await;
        let lookalike = site.leave_device_page().await;
        let store = Store::open_in_memory().await.unwrap();
        let gateway = gateway_for(
            &h,
            &[site.port, lookalike],
            store.clone(),
            MasterKey::generate().unwrap(),
        )
        .await;
        gateway
            .vault()
            .unwrap()
            .set(&secret(&site, false))
            .await
            .unwrap();
        let logins = Logins::for_gateway(&gateway).unwrap();
        let mut notices = logins.notices();
        logins
            .define(TENANT, "admin", &spec(&site, false))
            .await
            .unwrap();
        let asked = logins.check(TENANT, "admin", "schedule").await.unwrap();
        assert_eq!(asked.state, State::NeedsUser, "{}", asked.why);
        let token = asked.link.unwrap().split_once('#').unwrap().1.to_owned();
        // The page moved: the lookalike served its page and the image after its field.
        let loaded = tokio::time::timeout(Duration::from_secs(20), async {
            while !site.seen(|s| s.elsewhere.iter().any(|r| r == "GET /loaded.png")) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(loaded.is_ok(), "the waiting page never moved");
        let refused = logins
            .give(
                TENANT,
                "person",
                &token,
                Zeroizing::new(site::DEVICE_CODE.to_owned()),
            )
            .await;
        assert!(
            matches!(&refused, Err(Error::Gateway(why)) if why.contains("nothing was typed")),
            "{refused:?}"
        );
        next_notice(&mut notices, State::Failed).await;
        let elsewhere = site.seen(|s| s.elsewhere.clone());
        assert!(
            elsewhere
                .iter()
                .all(|r| !r.starts_with("POST") && !r.contains(site::DEVICE_CODE)),
            "{elsewhere:?}"
        );
        assert_eq!(site.seen(|s| s.logins), 0);
    })
    .await;
}

/// Django's admin (the real one, from PyPI): its sign-in kept alive by a flow of
/// three placeholders' worth, renewed after Django itself ends every session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn djangos_admin_stays_signed_in_after_django_ends_its_sessions() {
    with_browser(|h| async move {
        let django = Django::start();
        let store = Store::open_in_memory().await.unwrap();
        let gateway = gateway_for(
            &h,
            &[django.port()],
            store.clone(),
            MasterKey::generate().unwrap(),
        )
        .await;
        let mut fields = Fields::default();
        fields.username = Some(DJANGO_ADMIN.into());
        fields.password = Some(DJANGO_PASSWORD.into());
        let secret = Secret {
            tenant: TENANT.into(),
            name: "django".into(),
            origins: vec![django.origin().to_owned()],
            fields,
        };
        gateway.vault().unwrap().set(&secret).await.unwrap();
        let logins = Logins::for_gateway(&gateway).unwrap();
        let spec = json!({
            "probe": {"url": django.url("/admin/"), "expect": "Site administration", "stay": true},
            "steps": [
                {"tool": "browser_navigate", "arguments": {"url": django.url("/admin/login/?next=/admin/")}},
                {"tool": "browser_type", "arguments": {"role": "textbox", "name": "Username", "text": "{{secret:django.username}}"}},
                {"tool": "browser_type", "arguments": {"role": "textbox", "name": "Password", "text": "{{secret:django.password}}"}},
                {"tool": "browser_click", "arguments": {"role": "button", "name": "Log in"}},
            ],
        });
        logins.define(TENANT, "django", &spec.to_string()).await.unwrap();
        let posts = |requests: &[String]| {
            requests
                .iter()
                .filter(|r| r.starts_with("POST /admin/login/"))
                .count()
        };
        for round in 0..2 {
            let report = logins.check(TENANT, "django", "schedule").await.unwrap();
            assert_eq!((report.state, report.renewed), (State::Alive, true), "round {round}: {}", report.why);
            let again = logins.check(TENANT, "django", "schedule").await.unwrap();
            assert_eq!((again.state, again.renewed), (State::Alive, false), "round {round}: {}", again.why);
            assert_eq!(posts(&django.requests().await), round + 1);
            django.expire_sessions().await;
        }
        let audit = audit_text(&store).await;
        assert_clean("audit", &audit, &[DJANGO_PASSWORD.to_owned()]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_never_check_one_login_at_once() {
    with_browser(|h| async move {
        let site = Site::start(false, false).await;
        let pg = Postgres::start();
        let key = MasterKey::generate().unwrap();
        let a_store = Store::open_postgres(&pg.url()).await.unwrap();
        let b_store = Store::open_postgres(&pg.url()).await.unwrap();
        let a = gateway(&h, &site, a_store, key.clone()).await;
        let b = gateway(&h, &site, b_store.clone(), key).await;
        a.vault().unwrap().set(&secret(&site, false)).await.unwrap();
        let (on_a, on_b) = (
            Logins::for_gateway(&a).unwrap(),
            Logins::for_gateway(&b).unwrap(),
        );
        on_a.define(TENANT, "admin", &spec(&site, false))
            .await
            .unwrap();
        for round in 0..3 {
            let (x, y) = tokio::join!(
                on_a.check(TENANT, "admin", "schedule"),
                on_b.check(TENANT, "admin", "schedule")
            );
            let done: Vec<_> = [&x, &y].into_iter().filter(|r| r.is_ok()).collect();
            let busy = [&x, &y]
                .into_iter()
                .filter(|r| matches!(r, Err(Error::Busy(_))))
                .count();
            assert_eq!((done.len(), busy), (1, 1), "round {round}: {x:?} / {y:?}");
            assert_eq!(done[0].as_ref().unwrap().state, State::Alive);
        }
        // One sign-in; each check probed once, the first twice (before and after
        // its flow) and the site sent the sign-in itself to the probe page: 5.
        assert_eq!(site.seen(|s| (s.probes, s.logins)), (5, 1));

        // The schedule: both replicas tick; the login, due now, is checked once
        // and then not due again until its interval has passed.
        on_b.enable(TENANT, "admin", true).await.unwrap();
        let mut a_notices = on_a.notices();
        let mut b_notices = on_b.notices();
        let (ta, tb) = (
            tokio::spawn(on_a.clone().run_schedule(Duration::from_millis(50))),
            tokio::spawn(on_b.clone().run_schedule(Duration::from_millis(50))),
        );
        tokio::select! {
            n = next_notice(&mut a_notices, State::Alive) => assert_eq!(n.login, "admin"),
            n = next_notice(&mut b_notices, State::Alive) => assert_eq!(n.login, "admin"),
        }
        ta.abort();
        tb.abort();
        let view = on_b.get(TENANT, "admin").await.unwrap();
        assert!(
            view.due_ms >= view.checked_ms.unwrap() + 1_700_000,
            "{view:?}"
        );
        let checks = b_store
            .audit_events(0, 10_000)
            .await
            .unwrap()
            .iter()
            .filter(|e| e.kind == "login_check")
            .count();
        assert_eq!(checks, 4);
        a.shutdown().await;
        b.shutdown().await;
    })
    .await;
}
