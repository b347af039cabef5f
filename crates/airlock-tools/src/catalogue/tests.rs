//! The catalogue as a surface sees it: every tool once, arguments parsed into calls,
//! and refusals in the words every surface shows.

use airlock_gateway::{Interaction, Navigation};
use serde_json::json;

use super::*;

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn refused(tool: &str, value: Value) -> String {
    match find(tool).unwrap().parse(Some(&args(value))) {
        Err(BadArgument(why)) => why,
        Ok(call) => panic!("{tool} took it: {call:?}"),
    }
}

#[test]
fn every_tool_is_listed_once_under_its_own_name() {
    let mut names: Vec<&str> = tools().iter().map(|t| t.name).collect();
    assert_eq!(names.len(), 27);
    assert!(names.iter().all(|n| n.starts_with("browser_")));
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 27, "a name is listed twice");
    for tool in tools() {
        let listed = tool.listed();
        assert_eq!(listed.schema["type"], "object", "{}", tool.name);
        assert!(!listed.schema.contains_key("$schema"), "{}", tool.name);
        assert!(!tool.description.is_empty());
        // A read-only tool is never called destructive.
        assert!(!(tool.read_only && tool.destructive), "{}", tool.name);
    }
    assert!(find("browser_launch_missiles").is_none());
}

#[test]
fn arguments_parse_into_the_gateways_calls() {
    let navigate = find("browser_navigate").unwrap();
    let call = navigate
        .parse(Some(&args(json!({"url": "https://a.test/"}))))
        .unwrap();
    assert!(
        matches!(call, ToolCall::Navigate(Navigation::To { ref url, .. }) if url == "https://a.test/")
    );
    assert!(matches!(
        find("browser_back").unwrap().parse(None),
        Ok(ToolCall::Navigate(Navigation::Back))
    ));
    // A folded tool takes the target fields it does not list.
    let hover = find("browser_hover").unwrap();
    assert!(hover.listed().folded);
    let call = hover
        .parse(Some(&args(json!({"role": "button", "name": "Go"}))))
        .unwrap();
    assert!(matches!(
        call,
        ToolCall::Interact(Interaction::Hover { .. })
    ));
    // Typing replaces the field's value, as Playwright's `browser_type` does,
    // unless asked to append.
    let typing = |value: Value| find("browser_type").unwrap().parse(Some(&args(value)));
    assert!(matches!(
        typing(json!({"ref": "e1", "text": "Caroline"})),
        Ok(ToolCall::Interact(Interaction::Type {
            clear_first: true,
            ..
        }))
    ));
    assert!(matches!(
        typing(json!({"ref": "e1", "text": "line", "append": true})),
        Ok(ToolCall::Interact(Interaction::Type {
            clear_first: false,
            ..
        }))
    ));
}

/// What a strict-mode model sends — every listed key, `null`, `""` or zeros for the
/// ones it does not mean — is read as not given.
#[test]
fn a_strict_mode_models_nulls_and_blanks_are_not_given() {
    let parse = |tool: &str, value: Value| find(tool).unwrap().parse(Some(&args(value)));
    let click = parse(
        "browser_click",
        json!({"ref": "e1", "role": "", "name": null, "index": null, "selector": "",
               "text": "", "x": 0, "y": 0, "timeout_ms": 0, "button": null,
               "double": null, "modifiers": null}),
    );
    assert!(
        matches!(click, Ok(ToolCall::Interact(Interaction::Click { .. }))),
        "{click:?}"
    );
    let typing = parse(
        "browser_type",
        json!({"ref": "e1", "role": null, "name": null, "text": "", "append": null, "submit": null}),
    );
    // "" is what browser_type types (it clears the field), not "not given".
    assert!(
        matches!(typing, Ok(ToolCall::Interact(Interaction::Type { ref text, clear_first: true, submit: false, .. })) if text.is_empty()),
        "{typing:?}"
    );
    let navigate = parse(
        "browser_navigate",
        json!({"url": "https://a.test/", "wait_until": null, "snapshot": null}),
    );
    assert!(navigate.is_ok(), "{navigate:?}");
    let form = parse(
        "browser_fill_form",
        json!({"fields": [{"ref": "e2", "role": null, "name": "", "value": "x"}]}),
    );
    assert!(form.is_ok(), "{form:?}");
    // A real point is still a point.
    let point = parse("browser_click", json!({"x": 0, "y": 0}));
    assert!(point.is_ok(), "{point:?}");
    // A required key sent as null is missing, and said so.
    let why = refused("browser_navigate", json!({"url": null}));
    assert!(why.contains("url"), "{why}");
    // No listing refers elsewhere: strict converters take what they can walk.
    for tool in tools() {
        let text = serde_json::to_string(&tool.listed().schema).unwrap();
        assert!(
            !text.contains("$ref") && !text.contains("$defs"),
            "{}: {text}",
            tool.name
        );
    }
}

#[test]
fn refusals_say_what_the_tool_takes_and_what_did_not_fit() {
    assert_eq!(
        refused("browser_back", json!({"x": 1})),
        "browser_back does not take `x`; it takes no arguments"
    );
    let why = refused(
        "browser_type",
        json!({"ref": "e1", "text": "hi", "clearFirst": true}),
    );
    assert!(
        why.starts_with("browser_type does not take `clearFirst`; it takes ")
            && why.ends_with(" and a target as browser_click"),
        "{why}"
    );
    let why = refused("browser_click", json!({"ref": 5}));
    assert!(
        why.starts_with("the arguments do not fit browser_click: invalid type"),
        "{why}"
    );
    // The parameters' own checks, unchanged.
    let why = refused("browser_click", json!({}));
    assert!(why.starts_with("give a target"), "{why}");
    let why = refused("browser_click", json!({"ref": "e1", "timeout_ms": 5}));
    assert_eq!(why, "`timeout_ms` is 100 to 120000; got 5");
}
