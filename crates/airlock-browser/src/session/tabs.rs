//! A session's tabs: list, open, select and close.

use super::*;

/// Smallest and largest viewport a session may ask for, in CSS pixels.
pub const VIEWPORT_MIN: (u32, u32) = (200, 200);
/// See [`VIEWPORT_MIN`].
pub const VIEWPORT_MAX: (u32, u32) = (3840, 2160);

impl Session {
    // ---- tabs -----------------------------------------------------------------------

    /// Sets the viewport of every tab, and of tabs opened from now on.
    pub async fn resize(&self, width: u32, height: u32) -> Result<ActionOutcome> {
        if !(VIEWPORT_MIN.0..=VIEWPORT_MAX.0).contains(&width)
            || !(VIEWPORT_MIN.1..=VIEWPORT_MAX.1).contains(&height)
        {
            return Err(Error::InvalidArgument(format!(
                "the viewport is {}–{} CSS pixels wide and {}–{} high",
                VIEWPORT_MIN.0, VIEWPORT_MAX.0, VIEWPORT_MIN.1, VIEWPORT_MAX.1
            )));
        }
        let _op = self.begin().await;
        let active = self.page().await?;
        let screen = Screen {
            viewport: (width, height),
            ..lock(&self.registry).screen.clone()
        };
        let navigated = self.set_screen(&active, screen).await?;
        let mut outcome = self.outcome(&active, navigated).await;
        outcome.effect = Some(Effect::Resized { width, height });
        Ok(outcome)
    }

    /// Makes the session look like `device` to pages: every tab and tabs opened
    /// from now on (for a session just opened, before the agent's first action).
    pub async fn emulate(&self, device: &Device) -> Result<()> {
        let _op = self.begin().await;
        let active = self.page().await?;
        let screen = Screen {
            viewport: (device.width, device.height),
            scale: device.scale,
            mobile: device.mobile,
            user_agent: device.user_agent.map(str::to_owned),
        };
        self.set_screen(&active, screen).await?;
        Ok(())
    }

    // Gives every tab `screen`; returns whether the active one navigated meanwhile.
    async fn set_screen(&self, active: &Tab, screen: Screen) -> Result<bool> {
        let tabs = {
            let mut registry = lock(&self.registry);
            registry.screen = screen.clone();
            registry.tabs.clone()
        };
        let before = Self::nav_counters(active);
        for tab in &tabs {
            for (method, params) in screen.commands(false) {
                tab.call(method, params, self.budget()).await?;
            }
        }
        // Pages lay out again (and may load other images) at the new size.
        Ok(self.settle(active, before).await)
    }

    /// Lists the session's tabs.
    pub async fn tabs(&self) -> Result<Vec<TabInfo>> {
        let _op = self.begin().await;
        self.tab().await?;
        self.list_tabs().await
    }

    pub(super) async fn list_tabs(&self) -> Result<Vec<TabInfo>> {
        let (tabs, active) = {
            let registry = lock(&self.registry);
            (registry.tabs.clone(), registry.active)
        };
        let mut out = Vec::with_capacity(tabs.len());
        for (index, tab) in tabs.iter().enumerate() {
            let info = self
                .chromium
                .conn
                .call(
                    None,
                    "Target.getTargetInfo",
                    json!({ "targetId": tab.target_id }),
                    self.budget(),
                )
                .await
                .unwrap_or_default();
            out.push(TabInfo {
                index,
                url: self.scrub(
                    &info["targetInfo"]["url"]
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| tab.state.read(|s| s.url.clone())),
                ),
                title: self.scrub(info["targetInfo"]["title"].as_str().unwrap_or_default()),
                active: index == active,
                opened_by_page: tab.opener.is_some(),
            });
        }
        lock(&self.registry).unreported.clear();
        Ok(out)
    }

    /// Opens a new tab (optionally navigating it) and makes it active.
    pub async fn new_tab(&self, url: Option<&str>) -> Result<Vec<TabInfo>> {
        {
            let _op = self.begin().await;
            self.tab().await?;
            if lock(&self.registry).tabs.len() >= MAX_TABS {
                return Err(Error::TabLimit { max: MAX_TABS });
            }
            let tab = self.create_tab().await?;
            tab.call("Page.bringToFront", json!({}), self.budget())
                .await?;
        }
        if let Some(url) = url {
            self.navigate(url, WaitUntil::Load).await?;
        }
        let _op = self.begin().await;
        self.list_tabs().await
    }

    /// Makes tab `index` active.
    pub async fn select_tab(&self, index: usize) -> Result<Vec<TabInfo>> {
        let _op = self.begin().await;
        self.tab().await?;
        let tab = {
            let mut registry = lock(&self.registry);
            let tab = registry
                .tabs
                .get(index)
                .cloned()
                .ok_or(Error::TabNotFound { index })?;
            registry.active = index;
            tab
        };
        tab.call("Page.bringToFront", json!({}), self.budget())
            .await?;
        self.list_tabs().await
    }

    /// Closes tab `index`; the last tab cannot be closed (close the session instead).
    pub async fn close_tab(&self, index: usize) -> Result<Vec<TabInfo>> {
        let _op = self.begin().await;
        self.tab().await?;
        let tab = {
            let registry = lock(&self.registry);
            if registry.tabs.len() <= 1 && index == 0 {
                return Err(Error::InvalidArgument(
                    "cannot close the last tab; close the session instead".to_owned(),
                ));
            }
            registry
                .tabs
                .get(index)
                .cloned()
                .ok_or(Error::TabNotFound { index })?
        };
        tab.state.with(|s| s.closing = true);
        self.chromium
            .conn
            .close_target(&tab.target_id, self.budget())
            .await?;
        tab.state.wait(self.budget(), |s| s.detached).await;
        {
            let mut registry = lock(&self.registry);
            let active_id = registry
                .tabs
                .get(registry.active)
                .map(|t| t.target_id.clone());
            registry.tabs.retain(|t| t.target_id != tab.target_id);
            registry.active = active_id
                .and_then(|id| registry.tabs.iter().position(|t| t.target_id == id))
                .unwrap_or(registry.tabs.len().saturating_sub(1));
        }
        self.list_tabs().await
    }
}
