//! Playwright MCP's conventions where agents expect them, on an application nobody on
//! the team wrote (Django's admin, PyPI, pinned): `browser_type` replaces a field's
//! value (a prefilled "carol" becomes "caroline", not "carolcaroline") unless asked
//! to append, and the result says which. Arguments go through the tool catalogue as
//! an MCP client's would.

use airlock_gateway::{Gateway, GatewayConfig, ToolCall, ToolOutput};
use airlock_policy::{Policy, PolicyConfig};
use airlock_test_support::{DJANGO_ADMIN, DJANGO_PASSWORD, Django, with_browser};
use serde_json::{Value, json};

// A tool call as a client sends it: its name and JSON arguments.
fn tool(name: &str, arguments: Value) -> ToolCall {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    airlock_tools::find(name)
        .unwrap()
        .parse(Some(&arguments))
        .unwrap_or_else(|e| panic!("{name}: {}", e.0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_type_replaces_a_prefilled_value_unless_asked_to_append() {
    with_browser(|h| async move {
        let django = Django::start();
        let policy = Policy::from_config(&PolicyConfig {
            allow_private: vec![format!("127.0.0.1:{}", django.port())],
            ..PolicyConfig::default()
        })
        .unwrap();
        // `browser_evaluate` reads the field's value (the test's own look).
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                evaluate: true,
                ..GatewayConfig::with_policy(policy)
            },
        );
        let agent = gateway.agent_session();
        let ok = async |call: ToolCall| -> ToolOutput {
            let label = format!("{call:?}");
            let out = agent.call(call).await;
            assert_eq!(out.error, None, "{label}: {}", out.text);
            out
        };
        ok(tool(
            "browser_navigate",
            json!({"url": django.url("/admin/")}),
        ))
        .await;
        let field = |name: &str, text: &str| json!({"role": "textbox", "name": name, "text": text});
        ok(tool("browser_type", field("Username:", DJANGO_ADMIN))).await;
        let mut password = field("Password:", DJANGO_PASSWORD);
        password["submit"] = json!(true);
        ok(tool("browser_type", password)).await;
        // Carol's page: her username is in its field.
        ok(tool(
            "browser_navigate",
            json!({"url": django.url("/admin/auth/user/?q=carol")}),
        ))
        .await;
        ok(tool(
            "browser_click",
            json!({"role": "link", "name": "carol"}),
        ))
        .await;
        let value = async || {
            ok(tool(
                "browser_evaluate",
                json!({"function": "() => document.getElementById('id_username').value"}),
            ))
            .await
            .text
        };
        assert!(value().await.contains("\"carol\""));

        let out = ok(tool("browser_type", field("Username:", "caroline"))).await;
        assert!(out.text.contains("(its value replaced)"), "{}", out.text);
        let now = value().await;
        assert!(
            now.contains("\"caroline\"") && !now.contains("carolcaroline"),
            "{now}"
        );

        let mut more = field("Username:", "-b");
        more["append"] = json!(true);
        let out = ok(tool("browser_type", more)).await;
        assert!(out.text.contains("(after its value)"), "{}", out.text);
        assert!(value().await.contains("\"caroline-b\""));
        gateway.shutdown().await;
    })
    .await;
}
