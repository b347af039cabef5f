//! The processes serving from this store: each control-plane replica writes its row
//! at start, refreshes its heartbeat while it runs and removes the row when it stops.
//! A replica whose heartbeat is older than the bound is gone; what it had open is
//! ended by whichever replica takes its live rows first (`take_live_session`: one
//! conditional delete, so each is ended once however many replicas race).

use crate::{Fields, Result, Store, StoreError, on_pool};

/// One serving process as it last said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRecord {
    /// A random id, new at every start.
    pub id: String,
    /// `control` (a control-plane replica).
    pub role: String,
    /// Where it is reached, if others reach it.
    pub address: Option<String>,
    /// Most sessions it holds (0: unbounded or not said).
    pub capacity: i64,
    /// Sessions it holds now.
    pub sessions: i64,
    /// Memory its machine has available, MiB.
    pub free_mb: i64,
    /// Airlock's version.
    pub version: String,
    /// The machine (or pod) it runs on.
    pub hostname: String,
    /// Its process id there.
    pub pid: i64,
    /// Unix milliseconds.
    pub started_ms: i64,
    /// Unix milliseconds of its last heartbeat.
    pub heartbeat_ms: i64,
    /// Taking no new sessions (stopping).
    pub draining: bool,
}

/// A worker that registered itself, as the store has it. Debug never shows its
/// credential.
pub struct RegisteredWorker {
    /// `host:port`.
    pub address: String,
    /// Unix milliseconds of its last registration.
    pub heartbeat_ms: i64,
    /// The credential it made for itself (empty: it registered before credentials
    /// of their own, and is reached by no replica).
    pub token: zeroize::Zeroizing<String>,
}

