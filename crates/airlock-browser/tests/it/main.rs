//! Browser-core tests against a real headless Chromium and fixture pages served on
//! loopback by the tests themselves. Every test runs inside `with_browser`, which
//! asserts afterwards that no Chromium process or profile directory survived.

// Test helpers outside #[test] fns unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

mod actions;
mod frames;
mod lifecycle;
mod navigation;
mod reading;
mod secrets;
mod snapshot;

use airlock_browser::{Session, SessionOptions, Snapshot, SnapshotOptions, Target};
use airlock_test_support::Harness;

pub(crate) async fn open(h: &Harness) -> Session {
    h.browsers
        .open_session(SessionOptions::default())
        .await
        .expect("open session")
}

/// A session whose connections go through an egress proxy allowing both fixture
/// servers, for pages that need a name resolved (`localhost`, cross-site): Chromium
/// itself resolves none. The proxy must live as long as the session.
pub(crate) async fn open_proxied(h: &Harness) -> (Session, airlock_egress::EgressProxy) {
    let (a, b) = (h.site.a.port(), h.site.b.port());
    let policy = airlock_policy::Policy::from_config(&airlock_policy::PolicyConfig {
        allow_private: vec![
            format!("127.0.0.1:{a}"),
            format!("127.0.0.1:{b}"),
            format!("[::1]:{b}"),
        ],
        ..Default::default()
    })
    .expect("policy");
    let proxy = airlock_egress::EgressProxy::start(
        std::sync::Arc::new(policy),
        std::sync::Arc::new(airlock_egress::SystemResolver),
    )
    .await
    .expect("egress proxy");
    let session = h
        .browsers
        .open_session(SessionOptions {
            proxy_server: Some(proxy.proxy_server()),
            ..Default::default()
        })
        .await
        .expect("open session");
    (session, proxy)
}

pub(crate) async fn snap(session: &Session) -> Snapshot {
    session
        .snapshot(&SnapshotOptions::default())
        .await
        .expect("snapshot")
}

/// The ref on the first snapshot line containing `needle`.
pub(crate) fn ref_of(snapshot: &str, needle: &str) -> Target {
    let line = snapshot
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{snapshot}"));
    Target::Ref(ref_on(line).unwrap_or_else(|| panic!("no ref on {line:?}")))
}

/// The ref of the first line containing `needle`, if that line has one.
pub(crate) fn ref_in(snapshot: &str, needle: &str) -> Option<airlock_core::NodeRef> {
    ref_on(snapshot.lines().find(|l| l.contains(needle))?)
}

/// The ref a snapshot line starts with (`- e5 button "Go"`, or in a diff `+ - e5 …`).
pub(crate) fn ref_on(line: &str) -> Option<airlock_core::NodeRef> {
    line.split_whitespace()
        .find(|w| !matches!(*w, "-" | "+" | "~"))?
        .parse()
        .ok()
}

pub(crate) fn role(role: &str, name: &str) -> Target {
    Target::Role {
        role: role.to_owned(),
        name: Some(name.to_owned()),
        index: None,
    }
}

/// The page's `#log`/`#out`/`#r`/`status` text, read from a fresh snapshot line.
pub(crate) async fn line_with(session: &Session, needle: &str) -> String {
    let s = snap(session).await;
    s.text
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{}", s.text))
        .to_owned()
}

/// Polls `condition` until it holds or 5 s pass (for effects with no event to await,
/// like a killed process leaving /proc).
pub(crate) async fn eventually(condition: impl Fn() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        if condition() {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
