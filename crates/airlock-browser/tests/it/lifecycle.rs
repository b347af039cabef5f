//! Sessions: isolation, closing, process mode, crashes.

use airlock_browser::{SessionOptions, WaitUntil};
use airlock_config::Isolation;
use airlock_core::{ErrorCode, HasErrorCode};
use airlock_test_support::{processes_in_groups, with_browser};

use crate::{line_with, open};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookies_and_storage_do_not_cross_sessions() {
    with_browser(|h| async move {
        let a = open(&h).await;
        let b = open(&h).await;
        assert_ne!(a.context_id(), b.context_id());
        assert_eq!(
            a.browser_pid(),
            b.browser_pid(),
            "context sessions share one Chromium"
        );
        a.navigate(&h.site.url("cookie.html?set=secret-a"), WaitUntil::Load)
            .await
            .unwrap();
        assert!(
            line_with(&a, "cookie=")
                .await
                .contains("cookie=[flavor=secret-a] storage=[secret-a]")
        );
        // Same origin, other session: nothing of A's is visible.
        b.navigate(&h.site.url("cookie.html"), WaitUntil::Load)
            .await
            .unwrap();
        let seen = line_with(&b, "cookie=").await;
        assert!(seen.contains("cookie=[] storage=[]"), "{seen}");
        // A still sees its own after a reload.
        a.navigate(&h.site.url("cookie.html"), WaitUntil::Load)
            .await
            .unwrap();
        assert!(line_with(&a, "cookie=").await.contains("flavor=secret-a"));
        a.close().await;
        b.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_disposes_the_context_and_later_calls_say_so() {
    with_browser(|h| async move {
        let keep = open(&h).await;
        let s = open(&h).await;
        s.navigate(&h.site.url("login.html"), WaitUntil::Load)
            .await
            .unwrap();
        let context = s.context_id().to_owned();
        assert!(keep.browser_contexts().await.unwrap().contains(&context));
        s.close().await;
        assert!(
            !keep.browser_contexts().await.unwrap().contains(&context),
            "context survived close"
        );
        let err = s
            .navigate(&h.site.url("login.html"), WaitUntil::Load)
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::SessionExpired, "{err}");
        s.close().await; // idempotent
        keep.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_isolation_has_its_own_chromium_and_leaves_nothing() {
    with_browser(|h| async move {
        let shared = open(&h).await;
        let own = h
            .browsers
            .open_session(SessionOptions {
                isolation: Some(Isolation::Process),
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(own.is_dedicated());
        assert_ne!(own.browser_pid(), shared.browser_pid());
        let profile = own.profile_dir().expect("dedicated profile");
        assert!(profile.is_dir());
        own.navigate(&h.site.url("cookie.html?set=own"), WaitUntil::Load)
            .await
            .unwrap();
        let pid = own.browser_pid();
        own.close().await;
        assert!(!profile.exists(), "profile dir survived close");
        assert!(
            crate::eventually(|| processes_in_groups(&[pid]).is_empty()).await,
            "dedicated Chromium processes survived close"
        );
        // The shared Chromium is untouched and sees none of the dedicated cookies.
        shared
            .navigate(&h.site.url("cookie.html"), WaitUntil::Load)
            .await
            .unwrap();
        assert!(line_with(&shared, "cookie=").await.contains("cookie=[]"));
        shared.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_fails_sessions_clearly_and_the_next_session_relaunches() {
    with_browser(|h| async move {
        let a = open(&h).await;
        let b = open(&h).await;
        a.navigate(&h.site.url("login.html"), WaitUntil::Load)
            .await
            .unwrap();
        let pid = h
            .browsers
            .shared_pid()
            .await
            .expect("shared Chromium running");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        for session in [&a, &b] {
            let err = session
                .navigate(&h.site.url("login.html"), WaitUntil::Load)
                .await
                .unwrap_err();
            assert_eq!(err.code(), ErrorCode::BrowserCrashed, "{err}");
            assert!(err.to_string().contains("crashed"), "{err}");
        }
        let c = open(&h).await;
        assert_ne!(c.browser_pid(), pid, "a new Chromium was launched");
        c.navigate(&h.site.url("login.html"), WaitUntil::Load)
            .await
            .unwrap();
        assert!(line_with(&c, "heading").await.contains("Sign in"));
        a.close().await;
        b.close().await;
        c.close().await;
    })
    .await;
}

#[test]
fn profiles_a_killed_gateway_left_are_swept_when_a_pool_starts() {
    let parent = tempfile::tempdir().unwrap();
    // A gateway that is gone (its PID is dead), and one that is alive (PID 1).
    #[allow(clippy::disallowed_methods)] // a PID that is surely dead
    let dead = {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let stale = parent
        .path()
        .join(format!("{}{dead}-abc123", airlock_browser::PROFILE_PREFIX));
    let live = parent
        .path()
        .join(format!("{}1-def456", airlock_browser::PROFILE_PREFIX));
    for dir in [&stale, &live] {
        std::fs::create_dir_all(dir.join("Default")).unwrap();
        std::fs::write(dir.join("Default/Cookies"), b"x").unwrap();
    }
    let mut options =
        airlock_browser::BrowserOptions::from_config(&airlock_config::BrowserConfig::default())
            .unwrap();
    options.profile_parent = parent.path().to_owned();
    let _pool = airlock_browser::Browsers::new(options);
    assert!(!stale.exists(), "the dead gateway's profile is still there");
    assert!(live.exists(), "a live gateway's profile was removed");
}
