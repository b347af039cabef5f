//! Web Bot Auth through the call pipeline: a session whose plan signs sends every
//! request to an origin it signs for with `Signature-Agent`, `Signature-Input` and
//! `Signature` that a site verifying them with Cloudflare's `web-bot-auth` crate
//! accepts, for that origin's authority only; other origins receive none of the
//! headers (a redirect, a page's fetch, a page's forged headers included); a key's
//! rotation leaves the old key listed until its signatures expire.

use std::sync::Arc;
use std::time::Duration;

use airlock_browser::WaitCondition;
use airlock_config::Identity;
use airlock_core::Role;
use airlock_gateway::{AgentSession, Gateway, GatewayConfig, Reading, ToolCall};
use airlock_policy::{OriginSet, Policy, PolicyConfig};
use airlock_test_support::botauth::{Received, VerifyingSite};
use airlock_test_support::{Harness, with_browser};
use airlock_vault::{MasterKey, Store, Vault};

use crate::navigate;

// A gateway whose sessions sign for `origins` (empty: every origin they may reach),
// allowed to reach `sites` and the harness's site.
async fn signing_gateway(
    h: &Harness,
    sites: &[&VerifyingSite],
    origins: &[String],
) -> (Arc<Gateway>, Arc<Vault>) {
    ruled_signing_gateway(h, sites, origins, airlock_risk::Rules::default()).await
}

// `signing_gateway`, judging calls and requests by `rules`.
async fn ruled_signing_gateway(
    h: &Harness,
    sites: &[&VerifyingSite],
    origins: &[String],
    rules: airlock_risk::Rules,
) -> (Arc<Gateway>, Arc<Vault>) {
    gateway_signing(h, sites, origins, rules, true).await
}

async fn gateway_signing(
    h: &Harness,
    sites: &[&VerifyingSite],
    origins: &[String],
    rules: airlock_risk::Rules,
    sign: bool,
) -> (Arc<Gateway>, Arc<Vault>) {
    let vault = Arc::new(
        Vault::open(
            Store::open_in_memory().await.unwrap(),
            MasterKey::generate().unwrap(),
        )
        .await
        .unwrap(),
    );
    let policy = Policy::from_config(&PolicyConfig {
        allow_private: sites
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .chain([format!("127.0.0.1:{}", h.site.a.port())])
            .collect(),
        ..PolicyConfig::default()
    })
    .unwrap();
    let gateway = Gateway::new(
        h.host().await,
        GatewayConfig {
            warm_sessions: 1,
            rules,
            approval_timeout: Duration::from_secs(30),
            identity: Identity {
                sign,
                origins: OriginSet::parse("identity.origins", origins).unwrap(),
                lifetime: Duration::from_secs(60),
                // Where sites would fetch the directory: never fetched here.
                agent_url: Some("http://127.0.0.1:9".to_owned()),
            },
            ..GatewayConfig::with_policy(policy)
                .store(vault.store().clone())
                .vault(vault.clone(), Role::Operate)
        },
    );
    (gateway, vault)
}

// The site trusts the tenant's listed keys (what its directory would give it).
async fn trust_tenant_keys(vault: &Vault, sites: &[&VerifyingSite]) -> Vec<String> {
    let keys = vault
        .identity_keys("default", Duration::from_secs(600))
        .await
        .unwrap();
    for key in &keys {
        for site in sites {
            site.trust(&key.kid, &key.public_key);
        }
    }
    keys.into_iter().map(|k| k.kid).collect()
}

async fn until_done(agent: &AgentSession) {
    let out = agent
        .call(ToolCall::Read(Reading::WaitFor {
            condition: WaitCondition::Text("done".into()),
            timeout: Some(Duration::from_secs(10)),
        }))
        .await;
    assert_eq!(out.error, None, "{}", out.text);
}

