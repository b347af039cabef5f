//! The audit stages of the call pipeline: an action's intent before it runs, and
//! every call's outcome before its result returns, each string through the session's
//! redactor.

use airlock_core::ErrorCode;

use super::call::CallContext;
use super::*;

impl AgentSession {
    // The call's audit event, durable before the result returns, when the gateway
    // has a store. Every string in it passes the session's redactor.
    pub(super) async fn audit(
        &self,
        context: &CallContext,
        args: serde_json::Map<String, serde_json::Value>,
        held: Option<&Held>,
        out: &ToolOutput,
    ) -> std::result::Result<(), airlock_store::StoreError> {
        // A refusal is an event of its own, so an auditor finds them without reading
        // every call; a secret sent where it does not belong is flagged suspicious.
        let refusal = match out.error {
            Some(ErrorCode::PolicyDenied) => Some(("policy_refusal", false)),
            Some(ErrorCode::SecretOriginMismatch) => Some(("secret_refusal", true)),
            _ => None,
        };
        if let Some((kind, suspicious)) = refusal {
            let mut event = call_event(context, kind, args.clone());
            event.insert("error".to_owned(), out.error.map(ErrorCode::as_str).into());
            event.insert(
                "reason".to_owned(),
                out.message
                    .clone()
                    .unwrap_or_else(|| out.text.clone())
                    .into(),
            );
            if suspicious {
                event.insert("suspicious".to_owned(), true.into());
            }
            self.record(event, held).await?;
        }
        let mut event = call_event(context, "tool_call", args);
        event.insert("error".to_owned(), out.error.map(ErrorCode::as_str).into());
        event.insert(
            "duration_ms".to_owned(),
            (context.started.elapsed().as_millis() as u64).into(),
        );
        event.insert("blocked".to_owned(), context.blocked.into());
        match &context.recorded {
            Some(Ok(r)) => {
                event.insert(
                    "recording".to_owned(),
                    serde_json::json!({ "step": r.step, "sha256": r.sha256, "file": r.file }),
                );
            }
            Some(Err(e)) => {
                event.insert("recording".to_owned(), serde_json::json!({ "error": e }));
            }
            None => {}
        }
        if !context.blocked_by.is_empty() {
            event.insert(
                "blocked_by".to_owned(),
                serde_json::to_value(&context.blocked_by).unwrap_or_default(),
            );
        }
        self.record(event, held).await
    }

    // An `audit` recording: the page after the step, stored before the step's event
    // (which carries its hash). A failed capture is on the event, not the call's
    // failure: the step has happened.
    pub(super) async fn record_step(&self, context: &mut CallContext, held: &Held) {
        if held.recorder.mode() != airlock_config::RecordMode::Audit {
            return;
        }
        let Some(gateway) = self.inner.gateway.upgrade() else {
            return;
        };
        let (Some(dir), Some(session)) = (&gateway.config.recordings_dir, &context.session) else {
            return;
        };
        let stored = held
            .recorder
            .store_step(&held.session, dir, &session.to_string(), context.tool)
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
        let event = call_event(context, "tool_intent", call.audit_args());
        self.record(event, Some(held)).await.map_err(|e| {
            tracing::error!(error = %e, tool.name = context.tool, "the audit log refused a call's intent");
            Error::Internal(
                "this call could not be recorded in the audit log, so it was not run".to_owned(),
            )
        })
    }

    pub(super) async fn record(
        &self,
        fields: serde_json::Map<String, serde_json::Value>,
        held: Option<&Held>,
    ) -> std::result::Result<(), airlock_store::StoreError> {
        let Some(gateway) = self.inner.gateway.upgrade() else {
            return Ok(());
        };
        let Some(store) = gateway.store() else {
            return Ok(());
        };
        let mut event = serde_json::Value::Object(fields);
        if let Some(held) = held {
            redact_strings(&mut event, &|text| held.loaded.redact(text));
        }
        let serde_json::Value::Object(fields) = event else {
            return Ok(());
        };
        let record = store.append_audit(&fields).await?;
        gateway.audited(store, record).await;
        Ok(())
    }
}

// Every string inside `value`, redacted in place.
pub(super) fn redact_strings(value: &mut serde_json::Value, redact: &dyn Fn(&str) -> String) {
    match value {
        serde_json::Value::String(text) => *text = redact(text),
        serde_json::Value::Array(items) => {
            for item in items {
                redact_strings(item, redact);
            }
        }
        serde_json::Value::Object(map) => {
            for item in map.values_mut() {
                redact_strings(item, redact);
            }
        }
        _ => {}
    }
}

pub(crate) use crate::clock::now_ms;

// The fields every event about a call has: who, where, what, and what the gate said.
fn call_event(
    context: &CallContext,
    kind: &str,
    args: serde_json::Map<String, serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::{Value, json};
    let event = json!({
        "kind": kind,
        "tenant": context.principal.tenant,
        "caller": context.principal.caller(),
        "role": context.principal.role.as_str(),
        "surface": context.surface.as_str(),
        "session": context.session.as_ref().map(ToString::to_string),
        "tool": context.tool,
        "args": Value::Object(args),
        "target": context.target.as_ref().map(|t| json!({
            "role": t.role,
            "name": t.name,
            "frame_url": t.frame_url,
            "password": t.password,
        })),
        "rule": context.gate.as_ref().map(|g| g.rule.clone()),
        "risk": context.gate.as_ref().map(|g| g.risk),
        "decision": context
            .gate
            .as_ref()
            .map(|g| g.action)
            .or(context.gated.then_some("allow")),
        "approval": context.gate.as_ref().and_then(|g| g.approval.clone()),
        "approver": context.gate.as_ref().and_then(|g| g.approver.clone()),
        "time_ms": now_ms(),
    });
    match event {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}
