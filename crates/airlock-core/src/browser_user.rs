//! The user a process's Chromium runs as, when not its own.
//!
//! A local worker started by a root gateway runs in a user namespace where Chromium
//! has a uid of its own (see `airlock-worker`'s `userns`). Said once, at the
//! worker's start, and read where Chromium is started and where a connection from
//! it is told from another user's (a session's egress proxy).

use std::sync::OnceLock;

static IDS: OnceLock<(u32, u32)> = OnceLock::new();

/// Chromium of this process runs as `uid` and `gid`. Only the first call counts.
pub fn set(uid: u32, gid: u32) {
    let _ = IDS.set((uid, gid));
}

/// The uid and gid Chromium runs as, if not this process's own.
pub fn get() -> Option<(u32, u32)> {
    IDS.get().copied()
}
