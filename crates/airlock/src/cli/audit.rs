//! `airlock audit verify|tail`: the audit log of the data dir, checked and read.

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use std::process::ExitCode;

use airlock_config::Config;

/// Rows read from the store at a time.
const PAGE: u32 = 10_000;

/// Exit 0 when the log is intact, 1 at the first thing wrong (named).
pub(crate) async fn verify(config: &Config) -> anyhow::Result<ExitCode> {
    let store = super::vault::open_store(config).await?;
    let mut rows = Vec::new();
    let mut after = 0;
    loop {
        let page = store.audit_events(after, PAGE).await?;
        let Some(last) = page.last() else {
            break;
        };
        after = last.seq;
        rows.extend(page.iter().map(airlock_store::AuditRecord::row));
    }
    match airlock_audit::verify(&rows, &[]) {
        Ok(verified) => {
            let root: String = verified.root.iter().map(|b| format!("{b:02x}")).collect();
            println!("ok: {} events, tree root {root}", verified.events);
            Ok(ExitCode::SUCCESS)
        }
        Err(broken) => {
            println!("broken: {broken}");
            Ok(ExitCode::from(1))
        }
    }
}

/// The last `n` events, one canonical JSON line each: a page's title or name cannot
/// start a line or send an escape sequence (control characters stay escaped).
pub(crate) async fn tail(config: &Config, n: u32) -> anyhow::Result<ExitCode> {
    let store = super::vault::open_store(config).await?;
    for record in store.audit_tail(n).await? {
        println!("{}", record.body);
    }
    Ok(ExitCode::SUCCESS)
}
