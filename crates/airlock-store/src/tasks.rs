//! Server-side tasks started over REST, as every replica sees them: the replica that
//! runs one writes its progress and its end; any replica reads it, waits on it and
//! asks for it to be cancelled (the runner watches the flag); a task whose replica
//! is gone is ended as an error by whichever replica notices first.

use crate::{Fields, Result, Store, on_pool};

/// One task as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    /// Its id.
    pub id: String,
    /// Its caller's tenant.
    pub tenant: String,
    /// The session it runs in.
    pub session: String,
    /// The replica (its `hosts` id) that runs it.
    pub replica: String,
    /// Steps taken so far.
    pub steps: i64,
    /// Most steps it may take.
    pub max_steps: i64,
    /// The task as the API shows it once it ended (JSON); `None` while it runs.
    pub result: Option<String>,
    /// Whether someone asked for it to stop.
    pub cancel: bool,
    /// Unix milliseconds.
    pub created_ms: i64,
    /// When it ended.
    pub ended_ms: Option<i64>,
}

impl Store {
    /// Notes a task that started running.
    pub async fn insert_task(&self, task: &TaskRecord) -> Result<()> {
        on_pool!(self, |pool| {
            sqlx::query(
                "INSERT INTO tasks (id, tenant, session, replica, steps, max_steps, result, cancel, created_ms, ended_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(&task.id)
            .bind(&task.tenant)
            .bind(&task.session)
            .bind(&task.replica)
            .bind(task.steps)
            .bind(task.max_steps)
            .bind(&task.result)
            .bind(task.cancel)
            .bind(task.created_ms)
            .bind(task.ended_ms)
            .execute(pool)
            .await?;
            Ok(())
        })
    }

    /// One task of `tenant`'s (another tenant's reads as none).
    pub async fn task(&self, tenant: &str, id: &str) -> Result<Option<TaskRecord>> {
        on_pool!(self, |pool| {
            let row = sqlx::query("SELECT * FROM tasks WHERE id = $1 AND tenant = $2")
                .bind(id)
                .bind(tenant)
                .fetch_optional(pool)
                .await?;
            row.as_ref().map(task_row).transpose()
        })
    }

    /// Notes the steps a running task took; whether it was asked to stop.
    pub async fn task_progress(&self, id: &str, steps: i64) -> Result<bool> {
        on_pool!(self, |pool| {
            let cancel: Option<bool> = sqlx::query_scalar(
                "UPDATE tasks SET steps = $1 WHERE id = $2 AND result IS NULL RETURNING cancel",
            )
            .bind(steps)
            .bind(id)
            .fetch_optional(pool)
            .await?;
            Ok(cancel.unwrap_or(false))
        })
    }

    /// Whether task `id` was asked to stop.
    pub async fn task_cancelled(&self, id: &str) -> Result<bool> {
        on_pool!(self, |pool| {
            let cancel: Option<bool> = sqlx::query_scalar("SELECT cancel FROM tasks WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?;
            Ok(cancel.unwrap_or(false))
        })
    }

    /// Asks `tenant`'s task `id` to stop (its runner, on whichever replica, sees
    /// it); `false` when there is no such task.
    pub async fn cancel_task(&self, tenant: &str, id: &str) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query("UPDATE tasks SET cancel = TRUE WHERE id = $1 AND tenant = $2")
                .bind(id)
                .bind(tenant)
                .execute(pool)
                .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Notes a task's end: `result` is the task as the API shows it. Only the first
    /// end counts (`false` for a later one).
    pub async fn end_task(&self, id: &str, steps: i64, result: &str, now_ms: i64) -> Result<bool> {
        on_pool!(self, |pool| {
            let done = sqlx::query(
                "UPDATE tasks SET steps = $1, result = $2, ended_ms = $3 WHERE id = $4 AND result IS NULL",
            )
            .bind(steps)
            .bind(result)
            .bind(now_ms)
            .bind(id)
            .execute(pool)
            .await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// The tasks `replica` was running, still without an end.
    pub async fn running_tasks_of(&self, replica: &str) -> Result<Vec<TaskRecord>> {
        on_pool!(self, |pool| {
            let rows = sqlx::query("SELECT * FROM tasks WHERE replica = $1 AND result IS NULL")
                .bind(replica)
                .fetch_all(pool)
                .await?;
            rows.iter().map(task_row).collect()
        })
    }

    /// Forgets ended tasks older than `before_ms`.
    pub async fn prune_tasks(&self, before_ms: i64) -> Result<u64> {
        on_pool!(self, |pool| {
            let done = sqlx::query("DELETE FROM tasks WHERE result IS NOT NULL AND ended_ms < $1")
                .bind(before_ms)
                .execute(pool)
                .await?;
            Ok(done.rows_affected())
        })
    }
}

fn task_row(r: &impl Fields) -> Result<TaskRecord> {
    Ok(TaskRecord {
        id: r.get("id")?,
        tenant: r.get("tenant")?,
        session: r.get("session")?,
        replica: r.get("replica")?,
        steps: r.get("steps")?,
        max_steps: r.get("max_steps")?,
        result: r.get("result")?,
        cancel: r.get("cancel")?,
        created_ms: r.get("created_ms")?,
        ended_ms: r.get("ended_ms")?,
    })
}
