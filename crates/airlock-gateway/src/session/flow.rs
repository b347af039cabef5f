//! The data-flow stage of the call pipeline, after the target is resolved and before
//! the risk gate: it judges a call by where its data goes, not by what its target is
//! called.
//!
//! - **Origin sets.** A session may be given origins to act on and origins to only
//!   read. A call that would change a read-only origin's page (a click that does not
//!   follow a link, typing, a form, a key, a dialog's answer, the agent's code) is
//!   refused or held (`[flow] read_only`); a navigation to an origin in neither set
//!   is refused.
//! - **Sink checks.** Everything a session's results showed from a page is kept by
//!   that page's origin ([`Reads`], after redaction). A string the agent sends toward
//!   a site (a URL, typed text, a form value, a prompt's answer, its code) that
//!   carries a run of another origin's reads, in any form the redactor knows, is held
//!   for a human or refused (`[flow] mode`). What the destination itself showed, or
//!   an exempt origin takes, flows freely.
//!
//! What the stage finds is on the approval card and the record as the rule
//! (`data-flow`, `read-only-origin`) and its detail, redacted like every field.

use airlock_config::{FlowMode, Standing};
use airlock_policy::origin_of;

use super::context::{CallContext, FlowVerdict};
use super::*;
use crate::reads::Sets;
use crate::tools::{Changes, Sink};

/// The rule a call carrying another origin's data stands under.
pub const FLOW_RULE: &str = "data-flow";
/// The rule a change to a read-only origin stands under.
pub const READ_ONLY_RULE: &str = "read-only-origin";

impl AgentSession {
    // The stage: origin sets first (a change to a read-only origin), then what the
    // call would carry where. A refusal is an error; a hold is left on the context
    // for the risk gate, which asks one human once for everything that held the call.
    pub(super) async fn check_flow(
        &self,
        context: &mut CallContext,
        held: &Held,
        call: &ToolCall,
    ) -> Result<()> {
        let flow = &held.plan.flow;
        // A name or password in a URL the agent writes is sent on a 401 Basic answer
        // to whoever asks: refused unless the operator allows it.
        if let Some(url) = call.navigation_target()
            && !flow.url_credentials
            && url::Url::parse(url)
                .is_ok_and(|u| !u.username().is_empty() || u.password().is_some())
        {
            return Err(Error::RuleDenied {
                rule: "url-credentials".to_owned(),
                message: "a URL with a user name or password in it is refused; sign in on the page (or an operator sets [flow] url_credentials = true)".to_owned(),
            });
        }
        if held.reads.sets.is_set() {
            self.check_origins(context, held, call).await?;
        }
        if flow.mode == FlowMode::Off || context.flow.is_some() {
            return Ok(());
        }
        self.check_sinks(context, held, call).await
    }

    async fn check_origins(
        &self,
        context: &mut CallContext,
        held: &Held,
        call: &ToolCall,
    ) -> Result<()> {
        let sets = &held.reads.sets;
        if let Some(url) = call.navigation_target() {
            return outside(sets, url);
        }
        let origins: Vec<String> = match call.changes() {
            Changes::Nothing => return Ok(()),
            Changes::Element(target) => {
                let resolved = match &context.target {
                    Some(resolved) => resolved.clone(),
                    None => held.session.resolve(target).await?,
                };
                // Following a link changes nothing here; where it goes is judged
                // like a navigation.
                if resolved.role == "link"
                    && let Some(href) = &resolved.href
                {
                    return outside(sets, href);
                }
                vec![origin_of(&resolved.frame_url).unwrap_or_default()]
            }
            Changes::Fields(fields) => {
                let mut origins = Vec::with_capacity(fields.len());
                for (target, _) in fields {
                    let resolved = held.session.resolve(target).await?;
                    origins.push(origin_of(&resolved.frame_url).unwrap_or_default());
                }
                origins
            }
            Changes::Page => vec![page_origin(held).await?],
        };
        let Some((origin, layer)) = origins.into_iter().find_map(|o| match sets.standing(&o) {
            (Standing::Act, _) => None,
            (_, layer) => Some((o, layer.cloned().unwrap_or_default())),
        }) else {
            return Ok(());
        };
        let detail = format!(
            "{} may only be read in this session, not changed (it may act on {}); following its links is allowed",
            shown(&origin),
            listed(&layer.act.entries()),
        );
        self.matched(context, READ_ONLY_RULE, detail, held.plan.flow.read_only)
    }

