//! Bearer JWTs of service callers (the backend that leases sessions): signed with a
//! shared HS256 secret or a key of a JWKS file, with the configured issuer and
//! audience, unexpired (clock skew bounded), and naming a tenant and a role.
//!
//! With a JWKS, only the asymmetric algorithm of the key the token names is accepted,
//! so a token "signed" with the public key as an HMAC secret never verifies.

use airlock_config::{JwtConfig, JwtKeys};
use airlock_core::Role;
use airlock_gateway::Principal;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

/// Checks tokens against one issuer's keys.
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    leeway_secs: u64,
    keys: Keys,
    any_tenant: bool,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

enum Keys {
    Hs256(DecodingKey),
    // Key id (if any), its algorithm, the key.
    Jwks(Vec<(Option<String>, Algorithm, DecodingKey)>),
}

/// Why a token did not authenticate (for the log and the audit record; the caller
/// only hears 401).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JwtRefusal {
    /// Not a JWT, or a header or claims that do not parse.
    Malformed,
    /// No key verifies its signature (or it uses an algorithm the key does not).
    BadSignature,
    /// Past `exp` (beyond the leeway), or before `nbf`.
    Expired,
    /// Another `iss`.
    WrongIssuer,
    /// Another `aud`.
    WrongAudience,
    /// No `tenant` claim, or not a tenant name.
    MissingTenant,
    /// No `role` claim, or not a role.
    MissingRole,
}

impl JwtRefusal {
    /// The reason as the audit record gives it.
    pub fn reason(self) -> &'static str {
        match self {
            JwtRefusal::Malformed => "jwt malformed",
            JwtRefusal::BadSignature => "jwt bad signature",
            JwtRefusal::Expired => "jwt expired",
            JwtRefusal::WrongIssuer => "jwt wrong issuer",
            JwtRefusal::WrongAudience => "jwt wrong audience",
            JwtRefusal::MissingTenant => "jwt missing tenant",
            JwtRefusal::MissingRole => "jwt missing role",
        }
    }
}

#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    tenant: Option<String>,
    role: Option<String>,
}

