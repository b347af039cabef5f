//! The canonical form of a text: the escapes a page, a URL or a serializer wraps
//! characters in, decoded until nothing changes, and runs of whitespace collapsed to
//! one space. Every canonical byte remembers the span of source bytes it came from, so
//! a value found in the canonical form is cut out of the source text.
//!
//! Decoded in each pass, wherever they appear (nesting is undone by repeating):
//! - percent escapes `%XX` (runs of them read as UTF-8, any byte that is not part of a
//!   valid sequence as Latin-1, as JavaScript's `escape()` writes it) and `%uXXXX`;
//! - HTML character references: decimal and hex, with or without `;`, and the named
//!   ones in [`super::entities::NAMED`] (with or without `;`);
//! - backslash escapes of JSON and JavaScript: `\uXXXX` (surrogate pairs joined),
//!   `\u{X…}`, `\xXX`, and `\` before any other character (`\\`, `\"`, `\/` …);
//! - whitespace runs (any Unicode whitespace) become one space.

use super::entities::NAMED;

/// Most passes: each undoes one layer of nesting (`%2526` → `%26` → `&`).
const MAX_PASSES: usize = 4;

/// A canonical text and, for each of its bytes, the source byte range it came from.
pub(super) struct Canonical {
    pub(super) text: String,
    spans: Vec<(u32, u32)>,
}

impl Canonical {
    /// The canonical form of `source`, or `None` when it equals the source (nothing to
    /// decode), which is the common case and costs one scan.
    pub(super) fn of(source: &str) -> Option<Canonical> {
        if !needs_decoding(source) {
            return None;
        }
        let mut spans = Vec::with_capacity(source.len());
        for (i, c) in source.char_indices() {
            let span = (i as u32, (i + c.len_utf8()) as u32);
            spans.extend(std::iter::repeat_n(span, c.len_utf8()));
        }
        let mut current = Canonical {
            text: source.to_owned(),
            spans,
        };
        for _ in 0..MAX_PASSES {
            let next = current.pass();
            if next.text == current.text {
                break;
            }
            current = next;
        }
        Some(current)
    }

    /// The source byte range of canonical bytes `start..end`.
    pub(super) fn source_range(&self, start: usize, end: usize) -> (usize, usize) {
        (
            self.spans[start].0 as usize,
            self.spans[end.max(start + 1) - 1].1 as usize,
        )
    }

    fn pass(&self) -> Canonical {
        let text = self.text.as_str();
        let bytes = text.as_bytes();
        let mut out = Canonical {
            text: String::with_capacity(text.len()),
            spans: Vec::with_capacity(self.spans.len()),
        };
        let mut i = 0;
        while i < bytes.len() {
            let decoded = match bytes[i] {
                b'%' => percent(text, i),
                b'&' => reference(text, i),
                b'\\' => backslash(text, i),
                _ => None,
            };
            if let Some((chars, end)) = decoded {
                for (c, from, to) in chars {
                    out.push(c, self.span(from, to));
                }
                i = end;
                continue;
            }
            let c = text[i..].chars().next().unwrap_or(' ');
            if c.is_whitespace() {
                let mut end = i;
                while let Some(w) = text[end..].chars().next().filter(|w| w.is_whitespace()) {
                    end += w.len_utf8();
                }
                out.push(' ', self.span(i, end));
                i = end;
                continue;
            }
            out.push(c, self.span(i, i + c.len_utf8()));
            i += c.len_utf8();
        }
        out
    }

    // The source span of this text's bytes `from..to`.
    fn span(&self, from: usize, to: usize) -> (u32, u32) {
        (self.spans[from].0, self.spans[to - 1].1)
    }

    fn push(&mut self, c: char, span: (u32, u32)) {
        self.text.push(c);
        self.spans.extend(std::iter::repeat_n(span, c.len_utf8()));
    }
}

// Whether the canonical form can differ from the text: an escape character, or
// whitespace other than single spaces.
fn needs_decoding(text: &str) -> bool {
    let mut previous_space = false;
    for c in text.chars() {
        match c {
            '%' | '&' | '\\' => return true,
            ' ' if previous_space => return true,
            ' ' => previous_space = true,
            c if c.is_whitespace() => return true,
            _ => previous_space = false,
        }
    }
    false
}

