//! What a gone replica leaves behind besides its sessions (`leasing.rs` ends those):
//! the held calls it waited on and the tasks it ran. Neither will ever go on, so
//! whichever replica notices first closes them, on the record and in the store, and
//! every replica then answers for them as ended: approving one says it expired, and
//! reading a task says it ended in error because its replica stopped.

use airlock_audit::{self as audit, Event};
use airlock_store::Store;
use serde_json::json;

use crate::session::Gateway;

/// Why a gone replica's task ended.
const TASK_REPLICA_GONE: &str =
    "the control-plane replica running it stopped before it ended; nothing more ran";

impl Gateway {
    /// This replica's id, as the store's rows name it (`hosts`, `live_sessions`).
    pub fn replica_id(&self) -> &str {
        self.fleet.id()
    }

    // Closes what `replica` (gone) left waiting or running.
    pub(crate) async fn close_what_is_left(&self, store: &Store, replica: &str, now: i64) {
        self.close_dead_waits(store, replica, now).await;
        self.end_dead_tasks(store, replica, now).await;
    }

    // A gone replica's held calls will never run: their approvals close as expired,
    // on the record and on every approver's card, so approving one says so rather
    // than answering `approved` for nothing.
    async fn close_dead_waits(&self, store: &airlock_store::Store, replica: &str, now: i64) {
        const NOTE: &str =
            "its call is no longer waiting: the replica that held it stopped before anyone decided";
        let closed = match store.close_waits_of(replica, now, NOTE).await {
            Ok(closed) => closed,
            Err(e) => {
                tracing::warn!(error = %e, "could not close the approvals a gone replica waited on");
                return;
            }
        };
        self.record_expired(closed, NOTE).await;
    }

    async fn end_dead_tasks(&self, store: &Store, replica: &str, now: i64) {
        let running = match store.running_tasks_of(replica).await {
            Ok(running) => running,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the tasks a gone replica ran");
                return;
            }
        };
        for task in running {
            let result = json!({
                "task": task.id,
                "status": "error",
                "summary": TASK_REPLICA_GONE,
                "answer": null,
                "steps": task.steps,
                "tokens": 0,
                "error": "internal",
                "trace": {"task": task.id, "session": task.session},
            });
            match store
                .end_task(&task.id, task.steps, &result.to_string(), now)
                .await
            {
                Ok(true) => {}
                // Another replica ended it first: its event is on the record.
                Ok(false) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "could not end a gone replica's task");
                    continue;
                }
            }
            self.record_event(
                Some(&task.tenant),
                Event::TaskEnded(audit::TaskEnded {
                    task: task.id,
                    session: Some(task.session),
                    status: "error".to_owned(),
                    steps: u32::try_from(task.steps).unwrap_or(u32::MAX),
                    tokens: 0,
                    answer: None,
                    error: Some("internal".to_owned()),
                    duration_ms: u64::try_from(now - task.created_ms).unwrap_or(0),
                }),
            )
            .await;
        }
    }
}
