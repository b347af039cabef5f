//! What a server-side task (`airlock-task`) needs of its agent session besides its
//! calls, which are ordinary calls (`call_in_task`): the open browser session's id,
//! its redactor over everything a model is sent, the placeholders a model may type,
//! and the task's own events on the record.

use airlock_audit::{Entry, Event};

use super::*;

impl AgentSession {
    /// The id of the browser session open now, if one is.
    pub async fn open_session(&self) -> Option<String> {
        let slot = self.inner.slot.lock().await;
        slot.open_lease().map(|lease| lease.id.to_string())
    }

    /// Resolves once the browser session open now ends, however it ends (closed,
    /// expired, ended by an operator, its worker gone); at once when none is open.
    pub async fn session_gone(&self) -> impl std::future::Future<Output = ()> + Send + use<> {
        let slot = self.inner.slot.lock().await;
        let gone = slot.open_lease().map(|lease| lease.gone());
        async move {
            if let Some(gone) = gone {
                gone.await;
            }
        }
    }

    /// The open session's viewport in CSS pixels (what `x`/`y` targets are in), for
    /// a model that points at a screenshot; `None` with no session open.
    pub async fn viewport(&self) -> Option<(u32, u32)> {
        let held = {
            let slot = self.inner.slot.lock().await;
            slot.open_lease()?.held.clone()
        };
        held.session.viewport().await.ok()
    }

    /// `text` through the open session's redactor, as a whole (what a model is sent
    /// passes it once more, like every output); unchanged with no session open.
    pub async fn redact_outbound(&self, text: &str) -> String {
        let slot = self.inner.slot.lock().await;
        match slot.open_lease() {
            Some(lease) => lease.held.loaded.redact(text),
            None => text.to_owned(),
        }
    }

    /// What the open session's credentials give: the placeholders that may be typed
    /// and what was put into the browser (never a value); `None` without any.
    pub async fn credentials(&self) -> Option<String> {
        let slot = self.inner.slot.lock().await;
        let lease = slot.open_lease()?;
        let loaded = &lease.held.loaded;
        (!loaded.names().is_empty()).then(|| loaded.describe())
    }

    /// Records a task's own event under the caller's tenant, every string through the
    /// open session's redactor; durable when this returns.
    pub async fn record_task(
        &self,
        event: Event,
    ) -> std::result::Result<(), airlock_store::StoreError> {
        let entry = Entry::now(self.inner.principal.tenant.clone(), event);
        let slot = self.inner.slot.lock().await;
        let held = slot.open_lease().map(|lease| lease.held.clone());
        drop(slot);
        let redact = held
            .as_ref()
            .map(|held| move |text: &str| held.loaded.redact(text));
        let redact = redact
            .as_ref()
            .map(|r| r as &(dyn Fn(&str) -> String + Sync));
        self.inner.audit.append(&entry, redact).await?;
        Ok(())
    }

    /// Through which surface this agent calls.
    pub fn surface(&self) -> Surface {
        self.inner.surface
    }
}
