//! `airlock vault …` and `airlock grant …`: credentials in, never out.

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use std::io::BufRead as _;
use std::path::Path;

use airlock_config::{Config, EnvSource as _, ProcessEnv, StoreLocation, vars};
use airlock_vault::{Cookie, Fields, Header, KeySource, Secret, StorageItem, Store, Vault, grant};
use anyhow::{Context as _, bail};
use serde::Deserialize;
use zeroize::Zeroizing;

/// Name of the SQLite database in the data dir.
pub(crate) const DB_FILE: &str = "airlock.db";
/// Locked (shared) by every running gateway of a data dir, so a key rotation can tell
/// it would pull the key from under one.
const LOCK_FILE: &str = "airlock.lock";

/// Marks the data dir as used by a running gateway until the returned file is
/// dropped. Waits while a key rotation holds it.
pub(crate) fn hold_data_dir(dir: &Path) -> anyhow::Result<std::fs::File> {
    let file = lock_file(dir)?;
    file.lock_shared()
        .with_context(|| format!("locking {}", dir.join(LOCK_FILE).display()))?;
    Ok(file)
}

/// Creates the data dir, readable by this user only (0700): the browser worker's
/// user, and everyone else, cannot list or open the store and keys in it. An
/// existing one of this user's that others may enter is closed to them (said once on
/// stderr); one of another user's is left as it is (`doctor` says so).
pub(crate) fn create_data_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    if let Ok(meta) = std::fs::metadata(dir)
        && meta.is_dir()
    {
        let mine = meta.uid() == nix::unistd::geteuid().as_raw();
        if mine && meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            tracing::warn!(
                data_dir = %dir.display(),
                was = format!("{:o}", meta.mode() & 0o777),
                "the data dir was open to other users; it is now readable by its owner only (0700)"
            );
        }
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn lock_file(dir: &Path) -> anyhow::Result<std::fs::File> {
    create_data_dir(dir).with_context(|| format!("creating the data dir {}", dir.display()))?;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(LOCK_FILE))
        .with_context(|| format!("opening {}", dir.join(LOCK_FILE).display()))
}

/// Opens the store and vault of the configured data dir.
/// The vault of `config`'s data dir, saying on stderr which one it is: a vault
/// command and a server with different data dirs would otherwise use two vaults
/// without a word.
async fn open_for_cli(config: &Config) -> anyhow::Result<(Vault, KeySource)> {
    let opened = open_vault(config).await?;
    #[allow(clippy::print_stderr)] // Which vault, beside the command's own output.
    {
        eprintln!(
            "vault: {} (key: {})",
            config.data_dir.join(DB_FILE).display(),
            opened.1
        );
    }
    Ok(opened)
}

/// Like `open_for_cli`, for commands that only read: a data dir with no vault yet
/// (no key in the environment, no key file) is reported, not created.
async fn open_existing_for_cli(config: &Config) -> anyhow::Result<Option<Vault>> {
    let dir = &config.data_dir;
    if ProcessEnv.get(vars::MASTER_KEY).is_none() && !dir.join(airlock_vault::KEY_FILE).exists() {
        println!(
            "no vault in {} yet (no {} there, and {} is not set)",
            dir.display(),
            airlock_vault::KEY_FILE,
            vars::MASTER_KEY
        );
        return Ok(None);
    }
    Ok(Some(open_for_cli(config).await?.0))
}

