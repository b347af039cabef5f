//! The one redactor every output passes: each active secret value in the forms a page
//! or a protocol might show it, matched literally (Aho-Corasick; no pattern is ever
//! built from secret text, so metacharacters mean nothing), replaced with
//! `[REDACTED:NAME]`.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use base64::Engine as _;
use zeroize::Zeroizing;

/// Shortest prefix of a value, cut with `…`, that is still redacted.
const MIN_CUT_PREFIX: usize = 4;

/// The redactor could not run; the output must be withheld, not sent raw.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the output was withheld: the redactor failed ({0})")]
pub struct RedactError(String);

/// Redacts the values of a set of secrets. Debug shows only the names.
#[derive(Clone, Default)]
pub struct Redactor {
    // None when there is nothing to redact.
    matcher: Option<AhoCorasick>,
    // Secret name of each pattern, by pattern id.
    names: Vec<String>,
    // The secret names, for Debug.
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Redactor({} patterns for {:?})",
            self.names.len(),
            self.secrets
        )
    }
}

impl Redactor {
    /// A redactor for `(secret name, value)` pairs. Empty values are skipped.
    pub fn new<'a>(
        values: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Redactor, RedactError> {
        let mut patterns: Vec<Zeroizing<String>> = Vec::new();
        let mut names = Vec::new();
        let mut secrets = Vec::new();
        for (name, value) in values {
            if value.is_empty() {
                continue;
            }
            if !secrets.iter().any(|s| s == name) {
                secrets.push(name.to_owned());
            }
            for form in forms(value) {
                if !form.is_empty() && !patterns.iter().any(|p| **p == *form) {
                    patterns.push(form);
                    names.push(name.to_owned());
                }
            }
        }
        if patterns.is_empty() {
            return Ok(Redactor::default());
        }
        let matcher = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostLongest)
            .build(patterns.iter().map(|p| p.as_bytes()))
            .map_err(|e| RedactError(e.to_string()))?;
        Ok(Redactor {
            matcher: Some(matcher),
            names,
            secrets,
        })
    }

    /// Whether there is anything to redact.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// `text` with every form of every value replaced by `[REDACTED:NAME]`.
    pub fn redact(&self, text: &str) -> Result<String, RedactError> {
        let Some(matcher) = &self.matcher else {
            return Ok(text.to_owned());
        };
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for found in matcher
            .try_find_iter(text)
            .map_err(|e| RedactError(e.to_string()))?
        {
            // Patterns are whole UTF-8 strings, but a match of an ASCII-only form can
            // start inside nothing else; check anyway rather than slice wrongly.
            let (start, end) = (found.start(), found.end());
            if !text.is_char_boundary(start) || !text.is_char_boundary(end) {
                return Err(RedactError("a match split a character".to_owned()));
            }
            out.push_str(&text[last..start]);
            out.push_str("[REDACTED:");
            out.push_str(&self.names[found.pattern().as_usize()]);
            out.push(']');
            last = end;
        }
        out.push_str(&text[last..]);
        Ok(out)
    }
}

