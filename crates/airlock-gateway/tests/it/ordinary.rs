//! Ordinary browsing under the data-flow check: 34 multi-site flows an assistant does
//! every day (comparing shops, signing in and being sent back, sharing a link,
//! fetching the same file from a mirror, tracking a parcel, giving one's own e-mail
//! address, copying an address, a date, a title, an ISBN), each carrying text one
//! site showed to another, run with real Chromium against 20 sites on loopback under
//! `[flow] mode = "deny"` (a refusal there is a hold under the default `ask`). The
//! set's target is at most one in twenty held; the count is printed, and every flow
//! not held is seen arriving at its destination.

use airlock_browser::Target;
use airlock_config::{Flow, FlowMode};
use airlock_core::ErrorCode;
use airlock_gateway::{Gateway, GatewayConfig, Interaction, ToolCall};
use airlock_test_support::with_browser;

use crate::navigate;
use crate::web::Web;

/// The sites of the small web the flows browse, one origin each.
const SITES: &[&str] = &[
    "shop",
    "shop2",
    "reviews",
    "carrier",
    "mail",
    "news",
    "social",
    "wiki",
    "maps",
    "airline",
    "hotel",
    "bank",
    "docs",
    "mirror",
    "login",
    "search",
    "translate",
    "support",
    "books",
    "weather",
];

