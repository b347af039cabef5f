//! A tenant's Web Bot Auth key directory, where sites verifying its agents' signed
//! requests fetch its public keys: the `default` tenant's at
//! `/.well-known/http-message-signatures-directory`, another tenant's at
//! `/identity/<tenant>/directory` (named `jwks_uri` in its `Signature-Agent`). Public,
//! like any key directory, and signed as the draft asks: one signature per key over
//! the `@authority` the directory was fetched at and the body's `Content-Digest`, so
//! the key set cannot be served again under another name or swapped.

use std::sync::Arc;
use std::time::Duration;

use airlock_gateway::Gateway;
use airlock_gateway::webbotauth::{self, Jwk};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// How long a directory response's own signatures are valid: well beyond the cache
/// life, so a verifier holding a copy keeps its proof (draft, "Directory Response
/// Signature Lifetimes").
const PROOF_LIFETIME: Duration = Duration::from_secs(86_400);

/// The `default` tenant's directory.
pub(crate) async fn well_known(
    State(gateway): State<Arc<Gateway>>,
    headers: HeaderMap,
) -> Response {
    directory(&gateway, "default", &headers).await
}

/// Another tenant's directory.
pub(crate) async fn of_tenant(
    State(gateway): State<Arc<Gateway>>,
    Path(tenant): Path<String>,
    headers: HeaderMap,
) -> Response {
    directory(&gateway, &tenant, &headers).await
}

async fn directory(gateway: &Gateway, tenant: &str, headers: &HeaderMap) -> Response {
    let signers = match gateway.directory_signers(tenant).await {
        Ok(signers) if !signers.is_empty() => signers,
        Ok(_) => return (StatusCode::NOT_FOUND, "no signing keys here\n").into_response(),
        Err(e) => {
            tracing::error!(error = %e, "a key directory could not be served");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the key directory is unavailable\n",
            )
                .into_response();
        }
    };
    let jwks: Vec<Jwk> = signers.iter().map(|s| s.jwk()).collect();
    let body = webbotauth::directory_body(&jwks);
    let digest = webbotauth::content_digest(&body);
    // The authority it was fetched at (the edge admitted this Host already).
    let authority = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut inputs = Vec::new();
    let mut signatures = Vec::new();
    for (i, signer) in signers.iter().enumerate() {
        let label = if i == 0 {
            "binding".to_owned()
        } else {
            format!("binding{i}")
        };
        match signer.sign_directory(&authority, &digest, &label, PROOF_LIFETIME) {
            Ok((input, signature)) => {
                inputs.push(input);
                signatures.push(signature);
            }
            Err(e) => tracing::warn!(error = %e, "a key directory's proof could not be made"),
        }
    }
    let mut response = body.into_response();
    let out = response.headers_mut();
    let mut put = |name: &'static str, value: String| {
        if let Ok(value) = HeaderValue::from_str(&value) {
            out.insert(name, value);
        }
    };
    put("content-type", webbotauth::DIRECTORY_MEDIA_TYPE.to_owned());
    put(
        "cache-control",
        format!("max-age={}", airlock_gateway::DIRECTORY_MAX_AGE.as_secs()),
    );
    put("access-control-allow-origin", "*".to_owned());
    put("content-digest", digest);
    if !inputs.is_empty() {
        put("signature-input", inputs.join(", "));
        put("signature", signatures.join(", "));
    }
    response
}
