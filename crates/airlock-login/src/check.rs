//! One check of a stored login: claimed for this replica, run in a browser session
//! of its own through the gateway's pipeline, and recorded. The probe first; a dead
//! login runs its renewal flow (every step an ordinary call, its typed text only
//! placeholders), and a flow that renewed it saves the session's fresh cookies into
//! the login's secret. A page that says only a person can go on stops the flow: the
//! login is `needs_user`, a one-time link is made, and when the login says where a
//! code goes the session waits (for the link's life) for it.

use std::sync::Arc;
use std::time::Duration;

use airlock_core::sync::lock;
use airlock_gateway::{
    AgentSession, OpenOptions, Principal, SessionCall, Surface, ToolCall, ToolOutput,
};
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use zeroize::Zeroizing;

use crate::spec::{LoginSpec, target_of};
use crate::{CLAIM, Error, Logins, Result, State, now_ms};

/// What a check found and did.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The state it left the login in.
    pub state: State,
    /// Whether its flow ran and renewed it.
    pub renewed: bool,
    /// Why, in one line.
    pub why: String,
    /// The browser session it ran in.
    pub session: Option<String>,
    /// The one-time link's path (`/console/logins/give#TOKEN`) when a person must
    /// act: for the operator who asked, never for an agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// How long the check took until its state was known, in milliseconds.
    pub took_ms: u64,
}

/// A renewal on this replica waiting for a person's code.
pub(crate) struct Waiting {
    pub(crate) session: String,
    // `code` or `takeover`: what its link takes.
    pub(crate) kind: &'static str,
    pub(crate) give: oneshot::Sender<Given>,
}

/// What a person gave through a link.
pub(crate) struct Given {
    // `None`: the person signed in by hand in the waiting session.
    pub(crate) code: Option<Zeroizing<String>>,
    pub(crate) by: String,
    // Told once the code was typed (or could not be).
    pub(crate) typed: oneshot::Sender<Result<()>>,
}

// What a person is asked for when a login needs one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ask {
    // A code, typed into the waiting page.
    Code,
    // A value the secret lacks (its password), into the vault.
    Password,
    // A person signs in by hand in the waiting session (take-over), then says done.
    Takeover,
    // Nothing more now (nobody answered in time, or the code did not work).
    Nothing,
}

// How a run ended before it was recorded.
enum Outcome {
    Alive { renewed: bool, why: String },
    NeedsUser { why: String, ask: Ask },
    Failed { why: String },
}

// The session a check runs in, closed however the check ends.
struct Run {
    agent: AgentSession,
    session: Option<String>,
    // The login secret's origins: where a person's code may go, and whose cookies
    // a renewal keeps.
    origins: Vec<String>,
}

impl Run {
    async fn call(&self, tool: &str, arguments: Map<String, Value>) -> ToolOutput {
        match airlock_tools::find(tool).map(|t| t.parse(Some(&arguments))) {
            Some(Ok(call)) => self.agent.call(call).await,
            Some(Err(e)) => failed_output(&e.0),
            None => failed_output(&format!("no tool `{tool}`")),
        }
    }

    async fn close(&self) {
        let _ = self.agent.call(ToolCall::Session(SessionCall::Close)).await;
    }
}

fn failed_output(why: &str) -> ToolOutput {
    ToolOutput {
        text: format!("invalid_argument: {why}"),
        file: None,
        error: Some(airlock_core::ErrorCode::InvalidArgument),
        message: Some(why.to_owned()),
        retry_after_secs: None,
        stages: None,
        source: None,
    }
}

impl Logins {
    /// Checks `tenant`'s login `name` now (`by`: `schedule` or the operator who
    /// asked): [`Error::Busy`] when another replica or check holds it. Returns when
    /// the state is known; a renewal waiting for a person's code goes on waiting in
    /// the background and ends the check when the code came, or the link expired.
    pub async fn check(self: &Arc<Self>, tenant: &str, name: &str, by: &str) -> Result<Report> {
        let started = tokio::time::Instant::now();
        let mut report = self.check_now(tenant, name, by).await?;
        report.took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        tracing::info!(%tenant, login = %name, state = report.state.as_str(), renewed = report.renewed, took_ms = report.took_ms, "a stored login's check ended");
        Ok(report)
    }