/// The store: SQLite under the data dir, or the Postgres server every replica shares
/// (`[store] url`). Built here, once per process, and lent to the vault and the
/// gateway. Errors name where it points, never the URL (it may hold a password).
pub(crate) async fn open_store(config: &Config) -> anyhow::Result<Store> {
    let dir = &config.data_dir;
    create_data_dir(dir).with_context(|| format!("creating the data dir {}", dir.display()))?;
    match &config.store {
        StoreLocation::Sqlite => Store::open_sqlite(&dir.join(DB_FILE))
            .await
            .with_context(|| format!("opening {}", dir.join(DB_FILE).display())),
        StoreLocation::Postgres(url) => {
            let owner = config.store_owner.as_ref();
            Store::open_postgres_as(url.expose(), owner.map(|o| o.expose()))
                .await
                .map_err(|e| {
                    let said = url.scrub(&e.to_string());
                    let said = owner.map_or(said.clone(), |o| o.scrub(&said));
                    anyhow::anyhow!("opening the store at {}: {said}", url.location())
                })
        }
    }
}

pub(crate) async fn open_vault(config: &Config) -> anyhow::Result<(Vault, KeySource)> {
    open_vault_in(config, open_store(config).await?).await
}

pub(crate) async fn open_vault_in(
    config: &Config,
    store: Store,
) -> anyhow::Result<(Vault, KeySource)> {
    let dir = &config.data_dir;
    let env_key = Zeroizing::new(ProcessEnv.get(vars::MASTER_KEY));
    let (vault, source) = Vault::open_in(store, dir, env_key.as_deref())
        .await
        .map_err(|e| anyhow::anyhow!("{e} (key: {})", key_hint(dir, env_key.is_some())))?;
    Ok((vault, source))
}

fn key_hint(dir: &Path, from_env: bool) -> String {
    if from_env {
        vars::MASTER_KEY.to_owned()
    } else {
        dir.join(airlock_vault::KEY_FILE).display().to_string()
    }
}

/// Values a `vault set` reads from stdin, one line each, in this order.
pub(crate) struct StdinFields {
    pub(crate) password: bool,
    pub(crate) totp: bool,
    pub(crate) header: Option<String>,
}

fn read_stdin_line(what: &str) -> anyhow::Result<Zeroizing<String>> {
    let mut line = Zeroizing::new(String::new());
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .with_context(|| format!("reading the {what} from stdin"))?;
    let value = Zeroizing::new(line.trim_end_matches(['\r', '\n']).to_owned());
    if value.is_empty() {
        bail!("no {what} on stdin");
    }
    Ok(value)
}

/// `vault set`: adds or replaces fields of a secret (others are kept).
pub(crate) async fn set(
    config: &Config,
    tenant: &str,
    name: &str,
    origins: Vec<String>,
    username: Option<String>,
    stdin: StdinFields,
) -> anyhow::Result<()> {
    let mut fields = Fields::default();
    fields.username = username;
    if stdin.password {
        fields.password = Some(read_stdin_line("password")?.to_string());
    }
    if stdin.totp {
        fields.totp = Some(read_stdin_line("TOTP seed")?.to_string());
    }
    if let Some(header) = stdin.header {
        let value = read_stdin_line("header value")?;
        fields.headers.push(Header {
            name: header,
            value: value.to_string(),
        });
    }
    store_fields(config, tenant, name, origins, fields, "set").await
}

/// Puts a change made from the CLI on the audit record: what was done, to which
/// names, by which OS user; never a value.
pub(crate) async fn record_change(
    store: &Store,
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
    let entry = airlock_audit::Entry::now(tenant, airlock_audit::Event::VaultChange(change));
    store
        .append_event(&entry)
        .await
        .context("the change was made, but the audit log could not record it")?;
    Ok(())
}

