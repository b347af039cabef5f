//! What happened, as the log records it: one [`Event`] variant per kind, each with its
//! own struct, inside an [`Entry`] that says whose it is and when. Writers build these;
//! every reader (console, replay, webhook, metrics, the live-session table)
//! deserialises a stored body back into one, so a field renamed in one place fails to
//! compile instead of going missing in another.
//!
//! The JSON form is the log's: `kind` is the tag, fields sit beside it, and a field a
//! kind always had as `null` is still written as `null` (readers of older rows and
//! the exports see the same shape). A kind this build does not know reads as
//! [`Event::Unknown`], never as an error: a log outlives the code that wrote it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One event with its envelope: the tenant it belongs to and when it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The tenant whose log view shows it.
    pub tenant: String,
    /// When, in Unix milliseconds.
    pub time_ms: i64,
    /// Its position, as read back from a stored row (never written by a writer: the
    /// store numbers rows).
    #[serde(default, skip_serializing)]
    pub seq: u64,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

impl Entry {
    /// An event of `tenant`, now.
    pub fn now(tenant: impl Into<String>, event: Event) -> Entry {
        Entry {
            tenant: tenant.into(),
            time_ms: now_ms(),
            seq: 0,
            event,
        }
    }

    /// Its fields as the store appends them.
    pub fn fields(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            // Every variant is a struct of plain fields: it always serialises to an
            // object.
            _ => Map::new(),
        }
    }

    /// A stored body read back (its canonical JSON).
    pub fn parse(body: &str) -> Result<Entry, serde_json::Error> {
        serde_json::from_str(body)
    }
}

/// The current time in Unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Every kind of event the log holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// An action about to run, durable before it does.
    ToolIntent(Call),
    /// A call's outcome, durable before its result returns.
    ToolCall(CallDone),
    /// A call the egress or argument policy refused.
    PolicyRefusal(Refusal),
    /// A secret sent where it does not belong (flagged suspicious).
    SecretRefusal(Refusal),
    /// A call held for a human.
    ApprovalRequested(ApprovalRequested),
    /// A held call's decision (or its expiry).
    ApprovalDecided(ApprovalDecided),
    /// A browser session opened.
    SessionOpen(SessionChange),
    /// A browser session ended.
    SessionClose(SessionChange),
    /// A session not opened because its credentials could not be loaded.
    CredentialRefusal(CredentialRefusal),
    /// An operator took a session's page.
    OperatorTakeover(OperatorStep),
    /// A hold ended: handed back, released by someone else, or ended by the gateway.
    OperatorHandback(OperatorStep),
    /// An operator's input into a held page (its kind, never what was typed).
    OperatorInput(OperatorStep),
    /// An operator stored a session's cookies as a vault secret.
    LoginSaved(LoginSaved),
    /// A stored login was checked (and renewed, when its flow could).
    LoginCheck(LoginCheck),
    /// A person gave what a stored login's renewal needed through its one-time link
    /// (what kind, never the value).
    LoginGiven(LoginGiven),
    /// A request a surface refused for its credentials.
    AuthFailure(AuthFailure),
    /// A server-side task began (`browser_run_task`).
    TaskStarted(TaskStarted),
    /// A server-side task ended, however it ended.
    TaskEnded(TaskEnded),
    /// A vault change made from the CLI.
    VaultChange(Change),
    /// A tenant or key change made from the CLI.
    AccessChange(Change),
    /// A tenant's own policy changed: a new version applies to sessions opened after.
    PolicyChange(PolicyChange),
    /// A kind this build does not know (written by a newer one).
    #[serde(other)]
    Unknown,
}

