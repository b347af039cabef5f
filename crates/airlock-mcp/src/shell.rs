//! The `browser-shell` profile: one tool whose `argv` reads like the agent-browser CLI
//! (`["click", "@e3"]`), for clients built around it. `argv` is never given to a
//! shell: it is matched against an allowlist of subcommands and turned into the same
//! gateway calls the `browser_*` tools make: each command becomes a catalogue tool's
//! arguments, which the catalogue checks and parses as for any other surface. Global flags (`--session`, `--json`,
//! `--cdp`, `--x=…`) are refused: the session comes from `session_id`, and nothing
//! reaches the browser's control channel.

use std::time::Duration;

use airlock_core::text::prefix;
use airlock_gateway::{ToolCall, ToolOutput};
use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Subcommands `argv[0]` may name.
pub(crate) const SUBCOMMANDS: &[&str] = &[
    "open",
    "snapshot",
    "click",
    "fill",
    "type",
    "press",
    "wait",
    "screenshot",
    "close",
    "dblclick",
    "hover",
    "focus",
    "check",
    "uncheck",
    "select",
    "dialog",
];
/// Most arguments in `argv`.
pub(crate) const MAX_ARGS: usize = 16;
/// Longest single argument (typed text included).
pub(crate) const MAX_ARG_CHARS: usize = 10_000;
/// Most bytes of `stdout` or `stderr` returned.
pub(crate) const MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// Default and largest `timeout_sec`.
const DEFAULT_TIMEOUT_SECS: u64 = 30;
const MAX_TIMEOUT_SECS: u64 = 300;

/// Exit code for a usage error (bad argv), as CLIs use it.
pub(crate) const EXIT_USAGE: i32 = 2;
/// Exit code when `timeout_sec` ran out, as `timeout(1)` uses it.
pub(crate) const EXIT_TIMEOUT: i32 = 124;

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ShellParams {
    /// Names a browser session of yours; the same id reaches the same session (its
    /// cookies, tabs). Letters, digits, `-` and `_`, at most 64.
    pub(crate) session_id: String,
    /// The command as a list of arguments, never parsed by a shell: argv[0] is one of
    /// open, snapshot [-i], click, dblclick, fill, type, press, wait, screenshot [--full],
    /// close, hover, focus, check, uncheck, select, dialog accept [TEXT]|dismiss. Targets are refs (`@e3`) or CSS selectors.
    pub(crate) argv: Vec<String>,
    /// Give up after this many seconds (default 30, at most 300).
    pub(crate) timeout_sec: Option<u64>,
}

/// The tool's result.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct ShellResult {
    pub(crate) session_id: String,
    pub(crate) exit_code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl ShellResult {
    pub(crate) fn usage(session_id: &str, message: impl Into<String>) -> ShellResult {
        ShellResult {
            session_id: session_id.to_owned(),
            exit_code: EXIT_USAGE,
            stdout: String::new(),
            stderr: bounded(&format!("usage: {}\n", message.into())),
        }
    }

    pub(crate) fn from_output(session_id: &str, output: &ToolOutput) -> ShellResult {
        match output.error {
            None => ShellResult {
                session_id: session_id.to_owned(),
                exit_code: 0,
                stdout: bounded(&format!("{}\n", output.text.trim_end())),
                stderr: String::new(),
            },
            Some(_) => ShellResult {
                session_id: session_id.to_owned(),
                exit_code: 1,
                stdout: String::new(),
                stderr: bounded(&format!("{}\n", output.text.trim_end())),
            },
        }
    }

    pub(crate) fn timeout(session_id: &str, secs: u64) -> ShellResult {
        ShellResult {
            session_id: session_id.to_owned(),
            exit_code: EXIT_TIMEOUT,
            stdout: String::new(),
            stderr: format!("timeout: the command did not finish within {secs} s\n"),
        }
    }
}

// Caps output at MAX_OUTPUT_BYTES on a char boundary, saying how much was cut.
fn bounded(text: &str) -> String {
    if text.len() <= MAX_OUTPUT_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_OUTPUT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[output truncated: {} of {} bytes shown]\n",
        &text[..end],
        end,
        text.len()
    )
}

