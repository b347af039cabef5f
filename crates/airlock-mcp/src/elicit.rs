//! In-client approval: a held call put to the person at the agent's own MCP client as
//! a form elicitation (`elicitation/create`, protocol 2025-11-25), when the operator
//! turned it on (`[approvals] in_client`) and the client declared it can ask. Off by
//! default, because a headless client could answer for itself; the out-of-band
//! channels (CLI, REST, webhook) stay open while the question is asked.

use std::future::Future;
use std::pin::Pin;

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
