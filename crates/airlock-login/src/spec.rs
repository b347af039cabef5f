//! What a stored login is, as its operator writes it: the probe that says it is
//! alive, the renewal flow (catalogue calls whose typed text is only placeholders of
//! the login's own secret), what on a page means only a person can go on, and how
//! often it is checked. Checked whole when it is set, so a check never meets a flow
//! it cannot run.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Error, Result};

/// Shortest and longest time between checks.
pub const EVERY_SECS: std::ops::RangeInclusive<u64> = 5..=7 * 24 * 3600;
/// Checks of a login every half hour unless it says otherwise.
pub const DEFAULT_EVERY_SECS: u64 = 1800;
/// Most steps in a renewal flow.
pub const MAX_STEPS: usize = 40;

/// The tools a renewal flow may call: moving, pointing and typing; never a tool that
/// reads out, runs script or touches files.
pub const FLOW_TOOLS: &[&str] = &[
    "browser_navigate",
    "browser_click",
    "browser_type",
    "browser_fill_form",
    "browser_press_key",
    "browser_select_option",
    "browser_check",
    "browser_wait_for",
];

/// What on a page says a person must go on, unless the login names its own: a new
/// device or sign-in to confirm, a code sent to a phone, a CAPTCHA (never solved).
pub const HUMAN_MARKERS: &[&str] = &[
    "new device",
    "verify it's you",
    "verify it\u{2019}s you",
    "captcha",
    "not a robot",
    "we sent a code",
    "code we sent",
    "text message",
    "approve this sign-in",
    "unusual activity",
];

/// A stored login's definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginSpec {
    /// What proves the login alive.
    pub probe: Probe,
    /// How to renew it without a person; empty: only a person can (log in by hand
    /// and save the login from the console).
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Where a person comes in.
    #[serde(default)]
    pub human: Human,
    /// Seconds between checks.
    #[serde(default = "default_every")]
    pub every_secs: u64,
}

fn default_every() -> u64 {
    DEFAULT_EVERY_SECS
}

/// A page that shows something only a logged-in user sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// Opened at each check.
    pub url: String,
    /// Text the logged-in page shows (a heading, "Log out", the user's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    /// The site must not send the probe elsewhere (a sign-in page): the page shown
    /// has the probe's origin and path.
    #[serde(default)]
    pub stay: bool,
}

/// One step of a renewal flow: a catalogue tool and its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The tool (`browser_type`).
    pub tool: String,
    /// Its arguments, as an agent would give them.
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

/// Where a person comes in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Human {
    /// Text that means only a person can go on (case-insensitive); the built-in
    /// list ([`HUMAN_MARKERS`]) when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<String>,
    /// The field a person's code goes into, as a target (`{"role": "textbox",
    /// "name": "Device code"}`); without one a person is asked, but nothing waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<Map<String, Value>>,
    /// What to click once the code is in (a target), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit: Option<Map<String, Value>>,
}

impl LoginSpec {
    /// Reads and checks a spec for the login `name` (its secret's name).
    pub fn parse(name: &str, json: &str) -> Result<LoginSpec> {
        let spec: LoginSpec = serde_json::from_str(json)
            .map_err(|e| Error::Invalid(format!("the login's definition: {e}")))?;
        spec.check(name)?;
        Ok(spec)
    }

