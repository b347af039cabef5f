//! Artifacts: what sessions leave for operators (an `audit` recording's screenshots),
//! in the store when replicas share it, so that whichever replica an operator reaches
//! shows them and none depends on one machine's disk.

use crate::{Result, Store, on_pool};

impl Store {
    /// Stores an artifact under `name`; an existing one of that name is an error
    /// (what the audit log points at is never rewritten).
    pub async fn put_artifact(
        &self,
        name: &str,
        tenant: &str,
        created_ms: i64,
        data: &[u8],
    ) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query(
                "INSERT INTO artifacts (name, tenant, created_ms, data) VALUES ($1, $2, $3, $4)",
            )
            .bind(name)
            .bind(tenant)
            .bind(created_ms)
            .bind(data)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// The artifact `name`, if it is still there.
    pub async fn artifact(&self, name: &str) -> Result<Option<Vec<u8>>> {
        on_pool!(self, |pool| {
            let row: Option<(Vec<u8>,)> =
                sqlx::query_as("SELECT data FROM artifacts WHERE name = $1")
                    .bind(name)
                    .fetch_optional(pool)
                    .await?;
            Ok(row.map(|(data,)| data))
        })
    }

    /// Removes the artifacts stored before `before_ms`; how many went.
    pub async fn drop_artifacts_before(&self, before_ms: i64) -> Result<u64> {
        on_pool!(self, |pool| {
            let done = sqlx::query("DELETE FROM artifacts WHERE created_ms < $1")
                .bind(before_ms)
                .execute(pool)
                .await?;
            Ok(done.rows_affected())
        })
    }
}
