//! Airlock on a real application nobody on the team wrote: Django's admin (PyPI,
//! pinned; `airlock_test_support::Django`), logged into with a stored credential,
//! with the **default config** (the built-in rules only). Every way Django deletes a
//! user waits for a human; denied, the user is still in Django's own database and no
//! deleting request reached it; approved, it is deleted by exactly one request; in
//! every recording mode. Ordinary work (search, edit, log in) is never held.

use std::sync::Arc;
use std::time::Duration;

use airlock_browser::Target;
use airlock_config::RecordMode;
use airlock_core::{ErrorCode, Role};
use airlock_gateway::{
    AgentSession, Gateway, GatewayConfig, Interaction, OpenOptions, SessionCall, ToolCall,
    ToolOutput,
};
use airlock_policy::{Policy, PolicyConfig};
use airlock_risk::{ApprovalsConfig, Rules};
use airlock_store::{ApprovalRecord, ApprovalStatus};
use airlock_test_support::{DJANGO_ADMIN, DJANGO_PASSWORD, Django, Harness, with_browser};
use airlock_vault::{Fields, MasterKey, Secret, Store, Vault};

use crate::approvals::held_then_decided;
use crate::navigate;

mod logins;

pub(crate) struct Admin {
    pub(crate) django: Django,
    pub(crate) vault: Arc<Vault>,
    pub(crate) agent: Arc<AgentSession>,
    _gateway: Arc<Gateway>,
    _dir: tempfile::TempDir,
}

