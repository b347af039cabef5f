//! Credentials in a session: which secrets it loaded (after authorization), what is
//! injected at open, how placeholders become typed text, and the redactor every
//! output of the session passes.

use std::sync::Arc;

use airlock_browser::{InjectedCookie, Injection, TextPiece, TypedText};
use airlock_core::Role;
use airlock_vault::placeholder::{self, Segment};
use airlock_vault::{Secret, Vault, grant};
use airlock_worker::{Known, SecretEntry, SecretSet};
use zeroize::Zeroizing;

use crate::error::{Error, Result};

/// Where credentials come from and who may use them.
#[derive(Clone, Default)]
pub struct CredentialSource {
    /// The vault; `None` means no credentials can be used.
    pub vault: Option<Arc<Vault>>,
    /// Tenant of the gateway's configured caller (the `default` tenant's key, the
    /// local stdio user); callers with keys of their own act in their key's tenant.
    pub tenant: String,
    /// The configured caller's role (credential use needs `operate`, or a grant token).
    pub role: Role,
}

impl std::fmt::Debug for CredentialSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialSource")
            .field("vault", &self.vault.is_some())
            .field("tenant", &self.tenant)
            .field("role", &self.role)
            .finish()
    }
}

/// The secrets a session loaded, the values it learned since (what an operator typed
/// into its page), and the redactor built from both. The browser host holds its
/// own copy of the same knowledge (`airlock_worker::Known`), sent at open and on
/// each value learned.
#[derive(Default)]
pub(crate) struct Loaded {
    secrets: Vec<Secret>,
    // Each secret's name and the version loaded (`Vault::get_versioned`).
    versions: Vec<(String, String)>,
    known: Arc<Known>,
    // The grant redeemed to load them, if one was (its id, never the token).
    grant: Option<String>,
    // A value was learned after open (no vault holds it).
    learned: std::sync::atomic::AtomicBool,
}

/// What a live session's row says of the secrets it loaded.
#[derive(serde::Serialize, serde::Deserialize)]
struct Version {
    name: String,
    version: String,
}

/// What loading credentials came to: secrets to use, or a reason the session opens
/// without them.
pub(crate) enum Outcome {
    /// Authorized and loaded.
    Loaded(Loaded, Injection),
    /// Not authorized: the session opens clean, and the agent is told why.
    Refused(String),
}

impl CredentialSource {
    /// Reads the named secrets and checks the caller's authority to use them. Unknown
    /// names and a missing vault are errors (nothing opens); missing authority is
    /// not (the session opens clean and says why).
    pub(crate) async fn load(
        &self,
        caller: &crate::principal::Principal,
        options: &crate::tools::OpenOptions,
    ) -> Result<Outcome> {
        let (names, grant_token) = (&options.credentials, options.grant.as_deref());
        let (tenant, role) = (caller.tenant.as_str(), caller.role);
        let Some(vault) = &self.vault else {
            return Err(Error::NoVault);
        };
        // Without authority, nothing is read: whether a name exists is not said.
        let operate = role >= Role::Operate;
        if !operate && grant_token.is_none() {
            return Ok(Outcome::Refused(format!(
                "using credentials needs the `operate` role or a grant token (this caller has `{}`)",
                role.as_str()
            )));
        }
        // With a grant, a name that does not exist and one the grant does not cover
        // get the same answer.
        let not_covered = |name: &str| {
            Outcome::Refused(format!(
                "the grant does not cover `{name}` (or there is no such credential)"
            ))
        };
        let mut secrets = Vec::new();
        let mut versions = Vec::new();
        for name in names {
            match vault.get_versioned(tenant, name).await {
                Ok((secret, version)) => {
                    versions.push((secret.name.clone(), version));
                    secrets.push(secret);
                }
                Err(airlock_vault::VaultError::NotFound(_)) if !operate => {
                    return Ok(not_covered(name));
                }
                Err(airlock_vault::VaultError::NotFound(_)) => {
                    return Err(Error::CredentialUnknown { name: name.clone() });
                }
                Err(e) => {
                    tracing::error!(error = %e, "cannot read a credential");
                    return Err(Error::Internal(format!(
                        "credential `{name}` could not be read"
                    )));
                }
            }
        }
        let mut grant_id = None;
        if let (false, Some(token)) = (operate, grant_token) {
            let hosts: Vec<String> = secrets
                .iter()
                .flat_map(|s| s.origins.iter())
                .filter_map(|o| url::Url::parse(o).ok()?.host_str().map(str::to_owned))
                .collect();
            match grant::redeem(vault.store(), tenant, token, &hosts).await {
                Ok(Ok(grant)) => grant_id = Some(grant.id),
                // Which host is out of scope would say where a credential is bound.
                Ok(Err(grant::GrantRefusal::OutOfScope(_))) => {
                    return Ok(not_covered(&names.join("`, `")));
                }
                Ok(Err(refusal)) => return Ok(Outcome::Refused(refusal.to_string())),
                Err(e) => {
                    tracing::error!(error = %e, "cannot check a grant");
                    return Err(Error::Internal("the grant could not be checked".to_owned()));
                }
            }
        }
        // Only now, to a caller with authority over them: a stored login that is
        // dead fails the open at once instead of landing the agent on a sign-in page.
        if !options.login_check {
            refuse_dead_logins(vault.store(), tenant, names).await?;
        }
        let injection = injection(&secrets);
        Ok(Outcome::Loaded(
            Loaded::new(secrets, versions, grant_id)?,
            injection,
        ))
    }