/// Decoded characters, each with the byte range (in the pass's input) it came from,
/// and where decoding stopped.
type Decoded = (Vec<(char, usize, usize)>, usize);

fn hex_at(bytes: &[u8], at: usize, digits: usize) -> Option<u32> {
    let slice = bytes.get(at..at + digits)?;
    let text = std::str::from_utf8(slice).ok()?;
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(text, 16).ok()
}

// `%XX` runs (UTF-8 where valid, Latin-1 otherwise) or `%uXXXX` units.
fn percent(text: &str, start: usize) -> Option<Decoded> {
    let bytes = text.as_bytes();
    if bytes
        .get(start + 1)
        .is_some_and(|b| *b == b'u' || *b == b'U')
    {
        return utf16_units(bytes, start, |at| {
            (bytes.get(at) == Some(&b'%') && matches!(bytes.get(at + 1), Some(b'u' | b'U')))
                .then(|| hex_at(bytes, at + 2, 4).map(|u| (u, at + 6)))
                .flatten()
        });
    }
    let mut raw: Vec<(u8, usize)> = Vec::new();
    let mut at = start;
    while bytes.get(at) == Some(&b'%') {
        let Some(b) = hex_at(bytes, at + 1, 2) else {
            break;
        };
        raw.push((b as u8, at));
        at += 3;
    }
    if raw.is_empty() {
        return None;
    }
    let mut chars = Vec::new();
    let mut k = 0;
    while k < raw.len() {
        let len = utf8_len(raw[k].0);
        let seq: Vec<u8> = raw[k..(k + len).min(raw.len())]
            .iter()
            .map(|(b, _)| *b)
            .collect();
        match std::str::from_utf8(&seq)
            .ok()
            .filter(|_| len > 1 && seq.len() == len)
        {
            Some(s) => {
                let c = s.chars().next().unwrap_or('\u{fffd}');
                chars.push((c, raw[k].1, raw[k + len - 1].1 + 3));
                k += len;
            }
            None => {
                chars.push((char::from(raw[k].0), raw[k].1, raw[k].1 + 3));
                k += 1;
            }
        }
    }
    Some((chars, at))
}

fn utf8_len(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}

