//! `/api/v1/sessions/{id}/tasks`: a backend runs a whole browser task in a session it
//! leased (`browser_run_task` over REST). The task runs in the background on the
//! replica that started it; `GET` reads how it goes (and may wait for its end),
//! `cancel` stops it. On a shared store any replica answers both: the running
//! replica writes the task's steps and end to the store and watches it for a
//! cancel, and a task whose replica died is ended there as an error (`gone.rs` in
//! the gateway). Every id is looked up in the caller's tenant and session: anything
//! else is 404.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_core::ErrorCode;
use airlock_gateway::{Gateway, Principal};
use airlock_task::{Runner, TaskResult, Watch};
use airlock_tools::BadArgument;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use utoipa::IntoParams;

use crate::error::{ApiError, ApiJson, ApiQuery, JsonBody};

/// A task's arguments, as `browser_run_task` takes them (checked by the runner).
pub(crate) struct TaskBody(Map<String, Value>);

impl<'de> Deserialize<'de> for TaskBody {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TaskBody, D::Error> {
        Map::deserialize(d).map(TaskBody)
    }
}

impl JsonBody for TaskBody {
    const WHAT: &'static str = "a JSON object of the task's arguments";
}

/// Finished tasks kept for reading back.
const KEPT: usize = 200;
/// The longest a `GET` waits for a task's end.
const MAX_WAIT_SECS: u64 = 60;
/// How often a replica looks at the store for another replica's task (its end, a
/// cancel asked for elsewhere).
const STORE_POLL: Duration = Duration::from_millis(250);

/// The tasks this replica runs, and what runs them.
pub(crate) struct Board {
    runner: Option<Arc<Runner>>,
    started: std::sync::atomic::AtomicU64,
    tasks: Mutex<HashMap<String, Arc<Running>>>,
}

// One task: whose, where, how far, and its result once it ended.
struct Running {
    tenant: String,
    session: String,
    order: u64,
    cancel: CancellationToken,
    steps: AtomicU32,
    max_steps: u32,
    ended: tokio::sync::watch::Sender<Option<TaskResult>>,
}

/// The task routes (auth is the caller's layer).
pub(crate) fn routes(runner: Option<Arc<Runner>>) -> Router<Arc<Gateway>> {
    let board = Arc::new(Board {
        runner,
        started: Default::default(),
        tasks: Mutex::default(),
    });
    Router::new()
        .route("/api/v1/sessions/{id}/tasks", post(start))
        .route("/api/v1/sessions/{id}/tasks/{task}", get(read))
        .route("/api/v1/sessions/{id}/tasks/{task}/cancel", post(cancel))
        .layer(Extension(board))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Board {
    fn find(
        &self,
        caller: &Principal,
        session: &str,
        task: &str,
    ) -> Result<Arc<Running>, ApiError> {
        lock(&self.tasks)
            .get(task)
            .filter(|t| t.tenant == caller.tenant && t.session == session)
            .cloned()
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "no such task in this session"))
    }

    // Keeps `running`, letting the oldest finished ones go past `KEPT`.
    fn keep(&self, id: &str, running: Arc<Running>) {
        let mut tasks = lock(&self.tasks);
        tasks.insert(id.to_owned(), running);
        if tasks.len() > KEPT {
            let mut finished: Vec<(u64, String)> = tasks
                .iter()
                .filter(|(_, t)| t.ended.borrow().is_some())
                .map(|(id, t)| (t.order, id.clone()))
                .collect();
            finished.sort();
            let over = tasks.len() - KEPT;
            for (_, id) in finished.into_iter().take(over) {
                tasks.remove(&id);
            }
        }
    }
}

