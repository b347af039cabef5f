//! The worker's channel, over a real unix socket: who it admits, what it refuses,
//! and what it leaves behind when the control plane goes.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use airlock_policy::Policy;
use airlock_test_support::{chromium_processes_under, with_browser};
use airlock_worker::{
    Admission, AttachKey, ConnectError, LocalHost, MAX_MESSAGE, OpenSpec, PROTOCOL, RemoteHost,
    SecretSet,
};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zeroize::Zeroizing;

mod signing;

const TOKEN: &str = "the-deployment-token";

fn my_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

// A worker on a fresh socket, admitting `peer_uid`; stops when the guard drops.
struct Served {
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Served {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.task.take().unwrap().await.unwrap();
    }
}

fn serve(h: &airlock_test_support::Harness, peer_uid: Option<u32>) -> Served {
    serve_keeping(h, peer_uid, Duration::ZERO)
}

// `serve`, keeping a session no connection holds for `detached_grace`.
fn serve_keeping(
    h: &airlock_test_support::Harness,
    peer_uid: Option<u32>,
    detached_grace: Duration,
) -> Served {
    serve_on(
        h,
        Admission {
            peer_uid,
            detached_grace,
            ..Admission::default()
        },
    )
}

// A worker on a fresh socket on `terms` (its token is the test's).
fn serve_on(h: &airlock_test_support::Harness, terms: Admission) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("worker.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(airlock_worker::remote::serve_sessions(
        listener,
        Arc::new(LocalHost::new(h.browsers.clone())),
        Admission {
            token: Zeroizing::new(TOKEN.to_owned()),
            ..terms
        },
        async move {
            let _ = stopped.await;
        },
    ));
    Served {
        path,
        _dir: dir,
        stop: Some(stop),
        task: Some(task),
    }
}

