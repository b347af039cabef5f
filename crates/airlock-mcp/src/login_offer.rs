//! A stored login that needs a person, offered to the person at the agent's own
//! client: when a session open is refused with `login_needs_user` and the client
//! declared URL-mode elicitation (protocol 2025-11-25), the server asks it to show
//! that person the login's one-time link. The URL goes to the person, never to the
//! model (the client shows it outside the conversation); it works only for a
//! console admin of the tenant, once. The tool result is not held for it.

use std::sync::Arc;

use airlock_login::Logins;
use rmcp::RoleServer;
use rmcp::service::RequestContext;

use crate::server::AirlockMcp;

/// Offers the links of the logins in `names` that need a person, in the
/// background; nothing when the client cannot take a URL or the era forbids asking.
pub(crate) fn offer(server: &AirlockMcp, request: &RequestContext<RoleServer>, names: Vec<String>) {
    let (Some(logins), Some(public_url)) = (server.logins.clone(), server.public_url.clone())
    else {
        return;
    };
    let Ok(principal) = server.principal(&request.extensions) else {
        return;
    };
    let stateless = request
        .protocol_version()
        .is_some_and(|v| v.to_string().as_str() >= "2026-07-28");
    if stateless || names.is_empty() {
        return;
    }
    let peer = request.peer.clone();
    tokio::spawn(async move {
        for name in names {
            ask(&logins, &public_url, &peer, &principal.tenant, &name).await;
        }
    });
}

async fn ask(
    logins: &Arc<Logins>,
    public_url: &str,
    peer: &rmcp::service::Peer<RoleServer>,
    tenant: &str,
    name: &str,
) {
    let link = match logins.offer_link(tenant, name).await {
        Ok(Some(link)) => link,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(login = %name, error = %e, "a stored login's link could not be made for the client");
            return;
        }
    };
    let Ok(url) = url::Url::parse(&format!("{public_url}{link}")) else {
        return;
    };
    let mut id = [0u8; 12];
    if getrandom::fill(&mut id).is_err() {
        return;
    }
    let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let message = format!(
        "Stored login `{name}` needs a person: a site it signs in to asks for something only a person has (a code, a password, or signing in by hand). Open this link as a console admin of tenant `{tenant}`; it works once."
    );
    match peer.elicit_url(message, url, id).await {
        Ok(action) => {
            tracing::info!(login = %name, ?action, "a stored login's link was offered in the client")
        }
        Err(e) => {
            tracing::debug!(login = %name, error = %e, "the client did not take a stored login's link")
        }
    }
}
