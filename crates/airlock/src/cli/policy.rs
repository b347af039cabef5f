//! `airlock policy check URL [--resolve]`: what the egress policy decides, and why;
//! `airlock policy explain --tool …`: what the origin sets and which risk rule say of
//! a call, and why.

#![allow(clippy::print_stdout)] // The CLI's output is its product.

use std::process::ExitCode;

use airlock_config::{Config, OriginSets};
use airlock_policy::{Decision, DenyReason};

/// Exit 0 when allowed, 1 when denied.
pub(crate) async fn check(config: &Config, input: &str, resolve: bool) -> ExitCode {
    let policy = &config.policy;
    // A page's WebSocket reaches the egress proxy as a connection to its host and
    // port, judged like the http(s) URL of the same place: answer as the proxy would.
    let websocket = [("ws://", "http://"), ("wss://", "https://")]
        .iter()
        .find_map(|(ws, http)| {
            input
                .get(..ws.len())
                .filter(|p| p.eq_ignore_ascii_case(ws))
                .map(|_| format!("{http}{}", &input[ws.len()..]))
        });
    if let Some(as_http) = &websocket {
        println!("note:     a page's WebSocket; the egress proxy judges it as {as_http}");
    }
    let checked = policy.check_url(websocket.as_deref().unwrap_or(input));
    if let Some(url) = &checked.url {
        println!("url:      {url}");
    }
    if let (Some(host), Some(port)) = (&checked.host, checked.port) {
        println!("host:     {host} port {port}");
    }
    let mut decision = checked.decision.clone();
    if resolve && decision.is_allowed() && checked.ip.is_none() {
        if let (Some(host), Some(port)) = (&checked.host, checked.port) {
            match tokio::net::lookup_host((host.as_str(), port)).await {
                Ok(addresses) => {
                    let addresses: Vec<_> = addresses.collect();
                    for address in &addresses {
                        let verdict = policy.check_address(host, *address);
                        println!("resolves: {} -> {verdict}", address.ip());
                        // A name with any refused address is refused as a whole: the
                        // proxy would never connect to that one, and a mix is how DNS
                        // rebinding looks.
                        if !verdict.is_allowed() && decision.is_allowed() {
                            decision = verdict;
                        }
                    }
                    if addresses.is_empty() {
                        println!("resolves: (no addresses)");
                    }
                }
                Err(e) => {
                    println!("resolves: failed ({e})");
                    decision = Decision::Deny {
                        reason: DenyReason::Unresolvable,
                        detail: format!("{host} does not resolve"),
                    };
                }
            }
        }
    } else if !resolve && checked.ip.is_none() && checked.host.is_some() && decision.is_allowed() {
        println!(
            "note:     {} is a name; the egress proxy also checks every address it resolves to (--resolve shows them)",
            checked.host.as_deref().unwrap_or_default()
        );
    }
    println!("decision: {decision}");
    // For the operator (never in an agent's message): how to allow a private place.
    if let (
        Decision::Deny {
            reason: DenyReason::PrivateAddress,
            ..
        },
        Some(host),
        Some(port),
    ) = (&decision, &checked.host, checked.port)
    {
        println!(
            "hint:     to let the browser reach it, add \"{host}:{port}\" (or a CIDR) to policy.allow_private, or set AIRLOCK_ALLOW_PRIVATE, or pass --allow-private {host}:{port}"
        );
    }
    match decision {
        Decision::Allow => ExitCode::SUCCESS,
        Decision::Deny { .. } => ExitCode::FAILURE,
    }
}

