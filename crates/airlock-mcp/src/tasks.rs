//! The MCP Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`): a long call
//! (`browser_run_task`) answered at once with a task id, then polled with
//! `tasks/get`, cancelled with `tasks/cancel`. rmcp's [`TaskManager`] keeps the
//! tasks; this adds whose each is: a task id is a capability only for the caller that
//! made it — any other caller's `tasks/*` gets "unknown task", as for an id that never
//! was, so an id says nothing to whoever guesses it.
//!
//! On a shared store every replica answers for every task: the replica running one
//! notes its start (before the client hears its id), its steps and its end in the
//! store's task table, its owner being the caller (`mcp:` and the caller, where a REST
//! task names its session); another replica's `tasks/get` reads it there and its
//! `tasks/cancel` sets the flag the running replica watches. A task whose replica is
//! gone ends in error there (`gone.rs`). What another replica cannot give back is
//! the final screenshot (the store keeps the result's JSON, not its image).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use airlock_core::ErrorCode;
use airlock_core::sync::lock;
use airlock_gateway::{AgentSession, ToolOutput};
use airlock_tools::BadArgument;
use base64::Engine as _;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, DetailedTask, Task, TaskPayload,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskContext, TaskFuture, TaskManager, TaskOptions};

use crate::AirlockMcp;
use crate::server::{Serving, result};

/// How long a finished task stays readable, and the most a task may run.
const TASK_TTL_MS: u64 = 3_600_000;
/// How often a client is told to poll.
const POLL_MS: u64 = 1_000;
/// How often a running task looks for a cancel asked through another replica.
const STORE_POLL: std::time::Duration = std::time::Duration::from_millis(250);

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

    /// Whether this process runs (or ran) `caller`'s task `id`.
    pub(crate) fn here(&self, caller: &str, id: &str) -> bool {
        self.mine(caller, id).is_ok()
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

/// The error an id gets that is not the caller's task (or no task at all).
pub(crate) fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown task {id:?}"), None)
}

/// Who owns an MCP task in the store's task table (where a REST task names its
/// session): another caller's lookup names another owner and finds nothing.
pub(crate) fn owner(caller: &str) -> String {
    airlock_gateway::mcp_task_owner(caller)
}

/// A task another replica runs (or ran), as the store has it, in the shape
/// `tasks/get` answers.
pub(crate) fn stored(record: &airlock_gateway::TaskRecord) -> DetailedTask {
    let at = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .unwrap_or_default()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    };
    let created = at(record.created_ms);
    let updated = at(record.ended_ms.unwrap_or(record.created_ms));
    let base = Task::new(
        &record.id,
        rmcp::model::TaskStatus::Working,
        created,
        updated,
    )
    .with_ttl_ms(TASK_TTL_MS)
    .with_poll_interval_ms(POLL_MS);
    let view = record
        .result
        .as_deref()
        .and_then(|r| serde_json::from_str::<serde_json::Value>(r).ok());
    let Some(view) = view else {
        let base = base.with_status_message(format!(
            "step {}/{} (running on replica {})",
            record.steps, record.max_steps, record.replica
        ));
        return DetailedTask::new(base, TaskPayload::Working);
    };
    let status = view["status"].as_str().unwrap_or("error");
    if status == "cancelled" {
        return DetailedTask::new(base, TaskPayload::Cancelled);
    }
    // The call's result as the running replica would have inlined it, less its image.
    let mut done = if status == "error" {
        CallToolResult::error(vec![ContentBlock::text(view.to_string())])
    } else {
        CallToolResult::success(vec![ContentBlock::text(view.to_string())])
    };
    done.structured_content = Some(view);
    let result = match serde_json::to_value(&done) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    DetailedTask::new(base, TaskPayload::Completed { result })
}

