//! The draft's published Ed25519 test vectors, reproduced byte for byte (Ed25519 is
//! deterministic), and a fresh signature verified by Cloudflare's `web-bot-auth` crate.

use super::*;
use web_bot_auth::components::{
    CoveredComponent, DerivedComponent, HTTPField, HTTPFieldParameters,
};
use web_bot_auth::keyring::{Algorithm, KeyRing};
use web_bot_auth::message_signatures::SignedMessage;

// RFC 9421 Appendix B.1.4, `test-key-ed25519` (a published test key).
const TEST_SEED: [u8; 32] = [
    0x9f, 0x83, 0x62, 0xf8, 0x7a, 0x48, 0x4a, 0x95, 0x4e, 0x6e, 0x74, 0x0c, 0x5b, 0x4c, 0x0e, 0x84,
    0x22, 0x91, 0x39, 0xa2, 0x0a, 0xa8, 0xab, 0x56, 0xff, 0x66, 0x58, 0x6f, 0x6a, 0x7d, 0x29, 0xc5,
];
const TEST_KID: &str = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";

fn test_key() -> SigningKey {
    SigningKey::from_bytes(&TEST_SEED)
}

#[test]
fn the_key_id_is_the_drafts_thumbprint() {
    assert_eq!(thumbprint(&test_key().verifying_key().to_bytes()), TEST_KID);
    let jwk = Jwk::of(&test_key().verifying_key().to_bytes());
    assert_eq!(jwk.x, "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs");
}

// draft-meunier-webbotauth-httpsig-protocol, "EdDSA Using Curve edwards25519",
// "Signature-Agent Included Present on the Request".
#[test]
fn the_drafts_request_vector_is_reproduced() {
    let agent = Agent {
        url: "https://signature-agent.test".to_owned(),
        kind: None,
    };
    let window = Window {
        created: 1_735_689_600,
        expires: 4_889_289_600,
        nonce: "n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA=="
            .to_owned(),
    };
    let base = request_base(TEST_KID, "example.com", &agent, "agent2", &window).unwrap();
    assert_eq!(
        base,
        concat!(
            "\"@authority\": example.com\n",
            "\"signature-agent\";key=\"agent2\": \"https://signature-agent.test\"\n",
            "\"@signature-params\": (\"@authority\" \"signature-agent\";key=\"agent2\")",
            ";created=1735689600;keyid=\"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U\"",
            ";alg=\"ed25519\";expires=4889289600",
            ";nonce=\"n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA==\"",
            ";tag=\"web-bot-auth\""
        )
    );
    // The vector labels its signature `sig2` and its agent member `agent2`; a label
    // is outside the signature base, so signing under `agent2` gives its bytes.
    let signed = sign_request(
        &test_key(),
        TEST_KID,
        "Example.COM",
        &agent,
        "agent2",
        &window,
    )
    .unwrap();
    assert_eq!(
        signed.signature_agent,
        "agent2=\"https://signature-agent.test\""
    );
    assert_eq!(
        signed.signature,
        "agent2=:RdNFx5Bj6au3YgAMQL/RzmUlZE8QZLIaXGRpw985hWnwPfMxT228NMk6ehRS1PSl4e8PhbNZACSanGdhEwYCCg==:"
    );
    assert!(signed.signature_input.starts_with(
        "agent2=(\"@authority\" \"signature-agent\";key=\"agent2\");created=1735689600;"
    ));
}

// The same draft, "Signed Directory Response".
#[test]
fn the_drafts_directory_vector_is_reproduced() {
    let body = directory_body(&[Jwk::of(&test_key().verifying_key().to_bytes())]);
    assert_eq!(
        String::from_utf8(body.clone()).unwrap(),
        r#"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs","use":"sig"}]}"#
    );
    let digest = content_digest(&body);
    assert_eq!(
        digest,
        "sha-256=:CADMT2aBdV/rqQr/NIru64ERQkCobVvllA4V0fLFDu0=:"
    );
    let (input, signature) = sign_directory(
        &test_key(),
        TEST_KID,
        "signature-agent.test",
        &digest,
        "binding",
        1_735_689_600,
        4_889_289_600,
    )
    .unwrap();
    assert_eq!(
        input,
        concat!(
            "binding=(\"@authority\";req \"content-digest\");created=1735689600",
            ";expires=4889289600;keyid=\"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U\"",
            ";tag=\"http-message-signatures-directory\""
        )
    );
    assert_eq!(
        signature,
        "binding=:l6P8R67tm3kujAxbHWio7ll01qrEZ0dKD/WWlGhNYEmTnFZM8Wt0VQ9zqGfvo7T/UMkBxsigzChM1Gpz7gOVBg==:"
    );
}