/// The facts of a call, as `airlock policy explain` takes them.
#[derive(Debug, clap::Args)]
pub(crate) struct ExplainArgs {
    /// Judge as a session of this tenant would be: under its own policy, narrowing
    /// the operator's (`airlock policy set`).
    #[arg(long)]
    pub(crate) tenant: Option<String>,
    /// The tool (browser_click, browser_type, browser_navigate, …).
    #[arg(long, required_unless_present_any = ["request_url", "rules"])]
    tool: Option<String>,
    /// A request a page sends, to judge by the effect rules instead of a call.
    #[arg(long, conflicts_with_all = ["tool", "rules"])]
    request_url: Option<String>,
    /// That request's method.
    #[arg(long, default_value = "POST", requires = "request_url")]
    method: String,
    /// A field the request carries, `name=value` (repeat for more).
    #[arg(long = "field", requires = "request_url")]
    fields: Vec<String>,
    /// List every rule in force, in the order they judge, with what each holds.
    #[arg(long, conflicts_with = "tool")]
    rules: bool,
    /// The target element's role (button, link, textbox, …).
    #[arg(long)]
    role: Option<String>,
    /// The target element's accessible name, as a snapshot shows it.
    #[arg(long)]
    name: Option<String>,
    /// The text typed (placeholders as written).
    #[arg(long)]
    text: Option<String>,
    /// The page's URL (for browser_navigate and browser_tabs new: where it goes).
    #[arg(long)]
    url: Option<String>,
    /// Where a clicked link goes.
    #[arg(long)]
    href: Option<String>,
    /// The target is a password field.
    #[arg(long)]
    password: bool,
}

/// Tools whose calls change a page, as the data-flow stage's origin sets judge them
/// (a dialog is changed by accepting it; a click on a link follows it instead).
const CHANGES_PAGES: &[&str] = &[
    "browser_click",
    "browser_type",
    "browser_fill_form",
    "browser_press_key",
    "browser_select_option",
    "browser_check",
    "browser_drag",
    "browser_file_upload",
    "browser_handle_dialog",
    "browser_evaluate",
];

// What the configured origin sets say of the call, before any risk rule: `None`
// when they let it through. The operator's sets, then the tenant's (`tenant`), each
// a layer the origin must pass, the worst standing deciding (as in a session).
fn origin_sets(
    config: &Config,
    tenant: Option<&OriginSets>,
    args: &ExplainArgs,
    navigates: bool,
) -> Option<ExitCode> {
    use airlock_config::{FlowMode, Standing};
    let layers: Vec<&OriginSets> = std::iter::once(&config.flow.origins)
        .chain(tenant)
        .filter(|s| s.is_set())
        .collect();
    if layers.is_empty() {
        return None;
    }
    let tool = args.tool.as_deref().unwrap_or_default();
    let follows = tool == "browser_click" && args.role.as_deref() == Some("link");
    let (url, changes) = match (navigates, follows) {
        (true, _) => (args.url.as_deref()?, false),
        (false, true) => (args.href.as_deref()?, false),
        (false, false) if CHANGES_PAGES.contains(&tool) => (args.url.as_deref()?, true),
        _ => return None,
    };
    let origin = airlock_policy::origin_of(url)?;
    let worst = layers
        .iter()
        .map(|sets| sets.standing(&origin))
        .min_by_key(|standing| match standing {
            Standing::Outside => 0,
            Standing::Read => 1,
            Standing::Act => 2,
        })?;
    let (standing, rule, mode) = match worst {
        Standing::Act => return None,
        Standing::Read if !changes => return None,
        Standing::Read => (
            "may only be read ([flow] read)",
            "read-only-origin",
            config.flow.read_only,
        ),
        Standing::Outside => (
            "is in neither origin set ([flow] act, read)",
            "origin-sets",
            FlowMode::Deny,
        ),
    };
    println!("origin:   {origin} {standing}");
    println!("rule:     {rule} (built in)");
    match mode {
        FlowMode::Ask => {
            println!("action:   approve");
            Some(ExitCode::from(1))
        }
        _ => {
            println!("action:   deny");
            Some(ExitCode::from(2))
        }
    }
}

