//! Web Bot Auth (draft-meunier-webbotauth-httpsig-protocol, HTTP Message Signatures
//! per RFC 9421) as a signer sees it: the signature base of a request, which covers
//! only `@authority` and the `Signature-Agent` member (so it is made without the
//! request's path, query, body or cookies), and of a key directory's response.
//!
//! Written here rather than with the `web-bot-auth` crate's `MessageSigner`: that one
//! stamps `created` from the clock (no test vector can be reproduced) and needs the
//! key as bytes; this one takes the times and nonce from its caller and the key as an
//! `ed25519_dalek::SigningKey`, and the crate stays an independent verifier in tests.
//! Structured fields are written by `sfv`.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signer as _, SigningKey};
use serde::Serialize;
use sfv::{DictSerializer, ItemSerializer, KeyRef, ListSerializer, StringRef, TokenRef};
use sha2::{Digest, Sha256};

use crate::VaultError;

/// The `tag` of a request signature.
pub const TAG: &str = "web-bot-auth";
/// The `tag` of a directory response signature.
pub const DIRECTORY_TAG: &str = "http-message-signatures-directory";
/// Where a key directory is served.
pub const DIRECTORY_PATH: &str = "/.well-known/http-message-signatures-directory";
/// The directory's media type.
pub const DIRECTORY_MEDIA_TYPE: &str = "application/http-message-signatures-directory+json";
/// The request headers a signature consists of (lower case): never taken from a page.
pub const HEADERS: [&str; 3] = ["signature", "signature-input", "signature-agent"];

/// The key id of an Ed25519 public key: its JWK SHA-256 thumbprint (RFC 7638, with
/// RFC 8037's members for OKP keys), base64url without padding.
pub fn thumbprint(public: &[u8; 32]) -> String {
    let x = URL_SAFE_NO_PAD.encode(public);
    URL_SAFE_NO_PAD.encode(Sha256::digest(format!(
        r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#
    )))
}

/// One public key as a key directory lists it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Jwk {
    /// `OKP`.
    pub kty: &'static str,
    /// `Ed25519`.
    pub crv: &'static str,
    /// The thumbprint.
    pub kid: String,
    /// The public key, base64url.
    pub x: String,
    /// `sig`.
    #[serde(rename = "use")]
    pub use_: &'static str,
}

impl Jwk {
    /// The JWK of `public`.
    pub fn of(public: &[u8; 32]) -> Jwk {
        Jwk {
            kty: "OKP",
            crv: "Ed25519",
            kid: thumbprint(public),
            x: URL_SAFE_NO_PAD.encode(public),
            use_: "sig",
        }
    }
}

/// A key directory's body: `{"keys":[…]}`, no whitespace.
pub fn directory_body(keys: &[Jwk]) -> Vec<u8> {
    #[derive(Serialize)]
    struct Directory<'a> {
        keys: &'a [Jwk],
    }
    serde_json::to_vec(&Directory { keys }).unwrap_or_default()
}

/// Where a signer's keys are found: one `Signature-Agent` member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// The URL (`https://airlock.example` for a directory at that origin).
    pub url: String,
    /// `Some("jwks_uri")` when `url` is a key set's own URL rather than an origin
    /// whose well-known directory holds it.
    pub kind: Option<&'static str>,
}

impl Agent {
    // The member's value as serialized: the string and its `type` parameter.
    fn member_value(&self) -> Result<String, VaultError> {
        let url = StringRef::from_str(&self.url).map_err(|e| invalid("agent URL", e))?;
        let item = ItemSerializer::new().bare_item(url);
        Ok(match self.kind {
            Some(kind) => item
                .parameter(
                    key("type")?,
                    TokenRef::from_str(kind).map_err(|e| invalid("agent type", e))?,
                )
                .finish(),
            None => item.finish(),
        })
    }
}

/// The three headers that sign one request.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RequestSignature {
    /// `Signature-Agent`.
    pub signature_agent: String,
    /// `Signature-Input`.
    pub signature_input: String,
    /// `Signature`.
    pub signature: String,
}

impl RequestSignature {
    /// The headers as `(name, value)` pairs, in the order they are sent.
    pub fn headers(&self) -> [(&'static str, &str); 3] {
        [
            ("Signature-Agent", &self.signature_agent),
            ("Signature-Input", &self.signature_input),
            ("Signature", &self.signature),
        ]
    }
}

/// What one signature's `@signature-params` carry besides the components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// `created`, Unix seconds.
    pub created: i64,
    /// `expires`, Unix seconds.
    pub expires: i64,
    /// `nonce`.
    pub nonce: String,
}