    async fn check_sinks(
        &self,
        context: &mut CallContext,
        held: &Held,
        call: &ToolCall,
    ) -> Result<()> {
        let outbound = call.outbound();
        if outbound.is_empty() {
            return Ok(());
        }
        // What other replicas' results showed this session counts as if shown here.
        let started = Instant::now();
        let caught_up = held.reads.catch_up().await;
        context.spent.shared += started.elapsed();
        caught_up?;
        let exempt = &held.plan.flow.exempt;
        let own = airlock_flow::Own::new(&held.plan.flow.own, &held.plan.flow.own_domains);
        let exempted = |o: &str| exempt.contains(o);
        // A placeholder is the vault's business (it types only on its secret's
        // origins), and the agent sees its own placeholders echoed: only the literal
        // text around them is checked.
        let pieces: Vec<(crate::tools::Outbound<'_>, String)> = outbound
            .into_iter()
            .flat_map(|sent| {
                literal_pieces(sent.text)
                    .into_iter()
                    .map(move |text| (sent, text))
            })
            .collect();
        // What this session sent just before: a value split over calls is judged
        // with it (the pieces of this call join those, in order).
        let mut before = held.reads.sent_before();
        // A form naming an outside e-mail recipient (in this call, or typed just
        // before) sends its other values on to that address: what the mail site
        // itself showed is no longer the destination's own there.
        // The call's own addresses decide when it names any; else those just before.
        let own_domains = &held.plan.flow.own_domains;
        let named: Vec<&str> = pieces
            .iter()
            .map(|(_, text)| text.as_str())
            .filter(|text| addresses(text).is_some())
            .collect();
        let recipient = match named.is_empty() {
            false => named.iter().find_map(|t| outside_recipient(t, own_domains)),
            true => before
                .iter()
                .rev()
                .find(|t| addresses(t).is_some())
                .and_then(|t| outside_recipient(t, own_domains)),
        };
        for (sent, text) in &pieces {
            let sent = crate::tools::Outbound { text, ..*sent };
            let so_far = before.clone();
            let earlier: Vec<&str> = so_far.iter().map(String::as_str).collect();
            // First with no destination known but a URL's (most strings carry
            // nothing, and then no round trip to the page is spent learning where
            // they go).
            let url_origin = match sent.to {
                Sink::Url(url) => origin_of(url),
                _ => None,
            };
            let first = airlock_flow::Check {
                free: &exempted,
                to: url_origin.as_deref(),
                own: &own,
            };
            let found = {
                let history = held.reads.history();
                judge(&history, &sent, &earlier, &first)
            };
            // A URL's tail is its last value (`?d=4111 1111`), not the URL.
            let tail = match sent.to {
                Sink::Url(_) => url_pieces(sent.text).pop().unwrap_or_default(),
                _ => sent.text.to_owned(),
            };
            held.reads.sent(&tail);
            before.push(tail);
            if found.is_none() {
                continue;
            }
            let to = match sent.to {
                Sink::Url(url) => origin_of(url).unwrap_or_default(),
                Sink::Field(target) => {
                    let resolved = match &context.target {
                        Some(resolved) if call.form_fields().is_none() => resolved.clone(),
                        _ => held.session.resolve(target).await?,
                    };
                    origin_of(&resolved.frame_url).unwrap_or_default()
                }
                Sink::Page => page_origin(held).await?,
            };
            let flow = {
                let history = held.reads.history();
                let check = airlock_flow::Check {
                    to: Some(&to),
                    ..first
                };
                judge(&history, &sent, &earlier, &check)
            };
            let (flow, to) = match (flow, &recipient) {
                (Some(flow), _) => (flow, shown(&to)),
                (None, Some((address, domain)))
                    if !matches!(sent.to, Sink::Url(_)) && addresses(sent.text).is_none() =>
                {
                    let mail = format!("mail:{domain}");
                    let check = airlock_flow::Check {
                        to: Some(&mail),
                        ..first
                    };
                    let history = held.reads.history();
                    match judge(&history, &sent, &earlier, &check) {
                        Some(flow) => (flow, format!("{} (mail to {address})", shown(&to))),
                        None => continue,
                    }
                }
                (None, _) => continue,
            };
            let run = airlock_core::text::ellipsize(&flow.run, 80);
            let form = match flow.form {
                airlock_flow::Form::Plain => String::new(),
                form => format!(" ({})", form.as_str()),
            };
            let detail = format!(
                "the {} would carry “{run}”{form}, read on {}, to {to}",
                sent.what,
                shown(&flow.from),
            );
            return self.matched(context, FLOW_RULE, detail, held.plan.flow.mode);
        }
        Ok(())
    }

    // A match: refused now under `deny`, else left for the gate to hold.
    fn matched(
        &self,
        context: &mut CallContext,
        rule: &'static str,
        detail: String,
        mode: FlowMode,
    ) -> Result<()> {
        let detail = airlock_core::text::display_safe(&detail).into_owned();
        tracing::info!(
            tool.name = context.tool,
            rule,
            mode = mode.as_str(),
            "data-flow stage matched"
        );
        let verdict = FlowVerdict {
            rule,
            detail,
            deny: mode == FlowMode::Deny,
        };
        if verdict.deny {
            context.gate = Some(super::context::Gate {
                rule: rule.to_owned(),
                risk: "high",
                action: "deny",
                approval: None,
                approver: None,
            });
            context.gated = true;
            return Err(Error::RuleDenied {
                rule: rule.to_owned(),
                message: format!("refused: {}", verdict.detail),
            });
        }
        context.flow = Some(verdict);
        Ok(())
    }
}

// A navigation (or a link followed) to an origin in neither set is refused.
fn outside(sets: &Sets, url: &str) -> Result<()> {
    let Some(origin) = origin_of(url) else {
        return Ok(());
    };
    let (Standing::Outside, Some(layer)) = sets.standing(&origin) else {
        return Ok(());
    };
    if origin == "null" {
        return Ok(());
    }
    Err(Error::PolicyDenied {
        detail: format!(
            "{} is in neither of this session's origin sets (act: {}; read: {})",
            shown(&origin),
            listed(&layer.act.entries()),
            listed(&layer.read.entries()),
        ),
    })
}

// The first run `sent` carries elsewhere: alone (a URL part by part), or together
// with what this session sent just before it (`earlier`, oldest first).
fn judge(
    history: &airlock_flow::History,
    sent: &crate::tools::Outbound<'_>,
    earlier: &[&str],
    check: &airlock_flow::Check<'_>,
) -> Option<airlock_flow::Flow> {
    match sent.to {
        Sink::Url(_) => history.check_url(sent.text, check).or_else(|| {
            url_pieces(sent.text)
                .iter()
                .find_map(|piece| history.check_split(earlier, piece, check))
        }),
        _ => history
            .check(sent.text, check)
            .or_else(|| history.check_split(earlier, sent.text, check)),
    }
}

// The address and domain of `text` when it is one e-mail address (or a list of
// them) at a domain other than the caller's own (`own_domains`).
fn outside_recipient(text: &str, own_domains: &[String]) -> Option<(String, String)> {
    addresses(text)?.into_iter().find_map(|(address, domain)| {
        let own = own_domains.iter().any(|d| {
            let d = d.trim_start_matches(['@', '.']).to_ascii_lowercase();
            domain == d || domain.ends_with(&format!(".{d}"))
        });
        (!own).then(|| (address.to_owned(), domain))
    })
}

// The e-mail addresses `text` is a list of (and their domains), if it is one:
// `a@x.example, b@y.example` or `Mark <mark@x.example>`.
fn addresses(text: &str) -> Option<Vec<(&str, String)>> {
    let found: Vec<(&str, String)> = text
        .split([',', ';'])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|part| {
            let address = match part.rsplit_once('<') {
                Some((name, rest)) if rest.ends_with('>') && !name.contains('@') => {
                    rest.trim_end_matches('>').trim()
                }
                _ => part,
            };
            let (local, domain) = address.rsplit_once('@')?;
            let domain = domain.trim_end_matches('.').to_ascii_lowercase();
            let plain = !local.is_empty()
                && !local.contains(['/', ':', ' ', '<', '>'])
                && domain.contains('.')
                && domain
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
            plain.then_some((address, domain))
        })
        .collect::<Option<_>>()?;
    (!found.is_empty()).then_some(found)
}

