//! `airlock approvals list|approve|deny`: calls held for a human, decided from a
//! second terminal through the data dir's store (a running `serve` or `mcp` sees the
//! decision within a fraction of a second).

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use std::process::ExitCode;

use airlock_config::Config;
use airlock_store::Decided;
use anyhow::bail;

/// Lists approvals (pending first by default), as a table or JSON lines.
pub(crate) async fn list(config: &Config, all: bool, json: bool) -> anyhow::Result<ExitCode> {
    let store = super::vault::open_store(config).await?;
    let status = (!all).then_some("pending");
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
            println!("{line}");
        } else {
            let target = a.target.as_deref().unwrap_or("-");
            let left = (a.expires_ms - now).max(0) / 1000;
            // Debug-quoted: a page-controlled name cannot break the line or the terminal.
            println!(
                "{}  {:<8}  {:<6}  {:<22}  {target:?}  rule {:?}  {}",
                a.id,
                a.status,
                a.risk,
                a.tool,
                a.rule,
                if a.status == "pending" {
                    format!("{left} s left")
                } else {
                    a.decided_by.clone().unwrap_or_default()
                }
            );
        }
    }
    if approvals.is_empty() && !json {
        println!("no {}approvals", if all { "" } else { "pending " });
    }
    Ok(ExitCode::SUCCESS)
}

/// Approves or denies one approval; the decider is the OS user.
pub(crate) async fn decide(
    config: &Config,
    id: &str,
    approve: bool,
    note: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let store = super::vault::open_store(config).await?;
    let by = format!(
        "cli:{}",
        std::env::var("USER")
            .or_else(|_| std::env::var("LOGNAME"))
            .unwrap_or_else(|_| "unknown".to_owned())
    );
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
