//! Attacks on the credential promise, played with real Chromium: a hostile agent that
//! guesses with yes/no tools and reads the page in slices, and a bound page that shows
//! a typed secret back in every form its JavaScript can make. The forms the outputs
//! must not hold are computed by that page itself, read from a browser session that
//! has no redactor, never by the redactor under test.

use airlock_gateway::{Interaction, Navigation, Reading, SessionCall, Window};
use std::sync::Arc;
use std::time::Duration;

use airlock_browser::{SessionOptions, SnapshotOptions, Target, WaitCondition, WaitUntil};
use airlock_config::BrowserConfig;
use airlock_core::{ErrorCode, Role};
use airlock_gateway::{
    AgentSession, Gateway, GatewayConfig, OpenOptions, ReadFormat, TabAction, ToolCall, ToolOutput,
};
use airlock_policy::{Policy, PolicyConfig};
use airlock_test_support::{FixtureServer, Harness, with_browser, with_browser_config};
use airlock_vault::{Fields, MasterKey, Secret, Store, Vault};

use crate::credentials::capture_logs;
use crate::navigate;

pub(crate) mod operator;
mod own;
mod rendered;

/// Latin-1 only, so `btoa` and `escape()` give single bytes (`%E4`); it has every
/// character an encoder escapes, a space, and a backslash Airlock's quoting doubles.
const LATIN: &str = "Pä$$wörd é&<q>\"k'/\\Zx-7";
/// Beyond Latin-1: `escape()` gives `%uXXXX`, UTF-16 differs from Latin-1.
const WIDE: &str = "tok→en Ωmega\"/\\-42";

async fn gateway(h: &Harness) -> Arc<Gateway> {
    gateway_allowing(h, &[]).await
}

/// A gateway with both secrets bound to the fixture site, whose policy allows both
/// fixture servers and `also` (loopback ports no secret is bound to).
async fn gateway_allowing(h: &Harness, also: &[u16]) -> Arc<Gateway> {
    let vault = Vault::open(
        Store::open_in_memory().await.unwrap(),
        MasterKey::generate().unwrap(),
    )
    .await
    .unwrap();
    let origin = format!("http://127.0.0.1:{}", h.site.a.port());
    for (name, value) in [("latin", LATIN), ("wide", WIDE)] {
        let mut fields = Fields::default();
        fields.username = Some("alice".into());
        fields.password = Some(value.into());
        vault
            .set(&Secret {
                tenant: "default".into(),
                name: name.into(),
                origins: vec![origin.clone()],
                fields,
            })
            .await
            .unwrap();
    }
    let (a, b) = (h.site.a.port(), h.site.b.port());
    let mut allow_private = vec![
        format!("127.0.0.1:{a}"),
        format!("127.0.0.1:{b}"),
        format!("[::1]:{b}"),
    ];
    allow_private.extend(also.iter().map(|p| format!("127.0.0.1:{p}")));
    let policy = Policy::from_config(&PolicyConfig {
        allow_private,
        ..PolicyConfig::default()
    })
    .unwrap();
    Gateway::new(
        h.host().await,
        GatewayConfig::with_policy(policy).vault(Arc::new(vault), Role::Operate),
    )
}

/// Opens the agent's session with both secrets.
async fn open_with_both(agent: &AgentSession) -> ToolOutput {
    agent
        .call(ToolCall::Session(SessionCall::Open(OpenOptions {
            credentials: vec!["latin".into(), "wide".into()],
            ..OpenOptions::default()
        })))
        .await
}

