//! `browser_run_task`'s arguments, the same on every surface: described, listed and
//! checked here, with the catalogue's words for unknown or misfit arguments; the
//! session options and the start page are checked as the catalogue checks
//! `browser_session_open` and `browser_navigate`.

use airlock_gateway::ToolCall;
use airlock_tools::BadArgument;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The tool's name on every surface.
pub const NAME: &str = "browser_run_task";

/// What a model (or an agent's client) reads about it.
pub const DESCRIPTION: &str = "Run a whole browser task server-side: the operator's model drives this session's browser step by step, \
every step through Airlock's egress policy, approvals and audit, and one compact result comes back \
(status, summary, answer, steps, the final screenshot). Name credentials to log in with: the model only ever sees their placeholders.";

/// Longest instruction accepted.
const MAX_INSTRUCTION_CHARS: usize = 8_000;

// Debug by hand: the grant token is a credential.
/// `browser_run_task`'s wire parameters.
#[derive(Default, Deserialize, JsonSchema)]
pub struct RunTaskParams {
    /// What to do, in words (e.g. "sign in and report the account balance").
    pub instruction: String,
    /// The page to start on.
    pub start_url: Option<String>,
    /// Most browser steps (default 20, at most 100).
    pub max_steps: Option<u32>,
    /// Stored credentials to log in with (opens the session with them).
    #[serde(default)]
    pub credentials: Vec<String>,
    /// Grant token for the credentials.
    pub grant: Option<String>,
    /// Only these hosts (`a.com`, `*.a.com`), within the policy.
    #[serde(default)]
    pub allow_hosts: Vec<String>,
    /// Screenshots of the steps (`audit`: kept on the record).
    #[schemars(extend("enum" = ["off", "transient", "audit"]))]
    pub record: Option<String>,
    /// The operator's model to use, by name (default: the operator's choice).
    pub model: Option<String>,
}

impl std::fmt::Debug for RunTaskParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTaskParams")
            .field("max_steps", &self.max_steps)
            .field("credentials", &self.credentials)
            .field("grant", &self.grant.as_ref().map(|_| "[REDACTED]"))
            .finish_non_exhaustive()
    }
}

/// A task as asked for, checked.
#[derive(Debug)]
pub struct TaskSpec {
    /// Its id (`task_` and 16 random hex digits), given when it is asked for so a
    /// surface can name it before it ends.
    pub id: String,
    /// What to do.
    pub instruction: String,
    /// The navigation to the start page, if one was given.
    pub start: Option<ToolCall>,
    /// The start page as given (for the record).
    pub start_url: Option<String>,
    /// Most steps.
    pub max_steps: u32,
    /// The session to open for it, if the task named credentials, hosts or a
    /// recording; else it runs in the session open (or one opened lazily).
    pub open: Option<ToolCall>,
    /// The model asked for, if one was.
    pub model: Option<String>,
}

/// Its schema as listed (lean, like every catalogue tool's).
pub fn schema() -> Map<String, Value> {
    airlock_tools::schema::compact(&airlock_tools::input_schema::<RunTaskParams>())
}

/// The task `arguments` ask for, with `default_steps` when they give no number.
pub(crate) fn parse(
    arguments: Option<&Map<String, Value>>,
    default_steps: u32,
) -> Result<TaskSpec, BadArgument> {
    airlock_tools::check_arguments(NAME, &schema(), false, arguments)?;
    let params: RunTaskParams =
        serde_json::from_value(Value::Object(arguments.cloned().unwrap_or_default()))
            .map_err(|e| airlock_tools::misfit(NAME, &e.to_string()))?;
    let instruction = params.instruction.trim().to_owned();
    if instruction.is_empty() {
        return Err(BadArgument(
            "`instruction` says what the task is; it is empty".to_owned(),
        ));
    }
    if instruction.chars().count() > MAX_INSTRUCTION_CHARS {
        return Err(BadArgument(format!(
            "`instruction` is at most {MAX_INSTRUCTION_CHARS} characters"
        )));
    }
    let max_steps = match params.max_steps {
        None => default_steps,
        Some(n @ 1..=airlock_config::MAX_TASK_STEPS) => n,
        Some(n) => {
            return Err(BadArgument(format!(
                "`max_steps` is 1 to {}; got {n}",
                airlock_config::MAX_TASK_STEPS
            )));
        }
    };
    let start = match &params.start_url {
        None => None,
        Some(url) => {
            let mut args = Map::new();
            args.insert("url".to_owned(), Value::String(url.clone()));
            Some(
                tool("browser_navigate")?
                    .parse(Some(&args))
                    .map_err(|BadArgument(why)| BadArgument(why.replace("`url`", "`start_url`")))?,
            )
        }
    };
    let mut open = Map::new();
    if !params.credentials.is_empty() {
        open.insert("credentials".to_owned(), params.credentials.into());
    }
    if let Some(grant) = params.grant {
        open.insert("grant".to_owned(), grant.into());
    }
    if !params.allow_hosts.is_empty() {
        open.insert("allow_hosts".to_owned(), params.allow_hosts.into());
    }
    if let Some(record) = params.record {
        open.insert("record".to_owned(), record.into());
    }
    let open = match open.is_empty() {
        true => None,
        false => Some(tool("browser_session_open")?.parse(Some(&open))?),
    };
    Ok(TaskSpec {
        id: new_id(),
        instruction,
        start,
        start_url: params.start_url,
        max_steps,
        open,
        model: params.model,
    })
}

// A task's id: `task_` and 16 random hex digits.
fn new_id() -> String {
    let mut bytes = [0u8; 8];
    // Without OS randomness the id is still unique enough for the record.
    if getrandom::fill(&mut bytes).is_err() {
        bytes = (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64))
        .to_le_bytes();
    }
    format!("task_{}", hex::encode(bytes))
}

fn tool(name: &str) -> Result<&'static airlock_tools::Tool, BadArgument> {
    airlock_tools::find(name).ok_or_else(|| BadArgument(format!("{name} is not in this build")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn arguments_are_checked_in_the_catalogues_words() {
        let spec = parse(
            Some(&args(
                json!({"instruction": " read it ", "start_url": "https://example.com/"}),
            )),
            20,
        )
        .unwrap();
        assert_eq!(spec.instruction, "read it");
        assert_eq!(spec.max_steps, 20);
        assert!(spec.start.is_some() && spec.open.is_none());
        let spec = parse(
            Some(&args(
                json!({"instruction": "x", "credentials": ["login"], "max_steps": 3}),
            )),
            20,
        )
        .unwrap();
        assert!(spec.open.is_some());
        assert_eq!(spec.max_steps, 3);
        for (bad, words) in [
            (json!({"instruction": "x", "max_step": 3}), "max_step"),
            (json!({"instruction": ""}), "empty"),
            (json!({}), "instruction"),
            (json!({"instruction": "x", "max_steps": 101}), "1 to 100"),
            (json!({"instruction": "x", "record": "always"}), "record"),
            (
                json!({"instruction": "x", "max_steps": "many"}),
                "browser_run_task",
            ),
        ] {
            let BadArgument(why) = parse(Some(&args(bad.clone())), 20).unwrap_err();
            assert!(why.contains(words), "{bad}: {why}");
        }
    }
}
