//! Airlock's vault: credentials encrypted at rest (XChaCha20-Poly1305 under a master
//! key, tenant and name bound as associated data), key loading and atomic rotation,
//! grant tokens, RFC 6238 TOTP, the `{{secret:NAME.field}}` placeholder syntax and the
//! redactor every output passes.
//!
//! Values leave this crate only to be injected into a browser or typed into a page;
//! every type holding one zeroizes on drop and prints `[REDACTED]`.

pub mod apikey;
pub mod grant;
mod identity;
mod key;
pub mod placeholder;
mod secret;
pub mod totp;
mod vault;
pub mod webbotauth;

pub use airlock_redact::{RedactError, Redactor};
pub use airlock_store::{Store, StoreError};
pub use identity::{IdentityKey, IdentitySigner};
pub use key::{KEY_FILE, KeySource, MasterKey, NEXT_KEY_FILE};
pub use secret::{
    Cookie, Fields, Header, MIN_SECRET_LEN, Secret, SecretInfo, StorageItem, canonical_origin,
    check_name,
};
pub use vault::Vault;

/// Vault failures. None carries a secret value.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// The master key does not open this vault.
    #[error("the master key does not open this vault; nothing was changed")]
    WrongKey,
    /// The key could not be read, parsed or written.
    #[error("master key: {0}")]
    Key(String),
    /// A record does not decrypt or encode.
    #[error("{0}")]
    Crypto(String),
    /// No secret of that name.
    #[error("no secret named `{0}`")]
    NotFound(String),
    /// Bad input (name, origin, too-short value …).
    #[error("{0}")]
    Invalid(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl airlock_core::HasErrorCode for VaultError {
    fn code(&self) -> airlock_core::ErrorCode {
        use airlock_core::ErrorCode;
        match self {
            VaultError::NotFound(_) => ErrorCode::NotFound,
            VaultError::Invalid(_) => ErrorCode::InvalidArgument,
            // The key, a record or the store failing is nothing a caller can fix.
            VaultError::WrongKey | VaultError::Key(_) | VaultError::Crypto(_) => {
                ErrorCode::Internal
            }
            VaultError::Store(e) => e.code(),
        }
    }
}