    async fn check_now(self: &Arc<Self>, tenant: &str, name: &str, by: &str) -> Result<Report> {
        let row = self.row(tenant, name).await?;
        if !row.enabled {
            return Err(Error::Invalid(format!(
                "login `{name}` is disabled; enable it first"
            )));
        }
        let spec = LoginSpec::parse(name, &row.spec)?;
        let replica = self.gateway.replica_id().to_owned();
        let now = now_ms();
        let until = now + i64::try_from(CLAIM.as_millis()).unwrap_or(i64::MAX);
        if !self
            .store
            .claim_site_login(tenant, name, &replica, now, until)
            .await?
        {
            return Err(Error::Busy(name.to_owned()));
        }
        let run = match self.open(tenant, name, &spec).await {
            Ok(run) => run,
            Err(why) => {
                return self
                    .finish(tenant, name, by, &spec, None, Outcome::Failed { why })
                    .await;
            }
        };
        let outcome = self.probe_and_renew(tenant, name, &spec, &run).await;
        let outcome = self.keep(tenant, name, &run, outcome).await;
        if let Outcome::NeedsUser { ask, why } = &outcome
            && matches!(ask, Ask::Code | Ask::Takeover)
        {
            let (ask, why) = (*ask, why.clone());
            return self
                .ask_and_wait(tenant, name, by, spec, run, ask, why)
                .await;
        }
        let session = run.session.clone();
        run.close().await;
        self.finish(tenant, name, by, &spec, session, outcome).await
    }

