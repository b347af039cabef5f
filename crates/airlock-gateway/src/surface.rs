//! The surfaces calls arrive through. The gateway's words are the same for every
//! surface except where they suggest a next step: each surface names its own tools
//! there, and a surface without the step gets no suggestion (a browser-shell user is
//! never told to call a tool it does not have).

use crate::error::Error;

/// Which surface an agent session serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Surface {
    /// The `browser_*` MCP tools.
    #[default]
    Mcp,
    /// The `browser-shell` MCP tool (agent-browser style argv).
    Shell,
}

/// A next step a message may suggest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    /// Read the whole page.
    Snapshot,
    /// Switch to another tab.
    SelectTab,
    /// Open a session with this stored credential loaded.
    OpenWith(&'a str),
    /// Close the browser session.
    CloseSession,
    /// Answer the dialog that holds the page.
    AnswerDialog,
}

impl Surface {
    /// Its name in logs and audit events.
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Mcp => "mcp",
            Surface::Shell => "browser-shell",
        }
    }

    /// How this surface's user takes `step`, if it can.
    pub(crate) fn suggest(self, step: Step<'_>) -> Option<String> {
        match (self, step) {
            (Surface::Mcp, Step::Snapshot) => Some("browser_snapshot reads the page".to_owned()),
            (Surface::Mcp, Step::SelectTab) => Some("browser_tabs select to use it".to_owned()),
            (Surface::Mcp, Step::OpenWith(name)) => Some(format!(
                "a session loads credentials when it opens: call browser_session_close, then browser_session_open {{credentials: [\"{name}\"]}}"
            )),
            (Surface::Mcp, Step::CloseSession) => {
                Some("call browser_session_close first".to_owned())
            }
            (Surface::Mcp, Step::AnswerDialog) => Some(
                "browser_handle_dialog {accept: true|false} answers it; unanswered, it is dismissed after the action timeout"
                    .to_owned(),
            ),
            (Surface::Shell, Step::Snapshot) => Some("`snapshot` reads the page".to_owned()),
            (Surface::Shell, Step::CloseSession) => Some("run `close` first".to_owned()),
            (Surface::Shell, Step::AnswerDialog) => Some(
                "`dialog accept` or `dialog dismiss` answers it; unanswered, it is dismissed after the action timeout"
                    .to_owned(),
            ),
            (Surface::Shell, Step::SelectTab | Step::OpenWith(_)) => None,
        }
    }

    /// What to add to a failure's message, for this surface.
    pub(crate) fn hint(self, error: &Error) -> Option<String> {
        let step = match error {
            Error::CredentialNotLoaded { name } => Step::OpenWith(name),
            Error::SessionAlreadyOpen(_) | Error::BudgetExhausted { .. } => Step::CloseSession,
            Error::Browser(
                airlock_browser::Error::DialogOpen { .. }
                | airlock_browser::Error::DialogOpened { .. },
            ) => Step::AnswerDialog,
            _ => return None,
        };
        self.suggest(step).map(|s| format!("; {s}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_user_is_never_told_to_call_a_browser_tool() {
        let steps = [
            Step::Snapshot,
            Step::SelectTab,
            Step::OpenWith("github"),
            Step::CloseSession,
            Step::AnswerDialog,
        ];
        for step in steps {
            if let Some(words) = Surface::Shell.suggest(step) {
                assert!(!words.contains("browser_"), "{step:?}: {words}");
            }
            let words = Surface::Mcp.suggest(step).expect("MCP has every step");
            assert!(words.contains("browser_"), "{step:?}: {words}");
        }
    }
}