// A task as the API shows it: running (with its steps so far), or its result with
// the final screenshot.
fn view(id: &str, running: &Running) -> Value {
    match &*running.ended.borrow() {
        None => json!({
            "task": id,
            "status": "running",
            "steps": running.steps.load(Ordering::Acquire),
            "max_steps": running.max_steps,
            "trace": {"task": id, "session": running.session},
        }),
        Some(result) => {
            let mut value = result.to_json();
            if let Some(shot) = &result.screenshot {
                value["screenshot"] = json!({
                    "mime": shot.mime,
                    "data_base64": base64::engine::general_purpose::STANDARD.encode(&shot.data),
                });
            }
            value
        }
    }
}

/// Runs a task in the leased session: the same arguments as `browser_run_task`
/// (the session's own options are its lease's). Answers at once; the task runs on.
#[utoipa::path(
    post,
    path = "/api/v1/sessions/{id}/tasks",
    tag = "tasks",
    params(("id" = String, Path, description = "The leased session's id")),
    request_body(content = Object, description = "`instruction` (required), `start_url`, `max_steps`, `model`"),
    responses(
        (status = 202, description = "Running: its id and trace", body = Object),
        (status = 400, description = "Arguments that cannot be used", body = crate::error::ErrorBody),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `act`", body = crate::error::ErrorBody),
        (status = 404, description = "No model configured, or no such session", body = crate::error::ErrorBody),
        (status = 410, description = "The session ended", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn start(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    Extension(board): Extension<Arc<Board>>,
    Path(id): Path<String>,
    ApiJson(TaskBody(body)): ApiJson<TaskBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let runner = board.runner.clone().ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotFound,
            "tasks are not offered here: the operator configured no model ([[models]])",
        )
    })?;
    let spec = runner
        .parse(Some(&body))
        .map_err(|BadArgument(why)| ApiError::invalid(why))?;
    if spec.open.is_some() {
        return Err(ApiError::invalid(
            "a leased session's credentials, hosts and recording are its lease's: give only instruction, start_url, max_steps and model",
        ));
    }
    let agent = gateway.session_agent(&caller, &id).await?;
    let task = spec.id.clone();
    let (ended, _) = tokio::sync::watch::channel(None);
    let running = Arc::new(Running {
        tenant: caller.tenant.clone(),
        session: id.clone(),
        order: board.started.fetch_add(1, Ordering::Relaxed),
        cancel: CancellationToken::new(),
        steps: AtomicU32::new(0),
        max_steps: spec.max_steps,
        ended,
    });
    board.keep(&task, running.clone());
    // Every replica's to read and cancel.
    gateway
        .share_task(&caller.tenant, &id, &task, spec.max_steps)
        .await;
    let (progress, mut steps) = tokio::sync::mpsc::unbounded_channel::<airlock_task::Progress>();
    let watch = Watch {
        cancel: running.cancel.clone(),
        progress: Some(progress),
    };
    let counting = running.clone();
    let (sharing, progress_task) = (gateway.clone(), task.clone());
    tokio::spawn(async move {
        while let Some(step) = steps.recv().await {
            counting.steps.store(step.step, Ordering::Release);
            sharing.share_task_progress(&progress_task, step.step).await;
        }
    });
    if gateway.shares_tasks() {
        // A cancel asked for through another replica.
        let (watching, asking, id) = (running.clone(), gateway.clone(), task.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(STORE_POLL);
            loop {
                tick.tick().await;
                if watching.ended.borrow().is_some() {
                    return;
                }
                if asking.task_cancel_asked(&id).await {
                    watching.cancel.cancel();
                    return;
                }
            }
        });
    }
    let finishing = running.clone();
    let (ending, finished) = (gateway.clone(), task.clone());
    tokio::spawn(async move {
        let result = runner.run(&agent, spec, watch).await;
        finishing.steps.store(result.steps, Ordering::Release);
        finishing.ended.send_replace(Some(result));
        let steps = finishing.steps.load(Ordering::Acquire);
        ending
            .share_task_end(&finished, steps, &view(&finished, &finishing))
            .await;
    });
    Ok((StatusCode::ACCEPTED, Json(view(&task, &running))))
}

