//! This control-plane replica among the others sharing its store. Each replica writes
//! its row in `hosts` at start, refreshes its heartbeat every [`HEARTBEAT`] and
//! removes the row when it stops; every live session row names the replica that
//! opened it. A replica that died (SIGKILL, a lost node) stops beating: after
//! [`GONE_AFTER`] any other replica ends what it had open, on the record, once (the
//! row is taken by one conditional delete). On one machine a dead process is seen at
//! once: same hostname, and its pid no longer runs (or runs as someone new).

use std::collections::HashMap;
use std::time::Duration;

use airlock_store::{HostRecord, LiveSessionRecord, Store};

use crate::clock::now_ms;

/// How often a replica refreshes its row.
pub const HEARTBEAT: Duration = Duration::from_secs(2);
/// A replica silent this long is gone.
pub const GONE_AFTER: Duration = Duration::from_secs(10);

/// This replica's identity and its view of the others.
pub(crate) struct Fleet {
    me: HostRecord,
    // When this process started: a row with this pid on this machine that started
    // before it is an earlier process's (gateways in one process, as in tests, share
    // the pid but not the start).
    process_start: i64,
}

static PROCESS_START: std::sync::OnceLock<i64> = std::sync::OnceLock::new();

impl Fleet {
    pub(crate) fn new() -> Fleet {
        let mut bytes = [0u8; 16];
        // Without randomness the pid and start time still tell this start apart.
        let _ = getrandom::fill(&mut bytes);
        let now = now_ms();
        Fleet {
            process_start: *PROCESS_START.get_or_init(now_ms),
            me: HostRecord {
                id: hex::encode(bytes),
                role: "control".to_owned(),
                address: None,
                capacity: 0,
                sessions: 0,
                free_mb: 0,
                version: env!("CARGO_PKG_VERSION").to_owned(),
                hostname: hostname(),
                pid: i64::from(std::process::id()),
                started_ms: now,
                heartbeat_ms: now,
                draining: false,
            },
        }
    }

    /// This replica's id (a live session row names it).
    pub(crate) fn id(&self) -> &str {
        &self.me.id
    }

    /// Writes this replica's row as it is now.
    pub(crate) async fn beat(&self, store: &Store, sessions: usize, draining: bool) {
        let row = HostRecord {
            sessions: i64::try_from(sessions).unwrap_or(i64::MAX),
            free_mb: airlock_browser::host::memory()
                .map_or(0, |m| i64::try_from(m.available_mib).unwrap_or(i64::MAX)),
            heartbeat_ms: now_ms(),
            draining,
            ..self.me.clone()
        };
        if let Err(e) = store.upsert_host(&row).await {
            tracing::warn!(error = %e, "could not refresh this replica's heartbeat");
        }
    }

    /// Removes this replica's row (it stops, its sessions closed).
    pub(crate) async fn leave(&self, store: &Store) {
        if let Err(e) = store.remove_host(&self.me.id).await {
            tracing::warn!(error = %e, "could not remove this replica's row");
        }
    }

    /// Of `live`, the rows whose replica is gone; and the gone replicas' ids.
    pub(crate) fn gone(
        &self,
        live: Vec<LiveSessionRecord>,
        hosts: &[HostRecord],
    ) -> (Vec<LiveSessionRecord>, Vec<String>) {
        let now = now_ms();
        let by_id: HashMap<&str, &HostRecord> = hosts.iter().map(|h| (h.id.as_str(), h)).collect();
        let rows = live
            .into_iter()
            .filter(|row| opener_gone(self.seen(now), row, &by_id))
            .collect();
        let hosts = hosts
            .iter()
            .filter(|h| host_gone(self.seen(now), h))
            .map(|h| h.id.clone())
            .collect();
        (rows, hosts)
    }

    fn seen(&self, now: i64) -> Seen<'_> {
        Seen {
            me: &self.me,
            process_start: self.process_start,
            now,
            pid_runs,
        }
    }
}

// Who looks, and when.
#[derive(Clone, Copy)]
struct Seen<'a> {
    me: &'a HostRecord,
    process_start: i64,
    now: i64,
    pid_runs: fn(i64) -> bool,
}

// Whether the process that opened `row` is gone, as `seen` sees it.
fn opener_gone(
    seen: Seen<'_>,
    row: &LiveSessionRecord,
    hosts: &HashMap<&str, &HostRecord>,
) -> bool {
    match &row.replica {
        Some(id) if *id == seen.me.id => false,
        Some(id) => match hosts.get(id.as_str()) {
            Some(host) => host_gone(seen, host),
            // A replica writes its row before it opens anything, and removes it only
            // after closing everything: no row is gone, unless the session row is
            // younger than a heartbeat bound (a start racing this look).
            None => seen.now - row.opened_ms > millis(GONE_AFTER),
        },
        // Rows from before replicas were recorded: by process id, on this machine.
        None => row.gateway_pid != seen.me.pid && !(seen.pid_runs)(row.gateway_pid),
    }
}

