//! A live session's running state, shared by the replicas that serve it: the actions
//! it ran, counted against its budget in one conditional update (so replicas
//! together never run more than the budget), and what its results showed of each
//! origin, appended in the order its replicas wrote it (so a replica that serves the
//! session next catches up on what the others read before it judges a send).
//!
//! Written on Postgres through connections that do not wait for the WAL flush (a
//! replica's death loses nothing committed; a database crash may lose the last
//! fraction of a second: a few actions uncounted, a read unshared), which keeps
//! the cost per call under a millisecond.
//!
//! The reads are what the data-flow history keeps: normalised lines, written after
//! redaction; the store never sees a secret here either.

use crate::{Backend, Result, StoreError};

// Runs `$body` with `$pool` bound to the pool running state is written through: on
// Postgres the store's unsynced connections (see `Store::unsynced`), on SQLite its
// one pool.
macro_rules! on_running {
    ($store:expr, |$pool:ident| $body:expr) => {
        match (&$store.backend, &$store.unsynced) {
            (Backend::Sqlite($pool), _) => $body,
            (Backend::Postgres(_), Some($pool)) | (Backend::Postgres($pool), None) => $body,
        }
    };
}

/// Most reads rows kept per session; older ones go (every [`PRUNE_EVERY`]th
/// append). The gateway's own history is bounded in bytes; this bounds the rows a
/// replica catching up reads.
pub const READS_KEPT: i64 = 4096;
const PRUNE_EVERY: i64 = 256;
// Concurrent appends of one session race for the next number; the loser tries again.
const APPEND_TRIES: usize = 8;

/// What a session's results showed of one origin, as one replica kept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    /// Its place in the session's reads (from 1, no gaps).
    pub n: i64,
    /// The origin it was read on.
    pub origin: String,
    /// The lines kept, normalised, `\n`-separated.
    pub lines: String,
}

impl crate::Store {
    /// Counts one action of live session `id` against `budget`: `Some(actions)` with
    /// the count including this one, `None` when every replica's actions together
    /// reached the budget already. A session with no row (never noted, or ended) is
    /// `Some(0)`: nothing here to count against.
    pub async fn count_action(&self, id: &str, budget: u64) -> Result<Option<u64>> {
        let budget = i64::try_from(budget).unwrap_or(i64::MAX);
        on_running!(self, |pool| {
            let counted: Option<i64> = sqlx::query_scalar(
                "UPDATE live_sessions SET actions = actions + 1 WHERE id = $1 AND actions < $2 RETURNING actions",
            )
            .bind(id)
            .bind(budget)
            .fetch_optional(pool)
            .await?;
            if let Some(actions) = counted {
                return Ok(Some(actions.max(0) as u64));
            }
            let known: Option<i64> =
                sqlx::query_scalar("SELECT actions FROM live_sessions WHERE id = $1")
                    .bind(id)
                    .fetch_optional(pool)
                    .await?;
            Ok(match known {
                Some(_) => None,
                None => Some(0),
            })
        })
    }

    /// Actions live session `id` ran on every replica so far (0 without a row).
    pub async fn actions(&self, id: &str) -> Result<u64> {
        on_running!(self, |pool| {
            let known: Option<i64> =
                sqlx::query_scalar("SELECT actions FROM live_sessions WHERE id = $1")
                    .bind(id)
                    .fetch_optional(pool)
                    .await?;
            Ok(known.unwrap_or(0).max(0) as u64)
        })
    }

    /// Appends what session `id` read on `origin`; its number.
    pub async fn append_read(&self, id: &str, origin: &str, lines: &str) -> Result<i64> {
        for _ in 0..APPEND_TRIES {
            let appended: std::result::Result<i64, sqlx::Error> = on_running!(self, |pool| {
                sqlx::query_scalar(
                    "INSERT INTO session_reads (session_id, n, origin, lines)
                     SELECT CAST($1 AS TEXT), COALESCE(MAX(n), 0) + 1, CAST($2 AS TEXT), CAST($3 AS TEXT)
                     FROM session_reads WHERE session_id = $1
                     RETURNING n",
                )
                .bind(id)
                .bind(origin)
                .bind(lines)
                .fetch_one(pool)
                .await
            });
            match appended {
                Ok(n) => {
                    if n % PRUNE_EVERY == 0 {
                        self.prune_reads(id, n - READS_KEPT).await?;
                    }
                    return Ok(n);
                }
                Err(sqlx::Error::Database(e)) if e.is_unique_violation() => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Corrupt(format!(
            "session reads: {APPEND_TRIES} appends of one session collided"
        )))
    }

    /// Session `id`'s reads numbered after `after`, in order.
    pub async fn reads_after(&self, id: &str, after: i64) -> Result<Vec<ReadRecord>> {
        on_running!(self, |pool| {
            let rows: Vec<(i64, String, String)> = sqlx::query_as(
                "SELECT n, origin, lines FROM session_reads WHERE session_id = $1 AND n > $2 ORDER BY n",
            )
            .bind(id)
            .bind(after)
            .fetch_all(pool)
            .await?;
            Ok(rows
                .into_iter()
                .map(|(n, origin, lines)| ReadRecord { n, origin, lines })
                .collect())
        })
    }

    async fn prune_reads(&self, id: &str, upto: i64) -> Result<()> {
        on_running!(self, |pool| {
            sqlx::query("DELETE FROM session_reads WHERE session_id = $1 AND n <= $2")
                .bind(id)
                .bind(upto)
                .execute(pool)
                .await?;
            Ok(())
        })
    }

    // A session's reads go with its row.
    pub(crate) async fn forget_reads(&self, id: &str) -> Result<()> {
        self.prune_reads(id, i64::MAX).await
    }
}
