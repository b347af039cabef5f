//! A tenant's own policy through the real binary: `airlock policy set|show --tenant`
//! and `airlock policy explain --tenant` on the store, and `GET/PUT /api/v1/policy`
//! on `airlock serve` with the tenant's admin key (another tenant's admin sees only
//! its own; an agent's key is refused). A key that would widen the operator's config
//! is refused by name and nothing changes; each change is on the audit record.

use std::path::Path;
use std::process::Command;

use crate::leasing::http_post;
use crate::replicas::request;
use crate::server::{BIN, serve_with, stop};

fn airlock(data: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("AIRLOCK_CONFIG")
        .env("AIRLOCK_DATA_DIR", data)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const NO_SIGN_IN: &str = "[policy]\nallow_host_suffixes = [\"acme.com\"]\n\n[[approvals.rules]]\nname = \"no-sign-in\"\ntools = [\"browser_click\"]\nname_matches = \"^Sign in$\"\nrisk = \"high\"\naction = \"deny\"\n";

#[test]
fn the_cli_sets_shows_and_explains_a_tenants_policy() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    assert_eq!(airlock(&data, &["tenant", "create", "acme"]).0, 0);
    let file = dir.path().join("acme.toml");
    std::fs::write(&file, NO_SIGN_IN).unwrap();
    let file = file.to_str().unwrap();

    let (code, out, err) = airlock(&data, &["policy", "set", "--tenant", "acme", file]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("policy version 1"), "{out}");
    let (code, out, _) = airlock(&data, &["policy", "show", "--tenant", "acme"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("version:  1") && out.contains("no-sign-in"),
        "{out}"
    );
    // The tenant's rule fires for its sessions, not for the operator's config alone.
    let click = [
        "policy",
        "explain",
        "--tool",
        "browser_click",
        "--role",
        "button",
        "--name",
        "Sign in",
    ];
    let (code, out, _) = airlock(&data, &click);
    assert_eq!(code, 0, "{out}");
    let mut as_acme = click.to_vec();
    as_acme.extend(["--tenant", "acme"]);
    let (code, out, _) = airlock(&data, &as_acme);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no-sign-in"), "{out}");

    // Widening: refused by key, and version 1 stays.
    std::fs::write(
        dir.path().join("wide.toml"),
        "[policy]\nallow_private = [\"10.0.0.0/8\"]\n",
    )
    .unwrap();
    let wide = dir.path().join("wide.toml");
    let (code, _, err) = airlock(
        &data,
        &["policy", "set", "--tenant", "acme", wide.to_str().unwrap()],
    );
    assert_ne!(code, 0);
    assert!(err.contains("policy.allow_private"), "{err}");
    let (_, out, _) = airlock(&data, &["policy", "show", "--tenant", "acme"]);
    assert!(out.contains("version:  1"), "{out}");
    // On the record.
    let (_, out, _) = airlock(&data, &["audit", "tail"]);
    assert!(out.contains("policy_change"), "{out}");

    // Version 2: origin sets, a rule on the requests its pages send, a shorter wait.
    std::fs::write(
        dir.path().join("v2.toml"),
        "[flow]\nact_origins = [\"https://acme.com\"]\n\n[approvals]\ntimeout_secs = 20\n\n[[approvals.rules]]\nname = \"no-exports\"\nrequest_method = [\"POST\"]\nrequest_path = \"^/export\"\nrisk = \"high\"\naction = \"deny\"\n",
    )
    .unwrap();
    let v2 = dir.path().join("v2.toml");
    let (code, out, err) = airlock(
        &data,
        &["policy", "set", "--tenant", "acme", v2.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{out}{err}");
    let export = [
        "policy",
        "explain",
        "--request-url",
        "https://acme.com/export/all",
        "--tenant",
        "acme",
    ];
    let (code, out, _) = airlock(&data, &export);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no-exports"), "{out}");
    let (code, out, _) = airlock(&data, &export[..4]);
    assert_eq!(code, 0, "the operator's rules alone let it go: {out}");
    // A wait longer than the operator's (60 s by default) is refused by key.
    std::fs::write(
        dir.path().join("long.toml"),
        "[approvals]\ntimeout_secs = 3600\n",
    )
    .unwrap();
    let long = dir.path().join("long.toml");
    let (code, _, err) = airlock(
        &data,
        &["policy", "set", "--tenant", "acme", long.to_str().unwrap()],
    );
    assert_ne!(code, 0);
    assert!(err.contains("approvals.timeout_secs"), "{err}");

    // The tenant's sets are a layer after the operator's, not in their place: an
    // origin the operator lets sessions only read stays read-only for acme, though
    // acme's own sets say act.
    let config = dir.path().join("airlock.toml");
    std::fs::write(
        &config,
        "[flow]\nact = [\"https://beta.io\"]\nread = [\"https://acme.com\"]\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let mut save = vec!["--config", config];
    save.extend([
        "policy",
        "explain",
        "--tool",
        "browser_click",
        "--role",
        "button",
        "--name",
        "Save",
        "--url",
        "https://acme.com/settings",
    ]);
    let (code, out, _) = airlock(&data, &save);
    assert_eq!(code, 2, "{out}");
    save.extend(["--tenant", "acme"]);
    let (code, out, _) = airlock(&data, &save);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("may only be read"), "{out}");
    // And where acme's own sets leave out an origin the operator's let it act on,
    // acme's layer refuses it.
    let at = save
        .iter()
        .position(|a| *a == "https://acme.com/settings")
        .unwrap();
    save[at] = "https://beta.io/settings";
    let (code, out, _) = airlock(&data, &save[..save.len() - 2]);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = airlock(&data, &save);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("neither origin set"), "{out}");
}

async fn get(url: &str, token: &str) -> (u16, String) {
    let bearer = format!("Bearer {token}");
    let (status, _, body) = request("GET", url, &[("Authorization", &bearer)], "").await;
    (status, body)
}

async fn put(url: &str, token: &str, body: &str) -> (u16, String) {
    put_as(url, token, "application/json", &[], body).await
}

async fn put_as(
    url: &str,
    token: &str,
    content_type: &str,
    extra: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let bearer = format!("Bearer {token}");
    let mut headers = vec![
        ("Authorization", bearer.as_str()),
        ("Content-Type", content_type),
    ];
    headers.extend_from_slice(extra);
    let (status, _, body) = request("PUT", url, &headers, body).await;
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_sets_its_tenants_policy_over_rest_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    for tenant in ["acme", "beta"] {
        assert_eq!(airlock(&data, &["tenant", "create", tenant]).0, 0);
    }
    let key = |tenant: &str, role: &str| {
        airlock(
            &data,
            &["key", "create", "--tenant", tenant, "--role", role],
        )
        .1
        .trim()
        .to_owned()
    };
    let (acme_admin, beta_admin, acme_agent) = (
        key("acme", "admin"),
        key("beta", "admin"),
        key("acme", "act"),
    );
    let served = serve_with(dir.path(), None, None).await;
    let root = served.url.trim_end_matches("/mcp").to_owned();
    let policy = format!("{root}/api/v1/policy");

    let (status, body) = get(&policy, &acme_admin).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"version\":0"), "{body}");
    let (status, body) = put(
        &policy,
        &acme_admin,
        r#"{"policy": {"allow_host_suffixes": ["acme.com"]}, "flow": {"mode": "deny"}}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("\"version\":1") && body.contains("\"tenant\":\"acme\""),
        "{body}"
    );
    // Another tenant's admin reads its own (none), an agent's key is refused.
    let (status, body) = get(&policy, &beta_admin).await;
    assert!(status == 200 && body.contains("\"version\":0"), "{body}");
    let (status, _) = get(&policy, &acme_agent).await;
    assert_eq!(status, 403);
    // Widening and nonsense: 400 naming the key; nothing changes.
    for (bad, key) in [
        (
            r#"{"policy": {"allow_private": ["10.0.0.0/8"]}}"#,
            "policy.allow_private",
        ),
        (r#"{"flow": {"mode": "off"}}"#, "flow.mode"),
        (
            r#"{"policy": {"allow_everything": true}}"#,
            "allow_everything",
        ),
        (r#"{"tools": {"deny": ["browser_nope"]}}"#, "tools.deny[0]"),
    ] {
        let (status, body) = put(&policy, &acme_admin, bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.contains(key), "{bad}: {body}");
    }
    // The route keeps the edge's rules: a body that is not JSON, or a write from a
    // page of another origin, is refused before it is read.
    let valid = r#"{"flow": {"mode": "deny"}}"#;
    let (status, body) = put_as(&policy, &acme_admin, "text/plain", &[], valid).await;
    assert_eq!(status, 415, "{body}");
    let evil = [("Origin", "http://evil.test")];
    let (status, body) = put_as(&policy, &acme_admin, "application/json", &evil, valid).await;
    assert_eq!(status, 403, "{body}");
    let (_, body) = get(&policy, &acme_admin).await;
    assert!(
        body.contains("\"version\":1") && body.contains("acme.com"),
        "{body}"
    );
    // A lease now runs under version 1.
    let (status, body) = http_post(
        &format!("{root}/api/v1/sessions"),
        &acme_agent,
        r#"{"user_id":"u","conversation_id":"c"}"#,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert!(body.contains("\"policy_version\":1"), "{body}");
    stop(served).await;
}
