//! The risk and approval stages of the call pipeline: the first risk rule matching a
//! call (on its resolved target) decides; a call it holds waits for a human through
//! the store, holding no lock, and runs only on the element that was approved.

use airlock_risk::{Action, Facts};
use airlock_store::{ApprovalRecord, Store};

use super::call::{CallContext, Gate};
use super::record::{now_ms, redact_strings};
use super::*;
use crate::action::Resolved;

impl AgentSession {
    // Risk, then approval: the first rule that matches the call (as resolved)
    // decides; a call it holds waits for a human, holding no lock.
    pub(super) async fn gate(
        &self,
        context: &mut CallContext,
        held: &Held,
        call: &ToolCall,
    ) -> Result<()> {
        let Some(gateway) = self.inner.gateway.upgrade() else {
            return Ok(());
        };
        let rules = &gateway.config.rules;
        if rules.is_empty() {
            return Ok(());
        }
        let verdict = match call.form_fields() {
            // A form: each field is judged as the typing it is; the first that a rule
            // holds or refuses decides, and is the call's target from then on.
            Some(fields) => {
                let mut found = None;
                for (target, value) in fields {
                    let resolved = held.session.resolve(target).await?;
                    let verdict = rules
                        .classify(
                            &facts_of(context.tool, Some(&resolved), Some(value), None),
                            &held.policy,
                        )
                        .filter(|v| v.action != Action::Allow);
                    if let Some(verdict) = verdict {
                        context.target = Some(resolved);
                        found = Some(verdict);
                        break;
                    }
                }
                found
            }
            None => rules.classify(
                &facts_of(
                    context.tool,
                    context.target.as_ref(),
                    call.typed_text(),
                    call.navigation_target(),
                ),
                &held.policy,
            ),
        };
        let Some(verdict) = verdict else {
            return Ok(());
        };
        context.gate = Some(Gate {
            rule: verdict.rule.clone(),
            risk: verdict.risk.as_str(),
            action: verdict.action.as_str(),
            approval: None,
            approver: None,
        });
        tracing::info!(
            tool.name = context.tool,
            rule = %verdict.rule,
            risk = verdict.risk.as_str(),
            action = verdict.action.as_str(),
            why = %verdict.why,
            "risk rule matched"
        );
        match verdict.action {
            Action::Allow => Ok(()),
            Action::Deny => Err(Error::RuleDenied {
                message: verdict
                    .message
                    .clone()
                    .unwrap_or_else(|| "a risk rule refuses this call".to_owned()),
                rule: verdict.rule,
            }),
            Action::Approve => {
                let Some(store) = gateway.store() else {
                    return Err(Error::RuleDenied {
                        rule: verdict.rule,
                        message: "this call needs a human's approval, and this gateway has no store to ask in"
                            .to_owned(),
                    });
                };
                self.await_approval(context, held, call, store, gateway.config.approval_timeout)
                    .await
            }
        }
    }

