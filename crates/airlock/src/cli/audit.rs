//! `airlock audit verify|tail`: the audit log of the data dir, checked and read; and
//! the audit signing key the gateway signs checkpoints with.

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use hex::ToHex as _;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use airlock_audit::{Checkpoint, SigningKey, VerifyingKey};
use airlock_config::Config;
use anyhow::{Context as _, bail};
use base64::Engine as _;

/// The Ed25519 key checkpoints are signed with, in the data dir (0600).
pub(crate) const KEY_FILE: &str = "audit.key";
/// Signed checkpoints, one note after another, beside the database.
pub(crate) const CHECKPOINTS_FILE: &str = "audit.checkpoints";
/// The log's name in its checkpoints.
pub(crate) const LOG_NAME: &str = "airlock.local/audit";
/// Events between checkpoints.
const EVERY: u64 = 100;
/// Where `audit` recordings keep their screenshots, in the data dir.
pub(crate) const RECORDINGS_DIR: &str = "recordings";

pub(crate) use super::replay::replay;

/// The checkpoint signing key `config` names: `[audit] key_file`, the one every
/// replica shares (it must exist), else the data dir's, created (0600) if missing.
/// One others can read is refused.
pub(crate) fn signing_key(config: &Config) -> anyhow::Result<SigningKey> {
    if let Some(shared) = &config.audit.key_file {
        return read_key(shared)?.with_context(|| {
            format!(
                "audit.key_file {} does not exist: write 32 random bytes, base64, to it (head -c 32 /dev/urandom | base64)",
                shared.display()
            )
        });
    }
    let path = config.data_dir.join(KEY_FILE);
    if let Some(key) = read_key(&path)? {
        return Ok(key);
    }
    let mut seed = zeroize::Zeroizing::new([0u8; 32]);
    getrandom::fill(&mut *seed)
        .map_err(|e| anyhow::anyhow!("no randomness for the audit key: {e}"))?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    let text = zeroize::Zeroizing::new(base64::engine::general_purpose::STANDARD.encode(*seed));
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()?;
    Ok(SigningKey::from_bytes(&seed))
}

fn read_key(path: &Path) -> anyhow::Result<Option<SigningKey>> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    // Group-readable is the pod's own group where Kubernetes mounts a Secret with an
    // fsGroup; other users never.
    if meta.permissions().mode() & 0o007 != 0 {
        bail!(
            "{} is readable by other users (mode {:o}); chmod 600 it",
            path.display(),
            meta.permissions().mode() & 0o777
        );
    }
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
    );
    let bytes = zeroize::Zeroizing::new(
        base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .ok()
            .filter(|b| b.len() == 32)
            .with_context(|| format!("{} is not a 32-byte base64 key", path.display()))?,
    );
    let mut seed = [0u8; 32];
    seed.copy_from_slice(&bytes);
    Ok(Some(SigningKey::from_bytes(&seed)))
}

/// How the gateway signs checkpoints under `config`'s data dir.
pub(crate) fn checkpoints(config: &Config) -> anyhow::Result<airlock_gateway::Checkpoints> {
    if let Some(dir) = &config.audit.publish_dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating audit.publish_dir {}", dir.display()))?;
    }
    Ok(airlock_gateway::Checkpoints {
        name: LOG_NAME.to_owned(),
        key: Arc::new(signing_key(config)?),
        path: config.data_dir.join(CHECKPOINTS_FILE),
        every: EVERY,
        publish_dir: config.audit.publish_dir.clone(),
    })
}

/// The checkpoints in the file at `path`, each checked against `name`'s `key`.
fn read_checkpoints(
    path: &Path,
    name: &str,
    key: &VerifyingKey,
) -> Result<Vec<Checkpoint>, airlock_audit::Broken> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    airlock_audit::split_notes(&text)
        .iter()
        .map(|note| Checkpoint::open(note, name, key))
        .collect()
}

/// Rows read from the store at a time.
const PAGE: u32 = 10_000;

/// `verify`'s exit code for a log that is one chain but that no signed checkpoint
/// vouches for.
const UNANCHORED: u8 = 2;

