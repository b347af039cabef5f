//! The task loop: look at the page (a snapshot call), ask the operator's model for
//! the next moves, run each as an ordinary call of the agent's session
//! (`AgentSession::call_in_task`: policy, placeholders, risk rules and approvals,
//! budgets, audit, recording, redaction), until the model finishes, a bound is
//! reached, a step is refused, or the caller cancels. Everything a model request
//! holds passes the session's redactor as a whole first.

use std::sync::Arc;
use tokio::time::Instant;

use airlock_audit::{Event, TaskEnded, TaskStarted};
use airlock_config::{ModelStyle, Tasks};
use airlock_core::ErrorCode;
use airlock_gateway::{AgentSession, ToolCall, ToolOutput};
use airlock_tools::BadArgument;
use serde_json::{Map, Value};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::chat::{self, Move, Step};
use crate::model::{Endpoint, ModelError};
use crate::outcome::{TaskResult, TaskStatus};
use crate::screen::{self, Screen, ScreenStep};
use crate::spec::{self, TaskSpec};

/// Bytes of the last step's result a request recalls; earlier ones get less.
const LAST_RESULT_BYTES: usize = 1_500;
const EARLIER_RESULT_BYTES: usize = 300;
const ARGS_BYTES: usize = 300;
/// The answer a result carries, at most.
const ANSWER_CHARS: usize = 4_000;

/// Told after each step, for a surface that reports progress.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Steps taken so far.
    pub step: u32,
    /// The most it may take.
    pub max_steps: u32,
    /// What the step did, in a few words.
    pub message: String,
}

/// How a surface follows and stops a task.
#[derive(Debug, Default, Clone)]
pub struct Watch {
    /// Cancelled by the caller (an MCP cancellation, a REST cancel).
    pub cancel: CancellationToken,
    /// Where progress goes, if anyone listens.
    pub progress: Option<UnboundedSender<Progress>>,
}

/// The operator's models and the bounds of every task: what runs `browser_run_task`.
#[derive(Debug)]
pub struct Runner {
    endpoints: Vec<Arc<Endpoint>>,
    bounds: Tasks,
}

impl Runner {
    /// A runner over `[[models]]` and `[tasks]`; a vault model key is loaded from
    /// `vault` at its first use.
    pub fn new(
        tasks: &Tasks,
        vault: Option<Arc<airlock_vault::Vault>>,
    ) -> Result<Runner, ModelError> {
        let endpoints = tasks
            .models
            .iter()
            .map(|m| Endpoint::new(m.clone(), vault.clone(), tasks.retries).map(Arc::new))
            .collect::<Result<_, _>>()?;
        Ok(Runner {
            endpoints,
            bounds: tasks.clone(),
        })
    }

    /// The runner a gateway's surfaces share, when the operator configured a model
    /// (a model key in the vault is read from the gateway's vault).
    pub fn for_gateway(tasks: &Tasks, gateway: &airlock_gateway::Gateway) -> Option<Arc<Runner>> {
        if tasks.models.is_empty() {
            return None;
        }
        match Runner::new(tasks, gateway.vault().cloned()) {
            Ok(runner) => Some(Arc::new(runner)),
            Err(e) => {
                tracing::error!(error = %e, "browser_run_task is not offered: its model client could not be made");
                None
            }
        }
    }

    /// Whether any model is configured (else the tool is not offered).
    pub fn offered(&self) -> bool {
        !self.endpoints.is_empty()
    }

    /// The task `arguments` ask for, checked (the model must be one configured).
    pub fn parse(&self, arguments: Option<&Map<String, Value>>) -> Result<TaskSpec, BadArgument> {
        let spec = spec::parse(arguments, self.bounds.max_steps)?;
        if self.endpoint(spec.model.as_deref()).is_none() {
            let names: Vec<&str> = self.endpoints.iter().map(|e| e.name()).collect();
            return Err(BadArgument(match &spec.model {
                Some(_) => format!(
                    "`model` names no model of the operator's; these are: {}",
                    names.join(", ")
                ),
                None => "no model is configured for tasks; the operator adds [[models]]".to_owned(),
            }));
        }
        Ok(spec)
    }

    fn endpoint(&self, name: Option<&str>) -> Option<&Arc<Endpoint>> {
        let model = self.bounds.model(name)?;
        self.endpoints.iter().find(|e| e.name() == model.name)
    }

