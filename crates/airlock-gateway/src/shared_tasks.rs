//! Server-side tasks as every replica sees them, on a shared store: the replica
//! running a task notes its start, steps and end; any replica reads it and asks it
//! to stop (the runner watches for that). The surfaces keep their own running
//! tasks in memory and ask here for the others'; without a shared store there are
//! no others.

use airlock_store::{Store, TaskRecord};

use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::session::Gateway;

/// How an MCP task's owner begins where a REST task names its session: `mcp:`
/// and its caller. A REST route never answers for such an owner (no session is
/// named so), so only the MCP task's own caller reads or cancels it.
pub const MCP_TASK_OWNER: &str = "mcp:";

/// The owner an MCP task of `caller` (`tenant/key`) has in the store.
pub fn mcp_task_owner(caller: &str) -> String {
    format!("{MCP_TASK_OWNER}{caller}")
}

impl Gateway {
    fn task_store(&self) -> Option<&Store> {
        self.shared_store()
    }

    /// Whether other replicas read and cancel this one's tasks (a shared store).
    pub fn shares_tasks(&self) -> bool {
        self.task_store().is_some()
    }

    /// Notes a task this replica started, for the others. A store that cannot take
    /// it is logged: the task runs on, readable here only.
    pub async fn share_task(&self, tenant: &str, session: &str, id: &str, max_steps: u32) {
        let Some(store) = self.task_store() else {
            return;
        };
        let record = TaskRecord {
            id: id.to_owned(),
            tenant: tenant.to_owned(),
            session: session.to_owned(),
            replica: self.replica_id().to_owned(),
            steps: 0,
            max_steps: i64::from(max_steps),
            result: None,
            cancel: false,
            created_ms: now_ms(),
            ended_ms: None,
        };
        if let Err(e) = store.insert_task(&record).await {
            tracing::warn!(error = %e, "could not share a task with the other replicas");
        }
    }

    /// Notes the steps a shared task took.
    pub async fn share_task_progress(&self, id: &str, steps: u32) {
        if let Some(store) = self.task_store()
            && let Err(e) = store.task_progress(id, i64::from(steps)).await
        {
            tracing::warn!(error = %e, "could not share a task's progress");
        }
    }

    /// Whether someone asked, through any replica, for the shared task to stop.
    pub async fn task_cancel_asked(&self, id: &str) -> bool {
        match self.task_store() {
            Some(store) => store.task_cancelled(id).await.unwrap_or(false),
            None => false,
        }
    }

    /// Notes a shared task's end: `view` is the task as the API shows it.
    pub async fn share_task_end(&self, id: &str, steps: u32, view: &serde_json::Value) {
        if let Some(store) = self.task_store()
            && let Err(e) = store
                .end_task(id, i64::from(steps), &view.to_string(), now_ms())
                .await
        {
            tracing::warn!(error = %e, "could not share a task's end");
        }
    }

    /// `tenant`'s task `id` in `session`, as the store has it (another replica's).
    pub async fn shared_task(
        &self,
        tenant: &str,
        session: &str,
        id: &str,
    ) -> Result<Option<TaskRecord>> {
        let Some(store) = self.task_store() else {
            return Ok(None);
        };
        Ok(store
            .task(tenant, id)
            .await
            .map_err(unanswered)?
            .filter(|t| t.session == session))
    }

    /// Asks `tenant`'s task `id` in `session` to stop, wherever it runs; the task as
    /// the store has it then.
    pub async fn cancel_shared_task(
        &self,
        tenant: &str,
        session: &str,
        id: &str,
    ) -> Result<Option<TaskRecord>> {
        let Some(store) = self.task_store() else {
            return Ok(None);
        };
        if self.shared_task(tenant, session, id).await?.is_none() {
            return Ok(None);
        }
        store.cancel_task(tenant, id).await.map_err(unanswered)?;
        self.shared_task(tenant, session, id).await
    }
}

fn unanswered(e: airlock_store::StoreError) -> Error {
    tracing::warn!(error = %e, "the store did not answer for a task");
    Error::StoreUnavailable(
        "the store that holds every replica's tasks cannot be reached; retry shortly".to_owned(),
    )
}