/// Exit 0 when the call would run, 1 when it would wait for approval, 2 when refused.
/// `tenant`: the origin sets of the tenant's own policy, judged after the operator's.
pub(crate) fn explain(
    config: &Config,
    tenant: Option<&OriginSets>,
    args: &ExplainArgs,
) -> ExitCode {
    if args.rules {
        return list_rules(config);
    }
    if let Some(url) = &args.request_url {
        return explain_request(config, &args.method, url, &args.fields);
    }
    let tool = args.tool.as_deref().unwrap_or_default();
    let navigates = matches!(tool, "browser_navigate" | "browser_tabs");
    if let Some(code) = origin_sets(config, tenant, args, navigates) {
        return code;
    }
    let secret = args
        .text
        .as_deref()
        .is_some_and(|t| t.contains("{{secret:"));
    let facts = airlock_risk::Facts {
        tool,
        role: args.role.as_deref(),
        name: args.name.as_deref(),
        password: args.password,
        text: args.text.as_deref(),
        secret,
        page_url: args.url.as_deref().filter(|_| !navigates),
        destination: if navigates {
            args.url.as_deref()
        } else {
            args.href.as_deref()
        },
    };
    let effects = config.approvals.rules.effects();
    let then = || {
        println!(
            "then:     the requests it makes are judged by the effect rules ({}); `--request-url URL --method M --field k=v` judges one",
            effects.names().join(", ")
        );
    };
    match config.approvals.rules.classify(&facts, &config.policy) {
        None => {
            println!("rule:     none fires");
            println!("risk:     low");
            println!("action:   allow");
            if !effects.is_empty() {
                then();
            }
            ExitCode::SUCCESS
        }
        Some(verdict) => {
            let origin = if verdict.builtin {
                "built in"
            } else {
                "config"
            };
            println!("rule:     {} ({origin})", verdict.rule);
            println!("risk:     {}", verdict.risk.as_str());
            println!("action:   {}", verdict.action.as_str());
            println!("why:      {}", verdict.why);
            if let Some(message) = &verdict.message {
                println!("message:  {message}");
            }
            if verdict.action != airlock_risk::Action::Deny && !effects.is_empty() {
                then();
            }
            match verdict.action {
                airlock_risk::Action::Allow => ExitCode::SUCCESS,
                airlock_risk::Action::Approve => ExitCode::from(1),
                airlock_risk::Action::Deny => ExitCode::from(2),
            }
        }
    }
}

// A request a page would send, judged by the effect rules: exit 0 when it goes, 1
// when it waits for a human, 2 when it is refused.
fn explain_request(config: &Config, method: &str, url: &str, fields: &[String]) -> ExitCode {
    let body = fields
        .iter()
        .map(|f| {
            let (k, v) = f.split_once('=').unwrap_or((f, ""));
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair(k, v)
                .finish()
        })
        .collect::<Vec<_>>()
        .join("&");
    let request = airlock_risk::Request {
        method,
        url,
        content_type: Some("application/x-www-form-urlencoded"),
        body: (!body.is_empty()).then_some(body.as_bytes()),
        body_unseen: false,
    };
    let canonical = airlock_risk::CanonicalUrl::of(url);
    println!(
        "request:  {} {}",
        method.to_ascii_uppercase(),
        canonical.url
    );
    match config.approvals.rules.effects().judge(&request) {
        None => {
            println!("rule:     no effect rule holds it");
            println!("action:   allow");
            ExitCode::SUCCESS
        }
        Some(verdict) => {
            println!("rule:     {}", verdict.rule);
            println!("risk:     {}", verdict.risk.as_str());
            println!("action:   {}", verdict.action.as_str());
            println!("why:      {}", verdict.why);
            match verdict.action {
                airlock_risk::Action::Allow => ExitCode::SUCCESS,
                airlock_risk::Action::Approve => ExitCode::from(1),
                airlock_risk::Action::Deny => ExitCode::from(2),
            }
        }
    }
}

// Every rule in force, in the order they judge: the call rules (the operator's,
// then the built-ins), then the effect rules (likewise).
fn list_rules(config: &Config) -> ExitCode {
    let rules = &config.approvals.rules;
    println!("call rules (judge a call on its resolved target, first match wins):");
    for name in rules.names() {
        match airlock_risk::BUILTIN_CALL_RULES
            .iter()
            .find(|(n, _)| *n == name)
        {
            Some((_, holds)) => println!("  {name} (built in): {holds}"),
            None => println!("  {name} (config)"),
        }
    }
    println!("effect rules (judge each request a page sends, before it leaves):");
    for name in rules.effects().names() {
        match airlock_risk::BUILTIN_EFFECTS
            .iter()
            .find(|b| b.name == name)
        {
            Some(b) => println!(
                "  {name} (built in, {}, approve): {}",
                b.risk.as_str(),
                b.holds
            ),
            None => println!("  {name} (config)"),
        }
    }
    println!(
        "switch a built-in off with [approvals] defaults_off = [\"name\"], all of them with defaults = false"
    );
    ExitCode::SUCCESS
}