    /// Runs `spec` in `agent`'s browser session until it ends; never fails (how it
    /// ended is the result's status).
    pub async fn run(&self, agent: &AgentSession, spec: TaskSpec, watch: Watch) -> TaskResult {
        let started = Instant::now();
        let task = spec.id.clone();
        let Some(endpoint) = self.endpoint(spec.model.as_deref()).cloned() else {
            return TaskResult {
                task,
                session: None,
                status: TaskStatus::Error,
                summary: "no model is configured for tasks".to_owned(),
                answer: None,
                steps: 0,
                tokens: 0,
                error: Some(ErrorCode::InvalidArgument),
                screenshot: None,
            };
        };
        let mut run = Run {
            agent,
            task: &task,
            bounds: &self.bounds,
            endpoint,
            watch,
            max_steps: spec.max_steps,
            deadline: started + self.bounds.max_time,
            steps: 0,
            tokens: 0,
            history: Vec::new(),
            page_line: String::new(),
            session_gone: CancellationToken::new(),
            session: None,
        };
        let ended = run.drive(spec).await;
        let end = match ended {
            Ok(end) | Err(end) => end,
        };
        run.finish(end, started).await
    }
}

// How a task ended, before its result is put together.
struct End {
    status: TaskStatus,
    summary: String,
    answer: Option<String>,
    error: Option<ErrorCode>,
}

impl End {
    fn new(status: TaskStatus, summary: impl Into<String>) -> End {
        End {
            status,
            summary: summary.into(),
            answer: None,
            error: None,
        }
    }

    fn failed(status: TaskStatus, code: ErrorCode, summary: impl Into<String>) -> End {
        End {
            error: Some(code),
            ..End::new(status, summary)
        }
    }
}

// What came of one move.
enum Played {
    Done,
    Failed,
    Ended(End),
}

// One step as the next requests recall it.
struct Done {
    n: u32,
    tool: String,
    args: String,
    result: String,
}

struct Run<'a> {
    agent: &'a AgentSession,
    task: &'a str,
    bounds: &'a Tasks,
    endpoint: Arc<Endpoint>,
    watch: Watch,
    max_steps: u32,
    deadline: Instant,
    steps: u32,
    tokens: u64,
    history: Vec<Done>,
    // The `page: "title" — URL` line last said in any output (a read of a page
    // already shown leaves it out).
    page_line: String,
    // Cancelled when the browser session the task runs in ends under it.
    session_gone: CancellationToken,
    // The browser session it runs in, once open: the record names it after it ends.
    session: Option<String>,
}

