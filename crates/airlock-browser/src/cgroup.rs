//! A memory cgroup around each Chromium, where the host lets us make one.
//!
//! `--js-flags` bounds a page's JavaScript heap, but not what a page makes Chromium
//! allocate natively (canvases, decoded images, WebGL in software). A cgroup does:
//! past its limit the kernel's OOM killer, confined to the group, kills the largest
//! process in it. That is the offending renderer (Chromium raises its renderers'
//! `oom_score_adj`), so the session loses a tab and the host keeps its memory.
//!
//! The group is made beside the gateway's own one (cgroup v1 `memory` hierarchy or
//! the v2 unified one), named `airlock-<gateway pid>-<n>`. Chromium joins it before
//! it starts (see `launch`), so every process it forks is inside from the first. A gateway
//! that cannot write there (no root, no delegation) runs Chromium unbounded and
//! says so once.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Prefix of every cgroup Airlock creates.
const PREFIX: &str = "airlock-";

/// One memory cgroup a Chromium runs in; removed when dropped (or swept later).
#[derive(Debug)]
pub(crate) struct MemoryCgroup {
    dir: PathBuf,
    procs: PathBuf,
}

/// Where the gateway's own memory cgroup is, and which cgroup version it is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Home {
    dir: PathBuf,
    v2: bool,
}

impl MemoryCgroup {
    /// Makes a fresh group limited to `limit` bytes, or says why it cannot.
    pub(crate) fn create(limit: u64) -> Result<MemoryCgroup, String> {
        let home = home()?;
        sweep_stale(&home.dir);
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = home.dir.join(name);
        if home.v2 {
            // Children get a memory.max only if the parent hands the controller down.
            let control = home.dir.join("cgroup.subtree_control");
            let enabled = std::fs::read_to_string(&control).unwrap_or_default();
            if !enabled.split_whitespace().any(|c| c == "memory") {
                std::fs::write(&control, "+memory").map_err(|e| {
                    format!(
                        "cannot enable the memory controller in `{}`: {e}",
                        home.dir.display()
                    )
                })?;
            }
        }
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot create a cgroup in `{}`: {e}", home.dir.display()))?;
        let group = MemoryCgroup {
            procs: dir.join("cgroup.procs"),
            dir,
        };
        let (limit_file, swap_file) = if home.v2 {
            ("memory.max", "memory.swap.max")
        } else {
            ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes")
        };
        std::fs::write(group.dir.join(limit_file), limit.to_string())
            .map_err(|e| format!("cannot set `{limit_file}`: {e}"))?;
        // Without swap accounting a bomb would page out instead of being stopped. Not
        // every kernel accounts swap; the memory limit alone still holds there.
        let swap = if home.v2 { 0 } else { limit };
        let _ = std::fs::write(group.dir.join(swap_file), swap.to_string());
        Ok(group)
    }

    /// The group's directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// `cgroup.procs`: writing `0` there moves the writer into the group.
    pub(crate) fn procs(&self) -> &Path {
        &self.procs
    }

    /// Removes the group once its processes are gone (killed ones leave within
    /// milliseconds), trying for up to `patience`.
    pub(crate) async fn remove(self, patience: Duration) {
        let deadline = tokio::time::Instant::now() + patience;
        loop {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound => break,
                Err(error) if tokio::time::Instant::now() >= deadline => {
                    tracing::warn!(path = %self.dir.display(), %error, "could not remove Chromium's cgroup");
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
        // Nothing left for Drop to do.
        std::mem::forget(self);
    }
}

impl Drop for MemoryCgroup {
    // Paths that never reach `remove`, or whose `remove` was cancelled part way (a
    // panic, a dropped process, a worker stopped while it closed a session): a killed
    // group may still be busy for a few milliseconds, so a short-lived thread keeps
    // trying for the same patience `remove` has; it needs no runtime, which may be
    // going away too. A group still busy after that is swept at the next launch.
    // On an OS thread of its own, with no runtime, std's clock and sleep are the
    // right ones (the lints steer async code and tests to tokio's).
    #[allow(clippy::disallowed_types, clippy::disallowed_methods)]
    fn drop(&mut self) {
        match std::fs::remove_dir(&self.dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(_) => {
                let dir = self.dir.clone();
                let _ = std::thread::Builder::new()
                    .name("cgroup-remove".to_owned())
                    .spawn(move || {
                        let deadline = std::time::Instant::now() + Duration::from_secs(5);
                        while std::time::Instant::now() < deadline {
                            std::thread::sleep(Duration::from_millis(10));
                            match std::fs::remove_dir(&dir) {
                                Ok(()) => return,
                                Err(e) if e.kind() == io::ErrorKind::NotFound => return,
                                Err(_) => {}
                            }
                        }
                        tracing::warn!(path = %dir.display(), "could not remove Chromium's cgroup");
                    });
            }
        }
    }
}

/// A memory cgroup handed to the browser worker's user: the gateway (root) makes it
/// and moves the worker into it; the worker, unprivileged, then makes a bounded
/// group for each of its Chromiums inside it, as the gateway would in its own. It
/// is removed, with whatever the worker left in it, when dropped.
#[derive(Debug)]
pub struct DelegatedCgroup {
    dir: PathBuf,
}

impl DelegatedCgroup {
    /// Makes one beside this process's own group, owned by `uid`:`gid`.
    pub fn create(uid: u32, gid: u32) -> Result<DelegatedCgroup, String> {
        let home = home()?;
        sweep_stale(&home.dir);
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = home.dir.join(format!(
            "{PREFIX}{}-w{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot create a cgroup in `{}`: {e}", home.dir.display()))?;
        let group = DelegatedCgroup { dir };
        // The directory (to make groups in it) and its interface files (to move
        // processes, hand controllers down) become the worker's.
        let chown = |path: &Path| std::os::unix::fs::chown(path, Some(uid), Some(gid));
        chown(&group.dir).map_err(|e| format!("cannot hand the cgroup over: {e}"))?;
        for file in ["cgroup.procs", "tasks", "cgroup.subtree_control"] {
            let path = group.dir.join(file);
            if path.exists() {
                chown(&path).map_err(|e| format!("cannot hand `{file}` over: {e}"))?;
            }
        }
        Ok(group)
    }

    /// Moves process `pid` into it.
    pub fn adopt(&self, pid: u32) -> Result<(), String> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
            .map_err(|e| format!("cannot move the worker into its cgroup: {e}"))
    }

    /// Removes it and the groups the worker left in it once their processes are
    /// gone (killed ones leave within milliseconds), trying for up to `patience`.
    pub async fn remove(self, patience: Duration) {
        let deadline = tokio::time::Instant::now() + patience;
        while !remove_tree(&self.dir) {
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(path = %self.dir.display(), "could not remove the worker's cgroup");
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        std::mem::forget(self);
    }
}

// Removes a cgroup and the groups inside it; whether it is gone.
fn remove_tree(dir: &Path) -> bool {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&entry.path());
            }
        }
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => true,
        Err(e) => e.kind() == io::ErrorKind::NotFound,
    }
}

