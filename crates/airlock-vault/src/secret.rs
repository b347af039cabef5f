//! What a secret is: a name, a tenant, bound origins and write-only fields.

use serde::{Deserialize, Serialize};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::VaultError;

/// Shortest value the vault accepts for a redacted field: shorter ones would shred
/// ordinary text when every occurrence is redacted.
pub const MIN_SECRET_LEN: usize = 6;

/// A browser cookie in CDP's `Network.CookieParam` shape.
#[derive(Clone, Default, Serialize, Deserialize, Zeroize, ZeroizeOnDrop, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Cookie {
    /// Cookie name.
    pub name: String,
    /// Cookie value (secret).
    pub value: String,
    /// Domain (`app.example.com`, or `.example.com` for subdomains too).
    pub domain: String,
    /// Path.
    #[serde(default = "root_path")]
    pub path: String,
    /// Expiry, Unix seconds; session cookie when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<f64>,
    /// `HttpOnly`.
    #[serde(default)]
    pub http_only: bool,
    /// `Secure`.
    #[serde(default)]
    pub secure: bool,
    /// `Strict`, `Lax` or `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_site: Option<String>,
}

fn root_path() -> String {
    "/".to_owned()
}

/// One localStorage entry of one origin.
#[derive(Clone, Default, Serialize, Deserialize, Zeroize, ZeroizeOnDrop, PartialEq)]
pub struct StorageItem {
    /// The origin whose storage holds it.
    pub origin: String,
    /// Key.
    pub key: String,
    /// Value (secret).
    pub value: String,
}

/// One HTTP header sent to the bound origins only.
#[derive(Clone, Default, Serialize, Deserialize, Zeroize, ZeroizeOnDrop, PartialEq)]
pub struct Header {
    /// Header name.
    pub name: String,
    /// Header value (secret).
    pub value: String,
}

/// A secret's fields. Values never leave Airlock: Debug names the fields present.
#[derive(Clone, Default, Serialize, Deserialize, Zeroize, ZeroizeOnDrop, PartialEq)]
pub struct Fields {
    /// Login name. Typed through a placeholder like the others, but not redacted
    /// from output (pages show who is logged in) and not length-checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// TOTP seed, base32; a code is computed when typed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totp: Option<String>,
    /// Cookies injected at session open.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cookies: Vec<Cookie>,
    /// localStorage injected before the bound origin's scripts run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub local_storage: Vec<StorageItem>,
    /// Headers added to requests to the bound origins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
}

impl std::fmt::Debug for Fields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fields({}) [REDACTED]", self.present().join(", "))
    }
}

impl Fields {
    /// Names of the fields present.
    pub fn present(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.username.is_some() {
            names.push("username");
        }
        if self.password.is_some() {
            names.push("password");
        }
        if self.totp.is_some() {
            names.push("totp");
        }
        if !self.cookies.is_empty() {
            names.push("cookies");
        }
        if !self.local_storage.is_empty() {
            names.push("local_storage");
        }
        if !self.headers.is_empty() {
            names.push("headers");
        }
        names
    }

    /// Every value that output must never show, for the redactor.
    pub fn redacted_values(&self) -> Vec<&str> {
        let mut values: Vec<&str> = Vec::new();
        values.extend(self.password.as_deref());
        values.extend(self.totp.as_deref());
        values.extend(self.cookies.iter().map(|c| c.value.as_str()));
        values.extend(self.local_storage.iter().map(|s| s.value.as_str()));
        values.extend(self.headers.iter().map(|h| h.value.as_str()));
        values.retain(|v| v.chars().count() >= MIN_SECRET_LEN);
        values
    }

    /// Fills in what `other` has, keeping the rest (a `vault set` adds fields).
    pub fn merge(&mut self, mut other: Fields) {
        if other.username.is_some() {
            self.username = other.username.take();
        }
        if other.password.is_some() {
            self.password = other.password.take();
        }
        if other.totp.is_some() {
            self.totp = other.totp.take();
        }
        if !other.cookies.is_empty() {
            self.cookies = std::mem::take(&mut other.cookies);
        }
        if !other.local_storage.is_empty() {
            self.local_storage = std::mem::take(&mut other.local_storage);
        }
        if !other.headers.is_empty() {
            self.headers = std::mem::take(&mut other.headers);
        }
    }

    /// The value of a placeholder field (`password`, `username`; `totp` is computed
    /// by the caller from the seed).
    pub fn text(&self, field: &str) -> Option<&str> {
        match field {
            "username" => self.username.as_deref(),
            "password" => self.password.as_deref(),
            "totp" => self.totp.as_deref(),
            _ => None,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), VaultError> {
        let short = |what: &str| {
            VaultError::Invalid(format!(
                "the {what} is shorter than {MIN_SECRET_LEN} characters; so short a value would redact ordinary text"
            ))
        };
        if self
            .password
            .as_ref()
            .is_some_and(|p| p.chars().count() < MIN_SECRET_LEN)
        {
            return Err(short("password"));
        }
        if let Some(seed) = &self.totp {
            crate::totp::decode_base32(seed)
                .ok_or_else(|| VaultError::Invalid("the TOTP seed is not base32".to_owned()))?;
            if seed.chars().count() < MIN_SECRET_LEN {
                return Err(short("TOTP seed"));
            }
        }
        // Short cookie and storage values are kept (imported browser state is full of
        // `consent=1`) but are not credentials and are not redacted.
        for c in &self.cookies {
            if c.domain.trim_start_matches('.').is_empty() {
                return Err(VaultError::Invalid(format!(
                    "cookie `{}` has no domain",
                    c.name
                )));
            }
        }
        for h in &self.headers {
            if h.value.chars().count() < MIN_SECRET_LEN {
                return Err(short(&format!("value of header `{}`", h.name)));
            }
            if h.name.is_empty()
                || !h
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            {
                return Err(VaultError::Invalid(format!(
                    "`{}` is not a header name",
                    h.name
                )));
            }
        }
        Ok(())
    }
}

/// A stored credential.
#[derive(Debug, Clone, PartialEq)]
pub struct Secret {
    /// Owning tenant.
    pub tenant: String,
    /// Name (letters, digits, `_`, `-`; used in `{{secret:NAME.field}}`).
    pub name: String,
    /// Origins the secret may be used on (`https://app.example.com`).
    pub origins: Vec<String>,
    /// The values.
    pub fields: Fields,
}

/// What `vault list` shows: never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretInfo {
    /// Name.
    pub name: String,
    /// Bound origins.
    pub origins: Vec<String>,
    /// Fields present.
    pub fields: Vec<String>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub updated_at: i64,
}

/// Checks a secret name.
pub fn check_name(name: &str) -> Result<(), VaultError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(VaultError::Invalid(format!(
            "`{name}` is not a secret name (1-64 letters, digits, `_` or `-`)"
        )))
    }
}

/// Canonical origin (`scheme://host[:port]`) of an http(s) URL or origin.
pub fn canonical_origin(text: &str) -> Result<String, VaultError> {
    let url = url::Url::parse(text.trim())
        .map_err(|e| VaultError::Invalid(format!("`{text}` is not an origin ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(VaultError::Invalid(format!(
            "`{text}` is not an http(s) origin"
        )));
    }
    Ok(url.origin().ascii_serialization())
}