impl JwtVerifier {
    /// A verifier for `config`; `jwks` is the text of its JWKS file when it names one.
    pub fn new(config: &JwtConfig, jwks: Option<&str>) -> Result<JwtVerifier, String> {
        let keys = match &config.keys {
            JwtKeys::Hs256(secret) => {
                Keys::Hs256(DecodingKey::from_secret(secret.expose().as_bytes()))
            }
            JwtKeys::JwksFile(path) => {
                let text = jwks.ok_or_else(|| format!("{} was not read", path.display()))?;
                let set: JwkSet = serde_json::from_str(text)
                    .map_err(|e| format!("{} is not a JWKS: {e}", path.display()))?;
                let mut keys = Vec::new();
                for jwk in &set.keys {
                    let alg = match jwk.common.key_algorithm.map(|a| a.to_string()) {
                        Some(name) => name.parse::<Algorithm>().map_err(|_| {
                            format!("{}: unsupported key algorithm {name}", path.display())
                        })?,
                        // Without `alg`, the key's type says it.
                        None => match &jwk.algorithm {
                            jsonwebtoken::jwk::AlgorithmParameters::RSA(_) => Algorithm::RS256,
                            jsonwebtoken::jwk::AlgorithmParameters::EllipticCurve(_) => {
                                Algorithm::ES256
                            }
                            jsonwebtoken::jwk::AlgorithmParameters::OctetKeyPair(_) => {
                                Algorithm::EdDSA
                            }
                            _ => {
                                return Err(format!(
                                    "{}: every key needs an `alg` of RS256, ES256 or EdDSA (a shared secret goes in hs256_secret)",
                                    path.display()
                                ));
                            }
                        },
                    };
                    if matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
                        return Err(format!(
                            "{}: a JWKS holds public keys; put a shared secret in hs256_secret",
                            path.display()
                        ));
                    }
                    let key = DecodingKey::from_jwk(jwk)
                        .map_err(|e| format!("{}: a key does not load: {e}", path.display()))?;
                    keys.push((jwk.common.key_id.clone(), alg, key));
                }
                if keys.is_empty() {
                    return Err(format!("{} holds no keys", path.display()));
                }
                Keys::Jwks(keys)
            }
        };
        Ok(JwtVerifier {
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            leeway_secs: config.leeway.as_secs(),
            keys,
            any_tenant: config.any_tenant,
        })
    }

    /// Whether a token may name a tenant that was never created.
    pub fn any_tenant(&self) -> bool {
        self.any_tenant
    }

    /// The issuer whose tokens it accepts.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Whether `token` looks like a JWT at all (three base64url parts).
    pub fn looks_like_jwt(token: &str) -> bool {
        token.starts_with("eyJ") && token.matches('.').count() == 2
    }

    /// The principal `token` names, or why it does not authenticate.
    pub fn verify(&self, token: &str) -> Result<Principal, JwtRefusal> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| JwtRefusal::Malformed)?;
        let (alg, key) = match &self.keys {
            Keys::Hs256(key) => (Algorithm::HS256, key),
            Keys::Jwks(keys) => keys
                .iter()
                .find(|(kid, _, _)| header.kid.is_none() || kid.as_deref() == header.kid.as_deref())
                .map(|(_, alg, key)| (*alg, key))
                .ok_or(JwtRefusal::BadSignature)?,
        };
        if header.alg != alg {
            return Err(JwtRefusal::BadSignature);
        }
        let mut validation = Validation::new(alg);
        validation.leeway = self.leeway_secs;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Claims>(token, key, &validation).map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            match e.kind() {
                ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm => {
                    JwtRefusal::BadSignature
                }
                ErrorKind::ExpiredSignature | ErrorKind::ImmatureSignature => JwtRefusal::Expired,
                ErrorKind::InvalidIssuer => JwtRefusal::WrongIssuer,
                ErrorKind::InvalidAudience => JwtRefusal::WrongAudience,
                _ => JwtRefusal::Malformed,
            }
        })?;
        let claims = data.claims;
        let tenant = claims
            .tenant
            .filter(|t| airlock_core::valid_tenant_name(t))
            .ok_or(JwtRefusal::MissingTenant)?;
        let role = claims
            .role
            .as_deref()
            .and_then(Role::parse)
            .ok_or(JwtRefusal::MissingRole)?;
        let subject = claims.sub.unwrap_or_default();
        Ok(Principal {
            tenant,
            role,
            // Names the caller among others (its stateless sessions, the audit
            // record); a digest, so a long or odd `sub` stays a short plain id.
            key: Some(format!("jwt:{}", short_digest(&subject))),
        })
    }
}

