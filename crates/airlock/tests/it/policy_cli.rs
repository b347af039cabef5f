//! `airlock policy check` and `explain`: decisions, reasons and exit codes.

use crate::server::BIN;

fn check(args: &[&str], config: Option<&str>) -> (i32, String) {
    policy("check", args, config)
}

fn explain(args: &[&str], config: Option<&str>) -> (i32, String) {
    policy("explain", args, config)
}

fn policy(verb: &str, args: &[&str], config: Option<&str>) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(BIN);
    command
        .args(["policy", verb])
        .args(args)
        .env_remove("AIRLOCK_CONFIG");
    if let Some(text) = config {
        let path = dir.path().join("airlock.toml");
        std::fs::write(&path, text).unwrap();
        command.env("AIRLOCK_CONFIG", &path);
    }
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn explains_decisions() {
    let (code, out) = check(&["http://0x7f.1/"], None);
    assert_eq!(code, 1);
    assert!(out.contains("url:      http://127.0.0.1/"), "{out}");
    assert!(
        out.contains("decision: policy_denied: 127.0.0.1 is loopback"),
        "{out}"
    );

    let (code, out) = check(&["http://169.254.169.254/latest/meta-data/"], None);
    assert_eq!(code, 1);
    assert!(
        out.contains("169.254.169.254 is link-local (cloud metadata)"),
        "{out}"
    );

    let (code, out) = check(&["javascript:alert(1)"], None);
    assert_eq!(code, 1);
    assert!(out.contains("scheme `javascript:` is not allowed"), "{out}");

    let (code, out) = check(&["https://example.com/"], None);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("decision: allowed"), "{out}");

    // The same loopback URL passes once allow_private lists it.
    let (code, out) = check(
        &["http://127.0.0.1:8123/"],
        Some("[policy]\nallow_private = [\"127.0.0.1:8123\"]\n"),
    );
    assert_eq!(code, 0, "{out}");
    let (code, _) = check(
        &["http://127.0.0.1:8124/"],
        Some("[policy]\nallow_private = [\"127.0.0.1:8123\"]\n"),
    );
    assert_eq!(code, 1);

    let (code, out) = check(
        &["https://www.allowed.com/"],
        Some("[policy]\nallow_host_suffixes = [\"allowed.com\"]\n"),
    );
    assert_eq!(code, 0, "{out}");
    let (code, out) = check(
        &["https://allowed.com.evil.net/"],
        Some("[policy]\nallow_host_suffixes = [\"allowed.com\"]\n"),
    );
    assert_eq!(code, 1);
    assert!(
        out.contains("is not in allow_hosts or allow_host_suffixes"),
        "{out}"
    );
}

#[test]
fn a_name_that_does_not_resolve_is_refused() {
    // RFC 6761: .invalid never resolves.
    let (code, out) = check(&["--resolve", "http://nothing.invalid/"], None);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("nothing.invalid does not resolve"), "{out}");
}

#[test]
fn websocket_urls_are_judged_as_the_proxy_judges_them() {
    let (code, out) = check(&["wss://example.com/socket"], None);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("judges it as https://example.com/socket"),
        "{out}"
    );
    assert!(out.contains("host:     example.com port 443"), "{out}");
    let (code, out) = check(&["ws://127.0.0.1:9/socket"], None);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("127.0.0.1 is loopback"), "{out}");
    let (code, out) = check(
        &["WS://127.0.0.1:9/socket"],
        Some("[policy]\nallow_private = [\"127.0.0.1:9\"]\n"),
    );
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_private_refusal_says_how_to_allow_it_and_the_flag_does() {
    let (code, out) = check(&["http://127.0.0.1:8080/"], None);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("hint:")
            && out.contains("policy.allow_private")
            && out.contains("--allow-private 127.0.0.1:8080"),
        "{out}"
    );
    let (code, out) = check(
        &[
            "--allow-private",
            "127.0.0.1:8080",
            "http://127.0.0.1:8080/",
        ],
        None,
    );
    assert_eq!(code, 0, "{out}");
    let (code, out) = check(
        &["--allow-private", "10.0.0.0/40", "http://10.0.0.1/"],
        None,
    );
    assert_ne!(code, 0, "{out}");
}

