//! The risk and approval stages of the call pipeline: the first risk rule matching a
//! call (on its resolved target) decides; a call it holds waits for a human through
//! the store, holding no lock, and runs only on the element that was approved.

use airlock_risk::{Action, Facts};
use airlock_store::{ApprovalRecord, ApprovalStatus, Store};
use hex::ToHex as _;

use super::context::{CallContext, Gate};
use super::record::now_ms;
use super::*;
use crate::action::{ImageFormat, Resolved, ScreenshotOptions};
use crate::audit::redact_strings;

/// The rule a step stands under when its model's family flagged it.
pub const SAFETY_CHECK_RULE: &str = "model-safety-check";

impl AgentSession {
    // Risk, then approval: the first rule that matches the call (as resolved)
    // decides; a call it holds waits for a human, holding no lock.
    pub(super) async fn gate(
        &self,
        context: &mut CallContext,
        held: &Held,
        call: &ToolCall,
    ) -> Result<()> {
        let config = &self.inner.config;
        context.gated = true;
        // The session's plan: its tenant's rules first, then the operator's.
        let rules = &held.plan.rules;
        if rules.is_empty() && context.flagged.is_none() && context.flow.is_none() {
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
        // A call the data-flow stage holds, or a step its model's family flagged,
        // waits for a human, unless a rule refuses it outright.
        let holds = context
            .flow
            .as_ref()
            .map(super::context::FlowVerdict::as_verdict)
            .or_else(|| {
                context.flagged.as_ref().map(|why| airlock_risk::Verdict {
                    rule: SAFETY_CHECK_RULE.to_owned(),
                    builtin: true,
                    risk: airlock_risk::Risk::High,
                    action: Action::Approve,
                    message: None,
                    why: why.clone(),
                })
            });
        let verdict = match (verdict, holds) {
            (Some(v), _) if v.action == Action::Deny => Some(v),
            (_, Some(held_for)) => Some(held_for),
            (v, None) => v,
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
                let Some(store) = config.store.as_ref() else {
                    return Err(Error::RuleDenied {
                        rule: verdict.rule,
                        message: "this call needs a human's approval, and this gateway has no store to ask in"
                            .to_owned(),
                    });
                };
                let ask = Ask {
                    args: call.audit_args(),
                    effect: false,
                    screenshot: true,
                };
                self.await_approval(context, held, ask, store, held.plan.approval_timeout)
                    .await
            }
        }
    }