fn describe(received: &[Received]) -> String {
    received
        .iter()
        .map(|r| format!("{} @{} {:?}", r.line, r.authority, r.verified))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_to_a_named_origin_verify_and_every_other_origin_receives_no_signature() {
    with_browser(|h| async move {
        let (a, b) = (VerifyingSite::start().await, VerifyingSite::start().await);
        let (gateway, vault) = signing_gateway(&h, &[&a, &b], &[a.origin()]).await;
        let key = vault.create_identity("default").await.unwrap();
        let kids = trust_tenant_keys(&vault, &[&a, &b]).await;
        assert_eq!(kids, vec![key.kid.clone()]);
        let agent = gateway.agent_session();
        // The page: its document, an image, a same-origin fetch, a fetch to B, and
        // a fetch to B with headers the page forged.
        let page = a.url(&format!(
            "/page?other={}&forge={}",
            b.url("/api/cross"),
            b.url("/api/forged")
        ));
        let out = agent.call(navigate(page)).await;
        assert_eq!(out.error, None, "{}", out.text);
        until_done(&agent).await;
        let at_a = a.received();
        for r in &at_a {
            assert_eq!(r.verified, Ok(key.kid.clone()), "{}", describe(&at_a));
            assert_eq!(
                r.signature_agent.as_deref(),
                Some("sig1=\"http://127.0.0.1:9\""),
                "{}",
                describe(&at_a)
            );
        }
        for path in ["/page", "/pixel.png", "/api/same"] {
            assert!(
                at_a.iter().any(|r| r.line.contains(path)),
                "{path} missing:\n{}",
                describe(&at_a)
            );
        }
        // B is not named: nothing it received carries a signature header, not even
        // the request whose headers the page forged (they are dropped).
        let at_b = b.received();
        assert!(
            at_b.iter().any(|r| r.line.contains("/api/cross"))
                && at_b.iter().any(|r| r.line.contains("/api/forged")),
            "{}",
            describe(&at_b)
        );
        assert!(at_b.iter().all(|r| !r.signed()), "{}", describe(&at_b));
        // The session's open and each call name the key; calls count what they signed.
        let store = vault.store();
        let mut opened_with = None;
        let mut signed = 0;
        for row in store.audit_tail(200).await.unwrap() {
            match airlock_audit::Entry::parse(&row.body).unwrap().event {
                airlock_audit::Event::SessionOpen(open) => opened_with = open.signing_key,
                airlock_audit::Event::ToolCall(done) => {
                    assert_eq!(done.signed_by.as_deref(), Some(kids[0].as_str()));
                    signed += done.signed;
                }
                _ => {}
            }
        }
        assert_eq!(opened_with.as_deref(), Some(kids[0].as_str()));
        assert!(signed >= 3, "{signed}");
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pages_fetch_and_a_redirect_are_signed_for_their_own_authority_only_when_named() {
    with_browser(|h| async move {
        let (a, b) = (VerifyingSite::start().await, VerifyingSite::start().await);
        // Every origin the session may reach is named: B's requests are signed, for
        // B's authority.
        let (gateway, vault) = signing_gateway(&h, &[&a, &b], &[]).await;
        let agent = gateway.agent_session();
        agent.call(navigate(a.url("/page"))).await;
        until_done(&agent).await;
        let kids = trust_tenant_keys(&vault, &[&a, &b]).await;
        let out = agent
            .call(navigate(a.url(&format!(
                "/page?other={}&forge={}",
                b.url("/api/cross"),
                b.url("/api/forged")
            ))))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        until_done(&agent).await;
        let at_b = b.received();
        for path in ["/api/cross", "/api/forged"] {
            let r = at_b
                .iter()
                .find(|r| r.line.contains(path) && !r.line.starts_with("OPTIONS"))
                .unwrap_or_else(|| panic!("{path} missing:\n{}", describe(&at_b)));
            // Verified at B's authority with the tenant's key: the forged headers
            // were replaced, not passed on.
            assert_eq!(r.verified, Ok(kids[0].clone()), "{}", describe(&at_b));
            assert!(
                !r.signature_agent
                    .as_deref()
                    .unwrap_or_default()
                    .contains("forged")
            );
        }
        gateway.shutdown().await;

        // Named A only: a redirect from A to B arrives at B without A's signature.
        let (gateway, vault) = signing_gateway(&h, &[&a, &b], &[a.origin()]).await;
        let agent = gateway.agent_session();
        let before = b.received().len();
        let out = agent
            .call(navigate(a.url(&format!("/go?to={}", b.url("/landed")))))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        trust_tenant_keys(&vault, &[&a]).await;
        let hops = a.received_at("/go");
        assert!(
            hops.last().is_some_and(Received::signed),
            "{}",
            describe(&hops)
        );
        let landed: Vec<Received> = b.received().into_iter().skip(before).collect();
        assert!(
            landed.iter().any(|r| r.line.contains("/landed")),
            "{}",
            describe(&landed)
        );
        assert!(landed.iter().all(|r| !r.signed()), "{}", describe(&landed));
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_key_stays_listed_while_its_signatures_live_and_new_sessions_sign_with_the_next()
{
    with_browser(|h| async move {
        let a = VerifyingSite::start().await;
        let (gateway, vault) = signing_gateway(&h, &[&a], &[a.origin()]).await;
        let first = vault.create_identity("default").await.unwrap();
        a.trust(&first.kid, &first.public_key);
        let agent = gateway.agent_session();
        agent.call(navigate(a.url("/page"))).await;
        until_done(&agent).await;
        let old = a.received();
        assert!(
            old.iter().all(|r| r.verified == Ok(first.kid.clone())),
            "{}",
            describe(&old)
        );
        let second = vault.rotate_identity("default").await.unwrap();
        // The directory lists both: the old key's signatures are still valid.
        let listed: Vec<String> = gateway
            .directory_signers("default")
            .await
            .unwrap()
            .iter()
            .map(|s| s.kid().to_owned())
            .collect();
        assert_eq!(listed, vec![second.kid.clone(), first.kid.clone()]);
        // A new session signs with the next key at once.
        let fresh = gateway.agent_session();
        a.trust(&second.kid, &second.public_key);
        fresh.call(navigate(a.url("/page?fresh"))).await;
        until_done(&fresh).await;
        let new: Vec<Received> = a
            .received()
            .into_iter()
            .skip_while(|r| !r.line.contains("fresh"))
            .collect();
        assert!(!new.is_empty());
        assert!(
            new.iter().all(|r| r.verified == Ok(second.kid.clone())),
            "{}",
            describe(&new)
        );
        // The session open before the rotation moves to the next key within its
        // refresh; until then its signatures verify with the old key, still listed.
        let mut moved = false;
        for round in 0..40 {
            let marker = format!("/page?round={round}");
            agent.call(navigate(a.url(&marker))).await;
            until_done(&agent).await;
            let this: Vec<Received> = a
                .received()
                .into_iter()
                .skip_while(|r| !r.line.contains(&marker))
                .collect();
            assert!(
                this.iter().all(|r| r.verified.is_ok()),
                "{}",
                describe(&this)
            );
            if this.iter().all(|r| r.verified == Ok(second.kid.clone())) {
                moved = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        assert!(moved, "the open session never moved to the rotated key");
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_an_effect_rule_held_is_signed_when_a_person_releases_it() {
    with_browser(|h| async move {
        let a = VerifyingSite::start().await;
        let approvals: airlock_risk::ApprovalsConfig = toml::from_str(
            "[[rules]]\nname = \"payments\"\nrequest_method = [\"POST\"]\nrequest_url = '/transfer'\nrisk = \"critical\"\naction = \"approve\"\n",
        )
        .unwrap();
        let rules = airlock_risk::Rules::from_config(&approvals).unwrap();
        let (gateway, vault) = ruled_signing_gateway(&h, &[&a], &[a.origin()], rules).await;
        let key = vault.create_identity("default").await.unwrap();
        a.trust(&key.kid, &key.public_key);
        let agent = Arc::new(gateway.agent_session());
        let out = agent.call(navigate(a.url("/pay"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let nothing_sent = |_: &airlock_store::ApprovalRecord| {
            assert!(a.received_at("/transfer").is_empty());
        };
        let (_, out) = crate::approvals::held_then_decided(
            &agent,
            vault.store(),
            crate::click_button("Show details"),
            true,
            nothing_sent,
        )
        .await;
        assert_eq!(out.error, None, "{}", out.text);
        let sent = a.received_at("/transfer");
        assert_eq!(sent.len(), 1, "{}", describe(&sent));
        assert_eq!(sent[0].verified, Ok(key.kid.clone()), "{}", describe(&sent));
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_policy_turns_signing_on_for_its_sessions_opened_after_it() {
    with_browser(|h| async move {
        let a = VerifyingSite::start().await;
        // The operator signs nothing.
        let (gateway, vault) =
            gateway_signing(&h, &[&a], &[], airlock_risk::Rules::default(), false).await;
        let key = vault.create_identity("default").await.unwrap();
        a.trust(&key.kid, &key.public_key);
        let before = gateway.agent_session();
        before.call(navigate(a.url("/page?before"))).await;
        until_done(&before).await;
        assert!(
            a.received().iter().all(|r| !r.signed()),
            "{}",
            describe(&a.received())
        );
        // The tenant turns it on, for its own origin only: sessions opened after it sign.
        let policy: airlock_config::TenantPolicy = serde_json::from_value(serde_json::json!({
            "identity": {"sign": true, "origins": [a.origin()]}
        }))
        .unwrap();
        gateway
            .set_tenant_policy("default", &policy, "test:alice")
            .await
            .unwrap();
        let after = gateway.agent_session();
        after.call(navigate(a.url("/page?after"))).await;
        until_done(&after).await;
        let signed: Vec<Received> = a
            .received()
            .into_iter()
            .skip_while(|r| !r.line.contains("after"))
            .collect();
        assert!(signed.len() >= 3, "{}", describe(&signed));
        assert!(
            signed.iter().all(|r| r.verified == Ok(key.kid.clone())),
            "{}",
            describe(&signed)
        );
        // An origin that is not a set's entry is refused by its key, nothing stored.
        let bad: airlock_config::TenantPolicy = serde_json::from_value(serde_json::json!({
            "identity": {"origins": ["not an origin/"]}
        }))
        .unwrap();
        let refused = gateway
            .set_tenant_policy("default", &bad, "test:alice")
            .await
            .unwrap_err();
        assert!(
            refused.to_string().contains("identity.origins"),
            "{refused}"
        );
        gateway.shutdown().await;
    })
    .await;
}
