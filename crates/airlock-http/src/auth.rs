//! Who a request is: one authenticator for every route. A bearer token is the
//! configured agent key (`[server] api_key`: the `default` tenant, `[server] role`),
//! the configured approver key (`[server] admin_key`: `default`, `admin`), or an API
//! key of the store (`airlock key create`: its tenant and role). Each route then asks
//! for the role it needs; below it is `403`, on the audit record.

use std::sync::Arc;
use subtle::ConstantTimeEq as _;

use airlock_config::ApiKey;
use airlock_core::Role;
use airlock_gateway::{Gateway, Principal};
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::limit::AuthLimiter;

/// The keys requests are checked against, and the limiter of failed attempts.
pub(crate) struct Authenticator {
    pub(crate) api_key: Option<ApiKey>,
    pub(crate) admin_key: Option<ApiKey>,
    pub(crate) jwt: Option<Arc<crate::jwt::JwtVerifier>>,
    pub(crate) gateway: Arc<Gateway>,
    pub(crate) limiter: AuthLimiter,
    /// Requests without credentials per address: past the limit they are still
    /// refused (401) but no longer written to the audit log one by one.
    pub(crate) unauthenticated: AuthLimiter,
    /// Where clients reach this server, for the URLs a refusal names.
    pub(crate) public_url: String,
}

/// What a request's credentials came to.
pub(crate) enum Identity {
    /// A key authenticated: this caller.
    Known(Principal),
    /// No key is required here and none authenticated: the gateway's local caller.
    Local(Principal),
    /// Refused with this response (401 or 429).
    Refused(Response),
}

impl Authenticator {
    // Whether callers must authenticate: a key is configured, or the store holds
    // keys of tenants (then an anonymous caller would act in `default` beside them).
    pub(crate) async fn required(&self) -> bool {
        self.api_key.is_some()
            || self.admin_key.is_some()
            || self.jwt.is_some()
            || self.gateway.has_api_keys().await
    }

    /// The issuer of the JWTs accepted, if any (RFC 9728 names it).
    pub(crate) fn jwt_issuer(&self) -> Option<&str> {
        self.jwt.as_ref().map(|j| j.issuer())
    }

    /// Who `request` is, or the response refusing it. `surface` names the route
    /// family on the audit record.
    pub(crate) fn identify(
        &self,
        request: &Request,
        surface: &'static str,
    ) -> impl std::future::Future<Output = Identity> + Send + '_ {
        let refused = crate::refuse_query_credentials(request);
        // Taken out of the request first: the body is not `Sync`, so no borrow of the
        // request may live across an await.
        let client = crate::client_addr(request);
        let presented = crate::bearer(request).map(str::to_owned);
        async move {
            if let Some(refused) = refused {
                return Identity::Refused(refused);
            }
            self.identify_token(presented.as_deref(), client, surface)
                .await
        }
    }

    async fn identify_token(
        &self,
        presented: Option<&str>,
        client: Option<std::net::IpAddr>,
        surface: &'static str,
    ) -> Identity {
        let now = tokio::time::Instant::now();
        let required = self.required().await;
        let Some(token) = presented else {
            if !required {
                return Identity::Local(self.gateway.principal(None));
            }
            // No credentials is not a guess: it never counts toward the guess limit
            // (a client that forgot its header does not lock out its own valid key),
            // and only the first few per window are on the audit record.
            let record = client.is_none_or(|addr| {
                let first =
                    self.unauthenticated.admit(addr, now) == crate::limit::Admission::Allowed;
                self.unauthenticated.failed(addr, now);
                first
            });
            if record {
                tracing::warn!(reason = "no token", surface, "unauthorized request");
                crate::record_auth_failure(&self.gateway, surface, "no token", client, None);
            }
            return Identity::Refused(unauthorized(surface, &self.public_url));
        };
        if let Some(refused) = crate::refuse_if_limited(&self.limiter, client, now) {
            return Identity::Refused(refused);
        }
        match self.principal_of(token).await {
            Ok(principal) => Identity::Known(principal),
            // Nothing was decided about the key: not a failed login (a store outage
            // must not lock valid callers out once it is over).
            Err(Doubt::Unanswered) => Identity::Refused(store_unavailable()),
            Err(_) if !required => Identity::Local(self.gateway.principal(None)),
            Err(Doubt::Wrong(reason)) => {
                if let Some(addr) = client {
                    self.limiter.failed(addr, now);
                }
                tracing::warn!(reason, surface, "unauthorized request");
                // On the audit record too (never the token); the limiter above bounds
                // how many a client can cause.
                crate::record_auth_failure(&self.gateway, surface, reason, client, None);
                Identity::Refused(unauthorized(surface, &self.public_url))
            }
        }
    }

    /// Whether any key could sign in to the console: an approver key is configured
    /// or the store holds keys (one may be an admin's).
    pub(crate) async fn admin_possible(&self) -> bool {
        self.admin_key.is_some() || self.gateway.has_api_keys().await
    }

    /// Who the key typed into the console's sign-in form is. Failures count against
    /// the client's address and are on the audit record, as a bad bearer token is.
    pub(crate) async fn console_principal(
        &self,
        key: &str,
        client: Option<std::net::IpAddr>,
    ) -> Result<Principal, Response> {
        let now = tokio::time::Instant::now();
        if let Some(refused) = crate::refuse_if_limited(&self.limiter, client, now) {
            return Err(refused);
        }
        match self.principal_of(key).await {
            Ok(principal) => Ok(principal),
            Err(Doubt::Unanswered) => Err(store_unavailable()),
            Err(Doubt::Wrong(reason)) => {
                if let Some(addr) = client {
                    self.limiter.failed(addr, now);
                }
                tracing::warn!(reason, surface = "console", "a console sign-in failed");
                crate::record_auth_failure(&self.gateway, "console", reason, client, None);
                Err(StatusCode::UNAUTHORIZED.into_response())
            }
        }
    }

    // Who `token` is, or why it is nobody (for the log and the audit record).
    async fn principal_of(&self, token: &str) -> Result<Principal, Doubt> {
        let matches = |key: &ApiKey| bool::from(token.as_bytes().ct_eq(key.expose().as_bytes()));
        if self.admin_key.as_ref().is_some_and(matches) {
            return Ok(self.gateway.operator("admin_key"));
        }
        if self.api_key.as_ref().is_some_and(matches) {
            return Ok(self.gateway.principal(Some("api_key")));
        }
        if let Some(jwt) = &self.jwt
            && crate::jwt::JwtVerifier::looks_like_jwt(token)
        {
            let principal = jwt
                .verify(token)
                .map_err(|refusal| Doubt::Wrong(refusal.reason()))?;
            // A tenant no one created would hold sessions `tenant list` never shows.
            if !jwt.any_tenant() {
                match self.gateway.tenant_known(&principal.tenant).await {
                    Ok(true) => {}
                    Ok(false) => return Err(Doubt::Wrong("jwt names an unknown tenant")),
                    Err(_) => return Err(Doubt::Unanswered),
                }
            }
            return Ok(principal);
        }
        match self.gateway.authenticate_key(token).await {
            Ok(Some(principal)) => Ok(principal),
            Ok(None) => Err(Doubt::Wrong("wrong token")),
            Err(e) => {
                tracing::error!(error = %e, "cannot check an API key: the store does not answer");
                Err(Doubt::Unanswered)
            }
        }
    }
}

