//! Web Bot Auth through the real binary, verified by code nobody on the team wrote:
//! `airlock identity import` makes the operator's key the tenant's, `airlock serve`
//! with `[identity] sign = true` serves the key directory at its own address, and an
//! agent's MCP client (the official Python SDK) browses a site whose server is a
//! Node verifier built on Cloudflare's npm packages (`http-message-sig` verifies
//! each request and the directory's own signatures, `web-bot-auth` checks each key id
//! is its thumbprint). Every request the page makes arrives signed by that key,
//! found through the `Signature-Agent` directory; `airlock identity show` and the
//! audit record name the key; the private key is never printed.

use std::process::Stdio;
use std::time::Duration;

use base64::Engine as _;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Command;

use crate::mcp_clients::{node, python, root};
use crate::server::{BIN, serve_with, stop};

async fn cli(data: &std::path::Path, config: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("AIRLOCK_DATA_DIR", data)
        .env("AIRLOCK_CONFIG", config)
        .env_remove("AIRLOCK_MASTER_KEY")
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cloudflares_node_packages_verify_every_request_through_the_served_directory() {
    let dir = root().join("crates/airlock/tests/clients/webbotauth");
    let mut verifier = Command::new(node())
        .arg("verifier.mjs")
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(verifier.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the verifier starts")
        .unwrap()
        .unwrap();
    let port = serde_json::from_str::<serde_json::Value>(&first).unwrap()["port"]
        .as_u64()
        .unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let config = tmp.path().join("airlock.toml");
    std::fs::write(
        &config,
        format!(
            "[policy]\nallow_private = [\"127.0.0.1:{port}\"]\n[sessions]\nwarm = 0\n[identity]\nsign = true\nlifetime_secs = 30\n"
        ),
    )
    .unwrap();
    // The operator's key, imported; it is never printed back.
    let seed = [42u8; 32];
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(seed);
    let key_file = tmp.path().join("key");
    std::fs::write(&key_file, &encoded).unwrap();
    let import_args = [
        "identity",
        "import",
        "--key-file",
        key_file.to_str().unwrap(),
    ];
    let import = || cli(&data, &config, &import_args);
    let (ok, imported) = import().await;
    assert!(ok, "{imported}");
    let kid = airlock_vault::webbotauth::thumbprint(
        &ed25519_dalek::SigningKey::from_bytes(&seed)
            .verifying_key()
            .to_bytes(),
    );
    assert!(imported.contains(&kid), "{imported}");
    assert!(!imported.contains(&encoded[..20]), "{imported}");
    let (ok, again) = import().await;
    assert!(!ok && again.contains("rotate"), "{again}");

    let served = serve_with(tmp.path(), None, Some(&config)).await;
    let base = served.url.trim_end_matches("/mcp").to_owned();
    let page = format!("http://127.0.0.1:{port}/page");
    let out = Command::new(python())
        .arg(root().join("crates/airlock/tests/clients/webbotauth.py"))
        .args([&served.url, &page])
        .env("TMPDIR", tmp.path())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), out)
        .await
        .expect("the client finished")
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // What the Node site saw: the document, its image and its fetch, each signed by
    // the imported key, found through Airlock's directory.
    let mut seen: Vec<serde_json::Value> = Vec::new();
    let expected = ["GET /page", "GET /pixel.png", "GET /api/node"];
    let collected = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            seen.push(serde_json::from_str(&line).unwrap());
            if expected.iter().all(|e| {
                seen.iter()
                    .any(|s| s["line"].as_str().unwrap_or("").starts_with(e))
            }) {
                break;
            }
        }
    })
    .await;
    assert!(collected.is_ok(), "{seen:#?}");
    for line in &seen {
        assert_eq!(line["signed"], true, "{line}");
        assert_eq!(line["error"], serde_json::Value::Null, "{line}");
        assert_eq!(line["kid"], kid.as_str(), "{line}");
        assert_eq!(
            line["directory"],
            format!("{base}/.well-known/http-message-signatures-directory").as_str(),
            "{line}"
        );
    }

    // The operator sees the key and where sites find it; the record names it.
    let (ok, shown) = cli(&data, &config, &["identity", "show"]).await;
    assert!(
        ok && shown.contains(&kid) && shown.contains("active"),
        "{shown}"
    );
    assert!(
        shown.contains("/.well-known/http-message-signatures-directory"),
        "{shown}"
    );
    stop(served).await;
    let (ok, exported) = cli(&data, &config, &["audit", "export"]).await;
    assert!(ok, "{exported}");
    assert!(
        exported.contains(&format!("\"signed_by\":\"{kid}\"")),
        "{exported}"
    );
    assert!(exported.contains("identity_import"), "{exported}");
    assert!(!exported.contains(&encoded[..20]));
}