/// A validated shell invocation.
#[derive(Debug)]
pub(crate) struct Invocation {
    pub(crate) session_id: String,
    pub(crate) call: ToolCall,
    pub(crate) timeout: Duration,
}

/// Validates the parameters; `Err` is the usage message.
pub(crate) fn parse(params: &ShellParams) -> Result<Invocation, String> {
    let id = &params.session_id;
    if id.is_empty()
        || id.len() > 64
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err("session_id must be 1-64 letters, digits, `-` or `_`".to_owned());
    }
    let argv = &params.argv;
    if argv.is_empty() {
        return Err(format!(
            "argv is empty; argv[0] is one of {}",
            SUBCOMMANDS.join(", ")
        ));
    }
    if argv.len() > MAX_ARGS {
        return Err(format!("at most {MAX_ARGS} arguments"));
    }
    if let Some(long) = argv.iter().find(|a| a.chars().count() > MAX_ARG_CHARS) {
        return Err(format!(
            "an argument is longer than {MAX_ARG_CHARS} characters ({} given)",
            long.chars().count()
        ));
    }
    let timeout_secs = params.timeout_sec.unwrap_or(DEFAULT_TIMEOUT_SECS);
    if timeout_secs == 0 || timeout_secs > MAX_TIMEOUT_SECS {
        return Err(format!("timeout_sec must be within 1..={MAX_TIMEOUT_SECS}"));
    }
    let command = argv[0].as_str();
    if !SUBCOMMANDS.contains(&command) {
        return Err(format!(
            "`{}` is not allowed; argv[0] is one of {}",
            prefix(command, 60),
            SUBCOMMANDS.join(", ")
        ));
    }
    let (flags, args): (Vec<&str>, Vec<&str>) =
        argv[1..].iter().map(String::as_str).partition(|a| {
            a.starts_with('-') && a.len() > 1 && !a.starts_with("-0") && a.parse::<f64>().is_err()
        });
    let allowed_flags: &[&str] = match command {
        "snapshot" => &["-i", "--interactive"],
        "screenshot" => &["--full", "-f"],
        "wait" => &["--text"],
        _ => &[],
    };
    for flag in &flags {
        if !allowed_flags.contains(flag) {
            return Err(format!(
                "flag `{}` is not allowed{}",
                prefix(flag, 60),
                if allowed_flags.is_empty() {
                    String::new()
                } else {
                    format!(" (allowed for {command}: {})", allowed_flags.join(" "))
                }
            ));
        }
    }
    let has = |f: &[&str]| flags.iter().any(|x| f.contains(x));
    let need = |n: usize, shape: &str| -> Result<(), String> {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!("{command} takes {shape}"))
        }
    };
    // The command as a catalogue tool and its arguments: the catalogue checks and
    // parses them exactly as it does for `browser_*` calls.
    let (tool, args) = match command {
        "open" => {
            need(1, "one URL")?;
            let url = args[0];
            let lower = url.to_ascii_lowercase();
            if !(lower.starts_with("http://") || lower.starts_with("https://"))
                || url.contains("{{secret:")
            {
                return Err(format!(
                    "open takes an absolute http(s) URL, got `{}`",
                    prefix(url, 60)
                ));
            }
            ("browser_navigate", json!({ "url": url }))
        }
        "snapshot" => {
            need(0, "no arguments (and -i for interactive elements only)")?;
            let interactive = has(&["-i", "--interactive"]);
            (
                "browser_snapshot",
                json!({ "interactive_only": interactive }),
            )
        }
        "click" | "dblclick" => {
            need(1, "one target (@ref or CSS selector)")?;
            let mut args = target(args[0])?;
            args.insert("double".to_owned(), (command == "dblclick").into());
            ("browser_click", Value::Object(args))
        }
        "hover" => {
            need(1, "one target (@ref or CSS selector)")?;
            ("browser_hover", Value::Object(target(args[0])?))
        }
        "fill" | "type" | "focus" => {
            // Focusing a field is typing nothing into it.
            let text = if command == "focus" {
                need(1, "one target (@ref or CSS selector)")?;
                ""
            } else {
                need(2, "a target (@ref or CSS selector) and the text")?;
                args[1]
            };
            let mut call = target(args[0])?;
            call.insert("text".to_owned(), text.into());
            // `fill` replaces what the field holds; `type` and `focus` keep it.
            call.insert("append".to_owned(), (command != "fill").into());
            ("browser_type", Value::Object(call))
        }
        "press" => {
            need(1, "one key or combo, e.g. Enter or Control+A")?;
            ("browser_press_key", json!({ "key": args[0] }))
        }
        "check" | "uncheck" => {
            need(1, "one target (@ref or CSS selector)")?;
            let mut call = target(args[0])?;
            call.insert("checked".to_owned(), (command == "check").into());
            ("browser_check", Value::Object(call))
        }
        "select" => {
            if args.len() < 2 {
                return Err("select takes a target and one or more values".to_owned());
            }
            let mut call = target(args[0])?;
            call.insert("values".to_owned(), json!(args[1..]));
            ("browser_select_option", Value::Object(call))
        }
        "wait" => {
            if has(&["--text"]) {
                need(1, "--text and the text to wait for")?;
                ("browser_wait_for", json!({ "text": args[0] }))
            } else {
                need(
                    1,
                    "milliseconds, a target (@ref or CSS selector), or --text TEXT",
                )?;
                match args[0].parse::<u64>() {
                    Ok(ms) => ("browser_wait_for", json!({ "time_ms": ms })),
                    Err(_) => ("browser_wait_for", Value::Object(target(args[0])?)),
                }
            }
        }
        "screenshot" => {
            need(
                0,
                "no arguments (and --full for the whole page); the image comes back as image content",
            )?;
            let full = has(&["--full", "-f"]);
            (
                "browser_screenshot",
                json!({ "full_page": full, "format": "png" }),
            )
        }
        "close" => {
            need(0, "no arguments")?;
            ("browser_session_close", json!({}))
        }
        "dialog" => match args.as_slice() {
            ["accept"] => ("browser_handle_dialog", json!({ "accept": true })),
            ["accept", text] => (
                "browser_handle_dialog",
                json!({ "accept": true, "prompt_text": text }),
            ),
            ["dismiss"] => ("browser_handle_dialog", json!({ "accept": false })),
            _ => return Err("dialog takes accept [prompt text] or dismiss".to_owned()),
        },
        _ => return Err(format!("`{}` is not allowed", prefix(command, 60))),
    };
    let call = airlock_tools::find(tool)
        .ok_or_else(|| format!("{command} has no tool behind it"))?
        .parse(args.as_object())
        .map_err(|airlock_tools::BadArgument(why)| why)?;
    Ok(Invocation {
        session_id: id.clone(),
        call,
        timeout: Duration::from_secs(timeout_secs),
    })
}

