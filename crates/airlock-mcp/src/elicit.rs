//! In-client approval: a held call put to the person at the agent's own MCP client as
//! a form elicitation, when the operator turned it on (`[approvals] in_client`) and
//! the client declared it can ask. In the 2025-11-25 era it is an
//! `elicitation/create` request while the call waits; in the stateless 2026-07-28
//! era the call ends at once with an `InputRequiredResult` whose `requestState` is
//! sealed (HMAC), bound to the caller and the exact call, and expires with the
//! approval; the retry carrying the answer runs the call on that approval, once.
//! Off by default, because a headless client could answer for itself; the
//! out-of-band channels (CLI, REST, webhook) stay open while the question is asked.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use airlock_gateway::{Answer, ApprovalAsker, ApprovalPrompt};
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::{ElicitationError, Peer, RoleServer};
use serde::Deserialize;

/// The form the person fills in.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ApprovalForm {
    /// Run this action?
    approve: bool,
    /// Why not (optional; the agent is told).
    reason: Option<String>,
}

rmcp::elicit_safe!(ApprovalForm);

/// Asks through the MCP peer of the request that was held.
pub(crate) struct ElicitAsker(pub(crate) Peer<RoleServer>);

impl ApprovalAsker for ElicitAsker {
    fn ask(&self, prompt: ApprovalPrompt) -> Pin<Box<dyn Future<Output = Option<Answer>> + Send>> {
        let peer = self.0.clone();
        Box::pin(async move {
            let message = message(&prompt);
            match peer
                .elicit_with_timeout::<ApprovalForm>(message, Some(prompt.timeout))
                .await
            {
                Ok(Some(form)) if form.approve => Some(Answer::Approve),
                Ok(Some(form)) => Some(Answer::Deny(form.reason)),
                Err(ElicitationError::UserDeclined) => {
                    Some(Answer::Deny(Some("declined in the client".to_owned())))
                }
                // Dismissed, unanswered, or the client cannot ask (another protocol
                // era, no capability): the other channels decide.
                Ok(None) | Err(_) => None,
            }
        })
    }
}

fn message(prompt: &ApprovalPrompt) -> String {
    let mut text = format!(
        "Airlock holds an action for your approval: {} ",
        prompt.tool
    );
    if let Some(target) = &prompt.target {
        text.push_str(&format!("on {target} "));
    }
    if let Some(page) = &prompt.page_url {
        text.push_str(&format!("at {page} "));
    }
    text.push_str(&format!(
        "(rule `{}`, risk {}; approval {}). It runs only if you approve within {} s.",
        prompt.rule,
        prompt.risk,
        prompt.id,
        prompt.timeout.as_secs()
    ));
    text
}

/// What a tool call knows of in-client approval, set by `call_tool` before dispatch.
#[derive(Clone)]
pub(crate) struct InClient {
    /// The stateless (2026-07-28) era: questions go back in the call's result.
    pub(crate) stateless: bool,
    /// The client declared form elicitation (for this request, when stateless).
    pub(crate) can_elicit: bool,
    /// The approval a stateless retry answers (from its verified `requestState`).
    pub(crate) resume: Option<String>,
    /// The question a stateless call ended with, for `call_tool` to return.
    pub(crate) deferred: Arc<Mutex<Option<ApprovalPrompt>>>,
}

/// A stateless client's asker: the first try records the question (and ends); the
/// retry names the approval it answers.
pub(crate) struct DeferAsker(pub(crate) InClient);

impl ApprovalAsker for DeferAsker {
    fn ask(&self, prompt: ApprovalPrompt) -> Pin<Box<dyn Future<Output = Option<Answer>> + Send>> {
        if let Ok(mut slot) = self.0.deferred.lock() {
            *slot = Some(prompt);
        }
        Box::pin(std::future::ready(None))
    }

    fn defers(&self) -> bool {
        self.0.resume.is_none()
    }

    fn resumes(&self) -> Option<String> {
        self.0.resume.clone()
    }
}

/// Seals and opens `requestState`: an approval id, bound to the caller and the exact
/// tool call (name and arguments), for as long as the approval waits. The key lives
/// in this process only; a restart voids open questions (they expire anyway).
pub(crate) struct StateSeal(rmcp::model::RequestStateCodec);

/// The process's seal (stateless requests may each get a server of their own).
pub(crate) fn seal() -> Option<&'static StateSeal> {
    static SEAL: std::sync::OnceLock<Option<StateSeal>> = std::sync::OnceLock::new();
    SEAL.get_or_init(StateSeal::new).as_ref()
}

impl StateSeal {
    fn new() -> Option<StateSeal> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).ok()?;
        rmcp::model::RequestStateCodec::try_new(key.to_vec())
            .ok()
            .map(StateSeal)
    }

    pub(crate) fn seal(&self, approval: &str, bound: &[u8], ttl: std::time::Duration) -> String {
        self.0.seal_with(
            approval.as_bytes(),
            &rmcp::model::SealOptions::new()
                .associated_data(bound)
                .ttl(ttl),
        )
    }

    /// The approval id, if `sealed` is ours, unexpired, and for this caller and call.
    pub(crate) fn open(&self, sealed: &str, bound: &[u8]) -> Option<String> {
        let payload = self.0.open_with(sealed, bound).ok()?;
        String::from_utf8(payload).ok()
    }
}

/// What a sealed state is bound to: the caller, the tool and its exact arguments.
pub(crate) fn bound_to(
    caller: &str,
    tool: &str,
    arguments: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Vec<u8> {
    let args = arguments.map(|a| serde_json::Value::Object(a.clone()).to_string());
    format!("{caller}\n{tool}\n{}", args.unwrap_or_default()).into_bytes()
}

/// The question of a stateless call, as an `InputRequiredResult`.
pub(crate) fn input_required(
    prompt: &ApprovalPrompt,
    state: String,
) -> Option<rmcp::model::InputRequiredResult> {
    use rmcp::model::{ElicitRequest, ElicitRequestParams, ElicitationSchema, InputRequest};
    let schema = ElicitationSchema::from_type::<ApprovalForm>().ok()?;
    let request = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message(prompt),
        requested_schema: schema,
    });
    let mut requests = rmcp::model::InputRequests::new();
    requests.insert("approval".to_owned(), InputRequest::Elicitation(request));
    Some(rmcp::model::InputRequiredResult::new(
        Some(requests),
        Some(state),
    ))
}

/// The person's answer in a stateless retry's `inputResponses`: `None` when they
/// dismissed it (the other channels decide) or sent nothing usable.
pub(crate) fn answer_of(response: &serde_json::Value) -> Option<Answer> {
    match response.get("action").and_then(serde_json::Value::as_str)? {
        "accept" => {
            let form: ApprovalForm =
                serde_json::from_value(response.get("content")?.clone()).ok()?;
            Some(if form.approve {
                Answer::Approve
            } else {
                Answer::Deny(form.reason)
            })
        }
        "decline" => Some(Answer::Deny(Some("declined in the client".to_owned()))),
        _ => None,
    }
}
