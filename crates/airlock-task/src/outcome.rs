//! A task's one compact result, the same on every surface: how it ended, in a few
//! words, what the model reported, the steps and tokens it took, the ids that find it
//! on the record, and the final screenshot (never the ones between).

use airlock_core::ErrorCode;
use airlock_gateway::ToolFile;
use serde_json::{Value, json};

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    /// The model called `finish`.
    Finished,
    /// It took every step it was given.
    MaxSteps,
    /// A person must go on: the model asked, or an approval went unanswered.
    NeedsUser,
    /// The policy, a risk rule or an approver refused a step.
    Denied,
    /// It could not go on (the model failed, the session ended, a bound ran out).
    Error,
    /// Its caller cancelled it, or its session ended under it.
    Cancelled,
}

impl TaskStatus {
    /// Its wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Finished => "finished",
            TaskStatus::MaxSteps => "max_steps",
            TaskStatus::NeedsUser => "needs_user",
            TaskStatus::Denied => "denied",
            TaskStatus::Error => "error",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// A finished task.
#[derive(Debug, Clone)]
pub struct TaskResult {
    /// Its id (`task_…`), as the record names it.
    pub task: String,
    /// The browser session it ran in.
    pub session: Option<String>,
    /// How it ended.
    pub status: TaskStatus,
    /// How it ended, in a sentence.
    pub summary: String,
    /// What the model reported (redacted), if it finished.
    pub answer: Option<String>,
    /// Browser steps the model asked for.
    pub steps: u32,
    /// Model tokens spent.
    pub tokens: u64,
    /// The code that ended it, when a step or the model failed it.
    pub error: Option<ErrorCode>,
    /// The page at the end (painted over wherever a secret shows).
    pub screenshot: Option<ToolFile>,
}

impl TaskResult {
    /// Its JSON form (the image aside).
    pub fn to_json(&self) -> Value {
        json!({
            "task": self.task,
            "status": self.status.as_str(),
            "summary": self.summary,
            "answer": self.answer,
            "steps": self.steps,
            "tokens": self.tokens,
            "error": self.error.map(ErrorCode::as_str),
            "trace": {"task": self.task, "session": self.session},
        })
    }
}
