//! The MCP Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`): a long call
//! (`browser_run_task`) answered at once with a task id, then polled with
//! `tasks/get`, cancelled with `tasks/cancel`. rmcp's [`TaskManager`] keeps the
//! tasks; this adds whose each is: a task id is a capability only for the caller that
//! made it — any other caller's `tasks/*` gets "unknown task", as for an id that never
//! was, so an id says nothing to whoever guesses it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use airlock_core::ErrorCode;
use airlock_core::sync::lock;
use airlock_gateway::{AgentSession, ToolOutput};
use airlock_tools::BadArgument;
use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, DetailedTask, Task};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskContext, TaskFuture, TaskManager, TaskOptions};

use crate::AirlockMcp;
use crate::server::{Serving, result};

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

impl AirlockMcp {
    // `browser_run_task`: the task runs in this MCP session's browser session (a
    // stateless request's one-off session, closed after), each step an ordinary call;
    // the client's cancellation stops it, and a progress token gets one notification
    // per step.
    pub(crate) async fn run_task(
        &self,
        arguments: Option<&serde_json::Map<String, serde_json::Value>>,
        request: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let Some(runner) = &self.tasks else {
            return Ok(result(ToolOutput::error(
                ErrorCode::InvalidArgument,
                "no model is configured for tasks",
            ))
            .into());
        };
        let spec = match runner.parse(arguments) {
            Ok(spec) => spec,
            Err(BadArgument(why)) => {
                return Ok(result(ToolOutput::error(ErrorCode::InvalidArgument, why)).into());
            }
        };
        let (agent, one_off) = match self.agent_for(&request.extensions).await {
            Serving::Held(agent) => (agent, false),
            Serving::OneOff(agent) => (agent, true),
            Serving::Refused(refusal) => return Ok(result(refusal).into()),
        };
        // A client of the Tasks extension gets the task's id at once and polls.
        if request
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks())
        {
            let task = self.spawn_task(runner.clone(), agent, one_off, spec);
            return Ok(CallToolResponse::Task(rmcp::model::CreateTaskResult::new(
                task,
            )));
        }
        let (sender, mut steps) = tokio::sync::mpsc::unbounded_channel::<airlock_task::Progress>();
        let token = request.meta.get_progress_token();
        let forwarding = token.map(|token| {
            let peer = request.peer.clone();
            tokio::spawn(async move {
                while let Some(step) = steps.recv().await {
                    let note = rmcp::model::ProgressNotificationParam::new(
                        token.clone(),
                        f64::from(step.step),
                    )
                    .with_total(f64::from(step.max_steps))
                    .with_message(step.message);
                    let _ = peer.notify_progress(note).await;
                }
            })
        });
        let watch = airlock_task::Watch {
            cancel: request.ct.child_token(),
            progress: forwarding.is_some().then_some(sender),
        };
        let outcome = runner.run(&agent, spec, watch).await;
        if one_off {
            agent.close().await;
        }
        // Every step's notification goes out before the result.
        if let Some(forwarding) = forwarding {
            let _ = forwarding.await;
        }
        Ok(task_result(&outcome).into())
    }

    // `browser_run_task` as an MCP task: each step becomes its status message,
    // `tasks/cancel` stops the loop (the task settles `cancelled`), and its result
    // is the call's result.
    fn spawn_task(
        &self,
        runner: Arc<airlock_task::Runner>,
        agent: Arc<AgentSession>,
        one_off: bool,
        spec: airlock_task::TaskSpec,
    ) -> rmcp::model::Task {
        let caller = agent.principal().caller();
        self.task_store.spawn(&caller, "starting", move |cx| {
            Box::pin(async move {
                let cancel = tokio_util::sync::CancellationToken::new();
                let (sender, mut steps) =
                    tokio::sync::mpsc::unbounded_channel::<airlock_task::Progress>();
                let telling = {
                    let cx = cx.clone();
                    tokio::spawn(async move {
                        while let Some(step) = steps.recv().await {
                            cx.set_status_message(format!(
                                "step {}/{}: {}",
                                step.step, step.max_steps, step.message
                            ));
                        }
                    })
                };
                let watch = airlock_task::Watch {
                    cancel: cancel.clone(),
                    progress: Some(sender),
                };
                let run = runner.run(&agent, spec, watch);
                tokio::pin!(run);
                let outcome = tokio::select! {
                    outcome = &mut run => outcome,
                    () = cx.cancelled() => {
                        cancel.cancel();
                        run.await
                    }
                };
                if one_off {
                    agent.close().await;
                }
                telling.abort();
                if outcome.status == airlock_task::TaskStatus::Cancelled {
                    return Err(rmcp::task_manager::TaskExit::Cancelled);
                }
                Ok(task_result(&outcome))
            })
        })
    }
}

// A task's result: its JSON as text and structured content, and the final screenshot
// as the one image; an error only when the task ended in one.
pub(crate) fn task_result(outcome: &airlock_task::TaskResult) -> CallToolResult {
    let value = outcome.to_json();
    let mut content = vec![ContentBlock::text(value.to_string())];
    if let Some(shot) = &outcome.screenshot {
        content.push(ContentBlock::image(
            base64::engine::general_purpose::STANDARD.encode(&shot.data),
            shot.mime,
        ));
    }
    let mut done = if outcome.status == airlock_task::TaskStatus::Error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    done.structured_content = Some(value);
    done
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
