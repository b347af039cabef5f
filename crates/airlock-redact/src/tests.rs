//! The redactor against each encoding a page or protocol may give a value. Expected
//! forms are built here with other code (the `url`, `base64` and `serde_json` crates,
//! or by hand), never with the redactor's own pattern builder.

#![allow(clippy::unwrap_used)]

use base64::Engine as _;

use super::*;

const SECRET: &str = "Tr0ub4dor&3 <x>\"q'/é+%";

fn redactor() -> Redactor {
    Redactor::new([("app", SECRET)]).unwrap()
}

fn assert_redacted(label: &str, text: &str, leaked: &str) {
    let out = redactor().redact(text).into_owned();
    assert!(
        !out.contains(leaked),
        "{label}: `{leaked}` survived in {out}"
    );
    assert!(
        out.contains("[REDACTED:app]"),
        "{label}: no marker in {out}"
    );
}

fn percent_bytes(bytes: &[u8], keep: impl Fn(u8) -> bool, upper: bool) -> String {
    bytes
        .iter()
        .map(|&b| {
            if keep(b) {
                (b as char).to_string()
            } else if upper {
                format!("%{b:02X}")
            } else {
                format!("%{b:02x}")
            }
        })
        .collect()
}

fn latin1(value: &str) -> Vec<u8> {
    value.chars().map(|c| c as u8).collect()
}

#[test]
fn raw_and_url_encoded_forms_are_redacted() {
    assert_redacted("raw", &format!("value={SECRET};"), SECRET);
    let form: String = url::form_urlencoded::byte_serialize(SECRET.as_bytes()).collect();
    assert!(form.contains('+'), "{form}");
    assert_redacted("form", &format!("/login?pw={form}&next=/"), &form);
    for upper in [true, false] {
        let strict = percent_bytes(SECRET.as_bytes(), |b| b.is_ascii_alphanumeric(), upper);
        assert_redacted("percent", &format!("?q={strict}"), &strict);
        // Twice: what a URL put inside another URL's query looks like.
        let twice = percent_bytes(strict.as_bytes(), |b| b.is_ascii_alphanumeric(), upper);
        assert!(twice.contains("%25"), "{twice}");
        assert_redacted("double", &format!("next={twice}"), &twice);
    }
}

#[test]
fn javascript_escape_forms_are_redacted() {
    // escape(): Latin-1 characters as %XX, others as %uXXXX.
    let escaped = percent_bytes(
        &latin1(SECRET),
        |b| b.is_ascii_alphanumeric() || b"@*_+-./".contains(&b),
        true,
    );
    assert!(escaped.contains("%E9"), "{escaped}");
    assert_redacted("escape latin-1", &format!("x={escaped}"), &escaped);
    let wide = "pässwörd→ok";
    let r = Redactor::new([("w", wide)]).unwrap();
    let escaped: String = wide
        .chars()
        .map(|c| match c as u32 {
            n if n < 128 => c.to_string(),
            n if n < 256 => format!("%{n:02X}"),
            n => format!("%u{n:04X}"),
        })
        .collect();
    assert!(escaped.contains("%u2192"), "{escaped}");
    assert_eq!(r.redact(&format!("[{escaped}]")), "[[REDACTED:w]]");
}

#[test]
fn base64_of_utf8_latin1_and_utf16_at_every_alignment_is_redacted() {
    let utf16le: Vec<u8> = SECRET.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let utf16be: Vec<u8> = SECRET.encode_utf16().flat_map(u16::to_be_bytes).collect();
    for (label, bytes, unit) in [
        ("utf-8", SECRET.as_bytes().to_vec(), 1),
        ("latin-1", latin1(SECRET), 1),
        ("utf-16le", utf16le, 2),
        ("utf-16be", utf16be, 2),
    ] {
        for engine in [
            &base64::engine::general_purpose::STANDARD,
            &base64::engine::general_purpose::URL_SAFE,
        ] {
            for prefix in ["", "u", "us", "user:", "alice:", "bob:"] {
                let mut data: Vec<u8> = prefix.bytes().flat_map(|b| vec![b; unit]).collect();
                data.extend_from_slice(&bytes);
                data.push(b'!');
                let encoded = engine.encode(&data);
                let out = redactor()
                    .redact(&format!("Authorization: Basic {encoded}"))
                    .into_owned();
                assert!(out.contains("[REDACTED:app]"), "{label} {prefix:?}: {out}");
                // What is left of the encoding holds under 6 bits of the value at each
                // edge: at most 2 chars before and after the marker come from it.
                let left = out.split("[REDACTED:app]").map(str::len).sum::<usize>();
                assert!(
                    left <= "Authorization: Basic ".len()
                        + (prefix.len() * unit * 4).div_ceil(3)
                        + 8,
                    "{label} {prefix:?}: {out}"
                );
            }
        }
    }
}

