//! The redactor against each encoding a page or protocol may give a value.

#![allow(clippy::unwrap_used)]

use base64::Engine as _;

use super::*;

const SECRET: &str = "Tr0ub4dor&3 <x>\"q'/é+%";

fn redactor() -> Redactor {
    Redactor::new([("app", SECRET)]).unwrap()
}

fn assert_redacted(label: &str, text: &str, leaked: &str) {
    let out = redactor().redact(text).unwrap();
    assert!(
        !out.contains(leaked),
        "{label}: `{leaked}` survived in {out}"
    );
    assert!(
        out.contains("[REDACTED:app]"),
        "{label}: no marker in {out}"
    );
}

#[test]
fn raw_and_url_encoded_forms_are_redacted() {
    assert_redacted("raw", &format!("value={SECRET};"), SECRET);
    let form: String = url::form_urlencoded::byte_serialize(SECRET.as_bytes()).collect();
    assert!(form.contains('+'), "{form}");
    assert_redacted("form", &format!("/login?pw={form}&next=/"), &form);
    let strict_upper: String = SECRET
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    assert_redacted(
        "percent upper",
        &format!("?q={strict_upper}"),
        &strict_upper,
    );
    let lower = strict_upper.to_lowercase();
    // Lower-casing touched the letters too; build lower-case escapes properly.
    let strict_lower: String = SECRET
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02x}")
            }
        })
        .collect();
    assert_ne!(lower, strict_lower);
    assert_redacted(
        "percent lower",
        &format!("?q={strict_lower}"),
        &strict_lower,
    );
}

#[test]
fn base64_at_every_alignment_is_redacted() {
    for engine in [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::URL_SAFE,
    ] {
        for prefix in ["", "u", "us", "user:", "alice:", "bob:"] {
            for suffix in ["", "!", "!!"] {
                let encoded = engine.encode(format!("{prefix}{SECRET}{suffix}"));
                let out = redactor()
                    .redact(&format!("Authorization: Basic {encoded}"))
                    .unwrap();
                assert!(out.contains("[REDACTED:app]"), "{prefix:?}: {out}");
                assert!(!out.contains(&encoded), "{prefix:?}: {out}");
                // What is left of the encoding holds under 6 bits of the value at each
                // edge: at most 2 chars before and after the marker come from it.
                let left = out.split("[REDACTED:app]").map(|p| p.len()).sum::<usize>();
                assert!(
                    left <= "Authorization: Basic ".len() + prefix.len() * 2 + 8,
                    "{out}"
                );
            }
        }
    }
}

#[test]
fn json_and_html_escaped_forms_are_redacted() {
    let json = serde_json::to_string(&serde_json::json!({ "password": SECRET })).unwrap();
    assert_redacted("json", &json, &serde_json::to_string(SECRET).unwrap());
    let all_u: String = SECRET
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_string()
            } else {
                format!("\\u{:04x}", c as u32)
            }
        })
        .collect();
    assert_redacted("json \\u", &format!("{{\"p\":\"{all_u}\"}}"), &all_u);
    let html = SECRET
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;");
    assert_redacted("html named", &format!("<p>{html}</p>"), &html);
    let numeric: String = SECRET
        .chars()
        .map(|c| {
            if "&<>\"'".contains(c) {
                format!("&#{};", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect();
    assert_redacted(
        "html numeric",
        &format!("<input value=\"{numeric}\">"),
        &numeric,
    );
    let hex_all: String = SECRET
        .chars()
        .map(|c| format!("&#x{:x};", c as u32))
        .collect();
    assert_redacted("html hex", &hex_all, &hex_all);
}

#[test]
fn regex_metacharacters_are_plain_text() {
    let meta = r"^.*+?()[]{}|\$";
    let r = Redactor::new([("meta", meta)]).unwrap();
    assert_eq!(
        r.redact(&format!("a{meta}b and .* alone")).unwrap(),
        "a[REDACTED:meta]b and .* alone"
    );
}

#[test]
fn several_secrets_each_get_their_name_and_ordinary_text_survives() {
    let r = Redactor::new([
        ("one", "first-secret"),
        ("two", "second-secret"),
        ("empty", ""),
    ])
    .unwrap();
    let out = r.redact("x first-secret y second-secret z").unwrap();
    assert_eq!(out, "x [REDACTED:one] y [REDACTED:two] z");
    assert_eq!(r.redact("nothing here é").unwrap(), "nothing here é");
    assert!(Redactor::new([]).unwrap().is_empty());
    assert!(!format!("{r:?}").contains("first-secret"));
}

#[test]
fn a_value_cut_short_by_a_length_cap_leaves_no_prefix() {
    for n in 4..SECRET.chars().count() {
        let prefix: String = SECRET.chars().take(n).collect();
        assert_redacted(
            "cut",
            &format!("- paragraph: {prefix}… [+9 chars]"),
            &format!("{prefix}…"),
        );
    }
    let quoted = SECRET.replace('"', "\\\"");
    assert_redacted("quoted", &format!("page: \"{quoted}\""), &quoted);
}
