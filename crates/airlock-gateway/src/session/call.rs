//! The call pipeline: every tool call from every surface passes these stages in
//! order, each a small method over one [`CallContext`]: admit (role, placeholders
//! outside typed text, the policy on a navigation target) → enter the lease (opened
//! lazily; its terms and hold) → resolve the target → data flow (`flow.rs`: origin
//! sets, what the call would carry where) → risk and approval (`gate.rs`)
//! → the intent on the audit record (`record.rs`) → act (`tools::execute`) → the
//! requests an effect rule holds (`effects.rs`: approval, then released or dropped)
//! → crash recovery → what egress refused meanwhile → redaction → the outcome on the audit
//! record → finish (the one log line, then every [`CallObserver`]). Only entering the
//! lease waits on a lock, and only on this agent's own; an approval waits on a
//! person, holding none; the browser's work waits on the page.

use airlock_core::{ErrorCode, Role};

use super::context::{Asker, Spent};
use super::*;

use crate::clock::micros;
use crate::sessions::SessionId;
use crate::tools::SessionCall;

impl AgentSession {
    /// Runs one tool call. Never fails: errors come back as a [`ToolOutput`] with a
    /// code, so every surface reports them the same way.
    pub async fn call(&self, call: ToolCall) -> ToolOutput {
        self.call_asking(call, None).await
    }

    /// [`AgentSession::call`], with a way to ask the person at the agent's client
    /// should a risk rule hold the call (used only when the gateway's
    /// `in_client_approval` is on; the out-of-band channels stay open meanwhile).
    pub async fn call_asking(
        &self,
        call: ToolCall,
        asker: Option<Arc<dyn crate::asking::ApprovalAsker>>,
    ) -> ToolOutput {
        self.call_with(call, asker, None, None, None).await
    }

    /// [`AgentSession::call_asking`] for a caller that may go away: when `gone`
    /// turns true (the request was cancelled, its connection closed) while the call
    /// waits for a human, its approval closes withdrawn (an approver sees that, and
    /// can no longer approve it) and nothing runs — no action without an agent
    /// waiting for its result.
    pub async fn call_watched(
        &self,
        call: ToolCall,
        asker: Option<Arc<dyn crate::asking::ApprovalAsker>>,
        gone: tokio::sync::watch::Receiver<bool>,
    ) -> ToolOutput {
        self.call_with(call, asker, None, None, Some(gone)).await
    }

    /// [`AgentSession::call`] as a step of server-side task `task`: the same pipeline,
    /// its records naming the task.
    pub async fn call_in_task(&self, call: ToolCall, task: &str) -> ToolOutput {
        self.call_with(call, None, Some(task.to_owned()), None, None)
            .await
    }

    /// [`AgentSession::call_in_task`] that the task's end withdraws while it waits
    /// for a human (`gone` turns true: the task was cancelled, or its session ended).
    /// `flagged`: the step its model's family flagged (the family's own words), held
    /// for a human under the rule `model-safety-check`, never acknowledged on the
    /// model's behalf.
    pub async fn call_in_task_watched(
        &self,
        call: ToolCall,
        task: &str,
        flagged: Option<String>,
        gone: tokio::sync::watch::Receiver<bool>,
    ) -> ToolOutput {
        self.call_with(call, None, Some(task.to_owned()), flagged, Some(gone))
            .await
    }

    async fn call_with(
        &self,
        call: ToolCall,
        asker: Option<Arc<dyn crate::asking::ApprovalAsker>>,
        task: Option<String>,
        flagged: Option<String>,
        gone: Option<tokio::sync::watch::Receiver<bool>>,
    ) -> ToolOutput {
        let mut context = CallContext {
            tool: call.tool_name(),
            principal: self.inner.principal.clone(),
            surface: self.inner.surface,
            agent: self.inner.id,
            session: None,
            target: None,
            gate: None,
            gated: false,
            blocked: 0,
            blocked_by: Default::default(),
            acted: false,
            recorded: None,
            asker: asker.map(Asker),
            gone,
            failed: None,
            spent: Spent::default(),
            task,
            flagged,
            flow: None,
            effect: None,
            started: Instant::now(),
        };
        let args = call.audit_args();
        let mut held = None;
        let mut out = {
            let _busy = BusyGuard::new(&self.inner);
            self.run(&mut context, call, &mut held).await
        };
        let auditing = Instant::now();
        let audited = self.audit(&context, args, held.as_deref()).await;
        context.spent.audit = auditing.elapsed();
        if let Err(e) = audited {
            tracing::error!(error = %e, tool.name = context.tool, "the audit log refused a tool call");
            out = ToolOutput::error(
                ErrorCode::Internal,
                "this call could not be recorded in the audit log, so its result is withheld; the operator's log says why",
            );
        }
        // A transient recording captures the step after its result is final, so the
        // call does not wait for the capture.
        if let Some(held) = held
            && context.acted
            && held.recorder.mode() == airlock_config::RecordMode::Transient
        {
            held.recorder.clone().keep_step(held.clone(), context.tool);
        }
        self.finish(&context, &out);
        out
    }