// A connection to `served` and a session opened on it.
async fn open(
    served: &Served,
    isolation: Option<airlock_config::Isolation>,
    policy: Policy,
) -> (RemoteHost, airlock_worker::RemoteSession) {
    let host = RemoteHost::connect_unix(&served.path, TOKEN, Some(my_uid()))
        .await
        .unwrap();
    let session = host
        .open(OpenSpec {
            isolation,
            policy,
            injection: None,
            secrets: SecretSet::default(),
            effects: Default::default(),
            signing: None,
        })
        .await
        .unwrap();
    (host, session)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_right_token_and_version_are_admitted_and_anything_else_is_told_why() {
    with_browser(|h| async move {
        let served = serve(&h, Some(my_uid()));
        let host = RemoteHost::connect_unix(&served.path, TOKEN, Some(my_uid()))
            .await
            .expect("the right token is admitted");
        assert_eq!(host.about().protocol, PROTOCOL);
        assert_eq!(host.about().uid, my_uid());

        let wrong = RemoteHost::connect_unix(&served.path, "not-the-token", None).await;
        match wrong {
            Err(ConnectError::Refused(why)) => assert!(why.contains("token"), "{why}"),
            other => panic!("a wrong token must be refused: {:?}", other.map(|_| ())),
        }
        // The worker's reply does not echo the token it was given.
        let wrong = RemoteHost::connect_unix(&served.path, "not-the-token", None)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            !wrong.contains("not-the-token") && !wrong.contains(TOKEN),
            "{wrong}"
        );

        // An older control plane: its hello names another protocol version.
        let stream = tokio::net::UnixStream::connect(&served.path).await.unwrap();
        let mut framed = tokio_util::codec::LengthDelimitedCodec::builder().new_framed(stream);
        #[derive(serde::Serialize)]
        struct Hello<'a> {
            protocol: u32,
            token: &'a str,
        }
        let hello = rmp_serde::to_vec_named(&Hello {
            protocol: PROTOCOL + 1,
            token: TOKEN,
        })
        .unwrap();
        framed.send(bytes::Bytes::from(hello)).await.unwrap();
        let answer = framed.next().await.unwrap().unwrap();
        let answer: serde_json::Value = rmp_serde::from_slice(&answer).unwrap();
        let why = answer["Refused"].as_str().unwrap_or_default().to_owned();
        assert!(
            why.contains("protocol") && why.contains("same Airlock version"),
            "{answer}"
        );
        assert!(
            framed.next().await.is_none(),
            "the connection ends after the refusal"
        );

        // A uid the worker does not expect: the connection is cut before any word.
        let foreign = serve(&h, Some(my_uid() + 1));
        match RemoteHost::connect_unix(&foreign.path, TOKEN, None).await {
            Err(ConnectError::Handshake(_)) => {}
            other => panic!("a foreign uid must be refused: {:?}", other.map(|_| ())),
        }
        // And the control plane refuses a worker of another uid than configured.
        match RemoteHost::connect_unix(&served.path, TOKEN, Some(my_uid() + 1)).await {
            Err(ConnectError::WrongUid { found, .. }) => assert_eq!(found, Some(my_uid())),
            other => panic!(
                "a worker of another uid must be refused: {:?}",
                other.map(|_| ())
            ),
        }
        foreign.stop().await;
        served.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_message_ends_the_connection_before_it_is_read() {
    with_browser(|h| async move {
        let served = serve(&h, Some(my_uid()));
        let mut stream = tokio::net::UnixStream::connect(&served.path).await.unwrap();
        // A length prefix one byte over the bound, then a little of the body: the
        // worker must not wait for (or buffer) the rest.
        let length = u32::try_from(MAX_MESSAGE + 1).unwrap();
        stream.write_all(&length.to_be_bytes()).await.unwrap();
        stream.write_all(&[0u8; 1024]).await.unwrap();
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest))
            .await
            .expect("the worker closes the connection at once");
        assert!(
            read.is_err() || rest.is_empty(),
            "nothing is answered: {rest:?}"
        );
        served.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_control_plane_that_goes_away_leaves_no_browser_running() {
    with_browser(|h| async move {
        let served = serve(&h, Some(my_uid()));
        let (host, session) = open(
            &served,
            Some(airlock_config::Isolation::Process),
            Policy::deny_all(),
        )
        .await;
        let pid = session.facts().browser_pid;
        assert!(
            chromium_processes_under(h.profile_parent()).contains(&pid),
            "its Chromium runs"
        );
        // The control plane dies: its connection closes without a word.
        die(host, session);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while chromium_processes_under(h.profile_parent()).contains(&pid) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the worker closed the session of a control plane that went away"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        served.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_the_gateway_stops_waiting_for_is_cancelled_in_the_worker() {
    with_browser(|h| async move {
        let served = serve(&h, Some(my_uid()));
        let policy = h.site.policy();
        let (_host, session) = open(&served, None, policy).await;
        let navigate = airlock_worker::Call::Navigate {
            url: h.site.url("login.html"),
            wait_until: airlock_browser::WaitUntil::Load,
        };
        session.call(navigate, None).await.unwrap();
        // A wait of 20 s holds the page; the gateway gives up on it after 300 ms.
        let waiting = session.call(
            airlock_worker::Call::WaitFor {
                condition: airlock_browser::WaitCondition::Text("never on this page".to_owned()),
                timeout: Some(Duration::from_secs(20)),
            },
            None,
        );
        assert!(
            tokio::time::timeout(Duration::from_millis(300), waiting)
                .await
                .is_err()
        );
        // The worker stopped it: the next action does not queue behind it.
        let click = airlock_worker::Call::Click {
            target: airlock_browser::Target::Role {
                role: "checkbox".to_owned(),
                name: Some("Remember me".to_owned()),
                index: None,
            },
            options: airlock_browser::ClickOptions::default(),
        };
        let clicked = tokio::time::timeout(Duration::from_secs(5), session.call(click, None))
            .await
            .expect("the abandoned wait was cancelled in the worker, not left holding the page");
        assert!(clicked.is_ok(), "{:?}", clicked.err());
        session.close().await;
        served.stop().await;
    })
    .await;
}

// What a watch answers, over the channel.
async fn watch(
    session: &airlock_worker::RemoteSession,
    watch: airlock_worker::Watch,
) -> airlock_worker::Watched {
    match session
        .call(airlock_worker::Call::Watch(watch), None)
        .await
        .unwrap()
    {
        airlock_worker::Reply::Watched(watched) => watched,
        other => panic!("a watch answers what it found, not {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_streams_its_frames_when_the_page_paints_and_its_events_as_they_happen() {
    use airlock_browser::PageEvent;
    use airlock_worker::{Call, Reply, SecretEntry, Watch};
    with_browser(|h| async move {
        let served = serve(&h, Some(my_uid()));
        let policy = h.site.policy();
        let host = RemoteHost::connect_unix(&served.path, TOKEN, Some(my_uid()))
            .await
            .unwrap();
        // What the page's confirm dialog asks, loaded as a secret: the page shows it.
        let secret = "Really delete";
        let session = host
            .open(OpenSpec {
                isolation: None,
                policy,
                injection: None,
                secrets: SecretSet {
                    entries: vec![SecretEntry {
                        name: "PIN".to_owned(),
                        values: vec![Zeroizing::new(secret.to_owned())],
                        origins: vec![],
                    }],
                    sockets: vec![],
                },
                effects: Default::default(),
                signing: None,
            })
            .await
            .unwrap();
        let navigate = Call::Navigate {
            url: h.site.url("dialogs.html"),
            wait_until: airlock_browser::WaitUntil::Load,
        };
        session.call(navigate, None).await.unwrap();
        let button = |name: &str| Call::Click {
            target: airlock_browser::Target::Role {
                role: "button".to_owned(),
                name: Some(name.to_owned()),
                index: None,
            },
            options: airlock_browser::ClickOptions::default(),
        };

        // A new watcher is shown the page at once, masked JPEG and all.
        let first = watch(
            &session,
            Watch {
                frames: true,
                wait: Duration::from_secs(10),
                ..Watch::default()
            },
        )
        .await;
        let frame = first.frame.expect("a new watcher gets a frame at once");
        assert_eq!(&frame.jpeg[..2], &[0xFF, 0xD8], "a JPEG");
        assert!(frame.url.ends_with("/dialogs.html"), "{}", frame.url);
        assert_eq!(frame.title, "Dialogs");
        assert!(
            first.events.events.iter().any(|(_, e)| matches!(
                e,
                PageEvent::TabOpened {
                    tab: 0,
                    by_page: false
                }
            )),
            "{:?}",
            first.events
        );
        let mut after = first.events.last;
        let mut shown = Some(frame.painted);

        // A page that does not change paints nothing: the watch runs out empty.
        let idle = watch(
            &session,
            Watch {
                after,
                frames: true,
                shown,
                wait: Duration::from_millis(800),
            },
        )
        .await;
        assert!(
            idle.frame.is_none(),
            "an idle page sends no frame: {shown:?} then {:?}",
            idle.frame.as_ref().map(|f| f.painted)
        );
        assert!(idle.events.events.is_empty(), "{:?}", idle.events);

        // A watch waiting when the page changes answers with the change, long before
        // its wait runs out.
        let session = Arc::new(session);
        let waiting = {
            let session = session.clone();
            let watch_call = Call::Watch(Watch {
                after,
                frames: true,
                shown,
                wait: Duration::from_secs(30),
            });
            tokio::spawn(async move { session.call(watch_call, None).await })
        };
        session.call(button("Guard"), None).await.unwrap();
        let changed = tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("the paint answers the watch, not its 30 s wait")
            .unwrap()
            .unwrap();
        let Reply::Watched(changed) = changed else {
            panic!("a watch answers what it found");
        };
        let frame = changed.frame.expect("the page changed: a new frame");
        assert!(frame.painted.paints > shown.unwrap().paints);
        assert_ne!(Some(frame.painted), shown);
        shown = Some(frame.painted);
        after = changed.events.last.max(after);

        // A dialog the page opens reaches the watcher, its message redacted where it
        // was made.
        let clicked = session.call(button("Confirm"), None).await.unwrap();
        assert!(matches!(clicked, Reply::Outcome(_)));
        let mut seen = Vec::new();
        while !seen
            .iter()
            .any(|e| matches!(e, PageEvent::DialogOpened { .. }))
        {
            let got = tokio::time::timeout(
                Duration::from_secs(10),
                watch(
                    &session,
                    Watch {
                        after,
                        frames: false,
                        shown,
                        wait: Duration::from_secs(30),
                    },
                ),
            )
            .await
            .expect("the dialog answers the watch");
            assert_eq!(got.events.missed, 0);
            after = got.events.last;
            seen.extend(got.events.events.into_iter().map(|(_, e)| e));
        }
        let dialog = seen
            .iter()
            .find_map(|e| match e {
                PageEvent::DialogOpened { kind, message, .. } => Some((kind, message)),
                _ => None,
            })
            .unwrap();
        assert_eq!(dialog.0, "confirm");
        assert!(
            dialog.1.contains("[REDACTED:PIN]") && !dialog.1.contains(secret),
            "{}",
            dialog.1
        );
        assert!(!format!("{seen:?}").contains(secret));

        let unwatched = session.call(Call::Unwatch, None).await.unwrap();
        assert!(matches!(unwatched, Reply::Done));
        session.close().await;
        served.stop().await;
    })
    .await;
}

// The URL of `session`'s active tab, asked over its own connection.
// Navigates `session` to `url`.
async fn go_to(session: &airlock_worker::RemoteSession, url: &str) {
    session
        .call(
            airlock_worker::Call::Navigate {
                url: url.to_owned(),
                wait_until: Default::default(),
            },
            None,
        )
        .await
        .unwrap();
}

async fn active_url(session: &airlock_worker::RemoteSession) -> String {
    match session
        .call(airlock_worker::Call::Tabs, None)
        .await
        .unwrap()
    {
        airlock_worker::Reply::Tabs(tabs) => tabs.into_iter().find(|t| t.active).unwrap().url,
        other => panic!("{other:?}"),
    }
}

// A control plane that dies without a word: its connection closes, nothing is
// closed or released by it.
fn die(host: RemoteHost, session: airlock_worker::RemoteSession) {
    session.forget();
    drop(host);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_outlives_its_control_plane_for_another_to_take_over_within_the_grace() {
    with_browser(|h| async move {
        let grace = Duration::from_secs(2);
        let served = serve_keeping(&h, Some(my_uid()), grace);
        let (a, on_a) = open(
            &served,
            Some(airlock_config::Isolation::Process),
            h.site.policy(),
        )
        .await;
        let page = h.site.url("resolve.html");
        go_to(&on_a, &page).await;
        let id = on_a.facts().id.clone();
        let key = on_a.facts().key.unwrap();
        let pid = on_a.facts().browser_pid;

        // B attaches while A still holds it; both drive the same page.
        let b = RemoteHost::connect_unix(&served.path, TOKEN, Some(my_uid()))
            .await
            .unwrap();
        let on_b = b.attach(&id, &key).await.unwrap();
        assert_eq!(on_b.facts().browser_pid, pid);
        assert_eq!(active_url(&on_b).await, page);
        // A unknown id is refused as a closed session, never another's.
        assert!(matches!(
            b.attach("no-such-session", &key).await,
            Err(airlock_browser::Error::SessionClosed)
        ));

        // A dies; B goes on, past the grace: a held session is never reaped.
        die(a, on_a);
        tokio::time::sleep(grace + Duration::from_millis(500)).await;
        assert_eq!(active_url(&on_b).await, page);

        // B dies too; C takes it over within the grace and finds the page as it was.
        die(b, on_b);
        let c = RemoteHost::connect_unix(&served.path, TOKEN, Some(my_uid()))
            .await
            .unwrap();
        let on_c = c.attach(&id, &key).await.unwrap();
        assert_eq!(active_url(&on_c).await, page);

        // C lets go and nobody takes it: after the grace it is closed, Chromium and all.
        on_c.release().await;
        let deadline = tokio::time::Instant::now() + grace + Duration::from_secs(10);
        while chromium_processes_under(h.profile_parent()).contains(&pid) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "a session nobody held was closed after the grace"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(matches!(
            c.attach(&id, &key).await,
            Err(airlock_browser::Error::SessionClosed)
        ));
        served.stop().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_closed_by_one_holder_is_closed_for_every_holder_and_stopping_closes_the_kept() {
    with_browser(|h| async move {
        let served = serve_keeping(&h, Some(my_uid()), Duration::from_secs(3600));
        let (a, on_a) = open(
            &served,
            Some(airlock_config::Isolation::Process),
            h.site.policy(),
        )
        .await;
        let b = RemoteHost::connect_unix(&served.path, TOKEN, Some(my_uid()))
            .await
            .unwrap();
        let on_b = b
            .attach(&on_a.facts().id, on_a.facts().key.as_ref().unwrap())
            .await
            .unwrap();
        on_b.close().await;
        assert!(matches!(
            on_a.call(airlock_worker::Call::Tabs, None).await,
            Err(airlock_browser::Error::SessionClosed)
        ));
        // A session kept for an hour with nobody holding it still goes when the
        // worker stops.
        let (c, on_c) = open(
            &served,
            Some(airlock_config::Isolation::Process),
            h.site.policy(),
        )
        .await;
        let pid = on_c.facts().browser_pid;
        die(c, on_c);
        drop((a, on_a, b));
        served.stop().await;
        assert!(!chromium_processes_under(h.profile_parent()).contains(&pid));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_holder_reaches_no_session_it_did_not_open_and_widens_no_policy() {
    with_browser(|h| async move {
        let served = serve_keeping(&h, Some(my_uid()), Duration::from_secs(3600));
        let (a, on_a) = open(&served, None, h.site.policy()).await;
        let page = h.site.url("resolve.html");
        go_to(&on_a, &page).await;
        let id = on_a.facts().id.clone();

        // Another connection with the deployment's token, the session's id and no
        // key: attach, calls (its cookies included) and close all find no session.
        let intruder = connect(&served).await;
        let channel = intruder.channel();
        let ctx = || {
            let mut c = tarpc::context::current();
            c.deadline = (tokio::time::Instant::now() + Duration::from_secs(30)).into_std();
            c
        };
        for guess in [
            AttachKey::random().unwrap(),
            AttachKey::from_stored(""),
            AttachKey::from_stored(&id),
        ] {
            assert!(matches!(
                intruder.attach(&id, &guess).await,
                Err(airlock_browser::Error::SessionClosed)
            ));
        }
        let host = url::Url::parse(&page)
            .unwrap()
            .host_str()
            .unwrap()
            .to_owned();
        for call in [
            airlock_worker::Call::Cookies(vec![host.clone()]),
            airlock_worker::Call::SetPolicy(Policy::public_only()),
            airlock_worker::Call::Tabs,
        ] {
            assert!(matches!(
                channel.call(ctx(), id.clone(), call, None).await.unwrap(),
                Err(airlock_browser::Error::SessionClosed)
            ));
        }
        channel.close(ctx(), id.clone()).await.unwrap();
        assert_eq!(
            active_url(&on_a).await,
            page,
            "a foreign close closed nothing"
        );

        // Its holder may narrow its policy, never widen it.
        let narrower = h
            .site
            .policy()
            .narrowed(std::slice::from_ref(&host), &[])
            .unwrap();
        on_a.call(airlock_worker::Call::SetPolicy(narrower.clone()), None)
            .await
            .unwrap();
        for wider in [Policy::public_only(), h.site.policy()] {
            assert!(matches!(
                on_a.call(airlock_worker::Call::SetPolicy(wider), None)
                    .await,
                Err(airlock_browser::Error::InvalidArgument(_))
            ));
        }
        // And read only the cookies of hosts it names.
        on_a.call(
            airlock_worker::Call::Evaluate {
                function: "() => { document.cookie = 'login=abc'; }".to_owned(),
                target: None,
            },
            None,
        )
        .await
        .unwrap();
        let cookies = |hosts: Vec<String>| {
            let on_a = &on_a;
            async move {
                match on_a.call(airlock_worker::Call::Cookies(hosts), None).await {
                    Ok(airlock_worker::Reply::Cookies(c)) => {
                        c.into_iter().map(|c| c.name).collect::<Vec<_>>()
                    }
                    other => panic!("no cookies: {:?}", other.err()),
                }
            }
        };
        assert_eq!(cookies(vec![host.clone()]).await, ["login"]);
        assert!(cookies(vec!["elsewhere.test".to_owned()]).await.is_empty());
        assert!(matches!(
            on_a.call(airlock_worker::Call::Cookies(Vec::new()), None)
                .await,
            Err(airlock_browser::Error::InvalidArgument(_))
        ));
        drop((a, on_a, intruder));
        served.stop().await;
    })
    .await;
}

async fn connect(served: &Served) -> RemoteHost {
    RemoteHost::connect_unix(&served.path, TOKEN, Some(my_uid()))
        .await
        .unwrap()
}

async fn open_on(host: &RemoteHost) -> airlock_browser::Result<airlock_worker::RemoteSession> {
    host.open(OpenSpec {
        isolation: None,
        policy: Policy::deny_all(),
        injection: None,
        secrets: SecretSet::default(),
        effects: Default::default(),
        signing: None,
    })
    .await
}

fn refusal(opened: airlock_browser::Result<airlock_worker::RemoteSession>) -> String {
    match opened {
        Err(airlock_browser::Error::BrowserUnavailable { reason }) => reason,
        Err(e) => panic!("refused otherwise: {e}"),
        Ok(_) => panic!("opened a session it should have refused"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_holds_at_most_its_sessions_and_exits_once_it_served_its_last() {
    with_browser(|h| async move {
        let mut served = serve_on(
            &h,
            Admission {
                peer_uid: Some(my_uid()),
                max_sessions: Some(1),
                exit_after: Some(2),
                ..Admission::default()
            },
        );
        let host = connect(&served).await;
        let first = open_on(&host).await.unwrap();
        assert!(refusal(open_on(&host).await).contains("holds 1 session(s), the most it takes"));
        first.close().await;
        let second = open_on(&host).await.unwrap();
        assert!(refusal(open_on(&host).await).contains("serves 2 session(s) and then exits"));
        // Its last session closed, it stops by itself.
        let task = served.task.take().unwrap();
        assert!(!task.is_finished());
        second.close().await;
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the worker stops once its last session closed")
            .unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopping_worker_takes_no_new_session_and_serves_the_ones_it_holds_until_they_close() {
    with_browser(|h| async move {
        let mut served = serve_on(
            &h,
            Admission {
                peer_uid: Some(my_uid()),
                drain_within: Duration::from_secs(60),
                ..Admission::default()
            },
        );
        let host = connect(&served).await;
        let held = open_on(&host).await.unwrap();
        let _ = served.stop.take().unwrap().send(());
        // Told to stop: the session held is served, a new one refused.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match open_on(&host).await {
                Err(airlock_browser::Error::BrowserUnavailable { reason }) => {
                    assert!(reason.contains("stopping"), "{reason}");
                    break;
                }
                Ok(extra) => {
                    // The stop had not reached it yet.
                    extra.close().await;
                    assert!(tokio::time::Instant::now() < deadline, "never refused");
                    tokio::task::yield_now().await;
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert!(held.call(airlock_worker::Call::Tabs, None).await.is_ok());
        let task = served.task.take().unwrap();
        assert!(!task.is_finished());
        held.close().await;
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("a drained worker stops once its last session closed, not at the drain's end")
            .unwrap();

        // A session still held at the drain's end is closed then, Chromium and all.
        let mut served = serve_on(
            &h,
            Admission {
                peer_uid: Some(my_uid()),
                drain_within: Duration::from_millis(500),
                ..Admission::default()
            },
        );
        let host = connect(&served).await;
        let lingering = host
            .open(OpenSpec {
                isolation: Some(airlock_config::Isolation::Process),
                policy: Policy::deny_all(),
                injection: None,
                secrets: SecretSet::default(),
                effects: Default::default(),
                signing: None,
            })
            .await
            .unwrap();
        let pid = lingering.facts().browser_pid;
        let _ = served.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), served.task.take().unwrap())
            .await
            .expect("the drain ends")
            .unwrap();
        assert!(!chromium_processes_under(h.profile_parent()).contains(&pid));
        lingering.forget();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_session_goes_to_the_worker_with_the_most_room_and_a_worker_says_its_load() {
    with_browser(|h| async move {
        let terms = || Admission {
            peer_uid: Some(my_uid()),
            max_sessions: Some(3),
            ..Admission::default()
        };
        let (a, b) = (serve_on(&h, terms()), serve_on(&h, terms()));
        // Another control plane holds two sessions on A.
        let other = connect(&a).await;
        let held = [open_on(&other).await.unwrap(), open_on(&other).await.unwrap()];
        let load = other.load().await.unwrap();
        assert_eq!((load.sessions, load.capacity, load.closed), (2, Some(3), false));
        assert_eq!(load.room(), 1);

        let fleet: airlock_worker::Host = airlock_worker::Fleet::new(
            futures_util::future::join_all([&a, &b].map(|served| async move {
                airlock_worker::Remote::new(airlock_worker::SocketConnector {
                    path: served.path.clone(),
                    token: Zeroizing::new(TOKEN.to_owned()),
                    worker_uid: Some(my_uid()),
                })
                .await
                .unwrap()
            }))
            .await,
        )
        .unwrap()
        .into();
        let spec = || OpenSpec {
            isolation: None,
            policy: Policy::deny_all(),
            injection: None,
            secrets: SecretSet::default(),
            effects: Default::default(),
            signing: None,
        };
        // B has room for three, A for one: the next two go to B, whatever the turn.
        let b_at = b.path.display().to_string();
        let first = fleet.open(spec()).await.unwrap();
        let second = fleet.open(spec()).await.unwrap();
        assert_eq!(first.reachable_at(), Some(b_at.as_str()));
        assert_eq!(second.reachable_at(), Some(b_at.as_str()));
        // Full everywhere but one place each: A's last place and B's last place are
        // both taken, then every worker refuses and the open says why.
        let third = fleet.open(spec()).await.unwrap();
        let fourth = fleet.open(spec()).await.unwrap();
        let refused = fleet.open(spec()).await;
        assert!(
            matches!(&refused, Err(airlock_browser::Error::BrowserUnavailable { reason }) if reason.contains("the most it takes")),
            "{:?}",
            refused.map(|s| s.reachable_at().map(str::to_owned))
        );
        for session in [first, second, third, fourth] {
            session.close().await;
        }
        for session in held {
            session.close().await;
        }
        fleet.shutdown().await;
        a.stop().await;
        b.stop().await;
    })
    .await;
}

// A worker that registered itself is dialled only at an address the operator allows:
// each address its name resolves to is judged first, and a refused one is never
// connected to (a listener counting connections sees none), whatever name leads
// there; an allowed one is.
#[tokio::test(flavor = "multi_thread")]
async fn a_registered_worker_is_dialled_only_at_an_address_the_operator_allows() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = accepted.clone();
    let accepting = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    std::fs::write(&ca, params.self_signed(&key).unwrap().pem()).unwrap();
    let connector = |address: String, admit: airlock_worker::Admit| airlock_worker::TlsConnector {
        address,
        server_name: "localhost".to_owned(),
        tls: airlock_worker::tls::client_config(&ca).unwrap(),
        token: Zeroizing::new(TOKEN.to_owned()),
        admit: Some(admit),
    };
    let refuse_loopback: airlock_worker::Admit = Arc::new(|ip: std::net::IpAddr| {
        if ip.is_loopback() {
            Err(format!("{ip} is loopback"))
        } else {
            Ok(())
        }
    });
    for address in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let refused =
            airlock_worker::Remote::new(connector(address, refuse_loopback.clone())).await;
        let Err(ConnectError::NotAllowed { why, .. }) = refused else {
            panic!("dialled a refused address");
        };
        assert!(why.contains("loopback"), "{why}");
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
    // The same worker where loopback is allowed: dialled (its TLS then fails here).
    let allowed =
        airlock_worker::Remote::new(connector(format!("localhost:{port}"), Arc::new(|_| Ok(()))))
            .await;
    assert!(matches!(allowed, Err(ConnectError::Unreachable { .. })));
    assert!(accepted.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    accepting.abort();
}
