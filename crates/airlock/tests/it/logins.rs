//! Stored logins through the real binary: a login defined over REST for a site
//! whose sign-in asks a new device for a code only a person has; its check stops
//! there, the webhook tells the operator, and the one-time link works in the
//! console once, for the tenant's admin only (another tenant's admin is refused and
//! does not use it up); an agent's MCP client that can show a URL is offered a link
//! of its own when the agent's session open is refused; the login is alive again
//! and `airlock login list` says so.

use std::process::Stdio;
use std::time::Duration;

use airlock_test_support::signin::{self, Site};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::Command;

use crate::approvals_rest::Receiver;
use crate::mcp_clients::{python, root};
use crate::server::{BIN, serve_with, stop};

struct Answer {
    status: u16,
    headers: String,
    body: String,
}

// One request, answered in full (`Connection: close`).
async fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    Answer {
        status: head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        headers: head.to_owned(),
        body: body.to_owned(),
    }
}

// Signs into the console with `key`: its cookie and the CSRF token of its forms.
async fn console(port: u16, key: &str) -> (String, String) {
    let signed = http(
        port,
        "POST",
        "/console/sign-in",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &format!("key={key}"),
    )
    .await;
    let cookie = signed
        .headers
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase().starts_with("set-cookie:").then(|| {
                l.split_once(':')
                    .unwrap()
                    .1
                    .trim()
                    .split(';')
                    .next()
                    .unwrap()
                    .to_owned()
            })
        })
        .unwrap_or_else(|| panic!("no console cookie: {}", signed.headers));
    let page = http(
        port,
        "GET",
        "/console/logins/give",
        &[("Cookie", &cookie)],
        "",
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("id=\"link-token\""), "{}", page.body);
    let csrf = page
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    (cookie, csrf)
}

