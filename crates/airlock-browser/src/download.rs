//! Downloads, where the operator allows them: Chromium saves each file into the
//! download directory under a generated name (its GUID); a download over the size
//! cap is cancelled and what it wrote removed; a finished one is reported by name,
//! size and SHA-256 — its bytes never reach the agent.

use hex::ToHex as _;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use airlock_core::sync::lock;
use serde_json::{Value, json};

use crate::action::Notice;
use crate::cdp::Connection;
use crate::guard::NavGuard;

/// Where a session's downloads go and how large one may be.
pub(crate) struct Downloads {
    dir: PathBuf,
    cap: u64,
    context_id: String,
    /// GUID -> the name the page suggested (redacted, cut), for this session's
    /// downloads in progress.
    pending: Mutex<HashMap<String, String>>,
}

impl Downloads {
    pub(crate) fn new(dir: PathBuf, cap: u64, context_id: String) -> Downloads {
        Downloads {
            dir,
            cap,
            context_id,
            pending: Mutex::default(),
        }
    }

    /// A download that began in one of this session's frames: tracked from now on.
    pub(crate) fn begin(&self, params: &Value, name: String) {
        if let Some(guid) = params["guid"].as_str() {
            lock(&self.pending).insert(guid.to_owned(), name);
        }
    }

    /// Progress of some download: for one of this session's, a cap overrun cancels
    /// it, and its end is reported.
    pub(crate) fn progress(&self, conn: &Connection, notices: &NavGuard, params: &Value) {
        let Some(guid) = params["guid"].as_str() else {
            return;
        };
        let Some(name) = lock(&self.pending).get(guid).cloned() else {
            return;
        };
        let received = params["receivedBytes"].as_f64().unwrap_or(0.0) as u64;
        let total = params["totalBytes"].as_f64().unwrap_or(0.0) as u64;
        let path = self.dir.join(guid);
        match params["state"].as_str().unwrap_or_default() {
            "inProgress" | "completed" if received > self.cap || total > self.cap => {
                lock(&self.pending).remove(guid);
                notices.notify(Notice::DownloadRefused {
                    name,
                    why: format!("it is larger than the {}-byte cap", self.cap),
                });
                let (conn, guid, context) =
                    (conn.clone(), guid.to_owned(), self.context_id.clone());
                tokio::spawn(async move {
                    let _ = conn
                        .call(
                            None,
                            "Browser.cancelDownload",
                            json!({ "guid": guid, "browserContextId": context }),
                            Duration::from_secs(5),
                        )
                        .await;
                    let _ = tokio::fs::remove_file(&path).await;
                });
            }
            "completed" => {
                lock(&self.pending).remove(guid);
                let (notices, guid, cap) = (notices.clone(), guid.to_owned(), self.cap);
                tokio::spawn(async move {
                    let read = tokio::task::spawn_blocking(move || hash_file(&path, cap)).await;
                    let notice = match read {
                        Ok(Ok((bytes, sha256))) => Notice::Downloaded {
                            name,
                            saved_as: guid,
                            bytes,
                            sha256,
                        },
                        Ok(Err(why)) => Notice::DownloadRefused { name, why },
                        Err(_) => return,
                    };
                    notices.notify(notice);
                });
            }
            "canceled" => {
                lock(&self.pending).remove(guid);
                notices.notify(Notice::DownloadRefused {
                    name,
                    why: "it was cancelled".to_owned(),
                });
            }
            _ => {}
        }
    }
}

// Size and SHA-256 of a finished download; one past the cap after all (its size
// unknown while it came) is removed.
fn hash_file(path: &std::path::Path, cap: u64) -> Result<(u64, String), String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| format!("it could not be read: {e}"))?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    if bytes > cap {
        drop(file);
        let _ = std::fs::remove_file(path);
        return Err(format!("it is larger than the {cap}-byte cap"));
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| format!("it could not be read: {e}"))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let sha256 = hasher.finalize().encode_hex::<String>();
    Ok((bytes, sha256))
}