    // Records the approval request, waits for its decision, and on approval checks
    // that the element approved is still the one on the page.
    async fn await_approval(
        &self,
        context: &mut CallContext,
        held: &Held,
        call: &ToolCall,
        store: &Store,
        timeout: Duration,
    ) -> Result<()> {
        use std::sync::atomic::Ordering;
        if self.inner.waiting.swap(true, Ordering::AcqRel) {
            return Err(Error::ApprovalPending);
        }
        let _waiting = Waiting(&self.inner.waiting);
        let rule = context
            .gate
            .as_ref()
            .map(|g| g.rule.clone())
            .unwrap_or_default();
        let risk = context.gate.as_ref().map_or("", |g| g.risk);
        let redact = |text: &str| held.loaded.redact(text);
        let mut args = serde_json::Value::Object(call.audit_args());
        redact_strings(&mut args, &redact);
        let target = context.target.as_ref().map(|t| {
            let mut value = serde_json::json!({
                "role": t.role, "name": t.name, "frame_url": t.frame_url,
            });
            redact_strings(&mut value, &redact);
            value.to_string()
        });
        let session = context.session.as_ref().map(ToString::to_string);
        let binding = {
            use sha2::{Digest, Sha256};
            let mut h = Sha256::new();
            for part in [
                session.as_deref().unwrap_or_default(),
                &context.principal.caller(),
                &args.to_string(),
                target.as_deref().unwrap_or_default(),
            ] {
                h.update(part.as_bytes());
                h.update([0u8]);
            }
            h.finalize().to_vec()
        };
        let now = now_ms();
        let id = approval_id()?;
        store
            .insert_approval(&ApprovalRecord {
                id: id.clone(),
                tenant: context.principal.tenant.clone(),
                caller: context.principal.caller(),
                session,
                tool: context.tool.to_owned(),
                args: args.to_string(),
                target,
                page_url: context.target.as_ref().map(|t| redact(&t.frame_url)),
                rule: rule.clone(),
                risk: risk.to_owned(),
                binding,
                status: "pending".to_owned(),
                created_ms: now,
                expires_ms: now + timeout.as_millis() as i64,
                decided_ms: None,
                decided_by: None,
                note: None,
            })
            .await
            .map_err(|e| Error::Internal(format!("could not record the approval request: {e}")))?;
        if let Some(gate) = &mut context.gate {
            gate.approval = Some(id.clone());
        }
        tracing::warn!(approval.id = %id, tool.name = context.tool, rule = %rule, "call held for a human's approval");
        let deadline = Instant::now() + timeout;
        let decided = loop {
            let record = store
                .approval(&id)
                .await
                .map_err(|e| Error::Internal(format!("could not read the approval: {e}")))?;
            match record {
                Some(r) if r.status != "pending" => break r,
                _ if Instant::now() >= deadline => {
                    let _ = store.expire_approval(&id, now_ms()).await;
                    return Err(Error::ApprovalTimeout {
                        secs: timeout.as_secs(),
                        rule,
                    });
                }
                _ => {
                    tokio::time::sleep(
                        APPROVAL_POLL.min(deadline.saturating_duration_since(Instant::now())),
                    )
                    .await
                }
            }
        };
        let by = decided
            .decided_by
            .clone()
            .unwrap_or_else(|| "someone".to_owned());
        match decided.status.as_str() {
            "approved" => {}
            "denied" => {
                return Err(Error::ApprovalDenied {
                    by,
                    reason: decided.note,
                });
            }
            _ => {
                return Err(Error::ApprovalTimeout {
                    secs: timeout.as_secs(),
                    rule,
                });
            }
        }
        if let Some(gate) = &mut context.gate {
            gate.approver = Some(by);
        }
        // Still the same element: same node, role, name, frame and page.
        if let Some(approved) = &context.target {
            let now = held
                .session
                .resolve(&approved.target)
                .await
                .map_err(|_| Error::ApprovalStale)?;
            if now.node != approved.node
                || now.role != approved.role
                || now.name != approved.name
                || now.frame_origin != approved.frame_origin
                || now.frame_url != approved.frame_url
            {
                return Err(Error::ApprovalStale);
            }
        }
        Ok(())
    }
}

/// How often a held call looks for its decision: a decision unblocks it within this.
const APPROVAL_POLL: Duration = Duration::from_millis(200);

// Clears the agent's waiting flag when the wait ends, however it ends.
struct Waiting<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Release);
    }
}

// `apr_` and 96 random bits: unguessable, so knowing one's id is no way to decide it.
fn approval_id() -> Result<String> {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::Internal(format!("no randomness for an approval id: {e}")))?;
    Ok(format!(
        "apr_{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

// What the rules are told of a call acting on `target` (resolved), typing `text`,
// going to `destination` (else where the target's link goes).
fn facts_of<'a>(
    tool: &'a str,
    target: Option<&'a Resolved>,
    text: Option<&'a str>,
    destination: Option<&'a str>,
) -> Facts<'a> {
    Facts {
        tool,
        role: target.map(|t| t.role.as_str()),
        name: target.map(|t| t.name.as_str()),
        password: target.is_some_and(|t| t.password),
        text,
        secret: text.is_some_and(|t| t.contains("{{secret:")),
        page_url: target.map(|t| t.frame_url.as_str()),
        destination: destination.or_else(|| target.and_then(|t| t.href.as_deref())),
    }
}
