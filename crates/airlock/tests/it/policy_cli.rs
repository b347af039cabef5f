//! `airlock policy check`: decisions, reasons and exit codes.

use crate::server::BIN;

fn check(args: &[&str], config: Option<&str>) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(BIN);
    command
        .args(["policy", "check"])
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
