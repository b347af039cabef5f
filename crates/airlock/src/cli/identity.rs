//! `airlock identity create|rotate|show`: a tenant's Web Bot Auth signing keys. The
//! private key is made and sealed in the vault and never printed; what a site sees
//! (the key id, the `Signature-Agent` URL, the directory) is.

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use airlock_config::Config;
use clap::Subcommand;

use super::audit::terminal_safe;

/// What `airlock identity` does.
#[derive(Debug, Subcommand)]
pub(crate) enum IdentityCommand {
    /// Makes the tenant's signing key (refused when it has one: rotate it).
    Create,
    /// Makes a new signing key; the old one stays listed in the directory until
    /// the signatures it made have expired.
    Rotate,
    /// Makes an Ed25519 private key the operator brings (32 bytes, base64 or
    /// base64url, in a file) the tenant's signing key: moving a deployment's
    /// identity, not sharing one key between agents.
    Import {
        /// The file holding the key.
        #[arg(long)]
        key_file: std::path::PathBuf,
        /// Retire the active key (else refused when there is one).
        #[arg(long)]
        rotate: bool,
    },
    /// The tenant's keys (active and still listed) and where sites find them.
    Show {
        /// One JSON object a line.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn run(
    config: &Config,
    tenant: &str,
    command: IdentityCommand,
) -> anyhow::Result<()> {
    let (vault, _) = super::vault::open_vault(config).await?;
    let made = match &command {
        IdentityCommand::Create => Some(("identity_create", vault.create_identity(tenant).await?)),
        IdentityCommand::Rotate => Some(("identity_rotate", vault.rotate_identity(tenant).await?)),
        IdentityCommand::Import { key_file, rotate } => {
            let seed = read_seed(key_file)?;
            Some((
                "identity_import",
                vault.import_identity(tenant, &seed, *rotate).await?,
            ))
        }
        IdentityCommand::Show { .. } => None,
    };
    if let Some((action, key)) = &made {
        super::vault::record_change(
            vault.store(),
            tenant,
            action,
            serde_json::json!({ "kid": key.kid }),
        )
        .await?;
        println!("signing key {} is active for tenant `{tenant}`", key.kid);
    }
    let keep = airlock_gateway::keep_retired(&config.identity);
    let keys = vault.identity_keys(tenant, keep).await?;
    let agent = config
        .identity
        .agent_url
        .as_deref()
        .map(|url| airlock_gateway::agent_of(url, tenant));
    if let IdentityCommand::Show { json: true } = command {
        for key in &keys {
            let value = serde_json::json!({
                "kid": key.kid, "jwk": key.jwk(), "created_ms": key.created_ms,
                "retired_ms": key.retired_ms,
                "listed_until_ms": key.retired_ms.map(|at| at + keep.as_millis() as i64),
                "signature_agent": agent.as_ref().map(|a| a.url.clone()),
            });
            println!("{}", terminal_safe(&value.to_string()));
        }
        return Ok(());
    }
    for key in &keys {
        let state = match key.retired_ms {
            None => "active".to_owned(),
            Some(at) => format!(
                "retired, listed until {}",
                super::vault::date((at + keep.as_millis() as i64) / 1000)
            ),
        };
        println!(
            "{}  {state}  made {}",
            key.kid,
            super::vault::date(key.created_ms / 1000)
        );
    }
    match (&agent, config.identity.sign) {
        (Some(agent), sign) => {
            let directory = match agent.kind {
                None => format!("{}{}", agent.url, airlock_vault::webbotauth::DIRECTORY_PATH),
                Some(_) => agent.url.clone(),
            };
            println!("sites find these keys at {directory}");
            if !sign {
                println!("requests are not signed yet: set [identity] sign = true");
            }
        }
        (None, _) => println!(
            "sites find these keys at the address `airlock serve` listens on, {}; set [server] public_url (or [identity] agent_url) to name it",
            airlock_vault::webbotauth::DIRECTORY_PATH
        ),
    }
    Ok(())
}

// A 32-byte Ed25519 seed from `path` (base64 or base64url, padded or not); the text
// read is wiped.
fn read_seed(path: &std::path::Path) -> anyhow::Result<zeroize::Zeroizing<[u8; 32]>> {
    use anyhow::Context as _;
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
    );
    let text = text.trim().trim_end_matches('=');
    let bytes = zeroize::Zeroizing::new(
        URL_SAFE_NO_PAD
            .decode(text)
            .or_else(|_| STANDARD_NO_PAD.decode(text))
            .map_err(|_| anyhow::anyhow!("{} holds no base64 key", path.display()))?,
    );
    let mut seed = zeroize::Zeroizing::new([0u8; 32]);
    if bytes.len() != 32 {
        anyhow::bail!(
            "an Ed25519 key is 32 bytes; {} holds {}",
            path.display(),
            bytes.len()
        );
    }
    seed.copy_from_slice(&bytes);
    Ok(seed)
}
