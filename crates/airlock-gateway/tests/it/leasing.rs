//! Leases in the engine, over real browser sessions: each cap refuses with a retry
//! time, the machine's memory floor refuses, heartbeats keep a lease past its idle
//! TTL, and a leased session ends for every agent driving it.

use airlock_gateway::{Reading, SessionCall};
use std::time::Duration;

use airlock_browser::SnapshotOptions;
use airlock_core::{ErrorCode, Role};
use airlock_gateway::{Caps, Error, Gateway, GatewayConfig, LeaseRequest, Principal, ToolCall};
use airlock_test_support::with_browser;

use crate::{config, navigate};

fn caller(tenant: &str) -> Principal {
    Principal {
        tenant: tenant.to_owned(),
        role: Role::Act,
        key: Some(format!("key_{tenant}")),
    }
}

fn request(user: &str, conversation: &str) -> LeaseRequest {
    LeaseRequest {
        user: user.to_owned(),
        conversation: conversation.to_owned(),
        ..LeaseRequest::default()
    }
}

fn quota(result: Result<airlock_gateway::Leased, Error>) -> (String, u64) {
    match result {
        Err(Error::QuotaExceeded {
            message,
            retry_after_secs,
            ..
        }) => (message, retry_after_secs),
        Err(other) => panic!("expected quota_exceeded, got {other}"),
        Ok(leased) => panic!("expected quota_exceeded, got session {}", leased.info.id),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_cap_refuses_a_new_session_with_a_time_to_retry() {
    with_browser(|h| async move {
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                idle_ttl: Duration::from_secs(120),
                caps: Caps {
                    per_user: Some(1),
                    per_tenant: Some(2),
                    total: Some(3),
                    min_free_memory_mib: 0,
                },
                ..config(&h)
            },
        );
        let (acme, beta) = (caller("acme"), caller("beta"));
        gateway.lease(&acme, request("u1", "a")).await.unwrap();
        let (message, retry) = quota(gateway.lease(&acme, request("u1", "b")).await);
        assert!(message.contains("per user"), "{message}");
        // The soonest a place frees up: the idle session's TTL, not more.
        assert!((1..=120).contains(&retry), "{retry}");
        gateway.lease(&acme, request("u2", "a")).await.unwrap();
        let (message, _) = quota(gateway.lease(&acme, request("u3", "a")).await);
        assert!(message.contains("per tenant"), "{message}");
        gateway.lease(&beta, request("u1", "a")).await.unwrap();
        let (message, _) = quota(gateway.lease(&beta, request("u2", "a")).await);
        assert!(message.contains("the gateway has 3"), "{message}");
        // An agent's own session is under the tenant and global caps too, and its
        // call says so with the code and the retry time.
        let agent = gateway.agent_session_as(caller("gamma"), airlock_gateway::Surface::Mcp);
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, Some(ErrorCode::QuotaExceeded), "{}", out.text);
        assert!(out.retry_after_secs.is_some_and(|s| s >= 1), "{out:?}");
        // The same key gets its open session whatever the caps say.
        let again = gateway.lease(&acme, request("u1", "a")).await.unwrap();
        assert!(!again.created);
        // Ending one frees its place.
        gateway
            .end_session("acme", again.info.id.as_str())
            .await
            .unwrap();
        gateway.lease(&acme, request("u1", "b")).await.unwrap();
        assert_eq!(gateway.open_browser_sessions().await, 3);
        // Each refusal is counted by its scope (for /metrics).
        assert_eq!(
            gateway.quota_refusals(),
            vec![("tenant", 1), ("total", 2), ("user", 1)]
        );
        gateway.shutdown().await;

        // Below the memory floor, nothing opens (a floor no machine has).
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                caps: Caps {
                    min_free_memory_mib: u64::MAX / 2,
                    ..Caps::default()
                },
                ..config(&h)
            },
        );
        let (message, retry) = quota(gateway.lease(&acme, request("u1", "a")).await);
        assert!(message.contains("MiB of memory available"), "{message}");
        assert_eq!(retry, 30);
        assert_eq!(gateway.open_browser_sessions().await, 0);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_a_lease_and_its_end_reaches_every_agent() {
    with_browser(|h| async move {
        let ttl = Duration::from_millis(600);
        let gateway = Gateway::new(h.host().await, config(&h));
        let acme = caller("acme");
        let leased = gateway
            .lease(
                &acme,
                LeaseRequest {
                    ttl: Some(ttl),
                    ..request("u1", "a")
                },
            )
            .await
            .unwrap();
        let id = leased.info.id.to_string();
        assert_eq!(leased.info.terms.idle_ttl, ttl);
        // Heartbeats across three TTLs keep it open.
        let start = tokio::time::Instant::now();
        while start.elapsed() < ttl * 3 {
            gateway.heartbeat("acme", &id).await.unwrap();
            tokio::time::sleep(ttl / 4).await;
        }
        assert!(gateway.session_info("acme", &id).await.is_ok());
        // Another tenant reaches none of it.
        assert!(matches!(
            gateway.heartbeat("beta", &id).await,
            Err(Error::NoSuchSession)
        ));
        assert!(gateway.session_agent(&caller("beta"), &id).await.is_err());
        // Two keys of the tenant drive the one session, each by its own role.
        let driver = gateway.session_agent(&acme, &id).await.unwrap();
        let observer = gateway
            .session_agent(
                &Principal {
                    role: Role::Observe,
                    key: Some("key_observer".to_owned()),
                    ..acme.clone()
                },
                &id,
            )
            .await
            .unwrap();
        let out = driver.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = observer
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert!(out.text.contains("Sign in"), "{}", out.text);
        let out = observer.call(navigate(h.site.url("page2.html"))).await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        // An agent going away leaves the lease to its terms.
        drop(observer);
        driver.close().await;
        assert!(gateway.session_info("acme", &id).await.is_ok());
        // Without heartbeats, the idle TTL ends it, and its agent says so.
        assert!(
            crate::eventually!(gateway.session_info("acme", &id).await.is_err()),
            "the lease outlived its idle TTL"
        );
        let out = driver
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert_eq!(out.error, Some(ErrorCode::SessionExpired), "{}", out.text);
        assert!(out.text.contains("lease a new one"), "{}", out.text);
        assert!(matches!(
            gateway.heartbeat("acme", &id).await,
            Err(Error::NoSuchSession)
        ));
        // A new lease of the key is a new session.
        let again = gateway.lease(&acme, request("u1", "a")).await.unwrap();
        assert!(again.created && again.info.id.to_string() != id);
        gateway.shutdown().await;
    })
    .await;
}

