//! Leaner tool schemas for `tools/list`: every agent pays for this listing in tokens on
//! every conversation, so what schemars adds for machines and no model needs goes.

use serde_json::{Map, Value};

/// Drops `$schema`, turns `["T", "null"]` into `"T"` (an optional parameter may simply
/// be left out), and drops number `format`s, the `minimum: 0` of unsigned integers,
/// and defaults that say nothing (`false`, `[]`, `null`).
pub fn compact(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut out = schema.clone();
    out.remove("$schema");
    compact_object(&mut out);
    out
}

/// The parameters that name an element, the same in every tool that takes one.
const TARGET_FIELDS: [&str; 7] = ["ref", "role", "name", "index", "selector", "x", "y"];
/// Documented on `browser_click` too; present wherever the target fields are.
const TARGET_EXTRAS: [&str; 1] = ["timeout_ms"];
/// Target fields `browser_click`'s own description explains well enough.
const SELF_EVIDENT: [&str; 4] = ["selector", "x", "y", "timeout_ms"];

/// Drops the descriptions `browser_click`'s own description makes redundant.
pub fn trim_click(schema: &mut Map<String, Value>) {
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for field in SELF_EVIDENT {
            if let Some(Value::Object(p)) = properties.get_mut(field) {
                p.remove("description");
            }
        }
    }
}

/// Lists only `ref` of the target parameters (the others are documented once, on
/// `browser_click`, and still accepted: the schemas allow more properties) in an
/// object schema that has them all, and in each of its `$defs`, whose own
/// descriptions go too. Nine fields in every tool that takes a target cost ~55
/// tokens a tool in every conversation; refs are what agents use.
/// `keep` lists the fields that stay listed (without their descriptions): a wait's
/// `timeout_ms`, so an agent sees it can shorten the wait; `role` and `name` where
/// agents name fields by their label (typing, forms), so a client that sends only
/// listed properties can too.
/// Returns whether the top level was folded (the tool takes the unlisted target
/// fields as arguments).
pub fn fold_targets(schema: &mut Map<String, Value>, keep: &[&str]) -> bool {
    let folded = fold(schema, keep);
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for def in defs.values_mut().filter_map(Value::as_object_mut) {
            def.remove("description");
            fold(def, keep);
        }
    }
    folded
}

/// Whether `key` is one of the target fields a folded schema takes unlisted.
pub fn is_target_field(key: &str) -> bool {
    TARGET_FIELDS.contains(&key) || TARGET_EXTRAS.contains(&key)
}

fn fold(object: &mut Map<String, Value>, keep: &[&str]) -> bool {
    let Some(Value::Object(properties)) = object.get_mut("properties") else {
        return false;
    };
    if !TARGET_FIELDS.iter().all(|f| properties.contains_key(*f)) {
        return false;
    }
    for field in TARGET_FIELDS.iter().chain(TARGET_EXTRAS.iter()) {
        if *field == "ref" || keep.contains(field) {
            // A kept wait bound says what it bounds; a target field is explained on
            // `browser_click`.
            if let Some(Value::Object(p)) = properties.get_mut(*field)
                && *field != "timeout_ms"
            {
                p.remove("description");
            }
        } else {
            properties.remove(*field);
        }
    }
    true
}

