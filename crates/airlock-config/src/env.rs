//! Every environment variable Airlock reads, and the source they are read from.

use std::collections::HashMap;

/// The names of all `AIRLOCK_*` variables, in one place.
pub mod vars {
    /// Path of `airlock.toml`.
    pub const CONFIG: &str = "AIRLOCK_CONFIG";
    /// Path of the Chromium binary; beats the config file and PATH.
    pub const CHROME: &str = "AIRLOCK_CHROME";
    /// State directory.
    pub const DATA_DIR: &str = "AIRLOCK_DATA_DIR";
    /// `host:port` to listen on.
    pub const LISTEN: &str = "AIRLOCK_LISTEN";
    /// The URL clients reach the server at (`server.public_url`).
    pub const PUBLIC_URL: &str = "AIRLOCK_PUBLIC_URL";
    /// More `policy.allow_private` entries, comma-separated (`127.0.0.1:8080,10.0.0.0/8`).
    pub const ALLOW_PRIVATE: &str = "AIRLOCK_ALLOW_PRIVATE";

    /// Bearer token required on `/mcp`.
    pub const API_KEY: &str = "AIRLOCK_API_KEY";
    /// Bearer token of approvers and operators on `/api/v1` (never the agent's key).
    pub const ADMIN_KEY: &str = "AIRLOCK_ADMIN_KEY";
    /// The key approval webhooks are signed with.
    pub const WEBHOOK_SECRET: &str = "AIRLOCK_WEBHOOK_SECRET";
    /// The shared HS256 secret of service callers' JWTs.
    pub const JWT_SECRET: &str = "AIRLOCK_JWT_SECRET";
    /// The vault's master key (base64 of 32 bytes); else a key file in the data dir.
    pub const MASTER_KEY: &str = "AIRLOCK_MASTER_KEY";
    /// The new master key `airlock vault rotate-key` moves to when the key is in the
    /// environment.
    pub const NEW_MASTER_KEY: &str = "AIRLOCK_NEW_MASTER_KEY";
    /// The token a gateway and its workers on other machines share (else
    /// `token_file` of `[[workers]]`, or `airlock worker --token-file`).
    pub const WORKER_TOKEN: &str = "AIRLOCK_WORKER_TOKEN";
    /// The shared store (`postgres://…`, `[store] url`); unset: SQLite in the data dir.
    pub const DATABASE_URL: &str = "AIRLOCK_DATABASE_URL";
    /// The role that owns the store's tables (`[store] owner_url`): it runs the
    /// migrations and grants the serving role (`DATABASE_URL`'s) what it needs.
    pub const DATABASE_OWNER_URL: &str = "AIRLOCK_DATABASE_OWNER_URL";

    /// All of the above, for `airlock doctor` (which never prints secret values).
    pub const ALL: &[&str] = &[
        CONFIG,
        CHROME,
        DATA_DIR,
        LISTEN,
        PUBLIC_URL,
        ALLOW_PRIVATE,
        API_KEY,
        ADMIN_KEY,
        WEBHOOK_SECRET,
        JWT_SECRET,
        MASTER_KEY,
        NEW_MASTER_KEY,
        WORKER_TOKEN,
        DATABASE_URL,
        DATABASE_OWNER_URL,
    ];

    /// Variables whose values are secrets.
    pub const SECRET: &[&str] = &[
        API_KEY,
        ADMIN_KEY,
        WEBHOOK_SECRET,
        JWT_SECRET,
        MASTER_KEY,
        NEW_MASTER_KEY,
        WORKER_TOKEN,
        DATABASE_URL,
        DATABASE_OWNER_URL,
    ];
}

/// Where configuration strings come from; tests pass a map instead of the process env.
pub trait EnvSource {
    /// The value of `name`, if set and non-empty.
    fn get(&self, name: &str) -> Option<String>;
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

impl EnvSource for HashMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        HashMap::get(self, name).filter(|v| !v.is_empty()).cloned()
    }
}
