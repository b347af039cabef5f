//! The operator's model endpoints, as the control plane reaches them: directly (never
//! through a browser's egress proxy, nor a proxy from the environment), only at the
//! configured URL (no redirects), over TLS checked against the system's trust store
//! (plain http only to loopback, which config enforces), with a deadline per request
//! and retries on 429 and 5xx that honour `Retry-After`.

use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use airlock_config::{ApiKey, Model, ModelKey, ModelStyle};
use serde_json::Value;
use tokio::sync::OnceCell;
use zeroize::Zeroizing;

/// Longest answer read from a model endpoint; more is refused as malformed.
const MAX_ANSWER_BYTES: usize = 4 << 20;
/// The longest wait a `Retry-After` may ask for before a retry.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// Why a model request failed. The words name the model by its `[[models]]` name only:
/// the endpoint's address and key are the operator's.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// No answer within the model's timeout.
    #[error("the model `{0}` did not answer within its timeout")]
    Timeout(String),
    /// An HTTP error status, after the retries.
    #[error("the model `{model}` answered HTTP {status}{after}")]
    Status {
        /// The model's name.
        model: String,
        /// The last status.
        status: u16,
        /// Said when retries were spent.
        after: &'static str,
    },
    /// The endpoint could not be reached.
    #[error("the model `{0}` could not be reached")]
    Unreachable(String),
    /// An answer that is not what its style speaks.
    #[error("the model `{model}` answered something that is not a step: {why}")]
    Malformed {
        /// The model's name.
        model: String,
        /// What was wrong, in a few words.
        why: String,
    },
    /// Its API key could not be loaded.
    #[error("the model `{model}`'s API key could not be loaded: {why}")]
    Key {
        /// The model's name.
        model: String,
        /// Why.
        why: String,
    },
    /// The task's time ran out while waiting to retry.
    #[error("the task's time ran out waiting for the model `{0}`")]
    OutOfTime(String),
}

/// One configured model, ready to be asked.
pub(crate) struct Endpoint {
    config: Model,
    client: reqwest::Client,
    key: OnceCell<Option<Zeroizing<String>>>,
    vault: Option<Arc<airlock_vault::Vault>>,
    retries: u32,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("name", &self.config.name)
            .finish_non_exhaustive()
    }
}

/// A model's answer: its JSON and what it cost.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The body.
    pub body: Value,
    /// Tokens, as the endpoint counted them (prompt and answer), else estimated.
    pub tokens: u64,
}

impl Endpoint {
    /// An endpoint for `config`; a vault key is loaded from `vault` at first use.
    pub(crate) fn new(
        config: Model,
        vault: Option<Arc<airlock_vault::Vault>>,
        retries: u32,
    ) -> Result<Endpoint, ModelError> {
        // One process-wide provider (ring), as every other TLS use here; a second
        // install finds it there already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("airlock/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|_| ModelError::Unreachable(config.name.clone()))?;
        Ok(Endpoint {
            config,
            client,
            key: OnceCell::new(),
            vault,
            retries,
        })
    }

    /// Its `[[models]]` name.
    pub(crate) fn name(&self) -> &str {
        &self.config.name
    }

    /// How it is spoken to.
    pub(crate) fn style(&self) -> ModelStyle {
        self.config.style
    }

    /// The model id each request sends.
    pub(crate) fn model_id(&self) -> &str {
        &self.config.model
    }

    // The API key: from the environment (read at start-up), or the vault secret's
    // password, which must be bound to this endpoint's origin (a key is only ever
    // sent where the operator bound it).
    async fn key(&self) -> Result<Option<&Zeroizing<String>>, ModelError> {
        let name = &self.config.name;
        let key = self
            .key
            .get_or_try_init(|| async {
                match &self.config.key {
                    ModelKey::None => Ok(None),
                    ModelKey::Value(key) => {
                        Ok(Some(Zeroizing::new(ApiKey::expose(key).to_owned())))
                    }
                    ModelKey::Vault(secret) => {
                        let failed = |why: &str| ModelError::Key {
                            model: name.clone(),
                            why: why.to_owned(),
                        };
                        let vault = self
                            .vault
                            .as_ref()
                            .ok_or_else(|| failed("there is no vault"))?;
                        let found = vault
                            .get("default", secret)
                            .await
                            .map_err(|_| failed("no such secret in the default tenant"))?;
                        let origin = self.config.url.origin().ascii_serialization();
                        if !found.origins.iter().any(|o| o == &origin) {
                            return Err(failed("the secret is not bound to the endpoint's origin"));
                        }
                        let password = found
                            .fields
                            .password
                            .as_ref()
                            .map(|p| Zeroizing::new(p.to_string()))
                            .ok_or_else(|| failed("the secret has no password"))?;
                        Ok(Some(password))
                    }
                }
            })
            .await?;
        Ok(key.as_ref())
    }

