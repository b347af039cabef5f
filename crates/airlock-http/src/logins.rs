//! `/api/v1/logins`: a tenant's stored logins, defined, read, checked on demand and
//! given a one-time link by an admin of the tenant. The body of a `PUT` is the
//! login's definition (`probe`, `steps`, `human`, `every_secs`; see
//! `docs/logins.md`); no route takes or returns a value: what only a person has goes
//! through the console's one-time link.

use std::sync::Arc;

use airlock_core::ErrorCode;
use airlock_gateway::Principal;
use airlock_login::{Error, LoginView, Logins, Report};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Serialize;
use serde_json::Value;

use crate::error::{ApiError, ApiJson, JsonBody};

#[derive(Clone)]
pub(crate) struct Api {
    logins: Option<Arc<Logins>>,
    public_url: String,
}

impl Api {
    fn logins(&self) -> Result<&Arc<Logins>, ApiError> {
        self.logins.as_ref().ok_or_else(|| {
            ApiError::new(
                ErrorCode::NotFound,
                "this gateway keeps no stored logins: it needs a store and a vault",
            )
        })
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let code = match &e {
            Error::Invalid(_) => ErrorCode::InvalidArgument,
            Error::NotFound(_) | Error::Link => ErrorCode::NotFound,
            // The login's check session is held by another check.
            Error::Busy(_) => ErrorCode::SessionHeld,
            Error::Elsewhere(_) => ErrorCode::SessionElsewhere,
            Error::Store(_) => ErrorCode::StoreUnavailable,
            Error::Gateway(_) => ErrorCode::Internal,
        };
        ApiError::new(code, e.to_string())
    }
}

/// A login's definition, as JSON.
pub(crate) struct SpecBody(Value);

impl<'de> serde::Deserialize<'de> for SpecBody {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SpecBody, D::Error> {
        serde_json::Map::deserialize(d).map(|m| SpecBody(Value::Object(m)))
    }
}

impl JsonBody for SpecBody {
    const WHAT: &'static str = "a login's definition: `probe` (`url`, `expect` and/or `stay`), `steps`, `human`, `every_secs`";
}

/// The routes, each needing the tenant's `admin` (the caller adds that layer).
pub(crate) fn routes(logins: Option<Arc<Logins>>, public_url: &str) -> Router {
    Router::new()
        .route("/api/v1/logins", get(list))
        .route("/api/v1/logins/{name}", get(one).put(define).delete(remove))
        .route("/api/v1/logins/{name}/check", post(check))
        .route("/api/v1/logins/{name}/link", post(link))
        .route("/api/v1/logins/{name}/enable", post(enable))
        .route("/api/v1/logins/{name}/disable", post(disable))
        .with_state(Api {
            logins,
            public_url: public_url.trim_end_matches('/').to_owned(),
        })
}

