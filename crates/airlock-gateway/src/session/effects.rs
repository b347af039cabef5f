//! The effects stage of the call pipeline, right after the call acted: the requests
//! its page sent that an effect rule holds (the built-in `delete-*` and `payment-*`
//! rules, and the operator's `request_*` rules in `[[approvals.rules]]`) are paused
//! in the browser, unsent. One human decides them, on an approval card that says
//! what would happen to what, where; approved, they are released and the call
//! answers once what they brought has settled; otherwise they are dropped and the
//! call fails with the decision's code. A request held between calls (a page's
//! timer) is asked about by the next call.
//!
//! Asked once: a request the call's own approval covers (a click on "Delete" a
//! person approved, whose request is no riskier than the click was judged), or the
//! confirmation of a request a person approved a moment ago (`crate::covers`), is
//! released without asking again, and the result says under which approval.
//!
//! Never said sent unless sent: Chromium says of each held request whether it took
//! the decision; one it no longer held (its page went away meanwhile) fails the call
//! with `request_not_sent`.

use airlock_browser::{Decided, HeldEffect};
use airlock_core::text::{display_safe, ellipsize};
use airlock_risk::Risk;

use super::context::{CallContext, Gate};
use super::gate::Ask;
use super::*;
use crate::covers::{shortened, token_like};

/// What the effects stage made of a call that acted.
pub(super) enum Effected {
    /// Nothing was held.
    None,
    /// Held requests were approved and sent; this note says so.
    Sent(String),
    /// They were dropped, or approved and not sent: the call fails with this error,
    /// and this note says the call itself ran.
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
        if pending.is_empty() {
            return Effected::None;
        }
        // What a person already approved covers: the call itself (for requests no
        // riskier than it was judged), or the step a request confirms.
        let call_approval = context
            .gate
            .as_ref()
            .filter(|g| g.approver.is_some())
            .and_then(|g| Some((g.approval.clone()?, risk_named(g.risk))));
        let mut covered: Vec<(HeldEffect, String)> = Vec::new();
        let mut asked: Vec<HeldEffect> = Vec::new();
        for effect in pending {
            match &call_approval {
                Some((approval, risk)) if effect.risk <= *risk => {
                    covered.push((effect, format!("this call's approval {approval}")));
                }
                _ => match held.covers.take(&effect) {
                    Some(approval) => covered.push((
                        effect,
                        format!("approval {approval} of the step it confirms"),
                    )),
                    None => asked.push(effect),
                },
            }
        }
        let Some(first) = asked.first() else {
            let ids: Vec<u64> = covered.iter().map(|(e, _)| e.id).collect();
            let decided = self.decide(held, &ids, true).await;
            let mut note = String::new();
            for (effect, under) in &covered {
                note.push_str(&format!(
                    "\nheld by rule {}, then sent under {under}: {}",
                    effect.rule,
                    in_words(effect)
                ));
            }
            return self
                .sent_or_not(held, &covered_effects(&covered), decided, note)
                .await;
        };
        let rule = first.rule.clone();
        // On the record and the card: what would happen, to what, where, and why held.
        context.effect = Some(describe(context.tool, context.target.as_ref(), &asked));
        context.gate = Some(Gate {
            rule: rule.clone(),
            risk: asked
                .iter()
                .map(|e| e.risk)
                .max()
                .unwrap_or_default()
                .as_str(),
            action: airlock_risk::Action::Approve.as_str(),
            approval: None,
            approver: None,
        });
        tracing::warn!(tool.name = context.tool, rule = %rule, requests = asked.len(), "requests the call caused are held for a human");
        let decision = match self.inner.config.store.as_ref() {
            Some(store) => {
                let ask = Ask {
                    args,
                    effect: true,
                    screenshot: true,
                };
                self.await_approval(context, held, ask, store, held.plan.approval_timeout)
                    .await
            }
            None => Err(Error::RuleDenied {
                rule: rule.clone(),
                message: "a request this call caused needs a human's approval, and this gateway has no store to ask in".to_owned(),
            }),
        };
        let send = decision.is_ok();
        let all: Vec<HeldEffect> = asked
            .iter()
            .cloned()
            .chain(covered.iter().map(|(e, _)| e.clone()))
            .collect();
        let ids: Vec<u64> = all.iter().map(|e| e.id).collect();
        let decided = self.decide(held, &ids, send).await;
        match decision {
            Ok(()) => {
                let gate = context.gate.as_ref();
                let by = gate
                    .and_then(|g| g.approver.clone())
                    .unwrap_or_else(|| "someone".to_owned());
                if let Some(approval) = gate.and_then(|g| g.approval.as_deref()) {
                    for effect in &asked {
                        held.covers.grant(effect, approval);
                    }
                }
                let mut note = format!(
                    "\nheld by rule {rule}, then sent after {by} approved: {}",
                    all.iter().map(in_words).collect::<Vec<_>>().join("; ")
                );
                for (effect, under) in &covered {
                    note.push_str(&format!("\n({} was covered by {under})", in_words(effect)));
                }
                self.sent_or_not(held, &all, decided, note).await
            }
            Err(e) => Effected::Refused(
                Box::new(e),
                format!(
                    "\nthe call itself ran; what it caused was held by rule {rule} and not sent: {}",
                    all.iter().map(in_words).collect::<Vec<_>>().join("; ")
                ),
            ),
        }
    }

    // Releases (`send`) or drops `ids`; `None` when the browser host could not be
    // asked at all.
    async fn decide(&self, held: &Held, ids: &[u64], send: bool) -> Option<Vec<Decided>> {
        match held.session.decide_effects(ids, send).await {
            Ok(decided) => Some(decided),
            Err(e) => {
                tracing::error!(error = %e, "could not decide the held requests");
                None
            }
        }
    }

    // The result of releasing `effects`: sent (with `note` and the page after), or
    // the error that says which were not.
    async fn sent_or_not(
        &self,
        held: &Held,
        effects: &[HeldEffect],
        decided: Option<Vec<Decided>>,
        mut note: String,
    ) -> Effected {
        let unsent: Vec<String> = match &decided {
            None => effects.iter().map(in_words).collect(),
            Some(decided) => effects
                .iter()
                .filter(|e| !decided.iter().any(|d| d.id == e.id && d.done))
                .map(|e| {
                    let why = decided
                        .iter()
                        .find(|d| d.id == e.id)
                        .and_then(|d| d.why.clone())
                        .unwrap_or_else(|| "the browser host did not answer".to_owned());
                    format!("{} ({why})", in_words(e))
                })
                .collect(),
        };
        if !unsent.is_empty() {
            tracing::error!(requests = unsent.len(), "approved requests were not sent");
            return Effected::Refused(
                Box::new(Error::NotSent {
                    what: unsent.join("; "),
                }),
                "\nthe call itself ran; nothing it caused was sent".to_owned(),
            );
        }
        // Where the page is now (a released form post moved it), and what changed,
        // fenced as every page's words are.
        if effects.iter().any(|e| e.navigation)
            && let Ok((line, _)) = crate::tools::page_line(&held.session, &self.inner.fence).await
        {
            note.push('\n');
            note.push_str(&line);
        }
        if let Ok(Some(diff)) = held.session.changes().await {
            note.push_str("\nthe page after it was sent:\n");
            note.push_str(&self.inner.fence.wrap(&diff));
        }
        Effected::Sent(note)
    }
}

