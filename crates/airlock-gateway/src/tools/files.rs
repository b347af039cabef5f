//! Files an agent may hand a page (uploads from `[tools] upload_dir`) and the caps on
//! what crosses.

use super::*;

/// Most files one upload takes.
pub const MAX_UPLOAD_FILES: usize = 10;

/// Largest file an upload takes.
pub const MAX_UPLOAD_BYTES: u64 = 20 * 1024 * 1024;

/// Largest download kept in the download directory.
pub const MAX_DOWNLOAD_BYTES: u64 = 50 * 1024 * 1024;

// The files `names` stand for in the operator's upload directory: plain relative
// names, each a regular file inside it once every symlink is resolved, none over the
// size cap. Nothing outside the directory is ever handed to the browser.
pub(super) fn upload_paths(
    dir: Option<&std::path::Path>,
    names: &[String],
) -> Result<Vec<std::path::PathBuf>> {
    let Some(dir) = dir else {
        return Err(Error::ToolOff {
            tool: "browser_file_upload",
            how: "an operator turns it on with [tools] upload_dir",
        });
    };
    if names.is_empty() || names.len() > MAX_UPLOAD_FILES {
        return Err(Error::InvalidArgument(format!(
            "give 1 to {MAX_UPLOAD_FILES} file names"
        )));
    }
    let root = dir
        .canonicalize()
        .map_err(|e| Error::Internal(format!("the upload directory is unreadable: {e}")))?;
    let mut paths = Vec::with_capacity(names.len());
    for name in names {
        let shown = airlock_core::text::prefix(name, 80);
        let relative = std::path::Path::new(name);
        let plain = !name.is_empty()
            && relative
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain {
            return Err(Error::InvalidArgument(format!(
                "`{shown}` is not a plain name inside the upload directory (no `..`, no absolute path)"
            )));
        }
        let not_found = || Error::NotFound(format!("no file `{shown}` in the upload directory"));
        let path = root
            .join(relative)
            .canonicalize()
            .map_err(|_| not_found())?;
        if !path.starts_with(&root) {
            return Err(Error::InvalidArgument(format!(
                "`{shown}` leads outside the upload directory"
            )));
        }
        let meta = std::fs::metadata(&path).map_err(|_| not_found())?;
        if !meta.is_file() {
            return Err(not_found());
        }
        if meta.len() > MAX_UPLOAD_BYTES {
            return Err(Error::InvalidArgument(format!(
                "`{shown}` is {} bytes, over the {MAX_UPLOAD_BYTES}-byte cap",
                meta.len()
            )));
        }
        paths.push(path);
    }
    Ok(paths)
}
