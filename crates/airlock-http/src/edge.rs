//! What every request is checked for before any route sees it: `/mcp`, `/api/v1`, the
//! console and its live socket, the event stream and `/metrics` alike, so no surface
//! can be reached by a web page the operator happens to have open.
//!
//! - **Host** (when the server is bound to loopback): one of the names it is bound to.
//!   A DNS-rebinding page reaches `127.0.0.1` under its own name and is refused.
//! - **Origin**: when a browser sends one, it must be listed (`[server]
//!   allowed_origins`, the server's own and its public URL's). A request without one
//!   that a browser marks cross-site (`Sec-Fetch-Site`) and that could change
//!   something (any method but GET, HEAD, OPTIONS) is refused too.
//! - **Content type**: a body sent to `/mcp` or `/api/v1` is JSON and says so. A page
//!   may send `text/plain` without a CORS preflight; JSON it may not.
//!
//! Health probes (`/healthz`, `/readyz`) answer to any host: they say nothing.

use airlock_core::ErrorCode;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The names and origins requests must come with.
#[derive(Debug, Clone, Default)]
pub(crate) struct Edge {
    /// Host names (no port) a request may name; empty: any (a server bound to a
    /// public address requires a token instead).
    pub(crate) hosts: Vec<String>,
    /// Browser origins (`scheme://host[:port]`) a request may come from.
    pub(crate) origins: Vec<String>,
}

impl Edge {
    // Why `request` is refused here, if it is: status, code and one line.
    fn refusal(&self, headers: &HeaderMap, method: &Method, path: &str) -> Option<Refusal> {
        if matches!(path, "/healthz" | "/readyz") {
            return None;
        }
        if !self.hosts.is_empty() {
            let host = headers
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(host_name);
            if !host.is_some_and(|h| self.hosts.iter().any(|a| a.eq_ignore_ascii_case(&h))) {
                return Some(Refusal::forbidden(
                    "this server answers only to the names it listens on (the Host header named another)",
                ));
            }
        }
        let unsafe_method = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        match headers.get(header::ORIGIN) {
            Some(origin) => {
                let origin = origin.to_str().unwrap_or_default();
                if !self.origins.iter().any(|o| o == origin) {
                    return Some(Refusal::forbidden(
                        "requests from this browser origin are not allowed; list it in [server] allowed_origins",
                    ));
                }
            }
            None if unsafe_method => {
                let site = headers
                    .get("sec-fetch-site")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("none");
                if site == "cross-site" || site == "same-site" {
                    return Some(Refusal::forbidden(
                        "a cross-site browser request is not allowed here",
                    ));
                }
            }
            None => {}
        }
        let json_route = path == "/mcp" || path.starts_with("/mcp/") || path.starts_with("/api/");
        if json_route && unsafe_method && has_body(headers) && !is_json(headers) {
            return Some(Refusal {
                status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
                code: ErrorCode::InvalidArgument,
                message: "send the body as JSON with Content-Type: application/json",
            });
        }
        None
    }
}

struct Refusal {
    // The code's own status, but for a body that is not JSON (415).
    status: StatusCode,
    code: ErrorCode,
    message: &'static str,
}

impl Refusal {
    fn forbidden(message: &'static str) -> Refusal {
        Refusal {
            status: StatusCode::FORBIDDEN,
            code: ErrorCode::Forbidden,
            message,
        }
    }
}

/// The check, as a layer over the whole router.
pub(crate) async fn check(State(edge): State<Arc<Edge>>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let Some(refusal) = edge.refusal(request.headers(), request.method(), path) else {
        return next.run(request).await;
    };
    tracing::warn!(
        path,
        method = %request.method(),
        status = refusal.status.as_u16(),
        why = refusal.message,
        "refused a request at the edge"
    );
    if path.starts_with("/api/") {
        let mut response =
            crate::error::ApiError::new(refusal.code, refusal.message).into_response();
        *response.status_mut() = refusal.status;
        response
    } else {
        (refusal.status, format!("{}\n", refusal.message)).into_response()
    }
}

// The host name of a `Host` header: its port and an IPv6 literal's brackets dropped.
fn host_name(host: &str) -> String {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default().to_owned();
    }
    host.rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(host, |(name, _)| name)
        .trim_end_matches('.')
        .to_owned()
}

fn has_body(headers: &HeaderMap) -> bool {
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    length.is_some_and(|n| n > 0) || headers.contains_key(header::TRANSFER_ENCODING)
}

// `application/json` or any `+json` type, parameters (charset) allowed.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, v.parse().unwrap());
        }
        map
    }

    #[test]
    fn host_names_lose_their_port_and_brackets() {
        assert_eq!(host_name("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_name("[::1]:8080"), "::1");
        assert_eq!(host_name("localhost"), "localhost");
        assert_eq!(host_name("localhost.:80"), "localhost");
        assert_eq!(host_name("evil.example:8080"), "evil.example");
    }

    #[test]
    fn json_is_told_by_its_essence() {
        assert!(is_json(&headers(&[(
            "content-type",
            "application/json; charset=utf-8"
        )])));
        assert!(is_json(&headers(&[(
            "content-type",
            "application/merge-patch+json"
        )])));
        assert!(!is_json(&headers(&[("content-type", "text/plain")])));
        assert!(!is_json(&headers(&[(
            "content-type",
            "application/x-www-form-urlencoded"
        )])));
        assert!(!is_json(&headers(&[])));
    }
}
