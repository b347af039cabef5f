//! Effect rules against real pages: a button named "Show details" whose handler
//! POSTs a transfer, and a memo field whose Enter submits a payment form, are held
//! by a rule on the request they cause (method, URL, fields), not on their names.
//! A counting listener (the payment server) shows the request arrives only after a
//! human approves it, and never after a denial.

use std::sync::Arc;
use std::time::Duration;

use airlock_browser::Target;
use airlock_core::ErrorCode;
use airlock_gateway::{AgentSession, Gateway, GatewayConfig, Interaction, Reading, ToolCall};
use airlock_policy::{Policy, PolicyConfig};
use airlock_risk::{ApprovalsConfig, Rules};
use airlock_store::ApprovalRecord;
use airlock_test_support::{Harness, with_browser};
use airlock_vault::Store;

use crate::approvals::{approval_requests, held_then_decided};
use crate::flow::Partner;
use crate::{click_button, navigate};

/// Transfers of any amount to any account wait for a human.
const PAYMENTS: &str = r#"
[[rules]]
name = "payments"
request_method = ["POST"]
request_url = '/transfer(\?|$)'
request_fields = ["amount", "iban"]
risk = "critical"
action = "approve"
"#;

fn rules(text: &str) -> Rules {
    let approvals: ApprovalsConfig = toml::from_str(text).unwrap();
    Rules::from_config(&approvals).unwrap()
}

async fn gateway(h: &Harness, payee: &Partner, rules: Rules, store: Option<Store>) -> Arc<Gateway> {
    let mut policy: PolicyConfig = h.site.policy_config();
    policy
        .allow_private
        .push(format!("127.0.0.1:{}", payee.port));
    Gateway::new(
        h.host().await,
        GatewayConfig {
            store,
            rules,
            approval_timeout: Duration::from_secs(30),
            ..GatewayConfig::with_policy(Policy::from_config(&policy).unwrap())
        },
    )
}

fn account(h: &Harness, payee: &Partner) -> ToolCall {
    navigate(
        h.site
            .url(&format!("effects/account.html?to={}", payee.origin())),
    )
}

fn transfers(payee: &Partner) -> Vec<String> {
    payee
        .requests()
        .into_iter()
        .filter(|r| r.contains("/transfer"))
        .collect()
}