#[test]
fn explain_names_the_rule_a_call_fires_and_why() {
    let click = |name: &str| {
        explain(
            &[
                "--tool",
                "browser_click",
                "--role",
                "button",
                "--name",
                name,
                "--url",
                "https://app.example.com/settings",
            ],
            None,
        )
    };
    let (code, out) = click("Delete account");
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("rule:     destructive (built in)"), "{out}");
    assert!(out.contains("risk:     high"), "{out}");
    assert!(out.contains("action:   approve"), "{out}");
    assert!(out.contains("name \"Delete account\" matches"), "{out}");
    let (code, out) = click("Save");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("rule:     none fires"), "{out}");

    let (code, out) = explain(
        &["--tool", "browser_type", "--password", "--text", "hunter22"],
        None,
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("literal-password"), "{out}");
    assert!(out.contains("{{secret:NAME.password}}"), "{out}");

    // The operator's rules come first, from the config file.
    let config = "[policy]\ntrusted_domains = [\"example.com\"]\n[approvals]\n[[approvals.rules]]\nname = \"settings are off limits\"\nurl = \"/settings\"\nrisk = \"high\"\naction = \"deny\"\nmessage = \"not there\"";
    let (code, out) = explain(
        &[
            "--tool",
            "browser_click",
            "--name",
            "Save",
            "--url",
            "https://app.example.com/settings",
        ],
        Some(config),
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("settings are off limits (config)"), "{out}");
    let (code, out) = explain(
        &[
            "--tool",
            "browser_navigate",
            "--url",
            "https://elsewhere.test/",
        ],
        Some(config),
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("elsewhere.test is outside policy.trusted_domains"),
        "{out}"
    );
}

#[test]
fn explains_the_effect_rules_and_judges_a_request_as_a_server_reads_it() {
    // Every rule in force, built-ins with what they hold.
    let (code, out) = explain(&["--rules"], None);
    assert_eq!(code, 0, "{out}");
    for name in [
        "destructive (built in)",
        "delete-request (built in, high, approve)",
        "delete-path (built in, high, approve)",
        "delete-field (built in, high, approve)",
        "password-path (built in, high, approve)",
        "payment-path (built in, critical, approve)",
        "payment-field (built in, critical, approve)",
    ] {
        assert!(out.contains(name), "{name} in {out}");
    }
    // A request, canonical first: an escaped, doubled path is the delete it is.
    let (code, out) = explain(
        &[
            "--request-url",
            "http://127.0.0.1:8900//admin/auth/user/7/%64elete/",
            "--field",
            "post=yes",
        ],
        None,
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("request:  POST http://127.0.0.1:8900/admin/auth/user/7/delete/"),
        "{out}"
    );
    assert!(out.contains("rule:     delete-path"), "{out}");
    // A login whose next page is a delete page deletes nothing.
    let (code, out) = explain(
        &[
            "--request-url",
            "http://127.0.0.1:8900/admin/login/?next=/admin/auth/user/7/delete/",
        ],
        None,
    );
    assert_eq!(code, 0, "{out}");
    // A call that runs says its requests are judged next.
    let (code, out) = explain(
        &[
            "--tool",
            "browser_click",
            "--role",
            "link",
            "--name",
            "Delete",
        ],
        None,
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "then:     the requests it makes are judged by the effect rules (delete-request"
        ),
        "{out}"
    );
    // Switched off, a built-in no longer holds.
    let (code, _) = explain(
        &[
            "--request-url",
            "http://a.test/x/delete",
            "--method",
            "post",
        ],
        Some("[approvals]\ndefaults_off = [\"delete-path\"]\n"),
    );
    assert_eq!(code, 0);
}
