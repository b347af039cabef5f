//! A session's live stream on the host's side: one [`Call::Watch`](crate::Call) is
//! answered as soon as the session has something new for its watcher — events after
//! the last one it saw, or (when it wants frames) a page that painted since the frame
//! it was last shown, or another tab made active — and otherwise when its wait runs
//! out. The watcher keeps one watch outstanding, so what happens reaches it when it
//! happens, and frames cost nothing while a page is idle (an idle page paints none).

use std::time::Duration;

use airlock_browser::{ImageFormat, Result, ScreenshotOptions, Session};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::proto::{Frame, MAX_WATCH, Painted, Watch, Watched};

/// How often a waiting watch looks whether another tab became the active one (a
/// switch paints nothing on the tab it watched).
const ACTIVE_EVERY: Duration = Duration::from_millis(500);

/// How long a frame waits for the paint its own screenshot causes.
const INDUCED_FRAME: Duration = Duration::from_millis(500);

/// Answers one watch.
pub(crate) async fn watch(session: &Session, watch: Watch) -> Result<Watched> {
    let deadline = Instant::now() + watch.wait.min(MAX_WATCH);
    let mut events = session.events().subscribe();
    loop {
        let batch = session.events().since(watch.after);
        let paints = if watch.frames {
            Some(session.paints().await?)
        } else {
            None
        };
        let due = paints.as_ref().is_some_and(|(tab, painted)| {
            let now = Painted {
                tab: *tab,
                paints: *painted.borrow(),
            };
            watch.shown != Some(now)
        });
        let news = !batch.events.is_empty() || batch.missed > 0;
        if due || news || Instant::now() >= deadline {
            let frame = match paints.filter(|_| due) {
                Some((tab, painted)) => match frame(session, tab, painted).await {
                    Ok(frame) => Some(frame),
                    // Events go out even when the page cannot be shown this moment
                    // (a dialog holds it); the frame is tried again next time.
                    Err(_) if news => None,
                    Err(e) => return Err(e),
                },
                None => None,
            };
            return Ok(Watched {
                events: batch,
                frame,
            });
        }
        let next_look = (Instant::now() + ACTIVE_EVERY).min(deadline);
        match paints {
            Some((_, mut painted)) => {
                tokio::select! {
                    _ = events.changed() => {}
                    _ = painted.changed() => {}
                    _ = tokio::time::sleep_until(next_look) => {}
                }
            }
            None => {
                tokio::select! {
                    _ = events.changed() => {}
                    _ = tokio::time::sleep_until(deadline) => {}
                }
            }
        }
    }
}

// The active tab as an operator sees it: a fast JPEG, masked like every screenshot,
// with its URL and title (redacted by the session).
async fn frame(session: &Session, tab: u32, mut painted: watch::Receiver<u64>) -> Result<Frame> {
    let before = *painted.borrow_and_update();
    let shot = session
        .screenshot(&ScreenshotOptions {
            format: ImageFormat::Jpeg { quality: 60 },
            fast: true,
            ..ScreenshotOptions::default()
        })
        .await?;
    let tabs = session.tabs().await?;
    let (title, url) = tabs
        .into_iter()
        .find(|t| t.active)
        .map(|t| (t.title, t.url))
        .unwrap_or_default();
    // Taking a screenshot paints one frame itself (measured: exactly one, at or just
    // after its answer): that one shows nothing new. Any beyond it is a change.
    let induced = before + 1;
    let _ = tokio::time::timeout(INDUCED_FRAME, painted.wait_for(|n| *n >= induced)).await;
    let paints = if *painted.borrow() >= induced {
        induced
    } else {
        before
    };
    Ok(Frame {
        jpeg: shot.data,
        url,
        title,
        viewport: session.viewport(),
        painted: Painted { tab, paints },
    })
}
