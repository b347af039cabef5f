//! `airlock audit replay SESSION --out DIR`: one session's steps as a self-contained
//! HTML page (`DIR/index.html`): what the agent did, what the gate decided and who
//! approved, what was refused, and the screenshot of each step an `audit` recording
//! stored, embedded. Built from the audit log alone (already redacted); every string
//! is escaped, and the page runs no script (its CSP allows inline style and `data:`
//! images only). A stored image whose SHA-256 differs from its event's is shown as
//! altered, not embedded, and the command exits 1.

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use hex::ToHex as _;
use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use airlock_audit::{Entry, Event, Recording, SessionChange};
use airlock_config::Config;
use anyhow::{Context as _, bail};
use base64::Engine as _;
use serde_json::Value;

use super::audit::RECORDINGS_DIR;

pub(crate) async fn replay(config: &Config, session: &str, out: &Path) -> anyhow::Result<ExitCode> {
    let store = super::vault::open_store(config).await?;
    let mut events = Vec::new();
    let mut after = 0;
    loop {
        let page = store.audit_events(after, 10_000).await?;
        let Some(last) = page.last() else {
            break;
        };
        after = last.seq;
        events.extend(
            page.into_iter()
                .filter(|r| r.session.as_deref() == Some(session)),
        );
    }
    if events.is_empty() {
        bail!("the audit log has no events of session {session:?}");
    }
    // Where the gateway kept the images: the store other replicas share, or files.
    let recordings = config.data_dir.join(RECORDINGS_DIR);
    let in_store = store.is_shared().then_some(&store);
    let mut altered = 0;
    let mut rows = String::new();
    let mut header = String::new();
    for record in &events {
        let Ok(entry) = Entry::parse(&record.body) else {
            continue;
        };
        let event = &entry.event;
        let kind = event.kind();
        if let Event::SessionOpen(change) | Event::SessionClose(change) = event {
            let _ = write!(
                header,
                "<li>{} {} — {}</li>",
                esc(&time(record.time_ms)),
                esc(kind),
                esc(&describe_session(change)),
            );
            continue;
        }
        let (error, done) = match event {
            Event::ToolCall(done) => (done.error.as_deref(), Some(done)),
            Event::PolicyRefusal(r) | Event::SecretRefusal(r) => (r.error.as_deref(), None),
            _ => (None, None),
        };
        let image = match done.and_then(|d| d.recording.as_ref()) {
            Some(Recording::Stored { step, sha256, file }) => {
                let data = match in_store {
                    _ if !safe(file) => None,
                    Some(store) => store.artifact(file).await?,
                    None => std::fs::read(recordings.join(file)).ok(),
                };
                match embed(data, sha256) {
                    Embedded::Image(uri) => format!("<img alt=\"step {step}\" src=\"{uri}\">"),
                    Embedded::Altered => {
                        altered += 1;
                        "<p class=bad>image altered since it was recorded (SHA-256 differs); not shown</p>".to_owned()
                    }
                    Embedded::Gone => "<p class=dim>image pruned or missing</p>".to_owned(),
                }
            }
            Some(Recording::Failed { error }) => {
                format!("<p class=bad>not recorded: {}</p>", esc(error))
            }
            None => String::new(),
        };
        let outcome = match error {
            Some(code) => format!("<span class=bad>{}</span>", esc(code)),
            None if done.is_some() => "ok".to_owned(),
            None => String::new(),
        };
        let call = event.call();
        let (status, by, reason, note) = match event {
            Event::ApprovalDecided(d) => (
                Some(d.status.to_string()),
                d.by.clone(),
                None,
                d.note.clone(),
            ),
            Event::PolicyRefusal(r) | Event::SecretRefusal(r) => {
                (None, None, Some(r.reason.clone()), None)
            }
            Event::OperatorTakeover(o) | Event::OperatorHandback(o) | Event::OperatorInput(o) => {
                (None, o.by.clone(), o.reason.clone(), None)
            }
            Event::LoginSaved(l) => (None, Some(l.by.clone()), None, None),
            _ => (None, None, None, None),
        };
        let (rule, risk) = match event {
            Event::ApprovalRequested(a) => (Some(a.rule.clone()), Some(a.risk.clone())),
            _ => (
                call.and_then(|c| c.rule.clone()),
                call.and_then(|c| c.risk.clone()),
            ),
        };
        let decision = [
            ("rule", rule),
            ("risk", risk),
            ("decision", call.and_then(|c| c.decision.clone())),
            ("approver", call.and_then(|c| c.approver.clone())),
            ("status", status),
            ("by", by),
            ("reason", reason),
            ("note", note),
        ]
        .iter()
        .filter_map(|(k, v)| v.as_deref().filter(|v| !v.is_empty()).map(|v| (k, v)))
        .map(|(k, v)| format!("{k}: {}", esc(v)))
        .collect::<Vec<_>>()
        .join("<br>");
        let blocked = match done {
            Some(d) if d.blocked > 0 => format!(
                "{} refused {}",
                d.blocked,
                esc(&serde_json::to_string(&d.blocked_by).unwrap_or_default())
            ),
            _ => String::new(),
        };
        let (args, target) = match event {
            Event::ApprovalRequested(a) => (Some(a.args.to_string()), a.target.as_ref()),
            _ => (
                call.map(|c| Value::Object(c.args.clone()).to_string()),
                call.and_then(|c| c.target.as_ref()),
            ),
        };
        let target = target
            .map(|t| format!("{} {:?}", t.role, t.name))
            .unwrap_or_default();
        let _ = writeln!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}<br><span class=dim>{}</span></td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{image}</td></tr>",
            record.seq,
            esc(&time(record.time_ms)),
            esc(event.tool().unwrap_or_default()),
            esc(kind),
            esc(&args.unwrap_or_default()),
            esc(&target),
            decision,
            outcome,
            blocked,
        );
    }
    let page = format!(
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">\n\
<meta name=viewport content=\"width=device-width, initial-scale=1\">\n\
<title>Airlock session {sid}</title>\n<style>{STYLE}</style></head><body>\n\
<h1>Session <code>{sid}</code></h1>\n<ul>{header}</ul>\n\
<table><thead><tr><th>seq</th><th>time (UTC)</th><th>tool / event</th><th>arguments</th><th>target</th><th>decision</th><th>outcome</th><th>blocked</th><th>screen after</th></tr></thead>\n<tbody>\n{rows}</tbody></table>\n\
<p class=dim>From the audit log of {events} events; strings are as recorded (redacted). Check the log with <code>airlock audit verify</code>.</p>\n</body></html>\n",
        sid = esc(session),
        events = events.len(),
    );
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let index = out.join("index.html");
    std::fs::write(&index, page).with_context(|| format!("writing {}", index.display()))?;
    println!("wrote {} ({} events)", index.display(), events.len());
    if altered > 0 {
        println!("{altered} stored image(s) differ from their recorded SHA-256");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1rem;color:#111}\
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:4px;vertical-align:top;text-align:left}\
code{font-size:12px;word-break:break-all}img{max-width:420px;width:100%;border:1px solid #999}\
.bad{color:#a00}.dim{color:#666}";

enum Embedded {
    Image(String),
    Altered,
    Gone,
}

// Whether `file`, a name from the log, stays inside the recordings (a path that
// leaves the directory is refused).
fn safe(file: &str) -> bool {
    !file.is_empty()
        && Path::new(file)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

// The stored image as a data: URI, if it is still the one recorded.
fn embed(data: Option<Vec<u8>>, sha256: &str) -> Embedded {
    let Some(data) = data else {
        return Embedded::Gone;
    };
    let actual: String = {
        use sha2::{Digest, Sha256};
        Sha256::digest(&data).encode_hex::<String>()
    };
    if actual != sha256 {
        return Embedded::Altered;
    }
    Embedded::Image(format!(
        "data:image/jpeg;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&data)
    ))
}

fn describe_session(change: &SessionChange) -> String {
    let mut parts = vec![change.caller.clone().unwrap_or_default()];
    for (key, value) in [
        ("isolation", &change.isolation),
        ("record", &change.record),
        ("reason", &change.reason),
        ("grant", &change.grant),
    ] {
        if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
            parts.push(format!("{key} {value}"));
        }
    }
    if let Some(names) = change.credentials.as_ref().filter(|n| !n.is_empty()) {
        parts.push(format!("credentials {}", names.join(", ")));
    }
    parts.join(", ")
}

fn time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || ms.to_string(),
        |t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string(),
    )
}

/// Escapes text for HTML element content and quoted attributes.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_from_a_page_stays_text() {
        assert_eq!(
            esc(r#"<img src=x onerror="alert('1')">&"#),
            "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;"
        );
    }
}
