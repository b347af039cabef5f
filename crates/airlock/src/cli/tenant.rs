//! `airlock tenant …` and `airlock key …`: who may call the gateway, and as what. A
//! key is printed once, at creation; the store keeps its hash.

#![allow(clippy::print_stdout, clippy::print_stderr)] // The CLI's output is its product.

use airlock_config::Config;
use airlock_core::Role;
use airlock_vault::apikey;
use anyhow::bail;

/// Creates a tenant.
pub(crate) async fn create_tenant(config: &Config, name: &str) -> anyhow::Result<()> {
    apikey::valid_tenant(name)?;
    let store = super::vault::open_store(config).await?;
    if !store.create_tenant(name, now_ms()).await? {
        bail!("tenant {name} exists already");
    }
    record(&store, name, "tenant_create", serde_json::json!({})).await?;
    println!("created tenant {name}");
    Ok(())
}

/// Lists tenants.
pub(crate) async fn list_tenants(config: &Config) -> anyhow::Result<()> {
    let store = super::vault::open_store(config).await?;
    let tenants = store.tenants().await?;
    if tenants.is_empty() {
        println!("no tenants (the configured api_key acts in `default`)");
    }
    for tenant in tenants {
        println!("{}", tenant.name);
    }
    Ok(())
}

/// Creates a key and prints it once.
pub(crate) async fn create_key(
    config: &Config,
    tenant: &str,
    role: &str,
    name: Option<&str>,
) -> anyhow::Result<()> {
    let Some(role) = Role::parse(role) else {
        bail!("--role must be observe, act, operate or admin, not {role:?}");
    };
    let store = super::vault::open_store(config).await?;
    // The default tenant exists whether or not anyone created it.
    if tenant == "default" {
        store.create_tenant("default", now_ms()).await?;
    }
    let first = !store.has_live_keys().await?;
    let (key, record) = match apikey::create(&store, tenant, role, name, now_ms()).await {
        Err(airlock_vault::VaultError::NotFound(_)) => {
            bail!("no tenant {tenant}: create it first with `airlock tenant create {tenant}`")
        }
        other => other?,
    };
    record_key(
        &store,
        &record.tenant,
        "key_create",
        &record.id,
        role.as_str(),
    )
    .await?;
    eprintln!(
        "created key {} for tenant {} with role {} (shown once; the store keeps only its hash)",
        record.id,
        record.tenant,
        role.as_str()
    );
    if first {
        eprintln!(
            "note: this is the data dir's first API key, so from now on every request to the gateway (/mcp, /api/v1, /metrics, the console) must carry a key (the configured api_key and admin_key keep working)"
        );
    }
    println!("{}", key.expose());
    Ok(())
}

/// Lists keys (never the keys themselves).
pub(crate) async fn list_keys(config: &Config, tenant: Option<&str>) -> anyhow::Result<()> {
    let store = super::vault::open_store(config).await?;
    let keys = store.keys(tenant).await?;
    if keys.is_empty() {
        println!("no keys");
    }
    for key in keys {
        println!(
            "{}  {:<12}  {:<8}  {:<16}  {}",
            key.id,
            key.tenant,
            key.role,
            key.name.as_deref().unwrap_or("-"),
            if key.revoked_ms.is_some() {
                "revoked"
            } else {
                "active"
            }
        );
    }
    Ok(())
}

/// Revokes a key: the next request with it is refused.
pub(crate) async fn revoke_key(config: &Config, id: &str) -> anyhow::Result<()> {
    let store = super::vault::open_store(config).await?;
    let key = store
        .keys(None)
        .await?
        .into_iter()
        .find(|k| k.id == id && k.revoked_ms.is_none());
    if !store.revoke_key(id, now_ms()).await? {
        bail!("no active key {id}");
    }
    if let Some(key) = key {
        record_key(&store, &key.tenant, "key_revoke", id, &key.role).await?;
    }
    println!("revoked {id}");
    Ok(())
}

// Who may call the gateway changed: on the audit record (ids and roles, never a key).
async fn record_key(
    store: &airlock_store::Store,
    tenant: &str,
    action: &str,
    id: &str,
    role: &str,
) -> anyhow::Result<()> {
    record(
        store,
        tenant,
        action,
        serde_json::json!({ "key": id, "role": role }),
    )
    .await
}

async fn record(
    store: &airlock_store::Store,
    tenant: &str,
    action: &str,
    detail: serde_json::Value,
) -> anyhow::Result<()> {
    let serde_json::Value::Object(detail) = detail else {
        bail!("an audit detail is an object");
    };
    let change = airlock_audit::Change {
        action: action.to_owned(),
        by: super::os_user(),
        detail,
    };
    let entry = airlock_audit::Entry::now(tenant, airlock_audit::Event::AccessChange(change));
    use anyhow::Context as _;
    store
        .append_event(&entry)
        .await
        .context("the change was made, but the audit log could not record it")?;
    Ok(())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