/// Signs a request to `authority` (RFC 9421's `@authority`: the host in lower case
/// and the port unless it is the scheme's default) as `agent`, with `key` whose id is
/// `kid`, under `label`: `("@authority" "signature-agent";key=label)` with `created`,
/// `keyid`, `alg`, `expires`, `nonce` and `tag`, in the draft's order.
pub fn sign_request(
    key: &SigningKey,
    kid: &str,
    authority: &str,
    agent: &Agent,
    label: &str,
    window: &Window,
) -> Result<RequestSignature, VaultError> {
    let label_key = self::key(label)?;
    let (components, params) = request_parts(kid, authority, agent, label, window)?;
    let signature = sign(key, &components, &params)?;
    let mut agent_header = DictSerializer::new();
    let url = StringRef::from_str(&agent.url).map_err(|e| invalid("agent URL", e))?;
    let member = agent_header.bare_item(label_key, url);
    if let Some(kind) = agent.kind {
        let _ = member.parameter(
            self::key("type")?,
            TokenRef::from_str(kind).map_err(|e| invalid("agent type", e))?,
        );
    }
    Ok(RequestSignature {
        signature_agent: agent_header.finish().unwrap_or_default(),
        signature_input: labelled_input(label_key, &components, &params)?,
        signature: labelled_signature(label_key, &signature),
    })
}

// What a request signature covers, and its parameters.
type RequestParts<'a> = ([Component; 2], [(&'static str, Param<'a>); 6]);

// What a request signature covers and its parameters, in the draft's order.
fn request_parts<'a>(
    kid: &'a str,
    authority: &str,
    agent: &Agent,
    label: &str,
    window: &'a Window,
) -> Result<RequestParts<'a>, VaultError> {
    Ok((
        [
            Component::Derived("@authority", authority.to_ascii_lowercase()),
            Component::Member("signature-agent", label.to_owned(), agent.member_value()?),
        ],
        [
            ("created", Param::Int(window.created)),
            ("keyid", Param::Str(kid)),
            ("alg", Param::Str("ed25519")),
            ("expires", Param::Int(window.expires)),
            ("nonce", Param::Str(&window.nonce)),
            ("tag", Param::Str(TAG)),
        ],
    ))
}

/// The `Content-Digest` of a body: `sha-256=:…:`.
pub fn content_digest(body: &[u8]) -> String {
    format!("sha-256=:{}:", STANDARD.encode(Sha256::digest(body)))
}

/// One key's proof of possession on a directory response fetched at `authority`
/// (`("@authority";req "content-digest")` with `created`, `expires`, `keyid` and the
/// directory tag): `(Signature-Input member, Signature member)` under `label`.
pub fn sign_directory(
    key: &SigningKey,
    kid: &str,
    authority: &str,
    digest: &str,
    label: &str,
    created: i64,
    expires: i64,
) -> Result<(String, String), VaultError> {
    let label_key = self::key(label)?;
    let components = [
        Component::RequestDerived("@authority", authority.to_ascii_lowercase()),
        Component::Field("content-digest", digest.to_owned()),
    ];
    let params = [
        ("created", Param::Int(created)),
        ("expires", Param::Int(expires)),
        ("keyid", Param::Str(kid)),
        ("tag", Param::Str(DIRECTORY_TAG)),
    ];
    let signature = sign(key, &components, &params)?;
    Ok((
        labelled_input(label_key, &components, &params)?,
        labelled_signature(label_key, &signature),
    ))
}