#[test]
fn hex_forms_are_redacted() {
    let hex: String = SECRET.bytes().map(|b| format!("{b:02x}")).collect();
    assert_redacted("hex", &format!("0x{hex}"), &hex);
    assert_redacted("HEX", &hex.to_uppercase(), &hex.to_uppercase());
    let latin: String = latin1(SECRET).iter().map(|b| format!("{b:02x}")).collect();
    assert_redacted("latin-1 hex", &latin, &latin);
    let backslash_x: String = latin1(SECRET)
        .iter()
        .map(|b| format!("\\x{b:02x}"))
        .collect();
    assert_redacted("\\x", &format!("'{backslash_x}'"), &backslash_x);
}

#[test]
fn json_forms_are_redacted() {
    let json = serde_json::to_string(&serde_json::json!({ "password": SECRET })).unwrap();
    assert_redacted("json", &json, &serde_json::to_string(SECRET).unwrap());
    for upper in [false, true] {
        let all_u: String = SECRET
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_string()
                } else if upper {
                    format!("\\u{:04X}", c as u32)
                } else {
                    format!("\\u{:04x}", c as u32)
                }
            })
            .collect();
        assert_redacted("json \\u", &format!("{{\"p\":\"{all_u}\"}}"), &all_u);
    }
    let slash = serde_json::to_string(SECRET).unwrap().replace('/', "\\/");
    assert_redacted("json \\/", &slash, &slash);
    // Astral characters as surrogate pairs.
    let emoji = "key😀ring-42";
    let r = Redactor::new([("e", emoji)]).unwrap();
    assert_eq!(r.redact("\"key\\ud83d\\ude00ring-42\""), "\"[REDACTED:e]\"");
    // A JSON string quoted again (a log line holding JSON).
    let again = serde_json::to_string(&json).unwrap();
    assert_redacted("json twice", &again, "Tr0ub4dor");
}

#[test]
fn html_forms_are_redacted_with_and_without_semicolons() {
    let named = SECRET
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
        .replace('é', "&eacute;");
    assert_redacted("named", &format!("<p>{named}</p>"), &named);
    for (hex, semi) in [(false, true), (true, true), (false, false), (true, false)] {
        let every: String = SECRET
            .chars()
            .map(|c| match (hex, semi) {
                (true, true) => format!("&#x{:x};", c as u32),
                (false, true) => format!("&#{};", c as u32),
                (true, false) => format!("&#x{:X}", c as u32),
                (false, false) => format!("&#{}", c as u32),
            })
            .collect();
        assert_redacted("numeric", &format!("title=\"{every}\" x"), &every);
    }
    // Entities inside a name Airlock quotes: the quoting must not hide them.
    let quoted = named.replace('\\', "\\\\").replace('"', "\\\"");
    assert_redacted("quoted", &format!("button \"{quoted}\""), &quoted);
}

#[test]
fn airlock_quoting_and_partly_unescaped_urls_are_redacted() {
    let quoted = SECRET.replace('\\', "\\\\").replace('"', "\\\"");
    assert_redacted("quoted", &format!("page: \"{quoted}\""), &quoted);
    let backslashed = "C:\\Users\\x\\pa\"ss";
    let r = Redactor::new([("b", backslashed)]).unwrap();
    let shown = backslashed.replace('\\', "\\\\").replace('"', "\\\"");
    assert_eq!(r.redact(&format!("\"{shown}\"")), "\"[REDACTED:b]\"");
    // A URL shown with some escapes decoded and others not, as Chromium titles a page.
    let partly = "Tr0ub4dor&3%20<x>%22q'/%C3%A9+%25";
    assert_redacted("partly", &format!("127.0.0.1:8/r?q={partly}"), partly);
    // Whitespace as a page's layout collapses it.
    let spaced = "two  spaces\there";
    let r = Redactor::new([("s", spaced)]).unwrap();
    assert_eq!(r.redact("a two spaces here b"), "a [REDACTED:s] b");
}

