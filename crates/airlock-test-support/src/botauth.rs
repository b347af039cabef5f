//! A site that verifies Web Bot Auth signatures the way a real one does, served on
//! loopback by a test: every request it receives is recorded with the signature
//! headers it carried and verified by Cloudflare's `web-bot-auth` crate (an
//! implementation Airlock's signer shares no code with) against the keys the test
//! tells it to trust, at the authority the request was sent to. Its pages make the
//! requests a browser makes: a document, an image, a same-origin fetch, a fetch to
//! another origin, a fetch carrying forged signature headers, a redirect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use web_bot_auth::components::{
    CoveredComponent, DerivedComponent, HTTPField, HTTPFieldParameters,
};
use web_bot_auth::keyring::{Algorithm, KeyRing};
use web_bot_auth::message_signatures::SignedMessage;

/// One request as the site received it.
#[derive(Debug, Clone)]
pub struct Received {
    /// `METHOD path?query`.
    pub line: String,
    /// The `Host` it was sent to.
    pub authority: String,
    /// Its `Signature-Agent`, `Signature-Input` and `Signature` headers, when present.
    pub signature_agent: Option<String>,
    /// `Signature-Input`.
    pub signature_input: Option<String>,
    /// `Signature`.
    pub signature: Option<String>,
    /// What verifying it found: the key id that signed it, or why it did not verify
    /// (`unsigned` when it carried no signature).
    pub verified: Result<String, String>,
}

impl Received {
    /// Whether it carried any of the three headers.
    pub fn signed(&self) -> bool {
        self.signature_agent.is_some() || self.signature_input.is_some() || self.signature.is_some()
    }
}

#[derive(Default)]
struct Inner {
    received: Vec<Received>,
    // Trusted keys: key id → Ed25519 public key.
    keys: HashMap<String, Vec<u8>>,
}

/// The running site (its server stops with the test's runtime).
#[derive(Clone)]
pub struct VerifyingSite {
    inner: Arc<Mutex<Inner>>,
    /// Its loopback port.
    pub port: u16,
}

fn lock(inner: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(|e| e.into_inner())
}

impl VerifyingSite {
    /// Starts it on `127.0.0.1:0`.
    pub async fn start() -> VerifyingSite {
        let inner = Arc::new(Mutex::new(Inner::default()));
        let app = Router::new()
            .route("/page", axum::routing::get(page))
            .route("/go", axum::routing::get(go))
            .route("/pay", axum::routing::get(pay))
            .fallback(any)
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let port = listener.local_addr().expect("a bound port").port();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        VerifyingSite { inner, port }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A URL of the site.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    /// Trusts the Ed25519 public key `public` under key id `kid`.
    pub fn trust(&self, kid: &str, public: &[u8]) {
        lock(&self.inner)
            .keys
            .insert(kid.to_owned(), public.to_vec());
    }

    /// Trusts every key of a key directory's JSON body (`{"keys":[{"kid","x"}]}`).
    pub fn trust_directory(&self, body: &str) {
        use base64::Engine as _;
        let Ok(value) = serde_json::from_str::<serde_json::Value>(body) else {
            return;
        };
        for key in value["keys"].as_array().into_iter().flatten() {
            if let (Some(kid), Some(x)) = (key["kid"].as_str(), key["x"].as_str())
                && let Ok(public) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(x)
            {
                self.trust(kid, &public);
            }
        }
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.inner).received.clone()
    }

    /// What was received at paths starting with `prefix`.
    pub fn received_at(&self, prefix: &str) -> Vec<Received> {
        self.received()
            .into_iter()
            .filter(|r| {
                r.line
                    .split_once(' ')
                    .is_some_and(|(_, path)| path.starts_with(prefix))
            })
            .collect()
    }
}

// A page that makes the requests a browser makes: its document (this), an image,
// a same-origin fetch, a fetch to `other` (no-cors), one with forged signature
// headers to `forge` (when given); "done" once they ended.
async fn page(
    State(inner): State<Arc<Mutex<Inner>>>,
    Query(q): Query<HashMap<String, String>>,
    request: Request,
) -> Response {
    record(&inner, &request);
    let other =
        serde_json::to_string(q.get("other").map_or("", String::as_str)).unwrap_or_default();
    let forge =
        serde_json::to_string(q.get("forge").map_or("", String::as_str)).unwrap_or_default();
    Html(format!(
        r#"<!doctype html><title>signed</title><img src="/pixel.png" alt="pixel">
<p id="status">working</p>
<script>
(async () => {{
  const other = {other}, forge = {forge};
  await fetch('/api/same').catch(() => {{}});
  if (other) await fetch(other, {{ mode: 'no-cors' }}).catch(() => {{}});
  if (forge) await fetch(forge, {{ mode: 'cors', headers: {{
    'Signature-Agent': 'sig1="https://forged.example"',
    'Signature-Input': 'sig1=("@authority");created=1;keyid="forged";tag="web-bot-auth"',
    'Signature': 'sig1=:Zm9yZ2Vk:' }} }}).catch(() => {{}});
  document.getElementById('status').textContent = 'done';
}})();
</script>"#
    ))
    .into_response()
}

