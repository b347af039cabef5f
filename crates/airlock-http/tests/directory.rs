//! The Web Bot Auth key directory as a site fetches it, through the real router: the
//! tenant's listed keys as a JWK set under the draft's media type, a
//! `Content-Digest` of exactly the body, and one signature per key over the
//! authority it was fetched at and that digest, which Cloudflare's `web-bot-auth`
//! crate verifies with the key the directory lists (and refuses at another
//! authority). Another tenant's directory is its own; a tenant without keys has none.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use airlock_gateway::{Gateway, GatewayConfig};
use airlock_http::{HttpConfig, router};
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use base64::Engine as _;
use http_body_util::BodyExt as _;
use tower::ServiceExt as _;
use web_bot_auth::components::{CoveredComponent, DerivedComponent, HTTPField};
use web_bot_auth::keyring::{Algorithm, KeyRing};
use web_bot_auth::message_signatures::{MessageVerifier, SignedMessage};

const HOST: &str = "127.0.0.1:8080";

async fn server() -> (axum::Router, Arc<airlock_vault::Vault>, tempfile::TempDir) {
    let profiles = tempfile::tempdir().unwrap();
    let options = airlock_browser::BrowserOptions {
        profile_parent: profiles.path().to_owned(),
        ..airlock_browser::BrowserOptions::from_config(&Default::default()).unwrap()
    };
    let vault = Arc::new(
        airlock_vault::Vault::open(
            airlock_store::Store::open_in_memory().await.unwrap(),
            airlock_vault::MasterKey::generate().unwrap(),
        )
        .await
        .unwrap(),
    );
    let gateway = Gateway::new(
        Arc::new(airlock_browser::Browsers::new(options)),
        GatewayConfig::default()
            .store(vault.store().clone())
            .vault(vault.clone(), airlock_core::Role::Operate),
    );
    let config = HttpConfig {
        api_key: None,
        admin_key: None,
        allowed_hosts: vec!["127.0.0.1".to_owned()],
        allowed_origins: Vec::new(),
        public_url: format!("http://{HOST}"),
        tool_profile: Default::default(),
        jwt: None,
        worker_token: None,
        tasks: Default::default(),
        trusted_proxies: Vec::new(),
    };
    (router(gateway, config), vault, profiles)
}

async fn fetch(router: &axum::Router, path: &str) -> (StatusCode, HeaderMap, Vec<u8>) {
    fetch_at(router, path, HOST).await
}

async fn fetch_at(
    router: &axum::Router,
    path: &str,
    host: &str,
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let response = router
        .clone()
        .oneshot(
            Request::get(path)
                .header("host", host)
                .header(
                    "accept",
                    "application/http-message-signatures-directory+json",
                )
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, headers, body)
}

// A directory response as its verifier sees it: the request's authority and the
// response's fields.
struct Fetched<'a> {
    authority: &'a str,
    headers: &'a HeaderMap,
}

impl SignedMessage for Fetched<'_> {
    fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
        match name {
            CoveredComponent::HTTP(HTTPField { name, .. }) => self
                .headers
                .get_all(name.as_str())
                .iter()
                .filter_map(|v| v.to_str().ok().map(str::to_owned))
                .collect(),
            CoveredComponent::Derived(DerivedComponent::Authority { .. }) => {
                vec![self.authority.to_owned()]
            }
            _ => vec![],
        }
    }
}

// Whether the proof labelled `label` verifies with `public` as `kid`, fetched at
// `authority`.
fn proof_verifies(
    headers: &HeaderMap,
    authority: &str,
    label: &str,
    kid: &str,
    public: &[u8],
) -> bool {
    let fetched = Fetched { authority, headers };
    let Ok(verifier) = MessageVerifier::parse(&fetched, |(l, _)| l.as_str() == label) else {
        return false;
    };
    let details = &verifier.parsed.base.parameters.details;
    if details.tag.as_deref() != Some("http-message-signatures-directory")
        || details.keyid.as_deref() != Some(kid)
    {
        return false;
    }
    let mut keyring = KeyRing::default();
    keyring.import_raw(kid.to_owned(), Algorithm::Ed25519, public.to_vec());
    verifier.verify(&keyring, None).is_ok()
}

#[tokio::test]
async fn the_directory_lists_the_tenants_keys_signed_by_each_for_its_authority() {
    let (router, vault, _profiles) = server().await;
    // No key yet: nothing to list.
    let (status, _, _) = fetch(&router, "/.well-known/http-message-signatures-directory").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let first = vault.create_identity("default").await.unwrap();
    let second = vault.rotate_identity("default").await.unwrap();
    let (status, headers, body) =
        fetch(&router, "/.well-known/http-message-signatures-directory").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers["content-type"],
        "application/http-message-signatures-directory+json"
    );
    assert!(
        headers["cache-control"]
            .to_str()
            .unwrap()
            .starts_with("max-age=")
    );
    // The body: both keys (the rotated-out one still listed), kid = thumbprint.
    let jwks: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let kids: Vec<&str> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].as_str().unwrap())
        .collect();
    assert_eq!(kids, vec![second.kid.as_str(), first.kid.as_str()]);
    for key in jwks["keys"].as_array().unwrap() {
        assert_eq!(key["kty"], "OKP");
        assert_eq!(key["crv"], "Ed25519");
        assert!(key.get("d").is_none(), "a private member: {key}");
    }
    // Content-Digest is of exactly these bytes.
    let digest = <sha2::Sha256 as sha2::Digest>::digest(&body);
    assert_eq!(
        headers["content-digest"].to_str().unwrap(),
        format!(
            "sha-256=:{}:",
            base64::engine::general_purpose::STANDARD.encode(digest)
        )
    );
    // One proof per key, each verified by the web-bot-auth crate with the key the
    // directory lists; none verifies at another authority.
    for (label, key) in [("binding", &second), ("binding1", &first)] {
        assert!(
            proof_verifies(&headers, "127.0.0.1:8080", label, &key.kid, &key.public_key),
            "{label}: {headers:?}"
        );
        assert!(!proof_verifies(
            &headers,
            "elsewhere.example",
            label,
            &key.kid,
            &key.public_key
        ));
    }
    // The directory sits behind the same edge as `/mcp`: a name this loopback server
    // does not answer to (a rebinding page's) is refused.
    let (status, _, body) = fetch_at(
        &router,
        "/.well-known/http-message-signatures-directory",
        "attacker.example",
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "{}",
        String::from_utf8_lossy(&body)
    );
    // Another tenant's directory is its own, at its own path.
    let (status, _, _) = fetch(&router, "/identity/acme/directory").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let acme = vault.create_identity("acme").await.unwrap();
    let (status, _, body) = fetch(&router, "/identity/acme/directory").await;
    assert_eq!(status, StatusCode::OK);
    let jwks: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(jwks["keys"].as_array().unwrap().len(), 1);
    assert_eq!(jwks["keys"][0]["kid"], acme.kid.as_str());
}
