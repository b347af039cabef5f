//! The OpenAPI 3.1 document of `/api/v1`, generated from the handlers' annotations
//! (`utoipa`), served at `/api/v1/openapi.json` without a key: it describes the API,
//! it grants nothing.

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Airlock operator and leasing API",
        description = "Lease browser sessions per (user, conversation) and decide calls held for approval. Every route takes `Authorization: Bearer <key>`; another tenant's ids answer 404 like ids that do not exist.",
        version = env!("CARGO_PKG_VERSION"),
    ),
    paths(
        crate::leases::lease,
        crate::leases::list,
        crate::leases::one,
        crate::leases::heartbeat,
        crate::leases::end,
        crate::tasks::start,
        crate::tasks::read,
        crate::tasks::cancel,
        crate::api::list,
        crate::api::one,
        crate::api::screenshot,
        crate::api::approve,
        crate::api::deny,
        crate::api::events,
        crate::policy::get,
        crate::policy::put,
        crate::logins::list,
        crate::logins::one,
        crate::logins::define,
        crate::logins::remove,
        crate::logins::check,
        crate::logins::link,
        crate::logins::enable,
        crate::logins::disable,
    ),
    modifiers(&Bearer),
    tags(
        (name = "sessions", description = "Leased browser sessions (role `act`)"),
        (name = "tasks", description = "Server-side browser tasks in leased sessions (role `act`)"),
        (name = "approvals", description = "Calls held for a human (role `admin`)"),
        (name = "events", description = "The audit log, live (role `admin`)"),
        (name = "policy", description = "The tenant's own policy (role `admin`)"),
        (name = "logins", description = "Stored logins kept alive (role `admin`)"),
    )
)]
pub(crate) struct ApiDoc;

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// The document as JSON.
pub(crate) fn document() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|_| "{}".to_owned())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    #[test]
    fn the_document_lists_every_route_with_its_errors() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).unwrap();
        let paths = doc["paths"].as_object().unwrap();
        for path in [
            "/api/v1/sessions",
            "/api/v1/sessions/{id}",
            "/api/v1/sessions/{id}/heartbeat",
            "/api/v1/approvals",
            "/api/v1/approvals/{id}",
            "/api/v1/approvals/{id}/screenshot",
            "/api/v1/approvals/{id}/approve",
            "/api/v1/approvals/{id}/deny",
            "/api/v1/events",
        ] {
            assert!(paths.contains_key(path), "{path} missing");
        }
        let lease = &doc["paths"]["/api/v1/sessions"]["post"];
        assert!(lease["responses"]["429"]["headers"]["Retry-After"].is_object());
        let body = &doc["components"]["schemas"]["LeaseBody"];
        assert_eq!(body["additionalProperties"], false, "{body}");
    }
}