/// How long a read waits for the task's end.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadQuery {
    /// Seconds to wait for the task to end before answering (0 to 60; default 0).
    wait_secs: Option<u64>,
}

/// The task: running with its steps so far, or its result (with the final
/// screenshot, base64).
#[utoipa::path(
    get,
    path = "/api/v1/sessions/{id}/tasks/{task}",
    tag = "tasks",
    params(
        ("id" = String, Path, description = "The session's id"),
        ("task" = String, Path, description = "The task's id"),
        ReadQuery,
    ),
    responses(
        (status = 200, description = "The task", body = Object),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `act`", body = crate::error::ErrorBody),
        (status = 404, description = "No such task here", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn read(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    Extension(board): Extension<Arc<Board>>,
    Path((id, task)): Path<(String, String)>,
    ApiQuery(query): ApiQuery<ReadQuery>,
) -> Result<Json<Value>, ApiError> {
    let wait = query.wait_secs.unwrap_or(0);
    if wait > MAX_WAIT_SECS {
        return Err(ApiError::invalid(format!(
            "`wait_secs` is 0 to {MAX_WAIT_SECS}; got {wait}"
        )));
    }
    let running = match board.find(&caller, &id, &task) {
        Ok(running) => running,
        // An MCP task's owner is no session: only its caller's MCP requests read it.
        Err(not_here) if id.starts_with(airlock_gateway::MCP_TASK_OWNER) => return Err(not_here),
        // Another replica's task, as the store has it.
        Err(not_here) => {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(wait);
            let mut tick = tokio::time::interval(STORE_POLL);
            loop {
                tick.tick().await;
                let Some(record) = gateway.shared_task(&caller.tenant, &id, &task).await? else {
                    return Err(not_here);
                };
                if record.result.is_some() || tokio::time::Instant::now() >= deadline {
                    return Ok(Json(stored_view(&record)));
                }
            }
        }
    };
    if wait > 0 {
        let mut ended = running.ended.subscribe();
        let _ =
            tokio::time::timeout(Duration::from_secs(wait), ended.wait_for(Option::is_some)).await;
    }
    Ok(Json(view(&task, &running)))
}

/// Stops the task (its step in flight is cut short); it ends `cancelled`.
#[utoipa::path(
    post,
    path = "/api/v1/sessions/{id}/tasks/{task}/cancel",
    tag = "tasks",
    params(
        ("id" = String, Path, description = "The session's id"),
        ("task" = String, Path, description = "The task's id"),
    ),
    responses(
        (status = 202, description = "Cancelling (or already ended): the task as it is", body = Object),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `act`", body = crate::error::ErrorBody),
        (status = 404, description = "No such task here", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn cancel(
    State(gateway): State<Arc<Gateway>>,
    Extension(caller): Extension<Principal>,
    Extension(board): Extension<Arc<Board>>,
    Path((id, task)): Path<(String, String)>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let running = match board.find(&caller, &id, &task) {
        Ok(running) => running,
        // Another replica's task: asked to stop through the store, which its
        // runner watches.
        Err(not_here) if id.starts_with(airlock_gateway::MCP_TASK_OWNER) => return Err(not_here),
        Err(not_here) => {
            return match gateway
                .cancel_shared_task(&caller.tenant, &id, &task)
                .await?
            {
                Some(record) => Ok((StatusCode::ACCEPTED, Json(stored_view(&record)))),
                None => Err(not_here),
            };
        }
    };
    running.cancel.cancel();
    Ok((StatusCode::ACCEPTED, Json(view(&task, &running))))
}

// A stored task as the API shows it (its end as its replica wrote it).
fn stored_view(task: &airlock_gateway::TaskRecord) -> Value {
    match task.result.as_deref().map(serde_json::from_str::<Value>) {
        Some(Ok(result)) => result,
        _ => json!({
            "task": task.id,
            "status": "running",
            "steps": task.steps,
            "max_steps": task.max_steps,
            "trace": {"task": task.id, "session": task.session},
        }),
    }
}
