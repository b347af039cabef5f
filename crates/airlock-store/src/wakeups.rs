//! Prompt news of other replicas' writes. On Postgres, an audit append and an
//! approval decision each `NOTIFY` a channel (empty payload: nothing of the row
//! travels), and a replica `LISTEN`s on one connection of its own. Notifications are
//! lost while that connection is down, so readers still catch up by `seq` or by
//! reading the row: a wake-up only makes them look sooner. SQLite (one process)
//! has none; its readers poll.

use sqlx::postgres::PgListener;

use crate::{Backend, Result, Store};

/// Notified after each audit append commits.
pub(crate) const AUDIT_CHANNEL: &str = "airlock_audit";
/// Notified after each approval decision.
pub(crate) const APPROVALS_CHANNEL: &str = "airlock_approvals";

/// What another replica (or this one) just wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakeup {
    /// An audit event was appended.
    Audit,
    /// An approval was decided.
    Approvals,
}

/// A replica's own listening connection.
pub struct Wakeups(PgListener);

impl Store {
    /// A listener for other replicas' writes; `None` on SQLite.
    pub async fn wakeups(&self) -> Result<Option<Wakeups>> {
        let Backend::Postgres(pool) = &self.backend else {
            return Ok(None);
        };
        let mut listener = PgListener::connect_with(pool).await?;
        listener
            .listen_all([AUDIT_CHANNEL, APPROVALS_CHANNEL])
            .await?;
        Ok(Some(Wakeups(listener)))
    }
}

impl Wakeups {
    /// The next wake-up; reconnects (and listens again) after a lost connection, so
    /// an error means the server cannot be reached now.
    pub async fn next(&mut self) -> Result<Wakeup> {
        loop {
            let note = self.0.recv().await?;
            match note.channel() {
                AUDIT_CHANNEL => return Ok(Wakeup::Audit),
                APPROVALS_CHANNEL => return Ok(Wakeup::Approvals),
                _ => {}
            }
        }
    }
}

// Tells listening replicas that `channel` has news; within a transaction it is sent
// when that commits.
pub(crate) async fn notify<'c>(
    conn: impl sqlx::Executor<'c, Database = sqlx::Postgres>,
    channel: &str,
) -> Result<()> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(channel)
        .execute(conn)
        .await?;
    Ok(())
}