    /// The secrets another replica's session loaded (`stored`, its row's list), at
    /// the versions it loaded, for this replica to serve it: authority was checked
    /// (and a grant redeemed) when it opened. `None` when a secret changed or went
    /// since: this replica could not hide what the page may still show.
    pub(crate) async fn reload(&self, tenant: &str, stored: &str) -> Result<Option<Loaded>> {
        let Some(vault) = &self.vault else {
            return Ok(None);
        };
        let wanted: Vec<Version> = serde_json::from_str(stored)
            .map_err(|e| Error::Internal(format!("a live session's secret list: {e}")))?;
        let mut secrets = Vec::new();
        let mut versions = Vec::new();
        for Version { name, version } in wanted {
            match vault.get_versioned(tenant, &name).await {
                Ok((secret, now)) if now == version => {
                    secrets.push(secret);
                    versions.push((name, version));
                }
                Ok(_) | Err(airlock_vault::VaultError::NotFound(_)) => return Ok(None),
                Err(e) => {
                    tracing::error!(error = %e, "cannot read a credential");
                    return Err(Error::Internal(format!(
                        "credential `{name}` could not be read"
                    )));
                }
            }
        }
        Ok(Some(Loaded::new(secrets, versions, None)?))
    }
}

/// Fails with `login_needs_user` when one of `names` is a stored login (its
/// checks on) that a person must act on: `needs_user`, or `failed` (its renewal
/// broke). `unchecked`, `alive` and `renewing` open as usual.
async fn refuse_dead_logins(
    store: &airlock_store::Store,
    tenant: &str,
    names: &[String],
) -> Result<()> {
    for name in names {
        let login = store
            .site_login(tenant, name)
            .await
            .map_err(|e| Error::StoreUnavailable(format!("stored logins cannot be read: {e}")))?;
        let Some(login) = login else { continue };
        if !login.enabled || !matches!(login.state.as_str(), "needs_user" | "failed") {
            continue;
        }
        let next = if login.state == "needs_user" {
            "a person must give what only they have through the login's one-time link (the console's Logins page has it; `airlock login watch` tells the operator)"
        } else {
            "an operator must fix its probe or renewal flow, then run `airlock login check`"
        };
        return Err(Error::LoginNeedsUser(format!(
            "stored login `{name}` is {} ({}); nothing was opened: {next}",
            login.state.replace('_', " "),
            login.why
        )));
    }
    Ok(())
}

fn injection(secrets: &[Secret]) -> Injection {
    let mut injection = Injection::default();
    for secret in secrets {
        let hosts: Vec<String> = secret
            .origins
            .iter()
            .filter_map(|o| url::Url::parse(o).ok()?.host_str().map(str::to_owned))
            .collect();
        for cookie in &secret.fields.cookies {
            // Only cookies for a bound host (or a parent domain of one, as the site
            // itself would set): a secret cannot plant cookies for other sites.
            let domain = cookie.domain.trim_start_matches('.');
            if !hosts.iter().any(|h| grant::host_in_domain(h, domain)) {
                tracing::warn!(secret = %secret.name, cookie = %cookie.name, "cookie for an unbound domain skipped");
                continue;
            }
            injection.cookies.push(InjectedCookie {
                name: cookie.name.clone(),
                value: Zeroizing::new(cookie.value.clone()),
                domain: cookie.domain.clone(),
                path: cookie.path.clone(),
                expires: cookie.expires,
                http_only: cookie.http_only,
                secure: cookie.secure,
                same_site: cookie.same_site.clone(),
            });
        }
        for item in &secret.fields.local_storage {
            let Ok(origin) = airlock_vault::canonical_origin(&item.origin) else {
                continue;
            };
            if secret.origins.contains(&origin) {
                injection.storage.push((
                    origin,
                    item.key.clone(),
                    Zeroizing::new(item.value.clone()),
                ));
            }
        }
        for header in &secret.fields.headers {
            for origin in &secret.origins {
                injection.headers.push((
                    origin.clone(),
                    header.name.clone(),
                    Zeroizing::new(header.value.clone()),
                ));
            }
        }
    }
    injection
}

impl Loaded {
    fn new(
        secrets: Vec<Secret>,
        versions: Vec<(String, String)>,
        grant: Option<String>,
    ) -> Result<Loaded> {
        let set = SecretSet {
            entries: secrets
                .iter()
                .map(|s| SecretEntry {
                    name: s.name.clone(),
                    values: s
                        .fields
                        .redacted_values()
                        .into_iter()
                        .map(|v| Zeroizing::new(v.to_owned()))
                        .collect(),
                    origins: s.origins.clone(),
                })
                .collect(),
            sockets: Vec::new(),
        };
        let known = Known::new(set).map_err(|e| Error::Internal(e.to_string()))?;
        Ok(Loaded {
            secrets,
            versions,
            known,
            grant,
            learned: Default::default(),
        })
    }

