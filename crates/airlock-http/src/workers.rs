//! `POST /api/v1/workers`: a browser worker registers itself (`airlock worker
//! --register`), with the deployment's worker token as its bearer. Served only where
//! `[registration]` is configured; elsewhere the route is not there.

use std::sync::Arc;

use airlock_config::ApiKey;
use airlock_core::ErrorCode;
use airlock_gateway::Gateway;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use subtle::ConstantTimeEq as _;

use crate::error::{ApiError, ApiJson, JsonBody};

/// What the route reads.
pub(crate) struct Registrar {
    pub(crate) gateway: Arc<Gateway>,
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
}

impl JsonBody for Registration {
    const WHAT: &'static str = "a worker's registration ({\"address\": \"host:port\"})";
}

pub(crate) async fn register(
    State(registrar): State<Arc<Registrar>>,
    headers: HeaderMap,
    body: ApiJson<Registration>,
) -> Result<StatusCode, ApiError> {
    let Some(token) = registrar
        .token
        .as_ref()
        .filter(|_| registrar.gateway.takes_registrations())
    else {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            "this control plane takes no worker registrations ([registration] is not configured)",
        ));
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !bool::from(presented.as_bytes().ct_eq(token.expose().as_bytes())) {
        return Err(ApiError::new(
            ErrorCode::Unauthorized,
            "a worker registers with the deployment's worker token as its bearer",
        ));
    }
    let ApiJson(registration) = body;
    registrar
        .gateway
        .register_worker(&registration.address, registration.pid)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
