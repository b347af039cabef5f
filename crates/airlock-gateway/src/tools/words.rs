//! How a tool's result reads: the header, notices, effects, tabs and request lines an
//! agent is shown, as text.

use super::*;

// `"title" — URL`: which page a result is about.
pub(super) fn whose(title: &str, url: &str) -> String {
    format!("{} — {url}", quote_title(title))
}

// `GET 200 script URL`; a request that failed says why, and one Airlock refused
// says so: the agent learns why a resource is missing.
// `proxied`: why the egress proxy failed the request, if it did.
pub(super) fn network_line(entry: &NetworkEntry, proxied: Option<String>) -> String {
    let outcome = if let Some(why) = &entry.refused {
        format!("refused by Airlock ({why})")
    } else if let Some(why) = proxied {
        format!("refused by the egress proxy ({why})")
    } else if let Some(failure) = &entry.failure {
        format!("failed ({failure})")
    } else if let Some(status) = entry.status {
        status.to_string()
    } else {
        "pending".to_owned()
    };
    format!("{} {outcome} {} {}", entry.method, entry.kind, entry.url)
}

// What every action result starts with: its effect, where the tab is, and anything
// that happened on the side (dialogs, popups).
// `typed` is what the agent wrote, shown back when it held a placeholder.
pub(super) fn header(
    outcome: &ActionOutcome,
    fence: &PageFence,
    surface: Surface,
    typed: Option<&str>,
) -> String {
    let mut text = String::new();
    if let Some(effect) = &outcome.effect {
        text.push_str(&effect_line(effect, typed));
        text.push('\n');
    }
    let whose = whose(&outcome.title, &outcome.url);
    fence.seen(&whose);
    text.push_str(&format!("page: {whose}"));
    if let Some(status) = outcome.status {
        text.push_str(&format!(" (HTTP {status})"));
    }
    text.push('\n');
    for dialog in &outcome.dialogs {
        let (kind, message) = (&dialog.kind, quote_title(&dialog.message));
        text.push_str(&match dialog.answer {
            DialogAnswer::Open => {
                let mut line = format!("{kind} dialog {message} is open and holds the page");
                if let Some(step) = surface.suggest(Step::AnswerDialog) {
                    line.push_str(&format!(": {step}"));
                }
                line
            }
            DialogAnswer::Accepted => format!("{kind} dialog {message} accepted"),
            DialogAnswer::Dismissed => format!("{kind} dialog {message} dismissed"),
            DialogAnswer::TimedOut { accepted } => format!(
                "{kind} dialog {message} was not answered in time: {}",
                if accepted { "accepted" } else { "dismissed" }
            ),
        });
        text.push('\n');
    }
    if outcome.dialogs_unlisted > 0 {
        text.push_str(&format!(
            "… and {} more dialogs dismissed\n",
            outcome.dialogs_unlisted
        ));
    }
    for notice in &outcome.notices {
        text.push_str(&notice_line(notice));
        text.push('\n');
    }
    for tab in &outcome.new_tabs {
        text.push_str(&format!(
            "the page opened a new tab: [{}] {}",
            tab.index, tab.url
        ));
        if let Some(step) = surface.suggest(Step::SelectTab) {
            text.push_str(&format!(" ({step})"));
        }
        text.push('\n');
    }
    text
}

// What the browser did on the side, in the words an agent reads.
pub(crate) fn notice_line(notice: &Notice) -> String {
    match notice {
        Notice::PopupDenied { url, reason } => {
            format!("closed a popup the page opened to {url}: {reason}")
        }
        Notice::NavigationStopped {
            url,
            reason,
            committed,
        } => {
            let verb = if *committed { "left" } else { "stopped" };
            format!("{verb} a page-initiated navigation to {url}: {reason}")
        }
        Notice::FrameStopped { url, reason } => {
            format!("stopped a frame of the page that loaded {url} (its scripts did not run): {reason}")
        }
        Notice::TabClosedByPage { index, url } => {
            format!("the page closed its own tab [{index}] ({url}); tabs after it moved up one")
        }
        Notice::PopupsOverCap { closed, cap } => {
            format!("closed {closed} popup(s) the page opened: a session has at most {cap} tabs")
        }
        Notice::DialogStorm {
            dialogs,
            within_secs,
        } => format!(
            "the page opened {dialogs} dialogs within {within_secs} s: its tab was closed and a blank one opened in its place"
        ),
        Notice::ScriptStopped => {
            "the page did not answer, so the script it was running was stopped".to_owned()
        }
        Notice::UnresponsiveTabReplaced => "the page did not answer even with its scripts stopped: its tab was closed and a blank one opened in its place".to_owned(),
        Notice::RequestRefused { origin, why } => {
            format!("refused a request the page made to {origin}: {why}")
        }
        Notice::Downloaded {
            name,
            saved_as,
            bytes,
            sha256,
        } => format!(
            "downloaded {} and kept it for the operator as {saved_as} ({bytes} bytes, SHA-256 {sha256})",
            quote_title(name)
        ),
        Notice::DownloadRefused { name, why } => {
            format!("did not keep the download {}: {why}", quote_title(name))
        }
    }
}