// A run of UTF-16 code units, each read by `unit(at) -> (unit, end)`, joined into
// characters (a lone surrogate becomes U+FFFD).
fn utf16_units(
    bytes: &[u8],
    start: usize,
    unit: impl Fn(usize) -> Option<(u32, usize)>,
) -> Option<Decoded> {
    let mut units: Vec<(u16, usize, usize)> = Vec::new();
    let mut at = start;
    while let Some((u, end)) = unit(at) {
        units.push((u as u16, at, end));
        at = end;
    }
    if units.is_empty() {
        return None;
    }
    let _ = bytes;
    let mut chars = Vec::new();
    let mut k = 0;
    while k < units.len() {
        let (u, from, to) = units[k];
        if (0xD800..0xDC00).contains(&u)
            && let Some(&(low, _, low_end)) = units.get(k + 1)
            && (0xDC00..0xE000).contains(&low)
        {
            let c = 0x10000 + ((u32::from(u) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
            chars.push((char::from_u32(c).unwrap_or('\u{fffd}'), from, low_end));
            k += 2;
            continue;
        }
        chars.push((char::from_u32(u32::from(u)).unwrap_or('\u{fffd}'), from, to));
        k += 1;
    }
    Some((chars, at))
}

// `&#NN;`, `&#xHH;` and named references, the `;` optional.
fn reference(text: &str, start: usize) -> Option<Decoded> {
    let bytes = text.as_bytes();
    let mut at = start + 1;
    let c = if bytes.get(at) == Some(&b'#') {
        at += 1;
        let hex = matches!(bytes.get(at), Some(b'x' | b'X'));
        if hex {
            at += 1;
        }
        let digits_start = at;
        while at < bytes.len()
            && at - digits_start < 8
            && (if hex {
                bytes[at].is_ascii_hexdigit()
            } else {
                bytes[at].is_ascii_digit()
            })
        {
            at += 1;
        }
        if at == digits_start {
            return None;
        }
        let value = u32::from_str_radix(&text[digits_start..at], if hex { 16 } else { 10 }).ok()?;
        // What an HTML parser makes of NUL, surrogates and out-of-range numbers.
        char::from_u32(value)
            .filter(|c| *c != '\0')
            .unwrap_or('\u{fffd}')
    } else {
        let name_start = at;
        while at < bytes.len() && at - name_start < 32 && bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        // The longest known name the letters start with (`&ampx` is `&` then `x`).
        let mut found = None;
        for end in (name_start + 1..=at).rev() {
            if let Ok(i) =
                NAMED.binary_search_by(|(n, _)| n.as_bytes().cmp(&bytes[name_start..end]))
            {
                found = Some((NAMED[i].1, end));
                break;
            }
        }
        let (c, end) = found?;
        at = end;
        c
    };
    if bytes.get(at) == Some(&b';') {
        at += 1;
    }
    Some((vec![(c, start, at)], at))
}

// JSON and JavaScript escapes.
fn backslash(text: &str, start: usize) -> Option<Decoded> {
    let bytes = text.as_bytes();
    match *bytes.get(start + 1)? {
        b'u' if bytes.get(start + 2) == Some(&b'{') => {
            let close = text[start + 3..].find('}').filter(|n| *n > 0 && *n <= 6)? + start + 3;
            let value = u32::from_str_radix(&text[start + 3..close], 16).ok()?;
            let c = char::from_u32(value).unwrap_or('\u{fffd}');
            Some((vec![(c, start, close + 1)], close + 1))
        }
        b'u' => utf16_units(bytes, start, |at| {
            (bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'u'))
                .then(|| hex_at(bytes, at + 2, 4).map(|u| (u, at + 6)))
                .flatten()
        }),
        b'x' => {
            let value = hex_at(bytes, start + 2, 2)?;
            Some((vec![(char::from_u32(value)?, start, start + 4)], start + 4))
        }
        b'n' | b'r' | b't' | b'f' | b'v' => Some((vec![(' ', start, start + 2)], start + 2)),
        _ => {
            let c = text[start + 1..].chars().next()?;
            let end = start + 1 + c.len_utf8();
            Some((vec![(c, start, end)], end))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        Canonical::of(text).map_or_else(|| text.to_owned(), |c| c.text)
    }

    #[test]
    fn decodes_each_escape_and_nesting() {
        for (input, want) in [
            ("a%41%c3%A9b", "aAéb"),
            ("%E9t%E9", "été"),
            ("%u00e9%uD83D%uDE00", "é😀"),
            ("%2541", "A"),
            ("%252541", "A"),
            ("&amp;&lt;&#60&#x3c;&#X3C&eacute&eacute;x", "&<<<<ééx"),
            ("&amp;lt;", "<"),
            ("&ampx", "&x"),
            (
                "\\u00e9\\u00E9\\ud83d\\ude00\\u{1F600}\\x41\\/\\\"\\\\",
                "éé😀😀A/\"\\",
            ),
            ("a \n\t\u{a0} b", "a b"),
            ("%", "%"),
            ("&unknown;", "&unknown;"),
            ("\\", "\\"),
            ("%uD800x", "\u{fffd}x"),
        ] {
            assert_eq!(canon(input), want, "{input}");
        }
    }

    #[test]
    fn every_canonical_byte_maps_back_to_its_source() {
        let source = "x=%2541&amp;y é";
        let c = Canonical::of(source).unwrap();
        assert_eq!(c.text, "x=A&y é");
        let a = c.text.find('A').unwrap();
        assert_eq!(c.source_range(a, a + 1), (2, 7));
        let amp = c.text.find('&').unwrap();
        assert_eq!(c.source_range(amp, amp + 1), (7, 12));
        let e = c.text.find('é').unwrap();
        assert_eq!(c.source_range(e, e + 2), (14, 16));
    }

    #[test]
    fn text_without_escapes_is_not_copied() {
        assert!(Canonical::of("plain text, one space each").is_none());
        assert!(Canonical::of("two  spaces").is_some());
    }
}