impl Run<'_> {
    // Opens or joins the session, records the start, goes to the start page, then
    // steps; `Err` is an end before the first step.
    async fn drive(&mut self, spec: TaskSpec) -> Result<End, End> {
        // A task that names no options runs in the session open, if one is.
        let open = match spec.open {
            Some(open) => Some(open),
            None if self.agent.open_session().await.is_some() => None,
            None => Some(ToolCall::Session(airlock_gateway::SessionCall::Open(
                Default::default(),
            ))),
        };
        if let Some(open) = open {
            let out = self.call(open).await?;
            if let Some(code) = out.error {
                return Err(self.refused(code, &out));
            }
        }
        // The session ending (closed by its owner or an operator, expired, its
        // worker gone) ends the task at once, even while the model thinks.
        self.session = self.agent.open_session().await;
        let gone = self.agent.session_gone().await;
        let (ended, done) = (self.session_gone.clone(), self.watch.cancel.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = gone => ended.cancel(),
                _ = done.cancelled() => {}
                _ = ended.cancelled() => {}
            }
        });
        let started = TaskStarted {
            task: self.task.to_owned(),
            caller: self.agent.principal().caller(),
            surface: self.agent.surface().as_str().to_owned(),
            session: self.session.clone(),
            model: self.endpoint.name().to_owned(),
            instruction: spec.instruction.clone(),
            start_url: spec.start_url.clone(),
            max_steps: spec.max_steps,
        };
        if let Err(e) = self.agent.record_task(Event::TaskStarted(started)).await {
            tracing::error!(error = %e, "the audit log refused a task's start");
            return Err(End::failed(
                TaskStatus::Error,
                ErrorCode::Internal,
                "the task could not be recorded in the audit log, so it did not run",
            ));
        }
        if let Some(start) = spec.start {
            let out = self.call(start).await?;
            if let Some(code) = out.error {
                return Err(self.refused(code, &out));
            }
        }
        self.steps(&spec.instruction).await
    }

    async fn steps(&mut self, instruction: &str) -> Result<End, End> {
        let credentials = self.agent.credentials().await;
        let nonce = self.agent.fence().nonce().to_owned();
        loop {
            if self.steps >= self.max_steps {
                return Ok(End::new(
                    TaskStatus::MaxSteps,
                    format!(
                        "took all {} steps it was given without finishing",
                        self.max_steps
                    ),
                ));
            }
            if self.tokens >= self.bounds.max_tokens {
                return Ok(End::failed(
                    TaskStatus::Error,
                    ErrorCode::BudgetExhausted,
                    format!(
                        "spent its {} model tokens without finishing",
                        self.bounds.max_tokens
                    ),
                ));
            }
            let style = self.endpoint.style();
            let (body, screen) = if style == ModelStyle::Tools {
                let page = self.look().await?;
                let history = self.recalled();
                let step = Step {
                    instruction,
                    credentials: credentials.as_deref(),
                    nonce: &nonce,
                    history: &history,
                    page: &page,
                    steps_left: self.max_steps - self.steps,
                };
                (chat::request(self.endpoint.model_id(), &step), None)
            } else {
                let screen = self.screen().await?;
                let history = self.recalled();
                let step = ScreenStep {
                    instruction,
                    credentials: credentials.as_deref(),
                    history: &history,
                    page: &self.page_line,
                    steps_left: self.max_steps - self.steps,
                    screen: &screen,
                };
                (
                    screen::request(style, self.endpoint.model_id(), &step),
                    Some(screen),
                )
            };
            let body = body.to_string();
            // What the model is sent passes the session's redactor as a whole.
            let body = self.agent.redact_outbound(&body).await;
            let asked = tokio::select! {
                biased;
                _ = self.watch.cancel.cancelled() => return Ok(cancelled()),
                _ = self.session_gone.cancelled() => return Ok(session_ended()),
                answer = self.endpoint.post(body.as_bytes(), self.deadline) => answer,
            };
            let answer = asked.map_err(|e| self.model_failed(&e))?;
            self.tokens += answer.tokens;
            let moves = match &screen {
                None => chat::moves(&answer.body),
                Some(screen) => screen::moves(style, &answer.body, screen),
            };
            let moves = moves.map_err(|why| {
                self.model_failed(&ModelError::Malformed {
                    model: self.endpoint.name().to_owned(),
                    why,
                })
            })?;
            for one in moves {
                match self.play(one).await? {
                    Played::Ended(end) => return Ok(end),
                    Played::Failed => break,
                    Played::Done if self.steps >= self.max_steps => break,
                    Played::Done => {}
                }
            }
        }
    }

    // One move of an answer. A call that failed ends the answer's moves (the page is
    // not what the model planned for).
    async fn play(&mut self, one: Move) -> Result<Played, End> {
        let (tool, args, call) = match one {
            Move::Finish { answer } => {
                let answer = self.agent.redact_outbound(&answer).await;
                let answer = airlock_core::text::display_safe(&answer).into_owned();
                return Ok(Played::Ended(End {
                    answer: Some(airlock_core::text::ellipsize(&answer, ANSWER_CHARS)),
                    ..End::new(TaskStatus::Finished, "the model finished the task")
                }));
            }
            Move::AskUser { question } => {
                let question = self.agent.redact_outbound(&question).await;
                let question = airlock_core::text::display_safe(&question).into_owned();
                return Ok(Played::Ended(End::new(
                    TaskStatus::NeedsUser,
                    format!(
                        "the model asks a person: {}",
                        airlock_core::text::ellipsize(&question, 500)
                    ),
                )));
            }
            Move::Said(words) => (
                "(words)".to_owned(),
                airlock_core::text::ellipsize(&words, 200),
                Err(BadArgument(
                    "no tool was called; call a browser tool, or finish".to_owned(),
                )),
            ),
            Move::Refused { name, why } => (name, String::new(), Err(BadArgument(why))),
            Move::Look => {
                // A look costs a step (so a model that only looks is bounded), and
                // the next request shows the screen anyway.
                self.steps += 1;
                self.history.push(Done {
                    n: self.steps,
                    tool: "screenshot".to_owned(),
                    args: String::new(),
                    result: "(the screen is shown with every step)".to_owned(),
                });
                return Ok(Played::Done);
            }
            Move::Call {
                name,
                arguments,
                flagged: Some(why),
            } => {
                let args = Value::Object(arguments.clone()).to_string();
                let call = catalogued(&name, &arguments);
                self.steps += 1;
                let out = match call {
                    Ok(call) => self.call_flagged(call, why).await?,
                    Err(BadArgument(why)) => ToolOutput::error(ErrorCode::InvalidArgument, why),
                };
                return self.played(name, args, out);
            }
            Move::Call {
                name,
                arguments,
                flagged: None,
            } => {
                let args = Value::Object(arguments.clone()).to_string();
                let call = catalogued(&name, &arguments);
                (name, args, call)
            }
        };
        self.steps += 1;
        let out = match call {
            Ok(call) => self.call(call).await?,
            Err(BadArgument(why)) => ToolOutput::error(ErrorCode::InvalidArgument, why),
        };
        self.played(tool, args, out)
    }

    // What came of a step that ran (or was refused before it ran): told, ended on
    // a code that ends tasks, else recalled by the next requests.
    fn played(&mut self, tool: String, args: String, out: ToolOutput) -> Result<Played, End> {
        let ok = out.error.is_none();
        self.tell(&tool, &out);
        if let Some(code) = out.error
            && let Some(end) = ending(code)
        {
            return Ok(Played::Ended(End::failed(
                end,
                code,
                self.said(&tool, &out),
            )));
        }
        self.history.push(Done {
            n: self.steps,
            tool,
            args,
            result: out.text,
        });
        Ok(if ok { Played::Done } else { Played::Failed })
    }

    // One call of the agent's session, as a step of this task; cancelled with the
    // task.
    async fn call(&mut self, call: ToolCall) -> Result<ToolOutput, End> {
        self.step(call, None).await
    }

    // A step its model's family flagged: held for a person like a rule's hold.
    async fn call_flagged(&mut self, call: ToolCall, why: String) -> Result<ToolOutput, End> {
        let why = self.agent.redact_outbound(&why).await;
        self.step(call, Some(why)).await
    }

    // A step, ended with the task: one held for a person is withdrawn first (its
    // card closes, and approving it runs nothing), given a moment to say so.
    async fn step(&mut self, call: ToolCall, flagged: Option<String>) -> Result<ToolOutput, End> {
        let (tell, gone) = tokio::sync::watch::channel(false);
        let step = self
            .agent
            .call_in_task_watched(call, self.task, flagged, gone);
        tokio::pin!(step);
        let end = tokio::select! {
            biased;
            _ = self.watch.cancel.cancelled() => cancelled(),
            _ = self.session_gone.cancelled() => session_ended(),
            out = &mut step => {
                if let Some(line) = page_line(&out.text) {
                    line.clone_into(&mut self.page_line);
                }
                return Ok(out);
            }
        };
        tell.send_replace(true);
        let _ = tokio::time::timeout(WITHDRAW_GRACE, &mut step).await;
        Err(end)
    }

    // The viewport now, as a PNG painted over wherever a secret shows, with its
    // CSS size (what a model's points are mapped onto).
    async fn screen(&mut self) -> Result<Screen, End> {
        let shot = airlock_tools::find("browser_screenshot")
            .and_then(|tool| tool.parse(None).ok())
            .ok_or_else(|| {
                End::failed(TaskStatus::Error, ErrorCode::Internal, "no screenshot tool")
            })?;
        let out = self.call(shot).await?;
        if let Some(code) = out.error {
            let status = ending(code).unwrap_or(TaskStatus::Error);
            return Err(End::failed(
                status,
                code,
                self.said("browser_screenshot", &out),
            ));
        }
        let css = self.agent.viewport().await;
        let (Some(file), Some(css)) = (out.file, css) else {
            return Err(End::failed(
                TaskStatus::Error,
                ErrorCode::Internal,
                "the screen could not be captured",
            ));
        };
        Screen::new(file.data, css)
            .map_err(|why| End::failed(TaskStatus::Error, ErrorCode::Internal, why))
    }

    // The page now: its `page:` line and snapshot, capped.
    async fn look(&mut self) -> Result<String, End> {
        let snapshot = airlock_tools::find("browser_snapshot")
            .and_then(|tool| tool.parse(None).ok())
            .ok_or_else(|| {
                End::failed(TaskStatus::Error, ErrorCode::Internal, "no snapshot tool")
            })?;
        let out = self.call(snapshot).await?;
        if let Some(code) = out.error {
            if let Some(end) = ending(code) {
                return Err(End::failed(end, code, self.said("browser_snapshot", &out)));
            }
            return Ok(format!("(the page could not be read: {})", out.text));
        }
        let body = out
            .text
            .lines()
            .skip_while(|l| l.starts_with("page: "))
            .collect::<Vec<_>>()
            .join("\n");
        let nonce = self.agent.fence().nonce().to_owned();
        Ok(format!(
            "{}\n{}",
            self.page_line,
            cut_fenced(&body, self.bounds.snapshot_bytes, &nonce)
        ))
    }

    // The steps the next request recalls: the last few, the newest at more length.
    fn recalled(&self) -> Vec<String> {
        let nonce = self.agent.fence().nonce();
        let keep = self.bounds.history;
        let skipped = self.history.len().saturating_sub(keep);
        let mut lines = Vec::new();
        if skipped > 0 {
            lines.push(format!("({skipped} earlier steps not shown)"));
        }
        let last = self.history.len().saturating_sub(1);
        for (i, done) in self.history.iter().enumerate().skip(skipped) {
            let room = if i == last {
                LAST_RESULT_BYTES
            } else {
                EARLIER_RESULT_BYTES
            };
            lines.push(format!(
                "{}. {} {} → {}",
                done.n,
                done.tool,
                airlock_core::text::ellipsize(&done.args, ARGS_BYTES),
                cut_fenced(&done.result, room, nonce)
            ));
        }
        lines
    }

    fn tell(&self, tool: &str, out: &ToolOutput) {
        if let Some(progress) = &self.watch.progress {
            let how = out.error.map_or("ok", ErrorCode::as_str);
            let _ = progress.send(Progress {
                step: self.steps,
                max_steps: self.max_steps,
                message: format!("step {}: {tool} {how}", self.steps),
            });
        }
    }

    fn said(&self, tool: &str, out: &ToolOutput) -> String {
        let message = out.message.as_deref().unwrap_or(&out.text);
        format!(
            "step {} ({tool}) was refused: {}",
            self.steps,
            airlock_core::text::ellipsize(message, 500)
        )
    }

    // A refusal before the first step (opening the session, the start page).
    fn refused(&self, code: ErrorCode, out: &ToolOutput) -> End {
        let status = ending(code).unwrap_or(TaskStatus::Error);
        let message = out.message.as_deref().unwrap_or(&out.text);
        End::failed(
            status,
            code,
            format!(
                "the task could not start: {}",
                airlock_core::text::ellipsize(message, 500)
            ),
        )
    }

    fn model_failed(&self, e: &ModelError) -> End {
        let code = match e {
            ModelError::OutOfTime(_) => ErrorCode::Timeout,
            _ => ErrorCode::ModelFailed,
        };
        End::failed(TaskStatus::Error, code, e.to_string())
    }

    // The final screenshot and the record of the end.
    async fn finish(&mut self, end: End, started: Instant) -> TaskResult {
        // The session watcher is done with (the session itself stays open).
        self.session_gone.cancel();
        let open = self.agent.open_session().await;
        let screenshot = match (&open, end.status) {
            (None, _) | (_, TaskStatus::Cancelled) => None,
            _ => {
                let shot =
                    airlock_tools::find("browser_screenshot").and_then(|t| t.parse(None).ok());
                match shot {
                    Some(shot) => self.agent.call_in_task(shot, self.task).await.file,
                    None => None,
                }
            }
        };
        let session = self.session.clone().or(open);
        let ended = TaskEnded {
            task: self.task.to_owned(),
            session: session.clone(),
            status: end.status.as_str().to_owned(),
            steps: self.steps,
            tokens: self.tokens,
            answer: end.answer.clone(),
            error: end.error.map(|c| c.as_str().to_owned()),
            duration_ms: started.elapsed().as_millis() as u64,
        };
        if let Err(e) = self.agent.record_task(Event::TaskEnded(ended)).await {
            tracing::error!(error = %e, task = self.task, "the audit log refused a task's end");
        }
        tracing::info!(
            task = self.task,
            status = end.status.as_str(),
            steps = self.steps,
            tokens = self.tokens,
            ms = started.elapsed().as_millis() as u64,
            "task ended"
        );
        TaskResult {
            task: self.task.to_owned(),
            session,
            status: end.status,
            summary: end.summary,
            answer: end.answer,
            steps: self.steps,
            tokens: self.tokens,
            error: end.error,
            screenshot,
        }
    }
}