/// Sessions an agent opens over MCP count against its key's per-user cap as leased
/// sessions count against their user's: one key cannot open more than the cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_per_user_cap_counts_the_sessions_a_key_opens_itself() {
    with_browser(|h| async move {
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                caps: Caps {
                    per_user: Some(2),
                    ..Caps::default()
                },
                ..config(&h)
            },
        );
        let agents: Vec<_> = (0..3)
            .map(|_| gateway.agent_session_as(caller("acme"), airlock_gateway::Surface::Mcp))
            .collect();
        for agent in &agents[..2] {
            let out = agent
                .call(ToolCall::Session(SessionCall::Open(Default::default())))
                .await;
            assert_eq!(out.error, None, "{}", out.text);
        }
        let out = agents[2]
            .call(ToolCall::Session(SessionCall::Open(Default::default())))
            .await;
        assert_eq!(out.error, Some(ErrorCode::QuotaExceeded), "{}", out.text);
        assert!(out.text.contains("per user"), "{}", out.text);
        // Another key of the tenant has its own.
        let other = gateway.agent_session_as(
            airlock_gateway::Principal {
                key: Some("another-key".into()),
                ..caller("acme")
            },
            airlock_gateway::Surface::Mcp,
        );
        let out = other
            .call(ToolCall::Session(SessionCall::Open(Default::default())))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

/// A named browser (`/mcp/b/NAME`) is one per (caller, name): the same caller naming
/// it again gets the same browser, with its page; another key of the same tenant
/// naming the same name gets a browser of its own; a name that is not one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_browser_is_its_callers_own() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let alice = caller("acme");
        let bob = Principal {
            key: Some("key_acme_bob".to_owned()),
            ..caller("acme")
        };
        let first = gateway.named_browser(&alice, "agent").await.unwrap();
        let out = first.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let page = async |agent: &airlock_gateway::AgentSession| {
            agent
                .call(ToolCall::Read(
                    Reading::Snapshot(SnapshotOptions::default()),
                ))
                .await
                .text
        };
        let again = gateway.named_browser(&alice, "agent").await.unwrap();
        let seen = page(&again).await;
        assert!(
            seen.contains("Sign in"),
            "the same caller and name is the same browser: {seen}"
        );
        let theirs = gateway.named_browser(&bob, "agent").await.unwrap();
        let seen = page(&theirs).await;
        assert!(
            !seen.contains("Sign in"),
            "another key naming it gets its own: {seen}"
        );
        let refused = gateway.named_browser(&alice, "no spaces").await;
        assert!(
            matches!(refused, Err(Error::InvalidArgument(_))),
            "{:?}",
            refused.err()
        );
        gateway.shutdown().await;
    })
    .await;
}
