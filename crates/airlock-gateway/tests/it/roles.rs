//! The role matrix: every tool for every role, against a real page. A call above
//! the caller's role is `forbidden`, runs nothing, and is on the audit record; one
//! within it is never refused for its role.

use airlock_gateway::{Interaction, Navigation, Reading, SessionCall, Window};
use std::time::Duration;

use airlock_browser::{
    Direction, ScreenshotOptions, Scroll, SnapshotOptions, Target, WaitCondition, WaitUntil,
};
use airlock_core::{ErrorCode, Role};
use airlock_gateway::{
    Gateway, GatewayConfig, OpenOptions, PageView, Principal, ReadFormat, Surface, TabAction,
    ToolCall,
};
use airlock_test_support::with_browser;
use airlock_vault::Store;

use crate::config;

fn field(name: &str) -> Target {
    Target::Role {
        role: "textbox".into(),
        name: Some(name.into()),
        index: None,
    }
}

// One call of every tool (and the role it needs, written out here, not read from the
// code under test).
fn every_tool(url: &str) -> Vec<(&'static str, ToolCall, Role)> {
    let button = Target::Role {
        role: "button".into(),
        name: Some("Sign in".into()),
        index: None,
    };
    vec![
        (
            "snapshot",
            ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())),
            Role::Observe,
        ),
        (
            "screenshot",
            ToolCall::Read(Reading::Screenshot(ScreenshotOptions::default())),
            Role::Observe,
        ),
        (
            "read",
            ToolCall::Read(Reading::Text {
                format: ReadFormat::Text,
                offset: 0,
            }),
            Role::Observe,
        ),
        (
            "wait_for",
            ToolCall::Read(Reading::WaitFor {
                condition: WaitCondition::Time(Duration::from_millis(1)),
                timeout: None,
            }),
            Role::Observe,
        ),
        (
            "tabs list",
            ToolCall::Window(Window::Tabs(TabAction::List)),
            Role::Observe,
        ),
        (
            "console_messages",
            ToolCall::Read(Reading::ConsoleMessages {
                level: airlock_browser::ConsoleLevel::Debug,
                limit: 50,
                all: true,
            }),
            Role::Observe,
        ),
        ("pdf", ToolCall::Read(Reading::Pdf), Role::Observe),
        (
            "evaluate",
            ToolCall::Read(Reading::Evaluate {
                function: "() => 1".into(),
                target: None,
            }),
            Role::Act,
        ),
        (
            "file_upload",
            // The field opens no chooser: element_not_actionable, not forbidden.
            ToolCall::Interact(Interaction::FileUpload {
                target: field("Username"),
                files: vec!["a.txt".into()],
            }),
            Role::Act,
        ),
        (
            "network_requests",
            ToolCall::Read(Reading::NetworkRequests {
                filter: None,
                limit: 50,
                with_static: true,
            }),
            Role::Observe,
        ),
        (
            "navigate",
            ToolCall::Navigate(Navigation::To {
                url: url.to_owned(),
                wait_until: WaitUntil::Load,
                snapshot: PageView::None,
            }),
            Role::Act,
        ),
        (
            "click",
            ToolCall::Interact(Interaction::Click {
                target: button.clone(),
                options: Default::default(),
            }),
            Role::Act,
        ),
        (
            "type",
            ToolCall::Interact(Interaction::Type {
                target: field("Username"),
                text: "bob".into(),
                clear_first: true,
                submit: false,
            }),
            Role::Act,
        ),
        (
            "fill_form",
            ToolCall::Interact(Interaction::FillForm {
                fields: vec![(field("Username"), "eve".into())],
            }),
            Role::Act,
        ),
        (
            "press_key",
            ToolCall::Interact(Interaction::PressKey { key: "Tab".into() }),
            Role::Act,
        ),
        (
            "select_option",
            ToolCall::Interact(Interaction::SelectOption {
                target: field("Username"),
                values: vec!["x".into()],
            }),
            Role::Act,
        ),
        (
            "check",
            ToolCall::Interact(Interaction::Check {
                target: Target::Role {
                    role: "checkbox".into(),
                    name: Some("Remember me".into()),
                    index: None,
                },
                checked: true,
            }),
            Role::Act,
        ),
        (
            "drag",
            ToolCall::Interact(Interaction::Drag {
                from: button.clone(),
                to: field("Username"),
            }),
            Role::Act,
        ),
        (
            "hover",
            ToolCall::Interact(Interaction::Hover { target: button }),
            Role::Act,
        ),
        (
            "scroll",
            ToolCall::Interact(Interaction::Scroll(Scroll::Page {
                direction: Direction::Down,
                amount: None,
            })),
            Role::Act,
        ),
        (
            "tabs new",
            ToolCall::Window(Window::Tabs(TabAction::New(None))),
            Role::Act,
        ),
        (
            "tabs select",
            ToolCall::Window(Window::Tabs(TabAction::Select(0))),
            Role::Act,
        ),
        (
            "tabs close",
            ToolCall::Window(Window::Tabs(TabAction::Close(Some(1)))),
            Role::Act,
        ),
        ("back", ToolCall::Navigate(Navigation::Back), Role::Act),
        (
            "forward",
            ToolCall::Navigate(Navigation::Forward),
            Role::Act,
        ),
        ("reload", ToolCall::Navigate(Navigation::Reload), Role::Act),
        (
            "resize",
            ToolCall::Window(Window::Resize {
                width: 800,
                height: 600,
            }),
            Role::Act,
        ),
        (
            "handle_dialog",
            // None is open: `not_found` at once.
            ToolCall::Interact(Interaction::HandleDialog {
                accept: true,
                prompt_text: None,
                wait: Duration::ZERO,
            }),
            Role::Act,
        ),
        (
            "session_open",
            ToolCall::Session(SessionCall::Open(OpenOptions::default())),
            Role::Act,
        ),
        (
            "session_close",
            ToolCall::Session(SessionCall::Close),
            Role::Act,
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_is_refused_below_its_role_and_the_refusal_is_recorded() {
    with_browser(|h| async move {
        let store = Store::open_in_memory().await.unwrap();
        let uploads = tempfile::tempdir().unwrap();
        std::fs::write(uploads.path().join("a.txt"), "a").unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                // The tools an operator switches on are in the matrix too.
                evaluate: true,
                upload_dir: Some(uploads.path().to_owned()),
                ..config(&h).store(store.clone())
            },
        );
        let url = h.site.url("login.html");
        let mut refused = 0;
        for role in [Role::Observe, Role::Act, Role::Operate, Role::Admin] {
            let agent = gateway.agent_session_as(
                Principal {
                    tenant: "acme".into(),
                    role,
                    key: Some(format!("key_{}", role.as_str())),
                },
                Surface::Mcp,
            );
            for (name, call, needs) in every_tool(&url) {
                let out = agent.call(call).await;
                if role < needs {
                    refused += 1;
                    assert_eq!(
                        out.error,
                        Some(ErrorCode::Forbidden),
                        "{name} as {}: {}",
                        role.as_str(),
                        out.text
                    );
                    assert!(out.text.contains(needs.as_str()), "{name}: {}", out.text);
                } else {
                    assert_ne!(
                        out.error,
                        Some(ErrorCode::Forbidden),
                        "{name} as {}: {}",
                        role.as_str(),
                        out.text
                    );
                }
                // Leave the session on the page for the next call.
                if role >= Role::Act && (name == "session_close" || name == "tabs close") {
                    let _ = agent
                        .call(ToolCall::Navigate(Navigation::To {
                            url: url.clone(),
                            wait_until: WaitUntil::Load,
                            snapshot: PageView::None,
                        }))
                        .await;
                }
            }
        }
        // An observer may do nothing but look: 22 of the 30 tools are refused.
        assert_eq!(refused, 22);
        // Read while the gateway still holds the in-memory store open: once the last
        // pooled connection closes, an in-memory SQLite database is gone.
        let events = store.audit_events(0, 10_000).await.unwrap();
        gateway.shutdown().await;
        let forbidden = events
            .iter()
            .filter(|e| e.kind == "tool_call" && e.body.contains("\"error\":\"forbidden\""))
            .count();
        assert_eq!(forbidden, refused, "every refusal is on the record");
    })
    .await;
}