    // Records the approval request, waits for its decision, and on approval checks
    // that the element approved is still the one on the page (for a call not yet run).
    pub(super) async fn await_approval(
        &self,
        context: &mut CallContext,
        held: &Held,
        ask: Ask,
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
        let mut args = serde_json::Value::Object(ask.args);
        redact_strings(&mut args, &redact);
        let target = context.target.as_ref().map(|t| {
            let mut value = serde_json::json!({
                "role": t.role, "name": t.name, "frame_url": t.frame_url,
            });
            // Where a link goes: the card, `approvals list` and `watch` show it.
            if let Some(href) = &t.href {
                value["href"] = serde_json::Value::String(href.clone());
            }
            redact_strings(&mut value, &redact);
            value.to_string()
        });
        let session = context.session.as_ref().map(ToString::to_string);
        let binding = {
            use sha2::{Digest, Sha256};
            let mut h = Sha256::new();
            // A held request is bound too: its approval releases that request alone.
            let effect = context.effect.as_deref().filter(|_| ask.effect);
            for part in [
                session.as_deref().unwrap_or_default(),
                &context.principal.caller(),
                &args.to_string(),
                target.as_deref().unwrap_or_default(),
                effect.unwrap_or_default(),
            ] {
                h.update(part.as_bytes());
                h.update([0u8]);
            }
            h.finalize().to_vec()
        };
        // The client's asker, when the gateway allows in-client approval. A held
        // request waits paused in the page: a client that would answer in a retry
        // (which runs the call again) is not asked about it.
        let asker = self
            .in_client_asker(context)
            .filter(|a| !(ask.effect && a.0.defers()));
        // A stateless client's retry answers the approval its first try opened: that
        // record, if it is for exactly this call, and not one of its own.
        let resumed = match asker.as_ref().and_then(|a| a.0.resumes()) {
            Some(id) => Some(resume(store, &id, &binding).await?),
            None => None,
        };
        let mut _asking = None;
        let (id, expires_ms) = match resumed {
            Some(record) => {
                if let Some(gate) = &mut context.gate {
                    gate.approval = Some(record.id.clone());
                }
                (record.id, record.expires_ms)
            }
            None => {
                // What the approver is shown besides the arguments: the page, and the viewport
                // with the target outlined (secret fields painted over, as in every capture).
                let page = held
                    .session
                    .tabs()
                    .await
                    .ok()
                    .and_then(|tabs| tabs.into_iter().find(|t| t.active));
                let screenshot = match ask.screenshot {
                    false => None,
                    true => held
                    .session
                    .screenshot(&ScreenshotOptions {
                        format: ImageFormat::Jpeg { quality: 80 },
                        outline: context.target.as_ref().map(|t| t.bounds),
                        fast: true,
                        ..ScreenshotOptions::default()
                    })
                    .await
                    .inspect_err(
                        |e| tracing::warn!(error = %e, "no screenshot for the approval request"),
                    )
                    .ok(),
                };
                let shot_hash = screenshot.as_ref().map(|s| {
                    use sha2::{Digest, Sha256};
                    Sha256::digest(&s.data).encode_hex::<String>()
                });
                let now = now_ms();
                let id = approval_id()?;
                let record = ApprovalRecord {
                    id: id.clone(),
                    tenant: context.principal.tenant.clone(),
                    caller: context.principal.caller(),
                    session,
                    tool: context.tool.to_owned(),
                    args: args.to_string(),
                    target,
                    page_url: page
                        .as_ref()
                        .map(|p| redact(&p.url))
                        .or_else(|| context.target.as_ref().map(|t| redact(&t.frame_url))),
                    page_title: page.as_ref().map(|p| redact(&p.title)),
                    rule: rule.clone(),
                    risk: risk.to_owned(),
                    binding: binding.clone(),
                    status: ApprovalStatus::Pending,
                    created_ms: now,
                    expires_ms: now + timeout.as_millis() as i64,
                    decided_ms: None,
                    decided_by: None,
                    note: None,
                    used_ms: None,
                    detail: held_for(context).map(|d| redact(&d)),
                    // This replica waits: if it dies, any replica closes the approval.
                    waiter: self
                        .inner
                        .gateway
                        .upgrade()
                        .map(|gateway| gateway.fleet.id().to_owned()),
                };
                store
                    .insert_approval(&record, screenshot.as_ref().map(|s| (s.mime, &s.data[..])))
                    .await
                    .map_err(|e| {
                        Error::Internal(format!("could not record the approval request: {e}"))
                    })?;
                if let Some(gate) = &mut context.gate {
                    gate.approval = Some(id.clone());
                }
                // On the record (and the live feed) before anyone can decide it.
                let requested = airlock_audit::ApprovalRequested {
                    approval: id.clone(),
                    caller: record.caller.clone(),
                    session: record.session.clone(),
                    tool: record.tool.clone(),
                    args: args.clone(),
                    target: context.target.as_ref().map(|t| airlock_audit::Target {
                        role: t.role.clone(),
                        name: t.name.clone(),
                        frame_url: t.frame_url.clone(),
                        password: None,
                        href: t.href.clone(),
                    }),
                    page_url: record.page_url.clone(),
                    page_title: record.page_title.clone(),
                    rule: rule.clone(),
                    risk: risk.to_owned(),
                    expires_ms: record.expires_ms,
                    screenshot_sha256: shot_hash,
                    task: context.task.clone(),
                    detail: record.detail.clone(),
                };
                let event = airlock_audit::Event::ApprovalRequested(requested);
                self.record(context, event, Some(held)).await.map_err(|e| {
                    tracing::error!(error = %e, "the audit log refused an approval request");
                    Error::Internal(
                        "this call's approval request could not be recorded in the audit log, so it was not run"
                            .to_owned(),
                    )
                })?;
                tracing::warn!(approval.id = %id, tool.name = context.tool, rule = %rule, "call held for a human's approval");
                // The person at the agent's client is one more decider, when allowed: their
                // answer is written to the store like any other, and the wait below reads it.
                match &asker {
                    // A stateless client is asked in the result, and answers in a retry.
                    Some(asker) if asker.0.defers() => {
                        asker.0.ask(prompt_of(context, &record, timeout)).await;
                        return Err(Error::ApprovalDeferred { id });
                    }
                    Some(asker) => {
                        _asking = Some(AbortOnDrop(ask_in_client(
                            asker.clone(),
                            prompt_of(context, &record, timeout),
                            store.clone(),
                            format!("client:{}", record.caller),
                            self.inner.approvals.clone(),
                        )));
                    }
                    None => {}
                }
                (id, record.expires_ms)
            }
        };
        let deadline = Instant::now()
            + Duration::from_millis(u64::try_from(expires_ms - now_ms()).unwrap_or(0));
        let mut gone = context.gone.clone();
        let caller_gone = |gone: &Option<tokio::sync::watch::Receiver<bool>>| {
            gone.as_ref().is_some_and(|g| *g.borrow())
        };
        let decided = loop {
            // A store that stops answering (a restart, a cut connection) does not end
            // the wait: the call waits on, looking again each poll, until its deadline,
            // so a decision made once the store is back runs, and the approval never
            // stays approvable for a call that gave up.
            let record = match store.approval(&id).await {
                Ok(record) => record,
                Err(e) if Instant::now() < deadline => {
                    tracing::warn!(error = %e, approval.id = %id, "could not read a held call's approval; looking again");
                    None
                }
                Err(e) => {
                    return Err(Error::Internal(format!("could not read the approval: {e}")));
                }
            };
            match record {
                Some(r) if r.status != ApprovalStatus::Pending => break r,
                // Its browser went with its worker: nothing held can run, so the
                // card closes now instead of staying approvable until it expires.
                _ if held.session.host_gone() => {
                    let _ = store.expire_approval(&id, now_ms()).await;
                    self.record_decision(
                        context,
                        &id,
                        ApprovalStatus::Expired,
                        None,
                        Some("its browser worker is gone: nothing it held can run"),
                        held,
                    )
                    .await;
                    return Err(Error::Browser(airlock_browser::Error::HostGone {
                        reason: "it went away while the call waited for approval".to_owned(),
                    }));
                }
                // Nobody waits for its result any more: withdrawn, on the record
                // and on every approver's card, and approving it runs nothing.
                _ if caller_gone(&gone) => {
                    let note = "withdrawn: its caller went away before anyone decided";
                    // Decided meanwhile: that decision stands (the next look finds it).
                    if let Ok(true) = store.withdraw_approval(&id, now_ms(), note).await {
                        self.record_decision(
                            context,
                            &id,
                            ApprovalStatus::Expired,
                            None,
                            Some(note),
                            held,
                        )
                        .await;
                        return Err(Error::ApprovalWithdrawn);
                    }
                    gone = None;
                }
                _ if Instant::now() >= deadline => {
                    let _ = store.expire_approval(&id, now_ms()).await;
                    self.record_decision(context, &id, ApprovalStatus::Expired, None, None, held)
                        .await;
                    return Err(Error::ApprovalTimeout {
                        secs: timeout.as_secs(),
                        rule,
                    });
                }
                _ => {
                    // A decision made in this process (REST, the client) wakes the
                    // wait at once; one from another process (the CLI) within a poll.
                    let nap = tokio::time::sleep(
                        APPROVAL_POLL.min(deadline.saturating_duration_since(Instant::now())),
                    );
                    let went = async {
                        match gone.as_mut() {
                            // A surface that dropped its side says nothing more.
                            Some(g) => {
                                if g.wait_for(|gone| *gone).await.is_err() {
                                    std::future::pending::<()>().await;
                                }
                            }
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        () = nap => {}
                        () = self.inner.approvals.decided_here() => {}
                        () = went => {}
                    }
                }
            }
        };
        self.record_decision(
            context,
            &id,
            decided.status,
            decided.decided_by.as_deref(),
            decided.note.as_deref(),
            held,
        )
        .await;
        let by = decided
            .decided_by
            .clone()
            .unwrap_or_else(|| "someone".to_owned());
        // The decision is for exactly this call: a record whose binding changed in the
        // store (edited by hand) approves nothing.
        if decided.binding != binding {
            tracing::error!(approval.id = %id, "an approval's binding changed in the store; refusing the call");
            return Err(Error::ApprovalStale);
        }
        match decided.status {
            ApprovalStatus::Approved => {}
            ApprovalStatus::Denied => {
                return Err(Error::ApprovalDenied {
                    by,
                    reason: decided.note,
                });
            }
            ApprovalStatus::Pending | ApprovalStatus::Expired => {
                return Err(Error::ApprovalTimeout {
                    secs: timeout.as_secs(),
                    rule,
                });
            }
        }
        if let Some(gate) = &mut context.gate {
            gate.approver = Some(by);
        }
        // One approval, one run: a replayed retry finds it used.
        let first = store
            .use_approval(&id, now_ms())
            .await
            .map_err(|e| Error::Internal(format!("could not use the approval: {e}")))?;
        if !first {
            return Err(Error::ApprovalUsed);
        }
        // Still the same element: same node, role, name, frame and page. (A held
        // request's call has acted already: its element is history.)
        if let Some(approved) = context.target.as_ref().filter(|_| !ask.effect) {
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

impl AgentSession {
    // The surface's asker, when the gateway allows in-client approval.
    fn in_client_asker(&self, context: &CallContext) -> Option<super::context::Asker> {
        if !self.inner.config.in_client_approval {
            return None;
        }
        context.asker.clone()
    }

    // The decision as the waiting call saw it, on the record. A failure here is
    // logged, not fatal: the decision itself is in the store's approvals table.
    async fn record_decision(
        &self,
        context: &CallContext,
        id: &str,
        status: ApprovalStatus,
        by: Option<&str>,
        note: Option<&str>,
        held: &Held,
    ) {
        let event = airlock_audit::Event::ApprovalDecided(airlock_audit::ApprovalDecided {
            approval: id.to_owned(),
            session: context.session.as_ref().map(ToString::to_string),
            tool: context.tool.to_owned(),
            status,
            by: by.map(str::to_owned),
            note: note.map(str::to_owned),
            task: context.task.clone(),
        });
        if let Err(e) = self.record(context, event, Some(held)).await {
            tracing::error!(error = %e, approval.id = %id, "could not record an approval's decision");
        }
    }
}

/// What an approval is asked for: the call's arguments (as the record shows them),
/// and whether it is for the requests an effect rule held after the call acted.
pub(super) struct Ask {
    pub(super) args: serde_json::Map<String, serde_json::Value>,
    pub(super) effect: bool,
    /// The card gets the viewport (not while the page's navigation is held: Chromium
    /// paints nothing until it is decided).
    pub(super) screenshot: bool,
}

/// How often a held call looks for its decision: a decision unblocks it within this.
const APPROVAL_POLL: Duration = Duration::from_millis(200);

// The record a stateless client's retry answers: refused unless it was made for
// exactly this call (same session, caller, arguments and target) and not used yet.
async fn resume(store: &Store, id: &str, binding: &[u8]) -> Result<ApprovalRecord> {
    let record = store
        .approval(id)
        .await
        .map_err(|e| Error::Internal(format!("could not read the approval: {e}")))?
        .ok_or(Error::ApprovalStale)?;
    if record.binding != binding {
        return Err(Error::ApprovalStale);
    }
    if record.used_ms.is_some() {
        return Err(Error::ApprovalUsed);
    }
    Ok(record)
}

// What the client's person is asked: the record, redacted.
fn prompt_of(
    context: &CallContext,
    record: &ApprovalRecord,
    timeout: Duration,
) -> crate::asking::ApprovalPrompt {
    crate::asking::ApprovalPrompt {
        id: record.id.clone(),
        tool: record.tool.clone(),
        rule: record.rule.clone(),
        risk: record.risk.clone(),
        // Shown to a person: page-controlled text as it is, a host in its canonical
        // form first.
        target: context.target.as_ref().map(|t| {
            airlock_core::text::display_safe(&format!("{} {:?}", t.role, record_name(record)))
                .into_owned()
        }),
        page_url: record.page_url.as_deref().map(|u| {
            airlock_core::text::display_safe(&airlock_policy::display_url(u)).into_owned()
        }),
        timeout,
    }
}

// Puts the held call to the client's person; their answer is decided in the store
// as `by`, like any other decider's, and the waiting call reads it.
fn ask_in_client(
    asker: super::context::Asker,
    prompt: crate::asking::ApprovalPrompt,
    store: Store,
    by: String,
    decided: Arc<crate::approvals::Approvals>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let Some(answer) = asker.0.ask(prompt.clone()).await else {
            return;
        };
        let (approve, note) = match answer {
            crate::asking::Answer::Approve => (true, None),
            crate::asking::Answer::Deny(reason) => (false, reason),
        };
        match store
            .decide_approval(&prompt.id, approve, &by, note.as_deref(), now_ms())
            .await
        {
            Ok(_) => decided.tell_waiters(),
            Err(e) => {
                tracing::error!(error = %e, approval.id = %prompt.id, "could not record an in-client decision")
            }
        }
    })
}

// The target's name as the approval record has it (redacted), for the prompt.
fn record_name(record: &ApprovalRecord) -> String {
    record
        .target
        .as_deref()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
        .and_then(|t| t["name"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

// Stops an in-client question when the wait ends, however it ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

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
    Ok(format!("apr_{}", bytes.encode_hex::<String>()))
}

// Why a call is held beyond its rule's name: what the data-flow stage found, or the
// words of its model's safety check.
fn held_for(context: &CallContext) -> Option<String> {
    if let Some(effect) = &context.effect {
        return Some(effect.clone());
    }
    match (&context.flow, &context.flagged) {
        (Some(flow), _) if context.gate.as_ref().is_some_and(|g| g.rule == flow.rule) => {
            Some(flow.detail.clone())
        }
        (_, Some(why))
            if context
                .gate
                .as_ref()
                .is_some_and(|g| g.rule == SAFETY_CHECK_RULE) =>
        {
            Some(why.clone())
        }
        _ => None,
    }
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
