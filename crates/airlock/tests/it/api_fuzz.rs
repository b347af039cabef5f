//! `/api/v1` against its own OpenAPI document: schemathesis (from `.venv`) generates
//! requests from `/api/v1/openapi.json` — valid, invalid and stateful sequences — at
//! a real `airlock serve`, and every check must pass: no 5xx, every status, header,
//! content type and body as documented, invalid input refused, valid input accepted.

use std::time::Duration;

use tokio::process::Command;

use crate::mcp_clients::{assert_clean, root};
use crate::server::{BIN, serve_with, stop};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_keeps_to_its_openapi_document_under_generated_requests() {
    let schemathesis = root().join(".venv/bin/schemathesis");
    assert!(
        schemathesis.is_file(),
        "{} is missing: `make test` installs schemathesis into .venv",
        schemathesis.display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let run = |args: Vec<String>| {
        let data = data.clone();
        async move {
            let out = Command::new(BIN)
                .args(&args)
                .arg("--data-dir")
                .arg(&data)
                .env_remove("AIRLOCK_CONFIG")
                .output()
                .await
                .unwrap();
            assert!(out.status.success(), "{args:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        }
    };
    run(vec!["tenant".into(), "create".into(), "acme".into()]).await;
    let key = run(["key", "create", "--tenant", "acme", "--role", "admin"]
        .map(String::from)
        .to_vec())
    .await;
    // Generated leases open real sessions: a few, then 429s.
    let config = tmp.path().join("airlock.toml");
    std::fs::write(
        &config,
        "[sessions]\nwarm = 0\nmax_total = 3\nmin_free_memory_mb = 0\n",
    )
    .unwrap();
    // Every check on every operation, but two: a tenant's policy is data whose
    // values the operator's config judges (hosts, regexes of rules, origins), which no
    // JSON Schema can say, so a schema-valid body may be refused — with a 400 that
    // names its key, which the other checks still hold it to; and a login's
    // definition must name a vault secret the tenant holds (and a probe a catalogue
    // call would accept), which no schema can say either.
    std::fs::write(
        tmp.path().join("schemathesis.toml"),
        "[checks]\nenabled = true\n\n[[operations]]\ninclude-path = \"/api/v1/policy\"\ninclude-method = \"PUT\"\nchecks.positive_data_acceptance.enabled = false\n\n[[operations]]\ninclude-path = \"/api/v1/logins/{name}\"\ninclude-method = \"PUT\"\nchecks.positive_data_acceptance.enabled = false\n",
    )
    .unwrap();
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    let root_url = served.url.trim_end_matches("/mcp").to_owned();
    let out = Command::new(&schemathesis)
        .arg("run")
        .arg(format!("{root_url}/api/v1/openapi.json"))
        .args(["-H", &format!("Authorization: Bearer {key}")])
        // An endless event stream is not a request-response operation.
        .args(["--exclude-path", "/api/v1/events"])
        .args(["--max-examples", "60", "--seed", "20261123"])
        .args(["--request-timeout", "30"])
        .env("SCHEMATHESIS_HOOKS", "")
        .env("NO_COLOR", "1")
        .current_dir(tmp.path())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(300), out)
        .await
        .expect("schemathesis finished within 5 minutes")
        .expect("schemathesis runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Generated bodies can be huge: each failure's first lines say enough.
    let short: String = stdout
        .lines()
        .map(|l| airlock_core::text::ellipsize(l, 300))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        out.status.success(),
        "schemathesis found failures:\n{short}\n--- stderr ---\n{stderr}"
    );
    assert!(stdout.contains(" passed"), "{stdout}");
    stop(served).await;
    assert_clean(tmp.path()).await;
}
