//! The master key: from `AIRLOCK_MASTER_KEY` (base64, 32 bytes) or a key file under
//! the data dir created with mode 0600 on first run.

use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use zeroize::Zeroizing;

use crate::VaultError;

/// Name of the key file in the data dir.
pub const KEY_FILE: &str = "master.key";
/// A rotation's new key, written before the records are rewritten and renamed over
/// the key file after; whichever opens the vault is the one in force.
pub const NEXT_KEY_FILE: &str = "master.key.next";

/// 32 bytes of key; zeroed on drop, never printed.
#[derive(Clone)]
pub struct MasterKey(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey([REDACTED])")
    }
}

/// Where the master key came from (said in errors, never the key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `AIRLOCK_MASTER_KEY`.
    Env,
    /// A key file.
    File(PathBuf),
}

impl std::fmt::Display for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeySource::Env => f.write_str("AIRLOCK_MASTER_KEY"),
            KeySource::File(path) => write!(f, "{}", path.display()),
        }
    }
}

impl MasterKey {
    /// A fresh random key.
    pub fn generate() -> Result<MasterKey, VaultError> {
        let mut bytes = Zeroizing::new([0u8; 32]);
        getrandom::fill(bytes.as_mut())
            .map_err(|e| VaultError::Key(format!("no randomness for a key: {e}")))?;
        Ok(MasterKey(bytes))
    }

    /// Parses base64 (standard or URL-safe, padded or not) of exactly 32 bytes.
    pub fn from_base64(text: &str) -> Result<MasterKey, VaultError> {
        let text = text.trim();
        let decoded = Zeroizing::new(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .or_else(|_| {
                    base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .decode(text.trim_end_matches('='))
                })
                .map_err(|_| VaultError::Key("the master key is not base64".to_owned()))?,
        );
        let bytes: [u8; 32] = decoded.as_slice().try_into().map_err(|_| {
            VaultError::Key(format!(
                "the master key must be 32 bytes; this one is {}",
                decoded.len()
            ))
        })?;
        Ok(MasterKey(Zeroizing::new(bytes)))
    }

    /// Base64 of the key, for a key file or an operator's environment.
    pub fn to_base64(&self) -> Zeroizing<String> {
        Zeroizing::new(base64::engine::general_purpose::STANDARD.encode(self.0.as_ref()))
    }

    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The key from `env_value` (the `AIRLOCK_MASTER_KEY` value) if given, else from
    /// `data_dir/master.key`, created (mode 0600) with a new key if missing.
    pub fn load(
        data_dir: &Path,
        env_value: Option<&str>,
    ) -> Result<(MasterKey, KeySource), VaultError> {
        if let Some(text) = env_value.filter(|t| !t.trim().is_empty()) {
            return Ok((MasterKey::from_base64(text)?, KeySource::Env));
        }
        let path = data_dir.join(KEY_FILE);
        match read_key_file(&path)? {
            Some(key) => Ok((key, KeySource::File(path))),
            None => {
                // Readable by this user only: not by the browser worker's.
                std::os::unix::fs::DirBuilderExt::mode(
                    std::fs::DirBuilder::new().recursive(true),
                    0o700,
                )
                .create(data_dir)
                .map_err(|e| {
                    VaultError::Key(format!("cannot create {}: {e}", data_dir.display()))
                })?;
                let key = MasterKey::generate()?;
                write_key_file(&path, &key, false)?;
                Ok((key, KeySource::File(path)))
            }
        }
    }
}

/// Reads a key file; `None` if it does not exist. Refuses one others can read.
pub(crate) fn read_key_file(path: &Path) -> Result<Option<MasterKey>, VaultError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(VaultError::Key(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(VaultError::Key(format!(
            "{} is readable by other users (mode {:o}); chmod 600 it",
            path.display(),
            meta.permissions().mode() & 0o777
        )));
    }
    let text = Zeroizing::new(
        std::fs::read_to_string(path)
            .map_err(|e| VaultError::Key(format!("cannot read {}: {e}", path.display())))?,
    );
    MasterKey::from_base64(&text)
        .map(Some)
        .map_err(|e| VaultError::Key(format!("{}: {e}", path.display())))
}

/// Writes a key file with mode 0600 and syncs it; `replace` allows overwriting.
pub(crate) fn write_key_file(
    path: &Path,
    key: &MasterKey,
    replace: bool,
) -> Result<(), VaultError> {
    let fail = |e: std::io::Error| VaultError::Key(format!("cannot write {}: {e}", path.display()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).mode(0o600);
    if replace {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let mut file = options.open(path).map_err(fail)?;
    // A file that existed keeps its old mode: make sure it is 0600.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(fail)?;
    file.write_all(key.to_base64().as_bytes()).map_err(fail)?;
    file.write_all(b"\n").map_err(fail)?;
    file.sync_all().map_err(fail)?;
    Ok(())
}

/// Renames `from` over `to` and syncs the directory, so the switch survives a crash.
pub(crate) fn commit_rename(from: &Path, to: &Path) -> Result<(), VaultError> {
    std::fs::rename(from, to)
        .map_err(|e| VaultError::Key(format!("cannot rename {}: {e}", from.display())))?;
    if let Some(dir) = to.parent()
        && let Ok(dir) = std::fs::File::open(dir)
    {
        let _ = dir.sync_all();
    }
    Ok(())
}
