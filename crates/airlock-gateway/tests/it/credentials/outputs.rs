//! What a page's own outputs give back in a session holding secrets: console lines,
//! request logs, prompts and PDFs.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_messages_and_requests_never_carry_a_typed_secret_in_any_encoding() {
    with_browser(|h| async move {
        let (gateway, _vault) = gateway(&h, Role::Operate).await;
        let agent = gateway.agent_session();
        let out = call(&agent, open_with(&["login"], None)).await;
        assert_eq!(out.error, None, "{}", out.text);
        call(&agent, navigate(h.site.url("app/console.html"))).await;
        let out = call(
            &agent,
            typing(role("textbox", "Anything"), "{{secret:login.password}}"),
        )
        .await;
        assert_eq!(out.error, None, "{}", out.text);
        let everything = || {
            ToolCall::Read(Reading::ConsoleMessages {
                level: airlock_browser::ConsoleLevel::Debug,
                limit: 200,
                all: true,
            })
        };
        // The page logged it at every level and threw it; each line is there,
        // with the secret's every form redacted (`call` checks every form).
        let mut text = String::new();
        for _ in 0..100 {
            text = call(&agent, everything()).await.text;
            if text.contains("thrown") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for line in [
            "[info] raw [REDACTED:login]",
            "[info] url [REDACTED:login]",
            "[warning] b64 ",
            "[error] html [REDACTED:login]",
            "[debug] json {\"v\":\"[REDACTED:login]\"}",
            "[error] Error: thrown [REDACTED:login]",
            "[info] esc [REDACTED:login]",
            "[info] latin1 [REDACTED:login]",
            "[info] utf16 [REDACTED:login]",
            "[info] hex [REDACTED:login]",
            "[info] entities [REDACTED:login]",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        // The encodings `leaked_forms` does not list, made here from the value.
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let utf16: Vec<u8> = APP_PASSWORD
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let escaped: String = APP_PASSWORD
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"@*_+-./".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let hex: String = APP_PASSWORD.bytes().map(|b| format!("{b:02x}")).collect();
        let entities: String = APP_PASSWORD
            .chars()
            .map(|c| format!("&#{};", c as u32))
            .collect();
        // The page requested it in URLs too, in those forms and as the URL parser
        // escapes a raw one: the request list shows none of it.
        let mut requests = String::new();
        for _ in 0..100 {
            requests = call(
                &agent,
                ToolCall::Read(Reading::NetworkRequests {
                    filter: Some("collect".into()),
                    limit: 200,
                    with_static: true,
                }),
            )
            .await
            .text;
            if requests.contains("collect?last=") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for kind in ["raw", "url", "b64", "esc", "latin1", "utf16", "hex", "last"] {
            let line = requests
                .lines()
                .find(|l| l.contains(&format!("collect?{kind}=")))
                .unwrap_or_else(|| panic!("{kind}: {requests}"));
            assert!(line.contains("[REDACTED:login]"), "{kind}: {line}");
        }
        // As the URL parser writes a raw value into a query.
        let query: String = APP_PASSWORD
            .bytes()
            .map(|b| {
                if b"\"#<>' ".contains(&b) || !b.is_ascii() {
                    format!("%{b:02X}")
                } else {
                    (b as char).to_string()
                }
            })
            .collect();
        for form in [
            b64(APP_PASSWORD.as_bytes()),
            b64(&utf16),
            escaped,
            hex,
            entities,
            query,
        ] {
            assert!(!text.contains(&form), "`{form}` leaked in:\n{text}");
            assert!(!requests.contains(&form), "`{form}` leaked in:\n{requests}");
        }
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_takes_a_placeholder_only_on_its_origin_and_shows_no_value() {
    with_browser(|h| async move {
        let (gateway, _vault) = gateway(&h, Role::Operate).await;
        let agent = gateway.agent_session();
        let out = call(&agent, open_with(&["login"], None)).await;
        assert_eq!(out.error, None, "{}", out.text);
        let ask = || {
            ToolCall::Interact(Interaction::Click {
                target: role("button", "Ask"),
                options: Default::default(),
            })
        };
        let answer = |accept: bool, text: Option<&str>| {
            ToolCall::Interact(Interaction::HandleDialog {
                accept,
                prompt_text: text.map(str::to_owned),
                wait: Duration::from_secs(5),
            })
        };
        let secret = "{{secret:login.password}}";

        // Another site's prompt: refused, nothing typed, the dialog still open.
        call(&agent, navigate(h.site.other_site("app/prompt.html"))).await;
        let out = call(&agent, ask()).await;
        assert!(
            out.text
                .contains("prompt dialog \"Your password?\" is open"),
            "{}",
            out.text
        );
        let out = call(&agent, answer(true, Some(secret))).await;
        assert_eq!(
            out.error,
            Some(ErrorCode::SecretOriginMismatch),
            "{}",
            out.text
        );
        let out = call(
            &agent,
            ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())),
        )
        .await;
        assert_eq!(out.error, Some(ErrorCode::DialogOpen), "{}", out.text);
        assert!(out.text.contains("browser_handle_dialog"), "{}", out.text);
        let out = call(&agent, answer(false, None)).await;
        assert!(
            out.text.contains("dismissed the prompt dialog"),
            "{}",
            out.text
        );
        assert!(
            out.text.contains("alert dialog \"you typed null"),
            "{}",
            out.text
        );
        let out = call(&agent, answer(true, None)).await;
        assert!(out.text.contains("got null"), "{}", out.text);

        // Its own origin: typed, and every reflection (page, the alert that follows)
        // redacted; the agent sees its placeholder back.
        call(&agent, navigate(h.site.url("app/prompt.html"))).await;
        call(&agent, ask()).await;
        let out = call(&agent, answer(true, Some(secret))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text.contains(&format!("answering {secret}")),
            "{}",
            out.text
        );
        assert!(
            out.text
                .contains("alert dialog \"you typed [REDACTED:login]"),
            "{}",
            out.text
        );
        let out = call(&agent, answer(true, None)).await;
        assert!(out.text.contains("got [REDACTED:login]"), "{}", out.text);
        // Nothing open any more: a short wait, then `not_found`.
        let out = call(
            &agent,
            ToolCall::Budgeted(Duration::from_millis(200), Box::new(answer(true, None))),
        )
        .await;
        assert_eq!(out.error, Some(ErrorCode::NotFound), "{}", out.text);
        agent.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_holding_secrets_makes_no_pdf() {
    with_browser(|h| async move {
        let (gateway, _vault) = gateway(&h, Role::Operate).await;
        let agent = gateway.agent_session();
        let out = call(&agent, open_with(&["login"], None)).await;
        assert_eq!(out.error, None, "{}", out.text);
        call(&agent, navigate(h.site.url("app/login.html"))).await;
        let out = call(&agent, ToolCall::Read(Reading::Pdf)).await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        assert!(out.file.is_none());
        assert!(
            out.text.contains("no redaction reaches into a PDF"),
            "{}",
            out.text
        );
        agent.close().await;
    })
    .await;
}