    /// Posts `body`, retrying 429 and 5xx (at `Retry-After`, else 1 s, 2 s, 4 s …)
    /// as long as the task has time before `deadline`.
    pub(crate) async fn post(&self, body: &[u8], deadline: Instant) -> Result<Answer, ModelError> {
        let name = &self.config.name;
        let key = self.key().await?;
        let mut attempt = 0u32;
        loop {
            let mut request = self
                .client
                .post(self.config.url.clone())
                .header("content-type", "application/json")
                .body(body.to_vec());
            request = match (self.config.style, key) {
                // Anthropic's API takes its key and version in headers of its own.
                (ModelStyle::AnthropicComputerUse, key) => {
                    let request = request
                        .header("anthropic-version", "2023-06-01")
                        .header("anthropic-beta", crate::screen::ANTHROPIC_BETA);
                    match key {
                        Some(key) => {
                            let mut value = reqwest::header::HeaderValue::from_str(key.as_str())
                                .map_err(|_| ModelError::Key {
                                    model: name.clone(),
                                    why: "it is not a valid header value".to_owned(),
                                })?;
                            value.set_sensitive(true);
                            request.header("x-api-key", value)
                        }
                        None => request,
                    }
                }
                (_, Some(key)) => request.bearer_auth(key.as_str()),
                (_, None) => request,
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ModelError::OutOfTime(name.clone()));
            }
            let response = match tokio::time::timeout(left, request.send()).await {
                Err(_) => return Err(ModelError::OutOfTime(name.clone())),
                Ok(Err(e)) if e.is_timeout() => return Err(ModelError::Timeout(name.clone())),
                Ok(Err(e)) => {
                    tracing::warn!(model = %name, error = %e.without_url(), "a model endpoint could not be reached");
                    return Err(ModelError::Unreachable(name.clone()));
                }
                Ok(Ok(response)) => response,
            };
            let status = response.status();
            if status.as_u16() == 429 || status.is_server_error() {
                if attempt >= self.retries {
                    return Err(ModelError::Status {
                        model: name.clone(),
                        status: status.as_u16(),
                        after: " and went on refusing after the retries",
                    });
                }
                let wait = retry_after(response.headers())
                    .unwrap_or(Duration::from_secs(1 << attempt.min(5)))
                    .min(MAX_RETRY_WAIT);
                if Instant::now() + wait >= deadline {
                    return Err(ModelError::OutOfTime(name.clone()));
                }
                tracing::info!(model = %name, status = status.as_u16(), wait_ms = wait.as_millis() as u64, "a model endpoint asked to retry");
                tokio::time::sleep(wait).await;
                attempt += 1;
                continue;
            }
            if !status.is_success() {
                return Err(ModelError::Status {
                    model: name.clone(),
                    status: status.as_u16(),
                    after: "",
                });
            }
            let bytes = read_capped(response, name).await?;
            let body: Value =
                serde_json::from_slice(&bytes).map_err(|_| ModelError::Malformed {
                    model: name.clone(),
                    why: "the answer is not JSON".to_owned(),
                })?;
            let tokens =
                counted_tokens(&body).unwrap_or((body.to_string().len() + bytes.len()) as u64 / 4);
            // An endpoint that echoes the key it was sent (into a `finish` answer, an
            // argument) would have Airlock repeat it to the agent and the audit log:
            // every form of it is hidden before anything reads the answer.
            let mut body = body;
            if let Some(key) = key {
                let redactor = airlock_vault::Redactor::new([("endpoint-key", key.as_str())])
                    .map_err(|e| ModelError::Malformed {
                        model: name.clone(),
                        why: e.to_string(),
                    })?;
                redact_strings(&mut body, &redactor);
            }
            return Ok(Answer { body, tokens });
        }
    }
}

// The answer's body, at most `MAX_ANSWER_BYTES`.
async fn read_capped(mut response: reqwest::Response, name: &str) -> Result<Vec<u8>, ModelError> {
    let mut bytes = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(ModelError::Malformed {
                        model: name.to_owned(),
                        why: format!("the answer is over {MAX_ANSWER_BYTES} bytes"),
                    });
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(bytes),
            Err(e) if e.is_timeout() => return Err(ModelError::Timeout(name.to_owned())),
            Err(_) => return Err(ModelError::Unreachable(name.to_owned())),
        }
    }
}

// Tokens as the endpoint counted them: OpenAI's `usage.total_tokens`, or the sum of
// the input and output counts other families report.
fn counted_tokens(body: &Value) -> Option<u64> {
    let usage = body.get("usage")?;
    if let Some(total) = usage.get("total_tokens").and_then(Value::as_u64) {
        return Some(total);
    }
    let part = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| usage.get(*n).and_then(Value::as_u64))
    };
    match (
        part(&["prompt_tokens", "input_tokens"]),
        part(&["completion_tokens", "output_tokens"]),
    ) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

// `Retry-After`: seconds, or an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = httpdate::parse_http_date(text).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

// Every string of `value` (keys too) through `redactor`.
fn redact_strings(value: &mut Value, redactor: &airlock_vault::Redactor) {
    match value {
        Value::String(s) => {
            if let std::borrow::Cow::Owned(hidden) = redactor.redact(s) {
                *s = hidden;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_strings(v, redactor)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (k, mut v) in entries {
                redact_strings(&mut v, redactor);
                map.insert(redactor.redact(&k).into_owned(), v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        let later = std::time::SystemTime::now() + Duration::from_secs(30);
        headers.insert(
            reqwest::header::RETRY_AFTER,
            httpdate::fmt_http_date(later).parse().unwrap(),
        );
        let wait = retry_after(&headers).unwrap();
        assert!(
            wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        headers.insert(reqwest::header::RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn tokens_are_counted_as_each_family_reports_them() {
        let openai = serde_json::json!({"usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}});
        assert_eq!(counted_tokens(&openai), Some(15));
        let anthropic = serde_json::json!({"usage": {"input_tokens": 7, "output_tokens": 2}});
        assert_eq!(counted_tokens(&anthropic), Some(9));
        assert_eq!(counted_tokens(&serde_json::json!({})), None);
    }
}
