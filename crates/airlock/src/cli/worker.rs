//! `airlock worker --listen` started as root: it supervises itself under users of
//! its own (`airlock_worker::supervise`), and, as the worker so started, takes what
//! its supervisor read for it.

use std::path::Path;

use airlock_config::{Config, ProcessEnv};

/// As root: reads the token, certificate and key, and runs the worker as
/// `[worker] user` with Chromium as `[worker] browser_user`; its exit code, or why it
/// could not be started so.
pub(crate) async fn supervise(
    config: &Config,
    cert: &Path,
    key: &Path,
    token_file: Option<&Path>,
) -> Result<i32, String> {
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .map(zeroize::Zeroizing::new)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let token = airlock_config::worker_token(token_file, &ProcessEnv).map_err(|e| e.to_string())?;
    let start = airlock_worker::supervise::ListenStart {
        token: zeroize::Zeroizing::new(token.expose().to_owned()),
        cert_pem: read(cert)?,
        key_pem: read(key)?,
        browser: config.browser.clone(),
        supervisor: std::process::id(),
    };
    let args = std::env::args_os().skip(1).collect();
    airlock_worker::supervise::supervise(
        args,
        start,
        airlock_worker::supervise::Users {
            worker: config.worker_user.clone(),
            browser: config.browser_user.clone(),
        },
    )
    .await
}
