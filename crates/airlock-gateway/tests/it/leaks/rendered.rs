//! A typed secret shown back as no encoding but as a person reads it: one character
//! per element or per line, invisible characters between them, cut in two across
//! elements, reversed inside a right-to-left override. A model reads those as the
//! value as surely as the value itself; no output may carry one.

use airlock_browser::SnapshotOptions;
use airlock_gateway::{AgentSession, ReadFormat, Reading, ToolCall};
use airlock_test_support::with_browser;

use super::{LATIN, WIDE, find, gateway, open_with_both, role, typing};
use crate::navigate;

// `text` as a reader takes it in: no whitespace, no character that draws nothing,
// none of the lines' own markup (`- `, `text:`, `listitem:`) and no `-` (one of the
// values holds one; it is dropped from both sides).
fn reading(text: &str) -> String {
    let unseen = |c: char| {
        c.is_whitespace()
            || matches!(c, '\u{00AD}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '-')
    };
    let read: String = text.chars().filter(|c| !unseen(*c)).collect();
    read.replace("listitem:", "").replace("text:", "")
}

// Every output an agent reads the page through, after it typed `value` (a secret's
// placeholder or the literal) into the page.
async fn outputs(agent: &AgentSession, url: String, value: &str) -> Vec<(String, String)> {
    let out = agent.call(navigate(url)).await;
    assert_eq!(out.error, None, "{}", out.text);
    let out = agent.call(typing(role("textbox", "Anything"), value)).await;
    assert_eq!(out.error, None, "{}", out.text);
    let mut shown = vec![("type".to_owned(), out.text)];
    let calls = [
        (
            "snapshot",
            ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())),
        ),
        (
            "interactive",
            ToolCall::Read(Reading::Snapshot(SnapshotOptions {
                interactive_only: true,
                ..SnapshotOptions::default()
            })),
        ),
        ("find", find("listitem")),
        (
            "text",
            ToolCall::Read(Reading::Text {
                format: ReadFormat::Text,
                offset: 0,
            }),
        ),
        (
            "markdown",
            ToolCall::Read(Reading::Text {
                format: ReadFormat::Markdown,
                offset: 0,
            }),
        ),
    ];
    for (label, call) in calls {
        let out = agent.call(call).await;
        assert_eq!(out.error, None, "{label}: {}", out.text);
        shown.push((label.to_owned(), out.text));
    }
    shown
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_split_interleaved_or_reversed_on_the_page_reaches_the_agent_in_no_form() {
    with_browser(|h| async move {
        let gateway = gateway(&h).await;
        let url = h.site.url("app/split.html");
        // The check can fail: typed as plain text in a session without secrets, every
        // form reads as the value in the snapshot and the page's text.
        let plain = gateway.agent_session();
        let shown = outputs(&plain, url.clone(), "plain-Secret-42x").await;
        for (label, text) in &shown[1..] {
            if label == "interactive" || label == "find" {
                continue;
            }
            let read = reading(text);
            assert!(
                read.matches("plainSecret42x").count() >= 7,
                "{label}: {text}"
            );
            assert!(read.contains("x24terceSnialp"), "{label}: {text}");
        }

        let agent = gateway.agent_session();
        let out = open_with_both(&agent).await;
        assert_eq!(out.error, None, "{}", out.text);
        for (name, value) in [("latin", LATIN), ("wide", WIDE)] {
            let read_value = reading(value);
            let reversed: String = read_value.chars().rev().collect();
            let placeholder = format!("{{{{secret:{name}.password}}}}");
            let shown = outputs(&agent, url.clone(), &placeholder).await;
            let snapshot = &shown[1].1;
            // The page shows every form (the lines are there, their values hidden).
            for form in ["zw: ", "joiners: ", "halves: ", "bold: ", "bidi: "] {
                assert!(snapshot.contains(form), "{form} in {snapshot}");
            }
            assert!(
                snapshot.matches("listitem").count()
                    >= value.chars().filter(|c| !c.is_whitespace()).count(),
                "{snapshot}"
            );
            for (label, text) in &shown {
                let read = reading(text);
                assert!(
                    !read.contains(&read_value) && !read.contains(&reversed),
                    "{name} {label} reads as the value:\n{text}"
                );
            }
        }
        gateway.shutdown().await;
    })
    .await;
}
