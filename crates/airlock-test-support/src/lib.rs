//! Dev-only helpers for tests that drive a real headless Chromium: a fixture site
//! served on loopback by the test itself ([`FixtureSite`]) and a harness
//! ([`with_browser`]) that starts a browser pool under a private profile directory,
//! runs the test body, always shuts the pool down (also when the body panics), and
//! then asserts that no Chromium process and no profile directory survived. For the
//! store's Postgres backend, a real PostgreSQL server ([`Postgres`]); a real Django
//! admin ([`Django`]).

pub mod botauth;
mod django;
mod fixtures;
mod forms;
mod harness;
mod logs;
mod miniwob;
mod model;
mod postgres;
pub mod signin;

pub use django::{DJANGO_ADMIN, DJANGO_PASSWORD, DJANGO_USERS, Django, python};
pub use fixtures::{APP_API_KEY, APP_PASSWORD, APP_SESSION, APP_USER, FixtureServer, FixtureSite};
pub use forms::secret_forms;
pub use harness::{
    Harness, chromium_processes_under, processes_in_groups, with_browser, with_browser_config,
    worker_mode,
};
pub use logs::capture_logs;
pub use miniwob::MiniWob;
pub use model::{ModelServer, Reply, Seen, calls, finish};
pub use postgres::{PG_USER, Postgres};