impl Event {
    /// Its kind, as the log's `kind` field says it.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::ToolIntent(_) => "tool_intent",
            Event::ToolCall(_) => "tool_call",
            Event::PolicyRefusal(_) => "policy_refusal",
            Event::SecretRefusal(_) => "secret_refusal",
            Event::ApprovalRequested(_) => "approval_requested",
            Event::ApprovalDecided(_) => "approval_decided",
            Event::SessionOpen(_) => "session_open",
            Event::SessionClose(_) => "session_close",
            Event::CredentialRefusal(_) => "credential_refusal",
            Event::OperatorTakeover(_) => "operator_takeover",
            Event::OperatorHandback(_) => "operator_handback",
            Event::OperatorInput(_) => "operator_input",
            Event::LoginSaved(_) => "login_saved",
            Event::LoginCheck(_) => "login_check",
            Event::LoginGiven(_) => "login_given",
            Event::AuthFailure(_) => "auth_failure",
            Event::TaskStarted(_) => "task_started",
            Event::TaskEnded(_) => "task_ended",
            Event::VaultChange(_) => "vault_change",
            Event::AccessChange(_) => "access_change",
            Event::PolicyChange(_) => "policy_change",
            Event::Unknown => "unknown",
        }
    }

    /// The browser session it concerns, if any.
    pub fn session(&self) -> Option<&str> {
        match self {
            Event::ToolIntent(c) => c.session.as_deref(),
            Event::ToolCall(c) => c.call.session.as_deref(),
            Event::PolicyRefusal(r) | Event::SecretRefusal(r) => r.call.session.as_deref(),
            Event::ApprovalRequested(a) => a.session.as_deref(),
            Event::ApprovalDecided(a) => a.session.as_deref(),
            Event::SessionOpen(s) | Event::SessionClose(s) => Some(&s.session),
            Event::OperatorTakeover(o) | Event::OperatorHandback(o) | Event::OperatorInput(o) => {
                Some(&o.session)
            }
            Event::LoginSaved(l) => Some(&l.session),
            Event::LoginCheck(l) => l.session.as_deref(),
            Event::LoginGiven(l) => l.session.as_deref(),
            Event::TaskStarted(t) => t.session.as_deref(),
            Event::TaskEnded(t) => t.session.as_deref(),
            Event::CredentialRefusal(_)
            | Event::AuthFailure(_)
            | Event::VaultChange(_)
            | Event::AccessChange(_)
            | Event::PolicyChange(_)
            | Event::Unknown => None,
        }
    }

    /// The call it is about, for the kinds that are about one.
    pub fn call(&self) -> Option<&Call> {
        match self {
            Event::ToolIntent(c) => Some(c),
            Event::ToolCall(c) => Some(&c.call),
            Event::PolicyRefusal(r) | Event::SecretRefusal(r) => Some(&r.call),
            _ => None,
        }
    }

    /// The server-side task it is part of: the task's own events, its steps' calls
    /// and the approvals they were held for.
    pub fn task(&self) -> Option<&str> {
        match self {
            Event::TaskStarted(t) => Some(&t.task),
            Event::TaskEnded(t) => Some(&t.task),
            Event::ApprovalRequested(a) => a.task.as_deref(),
            Event::ApprovalDecided(a) => a.task.as_deref(),
            other => other.call().and_then(|c| c.task.as_deref()),
        }
    }

    /// The tool it concerns, if any.
    pub fn tool(&self) -> Option<&str> {
        match self {
            Event::ApprovalRequested(a) => Some(&a.tool),
            Event::ApprovalDecided(a) => Some(&a.tool),
            other => other.call().map(|c| c.tool.as_str()),
        }
    }
}

/// The element a call acts on, as the page had it right before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// Its role, as a snapshot shows it.
    pub role: String,
    /// Its accessible name.
    pub name: String,
    /// The URL of the document holding it.
    pub frame_url: String,
    /// Whether it is (or was, or looks like) a password field; absent on an approval
    /// request, which shows the card's own view of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<bool>,
    /// Where it goes, when it is a link (redacted like every page string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
}

/// Who called what, where, and what the risk gate said: the part every event about a
/// call has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// The caller (`tenant/key` or `tenant/key/user`).
    pub caller: String,
    /// The caller's role.
    pub role: String,
    /// Through which surface (`mcp`, `rest` …).
    pub surface: String,
    /// The browser session, if the call had one.
    pub session: Option<String>,
    /// The tool, by its catalogue name.
    pub tool: String,
    /// Its arguments, secrets replaced by their placeholders.
    pub args: Map<String, Value>,
    /// The element it acts on, when resolved.
    pub target: Option<Target>,
    /// The risk rule that matched, if one did.
    pub rule: Option<String>,
    /// That rule's risk.
    pub risk: Option<String>,
    /// What the gate decided (`allow`, `approve`, `deny`); null when no gate judged it.
    pub decision: Option<String>,
    /// The approval asked for, if one was.
    pub approval: Option<String>,
    /// Who approved it, if someone did.
    pub approver: Option<String>,
    /// The server-side task it was a step of, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// A call's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallDone {
    /// The call.
    #[serde(flatten)]
    pub call: Call,
    /// The error code it failed with (null: it succeeded).
    pub error: Option<String>,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
    /// Requests the egress policy refused while it ran.
    pub blocked: u64,
    /// Those requests by why they were refused.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub blocked_by: BTreeMap<String, u64>,
    /// The step's stored screenshot, in an `audit` recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording: Option<Recording>,
    /// The key id (JWK thumbprint) that signs the session's requests (Web Bot Auth),
    /// when they are signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
    /// Signatures made for the session's requests since its previous call event (a
    /// request may still have failed after it was signed: the site's own record says
    /// what arrived).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub signed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A step's screenshot in an `audit` recording: stored, or why it was not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Recording {
    /// Stored before the event that names it.
    Stored {
        /// The step's number in the session.
        step: u64,
        /// The image's SHA-256, hex.
        sha256: String,
        /// Its file, relative to the recordings directory.
        file: String,
    },
    /// Not stored (the step still happened).
    Failed {
        /// Why.
        error: String,
    },
}