fn short_digest(text: &str) -> String {
    use sha2::Digest as _;
    hex::encode(&sha2::Sha256::digest(text.as_bytes())[..8])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use airlock_config::ApiKey;
    use base64::Engine as _;
    use jsonwebtoken::{EncodingKey, Header, encode};
    use serde_json::json;

    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef-shared";

    fn config(keys: JwtKeys) -> JwtConfig {
        JwtConfig {
            issuer: "https://backend.example".to_owned(),
            audience: "airlock".to_owned(),
            keys,
            leeway: Duration::from_secs(60),
            any_tenant: false,
        }
    }

    fn now() -> i64 {
        jsonwebtoken::get_current_timestamp() as i64
    }

    fn claims() -> serde_json::Value {
        json!({
            "iss": "https://backend.example", "aud": "airlock", "sub": "svc-1",
            "exp": now() + 300, "tenant": "acme", "role": "act",
        })
    }

    fn hs(claims: &serde_json::Value, secret: &str) -> String {
        encode(
            &Header::new(Algorithm::HS256),
            claims,
            &EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    }

    fn with(
        mut claims: serde_json::Value,
        key: &str,
        value: serde_json::Value,
    ) -> serde_json::Value {
        if value.is_null() {
            claims.as_object_mut().unwrap().remove(key);
        } else {
            claims[key] = value;
        }
        claims
    }

    #[test]
    fn hs256_tokens_are_accepted_only_when_every_claim_holds() {
        let verifier =
            JwtVerifier::new(&config(JwtKeys::Hs256(ApiKey::new(SECRET))), None).unwrap();
        let principal = verifier.verify(&hs(&claims(), SECRET)).unwrap();
        assert_eq!(
            (principal.tenant.as_str(), principal.role),
            ("acme", Role::Act)
        );
        assert!(principal.key.unwrap().starts_with("jwt:"));

        let cases = [
            (
                hs(&claims(), "another-secret-another-secret-xx"),
                JwtRefusal::BadSignature,
            ),
            (
                hs(&with(claims(), "aud", json!("someone-else")), SECRET),
                JwtRefusal::WrongAudience,
            ),
            (
                hs(
                    &with(claims(), "iss", json!("https://evil.example")),
                    SECRET,
                ),
                JwtRefusal::WrongIssuer,
            ),
            (
                hs(&with(claims(), "exp", json!(now() - 120)), SECRET),
                JwtRefusal::Expired,
            ),
            (
                hs(&with(claims(), "nbf", json!(now() + 600)), SECRET),
                JwtRefusal::Expired,
            ),
            (
                hs(&with(claims(), "tenant", json!(null)), SECRET),
                JwtRefusal::MissingTenant,
            ),
            (
                hs(&with(claims(), "tenant", json!("../other")), SECRET),
                JwtRefusal::MissingTenant,
            ),
            (
                hs(&with(claims(), "role", json!("root")), SECRET),
                JwtRefusal::MissingRole,
            ),
            (
                hs(&with(claims(), "exp", json!(null)), SECRET),
                JwtRefusal::Malformed,
            ),
            (
                "eyJhbGciOiJIUzI1NiJ9.not-json.sig".to_owned(),
                JwtRefusal::BadSignature,
            ),
            ("not a jwt".to_owned(), JwtRefusal::Malformed),
        ];
        for (token, refusal) in cases {
            assert_eq!(verifier.verify(&token).unwrap_err(), refusal, "{token}");
        }
        // Within the leeway, a token just past `exp` still passes.
        assert!(
            verifier
                .verify(&hs(&with(claims(), "exp", json!(now() - 30)), SECRET))
                .is_ok()
        );
        // `alg: none` never verifies.
        let b64 = |v: &serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        let none = format!(
            "{}.{}.",
            b64(&json!({"alg": "none", "typ": "JWT"})),
            b64(&claims())
        );
        assert!(verifier.verify(&none).is_err());
    }

    #[test]
    fn a_jwks_key_verifies_its_own_algorithm_only() {
        // An Ed25519 key: PKCS#8 for signing, its public half as a JWK.
        let seed = [7u8; 32];
        let signing = ed25519_dalek::SigningKey::from_bytes(&seed);
        let public = signing.verifying_key().to_bytes();
        let mut der = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        der.extend_from_slice(&seed);
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(public);
        let jwks = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "k1", "alg": "EdDSA", "use": "sig"}]});
        let verifier = JwtVerifier::new(
            &config(JwtKeys::JwksFile("jwks.json".into())),
            Some(&jwks.to_string()),
        )
        .unwrap();
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some("k1".to_owned());
        let token = encode(&header, &claims(), &EncodingKey::from_ed_der(&der)).unwrap();
        assert_eq!(verifier.verify(&token).unwrap().tenant, "acme");
        // The public key used as an HMAC secret (algorithm confusion) is refused.
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".to_owned());
        let forged = encode(&header, &claims(), &EncodingKey::from_secret(&public)).unwrap();
        assert_eq!(
            verifier.verify(&forged).unwrap_err(),
            JwtRefusal::BadSignature
        );
        // Another key id names no key.
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some("k2".to_owned());
        let other = encode(&header, &claims(), &EncodingKey::from_ed_der(&der)).unwrap();
        assert_eq!(
            verifier.verify(&other).unwrap_err(),
            JwtRefusal::BadSignature
        );
        // A JWKS with a shared secret in it is a configuration error.
        let oct = json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]});
        assert!(
            JwtVerifier::new(
                &config(JwtKeys::JwksFile("j".into())),
                Some(&oct.to_string())
            )
            .is_err()
        );
    }
}
