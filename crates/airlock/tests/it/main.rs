//! Repository rules checked as ordinary tests (rust-analyzer's tidy idea).

// Helpers outside #[test] fns unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

mod http_safety;
mod mcp_clients;
mod policy_cli;
mod server;
mod tidy;
mod vault_cli;
