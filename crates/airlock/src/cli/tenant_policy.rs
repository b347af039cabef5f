//! `airlock policy show|set --tenant T`: a tenant's own policy in the store, which
//! narrows the operator's config for the tenant's sessions (the same as `GET/PUT
//! /api/v1/policy`); and the config `airlock policy explain --tenant T` judges by.

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use airlock_config::{Config, TenantPolicy};
use anyhow::{Context as _, bail};

/// Prints `tenant`'s newest policy: its version, hash and body (JSON).
pub(crate) async fn show(config: &Config, tenant: &str) -> anyhow::Result<()> {
    let store = super::vault::open_store(config).await?;
    match store.tenant_policy(tenant, None).await? {
        None => println!(
            "tenant {tenant} has no policy of its own: its sessions run under the operator's config"
        ),
        Some(record) => {
            println!("version:  {}", record.version);
            println!("hash:     {}", record.hash);
            println!("set by:   {}", record.set_by);
            let body: serde_json::Value = serde_json::from_str(&record.body)?;
            println!("{}", serde_json::to_string_pretty(&body)?);
        }
    }
    Ok(())
}

/// Checks the policy in `file` (TOML, or JSON) against the operator's config and
/// stores it as `tenant`'s next version, on the record.
pub(crate) async fn set(
    config: &Config,
    tenant: &str,
    file: &std::path::Path,
) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let policy = TenantPolicy::parse(&text)?;
    if let Some(unknown) = policy.unknown_tool(|name| airlock_tools::find(name).is_some()) {
        return Err(unknown.into());
    }
    // Refused before anything is stored: a bad key names itself.
    policy.narrow(
        &config.policy,
        &config.approvals.rules,
        &config.flow,
        config.approvals.timeout,
    )?;
    let store = super::vault::open_store(config).await?;
    if !store.tenants().await?.iter().any(|t| t.name == tenant) {
        bail!("no tenant is named {tenant} (`airlock tenant create {tenant}`)");
    }
    let hash = policy.hash();
    let by = super::os_user();
    let version = store
        .set_tenant_policy(tenant, &hash, &policy.to_json(), &by, now_ms())
        .await?;
    let entry = airlock_audit::Entry::now(
        tenant,
        airlock_audit::Event::PolicyChange(airlock_audit::PolicyChange {
            by,
            version: u64::try_from(version).unwrap_or(0),
            hash: hash.clone(),
        }),
    );
    store
        .append_event(&entry)
        .await
        .context("the policy was stored, but the audit log could not record it")?;
    println!(
        "tenant {tenant}: policy version {version} ({hash}); sessions opened from now on run under it"
    );
    Ok(())
}

/// `config` as `tenant`'s sessions are judged: narrowed by its newest policy, and
/// its origin sets (a layer judged after the operator's, not in place of them).
pub(crate) async fn narrowed(
    config: &Config,
    tenant: &str,
) -> anyhow::Result<(Config, Option<airlock_config::OriginSets>)> {
    let store = super::vault::open_store(config).await?;
    let Some(record) = store.tenant_policy(tenant, None).await? else {
        return Ok((config.clone(), None));
    };
    let policy = TenantPolicy::parse(&record.body)?;
    let narrowed = policy.narrow(
        &config.policy,
        &config.approvals.rules,
        &config.flow,
        config.approvals.timeout,
    )?;
    let mut config = config.clone();
    config.policy = narrowed.policy;
    config.approvals.rules = narrowed.rules;
    config.flow = narrowed.flow;
    config.approvals.timeout = narrowed.approval_timeout;
    Ok((config, narrowed.origins))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