// `@e3`, `e3`, `f1e3` and `t2e3` are refs; anything else is a CSS selector: the
// catalogue's target arguments.
fn target(arg: &str) -> Result<Map<String, Value>, String> {
    let bare = arg.strip_prefix('@').unwrap_or(arg);
    let mut out = Map::new();
    if bare.parse::<airlock_core::NodeRef>().is_ok() {
        out.insert("ref".to_owned(), bare.into());
        return Ok(out);
    }
    if arg.starts_with('@') {
        return Err(format!(
            "`{}` is not a ref (expected @e12)",
            prefix(arg, 60)
        ));
    }
    out.insert("selector".to_owned(), arg.into());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_gateway::action::{SnapshotOptions, Target, WaitCondition};
    use airlock_gateway::{Interaction, Navigation, Reading, SessionCall};

    fn run(argv: &[&str]) -> Result<ToolCall, String> {
        parse(&ShellParams {
            session_id: "s1".to_owned(),
            argv: argv.iter().map(|s| (*s).to_owned()).collect(),
            timeout_sec: None,
        })
        .map(|i| i.call)
    }

    #[test]
    fn allowlisted_commands_parse() {
        assert!(matches!(
            run(&["open", "https://example.com"]),
            Ok(ToolCall::Navigate(Navigation::To { .. }))
        ));
        assert!(matches!(
            run(&["snapshot", "-i"]),
            Ok(ToolCall::Read(Reading::Snapshot(SnapshotOptions {
                interactive_only: true,
                ..
            })))
        ));
        assert!(matches!(
            run(&["click", "@e3"]),
            Ok(ToolCall::Interact(Interaction::Click {
                target: Target::Ref(_),
                ..
            }))
        ));
        assert!(matches!(
            run(&["click", "#save"]),
            Ok(ToolCall::Interact(Interaction::Click {
                target: Target::Selector(_),
                ..
            }))
        ));
        assert!(matches!(
            run(&["fill", "@e2", "alice"]),
            Ok(ToolCall::Interact(Interaction::Type {
                clear_first: true,
                ..
            }))
        ));
        assert!(matches!(
            run(&["press", "Enter"]),
            Ok(ToolCall::Interact(Interaction::PressKey { .. }))
        ));
        assert!(matches!(
            run(&["wait", "500"]),
            Ok(ToolCall::Read(Reading::WaitFor {
                condition: WaitCondition::Time(_),
                ..
            }))
        ));
        assert!(matches!(
            run(&["wait", "--text", "Done"]),
            Ok(ToolCall::Read(Reading::WaitFor {
                condition: WaitCondition::Text(_),
                ..
            }))
        ));
        assert!(matches!(
            run(&["select", "@e4", "a", "b"]),
            Ok(ToolCall::Interact(Interaction::SelectOption { .. }))
        ));
        assert!(matches!(
            run(&["uncheck", "@e5"]),
            Ok(ToolCall::Interact(Interaction::Check {
                checked: false,
                ..
            }))
        ));
        assert!(matches!(
            run(&["close"]),
            Ok(ToolCall::Session(SessionCall::Close))
        ));
        assert!(matches!(
            run(&["dialog", "accept", "Ada"]),
            Ok(ToolCall::Interact(Interaction::HandleDialog { accept: true, prompt_text: Some(t), .. })) if t == "Ada"
        ));
        assert!(matches!(
            run(&["dialog", "dismiss"]),
            Ok(ToolCall::Interact(Interaction::HandleDialog {
                accept: false,
                prompt_text: None,
                ..
            }))
        ));
    }

    #[test]
    fn refuses_what_is_not_allowed() {
        for (argv, why) in [
            (vec![], "argv is empty"),
            (vec!["eval", "1+1"], "not allowed"),
            (vec!["sh", "-c", "id"], "not allowed"),
            (
                vec!["open", "--session", "other", "https://x"],
                "flag `--session`",
            ),
            (vec!["snapshot", "--json"], "flag `--json`"),
            (vec!["open", "--cdp=9222", "https://x"], "flag `--cdp=9222`"),
            (vec!["click", "--x=1", "@e1"], "flag `--x=1`"),
            (vec!["open", "file:///etc/passwd"], "absolute http(s) URL"),
            (vec!["open", "javascript:alert(1)"], "absolute http(s) URL"),
            (vec!["click"], "one target"),
            (vec!["click", "@nope"], "not a ref"),
            (vec!["fill", "@e1"], "a target"),
            (
                vec!["dialog", "dismiss", "x"],
                "accept [prompt text] or dismiss",
            ),
            (vec!["dialog"], "accept [prompt text] or dismiss"),
        ] {
            let err = run(&argv).unwrap_err();
            assert!(err.contains(why), "{argv:?}: {err}");
        }
        let many: Vec<&str> = std::iter::once("select")
            .chain(std::iter::repeat_n("x", 20))
            .collect();
        assert!(run(&many).unwrap_err().contains("at most 16"));
        let long = "x".repeat(MAX_ARG_CHARS + 1);
        assert!(
            run(&["type", "@e1", &long])
                .unwrap_err()
                .contains("longer than")
        );
        let bad_id = parse(&ShellParams {
            session_id: "../x".into(),
            argv: vec!["close".into()],
            timeout_sec: None,
        });
        assert!(bad_id.unwrap_err().contains("session_id"));
        let bad_timeout = parse(&ShellParams {
            session_id: "a".into(),
            argv: vec!["close".into()],
            timeout_sec: Some(0),
        });
        assert!(bad_timeout.unwrap_err().contains("timeout_sec"));
    }

    #[test]
    fn output_is_bounded() {
        let out = bounded(&"é".repeat(MAX_OUTPUT_BYTES));
        assert!(out.len() < MAX_OUTPUT_BYTES + 100);
        assert!(out.contains("[output truncated"));
    }
}