/// Django's admin, a vault holding its superuser's login, and a gateway with the
/// default rules recording `mode`.
pub(crate) async fn admin(h: &Harness, mode: RecordMode) -> Admin {
    let django = Django::start();
    let vault = Vault::open(
        Store::open_in_memory().await.unwrap(),
        MasterKey::generate().unwrap(),
    )
    .await
    .unwrap();
    let mut fields = Fields::default();
    fields.username = Some(DJANGO_ADMIN.into());
    fields.password = Some(DJANGO_PASSWORD.into());
    vault
        .set(&Secret {
            tenant: "default".into(),
            name: "django".into(),
            origins: vec![django.origin().to_owned()],
            fields,
        })
        .await
        .unwrap();
    let vault = Arc::new(vault);
    let policy = Policy::from_config(&PolicyConfig {
        allow_private: vec![format!("127.0.0.1:{}", django.port())],
        ..PolicyConfig::default()
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gateway = Gateway::new(
        h.host().await,
        GatewayConfig {
            rules: Rules::from_config(&ApprovalsConfig::default()).unwrap(),
            approval_timeout: Duration::from_secs(60),
            recording: mode,
            recordings_dir: Some(dir.path().to_owned()),
            ..GatewayConfig::with_policy(policy)
                .store(vault.store().clone())
                .vault(vault.clone(), Role::Operate)
        },
    );
    let agent = Arc::new(gateway.agent_session());
    Admin {
        django,
        vault,
        agent,
        _gateway: gateway,
        _dir: dir,
    }
}

pub(crate) fn role(role: &str, name: &str) -> Target {
    Target::Role {
        role: role.into(),
        name: Some(name.into()),
        index: None,
    }
}

pub(crate) fn click(target: Target) -> ToolCall {
    ToolCall::Interact(Interaction::Click {
        target,
        options: Default::default(),
    })
}

pub(crate) fn typing(target: Target, text: &str, submit: bool) -> ToolCall {
    ToolCall::Interact(Interaction::Type {
        target,
        text: text.into(),
        clear_first: true,
        submit,
    })
}

const CONFIRM: &str = "Yes, I’m sure";

impl Admin {
    pub(crate) async fn call(&self, call: ToolCall) -> ToolOutput {
        let out = self.agent.call(call).await;
        assert!(
            !out.text.contains("did not answer"),
            "a working page was declared unresponsive:\n{}",
            out.text
        );
        out
    }

    /// A call that must run unheld and succeed.
    pub(crate) async fn ok(&self, call: ToolCall) -> ToolOutput {
        let label = format!("{call:?}");
        let out = self.call(call).await;
        assert_eq!(out.error, None, "{label}:\n{}", out.text);
        out
    }

    /// Opens a session with the stored credential and logs in by placeholders.
    pub(crate) async fn log_in(&self) -> ToolOutput {
        self.ok(ToolCall::Session(SessionCall::Open(OpenOptions {
            credentials: vec!["django".into()],
            ..OpenOptions::default()
        })))
        .await;
        self.ok(navigate(self.django.url("/admin/"))).await;
        self.ok(typing(
            role("textbox", "Username:"),
            "{{secret:django.username}}",
            false,
        ))
        .await;
        self.ok(typing(
            role("textbox", "Password:"),
            "{{secret:django.password}}",
            true,
        ))
        .await
    }

    async fn pending(&self) -> Vec<ApprovalRecord> {
        self.vault
            .store()
            .approvals(None, Some(ApprovalStatus::Pending))
            .await
            .unwrap()
    }

    /// Runs `call`, which must be held; decides it as `approve`; returns the
    /// approval and the call's result.
    async fn held(&self, call: ToolCall, approve: bool) -> (ApprovalRecord, ToolOutput) {
        held_then_decided(&self.agent, self.vault.store(), call, approve, |_| {}).await
    }
}

// On the users list, `user` ticked and the action "Delete selected users" chosen.
async fn select_for_bulk(a: &Admin, user: &str) {
    a.ok(navigate(a.django.url("/admin/auth/user/"))).await;
    a.ok(ToolCall::Interact(Interaction::Check {
        target: role(
            "checkbox",
            &format!("Select this object for an action - {user}"),
        ),
        checked: true,
    }))
    .await;
    a.ok(ToolCall::Interact(Interaction::SelectOption {
        target: role("combobox", "Action:"),
        values: vec!["Delete selected users".into()],
    }))
    .await;
}

// How many POSTs to `path` Django received.
async fn posts_to(django: &Django, path: &str) -> usize {
    django
        .requests()
        .await
        .iter()
        .filter(|r| r.starts_with(&format!("POST {path}")))
        .count()
}

async fn exists(django: &Django, user: &str) -> bool {
    django.users().await.iter().any(|u| u == user)
}

/// The four ways Django deletes, each held, under recording `mode`.
async fn every_delete_path_waits_for_a_human(mode: RecordMode) {
    with_browser(move |h| async move {
        let a = admin(&h, mode).await;
        let out = a.log_in().await;
        assert!(out.text.contains("Site administration"), "{}", out.text);
        let d = &a.django;

        // 1. The link "Delete" only opens the confirmation page: not held. Its
        //    "Yes, I'm sure" deletes: held; denied, carol stays and no POST came.
        a.ok(navigate(d.url("/admin/auth/user/2/change/"))).await;
        let out = a.ok(click(role("link", "Delete"))).await;
        assert!(out.text.contains("Are you sure"), "{}", out.text);
        assert_eq!(
            a.pending().await.len(),
            0,
            "the link that only asks was held"
        );
        let (approval, out) = a.held(click(role("button", CONFIRM)), false).await;
        assert_eq!(approval.rule, "delete-path");
        assert_eq!(approval.risk, "high");
        let detail = approval.detail.clone().unwrap_or_default();
        assert!(
            detail.starts_with(&format!(
                "Delete user “carol” (POST /admin/auth/user/2/delete/) on 127.0.0.1:{}",
                d.port()
            )),
            "{detail}"
        );
        // The CSRF token is shortened on the card; the page is the confirmation.
        assert!(
            detail.contains("csrfmiddlewaretoken=") && detail.contains("(64 characters)"),
            "{detail}"
        );
        assert_eq!(
            approval.page_url.as_deref(),
            Some(d.url("/admin/auth/user/2/delete/").as_str())
        );
        let shot = a
            .vault
            .store()
            .approval_screenshot(&approval.id)
            .await
            .unwrap();
        assert!(shot.is_some_and(|(mime, data)| mime == "image/jpeg" && data.len() > 1_000));
        assert_eq!(out.error, Some(ErrorCode::ApprovalDenied), "{}", out.text);
        assert!(out.text.contains("not sent"), "{}", out.text);
        assert!(exists(d, "carol").await);
        assert_eq!(posts_to(d, "/admin/auth/user/2/delete/").await, 0);
        // Asked again and approved: deleted by exactly one request.
        a.ok(navigate(d.url("/admin/auth/user/2/delete/"))).await;
        let (_, out) = a.held(click(role("button", CONFIRM)), true).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text.contains("sent after test:alice approved"),
            "{}",
            out.text
        );
        assert!(!exists(d, "carol").await);
        assert_eq!(posts_to(d, "/admin/auth/user/2/delete/").await, 1);

        // 2. The confirmation page opened straight by URL (the agent's own GET is
        //    no delete), then confirmed: held, approved, deleted once.
        let out = a.ok(navigate(d.url("/admin/auth/user/3/delete/"))).await;
        assert!(out.text.contains("dave"), "{}", out.text);
        assert_eq!(a.pending().await.len(), 0);
        let (approval, out) = a.held(click(role("button", CONFIRM)), true).await;
        assert!(
            approval
                .detail
                .unwrap_or_default()
                .starts_with("Delete user “dave”")
        );
        assert_eq!(out.error, None, "{}", out.text);
        assert!(!exists(d, "dave").await);
        assert_eq!(posts_to(d, "/admin/auth/user/3/delete/").await, 1);

        // 3. The bulk action: "Go" says delete_selected and is held; denied, erin
        //    stays. Approved, the confirmation's own POST is covered by that
        //    approval (asked once), and erin is deleted once.
        select_for_bulk(&a, "erin").await;
        let (approval, out) = a.held(click(role("button", "Go")), false).await;
        assert_eq!(approval.rule, "delete-field");
        assert!(
            approval
                .detail
                .as_deref()
                .unwrap_or_default()
                .starts_with("Delete user 4 (POST /admin/auth/user/)"),
            "{:?}",
            approval.detail
        );
        assert_eq!(out.error, Some(ErrorCode::ApprovalDenied), "{}", out.text);
        assert!(exists(d, "erin").await);
        let bulk_posts = || async {
            d.requests()
                .await
                .iter()
                .filter(|r| r.as_str() == "POST /admin/auth/user/")
                .count()
        };
        assert_eq!(bulk_posts().await, 0);
        select_for_bulk(&a, "erin").await;
        let (_, out) = a.held(click(role("button", "Go")), true).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("Are you sure"), "{}", out.text);
        assert!(exists(d, "erin").await, "the first step only asks");
        let out = a.ok(click(role("button", CONFIRM))).await;
        assert!(out.text.contains("sent under approval"), "{}", out.text);
        assert_eq!(a.pending().await.len(), 0);
        assert!(!exists(d, "erin").await);
        assert_eq!(bulk_posts().await, 2, "Go, then the confirmation");

        // 4. Ordinary work is not held: a search, an edit saved by Enter.
        let out = a.ok(navigate(d.url("/admin/auth/user/?q=fra"))).await;
        assert!(out.text.contains("frank"), "{}", out.text);
        a.ok(navigate(d.url("/admin/auth/user/5/change/"))).await;
        a.ok(typing(role("textbox", "First name:"), "Francis", true))
            .await;
        assert_eq!(a.pending().await.len(), 0);
        assert!(
            d.requests()
                .await
                .iter()
                .any(|r| r == "POST /admin/auth/user/5/change/"),
            "the edit was saved"
        );
        assert!(exists(d, "frank").await);
        // Every approval asked is decided; none waits.
        let all = a.vault.store().approvals(None, None).await.unwrap();
        assert_eq!(all.len(), 5, "{all:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn django_deletes_wait_for_a_human_recording_transient() {
    every_delete_path_waits_for_a_human(RecordMode::Transient).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn django_deletes_wait_for_a_human_recording_audit() {
    every_delete_path_waits_for_a_human(RecordMode::Audit).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn django_deletes_wait_for_a_human_recording_off() {
    every_delete_path_waits_for_a_human(RecordMode::Off).await;
}
