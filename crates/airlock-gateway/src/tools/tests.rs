//! Tool results as text, without a browser: plain surfaces, error lines, and placeholders found in every typed field.

use super::*;

#[test]
fn plain_text_drops_markdown() {
    assert_eq!(
        plain("## Title\nsee [the docs](http://x/y) now\n"),
        "Title\nsee the docs now\n"
    );
}

#[test]
fn errors_start_with_their_code() {
    let out = ToolOutput::error(ErrorCode::RefNotFound, "ref `e9` is gone");
    assert_eq!(out.text, "ref_not_found: ref `e9` is gone");
    assert_eq!(out.error, Some(ErrorCode::RefNotFound));
    assert_eq!(out.message.as_deref(), Some("ref `e9` is gone"));
}

#[test]
fn placeholders_outside_typed_text_are_found_in_every_typed_field() {
    let p = "{{secret:app.password}}";
    let role = |name: &str| Target::Role {
        role: "button".into(),
        name: Some(name.into()),
        index: None,
    };
    let cases = [
        (
            ToolCall::Navigate(Navigation::To {
                url: format!("https://x.test/?q={p}"),
                wait_until: WaitUntil::Load,
                snapshot: PageView::Full,
            }),
            Some("url"),
        ),
        (
            ToolCall::Window(Window::Tabs(TabAction::New(Some(format!(
                "https://x.test/{p}"
            ))))),
            Some("url"),
        ),
        (
            ToolCall::Interact(Interaction::PressKey { key: p.into() }),
            Some("key"),
        ),
        (
            ToolCall::Read(Reading::WaitFor {
                condition: WaitCondition::TextGone(p.into()),
                timeout: None,
            }),
            Some("text"),
        ),
        (
            ToolCall::Read(Reading::WaitFor {
                condition: WaitCondition::Target(Target::Selector(p.into())),
                timeout: None,
            }),
            Some("target"),
        ),
        (
            ToolCall::Interact(Interaction::Scroll(Scroll::IntoView(role(p)))),
            Some("target"),
        ),
        (
            ToolCall::Budgeted(
                Duration::from_secs(1),
                Box::new(ToolCall::Interact(Interaction::Hover { target: role(p) })),
            ),
            Some("target"),
        ),
        (
            ToolCall::Interact(Interaction::FillForm {
                fields: vec![(role(p), "x".into())],
            }),
            Some("target"),
        ),
        // Typed text is where placeholders belong.
        (
            ToolCall::Interact(Interaction::Type {
                target: role("Password"),
                text: p.into(),
                clear_first: false,
                submit: false,
            }),
            None,
        ),
        (
            ToolCall::Interact(Interaction::FillForm {
                fields: vec![(role("Password"), p.into())],
            }),
            None,
        ),
    ];
    for (call, want) in cases {
        assert_eq!(call.misplaced_placeholder(), want, "{call:?}");
    }
}

#[test]
fn gateway_errors_become_output_once_with_their_code_and_message() {
    let cases = [
        (
            Error::PlaceholderMisplaced { param: "url" },
            ErrorCode::SecretOriginMismatch,
        ),
        (
            Error::CredentialNotLoaded { name: "app".into() },
            ErrorCode::Forbidden,
        ),
        (Error::ShuttingDown, ErrorCode::BrowserUnavailable),
        (
            Error::Browser(BrowserError::RefNotFound {
                reference: "e9".into(),
            }),
            ErrorCode::RefNotFound,
        ),
    ];
    for (error, code) in cases {
        let mut out = ToolOutput::from_error(&error);
        assert_eq!(out.error, Some(code));
        let message = error.to_string();
        assert_eq!(out.message.as_deref(), Some(message.as_str()));
        assert_eq!(out.text, format!("{code}: {message}"));
        out.push_note("; next");
        out.redact_with(|t| t.replace("next", "[x]"));
        assert!(out.text.ends_with("; [x]") && out.message.unwrap().ends_with("; [x]"));
    }
}