#[utoipa::path(
    get,
    path = "/api/v1/logins",
    tag = "logins",
    responses(
        (status = 200, description = "The tenant's logins, each with its state and definition", body = [Object]),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `admin`", body = crate::error::ErrorBody),
        (status = 404, description = "No such login in the tenant (or this gateway keeps none)", body = crate::error::ErrorBody),
        (status = 500, description = "The vault or a session failed (the log has why)", body = crate::error::ErrorBody),
        (status = 503, description = "The store does not answer", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn list(
    State(api): State<Api>,
    Extension(admin): Extension<Principal>,
) -> Result<Json<Vec<LoginView>>, ApiError> {
    Ok(Json(api.logins()?.list(&admin.tenant).await?))
}

#[utoipa::path(
    get,
    path = "/api/v1/logins/{name}",
    tag = "logins",
    params(("name" = String, Path, description = "The login: the vault secret it keeps signed in")),
    responses(
        (status = 200, description = "The login: state, why, last and next check, definition", body = Object),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `admin`", body = crate::error::ErrorBody),
        (status = 404, description = "No such login in the tenant (or this gateway keeps none)", body = crate::error::ErrorBody),
        (status = 500, description = "The vault or a session failed (the log has why)", body = crate::error::ErrorBody),
        (status = 503, description = "The store does not answer", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn one(
    State(api): State<Api>,
    Extension(admin): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<Json<LoginView>, ApiError> {
    Ok(Json(api.logins()?.get(&admin.tenant, &name).await?))
}

#[utoipa::path(
    put,
    path = "/api/v1/logins/{name}",
    tag = "logins",
    params(("name" = String, Path, description = "The login: the vault secret it keeps signed in")),
    request_body(content = Object, description = "`probe` (`url`, `expect`, `stay`), `steps` (catalogue calls; typed text only placeholders of the login's secret), `human` (`when`, `field`, `submit`), `every_secs`"),
    responses(
        (status = 200, description = "Stored; checked at once", body = Object),
        (status = 400, description = "A definition that does not parse, a step that is not allowed, typed text that is not placeholders, or no vault secret of that name", body = crate::error::ErrorBody),
        (status = 413, description = "A body over 64 KiB"),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `admin`", body = crate::error::ErrorBody),
        (status = 404, description = "No such login in the tenant (or this gateway keeps none)", body = crate::error::ErrorBody),
        (status = 500, description = "The vault or a session failed (the log has why)", body = crate::error::ErrorBody),
        (status = 503, description = "The store does not answer", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn define(
    State(api): State<Api>,
    Extension(admin): Extension<Principal>,
    Path(name): Path<String>,
    ApiJson(SpecBody(spec)): ApiJson<SpecBody>,
) -> Result<Json<LoginView>, ApiError> {
    Ok(Json(
        api.logins()?
            .define(&admin.tenant, &name, &spec.to_string())
            .await?,
    ))
}

#[utoipa::path(
    delete,
    path = "/api/v1/logins/{name}",
    tag = "logins",
    params(("name" = String, Path, description = "The login: the vault secret it keeps signed in")),
    responses(
        (status = 204, description = "Forgotten (its vault secret stays)"),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `admin`", body = crate::error::ErrorBody),
        (status = 404, description = "No such login in the tenant (or this gateway keeps none)", body = crate::error::ErrorBody),
        (status = 500, description = "The vault or a session failed (the log has why)", body = crate::error::ErrorBody),
        (status = 503, description = "The store does not answer", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn remove(
    State(api): State<Api>,
    Extension(admin): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    api.logins()?.remove(&admin.tenant, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    post,
    path = "/api/v1/logins/{name}/check",
    tag = "logins",
    params(("name" = String, Path, description = "The login: the vault secret it keeps signed in")),
    responses(
        (status = 200, description = "What the check found: `state`, `renewed`, `why`, `session`, `took_ms`, and `link` when a person must act", body = Object),
        (status = 400, description = "The login is turned off", body = crate::error::ErrorBody),
        (status = 409, description = "Another check of it runs now (`session_held`)", body = crate::error::ErrorBody),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `admin`", body = crate::error::ErrorBody),
        (status = 404, description = "No such login in the tenant (or this gateway keeps none)", body = crate::error::ErrorBody),
        (status = 500, description = "The vault or a session failed (the log has why)", body = crate::error::ErrorBody),
        (status = 503, description = "The store does not answer", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn check(
    State(api): State<Api>,
    Extension(admin): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<Json<Report>, ApiError> {
    let mut report = api
        .logins()?
        .check(&admin.tenant, &name, &admin.caller())
        .await?;
    // The link as a whole URL, for the admin who asked (never an agent).
    report.link = report.link.map(|path| format!("{}{path}", api.public_url));
    Ok(Json(report))
}

#[derive(Serialize)]
pub(crate) struct Link {
    link: String,
}

#[utoipa::path(
    post,
    path = "/api/v1/logins/{name}/link",
    tag = "logins",
    params(("name" = String, Path, description = "The login: the vault secret it keeps signed in")),
    responses(
        (status = 200, description = "A fresh one-time link (`link`); older ones stop working", body = Object),
        (status = 400, description = "The login does not need a person", body = crate::error::ErrorBody),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `admin`", body = crate::error::ErrorBody),
        (status = 404, description = "No such login in the tenant (or this gateway keeps none)", body = crate::error::ErrorBody),
        (status = 500, description = "The vault or a session failed (the log has why)", body = crate::error::ErrorBody),
        (status = 503, description = "The store does not answer", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn link(
    State(api): State<Api>,
    Extension(admin): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<Json<Link>, ApiError> {
    let path = api.logins()?.link(&admin.tenant, &name).await?;
    Ok(Json(Link {
        link: format!("{}{path}", api.public_url),
    }))
}

#[utoipa::path(
    post,
    path = "/api/v1/logins/{name}/enable",
    tag = "logins",
    params(("name" = String, Path, description = "The login: the vault secret it keeps signed in")),
    responses(
        (status = 200, description = "Turned on; due at once", body = Object),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `admin`", body = crate::error::ErrorBody),
        (status = 404, description = "No such login in the tenant (or this gateway keeps none)", body = crate::error::ErrorBody),
        (status = 500, description = "The vault or a session failed (the log has why)", body = crate::error::ErrorBody),
        (status = 503, description = "The store does not answer", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn enable(
    State(api): State<Api>,
    Extension(admin): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<Json<LoginView>, ApiError> {
    Ok(Json(
        api.logins()?.enable(&admin.tenant, &name, true).await?,
    ))
}

#[utoipa::path(
    post,
    path = "/api/v1/logins/{name}/disable",
    tag = "logins",
    params(("name" = String, Path, description = "The login: the vault secret it keeps signed in")),
    responses(
        (status = 200, description = "Turned off: not checked, never refuses a session", body = Object),
        (status = 401, description = "No or a wrong key", body = crate::error::ErrorBody),
        (status = 403, description = "A key below `admin`", body = crate::error::ErrorBody),
        (status = 404, description = "No such login in the tenant (or this gateway keeps none)", body = crate::error::ErrorBody),
        (status = 500, description = "The vault or a session failed (the log has why)", body = crate::error::ErrorBody),
        (status = 503, description = "The store does not answer", body = crate::error::ErrorBody),
    ),
    security(("bearer" = []))
)]
pub(crate) async fn disable(
    State(api): State<Api>,
    Extension(admin): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<Json<LoginView>, ApiError> {
    Ok(Json(
        api.logins()?.enable(&admin.tenant, &name, false).await?,
    ))
}
