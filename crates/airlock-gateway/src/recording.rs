//! Session recording: a screenshot after each state-changing step. `transient` keeps
//! the last [`TRANSIENT_STEPS`] in memory (taken after the result is returned, so the
//! call does not wait for it), dropped when the session closes; `audit` stores each
//! before the step's audit event is written, with its SHA-256 in that event (under
//! the data dir, or in the store when replicas share it: never on one pod's disk),
//! and the reaper prunes them after the retention period. Screenshots paint over
//! fields showing a secret, as every capture does.

use hex::ToHex as _;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use airlock_browser::{ImageFormat, ScreenshotOptions};
use airlock_config::RecordMode;
use airlock_core::sync::lock;
use airlock_worker::BrowserSession;

/// Steps a transient recording keeps.
pub const TRANSIENT_STEPS: usize = 50;

/// How long a transient capture waits for the page to settle (and for the agent's
/// next call, which it then gives way to).
pub(crate) const SETTLE: Duration = Duration::from_millis(150);

/// JPEG quality of recorded steps: legible text at a tenth of a PNG's size.
const QUALITY: u8 = 70;

/// One recorded step.
#[derive(Clone)]
pub struct Step {
    /// Its number in the session, from 1.
    pub step: u64,
    /// The tool that made it.
    pub tool: &'static str,
    /// When, in Unix milliseconds.
    pub time_ms: i64,
    /// `image/jpeg`.
    pub mime: &'static str,
    /// The image.
    pub data: Arc<Vec<u8>>,
    /// Its SHA-256, hex.
    pub sha256: String,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step")
            .field("step", &self.step)
            .field("tool", &self.tool)
            .field("bytes", &self.data.len())
            .finish_non_exhaustive()
    }
}

/// What a step's audit event says of its recording.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    pub(crate) step: u64,
    pub(crate) sha256: String,
    /// Its name: a file relative to the recordings directory, or an artifact's name
    /// in the store.
    pub(crate) file: String,
}

/// A session's recorder.
pub(crate) struct Recorder {
    mode: RecordMode,
    next: AtomicU64,
    steps: std::sync::Mutex<VecDeque<Step>>,
    // A transient capture is under way: a step that finishes meanwhile is not also
    // captured (the next capture shows its result).
    capturing: AtomicBool,
    // Calls that entered the session: a transient capture waits for the page to
    // settle and gives way to a call that starts meanwhile.
    calls: AtomicU64,
}

impl Recorder {
    pub(crate) fn new(mode: RecordMode) -> Recorder {
        Recorder {
            mode,
            next: AtomicU64::new(1),
            steps: std::sync::Mutex::new(VecDeque::new()),
            capturing: AtomicBool::new(false),
            calls: AtomicU64::new(0),
        }
    }

    /// A call entered the session.
    pub(crate) fn call_started(&self) {
        self.calls.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn mode(&self) -> RecordMode {
        self.mode
    }

    /// The transient steps kept, oldest first.
    pub(crate) fn steps(&self) -> Vec<Step> {
        lock(&self.steps).iter().cloned().collect()
    }

    /// Audit mode: captures the page now and stores it as `<session>/<step>.jpg`
    /// in `recordings`, before the step's event is written.
    pub(crate) async fn store_step(
        &self,
        session: &BrowserSession,
        recordings: &Recordings,
        session_id: &str,
        tenant: &str,
        tool: &'static str,
    ) -> Result<Recorded, String> {
        let step = self.capture(session, tool).await?;
        let relative = format!("{session_id}/{:06}.jpg", step.step);
        recordings
            .put(&relative, tenant, step.data.clone())
            .await
            .map_err(|e| format!("could not store the step's screenshot: {e}"))?;
        Ok(Recorded {
            step: step.step,
            sha256: step.sha256,
            file: relative,
        })
    }

    /// Transient mode: once the page has had [`SETTLE`] to settle, captures it in
    /// the background and keeps the last [`TRANSIENT_STEPS`] captures. A call that
    /// starts meanwhile goes first and the capture is skipped (that call's own step,
    /// if it acts, is captured after it): an agent calling back to back never waits
    /// on a capture.
    pub(crate) fn keep_step(
        self: &Arc<Self>,
        held: Arc<dyn AsRef<BrowserSession> + Send + Sync>,
        tool: &'static str,
    ) {
        if self.capturing.swap(true, Ordering::AcqRel) {
            return;
        }
        let recorder = self.clone();
        let calls = self.calls.load(Ordering::Acquire);
        tokio::spawn(async move {
            tokio::time::sleep(SETTLE).await;
            if recorder.calls.load(Ordering::Acquire) != calls {
                recorder.capturing.store(false, Ordering::Release);
                return;
            }
            let captured = recorder.capture((*held).as_ref(), tool).await;
            recorder.capturing.store(false, Ordering::Release);
            match captured {
                Ok(step) => {
                    let mut steps = lock(&recorder.steps);
                    if steps.len() == TRANSIENT_STEPS {
                        steps.pop_front();
                    }
                    steps.push_back(step);
                }
                Err(e) => tracing::debug!(error = %e, "no transient recording of a step"),
            }
        });
    }

    async fn capture(&self, session: &BrowserSession, tool: &'static str) -> Result<Step, String> {
        let shot = session
            .screenshot(&ScreenshotOptions {
                format: ImageFormat::Jpeg { quality: QUALITY },
                fast: true,
                ..ScreenshotOptions::default()
            })
            .await
            .map_err(|e| format!("could not capture the step: {e}"))?;
        let sha256 = {
            use sha2::{Digest, Sha256};
            Sha256::digest(&shot.data).encode_hex::<String>()
        };
        Ok(Step {
            step: self.next.fetch_add(1, Ordering::AcqRel),
            tool,
            time_ms: crate::clock::now_ms(),
            mime: shot.mime,
            data: Arc::new(shot.data),
            sha256,
        })
    }
}

fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(data)?;
    file.sync_data()
}

