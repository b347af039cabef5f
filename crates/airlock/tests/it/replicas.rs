//! Airlock as a fleet, all real processes on loopback: three `airlock serve`
//! replicas and three `airlock worker --listen` workers over one real Postgres. A
//! session leased on one replica is served by the others, before and after that
//! replica is killed; an MCP session whose requests alternate replicas keeps its
//! browser; a call held on A is decided on C and runs within a second; fifty racing
//! creates over the three give one session per conversation within the global cap;
//! a killed worker's sessions end on every replica (`clients/replicas.py` drives the
//! MCP parts); a replica is ready only while its store and a worker answer; workers
//! may register themselves; the audit log verifies after all of it.

use std::time::Duration;

use airlock_test_support::FixtureSite;
use tokio::process::Command;

use crate::fleet::{Fleet, MAX_TOTAL, OWN, WORKER_TOKEN, stop};
use crate::mcp_clients::{python, root};

async fn get(url: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let request = format!("GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

async fn client(args: &[&str]) -> String {
    let out = Command::new(python())
        .arg(root().join("crates/airlock/tests/clients/replicas.py"))
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(240), out)
        .await
        .expect("the replicas client finished within 4 minutes")
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "replicas client failed:\n{stdout}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_and_three_workers_over_one_postgres_serve_any_session_anywhere() {
    let site = FixtureSite::start().await;
    let base = format!("http://127.0.0.1:{}", site.a.port());
    let fleet = Fleet::new();
    fleet.cli(&["tenant", "create", "acme"]).await;
    let key = fleet.key("act").await;
    let (worker_1, at_1) = fleet.worker("127.0.0.1:0").await;
    let (worker_2, at_2) = fleet.worker("127.0.0.1:0").await;
    let (worker_3, at_3) = fleet.worker("127.0.0.1:0").await;
    let config = fleet.config(&site, &[&at_1, &at_2, &at_3]);
    let (a, a_root) = fleet.replica("a", &config).await;
    let (b, b_root) = fleet.replica("b", &config).await;
    let (c, c_root) = fleet.replica("c", &config).await;
    for root in [&a_root, &b_root, &c_root] {
        assert_eq!(get(&format!("{root}/readyz")).await.0, 200);
    }

    let out = client(&["lease", &a_root, &b_root, &c_root, &base, &key]).await;
    let id = out
        .lines()
        .find_map(|l| l.strip_prefix("session "))
        .expect("the client printed the session")
        .to_owned();

    // MCP sessions behind a balancer that sends each request to the next replica.
    let other = fleet.key("act").await;
    client(&["sessions", &a_root, &b_root, &c_root, &base, &key, &other]).await;
    let store = airlock_store::Store::open_postgres(&fleet.pg.url())
        .await
        .unwrap();
    let homed: Vec<_> = store
        .live_sessions()
        .await
        .unwrap()
        .into_iter()
        .filter(|l| l.home.is_some())
        .collect();
    assert!(
        homed.is_empty(),
        "the sessions' browsers ended with them: {homed:?}"
    );

    // A call held on A is decided through C (by an admin of its tenant) and runs
    // within a second.
    let approver = fleet.key("admin").await;
    client(&["approval", &a_root, &c_root, &base, &key, &approver]).await;

    // Fifty racing creates over A, B and C, two for each of 25 users' conversations:
    // one session per conversation, and never more live sessions than the global cap.
    let before = store.live_sessions().await.unwrap().len();
    let roots = [a_root.clone(), b_root.clone(), c_root.clone()];
    let racing: Vec<_> = (0..50)
        .map(|i| {
            let (root, key) = (roots[i % 3].clone(), key.clone());
            tokio::spawn(async move {
                let body = format!(
                    r#"{{"user_id":"racer{0}","conversation_id":"c{0}"}}"#,
                    i / 2
                );
                crate::leasing::http_post(&format!("{root}/api/v1/sessions"), &key, &body).await
            })
        })
        .collect();
    let mut by_conversation = std::collections::HashMap::<usize, Vec<String>>::new();
    let mut created = 0;
    for (i, race) in racing.into_iter().enumerate() {
        let (status, body) = race.await.unwrap();
        match status {
            201 | 200 => {
                created += usize::from(status == 201);
                let leased: serde_json::Value = serde_json::from_str(&body).unwrap();
                by_conversation
                    .entry(i / 2)
                    .or_default()
                    .push(leased["session_id"].as_str().unwrap().to_owned());
            }
            429 => assert!(body.contains("quota_exceeded"), "{body}"),
            other => panic!("{other}: {body}"),
        }
    }
    let live = store.live_sessions().await.unwrap();
    assert_eq!(live.len(), MAX_TOTAL, "the cap is filled, not passed");
    assert_eq!(created, MAX_TOTAL - before);
    for ids in by_conversation.values() {
        assert!(
            ids.windows(2).all(|w| w[0] == w[1]),
            "one session a conversation: {ids:?}"
        );
    }
    for ids in by_conversation.values() {
        let (status, _, body) = request(
            "DELETE",
            &format!("{b_root}/api/v1/sessions/{}", ids[0]),
            &[("Authorization", &format!("Bearer {key}"))],
            "",
        )
        .await;
        assert!(status == 204 || status == 404, "{status}: {body}");
    }

    // A is killed: only its calls in flight are lost; B and C serve the session.
    let mut a = a;
    a.kill().await.unwrap();
    a.wait().await.unwrap();
    client(&["after-kill", &b_root, &c_root, &base, &key, &id]).await;

    // A worker is killed: within the heartbeat bound its sessions end on the
    // record, once, even where no replica holds them (the one that leased this
    // one has stopped, releasing it); sessions open on the other worker.
    let (status, body) = crate::leasing::http_post(
        &format!("{b_root}/api/v1/sessions"),
        &key,
        r#"{"user_id":"u3","conversation_id":"on-a-worker-that-dies"}"#,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let doomed: serde_json::Value = serde_json::from_str(&body).unwrap();
    let doomed = doomed["session_id"].as_str().unwrap().to_owned();
    // Every replica that reaches a worker writes its row: what it holds, its room.
    let mut workers: Vec<_> = store
        .hosts()
        .await
        .unwrap()
        .into_iter()
        .filter(|h| h.role == "worker")
        .map(|h| (h.address.unwrap_or_default(), h.draining))
        .collect();
    workers.sort();
    let mut listed = vec![
        (at_1.clone(), false),
        (at_2.clone(), false),
        (at_3.clone(), false),
    ];
    listed.sort();
    assert_eq!(workers, listed);
    let row = store.live_session(&doomed).await.unwrap().expect("its row");
    let on = row.worker.expect("it runs on a listed worker");
    stop(b).await;
    assert!(
        store.live_session(&doomed).await.unwrap().is_some(),
        "released at B's stop, not closed"
    );
    let (mut dead, alive) = if on == at_1 {
        (worker_1, vec![worker_2, worker_3])
    } else if on == at_2 {
        (worker_2, vec![worker_1, worker_3])
    } else {
        (worker_3, vec![worker_1, worker_2])
    };
    dead.kill().await.unwrap();
    dead.wait().await.unwrap();
    let deadline =
        tokio::time::Instant::now() + airlock_gateway::GONE_AFTER + Duration::from_secs(20);
    loop {
        if store.live_session(&doomed).await.unwrap().is_none() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the dead worker's session was not ended"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, _, body) = request(
        "GET",
        &format!("{c_root}/api/v1/sessions/{doomed}"),
        &[("Authorization", &format!("Bearer {key}"))],
        "",
    )
    .await;
    assert_eq!(status, 404, "gone for C too: {body}");
    let (status, body) = crate::leasing::http_post(
        &format!("{c_root}/api/v1/sessions"),
        &key,
        r#"{"user_id":"u4","conversation_id":"after-the-worker-died"}"#,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    store.close().await;

    stop(c).await;
    for worker in alive {
        stop(worker).await;
    }
    // The log is one chain under each replica's signed checkpoints: every replica
    // signs over the whole shared log with the one key ([audit] key_file), so any
    // machine checks each replica's checkpoints with that key alone.
    for replica in ["b", "c"] {
        let checkpoints = fleet.tmp.path().join(replica).join("audit.checkpoints");
        let verified = fleet
            .cli_in(
                "an-auditors-machine",
                &config,
                &[
                    "audit",
                    "verify",
                    "--checkpoints",
                    checkpoints.to_str().unwrap(),
                ],
            )
            .await;
        assert!(
            verified.starts_with("ok: ") && !verified.contains(" 0 signed checkpoints"),
            "{replica}: {verified}"
        );
    }
    assert!(
        !fleet.tmp.path().join("b").join("audit.key").exists(),
        "no key of its own"
    );
    let events = fleet.cli(&["audit", "export"]).await;
    let closes = |id: &str| {
        events
            .lines()
            .filter(|l| l.contains("\"kind\":\"session_close\"") && l.contains(id))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(closes(&id).len(), 1, "{events}");
    let doomed_closes = closes(&doomed);
    assert_eq!(doomed_closes.len(), 1, "{events}");
    assert!(
        doomed_closes[0].contains("browser host gone"),
        "{}",
        doomed_closes[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_is_ready_while_its_store_and_a_worker_answer_and_serves_workers_that_come_later()
{
    let site = FixtureSite::start().await;
    let fleet = Fleet::new();
    fleet.cli(&["tenant", "create", "acme"]).await;
    let key = fleet.key("act").await;
    // A port for a worker not started yet.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let config = fleet.config(&site, &[&address]);
    let (replica, root) = fleet.replica("r", &config).await;
    assert_eq!(get(&format!("{root}/healthz")).await.0, 200);
    let (status, body) = get(&format!("{root}/readyz")).await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("none of the 1 browser workers answers"),
        "{body}"
    );

    let (worker, _) = fleet.worker(&address).await;
    assert_eq!(get(&format!("{root}/readyz")).await.0, 200);
    let leased = crate::leasing::http_post(
        &format!("{root}/api/v1/sessions"),
        &key,
        r#"{"user_id":"u","conversation_id":"late-worker"}"#,
    )
    .await;
    assert_eq!(leased.0, 201, "{}", leased.1);

    // The store goes: not ready, said at once, never the URL.
    drop(fleet.pg);
    let (status, body) = get(&format!("{root}/readyz")).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("the store does not answer"), "{body}");
    let mut replica = replica;
    replica.kill().await.unwrap();
    stop(worker).await;
}

// One HTTP/1.1 request over a plain socket: status, headers (lower-cased names)
// and body.
pub(crate) async fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let mut head = format!(
        "{method} /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    stream
        .write_all(format!("{head}\r\n{body}").as_bytes())
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_login_made_on_one_replica_is_signed_in_on_every_other() {
    let site = FixtureSite::start().await;
    let fleet = Fleet::new();
    fleet.cli(&["tenant", "create", "acme"]).await;
    let admin = fleet.key("admin").await;
    // No worker is needed to sign in: one that never answers is listed.
    let config = fleet.config(&site, &["127.0.0.1:9"]);
    let (a, a_root) = fleet.replica("a", &config).await;
    let (b, b_root) = fleet.replica("b", &config).await;

    let form = format!("key={admin}");
    let (status, headers, body) = request(
        "POST",
        &format!("{a_root}/console/sign-in"),
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &form,
    )
    .await;
    assert_eq!(status, 303, "{body}");
    let cookie = headers
        .iter()
        .find(|(n, _)| n == "set-cookie")
        .map(|(_, v)| v.split(';').next().unwrap().to_owned())
        .expect("a login cookie");

    // B knows the login A made, and its forms carry the same CSRF token.
    let (status, _, page) = request(
        "GET",
        &format!("{b_root}/console/sessions"),
        &[("Cookie", &cookie)],
        "",
    )
    .await;
    assert_eq!(status, 200, "{page}");
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a CSRF token in the page")
        .to_owned();
    let (status, _, _) = request(
        "GET",
        &format!("{a_root}/console/sessions"),
        &[("Cookie", &cookie)],
        "",
    )
    .await;
    assert_eq!(status, 200);
    // Signed out on B: signed out on A too.
    let (status, _, body) = request(
        "POST",
        &format!("{b_root}/console/sign-out"),
        &[
            ("Cookie", &cookie),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &format!("csrf={csrf}"),
    )
    .await;
    assert_eq!(status, 303, "{body}");
    let (status, headers, _) = request(
        "GET",
        &format!("{a_root}/console/sessions"),
        &[("Cookie", &cookie)],
        "",
    )
    .await;
    assert_eq!(status, 303);
    assert!(
        headers
            .iter()
            .any(|(n, v)| n == "location" && v == "/console/sign-in")
    );
    stop(a).await;
    stop(b).await;
}

// Polls `url` until it answers `status`, within `within`.
async fn until_status(url: &str, status: u16, within: Duration) {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if get(url).await.0 == status {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{url} did not answer {status} within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_registers_through_one_replica_serves_every_replica() {
    let site = FixtureSite::start().await;
    let fleet = Fleet::new();
    fleet.cli(&["tenant", "create", "acme"]).await;
    let key = fleet.key("act").await;
    let config = fleet.registering_config(&site, true);
    let (a, a_root) = fleet.replica("a", &config).await;
    let (b, b_root) = fleet.replica("b", &config).await;
    let (status, body) = get(&format!("{b_root}/readyz")).await;
    assert_eq!(status, 503, "no worker has registered yet: {body}");

    // Only the worker token registers a worker.
    let (status, body) = crate::leasing::http_post(
        &format!("{a_root}/api/v1/workers"),
        "not-the-worker-token-0123456789abcdef",
        &format!(r#"{{"address":"127.0.0.1:9","token":"{OWN}"}}"#),
    )
    .await;
    assert_eq!(status, 401, "{body}");
    let (status, body) = crate::leasing::http_post(
        &format!("{a_root}/api/v1/workers"),
        WORKER_TOKEN,
        &format!(r#"{{"address":"not an address","token":"{OWN}"}}"#),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    // Nor at an address no worker may be at, whatever the token: nothing is
    // learned and nothing dialled.
    for address in ["169.254.169.254:443", "[fe80::1]:443", "0.0.0.0:7443"] {
        let (status, body) = crate::leasing::http_post(
            &format!("{a_root}/api/v1/workers"),
            WORKER_TOKEN,
            &format!(r#"{{"address":"{address}","token":"{OWN}"}}"#),
        )
        .await;
        assert_eq!(status, 400, "{address}: {body}");
        assert!(body.contains("never a worker's address"), "{body}");
    }
    // Loopback only with the line that allows it: a replica without it refuses the
    // registration the others take below.
    let (c, c_root) = fleet
        .replica("c", &fleet.registering_config(&site, false))
        .await;
    let (status, body) = crate::leasing::http_post(
        &format!("{c_root}/api/v1/workers"),
        WORKER_TOKEN,
        &format!(r#"{{"address":"127.0.0.1:9","token":"{OWN}"}}"#),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("allow_addresses"), "{body}");
    stop(c).await;

    // A worker registers through A; B learns of it from the store.
    let (worker, at) = fleet
        .worker_with("127.0.0.1:0", &["--register", &a_root])
        .await;
    until_status(&format!("{b_root}/readyz"), 200, Duration::from_secs(30)).await;
    let (status, body) = crate::leasing::http_post(
        &format!("{b_root}/api/v1/sessions"),
        &key,
        r#"{"user_id":"u1","conversation_id":"on-a-registered-worker"}"#,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let leased: serde_json::Value = serde_json::from_str(&body).unwrap();
    let id = leased["session_id"].as_str().unwrap().to_owned();
    let store = airlock_store::Store::open_postgres(&fleet.pg.url())
        .await
        .unwrap();
    let row = store.live_session(&id).await.unwrap().expect("its row");
    assert_eq!(row.worker.as_deref(), Some(at.as_str()));
    let bearer = format!("Bearer {key}");
    let (status, _, body) = request(
        "GET",
        &format!("{a_root}/api/v1/sessions/{id}"),
        &[("Authorization", &bearer)],
        "",
    )
    .await;
    assert_eq!(status, 200, "A serves it: {body}");

    // The worker takes only the credential it registered with: the deployment's
    // token, which every worker holds, opens no channel to it.
    let tls = airlock_worker::tls::client_config(&fleet.certs.0).unwrap();
    let Err(refused) =
        airlock_worker::RemoteHost::connect_tls(&at, "localhost", tls, WORKER_TOKEN).await
    else {
        panic!("the deployment's token is taken by a registered worker");
    };
    assert!(refused.to_string().contains("token"), "{refused}");
    // And its address is not taken by another credential while it registers.
    let (status, body) = crate::leasing::http_post(
        &format!("{b_root}/api/v1/workers"),
        WORKER_TOKEN,
        &format!(r#"{{"address":"{at}","token":"{OWN}"}}"#),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("another worker holds"), "{body}");
    let (status, _, body) = request(
        "GET",
        &format!("{a_root}/api/v1/sessions/{id}"),
        &[("Authorization", &bearer)],
        "",
    )
    .await;
    assert_eq!(status, 200, "the session is still served: {body}");

    // The worker goes: its session ends on the record, and no replica is ready.
    let mut worker = worker;
    worker.kill().await.unwrap();
    worker.wait().await.unwrap();
    let deadline =
        tokio::time::Instant::now() + airlock_gateway::GONE_AFTER + Duration::from_secs(20);
    while store.live_session(&id).await.unwrap().is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the gone worker's session was not ended"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    until_status(&format!("{a_root}/readyz"), 503, Duration::from_secs(10)).await;
    // Guessing the token is limited per client address, as for any bearer token
    // (then every authenticated request from there waits), and on the record (never
    // the token tried).
    let mut statuses = Vec::new();
    for _ in 0..11 {
        let (status, _) = crate::leasing::http_post(
            &format!("{b_root}/api/v1/workers"),
            "a-guess-at-the-worker-token-0123456789",
            &format!(r#"{{"address":"127.0.0.1:9","token":"{OWN}"}}"#),
        )
        .await;
        statuses.push(status);
    }
    assert_eq!(statuses[..10], [401; 10], "{statuses:?}");
    assert_eq!(statuses[10], 429, "{statuses:?}");
    // Each failure is recorded off the response's path: wait for the record.
    let recorded = |events: &[airlock_store::AuditRecord]| {
        events
            .iter()
            .filter(|e| e.kind == "auth_failure" && e.body.contains("\"surface\":\"workers\""))
            .count()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let events = store.audit_events(0, 10_000).await.unwrap();
        // The guesses, the first wrong token and the claim of a held address.
        if recorded(&events) == 12 {
            let text: String = events.iter().map(|e| e.body.as_str()).collect();
            assert!(!text.contains("a-guess-at-the-worker-token"));
            assert!(!text.contains(WORKER_TOKEN));
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} of 12 failures recorded",
            recorded(&events)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    store.close().await;
    stop(a).await;
    stop(b).await;
}

/// A store outage locks no valid caller out: while Postgres is down a valid key gets
/// `503 store_unavailable` with `Retry-After` (never 401, never counted as a failed
/// login), so once it is back the same key and address are served at once, with no
/// `429` from the failure limiter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_outage_answers_503_and_locks_no_valid_caller_out() {
    let site = FixtureSite::start().await;
    let mut fleet = Fleet::new();
    fleet.cli(&["tenant", "create", "acme"]).await;
    let key = fleet.key("act").await;
    let (worker, at) = fleet.worker("127.0.0.1:0").await;
    let config = fleet.config(&site, &[&at]);
    // A service's JWT too, whose tenant the store must confirm.
    let secret = "jwt-secret-0123456789abcdef-0123456789";
    let mut toml = std::fs::read_to_string(&config).unwrap();
    toml.push_str(&format!(
        "[server.jwt]\nissuer = \"https://backend.test\"\naudience = \"airlock\"\nhs256_secret = \"{secret}\"\n"
    ));
    std::fs::write(&config, toml).unwrap();
    let (mut replica, root) = fleet.replica("r", &config).await;
    let sessions = format!("{root}/api/v1/sessions");
    let bearer = format!("Bearer {key}");
    let with_key = [("Authorization", bearer.as_str())];
    assert_eq!(request("GET", &sessions, &with_key, "").await.0, 200);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = crate::leasing::jwt(
        secret,
        &serde_json::json!({"iss": "https://backend.test", "aud": "airlock", "sub": "svc",
            "exp": now + 600, "role": "act", "tenant": "acme"}),
    );
    let signed = format!("Bearer {token}");
    let with_jwt = [("Authorization", signed.as_str())];
    assert_eq!(request("GET", &sessions, &with_jwt, "").await.0, 200);

    fleet.pg.stop();
    // More than the failure limiter lets through, had they counted; together (each
    // waits out the pool's connect timeout).
    let tries: Vec<_> = (0..15)
        .map(|_| {
            let (sessions, bearer) = (sessions.clone(), bearer.clone());
            tokio::spawn(async move {
                request("GET", &sessions, &[("Authorization", bearer.as_str())], "").await
            })
        })
        .collect();
    for tried in tries {
        let (status, headers, body) = tried.await.unwrap();
        assert_eq!(status, 503, "{body}");
        assert!(body.contains("store_unavailable"), "{body}");
        assert!(
            headers.iter().any(|(n, v)| n == "retry-after" && v == "5"),
            "{headers:?}"
        );
    }
    // The JWT's signature checks out without the store, its tenant does not.
    let (status, _, body) = request("GET", &sessions, &with_jwt, "").await;
    assert_eq!(status, 503, "{body}");

    fleet.pg.restart();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        let (status, _, body) = request("GET", &sessions, &with_key, "").await;
        assert_ne!(status, 429, "locked out after the outage: {body}");
        assert_ne!(status, 401, "{body}");
        if status == 200 || tokio::time::Instant::now() >= deadline {
            break status;
        }
        // The pool reconnects on the next use; a few tries at most.
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status, 200);
    assert_eq!(request("GET", &sessions, &with_jwt, "").await.0, 200);
    replica.kill().await.unwrap();
    stop(worker).await;
}

/// A replica served as a role that owns nothing (`[store] owner_url` migrates and
/// grants): it serves; and a session whose opening cannot be put on the audit record
/// (the serving role's INSERT taken away meanwhile) is not handed out: `503
/// store_unavailable`, nothing left open, and once the record takes writes again the
/// next lease is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_opening_is_not_on_the_record_is_not_handed_out() {
    let site = FixtureSite::start().await;
    let fleet = Fleet::new();
    fleet.cli(&["tenant", "create", "acme"]).await;
    let key = fleet.key("act").await;
    let owner = fleet.pg.url();
    let admin = sqlx::PgPool::connect(&owner).await.unwrap();
    sqlx::query("CREATE ROLE serving LOGIN")
        .execute(&admin)
        .await
        .unwrap();
    let serving = owner.replacen(
        &format!("{}@", airlock_test_support::PG_USER),
        "serving@",
        1,
    );
    let (worker, at) = fleet.worker("127.0.0.1:0").await;
    let config = fleet.config(&site, &[&at]);
    let (mut replica, root) = fleet
        .replica_with(
            "r",
            &config,
            &[
                ("AIRLOCK_DATABASE_URL", serving.as_str()),
                ("AIRLOCK_DATABASE_OWNER_URL", owner.as_str()),
            ],
        )
        .await;
    let sessions = format!("{root}/api/v1/sessions");
    let lease = |conversation: &str| {
        let (sessions, key) = (sessions.clone(), key.clone());
        let body = format!(r#"{{"user_id":"u","conversation_id":"{conversation}"}}"#);
        async move { crate::leasing::http_post(&sessions, &key, &body).await }
    };
    let (status, body) = lease("first").await;
    assert_eq!(status, 201, "{body}");

    sqlx::query("REVOKE INSERT ON audit_events FROM serving")
        .execute(&admin)
        .await
        .unwrap();
    let (status, body) = lease("unrecorded").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("store_unavailable"), "{body}");
    let store = airlock_store::Store::open_postgres(&owner).await.unwrap();
    let live: Vec<_> = store
        .live_sessions()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.conversation)
        .collect();
    assert_eq!(live, vec![Some("first".to_owned())], "nothing else is open");

    sqlx::query("GRANT INSERT ON audit_events TO serving")
        .execute(&admin)
        .await
        .unwrap();
    let (status, body) = lease("recorded").await;
    assert_eq!(status, 201, "{body}");
    replica.kill().await.unwrap();
    stop(worker).await;
}