async fn store_fields(
    config: &Config,
    tenant: &str,
    name: &str,
    origins: Vec<String>,
    fields: Fields,
    action: &str,
) -> anyhow::Result<()> {
    let (vault, _) = open_for_cli(config).await?;
    let existing = match vault.get(tenant, name).await {
        Ok(secret) => Some(secret),
        Err(airlock_vault::VaultError::NotFound(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let secret = match existing {
        Some(mut secret) => {
            secret.fields.merge(fields);
            if !origins.is_empty() {
                secret.origins = origins;
            }
            secret
        }
        None => {
            if origins.is_empty() {
                bail!("a new secret needs --origin (where it may be used)");
            }
            Secret {
                tenant: tenant.to_owned(),
                name: name.to_owned(),
                origins,
                fields,
            }
        }
    };
    vault.set(&secret).await?;
    record_change(
        vault.store(),
        tenant,
        action,
        serde_json::json!({
            "name": name,
            "origins": secret.origins,
            "fields": secret.fields.present(),
        }),
    )
    .await?;
    println!(
        "stored `{name}` for {} (fields: {})",
        secret
            .origins
            .iter()
            .map(|o| airlock_vault::canonical_origin(o).unwrap_or_else(|_| o.clone()))
            .collect::<Vec<_>>()
            .join(", "),
        secret.fields.present().join(", ")
    );
    vault.store().close().await;
    Ok(())
}

/// `vault list`: names, origins, fields present, times; never a value.
pub(crate) async fn list(config: &Config, tenant: &str) -> anyhow::Result<()> {
    let Some(vault) = open_existing_for_cli(config).await? else {
        return Ok(());
    };
    let secrets = vault.list(tenant).await?;
    if secrets.is_empty() {
        println!("no secrets for tenant `{tenant}`");
    }
    for s in secrets {
        println!(
            "{}\torigins: {}\tfields: {}\tcreated: {}\tupdated: {}",
            s.name,
            s.origins.join(","),
            s.fields.join(","),
            date(s.created_at),
            date(s.updated_at)
        );
    }
    vault.store().close().await;
    Ok(())
}

/// `vault rm`.
pub(crate) async fn remove(config: &Config, tenant: &str, name: &str) -> anyhow::Result<()> {
    let (vault, _) = open_for_cli(config).await?;
    let removed = vault.remove(tenant, name).await?;
    if removed {
        record_change(
            vault.store(),
            tenant,
            "rm",
            serde_json::json!({ "name": name }),
        )
        .await?;
    }
    vault.store().close().await;
    if !removed {
        bail!("no secret named `{name}` for tenant `{tenant}`");
    }
    println!("removed `{name}`");
    Ok(())
}

/// `vault rotate-key`: every record re-encrypted under a new key, atomically.
pub(crate) async fn rotate(config: &Config) -> anyhow::Result<()> {
    // A running gateway keeps the old key: every credential would fail there until
    // it restarted, with a message that reads like tampering. Refuse instead.
    let lock = lock_file(&config.data_dir)?;
    if let Err(e) = lock.try_lock() {
        return match e {
            std::fs::TryLockError::WouldBlock => bail!(
                "a gateway (airlock serve or airlock mcp) is running on {}; stop it, rotate, then start it again",
                config.data_dir.display()
            ),
            std::fs::TryLockError::Error(e) => Err(e).context("locking the data dir"),
        };
    }
    let (vault, source) = open_for_cli(config).await?;
    let store = vault.store().clone();
    match source {
        KeySource::File(_) => {
            let (_, n) = vault.rotate_key_file(&config.data_dir).await?;
            record_change(
                &store,
                "default",
                "rotate-key",
                serde_json::json!({ "secrets": n }),
            )
            .await?;
            println!(
                "re-encrypted {n} secret(s) under a new key in {}",
                config.data_dir.join(airlock_vault::KEY_FILE).display()
            );
        }
        KeySource::Env => {
            let new = Zeroizing::new(ProcessEnv.get(vars::NEW_MASTER_KEY).with_context(|| {
                format!(
                    "the key comes from {}; put the new one in {} (base64 of 32 bytes)",
                    vars::MASTER_KEY,
                    vars::NEW_MASTER_KEY
                )
            })?);
            let key = airlock_vault::MasterKey::from_base64(&new)?;
            let (_, n) = vault.rotate(key).await?;
            record_change(
                &store,
                "default",
                "rotate-key",
                serde_json::json!({ "secrets": n }),
            )
            .await?;
            println!(
                "re-encrypted {n} secret(s); set {} to the value of {} from now on",
                vars::MASTER_KEY,
                vars::NEW_MASTER_KEY
            );
        }
    }
    store.close().await;
    Ok(())
}

/// Playwright's `storageState` file.
#[derive(Deserialize)]
struct StorageState {
    #[serde(default)]
    cookies: Vec<Cookie>,
    #[serde(default)]
    origins: Vec<StateOrigin>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateOrigin {
    origin: String,
    #[serde(default)]
    local_storage: Vec<StateItem>,
}

#[derive(Deserialize, zeroize::Zeroize, zeroize::ZeroizeOnDrop)]
struct StateItem {
    name: String,
    value: String,
}

/// Parses Playwright's storage state: cookies and per-origin localStorage.
pub(crate) fn parse_storage_state(text: &str) -> anyhow::Result<Fields> {
    let state: StorageState = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .filter(serde_json::Value::is_object)
        .and_then(|v| serde_json::from_value(v).ok())
        .context("not a Playwright storage-state file (a JSON object with cookies and origins)")?;
    if state.cookies.is_empty() && state.origins.is_empty() {
        bail!("the storage-state file has no cookies and no origins");
    }
    let mut fields = Fields::default();
    for mut cookie in state.cookies {
        // Playwright writes -1 for a session cookie.
        if cookie.expires.is_some_and(|e| e < 0.0) {
            cookie.expires = None;
        }
        fields.cookies.push(cookie);
    }
    for origin in state.origins {
        for item in origin.local_storage {
            fields.local_storage.push(StorageItem {
                origin: origin.origin.clone(),
                key: item.name.clone(),
                value: item.value.clone(),
            });
        }
    }
    Ok(fields)
}

/// Parses a Netscape `cookies.txt` (curl, browser extensions).
pub(crate) fn parse_cookies_txt(text: &str) -> anyhow::Result<Fields> {
    let mut fields = Fields::default();
    for (i, line) in text.lines().enumerate() {
        let (http_only, line) = match line.strip_prefix("#HttpOnly_") {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.split('\t').collect();
        if parts.len() != 7 {
            bail!(
                "cookies.txt line {}: expected 7 tab-separated fields, found {}",
                i + 1,
                parts.len()
            );
        }
        let expires: f64 = parts[4].parse().unwrap_or(0.0);
        fields.cookies.push(Cookie {
            name: parts[5].to_owned(),
            value: parts[6].to_owned(),
            domain: parts[0].to_owned(),
            path: parts[2].to_owned(),
            expires: (expires > 0.0).then_some(expires),
            http_only,
            secure: parts[3].eq_ignore_ascii_case("TRUE"),
            same_site: None,
        });
    }
    if fields.cookies.is_empty() {
        bail!("no cookies in the cookies.txt file");
    }
    Ok(fields)
}

/// `vault import`.
pub(crate) async fn import(
    config: &Config,
    tenant: &str,
    name: &str,
    origins: Vec<String>,
    storage_state: Option<&Path>,
    cookies_txt: Option<&Path>,
) -> anyhow::Result<()> {
    let fields = match (storage_state, cookies_txt) {
        (Some(path), None) => parse_storage_state(&Zeroizing::new(
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        ))?,
        (None, Some(path)) => parse_cookies_txt(&Zeroizing::new(
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        ))?,
        _ => bail!("give exactly one of --storage-state and --cookies-txt"),
    };
    store_fields(config, tenant, name, origins, fields, "import").await
}

/// `grant create`: prints the token once.
pub(crate) async fn grant_create(
    config: &Config,
    tenant: &str,
    domains: &[String],
    ttl: &str,
    reusable: bool,
) -> anyhow::Result<()> {
    let ttl = grant::parse_ttl(ttl)?;
    let (vault, _) = open_for_cli(config).await?;
    let (token, record) = grant::create(vault.store(), tenant, domains, ttl, reusable).await?;
    record_change(
        vault.store(),
        tenant,
        "grant-create",
        serde_json::json!({
            "grant": record.id, "domains": record.domains,
            "expires_at": record.expires_at, "reusable": reusable,
        }),
    )
    .await?;
    println!("{}", token.expose());
    eprintln_note(&format!(
        "grant {} for {} expires at {} ({}); the token above is shown only now",
        record.id,
        record.domains.join(","),
        date(record.expires_at),
        if reusable { "reusable" } else { "single use" }
    ));
    vault.store().close().await;
    Ok(())
}

// A human note on stderr, so stdout carries only the token.
#[allow(clippy::print_stderr)]
fn eprintln_note(text: &str) {
    eprintln!("{text}");
}

/// `grant list`.
pub(crate) async fn grant_list(config: &Config, tenant: &str) -> anyhow::Result<()> {
    let Some(vault) = open_existing_for_cli(config).await? else {
        return Ok(());
    };
    for g in vault.store().grants(tenant).await? {
        let now = chrono::Utc::now().timestamp();
        let state = if g.revoked_at.is_some() {
            "revoked"
        } else if g.used_at.is_some() && !g.reusable {
            "used"
        } else if g.expires_at <= now {
            "expired"
        } else {
            "live"
        };
        println!(
            "{}\tdomains: {}\texpires: {}\t{}\t{state}",
            g.id,
            g.domains.join(","),
            date(g.expires_at),
            if g.reusable { "reusable" } else { "single-use" }
        );
    }
    vault.store().close().await;
    Ok(())
}

// A stored time (Unix seconds) as a date an operator reads.
pub(crate) fn date(seconds: i64) -> String {
    chrono::DateTime::from_timestamp(seconds, 0).map_or_else(
        || seconds.to_string(),
        |d| d.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
    )
}

/// `grant revoke`.
pub(crate) async fn grant_revoke(config: &Config, tenant: &str, id: &str) -> anyhow::Result<()> {
    let (vault, _) = open_for_cli(config).await?;
    let revoked = grant::revoke(vault.store(), tenant, id).await?;
    if revoked {
        record_change(
            vault.store(),
            tenant,
            "grant-revoke",
            serde_json::json!({ "grant": id }),
        )
        .await?;
    }
    vault.store().close().await;
    if !revoked {
        bail!("no live grant `{id}` for tenant `{tenant}`");
    }
    println!("revoked {id}");
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn playwright_storage_state_becomes_cookies_and_local_storage() {
        let fields = parse_storage_state(
            r#"{"cookies":[{"name":"sid","value":"abcdef123","domain":"app.example.com","path":"/","expires":-1,"httpOnly":true,"secure":false,"sameSite":"Lax"}],
                "origins":[{"origin":"http://app.example.com","localStorage":[{"name":"token","value":"tok-123456"}]}]}"#,
        )
        .unwrap();
        assert_eq!(fields.cookies.len(), 1);
        assert!(fields.cookies[0].http_only && fields.cookies[0].expires.is_none());
        assert_eq!(fields.cookies[0].same_site.as_deref(), Some("Lax"));
        assert_eq!(fields.local_storage[0].key, "token");
        assert!(parse_storage_state("[]").is_err());
    }

    #[test]
    fn cookies_txt_lines_parse() {
        let fields = parse_cookies_txt(
            "# Netscape HTTP Cookie File\n#HttpOnly_.example.com\tTRUE\t/\tTRUE\t0\tsid\tsecret-value\napp.example.com\tFALSE\t/x\tFALSE\t1999999999\tpref\tdark-mode\n",
        )
        .unwrap();
        assert_eq!(fields.cookies.len(), 2);
        assert!(fields.cookies[0].http_only && fields.cookies[0].secure);
        assert_eq!(fields.cookies[1].expires, Some(1_999_999_999.0));
        assert!(parse_cookies_txt("bad line").is_err());
    }
}
