//! Deciding the requests an effect rule holds (see `crate::effects`): telling the
//! gateway of them, and releasing or dropping each as a human decided.

use super::*;
use crate::effects::{Decided, HeldEffect};

impl Session {
    /// The requests effect rules held since the last time asked (a request held
    /// between calls is told to the next one).
    pub fn take_held_effects(&self) -> Vec<HeldEffect> {
        self.requests.holds.take_new()
    }

    /// How many requests effect rules refused since the last time asked.
    pub fn take_refused_effects(&self) -> u64 {
        self.requests
            .effects_refused
            .swap(0, std::sync::atomic::Ordering::AcqRel)
    }

    /// Decides the held requests `ids`: `send` releases them as the page made them,
    /// and waits for what they bring (a navigation to its load, an answer to its
    /// end and the page's reaction); else each fails in the page as aborted (and the
    /// page's handlers of the failure are waited for). Says, for each id, whether
    /// Chromium took the decision: an id not held (decided already, or never), or
    /// one whose page went away meanwhile (Chromium answers that it knows no such
    /// request or session), was neither sent nor dropped by this call.
    pub async fn decide_effects(&self, ids: &[u64], send: bool) -> Vec<Decided> {
        let holds = self.requests.holds.remove(ids);
        let mut decided: Vec<Decided> = ids
            .iter()
            .filter(|id| !holds.iter().any(|h| h.effect.id == **id))
            .map(|id| Decided {
                id: *id,
                done: false,
                why: Some(
                    "it was not held any more (decided already, or its page went away)".to_owned(),
                ),
            })
            .collect();
        let mut waits = Vec::new();
        for hold in holds {
            let tab = match &hold.tab {
                Some(target) => self.tab_by_target(target),
                None => None,
            };
            let (method, params) = if send {
                (
                    "Fetch.continueRequest",
                    Box::pin(self.requests.release_params(&hold)).await,
                )
            } else {
                (
                    "Fetch.failRequest",
                    json!({ "requestId": hold.request_id, "errorReason": "Aborted" }),
                )
            };
            if hold.effect.navigation
                && let Some(tab) = &tab
            {
                tab.state.navigation_decided();
            }
            // A dropped navigation leaves the page as it was; a dropped request of
            // the page is waited for like a released one (to its failure, then the
            // page's handlers of it), so the result shows how the page took it.
            let waited = send || !hold.effect.navigation;
            let before = tab.as_ref().map(|tab| {
                let navigations = tab.state.read(|s| s.navigations);
                let requests = if waited {
                    tab.state.network_released(&hold.network_id)
                } else {
                    tab.state.network_dropped(&hold.network_id);
                    0
                };
                (navigations, requests)
            });
            let answer = hold
                .conn
                .call(Some(&hold.session), method, params, Duration::from_secs(5))
                .await;
            if let Err(e) = &answer {
                // The page or Chromium ended it meanwhile (a navigation replaced it,
                // its tab closed): it was not sent, and the caller must say so.
                tracing::warn!(error = %e, method, "a held request could not be decided");
                decided.push(Decided {
                    id: hold.effect.id,
                    done: false,
                    why: Some(format!(
                        "Chromium refused to {}: {e}",
                        if send { "send it" } else { "drop it" }
                    )),
                });
                continue;
            }
            decided.push(Decided {
                id: hold.effect.id,
                done: true,
                why: None,
            });
            if let (true, Some(tab), Some(before)) = (waited, tab, before) {
                waits.push((tab, before, hold.effect.navigation));
            }
        }
        for (tab, (navigations, requests), navigation) in waits {
            self.after_release(&tab, navigations, requests, navigation)
                .await;
        }
        decided.sort_by_key(|d| d.id);
        decided
    }

    // What a released request brings: its navigation's load, or its answer and a
    // frame and a task for the page's handlers.
    async fn after_release(&self, tab: &Tab, navigations: u64, requests: u64, navigation: bool) {
        if navigation {
            tab.state
                .wait(self.options.navigation_timeout, |s| {
                    s.navigations > navigations && s.lifecycle.contains("load")
                })
                .await;
            return;
        }
        self.settle_released(tab, requests).await;
    }

    fn tab_by_target(&self, target: &str) -> Option<Arc<Tab>> {
        lock(&self.registry)
            .tabs
            .iter()
            .find(|t| t.target_id == target)
            .cloned()
    }
}