fn host_gone(seen: Seen<'_>, host: &HostRecord) -> bool {
    if host.id == seen.me.id {
        return false;
    }
    if host.hostname == seen.me.hostname {
        // On this machine, at once: its process no longer runs, or this pid now
        // belongs to a process started after it.
        return if host.pid == seen.me.pid {
            host.started_ms < seen.process_start
        } else {
            !(seen.pid_runs)(host.pid)
        };
    }
    seen.now - host.heartbeat_ms > millis(GONE_AFTER)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

// A process that exited but was not yet reaped (a zombie, state `Z`, or `X`) runs
// no more: a replica killed by its supervisor is gone before the supervisor waits.
fn pid_runs(pid: i64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and may hold
        // anything, `)` too: it is the first field after the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| !matches!(state, "Z" | "X")),
        Err(_) => false,
    }
}

// The machine's (or pod's) name: Kubernetes sets it to the pod's.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".to_owned())
}

// This replica's heartbeat, and the ending of what gone replicas left open: every
// replica looks, and each orphan is ended by the one that takes its row.
pub(crate) async fn heartbeat(gateway: std::sync::Weak<crate::session::Gateway>) {
    let mut tick = tokio::time::interval(crate::fleet::HEARTBEAT);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(gateway) = gateway.upgrade() else {
            return;
        };
        let Some(store) = gateway.store() else {
            return;
        };
        let draining = *gateway.stopping.borrow();
        gateway
            .fleet
            .beat(store, gateway.sessions.list().len(), draining)
            .await;
        if let Err(e) = gateway.end_orphaned_sessions().await {
            tracing::warn!(error = %e, "could not end sessions of gone replicas");
        }
        gateway.learn_registered_workers().await;
        gateway.end_sessions_of_gone_workers().await;
        gateway.record_worker_refusals().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // A real child process is the point: it must exit and stay unreaped.
    #[allow(clippy::disallowed_methods)]
    fn an_exited_unreaped_process_runs_no_more() {
        assert!(pid_runs(i64::from(std::process::id())));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = i64::from(child.id());
        // Until it has exited it may run; once exited (and not yet waited for) it
        // is a zombie, which is not running.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while pid_runs(pid) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "`true` did not exit"
            );
            std::thread::yield_now();
        }
        assert!(
            std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "not reaped yet"
        );
        child.wait().unwrap();
        assert!(!pid_runs(pid));
    }

    fn host(id: &str, hostname: &str, pid: i64, heartbeat_ms: i64) -> HostRecord {
        HostRecord {
            id: id.to_owned(),
            role: "control".to_owned(),
            address: None,
            capacity: 0,
            sessions: 0,
            free_mb: 0,
            version: "t".to_owned(),
            hostname: hostname.to_owned(),
            pid,
            started_ms: 0,
            heartbeat_ms,
            draining: false,
        }
    }

    fn row(replica: Option<&str>, pid: i64, opened_ms: i64) -> LiveSessionRecord {
        LiveSessionRecord {
            id: "s".to_owned(),
            tenant: "t".to_owned(),
            user_id: None,
            conversation: None,
            gateway_pid: pid,
            opened_ms,
            replica: replica.map(str::to_owned),
            ..Default::default()
        }
    }

    #[test]
    fn a_replica_is_gone_when_silent_past_the_bound_or_its_process_is_seen_dead() {
        let now = 1_000_000;
        let me = host("me", "pod-a", 1, now);
        let seen = Seen {
            me: &me,
            process_start: now - 5_000,
            now,
            pid_runs: |pid| pid == 7,
        };
        let other_pod = |beat| host("b", "pod-b", 1, beat);
        let gone = |hosts: Vec<HostRecord>, r: LiveSessionRecord| {
            let by_id = hosts.iter().map(|h| (h.id.as_str(), h)).collect();
            opener_gone(seen, &r, &by_id)
        };
        let started = |mut h: HostRecord, at| {
            h.started_ms = at;
            h
        };
        // Mine is never gone.
        assert!(!gone(vec![], row(Some("me"), 1, 0)));
        // Another pod: by heartbeat only (its pid means nothing here).
        assert!(!gone(vec![other_pod(now - 9_000)], row(Some("b"), 1, 0)));
        assert!(gone(vec![other_pod(now - 11_000)], row(Some("b"), 1, 0)));
        // This machine: at once, by pid; this process's own pid is an earlier
        // process's if it started before this one, another gateway of it otherwise.
        assert!(!gone(vec![host("c", "pod-a", 7, 0)], row(Some("c"), 7, 0)));
        assert!(gone(vec![host("c", "pod-a", 8, now)], row(Some("c"), 8, 0)));
        let same_pid = host("c", "pod-a", 1, now);
        assert!(gone(
            vec![started(same_pid.clone(), now - 6_000)],
            row(Some("c"), 1, 0)
        ));
        assert!(!gone(
            vec![started(same_pid, now - 4_000)],
            row(Some("c"), 1, 0)
        ));
        // No host row: gone, unless the session is younger than the bound.
        assert!(gone(vec![], row(Some("x"), 1, now - 11_000)));
        assert!(!gone(vec![], row(Some("x"), 1, now - 1_000)));
        // Rows from before replicas: by pid.
        assert!(!gone(vec![], row(None, 7, 0)));
        assert!(gone(vec![], row(None, 9, 0)));
        assert!(!gone(vec![], row(None, 1, 0)));
    }
}