/// Replaces every `{"$ref": "#/$defs/X"}` with X itself and drops `$defs`: OpenAI's
/// strict conversion (the Agents SDK's `ensure_strict_json_schema`) refuses a
/// reference "whose target was not validated", and Airlock's nested types are small
/// and not recursive.
pub fn inline_defs(schema: &mut Map<String, Value>) {
    let Some(Value::Object(defs)) = schema.remove("$defs") else {
        return;
    };
    fn walk(value: &mut Value, defs: &Map<String, Value>) {
        match value {
            Value::Object(object) => {
                let target = object
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                    .and_then(|name| defs.get(name));
                if let Some(Value::Object(def)) = target {
                    object.remove("$ref");
                    for (k, v) in def {
                        object.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
                for v in object.values_mut() {
                    walk(v, defs);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, defs)),
            _ => {}
        }
    }
    for v in schema.values_mut() {
        walk(v, &defs);
    }
}

/// Arguments as a strict-mode model sends them, read as what they mean: such a model
/// must send every listed key, so it sends `null` for one it does not mean (any key,
/// at any depth) and often `""` for an unused target field (`ref`, `role`, `name`,
/// `selector`, and `text` where text names an element) or `0` for an unused
/// `timeout_ms` — each of them "not given".
pub fn not_given(tool: &str, arguments: &mut Map<String, Value>) {
    // `text` is what browser_type types, where "" is a value (it clears the field).
    let text_is_target = tool != "browser_type";
    fn walk(object: &mut Map<String, Value>, text_is_target: bool) {
        object.retain(|key, value| match value {
            Value::Null => false,
            Value::String(s) if s.is_empty() => {
                !(TARGET_FIELDS.contains(&key.as_str())
                    || key == "text_gone"
                    || (text_is_target && key == "text"))
            }
            Value::Number(n) if key == "timeout_ms" => n.as_u64() != Some(0),
            _ => true,
        });
        for value in object.values_mut() {
            match value {
                Value::Object(inner) => walk(inner, text_is_target),
                Value::Array(items) => {
                    for item in items.iter_mut().filter_map(Value::as_object_mut) {
                        walk(item, text_is_target);
                    }
                }
                _ => {}
            }
        }
    }
    walk(arguments, text_is_target);
    // A point of (0, 0) beside another target is the zeros of a model that had to
    // send every key, not a click in the page's corner.
    let zero = |k: &str| arguments.get(k).and_then(Value::as_f64) == Some(0.0);
    let other = ["ref", "role", "selector", "text"]
        .iter()
        .any(|k| arguments.contains_key(*k));
    if zero("x") && zero("y") && other {
        arguments.remove("x");
        arguments.remove("y");
    }
}

fn compact_object(object: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = object.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        match kept.len() {
            0 => {}
            1 => {
                object.insert("type".to_owned(), kept[0].clone());
            }
            _ => {
                object.insert("type".to_owned(), Value::Array(kept));
            }
        }
    }
    if let Some(format) = object
        .get("format")
        .and_then(Value::as_str)
        .map(str::to_owned)
    {
        let unsigned = format.starts_with('u');
        if matches!(
            format.as_str(),
            "uint"
                | "uint8"
                | "uint16"
                | "uint32"
                | "uint64"
                | "int"
                | "int32"
                | "int64"
                | "double"
                | "float"
        ) {
            // The type's own bounds; a bound a parameter means is in its description.
            if unsigned && object.get("minimum") == Some(&Value::from(0)) {
                object.remove("minimum");
            }
            if format == "uint8" && object.get("maximum") == Some(&Value::from(255)) {
                object.remove("maximum");
            }
            object.remove("format");
        }
    }
    if matches!(
        object.get("default"),
        Some(Value::Bool(false)) | Some(Value::Null)
    ) || object
        .get("default")
        .is_some_and(|d| d.as_array().is_some_and(Vec::is_empty))
    {
        object.remove("default");
    }
    for value in object.values_mut() {
        compact_value(value);
    }
}

fn compact_value(value: &mut Value) {
    match value {
        Value::Object(object) => compact_object(object),
        Value::Array(items) => items.iter_mut().for_each(compact_value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn machine_detail_goes_and_meaning_stays() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "ref": { "description": "A ref.", "type": ["string", "null"] },
                "index": { "type": ["integer", "null"], "format": "uint", "minimum": 0 },
                "double": { "type": "boolean", "default": false },
                "level": { "type": "integer", "minimum": 1 },
                "kinds": { "type": ["string", "integer", "null"] }
            },
            "required": ["level"]
        });
        let out = Value::Object(compact(schema.as_object().unwrap()));
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "ref": { "description": "A ref.", "type": "string" },
                    "index": { "type": "integer" },
                    "double": { "type": "boolean" },
                    "level": { "type": "integer", "minimum": 1 },
                    "kinds": { "type": ["string", "integer"] }
                },
                "required": ["level"]
            })
        );
    }

    #[test]
    fn targets_fold_to_ref_only_where_the_whole_target_is() {
        let documented = |names: &[&str]| -> Value {
            Value::Object(
                names
                    .iter()
                    .map(|n| {
                        (
                            (*n).to_owned(),
                            json!({ "description": "d", "type": "string" }),
                        )
                    })
                    .collect(),
            )
        };
        let mut with_target = json!({
            "properties": documented(&["ref", "role", "name", "index", "selector", "x", "y", "timeout_ms", "text"]),
            "$defs": { "Field": {
                "description": "a field",
                "properties": documented(&["ref", "role", "name", "index", "selector", "x", "y", "value"]),
            } },
        });
        assert!(fold_targets(with_target.as_object_mut().unwrap(), &[]));
        let names = |v: &Value| -> Vec<String> {
            let mut n: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            n.sort();
            n
        };
        assert_eq!(names(&with_target["properties"]), ["ref", "text"]);
        assert_eq!(
            with_target["properties"]["ref"],
            json!({ "type": "string" })
        );
        assert_eq!(with_target["properties"]["text"]["description"], "d");
        let field = &with_target["$defs"]["Field"];
        assert_eq!(names(&field["properties"]), ["ref", "value"]);
        assert_eq!(field["properties"]["value"]["description"], "d");
        assert!(field.get("description").is_none());
        // `browser_tabs` has an `index` of its own meaning, and no target: kept.
        let mut tabs = json!({ "properties": documented(&["action", "index"]) });
        let before = tabs.clone();
        assert!(!fold_targets(tabs.as_object_mut().unwrap(), &[]));
        assert_eq!(tabs, before);
    }
}
