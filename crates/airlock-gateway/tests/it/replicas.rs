//! Three gateways over one real Postgres, as three control-plane replicas: each
//! one's live feed carries every replica's events in the log's order; a call held on
//! one is decided through another and runs within a second; and what a replica on
//! another machine left open when it went silent is ended on the record once, by
//! whichever replica takes it first.

use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use airlock_gateway::{
    Decision, Error, FeedEvent, Gateway, GatewayConfig, OperatorInput, Surface, ToolCall,
    ToolOutput,
};
use airlock_risk::{ApprovalsConfig, Rules};
use airlock_store::{ApprovalStatus, HostRecord, LiveSessionRecord, Store};
use airlock_test_support::{Postgres, with_browser};
use tokio::sync::broadcast::Receiver;

use crate::{click_button, config, navigate};

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

// The next event of `kind` on `feed`, with every event it carried before it.
async fn until(feed: &mut Receiver<FeedEvent>, kind: &str, seen: &mut Vec<FeedEvent>) -> FeedEvent {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let event = feed.recv().await.expect("the feed keeps up");
            seen.push(event.clone());
            if event.kind == kind {
                return event;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {kind} on the feed within 10 s"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_one_postgres_share_the_feed_decisions_and_the_end_of_a_gone_one() {
    with_browser(|h| async move {
        let pg = Postgres::start();
        let url = pg.url();
        let (a, b, c) = tokio::join!(
            Store::open_postgres(&url),
            Store::open_postgres(&url),
            Store::open_postgres(&url)
        );
        let stores = [a.unwrap(), b.unwrap(), c.unwrap()];
        let mut replicas = Vec::new();
        for store in &stores {
            replicas.push(Gateway::new(
                h.host().await,
                GatewayConfig {
                    rules: Rules::from_config(&ApprovalsConfig::default()).unwrap(),
                    approval_timeout: Duration::from_secs(30),
                    ..config(&h).store(store.clone())
                },
            ));
        }
        let (on_a, on_b, on_c) = (&replicas[0], &replicas[1], &replicas[2]);
        let mut b_feed = on_b.audit().feed();
        let mut c_feed = on_c.audit().feed();

        // An agent on A; its click is held.
        let agent = Arc::new(on_a.agent_session());
        let out = agent.call(navigate(h.site.url("resolve.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let call = {
            let agent = agent.clone();
            tokio::spawn(async move { agent.call(click_button("Delete account")).await })
        };
        let mut on_b_seen = Vec::new();
        until(&mut b_feed, "approval_requested", &mut on_b_seen).await;
        let pending = stores[1]
            .approvals(None, Some(ApprovalStatus::Pending))
            .await
            .unwrap();
        assert_eq!(pending.len(), 1);
        let approval = &pending[0];

        // Decided on C: the call on A runs within a second.
        let decided = Instant::now();
        assert_eq!(
            on_c.approvals()
                .decide(&approval.tenant, &approval.id, true, "test:carol", None)
                .await
                .unwrap(),
            Decision::Recorded
        );
        let out: ToolOutput = call.await.unwrap();
        assert!(
            decided.elapsed() < Duration::from_secs(1),
            "{:?}",
            decided.elapsed()
        );
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("deleted 1"), "{}", out.text);
        // A's and C's events reach B's feed, and C's, in the log's order, none missed.
        until(&mut b_feed, "approval_decided", &mut on_b_seen).await;
        let mut on_c_seen = Vec::new();
        until(&mut c_feed, "approval_decided", &mut on_c_seen).await;
        for seen in [&on_b_seen, &on_c_seen] {
            let seqs: Vec<u64> = seen.iter().map(|e| e.seq).collect();
            assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
            assert!(seen.iter().any(|e| e.kind == "session_open"), "{seen:?}");
        }
        // The webhook's and metrics' feed carries only what a replica wrote itself:
        // A's next event is on A's, and not on B's once B's feed has carried it.
        let mut a_here = on_a.audit().appended_here();
        let mut b_here = on_b.audit().appended_here();
        agent.call(navigate(h.site.url("resolve.html"))).await;
        let mine = tokio::time::timeout(Duration::from_secs(5), a_here.recv())
            .await
            .unwrap()
            .unwrap();
        while b_feed.recv().await.unwrap().seq < mine.seq {}
        assert!(b_here.try_recv().is_err());

        // A replica on another pod went silent a minute ago with a session open.
        let gone = HostRecord {
            id: "gone-replica".to_owned(),
            role: "control".to_owned(),
            address: None,
            capacity: 0,
            sessions: 1,
            free_mb: 0,
            version: "0".to_owned(),
            hostname: "pod-elsewhere".to_owned(),
            pid: 1,
            started_ms: now_ms() - 120_000,
            heartbeat_ms: now_ms() - 60_000,
            draining: false,
        };
        stores[0].upsert_host(&gone).await.unwrap();
        stores[0]
            .insert_live_session(&LiveSessionRecord {
                id: "orphan-session".to_owned(),
                tenant: approval.tenant.clone(),
                user_id: Some("u".to_owned()),
                conversation: Some("left-behind".to_owned()),
                gateway_pid: 1,
                opened_ms: now_ms() - 100_000,
                replica: Some(gone.id.clone()),
                ..Default::default()
            })
            .await
            .unwrap();
        // Within a heartbeat or two, one replica ends it on the record.
        let mut closed = until(&mut c_feed, "session_close", &mut Vec::new()).await;
        while !closed.body.contains("orphan-session") {
            closed = until(&mut c_feed, "session_close", &mut Vec::new()).await;
        }
        assert!(closed.body.contains("gateway gone"), "{}", closed.body);
        // Its row goes once its sessions are ended (the same look, a moment after
        // the close is on the record).
        let deadline = Instant::now() + Duration::from_secs(10);
        while stores[2]
            .hosts()
            .await
            .unwrap()
            .iter()
            .any(|h| h.id == gone.id)
        {
            assert!(Instant::now() < deadline, "the gone replica's row stayed");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Every replica looked again since: still ended once, and the live
        // replicas' rows are all there.
        tokio::time::sleep(airlock_gateway::HEARTBEAT * 2).await;
        let log = stores[1].audit_events(0, 10_000).await.unwrap();
        let ended = log
            .iter()
            .filter(|e| e.kind == "session_close" && e.body.contains("orphan-session"))
            .count();
        assert_eq!(ended, 1);
        assert_eq!(stores[0].hosts().await.unwrap().len(), 3);
        assert!(
            stores[0]
                .live_sessions()
                .await
                .unwrap()
                .iter()
                .all(|s| s.id != "orphan-session")
        );

        for replica in &replicas {
            replica.shutdown().await;
        }
        // Stopped replicas leave no rows behind.
        assert!(stores[0].hosts().await.unwrap().is_empty());
        assert!(stores[0].live_sessions().await.unwrap().is_empty());
        drop(replicas);
        for store in stores {
            store.close().await;
        }
    })
    .await;
}

// A worker shared by the replicas, on a unix socket of the test, keeping a session
// nobody holds for a minute; stops when `stop` is sent.
pub(crate) struct SharedWorker {
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

const WORKER_TOKEN: &str = "a-shared-worker-token";

impl SharedWorker {
    // Stops it, and waits until it has.
    async fn stop(self) {
        let _ = self.stop.send(());
        self.task.await.unwrap();
    }
}

pub(crate) fn shared_worker(h: &airlock_test_support::Harness) -> SharedWorker {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("worker.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let local =
        airlock_worker::LocalHost::new(h.browsers.clone()).with_spool(dir.path().join("spool"));
    let task = tokio::spawn(airlock_worker::remote::serve_sessions(
        listener,
        Arc::new(local),
        airlock_worker::Admission {
            token: zeroize::Zeroizing::new(WORKER_TOKEN.to_owned()),
            peer_uid: Some(nix::unistd::geteuid().as_raw()),
            detached_grace: Duration::from_secs(60),
            ..Default::default()
        },
        async move {
            let _ = stopped.await;
        },
    ));
    SharedWorker {
        path,
        _dir: dir,
        stop,
        task,
    }
}

async fn replica(
    h: &airlock_test_support::Harness,
    store: &Store,
    worker: &SharedWorker,
    caps: airlock_gateway::Caps,
) -> Arc<Gateway> {
    replica_with(
        worker,
        GatewayConfig {
            caps,
            ..config(h).store(store.clone())
        },
    )
    .await
}

// A replica with `config`, its sessions on `worker`.
pub(crate) async fn replica_with(worker: &SharedWorker, config: GatewayConfig) -> Arc<Gateway> {
    let connector = airlock_worker::SocketConnector {
        path: worker.path.clone(),
        token: zeroize::Zeroizing::new(WORKER_TOKEN.to_owned()),
        worker_uid: None,
    };
    let remote = airlock_worker::Remote::new(connector).await.unwrap();
    let host: airlock_worker::Host = airlock_worker::Fleet::new(vec![remote]).unwrap().into();
    Gateway::new(host, config)
}

fn acme(key: &str) -> airlock_gateway::Principal {
    airlock_gateway::Principal {
        tenant: "acme".to_owned(),
        role: airlock_core::Role::Act,
        key: Some(key.to_owned()),
    }
}

pub(crate) fn lease(user: &str, conversation: &str) -> airlock_gateway::LeaseRequest {
    airlock_gateway::LeaseRequest {
        user: user.to_owned(),
        conversation: conversation.to_owned(),
        ..Default::default()
    }
}

async fn page_of(agent: &airlock_gateway::AgentSession) -> String {
    agent
        .call(ToolCall::Read(airlock_gateway::Reading::Snapshot(
            Default::default(),
        )))
        .await
        .text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_replica_serves_a_leased_session_and_racing_leases_get_one_session_within_the_caps() {
    with_browser(|h| async move {
        let pg = Postgres::start();
        let url = pg.url();
        let worker = shared_worker(&h);
        let caps = airlock_gateway::Caps {
            total: Some(3),
            ..Default::default()
        };
        let mut stores = Vec::new();
        let mut replicas = Vec::new();
        for _ in 0..3 {
            let store = Store::open_postgres(&url).await.unwrap();
            replicas.push(replica(&h, &store, &worker, caps).await);
            stores.push(store);
        }

        // Leased on A and driven there; B and C lease the same conversation and get
        // that session, on the page A left it.
        let on_a = replicas[0]
            .lease(&acme("key_a"), lease("u1", "c1"))
            .await
            .unwrap();
        assert!(on_a.created);
        let id = on_a.info.id.to_string();
        let agent_a = replicas[0]
            .session_agent(&acme("key_a"), &id)
            .await
            .unwrap();
        let out = agent_a.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let on_b = replicas[1]
            .lease(&acme("key_b"), lease("u1", "c1"))
            .await
            .unwrap();
        assert!(!on_b.created);
        assert_eq!(on_b.info.id.to_string(), id);
        let agent_b = replicas[1]
            .session_agent(&acme("key_b"), &id)
            .await
            .unwrap();
        assert!(page_of(&agent_b).await.contains("Sign in"));
        // C reaches it by its id alone (the session URL of REST and /mcp/s/{id}).
        let agent_c = replicas[2]
            .session_agent(&acme("key_c"), &id)
            .await
            .unwrap();
        let out = agent_c.call(navigate(h.site.url("resolve.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(page_of(&agent_a).await.contains("Delete account"));
        assert!(replicas[2].session_info("acme", &id).await.is_ok());
        // An operator on A takes the page over: the agent is refused through B too,
        // and an operator on C cannot take it as well; handed back on A, B serves
        // the agent again and says the page may have changed.
        replicas[0]
            .operators()
            .take_over("acme", &id, "console:alice")
            .await
            .unwrap();
        let agent_b = replicas[1]
            .session_agent(&acme("key_b"), &id)
            .await
            .unwrap();
        let out = agent_b.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(
            out.error,
            Some(airlock_core::ErrorCode::SessionHeld),
            "{}",
            out.text
        );
        assert!(replicas[2].session_info("acme", &id).await.is_ok());
        let taken = replicas[2]
            .operators()
            .take_over("acme", &id, "console:carol")
            .await;
        assert!(
            matches!(&taken, Err(Error::NotController(m)) if m.contains("console:alice")),
            "{taken:?}"
        );
        replicas[0]
            .operators()
            .hand_back("acme", &id, "console:alice")
            .await
            .unwrap();
        let agent_b = replicas[1]
            .session_agent(&acme("key_b"), &id)
            .await
            .unwrap();
        let out = agent_b.call(navigate(h.site.url("resolve.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("handed it back"), "{}", out.text);

        // An operator on A types into a page B also serves: what they typed is a
        // secret only A knows how to hide, so B lets go of that session (saying
        // why) and A alone serves it.
        let typed = replicas[0]
            .lease(&acme("key_a"), lease("u5", "typed-into"))
            .await
            .unwrap()
            .info
            .id
            .to_string();
        let typer = replicas[0]
            .session_agent(&acme("key_a"), &typed)
            .await
            .unwrap();
        let out = typer.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let watcher = replicas[1]
            .session_agent(&acme("key_b"), &typed)
            .await
            .unwrap();
        assert!(page_of(&watcher).await.contains("Sign in"));
        let (x, y) = crate::leaks::operator::centre_of(&typer, "Username").await;
        let operators = replicas[0].operators();
        operators.take_over("acme", &typed, "op").await.unwrap();
        operators
            .operator_input("acme", &typed, "op", OperatorInput::Click { x, y }, None)
            .await
            .unwrap();
        operators
            .operator_input(
                "acme",
                &typed,
                "op",
                OperatorInput::Text(zeroize::Zeroizing::new("operator-typed-9f3".to_owned())),
                Some((x, y)),
            )
            .await
            .unwrap();
        operators.hand_back("acme", &typed, "op").await.unwrap();
        let refused = replicas[1].session_agent(&acme("key_b"), &typed).await;
        assert!(
            // Alive, but only on the replica that knows what the operator typed: it is
            // named (its id), and the session is not called ended.
            matches!(&refused, Err(Error::SessionElsewhere(m))
                if m.contains("knows values no vault holds") && m.contains(replicas[0].replica_id())),
            "{:?}",
            refused.err()
        );
        assert!(replicas[2].session_info("acme", &typed).await.is_err());
        let out = typer
            .call(ToolCall::Read(airlock_gateway::Reading::Snapshot(
                Default::default(),
            )))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(!out.text.contains("operator-typed-9f3"), "{}", out.text);
        replicas[0].end_session("acme", &typed).await.unwrap();
        drop((typer, watcher));

        // Another tenant's key finds nothing, on any replica.
        let beta = airlock_gateway::Principal {
            tenant: "beta".to_owned(),
            ..acme("key_beta")
        };
        assert!(replicas[1].session_agent(&beta, &id).await.is_err());

        // Twelve racing leases of one new conversation over the three replicas: one
        // session, created once.
        let racing: Vec<_> = (0..12)
            .map(|i| {
                let replica = replicas[i % 3].clone();
                tokio::spawn(async move {
                    replica
                        .lease(&acme(&format!("key_{i}")), lease("u2", "c2"))
                        .await
                        .map(|l| (l.info.id.to_string(), l.created))
                })
            })
            .collect();
        let mut got = Vec::new();
        for race in racing {
            got.push(race.await.unwrap().unwrap());
        }
        assert_eq!(
            got.iter().filter(|(_, created)| *created).count(),
            1,
            "{got:?}"
        );
        assert!(got.iter().all(|(id, _)| *id == got[0].0), "{got:?}");

        // The total cap (3) counts every replica's sessions: of six racing new
        // conversations, one gets the last place.
        let racing: Vec<_> = (0..6)
            .map(|i| {
                let replica = replicas[i % 3].clone();
                tokio::spawn(async move {
                    replica
                        .lease(&acme("key_x"), lease("u3", &format!("c{i}")))
                        .await
                })
            })
            .collect();
        let mut placed = 0;
        for race in racing {
            match race.await.unwrap() {
                Ok(_) => placed += 1,
                Err(Error::QuotaExceeded { scope, .. }) => assert_eq!(scope, "total"),
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(placed, 1);
        assert_eq!(stores[0].live_sessions().await.unwrap().len(), 3);

        // A stops: the sessions go on, served by B.
        replicas[0].shutdown().await;
        drop(agent_a);
        assert!(page_of(&agent_b).await.contains("Delete account"));

        // Ended through C: ended for B too, and on the record once.
        replicas[2].end_session("acme", &id).await.unwrap();
        let out = agent_b.call(navigate(h.site.url("login.html"))).await;
        assert!(out.error.is_some(), "{}", out.text);
        for replica in &replicas[1..] {
            replica.shutdown().await;
        }
        let log = stores[0].audit_events(0, 10_000).await.unwrap();
        let closes = log
            .iter()
            .filter(|e| e.kind == "session_close" && e.body.contains(&id))
            .count();
        assert_eq!(closes, 1, "{log:#?}");
        match replicas[1].audit_chain("acme").await.unwrap() {
            airlock_gateway::ChainStatus::Intact { .. } => {}
            broken => panic!("{broken:?}"),
        }
        drop((agent_b, agent_c, replicas));
        worker.stop().await;
        for store in stores {
            store.close().await;
        }
    })
    .await;
}

// An MCP session's agent lives at a home: when one replica forgets it (rmcp's idle
// keep-alive), its browser stays; another replica makes the agent again from the
// home with the same nonce and finds the browser on its page, and a download made
// through it is kept in the store, not on either replica's disk; ending the home
// ends the browser everywhere. An agent with no home closes its browser when it goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_homed_agent_keeps_its_browser_whichever_replica_serves_it() {
    with_browser(|h| async move {
        let pg = Postgres::start();
        let url = pg.url();
        let worker = shared_worker(&h);
        let (a, b) = tokio::join!(Store::open_postgres(&url), Store::open_postgres(&url));
        let stores = [a.unwrap(), b.unwrap()];
        let downloads = tempfile::tempdir().unwrap();
        let with_downloads = |store: &Store| GatewayConfig {
            download_dir: Some(downloads.path().to_owned()),
            ..config(&h).store(store.clone())
        };
        let on_a = replica_with(&worker, with_downloads(&stores[0])).await;
        let on_b = replica_with(&worker, with_downloads(&stores[1])).await;
        assert!(on_a.has_homes());

        let owner = acme("key_h");
        let home = airlock_gateway::mcp_home("an-mcp-session-id");
        let fence = airlock_gateway::PageFence::new();
        on_a.make_home(&home, &owner, &fence).await.unwrap();
        let agent = on_a.homed_agent(owner.clone(), Surface::Mcp, fence.clone(), &home);
        let out = agent.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(on_a.open_browser_sessions().await, 1);
        drop(agent);
        assert_eq!(
            on_a.open_browser_sessions().await,
            1,
            "a homed agent going from memory leaves its browser"
        );

        let found = on_b.find_home(&home).await.unwrap().expect("the home");
        assert_eq!(found.owner, owner.caller());
        assert_eq!(found.fence.nonce(), fence.nonce());
        let again = on_b.homed_agent(owner.clone(), Surface::Mcp, found.fence, &home);
        let page = page_of(&again).await;
        assert!(page.contains("Sign in"), "{page}");
        assert!(
            page.contains(&format!("<page {}>", fence.nonce())),
            "{page}"
        );

        let out = again.call(navigate(h.site.url("download.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let clicked = again
            .call(ToolCall::Interact(airlock_gateway::Interaction::Click {
                target: airlock_gateway::action::Target::Role {
                    role: "link".into(),
                    name: Some("Get report".into()),
                    index: None,
                },
                options: Default::default(),
            }))
            .await
            .text;
        let text = crate::until_reported(&again, clicked, "downloaded ").await;
        let saved_as = text
            .lines()
            .find_map(|l| l.strip_prefix("downloaded "))
            .and_then(|l| l.split(" as ").nth(1))
            .and_then(|l| l.split(' ').next())
            .unwrap_or_else(|| panic!("no download reported: {text}"))
            .to_owned();
        let kept = stores[0]
            .artifact(&airlock_gateway::download_artifact(&saved_as))
            .await
            .unwrap()
            .expect("kept in the store");
        assert!(!kept.is_empty());
        assert_eq!(
            std::fs::read_dir(downloads.path()).unwrap().count(),
            0,
            "on no replica's disk"
        );

        on_a.end_home(&home).await.unwrap();
        assert_eq!(
            stores[1].live_session_at_home("acme", &home).await.unwrap(),
            None
        );
        assert!(on_b.find_home(&home).await.unwrap().is_none());

        // No home: the browser goes with the agent.
        let before = on_a.open_browser_sessions().await;
        let plain = on_a.agent_session_as(owner.clone(), Surface::Mcp);
        let out = plain.call(navigate(h.site.url("login.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(on_a.open_browser_sessions().await, before + 1);
        drop(plain);
        assert_eq!(on_a.open_browser_sessions().await, before);

        drop(again);
        for replica in [&on_a, &on_b] {
            replica.shutdown().await;
        }
        drop((on_a, on_b));
        worker.stop().await;
        for store in stores {
            store.close().await;
        }
    })
    .await;
}

// A session that loaded a vault secret is served by another replica with the same
// secret, loaded there again: the agent types it by placeholder through that replica,
// and nothing that replica returns shows it in any form the page computes. Once the
// secret changes in the vault, a replica that did not hold the session refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_with_credentials_is_served_by_any_replica_until_its_secret_changes() {
    with_browser(|h| async move {
        const SECRET: &str = "s3cr/t+Pw9";
        let pg = Postgres::start();
        let url = pg.url();
        let worker = shared_worker(&h);
        let key = airlock_vault::MasterKey::generate().unwrap();
        let mut replicas = Vec::new();
        let mut vaults = Vec::new();
        for _ in 0..3 {
            let store = Store::open_postgres(&url).await.unwrap();
            let vault = Arc::new(
                airlock_vault::Vault::open(store.clone(), key.clone())
                    .await
                    .unwrap(),
            );
            vaults.push(vault.clone());
            replicas.push(
                replica_with(
                    &worker,
                    GatewayConfig {
                        credentials: airlock_gateway::CredentialSource {
                            vault: Some(vault),
                            tenant: "acme".into(),
                            role: airlock_core::Role::Operate,
                        },
                        ..config(&h).store(store)
                    },
                )
                .await,
            );
        }
        let login = |password: &str| {
            let mut fields = airlock_vault::Fields::default();
            fields.password = Some(password.to_owned());
            airlock_vault::Secret {
                tenant: "acme".into(),
                name: "login".into(),
                origins: vec![format!("http://127.0.0.1:{}", h.site.a.port())],
                fields,
            }
        };
        vaults[0].set(&login(SECRET)).await.unwrap();
        let operator = airlock_gateway::Principal {
            tenant: "acme".into(),
            role: airlock_core::Role::Operate,
            key: Some("key_op".into()),
        };
        let leased = replicas[0]
            .lease(
                &operator,
                airlock_gateway::LeaseRequest {
                    options: airlock_gateway::OpenOptions {
                        credentials: vec!["login".into()],
                        ..Default::default()
                    },
                    ..lease("u1", "with-credentials")
                },
            )
            .await
            .unwrap();
        let id = leased.info.id.to_string();

        let on_b = replicas[1].session_agent(&operator, &id).await.unwrap();
        let out = on_b.call(navigate(h.site.url("app/reflect.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let typed = on_b
            .call(ToolCall::Interact(airlock_gateway::Interaction::Type {
                target: airlock_gateway::action::Target::Role {
                    role: "textbox".into(),
                    name: Some("Anything".into()),
                    index: None,
                },
                text: "{{secret:login.password}}".into(),
                clear_first: true,
                submit: false,
            }))
            .await;
        assert_eq!(typed.error, None, "typed through B: {}", typed.text);
        let page = page_of(&on_b).await;
        assert!(page.contains("raw "), "the page reflected it: {page}");
        use base64::Engine as _;
        let forms = [
            SECRET.to_owned(),
            SECRET.replace('/', "%2F").replace('+', "%2B"),
            base64::engine::general_purpose::STANDARD.encode(format!("user:{SECRET}")),
        ];
        for text in [&typed.text, &page] {
            for form in &forms {
                assert!(!text.contains(form.as_str()), "`{form}` shown by B: {text}");
            }
        }

        // The secret changes: C, which never held the session, cannot hide what the
        // page still shows, so it refuses; B, which holds it, goes on.
        vaults[2].set(&login("an0ther-Pw")).await.unwrap();
        let refused = match replicas[2].session_agent(&operator, &id).await {
            Ok(agent) => page_of(&agent).await,
            Err(e) => e.to_string(),
        };
        assert!(refused.contains("changed"), "{refused}");
        assert!(!refused.contains(SECRET));
        let page = page_of(&on_b).await;
        assert!(!page.contains(SECRET), "{page}");

        drop(on_b);
        for replica in &replicas {
            replica.shutdown().await;
        }
        drop(replicas);
        worker.stop().await;
    })
    .await;
}

// A session's row carries what attaching to it takes; a connection with the worker's
// token but not that key reaches nothing, and what the worker refused (that attach,
// a wrong token) reaches the audit record through the control plane's heartbeat,
// with how many times and never the token tried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_refuses_an_attach_without_the_sessions_key_and_its_refusals_are_on_the_record() {
    with_browser(|h| async move {
        let worker = shared_worker(&h);
        let store = Store::open_in_memory().await.unwrap();
        let gateway = replica_with(&worker, config(&h).store(store.clone())).await;
        let mut feed = gateway.audit().feed();
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("resolve.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let row = store.live_sessions().await.unwrap().pop().unwrap();
        let (id, key) = (
            row.worker_session.clone().unwrap(),
            row.worker_key.clone().unwrap(),
        );
        assert_eq!(key.len(), 64, "32 random bytes, hex");

        const GUESS: &str = "a-guess-at-the-worker-token";
        let refused = airlock_worker::RemoteHost::connect_unix(&worker.path, GUESS, None).await;
        assert!(matches!(
            refused,
            Err(airlock_worker::ConnectError::Refused(_))
        ));
        let intruder = airlock_worker::RemoteHost::connect_unix(&worker.path, WORKER_TOKEN, None)
            .await
            .unwrap();
        for guess in [String::new(), id.clone(), "0".repeat(64)] {
            assert!(matches!(
                intruder
                    .attach(&id, &airlock_worker::AttachKey::from_stored(&guess))
                    .await,
                Err(airlock_browser::Error::SessionClosed)
            ));
        }
        // The key the row holds is what another replica attaches with.
        let replica = airlock_worker::RemoteHost::connect_unix(&worker.path, WORKER_TOKEN, None)
            .await
            .unwrap();
        let held = replica
            .attach(&id, &airlock_worker::AttachKey::from_stored(&key))
            .await
            .unwrap();
        held.release().await;

        let mut reasons = std::collections::BTreeMap::new();
        let mut seen = Vec::new();
        while reasons.len() < 2 {
            let event = until(&mut feed, "auth_failure", &mut seen).await;
            let body: serde_json::Value = serde_json::from_str(&event.body).unwrap();
            assert_eq!(body["surface"], "worker", "{body}");
            assert_eq!(body["client"], worker.path.display().to_string(), "{body}");
            assert!(!event.body.contains(GUESS) && !event.body.contains(&key));
            reasons.insert(
                body["reason"].as_str().unwrap().to_owned(),
                body["count"].as_u64().unwrap(),
            );
        }
        assert_eq!(
            reasons,
            [
                ("a connection without the worker's token".to_owned(), 1),
                ("an attach without the session's key".to_owned(), 3),
            ]
            .into()
        );
        drop((agent, intruder, replica));
        gateway.shutdown().await;
        worker.stop().await;
    })
    .await;
}

/// A call held for approval waits out a store outage: its polls fail while Postgres
/// is down, the call keeps waiting, and approved once the store is back, it runs.
/// (It used to fail at the first failed poll, leaving an approval that answered
/// `approved` to whoever decided it, with nothing run.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_call_waits_out_a_store_outage_and_runs_once_approved() {
    with_browser(|h| async move {
        let mut pg = Postgres::start();
        let store = Store::open_postgres(&pg.url()).await.unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                rules: Rules::from_config(&ApprovalsConfig::default()).unwrap(),
                approval_timeout: Duration::from_secs(60),
                ..config(&h).store(store.clone())
            },
        );
        let agent = Arc::new(gateway.agent_session());
        let out = agent.call(navigate(h.site.url("resolve.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        let call = {
            let agent = agent.clone();
            tokio::spawn(async move { agent.call(click_button("Delete account")).await })
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let approval = loop {
            let pending = store
                .approvals(None, Some(ApprovalStatus::Pending))
                .await
                .unwrap();
            if let Some(approval) = pending.into_iter().next() {
                break approval;
            }
            assert!(Instant::now() < deadline, "no approval within 20 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        // The call waits once its request is on the record too (the approval row is
        // written first; a call whose request cannot be recorded is not run).
        loop {
            let events = store.audit_events(0, 1_000).await.unwrap();
            if events
                .iter()
                .any(|e| e.body.contains("approval_requested") && e.body.contains(&approval.id))
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no approval_requested within 20 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        pg.stop();
        // A read through the same pool fails once the pool gives up connecting; the
        // held call's own polls have failed by then too.
        assert!(store.approval(&approval.id).await.is_err());
        assert!(
            !call.is_finished(),
            "the held call gave up during the outage"
        );
        pg.restart();
        let decided = loop {
            match gateway
                .approvals()
                .decide(&approval.tenant, &approval.id, true, "test:carol", None)
                .await
            {
                Ok(decided) => break decided,
                // The pool reconnects on its next use.
                Err(_) if Instant::now() < deadline + Duration::from_secs(30) => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("the store did not come back: {e}"),
            }
        };
        assert_eq!(decided, Decision::Recorded);
        let out: ToolOutput = call.await.unwrap();
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("deleted 1"), "{}", out.text);
    })
    .await;
}