    // `held` is set to the browser session the call ran in, once it entered one.
    async fn run(
        &self,
        context: &mut CallContext,
        mut call: ToolCall,
        held_out: &mut Option<Arc<Held>>,
    ) -> ToolOutput {
        // The session the agent has open, for the record of a call refused before it
        // enters one.
        context.session = self.open_lease_id().await;
        // One call waits for a human at a time; another is refused, not queued.
        if self
            .inner
            .waiting
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return self.failure(context, Error::ApprovalPending);
        }
        if let Err(e) = self.admit(&call).await {
            return self.failure(context, e);
        }
        let acts = call.min_role() >= Role::Act;
        let lease = match call {
            ToolCall::Session(SessionCall::Open(options)) => {
                let out = match self.open(options).await {
                    Ok(out) => out,
                    Err(e) => self.failure(context, e),
                };
                context.session = self.open_lease_id().await;
                return out;
            }
            ToolCall::Session(SessionCall::Close) => return self.close_browser().await,
            _ => match self.browser_session(acts).await {
                Ok(lease) => lease,
                Err(e) => return self.failure(context, e),
            },
        };
        context.session = Some(lease.id.clone());
        // A tool the session's tenant refuses it, before it counts as an action.
        if let Some(refused) = lease.held.plan.refuses(call.tool_name()) {
            return self.failure(context, refused);
        }
        // The lease counted the action among this replica's; on a shared store the
        // budget counts every replica's.
        if acts && let Some(budget) = lease.terms.action_budget {
            let started = Instant::now();
            let counted = lease.held.reads.count_action(budget).await;
            context.spent.shared += started.elapsed();
            match counted {
                Ok(true) => {}
                Ok(false) => return self.failure(context, Error::BudgetExhausted { budget }),
                Err(e) => return self.failure(context, e),
            }
        }
        // The lease itself, for counting after the call (recovery may leave it).
        let entered = Some(lease.lease());
        let held = lease.held.clone();
        held.recorder.call_started();
        *held_out = Some(held.clone());
        // What an effect rule's approval shows of the call, taken before the call
        // goes to the browser.
        let effect_args = (!held.plan.rules.effects().is_empty()).then(|| call.audit_args());
        let acted = match self.resolve_then_flow(context, &held, &mut call).await {
            Ok(()) => match self.gate(context, &held, &call).await {
                Ok(()) if acts => match self.timed_intent(context, &held, &call).await {
                    Ok(()) => {
                        let acted = self.act(context, &held, call).await;
                        if acted.is_ok() {
                            context.acted = true;
                            self.record_step(context, &held).await;
                        }
                        acted
                    }
                    Err(e) => Err(e),
                },
                Ok(()) => self.act(context, &held, call).await,
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        // The requests an effect rule holds wait for a human now, before the result.
        let acted = match (acted, effect_args) {
            (Ok(mut out), Some(args)) => match self.hold_effects(context, &held, args).await {
                super::effects::Effected::None => Ok(out),
                super::effects::Effected::Sent(note) => {
                    out.push_note(&note);
                    Ok(out)
                }
                super::effects::Effected::Refused(error, note) => {
                    let mut out = self.failure(context, *error);
                    out.push_note(&note);
                    Ok(out)
                }
            },
            (acted, _) => acted,
        };
        let mut out = match acted {
            Ok(out) => out,
            Err(e) => {
                let end = match &e {
                    Error::Browser(airlock_browser::Error::HostGone { .. }) => Some(End::HostGone),
                    e if e.code() == ErrorCode::BrowserCrashed => Some(End::Lost),
                    _ => None,
                };
                let mut out = self.failure(context, e);
                if let Some(end) = end {
                    out.push_note(&self.recover(lease, end).await);
                }
                out
            }
        };
        let summing = Instant::now();
        self.egress_summary(context, &held, &mut out).await;
        context.spent.egress = summing.elapsed();
        if let Some(lease) = &entered
            && let Some(gateway) = self.inner.gateway.upgrade()
        {
            // Idle expiry counts every replica's calls.
            gateway.tell_used(lease).await;
        }
        if let Some(lease) = &entered {
            lease.add_blocked(context.blocked);
            if lease.take_handed_back() {
                out.push_note(
                    "\nnote: an operator held this browser session and handed it back; the page may have changed under you since your last snapshot",
                );
            }
            if let Some(note) = lease.take_login_note() {
                out.push_note(&format!("\nnote: {note}"));
            }
        }
        // The browser session redacted everything it took from the page before using
        // it; every output passes the redactor once more as a whole (it withholds all
        // of a text if it ever fails).
        out.redact_with(|text| held.loaded.redact(text));
        if let Some(own) = &self.inner.config.own_secrets {
            out.redact_with(|text| own.redact(text).into_owned());
        }
        // Then shown as it is: a page's bidirectional override or control character
        // is written out, not obeyed, wherever the result is read.
        out.redact_with(|text| airlock_core::text::display_safe(text).into_owned());
        // What the agent now knows of a page, by its origin, for the data-flow stage
        // of later calls (redacted: a secret is never part of a run).
        if let Some(url) = &out.source
            && out.error.is_none()
            && held.plan.flow.mode != airlock_config::FlowMode::Off
        {
            let started = Instant::now();
            held.reads.read(url, &out.text).await;
            context.spent.shared += started.elapsed();
        }
        out
    }

    // Resolving the target, then the data-flow stage (which judges the resolved
    // target), timed together as the resolve stage.
    async fn resolve_then_flow(
        &self,
        context: &mut CallContext,
        held: &Held,
        call: &mut ToolCall,
    ) -> Result<()> {
        self.resolve_target(context, held, call).await?;
        let started = Instant::now();
        let checked = self.check_flow(context, held, call).await;
        context.spent.flow = started.elapsed();
        checked
    }

    // The intent stage, timed.
    async fn timed_intent(
        &self,
        context: &mut CallContext,
        held: &Held,
        call: &ToolCall,
    ) -> Result<()> {
        let started = Instant::now();
        let recorded = self.record_intent(context, held, call).await;
        context.spent.intent = started.elapsed();
        recorded
    }

    async fn open_lease_id(&self) -> Option<SessionId> {
        let slot = self.inner.slot.lock().await;
        slot.open_lease().map(|lease| lease.id.clone())
    }

    // The element the call names, as the page has it now; the call then acts on that
    // element alone (a page swapping in a look-alike meanwhile makes it fail with
    // `ref_not_found`). Only when someone needs the target: it costs a round trip.
    async fn resolve_target(
        &self,
        context: &mut CallContext,
        held: &Held,
        call: &mut ToolCall,
    ) -> Result<()> {
        // Risk rules and origin sets judge the resolved element, so they want it too.
        let wanted = self.inner.observers.wants_targets()
            || !held.plan.rules.is_empty()
            || context.flagged.is_some()
            || held.reads.sets.is_set();
        let Some(target) = call.target_mut().filter(|_| wanted) else {
            return Ok(());
        };
        let started = Instant::now();
        let resolved = held.session.resolve(target).await;
        context.spent.resolve = started.elapsed();
        let resolved = resolved?;
        *target = resolved.target.clone();
        context.target = Some(resolved);
        Ok(())
    }

    // The browser work itself.
    async fn act(&self, context: &CallContext, held: &Held, call: ToolCall) -> Result<ToolOutput> {
        let uploads = self.inner.config.upload_dir.as_deref();
        tools::execute(
            &held.session,
            &self.inner.fence,
            &held.loaded,
            uploads,
            context.surface,
            call,
        )
        .await
    }

    // A failure in words, with the next step this surface offers, if any; the error
    // itself stays on the context for the audit stage.
    fn failure(&self, context: &mut CallContext, error: Error) -> ToolOutput {
        let mut out = ToolOutput::from_error(&error);
        if let Some(hint) = context.surface.hint(&error) {
            out.push_note(&hint);
        }
        context.failed = Some(Arc::new(error));
        out
    }

    // What the page tried and the proxy, or the session's outbound protection,
    // refused meanwhile.
    async fn egress_summary(&self, context: &mut CallContext, held: &Held, out: &mut ToolOutput) {
        let blocked = match held.session.take_blocked().await {
            Ok(blocked) => blocked,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the session's refused requests");
                Default::default()
            }
        };
        context.blocked = blocked.values().sum();
        context.blocked_by = blocked.iter().map(|(r, n)| (r.label(), *n)).collect();
        if let Some(summary) = summarize(&blocked) {
            out.text.push('\n');
            out.text.push_str(&summary);
        }
    }

