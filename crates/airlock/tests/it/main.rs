//! Repository rules checked as ordinary tests (rust-analyzer's tidy idea).

// Helpers outside #[test] fns unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]
// These tests run the airlock binary and the Python MCP client as processes.
#![allow(clippy::disallowed_methods)]

mod api_fuzz;
mod approvals_cli;
mod approvals_rest;
mod audit_cli;
mod console;
mod conventions;
mod demo;
mod drive_by;
mod fleet;
mod fleet_state;
mod http_safety;
mod identity;
mod leasing;
mod logins;
mod mcp_clients;
mod memory;
mod policy_cli;
mod readme;
mod replay_cli;
mod replicas;
mod run_cli;
mod server;
mod tenant_policy;
mod tidy;
mod vault_cli;
mod worker;
