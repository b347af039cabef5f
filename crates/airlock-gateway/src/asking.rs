//! In-client approval's vocabulary: what the person at the agent's client is asked
//! about a held call, their answer, and the surface's way of asking. The gate uses it;
//! MCP implements it (elicitation); it depends on nothing else in the engine.

/// What an approver is asked, in the client (the agent's own MCP client): the held
/// call as the approval record has it, redacted.
#[derive(Debug, Clone)]
pub struct ApprovalPrompt {
    /// The approval's id.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The rule that held it, and its risk.
    pub rule: String,
    /// `low` … `critical`.
    pub risk: String,
    /// The target's role and name, if the call has one.
    pub target: Option<String>,
    /// The page.
    pub page_url: Option<String>,
    /// How long the call waits.
    pub timeout: std::time::Duration,
}

/// An in-client answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Run it.
    Approve,
    /// Do not, with the person's reason if they gave one.
    Deny(Option<String>),
}

/// A surface's way of asking the person at the agent's client (MCP elicitation).
/// `None` when it could not ask or the person dismissed the question: the other
/// channels (CLI, REST, webhook) still decide.
pub trait ApprovalAsker: Send + Sync + 'static {
    /// Asks; resolves with the answer, if one came.
    fn ask(
        &self,
        prompt: ApprovalPrompt,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<Answer>> + Send>>;

    /// Whether the question goes back in the call's own result (a stateless client,
    /// which answers by retrying the call): the call then ends at once with
    /// `approval_pending`, its record open, rather than waiting.
    fn defers(&self) -> bool {
        false
    }

    /// The approval a retried call answers (already decided in the store by the
    /// surface, or still open for the other channels): the call waits on that record
    /// instead of opening another.
    fn resumes(&self) -> Option<String> {
        None
    }
}
