//! Chromium under a user of its own, apart from the worker that holds the secrets.
//!
//! A root gateway starts the local worker in a user namespace it maps: the
//! namespace's uid 0 is the worker's user and its uid 1 (`BROWSER`) the browser's
//! user, nothing else (real root least of all). Inside it the worker is that
//! namespace's root: it may start Chromium as uid 1 and signal it, make its files
//! Chromium's and still read them, and nothing more (a capability held in a user
//! namespace reaches only processes and files of the uids it maps). Chromium, as
//! the browser's user, holds no capability, cannot signal the worker, trace it or
//! open its directory. The one privileged step — writing the namespace's maps — is
//! the gateway's, which is root outside it; the worker only asks for it (it prints
//! [`UNSHARED`] once in its new namespace and waits for a line on its stdin).

use std::io::Write as _;
use std::os::fd::AsFd as _;

use nix::sched::CloneFlags;
use nix::unistd::{Gid, Uid};

/// What the worker prints once it is in its new namespace, before it is mapped.
pub const UNSHARED: &str = "airlock-worker unshared";

/// Chromium's uid and gid inside the worker's namespace.
pub const BROWSER: u32 = 1;

/// Enters a new user namespace and waits for the gateway to map it (a line on
/// stdin), then becomes its uid and gid 0 (the worker's user outside) with no
/// supplementary group. Called first thing, while the process has one thread (a
/// process with several cannot change its user namespace).
pub fn enter() -> Result<(), String> {
    nix::sched::unshare(CloneFlags::CLONE_NEWUSER)
        .map_err(|e| format!("cannot enter a user namespace of its own: {e}"))?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{UNSHARED}")
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())?;
    }
    // One byte at a time from the descriptor itself: a buffered reader would take
    // the start line that follows, which the worker reads later.
    let stdin = std::io::stdin();
    let mut byte = [0u8; 1];
    loop {
        match nix::unistd::read(stdin.as_fd(), &mut byte) {
            Ok(1) if byte[0] == b'\n' => break,
            Ok(1) => {}
            Ok(_) => return Err("the gateway went before mapping the namespace".to_owned()),
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    nix::unistd::setgroups(&[]).map_err(|e| format!("cannot drop groups: {e}"))?;
    let root_gid = Gid::from_raw(0);
    nix::unistd::setresgid(root_gid, root_gid, root_gid)
        .map_err(|e| format!("cannot take the worker's group: {e}"))?;
    let root = Uid::from_raw(0);
    nix::unistd::setresuid(root, root, root)
        .map_err(|e| format!("cannot take the worker's user: {e}"))?;
    Ok(())
}

/// Maps process `pid`'s user namespace: its 0 to `worker` (uid, gid) and its
/// [`BROWSER`] to `browser` (uid, gid). Root's to do, outside the namespace.
pub(crate) fn map(pid: u32, worker: (u32, u32), browser: (u32, u32)) -> std::io::Result<()> {
    std::fs::write(
        format!("/proc/{pid}/uid_map"),
        format!("0 {} 1\n{BROWSER} {} 1\n", worker.0, browser.0),
    )?;
    std::fs::write(
        format!("/proc/{pid}/gid_map"),
        format!("0 {} 1\n{BROWSER} {} 1\n", worker.1, browser.1),
    )
}

/// The uid a process outside the namespace's map shows as inside it (the gateway,
/// root outside, to the worker it connects to).
pub(crate) fn overflow_uid() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/overflowuid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(65534)
}

/// The uid `inside` of this process's user namespace is outside it (the initial
/// namespace's number, which `doctor` and logs name); itself when unmapped or in the
/// initial namespace.
pub fn outside(inside: u32) -> u32 {
    let Ok(map) = std::fs::read_to_string("/proc/self/uid_map") else {
        return inside;
    };
    map.lines()
        .filter_map(|line| {
            let mut n = line.split_whitespace().map(|v| v.parse::<u64>().ok());
            Some((n.next()??, n.next()??, n.next()??))
        })
        .find(|(first, _, count)| (*first..first + count).contains(&u64::from(inside)))
        .and_then(|(first, lower, _)| u32::try_from(lower + u64::from(inside) - first).ok())
        .unwrap_or(inside)
}
