//! The MCP surface in process: an rmcp client over a duplex pipe to the real server,
//! for what the catalogue decides before any browser work (the listing, unknown
//! arguments, misfits, the parameters' own checks). No browser is launched: none of
//! these calls reaches one. What needs a real client or a page stays in the Python
//! and gateway suites.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use airlock_gateway::{Gateway, GatewayConfig};
use airlock_mcp::AirlockMcp;
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Map, Value, json};

struct Connected {
    client: RunningService<RoleClient, ()>,
    _profiles: tempfile::TempDir,
}

async fn connect() -> Connected {
    let profiles = tempfile::tempdir().unwrap();
    let options = airlock_browser::BrowserOptions {
        profile_parent: profiles.path().to_owned(),
        ..airlock_browser::BrowserOptions::from_config(&Default::default()).unwrap()
    };
    let gateway = Gateway::new(
        Arc::new(airlock_browser::Browsers::new(options)),
        GatewayConfig::default(),
    );
    let (server_end, client_end) = tokio::io::duplex(1 << 20);
    let server = AirlockMcp::new(gateway, airlock_config::ToolProfile::Browser);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    Connected {
        client: ().serve(client_end).await.unwrap(),
        _profiles: profiles,
    }
}

async fn call(c: &Connected, tool: &'static str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments are an object");
    };
    c.client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .unwrap()
}

// The refusal's code and words, asserting it is the structured error every failure is.
fn refusal(result: &CallToolResult) -> (String, String) {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = result.content[0].as_text().unwrap().text.clone();
    let structured: &Map<String, Value> = result
        .structured_content
        .as_ref()
        .and_then(Value::as_object)
        .unwrap();
    let code = structured["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(text.starts_with(&code), "{text}");
    (code, text)
}

#[tokio::test]
async fn the_listing_is_the_catalogues() {
    let c = connect().await;
    let tools = c.client.list_all_tools().await.unwrap();
    let listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    // evaluate and uploads are off on a default gateway, so not listed.
    let expected: Vec<&str> = airlock_tools::tools()
        .iter()
        .map(|t| t.name)
        .filter(|n| !["browser_evaluate", "browser_file_upload"].contains(n))
        .collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    let mut want = expected.clone();
    want.sort_unstable();
    assert_eq!(sorted, want);
    for tool in &tools {
        let entry = airlock_tools::find(&tool.name).unwrap();
        assert_eq!(tool.description.as_deref(), Some(entry.description));
        assert_eq!(*tool.input_schema, entry.listed().schema, "{}", tool.name);
        let hints = tool.annotations.as_ref().unwrap();
        assert_eq!(hints.read_only_hint, entry.read_only.then_some(true));
        assert_eq!(
            hints.destructive_hint,
            (!entry.read_only).then_some(entry.destructive),
            "{}",
            tool.name
        );
    }
}

#[tokio::test]
async fn bad_arguments_are_refused_in_the_catalogues_words_before_any_browser_work() {
    let c = connect().await;
    let cases: [(&'static str, Value, &str); 12] = [
        (
            "browser_type",
            json!({"ref": "e1", "text": "hi", "clearFirst": true}),
            "invalid_argument: browser_type does not take `clearFirst`; it takes ",
        ),
        (
            "browser_back",
            json!({"steps": 2}),
            "invalid_argument: browser_back does not take `steps`; it takes no arguments",
        ),
        (
            "browser_click",
            json!({"ref": 5}),
            "invalid_argument: the arguments do not fit browser_click: invalid type",
        ),
        (
            "browser_click",
            json!({}),
            "invalid_argument: give a target",
        ),
        (
            "browser_navigate",
            json!({"url": "https://a.test/", "wait_until": "never"}),
            "invalid_argument: `wait_until` is one of load, domcontentloaded, networkidle",
        ),
        (
            "browser_snapshot",
            json!({"depth": 0}),
            "invalid_argument: `depth` is at least 1",
        ),
        (
            "browser_network_requests",
            json!({"limit": 0}),
            "invalid_argument: `limit` is 1 to 200",
        ),
        (
            "browser_console_messages",
            json!({"level": "loud"}),
            "invalid_argument: `level` is debug, info",
        ),
        (
            "browser_resize",
            json!({"width": 10, "height": 10}),
            "invalid_argument: the viewport is 200–3840",
        ),
        (
            "browser_type",
            json!({"ref": "e1", "text": "x".repeat(100_001)}),
            "invalid_argument: `text` is longer than 100000",
        ),
        (
            "browser_click",
            json!({"role": "button", "name": "x", "timeout_ms": 5}),
            "invalid_argument: `timeout_ms` is 100 to 120000",
        ),
        (
            "browser_handle_dialog",
            json!({"accept": false, "prompt_text": "x"}),
            "invalid_argument: `prompt_text` goes with accept: true",
        ),
    ];
    for (tool, args, says) in cases {
        let result = call(&c, tool, args.clone()).await;
        let (code, text) = refusal(&result);
        assert_eq!(code, "invalid_argument", "{tool} {args}");
        assert!(text.starts_with(says), "{tool} {args}: {text}");
        // The same words as the catalogue gives any other surface.
        let parsed = airlock_tools::find(tool).unwrap().parse(args.as_object());
        let airlock_tools::BadArgument(why) = parsed.unwrap_err();
        assert_eq!(text, format!("invalid_argument: {why}"), "{tool}");
    }
}