    // A session of the login's own: its tenant's, as an operator (stored credentials
    // need `operate`), with the login's secret loaded and the hosts narrowed to
    // the secret's and the probe's.
    async fn open(
        &self,
        tenant: &str,
        name: &str,
        spec: &LoginSpec,
    ) -> std::result::Result<Run, String> {
        let vault = self.vault().map_err(|e| e.to_string())?;
        let origins = match vault.get(tenant, name).await {
            Ok(secret) => secret.origins.clone(),
            Err(e) => return Err(format!("its vault secret cannot be read: {e}")),
        };
        let mut hosts: Vec<String> = origins
            .iter()
            .filter_map(|o| url::Url::parse(o).ok()?.host_str().map(str::to_owned))
            .collect();
        if let Some(host) = url::Url::parse(&spec.probe.url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            && !hosts.contains(&host)
        {
            hosts.push(host);
        }
        let principal = Principal {
            tenant: tenant.to_owned(),
            role: airlock_core::Role::Operate,
            key: Some(format!("login:{name}")),
        };
        let agent = self.gateway.agent_session_as(principal, Surface::Mcp);
        let opened = agent
            .call(ToolCall::Session(SessionCall::Open(OpenOptions {
                credentials: vec![name.to_owned()],
                allow_hosts: hosts,
                login_check: true,
                ..OpenOptions::default()
            })))
            .await;
        if let Some(code) = opened.error {
            return Err(format!(
                "its session did not open: {code}: {}",
                opened.message.unwrap_or_default()
            ));
        }
        let session = agent.open_session().await;
        Ok(Run {
            agent,
            session,
            origins,
        })
    }

    // The probe; when dead, the flow and the probe again.
    async fn probe_and_renew(
        &self,
        tenant: &str,
        name: &str,
        spec: &LoginSpec,
        run: &Run,
    ) -> Outcome {
        match self.probe(spec, run).await {
            Ok(()) => {
                return Outcome::Alive {
                    renewed: false,
                    why: "the probe page showed it logged in".to_owned(),
                };
            }
            Err(Probed::Unreachable(why)) => return Outcome::Failed { why },
            Err(Probed::Dead(_)) if spec.steps.is_empty() => {
                return Outcome::NeedsUser {
                    why: "it has expired and has no renewal flow: a person signs in by hand in its waiting session".to_owned(),
                    ask: Ask::Takeover,
                };
            }
            Err(Probed::Dead(_)) => {}
        }
        let renewing = "expired; its renewal flow runs";
        let _ = self
            .store
            .note_site_login(
                tenant,
                name,
                self.gateway.replica_id(),
                State::Renewing.as_str(),
                renewing,
                now_ms(),
            )
            .await;
        let markers = spec.markers();
        let claim = i64::try_from(CLAIM.as_millis()).unwrap_or(i64::MAX);
        for (i, step) in spec.steps.iter().enumerate() {
            // A long flow keeps its claim: no other replica starts this login's check
            // while one of its steps runs.
            let _ = self
                .store
                .extend_site_login(tenant, name, self.gateway.replica_id(), now_ms() + claim)
                .await;
            let out = run.call(&step.tool, step.arguments.clone()).await;
            if let Some(marker) = human_marker(&out.text, &markers) {
                return self.human(spec, i, &marker);
            }
            if let Some(code) = out.error {
                if code == airlock_core::ErrorCode::InvalidArgument
                    && out.message.as_deref().is_some_and(|m| m.contains("has no"))
                {
                    return Outcome::NeedsUser {
                        why: format!(
                            "step {} ({}) needs a value its secret lacks: give it through the login's link",
                            i + 1,
                            step.tool
                        ),
                        ask: Ask::Password,
                    };
                }
                // The page may ask for a person although the step's target is gone.
                let page = run.call("browser_snapshot", Map::new()).await;
                if let Some(marker) = human_marker(&page.text, &markers) {
                    return self.human(spec, i, &marker);
                }
                return Outcome::Failed {
                    why: format!("step {} ({}) failed: {code}", i + 1, step.tool),
                };
            }
        }
        match self.probe(spec, run).await {
            Ok(()) => Outcome::Alive {
                renewed: true,
                why: "expired; renewed by its flow".to_owned(),
            },
            Err(Probed::Unreachable(why)) => Outcome::Failed { why },
            Err(Probed::Dead(seen)) => {
                if let Some(marker) = human_marker(&seen, &markers) {
                    return self.human(spec, spec.steps.len(), &marker);
                }
                Outcome::Failed {
                    why: "its renewal flow ran, but the probe still shows it logged out (a wrong password, or the site changed)".to_owned(),
                }
            }
        }
    }

    fn human(&self, spec: &LoginSpec, step: usize, marker: &str) -> Outcome {
        Outcome::NeedsUser {
            why: format!(
                "after step {step} the site asks for a person (\"{marker}\"): only a person can go on"
            ),
            ask: if spec.human.field.is_some() {
                Ask::Code
            } else {
                Ask::Takeover
            },
        }
    }

    async fn probe(&self, spec: &LoginSpec, run: &Run) -> std::result::Result<(), Probed> {
        let out = run
            .call("browser_navigate", json_map(json!({"url": spec.probe.url})))
            .await;
        if let Some(code) = out.error {
            return Err(Probed::Unreachable(format!(
                "the probe page could not be opened: {code}"
            )));
        }
        let shows = spec
            .probe
            .expect
            .as_deref()
            .is_none_or(|expect| out.text.contains(expect));
        let stayed = !spec.probe.stay
            || same_page(&spec.probe.url, out.source.as_deref().map(String::as_str));
        if shows && stayed {
            Ok(())
        } else {
            Err(Probed::Dead(out.text))
        }
    }

    // Asks a person: a link, the login `needs_user`, and the session kept for the
    // link's life on this replica, waiting for the code (or for the person who
    // signed in by hand in it to say so).
    #[allow(clippy::too_many_arguments)] // One wait's whole context, handed over once.
    async fn ask_and_wait(
        self: &Arc<Self>,
        tenant: &str,
        name: &str,
        by: &str,
        spec: LoginSpec,
        run: Run,
        ask: Ask,
        why: String,
    ) -> Result<Report> {
        let replica = self.gateway.replica_id().to_owned();
        let kind = if ask == Ask::Code { "code" } else { "takeover" };
        let link = self
            .make_link(tenant, name, kind, run.session.clone())
            .await?;
        let expires = now_ms() + i64::try_from(self.link_ttl.as_millis()).unwrap_or(i64::MAX);
        let _ = self
            .store
            .extend_site_login(tenant, name, &replica, expires + 5_000)
            .await;
        let _ = self
            .store
            .note_site_login(
                tenant,
                name,
                &replica,
                State::NeedsUser.as_str(),
                &why,
                now_ms(),
            )
            .await;
        let (give, given) = oneshot::channel();
        if let Some(session) = run.session.clone() {
            lock(&self.waiting).insert(
                (tenant.to_owned(), name.to_owned()),
                Waiting {
                    session,
                    kind,
                    give,
                },
            );
        }
        self.record(
            tenant,
            name,
            by,
            run.session.clone(),
            State::NeedsUser,
            false,
            &why,
        )
        .await;
        self.notify(tenant, name, State::NeedsUser, &why);
        self.gateway
            .login_ended(tenant, name, State::NeedsUser.as_str());
        let report = Report {
            state: State::NeedsUser,
            renewed: false,
            why: why.clone(),
            session: run.session.clone(),
            link: Some(link),
            took_ms: 0,
        };
        let this = self.clone();
        let (tenant, name, by) = (tenant.to_owned(), name.to_owned(), by.to_owned());
        let ttl = self.link_ttl;
        tokio::spawn(async move {
            let outcome = this
                .wait_for_code(&tenant, &spec, &run, given, ttl, why)
                .await;
            let outcome = this.keep(&tenant, &name, &run, outcome).await;
            lock(&this.waiting).remove(&(tenant.clone(), name.clone()));
            let session = run.session.clone();
            run.close().await;
            if let Err(e) = this
                .finish(&tenant, &name, &by, &spec, session, outcome)
                .await
            {
                tracing::warn!(%tenant, login = %name, error = %e, "a login's wait for a person could not be ended");
            }
        });
        Ok(report)
    }

    async fn wait_for_code(
        &self,
        tenant: &str,
        spec: &LoginSpec,
        run: &Run,
        given: oneshot::Receiver<Given>,
        ttl: Duration,
        why: String,
    ) -> Outcome {
        let Ok(Ok(given)) = tokio::time::timeout(ttl, given).await else {
            return Outcome::NeedsUser {
                why: format!("{why}; nobody gave the code while its link lived"),
                ask: Ask::Nothing,
            };
        };
        let Some(session) = run.session.as_deref() else {
            let _ = given
                .typed
                .send(Err(Error::Gateway("the renewal has no session".to_owned())));
            return Outcome::Failed {
                why: "the renewal had no session".to_owned(),
            };
        };
        let Some(code) = given.code else {
            // Signed in by hand: whoever still holds the page lets go of it, and the
            // probe says whether it worked.
            let _ = self
                .gateway
                .operators()
                .release_hold(tenant, session, &given.by)
                .await;
            let _ = given.typed.send(Ok(()));
            return match self.probe(spec, run).await {
                Ok(()) => Outcome::Alive {
                    renewed: true,
                    why: "renewed by a person who signed in by hand".to_owned(),
                },
                Err(Probed::Unreachable(why)) => Outcome::Failed { why },
                Err(Probed::Dead(_)) => Outcome::NeedsUser {
                    why: "a person said they signed in, but the probe still shows it logged out"
                        .to_owned(),
                    ask: Ask::Nothing,
                },
            };
        };
        let field = spec.human.field.as_ref().and_then(|f| target_of(f).ok());
        let Some(field) = field else {
            let _ = given.typed.send(Err(Error::Invalid(
                "the login names no field for a code".to_owned(),
            )));
            return Outcome::Failed {
                why: "the login names no field for a code".to_owned(),
            };
        };
        // Only into the login's own origins: a page that went elsewhere while it
        // waited gets nothing.
        let typed = self
            .gateway
            .operators()
            .give_text(tenant, session, &given.by, &field, code, &run.origins)
            .await
            .map_err(|e| Error::Gateway(format!("the code could not be typed: {e}")));
        let failed = typed.as_ref().err().map(ToString::to_string);
        let _ = given.typed.send(typed);
        if let Some(why) = failed {
            return Outcome::Failed { why };
        }
        if let Some(submit) = &spec.human.submit {
            let out = run.call("browser_click", submit.clone()).await;
            if let Some(code) = out.error {
                return Outcome::Failed {
                    why: format!("the person's code went in, but its submit failed: {code}"),
                };
            }
        }
        match self.probe(spec, run).await {
            Ok(()) => Outcome::Alive {
                renewed: true,
                why: "renewed with a person's code".to_owned(),
            },
            Err(Probed::Unreachable(why)) => Outcome::Failed { why },
            Err(Probed::Dead(_)) => Outcome::NeedsUser {
                why: "the person's code went in, but the probe still shows it logged out"
                    .to_owned(),
                ask: Ask::Nothing,
            },
        }
    }

    // What a renewal earned, saved for every session opened with the login (before
    // its session closes): the session's cookies for the secret's origins.
    async fn keep(&self, tenant: &str, name: &str, run: &Run, outcome: Outcome) -> Outcome {
        let (Outcome::Alive { renewed: true, .. }, Some(id)) = (&outcome, run.session.as_deref())
        else {
            return outcome;
        };
        match self
            .gateway
            .operators()
            .save_login(tenant, id, &format!("login:{name}"), name, &run.origins)
            .await
        {
            Ok(_) => outcome,
            Err(e) => Outcome::Failed {
                why: format!("renewed, but its cookies could not be saved: {e}"),
            },
        }
    }

    // Records a check's end and frees the claim.
    #[allow(clippy::too_many_arguments)] // A check's whole end, in one place.
    async fn finish(
        &self,
        tenant: &str,
        name: &str,
        by: &str,
        spec: &LoginSpec,
        session: Option<String>,
        outcome: Outcome,
    ) -> Result<Report> {
        let mut link = None;
        let (state, renewed, why) = match outcome {
            Outcome::Alive { renewed, why } => (State::Alive, renewed, why),
            Outcome::NeedsUser { why, ask } => {
                if ask == Ask::Password {
                    link = Some(self.make_link(tenant, name, "password", None).await?);
                }
                (State::NeedsUser, false, why)
            }
            Outcome::Failed { why } => (State::Failed, false, why),
        };
        let now = now_ms();
        let every = i64::try_from(spec.every_secs).unwrap_or(i64::MAX / 2_000) * 1000;
        self.store
            .finish_site_login(
                tenant,
                name,
                self.gateway.replica_id(),
                &airlock_store::CheckEnd {
                    state: state.as_str(),
                    why: &why,
                    now_ms: now,
                    due_ms: now + every,
                },
            )
            .await?;
        if state == State::Alive {
            self.store.close_login_links(tenant, name, now).await?;
        }
        self.record(tenant, name, by, session.clone(), state, renewed, &why)
            .await;
        self.notify(tenant, name, state, &why);
        if matches!(state, State::NeedsUser | State::Failed) {
            self.gateway.login_ended(tenant, name, state.as_str());
        }
        tracing::debug!(%tenant, login = %name, state = state.as_str(), renewed, "a stored login was checked");
        Ok(Report {
            state,
            renewed,
            why,
            session,
            link,
            took_ms: 0,
        })
    }

    #[allow(clippy::too_many_arguments)] // One audit event's fields.
    async fn record(
        &self,
        tenant: &str,
        name: &str,
        by: &str,
        session: Option<String>,
        state: State,
        renewed: bool,
        why: &str,
    ) {
        self.gateway
            .record_event(
                Some(tenant),
                airlock_audit::Event::LoginCheck(airlock_audit::LoginCheck {
                    login: name.to_owned(),
                    by: by.to_owned(),
                    session,
                    state: state.as_str().to_owned(),
                    renewed,
                    why: why.to_owned(),
                }),
            )
            .await;
    }
}

enum Probed {
    // The probe page opened but did not show the login alive (its text).
    Dead(String),
    // It did not open.
    Unreachable(String),
}

fn json_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

// The first marker `text` shows, case-insensitively.
fn human_marker(text: &str, markers: &[String]) -> Option<String> {
    let lower = text.to_lowercase();
    markers.iter().find(|m| lower.contains(m.as_str())).cloned()
}

// Whether the page shown (`source`) is the probe's own: same origin and path.
fn same_page(probe: &str, source: Option<&str>) -> bool {
    let (Ok(probe), Some(Ok(shown))) = (url::Url::parse(probe), source.map(url::Url::parse)) else {
        return false;
    };
    probe.origin() == shown.origin() && probe.path() == shown.path()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_that_was_sent_elsewhere_did_not_stay() {
        assert!(same_page(
            "https://a.example/admin/",
            Some("https://a.example/admin/")
        ));
        assert!(!same_page(
            "https://a.example/admin/",
            Some("https://a.example/login?next=/admin/")
        ));
        assert!(!same_page(
            "https://a.example/admin/",
            Some("https://sso.example/admin/")
        ));
        assert!(!same_page("https://a.example/admin/", None));
    }

    #[test]
    fn markers_are_read_whatever_the_case() {
        let markers = vec!["new device".to_owned()];
        assert_eq!(
            human_marker("heading \"New Device — enter the code\"", &markers).as_deref(),
            Some("new device")
        );
        assert_eq!(human_marker("heading \"Welcome\"", &markers), None);
    }
}
