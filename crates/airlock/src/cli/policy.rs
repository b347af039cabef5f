//! `airlock policy check URL [--resolve]`: what the policy decides, and why.

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use std::process::ExitCode;

use airlock_config::Config;
use airlock_policy::{Decision, DenyReason};

/// Exit 0 when allowed, 1 when denied.
pub(crate) async fn check(config: &Config, input: &str, resolve: bool) -> ExitCode {
    let policy = &config.policy;
    // A page's WebSocket reaches the egress proxy as a connection to its host and
    // port, judged like the http(s) URL of the same place: answer as the proxy would.
    let websocket = [("ws://", "http://"), ("wss://", "https://")]
        .iter()
        .find_map(|(ws, http)| {
            input
                .get(..ws.len())
                .filter(|p| p.eq_ignore_ascii_case(ws))
                .map(|_| format!("{http}{}", &input[ws.len()..]))
        });
    if let Some(as_http) = &websocket {
        println!("note:     a page's WebSocket; the egress proxy judges it as {as_http}");
    }
    let checked = policy.check_url(websocket.as_deref().unwrap_or(input));
    if let Some(url) = &checked.url {
        println!("url:      {url}");
    }
    if let (Some(host), Some(port)) = (&checked.host, checked.port) {
        println!("host:     {host} port {port}");
    }
    let mut decision = checked.decision.clone();
    if resolve && decision.is_allowed() && checked.ip.is_none() {
        if let (Some(host), Some(port)) = (&checked.host, checked.port) {
            match tokio::net::lookup_host((host.as_str(), port)).await {
                Ok(addresses) => {
                    let addresses: Vec<_> = addresses.collect();
                    for address in &addresses {
                        let verdict = policy.check_address(host, *address);
                        println!("resolves: {} -> {verdict}", address.ip());
                        // A name with any refused address is refused as a whole: the
                        // proxy would never connect to that one, and a mix is how DNS
                        // rebinding looks.
                        if !verdict.is_allowed() && decision.is_allowed() {
                            decision = verdict;
                        }
                    }
                    if addresses.is_empty() {
                        println!("resolves: (no addresses)");
                    }
                }
                Err(e) => {
                    println!("resolves: failed ({e})");
                    decision = Decision::Deny {
                        reason: DenyReason::Unresolvable,
                        detail: format!("{host} does not resolve"),
                    };
                }
            }
        }
    } else if !resolve && checked.ip.is_none() && checked.host.is_some() && decision.is_allowed() {
        println!(
            "note:     {} is a name; the egress proxy also checks every address it resolves to (--resolve shows them)",
            checked.host.as_deref().unwrap_or_default()
        );
    }
    println!("decision: {decision}");
    // For the operator (never in an agent's message): how to allow a private place.
    if let (
        Decision::Deny {
            reason: DenyReason::PrivateAddress,
            ..
        },
        Some(host),
        Some(port),
    ) = (&decision, &checked.host, checked.port)
    {
        println!(
            "hint:     to let the browser reach it, add \"{host}:{port}\" (or a CIDR) to policy.allow_private, or set AIRLOCK_ALLOW_PRIVATE, or pass --allow-private {host}:{port}"
        );
    }
    match decision {
        Decision::Allow => ExitCode::SUCCESS,
        Decision::Deny { .. } => ExitCode::FAILURE,
    }
}