async fn give(port: u16, (cookie, csrf): &(String, String), token: &str, value: &str) -> Answer {
    http(
        port,
        "POST",
        "/console/logins/give",
        &[
            ("Cookie", cookie),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &format!("csrf={csrf}&token={token}&value={value}"),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_that_needs_a_person_is_renewed_through_its_one_time_link() {
    let site = Site::start(false, true).await;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let admin_key = "admin-key-fedcba9876543210";
    let hook = Receiver::start().await;
    let airlock = |args: &[&str]| {
        let out = std::process::Command::new(BIN)
            .args(args)
            .env("AIRLOCK_DATA_DIR", &data)
            .env_remove("AIRLOCK_CONFIG")
            .env_remove("AIRLOCK_MASTER_KEY")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let mut vault = Command::new(BIN)
        .args([
            "vault",
            "set",
            "admin",
            "--origin",
            &site.origin(),
            "--username",
            signin::USER,
            "--password-stdin",
        ])
        .env("AIRLOCK_DATA_DIR", &data)
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("AIRLOCK_MASTER_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = vault.stdin.take().unwrap();
    stdin
        .write_all(format!("{}\n", signin::PASSWORD).as_bytes())
        .await
        .unwrap();
    drop(stdin);
    assert!(vault.wait().await.unwrap().success());
    airlock(&["tenant", "create", "other"]);
    let other_admin = airlock(&["key", "create", "--tenant", "other", "--role", "admin"]);
    let agent_key = airlock(&["key", "create", "--tenant", "default", "--role", "operate"]);
    let config = tmp.path().join("airlock.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nadmin_key = \"{admin_key}\"\nrole = \"operate\"\n[approvals]\nwebhook_url = \"http://127.0.0.1:{}/hook\"\nwebhook_secret = \"hook-secret-0123456789abcdef\"\n[policy]\nallow_private = [\"127.0.0.1:{}\"]\n",
            hook.port, site.port
        ),
    )
    .unwrap();
    let served = serve_with(tmp.path(), None, Some(&config)).await;
    // The operator follows checks from a terminal.
    let mut watch = Command::new(BIN)
        .args(["login", "watch"])
        .env("AIRLOCK_DATA_DIR", &data)
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("AIRLOCK_MASTER_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut watched = tokio::io::BufReader::new(watch.stdout.take().unwrap()).lines();
    let port: u16 = served
        .url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let bearer = format!("Bearer {admin_key}");
    let admin = [
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];

    // Defined over REST: probe the admin page; sign in by placeholder; a person's
    // code goes into "Device code".
    let spec = serde_json::json!({
        "probe": {"url": site.url("/admin/"), "expect": "Site administration", "stay": true},
        "steps": [
            {"tool": "browser_navigate", "arguments": {"url": site.url("/login/")}},
            {"tool": "browser_type", "arguments": {"role": "textbox", "name": "Username", "text": "{{secret:admin.username}}"}},
            {"tool": "browser_type", "arguments": {"role": "textbox", "name": "Password", "text": "{{secret:admin.password}}"}},
            {"tool": "browser_click", "arguments": {"role": "button", "name": "Log in"}},
        ],
        "human": {"field": {"role": "textbox", "name": "Device code"}, "submit": {"role": "button", "name": "Confirm"}},
    });
    let put = http(
        port,
        "PUT",
        "/api/v1/logins/admin",
        &admin,
        &spec.to_string(),
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    // The edge checks /mcp has stand before these routes too: a body that is not
    // JSON, a foreign page's Origin.
    let text = [
        ("Authorization", bearer.as_str()),
        ("Content-Type", "text/plain"),
    ];
    let refused = http(
        port,
        "PUT",
        "/api/v1/logins/admin",
        &text,
        &spec.to_string(),
    )
    .await;
    assert_eq!(refused.status, 415, "{}", refused.body);
    let foreign = [
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
        ("Origin", "http://attacker.invalid"),
    ];
    let refused = http(port, "POST", "/api/v1/logins/admin/check", &foreign, "").await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    // A literal password in a flow is refused, with the reason.
    let literal = spec
        .to_string()
        .replace("{{secret:admin.password}}", signin::PASSWORD);
    let refused = http(port, "PUT", "/api/v1/logins/admin", &admin, &literal).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("placeholders"), "{}", refused.body);
    assert!(!refused.body.contains(signin::PASSWORD), "{}", refused.body);

    // Checked now (or by the schedule, which may have claimed it first): it stops
    // at the new-device page and needs a person.
    let checked = http(port, "POST", "/api/v1/logins/admin/check", &admin, "").await;
    let link = if checked.status == 200 {
        let report: serde_json::Value = serde_json::from_str(&checked.body).unwrap();
        assert_eq!(report["state"], "needs_user", "{}", checked.body);
        report["link"].as_str().unwrap().to_owned()
    } else {
        assert_eq!(checked.status, 409, "{}", checked.body);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let one = http(port, "GET", "/api/v1/logins/admin", &admin, "").await;
            if one.body.contains("\"state\":\"needs_user\"")
                && one.body.contains("\"waiting\":true")
            {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "{}", one.body);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let made = http(port, "POST", "/api/v1/logins/admin/link", &admin, "").await;
        assert_eq!(made.status, 200, "{}", made.body);
        let made: serde_json::Value = serde_json::from_str(&made.body).unwrap();
        made["link"].as_str().unwrap().to_owned()
    };
    assert!(
        link.starts_with(&format!("http://127.0.0.1:{port}/console/logins/give#")),
        "{link}"
    );
    let token = link.split_once('#').unwrap().1.to_owned();
    // The operator is told: the webhook announces the check that needs a person.
    let told = hook.until(1).await;
    assert!(
        told.iter()
            .any(|d| d.body.contains("\"login_check\"") && d.body.contains("needs_user")),
        "{told:?}"
    );

    // An agent opening a session with it is refused at once; the person at its
    // MCP client (the official Python SDK, URL-mode elicitation) is offered a link
    // of their own, which the model never sees.
    let client = Command::new(python())
        .arg(root().join("crates/airlock/tests/clients/login_link.py"))
        .arg(&served.url)
        .arg(&agent_key)
        .kill_on_drop(true)
        .output();
    let client = tokio::time::timeout(Duration::from_secs(90), client)
        .await
        .expect("the client finished within 90 s")
        .expect("python runs");
    let said = String::from_utf8_lossy(&client.stdout);
    assert!(
        client.status.success() && said.contains(" passed, 0 failed"),
        "{said}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&client.stderr)
    );
    let offered = said
        .lines()
        .find_map(|l| l.strip_prefix("link: "))
        .unwrap()
        .split_once('#')
        .unwrap()
        .1
        .to_owned();
    assert_ne!(offered, token);

    // The watching terminal printed the check that needs a person.
    let printed = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = watched.next_line().await.unwrap() {
            if line.starts_with("admin") && line.contains("needs_user") {
                return line;
            }
        }
        panic!("airlock login watch ended");
    })
    .await
    .expect("airlock login watch printed the check within 30 s");
    assert!(printed.contains("new device"), "{printed}");
    assert!(!printed.contains(signin::PASSWORD));
    let _ = watch.start_kill();

    // Another tenant's admin cannot use a link (and does not use it up).
    let other = console(port, &other_admin).await;
    let refused = give(port, &other, &token, signin::DEVICE_CODE).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    // The tenant's admin gives the code once, through the link the client showed:
    // the login is alive again, and every other link of it ends.
    let own = console(port, admin_key).await;
    // A form posted from another site is refused before it is read (nor used up).
    let forged = http(
        port,
        "POST",
        "/console/logins/give",
        &[
            ("Cookie", own.0.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Origin", "http://attacker.invalid"),
        ],
        &format!(
            "csrf={}&token={offered}&value={}",
            own.1,
            signin::DEVICE_CODE
        ),
    )
    .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let given = give(port, &own, &offered, signin::DEVICE_CODE).await;
    assert_eq!(given.status, 200, "{}", given.body);
    assert!(
        given.body.contains("went into the waiting sign-in page"),
        "{}",
        given.body
    );
    assert!(!given.body.contains(signin::DEVICE_CODE), "{}", given.body);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let one = http(port, "GET", "/api/v1/logins/admin", &admin, "").await;
        if one.body.contains("\"state\":\"alive\"") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", one.body);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(site.seen(|s| s.logins), 1);
    for used in [&offered, &token] {
        let again = give(port, &own, used, signin::DEVICE_CODE).await;
        assert_eq!(again.status, 403, "{}", again.body);
    }
    // The console lists it; the CLI too.
    let page = http(port, "GET", "/console/logins", &[("Cookie", &own.0)], "").await;
    assert!(
        page.body.contains("data-login=\"admin\"") && page.body.contains("alive"),
        "{}",
        page.body
    );
    assert!(!page.body.contains(signin::DEVICE_CODE));
    // Checked on demand from the CLI: a serving replica runs it; alive, exit 0.
    let checked = airlock(&["login", "check", "admin", "--timeout", "60"]);
    assert!(
        checked.contains("admin") && checked.contains("alive"),
        "{checked}"
    );
    assert_eq!(site.seen(|s| s.logins), 1);
    stop(served).await;
    let listed = airlock(&["login", "list"]);
    assert!(
        listed.contains("admin") && listed.contains("alive"),
        "{listed}"
    );
    let audit = airlock(&["audit", "export"]);
    assert!(
        audit.contains("login_given") && audit.contains("login_check"),
        "{audit}"
    );
    for value in [signin::PASSWORD, signin::DEVICE_CODE] {
        assert!(!audit.contains(value), "{value} is on the record");
    }
}