// An action's effect in the words an agent reads.
pub(super) fn effect_line(effect: &Effect, typed: Option<&str>) -> String {
    let quoted = |labels: &[String]| {
        labels
            .iter()
            .map(|l| format!("\"{l}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match effect {
        Effect::Clicked(target) => format!("clicked {target}"),
        Effect::Resized { width, height } => format!("viewport is {width}×{height}"),
        Effect::Hovered(target) => format!("hovering over {target}"),
        Effect::Dragged { from, to } => format!("dragged {from} onto {to}"),
        Effect::Uploaded { target, files } => {
            format!("gave {} the file(s) {}", target, quoted(files))
        }
        Effect::Typed(target) => match typed {
            Some(typed) => format!("typed {typed} into {target}"),
            None => format!("typed into {target}"),
        },
        Effect::Filled(fields) => format!("filled {}", fields.join(", ")),
        Effect::Selected(options) => format!("selected {}", quoted(options)),
        Effect::Checked {
            target,
            checked,
            changed,
        } => {
            let verb = if *checked { "checked" } else { "unchecked" };
            if *changed {
                format!("{verb} {target}")
            } else {
                format!("{target} was already {verb}")
            }
        }
        Effect::Pressed(key) => format!("pressed {key}"),
        Effect::ScrolledIntoView(target) => format!("scrolled {target} into view"),
        Effect::Scrolled { x, y, page_height } => {
            format!("scrolled to x={x} y={y} of page height {page_height}")
        }
        Effect::Waited(ms) => format!("waited {ms} ms"),
        Effect::WaitedFor(Waited::TextAppeared) => {
            "done waiting for the text given to appear".to_owned()
        }
        Effect::WaitedFor(Waited::TextGone) => "done waiting for the text given to go".to_owned(),
        Effect::WaitedFor(Waited::Target(target)) => {
            format!("done waiting for {target} to appear")
        }
        Effect::AnsweredDialog {
            kind,
            message,
            accepted,
        } => {
            let verb = if *accepted { "accepted" } else { "dismissed" };
            match typed {
                Some(typed) => format!(
                    "{verb} the {kind} dialog {}, answering {typed}",
                    quote_title(message)
                ),
                None => format!("{verb} the {kind} dialog {}", quote_title(message)),
            }
        }
    }
}

// Quoted and escaped like snapshot names (`\"`, `\\`), cut with `…` like them too,
// so the redactor recognises a secret in a title the same way.
pub(super) fn quote_title(title: &str) -> String {
    let short = airlock_core::text::ellipsize(title, 120);
    format!("\"{}\"", short.replace('\\', "\\\\").replace('"', "\\\""))
}

pub(super) fn dialog_line(kind: &str, surface: Surface) -> String {
    let mut line = format!("a {kind} dialog opened and holds the page");
    if let Some(step) = surface.suggest(Step::AnswerDialog) {
        line.push_str(&format!(": {step}"));
    }
    line
}

pub(super) fn render_tabs(tabs: &[TabInfo]) -> String {
    let mut text = String::new();
    for tab in tabs {
        text.push_str(&format!(
            "[{}]{} {} — {}{}\n",
            tab.index,
            if tab.active { " (active)" } else { "" },
            quote_title(&tab.title),
            tab.url,
            if tab.opened_by_page {
                " (opened by the page)"
            } else {
                ""
            },
        ));
    }
    text
}

// Markdown-ish page text without its markup: headings lose their #, links their URL.
pub(super) fn plain(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    for line in markdown.lines() {
        let line = line.trim_start_matches('#').trim_start();
        let mut rest = line;
        while let Some(open) = rest.find('[') {
            let Some(close) = rest[open..].find("](").map(|i| open + i) else {
                break;
            };
            let Some(end) = rest[close..].find(')').map(|i| close + i) else {
                break;
            };
            out.push_str(&rest[..open]);
            out.push_str(&rest[open + 1..close]);
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}

// A target as the agent gave it, for the audit log (which no agent reads).
pub(super) fn target_json(target: &Target) -> serde_json::Value {
    use serde_json::json;
    match target {
        Target::Ref(r) => json!({ "ref": r.to_string() }),
        Target::Role { role, name, index } => json!({ "role": role, "name": name, "index": index }),
        Target::Text { text, index } => json!({ "text": text, "index": index }),
        Target::Selector(selector) => json!({ "selector": selector }),
        Target::Point { x, y } => json!({ "x": x, "y": y }),
    }
}
