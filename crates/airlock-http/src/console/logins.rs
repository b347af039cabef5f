//! The console's stored logins: each login of the operator's tenant with its state,
//! why, when it was checked and the record of its checks; an admin runs a check, gets
//! a one-time link, edits its definition, or turns it off. And the link's own page,
//! where a person gives a code or a password: the token rides in the URL's fragment
//! (no server or log sees it in a request line) and the page's script puts it in the
//! form; the value goes to the waiting sign-in page or the vault, and the answer
//! never repeats it.

use std::sync::Arc;

use airlock_gateway::AuditFilter;
use airlock_login::{LoginView, Logins, State as LoginState};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::{Extension, Form};
use maud::html;
use serde::Deserialize;
use zeroize::Zeroizing;

use super::pages::{Section, layout, time};
use super::{Console, Login, refused};

/// Checks of a tenant's logins the page lists, at most.
const HISTORY: usize = 30;

fn logins(console: &Console) -> Option<Arc<Logins>> {
    console.stored.clone()
}

fn no_logins() -> Response {
    refused(
        StatusCode::NOT_FOUND,
        "this gateway keeps no stored logins: it needs a store and a vault",
    )
}

fn state_word(state: LoginState) -> &'static str {
    match state {
        LoginState::Unchecked => "not checked yet",
        LoginState::Alive => "alive",
        LoginState::Renewing => "renewing",
        LoginState::NeedsUser => "needs a person",
        LoginState::Failed => "failed",
    }
}

