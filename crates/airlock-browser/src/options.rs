//! The resolved settings every session of a pool shares.

use std::path::PathBuf;
use std::time::Duration;

use airlock_config::{BrowserConfig, Isolation};

use crate::error::Result;
use crate::launch::{self, ChromiumBinary};

/// Resolved settings every session of a pool shares.
#[derive(Debug, Clone)]
pub struct BrowserOptions {
    /// The Chromium binary.
    pub binary: ChromiumBinary,
    /// Parent directory of temporary profiles.
    pub profile_parent: PathBuf,
    /// Budget of one action.
    pub action_timeout: Duration,
    /// Budget of one navigation.
    pub navigation_timeout: Duration,
    /// Budget of a launch until the first CDP reply.
    pub launch_timeout: Duration,
    /// Viewport in CSS pixels.
    pub viewport: (u32, u32),
    /// Isolation of sessions opened without an explicit choice.
    pub default_isolation: Isolation,
    /// Bound on each Chromium's memory (all its processes), in bytes; kept by a cgroup
    /// where the host allows one.
    pub memory_limit: Option<u64>,
}

impl BrowserOptions {
    /// Finds Chromium as configured (explicit path, else PATH) and fills in defaults.
    pub fn from_config(config: &BrowserConfig) -> Result<BrowserOptions> {
        let binary = launch::find_chromium(
            config.chrome.as_deref(),
            config.headless_shell,
            std::env::var_os("PATH"),
        )?;
        Ok(BrowserOptions {
            binary,
            profile_parent: std::env::temp_dir(),
            action_timeout: config.action_timeout,
            navigation_timeout: config.navigation_timeout,
            launch_timeout: Duration::from_secs(20),
            viewport: config.viewport,
            default_isolation: config.isolation,
            memory_limit: config.memory_limit,
        })
    }
}
