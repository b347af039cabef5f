//! The console's pages, as maud templates: every value is escaped where it is
//! inserted, so a page title or an argument a website controls stays text.

use airlock_gateway::{
    ApprovalRecord, ApprovalStatus, AuditRecord, ChainStatus, LeaseInfo, RecordedStep, SecretInfo,
};
use axum::response::Html;
use maud::{DOCTYPE, Markup, html};

use super::{AuditQuery, Login, describe};

mod tasks;

pub(super) use tasks::{task, task_rows, tasks};

/// Which section a page belongs to (the navigation marks it).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Section {
    Sessions,
    Tasks,
    Approvals,
    Audit,
    Vault,
    Logins,
}

const SECTIONS: [(Section, &str, &str); 6] = [
    (Section::Sessions, "/console/sessions", "Sessions"),
    (Section::Tasks, "/console/tasks", "Tasks"),
    (Section::Approvals, "/console/approvals", "Approvals"),
    (Section::Audit, "/console/audit", "Audit"),
    (Section::Vault, "/console/vault", "Vault"),
    (Section::Logins, "/console/logins", "Logins"),
];

fn document(title: &str, body: Markup) -> Html<String> {
    Html(
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) " · Airlock" }
                    link rel="stylesheet" href="/console/assets/console.css";
                    script src="/console/assets/console.js" defer {}
                }
                body { (body) }
            }
        }
        .into_string(),
    )
}

pub(super) fn layout(
    login: &Login,
    section: Section,
    title: &str,
    refresh: bool,
    main: Markup,
) -> Html<String> {
    document(
        title,
        html! {
            header class="top" {
                a class="brand" href="/console/sessions" { "Airlock" }
                nav aria-label="Console" {
                    ul {
                        @for (s, href, label) in SECTIONS {
                            li {
                                @if s == section {
                                    a href=(href) aria-current="page" { (label) }
                                } @else {
                                    a href=(href) { (label) }
                                }
                            }
                        }
                    }
                }
                form class="signout" method="post" action="/console/sign-out" {
                    input type="hidden" name="csrf" value=(login.csrf);
                    span class="who" { (login.operator.tenant) " · " (login.operator.caller()) }
                    button type="submit" { "Sign out" }
                }
            }
            main id="main" data-refresh=[refresh.then_some("2000")] {
                h1 { (title) }
                (main)
            }
        },
    )
}

/// A page saying one thing (a refusal, an error).
pub(super) fn message_page(status: u16, message: &str) -> Html<String> {
    document(
        "Airlock",
        html! {
            main id="main" {
                h1 { "Airlock" }
                p role="alert" { (message) " (" (status) ")" }
                p { a href="/console/sessions" { "Back to the console" } }
            }
        },
    )
}

/// The sign-in form.
pub(super) fn sign_in(error: Option<&str>, possible: bool) -> Html<String> {
    document(
        "Sign in",
        html! {
            main id="main" class="narrow" {
                h1 { "Sign in to Airlock" }
                @if !possible {
                    p role="alert" {
                        "The console is off: set [server] admin_key (or AIRLOCK_ADMIN_KEY), or create an admin key with "
                        code { "airlock key create --tenant default --role admin" } ". "
                        "Once the store holds a key, every request to " code { "/mcp" } " needs one too."
                    }
                }
                @if let Some(error) = error {
                    p role="alert" class="error" { (error) }
                }
                form method="post" action="/console/sign-in" {
                    label for="key" { "Admin key" }
                    input id="key" name="key" type="password" autocomplete="current-password" required;
                    button type="submit" { "Sign in" }
                }
            }
        },
    )
}

fn duration(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

pub(super) fn time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_default()
}

