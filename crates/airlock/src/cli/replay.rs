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
    let recordings = config.data_dir.join(RECORDINGS_DIR);
    let mut altered = 0;
    let mut rows = String::new();
    let mut header = String::new();
    for record in &events {
        let event: Value = serde_json::from_str(&record.body).unwrap_or(Value::Null);
        let kind = text(&event, "kind");
        if kind == "session_open" || kind == "session_close" {
            let _ = write!(
                header,
                "<li>{} {} — {}</li>",
                esc(&time(record.time_ms)),
                esc(&kind),
                esc(&describe_session(&event)),
            );
            continue;
        }
        let image = match event.get("recording") {
            Some(r) if r.get("file").is_some() => {
                match embed(&recordings, &text(r, "file"), &text(r, "sha256")) {
                    Embedded::Image(uri) => {
                        format!("<img alt=\"step {}\" src=\"{uri}\">", r["step"])
                    }
                    Embedded::Altered => {
                        altered += 1;
                        "<p class=bad>image altered since it was recorded (SHA-256 differs); not shown</p>".to_owned()
                    }
                    Embedded::Gone => "<p class=dim>image pruned or missing</p>".to_owned(),
                }
            }
            Some(r) if r.get("error").is_some() => {
                format!("<p class=bad>not recorded: {}</p>", esc(&text(r, "error")))
            }
            _ => String::new(),
        };
        let outcome = match event.get("error").and_then(Value::as_str) {
            Some(code) => format!("<span class=bad>{}</span>", esc(code)),
            None if kind == "tool_call" => "ok".to_owned(),
            None => String::new(),
        };
        let decision = [
            ("rule", text(&event, "rule")),
            ("risk", text(&event, "risk")),
            ("decision", text(&event, "decision")),
            ("approver", text(&event, "approver")),
            ("status", text(&event, "status")),
            ("by", text(&event, "by")),
            ("reason", text(&event, "reason")),
            ("note", text(&event, "note")),
        ]
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}: {}", esc(v)))
        .collect::<Vec<_>>()
        .join("<br>");
        let blocked = match event.get("blocked").and_then(Value::as_u64) {
            Some(n) if n > 0 => format!(
                "{n} refused {}",
                esc(&event
                    .get("blocked_by")
                    .map(Value::to_string)
                    .unwrap_or_default())
            ),
            _ => String::new(),
        };
        let target = event
            .get("target")
            .filter(|t| !t.is_null())
            .map(|t| format!("{} {:?}", text(t, "role"), text(t, "name")))
            .unwrap_or_default();
        let _ = writeln!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}<br><span class=dim>{}</span></td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{image}</td></tr>",
            record.seq,
            esc(&time(record.time_ms)),
            esc(&text(&event, "tool")),
            esc(&kind),
            esc(&event.get("args").map(Value::to_string).unwrap_or_default()),
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

// The stored image as a data: URI, if it is still the one recorded. `file` comes
// from the log: a path that leaves the recordings directory is refused.
fn embed(recordings: &Path, file: &str, sha256: &str) -> Embedded {
    let safe = !file.is_empty()
        && Path::new(file)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !safe {
        return Embedded::Gone;
    }
    let Ok(data) = std::fs::read(recordings.join(file)) else {
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

fn describe_session(event: &Value) -> String {
    let mut parts = vec![text(event, "caller")];
    for key in ["isolation", "record", "reason", "grant"] {
        let value = text(event, key);
        if !value.is_empty() {
            parts.push(format!("{key} {value}"));
        }
    }
    if let Some(names) = event.get("credentials").and_then(Value::as_array)
        && !names.is_empty()
    {
        parts.push(format!(
            "credentials {}",
            names
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    parts.join(", ")
}

fn text(value: &Value, key: &str) -> String {
    match value.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
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
