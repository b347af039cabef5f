//! Two tenants on one fleet — three gateways over one real Postgres, one shared worker,
//! real Chromium — each under a policy of its own that narrows the operator's: each
//! reaches only its own hosts and gets only its own rules; a change by one tenant's
//! admin applies at once to the sessions opened after it on every replica (one open
//! before keeps its version, also when the other replica adopts it), is on the
//! record, and changes nothing for the other tenant; a change that would widen the
//! operator's config is refused by its key, and nothing is stored.

use airlock_config::TenantPolicy;
use airlock_core::{ErrorCode, HasErrorCode as _, Role};
use airlock_gateway::{AuditFilter, GatewayConfig, Principal};
use airlock_policy::{Policy, PolicyConfig};
use airlock_store::Store;
use airlock_test_support::{Postgres, with_browser};

use crate::replicas::{lease, replica_with, shared_worker};
use crate::{click_button, navigate};

fn tabs() -> airlock_gateway::ToolCall {
    airlock_gateway::ToolCall::Window(airlock_gateway::Window::Tabs(
        airlock_gateway::TabAction::List,
    ))
}

fn caller(tenant: &str) -> Principal {
    Principal {
        tenant: tenant.to_owned(),
        role: Role::Act,
        key: Some(format!("key_{tenant}")),
    }
}

// acme: only 127.0.0.1, no "Sign in" clicks, and no tab list.
const ACME_V1: &str = r#"
[policy]
allow_hosts = ["127.0.0.1"]

[tools]
deny = ["browser_tabs"]

[[approvals.rules]]
name = "no-sign-in"
tools = ["browser_click"]
name_matches = "^Sign in$"
risk = "high"
action = "deny"
message = "acme signs in by hand"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenant_runs_under_its_own_policy_on_every_replica() {
    with_browser(|h| async move {
        let pg = Postgres::start();
        let worker = shared_worker(&h);
        // The operator lets sessions reach the fixture site as 127.0.0.1 and as
        // localhost (its other port): the tenants split that between them.
        let operator = Policy::from_config(&PolicyConfig {
            allow_private: vec![
                format!("127.0.0.1:{}", h.site.a.port()),
                format!("localhost:{}", h.site.b.port()),
            ],
            ..PolicyConfig::default()
        })
        .unwrap();
        let mut replicas = Vec::new();
        for _ in 0..3 {
            let store = Store::open_postgres(&pg.url()).await.unwrap();
            replicas.push(
                replica_with(&worker, GatewayConfig::with_policy(operator.clone()).store(store))
                    .await,
            );
        }
        let (a, b, c) = (&replicas[0], &replicas[1], &replicas[2]);
        let acme_v1 = TenantPolicy::parse(ACME_V1).unwrap();
        let beta = TenantPolicy::parse(r#"{"policy": {"allow_hosts": ["localhost"]}}"#).unwrap();
        let (version, hash) = a.set_tenant_policy("acme", &acme_v1, "test:alice").await.unwrap();
        assert_eq!((version, hash.len()), (1, 64));
        b.set_tenant_policy("beta", &beta, "test:bob").await.unwrap();
        let acme_site = h.site.url("login.html");
        let beta_site = h.site.other_site("login.html");

        // acme, leased through B: its own host only, and its rule fires.
        let first = b.lease(&caller("acme"), lease("u", "c1")).await.unwrap();
        assert_eq!(first.info.policy_version, Some(1));
        let first_id = first.info.id.to_string();
        let agent = b.session_agent(&caller("acme"), &first_id).await.unwrap();
        let out = agent.call(navigate(beta_site.clone())).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        let out = agent.call(navigate(acme_site.clone())).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(click_button("Sign in")).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("acme signs in by hand"), "{}", out.text);
        let out = agent.call(tabs()).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("browser_tabs"), "{}", out.text);

        // beta, through A: the other way round, and acme's rule is not its.
        let theirs = a.lease(&caller("beta"), lease("u", "c1")).await.unwrap();
        let agent = a
            .session_agent(&caller("beta"), &theirs.info.id.to_string())
            .await
            .unwrap();
        let out = agent.call(navigate(acme_site.clone())).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        let out = agent.call(navigate(beta_site.clone())).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(click_button("Sign in")).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(tabs()).await;
        assert_eq!(out.error, None, "{}", out.text);

        // acme's admin drops the rule, through A: a session opened now through B
        // runs under version 2; the one open before keeps version 1, on A too.
        let acme_v2 = TenantPolicy::parse("[policy]\nallow_hosts = [\"127.0.0.1\"]\n").unwrap();
        let (version, _) = a.set_tenant_policy("acme", &acme_v2, "test:alice").await.unwrap();
        assert_eq!(version, 2);
        let second = b.lease(&caller("acme"), lease("u", "c2")).await.unwrap();
        assert_eq!(second.info.policy_version, Some(2));
        let agent = b
            .session_agent(&caller("acme"), &second.info.id.to_string())
            .await
            .unwrap();
        agent.call(navigate(acme_site.clone())).await;
        let out = agent.call(click_button("Sign in")).await;
        assert_eq!(out.error, None, "{}", out.text);
        let on_a = a.session_agent(&caller("acme"), &first_id).await.unwrap();
        assert_eq!(
            a.session_info("acme", &first_id).await.unwrap().policy_version,
            Some(1)
        );
        let out = on_a.call(click_button("Sign in")).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        // And on the third replica, at once.
        let third = c.lease(&caller("acme"), lease("u", "c3")).await.unwrap();
        assert_eq!(third.info.policy_version, Some(2));
        // beta's sessions are as they were.
        let again = b.lease(&caller("beta"), lease("u", "c2")).await.unwrap();
        assert_eq!(again.info.policy_version, Some(1));

        // On the record: who, which version, which hash; beta's change is beta's.
        let changes = b
            .audit_events(
                "acme",
                &AuditFilter {
                    kinds: vec!["policy_change".to_owned()],
                    limit: 10,
                    ..AuditFilter::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert!(changes.iter().all(|e| e.tenant == "acme" && e.body.contains("test:alice")));
        assert!(changes.iter().any(|e| e.body.contains(&hash)));

        // Past the operator's ceiling: refused by key, nothing stored.
        for (written, key) in [
            ("[policy]\nallow_private = [\"10.0.0.0/8\"]\n", "policy.allow_private"),
            ("[policy]\nschemes = [\"http\", \"file\"]\n", "policy.schemes[1]"),
            ("[flow]\nmode = \"off\"\n", "flow.mode"),
            (
                "[[approvals.rules]]\ntools = [\"browser_click\"]\nrisk = \"low\"\naction = \"allow\"\n",
                "approvals.rules[0].action",
            ),
            ("[tools]\nevaluate = true\n", "tools.evaluate"),
        ] {
            let widening = TenantPolicy::parse(written).unwrap();
            let refused = a
                .set_tenant_policy("acme", &widening, "test:mallory")
                .await
                .unwrap_err();
            assert_eq!(refused.code(), ErrorCode::InvalidArgument);
            assert!(refused.to_string().starts_with(key), "{refused}");
        }
        let (version, _, _) = b.tenant_policy("acme").await.unwrap().unwrap();
        assert_eq!(version, 2);
    })
    .await;
}