// A move's tool through the catalogue: offered to tasks, arguments checked.
fn catalogued(name: &str, arguments: &Map<String, Value>) -> Result<ToolCall, BadArgument> {
    if !chat::TASK_TOOLS.contains(&name) {
        return Err(BadArgument(format!(
            "`{}` is not a tool this task offers",
            airlock_core::text::prefix(name, 60)
        )));
    }
    airlock_tools::find(name)
        .ok_or_else(|| BadArgument("no such tool".to_owned()))
        .and_then(|tool| tool.parse(Some(arguments)))
}

/// How long a step whose task ended may take to withdraw what it holds.
const WITHDRAW_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

fn cancelled() -> End {
    End::new(TaskStatus::Cancelled, "cancelled by its caller")
}

fn session_ended() -> End {
    End::failed(
        TaskStatus::Cancelled,
        ErrorCode::SessionExpired,
        "its browser session ended under it",
    )
}

// Which step failures end a task, and how; the rest go back to the model.
fn ending(code: ErrorCode) -> Option<TaskStatus> {
    Some(match code {
        ErrorCode::PolicyDenied
        | ErrorCode::ApprovalDenied
        | ErrorCode::SecretOriginMismatch
        | ErrorCode::Forbidden => TaskStatus::Denied,
        ErrorCode::ApprovalTimeout | ErrorCode::ApprovalPending | ErrorCode::SessionHeld => {
            TaskStatus::NeedsUser
        }
        ErrorCode::SessionExpired => TaskStatus::Cancelled,
        ErrorCode::BrowserCrashed
        | ErrorCode::BrowserUnavailable
        | ErrorCode::Internal
        | ErrorCode::BudgetExhausted
        | ErrorCode::QuotaExceeded
        | ErrorCode::Unauthorized
        | ErrorCode::SessionAlreadyOpen => TaskStatus::Error,
        _ => return None,
    })
}