impl Drop for DelegatedCgroup {
    // Paths that never reach `remove` try once; what is still busy is swept at the
    // next launch after this gateway is gone.
    fn drop(&mut self) {
        remove_tree(&self.dir);
    }
}

/// The gateway's own memory cgroup directory, from `/proc/self/cgroup` and the mount
/// table: the v1 `memory` hierarchy if mounted, else the v2 unified one.
fn home() -> Result<Home, String> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    find_home(&cgroups, &mounts)
        .ok_or_else(|| "no memory cgroup hierarchy is mounted for this process".to_owned())
}

fn find_home(cgroups: &str, mounts: &str) -> Option<Home> {
    let own = |v1_controller: Option<&str>| {
        cgroups.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let matches = match v1_controller {
                Some(c) => controllers.split(',').any(|x| x == c),
                None => controllers.is_empty(),
            };
            matches.then_some(path)
        })
    };
    // mountinfo: id parent major:minor root mountpoint options … - fstype source super
    let mount = |v2: bool| {
        mounts.lines().find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut right = right.split_whitespace();
            let fstype = right.next()?;
            let super_options = right.nth(1).unwrap_or_default();
            let wanted = if v2 {
                fstype == "cgroup2"
            } else {
                fstype == "cgroup" && super_options.split(',').any(|o| o == "memory")
            };
            if !wanted {
                return None;
            }
            let mut left = left.split_whitespace();
            let root = left.nth(3)?;
            let point = left.next()?;
            Some((root.to_owned(), point.to_owned()))
        })
    };
    let place = |path: &str, (root, point): (String, String)| {
        // The mount may show only a subtree (a container's namespace): strip its root.
        let relative = path.strip_prefix(root.as_str()).unwrap_or(path);
        PathBuf::from(point).join(relative.trim_start_matches('/'))
    };
    if let (Some(path), Some(m)) = (own(Some("memory")), mount(false)) {
        return Some(Home {
            dir: place(path, m),
            v2: false,
        });
    }
    if let (Some(path), Some(m)) = (own(None), mount(true)) {
        return Some(Home {
            dir: place(path, m),
            v2: true,
        });
    }
    None
}

/// Removes groups left by gateways that no longer run. A dead gateway's Chromium
/// exits when its pipe closes, so such a group is empty and `rmdir` takes it.
fn sweep_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            // A worker's group holds the groups of its Chromiums: those go first.
            if let Ok(inner) = std::fs::read_dir(entry.path()) {
                for group in inner.flatten() {
                    if group.file_type().is_ok_and(|t| t.is_dir()) {
                        let _ = std::fs::remove_dir(group.path());
                    }
                }
            }
            match std::fs::remove_dir(entry.path()) {
                Ok(()) => {
                    tracing::info!(path = %entry.path().display(), "removed a stale Chromium cgroup")
                }
                Err(error) => {
                    tracing::warn!(path = %entry.path().display(), %error, "could not remove a stale Chromium cgroup")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS_V1: &str = "\
30 23 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
34 30 0:30 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
37 30 0:33 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
42 30 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_v1_memory_hierarchy_wins_over_the_unified_one() {
        let cgroups = "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n";
        assert_eq!(
            find_home(cgroups, MOUNTS_V1),
            Some(Home {
                dir: PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"),
                v2: false
            })
        );
    }

    #[test]
    fn a_pure_v2_host_uses_the_unified_hierarchy_under_its_mount_root() {
        let cgroups = "0::/system.slice/airlock.service\n";
        let mounts = "29 23 0:26 /system.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            find_home(cgroups, mounts),
            Some(Home {
                dir: PathBuf::from("/sys/fs/cgroup/airlock.service"),
                v2: true
            })
        );
    }

    #[test]
    fn no_memory_hierarchy_is_none() {
        assert_eq!(find_home("1:cpu:/\n", MOUNTS_V1), None);
    }
}
