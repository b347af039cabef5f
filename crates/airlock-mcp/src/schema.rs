//! Leaner tool schemas for `tools/list`: every agent pays for this listing in tokens on
//! every conversation, so what schemars adds for machines and no model needs goes.

use serde_json::{Map, Value};

/// Drops `$schema`, turns `["T", "null"]` into `"T"` (an optional parameter may simply
/// be left out), and drops number `format`s, the `minimum: 0` of unsigned integers,
/// and defaults that say nothing (`false`, `[]`, `null`).
pub(crate) fn compact(schema: &Map<String, Value>) -> Map<String, Value> {
    let mut out = schema.clone();
    out.remove("$schema");
    compact_object(&mut out);
    out
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
    if let Some(Value::String(format)) = object.get("format") {
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
            object.remove("format");
            if unsigned && object.get("minimum") == Some(&Value::from(0)) {
                object.remove("minimum");
            }
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
}