// The `page:` line of an output, if it says one (above any fenced text).
fn page_line(text: &str) -> Option<&str> {
    text.lines()
        .take_while(|l| !l.starts_with("<page "))
        .find(|l| l.starts_with("page: "))
}

// `text` cut to about `max` bytes on a line end; a fence left open by the cut is
// closed again, so Airlock's words after it never read as the page's.
fn cut_fenced(text: &str, max: usize, nonce: &str) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = &text[..end];
    let cut = cut.rfind('\n').map_or(cut, |i| &cut[..i]);
    let open = format!("<page {nonce}>");
    let close = format!("</page {nonce}>");
    let mut out = cut.to_owned();
    out.push_str("\n…");
    if cut.matches(&open).count() > cut.matches(&close).count() {
        out.push('\n');
        out.push_str(&close);
    }
    out.push_str(" (cut; browser_snapshot with offset or find reads on)");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_closes_the_fence_it_left_open() {
        let text = format!(
            "<page 123456>\n{}\n</page 123456>",
            "e1 row \"x\"\n".repeat(100)
        );
        let cut = cut_fenced(&text, 200, "123456");
        assert!(cut.len() < 300, "{cut}");
        assert!(
            cut.contains("</page 123456>") && cut.ends_with("reads on)"),
            "{cut}"
        );
        assert_eq!(cut_fenced("short", 200, "123456"), "short");
    }

    #[test]
    fn the_page_line_is_read_above_the_fence_only() {
        assert_eq!(
            page_line("clicked\npage: \"A\" — http://a/\n<page 1>\npage: fake\n</page 1>"),
            Some("page: \"A\" — http://a/")
        );
        assert_eq!(page_line("<page 1>\npage: fake\n</page 1>"), None);
    }
}
