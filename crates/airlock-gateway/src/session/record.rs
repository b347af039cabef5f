//! The audit stages of the call pipeline: an action's intent before it runs, and
//! every call's outcome before its result returns, each string through the session's
//! redactor.

use airlock_audit::{Call, CallDone, Entry, Event, Recording, Refusal, Target};
use airlock_core::{ErrorCode, HasErrorCode as _};

use super::context::CallContext;
use super::*;

impl AgentSession {
    // The call's audit event, durable before the result returns, when the gateway
    // has a store: what failed comes from the stage that failed it, by code. Every
    // string in it passes the session's redactor.
    pub(super) async fn audit(
        &self,
        context: &CallContext,
        args: serde_json::Map<String, serde_json::Value>,
        held: Option<&Held>,
    ) -> std::result::Result<(), airlock_store::StoreError> {
        let call = call_facts(context, args);
        let error = context
            .failed
            .as_ref()
            .map(|e| e.code().as_str().to_owned());
        // A refusal is an event of its own, so an auditor finds them without reading
        // every call; a secret sent where it does not belong is flagged suspicious.
        if let Some(failed) = &context.failed {
            let refusal = |suspicious| Refusal {
                call: call.clone(),
                error: error.clone(),
                reason: failed.to_string(),
                suspicious,
            };
            let event = match failed.code() {
                ErrorCode::PolicyDenied => Some(Event::PolicyRefusal(refusal(false))),
                ErrorCode::SecretOriginMismatch => Some(Event::SecretRefusal(refusal(true))),
                _ => None,
            };
            if let Some(event) = event {
                self.record(context, event, held).await?;
            }
        }
        let recording = context.recorded.as_ref().map(|r| match r {
            Ok(r) => Recording::Stored {
                step: r.step,
                sha256: r.sha256.clone(),
                file: r.file.clone(),
            },
            Err(e) => Recording::Failed { error: e.clone() },
        });
        let done = CallDone {
            call,
            error,
            duration_ms: context.started.elapsed().as_millis() as u64,
            blocked: context.blocked,
            blocked_by: context
                .blocked_by
                .iter()
                .map(|(why, n)| ((*why).to_owned(), *n))
                .collect(),
            recording,
            signed_by: held.and_then(|h| h.signer.as_ref()).map(|s| s.kid()),
            signed: held
                .and_then(|h| h.signer.as_ref())
                .map_or(0, |s| s.take_signed()),
        };
        self.record(context, Event::ToolCall(done), held).await
    }

    // An `audit` recording: the page after the step, stored before the step's event
    // (which carries its hash). A failed capture is on the event, not the call's
    // failure: the step has happened.
    pub(super) async fn record_step(&self, context: &mut CallContext, held: &Held) {
        if held.recorder.mode() != airlock_config::RecordMode::Audit {
            return;
        }
        let Some(session) = &context.session else {
            return;
        };
        if !self.inner.recordings.kept() {
            return;
        }
        let stored = held
            .recorder
            .store_step(
                &held.session,
                &self.inner.recordings,
                &session.to_string(),
                &self.inner.principal.tenant,
                context.tool,
            )
            .await;
        if let Err(e) = &stored {
            tracing::error!(error = %e, tool.name = context.tool, "a step of an audit recording was not stored");
        }
        context.recorded = Some(stored);
    }

    // Before a call acts on the browser: what it is about to do, durable first, so no
    // action runs unrecorded (a failed write stops it).
    pub(super) async fn record_intent(
        &self,
        context: &CallContext,
        held: &Held,
        call: &ToolCall,
    ) -> Result<()> {
        let event = Event::ToolIntent(call_facts(context, call.audit_args()));
        self.record(context, event, Some(held)).await.map_err(|e| {
            tracing::error!(error = %e, tool.name = context.tool, "the audit log refused a call's intent");
            Error::Internal(
                "this call could not be recorded in the audit log, so it was not run".to_owned(),
            )
        })
    }

    // One event of this call's, under the caller's tenant, now, through the session's
    // redactor.
    pub(super) async fn record(
        &self,
        context: &CallContext,
        event: Event,
        held: Option<&Held>,
    ) -> std::result::Result<(), airlock_store::StoreError> {
        let entry = Entry::now(context.principal.tenant.clone(), event);
        let redact = held.map(|held| move |text: &str| held.loaded.redact(text));
        let redact = redact
            .as_ref()
            .map(|r| r as &(dyn Fn(&str) -> String + Sync));
        self.inner.audit.append(&entry, redact).await?;
        Ok(())
    }
}

pub(crate) use crate::clock::now_ms;

// The part every event about a call has: who, where, what, and what the gate said.
fn call_facts(context: &CallContext, args: serde_json::Map<String, serde_json::Value>) -> Call {
    Call {
        caller: context.principal.caller(),
        role: context.principal.role.as_str().to_owned(),
        surface: context.surface.as_str().to_owned(),
        session: context.session.as_ref().map(ToString::to_string),
        tool: context.tool.to_owned(),
        args,
        target: context.target.as_ref().map(|t| Target {
            role: t.role.clone(),
            name: t.name.clone(),
            frame_url: t.frame_url.clone(),
            password: Some(t.password),
            href: t.href.clone(),
        }),
        rule: context.gate.as_ref().map(|g| g.rule.clone()),
        risk: context.gate.as_ref().map(|g| g.risk.to_owned()),
        decision: context
            .gate
            .as_ref()
            .map(|g| g.action)
            .or(context.gated.then_some("allow"))
            .map(str::to_owned),
        approval: context.gate.as_ref().and_then(|g| g.approval.clone()),
        approver: context.gate.as_ref().and_then(|g| g.approver.clone()),
        task: context.task.clone(),
    }
}