/// Every form of `value` to match.
fn forms(value: &str) -> Vec<Zeroizing<String>> {
    let mut out: Vec<Zeroizing<String>> = vec![Zeroizing::new(value.to_owned())];
    // URL-encoded: strict (only unreserved kept), encodeURIComponent, and
    // form-encoding (space as `+`), each with upper- and lower-case escapes.
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || b"-._~".contains(&b);
    let component = |b: u8| unreserved(b) || b"!'()*".contains(&b);
    let form = |b: u8| b.is_ascii_alphanumeric() || b"*-._".contains(&b);
    for (keep, plus) in [
        (&unreserved as &dyn Fn(u8) -> bool, false),
        (&component, false),
        (&form, true),
        (&unreserved, true),
    ] {
        for upper in [true, false] {
            out.push(percent(value, keep, plus, upper));
        }
    }
    // Base64, standard and URL-safe, at each of the three byte alignments the value
    // can have inside a longer encoded string (`user:secret` shifts it).
    let bytes = value.as_bytes();
    for engine in [
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        for shift in 0..3usize {
            let mut buf = Zeroizing::new(vec![0u8; shift]);
            buf.extend_from_slice(bytes);
            let encoded = Zeroizing::new(engine.encode(buf.as_slice()));
            // Characters whose 6 bits lie wholly inside the value.
            let first = (8 * shift).div_ceil(6);
            let last = (8 * (shift + bytes.len())) / 6; // exclusive
            if last > first + 3 {
                out.push(Zeroizing::new(encoded[first..last].to_owned()));
            }
        }
    }
    // JSON string escapes: a standard encoder, `\/`, HTML-safe encoders (`\u003c`),
    // and everything but letters and digits as `\uXXXX` in either case.
    // Quoted the way Airlock's own snapshot lines and titles quote (`\"`, `\\`).
    out.push(Zeroizing::new(
        value.replace('\\', "\\\\").replace('"', "\\\""),
    ));
    // Cut short by a length cap (`…`): the prefix that is left must not show either.
    for form in [
        value.to_owned(),
        value.replace('\\', "\\\\").replace('"', "\\\""),
    ] {
        let chars: Vec<char> = form.chars().collect();
        for n in MIN_CUT_PREFIX.min(chars.len())..chars.len() {
            let mut prefix: String = chars[..n].iter().collect();
            prefix.push('…');
            out.push(Zeroizing::new(prefix));
        }
    }
    if let Ok(json) = serde_json::to_string(value) {
        let inner = Zeroizing::new(json[1..json.len() - 1].to_owned());
        out.push(Zeroizing::new(inner.replace('/', "\\/")));
        let mut html_safe = String::new();
        for c in inner.chars() {
            match c {
                '<' | '>' | '&' | '\'' => html_safe.push_str(&format!("\\u{:04x}", c as u32)),
                c => html_safe.push(c),
            }
        }
        out.push(Zeroizing::new(html_safe));
        out.push(inner);
    }
    for upper in [false, true] {
        let mut all = String::new();
        for c in value.chars() {
            if c.is_ascii_alphanumeric() {
                all.push(c);
            } else {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    if upper {
                        all.push_str(&format!("\\u{unit:04X}"));
                    } else {
                        all.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
        }
        out.push(Zeroizing::new(all));
    }
    // HTML: named entities (`'` as &#39; &apos; or &#x27;), and numeric references
    // for the specials or for every character, decimal and hex.
    for apos in ["&#39;", "&apos;", "&#x27;"] {
        let mut named = String::new();
        for c in value.chars() {
            match c {
                '&' => named.push_str("&amp;"),
                '<' => named.push_str("&lt;"),
                '>' => named.push_str("&gt;"),
                '"' => named.push_str("&quot;"),
                '\'' => named.push_str(apos),
                c => named.push(c),
            }
        }
        out.push(Zeroizing::new(named));
    }
    for hex in [false, true] {
        for every in [false, true] {
            let mut numeric = String::new();
            for c in value.chars() {
                if every || "&<>\"'".contains(c) {
                    if hex {
                        numeric.push_str(&format!("&#x{:x};", c as u32));
                    } else {
                        numeric.push_str(&format!("&#{};", c as u32));
                    }
                } else {
                    numeric.push(c);
                }
            }
            out.push(Zeroizing::new(numeric));
        }
    }
    out
}

fn percent(value: &str, keep: &dyn Fn(u8) -> bool, plus: bool, upper: bool) -> Zeroizing<String> {
    let mut out = String::with_capacity(value.len() * 3);
    for b in value.bytes() {
        if plus && b == b' ' {
            out.push('+');
        } else if keep(b) {
            out.push(b as char);
        } else if upper {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    Zeroizing::new(out)
}

#[cfg(test)]
mod tests;
