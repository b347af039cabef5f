//! The MCP Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`): a long call
//! (`browser_run_task`) answered at once with a task id, then polled with
//! `tasks/get`, cancelled with `tasks/cancel`. rmcp's [`TaskManager`] keeps the
//! tasks; this adds whose each is: a task id is a capability only for the caller that
//! made it — any other caller's `tasks/*` gets "unknown task", as for an id that never
//! was, so an id says nothing to whoever guesses it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use airlock_core::sync::lock;
use rmcp::ErrorData;
use rmcp::model::{DetailedTask, Task};
use rmcp::task_manager::{TaskContext, TaskFuture, TaskManager, TaskOptions};

/// How long a finished task stays readable, and the most a task may run.
const TASK_TTL_MS: u64 = 3_600_000;
/// How often a client is told to poll.
const POLL_MS: u64 = 1_000;

/// The tasks of one server process, each with its caller.
#[derive(Clone, Default)]
pub(crate) struct Tasks {
    manager: TaskManager,
    owners: Arc<Mutex<HashMap<String, String>>>,
}

impl Tasks {
    /// Starts `work` as a task of `caller`: observable by `tasks/get` before this
    /// returns (the seed state goes back as the `CreateTaskResult`).
    pub(crate) fn spawn(
        &self,
        caller: &str,
        status: &str,
        work: impl FnOnce(TaskContext) -> TaskFuture,
    ) -> Task {
        let options = TaskOptions::new()
            .with_ttl_ms(TASK_TTL_MS)
            .with_poll_interval_ms(POLL_MS)
            .with_status_message(status);
        let task = self.manager.spawn(options, work);
        let mut owners = lock(&self.owners);
        // Ids of tasks the manager let go of (past their retention) go too.
        if owners.len() > 1024 {
            owners.retain(|id, _| self.manager.get_task(id).is_ok());
        }
        owners.insert(task.task_id.clone(), caller.to_owned());
        task
    }

    // `caller`'s task `id`, or the error an unknown id gets.
    fn mine(&self, caller: &str, id: &str) -> Result<(), ErrorData> {
        match lock(&self.owners).get(id) {
            Some(owner) if owner == caller => Ok(()),
            _ => Err(ErrorData::invalid_params(
                format!("unknown task {id:?}"),
                None,
            )),
        }
    }

    /// `tasks/get`.
    pub(crate) fn get(&self, caller: &str, id: &str) -> Result<DetailedTask, ErrorData> {
        self.mine(caller, id)?;
        self.manager.get_task(id)
    }

    /// `tasks/update`.
    pub(crate) fn update(
        &self,
        caller: &str,
        id: &str,
        responses: rmcp::model::InputResponses,
    ) -> Result<(), ErrorData> {
        self.mine(caller, id)?;
        self.manager.update_task(id, responses)
    }

    /// `tasks/cancel`.
    pub(crate) fn cancel(&self, caller: &str, id: &str) -> Result<(), ErrorData> {
        self.mine(caller, id)?;
        self.manager.cancel_task(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Another caller's task id answers exactly as an id that never was: no oracle on
    // whether an id is someone's.
    #[tokio::test]
    async fn another_callers_task_is_an_unknown_task() {
        let tasks = Tasks::default();
        let task = tasks.spawn("tenant/alice", "starting", |_| {
            Box::pin(async { Ok(rmcp::model::CallToolResult::success(vec![])) })
        });
        assert!(tasks.get("tenant/alice", &task.task_id).is_ok());
        let theirs = tasks.get("tenant/mallory", &task.task_id).unwrap_err();
        let none = tasks.get("tenant/mallory", "no-such-task").unwrap_err();
        assert_eq!(theirs.code, none.code);
        assert_eq!(theirs.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert_eq!(
            theirs.message.replace(&task.task_id, "ID"),
            none.message.replace("no-such-task", "ID")
        );
        assert!(tasks.cancel("tenant/mallory", &task.task_id).is_err());
        assert!(
            tasks
                .update("tenant/mallory", &task.task_id, Default::default())
                .is_err()
        );
        // Its own caller can.
        assert!(tasks.cancel("tenant/alice", &task.task_id).is_ok());
    }
}