fn covered_effects(covered: &[(HeldEffect, String)]) -> Vec<HeldEffect> {
    covered.iter().map(|(e, _)| e.clone()).collect()
}

fn risk_named(name: &str) -> Risk {
    match name {
        "critical" => Risk::Critical,
        "high" => Risk::High,
        "medium" => Risk::Medium,
        _ => Risk::Low,
    }
}

// A held request in one line: method and URL, shown as a person deciding must read
// it (canonical host first).
fn in_words(effect: &HeldEffect) -> String {
    format!(
        "{} {}",
        effect.method,
        airlock_policy::display_url(&effect.url)
    )
}

/// What the approval card says of held requests. Its first line says what would
/// happen to what, where: "Delete user “carol” (POST /admin/auth/user/7/delete/) on
/// 127.0.0.1:8900". Then the call that caused it, each request's fields (token-like
/// values shortened), the rule's reasons, and the words the page showed about it.
pub(crate) fn describe(
    tool: &str,
    target: Option<&crate::action::Resolved>,
    pending: &[HeldEffect],
) -> String {
    let mut text = pending
        .iter()
        .map(headline)
        .collect::<Vec<_>>()
        .join("; and ");
    text.push_str(&format!("\ncaused by {tool}"));
    if let Some(t) = target {
        text.push_str(&format!(" on {} “{}”", t.role, ellipsize(&t.name, 80)));
    }
    for e in pending {
        if !e.fields.is_empty() {
            let fields: Vec<String> = e
                .fields
                .iter()
                .map(|(k, v)| {
                    if token_like(k, v) {
                        format!("{k}={}", shortened(v))
                    } else {
                        format!("{k}={v}")
                    }
                })
                .collect();
            text.push_str(&format!("\ncarrying {}", fields.join(", ")));
        }
        if e.navigation {
            text.push_str("\nthe page moves when it is sent");
        }
        text.push_str(&format!("\nrule {}: {}", e.rule, e.why));
        if let Some(words) = &e.page_words {
            text.push_str(&format!("\nthe page said: “{words}”"));
        }
    }
    display_safe(&text).into_owned()
}