// Why a token is nobody: it is wrong (why, for the log and the record), or the store
// could not say.
enum Doubt {
    Wrong(&'static str),
    Unanswered,
}

/// How long a client waits before trying again while the store does not answer.
const STORE_RETRY_SECS: u64 = 5;

// 503 with `Retry-After`: the store could not check the key. Not a refusal of it.
fn store_unavailable() -> Response {
    crate::error::ApiError::new(
        airlock_core::ErrorCode::StoreUnavailable,
        "Airlock's store does not answer, so your key could not be checked; try again shortly",
    )
    .retry_after(STORE_RETRY_SECS)
    .into_response()
}

/// Refuses `principal` below `needed` (403, on the audit record), else `None`.
pub(crate) fn refuse_below(
    gateway: &Arc<Gateway>,
    principal: &Principal,
    needed: Role,
    surface: &'static str,
    client: Option<std::net::IpAddr>,
) -> Option<Response> {
    if principal.role >= needed {
        return None;
    }
    tracing::warn!(
        caller = %principal.caller(),
        role = principal.role.as_str(),
        needed = needed.as_str(),
        surface,
        "a caller reached above its role"
    );
    crate::record_auth_failure(gateway, surface, "role", client, Some(&principal.tenant));
    Some(
        crate::error::ApiError::new(
            airlock_core::ErrorCode::Forbidden,
            format!(
                "this needs the `{}` role; this key has `{}`",
                needed.as_str(),
                principal.role.as_str()
            ),
        )
        .into_response(),
    )
}

/// Where a client reads how this resource is protected (RFC 9728).
pub(crate) const RESOURCE_METADATA: &str = "/.well-known/oauth-protected-resource";

// 401 with `WWW-Authenticate`, naming the protected-resource metadata (RFC 9728) at
// the server's public URL.
fn unauthorized(surface: &str, public_url: &str) -> Response {
    let mut response = if surface == "mcp" {
        (
            StatusCode::UNAUTHORIZED,
            "unauthorized: send Authorization: Bearer <api key>\n",
        )
            .into_response()
    } else {
        crate::error::ApiError::new(
            airlock_core::ErrorCode::Unauthorized,
            "send Authorization: Bearer <key>",
        )
        .into_response()
    };
    let realm = if surface == "mcp" {
        "airlock"
    } else {
        "airlock-api"
    };
    let value =
        format!("Bearer realm=\"{realm}\", resource_metadata=\"{public_url}{RESOURCE_METADATA}\"");
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}
