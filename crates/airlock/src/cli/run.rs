//! `airlock run "instruction"`: an operator runs one server-side task from a shell,
//! with the configured model, through the same pipeline as `browser_run_task`
//! (policy, placeholders, risk rules and approvals, audit). Progress and held steps
//! go to stderr (a held step says how to decide it from another terminal); the
//! result goes to stdout. Ctrl-C or SIGTERM cancels the task and closes its session.

#![allow(clippy::print_stderr)] // Progress beside the result is the command's product.

use std::path::PathBuf;

use airlock_config::Config;
use airlock_task::{Runner, TaskResult, TaskStatus, Watch};
use anyhow::Context as _;
use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt as _;

/// What the command line asks for.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// What to do, in words (the model's task).
    pub instruction: String,
    /// The page to start on (the policy must allow it).
    #[arg(long)]
    pub start_url: Option<String>,
    /// The most browser steps it may take (default and cap from `[tasks]`).
    #[arg(long)]
    pub max_steps: Option<u32>,
    /// Which of the `[[models]]` runs it (default: `[tasks] model`).
    #[arg(long)]
    pub model: Option<String>,
    /// Stored credentials the session loads (repeat for several).
    #[arg(long = "credential")]
    pub credentials: Vec<String>,
    /// Hosts this session may also reach, beyond the policy (repeat).
    #[arg(long = "allow-host")]
    pub allow_hosts: Vec<String>,
    /// Recording: `off`, `audit` or `debug` (default: the config's).
    #[arg(long)]
    pub record: Option<String>,
    /// Write the final screenshot (PNG) here.
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// Print the result as one JSON object.
    #[arg(long)]
    pub json: bool,
}

impl RunArgs {
    // The tool's arguments, so the command is checked exactly as the tool is.
    fn arguments(&self) -> Map<String, Value> {
        let mut args = Map::new();
        args.insert("instruction".into(), json!(self.instruction));
        if let Some(url) = &self.start_url {
            args.insert("start_url".into(), json!(url));
        }
        if let Some(n) = self.max_steps {
            args.insert("max_steps".into(), json!(n));
        }
        if let Some(model) = &self.model {
            args.insert("model".into(), json!(model));
        }
        if !self.credentials.is_empty() {
            args.insert("credentials".into(), json!(self.credentials));
        }
        if !self.allow_hosts.is_empty() {
            args.insert("allow_hosts".into(), json!(self.allow_hosts));
        }
        if let Some(record) = &self.record {
            args.insert("record".into(), json!(record));
        }
        args
    }
}

/// Exit status: 0 when the model finished, 3 when a person must go on (an approval
/// unanswered, the model asks), 1 otherwise.
pub(crate) async fn run(config: Config, args: RunArgs) -> anyhow::Result<u8> {
    let _data_dir = super::vault::hold_data_dir(&config.data_dir)?;
    if config.tasks.models.is_empty() {
        anyhow::bail!("no model is configured for tasks: add a [[models]] entry to airlock.toml");
    }
    let (mut term, mut interrupt) = super::start::stop_signals()?;
    // The operator at the shell uses their own stored credentials, as with `mcp`.
    let role = super::start::local_role(&config);
    let gateway = super::start::gateway_as(&config, Vec::new(), role).await?;
    let result = async {
        let runner = Runner::new(&config.tasks, gateway.vault().cloned())
            .context("making the model client")?;
        let spec = runner
            .parse(Some(&args.arguments()))
            .map_err(|e| anyhow::anyhow!("{}", e.0))?;
        let agent = gateway.agent_session();
        let (progress, mut told) = tokio::sync::mpsc::unbounded_channel();
        let watch = Watch {
            progress: Some(progress),
            ..Watch::default()
        };
        let cancel = watch.cancel.clone();
        let mut feed = gateway.audit().appended_here();
        let task = spec.id.clone();
        let running = runner.run(&agent, spec, watch);
        tokio::pin!(running);
        eprintln!("task {task}: started");
        let result = loop {
            tokio::select! {
                result = &mut running => break result,
                Some(step) = told.recv() => eprintln!("{}/{}: {}", step.step, step.max_steps, step.message),
                Ok(event) = feed.recv() => held(&event, &task, &agent).await,
                _ = term.recv() => { eprintln!("SIGTERM: cancelling the task"); cancel.cancel(); }
                _ = interrupt.recv() => { eprintln!("interrupted: cancelling the task"); cancel.cancel(); }
            }
        };
        while let Ok(step) = told.try_recv() {
            eprintln!("{}/{}: {}", step.step, step.max_steps, step.message);
        }
        agent.close().await;
        anyhow::Ok(result)
    }
    .await;
    gateway.shutdown().await;
    let result = result?;
    if let (Some(path), Some(shot)) = (&args.screenshot, &result.screenshot) {
        std::fs::write(path, &shot.data)
            .with_context(|| format!("writing the screenshot to {}", path.display()))?;
    }
    print(&result, args.json).await?;
    Ok(match result.status {
        TaskStatus::Finished => 0,
        TaskStatus::NeedsUser => 3,
        _ => 1,
    })
}

// A step of this task's session held for approval: how to decide it.
async fn held(
    event: &airlock_gateway::FeedEvent,
    task: &str,
    agent: &airlock_gateway::AgentSession,
) {
    if event.kind != "approval_requested" {
        return;
    }
    let session = agent.open_session().await;
    if session.is_none() || event.session != session {
        return;
    }
    let Ok(Value::Object(body)) = serde_json::from_str::<Value>(&event.body) else {
        return;
    };
    let field = |key: &str| {
        body.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let id = field("approval");
    eprintln!(
        "task {task}: {} is held by rule `{}` until a person decides:\n  airlock approvals approve {id}    (or: airlock approvals deny {id})",
        field("tool"),
        field("rule"),
    );
}

async fn print(result: &TaskResult, as_json: bool) -> anyhow::Result<()> {
    let text = if as_json {
        format!("{}\n", result.to_json())
    } else {
        let mut text = format!("{}: {}\n", result.status.as_str(), result.summary);
        if let Some(answer) = &result.answer {
            text.push_str(&format!("answer: {answer}\n"));
        }
        text.push_str(&format!(
            "steps: {}  tokens: {}  task: {}  session: {}\n",
            result.steps,
            result.tokens,
            result.task,
            result.session.as_deref().unwrap_or("-"),
        ));
        text
    };
    let mut out = tokio::io::stdout();
    out.write_all(text.as_bytes()).await?;
    out.flush().await?;
    Ok(())
}