    /// What a live session's row keeps of the loaded secrets: names and versions
    /// (JSON), when there are any.
    pub(crate) fn versions(&self) -> Option<String> {
        if self.versions.is_empty() {
            return None;
        }
        let list: Vec<Version> = self
            .versions
            .iter()
            .map(|(name, version)| Version {
                name: name.clone(),
                version: version.clone(),
            })
            .collect();
        serde_json::to_string(&list).ok()
    }

    /// Whether another replica could hold what this session knows: nothing was
    /// learned after open (what an operator typed is in no vault).
    pub(crate) fn portable(&self) -> bool {
        !self.learned.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Names of the loaded secrets.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.secrets.iter().map(|s| s.name.as_str()).collect()
    }

    /// What each loaded secret gives the agent, in its words: the placeholders it
    /// may type, and what was put into the browser for it (never a value).
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        for secret in &self.secrets {
            let f = &secret.fields;
            let mut given = Vec::new();
            let typed: Vec<String> = [
                ("username", f.username.is_some()),
                ("password", f.password.is_some()),
                ("totp", f.totp.is_some()),
            ]
            .iter()
            .filter(|(_, present)| *present)
            .map(|(field, _)| format!("{{{{secret:{}.{field}}}}}", secret.name))
            .collect();
            if !typed.is_empty() {
                given.push(format!("type {}", typed.join(", ")));
            }
            if !f.cookies.is_empty() {
                given.push(format!("{} cookies set", f.cookies.len()));
            }
            if !f.local_storage.is_empty() {
                given.push("localStorage set on its first load".to_owned());
            }
            if !f.headers.is_empty() {
                given.push("headers added to its requests".to_owned());
            }
            parts.push(format!(
                "{} for {} ({})",
                secret.name,
                secret.origins.join(", "),
                given.join("; ")
            ));
        }
        parts.join("; ")
    }

    /// The id of the grant redeemed to load them, if one was.
    pub(crate) fn grant(&self) -> Option<&str> {
        self.grant.as_deref()
    }

    /// Allows pages WebSockets to `origins` besides the secrets' own (the policy's
    /// `websocket_origins`), in a session that holds secrets.
    pub(crate) fn allow_sockets(&self, origins: &[String]) {
        self.known.allow_sockets(origins);
    }

    /// What the session's browser host must know: the secrets, values learned so far
    /// and the sockets allowed.
    pub(crate) fn secret_set(&self) -> SecretSet {
        self.known.set()
    }

    /// The WebSocket origins allowed besides the secrets' own.
    pub(crate) fn sockets(&self) -> Vec<String> {
        self.known.set().sockets
    }

    /// Redacts one output text (a failing redactor withholds all of it).
    pub(crate) fn redact(&self, text: &str) -> String {
        self.known.redactor().redact(text).into_owned()
    }

    /// Whether the session holds anything to hide (secrets, or values it learned).
    pub(crate) fn holds_secrets(&self) -> bool {
        self.known.holds_secrets()
    }

    /// Learns `value` (under `name`) as the session's own secret, bound to
    /// `origins`: from now on it is redacted in every form in what the control plane
    /// returns (the browser host is told separately).
    pub(crate) fn learn(&self, name: &str, value: &str, origins: &[String]) -> Result<()> {
        self.learned
            .store(true, std::sync::atomic::Ordering::Release);
        self.known
            .learn(name, value, origins)
            .map_err(|e| Error::Internal(e.to_string()))?;
        Ok(())
    }

    /// Typed text with placeholders resolved to loaded secrets (checked against the
    /// field's origin later, at keystroke time, by the browser layer).
    pub(crate) fn typed(&self, text: &str) -> Result<TypedText> {
        if !placeholder::mentions(text) {
            return Ok(TypedText::plain(text));
        }
        let segments =
            placeholder::parse(text).map_err(|e| Error::InvalidArgument(e.to_string()))?;
        let mut pieces = Vec::new();
        for segment in segments {
            match segment {
                Segment::Text(t) => pieces.push(TextPiece::Plain(t)),
                Segment::Secret { name, field } => {
                    let secret = self
                        .secrets
                        .iter()
                        .find(|s| s.name == name)
                        .ok_or_else(|| Error::CredentialNotLoaded { name: name.clone() })?;
                    let value = match field.as_str() {
                        "totp" => secret
                            .fields
                            .totp
                            .as_deref()
                            .and_then(airlock_vault::totp::code_now)
                            .map(Zeroizing::new),
                        other => secret
                            .fields
                            .text(other)
                            .map(|v| Zeroizing::new(v.to_owned())),
                    }
                    .ok_or_else(|| Error::CredentialFieldMissing {
                        name: name.clone(),
                        field: field.clone(),
                    })?;
                    pieces.push(TextPiece::Secret {
                        label: format!("{name}.{field}"),
                        origins: secret.origins.clone(),
                        value,
                    });
                }
            }
        }
        Ok(TypedText(pieces))
    }
}
