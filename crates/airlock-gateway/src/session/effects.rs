//! The effects stage of the call pipeline, right after the call acted: the requests
//! its page sent that an operator's effect rule holds (`request_method`,
//! `request_url`, `request_fields`, `request_body` in `[[approvals.rules]]`) are
//! paused in the browser, unsent. One human decides them, on an approval card that
//! says what would be sent where; approved, they are released and the call answers
//! once what they brought has settled; otherwise they are dropped and the call fails
//! with the decision's code. A request held between calls (a page's timer) is asked
//! about by the next call.

use airlock_browser::HeldEffect;
use airlock_core::text::display_safe;

use super::context::{CallContext, Gate};
use super::gate::Ask;
use super::*;

/// What the effects stage made of a call that acted.
pub(super) enum Effected {
    /// Nothing was held.
    None,
    /// Held requests were approved and sent; this note says so.
    Sent(String),
    /// They were dropped: the call fails with this error, and this note says the
    /// call itself ran.
    Refused(Box<Error>, String),
}

impl AgentSession {
    pub(super) async fn hold_effects(
        &self,
        context: &mut CallContext,
        held: &Held,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> Effected {
        let pending = match held.session.held_effects().await {
            Ok(pending) => pending,
            Err(e) => {
                tracing::warn!(error = %e, "could not ask the session for held requests");
                return Effected::None;
            }
        };
        let Some(first) = pending.first() else {
            return Effected::None;
        };
        let ids: Vec<u64> = pending.iter().map(|e| e.id).collect();
        let rule = first.rule.clone();
        let shown = requests_in_words(&pending);
        // On the record and the card: what the call's page would send, and why held.
        context.effect = Some(describe(context.tool, &pending));
        context.gate = Some(Gate {
            rule: rule.clone(),
            risk: pending
                .iter()
                .map(|e| e.risk)
                .max()
                .unwrap_or_default()
                .as_str(),
            action: airlock_risk::Action::Approve.as_str(),
            approval: None,
            approver: None,
        });
        tracing::warn!(tool.name = context.tool, rule = %rule, requests = ids.len(), "requests the call caused are held for a human");
        let decided = match self.inner.config.store.as_ref() {
            Some(store) => {
                let ask = Ask {
                    args,
                    effect: true,
                    screenshot: !pending.iter().any(|e| e.navigation),
                };
                self.await_approval(context, held, ask, store, self.inner.config.approval_timeout)
                    .await
            }
            None => Err(Error::RuleDenied {
                rule: rule.clone(),
                message: "a request this call caused needs a human's approval, and this gateway has no store to ask in".to_owned(),
            }),
        };
        let send = decided.is_ok();
        if let Err(e) = held.session.decide_effects(&ids, send).await {
            tracing::error!(error = %e, "could not decide the held requests");
            return Effected::Refused(
                Box::new(Error::Internal(
                    "the requests this call caused could not be released or dropped".to_owned(),
                )),
                String::new(),
            );
        }
        match decided {
            Ok(()) => {
                let by = context
                    .gate
                    .as_ref()
                    .and_then(|g| g.approver.clone())
                    .unwrap_or_else(|| "someone".to_owned());
                let mut note =
                    format!("\nheld by rule {rule}, then sent after {by} approved: {shown}");
                if let Ok(Some(diff)) = held.session.changes().await {
                    note.push_str("\nthe page after it was sent:\n");
                    note.push_str(&diff);
                }
                Effected::Sent(note)
            }
            Err(e) => Effected::Refused(
                Box::new(e),
                format!(
                    "\nthe call itself ran; what it caused was held by rule {rule} and not sent: {shown}"
                ),
            ),
        }
    }
}

// The held requests in one line each: method and URL (shown as a person deciding must
// read them).
fn requests_in_words(pending: &[HeldEffect]) -> String {
    pending
        .iter()
        .map(|e| format!("{} {}", e.method, airlock_policy::display_url(&e.url)))
        .collect::<Vec<_>>()
        .join("; ")
}

// What the approval card says of the held requests: the call that caused them, each
// request with the fields it carries, and the rule's reasons.
fn describe(tool: &str, pending: &[HeldEffect]) -> String {
    let mut text = format!("{tool} caused ");
    for (i, e) in pending.iter().enumerate() {
        if i > 0 {
            text.push_str("; and ");
        }
        text.push_str(&format!(
            "{} {}",
            e.method,
            airlock_policy::display_url(&e.url)
        ));
        if !e.fields.is_empty() {
            let fields: Vec<String> = e.fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
            text.push_str(&format!(" carrying {}", fields.join(", ")));
        }
        if e.navigation {
            text.push_str(" (the page moves when it is sent)");
        }
        text.push_str(&format!(" (rule {}: {})", e.rule, e.why));
    }
    display_safe(&text).into_owned()
}
