//! Airlock's egress policy: which URLs and addresses the browser may reach, decided as a
//! pure function of the policy and the input, with a reason an operator understands
//! (`169.254.169.254 is link-local (cloud metadata)`).
//!
//! URLs are canonicalized the way Chromium does it (WHATWG, via the `url` crate), so
//! the host judged is the host Chromium will connect to: numeric IPv4 forms, percent-
//! encoding, IDN, userinfo and backslashes are all resolved before any rule runs.
//! Resolving names and connecting are not done here: the egress proxy resolves, then
//! asks [`Policy::check_address`] about every address before it connects.

mod address;
mod config;
mod decision;
mod display;
mod origins;
mod policy;

pub use address::{AddressClass, Cidr, classify};
pub use config::PolicyConfig;
pub use decision::{Decision, DenyReason};
pub use display::{display_host, display_url};
pub use origins::{OriginSet, origin_of};
pub use policy::{Checked, ConfigError, Policy};
