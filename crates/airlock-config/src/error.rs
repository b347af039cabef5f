//! Configuration errors, each naming the file or key at fault.

use std::path::PathBuf;

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file is not valid TOML or has unknown keys.
    #[error("{}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// A value is present but wrong.
    #[error("{key}: {message}")]
    Invalid {
        /// Dotted key path, or the environment variable's name.
        key: String,
        /// What is wrong with it.
        message: String,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
