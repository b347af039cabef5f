//! `/api/v1/policy`: a tenant's own policy, read and set by an admin of the tenant.
//! The body is the shape of the config sections it narrows (`policy`, `approvals`
//! with `rules`, `flow`, `tools`), as JSON; what would widen the operator's config is refused
//! with its key and nothing changes. Each change is a new version, on the record
//! (`policy_change`), and applies to sessions opened after it on every replica.

use std::sync::Arc;

use airlock_config::TenantPolicy;
use airlock_gateway::{Gateway, Principal};
use axum::extract::State;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::error::{ApiError, ApiJson, JsonBody};

/// A tenant policy as written (checked against the operator's config when set).
pub(crate) struct PolicyBody(Map<String, Value>);

impl<'de> Deserialize<'de> for PolicyBody {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PolicyBody, D::Error> {
        Map::deserialize(d).map(PolicyBody)
    }
}

impl JsonBody for PolicyBody {
    const WHAT: &'static str = "a JSON object of the sections the tenant narrows: `policy`, `approvals` (`rules`), `flow`, `tools`";
}

/// The tenant's policy now.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PolicyView {
    /// The tenant.
    tenant: String,
    /// Its version, from 1 (0: it has none; the operator's config alone applies).
    version: i64,
    /// SHA-256 of its canonical JSON (none without a policy).
    hash: Option<String>,
    /// The policy (`{}` without one).
    #[schema(value_type = Object)]
    policy: Value,
}

/// The tenant's own policy.
#[utoipa::path(
    get,
    path = "/api/v1/policy",
    tag = "policy",
    responses(
        (status = 200, description = "Its newest version", body = PolicyView),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `admin`", body = crate::error::ErrorBody),
        (status = 503, description = "The store does not answer", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn get(
    State(gateway): State<Arc<Gateway>>,
    Extension(admin): Extension<Principal>,
) -> Result<Json<PolicyView>, ApiError> {
    Ok(Json(match gateway.tenant_policy(&admin.tenant).await? {
        Some((version, hash, policy)) => PolicyView {
            tenant: admin.tenant,
            version,
            hash: Some(hash),
            policy: serde_json::to_value(&policy).unwrap_or_default(),
        },
        None => PolicyView {
            tenant: admin.tenant,
            version: 0,
            hash: None,
            policy: Value::Object(Map::new()),
        },
    }))
}

/// Sets the tenant's policy: a new version for sessions opened from now on.
#[utoipa::path(
    put,
    path = "/api/v1/policy",
    tag = "policy",
    request_body(content = Object, description = "`policy`, `approvals` (`rules`), `flow`, `tools`: the config sections it narrows"),
    responses(
        (status = 200, description = "Stored: the new version", body = PolicyView),
        (status = 400, description = "A key that does not parse or would widen the operator's config (named)", body = crate::error::ErrorBody),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `admin`", body = crate::error::ErrorBody),
        (status = 413, description = "A body over 64 KiB"),
        (status = 503, description = "The store does not answer", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn put(
    State(gateway): State<Arc<Gateway>>,
    Extension(admin): Extension<Principal>,
    ApiJson(PolicyBody(body)): ApiJson<PolicyBody>,
) -> Result<Json<PolicyView>, ApiError> {
    let policy: TenantPolicy = serde_json::from_value(Value::Object(body))
        .map_err(|e| ApiError::invalid(format!("policy: {e}")))?;
    if let Some(unknown) = policy.unknown_tool(|name| airlock_tools::find(name).is_some()) {
        return Err(ApiError::invalid(unknown.to_string()));
    }
    let by = format!("api:{}", admin.key.as_deref().unwrap_or("operator"));
    let (version, hash) = gateway
        .set_tenant_policy(&admin.tenant, &policy, &by)
        .await?;
    Ok(Json(PolicyView {
        tenant: admin.tenant,
        version,
        hash: Some(hash),
        policy: serde_json::to_value(&policy).unwrap_or_default(),
    }))
}
