//! Airlock's shared vocabulary: the public [`ErrorCode`] table every layer maps its
//! errors onto, and the small identifier types ([`NodeRef`]) that cross layers.
//!
//! This crate does no IO, spawns nothing and depends on nothing: everything here is a
//! function of its inputs, so every other crate can use it.

pub mod browser_user;
mod error_code;
mod node_ref;
mod redact;
mod role;
pub mod sync;
pub mod text;

pub use error_code::{ErrorCode, HasErrorCode};
pub use node_ref::{NodeRef, ParseNodeRefError};
pub use redact::{NoRedaction, Redact, RedactSlot};
pub use role::{Role, valid_tenant_name};