struct Received {
    authority: String,
    signed: RequestSignature,
}

impl SignedMessage for Received {
    fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
        match name {
            CoveredComponent::HTTP(HTTPField { name, parameters }) => {
                let value = match name.as_str() {
                    "signature" => &self.signed.signature,
                    "signature-input" => &self.signed.signature_input,
                    "signature-agent" => &self.signed.signature_agent,
                    _ => return vec![],
                };
                // `;key=` names one member of a dictionary field (RFC 9421 §2.1.2).
                match parameters.0.iter().find_map(|p| match p {
                    HTTPFieldParameters::Key(k) => Some(k),
                    _ => None,
                }) {
                    Some(k) => member(value, k).into_iter().collect(),
                    None => vec![value.clone()],
                }
            }
            CoveredComponent::Derived(DerivedComponent::Authority { .. }) => {
                vec![self.authority.clone()]
            }
            _ => vec![],
        }
    }
}

// A dictionary member's value as serialized, parameters included.
fn member(header: &str, key: &str) -> Option<String> {
    let dict = sfv::Parser::new(header).parse_dictionary().ok()?;
    match dict.get(key)? {
        sfv::ListEntry::Item(item) => Some(sfv::SerializeValue::serialize_value(item)),
        sfv::ListEntry::InnerList(_) => None,
    }
}

fn verified(received: &Received, key: &SigningKey) -> Result<(), String> {
    let verifier = web_bot_auth::WebBotAuthVerifier::parse(received).map_err(|e| e.to_string())?;
    let advisory = verifier
        .get_parsed_label()
        .base
        .parameters
        .details
        .possibly_insecure(|_| false);
    if advisory.is_expired != Some(false) {
        return Err("expired".to_owned());
    }
    let mut keyring = KeyRing::default();
    keyring.import_raw(
        thumbprint(&key.verifying_key().to_bytes()),
        Algorithm::Ed25519,
        key.verifying_key().to_bytes().to_vec(),
    );
    verifier
        .verify(&keyring, None)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn a_fresh_signature_verifies_with_cloudflares_crate_for_its_authority_only() {
    let key = SigningKey::from_bytes(&[7u8; 32]);
    let kid = thumbprint(&key.verifying_key().to_bytes());
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let agent = Agent {
        url: "https://airlock.example".to_owned(),
        kind: None,
    };
    let window = Window {
        created,
        expires: created + 60,
        nonce: nonce().unwrap(),
    };
    let signed = sign_request(&key, &kid, "shop.example:8443", &agent, "sig1", &window).unwrap();
    let at = |authority: &str| Received {
        authority: authority.to_owned(),
        signed: signed.clone(),
    };
    assert_eq!(verified(&at("shop.example:8443"), &key), Ok(()));
    // Replayed at another authority, or with another key, it does not verify.
    assert!(verified(&at("other.example:8443"), &key).is_err());
    assert!(
        verified(
            &at("shop.example:8443"),
            &SigningKey::from_bytes(&[8u8; 32])
        )
        .is_err()
    );
    // A jwks_uri agent carries its type, and still verifies.
    let typed = Agent {
        url: "https://airlock.example/identity/acme/directory".to_owned(),
        kind: Some("jwks_uri"),
    };
    let signed = sign_request(&key, &kid, "shop.example", &typed, "sig1", &window).unwrap();
    assert_eq!(
        signed.signature_agent,
        "sig1=\"https://airlock.example/identity/acme/directory\";type=jwks_uri"
    );
    assert_eq!(
        verified(
            &Received {
                authority: "shop.example".to_owned(),
                signed
            },
            &key
        ),
        Ok(())
    );
}

#[test]
fn authority_is_rfc_9421s() {
    let of = |u: &str| authority(&url::Url::parse(u).unwrap());
    assert_eq!(
        of("https://Shop.Example/a?b").as_deref(),
        Some("shop.example")
    );
    assert_eq!(
        of("https://shop.example:443/").as_deref(),
        Some("shop.example")
    );
    assert_eq!(
        of("http://127.0.0.1:8080/x").as_deref(),
        Some("127.0.0.1:8080")
    );
    assert_eq!(of("http://[::1]:81/").as_deref(), Some("[::1]:81"));
    assert_eq!(of("data:text/plain,x"), None);
}