fn percent(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// The forms of `value` that the echo page's JavaScript makes (`form NAME: FORM`
/// lines), read without a redactor, and where the raw value starts in the page text
/// when the page is padded with `pad` characters.
async fn page_forms(h: &Harness, value: &str, pad: usize) -> (Vec<(String, String)>, usize) {
    let session = h
        .browsers
        .open_session(SessionOptions::default())
        .await
        .unwrap();
    let url = format!(
        "{}?forms=1&pad={pad}&v={}",
        h.site.url("app/echo.html"),
        percent(value)
    );
    session.navigate(&url, WaitUntil::Load).await.unwrap();
    let text = session.read_text(0, 1 << 22).await.unwrap().text;
    session.close().await;
    let forms = text
        .lines()
        .filter_map(|l| l.trim().trim_start_matches("- ").strip_prefix("form "))
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect::<Vec<_>>();
    assert!(
        forms.len() >= 16,
        "the echo page made {} forms",
        forms.len()
    );
    let start = text.find(&format!("raw: {value}")).unwrap() + "raw: ".len();
    (forms, start)
}

/// Pieces an output must never hold: every 6 characters of the value, and every 8
/// characters of each encoded form that only the value determines (a base64 form's
/// first characters encode the `user:` before it, its last the padding).
fn pieces(forms: &[(String, String)], value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let windows = |text: &str, n: usize, out: &mut Vec<String>| {
        let chars: Vec<char> = text.chars().collect();
        out.extend(chars.windows(n).map(|w| w.iter().collect::<String>()));
    };
    windows(value, 6, &mut out);
    for (name, form) in forms {
        let form = if name.starts_with("b64") {
            let skip = if name == "b64utf16be" { 0 } else { 14 };
            let chars: Vec<char> = form.chars().collect();
            chars[skip.min(chars.len())..chars.len().saturating_sub(3)]
                .iter()
                .collect::<String>()
        } else {
            form.clone()
        };
        windows(&form, 8, &mut out);
    }
    out.sort();
    out.dedup();
    out
}

fn assert_clean(label: &str, text: &str, pieces: &[String]) {
    for piece in pieces {
        assert!(
            !text.contains(piece.as_str()),
            "{label}: `{piece}` leaked in:\n{text}"
        );
    }
}

fn role(role: &str, name: &str) -> Target {
    Target::Role {
        role: role.into(),
        name: Some(name.into()),
        index: None,
    }
}

fn typing(target: Target, text: &str) -> ToolCall {
    ToolCall::Interact(Interaction::Type {
        target,
        text: text.into(),
        clear_first: true,
        submit: false,
    })
}

fn find(query: &str) -> ToolCall {
    ToolCall::Read(Reading::Snapshot(SnapshotOptions {
        find: Some(query.into()),
        ..SnapshotOptions::default()
    }))
}

fn wait(condition: WaitCondition) -> ToolCall {
    ToolCall::Read(Reading::WaitFor {
        condition,
        timeout: Some(Duration::from_millis(300)),
    })
}

fn read_at(offset: usize) -> ToolCall {
    ToolCall::Read(Reading::Text {
        format: ReadFormat::Text,
        offset,
    })
}

/// The body of a read result: what is inside the page fence.
fn fenced(out: &ToolOutput) -> &str {
    let start = out
        .text
        .find("<page ")
        .and_then(|i| out.text[i..].find(">\n").map(|j| i + j + 2))
        .unwrap_or(0);
    let end = out.text.rfind("\n</page ").unwrap_or(out.text.len());
    &out.text[start..end.max(start)]
}

/// Guesses an agent might try for `value`: a prefix, the value, and wrong ones of the
/// same shapes.
fn guesses(value: &str) -> [(String, String); 2] {
    let prefix: String = value.chars().take(4).collect();
    let wrong_prefix: String = prefix.chars().rev().collect();
    let wrong: String = value.chars().rev().collect();
    [(prefix, wrong_prefix), (value.to_owned(), wrong)]
}

/// Which attack a test plays on the echo page once a secret is typed into it.
#[derive(Clone, Copy, PartialEq)]
enum Attack {
    /// Every output, with the page showing the value in every form it can make.
    Encodings,
    /// Reading in slices: pages of text, agent-chosen offsets, snapshot windows, and
    /// the length caps on text and titles.
    Cuts,
    /// What Chromium itself composes: dialog texts, and the title of the page it
    /// shows for a refused navigation (its URL, partly unescaped).
    ChromiumWords,
}

/// Opens a session holding both secrets, types each into the echo page and plays
/// `attack`; every output, and every log line, must hold no piece of either value.
async fn play(attack: Attack) {
    let logs = capture_logs();
    with_browser(move |h| async move {
        let gateway = gateway(&h).await;
        // Nothing listens for Airlock here: the policy refuses it, so the page's
        // attempt to send the value there never connects.
        let denied = FixtureServer::start(std::env::temp_dir()).await;
        let agent = gateway.agent_session();
        let out = open_with_both(&agent).await;
        assert!(
            out.text
                .contains("logged in with latin for http://127.0.0.1:")
                && out.text.contains(
                    "(type {{secret:latin.username}}, {{secret:latin.password}}); wide for"
                ),
            "{}",
            out.text
        );
        for (name, value) in [("latin", LATIN), ("wide", WIDE)] {
            // Padding that puts the value across the first 40,000-byte page of text.
            let (_, start) = page_forms(&h, value, 39_000).await;
            let pad = 39_000 + 40_000 - start - 3;
            let (forms, start) = page_forms(&h, value, pad).await;
            assert!((40_000 - 6..40_000).contains(&start), "{start}");
            let pieces = pieces(&forms, value);
            let call = |c: ToolCall| {
                let agent = &agent;
                let pieces = &pieces;
                async move {
                    let label = format!("{name}: {c:?}");
                    let out = agent.call(c).await;
                    assert_clean(&label, &out.text, pieces);
                    out
                }
            };
            // Each attack has the page show what it is about, so it fails on its
            // own when its promise breaks.
            let forms = match attack {
                Attack::Encodings => "forms=1&",
                Attack::Cuts => "cuts=1&",
                Attack::ChromiumWords => "",
            };
            let url = format!(
                "{}?{forms}pad={pad}&deny={}",
                h.site.url("app/echo.html"),
                denied.port()
            );
            call(navigate(url)).await;
            let out = call(typing(
                role("textbox", "Anything"),
                &format!("{{{{secret:{name}.password}}}}"),
            ))
            .await;
            assert_eq!(out.error, None, "{}", out.text);
            assert!(
                out.text.contains(&format!("[REDACTED:{name}]")),
                "{}",
                out.text
            );
            match attack {
                Attack::Encodings => {
                    let snap = call(ToolCall::Read(
                        Reading::Snapshot(SnapshotOptions::default()),
                    ))
                    .await;
                    assert!(snap.text.contains("form b64utf16le:"), "{}", snap.text);
                    assert!(snap.text.contains("value=\"••••\""), "{}", snap.text);
                    call(ToolCall::Read(Reading::Snapshot(SnapshotOptions {
                        interactive_only: true,
                        ..SnapshotOptions::default()
                    })))
                    .await;
                    for format in [ReadFormat::Text, ReadFormat::Markdown] {
                        let out = call(ToolCall::Read(Reading::Text {
                            format,
                            offset: 40_000,
                        }))
                        .await;
                        assert!(out.text.contains("form hex:"), "{}", out.text);
                    }
                    call(ToolCall::Window(Window::Tabs(TabAction::List))).await;
                    call(ToolCall::Navigate(Navigation::Reload)).await;
                }
                Attack::Cuts => {
                    // The 200-character cut falls inside the encoded value on the
                    // `xxx…` line, the 120-character title cut inside the value.
                    let snap = call(ToolCall::Read(
                        Reading::Snapshot(SnapshotOptions::default()),
                    ))
                    .await;
                    assert!(snap.text.contains("paragraph: xxxxxxxxxx"), "{}", snap.text);
                    let tabs = call(ToolCall::Window(Window::Tabs(TabAction::List))).await;
                    assert!(tabs.text.contains("xxxxxxxxxx"), "{}", tabs.text);
                    for offset in 0..12 {
                        call(ToolCall::Read(Reading::Snapshot(SnapshotOptions {
                            offset,
                            max_nodes: 3,
                            ..SnapshotOptions::default()
                        })))
                        .await;
                    }
                    // Page text: the first page ends near the value, the next starts
                    // there, and an agent may start anywhere.
                    let first = call(read_at(0)).await;
                    let body = fenced(&first);
                    let next: usize = first
                        .text
                        .split("offset=")
                        .nth(1)
                        .and_then(|rest| rest.split(' ').next())
                        .and_then(|n| n.parse().ok())
                        .unwrap_or_else(|| panic!("one page only: {}", first.text));
                    let second = call(read_at(next)).await;
                    let chars: Vec<char> = value.chars().collect();
                    let page_end = body.split("\n[text truncated").next().unwrap_or(body);
                    for n in 2..chars.len() {
                        let prefix: String = chars[..n].iter().collect();
                        let suffix: String = chars[chars.len() - n..].iter().collect();
                        assert!(!page_end.ends_with(&prefix), "page 1 ends with `{prefix}`");
                        assert!(
                            !fenced(&second).starts_with(&suffix),
                            "page 2 starts with `{suffix}`"
                        );
                    }
                    for offset in next.saturating_sub(30)..next + 30 {
                        call(read_at(offset)).await;
                    }
                }
                Attack::ChromiumWords => {
                    let alert = call(ToolCall::Interact(Interaction::Click {
                        target: role("button", "Alert"),
                        options: Default::default(),
                    }))
                    .await;
                    assert!(
                        alert.text.contains("is open and holds the page"),
                        "{}",
                        alert.text
                    );
                    // Its message again, as the answer's effect.
                    let answered = call(ToolCall::Interact(Interaction::HandleDialog {
                        accept: true,
                        prompt_text: None,
                        wait: Duration::ZERO,
                    }))
                    .await;
                    assert!(
                        answered.text.contains("accepted the alert dialog"),
                        "{}",
                        answered.text
                    );
                    call(ToolCall::Interact(Interaction::Click {
                        target: role("button", "Send"),
                        options: Default::default(),
                    }))
                    .await;
                    let tabs = call(ToolCall::Window(Window::Tabs(TabAction::List))).await;
                    assert!(tabs.text.contains("/collect?pw="), "{}", tabs.text);
                    call(wait(WaitCondition::Text("nothing like this".into()))).await;
                    call(ToolCall::Read(
                        Reading::Snapshot(SnapshotOptions::default()),
                    ))
                    .await;
                    call(ToolCall::Navigate(Navigation::Back)).await;
                }
            }
        }
        assert_eq!(denied.connections(), 0, "the refused address was reached");
        gateway.shutdown().await;
    })
    .await;
    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    for value in [LATIN, WIDE] {
        let chars: Vec<char> = value.chars().collect();
        for w in chars.windows(6) {
            let w: String = w.iter().collect();
            assert!(!logs.contains(&w), "logs hold `{w}`");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_encoding_a_page_makes_of_a_typed_secret_reaches_the_agent() {
    play(Attack::Encodings).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_cut_airlock_makes_leaves_a_piece_of_a_secret() {
    play(Attack::Cuts).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_s_own_words_about_a_page_are_redacted_too() {
    play(Attack::ChromiumWords).await;
}

/// Calls `make(right)` and `make(wrong)` for each pair of guesses and asserts the
/// answers are the same.
async fn same_answer(
    agent: &AgentSession,
    what: &str,
    make: impl Fn(&str) -> ToolCall,
    compare: impl Fn(&ToolOutput) -> String,
) {
    for value in [LATIN, WIDE] {
        for (right, wrong) in guesses(value) {
            let a = agent.call(make(&right)).await;
            let b = agent.call(make(&wrong)).await;
            assert_eq!(
                (a.error, compare(&a)),
                (b.error, compare(&b)),
                "{what} answers a right guess differently from a wrong one"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yes_no_tools_answer_the_same_for_right_and_wrong_guesses() {
    // Every wrong guess waits out the action budget: keep it short.
    let config = BrowserConfig {
        action_timeout: Duration::from_millis(800),
        ..BrowserConfig::default()
    };
    with_browser_config(config, |h| async move {
        let gateway = gateway(&h).await;
        let agent = gateway.agent_session();
        agent
            .call(ToolCall::Session(SessionCall::Open(OpenOptions {
                credentials: vec!["latin".into(), "wide".into()],
                ..OpenOptions::default()
            })))
            .await;
        agent.call(navigate(h.site.url("app/echo.html"))).await;
        // The page shows both values back: as text, in a button's name, in an
        // attribute, in a link.
        let out = agent
            .call(typing(
                role("textbox", "Anything"),
                "{{secret:latin.password}} {{secret:wide.password}}",
            ))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let whole = |out: &ToolOutput| out.text.clone();
        let first_line = |out: &ToolOutput| out.text.lines().next().unwrap_or("").to_owned();
        same_answer(&agent, "find", find, whole).await;
        same_answer(
            &agent,
            "wait_for text",
            |g| wait(WaitCondition::Text(g.into())),
            whole,
        )
        .await;
        same_answer(
            &agent,
            "wait_for text_gone",
            |g| wait(WaitCondition::TextGone(g.into())),
            first_line,
        )
        .await;
        same_answer(
            &agent,
            "click by name",
            |g| {
                ToolCall::Interact(Interaction::Click {
                    target: role("button", &format!("Log in as {g}")),
                    options: Default::default(),
                })
            },
            whole,
        )
        .await;
        same_answer(
            &agent,
            "wait_for a named target",
            |g| wait(WaitCondition::Target(role("button", g))),
            whole,
        )
        .await;
        // A selector matching part of an attribute is refused outright.
        for selector in ["[data-v^='P']", "div[data-v*=\"ö\"]", "[data-v$='7' i]"] {
            let out = agent
                .call(ToolCall::Interact(Interaction::Click {
                    target: Target::Selector(selector.into()),
                    options: Default::default(),
                }))
                .await;
            assert_eq!(out.error, Some(ErrorCode::InvalidArgument), "{}", out.text);
        }
        // The tools still find what they are shown.
        let out = agent.call(find("Log in as")).await;
        assert!(out.text.contains("[REDACTED:latin]"), "{}", out.text);
        let out = agent.call(find("[REDACTED:wide]")).await;
        assert!(out.text.contains("button \"Log in as"), "{}", out.text);
        let out = agent
            .call(wait(WaitCondition::Text("raw: [REDACTED:latin]".into())))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent
            .call(ToolCall::Interact(Interaction::Click {
                target: role("button", "Log in as [REDACTED:latin] [REDACTED:wide]"),
                options: Default::default(),
            }))
            .await;
        assert_eq!(out.error, None, "{}", out.text);

        // Literal guesses typed into the page are shown back as typed: a prefix of
        // the secret (cut with `…` as Airlock cuts) is not hidden, so whether it was
        // hidden says nothing.
        for value in [LATIN, WIDE] {
            for (right, wrong) in guesses(value) {
                if right == value {
                    continue;
                }
                let mut shown = Vec::new();
                for guess in [&right, &wrong] {
                    agent
                        .call(typing(role("textbox", "Anything"), &format!("{guess}…")))
                        .await;
                    let out = agent.call(find(&format!("raw: {guess}…"))).await;
                    shown.push(out.text.contains(&format!("raw: {guess}…")));
                }
                assert_eq!(shown, [true, true], "guesses of {right:?}");
            }
        }
        gateway.shutdown().await;
    })
    .await;
}

/// Clicks `button`, then waits for the page's `#out` line to start with `prefix`;
/// returns every output's text.
async fn press(agent: &AgentSession, button: &str, prefix: &str) -> String {
    let mut seen = agent
        .call(ToolCall::Interact(Interaction::Click {
            target: role("button", button),
            options: Default::default(),
        }))
        .await
        .text;
    let out = agent
        .call(ToolCall::Read(Reading::WaitFor {
            condition: WaitCondition::Text(prefix.into()),
            timeout: Some(Duration::from_secs(20)),
        }))
        .await;
    assert_eq!(out.error, None, "{}\n{seen}", out.text);
    seen.push_str(&out.text);
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bound_page_cannot_send_a_secret_to_an_origin_it_is_not_bound_to() {
    with_browser(|h| async move {
        let collector = FixtureServer::start(std::env::temp_dir()).await;
        let gateway = gateway_allowing(&h, &[collector.port()]).await;
        let url = format!(
            "{}?b={}&c={}",
            h.site.url("app/exfil.html"),
            h.site.b.port(),
            collector.port()
        );
        let agent = gateway.agent_session();
        agent
            .call(ToolCall::Session(SessionCall::Open(OpenOptions {
                credentials: vec!["latin".into()],
                ..OpenOptions::default()
            })))
            .await;
        agent.call(navigate(url.clone())).await;
        let out = agent
            .call(typing(role("textbox", "Secret"), "{{secret:latin.password}}"))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        // The collector is reachable: a request without the secret gets there.
        press(&agent, "Control", "control: sent").await;
        assert_eq!(collector.connections(), 1);
        // Every way the page tries to send the value out is refused, and said so.
        let seen = press(&agent, "Send everywhere", "attempts done").await;
        let snap = agent
            .call(ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())))
            .await;
        let line = snap
            .text
            .lines()
            .find(|l| l.contains("attempts done"))
            .unwrap()
            .to_owned();
        assert!(!line.contains("no service worker"), "{line}");
        let mut seen = seen + &snap.text;
        seen.push_str(&press(&agent, "Own", "own: sent").await);
        let out = agent
            .call(ToolCall::Interact(Interaction::Click {
                target: role("button", "Post form"),
                options: Default::default(),
            }))
            .await;
        seen.push_str(&out.text);
        assert!(seen.contains("carried a secret"), "{seen}");
        assert!(
            seen.contains(&format!(
                "refused a request the page made to http://127.0.0.1:{}: it carried a form of `latin`",
                collector.port()
            )),
            "{seen}"
        );
        // A last harmless request: everything sent before it would have arrived.
        agent.call(navigate(url.clone())).await;
        press(&agent, "Control", "control: sent").await;
        assert_eq!(
            collector.connections(),
            2,
            "the secret reached the collector: {line}"
        );

        // The allowed twin: the same value typed literally in a session holding no
        // secret goes everywhere the page sends it.
        let twin = gateway.agent_session();
        twin.call(navigate(url)).await;
        twin.call(typing(role("textbox", "Secret"), LATIN)).await;
        press(&twin, "Send everywhere", "attempts done").await;
        assert!(
            collector.connections() >= 2 + 9,
            "only {} connections",
            collector.connections()
        );
        gateway.shutdown().await;
    })
    .await;
}

/// A `data:` frame is refused as a `data:` page is: none of its scripts runs, nothing
/// it names loads, and the agent is told; the page's own request gets through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_frame_runs_nothing_and_loads_nothing() {
    with_browser(|h| async move {
        let collector = FixtureServer::start(std::env::temp_dir()).await;
        let gateway = gateway_allowing(&h, &[collector.port()]).await;
        let agent = gateway.agent_session();
        let url = format!("{}?c={}", h.site.url("data-frame.html"), collector.port());
        let out = agent.call(navigate(url)).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text
                .contains("stopped a frame of the page that loaded data:"),
            "{}",
            out.text
        );
        // The load the navigation waited for includes both images: the page's own
        // reached the collector, the frame's never left.
        assert_eq!(collector.connections(), 1);
        let snap = agent
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert!(snap.text.contains("frame silent"), "{}", snap.text);
        assert!(!snap.text.contains("inside"), "{}", snap.text);
        assert_eq!(collector.connections(), 1);
        gateway.shutdown().await;
    })
    .await;
}

/// An image's pixels as RGB rows (PNG or JPEG), and its width.
fn rgb(image: &[u8]) -> (Vec<[u8; 3]>, usize) {
    if image.starts_with(&[0x89, b'P', b'N', b'G']) {
        let decoder = png::Decoder::new(std::io::Cursor::new(image));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        let channels = info.color_type.samples();
        let pixels = buf[..info.buffer_size()]
            .chunks_exact(channels)
            .map(|p| [p[0], p[1], p[2]])
            .collect();
        (pixels, info.width as usize)
    } else {
        let mut decoder = jpeg_decoder::Decoder::new(std::io::Cursor::new(image));
        let data = decoder.decode().unwrap();
        let width = decoder.info().unwrap().width as usize;
        (
            data.chunks_exact(3).map(|p| [p[0], p[1], p[2]]).collect(),
            width,
        )
    }
}

/// A page shows a typed secret elsewhere (a mirror field, an echo, base64 and URL
/// forms, split over two elements, a button's name, interleaved with zero-width
/// spaces, a box per character, reversed under a right-to-left override, drawn by a
/// style, on a canvas or inside a closed shadow root): every image the session makes
/// has each of those places painted over. The reference is the page's own rendering
/// of the value in a session with nothing to hide: every pixel where it differs from
/// the page showing nothing must be black.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_place_a_page_shows_a_secret_is_painted_over_in_images() {
    with_browser(|h| async move {
        let page = h.site.url("app/mirror.html");
        // The reference, without Airlock's redactor: where the value's pixels are.
        let plain = h
            .browsers
            .open_session(SessionOptions::default())
            .await
            .unwrap();
        let shot = async |url: String| {
            plain.navigate(&url, WaitUntil::Load).await.unwrap();
            plain
                .screenshot(&airlock_browser::ScreenshotOptions::default())
                .await
                .unwrap()
                .data
        };
        let (empty, width) = rgb(&shot(format!("{page}?v=")).await);
        let (shown, _) = rgb(&shot(format!("{page}?v={}", percent(LATIN))).await);
        plain.close().await;
        let value_pixels: Vec<usize> = (0..shown.len())
            .filter(|&i| shown[i] != empty[i])
            .collect();
        // Every row shows the value (rows are 40 px apart from y = 100): a mirror, an
        // echo, base64, URL-encoded, split in two, a button's name, zero-width spaces
        // between, a box per character, reversed under an override, a style's
        // ::before, a canvas, a closed shadow root.
        for row in 0..12 {
            let top = 100 + 40 * row;
            assert!(
                value_pixels.iter().any(|i| (top..top + 24).contains(&(i / width))),
                "the reference shows nothing in row {row}"
            );
        }

        let gateway = gateway(&h).await;
        let agent = gateway.agent_session();
        agent
            .call(ToolCall::Session(SessionCall::Open(OpenOptions {
                credentials: vec!["latin".into()],
                ..OpenOptions::default()
            })))
            .await;
        agent.call(navigate(page.clone())).await;
        let out = agent
            .call(typing(role("textbox", "Anything"), "{{secret:latin.password}}"))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        for (format, dark) in [
            (airlock_browser::ImageFormat::Png, 0),
            (airlock_browser::ImageFormat::Jpeg { quality: 60 }, 60),
        ] {
            let out = agent
                .call(ToolCall::Read(Reading::Screenshot(airlock_browser::ScreenshotOptions {
                    format,
                    ..Default::default()
                })))
                .await;
            let (painted, w) = rgb(&out.file.expect("an image").data);
            assert_eq!(w, width);
            let lit: Vec<usize> = value_pixels
                .iter()
                .copied()
                .filter(|&i| painted[i].iter().any(|c| *c > dark))
                .collect();
            assert!(
                lit.is_empty(),
                "{format:?}: {} of {} pixels where the page shows the secret are not painted, e.g. at ({}, {})",
                lit.len(),
                value_pixels.len(),
                lit[0] % width,
                lit[0] / width
            );
            // Not everything: the red heading is still there.
            let heading = (10..38)
                .flat_map(|y| (20..120).map(move |x| y * width + x))
                .filter(|&i| painted[i][0] > 150 && painted[i][1] < 90)
                .count();
            assert!(heading > 50, "{format:?}: the heading was painted over too");
            assert!(!out.text.contains("painted over whole"), "{}", out.text);
        }
        gateway.shutdown().await;
    })
    .await;
}

/// A page that shows a typed secret somewhere new on every frame (moved by its
/// script, or slid by a CSS animation): where it is in the capture cannot be known
/// from where it was before and after, so the whole image is painted and the result
/// says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_that_moves_every_frame_is_never_shown_in_an_image() {
    with_browser(|h| async move {
        let gateway = gateway(&h).await;
        for how in ["js", "css"] {
            let agent = gateway.agent_session();
            agent
                .call(ToolCall::Session(SessionCall::Open(OpenOptions {
                    credentials: vec!["latin".into()],
                    ..OpenOptions::default()
                })))
                .await;
            agent
                .call(navigate(h.site.url(&format!("app/moving.html?how={how}"))))
                .await;
            let out = agent
                .call(typing(
                    role("textbox", "Anything"),
                    "{{secret:latin.password}}",
                ))
                .await;
            assert_eq!(out.error, None, "{}", out.text);
            let out = agent
                .call(ToolCall::Read(Reading::Screenshot(
                    airlock_browser::ScreenshotOptions::default(),
                )))
                .await;
            assert!(
                out.text.contains("painted over whole"),
                "{how}: {}",
                out.text
            );
            let (painted, _) = rgb(&out.file.expect("an image").data);
            let lit = painted.iter().filter(|p| p.iter().any(|c| *c > 0)).count();
            assert_eq!(lit, 0, "{how}: {lit} pixels are not painted");
            agent.call(ToolCall::Session(SessionCall::Close)).await;
        }
        gateway.shutdown().await;
    })
    .await;
}
