//! The gateway over real browser sessions, one module per area; the helpers every area
//! uses are here.

#![allow(clippy::unwrap_used)]

use airlock_gateway::{Interaction, Navigation, Reading};
use std::sync::Arc;
use std::time::Duration;

use airlock_browser::{SnapshotOptions, Target, WaitUntil};
use airlock_config::BrowserConfig;
use airlock_core::ErrorCode;
use airlock_gateway::{
    CallObserver, CallRecord, Gateway, GatewayConfig, Surface, TabAction, ToolCall,
};
use airlock_policy::{Policy, PolicyConfig};
use airlock_test_support::{Harness, with_browser, with_browser_config};

mod agentdojo;
mod approvals;
mod credentials;
mod django;
mod effects;
mod egress;
mod files;
mod flow;
mod identity;
mod leaks;
mod leasing;
mod live;
mod ordinary;
mod pipeline;
mod replicas;
mod roles;
mod sessions;
mod tenant_policy;
mod view;
mod web;
mod widgets;

fn config(h: &Harness) -> GatewayConfig {
    GatewayConfig::with_policy(h.site.policy())
}

/// `config`, with one pre-warmed session kept ready.
fn warm_config(h: &Harness) -> GatewayConfig {
    GatewayConfig {
        warm_sessions: 1,
        ..config(h)
    }
}

/// What `agent` reports once `needle` shows: `first` (a result already in hand), or
/// the next results of 50 ms waits (a download finishes after the click that started
/// it, and a later result reports it), for at most ten seconds.
pub(crate) async fn until_reported(
    agent: &airlock_gateway::AgentSession,
    first: String,
    needle: &str,
) -> String {
    let mut text = first;
    for _ in 0..200 {
        if text.contains(needle) {
            break;
        }
        text = agent
            .call(ToolCall::Read(Reading::WaitFor {
                condition: airlock_browser::WaitCondition::Time(Duration::from_millis(50)),
                timeout: None,
            }))
            .await
            .text;
    }
    text
}

pub(crate) fn navigate(url: String) -> ToolCall {
    ToolCall::Navigate(Navigation::To {
        url,
        wait_until: WaitUntil::Load,
        snapshot: airlock_gateway::PageView::Full,
    })
}

/// A click on the button named `name`.
fn click_button(name: &str) -> ToolCall {
    ToolCall::Interact(Interaction::Click {
        target: airlock_browser::Target::Role {
            role: "button".into(),
            name: Some(name.into()),
            index: None,
        },
        options: Default::default(),
    })
}

/// Clicks the button named `name` on a page that will crash its renderer, then reads
/// until a call reports the crash; every output before it must pass `before`.
async fn click_until_crashed(
    agent: &airlock_gateway::AgentSession,
    name: &str,
    before: impl Fn(&airlock_gateway::ToolOutput),
) -> airlock_gateway::ToolOutput {
    let mut out = agent.call(click_button(name)).await;
    for _ in 0..100 {
        if out.error == Some(ErrorCode::BrowserCrashed) {
            break;
        }
        before(&out);
        out = agent
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
    }
    out
}

/// Polls until `$cond` holds or 5 s pass (idle expiry and background close have no
/// event to await).
#[macro_export]
macro_rules! eventually {
    ($cond:expr) => {{
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            if $cond {
                break true;
            }
            if tokio::time::Instant::now() > deadline {
                break false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }};
}