/// Exit 0 when the log is intact, 1 at the first thing wrong (named), 2 when it is
/// intact but no signed checkpoint covers any of it (said loudly). Checkpoints are
/// checked with `public_key` (a C2SP verifier key), else with the data dir's key.
/// With `export`, checks that file (`audit export` output from the first event) instead
/// of the database, against `checkpoints` (default: the data dir's).
pub(crate) async fn verify(
    config: &Config,
    public_key: Option<&str>,
    export: Option<&Path>,
    checkpoints: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let checkpoints_path = checkpoints
        .map(Path::to_path_buf)
        .unwrap_or_else(|| config.data_dir.join(CHECKPOINTS_FILE));
    let key = match public_key {
        Some(text) => Some(
            airlock_audit::parse_verifier_key(text)
                .context("--public-key is not a verifier key (name+keyid+base64)")?,
        ),
        None => read_key(&key_path(config))?.map(|key| (LOG_NAME.to_owned(), key.verifying_key())),
    };
    if key.is_none() && checkpoints_path.exists() {
        bail!(
            "no audit key at {}: give --public-key to check its checkpoints",
            key_path(config).display()
        );
    }
    let rows = match export {
        Some(path) => exported_rows(path)?,
        None => stored_rows(config).await?,
    };
    let checkpoints = match &key {
        Some((name, key)) => read_checkpoints(&checkpoints_path, name, key),
        None => Ok(Vec::new()),
    };
    let checked = checkpoints.and_then(|checkpoints| airlock_audit::verify(&rows, &checkpoints));
    match checked {
        // A chain with nothing signed over it proves only that it is a chain: whoever
        // can write the data dir can rewrite every event and chain them anew.
        Ok(verified) if verified.anchored == 0 && verified.events > 0 => {
            println!(
                "UNANCHORED: {} events form one unbroken chain, but no signed checkpoint covers any of them ({}), so a rewrite of the whole log would verify just the same. Check against checkpoints published off this machine: --checkpoints FILE ([audit] publish_dir).",
                verified.events,
                checkpoints_path.display()
            );
            Ok(ExitCode::from(UNANCHORED))
        }
        Ok(verified) => {
            let root: String = verified.root.encode_hex::<String>();
            println!(
                "ok: {} events, {} signed checkpoints, tree root {root}",
                verified.events, verified.checkpoints
            );
            if verified.anchored < verified.events {
                println!(
                    "note: the last {} events come after the newest signed checkpoint (of {}); they are chained, and the next checkpoint will cover them",
                    verified.events - verified.anchored,
                    verified.anchored
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(broken) => {
            println!("broken: {broken}");
            Ok(ExitCode::from(1))
        }
    }
}

/// The last `n` events, one canonical JSON line each: a page's title or name cannot
/// start a line or send an escape sequence (control characters stay escaped).
pub(crate) async fn tail(config: &Config, n: u32, follow: bool) -> anyhow::Result<ExitCode> {
    let mut interrupted = interrupts()?;
    let store = super::vault::open_store(config).await?;
    let mut last = 0;
    for record in store.audit_tail(n).await? {
        println!("{}", terminal_safe(&record.body));
        last = record.seq;
    }
    if !follow {
        return Ok(ExitCode::SUCCESS);
    }
    if last == 0 {
        last = store.audit_tail(1).await?.last().map_or(0, |r| r.seq);
    }
    self::follow(&store, last, &mut interrupted, |record| {
        println!("{}", terminal_safe(&record.body));
    })
    .await
}

/// Follows the log after `last` until Ctrl-C, handing each new record to `each`:
/// another process (a running gateway) writes it; the store is the meeting point.
/// `audit tail --follow`, `approvals watch` and `login watch` read it so.
pub(crate) async fn follow(
    store: &airlock_store::Store,
    mut last: u64,
    interrupted: &mut tokio::signal::unix::Signal,
    mut each: impl FnMut(&airlock_store::AuditRecord),
) -> anyhow::Result<ExitCode> {
    let mut tick = tokio::time::interval(FOLLOW_POLL);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = interrupted.recv() => return Ok(ExitCode::SUCCESS),
        }
        for record in store.audit_events(last, PAGE).await? {
            last = record.seq;
            each(&record);
        }
    }
}

/// Ctrl-C (SIGINT), caught from now on: registered before anything is printed, so
/// an interrupt between polls is never lost (nor does it kill the process mid-line).
pub(crate) fn interrupts() -> anyhow::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("listening for Ctrl-C")
}

