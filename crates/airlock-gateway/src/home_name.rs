//! A home's name: the SHA-256 of its kind and name, so the store never holds a
//! session id or a session URL, only what a request carrying one can recompute.

use sha2::{Digest as _, Sha256};

/// The home of the stateful MCP session `session_id`.
pub fn mcp_home(session_id: &str) -> String {
    digest("mcp", session_id)
}

/// The home of the session URL `/mcp/s/<handle>`.
pub(crate) fn url_home(handle: &str) -> String {
    digest("url", handle)
}

fn digest(kind: &str, name: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(kind.as_bytes());
    hash.update(b"/");
    hash.update(name.as_bytes());
    hex::encode(hash.finalize())
}