    /// Checks everything a run needs, in the words a person fixes it by.
    pub fn check(&self, name: &str) -> Result<()> {
        let url = url::Url::parse(&self.probe.url)
            .map_err(|e| Error::Invalid(format!("probe.url `{}`: {e}", self.probe.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Error::Invalid("probe.url must be http or https".to_owned()));
        }
        if self.probe.expect.as_deref().is_none_or(str::is_empty) && !self.probe.stay {
            return Err(Error::Invalid(
                "the probe needs `expect` (text the logged-in page shows), `stay` (it must not be sent elsewhere), or both".to_owned(),
            ));
        }
        if !EVERY_SECS.contains(&self.every_secs) {
            return Err(Error::Invalid(format!(
                "every_secs must be between {} and {}",
                EVERY_SECS.start(),
                EVERY_SECS.end()
            )));
        }
        if self.steps.len() > MAX_STEPS {
            return Err(Error::Invalid(format!(
                "a renewal flow has at most {MAX_STEPS} steps"
            )));
        }
        for (i, step) in self.steps.iter().enumerate() {
            step.check(name).map_err(|e| match e {
                Error::Invalid(why) => Error::Invalid(format!("steps[{i}]: {why}")),
                other => other,
            })?;
        }
        for (key, target) in [("field", &self.human.field), ("submit", &self.human.submit)] {
            if let Some(target) = target {
                target_of(target).map_err(|why| Error::Invalid(format!("human.{key}: {why}")))?;
            }
        }
        if self.human.submit.is_some() && self.human.field.is_none() {
            return Err(Error::Invalid(
                "human.submit needs human.field (where the person's code goes)".to_owned(),
            ));
        }
        Ok(())
    }

    /// The texts that mean a person must go on, lowercased.
    pub fn markers(&self) -> Vec<String> {
        if self.human.when.is_empty() {
            HUMAN_MARKERS.iter().map(|m| (*m).to_owned()).collect()
        } else {
            self.human.when.iter().map(|m| m.to_lowercase()).collect()
        }
    }
}

impl Step {
    fn check(&self, name: &str) -> Result<()> {
        if !FLOW_TOOLS.contains(&self.tool.as_str()) {
            return Err(Error::Invalid(format!(
                "`{}` cannot be a renewal step (one of: {})",
                self.tool,
                FLOW_TOOLS.join(", ")
            )));
        }
        let tool = airlock_tools::find(&self.tool)
            .ok_or_else(|| Error::Invalid(format!("no tool `{}`", self.tool)))?;
        tool.parse(Some(&self.arguments))
            .map_err(|e| Error::Invalid(e.0))?;
        // Typed text is only placeholders of this login's own secret: a literal
        // in a flow would be a password in a definition anyone reading it sees.
        let typed: Vec<&Value> = match self.tool.as_str() {
            "browser_type" => self.arguments.get("text").into_iter().collect(),
            "browser_fill_form" => self
                .arguments
                .get("fields")
                .and_then(Value::as_array)
                .map(|fields| fields.iter().filter_map(|f| f.get("value")).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        for text in typed {
            let text = text.as_str().unwrap_or_default();
            placeholders_only(name, text)?;
        }
        Ok(())
    }
}

// Whether `text` is nothing but placeholders of secret `name`.
fn placeholders_only(name: &str, text: &str) -> Result<()> {
    let segments = airlock_vault::placeholder::parse(text)
        .map_err(|e| Error::Invalid(format!("typed text: {e}")))?;
    let only = !segments.is_empty()
        && segments.iter().all(|s| match s {
            airlock_vault::placeholder::Segment::Secret { name: n, .. } => n == name,
            airlock_vault::placeholder::Segment::Text(_) => false,
        });
    if only {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "typed text in a renewal flow must be placeholders of this login's secret only ({{{{secret:{name}.username}}}}, .password, .totp); literal text is refused so no value sits in a definition"
        )))
    }
}

/// The target `params` name (`role`/`name`, `selector` …).
pub(crate) fn target_of(
    params: &Map<String, Value>,
) -> std::result::Result<airlock_browser::Target, String> {
    let params: airlock_tools::params::TargetParams =
        serde_json::from_value(Value::Object(params.clone())).map_err(|e| e.to_string())?;
    params.target().map_err(|e| e.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(steps: Value) -> String {
        json!({
            "probe": {"url": "https://admin.example.com/", "expect": "Site administration"},
            "steps": steps,
        })
        .to_string()
    }

    #[test]
    fn a_flow_types_only_its_own_placeholders() {
        let ok = spec(json!([
            {"tool": "browser_navigate", "arguments": {"url": "https://admin.example.com/login"}},
            {"tool": "browser_type", "arguments": {"role": "textbox", "name": "Username", "text": "{{secret:admin.username}}"}},
            {"tool": "browser_fill_form", "arguments": {"fields": [{"role": "textbox", "name": "Code", "value": "{{secret:admin.totp}}"}]}},
            {"tool": "browser_click", "arguments": {"role": "button", "name": "Log in"}},
        ]));
        let parsed = LoginSpec::parse("admin", &ok).unwrap();
        assert_eq!(parsed.every_secs, DEFAULT_EVERY_SECS);
        for (steps, says) in [
            (
                json!([{"tool": "browser_type", "arguments": {"role": "textbox", "name": "Password", "text": "hunter2-literal"}}]),
                "placeholders of this login's secret only",
            ),
            (
                json!([{"tool": "browser_type", "arguments": {"role": "textbox", "name": "Password", "text": "x{{secret:admin.password}}"}}]),
                "placeholders of this login's secret only",
            ),
            (
                json!([{"tool": "browser_type", "arguments": {"role": "textbox", "name": "Password", "text": "{{secret:other.password}}"}}]),
                "placeholders of this login's secret only",
            ),
            (
                json!([{"tool": "browser_evaluate", "arguments": {"expression": "1"}}]),
                "cannot be a renewal step",
            ),
            (
                json!([{"tool": "browser_click", "arguments": {"rol": "button"}}]),
                "steps[0]",
            ),
        ] {
            let e = LoginSpec::parse("admin", &spec(steps))
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn a_probe_must_say_what_alive_looks_like() {
        let e = LoginSpec::parse("admin", r#"{"probe": {"url": "https://a.example/"}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs `expect`"), "{e}");
        let e = LoginSpec::parse(
            "admin",
            r#"{"probe": {"url": "file:///etc/passwd", "stay": true}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("http or https"), "{e}");
        let e = LoginSpec::parse(
            "admin",
            r#"{"probe": {"url": "https://a.example/", "stay": true}, "every_secs": 1}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("every_secs"), "{e}");
        let e = LoginSpec::parse(
            "admin",
            r#"{"probe": {"url": "https://a.example/", "stay": true}, "human": {"submit": {"role": "button", "name": "Go"}}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("human.submit needs human.field"), "{e}");
    }
}