/// A refused call, an event of its own so an auditor finds refusals without reading
/// every call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    /// The call.
    #[serde(flatten)]
    pub call: Call,
    /// The error code.
    pub error: Option<String>,
    /// Why, in the words the caller got.
    pub reason: String,
    /// A secret sent where it does not belong.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspicious: bool,
}

/// A call held for a human.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequested {
    /// The approval's id (`apr_…`).
    pub approval: String,
    /// Who called.
    pub caller: String,
    /// The browser session.
    pub session: Option<String>,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// The element it acts on.
    pub target: Option<Target>,
    /// The page it would act on.
    pub page_url: Option<String>,
    /// That page's title.
    pub page_title: Option<String>,
    /// The rule that held it.
    pub rule: String,
    /// That rule's risk.
    pub risk: String,
    /// When it expires undecided, in Unix milliseconds.
    pub expires_ms: i64,
    /// The SHA-256 of the screenshot shown to the approver, hex.
    pub screenshot_sha256: Option<String>,
    /// The server-side task the held call was a step of, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Why the rule held it, in a person's words (what would flow from where to
    /// where, a model's safety check), redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A server-side task as it began: who asked for what, with which model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStarted {
    /// The task's id (`task_…`).
    pub task: String,
    /// Who asked for it.
    pub caller: String,
    /// Through which surface.
    pub surface: String,
    /// The browser session it runs in, when one was open.
    pub session: Option<String>,
    /// The operator's model it runs with (its `[[models]]` name).
    pub model: String,
    /// What it was asked to do (through the session's redactor).
    pub instruction: String,
    /// Where it starts, if it was given a page.
    pub start_url: Option<String>,
    /// The most steps it may take.
    pub max_steps: u32,
}

/// A server-side task as it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEnded {
    /// The task's id.
    pub task: String,
    /// The browser session it ran in.
    pub session: Option<String>,
    /// How it ended (`finished`, `max_steps`, `needs_user`, `denied`, `error`,
    /// `cancelled`).
    pub status: String,
    /// Steps taken (browser calls the model asked for).
    pub steps: u32,
    /// Model tokens spent, as the endpoint counted them (or estimated).
    pub tokens: u64,
    /// What the model reported, redacted and cut.
    pub answer: Option<String>,
    /// The error code that ended it, if one did.
    pub error: Option<String>,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
}

/// A held call's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalDecided {
    /// The approval's id.
    pub approval: String,
    /// The browser session.
    pub session: Option<String>,
    /// The tool.
    pub tool: String,
    /// What was decided.
    pub status: ApprovalStatus,
    /// Who decided (null: nobody, it expired).
    pub by: Option<String>,
    /// Their note.
    pub note: Option<String>,
    /// The server-side task the held call was a step of, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// A session opened or ended. A session ended because the gateway that held it is
/// gone carries only what that gateway left in the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionChange {
    /// The session's id.
    pub session: String,
    /// Who holds its lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// `process` or `context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<String>,
    /// The vault secrets loaded into it (names only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<Vec<String>>,
    /// The grant it was opened with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// Its recording mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// `warm` or `cold`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    /// How long it took to open, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_ms: Option<u64>,
    /// The end user its lease is for.
    pub user: Option<String>,
    /// The conversation its lease is for.
    pub conversation: Option<String>,
    /// Why it ended.
    #[serde(default)]
    pub reason: Option<String>,
    /// The gateway process that held it, when that gateway is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_pid: Option<i64>,
    /// The key id that signs its requests (Web Bot Auth), when they are signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_key: Option<String>,
}

/// A session refused for its credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialRefusal {
    /// Who asked.
    pub caller: String,
    /// The secrets asked for (names).
    pub credentials: Vec<String>,
    /// Why they could not be loaded.
    pub reason: String,
}

