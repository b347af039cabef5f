//! Checks of the config sections that need more than a type: each turns the raw
//! value into the validated one or an [`Error::Invalid`] naming its key.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{ApiKey, ApprovalsConfig, Error, JwtConfig, JwtKeys, RawJwt, Webhook, vars};

// `[audit] publish_dir`: absolute, and not inside the data dir (whoever can rewrite
// the log there could rewrite its published checkpoints too).
pub(crate) fn publish_dir(dir: &Path, data_dir: &Path) -> Result<PathBuf, Error> {
    let invalid = |message: String| Error::Invalid {
        key: "audit.publish_dir".to_owned(),
        message,
    };
    if !dir.is_absolute() {
        return Err(invalid(format!(
            "{} is not an absolute path",
            dir.display()
        )));
    }
    let data = data_dir
        .canonicalize()
        .unwrap_or_else(|_| data_dir.to_path_buf());
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if canonical.starts_with(&data) || dir.starts_with(data_dir) {
        return Err(invalid(format!(
            "{} is inside the data dir; publish checkpoints off it (another volume or machine)",
            dir.display()
        )));
    }
    Ok(dir.to_path_buf())
}

// `[server] public_url`: an http(s) origin (a trailing `/` is dropped), since every
// URL Airlock hands out is this and a path of its own.
pub(crate) fn public_url(text: &str) -> Result<String, Error> {
    let invalid = |message: String| Error::Invalid {
        key: "server.public_url".to_owned(),
        message,
    };
    let url = url::Url::parse(text).map_err(|e| invalid(format!("not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid(format!(
            "`{text}` is not an http(s) URL with a host"
        )));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(format!(
            "`{text}` has a path, query or fragment; give scheme, host and port only"
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("a public URL carries no credentials".to_owned()));
    }
    Ok(url.origin().ascii_serialization())
}

// `[approvals] webhook_url` and its signing key (`AIRLOCK_WEBHOOK_SECRET` beats the
// file): unsigned announcements could be forged by anyone who can reach the receiver.
pub(crate) fn webhook(
    raw: &ApprovalsConfig,
    env_secret: Option<String>,
) -> Result<Option<Webhook>, Error> {
    let Some(text) = raw.webhook_url.as_deref().filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    let invalid = |message: String| Error::Invalid {
        key: "approvals.webhook_url".to_owned(),
        message,
    };
    let url = url::Url::parse(text).map_err(|e| invalid(format!("not a URL: {e}")))?;
    match url.scheme() {
        "http" => {}
        // No TLS client is built in yet: say so now rather than fail every delivery.
        "https" => {
            return Err(invalid(
                "https webhooks are not supported yet; use an http URL on a network you trust (e.g. a relay on loopback)"
                    .to_owned(),
            ));
        }
        other => return Err(invalid(format!("`{other}` is not http"))),
    }
    if url.host_str().is_none() || !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            "needs a host and no user or password in the URL".to_owned(),
        ));
    }
    let secret = env_secret
        .or_else(|| raw.webhook_secret.clone())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| Error::Invalid {
            key: "approvals.webhook_secret".to_owned(),
            message: format!(
                "a webhook needs a signing key: set it here or in {}",
                vars::WEBHOOK_SECRET
            ),
        })?;
    if secret.len() < 16 {
        return Err(Error::Invalid {
            key: "approvals.webhook_secret".to_owned(),
            message: "must be at least 16 characters".to_owned(),
        });
    }
    Ok(Some(Webhook {
        url,
        secret: ApiKey(secret),
    }))
}

// `[server.jwt]`, checked: issuer and audience required, exactly one key source.
pub(crate) fn jwt_config(raw: RawJwt, env_secret: Option<String>) -> Result<JwtConfig, Error> {
    let invalid = |key: &str, message: &str| Error::Invalid {
        key: format!("server.jwt.{key}"),
        message: message.to_owned(),
    };
    let issuer = raw
        .issuer
        .filter(|i| !i.trim().is_empty())
        .ok_or_else(|| invalid("issuer", "is required: the `iss` every token must carry"))?;
    let audience = raw
        .audience
        .filter(|a| !a.trim().is_empty())
        .ok_or_else(|| invalid("audience", "is required: the `aud` every token must carry"))?;
    let secret = env_secret.or(raw.hs256_secret).filter(|s| !s.is_empty());
    let keys = match (secret, raw.jwks_file) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "hs256_secret",
                "give either hs256_secret (or AIRLOCK_JWT_SECRET) or jwks_file, not both",
            ));
        }
        (Some(secret), None) if secret.len() < 32 => {
            return Err(invalid("hs256_secret", "must be at least 32 characters"));
        }
        (Some(secret), None) => JwtKeys::Hs256(ApiKey(secret)),
        (None, Some(path)) => JwtKeys::JwksFile(path),
        (None, None) => {
            return Err(invalid(
                "jwks_file",
                "give jwks_file or hs256_secret (or AIRLOCK_JWT_SECRET)",
            ));
        }
    };
    let leeway = raw.leeway_secs.unwrap_or(60);
    if leeway > 300 {
        return Err(invalid("leeway_secs", "is at most 300"));
    }
    Ok(JwtConfig {
        issuer,
        audience,
        keys,
        leeway: Duration::from_secs(leeway),
        any_tenant: raw.any_tenant.unwrap_or(false),
    })
}