/// Where the steps of `audit` recordings are kept.
enum Place {
    /// Files (0600) under a directory of this machine.
    Files(PathBuf),
    /// The store other replicas share (its `artifacts`).
    Store(airlock_store::Store),
}

/// The stored recordings of `audit` sessions: where their steps go, how long they stay,
/// and an image read back for the operator. One per gateway.
pub(crate) struct Recordings {
    place: Option<Place>,
    retention: Duration,
    // When they were last pruned.
    pruned: std::sync::Mutex<Option<tokio::time::Instant>>,
}

impl Recordings {
    /// Recordings kept `retention`: in `store` when other replicas share it, else
    /// under `dir` (neither: `audit` recording is refused).
    pub(crate) fn new(
        dir: Option<PathBuf>,
        store: Option<&airlock_store::Store>,
        retention: Duration,
    ) -> Recordings {
        let place = match store {
            Some(store) if store.is_shared() => Some(Place::Store(store.clone())),
            _ => dir.map(Place::Files),
        };
        Recordings {
            place,
            retention,
            pruned: std::sync::Mutex::new(None),
        }
    }

    /// Whether steps are stored anywhere.
    pub(crate) fn kept(&self) -> bool {
        self.place.is_some()
    }

    // Stores one step's image as `name` (a file is written once, 0600).
    async fn put(&self, name: &str, tenant: &str, data: Arc<Vec<u8>>) -> Result<(), String> {
        match &self.place {
            None => Err("this gateway stores no recordings".to_owned()),
            Some(Place::Store(store)) => store
                .put_artifact(name, tenant, crate::clock::now_ms(), &data)
                .await
                .map_err(|e| e.to_string()),
            Some(Place::Files(dir)) => {
                let path = dir.join(name);
                tokio::task::spawn_blocking(move || write_private(&path, &data))
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.to_string())
            }
        }
    }

    /// Removes what is past its retention, at most once an hour and off the caller's
    /// task (a slow disk or store never delays the reaper).
    pub(crate) fn prune_due(&self) {
        let Some(place) = &self.place else {
            return;
        };
        {
            let mut last = lock(&self.pruned);
            if last.is_some_and(|t| t.elapsed() < Duration::from_secs(3_600)) {
                return;
            }
            *last = Some(tokio::time::Instant::now());
        }
        let retention = self.retention;
        let told = |pruned: Result<u64, String>| match pruned {
            Ok(0) => {}
            Ok(n) => tracing::info!(images = n, "pruned recordings past their retention"),
            Err(e) => tracing::warn!(error = %e, "could not prune recordings"),
        };
        match place {
            Place::Files(dir) => {
                let dir = dir.clone();
                tokio::task::spawn_blocking(move || {
                    told(prune(&dir, retention).map_err(|e| e.to_string()))
                });
            }
            Place::Store(store) => {
                let store = store.clone();
                let before = crate::clock::now_ms()
                    - i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
                tokio::spawn(async move {
                    told(
                        store
                            .drop_artifacts_before(before)
                            .await
                            .map_err(|e| e.to_string()),
                    )
                });
            }
        }
    }

    /// The stored image `file` (a name from the audit log), if it is still there and
    /// still the image whose SHA-256 is `sha256`.
    pub(crate) async fn image(&self, file: &str, sha256: &str) -> Option<Vec<u8>> {
        // The name comes from the log: one that leaves the directory is refused.
        let plain = !file.is_empty()
            && Path::new(file)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain {
            return None;
        }
        let data = match self.place.as_ref()? {
            Place::Files(dir) => tokio::fs::read(dir.join(file)).await.ok()?,
            Place::Store(store) => store.artifact(file).await.ok()??,
        };
        use sha2::Digest as _;
        let actual: String = sha2::Sha256::digest(&data).encode_hex::<String>();
        (actual == sha256).then_some(data)
    }
}

/// A session's downloads kept in the store replicas share (`artifacts`, as
/// `downloads/<saved_as>`), not on the disk of the replica that ran the action; the
/// recordings' retention applies. `airlock audit download` gives one back.
pub(crate) struct StoredDownloads {
    pub(crate) store: airlock_store::Store,
    pub(crate) tenant: String,
}

/// The artifact name a download is kept under.
pub fn download_artifact(saved_as: &str) -> String {
    format!("downloads/{saved_as}")
}

impl airlock_worker::KeepDownload for StoredDownloads {
    fn keep<'a>(
        &'a self,
        saved_as: &'a str,
        data: Vec<u8>,
    ) -> futures_util::future::BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.store
                .put_artifact(
                    &download_artifact(saved_as),
                    &self.tenant,
                    crate::clock::now_ms(),
                    &data,
                )
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// Removes stored step screenshots older than `retention`, and session directories
/// left empty. Returns how many files went.
fn prune(dir: &Path, retention: Duration) -> std::io::Result<u64> {
    let Some(cutoff) = std::time::SystemTime::now().checked_sub(retention) else {
        return Ok(0);
    };
    let mut removed = 0;
    let sessions = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    for session in sessions.flatten() {
        let path: PathBuf = session.path();
        // Never follow a link out of the recordings directory.
        if !session.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        for file in std::fs::read_dir(&path)?.flatten() {
            let old = file
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < cutoff);
            if old && file.file_type().is_ok_and(|t| t.is_file()) {
                std::fs::remove_file(file.path())?;
                removed += 1;
            }
        }
        // Fails, harmlessly, while files remain.
        let _ = std::fs::remove_dir(&path);
    }
    Ok(removed)
}