// A page whose harmless-looking button POSTs a transfer (an effect rule holds it).
async fn pay(State(inner): State<Arc<Mutex<Inner>>>, request: Request) -> Response {
    record(&inner, &request);
    Html(
        r#"<!doctype html><title>pay</title><button id="b">Show details</button><p id="status">ready</p>
<script>
document.getElementById('b').onclick = async () => {
  const r = await fetch('/transfer', { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'amount=5000&iban=DE89370400440532013000' }).catch(() => null);
  document.getElementById('status').textContent = r ? 'sent ' + r.status : 'failed';
};
</script>"#,
    )
    .into_response()
}

// A redirect to `to`.
async fn go(
    State(inner): State<Arc<Mutex<Inner>>>,
    Query(q): Query<HashMap<String, String>>,
    request: Request,
) -> Response {
    record(&inner, &request);
    match q.get("to") {
        Some(to) => Redirect::to(to).into_response(),
        None => StatusCode::BAD_REQUEST.into_response(),
    }
}

// Anything else: recorded, answered with a small body any page may read (CORS
// open, preflights allowed, so a forged header reaches the site to be seen).
async fn any(State(inner): State<Arc<Mutex<Inner>>>, request: Request) -> Response {
    record(&inner, &request);
    let mut response = if request.uri().path().ends_with(".png") {
        ([(header::CONTENT_TYPE, "image/png")], PIXEL.to_vec()).into_response()
    } else {
        "ok".into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        "access-control-allow-origin",
        "*".parse().expect("a header value"),
    );
    headers.insert(
        "access-control-allow-headers",
        "*".parse().expect("a header value"),
    );
    response
}

// A 1×1 transparent PNG.
const PIXEL: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

fn record(inner: &Mutex<Inner>, request: &Request) {
    let headers = request.headers();
    let get = |name: &str| {
        let values: Vec<&str> = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        (!values.is_empty()).then(|| values.join(", "))
    };
    let authority = get("host").unwrap_or_default();
    let mut received = Received {
        line: format!(
            "{} {}",
            request.method(),
            request.uri().path_and_query().map_or("/", |p| p.as_str())
        ),
        authority,
        signature_agent: get("signature-agent"),
        signature_input: get("signature-input"),
        signature: get("signature"),
        verified: Err("unsigned".to_owned()),
    };
    let mut inner = lock(inner);
    if received.signed() {
        received.verified = verify(&received, &inner.keys, headers);
    }
    inner.received.push(received);
}

struct Message<'a> {
    received: &'a Received,
    headers: &'a HeaderMap,
}

impl SignedMessage for Message<'_> {
    fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
        match name {
            CoveredComponent::HTTP(HTTPField { name, parameters }) => {
                let values: Vec<String> = self
                    .headers
                    .get_all(name.as_str())
                    .iter()
                    .filter_map(|v| v.to_str().ok().map(str::to_owned))
                    .collect();
                if values.is_empty() {
                    return values;
                }
                let joined = values.join(", ");
                // `;key=` names one member of a dictionary field (RFC 9421 §2.1.2).
                match parameters.0.iter().find_map(|p| match p {
                    HTTPFieldParameters::Key(k) => Some(k),
                    _ => None,
                }) {
                    Some(k) => member(&joined, k).into_iter().collect(),
                    None => vec![joined],
                }
            }
            CoveredComponent::Derived(DerivedComponent::Authority { .. }) => {
                vec![self.received.authority.to_ascii_lowercase()]
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

// The key id that signed `received`, or why it does not verify.
fn verify(
    received: &Received,
    keys: &HashMap<String, Vec<u8>>,
    headers: &HeaderMap,
) -> Result<String, String> {
    let message = Message { received, headers };
    let verifier =
        web_bot_auth::WebBotAuthVerifier::parse(&message).map_err(|e| format!("unparsed: {e}"))?;
    let details = &verifier.get_parsed_label().base.parameters.details;
    let kid = details.keyid.clone().unwrap_or_default();
    if details.possibly_insecure(|_| false).is_expired != Some(false) {
        return Err("expired".to_owned());
    }
    let public = keys.get(&kid).ok_or_else(|| format!("unknown key {kid}"))?;
    let mut keyring = KeyRing::default();
    keyring.import_raw(kid.clone(), Algorithm::Ed25519, public.clone());
    verifier
        .verify(&keyring, None)
        .map(|_| kid)
        .map_err(|e| format!("invalid: {e}"))
}
