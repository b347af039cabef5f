//! Waiting: for text to appear or go, for a target to appear, or for a fixed time;
//! names and texts matched outside the page, as every match on page words is.

use super::*;

impl Session {
    /// Waits for text to appear or go, a target to appear, or a fixed time.
    pub async fn wait_for(
        &self,
        condition: &WaitCondition,
        timeout: Option<Duration>,
    ) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let budget = timeout.unwrap_or(self.budget());
        let what = match condition {
            WaitCondition::Time(d) => {
                if *d > MAX_FIXED_WAIT {
                    return Err(Error::InvalidArgument(format!(
                        "a fixed wait is at most {} ms",
                        MAX_FIXED_WAIT.as_millis()
                    )));
                }
                tokio::time::sleep(*d).await;
                let mut outcome = self.outcome(&tab, false).await;
                outcome.effect = Some(Effect::Waited(d.as_millis() as u64));
                return Ok(outcome);
            }
            WaitCondition::Text(text) => {
                self.wait_for_text(&tab, text, false, budget).await?;
                Waited::TextAppeared
            }
            WaitCondition::TextGone(text) => {
                self.wait_for_text(&tab, text, true, budget).await?;
                Waited::TextGone
            }
            WaitCondition::Target(target) => {
                self.wait_for_target(&tab, target, budget)
                    .await
                    .map_err(|e| match e {
                        Error::Timeout { ms, .. } => Error::Timeout {
                            what: format!("waiting for {} to appear", target.describe()),
                            ms,
                        },
                        other => other,
                    })?;
                Waited::Target(target.describe())
            }
        };
        let mut outcome = self.outcome(&tab, false).await;
        outcome.effect = Some(Effect::WaitedFor(what));
        Ok(outcome)
    }

    // Waits until the page's visible text (redacted, compared without case) holds
    // `text`, or no longer does. The page is asked for its text each time its DOM
    // changes (at least every quarter second) and the comparison is made here: made in
    // the page, on raw text, it would answer yes or no about a secret the page shows.
    pub(super) async fn wait_for_text(
        &self,
        tab: &Tab,
        text: &str,
        gone: bool,
        budget: Duration,
    ) -> Result<()> {
        let wanted = collapse_runs(text).to_lowercase();
        let deadline = tokio::time::Instant::now() + budget;
        let mut seen: i64 = -1;
        loop {
            let now = tokio::time::Instant::now();
            let wait = if seen < 0 {
                Duration::ZERO
            } else {
                deadline
                    .saturating_duration_since(now)
                    .min(Duration::from_millis(250))
            };
            let call = format!("__airlock.textAfter({seen}, {})", wait.as_millis());
            match tab
                .eval(0, &call, true, wait + Duration::from_secs(2))
                .await
            {
                Ok(reply) => {
                    seen = reply["v"].as_i64().unwrap_or(0);
                    let mut raw = reply["text"].as_str().unwrap_or_default();
                    if reply["cut"].as_bool() == Some(true) {
                        // Cut in the page: leave off what may be the start of a secret.
                        let mut end = raw.len().saturating_sub(self.redactor.reach());
                        while !raw.is_char_boundary(end) {
                            end -= 1;
                        }
                        raw = &raw[..end];
                    }
                    let page = self.redactor.redact(raw).to_lowercase();
                    if page.contains(&wanted) != gone {
                        return Ok(());
                    }
                }
                // The page navigated under the wait: try again in the new document.
                Err(Error::Protocol(_) | Error::RefNotFound { .. } | Error::PageChanged)
                    if now < deadline =>
                {
                    seen = -1;
                    tab.state
                        .wait(Duration::from_millis(200), |s| {
                            s.lifecycle.contains("DOMContentLoaded")
                        })
                        .await;
                }
                Err(e) => return Err(e),
            }
            if tokio::time::Instant::now() >= deadline {
                let what = if gone { "go" } else { "appear" };
                return Err(Error::Timeout {
                    what: format!("waiting for the text given to {what}"),
                    ms: budget.as_millis(),
                });
            }
        }
    }

    // Waits until a target exists and is visible. A name is matched here (see
    // `find_named`); what is left is waited for in the page.
    pub(super) async fn wait_for_target(
        &self,
        tab: &Tab,
        target: &Target,
        budget: Duration,
    ) -> Result<()> {
        self.check_selector(target)?;
        let deadline = tokio::time::Instant::now() + budget;
        let (frame, target) = match (super::locate::By::of(target), target) {
            (Some((by, name, index)), _) => {
                let (frame, node) = self
                    .find_named(tab, by, name, index, deadline, false)
                    .await
                    .map_err(|e| match e {
                        Error::ElementNotFound { .. } => Error::Timeout {
                            what: String::new(),
                            ms: budget.as_millis(),
                        },
                        other => other,
                    })?;
                (
                    frame,
                    Target::Ref(NodeRef {
                        tab: tab.serial,
                        frame,
                        node,
                    }),
                )
            }
            (None, Target::Ref(r)) => {
                self.own_ref(tab, target)?;
                (r.frame, target.clone())
            }
            _ => (0, target.clone()),
        };
        let cond = json!({ "target": target.walker_json() });
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let call = format!("__airlock.waitFor({cond}, {})", left.as_millis());
            match tab
                .eval(frame, &call, true, left + Duration::from_secs(2))
                .await
            {
                Ok(v) if v["ok"].as_bool() == Some(true) => return Ok(()),
                Ok(v) => {
                    self.walker_error(&v, &target)?;
                    return Err(Error::Timeout {
                        what: String::new(),
                        ms: budget.as_millis(),
                    });
                }
                // The page navigated under the wait: try again in the new document.
                Err(Error::Protocol(_) | Error::RefNotFound { .. } | Error::PageChanged)
                    if tokio::time::Instant::now() < deadline
                        && !matches!(target, Target::Ref(_)) =>
                {
                    tab.state
                        .wait(Duration::from_millis(200), |s| {
                            s.lifecycle.contains("DOMContentLoaded")
                        })
                        .await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}