impl std::fmt::Debug for RegisteredWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredWorker")
            .field("address", &self.address)
            .field("heartbeat_ms", &self.heartbeat_ms)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Writes (or rewrites) a host's row.
    pub async fn upsert_host(&self, host: &HostRecord) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query(
                "INSERT INTO hosts (id, role, address, capacity, sessions, free_mb, version,
                   hostname, pid, started_ms, heartbeat_ms, draining)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                 ON CONFLICT (id) DO UPDATE SET address = excluded.address,
                   capacity = excluded.capacity, sessions = excluded.sessions,
                   free_mb = excluded.free_mb, heartbeat_ms = excluded.heartbeat_ms,
                   draining = excluded.draining",
            )
            .bind(&host.id)
            .bind(&host.role)
            .bind(&host.address)
            .bind(host.capacity)
            .bind(host.sessions)
            .bind(host.free_mb)
            .bind(&host.version)
            .bind(&host.hostname)
            .bind(host.pid)
            .bind(host.started_ms)
            .bind(host.heartbeat_ms)
            .bind(host.draining)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// Notes that the worker at `address` registered itself at `now_ms` with its
    /// own credential `token`: its row is made (named by its address, as replicas
    /// name it) or its heartbeat refreshed; what replicas that reach it wrote of its
    /// load stays. `false`, and nothing written, when the row holds another
    /// credential that registered after `stale_before_ms` (another worker is at that
    /// address; one that restarted waits until its old registration is stale).
    pub async fn register_worker(
        &self,
        address: &str,
        pid: i64,
        token: &str,
        now_ms: i64,
        stale_before_ms: i64,
    ) -> Result<bool> {
        let hostname = address
            .rsplit_once(':')
            .map_or(address, |(host, _)| host)
            .to_owned();
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "INSERT INTO hosts (id, role, address, capacity, sessions, free_mb, version,
                   hostname, pid, started_ms, heartbeat_ms, draining, worker_token)
                 VALUES ($1, 'worker', $1, 0, 0, 0, 'registered', $2, $3, $4, $4, FALSE, $5)
                 ON CONFLICT (id) DO UPDATE SET heartbeat_ms = excluded.heartbeat_ms,
                   pid = excluded.pid, worker_token = excluded.worker_token
                 WHERE hosts.worker_token IS NULL OR hosts.worker_token = excluded.worker_token
                   OR hosts.heartbeat_ms < $6",
            )
            .bind(address)
            .bind(&hostname)
            .bind(pid)
            .bind(now_ms)
            .bind(token)
            .bind(stale_before_ms)
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// The registered workers: each one's address, last registration (unix
    /// milliseconds) and own credential.
    pub async fn registered_workers(&self) -> Result<Vec<RegisteredWorker>> {
        on_pool!(self, |pool| {
            let rows = sqlx::query(
                "SELECT address, heartbeat_ms, worker_token FROM hosts
                 WHERE role = 'worker' AND address IS NOT NULL ORDER BY started_ms, id",
            )
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|r| {
                    Ok(RegisteredWorker {
                        address: r.get("address")?,
                        heartbeat_ms: r.get("heartbeat_ms")?,
                        token: zeroize::Zeroizing::new(
                            r.get::<Option<String>>("worker_token")?.unwrap_or_default(),
                        ),
                    })
                })
                .collect()
        })
    }

    /// Every host's row, oldest first.
    pub async fn hosts(&self) -> Result<Vec<HostRecord>> {
        on_pool!(self, |pool| {
            let rows = sqlx::query("SELECT * FROM hosts ORDER BY started_ms, id")
                .fetch_all(pool)
                .await?;
            rows.iter().map(host_row).collect()
        })
    }

    /// Removes a host's row (it stopped, or it is gone and its sessions are ended).
    pub async fn remove_host(&self, id: &str) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query("DELETE FROM hosts WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    /// Removes a live session's row if it is still there: `true` for the one caller
    /// that removed it (and so ends it on the record).
    pub async fn take_live_session(&self, id: &str) -> Result<bool> {
        let taken = on_pool!(self, |pool| {
            let done = sqlx::query("DELETE FROM live_sessions WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await?;
            Ok::<u64, StoreError>(done.rows_affected())
        })?;
        self.forget_reads(id).await?;
        Ok(taken == 1)
    }
}

impl Store {
    /// Operator `by` holds live session `id`'s page unless another operator does:
    /// `Some(other)` when `other` holds it; `None` when `by` does now (or the session
    /// has no row: it ended, which its next lookup finds).
    pub async fn hold_live_session(&self, id: &str, by: &str) -> Result<Option<String>> {
        on_pool!(self, |pool| {
            sqlx::query(
                "UPDATE live_sessions SET held_by = $1 WHERE id = $2 AND (held_by IS NULL OR held_by = $1)",
            )
            .bind(by)
            .bind(id)
            .execute(pool)
            .await?;
            let row = sqlx::query("SELECT held_by FROM live_sessions WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?;
            let holder: Option<String> = match &row {
                Some(row) => row.get("held_by")?,
                None => None,
            };
            Ok(holder.filter(|h| h != by))
        })
    }

    /// Notes that live session `id` now holds secrets (an operator typed into it):
    /// from then on only the replicas that know them serve it.
    pub async fn mark_live_secrets(&self, id: &str) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query("UPDATE live_sessions SET holds_secrets = TRUE WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    /// Ends a hold on live session `id`: `by`'s only, or whoever's when `None`.
    /// Returns who held it, if this ended a hold.
    pub async fn unhold_live_session(&self, id: &str, by: Option<&str>) -> Result<Option<String>> {
        let holder = match self.live_session(id).await? {
            Some(row) => row.held_by,
            None => return Ok(None),
        };
        let Some(holder) = holder.filter(|h| by.is_none_or(|by| by == h)) else {
            return Ok(None);
        };
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE live_sessions SET held_by = NULL WHERE id = $1 AND held_by = $2",
            )
            .bind(id)
            .bind(&holder)
            .execute(pool)
            .await?;
            Ok((done.rows_affected() == 1).then_some(holder))
        })
    }
}

fn host_row(r: &impl Fields) -> Result<HostRecord> {
    Ok(HostRecord {
        id: r.get("id")?,
        role: r.get("role")?,
        address: r.get("address")?,
        capacity: r.get("capacity")?,
        sessions: r.get("sessions")?,
        free_mb: r.get("free_mb")?,
        version: r.get("version")?,
        hostname: r.get("hostname")?,
        pid: r.get("pid")?,
        started_ms: r.get("started_ms")?,
        heartbeat_ms: r.get("heartbeat_ms")?,
        draining: r.get("draining")?,
    })
}