/// Live sessions of the operator's tenant.
pub(super) fn sessions(
    login: &Login,
    leases: &[LeaseInfo],
    pending: &[ApprovalRecord],
) -> Html<String> {
    layout(
        login,
        Section::Sessions,
        "Sessions",
        true,
        html! {
            @if leases.is_empty() {
                p { "No session is open." }
            } @else {
                div class="scroll" {
                    table {
                        caption { (leases.len()) " open" }
                        thead { tr {
                            th scope="col" { "Session" } th scope="col" { "User" } th scope="col" { "Caller" }
                            th scope="col" { "Age" } th scope="col" { "Actions" } th scope="col" { "Blocked" }
                            th scope="col" { "Recording" } th scope="col" { "Approval" } th scope="col" { "" }
                        } }
                        tbody {
                            @for lease in leases {
                                @let id = lease.id.to_string();
                                @let waiting = pending.iter().filter(|a| a.session.as_deref() == Some(id.as_str())).count();
                                tr {
                                    td {
                                        code { (id) }
                                        // Which replica opened it: the console lists the fleet's.
                                        @if let Some(replica) = &lease.replica {
                                            br;
                                            small { "replica " code { (replica.get(..8).unwrap_or(replica)) } @if lease.here { " (this one)" } }
                                        }
                                    }
                                    td { @if let Some(c) = &lease.conversation { (c.user) " / " (c.conversation) } @else { "—" } }
                                    td { (lease.owner.caller()) }
                                    td { (duration(lease.age)) }
                                    td { (lease.actions) @if let Some(b) = lease.terms.action_budget { " of " (b) } }
                                    td { (lease.blocked) }
                                    td { (lease.record.as_str()) }
                                    td { @if waiting > 0 { a href="/console/approvals" { (waiting) " pending" } } @else { "—" } }
                                    td class="actions" {
                                        a href={ "/console/sessions/" (id) "/live" } aria-label={ "Live view of " (id) } { "Live" }
                                        a href={ "/console/sessions/" (id) "/replay" } aria-label={ "Replay of " (id) } { "Replay" }
                                        form method="post" action={ "/console/sessions/" (id) "/end" } {
                                            input type="hidden" name="csrf" value=(login.csrf);
                                            button type="submit" class="danger" aria-label={ "End session " (id) } { "End" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// The approvals queue: pending first, then the last decided.
pub(super) fn approvals(login: &Login, all: &[ApprovalRecord], now_ms: i64) -> Html<String> {
    let pending: Vec<&ApprovalRecord> = all
        .iter()
        .filter(|a| a.status == ApprovalStatus::Pending)
        .collect();
    let decided: Vec<&ApprovalRecord> = all
        .iter()
        .filter(|a| a.status != ApprovalStatus::Pending)
        .take(20)
        .collect();
    layout(
        login,
        Section::Approvals,
        "Approvals",
        true,
        html! {
            @if pending.is_empty() {
                p { "Nothing waits for a decision." }
            }
            @for a in &pending {
                @let args = parse(&a.args);
                @let target = a.target.as_deref().map(parse).unwrap_or_default();
                section class="approval" aria-labelledby={ "t-" (a.id) } data-id=(a.id) {
                    // What will happen, to what, on which site: first, in words.
                    h2 id={ "t-" (a.id) } { (safe(&describe::headline(a, &args, &target))) }
                    @if let Some(site) = describe::site(&target, a.page_url.as_deref()) {
                        p class="site" { "on " strong { (safe(&site)) } }
                    }
                    @for to in destinations(a) {
                        p class="destination" { "Goes to " code { (to) } }
                    }
                    p class="meta" {
                        span class={ "risk risk-" (a.risk) } { (a.risk) }
                        " · rule " code { (a.rule) }
                        " · asked by " (a.caller)
                        @if let Some(s) = &a.session { " · session " code { (s) } }
                        " · "
                        span class="countdown" data-expires=(a.expires_ms) {
                            ((a.expires_ms - now_ms).max(0) / 1000) " s left"
                        }
                    }
                    // Why it was held, in words, above the decision.
                    @if let Some(detail) = &a.detail {
                        p class="detail" { strong { "Why: " } (safe(detail)) }
                    }
                    // The decision, in view before the evidence below it.
                    form method="post" class="decide" {
                        input type="hidden" name="csrf" value=(login.csrf);
                        label for={ "n-" (a.id) } { "Note (optional)" }
                        input id={ "n-" (a.id) } name="note" type="text" maxlength="1000";
                        button type="submit" formaction={ "/console/approvals/" (a.id) "/approve" } class="approve" { "Approve" }
                        button type="submit" formaction={ "/console/approvals/" (a.id) "/deny" } class="danger" { "Deny" }
                    }
                    div class="evidence" {
                        figure {
                            a href={ "/console/approvals/" (a.id) "/screenshot" } target="_blank" {
                                img src={ "/console/approvals/" (a.id) "/screenshot" } alt={ "The page when " (a.tool) " was held, its target outlined" };
                            }
                            figcaption {
                                "The page when the call was held, the element outlined"
                                @if a.page_title.is_some() || a.page_url.is_some() {
                                    ": " q { (safe(a.page_title.as_deref().unwrap_or(""))) } " "
                                    code { (safe(&airlock_policy::display_url(a.page_url.as_deref().unwrap_or("")))) }
                                }
                            }
                        }
                        div {
                            @if !target.is_null() {
                                h3 { "The element it acts on" }
                                dl { @for (k, v) in describe::fields(&target) { dt { (k) } dd { code { (safe(&v)) } } } }
                            }
                            h3 { "What the agent asked (redacted)" }
                            dl { @for (k, v) in describe::fields(&args) { dt { (k) } dd { code { (safe(&v)) } } } }
                            details {
                                summary { "The exact record (JSON)" }
                                pre { (safe(&pretty(&a.args))) }
                                @if let Some(t) = &a.target { pre { (safe(&pretty(t))) } }
                            }
                        }
                    }
                }
            }
            @if !decided.is_empty() {
                h2 { "Decided lately" }
                div class="scroll" {
                    table {
                        thead { tr { th scope="col" { "When" } th scope="col" { "What" } th scope="col" { "Site" } th scope="col" { "Rule" } th scope="col" { "Status" } th scope="col" { "By" } th scope="col" { "Note" } } }
                        tbody {
                            @for a in &decided {
                                @let args = parse(&a.args);
                                @let target = a.target.as_deref().map(parse).unwrap_or_default();
                                tr {
                                    td { (time(a.decided_ms.unwrap_or(a.created_ms))) }
                                    td { (safe(&describe::headline(a, &args, &target))) }
                                    td { (safe(&describe::site(&target, a.page_url.as_deref()).unwrap_or_default())) }
                                    td { (a.rule) }
                                    td { (a.status) }
                                    td { (a.decided_by.as_deref().unwrap_or("—")) }
                                    td { (safe(a.note.as_deref().unwrap_or(""))) }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

// Whether the call `intent` announced has its outcome among the events after it.
fn finished(intent: &AuditRecord, later: &[AuditRecord]) -> bool {
    let tool = |e: &AuditRecord| {
        airlock_audit::Entry::parse(&e.body)
            .ok()
            .and_then(|entry| entry.event.tool().map(str::to_owned))
    };
    later
        .iter()
        .find(|e| e.kind == "tool_call" || e.kind == "tool_intent")
        .is_some_and(|next| next.kind == "tool_call" && tool(next) == tool(intent))
}

fn parse(json: &str) -> serde_json::Value {
    serde_json::from_str(json).unwrap_or_default()
}

// Page-controlled text as a person must read it: invisible controls (a right-to-left
// override in a title) shown, not obeyed.
fn safe(text: &str) -> String {
    airlock_core::text::display_safe(text).into_owned()
}

// Where an approved call would take the browser (a navigation's URL, a link's
// target), each with its canonical host first: a homograph cannot pass for the real
// name.
fn destinations(a: &ApprovalRecord) -> Vec<String> {
    let args = parse(&a.args);
    let target = a.target.as_deref().map(parse).unwrap_or_default();
    [&args["url"], &target["href"]]
        .into_iter()
        .filter_map(|v| v.as_str())
        .map(|url| safe(&airlock_policy::display_url(url)))
        .collect()
}

fn pretty(json: &str) -> String {
    serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| json.to_owned())
}

/// An event in one line (the live view's last actions).
pub(super) fn event_line(event: &AuditRecord) -> String {
    let s = shown(event);
    let mut line = format!("{} {}", time(event.time_ms), event.kind);
    for part in [&s.tool, &s.decision, &s.outcome] {
        if !part.is_empty() {
            line.push_str(" · ");
            line.push_str(part);
        }
    }
    line
}

/// One session live: its page as the browser renders it, and the operator's controls.
pub(super) fn live(
    login: &Login,
    id: &str,
    info: &LeaseInfo,
    saved: Option<(&str, usize)>,
) -> Html<String> {
    let mine = info.controller.as_deref() == Some(login.controller().as_str());
    layout(
        login,
        Section::Sessions,
        &format!("Live: {id}"),
        false,
        html! {
            p class="meta" {
                "Page: " span id="live-title" {} " " code id="live-url" {}
            }
            @if let Some((name, cookies)) = saved {
                p role="status" class="chain ok" { "Saved " (cookies) " cookies into " code { (name) } ". You still hold the page." }
            }
            @if mine {
                p class="held" role="status" { "You hold this page: the agent's calls are refused until you hand it back. What you type is treated as a secret." }
                form method="post" action={ "/console/sessions/" (id) "/hand-back" } {
                    input type="hidden" name="csrf" value=(login.csrf);
                    button type="submit" { "Hand back" }
                }
            } @else if let Some(other) = &info.controller {
                p class="held" role="status" { (other) " holds this page: the agent's calls are refused until it is handed back." }
                form method="post" action={ "/console/sessions/" (id) "/release" } {
                    input type="hidden" name="csrf" value=(login.csrf);
                    button type="submit" { "Release their hold" }
                }
            } @else {
                form method="post" action={ "/console/sessions/" (id) "/take-over" } {
                    input type="hidden" name="csrf" value=(login.csrf);
                    button type="submit" { "Take over" }
                }
            }
            div class="live" {
                img id="live" data-session=(id) data-held=[mine.then_some("1")] alt="The session's page as the browser renders it";
            }
            @if mine {
                form id="live-type" class="decide" {
                    label for="live-text" { "Type into the field you clicked" }
                    input id="live-text" type="password" autocomplete="off";
                    button type="submit" { "Type" }
                    button type="button" data-key="Enter" { "Enter" }
                    button type="button" data-key="Tab" { "Tab" }
                    button type="button" data-key="Backspace" { "Backspace" }
                }
            }
            p id="live-state" role="status" {}
            details class="save-login" {
                summary { "Save login" }
                p { "Store this session's cookies for the origins below as a vault secret; agents then open sessions with it. Only names and origins are ever shown." }
                form method="post" action={ "/console/sessions/" (id) "/save-login" } class="decide" {
                    input type="hidden" name="csrf" value=(login.csrf);
                    label for="save-name" { "Secret name" }
                    input id="save-name" name="name" required pattern="[A-Za-z0-9_\\-]{1,64}";
                    label for="save-origins" { "Origins" }
                    input id="save-origins" name="origins" required placeholder="https://app.example.com";
                    @if mine {
                        label class="inline" {
                            input type="checkbox" name="keep" value="1";
                            " Keep holding the page (otherwise it goes back to the agent)"
                        }
                    }
                    button type="submit" { "Save login" }
                }
            }
            h2 { "Last actions" }
            ol id="live-actions" class="steps" {}
            h2 { "Page events" }
            ul id="live-events" class="steps" {}
        },
    )
}

// An event's fields as the tables show them.
#[derive(Default)]
struct Shown {
    tool: String,
    decision: String,
    outcome: String,
    // The step's screenshot is stored (`audit` recording).
    stored_image: bool,
    // The call's arguments and target, for the kinds about a call.
    args: Option<serde_json::Value>,
    target: serde_json::Value,
    duration_ms: Option<u64>,
}

fn shown(event: &AuditRecord) -> Shown {
    use airlock_audit::Event;
    let Ok(entry) = airlock_audit::Entry::parse(&event.body) else {
        return Shown::default();
    };
    let event = &entry.event;
    let (error, blocked, stored_image, duration_ms) = match event {
        Event::ToolCall(done) => (
            done.error.clone(),
            done.blocked,
            matches!(
                done.recording,
                Some(airlock_audit::Recording::Stored { .. })
            ),
            Some(done.duration_ms),
        ),
        Event::PolicyRefusal(r) | Event::SecretRefusal(r) => (r.error.clone(), 0, false, None),
        _ => (None, 0, false, None),
    };
    let reason = match event {
        Event::PolicyRefusal(r) | Event::SecretRefusal(r) => Some(r.reason.clone()),
        Event::SessionOpen(s) | Event::SessionClose(s) => s.reason.clone(),
        Event::OperatorTakeover(o) | Event::OperatorHandback(o) | Event::OperatorInput(o) => {
            o.reason.clone()
        }
        Event::CredentialRefusal(c) => Some(c.reason.clone()),
        Event::AuthFailure(a) => Some(a.reason.clone()),
        _ => None,
    };
    let status = match event {
        Event::ApprovalDecided(d) => Some(d.status.to_string()),
        _ => None,
    };
    let mut outcome: String = error
        .or(reason)
        .or(status)
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect();
    if blocked > 0 {
        if !outcome.is_empty() {
            outcome.push_str(" · ");
        }
        outcome.push_str(&format!("{blocked} requests blocked"));
    }
    let call = event.call();
    let (args, target) = match (event, call) {
        (_, Some(call)) => (
            Some(serde_json::Value::Object(call.args.clone())),
            serde_json::to_value(&call.target).unwrap_or_default(),
        ),
        (Event::ApprovalRequested(a), None) => (
            Some(a.args.clone()),
            serde_json::to_value(&a.target).unwrap_or_default(),
        ),
        _ => (None, serde_json::Value::Null),
    };
    Shown {
        tool: safe(event.tool().unwrap_or_default()),
        decision: safe(call.and_then(|c| c.decision.as_deref()).unwrap_or_default()),
        outcome: safe(&outcome),
        stored_image,
        args,
        target,
        duration_ms,
    }
}

/// The audit log with filters and the chain's state.
pub(super) fn audit(
    login: &Login,
    query: &AuditQuery,
    events: &[AuditRecord],
    chain: &ChainStatus,
) -> Html<String> {
    let export = format!(
        "/console/audit/export?{}",
        serde_urlencoded::to_string([
            ("session", query.session.as_str()),
            ("tool", query.tool.as_str()),
            ("decision", query.decision.as_str()),
            ("minutes", query.minutes.as_str()),
        ])
        .unwrap_or_default()
    );
    layout(
        login,
        Section::Audit,
        "Audit",
        false,
        html! {
            @match chain {
                ChainStatus::Intact { events } => p class="chain ok" { "Chain intact. Your tenant's " (events) " events are in it, each chained to the one before." },
                ChainStatus::Broken(why) => p class="chain broken" role="alert" { "Chain broken: " (why) },
            }
            form method="get" action="/console/audit" class="filters" {
                label { "Session " input name="session" value=(query.session); }
                label { "Tool " input name="tool" value=(query.tool); }
                label { "Decision "
                    select name="decision" {
                        @for d in ["", "allow", "approve", "deny"] {
                            option value=(d) selected[query.decision == d] { @if d.is_empty() { "any" } @else { (d) } }
                        }
                    }
                }
                label { "Last minutes " input name="minutes" inputmode="numeric" value=(query.minutes); }
                button type="submit" { "Filter" }
                a href=(export) download { "Export JSON lines" }
            }
            @if events.is_empty() {
                p { "No event matches." }
            } @else {
                div class="scroll" {
                    table {
                        caption { "Newest first, at most 200" }
                        thead { tr { th scope="col" { "#" } th scope="col" { "When" } th scope="col" { "Kind" } th scope="col" { "Session" } th scope="col" { "Tool" } th scope="col" { "Decision" } th scope="col" { "Outcome" } } }
                        tbody {
                            @for e in events {
                                @let s = shown(e);
                                tr {
                                    td { (e.seq) }
                                    td { (time(e.time_ms)) }
                                    td { (e.kind) }
                                    td { @if let Some(id) = &e.session { a href={ "/console/sessions/" (id) "/replay" } { code { (id) } } } }
                                    td { (s.tool) }
                                    td { (s.decision) }
                                    td { (s.outcome) }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// One session step by step: what the agent did, what was decided, what was blocked,
/// and the screenshots its recording keeps.
pub(super) fn replay(
    login: &Login,
    id: &str,
    events: &[AuditRecord],
    steps: &[RecordedStep],
) -> Html<String> {
    layout(
        login,
        Section::Sessions,
        &format!("Replay of {id}"),
        false,
        html! {
            (step_list(events))
            @if !steps.is_empty() {
                h2 { "Screenshots" }
                ol class="shots" {
                    @for step in steps {
                        li {
                            figure {
                                a href={ "/console/sessions/" (id) "/steps/" (step.step) } target="_blank" {
                                    img src={ "/console/sessions/" (id) "/steps/" (step.step) } alt={ "Step " (step.step) ": after " (step.tool) } loading="lazy";
                                }
                                figcaption { "Step " (step.step) " · " (step.tool) " · " (time(step.time_ms)) }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// A session's (or a task's) events in order, one item a call: what it did, where,
/// what the gate said, how it ended, and the step's stored screenshot.
fn step_list(events: &[AuditRecord]) -> Markup {
    html! {
        ol class="steps replay" {
            @for (i, e) in events.iter().enumerate() {
                // An intent is the call's own first half: shown only when no
                // outcome followed it (the call never finished).
                @if !(e.kind == "tool_intent" && finished(e, &events[i + 1..])) {
                    @let s = shown(e);
                    li {
                        div class="line" {
                            span class="when" { (time(e.time_ms)) }
                            " " strong { (e.kind) }
                            @if !s.tool.is_empty() { " " code { (s.tool) } }
                            @if let Some(args) = &s.args {
                                " " span class="what" { (safe(&describe::action(&s.tool, args, &s.target))) }
                            }
                            @if let Some(site) = describe::site(&s.target, None) { " on " (safe(&site)) }
                            @if !s.decision.is_empty() { " · " (s.decision) }
                            @if !s.outcome.is_empty() { " · " (s.outcome) }
                            @if let Some(ms) = s.duration_ms { " · " (ms) " ms" }
                        }
                        @if !s.tool.is_empty() {
                            @let args = s.args.as_ref().map(describe::fields).unwrap_or_default();
                            @if !args.is_empty() {
                                dl class="args" { @for (k, v) in args { dt { (k) } dd { code { (safe(&v)) } } } }
                            }
                        }
                        @if s.stored_image {
                            a href={ "/console/audit/" (e.seq) "/image" } target="_blank" {
                                img class="thumb" src={ "/console/audit/" (e.seq) "/image" } alt={ "After " (s.tool) } loading="lazy";
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Secret names and where they may be typed; never a value.
pub(super) fn vault(
    login: &Login,
    secrets: &[SecretInfo],
    saved: Option<(&str, usize)>,
    handed_back: bool,
) -> Html<String> {
    layout(
        login,
        Section::Vault,
        "Vault",
        false,
        html! {
            @if let Some((name, cookies)) = saved {
                p role="status" class="chain ok" {
                    "Saved " (cookies) " cookies into " code { (name) } "."
                    @if handed_back { " The page went back to the agent." }
                }
            }
            @if secrets.is_empty() {
                p { "The vault holds no secret for this tenant. Add one with " code { "airlock vault set NAME --origin https://… --password-stdin" } ", or take a session over, log in by hand and save the login." }
            } @else {
                div class="scroll" {
                    table {
                        thead { tr { th scope="col" { "Name" } th scope="col" { "Origins" } th scope="col" { "Fields" } th scope="col" { "Updated" } th scope="col" { "Last used" } } }
                        tbody {
                            @for s in secrets {
                                tr {
                                    td { code { (s.name) } }
                                    td { (s.origins.join(", ")) }
                                    td { (s.fields.join(", ")) }
                                    td { (time(s.updated_at * 1000)) }
                                    td { @if let Some(t) = s.last_used_ms { (time(t)) } @else { "never" } }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // A held navigation to a homograph host, on a page whose title holds a
    // right-to-left override: the card shows the punycode host first and the override
    // as text, never obeyed.
    #[test]
    fn an_approval_card_shows_hosts_canonically_and_controls_as_text() {
        let login = Login {
            operator: airlock_gateway::Principal {
                tenant: "default".to_owned(),
                role: airlock_core::Role::Admin,
                key: None,
            },
            id: "l1".to_owned(),
            csrf: "c".to_owned(),
            expires_ms: i64::MAX,
        };
        let record = ApprovalRecord {
            id: "apr_1".to_owned(),
            tenant: "default".to_owned(),
            caller: "default/k".to_owned(),
            session: None,
            tool: "browser_navigate".to_owned(),
            args: r#"{"url":"https://bund\u0435.test/pay"}"#.to_owned(),
            target: Some(
                r#"{"role":"link","name":"Pay \u202eyap","href":"https://xn--bund-zcf.test/x"}"#
                    .to_owned(),
            ),
            page_url: Some("https://bund\u{435}.test/".to_owned()),
            page_title: Some("Invoice \u{202e}fdp.exe".to_owned()),
            rule: "leaves-trusted-domains".to_owned(),
            risk: "medium".to_owned(),
            binding: Vec::new(),
            status: ApprovalStatus::Pending,
            created_ms: 0,
            expires_ms: 60_000,
            decided_ms: None,
            decided_by: None,
            note: None,
            used_ms: None,
            detail: None,
            waiter: None,
        };
        let html = approvals(&login, std::slice::from_ref(&record), 0).0;
        assert!(!html.contains('\u{202e}'), "an override reached the page");
        assert!(html.contains("Invoice \\u{202e}fdp.exe"), "{html}");
        let destination = html.find("Goes to").expect("a destination line");
        let line = &html[destination..html[destination..].find("</p>").unwrap() + destination];
        assert!(
            line.contains("https://xn--bund-")
                && line.contains("(host in Unicode: bund\u{435}.test)"),
            "{line}"
        );
        assert!(
            line.find("xn--bund-").unwrap() < line.find("bund\u{435}").unwrap(),
            "the canonical host comes first: {line}"
        );
        // A held request's card leads with what it would do, not the click.
        let effect = ApprovalRecord {
            tool: "browser_click".to_owned(),
            args: r#"{"target":{"role":"button","name":"Yes, I’m sure"}}"#.to_owned(),
            target: Some(r#"{"role":"button","name":"Yes, I’m sure"}"#.to_owned()),
            rule: "delete-path".to_owned(),
            detail: Some(
                "Delete user “carol” (POST /admin/auth/user/7/delete/) on 127.0.0.1:8900\ncaused by browser_click on button “Yes, I’m sure”".to_owned(),
            ),
            ..record.clone()
        };
        let html = approvals(&login, &[effect], 0).0;
        let h2 = html.find("<h2").unwrap();
        assert!(
            html[h2..].contains(
                ">Delete user “carol” (POST /admin/auth/user/7/delete/) on 127.0.0.1:8900</h2>"
            ),
            "{html}"
        );
    }
}