/// An operator's step on a session's page: who, which session, what kind (never what
/// was typed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorStep {
    /// The session.
    pub session: String,
    /// The operator (null: the gateway ended the hold).
    pub by: Option<String>,
    /// The kind of input (`type`, `key`, `click` …).
    #[serde(default)]
    pub input: Option<String>,
    /// Who held the page, when someone else ended the hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// Why the hold ended, when someone else ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A session's cookies stored as a vault secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginSaved {
    /// The session.
    pub session: String,
    /// The operator.
    pub by: String,
    /// The secret's name.
    pub secret: String,
    /// The origins it is for.
    pub origins: Vec<String>,
    /// How many cookies were stored.
    pub cookies: u64,
}

/// A stored login's check: what it found and what was done about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginCheck {
    /// The login (the vault secret it keeps alive).
    pub login: String,
    /// Who asked: `schedule`, or the operator's caller.
    pub by: String,
    /// The browser session it ran in.
    pub session: Option<String>,
    /// The state it left: `alive`, `needs_user`, `failed`.
    pub state: String,
    /// Whether its renewal flow ran and the login is alive again by it.
    pub renewed: bool,
    /// Why, in one line (what the probe saw, or the step that stopped the flow).
    pub why: String,
}

/// What a person gave through a login's one-time link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginGiven {
    /// The login.
    pub login: String,
    /// The console user who gave it.
    pub by: String,
    /// What: `code` (typed into the waiting page), `takeover` (they signed in by
    /// hand in the waiting session) or `password` (into the vault).
    pub gave: String,
    /// The renewal session it was typed into, for a code.
    pub session: Option<String>,
}

/// A refused credential on a surface: why and from where, never the token tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthFailure {
    /// The surface (`mcp`, `rest`, `console` …).
    pub surface: String,
    /// Why (`missing`, `unknown`, `role` …).
    pub reason: String,
    /// The client's address.
    pub client: Option<String>,
    /// How many times, when one event stands for several (a browser worker's
    /// refusals, reported together); absent for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
}

/// A change made from the CLI: what was done, to which names, by which OS user; never
/// a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// What was done (`secret_set`, `key_create` …).
    pub action: String,
    /// The OS user who did it.
    pub by: String,
    /// What it was done to (names, origins, counts), by action.
    #[serde(flatten)]
    pub detail: Map<String, Value>,
}

/// A tenant's policy, changed: who set it, its new version and the SHA-256 of what it
/// says (the policy itself is the store's, by version).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyChange {
    /// Who set it (`api:<key>`, an OS user).
    pub by: String,
    /// Its version, from 1.
    pub version: u64,
    /// SHA-256 of its canonical JSON, hex.
    pub hash: String,
}

/// Where an approval stands. Written as its word (`pending` …), which is also how every
/// surface shows it and how the store keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for a human.
    Pending,
    /// Approved: the held call may run once.
    Approved,
    /// Denied: the held call is refused.
    Denied,
    /// Nobody decided in time (or no one was waiting any more).
    Expired,
}

impl ApprovalStatus {
    /// Every status, in the order they are listed.
    pub const ALL: [ApprovalStatus; 4] = [
        ApprovalStatus::Pending,
        ApprovalStatus::Approved,
        ApprovalStatus::Denied,
        ApprovalStatus::Expired,
    ];

    /// Its word.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Denied => "denied",
            ApprovalStatus::Expired => "expired",
        }
    }

    /// The status a decision gives.
    pub fn decided(approve: bool) -> ApprovalStatus {
        if approve {
            ApprovalStatus::Approved
        } else {
            ApprovalStatus::Denied
        }
    }
}

impl std::fmt::Display for ApprovalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ApprovalStatus {
    type Err = UnknownStatus;

    fn from_str(word: &str) -> Result<Self, UnknownStatus> {
        ApprovalStatus::ALL
            .into_iter()
            .find(|s| s.as_str() == word)
            .ok_or(UnknownStatus)
    }
}