/// One step of a flow.
enum Step {
    /// Open a page (and read it: a navigation's result shows it).
    Open(&'static str, String),
    /// Type into the field named so and press Enter (the form submits).
    Type(&'static str, String),
    /// Fill these fields, then click the button named so.
    Fill(Vec<(&'static str, String)>, &'static str),
}

struct Ordinary {
    name: &'static str,
    pages: Vec<(&'static str, &'static str, String)>,
    steps: Vec<Step>,
    /// The site the flow's last step reaches, and a piece of what must arrive there.
    arrives: (&'static str, String),
}

fn field(name: &str) -> Target {
    Target::Role {
        role: "textbox".into(),
        name: Some(name.into()),
        index: None,
    }
}

fn page(title: &str, body: &str) -> String {
    format!("<title>{title}</title>{body}")
}

// The flows, written for this set: what an assistant carries from one site to
// another in a day of ordinary errands.
fn flows(web: &Web) -> Vec<Ordinary> {
    use Step::{Fill, Open, Type};
    let u = |name: &str, path: &str| web.url(name, path);
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let article = u("news", "/2026/12/07/gateways-for-agents");
    let cart = u("shop", "/checkout/cart?step=2");
    vec![
        Ordinary {
            name: "compare a product's price on another shop",
            pages: vec![(
                "shop",
                "/p/headphones",
                page(
                    "Sony WH-1000XM5",
                    "<h1>Sony WH-1000XM5 Wireless Noise Cancelling Headphones</h1><p>$348.00, in stock</p>",
                ),
            )],
            steps: vec![
                Open("shop", "/p/headphones".into()),
                Open("shop2", "/".into()),
                Type("Search", "Sony WH-1000XM5".into()),
            ],
            arrives: ("shop2", "WH-1000XM5".into()),
        },
        Ordinary {
            name: "look up reviews of a laptop",
            pages: vec![(
                "shop",
                "/p/laptop",
                page(
                    "Acme ProBook",
                    "<h1>Acme ProBook 15 G9 Laptop, 16 GB, Silver</h1><p>$1,249.00</p>",
                ),
            )],
            steps: vec![
                Open("shop", "/p/laptop".into()),
                Open("reviews", "/".into()),
                Type("Search", "Acme ProBook 15 G9 review".into()),
            ],
            arrives: ("reviews", "ProBook".into()),
        },
        Ordinary {
            name: "sign in and be sent back to the cart",
            pages: vec![(
                "shop",
                "/checkout/cart",
                page("Cart", "<h1>Your cart</h1><p>2 items, $59.90</p>"),
            )],
            steps: vec![
                Open("shop", "/checkout/cart?step=2".into()),
                Open("login", format!("/signin?continue={}", enc(&cart))),
            ],
            arrives: ("login", "/signin?continue=".into()),
        },
        Ordinary {
            name: "a site's redirect back to the page one came from",
            pages: vec![(
                "docs",
                "/guide/install",
                page(
                    "Install",
                    "<h1>Installing on Debian 12</h1><p>Run the package manager.</p>",
                ),
            )],
            steps: vec![
                Open("docs", "/guide/install".into()),
                Open(
                    "login",
                    format!(
                        "/oauth/authorize?client_id=docs&redirect_uri={}",
                        enc(&u("docs", "/guide/install"))
                    ),
                ),
            ],
            arrives: ("login", "redirect_uri=".into()),
        },
        Ordinary {
            name: "share an article on a social site",
            pages: vec![(
                "news",
                "/2026/12/07/gateways-for-agents",
                page(
                    "Gateways for agents",
                    "<h1>Gateways for AI agents, explained</h1><p>Why every browser agent needs a policy layer.</p>",
                ),
            )],
            steps: vec![
                Open("news", "/2026/12/07/gateways-for-agents".into()),
                Open(
                    "social",
                    format!(
                        "/share?url={}&title={}",
                        enc(&article),
                        enc("Gateways for AI agents, explained")
                    ),
                ),
            ],
            arrives: ("social", "/share?url=".into()),
        },
        Ordinary {
            name: "mail a link to a colleague",
            pages: vec![],
            steps: vec![
                Open("news", "/2026/12/07/gateways-for-agents".into()),
                Open("mail", "/compose".into()),
                Fill(
                    vec![
                        ("Email", "sam@partner.example".into()),
                        ("Message", format!("Worth reading: {article}")),
                    ],
                    "Send",
                ),
            ],
            arrives: ("mail", "gateways-for-agents".into()),
        },
        Ordinary {
            name: "fetch the same release from a mirror",
            pages: vec![(
                "docs",
                "/releases",
                page(
                    "Releases",
                    "<h1>Releases</h1><ul><li><a href=\"/files/airlock-2.4.1-linux-amd64.tar.gz\">airlock-2.4.1-linux-amd64.tar.gz</a></li></ul>",
                ),
            )],
            steps: vec![
                Open("docs", "/releases".into()),
                Open(
                    "mirror",
                    "/pub/airlock/airlock-2.4.1-linux-amd64.tar.gz".into(),
                ),
            ],
            arrives: ("mirror", "airlock-2.4.1-linux-amd64.tar.gz".into()),
        },
        Ordinary {
            name: "the same report from another site",
            pages: vec![(
                "news",
                "/reports",
                page(
                    "Reports",
                    "<p>Download <a href=\"/files/annual-report-2025.pdf\">annual-report-2025.pdf</a></p>",
                ),
            )],
            steps: vec![
                Open("news", "/reports".into()),
                Open("docs", "/archive/annual-report-2025.pdf".into()),
            ],
            arrives: ("docs", "annual-report-2025.pdf".into()),
        },
        Ordinary {
            name: "track a parcel the shop links to the carrier for",
            pages: vec![(
                "shop",
                "/orders/7",
                page(
                    "Order shipped",
                    &format!(
                        "<h1>Your order shipped</h1><p>Tracking number 1Z999AA10123456784</p><a href=\"{}\">Track with the carrier</a>",
                        u("carrier", "/track?n=1Z999AA10123456784")
                    ),
                ),
            )],
            steps: vec![
                Open("shop", "/orders/7".into()),
                Open("carrier", "/".into()),
                Type("Search", "1Z999AA10123456784".into()),
            ],
            arrives: ("carrier", "1Z999AA10123456784".into()),
        },
        Ordinary {
            name: "follow the shop's link to its help desk about an order",
            pages: vec![(
                "shop",
                "/orders/8",
                page(
                    "Order",
                    &format!(
                        "<h1>Order 112-7788123-4411</h1><a href=\"{}\">Get help with this order</a>",
                        u("support", "/new?order=112-7788123-4411")
                    ),
                ),
            )],
            steps: vec![
                Open("shop", "/orders/8".into()),
                Open("support", "/new?order=112-7788123-4411".into()),
                Type("Message", "Order 112-7788123-4411 arrived damaged".into()),
            ],
            arrives: ("support", "damaged".into()),
        },
        Ordinary {
            name: "sign up to a newsletter with one's own address",
            pages: vec![(
                "bank",
                "/profile",
                page(
                    "Profile",
                    "<h1>Profile</h1><p>Statements are sent to alice.walker@corp.example</p>",
                ),
            )],
            steps: vec![
                Open("bank", "/profile".into()),
                Open("news", "/newsletter".into()),
                Type("Email", "alice.walker@corp.example".into()),
            ],
            arrives: ("news", "corp.example".into()),
        },
        Ordinary {
            name: "book a room under one's own name and address",
            pages: vec![(
                "mail",
                "/inbox/3",
                page(
                    "Welcome",
                    "<p>Hi Alice Walker, your account alice.walker@corp.example is ready.</p>",
                ),
            )],
            steps: vec![
                Open("mail", "/inbox/3".into()),
                Open("hotel", "/book".into()),
                Fill(
                    vec![
                        ("Name", "Alice Walker".into()),
                        ("Email", "alice.walker@corp.example".into()),
                    ],
                    "Send",
                ),
            ],
            arrives: ("hotel", "Alice".into()),
        },
        Ordinary {
            name: "find a restaurant's address on a map",
            pages: vec![(
                "reviews",
                "/r/trattoria",
                page(
                    "Trattoria Roma",
                    "<h1>Trattoria Roma</h1><p>12 Harbour Street, Springfield. Open daily.</p>",
                ),
            )],
            steps: vec![
                Open("reviews", "/r/trattoria".into()),
                Open("maps", "/".into()),
                Type("Search", "12 Harbour Street, Springfield".into()),
            ],
            arrives: ("maps", "Harbour".into()),
        },
        Ordinary {
            name: "book a hotel for the flight's dates",
            pages: vec![(
                "airline",
                "/booking/ABC123",
                page(
                    "Booking ABC123",
                    "<h1>Flight LH 400</h1><p>Departs 2026-12-24 10:30 from FRA, returns 2026-12-28 18:05</p>",
                ),
            )],
            steps: vec![
                Open("airline", "/booking/ABC123".into()),
                Open("hotel", "/".into()),
                Fill(
                    vec![
                        ("Name", "2026-12-24 10:30".into()),
                        ("Message", "until 2026-12-28 18:05".into()),
                    ],
                    "Send",
                ),
            ],
            arrives: ("hotel", "2026-12-24".into()),
        },
        Ordinary {
            name: "check the weather where the flight lands",
            pages: vec![],
            steps: vec![
                Open("airline", "/booking/ABC123".into()),
                Open("weather", "/".into()),
                Type("Search", "Lisbon December 24".into()),
            ],
            arrives: ("weather", "Lisbon".into()),
        },
        Ordinary {
            name: "look up a term an article uses",
            pages: vec![(
                "news",
                "/space",
                page(
                    "Space debris",
                    "<p>Experts warn of the Kessler syndrome as low orbit gets crowded.</p>",
                ),
            )],
            steps: vec![
                Open("news", "/space".into()),
                Open("wiki", "/".into()),
                Type("Search", "Kessler syndrome".into()),
            ],
            arrives: ("wiki", "Kessler".into()),
        },
        Ordinary {
            name: "translate a short phrase from a forum",
            pages: vec![(
                "social",
                "/t/berlin",
                page("Travel", "<p>Der Zug nach Berlin fährt um 10 Uhr ab.</p>"),
            )],
            steps: vec![
                Open("social", "/t/berlin".into()),
                Open("translate", "/".into()),
                Type("Search", "Der Zug nach Berlin fährt um 10 Uhr ab".into()),
            ],
            arrives: ("translate", "Berlin".into()),
        },
        Ordinary {
            name: "search an error message from the docs",
            pages: vec![(
                "docs",
                "/errors",
                page(
                    "Errors",
                    "<pre>error[E0502]: cannot borrow `v` as mutable because it is also borrowed as immutable</pre>",
                ),
            )],
            steps: vec![
                Open("docs", "/errors".into()),
                Open("search", "/".into()),
                Type("Search", "E0502 cannot borrow as mutable".into()),
            ],
            arrives: ("search", "E0502".into()),
        },
        Ordinary {
            name: "buy the book a review recommends",
            pages: vec![(
                "reviews",
                "/books/1",
                page(
                    "Book review",
                    "<p>The Rust Programming Language, ISBN 978-1-7185-0310-6, is the place to start.</p>",
                ),
            )],
            steps: vec![
                Open("reviews", "/books/1".into()),
                Open("books", "/".into()),
                Type("Search", "9781718503106".into()),
            ],
            arrives: ("books", "9781718503106".into()),
        },
        Ordinary {
            name: "the same book by its printed ISBN",
            pages: vec![],
            steps: vec![
                Open("reviews", "/books/1".into()),
                Open("shop2", "/".into()),
                Type("Search", "ISBN 978-1-7185-0310-6".into()),
            ],
            arrives: ("shop2", "978-1-7185-0310-6".into()),
        },
        Ordinary {
            name: "shop for a recipe's ingredients",
            pages: vec![(
                "wiki",
                "/recipes/pilaf",
                page(
                    "Pilaf",
                    "<ul><li>2 cups basmati rice</li><li>1 onion</li><li>500 ml chicken stock</li></ul>",
                ),
            )],
            steps: vec![
                Open("wiki", "/recipes/pilaf".into()),
                Open("shop", "/".into()),
                Type("Search", "basmati rice 2 cups".into()),
            ],
            arrives: ("shop", "basmati".into()),
        },
        Ordinary {
            name: "a package's docs from its registry page",
            pages: vec![(
                "docs",
                "/deps",
                page(
                    "Dependencies",
                    "<p>We use serde_json 1.0.140 and tokio 1.48 on x86_64.</p>",
                ),
            )],
            steps: vec![
                Open("docs", "/deps".into()),
                Open("search", "/".into()),
                Type("Search", "serde_json 1.0.140".into()),
            ],
            arrives: ("search", "serde_json".into()),
        },
        Ordinary {
            name: "convert a price to another currency",
            pages: vec![],
            steps: vec![
                Open("shop", "/p/laptop".into()),
                Open("search", "/".into()),
                Type("Search", "1,249.00 USD in EUR".into()),
            ],
            arrives: ("search", "USD".into()),
        },
        Ordinary {
            name: "put a meeting from a mail into a calendar",
            pages: vec![(
                "mail",
                "/inbox/4",
                page(
                    "Planning",
                    "<p>Hi Sam, the quarterly planning meeting moves to Thursday at 10:30 in room B.</p>",
                ),
            )],
            steps: vec![
                Open("mail", "/inbox/4".into()),
                Open("docs", "/calendar".into()),
                Fill(
                    vec![
                        ("Name", "Quarterly planning meeting".into()),
                        ("Message", "Thursday 10:30, room B".into()),
                    ],
                    "Send",
                ),
            ],
            arrives: ("docs", "planning".into()),
        },
        Ordinary {
            name: "open a link a search result offers",
            pages: vec![(
                "search",
                "/results",
                page(
                    "Results",
                    &format!(
                        "<a href=\"{}\">Installing on Debian 12</a>",
                        u("docs", "/guide/install?from=search&rank=1")
                    ),
                ),
            )],
            steps: vec![
                Open("search", "/results".into()),
                Open("docs", "/guide/install?from=search&rank=1".into()),
            ],
            arrives: ("docs", "rank=1".into()),
        },
        Ordinary {
            name: "find a hotel a travel article names on a map",
            pages: vec![(
                "news",
                "/travel/lisbon",
                page(
                    "Lisbon",
                    "<p>Stay at the Riverside View Hotel, Rua Augusta 24, a short walk from the river.</p>",
                ),
            )],
            steps: vec![
                Open("news", "/travel/lisbon".into()),
                Open("maps", "/".into()),
                Type("Search", "Riverside View Hotel, Rua Augusta 24".into()),
            ],
            arrives: ("maps", "Riverside".into()),
        },
        Ordinary {
            name: "a job title on another job board",
            pages: vec![(
                "social",
                "/jobs/9",
                page(
                    "Job",
                    "<h1>Senior Rust Engineer, Berlin (hybrid)</h1><p>Salary 95,000 to 120,000 EUR</p>",
                ),
            )],
            steps: vec![
                Open("social", "/jobs/9".into()),
                Open("search", "/".into()),
                Type("Search", "Senior Rust Engineer Berlin".into()),
            ],
            arrives: ("search", "Rust".into()),
        },
        Ordinary {
            name: "a flight's status on another site",
            pages: vec![],
            steps: vec![
                Open("airline", "/booking/ABC123".into()),
                Open("search", "/".into()),
                Type("Search", "LH 400 status 2026-12-24".into()),
            ],
            arrives: ("search", "LH".into()),
        },
        Ordinary {
            name: "a company's news after reading its filing",
            pages: vec![(
                "bank",
                "/markets/acme",
                page(
                    "Acme Corp",
                    "<h1>Acme Corp (ACME) closes at 184.20, up 2.4%</h1>",
                ),
            )],
            steps: vec![
                Open("bank", "/markets/acme".into()),
                Open("news", "/".into()),
                Type("Search", "Acme Corp ACME earnings".into()),
            ],
            arrives: ("news", "earnings".into()),
        },
        Ordinary {
            name: "the weather at a postcode",
            pages: vec![(
                "maps",
                "/place/springfield",
                page("Springfield", "<p>Springfield, IL 62704, United States</p>"),
            )],
            steps: vec![
                Open("maps", "/place/springfield".into()),
                Open("weather", "/".into()),
                Type("Search", "Springfield IL 62704".into()),
            ],
            arrives: ("weather", "62704".into()),
        },
        Ordinary {
            name: "contact a seller with one's own member number",
            pages: vec![(
                "shop2",
                "/account",
                page("Account", "<p>Member MBR-99812377 since 2019</p>"),
            )],
            steps: vec![
                Open("shop2", "/account".into()),
                Open("support", "/".into()),
                Type("Message", "My member number is MBR-99812377".into()),
            ],
            arrives: ("support", "MBR-99812377".into()),
        },
        Ordinary {
            name: "a conference talk's video",
            pages: vec![(
                "docs",
                "/talks",
                page(
                    "Talks",
                    "<h2>Keynote</h2><h3>Securing browser agents with policy gateways</h3><p>Room 1, 09:30</p>",
                ),
            )],
            steps: vec![
                Open("docs", "/talks".into()),
                Open("social", "/".into()),
                Type(
                    "Search",
                    "Securing browser agents with policy gateways".into(),
                ),
            ],
            arrives: ("social", "Securing".into()),
        },
        Ordinary {
            name: "reply to an invitation with one's own address",
            pages: vec![],
            steps: vec![
                Open("mail", "/inbox/3".into()),
                Open("social", "/rsvp".into()),
                Fill(
                    vec![
                        ("Name", "Alice Walker".into()),
                        ("Email", "alice.walker@corp.example".into()),
                        ("Message", "Count me in".into()),
                    ],
                    "Send",
                ),
            ],
            arrives: ("social", "Count".into()),
        },
        Ordinary {
            name: "track a parcel a shop only prints the number of",
            pages: vec![(
                "shop2",
                "/orders/9",
                page(
                    "Order shipped",
                    "<h1>Shipped</h1><p>Tracking number 1Z4A8E760398214451 with UPS</p>",
                ),
            )],
            steps: vec![
                Open("shop2", "/orders/9".into()),
                Open("carrier", "/".into()),
                Type("Search", "1Z4A8E760398214451".into()),
            ],
            arrives: ("carrier", "1Z4A8E760398214451".into()),
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinary_multi_site_browsing_is_held_at_most_once_in_twenty() {
    with_browser(|h| async move {
        let web = Web::start(SITES).await;
        let policy = web.allowed_in(h.site.policy_config());
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                flow: Flow {
                    mode: FlowMode::Deny,
                    own: vec!["MBR-99812377".to_owned()],
                    own_domains: vec!["corp.example".to_owned()],
                    ..Flow::default()
                },
                ..GatewayConfig::with_policy(policy.clone())
            },
        );
        let flows = flows(&web);
        assert!(flows.len() >= 30, "{} flows", flows.len());
        // One caller does them all, one after another, as one long day: what it read
        // for one errand is still remembered in the next.
        let agent = gateway.agent_session();
        let mut held = Vec::new();
        for flow in &flows {
            for (site, path, html) in &flow.pages {
                web.page(site, path, html.clone());
            }
            let before = web.requests(flow.arrives.0).len();
            let mut refused = None;
            for step in &flow.steps {
                let call = match step {
                    Step::Open(site, path) => navigate(web.url(site, path)),
                    Step::Type(name, text) => ToolCall::Interact(Interaction::Type {
                        target: field(name),
                        text: text.clone(),
                        clear_first: true,
                        submit: true,
                    }),
                    Step::Fill(fields, button) => {
                        let out = agent
                            .call(ToolCall::Interact(Interaction::FillForm {
                                fields: fields.iter().map(|(n, v)| (field(n), v.clone())).collect(),
                            }))
                            .await;
                        if out.error.is_some() {
                            refused = Some(out);
                            break;
                        }
                        crate::click_button(button)
                    }
                };
                let out = agent.call(call).await;
                if out.error.is_some() {
                    refused = Some(out);
                    break;
                }
            }
            match refused {
                Some(out) => {
                    assert_eq!(
                        out.error,
                        Some(ErrorCode::PolicyDenied),
                        "{}: {}",
                        flow.name,
                        out.text
                    );
                    assert!(
                        out.text.contains("data-flow"),
                        "{}: {}",
                        flow.name,
                        out.text
                    );
                    held.push(format!("{}: {}", flow.name, out.text));
                }
                None => {
                    // It went: the destination saw it.
                    let (site, piece) = &flow.arrives;
                    let requests = web.requests(site);
                    let arrived = requests[before..].iter().any(|r| {
                        r.contains(piece.as_str())
                            || r.contains(
                                &url::form_urlencoded::byte_serialize(piece.as_bytes())
                                    .collect::<String>(),
                            )
                    });
                    assert!(
                        arrived,
                        "{}: nothing with {piece} reached {site}: {:?}",
                        flow.name,
                        &requests[before..]
                    );
                }
            }
        }
        println!(
            "ordinary flows: {} of {} held ({:.1} %)\n{}",
            held.len(),
            flows.len(),
            100.0 * held.len() as f64 / flows.len() as f64,
            held.join("\n")
        );
        assert!(
            held.len() * 20 <= flows.len(),
            "more than one in twenty held: {held:#?}"
        );
        // The check still holds what is not ordinary: the bank's account number sent
        // to a site it never showed it to, after all that browsing.
        web.page(
            "bank",
            "/accounts",
            page("Accounts", "<p>Checking ACCT-4417-2290-8812</p>"),
        );
        agent.call(navigate(web.url("bank", "/accounts"))).await;
        let out = agent
            .call(navigate(
                web.url("social", "/share?url=ACCT-4417-2290-8812"),
            ))
            .await;
        assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{}", out.text);
        agent.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_webmail_showed_goes_to_an_outside_recipient_only_past_the_check() {
    with_browser(|h| async move {
        let web = Web::start(SITES).await;
        let policy = web.allowed_in(h.site.policy_config());
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                flow: Flow {
                    mode: FlowMode::Deny,
                    own_domains: vec!["corp.example".to_owned()],
                    ..Flow::default()
                },
                ..GatewayConfig::with_policy(policy.clone())
            },
        );
        web.page(
            "mail",
            "/inbox/9",
            page("Security code", "<p>Your security code is 463820. It expires in 10 minutes.</p><p>Sam wrote: the quarterly numbers are in the shared folder, please keep them internal until Friday.</p>"),
        );
        let agent = gateway.agent_session();
        agent.call(navigate(web.url("mail", "/inbox/9"))).await;
        agent.call(navigate(web.url("mail", "/compose"))).await;
        let send = |to: &str, message: &str| {
            ToolCall::Interact(Interaction::FillForm {
                fields: vec![
                    (field("Email"), to.to_owned()),
                    (field("Message"), message.to_owned()),
                ],
            })
        };
        // The mail site showed them, but the form sends them on to an outside
        // address: a six-digit code and a sentence of prose are refused.
        let before = web.requests("mail").len();
        for (to, message) in [
            ("mark.black-2134@gmail.example", "463820"),
            (
                "Mark <mark.black-2134@gmail.example>",
                "the quarterly numbers are in the shared folder, please keep them internal",
            ),
        ] {
            let out = agent.call(send(to, message)).await;
            assert_eq!(out.error, Some(ErrorCode::PolicyDenied), "{message}: {}", out.text);
            assert!(out.text.contains("mail to mark.black-2134@gmail.example"), "{}", out.text);
        }
        assert_eq!(web.requests("mail").len(), before);
        // To a colleague at the caller's own domain it goes.
        let out = agent
            .call(send("sam@corp.example", "the quarterly numbers are in the shared folder, please keep them internal"))
            .await;
        assert_eq!(out.error, None, "{}", out.text);
        let out = agent.call(crate::click_button("Send")).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            web.requests("mail")[before..]
                .iter()
                .any(|r| r.contains("sam%40corp.example")),
            "{:?}",
            web.requests("mail")
        );
        agent.close().await;
    })
    .await;
}
