//! `POST /api/v1/workers`: a browser worker registers itself (`airlock worker
//! --register`), with the deployment's worker token as its bearer. Served only where
//! `[registration]` is configured; elsewhere the route is not there. A wrong token
//! counts against its client's address and is on the audit record, as a bad bearer
//! token anywhere else is.

use std::net::SocketAddr;
use std::sync::Arc;

use airlock_config::ApiKey;
use airlock_core::ErrorCode;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use serde::Deserialize;
use subtle::ConstantTimeEq as _;

use airlock_gateway::registry::Refused;

use crate::auth::Authenticator;
use crate::error::{ApiError, ApiJson, JsonBody};

/// What the route reads.
pub(crate) struct Registrar {
    pub(crate) auth: Arc<Authenticator>,
    pub(crate) token: Option<ApiKey>,
}

/// A worker's registration.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Registration {
    /// `host:port` replicas reach it at.
    address: String,
    /// Its process id, for the operator.
    #[serde(default)]
    pid: u32,
    /// The credential it made for itself at its start: replicas say it in their
    /// hello to it.
    token: zeroize::Zeroizing<String>,
}

impl JsonBody for Registration {
    const WHAT: &'static str =
        "a worker's registration ({\"address\": \"host:port\", \"token\": its own credential})";
}

pub(crate) async fn register(
    State(registrar): State<Arc<Registrar>>,
    request: Request,
) -> Response {
    let gateway = &registrar.auth.gateway;
    let Some(token) = registrar
        .token
        .as_ref()
        .filter(|_| gateway.takes_registrations())
    else {
        return ApiError::new(
            ErrorCode::NotFound,
            "this control plane takes no worker registrations ([registration] is not configured)",
        )
        .into_response();
    };
    let client = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let now = tokio::time::Instant::now();
    if let Some(refused) = crate::refuse_if_limited(&registrar.auth.limiter, client, now) {
        return refused;
    }
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    // The token first: nothing of the body is read for a caller without it.
    if !bool::from(presented.as_bytes().ct_eq(token.expose().as_bytes())) {
        if let Some(addr) = client {
            registrar.auth.limiter.failed(addr, now);
        }
        tracing::warn!(
            surface = "workers",
            "a worker registration without the worker token"
        );
        crate::record_auth_failure(gateway, "workers", "not the worker token", client, None);
        return ApiError::new(
            ErrorCode::Unauthorized,
            "a worker registers with the deployment's worker token as its bearer",
        )
        .into_response();
    }
    let registration =
        match <ApiJson<Registration> as axum::extract::FromRequest<()>>::from_request(request, &())
            .await
        {
            Ok(ApiJson(registration)) => registration,
            Err(refused) => return refused,
        };
    match gateway
        .register_worker(&registration.address, registration.pid, &registration.token)
        .await
    {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(Refused::Invalid(why)) => {
            ApiError::new(ErrorCode::InvalidArgument, why).into_response()
        }
        Err(refused @ Refused::Held(_)) => {
            // A holder of the deployment's token claiming a live worker's address is
            // on the record, as any refused credential is.
            crate::record_auth_failure(
                gateway,
                "workers",
                "an address another worker holds",
                client,
                None,
            );
            ApiError::new(ErrorCode::Forbidden, refused.to_string()).into_response()
        }
        Err(Refused::Failed(e)) => ApiError::from(e).into_response(),
    }
}
