//! The REST surface's one error: an [`ErrorCode`] (which fixes the HTTP status), a
//! one-line message and, over a cap, when to retry. Handlers return
//! `Result<_, ApiError>`; the typed extractors here turn a query or body that does not
//! parse into the same `invalid_argument` envelope, so no route answers in a shape of
//! its own. Body: `{"error": {"code", "message", "retry_after_secs"?}}`.

use airlock_core::{ErrorCode, HasErrorCode as _};
use axum::Json;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use serde::Serialize;
use utoipa::ToSchema;

/// A failed request, as every `/api` route answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    code: ErrorCode,
    message: String,
    retry_after_secs: Option<u64>,
}

impl ApiError {
    /// A failure with `code` and a one-line message.
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            retry_after_secs: None,
        }
    }

    /// An argument, query or body that cannot be used as given.
    pub(crate) fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::InvalidArgument, message)
    }

    /// This failure, saying when to try again (a field and `Retry-After`).
    pub(crate) fn retry_after(mut self, secs: u64) -> ApiError {
        self.retry_after_secs = Some(secs);
        self
    }

    /// Its HTTP status, the code's.
    pub(crate) fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl From<airlock_gateway::Error> for ApiError {
    fn from(e: airlock_gateway::Error) -> ApiError {
        ApiError::from(&e)
    }
}

impl From<&airlock_gateway::Error> for ApiError {
    fn from(e: &airlock_gateway::Error) -> ApiError {
        ApiError {
            code: e.code(),
            message: e.to_string(),
            retry_after_secs: e.retry_after_secs(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = ErrorBody::new(self.code.as_str(), &self.message, self.retry_after_secs);
        let mut response = (status, Json(body)).into_response();
        // Over a cap, the header a generic client reads as well as the field.
        if let Some(secs) = self.retry_after_secs
            && let Ok(value) = HeaderValue::from_str(&secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

/// A query string read into `T`; one that does not parse is `invalid_argument`.
pub(crate) struct ApiQuery<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|e| ApiError::invalid(e.body_text()))
    }
}

/// A JSON request body a route reads, and what the route calls it in a refusal.
pub(crate) trait JsonBody: DeserializeOwned {
    /// What a body of this route is, in "the body is not {WHAT}".
    const WHAT: &'static str;

    /// The value of an empty body (or `null`), where the route allows one.
    fn empty() -> Option<Self> {
        None
    }
}

/// A request body read into `T`: one that is not `T` is `invalid_argument` naming
/// what was expected; one over the body limit keeps axum's 413.
pub(crate) struct ApiJson<T>(pub(crate) T);

impl<S: Send + Sync, T: JsonBody> FromRequest<S> for ApiJson<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let refused =
            |why: String| ApiError::invalid(format!("the body is not {}: {why}", T::WHAT));
        let empty = || T::empty().ok_or_else(|| refused("it is empty".to_owned()));
        let body = if bytes.iter().all(u8::is_ascii_whitespace) {
            empty()
        } else {
            match serde_json::from_slice::<Option<T>>(&bytes) {
                Ok(Some(body)) => Ok(body),
                Ok(None) => empty(),
                Err(e) => Err(refused(e.to_string())),
            }
        };
        body.map(ApiJson).map_err(IntoResponse::into_response)
    }
}

/// A failure: a code an agent or operator can act on, and a one-line message.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorDetail {
    /// `invalid_argument`, `not_found`, `forbidden`, `quota_exceeded` …
    code: String,
    /// One line for a person.
    message: String,
    /// Over a cap: seconds until a retry may succeed.
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_secs: Option<u64>,
}

impl ErrorBody {
    pub(crate) fn new(code: &str, message: &str, retry_after_secs: Option<u64>) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: code.to_owned(),
                message: message.to_owned(),
                retry_after_secs,
            },
        }
    }
}
