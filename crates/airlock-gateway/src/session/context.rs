//! What a call carries through the pipeline: its [`CallContext`], which each stage
//! reads and adds to, what the gate and the data-flow stage decided, and who is told
//! when it finishes.

use std::sync::Arc;
use std::time::Duration;

use airlock_core::ErrorCode;
use airlock_risk::{Action, Risk, Verdict};
use tokio::time::Instant;

use crate::action::Resolved;
use crate::error::Error;
use crate::sessions::{Principal, SessionId};
use crate::surface::Surface;

/// One call on its way through the pipeline: who made it, through which surface, and
/// what the stages found. Later stages (risk, approval, audit) read and add to it.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// The tool called (its MCP name, which is also its name in records).
    pub tool: &'static str,
    /// Who called.
    pub principal: Principal,
    /// Through which surface.
    pub surface: Surface,
    /// The agent session that made the call (process-local, for logs).
    pub agent: u64,
    /// The agent's lease: the one the call ran in, or, for a call refused before it
    /// entered one, the one open then (if any).
    pub session: Option<SessionId>,
    /// The element the call acts on, as the page had it right before (resolved only
    /// when an observer asks for targets; risk rules and approvals will).
    pub target: Option<Resolved>,
    /// The risk rule that matched the call and what came of it, if one did.
    pub gate: Option<Gate>,
    /// Whether the risk stage judged the call (no rule matching is a decision too:
    /// allow). A call refused before it (bad arguments, no session) has none.
    pub gated: bool,
    /// Requests the egress proxy (or the session's outbound protection) refused while
    /// the call ran.
    pub blocked: u64,
    /// Those requests by why they were refused.
    pub blocked_by: std::collections::BTreeMap<&'static str, u64>,
    /// Whether the call changed the page (an action that ran without error).
    pub acted: bool,
    /// The step's stored screenshot, in an `audit` recording.
    pub(crate) recorded: Option<std::result::Result<crate::recording::Recorded, String>>,
    /// Who to ask in the client when the call is held (when the gateway allows it).
    pub(crate) asker: Option<Asker>,
    /// Turns true when the call's caller went away (the surface says so: a
    /// cancelled request, a closed connection): a wait for a human ends withdrawn.
    pub(crate) gone: Option<tokio::sync::watch::Receiver<bool>>,
    /// Why the call failed, as the stage that failed it said (the audit stage records
    /// its code and words; the agent reads it rendered).
    pub(crate) failed: Option<Arc<Error>>,
    /// Time spent on the pipeline's own stages: resolving the target, the intent
    /// event, the outcome event, the egress summary (the log line reports them beside
    /// an action's stages).
    pub(crate) spent: Spent,
    /// The server-side task the call is a step of, if any.
    pub task: Option<String>,
    /// A safety signal the task's model family attached to this step (a pending
    /// safety check): the step waits for a human whatever the rules say, unless a
    /// rule refuses it.
    pub flagged: Option<String>,
    /// What the data-flow stage holds the call for, if anything (the risk gate asks
    /// a human, unless a rule refuses the call).
    pub(crate) flow: Option<FlowVerdict>,
    /// What the requests an effect rule held after the call acted carry, in words
    /// (the approval card shows it).
    pub(crate) effect: Option<String>,
    /// When the call arrived.
    pub started: Instant,
}

/// The pipeline's own costs of one call.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Spent {
    pub(crate) resolve: Duration,
    pub(crate) flow: Duration,
    pub(crate) intent: Duration,
    pub(crate) audit: Duration,
    pub(crate) egress: Duration,
    // On the session's running state in the shared store (the budget's count, the
    // reads appended and caught up on); zero without one. Partly within `flow`.
    pub(crate) shared: Duration,
}

/// What the risk and approval stages decided about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// The rule that matched.
    pub rule: String,
    /// Its risk (`high` …).
    pub risk: &'static str,
    /// Its action (`allow`, `approve`, `deny`).
    pub action: &'static str,
    /// The approval asked for, if the rule asked for one.
    pub approval: Option<String>,
    /// Who approved it, if someone did.
    pub approver: Option<String>,
}

/// A finished call, as observers see it.
#[derive(Debug)]
pub struct CallRecord<'a> {
    /// The call and what the stages found.
    pub context: &'a CallContext,
    /// How long it took, admission to redaction.
    pub duration: Duration,
    /// Its error code, if it failed.
    pub error: Option<ErrorCode>,
}

/// Told of every finished call, after its result is final (metrics now; the audit
/// record is a stage of its own). Called on the call's task: must not block.
pub trait CallObserver: Send + Sync + 'static {
    /// One call finished.
    fn call_finished(&self, record: &CallRecord<'_>);

    /// Whether this observer needs the resolved target of each call (it costs a
    /// round trip to the page per action).
    fn wants_targets(&self) -> bool {
        false
    }
}

/// Who is told of every finished call; shared by the gateway (which adds them) and
/// every agent session (whose calls tell them).
#[derive(Default)]
pub(crate) struct Observers(std::sync::RwLock<Vec<Arc<dyn CallObserver>>>);

impl Observers {
    /// Tells `observer` of every call that finishes from now on.
    pub(crate) fn add(&self, observer: Arc<dyn CallObserver>) {
        self.0
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(observer);
    }

    /// Every observer now.
    pub(crate) fn all(&self) -> Vec<Arc<dyn CallObserver>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether any needs each call's resolved target.
    pub(crate) fn wants_targets(&self) -> bool {
        self.0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|o| o.wants_targets())
    }
}

/// A surface's in-client approver, carried by the call it may be asked about.
#[derive(Clone)]
pub(crate) struct Asker(pub(crate) Arc<dyn crate::asking::ApprovalAsker>);

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Asker")
    }
}

/// What the stage decided about a call it matched: the rule, its words for a person,
/// and whether it refuses (else it holds the call for a human).
#[derive(Debug, Clone)]
pub(crate) struct FlowVerdict {
    pub(crate) rule: &'static str,
    pub(crate) detail: String,
    pub(crate) deny: bool,
}

impl FlowVerdict {
    /// As the risk gate weighs it against the rules.
    pub(crate) fn as_verdict(&self) -> Verdict {
        Verdict {
            rule: self.rule.to_owned(),
            builtin: true,
            risk: Risk::High,
            action: if self.deny {
                Action::Deny
            } else {
                Action::Approve
            },
            message: Some(self.detail.clone()),
            why: self.detail.clone(),
        }
    }
}