#[test]
fn only_whole_values_are_redacted_so_prefixes_tell_nothing() {
    // An agent typing guesses into a field must not learn a prefix from which guess
    // comes back redacted.
    let r = redactor();
    for n in 1..SECRET.chars().count() {
        let prefix: String = SECRET.chars().take(n).collect();
        for shown in [prefix.clone(), format!("{prefix}…")] {
            assert_eq!(r.redact(&shown), shown.as_str(), "prefix {n}");
        }
    }
    assert_eq!(r.redact(SECRET), "[REDACTED:app]");
}

#[test]
fn regex_metacharacters_are_plain_text() {
    let meta = r"^.*+?()[]{}|\$";
    let r = Redactor::new([("meta", meta)]).unwrap();
    assert_eq!(
        r.redact(&format!("a{meta}b and .* alone")),
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
    let out = r.redact("x first-secret y second-secret z");
    assert_eq!(out, "x [REDACTED:one] y [REDACTED:two] z");
    let ordinary = "nothing here é, 100% &amp; \\n C:\\dir  spaced %zz &#xZZ;";
    assert_eq!(r.redact(ordinary), ordinary);
    assert!(matches!(r.redact("plain"), Cow::Borrowed(_)));
    assert!(Redactor::new([]).unwrap().is_empty());
    assert!(!format!("{r:?}").contains("first-secret"));
    assert_eq!(
        r.secrets_in("a%20second-secret then first%2Dsecret")
            .unwrap(),
        vec!["two", "one"]
    );
    assert!(r.secrets_in("nothing").unwrap().is_empty());
}

#[test]
fn an_encoded_value_next_to_other_escapes_is_cut_out_exactly() {
    let r = Redactor::new([("k", "key-1234")]).unwrap();
    assert_eq!(
        r.redact("a=%41&b=key%2D1234&c=%42"),
        "a=%41&b=[REDACTED:k]&c=%42"
    );
    assert_eq!(r.redact("é key-1234 é"), "é [REDACTED:k] é");
}

#[test]
fn reach_bounds_every_form() {
    let r = redactor();
    let every: String = SECRET
        .chars()
        .map(|c| format!("&#x{:x};", c as u32))
        .collect();
    let double = percent_bytes(
        percent_bytes(SECRET.as_bytes(), |_| false, true).as_bytes(),
        |_| false,
        true,
    );
    assert!(every.len() <= Redact::reach(&r), "{}", every.len());
    assert!(double.len() <= Redact::reach(&r), "{}", double.len());
}

// What reads as the value on a screen is the value: one character per line, the
// characters interleaved with ones nobody sees, reversed for a right-to-left override
// to show it the right way round, and any of those written as HTML references.
#[test]
fn a_value_that_reads_as_itself_is_redacted_whatever_unseen_characters_it_carries() {
    let chars: Vec<char> = SECRET.chars().collect();
    let join = |sep: &str| {
        chars
            .iter()
            .map(char::to_string)
            .collect::<Vec<_>>()
            .join(sep)
    };
    let reversed: String = chars.iter().rev().collect();
    let forms = [
        ("one per line", join("\n")),
        ("indented lines", join("\n    ")),
        ("zero-width spaces", join("\u{200B}")),
        ("joiners", join("\u{200D}\u{2060}")),
        ("soft hyphens", join("\u{00AD}")),
        ("bidi marks", join("\u{200E}")),
        ("byte-order marks", join("\u{FEFF}")),
        ("variation selectors", join("\u{FE0F}")),
        ("tags", join("\u{E0041}")),
        ("entities", join("&#8203;")),
        ("override", format!("\u{202E}{reversed}\u{202C}")),
        ("reversed", reversed.clone()),
    ];
    for (label, form) in forms {
        let text = format!("before {form} after");
        let out = redactor().redact(&text).into_owned();
        assert_eq!(out, "before [REDACTED:app] after", "{label}");
    }
    // Ordinary text around such characters survives, and a prefix read the same way
    // is no value (no guessing oracle).
    let r = redactor();
    let plain = "a\u{200B}b c\u{00AD}d";
    assert_eq!(r.redact(plain), plain);
    for n in 1..chars.len() {
        let prefix = chars[..n]
            .iter()
            .map(char::to_string)
            .collect::<Vec<_>>()
            .join("\u{200B}");
        assert_eq!(r.redact(&prefix), prefix.as_str(), "prefix {n}");
    }
}
