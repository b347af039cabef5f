//! A scripted model endpoint on loopback: a real HTTP server speaking the
//! chat-completions wire format, answering each request with the next canned reply
//! and recording every request as it arrived (body, key header, time). For tests
//! of server-side tasks.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One canned reply.
pub enum Reply {
    /// 200 with this JSON.
    Json(Value),
    /// This status, with `Retry-After` when given.
    Status(u16, Option<&'static str>),
    /// 200 with this text as the body.
    Raw(&'static str),
    /// No answer until the client goes away.
    Hang,
}

/// A request as it arrived.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Its body, as sent.
    pub body: String,
    /// The path it was posted to.
    pub path: String,
    /// Its `Authorization` header.
    pub authorization: Option<String>,
    /// Its `x-api-key` header (Anthropic's).
    pub api_key: Option<String>,
    /// When it arrived.
    pub at: Instant,
}

struct Script {
    replies: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
    arrived: tokio::sync::Notify,
}

/// The scripted model endpoint; stopped when dropped.
pub struct ModelServer {
    port: u16,
    script: Arc<Script>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ModelServer {
    /// Starts it on `127.0.0.1:0`, answering with `replies` in order (then 400).
    pub async fn start(replies: Vec<Reply>) -> ModelServer {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into()),
            seen: Mutex::default(),
            arrived: tokio::sync::Notify::new(),
        });
        // Every family's path: chat completions, OpenAI's responses, Anthropic's
        // messages.
        let app = axum::Router::new()
            .fallback(axum::routing::post(answer))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the model server");
        let port = listener.local_addr().expect("its address").port();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ModelServer { port, script, task }
    }

    /// Its chat-completions URL.
    pub fn url(&self) -> String {
        self.url_at("/v1/chat/completions")
    }

    /// Its URL at `path`.
    pub fn url_at(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// `[[models]]` and `[tasks]` with this server as the one model, `scripted` (the
    /// `tools` style), sent `key` as its API key when given.
    pub fn tasks(&self, key: Option<&str>) -> airlock_config::Tasks {
        self.tasks_styled(key, airlock_config::ModelStyle::Tools)
    }

    /// Like [`ModelServer::tasks`], speaking `style` at its family's path.
    pub fn tasks_styled(
        &self,
        key: Option<&str>,
        style: airlock_config::ModelStyle,
    ) -> airlock_config::Tasks {
        let path = match style {
            airlock_config::ModelStyle::OpenAiComputerUse => "/v1/responses",
            airlock_config::ModelStyle::AnthropicComputerUse => "/v1/messages",
            _ => "/v1/chat/completions",
        };
        airlock_config::Tasks {
            models: vec![airlock_config::Model {
                name: "scripted".into(),
                style,
                url: self.url_at(path).parse().expect("the server's URL"),
                model: "scripted-1".into(),
                key: key.map_or(airlock_config::ModelKey::None, |key| {
                    airlock_config::ModelKey::Value(airlock_config::ApiKey::new(key))
                }),
                timeout: Duration::from_secs(20),
            }],
            default_model: Some("scripted".into()),
            ..airlock_config::Tasks::default()
        }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.script
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits until `n` requests have arrived.
    pub async fn requests(&self, n: usize) {
        loop {
            let arrived = self.script.arrived.notified();
            if self
                .script
                .seen
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .len()
                >= n
            {
                return;
            }
            tokio::time::timeout(Duration::from_secs(60), arrived)
                .await
                .expect("the model server was not asked in time");
        }
    }
}

async fn answer(
    State(script): State<Arc<Script>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: String,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    script
        .seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Seen {
            body,
            path: uri.path().to_owned(),
            authorization: header("authorization"),
            api_key: header("x-api-key"),
            at: Instant::now(),
        });
    script.arrived.notify_waiters();
    let reply = script
        .replies
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .pop_front();
    match reply {
        Some(Reply::Json(value)) => axum::Json(value).into_response(),
        Some(Reply::Raw(text)) => text.into_response(),
        Some(Reply::Status(code, after)) => {
            let mut response = StatusCode::from_u16(code)
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
                .into_response();
            if let Some(after) = after {
                response
                    .headers_mut()
                    .insert("retry-after", axum::http::HeaderValue::from_static(after));
            }
            response
        }
        Some(Reply::Hang) => std::future::pending().await,
        None => (StatusCode::BAD_REQUEST, "the script ran out").into_response(),
    }
}

/// A chat completion calling `calls` (name, arguments) in order.
pub fn calls(calls: &[(&str, Value)]) -> Reply {
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            json!({"id": format!("call_{i}"), "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    Reply::Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
                     "message": {"role": "assistant", "content": null, "tool_calls": tool_calls}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}
    }))
}

/// A chat completion finishing with `answer`.
pub fn finish(answer: &str) -> Reply {
    calls(&[("finish", json!({ "answer": answer }))])
}
