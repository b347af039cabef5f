//! Times the browser core on the fixture site: session open, navigate, snapshot (size
//! and time, small page and the 2,000-row table), click, screenshot. Median of several
//! runs each. Run with `make bench` (release build).

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::time::Duration;

use airlock_browser::{
    ClickOptions, ScreenshotOptions, SessionOptions, SnapshotOptions, Target, WaitUntil,
};
use airlock_config::Isolation;
use airlock_test_support::with_browser;

const RUNS: usize = 7;

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

async fn time<F, Fut, T>(mut f: F) -> (f64, T)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..RUNS {
        let start = tokio::time::Instant::now();
        let out = f().await;
        times.push(start.elapsed());
        last = Some(out);
    }
    (median(times), last.unwrap())
}

#[tokio::main]
async fn main() {
    with_browser(|h| async move {
        // Warm the shared Chromium so session numbers exclude the one-time launch.
        let warm = h.browsers.open_session(SessionOptions::default()).await.unwrap();
        let (open_ms, _) = time(|| async {
            let s = h.browsers.open_session(SessionOptions::default()).await.unwrap();
            s.close().await;
        })
        .await;
        let (open_process_ms, _) = time(|| async {
            let s = h
                .browsers
                .open_session(SessionOptions { isolation: Some(Isolation::Process), ..Default::default() })
                .await
                .unwrap();
            s.close().await;
        })
        .await;
        let s = warm;
        let default = SnapshotOptions::default();
        let shot_options = ScreenshotOptions::default();
        let click_target = Target::Role { role: "checkbox".into(), name: Some("Remember me".into()), index: None };
        let click_options = ClickOptions::default();
        let login = h.site.url("login.html");
        let (nav_ms, _) = time(|| s.navigate(&login, WaitUntil::Load)).await;
        let (snap_small_ms, small) = time(|| s.snapshot(&default)).await;
        let small = small.unwrap();
        let (click_ms, _) = time(|| s.click(&click_target, &click_options)).await;
        let (shot_ms, shot) = time(|| s.screenshot(&shot_options)).await;

        let admin = h.site.url("admin?rows=2000");
        let (nav_admin_ms, _) = time(|| s.navigate(&admin, WaitUntil::Load)).await;
        let all = SnapshotOptions { max_bytes: usize::MAX, ..Default::default() };
        let (snap_admin_ms, full) = time(|| s.snapshot(&all)).await;
        let full = full.unwrap();
        let (snap_admin_capped_ms, capped) = time(|| s.snapshot(&default)).await;
        let capped = capped.unwrap();
        let interactive = s
            .snapshot(&SnapshotOptions { interactive_only: true, ..all.clone() })
            .await
            .unwrap();
        let find = SnapshotOptions { find: Some("user1234@".into()), ..all.clone() };
        let (find_ms, found) = time(|| s.snapshot(&find)).await;
        let found = found.unwrap();
        let (changes_ms, _) = time(|| s.changes()).await;

        // The same navigations through the session's egress proxy.
        let policy = h.site.policy();
        let proxy = airlock_egress::EgressProxy::start(std::sync::Arc::new(policy), std::sync::Arc::new(airlock_egress::SystemResolver))
            .await
            .unwrap();
        let proxied = h
            .browsers
            .open_session(SessionOptions { proxy_server: Some(proxy.proxy_server()), ..Default::default() })
            .await
            .unwrap();
        let article = h.site.url("article.html");
        let (direct_login_ms, _) = time(|| s.navigate(&login, WaitUntil::Load)).await;
        let (proxy_login_ms, _) = time(|| proxied.navigate(&login, WaitUntil::Load)).await;
        let (direct_article_ms, _) = time(|| s.navigate(&article, WaitUntil::Load)).await;
        let (proxy_article_ms, _) = time(|| proxied.navigate(&article, WaitUntil::Load)).await;
        let (direct_admin_ms, _) = time(|| s.navigate(&admin, WaitUntil::Load)).await;
        let (proxy_admin_ms, _) = time(|| proxied.navigate(&admin, WaitUntil::Load)).await;
        proxied.close().await;

        println!("session open (context, warm Chromium): {open_ms:.1} ms");
        println!("session open (process, own Chromium):  {open_process_ms:.1} ms");
        println!("navigate login.html:                   {nav_ms:.1} ms");
        println!("snapshot login.html:                   {snap_small_ms:.1} ms, {} bytes (~{} tokens)", small.text.len(), small.text.len() / 4);
        println!("click (role target):                   {click_ms:.1} ms");
        println!("screenshot viewport PNG:               {shot_ms:.1} ms, {} bytes", shot.unwrap().data.len());
        println!("navigate admin (2,000 rows):           {nav_admin_ms:.1} ms");
        println!("snapshot admin, whole:                 {snap_admin_ms:.1} ms, {} bytes (~{} tokens), {} lines", full.text.len(), full.text.len() / 4, full.total_lines);
        println!("snapshot admin, default cap:           {snap_admin_capped_ms:.1} ms, {} bytes", capped.text.len());
        println!("snapshot admin, interactive_only:      {} bytes", interactive.text.len());
        println!("snapshot admin, find one user:         {find_ms:.1} ms, {} bytes", found.text.len());
        println!("changes (diff) on admin, no change:    {changes_ms:.1} ms");
        println!("navigate login.html direct / via proxy: {direct_login_ms:.1} / {proxy_login_ms:.1} ms");
        println!("navigate article.html direct / via proxy: {direct_article_ms:.1} / {proxy_article_ms:.1} ms");
        println!("navigate admin (2,000 rows) direct / via proxy: {direct_admin_ms:.1} / {proxy_admin_ms:.1} ms");
        // Keep the texts for exact token counts by an external tokenizer.
        if let Some(dir) = std::env::var_os("AIRLOCK_BENCH_DUMP") {
            let dir = std::path::PathBuf::from(dir);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("admin-whole.txt"), &full.text).unwrap();
            std::fs::write(dir.join("admin-capped.txt"), &capped.text).unwrap();
            std::fs::write(dir.join("login.txt"), &small.text).unwrap();
        }
        s.close().await;
    })
    .await;
}
