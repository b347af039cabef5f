//! A call as a person reads it: "Click button “Delete account”", "Open
//! https://bank.example/transfer", from the arguments the audit log and the approval
//! hold (already redacted) and the element the call resolved to. An approver decides
//! on this line first; the JSON stays below it for the exact record.
//!
//! Every string here came from an agent or a page: the caller escapes it (maud does)
//! and shows invisible controls (`display_safe`); hosts are shown canonical first.

use serde_json::Value;

/// What an approval would let happen, in one line: for requests an effect rule
/// held, what they do ("Delete user “carol” (POST /admin/auth/user/7/delete/) on
/// 127.0.0.1:8900", the first line of the detail the effects stage writes, whose
/// second line says what caused them); else what the call does, to what.
pub(super) fn headline(
    a: &airlock_gateway::ApprovalRecord,
    args: &Value,
    target: &Value,
) -> String {
    let mut lines = a.detail.as_deref().unwrap_or_default().lines();
    match (lines.next(), lines.next()) {
        (Some(first), Some(second)) if second.starts_with("caused by ") => first.to_owned(),
        _ => action(&a.tool, args, target),
    }
}

/// What the call does, to what: one line.
pub(super) fn action(tool: &str, args: &Value, target: &Value) -> String {
    let what = || element(target, &args["target"]);
    let quoted = |v: &Value| quote(v.as_str().unwrap_or(""), 60);
    match tool {
        "browser_navigate" => format!(
            "Open {}",
            airlock_policy::display_url(args["url"].as_str().unwrap_or("a page"))
        ),
        "browser_click" if args["double"] == Value::Bool(true) => {
            format!("Double-click {}", what())
        }
        "browser_click" => format!("Click {}", what()),
        "browser_type" => {
            let mut line = format!("Type {} into {}", quoted(&args["text"]), what());
            if args["submit"] == Value::Bool(true) {
                line.push_str(", then press Enter");
            }
            line
        }
        "browser_fill_form" => {
            let fields = args["fields"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let named: Vec<String> = fields
                .iter()
                .take(4)
                .map(|f| element(&Value::Null, &f["target"]))
                .collect();
            let more = fields.len().saturating_sub(named.len());
            let mut line = format!("Fill {} field(s): {}", fields.len(), named.join(", "));
            if more > 0 {
                line.push_str(&format!(" and {more} more"));
            }
            line
        }
        "browser_select_option" => {
            let values: Vec<String> = args["values"]
                .as_array()
                .map(|v| v.iter().map(&quoted).collect())
                .unwrap_or_default();
            format!("Select {} in {}", values.join(", "), what())
        }
        "browser_check" if args["checked"] == Value::Bool(false) => format!("Uncheck {}", what()),
        "browser_check" => format!("Check {}", what()),
        "browser_hover" => format!("Hover over {}", what()),
        "browser_scroll" if !args["target"].is_null() => {
            format!("Scroll {} into view", what())
        }
        "browser_drag" => format!(
            "Drag {} onto {}",
            element(&Value::Null, &args["from"]),
            element(&Value::Null, &args["to"])
        ),
        "browser_press_key" => format!("Press {}", quoted(&args["key"])),
        "browser_file_upload" => {
            let files: Vec<String> = args["files"]
                .as_array()
                .map(|v| v.iter().map(&quoted).collect())
                .unwrap_or_default();
            format!("Upload {} to {}", files.join(", "), what())
        }
        "browser_handle_dialog" if args["accept"] == Value::Bool(false) => {
            "Dismiss the dialog".to_owned()
        }
        "browser_handle_dialog" => "Accept the dialog".to_owned(),
        "browser_evaluate" => "Run the agent's JavaScript in the page".to_owned(),
        "browser_tabs" if !args["new"].is_null() => match args["new"].as_str() {
            Some(url) => format!("Open a tab at {}", airlock_policy::display_url(url)),
            None => "Open a tab".to_owned(),
        },
        "browser_tabs" if !args["close"].is_null() => format!("Close tab {}", args["close"]),
        "browser_tabs" if !args["select"].is_null() => format!("Switch to tab {}", args["select"]),
        _ => {
            let name = tool
                .strip_prefix("browser_")
                .unwrap_or(tool)
                .replace('_', " ");
            let mut chars = name.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect(),
                None => String::new(),
            }
        }
    }
}