    // The one log line of a tool call, whichever surface it came from; then the
    // gateway's observers.
    fn finish(&self, context: &CallContext, out: &ToolOutput) {
        let record = CallRecord {
            context,
            duration: context.started.elapsed(),
            error: out.error,
        };
        tracing::info!(
            agent.id = context.agent,
            session.id = context.session.as_ref().map(tracing::field::display),
            tenant = %context.principal.tenant,
            tool.name = context.tool,
            duration_ms = record.duration.as_millis() as u64,
            duration_us = micros(record.duration),
            blocked = context.blocked,
            error.code = record.error.map(ErrorCode::as_str),
            stage.locate_us = out.stages.as_ref().map(|s| s.locate_us),
            stage.dispatch_us = out.stages.as_ref().map(|s| s.dispatch_us),
            stage.settle_us = out.stages.as_ref().map(|s| s.settle_us),
            stage.outcome_us = out.stages.as_ref().map(|s| s.outcome_us),
            stage.diff_us = out.stages.as_ref().map(|s| s.diff_us),
            stage.render_us = out.stages.as_ref().map(|s| s.render_us),
            stage.resolve_us = micros(context.spent.resolve),
            stage.flow_us = micros(context.spent.flow),
            stage.intent_us = micros(context.spent.intent),
            stage.audit_us = micros(context.spent.audit),
            stage.egress_us = micros(context.spent.egress),
            stage.shared_us = micros(context.spent.shared),
            "tool call"
        );
        for observer in self.inner.observers.all() {
            observer.call_finished(&record);
        }
    }