/// How often `--follow` and `watch` look for new events.
pub(crate) const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// A JSON line made safe for a terminal: JSON already escapes C0 controls (newlines,
/// ESC); this also escapes DEL, C1 controls (a lone U+009B is a CSI to some
/// terminals) and the bidirectional overrides that make text read other than it is.
/// Inside a JSON string the escape is the same character, so the line stays JSON.
pub(crate) fn terminal_safe(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if airlock_core::text::is_invisible_control(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// `airlock audit download NAME --out FILE`: a download its session kept in the
/// shared store, written (0600) to a new file.
pub(crate) async fn download(
    config: &Config,
    saved_as: &str,
    out: &Path,
) -> anyhow::Result<ExitCode> {
    // The names sessions report: what the browser generated, nothing else.
    if saved_as.is_empty()
        || !saved_as
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        bail!("`{saved_as}` is not a download's saved-as name (letters, digits and -)");
    }
    let store = super::vault::open_store(config).await?;
    if !store.is_shared() {
        bail!(
            "this store keeps no downloads: with SQLite, sessions keep them in [tools] download_dir"
        );
    }
    let Some(data) = store
        .artifact(&airlock_gateway::download_artifact(saved_as))
        .await?
    else {
        bail!("no download `{saved_as}` is kept (never made, or past the retention)");
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(out)
        .with_context(|| format!("creating {}", out.display()))?;
    file.write_all(&data)?;
    file.sync_all()?;
    let sha256: String = {
        use sha2::Digest as _;
        sha2::Sha256::digest(&data).encode_hex::<String>()
    };
    println!(
        "{} bytes, SHA-256 {sha256}, written to {}",
        data.len(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Where `config`'s checkpoint key is: the shared key file, else the data dir's.
fn key_path(config: &Config) -> std::path::PathBuf {
    config
        .audit
        .key_file
        .clone()
        .unwrap_or_else(|| config.data_dir.join(KEY_FILE))
}

/// The verifier key of the audit key (for `verify --public-key` elsewhere).
pub(crate) fn public_key(config: &Config) -> anyhow::Result<ExitCode> {
    match read_key(&key_path(config))? {
        Some(key) => {
            println!(
                "{}",
                airlock_audit::verifier_key(LOG_NAME, &key.verifying_key())
            );
            Ok(ExitCode::SUCCESS)
        }
        None => bail!("no audit key at {} yet", key_path(config).display()),
    }
}

/// Every event after `since` (of one session, if given), one canonical JSON line
/// each: what `verify` checks, for an auditor's own tools.
pub(crate) async fn export(
    config: &Config,
    since: u64,
    session: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let store = super::vault::open_store(config).await?;
    let mut after = since;
    loop {
        let page = store.audit_events(after, PAGE).await?;
        let Some(last) = page.last() else {
            break;
        };
        after = last.seq;
        for record in &page {
            if session.is_none_or(|s| record.session.as_deref() == Some(s)) {
                // Verbatim: verify --export hashes these bytes.
                println!("{}", record.body);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn stored_rows(config: &Config) -> anyhow::Result<Vec<airlock_audit::Row>> {
    let store = super::vault::open_store(config).await?;
    let mut rows = Vec::new();
    let mut after = 0;
    loop {
        let page = store.audit_events(after, PAGE).await?;
        let Some(last) = page.last() else {
            break;
        };
        after = last.seq;
        rows.extend(page.iter().map(airlock_store::AuditRecord::row));
    }
    Ok(rows)
}

// An export's lines as rows: the chain is recomputed from the bodies (an export does
// not carry it), so what catches an edit there is the signed checkpoints.
fn exported_rows(path: &Path) -> anyhow::Result<Vec<airlock_audit::Row>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut previous = [0u8; 32];
    let mut rows = Vec::new();
    for (i, line) in text.lines().filter(|l| !l.is_empty()).enumerate() {
        let seq = serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v["seq"].as_u64())
            .unwrap_or(i as u64 + 1);
        let chain = airlock_audit::chain(
            &previous,
            &airlock_audit::merkle::leaf_hash(line.as_bytes()),
        );
        previous = chain;
        rows.push(airlock_audit::Row {
            seq,
            body: line.to_owned(),
            chain,
            columns: Vec::new(),
        });
    }
    Ok(rows)
}