/// The site a call acts on: the host of the element's frame, else of the page.
pub(super) fn site(target: &Value, page_url: Option<&str>) -> Option<String> {
    let host_of = |url: &str| {
        let parsed = url::Url::parse(url).ok()?;
        let host = parsed.host_str()?;
        Some(match parsed.port() {
            Some(port) => format!("{}:{port}", airlock_policy::display_host(host)),
            None => airlock_policy::display_host(host),
        })
    };
    target["frame_url"]
        .as_str()
        .and_then(host_of)
        .or_else(|| page_url.and_then(host_of))
}

// The element: as it resolved (role and accessible name), else as the agent named it.
fn element(resolved: &Value, asked: &Value) -> String {
    if let Some(role) = resolved["role"].as_str().filter(|r| !r.is_empty()) {
        let mut line = match resolved["name"].as_str().filter(|n| !n.is_empty()) {
            Some(name) => format!("{role} {}", quote(name, 80)),
            None => format!("an unnamed {role}"),
        };
        if resolved["password"] == Value::Bool(true) {
            line.push_str(" (a password field)");
        }
        return line;
    }
    if let Some(role) = asked["role"].as_str() {
        return match asked["name"].as_str() {
            Some(name) => format!("{role} {}", quote(name, 80)),
            None => role.to_owned(),
        };
    }
    if let Some(r) = asked["ref"].as_str() {
        return format!("element {r}");
    }
    if let Some(selector) = asked["selector"].as_str() {
        return format!("the element at {}", quote(selector, 80));
    }
    if let (Some(x), Some(y)) = (asked["x"].as_f64(), asked["y"].as_f64()) {
        return format!("the point ({x}, {y})");
    }
    "the page".to_owned()
}

fn quote(text: &str, most: usize) -> String {
    format!("“{}”", airlock_core::text::ellipsize(text, most))
}

/// The arguments as `name: value` lines, for a labelled block (the JSON's first
/// level; nested values compact).
pub(super) fn fields(args: &Value) -> Vec<(String, String)> {
    let Some(map) = args.as_object() else {
        return Vec::new();
    };
    map.iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let shown = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), airlock_core::text::ellipsize(&shown, 300))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_click_reads_as_what_it_clicks_and_where() {
        let target = json!({"role": "button", "name": "Delete account",
            "frame_url": "http://127.0.0.1:4000/accounts"});
        assert_eq!(
            action(
                "browser_click",
                &json!({"target": {"ref": "t1e3"}, "double": false}),
                &target
            ),
            "Click button “Delete account”"
        );
        assert_eq!(site(&target, None).as_deref(), Some("127.0.0.1:4000"));
    }

    #[test]
    fn without_a_resolved_element_the_agent_s_words_are_used() {
        assert_eq!(
            action(
                "browser_type",
                &json!({"target": {"ref": "e2"}, "text": "{{secret:bank.password}}", "submit": true}),
                &Value::Null
            ),
            "Type “{{secret:bank.password}}” into element e2, then press Enter"
        );
        assert_eq!(
            action(
                "browser_navigate",
                &json!({"url": "https://xn--bcher-kva.example/"}),
                &Value::Null
            ),
            "Open https://xn--bcher-kva.example/ (host in Unicode: bücher.example)"
        );
        assert_eq!(action("browser_reload", &json!({}), &Value::Null), "Reload");
    }

    #[test]
    fn a_homograph_site_is_shown_canonical_first() {
        let target = json!({"frame_url": "https://xn--pple-43d.com/login"});
        assert_eq!(
            site(&target, None).as_deref(),
            Some("xn--pple-43d.com (in Unicode: аpple.com)")
        );
    }
}
