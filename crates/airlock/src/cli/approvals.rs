//! `airlock approvals list|approve|deny|watch`: calls held for a human, decided from a
//! second terminal through the data dir's store (a running `serve` or `mcp` sees the
//! decision within a fraction of a second).

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use std::process::ExitCode;

use airlock_config::Config;
use airlock_store::Decided;
use anyhow::bail;

use super::audit::terminal_safe;

/// Lists approvals (pending first by default), as a table or JSON lines.
pub(crate) async fn list(config: &Config, all: bool, json: bool) -> anyhow::Result<ExitCode> {
    let store = super::vault::open_store(config).await?;
    let status = (!all).then_some(airlock_store::ApprovalStatus::Pending);
    let approvals = store.approvals(None, status).await?;
    let now = now_ms();
    for a in &approvals {
        if json {
            let line = serde_json::json!({
                "id": a.id, "status": a.status, "tenant": a.tenant, "caller": a.caller,
                "session": a.session, "tool": a.tool, "args": serde_json::from_str::<serde_json::Value>(&a.args).ok(),
                "target": a.target.as_deref().and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok()),
                "page_url": a.page_url, "rule": a.rule, "risk": a.risk,
                "created_ms": a.created_ms, "expires_ms": a.expires_ms,
                "decided_by": a.decided_by, "note": a.note,
            });
            println!("{}", super::audit::terminal_safe(&line.to_string()));
        } else {
            // The element as the snapshot names it: role and its (Debug-quoted) name,
            // so a page-controlled name cannot break the line or the terminal.
            let target = a
                .target
                .as_deref()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
                .map_or_else(
                    || "-".to_owned(),
                    |t| {
                        format!(
                            "{} {:?}",
                            t["role"].as_str().unwrap_or("element"),
                            t["name"].as_str().unwrap_or_default()
                        )
                    },
                );
            let left = (a.expires_ms - now).max(0) / 1000;
            let mut line = format!(
                "{}  {:<8}  {:<6}  {:<22}  {target}  rule {:?}  {}",
                a.id,
                a.status,
                a.risk,
                a.tool,
                a.rule,
                if a.status == airlock_store::ApprovalStatus::Pending {
                    format!("{left} s left")
                } else {
                    a.decided_by.clone().unwrap_or_default()
                }
            );
            // Where it would take the browser, its canonical host first.
            if let Some(to) = destination(&a.args, a.target.as_deref()) {
                line.push_str(&format!("  to {to:?}"));
            }
            // What a held request would do (the card's first line), or why held.
            if let Some(what) = a.detail.as_deref().and_then(|d| d.lines().next()) {
                line.push_str(&format!("  {what:?}"));
            }
            println!("{}", super::audit::terminal_safe(&line));
        }
    }
    if approvals.is_empty() && !json {
        println!("no {}approvals", if all { "" } else { "pending " });
    }
    Ok(ExitCode::SUCCESS)
}

// Where a held call would take the browser: a navigation's URL or a link's target,
// canonical host first (a homograph shows as the punycode it is).
fn destination(args: &str, target: Option<&str>) -> Option<String> {
    let parse = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap_or_default();
    let args = parse(args);
    let target = target.map(parse).unwrap_or_default();
    [&args["url"], &target["href"]]
        .into_iter()
        .find_map(|v| v.as_str())
        .map(airlock_policy::display_url)
}

/// Prints pending approvals, then every request and decision as the audit log gets
/// it (a running gateway writes it), until Ctrl-C.
pub(crate) async fn watch(config: &Config, json: bool) -> anyhow::Result<ExitCode> {
    let mut interrupted = super::audit::interrupts()?;
    let store = super::vault::open_store(config).await?;
    // Where the log ends now: what was pending is listed, what comes after is followed.
    let last = store.audit_tail(1).await?.last().map_or(0, |r| r.seq);
    list(config, false, json).await?;
    super::audit::follow(&store, last, &mut interrupted, |record| {
        if let Some(line) = approval_line(record, json) {
            println!("{line}");
        }
    })
    .await
}

// A request or decision as `watch` prints it (a JSON line with `json`); `None` for
// any other event.
fn approval_line(record: &airlock_store::AuditRecord, json: bool) -> Option<String> {
    if !matches!(
        record.kind.as_str(),
        "approval_requested" | "approval_decided"
    ) {
        return None;
    }
    if json {
        return Some(terminal_safe(&record.body));
    }
    let Ok(entry) = airlock_audit::Entry::parse(&record.body) else {
        return None;
    };
    let line = match entry.event {
        airlock_audit::Event::ApprovalRequested(a) => {
            let mut line = format!(
                "requested {}  {:<6}  {:<22}  {:?}  rule {:?}  on {:?}",
                a.approval,
                a.risk,
                a.tool,
                a.target.as_ref().map_or("-", |t| t.name.as_str()),
                a.rule,
                airlock_policy::display_url(a.page_url.as_deref().unwrap_or_default()),
            );
            // Where it would take the browser (a navigation, a link).
            let to = a.args["url"]
                .as_str()
                .or_else(|| a.target.as_ref().and_then(|t| t.href.as_deref()));
            if let Some(to) = to {
                line.push_str(&format!("  to {:?}", airlock_policy::display_url(to)));
            }
            // What a held request would do, in the card's first line.
            if let Some(what) = a.detail.as_deref().and_then(|d| d.lines().next()) {
                line.push_str(&format!("  {what:?}"));
            }
            line
        }
        airlock_audit::Event::ApprovalDecided(d) => {
            let mut line = format!("{} {}", d.status, d.approval);
            if let Some(by) = d.by {
                line.push_str(&format!("  by {by:?}"));
            }
            if let Some(note) = d.note {
                line.push_str(&format!("  {note:?}"));
            }
            line
        }
        _ => return None,
    };
    Some(terminal_safe(&line))
}

/// Approves or denies one approval; the decider is the OS user.
pub(crate) async fn decide(
    config: &Config,
    id: &str,
    approve: bool,
    note: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let store = super::vault::open_store(config).await?;
    let by = super::os_user();
    match store
        .decide_approval(id, approve, &by, note, now_ms())
        .await?
    {
        Decided::Done => {
            println!("{} {id}", if approve { "approved" } else { "denied" });
            Ok(ExitCode::SUCCESS)
        }
        Decided::NotFound => bail!("no approval has the id {id}"),
        Decided::Closed(status) => bail!("{id} is {status} already; nothing was changed"),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