// What a URL carries, decoded: its path segments, query values and fragment.
fn url_pieces(url: &str) -> Vec<String> {
    let Ok(parsed) = url::Url::parse(url) else {
        return vec![url.to_owned()];
    };
    let mut pieces: Vec<String> = parsed
        .path_segments()
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect();
    pieces.extend(parsed.query_pairs().map(|(_, v)| v.into_owned()));
    pieces.extend(parsed.fragment().map(str::to_owned));
    pieces
}

// The literal text of `text` between placeholders (all of it when they do not
// parse: the call fails on them later).
fn literal_pieces(text: &str) -> Vec<String> {
    use airlock_vault::placeholder::{Segment, mentions, parse};
    if !mentions(text) {
        return vec![text.to_owned()];
    }
    match parse(text) {
        Ok(segments) => segments
            .into_iter()
            .filter_map(|s| match s {
                Segment::Text(text) => Some(text),
                Segment::Secret { .. } => None,
            })
            .collect(),
        Err(_) => vec![text.to_owned()],
    }
}

// The active page's origin.
async fn page_origin(held: &Held) -> Result<String> {
    let tabs = held.session.tabs().await?;
    Ok(tabs
        .iter()
        .find(|t| t.active)
        .and_then(|t| origin_of(&t.url))
        .unwrap_or_default())
}

// An origin as a person deciding on it reads it (punycode first).
fn shown(origin: &str) -> String {
    airlock_policy::display_url(origin)
        .trim_end_matches('/')
        .to_owned()
}

fn listed(entries: &[String]) -> String {
    match entries.is_empty() {
        true => "none".to_owned(),
        false => entries.join(", "),
    }
}
