//! The data-flow stage against real pages: a bank page on one origin shows an account
//! number and tells the agent to carry it to a partner on another origin; a partner
//! server that records every request it gets shows that nothing of it arrives unless a
//! human lets it. Origin sets: a read-only origin's page is read and its links
//! followed, never changed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use airlock_browser::Target;
use airlock_config::{Flow, FlowMode};
use airlock_core::ErrorCode;
use airlock_gateway::{Gateway, GatewayConfig, Interaction, OpenOptions, SessionCall, ToolCall};
use airlock_policy::{Policy, PolicyConfig};
use airlock_test_support::{Harness, with_browser};
use airlock_vault::Store;
use base64::Engine as _;
use tokio::io::AsyncWriteExt;

use crate::approvals::{approval_requests, held_then_decided};
use crate::{click_button, navigate};

const ACCOUNT: &str = "ACCT-4417-2290-8812";

/// The partner site: serves a search page and a form, and records the request line
/// and body of every request it gets (a counting listener for other tests too).
pub(crate) struct Partner {
    pub(crate) port: u16,
    requests: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Partner {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Partner {
    pub(crate) async fn start() -> Partner {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let Some((line, body)) = crate::web::read_request(&mut stream).await else {
                        return;
                    };
                    seen.lock().unwrap().push(format!("{line} {body}"));
                    let page = match line.split(' ').nth(1).unwrap_or("/") {
                        "/search" => {
                            "<title>Partner search</title><form action=\"/results\" method=\"get\"><input name=\"q\" aria-label=\"Search\"><button>Search</button></form>"
                        }
                        "/signup" => {
                            "<title>Partner form</title><form action=\"/signup\" method=\"post\"><label>Name <input name=\"name\"></label><label>Note <input name=\"note\"></label><button>Send</button></form>"
                        }
                        _ => "<title>Partner</title><p>ok</p>",
                    };
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\naccess-control-allow-origin: *\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                        page.len()
                    );
                    let _ = stream.write_all(response.as_bytes()).await;
                });
            }
        });
        Partner {
            port,
            requests,
            task,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub(crate) fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

async fn gateway(
    h: &Harness,
    partner: &Partner,
    mode: FlowMode,
    store: Option<Store>,
) -> Arc<Gateway> {
    let mut policy: PolicyConfig = h.site.policy_config();
    policy
        .allow_private
        .push(format!("127.0.0.1:{}", partner.port));
    // The fixtures' other origin is reachable too: origin sets, not the egress
    // policy, keep a session off it.
    policy
        .allow_private
        .push(format!("127.0.0.1:{}", h.site.b.port()));
    Gateway::new(
        h.host().await,
        GatewayConfig {
            store,
            approval_timeout: Duration::from_secs(30),
            flow: Flow {
                mode,
                ..Flow::default()
            },
            ..GatewayConfig::with_policy(Policy::from_config(&policy).unwrap())
        },
    )
}

fn field(name: &str) -> Target {
    Target::Role {
        role: "textbox".into(),
        name: Some(name.into()),
        index: None,
    }
}

fn type_into(name: &str, text: &str) -> ToolCall {
    ToolCall::Interact(Interaction::Type {
        target: field(name),
        text: text.into(),
        clear_first: true,
        submit: true,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_origins_data_in_a_url_is_held_and_reaches_nobody_unless_approved() {
    with_browser(|h| async move {
        let partner = Partner::start().await;
        let store = Store::open_in_memory().await.unwrap();
        let gateway = gateway(&h, &partner, FlowMode::Ask, Some(store.clone())).await;
        let agent = Arc::new(gateway.agent_session());
        let out = agent.call(navigate(h.site.url("flow/bank.html"))).await;
        assert!(out.text.contains(ACCOUNT), "{}", out.text);

        let b64 = base64::engine::general_purpose::STANDARD.encode(ACCOUNT);
        for url in [
            partner.url(&format!("/collect?d={ACCOUNT}")),
            partner.url(&format!("/collect#{ACCOUNT}")),
            partner.url("/collect?d=ACCT%2D4417%2D2290%2D8812"),
            partner.url(&format!("/collect?d={}", b64.replace('=', "%3D"))),
        ] {
            let (approval, out) =
                held_then_decided(&agent, &store, navigate(url.clone()), false, |_| {}).await;
            assert_eq!(approval.rule, "data-flow", "{url}");
            let detail = approval.detail.clone().unwrap_or_default();
            assert!(
                detail.contains("4417-2290-8812")
                    && detail.contains(&h.site.url("").trim_end_matches('/').to_owned())
                    && detail.contains(&partner.origin()),
                "{url}: {detail}"
            );
            assert_eq!(out.error, Some(ErrorCode::ApprovalDenied), "{url}: {}", out.text);
            assert_eq!(partner.requests(), Vec::<String>::new(), "{url}");
        }

        // The record names the rule and says what would have flowed where.
        let requested = approval_requests(&store).await;
        assert_eq!(requested.len(), 4);
        assert!(
            requested
                .iter()
                .all(|e| e["rule"] == "data-flow" && e["detail"].as_str().unwrap().contains("4417")),
            "{requested:?}"
        );

        // Approved, it goes: the partner sees exactly that request.
        let go = navigate(partner.url(&format!("/collect?d={ACCOUNT}")));
        let (_, out) = held_then_decided(&agent, &store, go, true, |_| {}).await;
        assert_eq!(out.error, None, "{}", out.text);
        let requests = partner.requests();
        assert_eq!(requests.len(), 1, "{requests:?}");
        assert!(requests[0].contains(ACCOUNT), "{requests:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_deny_typed_and_filled_data_is_refused_and_data_typed_back_home_flows() {
    with_browser(|h| async move {
        let partner = Partner::start().await;
        let gateway = gateway(&h, &partner, FlowMode::Deny, None).await;
        let agent = Arc::new(gateway.agent_session());
        agent.call(navigate(h.site.url("flow/bank.html"))).await;

        let out = agent.call(navigate(partner.url("/search"))).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(partner.requests().len(), 1);

        // Into another site's search box: refused, nothing sent.
        let out = agent.call(type_into("Search", ACCOUNT)).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("data-flow"), "{}", out.text);
        // Escaped by the agent: the same.
        let out = agent
            .call(type_into("Search", "ACCT&#45;4417&#45;2290&#45;8812"))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert_eq!(partner.requests().len(), 1, "{:?}", partner.requests());

        // Into another site's form: refused, nothing sent.
        agent.call(navigate(partner.url("/signup"))).await;
        let fill = ToolCall::Interact(Interaction::FillForm {
            fields: vec![
                (field("Name"), "Alice".into()),
                (field("Note"), format!("acct {ACCOUNT}")),
            ],
        });
        let out = agent.call(fill).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("form value"), "{}", out.text);
        let out = agent
            .call(navigate(partner.url(&format!(
                "/collect?d={}",
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(ACCOUNT)
            ))))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert_eq!(partner.requests().len(), 2, "{:?}", partner.requests());
        assert!(!partner.requests().iter().any(|r| r.contains("4417")));

        // A short run of it, or words, carry nothing: typed and sent.
        agent.call(navigate(partner.url("/search"))).await;
        let out = agent.call(type_into("Search", "4417 checking")).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            partner
                .requests()
                .iter()
                .any(|r| r.contains("/results?q=4417")),
            "{:?}",
            partner.requests()
        );

        // Typed back into the origin it came from, it flows freely.
        agent.call(navigate(h.site.url("flow/bank.html"))).await;
        let out = agent.call(type_into("Reference", ACCOUNT)).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains(&format!("ref={ACCOUNT}")), "{}", out.text);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_origin_refuses_changes_and_lets_its_links_be_followed() {
    with_browser(|h| async move {
        let partner = Partner::start().await;
        let gateway = gateway(&h, &partner, FlowMode::Ask, None).await;
        let bank = h.site.url("").trim_end_matches('/').to_owned();

        // Without origin sets the same click runs: the refusal below is the sets'.
        let free = gateway.agent_session();
        free.call(navigate(h.site.url("flow/bank.html"))).await;
        let out = free.call(click_button("Save note")).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("ref="), "{}", out.text);

        let agent = gateway.agent_session();
        let out = agent
            .call(ToolCall::Session(SessionCall::Open(OpenOptions {
                act_origins: vec![partner.origin()],
                read_origins: vec![bank.clone()],
                ..OpenOptions::default()
            })))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(navigate(h.site.url("flow/bank.html"))).await;
        assert_eq!(out.error, None, "{}", out.text);

        let out = agent.call(click_button("Save note")).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(
            out.text.contains("read-only-origin") && out.text.contains("may only be read"),
            "{}",
            out.text
        );
        let out = agent.call(type_into("Reference", "hello")).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        let out = agent
            .call(ToolCall::Interact(Interaction::PressKey {
                key: "Enter".into(),
            }))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);

        // A link is followed.
        let link = ToolCall::Interact(Interaction::Click {
            target: Target::Role {
                role: "link".into(),
                name: Some("Statement".into()),
                index: None,
            },
            options: Default::default(),
        });
        let out = agent.call(link).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("statement.html"), "{}", out.text);

        // An origin in neither set is not visited.
        let out = agent
            .call(navigate(h.site.other_origin("index.html")))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("neither"), "{}", out.text);

        // The origin it may act on takes input.
        agent.call(navigate(partner.url("/search"))).await;
        let out = agent.call(type_into("Search", "shoes")).await;
        assert_eq!(out.error, None, "{}", out.text);

        // A bad origin is a clear argument error.
        let other = gateway.agent_session();
        let out = other
            .call(ToolCall::Session(SessionCall::Open(OpenOptions {
                act_origins: vec!["http://".into()],
                ..OpenOptions::default()
            })))
            .await;
        assert_eq!(out.error, Some(ErrorCode::InvalidArgument), "{}", out.text);
        assert!(out.text.contains("act_origins[0]"), "{}", out.text);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printed_numbers_sent_without_their_grouping_are_refused_and_a_date_is_not() {
    with_browser(|h| async move {
        let partner = Partner::start().await;
        let gateway = gateway(&h, &partner, FlowMode::Deny, None).await;
        let agent = Arc::new(gateway.agent_session());
        let out = agent.call(navigate(h.site.url("flow/printed.html"))).await;
        assert!(out.text.contains("DE89 3704 0044"), "{}", out.text);

        // In a URL, grouped otherwise or not at all: refused, nothing reaches the
        // partner.
        for query in [
            "iban=DE89370400440532013000",
            "card=4111-1111-1111-1111",
            "ssn=532719904",
        ] {
            let out = agent
                .call(navigate(partner.url(&format!("/collect?{query}"))))
                .await;
            assert_eq!(
                out.error,
                Some(ErrorCode::PolicyDenied),
                "{query}: {}",
                out.text
            );
            assert!(out.text.contains("data-flow"), "{query}: {}", out.text);
        }
        assert_eq!(partner.requests(), Vec::<String>::new());

        // Typed into another site's search box: the same.
        agent.call(navigate(partner.url("/search"))).await;
        assert_eq!(partner.requests().len(), 1);
        let out = agent.call(type_into("Search", "4111111111111111")).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert_eq!(partner.requests().len(), 1, "{:?}", partner.requests());

        // A date the page showed is no printed number: typed and sent.
        let out = agent.call(type_into("Search", "20261128")).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            partner
                .requests()
                .iter()
                .any(|r| r.contains("/results?q=20261128")),
            "{:?}",
            partner.requests()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_tab_and_a_urls_userinfo_are_sinks_too() {
    with_browser(|h| async move {
        let partner = Partner::start().await;
        let gateway = gateway(&h, &partner, FlowMode::Deny, None).await;
        let agent = Arc::new(gateway.agent_session());
        agent.call(navigate(h.site.url("flow/bank.html"))).await;

        let new_tab = ToolCall::Window(airlock_gateway::Window::Tabs(
            airlock_gateway::TabAction::New(Some(partner.url(&format!("/collect?d={ACCOUNT}")))),
        ));
        let out = agent.call(new_tab).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("data-flow"), "{}", out.text);
        // Any name or password in a URL the agent writes is refused by default
        // (a 401 Basic answer has the browser send it)...
        let origin = partner.origin();
        let host = origin.trim_start_matches("http://");
        let out = agent
            .call(navigate(format!("http://alice:pw@{host}/search")))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("url-credentials"), "{}", out.text);
        // ... and where the operator allows them, the data-flow check reads them.
        let mut policy: PolicyConfig = h.site.policy_config();
        policy
            .allow_private
            .push(format!("127.0.0.1:{}", partner.port));
        let allowing = Gateway::new(
            h.host().await,
            GatewayConfig {
                flow: Flow {
                    mode: FlowMode::Deny,
                    url_credentials: true,
                    ..Flow::default()
                },
                ..GatewayConfig::with_policy(Policy::from_config(&policy).unwrap())
            },
        );
        let agent = Arc::new(allowing.agent_session());
        agent.call(navigate(h.site.url("flow/bank.html"))).await;
        for url in [
            format!("http://{ACCOUNT}:x@{host}/collect"),
            format!("http://x:{ACCOUNT}@{host}/collect"),
        ] {
            let out = agent.call(navigate(url.clone())).await;
            assert_eq!(
                out.error,
                Some(ErrorCode::PolicyDenied),
                "{url}: {}",
                out.text
            );
            assert!(out.text.contains("data-flow"), "{url}: {}", out.text);
        }
        assert_eq!(partner.requests(), Vec::<String>::new());
        // A new tab with nothing of the bank's opens there.
        let plain = ToolCall::Window(airlock_gateway::Window::Tabs(
            airlock_gateway::TabAction::New(Some(partner.url("/search"))),
        ));
        let out = agent.call(plain).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(partner.requests().len(), 1, "{:?}", partner.requests());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_caller_read_in_one_session_is_checked_in_its_next_and_no_one_elses() {
    with_browser(|h| async move {
        let partner = Partner::start().await;
        let gateway = gateway(&h, &partner, FlowMode::Deny, None).await;
        // Read in one browser session, which then closes.
        let reader = gateway.agent_session();
        let out = reader.call(navigate(h.site.url("flow/bank.html"))).await;
        assert!(out.text.contains(ACCOUNT), "{}", out.text);
        reader.close().await;
        // Sent from a second session of the same caller (as a stateless client's
        // next one-off call is): refused, nothing reaches the partner.
        let sender = gateway.agent_session();
        let send = || navigate(partner.url(&format!("/collect?d={ACCOUNT}")));
        let out = sender.call(send()).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("data-flow"), "{}", out.text);
        assert_eq!(partner.requests(), Vec::<String>::new());
        // Another caller read nothing: the same URL goes.
        let other = gateway.agent_session_as(
            airlock_gateway::Principal {
                tenant: "default".to_owned(),
                role: airlock_core::Role::Act,
                key: Some("key_other".to_owned()),
            },
            airlock_gateway::Surface::Mcp,
        );
        let out = other.call(send()).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(partner.requests().len(), 1);
        other.close().await;
        sender.close().await;

        // With `[flow] scope = "session"` each browser session remembers only its
        // own reads: the second session's send goes.
        let mut policy: PolicyConfig = h.site.policy_config();
        policy
            .allow_private
            .push(format!("127.0.0.1:{}", partner.port));
        let per_session = Gateway::new(
            h.host().await,
            GatewayConfig {
                flow: Flow {
                    mode: FlowMode::Deny,
                    scope: airlock_config::FlowScope::Session,
                    ..Flow::default()
                },
                ..GatewayConfig::with_policy(Policy::from_config(&policy).unwrap())
            },
        );
        let reader = per_session.agent_session();
        reader.call(navigate(h.site.url("flow/bank.html"))).await;
        let out = reader.call(send()).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        let sender = per_session.agent_session();
        let out = sender.call(send()).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert_eq!(partner.requests().len(), 2);
        reader.close().await;
        sender.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_number_sent_in_two_pieces_is_refused_at_the_second() {
    with_browser(|h| async move {
        let partner = Partner::start().await;
        let gateway = gateway(&h, &partner, FlowMode::Deny, None).await;
        let agent = Arc::new(gateway.agent_session());
        agent.call(navigate(h.site.url("flow/printed.html"))).await;
        // Half a card in one URL, the other half in the next: the first carries too
        // little to count and goes; the second would complete it and is refused.
        let out = agent
            .call(navigate(partner.url("/collect?a=4111%201111")))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent
            .call(navigate(partner.url("/collect?b=1111%201111")))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("split over calls"), "{}", out.text);
        assert_eq!(partner.requests().len(), 1, "{:?}", partner.requests());
        // Typed in two pieces into the partner's search box: the same.
        agent.call(navigate(partner.url("/search"))).await;
        let piece = |text: &str, submit: bool| {
            ToolCall::Interact(Interaction::Type {
                target: field("Search"),
                text: text.into(),
                clear_first: false,
                submit,
            })
        };
        let out = agent.call(piece("532-71", false)).await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(piece("-9904", true)).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(
            !partner.requests().iter().any(|r| r.contains("/results")),
            "{:?}",
            partner.requests()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uploaded_files_name_is_a_sink_too() {
    with_browser(|h| async move {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(format!("{ACCOUNT}.txt")), "statement").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "notes").unwrap();
        let mut policy: PolicyConfig = h.site.policy_config();
        policy
            .allow_private
            .push(format!("127.0.0.1:{}", h.site.b.port()));
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                upload_dir: Some(dir.path().to_owned()),
                flow: Flow {
                    mode: FlowMode::Deny,
                    ..Flow::default()
                },
                ..GatewayConfig::with_policy(Policy::from_config(&policy).unwrap())
            },
        );
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("flow/bank.html"))).await;
        assert!(out.text.contains(ACCOUNT), "{}", out.text);
        agent
            .call(navigate(h.site.other_origin("upload.html")))
            .await;
        let upload = |name: &str| {
            ToolCall::Interact(Interaction::FileUpload {
                target: Target::Role {
                    role: "button".into(),
                    name: Some("Choose files".into()),
                    index: None,
                },
                files: vec![name.to_owned()],
            })
        };
        let out = agent.call(upload(&format!("{ACCOUNT}.txt"))).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("file name"), "{}", out.text);
        let out = agent.call(upload("notes.txt")).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("got notes.txt 5"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompts_answer_is_a_sink_too() {
    with_browser(|h| async move {
        let partner = Partner::start().await;
        let gateway = gateway(&h, &partner, FlowMode::Deny, None).await;
        let agent = gateway.agent_session();
        let out = agent.call(navigate(h.site.url("flow/bank.html"))).await;
        assert!(out.text.contains(ACCOUNT), "{}", out.text);
        // Another origin's page asks, in a prompt.
        agent
            .call(navigate(h.site.other_origin("dialogs.html")))
            .await;
        let out = agent.call(click_button("Prompt")).await;
        assert_eq!(out.error, None, "{}", out.text);
        let answer = |text: &str| {
            ToolCall::Interact(Interaction::HandleDialog {
                accept: true,
                prompt_text: Some(text.to_owned()),
                wait: Duration::from_secs(5),
            })
        };
        let out = agent.call(answer(ACCOUNT)).await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        assert!(out.text.contains("prompt answer"), "{}", out.text);
        let out = agent.call(answer("Alice")).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("prompt returned Alice"), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}