    // What is refused before any browser work: a role below the tool's, code for the
    // page where the server runs none, a placeholder outside typed text, and
    // a navigation the policy denies (checked here, before Chromium sees the URL:
    // Page.navigate would load file:, chrome: and data: URLs and run javascript: ones).
    async fn admit(&self, call: &ToolCall) -> Result<()> {
        let has = self.inner.principal.role;
        if has < call.min_role() {
            return Err(Error::RoleTooLow {
                tool: call.tool_name(),
                needs: call.min_role().as_str(),
                has: has.as_str(),
            });
        }
        if call.runs_page_code() && !self.inner.config.evaluate {
            return Err(Error::ToolOff {
                tool: call.tool_name(),
                how: "an operator turns it on with [tools] evaluate = true",
            });
        }
        if let Some(param) = call.misplaced_placeholder() {
            return Err(Error::PlaceholderMisplaced { param });
        }
        if let Some(url) = call.navigation_target()
            && let Some(policy) = self.policy().await
            && let Decision::Deny { reason, detail } = policy.check_url(url).decision
        {
            // A URL that does not parse is a mistake in the call, not a refusal.
            if reason == DenyReason::InvalidUrl {
                let hint = if url.contains("://") {
                    ""
                } else {
                    "; give an absolute URL such as https://example.com/"
                };
                return Err(Error::InvalidArgument(format!("{detail}{hint}")));
            }
            return Err(Error::PolicyDenied { detail });
        }
        Ok(())
    }

    // After a crash, what the next call gets: a fresh blank tab in the same session
    // when only a page's renderer died, a fresh session when the browser did. Says
    // which, for the failed call's message.
    async fn recover(&self, lease: InUse, end: End) -> String {
        let held = lease.held.clone();
        if matches!(held.session.health().await, Ok((true, _))) {
            match held.session.replace_lost_tabs().await {
                Ok(_) => {
                    return "; the tab was replaced by a blank one (cookies, storage and other tabs are kept): navigate again".to_owned();
                }
                Err(e) => tracing::warn!(error = %e, "could not replace a crashed tab"),
            }
        }
        let id = lease.id.clone();
        // Leave the lease first: its browser is closed whatever is in it, but the
        // reaper must not count this call as using it.
        drop(lease);
        let mut slot = self.inner.slot.lock().await;
        if let Slot::Pinned(open) = &*slot
            && open.id == id
        {
            // A leased session stays named, ended: its backend leases a new one.
            let open = open.clone();
            drop(slot);
            self.inner.sessions.close(&open, end).await;
            return "; the leased browser session was lost with it: lease a new one".to_owned();
        }
        if let Slot::Leased(open) = &*slot
            && open.id == id
        {
            let open = open.clone();
            *slot = Slot::Empty;
            drop(slot);
            self.inner.sessions.close(&open, end).await;
        }
        "; the browser session was lost with it: the next call opens a fresh one (cookies and tabs are gone)".to_owned()
    }

    // The policy the next navigation is held to: the open session's own, else the
    // tenant's (a session opened lazily gets that one).
    async fn policy(&self) -> Option<Arc<Policy>> {
        if let Some(lease) = self.inner.slot.lock().await.open_lease() {
            return Some(lease.held.policy.clone());
        }
        Some(self.inner.policy.clone())
    }
}
