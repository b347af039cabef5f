//! JavaScript dialogs: a dialog holds its page until the agent answers it (or its
//! hold runs out, see `tab::on_dialog`); meanwhile calls that need the page are
//! refused with `dialog_open`, and an action a dialog interrupted reports it.

use super::*;

/// Longest an agent may wait for a dialog to open.
pub const MAX_DIALOG_WAIT: Duration = Duration::from_secs(30);

impl Session {
    // The active tab, when nothing holds its page: calls that act on or read the
    // page go through here.
    pub(super) async fn page(&self) -> Result<Arc<Tab>> {
        let tab = self.tab().await?;
        // A refused call is no action: it does not end a chain of dialogs.
        let open = tab.state.with(|s| match &s.dialog {
            Some(d) => Some(d.kind.clone()),
            None => {
                s.dialog_chain = 0;
                None
            }
        });
        if let Some(kind) = open {
            return Err(Error::DialogOpen { kind });
        }
        Ok(tab)
    }

    /// The outcome of an action a dialog interrupted (`Error::DialogOpened`): what
    /// the active tab shows, the open dialog among its dialogs. Any other result is
    /// returned as it is.
    pub async fn or_dialog(&self, result: Result<ActionOutcome>) -> Result<ActionOutcome> {
        match result {
            Err(Error::DialogOpened { .. }) => {
                let _op = self.begin().await;
                let tab = self.tab().await?;
                Ok(self.outcome(&tab, false).await)
            }
            other => other,
        }
    }

    /// Answers the dialog holding the active tab's page, waiting up to `wait` (at most
    /// `MAX_DIALOG_WAIT`) for one to open: none open and no wait asked for answers at
    /// once. Accepts it (with `prompt` as a prompt's answer) or dismisses it.
    /// A secret in `prompt` is typed only when the frame that opened the dialog, and
    /// the page holding that frame, are of origins the secret is bound to.
    pub async fn handle_dialog(
        &self,
        accept: bool,
        prompt: Option<&TypedText>,
        wait: Duration,
    ) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.tab().await?;
        let wait = wait.min(MAX_DIALOG_WAIT);
        if !tab.state.wait(wait, |s| s.dialog.is_some()).await {
            return Err(Error::NoDialog {
                ms: wait.as_millis(),
            });
        }
        let Some(open) = tab.state.read(|s| s.dialog.clone()) else {
            return Err(Error::NoDialog {
                ms: wait.as_millis(),
            });
        };
        let mut answer = zeroize::Zeroizing::new(String::new());
        if let Some(prompt) = prompt.filter(|_| accept) {
            for piece in &prompt.0 {
                match piece {
                    TextPiece::Plain(text) => answer.push_str(text),
                    TextPiece::Secret {
                        label,
                        origins,
                        value,
                    } => {
                        let top = tab.state.read(|s| s.url.clone());
                        for (url, whose) in [(&open.url, "the dialog is"), (&top, "its page is")] {
                            let origin = origin_of(url);
                            if !origins.contains(&origin) {
                                return Err(Error::SecretOriginMismatch {
                                    secret: label.clone(),
                                    allowed: origins.join(", "),
                                    detail: self.scrub(&format!("{whose} on {origin}")),
                                });
                            }
                        }
                        answer.push_str(value);
                    }
                }
            }
        }
        let before = Self::nav_counters(&tab);
        let mut params = json!({ "accept": accept });
        if open.kind == "prompt" && accept {
            params["promptText"] = json!(answer.as_str());
        }
        // Straight to the connection: the page is blocked, so a call through the tab
        // would be given up at once.
        let sent = tab
            .conn
            .call(
                Some(&tab.cdp_session),
                "Page.handleJavaScriptDialog",
                params,
                self.budget(),
            )
            .await;
        drop(answer);
        if let Err(e) = sent {
            // Answered meanwhile (its hold ran out, or the page went away).
            if tab.state.read(|s| s.dialog.as_ref().map(|d| d.id)) == Some(open.id) {
                return Err(e.into());
            }
            return Err(Error::NoDialog {
                ms: wait.as_millis(),
            });
        }
        let answered = |s: &crate::tab::TabInner| s.dialog.as_ref().map(|d| d.id) != Some(open.id);
        tab.state
            .wait_unless(self.budget(), answered, |_| false)
            .await;
        if open.kind == "beforeunload" && accept {
            // The page is left now; the navigation was asked for before the dialog,
            // so it is waited for here rather than seen starting.
            tab.state
                .wait(self.options.navigation_timeout, |s| {
                    s.navigations > before.navigations
                })
                .await;
        }
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        // This dialog's answer is the effect; its opening was reported already.
        if let Some(i) = outcome.dialogs.iter().rposition(|d| {
            d.kind == open.kind
                && d.message == open.message
                && matches!(d.answer, DialogAnswer::Accepted | DialogAnswer::Dismissed)
        }) {
            outcome.dialogs.remove(i);
        }
        outcome.effect = Some(Effect::AnsweredDialog {
            kind: open.kind,
            message: open.message,
            accepted: accept,
        });
        Ok(outcome)
    }
}

// `scheme://host[:port]` of a URL, as secrets' origins are written; `null` when it
// has none (about:blank, data:).
fn origin_of(url: &str) -> String {
    url::Url::parse(url)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_else(|_| "null".to_owned())
}