/// "Delete user “carol” (POST /admin/auth/user/7/delete/) on 127.0.0.1:8900".
pub(crate) fn headline(e: &HeldEffect) -> String {
    let url = airlock_risk::CanonicalUrl::of(&e.url);
    let parsed = url::Url::parse(&url.url).ok();
    let site = parsed
        .as_ref()
        .and_then(|u| {
            let host = airlock_policy::display_host(u.host_str()?);
            Some(match u.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        })
        .unwrap_or_default();
    let (verb, mut what) = if e.rule.starts_with("delete") {
        ("Delete", object(&url.path, &e.fields))
    } else if e.rule.starts_with("payment") {
        ("Send a payment", String::new())
    } else {
        ("Send", object(&url.path, &e.fields))
    };
    if let Some(named) = e
        .page_words
        .as_deref()
        .and_then(quoted)
        .filter(|_| verb != "Send a payment")
    {
        what = match what.split_once(' ') {
            Some((noun, _)) => format!("{noun} “{named}”"),
            None if !what.is_empty() => format!("{what} “{named}”"),
            None => format!("“{named}”"),
        };
    }
    let what = if what.is_empty() {
        String::new()
    } else {
        format!(" {what}")
    };
    let place = match url.query.is_empty() {
        true => url.path.clone(),
        false => format!("{}?{}", url.path, url.query),
    };
    format!(
        "{verb}{what} ({} {}) on {site}",
        e.method,
        ellipsize(&place, 120)
    )
}

// What a request acts on, from its path and fields: the word before an id and the
// id ("user 7"), or the ids a form selected ("user 5, 6").
fn object(path: &str, fields: &[(String, String)]) -> String {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let is_id = |s: &str| {
        !s.is_empty()
            && (s.bytes().all(|b| b.is_ascii_digit())
                || (s.len() >= 16 && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')))
    };
    let verbs = [
        "delete", "remove", "destroy", "erase", "purge", "edit", "change",
    ];
    let noun = |upto: usize| {
        segments[..upto]
            .iter()
            .rev()
            .find(|s| !is_id(s) && !verbs.contains(&s.to_ascii_lowercase().as_str()))
            .map(|s| (*s).to_owned())
    };
    if let Some(at) = segments.iter().rposition(|s| is_id(s)) {
        if let Some(noun) = noun(at) {
            return format!("{noun} {}", segments[at]);
        }
        return segments[at].to_owned();
    }
    let selected: Vec<&str> = fields
        .iter()
        .filter(|(k, v)| {
            let k = k.to_ascii_lowercase();
            let k = k.trim_end_matches("[]");
            (k.contains("selected") || ["id", "ids", "pk", "pks"].contains(&k)) && is_id(v)
        })
        .map(|(_, v)| v.as_str())
        .collect();
    match (noun(segments.len()), selected.is_empty()) {
        (Some(noun), false) => format!("{noun} {}", selected.join(", ")),
        (Some(noun), true) => noun,
        (None, _) => String::new(),
    }
}

// The first quoted phrase of the page's words (“…”, "…", «…», '…').
fn quoted(words: &str) -> Option<String> {
    for (open, close) in [('“', '”'), ('"', '"'), ('«', '»'), ('‘', '’')] {
        if let Some(start) = words.find(open) {
            let rest = &words[start + open.len_utf8()..];
            if let Some(end) = rest.find(close) {
                let phrase = rest[..end].trim();
                if !phrase.is_empty() && phrase.chars().count() <= 80 {
                    return Some(phrase.to_owned());
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(rule: &str, url: &str, fields: &[(&str, &str)], words: Option<&str>) -> HeldEffect {
        HeldEffect {
            id: 1,
            rule: rule.into(),
            risk: Risk::High,
            why: "method POST; its path says \"delete\"".into(),
            method: "POST".into(),
            url: url.into(),
            fields: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            navigation: true,
            page_words: words.map(str::to_owned),
        }
    }

    #[test]
    fn a_card_leads_with_what_will_happen_to_what_where() {
        let confirm = effect(
            "delete-path",
            "http://127.0.0.1:8900/admin/auth/user/7/delete/",
            &[
                (
                    "csrfmiddlewaretoken",
                    "KPi9NXn7xGxqfbRUkLBGGVf8R4R5IiAfSIZdRhUm4vRfURArlobyt1hN3saejcea",
                ),
                ("post", "yes"),
            ],
            Some(
                "Are you sure you want to delete the user “carol”? All of the following related items will be deleted:",
            ),
        );
        assert_eq!(
            headline(&confirm),
            "Delete user “carol” (POST /admin/auth/user/7/delete/) on 127.0.0.1:8900"
        );
        let card = describe("browser_click", None, &[confirm]);
        assert!(card.starts_with("Delete user “carol”"), "{card}");
        assert!(
            card.contains("csrfmiddlewaretoken=KPi9NX… (64 characters)"),
            "{card}"
        );
        assert!(!card.contains("R4R5IiAfSIZdRhUm"), "{card}");
        assert!(card.contains("post=yes"), "{card}");
        let bulk = effect(
            "delete-field",
            "http://127.0.0.1:8900/admin/auth/user/",
            &[
                ("action", "delete_selected"),
                ("_selected_action", "5"),
                ("_selected_action", "6"),
            ],
            None,
        );
        assert_eq!(
            headline(&bulk),
            "Delete user 5, 6 (POST /admin/auth/user/) on 127.0.0.1:8900"
        );
        let pay = effect(
            "payment-path",
            "http://xn--bcher-kva.example/api/transfers",
            &[],
            None,
        );
        assert_eq!(
            headline(&pay),
            "Send a payment (POST /api/transfers) on xn--bcher-kva.example (in Unicode: bücher.example)"
        );
    }
}
