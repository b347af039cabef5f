//! Configuration loading, end to end from TOML and the environment: what is accepted,
//! what is refused and with which words.

use super::*;
use std::collections::HashMap;

fn load(text: &str, env: &[(&str, &str)]) -> Result<Config> {
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Config::load(Some((Path::new("airlock.toml"), text)), &env)
}

#[test]
fn defaults_follow_the_spec() {
    let config = Config::load(None, &HashMap::new()).unwrap();
    assert_eq!(config.server.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(config.data_dir, PathBuf::from("./airlock-data"));
    assert_eq!(config.browser, BrowserConfig::default());
}

#[test]
fn the_public_url_is_an_origin_and_the_publish_dir_is_off_the_data_dir() {
    let config = load(
        "[server]\npublic_url = \"https://airlock.example.com/\"",
        &[],
    )
    .unwrap();
    assert_eq!(
        config.server.public_url.as_deref(),
        Some("https://airlock.example.com")
    );
    let config = load("", &[("AIRLOCK_PUBLIC_URL", "http://10.0.0.7:8080")]).unwrap();
    assert_eq!(
        config.server.public_url.as_deref(),
        Some("http://10.0.0.7:8080")
    );
    for bad in [
        "ftp://x",
        "https://x/path",
        "https://user:pw@x",
        "not a url",
    ] {
        let e = load(&format!("[server]\npublic_url = \"{bad}\""), &[]).unwrap_err();
        assert!(e.to_string().contains("server.public_url"), "{bad}: {e}");
    }
    let config = load("[audit]\npublish_dir = \"/mnt/witness\"", &[]).unwrap();
    assert_eq!(
        config.audit.publish_dir,
        Some(PathBuf::from("/mnt/witness"))
    );
    for bad in ["relative/dir", "./airlock-data/published"] {
        let e = load(&format!("[audit]\npublish_dir = \"{bad}\""), &[]).unwrap_err();
        assert!(e.to_string().contains("audit.publish_dir"), "{bad}: {e}");
    }
    let e = load(
        "data_dir = \"/var/lib/airlock\"\n[audit]\npublish_dir = \"/var/lib/airlock/witness\"",
        &[],
    )
    .unwrap_err();
    assert!(e.to_string().contains("inside the data dir"), "{e}");
}

#[test]
fn approvals_rules_load_and_a_bad_one_names_its_key() {
    let config = load(
        "[approvals]\ntimeout_secs = 5\n[[approvals.rules]]\nname = \"x\"\ntools = [\"browser_click\"]\nrisk = \"high\"\naction = \"deny\"",
        &[],
    )
    .unwrap();
    assert_eq!(config.approvals.timeout, Duration::from_secs(5));
    // The operator's one rule, then the four built-in ones.
    assert_eq!(config.approvals.rules.len(), 5);
    assert_eq!(
        Config::load(None, &HashMap::new())
            .unwrap()
            .approvals
            .timeout,
        DEFAULT_APPROVAL_TIMEOUT
    );
    let err = load(
        "[approvals]\n[[approvals.rules]]\nurl = \"(\"\nrisk = \"high\"\naction = \"deny\"",
        &[],
    )
    .unwrap_err();
    assert!(err.to_string().contains("approvals.rules[0].url"), "{err}");
    let err = load("[approvals]\ntimeout_secs = 0", &[]).unwrap_err();
    assert!(err.to_string().contains("approvals.timeout_secs"), "{err}");
}

#[test]
fn env_beats_file() {
    let config = load(
        "[browser]\nchrome = \"/from/file\"\n[server]\nlisten = \"127.0.0.1:9000\"",
        &[(vars::CHROME, "/from/env")],
    )
    .unwrap();
    assert_eq!(config.browser.chrome, Some(PathBuf::from("/from/env")));
    assert_eq!(config.server.listen.port(), 9000);
}

#[test]
fn chromium_memory_is_bounded_unless_the_bound_is_zero() {
    let config = load("", &[]).unwrap();
    assert_eq!(config.browser.memory_limit, Some(4 << 30));
    let config = load("[browser]\nmemory_limit_mb = 512", &[]).unwrap();
    assert_eq!(config.browser.memory_limit, Some(512 << 20));
    let config = load("[browser]\nmemory_limit_mb = 0", &[]).unwrap();
    assert_eq!(config.browser.memory_limit, None);
}

#[test]
fn the_approvers_key_is_its_own_and_the_webhook_is_signed() {
    let agent = "agent-key-0123456789";
    let config = load(
        &format!("[server]\napi_key = \"{agent}\"\nadmin_key = \"admin-key-0123456789\""),
        &[],
    )
    .unwrap();
    assert_eq!(
        config.server.admin_key.as_ref().unwrap().expose(),
        "admin-key-0123456789"
    );
    let err = load(
        &format!("[server]\napi_key = \"{agent}\"\nadmin_key = \"{agent}\""),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("server.admin_key") && err.contains("differ"),
        "{err}"
    );
    let err = load(
        "[approvals]\nwebhook_url = \"http://hooks.example.com/a\"",
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("approvals.webhook_secret"), "{err}");
    let err = load(
        "[approvals]\nwebhook_url = \"ftp://x/\"\nwebhook_secret = \"0123456789abcdef\"",
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("approvals.webhook_url"), "{err}");
    let config = load(
        "[approvals]\nwebhook_url = \"http://hooks.example.com/a\"\nwebhook_secret = \"file-secret-0123456789\"",
        &[(vars::WEBHOOK_SECRET, "env-secret-0123456789")],
    )
    .unwrap();
    let hook = config.approvals.webhook.as_ref().unwrap();
    assert_eq!(hook.secret.expose(), "env-secret-0123456789");
    // Its key is one of the deployment's own secrets, hidden in whatever Airlock says.
    assert_eq!(
        config.own_secrets(),
        [("webhook-secret", "env-secret-0123456789")]
    );
    let printed = format!("{config:?}");
    assert!(
        !printed.contains("env-secret") && !printed.contains("file-secret"),
        "{printed}"
    );
}

#[test]
fn errors_name_the_key() {
    let cases = [
        ("[browser]\nisolation = \"vm\"", "browser.isolation"),
        (
            "[browser]\naction_timeout_ms = 0",
            "browser.action_timeout_ms",
        ),
        ("[browser]\nviewport_width = 5", "browser.viewport_width"),
        ("[browser]\nmemory_limit_mb = 64", "browser.memory_limit_mb"),
        ("[server]\nlisten = \"nope\"", "server.listen"),
        ("[tools]\nprofile = \"shell\"", "tools.profile"),
        ("[recording]\nmode = \"video\"", "recording.mode"),
        (
            "[recording]\nretention_days = 0",
            "recording.retention_days",
        ),
        (
            "[policy]\nallow_private = [\"10.0.0.0/40\"]",
            "policy.allow_private[0]",
        ),
        (
            "[registration]\nserver_name = \" \"\nca_file = \"/ca.pem\"",
            "registration.server_name",
        ),
        // No worker token in the environment.
        (
            "[registration]\nserver_name = \"w\"\nca_file = \"/ca.pem\"",
            "AIRLOCK_WORKER_TOKEN",
        ),
    ];
    for (text, key) in cases {
        let err = load(text, &[]).unwrap_err().to_string();
        assert!(err.contains(key), "{text:?} gave {err}");
    }
    let err = load("bogus = 1", &[]).unwrap_err().to_string();
    assert!(err.contains("bogus"), "{err}");
}

#[test]
fn type_errors_name_the_key_and_show_an_example() {
    for (text, want) in [
        (
            "[browser]\naction_timeout_ms = \"fast\"",
            "browser.action_timeout_ms: invalid type: string \"fast\", expected u64 (for example `action_timeout_ms = 10`)",
        ),
        (
            "[sessions]\nwarm = \"two\"\n",
            "sessions.warm: invalid type: string \"two\", expected usize (for example `warm = 10`)",
        ),
        (
            "[policy]\nallow_private = \"10.0.0.0/8\"",
            "policy.allow_private: invalid type: string \"10.0.0.0/8\", expected a sequence",
        ),
    ] {
        let err = load(text, &[]).unwrap_err().to_string();
        assert!(err.contains(want), "{text:?} gave {err}");
    }
}

#[test]
fn the_environment_adds_private_allowances_and_is_named_when_wrong() {
    let text = "[policy]\nallow_private = [\"10.0.0.0/8\"]";
    let config = load(
        text,
        &[(vars::ALLOW_PRIVATE, "127.0.0.1:8080, 192.168.1.0/24")],
    )
    .unwrap();
    for url in [
        "http://10.1.2.3/",
        "http://127.0.0.1:8080/",
        "http://192.168.1.7/",
    ] {
        assert!(config.policy.check_url(url).decision.is_allowed(), "{url}");
    }
    assert!(
        !config
            .policy
            .check_url("http://127.0.0.1:9/")
            .decision
            .is_allowed()
    );
    let err = load(text, &[(vars::ALLOW_PRIVATE, "10.0.0.0/40")])
        .unwrap_err()
        .to_string();
    assert!(err.contains(vars::ALLOW_PRIVATE), "{err}");
}

#[test]
fn api_key_is_never_printed() {
    let config = load("[server]\napi_key = \"0123456789abcdef-secret\"", &[]).unwrap();
    assert_eq!(
        config.server.api_key.as_ref().unwrap().expose(),
        "0123456789abcdef-secret"
    );
    let debug = format!("{config:?}");
    assert!(!debug.contains("secret"), "{debug}");
    assert!(load("[server]\napi_key = \"short\"", &[]).is_err());
    let raw: RawConfig = toml::from_str("[server]\napi_key = \"0123456789abcdef-secret\"").unwrap();
    assert!(!format!("{raw:?}").contains("secret"));
}

#[test]
fn example_file_parses() {
    let text = include_str!("../../../airlock.example.toml");
    let config = load(text, &[]).unwrap();
    assert_eq!(config.browser.isolation, Isolation::Context);
}

#[test]
fn the_store_is_sqlite_unless_a_postgres_url_is_given_and_its_password_never_prints() {
    assert_eq!(load("", &[]).unwrap().store, StoreLocation::Sqlite);
    let file = "[store]\nurl = \"postgres://airlock:file-pw-123@db.internal:5433/airlock?sslmode=require\"";
    let config = load(file, &[]).unwrap();
    let StoreLocation::Postgres(url) = &config.store else {
        panic!("{:?}", config.store)
    };
    assert_eq!(url.location(), "postgres://db.internal:5433/airlock");
    assert!(url.expose().contains("file-pw-123"));
    for shown in [
        format!("{config:?}"),
        format!("{:?}", toml::from_str::<RawConfig>(file).unwrap()),
        url.location(),
    ] {
        assert!(!shown.contains("file-pw-123"), "{shown}");
        assert!(!shown.contains("sslmode"), "{shown}");
    }

    // The environment beats the file.
    let config = load(
        file,
        &[(vars::DATABASE_URL, "postgresql://u:env-pw@10.0.0.9/other")],
    )
    .unwrap();
    let StoreLocation::Postgres(url) = &config.store else {
        panic!()
    };
    assert_eq!(url.location(), "postgres://10.0.0.9/other");

    // A wrong URL names the key and never repeats what was written.
    for bad in [
        "mysql://u:leak-pw@h/db",
        "postgres:///db-leak-pw",
        "not a url leak-pw",
    ] {
        let err = load(&format!("[store]\nurl = {bad:?}"), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("store.url"), "{err}");
        assert!(!err.contains("leak-pw"), "{err}");
    }
    assert!(vars::SECRET.contains(&vars::DATABASE_URL));
}

#[test]
fn a_drivers_error_loses_the_url_and_its_password_in_every_spelling() {
    let url = DatabaseUrl::parse("postgres://app:p%40ss-w0rd@db:5432/airlock").unwrap();
    let said = url.scrub(
        "error connecting to postgres://app:p%40ss-w0rd@db:5432/airlock: password p@ss-w0rd rejected",
    );
    assert!(
        !said.contains("p%40ss-w0rd") && !said.contains("p@ss-w0rd"),
        "{said}"
    );
    assert!(said.contains("postgres://db:5432/airlock"), "{said}");
}

#[test]
fn registration_reads_the_name_the_ca_and_the_worker_token() {
    let token = "a-worker-token-of-at-least-thirty-two-characters";
    let config = load(
        "[registration]\nserver_name = \"airlock-worker.airlock.svc\"\nca_file = \"/etc/airlock/ca.pem\"",
        &[("AIRLOCK_WORKER_TOKEN", token)],
    )
    .unwrap();
    let registration = config.registration.expect("registration");
    assert_eq!(registration.server_name, "airlock-worker.airlock.svc");
    assert_eq!(registration.token.expose(), token);
    assert!(!format!("{registration:?}").contains(token));
    assert!(load("", &[]).unwrap().registration.is_none());
}

// A registration is the word of whoever holds the worker token: it never points the
// replicas at a link-local or metadata address, nor at loopback unless listed, nor
// outside the listed networks when some are.
#[test]
fn a_registered_worker_may_be_only_where_the_operator_allows() {
    let env = [(
        "AIRLOCK_WORKER_TOKEN",
        "a-worker-token-of-at-least-thirty-two-characters",
    )];
    let with = |allow: &str| {
        load(
            &format!("[registration]\nserver_name = \"w\"\nca_file = \"/ca.pem\"\n{allow}"),
            &env,
        )
        .map(|c| c.registration.unwrap().allow)
    };
    let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
    let open = with("").unwrap();
    for never in [
        "169.254.169.254",
        "169.254.7.7",
        "fe80::1",
        "0.0.0.0",
        "::ffff:169.254.169.254",
        "224.0.0.1",
    ] {
        assert!(open.admits(ip(never)).is_err(), "{never}");
    }
    let loopback = open.admits(ip("127.0.0.1")).unwrap_err();
    assert!(loopback.contains("allow_addresses"), "{loopback}");
    assert!(open.admits(ip("::1")).is_err());
    assert!(open.admits(ip("10.1.2.3")).is_ok());

    let listed = with("allow_addresses = [\"127.0.0.1\", \"10.8.0.0/16\"]").unwrap();
    assert!(listed.admits(ip("127.0.0.1")).is_ok());
    assert!(listed.admits(ip("10.8.3.4")).is_ok());
    assert!(listed.admits(ip("10.9.0.1")).is_err());
    assert!(listed.admits(ip("169.254.169.254")).is_err());

    for bad in [
        "\"169.254.0.0/16\"",
        "\"0.0.0.0/0\"",
        "\"fe80::/10\"",
        "\"not-a-net\"",
    ] {
        let error = with(&format!("allow_addresses = [{bad}]"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("registration.allow_addresses[0]"), "{error}");
    }
}

// The ConfigMap in deploy/ is an airlock.toml this version loads, with the secrets it
// names from the environment (so a renamed key cannot rot there unseen).
#[test]
fn the_kubernetes_config_map_is_a_valid_config() {
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes/config.yaml"),
    )
    .unwrap();
    let toml: String = manifest
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("airlock.toml: |"))
        .skip(1)
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(toml.contains("[registration]"), "{toml}");
    // The worker token is a mounted file, never an environment variable.
    let token_file = "/etc/airlock/worker-token/token";
    assert!(toml.contains(token_file), "{toml}");
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "a-worker-token-of-at-least-thirty-two-characters\n").unwrap();
    let toml = toml.replace(token_file, &token.display().to_string());
    let config = load(&toml, &[]).unwrap();
    assert!(config.registration.is_some());
    assert!(config.audit.key_file.is_some());
}