// The list, with what the last action said (a check's result, a fresh link).
async fn page(
    console: &Console,
    login: &Login,
    said: Option<(String, Option<String>)>,
) -> Response {
    let Some(logins) = logins(console) else {
        return no_logins();
    };
    let tenant = &login.operator.tenant;
    let list: Vec<LoginView> = match logins.list(tenant).await {
        Ok(list) => list,
        Err(e) => return refused(StatusCode::SERVICE_UNAVAILABLE, &e.to_string()),
    };
    let history = console
        .gateway
        .audit_events(
            tenant,
            &AuditFilter {
                kinds: vec!["login_check".to_owned(), "login_given".to_owned()],
                limit: HISTORY,
                ..AuditFilter::default()
            },
        )
        .await
        .unwrap_or_default();
    let waiting = list
        .iter()
        .filter(|l| l.state == LoginState::NeedsUser)
        .count();
    layout(
        login,
        Section::Logins,
        "Stored logins",
        false,
        html! {
            @if let Some((message, link)) = &said {
                p role="status" class="chain ok" { (message) }
                @if let Some(link) = link {
                    p {
                        "Give this link to the person who has the code or password (single use, bound to this tenant's admins): "
                        code id="login-link" { (link) }
                    }
                }
            }
            @if waiting > 0 {
                p role="alert" class="badge" { (waiting) " login(s) need a person." }
            }
            @if list.is_empty() {
                p { "No stored login yet. Define one with " code { "airlock login set NAME --file login.json" } " or " code { "PUT /api/v1/logins/NAME" } " (docs/logins.md)." }
            } @else {
                div class="scroll" {
                    table {
                        thead { tr { th scope="col" { "Login" } th scope="col" { "State" } th scope="col" { "Why" } th scope="col" { "Checked" } th scope="col" { "Next" } th scope="col" { "Actions" } } }
                        tbody {
                            @for l in &list {
                                tr data-login=(l.name) {
                                    td { code { (l.name) } }
                                    td class=(format!("state {}", l.state.as_str())) { (state_word(l.state)) @if !l.enabled { " (off)" } }
                                    td { (l.why) }
                                    td { @if let Some(t) = l.checked_ms { (time(t)) } @else { "never" } }
                                    td { @if l.enabled { (time(l.due_ms)) } @else { "—" } }
                                    td {
                                        form method="post" action=(format!("/console/logins/{}/check", l.name)) {
                                            input type="hidden" name="csrf" value=(login.csrf);
                                            button type="submit" { "Check now" }
                                        }
                                        @if l.state == LoginState::NeedsUser {
                                            form method="post" action=(format!("/console/logins/{}/link", l.name)) {
                                                input type="hidden" name="csrf" value=(login.csrf);
                                                button type="submit" { "New one-time link" }
                                            }
                                        }
                                        form method="post" action=(format!("/console/logins/{}/{}", l.name, if l.enabled { "disable" } else { "enable" })) {
                                            input type="hidden" name="csrf" value=(login.csrf);
                                            button type="submit" { @if l.enabled { "Turn off" } @else { "Turn on" } }
                                        }
                                        details {
                                            summary { "Edit definition" }
                                            form method="post" action=(format!("/console/logins/{}/spec", l.name)) {
                                                input type="hidden" name="csrf" value=(login.csrf);
                                                label { "Probe, flow and schedule (JSON; typed text only as placeholders)"
                                                    textarea name="spec" rows="12" cols="80" { (serde_json::to_string_pretty(&l.spec).unwrap_or_default()) }
                                                }
                                                button type="submit" { "Save and check" }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            h2 { "Recent checks" }
            @if history.is_empty() {
                p { "None on the record yet." }
            } @else {
                ul class="history" {
                    @for e in &history {
                        li { (time(e.time_ms)) " · " code { (e.kind) } " · " (e.body) }
                    }
                }
            }
        },
    )
    .into_response()
}

pub(super) async fn list(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
) -> Response {
    page(&console, &login, None).await
}

pub(super) async fn check(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(name): Path<String>,
) -> Response {
    let Some(logins) = logins(&console) else {
        return no_logins();
    };
    match logins
        .check(&login.operator.tenant, &name, &login.controller())
        .await
    {
        Ok(report) => {
            let said = format!("{name}: {} — {}", state_word(report.state), report.why);
            page(&console, &login, Some((said, report.link))).await
        }
        Err(e) => refused(StatusCode::CONFLICT, &e.to_string()),
    }
}

pub(super) async fn link(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(name): Path<String>,
) -> Response {
    let Some(logins) = logins(&console) else {
        return no_logins();
    };
    match logins.link(&login.operator.tenant, &name).await {
        Ok(link) => {
            let said = format!("A new link for {name}; older ones no longer work.");
            page(&console, &login, Some((said, Some(link)))).await
        }
        Err(e) => refused(StatusCode::CONFLICT, &e.to_string()),
    }
}

pub(super) async fn switch(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path((name, verb)): Path<(String, String)>,
) -> Response {
    let on = match verb.as_str() {
        "enable" => true,
        "disable" => false,
        _ => return refused(StatusCode::NOT_FOUND, "no such action"),
    };
    let Some(logins) = logins(&console) else {
        return no_logins();
    };
    match logins.enable(&login.operator.tenant, &name, on).await {
        Ok(_) => Redirect::to("/console/logins").into_response(),
        Err(e) => refused(StatusCode::NOT_FOUND, &e.to_string()),
    }
}

#[derive(Deserialize)]
pub(super) struct SpecForm {
    spec: String,
}

pub(super) async fn spec(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Path(name): Path<String>,
    Form(form): Form<SpecForm>,
) -> Response {
    let Some(logins) = logins(&console) else {
        return no_logins();
    };
    match logins
        .define(&login.operator.tenant, &name, &form.spec)
        .await
    {
        Ok(_) => Redirect::to("/console/logins").into_response(),
        Err(e) => refused(StatusCode::BAD_REQUEST, &e.to_string()),
    }
}

#[derive(Deserialize)]
pub(super) struct GiveQuery {
    // The renewal session to take over, for a take-over link.
    #[serde(default)]
    session: Option<String>,
}

/// The link's page: the token comes from the fragment (the console's script).
pub(super) async fn give_page(
    Extension(login): Extension<Login>,
    Query(query): Query<GiveQuery>,
) -> Html<String> {
    // Only a session id the console itself would print (hex): never markup.
    let session = query
        .session
        .filter(|id| !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_hexdigit()));
    layout(
        &login,
        Section::Logins,
        "Give what a stored login needs",
        false,
        html! {
            @if let Some(id) = &session {
                p { "A stored login of " strong { (login.operator.tenant) } " needs a person to sign in by hand (a CAPTCHA, a new device, an approval only you can give). Its browser waits on the sign-in page:" }
                ol {
                    li { a href=(format!("/console/sessions/{id}/live")) { "Open its live view" } ", take it over and sign in. Nothing you type reaches an agent, a model or a log." }
                    li { "Hand it back, then press Done: Airlock checks the login and keeps what the sign-in earned." }
                }
                form method="post" action="/console/logins/give" {
                    input type="hidden" name="csrf" value=(login.csrf);
                    input type="hidden" name="token" id="link-token" value="";
                    button type="submit" { "Done: I signed in" }
                }
            } @else {
                p { "A stored login of " strong { (login.operator.tenant) } " needs something only a person has: the code the site sent, or its password. What you type goes straight into the waiting sign-in page or the vault; no agent, model or log sees it. The link works once." }
                form method="post" action="/console/logins/give" autocomplete="off" {
                    input type="hidden" name="csrf" value=(login.csrf);
                    input type="hidden" name="token" id="link-token" value="";
                    label { "Code or password" input type="password" name="value" required autocomplete="off"; }
                    button type="submit" { "Give" }
                }
            }
        },
    )
}

#[derive(Deserialize)]
pub(super) struct GiveForm {
    token: String,
    // Absent for a take-over link's Done.
    #[serde(default)]
    value: Zeroizing<String>,
}

pub(super) async fn give(
    State(console): State<Console>,
    Extension(login): Extension<Login>,
    Form(form): Form<GiveForm>,
) -> Response {
    let Some(logins) = logins(&console) else {
        return no_logins();
    };
    match logins
        .give(
            &login.operator.tenant,
            &login.controller(),
            &form.token,
            form.value,
        )
        .await
    {
        Ok(view) => {
            let what = match view.kind.as_str() {
                "code" => "The code went into the waiting sign-in page; the login is checked now.",
                "takeover" => {
                    "Thank you: the login is checked now, and what your sign-in earned is kept."
                }
                _ => "The password went into the vault; the login is checked again within seconds.",
            };
            (
                StatusCode::OK,
                layout(
                    &login,
                    Section::Logins,
                    "Given",
                    false,
                    html! {
                        p role="status" { (what) " " a href="/console/logins" { "Stored logins" } }
                    },
                ),
            )
                .into_response()
        }
        Err(airlock_login::Error::Elsewhere(replica)) => refused(
            StatusCode::MISDIRECTED_REQUEST,
            &format!(
                "the renewal waiting for this code runs on replica {replica}; open the link through it"
            ),
        ),
        Err(airlock_login::Error::Invalid(why)) => refused(StatusCode::BAD_REQUEST, &why),
        Err(e) => refused(StatusCode::FORBIDDEN, &e.to_string()),
    }
}