impl AirlockMcp {
    /// `tasks/get`: the caller's task here, or (on a shared store) another
    /// replica's as the store has it.
    pub(crate) async fn task_get(
        &self,
        ext: &rmcp::model::Extensions,
        id: &str,
    ) -> Result<DetailedTask, ErrorData> {
        let caller = self.caller(ext)?;
        if self.task_store.here(&caller, id) || !self.gateway.shares_tasks() {
            return self.task_store.get(&caller, id);
        }
        let tenant = self.tenant(ext)?;
        match self.gateway.shared_task(&tenant, &owner(&caller), id).await {
            Ok(Some(record)) => Ok(stored(&record)),
            Ok(None) => Err(unknown(id)),
            Err(e) => Err(unanswered(&e)),
        }
    }

    // The calling tenant (as `caller` names the caller).
    fn tenant(&self, ext: &rmcp::model::Extensions) -> Result<String, ErrorData> {
        self.principal(ext)
            .map(|p| p.tenant)
            .map_err(|_| ErrorData::internal_error("this request was not authenticated", None))
    }

    /// `tasks/cancel`: here, or through the flag another replica's runner watches.
    pub(crate) async fn task_cancel(
        &self,
        ext: &rmcp::model::Extensions,
        id: &str,
    ) -> Result<(), ErrorData> {
        let caller = self.caller(ext)?;
        if self.task_store.here(&caller, id) || !self.gateway.shares_tasks() {
            return self.task_store.cancel(&caller, id);
        }
        let tenant = self.tenant(ext)?;
        match self
            .gateway
            .cancel_shared_task(&tenant, &owner(&caller), id)
            .await
        {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(unknown(id)),
            Err(e) => Err(unanswered(&e)),
        }
    }

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
            let principal = agent.principal().clone();
            let max_steps = spec.max_steps;
            let (shared, sharing) = tokio::sync::oneshot::channel();
            let task = self.spawn_task(runner.clone(), agent, one_off, spec, sharing);
            // On the store before the client hears the id, so any replica it polls
            // knows the task; the task starts once it is there (its end then always
            // has a row to land on).
            self.gateway
                .share_task(
                    &principal.tenant,
                    &owner(&principal.caller()),
                    &task.task_id,
                    max_steps,
                )
                .await;
            let _ = shared.send(());
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
        shared: tokio::sync::oneshot::Receiver<()>,
    ) -> rmcp::model::Task {
        let caller = agent.principal().caller();
        let gateway = self.gateway.clone();
        self.task_store.spawn(&caller, "starting", move |cx| {
            Box::pin(async move {
                let _ = shared.await;
                let id = cx.task_id().to_owned();
                let cancel = tokio_util::sync::CancellationToken::new();
                let (sender, mut steps) =
                    tokio::sync::mpsc::unbounded_channel::<airlock_task::Progress>();
                let taken = Arc::new(std::sync::atomic::AtomicU32::new(0));
                let telling = {
                    let (cx, gateway, id, taken) =
                        (cx.clone(), gateway.clone(), id.clone(), taken.clone());
                    tokio::spawn(async move {
                        while let Some(step) = steps.recv().await {
                            cx.set_status_message(format!(
                                "step {}/{}: {}",
                                step.step, step.max_steps, step.message
                            ));
                            taken.store(step.step, std::sync::atomic::Ordering::Release);
                            gateway.share_task_progress(&id, step.step).await;
                        }
                    })
                };
                // A cancel asked for through another replica.
                let watching = gateway.shares_tasks().then(|| {
                    let (gateway, id, cancel) = (gateway.clone(), id.clone(), cancel.clone());
                    tokio::spawn(async move {
                        let mut tick = tokio::time::interval(STORE_POLL);
                        loop {
                            tick.tick().await;
                            if gateway.task_cancel_asked(&id).await {
                                cancel.cancel();
                                return;
                            }
                        }
                    })
                });
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
                if let Some(watching) = watching {
                    watching.abort();
                }
                let steps = taken
                    .load(std::sync::atomic::Ordering::Acquire)
                    .max(outcome.steps);
                gateway.share_task_end(&id, steps, &outcome.to_json()).await;
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

// A store that cannot say where a task stands: an internal error that says so (the
// task may be alive; retrying is right).
fn unanswered(e: &airlock_gateway::Error) -> ErrorData {
    ErrorData::internal_error(e.to_string(), None)
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
