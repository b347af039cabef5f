//! Server-side tasks (`browser_run_task`, layer 2½ beside the catalogue): one call
//! runs a whole browser task with the operator's model, inside Airlock's boundary.
//!
//! - `spec.rs`: the tool's arguments, described and checked once for every surface.
//! - `model.rs`: the operator's model endpoints (TLS, no proxy, no redirects,
//!   deadlines, retries honouring `Retry-After`); keys never leave this module.
//! - `chat.rs`: the `tools` style (OpenAI-compatible chat completions with function
//!   calling over the catalogue's own tools).
//! - `screen.rs`: the styles that act on screenshots (OpenAI and Anthropic
//!   computer use, UI-TARS), their points mapped onto the viewport.
//! - `run.rs`: the loop; every step is an ordinary call of the agent's session.
//! - `outcome.rs`: the one compact result.
//!
//! Invariants: a step never goes around `AgentSession::call_in_task`; every model
//! request passes the session's redactor as a whole; page text reaches a model only
//! fenced; a model's safety or help signal ends the task `needs_user`, never
//! acknowledged by the loop.

mod chat;
mod model;
mod outcome;
mod run;
mod screen;
mod spec;

pub use chat::TASK_TOOLS;
pub use model::ModelError;
pub use outcome::{TaskResult, TaskStatus};
pub use run::{Progress, Runner, Watch};
pub use spec::{DESCRIPTION, NAME, RunTaskParams, TaskSpec, schema};