async fn page_text(agent: &AgentSession) -> String {
    agent
        .call(ToolCall::Read(Reading::Snapshot(
            airlock_browser::SnapshotOptions::default(),
        )))
        .await
        .text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harmless_button_whose_handler_posts_a_transfer_is_held_and_sent_only_once_approved() {
    with_browser(|h| async move {
        let payee = Partner::start().await;
        let store = Store::open_in_memory().await.unwrap();
        let gateway = gateway(&h, &payee, rules(PAYMENTS), Some(store.clone())).await;
        let agent = Arc::new(gateway.agent_session());
        let out = agent.call(account(&h, &payee)).await;
        assert_eq!(out.error, None, "{}", out.text);

        // Held: the card says what would be sent where, and nothing arrives.
        let nothing_sent = |_: &ApprovalRecord| assert_eq!(transfers(&payee), Vec::<String>::new());
        let click = || click_button("Show details");
        let (approval, out) = held_then_decided(&agent, &store, click(), false, nothing_sent).await;
        assert_eq!(approval.rule, "payments");
        assert_eq!(approval.risk, "critical");
        let detail = approval.detail.clone().unwrap_or_default();
        for part in [
            "caused by browser_click on button “Show details”",
            "(POST /transfer)",
            "amount=5000",
            "iban=DE89370400440532013000",
        ] {
            assert!(detail.contains(part), "{part:?} in {detail}");
        }
        assert_eq!(out.error, Some(ErrorCode::ApprovalDenied), "{}", out.text);
        assert!(out.text.contains("not sent"), "{}", out.text);
        // Dropped, not delayed: the page saw its request fail, and later calls do not
        // send it either.
        let text = page_text(&agent).await;
        assert!(text.contains("failed"), "{text}");
        assert_eq!(transfers(&payee), Vec::<String>::new());

        // Approved: the request arrives once, and the page's reaction is reported.
        let (_, out) = held_then_decided(&agent, &store, click(), true, nothing_sent).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text.contains("sent after test:alice approved"),
            "{}",
            out.text
        );
        assert!(out.text.contains("sent 200"), "{}", out.text);
        let sent = transfers(&payee);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert!(
            sent[0].starts_with("POST /transfer") && sent[0].contains("amount=5000"),
            "{sent:?}"
        );

        // Both requests and decisions are on the record with the rule and the detail.
        let requested = approval_requests(&store).await;
        assert_eq!(requested.len(), 2, "{requested:?}");
        assert!(
            requested.iter().all(|e| e["rule"] == "payments"
                && e["detail"].as_str().unwrap().contains("amount=5000")),
            "{requested:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enter_in_a_field_that_submits_a_payment_form_is_held_before_the_page_moves() {
    with_browser(|h| async move {
        let payee = Partner::start().await;
        let store = Store::open_in_memory().await.unwrap();
        let gateway = gateway(&h, &payee, rules(PAYMENTS), Some(store.clone())).await;
        let agent = Arc::new(gateway.agent_session());
        agent.call(account(&h, &payee)).await;
        let memo = || {
            ToolCall::Interact(Interaction::Type {
                target: Target::Role {
                    role: "textbox".into(),
                    name: Some("Memo".into()),
                    index: None,
                },
                text: "rent".into(),
                clear_first: true,
                submit: true,
            })
        };

        let (approval, out) = held_then_decided(&agent, &store, memo(), false, |_| {}).await;
        let detail = approval.detail.clone().unwrap_or_default();
        assert!(
            detail.contains("amount=7000") && detail.contains("the page moves"),
            "{detail}"
        );
        assert_eq!(out.error, Some(ErrorCode::ApprovalDenied), "{}", out.text);
        assert_eq!(transfers(&payee), Vec::<String>::new());
        let text = page_text(&agent).await;
        assert!(text.contains("Your account"), "the page stayed: {text}");

        let (_, out) = held_then_decided(&agent, &store, memo(), true, |_| {}).await;
        assert_eq!(out.error, None, "{}", out.text);
        let sent = transfers(&payee);
        assert_eq!(sent.len(), 1, "{sent:?} {}", out.text);
        assert!(
            sent[0].contains("amount=7000") && sent[0].contains("memo=rent"),
            "{sent:?}"
        );
        let text = page_text(&agent).await;
        assert!(text.contains("ok"), "the page moved to the payee: {text}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_rule_the_click_posts_at_once_and_a_deny_rule_refuses_it_unasked() {
    with_browser(|h| async move {
        // No effect rule (the built-in ones switched off too): the same click sends
        // the transfer with nobody asked, so the holds above are the rules' doing.
        let payee = Partner::start().await;
        let store = Store::open_in_memory().await.unwrap();
        let none = ApprovalsConfig {
            defaults: Some(false),
            ..ApprovalsConfig::default()
        };
        let free = gateway(
            &h,
            &payee,
            Rules::from_config(&none).unwrap(),
            Some(store.clone()),
        )
        .await;
        let agent = free.agent_session();
        agent.call(account(&h, &payee)).await;
        let out = agent.call(click_button("Show details")).await;
        assert_eq!(out.error, None, "{}", out.text);
        // The page says when its fetch is answered (on a loaded machine, after the
        // click's result: the click waits for a quiet page, not for every answer).
        let out = agent
            .call(ToolCall::Read(Reading::WaitFor {
                condition: airlock_browser::WaitCondition::Text("sent 200".into()),
                timeout: Some(Duration::from_secs(20)),
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(transfers(&payee).len(), 1);
        assert!(store.approvals(None, None).await.unwrap().is_empty());

        // A deny rule drops it in the browser; the result says what was refused.
        let payee = Partner::start().await;
        let deny = PAYMENTS.replace(
            "action = \"approve\"",
            "action = \"deny\"\nmessage = \"transfers are made by people\"",
        );
        let denying = gateway(&h, &payee, rules(&deny), Some(store.clone())).await;
        let agent = denying.agent_session();
        agent.call(account(&h, &payee)).await;
        let out = agent.call(click_button("Show details")).await;
        assert!(out.text.contains("failed"), "{}", out.text);
        assert!(
            out.text.contains("refused by an effect rule"),
            "{}",
            out.text
        );
        assert_eq!(transfers(&payee), Vec::<String>::new());
        assert!(store.approvals(None, None).await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_own_navigation_is_an_effect_too_held_until_decided() {
    with_browser(|h| async move {
        let payee = Partner::start().await;
        let store = Store::open_in_memory().await.unwrap();
        let rule = PAYMENTS.replace("[\"POST\"]", "[\"GET\"]");
        let gateway = gateway(&h, &payee, rules(&rule), Some(store.clone())).await;
        let agent = Arc::new(gateway.agent_session());
        let go = || navigate(payee.url("/transfer?amount=9000&iban=DE00123"));

        let (approval, out) = held_then_decided(&agent, &store, go(), false, |_| {}).await;
        let detail = approval.detail.unwrap_or_default();
        assert!(detail.contains("amount=9000"), "{detail}");
        assert_eq!(out.error, Some(ErrorCode::ApprovalDenied), "{}", out.text);
        assert_eq!(transfers(&payee), Vec::<String>::new());

        let (_, out) = held_then_decided(&agent, &store, go(), true, |_| {}).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(transfers(&payee).len(), 1, "{:?}", payee.requests());
        assert!(out.text.contains("ok"), "the payee's page: {}", out.text);
    })
    .await;
}

/// A session whose vault holds `value` as `pin.password`, bound to the fixture site,
/// under one effect rule that refuses a memo starting with `P` sent to the site.
async fn secret_gateway(h: &Harness, value: &str) -> Arc<Gateway> {
    use airlock_vault::{Fields, MasterKey, Secret, Vault};
    let vault = Vault::open(
        Store::open_in_memory().await.unwrap(),
        MasterKey::generate().unwrap(),
    )
    .await
    .unwrap();
    let mut fields = Fields::default();
    fields.password = Some(value.into());
    vault
        .set(&Secret {
            tenant: "default".into(),
            name: "pin".into(),
            origins: vec![h.site.url("").trim_end_matches('/').to_owned()],
            fields,
        })
        .await
        .unwrap();
    let rule = r#"
[[rules]]
name = "memo-p"
request_url = '/transfer'
request_body = '^memo=P'
risk = "high"
action = "deny"
message = "no P memos"
"#;
    Gateway::new(
        h.host().await,
        GatewayConfig {
            rules: rules(rule),
            ..GatewayConfig::with_policy(h.site.policy())
                .vault(Arc::new(vault), airlock_core::Role::Operate)
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_effect_rules_pattern_never_sees_a_secret_so_it_answers_nothing_about_one() {
    with_browser(|h| async move {
        const PIN: &str = "Pzq-4471-secret";
        let gateway = secret_gateway(&h, PIN).await;
        let agent = gateway.agent_session();
        let open = airlock_gateway::OpenOptions {
            credentials: vec!["pin".into()],
            ..airlock_gateway::OpenOptions::default()
        };
        let out = agent
            .call(ToolCall::Session(airlock_gateway::SessionCall::Open(open)))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        // The form posts to the fixture site itself, where the secret may go.
        let own = h.site.url("").trim_end_matches('/').to_owned();
        let page = navigate(h.site.url(&format!("effects/account.html?to={own}")));
        let memo = |text: &str| {
            ToolCall::Interact(Interaction::Type {
                target: Target::Role {
                    role: "textbox".into(),
                    name: Some("Memo".into()),
                    index: None,
                },
                text: text.into(),
                clear_first: true,
                submit: true,
            })
        };
        // The rule works: a plain memo starting with P is refused in the browser.
        agent.call(page.clone()).await;
        let out = agent.call(memo("Pzq plain")).await;
        assert!(
            out.text.contains("refused by an effect rule"),
            "{}",
            out.text
        );
        // The secret starts with P too, but the rule matches the memo as the
        // redactor leaves it: held or refused would tell the agent its first letter.
        agent.call(page).await;
        let out = agent.call(memo("{{secret:pin.password}}")).await;
        assert!(
            !out.text.contains("refused by an effect rule"),
            "{}",
            out.text
        );
        assert!(!out.text.contains(PIN), "{}", out.text);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_request_whose_page_went_away_is_reported_not_sent() {
    with_browser(|h| async move {
        // The default rules: "Tidy up" POSTs to …/items/7/delete, held by
        // delete-path; the page then leaves while the approval waits.
        let payee = Partner::start().await;
        let store = Store::open_in_memory().await.unwrap();
        let defaults = Rules::from_config(&ApprovalsConfig::default()).unwrap();
        let gateway = gateway(&h, &payee, defaults, Some(store.clone())).await;
        let agent = Arc::new(gateway.agent_session());
        let page = h
            .site
            .url(&format!("effects/leaving.html?to={}", payee.origin()));
        let out = agent.call(navigate(page)).await;
        assert_eq!(out.error, None, "{}", out.text);
        let running = {
            let agent = agent.clone();
            tokio::spawn(async move { agent.call(click_button("Tidy up")).await })
        };
        let approval = crate::approvals::pending(&store).await;
        assert_eq!(approval.rule, "delete-path");
        let gone = || payee.requests().iter().any(|r| r.starts_with("GET /gone"));
        assert!(crate::eventually!(gone()), "{:?}", payee.requests());
        store
            .decide_approval(
                &approval.id,
                true,
                "test:alice",
                None,
                crate::approvals::now_ms(),
            )
            .await
            .unwrap();
        let out = running.await.unwrap();
        assert_eq!(out.error, Some(ErrorCode::RequestNotSent), "{}", out.text);
        assert!(out.text.contains("not sent"), "{}", out.text);
        assert!(!out.text.contains("then sent"), "{}", out.text);
        let deletes: Vec<String> = payee
            .requests()
            .into_iter()
            .filter(|r| r.contains("/items/7/delete"))
            .collect();
        assert_eq!(deletes, Vec::<String>::new());
        // The record says the call failed with that code.
        let events = store.audit_events(0, 1_000).await.unwrap();
        let last_call = events
            .iter()
            .rev()
            .map(|e| serde_json::from_str::<serde_json::Value>(&e.body).unwrap())
            .find(|e| e["kind"] == "tool_call")
            .unwrap();
        assert_eq!(last_call["error"], "request_not_sent", "{last_call}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_click_covers_the_request_it_makes_so_a_person_is_asked_once() {
    with_browser(|h| async move {
        // The default rules: the click on "Delete account" is held (destructive);
        // approved, its form's POST …/account/delete (delete-path, no riskier) goes
        // under that approval, unasked.
        let payee = Partner::start().await;
        let store = Store::open_in_memory().await.unwrap();
        let defaults = Rules::from_config(&ApprovalsConfig::default()).unwrap();
        let gateway = gateway(&h, &payee, defaults, Some(store.clone())).await;
        let agent = Arc::new(gateway.agent_session());
        let page = h
            .site
            .url(&format!("effects/close-account.html?to={}", payee.origin()));
        agent.call(navigate(page)).await;
        let (approval, out) =
            held_then_decided(&agent, &store, click_button("Delete account"), true, |_| {}).await;
        assert_eq!(approval.rule, "destructive");
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text.contains(&format!(
                "held by rule delete-path, then sent under this call's approval {}",
                approval.id
            )),
            "{}",
            out.text
        );
        assert!(
            out.text.contains("the page after it was sent"),
            "{}",
            out.text
        );
        assert_eq!(store.approvals(None, None).await.unwrap().len(), 1);
        let deletes: Vec<String> = payee
            .requests()
            .into_iter()
            .filter(|r| r.starts_with("POST /account/delete"))
            .collect();
        assert_eq!(deletes.len(), 1, "{:?}", payee.requests());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_on_a_path_holds_the_path_however_the_page_writes_it_and_not_a_query_naming_it() {
    with_browser(|h| async move {
        let payee = Partner::start().await;
        let rule = r#"
[[rules]]
name = "transfers"
request_path = '^/transfer$'
risk = "critical"
action = "deny"
message = "transfers are made by people"
"#;
        // The operator's rule alone: the built-in payment-path would hold these too.
        let rules = {
            let text = format!("defaults = false\n{rule}");
            let approvals: ApprovalsConfig = toml::from_str(&text).unwrap();
            Rules::from_config(&approvals).unwrap()
        };
        let gateway = gateway(&h, &payee, rules, None).await;
        let agent = gateway.agent_session();
        let send = |path: &str| {
            let page = h.site.url(&format!(
                "effects/paths.html?to={}&path={}",
                payee.origin(),
                url::form_urlencoded::byte_serialize(path.as_bytes()).collect::<String>()
            ));
            (navigate(page), click_button("Send"))
        };
        for path in ["/%74ransfer", "//transfer", "/a/../transfer", "/transfer"] {
            let (page, click) = send(path);
            agent.call(page).await;
            let out = agent.call(click).await;
            assert!(
                out.text.contains("refused by an effect rule"),
                "{path}: {}",
                out.text
            );
        }
        assert_eq!(transfers(&payee), Vec::<String>::new());
        // A login whose next page is a transfer is no transfer.
        let (page, click) = send("/login?next=/transfer");
        agent.call(page).await;
        let out = agent.call(click).await;
        assert!(out.text.contains("sent 200"), "{}", out.text);
        assert_eq!(payee.requests().len(), 1, "{:?}", payee.requests());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_own_navigation_to_a_page_that_deletes_on_load_waits_under_the_defaults() {
    with_browser(|h| async move {
        let payee = Partner::start().await;
        let store = Store::open_in_memory().await.unwrap();
        let defaults = Rules::from_config(&ApprovalsConfig::default()).unwrap();
        let gateway = gateway(&h, &payee, defaults, Some(store.clone())).await;
        let agent = Arc::new(gateway.agent_session());
        let go = || {
            navigate(
                h.site
                    .url(&format!("effects/autopost.html?to={}", payee.origin())),
            )
        };
        let deletes = || {
            payee
                .requests()
                .into_iter()
                .filter(|r| r.starts_with("POST /items/7/delete"))
                .count()
        };
        let (approval, out) = held_then_decided(&agent, &store, go(), false, |_| {}).await;
        assert_eq!(approval.rule, "delete-path");
        assert!(
            approval
                .detail
                .unwrap_or_default()
                .starts_with("Delete items 7 (POST /items/7/delete)"),
        );
        assert_eq!(out.error, Some(ErrorCode::ApprovalDenied), "{}", out.text);
        assert_eq!(deletes(), 0);
        let (_, out) = held_then_decided(&agent, &store, go(), true, |_| {}).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(deletes(), 1);
    })
    .await;
}

// acme's own rule on the requests its pages send: transfers refused outright.
const ACME_REFUSES: &str = r#"
[[approvals.rules]]
name = "acme-no-transfers"
request_method = ["POST"]
request_path = "^/transfer$"
risk = "critical"
action = "deny"
message = "acme pays by hand"
"#;

// Then held for a human instead, who has 10 s (the operator gives 30).
const ACME_HOLDS: &str = r#"
[approvals]
timeout_secs = 10

[[approvals.rules]]
name = "acme-held-transfers"
request_method = ["POST"]
request_path = "^/transfer$"
risk = "critical"
action = "approve"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_own_effect_rules_and_wait_judge_its_sessions_requests_and_no_others() {
    with_browser(|h| async move {
        let payee = Partner::start().await;
        let store = Store::open_in_memory().await.unwrap();
        let none = ApprovalsConfig {
            defaults: Some(false),
            ..ApprovalsConfig::default()
        };
        let gateway = gateway(
            &h,
            &payee,
            Rules::from_config(&none).unwrap(),
            Some(store.clone()),
        )
        .await;
        let as_tenant = |tenant: &str| {
            Arc::new(gateway.agent_session_as(
                airlock_gateway::Principal {
                    tenant: tenant.to_owned(),
                    role: airlock_core::Role::Act,
                    key: Some(format!("key_{tenant}")),
                },
                airlock_gateway::Surface::Mcp,
            ))
        };
        let policy = |text: &str| airlock_config::TenantPolicy::parse(text).unwrap();
        gateway
            .set_tenant_policy("acme", &policy(ACME_REFUSES), "test:alice")
            .await
            .unwrap();

        // beta has no policy of its own: under the operator's rules the click sends.
        let beta = as_tenant("beta");
        beta.call(account(&h, &payee)).await;
        let out = beta.call(click_button("Show details")).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = beta
            .call(ToolCall::Read(Reading::WaitFor {
                condition: airlock_browser::WaitCondition::Text("sent 200".into()),
                timeout: Some(Duration::from_secs(20)),
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(transfers(&payee).len(), 1);

        // acme's rule drops the same request in acme's browser.
        let acme = as_tenant("acme");
        acme.call(account(&h, &payee)).await;
        let out = acme.call(click_button("Show details")).await;
        assert!(
            out.text.contains("refused by an effect rule"),
            "{}",
            out.text
        );
        assert_eq!(transfers(&payee).len(), 1);

        // Version 2 holds it, with acme's shorter wait on the approval.
        gateway
            .set_tenant_policy("acme", &policy(ACME_HOLDS), "test:alice")
            .await
            .unwrap();
        let acme = as_tenant("acme");
        acme.call(account(&h, &payee)).await;
        let held_for = |approval: &ApprovalRecord| {
            assert_eq!(approval.rule, "acme-held-transfers");
            assert_eq!(approval.expires_ms - approval.created_ms, 10_000);
            assert_eq!(transfers(&payee).len(), 1);
        };
        let (_, out) =
            held_then_decided(&acme, &store, click_button("Show details"), false, held_for).await;
        assert_eq!(out.error, Some(ErrorCode::ApprovalDenied), "{}", out.text);
        assert_eq!(transfers(&payee).len(), 1);
        // beta, after both changes, still sends unasked.
        let out = beta.call(click_button("Show details")).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(store.approvals(None, None).await.unwrap().len() == 1);
    })
    .await;
}