#[test]
fn models_are_the_operators_reached_only_at_their_url() {
    let text = r#"
[[models]]
name = "local"
url = "http://127.0.0.1:8000/v1/chat/completions"
model = "qwen"

[[models]]
name = "hosted"
url = "https://api.example.com/v1/chat/completions"
model = "gpt-x"
api_key_env = "MODEL_KEY"

[tasks]
model = "hosted"
max_steps = 30
"#;
    let config = load(text, &[("MODEL_KEY", "sk-test-123")]).unwrap();
    let tasks = &config.tasks;
    assert_eq!(tasks.models.len(), 2);
    assert_eq!(tasks.max_steps, 30);
    let hosted = tasks.model(None).unwrap();
    assert_eq!(hosted.name, "hosted");
    assert_eq!(hosted.key, ModelKey::Value(ApiKey::new("sk-test-123")));
    // The key is never printed.
    assert!(!format!("{config:?}").contains("sk-test-123"));
    assert_eq!(tasks.model(Some("local")).unwrap().key, ModelKey::None);
    assert!(tasks.model(Some("nope")).is_none());
    // No models: no default, tasks cannot run.
    assert!(load("", &[]).unwrap().tasks.model(None).is_none());
    // Every style by its name; the default is `tools`.
    assert_eq!(tasks.model(Some("local")).unwrap().style, ModelStyle::Tools);
    for style in ModelStyle::ALL {
        let text = format!(
            "[[models]]\nname = \"m\"\nurl = \"http://127.0.0.1:1/v1\"\nmodel = \"x\"\nstyle = \"{}\"\n",
            style.as_str()
        );
        assert_eq!(load(&text, &[]).unwrap().tasks.models[0].style, style);
    }

    let model = |extra: &str| format!("[[models]]\nname = \"m\"\nmodel = \"x\"\n{extra}");
    for (bad, key, words) in [
        (
            model("url = \"http://api.example.com/v1\""),
            "models[0].url",
            "must be https",
        ),
        (
            model("url = \"https://u:p@api.example.com/v1\""),
            "models[0].url",
            "no user or password",
        ),
        (
            model("url = \"https://api.example.com/v1\"\nstyle = \"telepathy\""),
            "models[0].style",
            "telepathy",
        ),
        (
            model("url = \"https://api.example.com/v1\"\napi_key_env = \"AIRLOCK_MASTER_KEY\""),
            "models[0].api_key_env",
            "AIRLOCK_",
        ),
        (
            model("url = \"https://api.example.com/v1\"\napi_key_env = \"UNSET_KEY\""),
            "models[0].api_key_env",
            "not set",
        ),
        (
            model("url = \"https://api.example.com/v1\"\n[tasks]\nmax_steps = 101"),
            "tasks.max_steps",
            "1..=100",
        ),
        (
            model("url = \"https://api.example.com/v1\"\n[tasks]\nmodel = \"other\""),
            "tasks.model",
            "not a [[models]] name",
        ),
    ] {
        let e = load(&bad, &[]).unwrap_err().to_string();
        assert!(e.starts_with(key) && e.contains(words), "{bad}: {e}");
    }
}

#[test]
fn the_flows_scope_is_the_caller_unless_set_and_a_bad_one_names_its_key() {
    assert_eq!(load("", &[]).unwrap().flow.scope, crate::FlowScope::Caller);
    for (word, scope) in [
        ("session", crate::FlowScope::Session),
        ("tenant", crate::FlowScope::Tenant),
        ("caller", crate::FlowScope::Caller),
    ] {
        let config = load(&format!("[flow]\nscope = \"{word}\"\n"), &[]).unwrap();
        assert_eq!(config.flow.scope, scope);
    }
    let refused = load("[flow]\nscope = \"browser\"\n", &[]).unwrap_err();
    assert!(refused.to_string().contains("flow.scope"), "{refused}");
}