enum Component {
    // A derived component and its value.
    Derived(&'static str, String),
    // A derived component of the request a response answers (`;req`).
    RequestDerived(&'static str, String),
    // A header field.
    Field(&'static str, String),
    // A dictionary header's member (`;key=`) and its serialized value.
    Member(&'static str, String, String),
}

enum Param<'a> {
    Int(i64),
    Str(&'a str),
}

fn key(name: &str) -> Result<&KeyRef, VaultError> {
    KeyRef::from_str(name).map_err(|e| invalid("label", e))
}

fn invalid(what: &str, e: sfv::Error) -> VaultError {
    VaultError::Invalid(format!("web bot auth {what}: {e}"))
}

// The inner list of components with its parameters, into `list`.
fn write_list(
    mut list: sfv::InnerListSerializer<'_>,
    components: &[Component],
    params: &[(&str, Param<'_>)],
) -> Result<(), VaultError> {
    for component in components {
        match component {
            Component::Derived(name, _) | Component::Field(name, _) => {
                let _ =
                    list.bare_item(StringRef::from_str(name).map_err(|e| invalid("component", e))?);
            }
            Component::RequestDerived(name, _) => {
                let _ = list
                    .bare_item(StringRef::from_str(name).map_err(|e| invalid("component", e))?)
                    .parameter(key("req")?, true);
            }
            Component::Member(name, member, _) => {
                let _ = list
                    .bare_item(StringRef::from_str(name).map_err(|e| invalid("component", e))?)
                    .parameter(
                        key("key")?,
                        StringRef::from_str(member).map_err(|e| invalid("member", e))?,
                    );
            }
        }
    }
    let mut ser = list.finish();
    for (name, value) in params {
        ser = match value {
            Param::Int(n) => ser.parameter(
                key(name)?,
                sfv::Integer::try_from(*n).map_err(|e| invalid("time", e))?,
            ),
            Param::Str(s) => ser.parameter(
                key(name)?,
                StringRef::from_str(s).map_err(|e| invalid("parameter", e))?,
            ),
        };
    }
    Ok(())
}

// `@signature-params`: the inner list alone.
fn signature_params(
    components: &[Component],
    params: &[(&str, Param<'_>)],
) -> Result<String, VaultError> {
    let mut list = ListSerializer::new();
    write_list(list.inner_list(), components, params)?;
    Ok(list.finish().unwrap_or_default())
}

fn labelled_input(
    label: &KeyRef,
    components: &[Component],
    params: &[(&str, Param<'_>)],
) -> Result<String, VaultError> {
    let mut dict = DictSerializer::new();
    write_list(dict.inner_list(label), components, params)?;
    Ok(dict.finish().unwrap_or_default())
}

fn labelled_signature(label: &KeyRef, signature: &[u8]) -> String {
    let mut dict = DictSerializer::new();
    dict.bare_item(label, signature);
    dict.finish().unwrap_or_default()
}

/// The signature base (RFC 9421 §2.5) of `components` with `params`.
fn base(components: &[Component], params: &[(&str, Param<'_>)]) -> Result<String, VaultError> {
    let mut base = String::new();
    for component in components {
        let line = match component {
            Component::Derived(name, value) | Component::Field(name, value) => {
                format!("\"{name}\": {value}\n")
            }
            Component::RequestDerived(name, value) => format!("\"{name}\";req: {value}\n"),
            Component::Member(name, member, value) => {
                format!("\"{name}\";key=\"{member}\": {value}\n")
            }
        };
        base.push_str(&line);
    }
    base.push_str("\"@signature-params\": ");
    base.push_str(&signature_params(components, params)?);
    if !base.is_ascii() || base.contains(['\r']) {
        return Err(VaultError::Invalid(
            "web bot auth: a signed value is not plain ASCII".to_owned(),
        ));
    }
    Ok(base)
}

// The Ed25519 signature over the base.
fn sign(
    key: &SigningKey,
    components: &[Component],
    params: &[(&str, Param<'_>)],
) -> Result<Vec<u8>, VaultError> {
    let base = base(components, params)?;
    Ok(key.sign(base.as_bytes()).to_bytes().to_vec())
}

/// The signature base of a request signature, for tests that compare it with a
/// published one.
pub fn request_base(
    kid: &str,
    authority: &str,
    agent: &Agent,
    label: &str,
    window: &Window,
) -> Result<String, VaultError> {
    let (components, params) = request_parts(kid, authority, agent, label, window)?;
    base(&components, &params)
}

/// RFC 9421's `@authority` of `url`: its host in lower case, and its port unless it
/// is the scheme's default; `None` for a URL without a host.
pub fn authority(url: &url::Url) -> Option<String> {
    let host = match url.host()? {
        url::Host::Domain(d) => d.to_ascii_lowercase(),
        url::Host::Ipv4(a) => a.to_string(),
        url::Host::Ipv6(a) => format!("[{a}]"),
    };
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

/// A fresh nonce: 32 random bytes, base64.
pub fn nonce() -> Result<String, VaultError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| VaultError::Key(format!("no randomness: {e}")))?;
    Ok(STANDARD.encode(bytes))
}

#[cfg(test)]
#[path = "webbotauth_tests.rs"]
mod tests;
