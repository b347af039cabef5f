//! How a session's tabs present themselves to pages.

use serde_json::{Value, json};

/// How a session's tabs present themselves to pages: viewport, pixel density,
/// mobile layout and touch, User-Agent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Screen {
    pub(crate) viewport: (u32, u32),
    pub(crate) scale: f64,
    pub(crate) mobile: bool,
    pub(crate) user_agent: Option<String>,
}

impl Screen {
    /// The commands that give a tab this screen (each idempotent). A new tab has no
    /// touch or User-Agent override to undo (`fresh`): those are sent only when set.
    pub(crate) fn commands(&self, fresh: bool) -> Vec<(&'static str, Value)> {
        let mut commands = vec![(
            "Emulation.setDeviceMetricsOverride",
            json!({
                "width": self.viewport.0,
                "height": self.viewport.1,
                "deviceScaleFactor": self.scale,
                "mobile": self.mobile,
            }),
        )];
        if self.mobile || !fresh {
            commands.push((
                "Emulation.setTouchEmulationEnabled",
                json!({ "enabled": self.mobile, "maxTouchPoints": if self.mobile { 5 } else { 1 } }),
            ));
        }
        if self.user_agent.is_some() || !fresh {
            // An empty override is none: Chromium's own User-Agent again.
            commands.push((
                "Emulation.setUserAgentOverride",
                json!({ "userAgent": self.user_agent.as_deref().unwrap_or_default() }),
            ));
        }
        commands
    }
}