/// A word that is no approval status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a status is one of pending, approved, denied, expired")]
pub struct UnknownStatus;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call() -> Call {
        Call {
            caller: "default/agent".to_owned(),
            role: "act".to_owned(),
            surface: "mcp".to_owned(),
            session: Some("ses_1".to_owned()),
            tool: "browser_click".to_owned(),
            args: json!({"ref": "e3"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            target: None,
            rule: None,
            risk: None,
            decision: Some("allow".to_owned()),
            approval: None,
            approver: None,
            task: None,
        }
    }

    #[test]
    fn a_call_keeps_the_logs_shape_nulls_included() {
        let entry = Entry {
            tenant: "default".to_owned(),
            time_ms: 7,
            seq: 0,
            event: Event::ToolCall(CallDone {
                call: call(),
                error: None,
                duration_ms: 12,
                blocked: 0,
                blocked_by: BTreeMap::new(),
                recording: None,
                signed_by: None,
                signed: 0,
            }),
        };
        let fields = entry.fields();
        assert_eq!(fields["kind"], "tool_call");
        assert_eq!(fields["tenant"], "default");
        // Null where the kind always wrote null; absent where it never wrote it.
        assert!(fields["error"].is_null() && fields.contains_key("error"));
        assert!(fields["target"].is_null() && fields.contains_key("target"));
        assert!(!fields.contains_key("recording") && !fields.contains_key("blocked_by"));
        assert!(!fields.contains_key("seq"));
        // Read back from a stored body (which carries its seq).
        let body = crate::canonical(41, &fields);
        let back = Entry::parse(&body).unwrap();
        assert_eq!(back.seq, 41);
        assert_eq!(back.event, entry.event);
        assert_eq!(back.event.tool(), Some("browser_click"));
        assert_eq!(back.event.session(), Some("ses_1"));
    }

    #[test]
    fn every_kind_round_trips_under_its_own_word() {
        let operator = OperatorStep {
            session: "ses_1".to_owned(),
            by: Some("ops".to_owned()),
            input: Some("type".to_owned()),
            holder: None,
            reason: None,
        };
        let change = SessionChange {
            session: "ses_1".to_owned(),
            caller: None,
            isolation: None,
            credentials: None,
            grant: None,
            record: None,
            start: None,
            open_ms: None,
            user: None,
            conversation: None,
            reason: Some("gateway gone".to_owned()),
            gateway_pid: Some(4),
            signing_key: None,
        };
        let refusal = Refusal {
            call: call(),
            error: Some("policy_denied".to_owned()),
            reason: "the egress policy refuses 10.0.0.1".to_owned(),
            suspicious: false,
        };
        let events = [
            Event::ToolIntent(call()),
            Event::PolicyRefusal(refusal.clone()),
            Event::SecretRefusal(Refusal {
                suspicious: true,
                ..refusal
            }),
            Event::ApprovalDecided(ApprovalDecided {
                approval: "apr_1".to_owned(),
                session: None,
                tool: "browser_click".to_owned(),
                status: ApprovalStatus::Expired,
                by: None,
                note: None,
                task: None,
            }),
            Event::SessionClose(change),
            Event::OperatorInput(operator),
            Event::AuthFailure(AuthFailure {
                surface: "rest".to_owned(),
                reason: "unknown".to_owned(),
                client: None,
                count: None,
            }),
            Event::VaultChange(Change {
                action: "secret_set".to_owned(),
                by: "root".to_owned(),
                detail: json!({"name": "bank", "origins": ["https://bank.test"]})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            }),
            Event::LoginCheck(LoginCheck {
                login: "admin".to_owned(),
                by: "schedule".to_owned(),
                session: Some("ses_2".to_owned()),
                state: "needs_user".to_owned(),
                renewed: false,
                why: "the site asks for a person".to_owned(),
            }),
            // A field of its own named `kind` would fight the event's tag (its
            // append fails): the word is `gave`.
            Event::LoginGiven(LoginGiven {
                login: "admin".to_owned(),
                by: "default/admin".to_owned(),
                gave: "code".to_owned(),
                session: Some("ses_2".to_owned()),
            }),
        ];
        for event in events {
            let entry = Entry::now("default", event);
            let fields = entry.fields();
            assert_eq!(fields["kind"], entry.event.kind());
            let back = Entry::parse(&crate::canonical(1, &fields)).unwrap();
            assert_eq!(back.event, entry.event, "{}", entry.event.kind());
        }
    }

    #[test]
    fn a_kind_from_a_newer_build_reads_as_unknown_not_as_an_error() {
        let body = r#"{"kind":"task_step","tenant":"t","time_ms":1,"seq":3,"step":2}"#;
        let entry = Entry::parse(body).unwrap();
        assert_eq!(entry.event, Event::Unknown);
        assert_eq!(entry.tenant, "t");
        assert_eq!(entry.event.session(), None);
    }

    #[test]
    fn an_approval_status_is_its_word() {
        for status in ApprovalStatus::ALL {
            assert_eq!(status.as_str().parse::<ApprovalStatus>(), Ok(status));
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
        assert_eq!("maybe".parse::<ApprovalStatus>(), Err(UnknownStatus));
    }
}
