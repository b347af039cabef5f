//! The one redactor every output passes. Each active secret value is matched in two
//! places of every text (Aho-Corasick over literal patterns; nothing is ever compiled
//! from secret text, so metacharacters mean nothing):
//!
//! - in the text's **canonical form** ([`canon`]: percent, `%u`, HTML-reference and
//!   backslash escapes decoded to a fixpoint, whitespace runs collapsed), against the
//!   canonical form of the value. One form covers raw, URL-encoded once or twice (any
//!   case, `+` for space), JavaScript `escape()`, JSON and JavaScript escapes (`\u00e9`,
//!   `\/`), HTML references (named, decimal, hex, with or without `;`), Airlock's own
//!   quoting (`\"`, `\\`) and Chromium's partly-unescaped URLs, and any mix of them;
//! - in the text itself and its canonical form, against the encodings that are not
//!   escapes of single characters: base64 (standard and URL-safe, at each of the three
//!   byte alignments a value has inside a longer encoded string) of the value's UTF-8,
//!   Latin-1, UTF-16LE and UTF-16BE bytes, and hex of its UTF-8 and Latin-1 bytes.
//!
//! - in the text's **reading** ([`reading`]: what a person sees, whitespace and
//!   invisible characters left out), and the reading of its canonical form, against
//!   the value's reading and the value reversed: a value shown one character per
//!   line, with zero-width characters between its characters, or reversed for a
//!   right-to-left override to show it the right way round.
//!
//! Whatever matched is replaced with `[REDACTED:NAME]` in the source text.
//!
//! The redactor matches whole values only. Airlock redacts before it cuts (paging,
//! length caps), so a value is never cut before the redactor sees it whole; and a
//! redactor that also hid a value's prefixes would tell an agent that types guesses
//! into a field which prefix is right.

mod canon;
mod entities;
mod reading;

use hex::ToHex as _;
use std::borrow::Cow;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use airlock_core::Redact;
use base64::Engine as _;
use zeroize::Zeroizing;

use canon::Canonical;
use reading::Reading;

/// Shortest pattern matched; shorter encodings of a value (a base64 middle of a very
/// short value) would hide ordinary text.
const MIN_PATTERN: usize = 4;

/// What replaces the whole text if the matcher ever fails: nothing of it is shown.
const WITHHELD: &str = "[WITHHELD: the redactor failed]";

/// The canonical form of `text` the redactor matches on (percent, `%u`, HTML-reference
/// and backslash escapes decoded to a fixpoint, whitespace runs collapsed), or `None`
/// when it is the text itself. The data-flow check decodes what an agent sends with
/// it, so a value is recognised in the same forms the redactor hides.
pub fn canonical(text: &str) -> Option<String> {
    Canonical::of(text).map(|c| c.text)
}

/// Redacts the values of a set of secrets. Debug shows only the names.
#[derive(Clone, Default)]
pub struct Redactor {
    // None when there is nothing to redact.
    matcher: Option<AhoCorasick>,
    // Secret name of each pattern, by pattern id.
    names: Vec<String>,
    // The values as they read (and reversed), matched on a text's reading; their
    // ids follow `names` (id `names.len() + i` is reading pattern i).
    reading: Option<AhoCorasick>,
    reading_names: Vec<String>,
    // The secret names, for Debug.
    secrets: Vec<String>,
    // Longest source text one match can cover, in bytes.
    reach: usize,
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

/// The redactor could not be built.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the redactor could not be built ({0})")]
pub struct RedactError(String);

impl Redactor {
    /// A redactor for `(secret name, value)` pairs. Empty values are skipped.
    pub fn new<'a>(
        values: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Redactor, RedactError> {
        let mut patterns: Vec<Zeroizing<String>> = Vec::new();
        let mut names = Vec::new();
        let mut readings: Vec<Zeroizing<String>> = Vec::new();
        let mut reading_names = Vec::new();
        let mut secrets = Vec::new();
        let mut reach = 0;
        for (name, value) in values {
            if value.is_empty() {
                continue;
            }
            if !secrets.iter().any(|s| s == name) {
                secrets.push(name.to_owned());
            }
            // The longest escape of one character is `&#x10FFFF;` (10 bytes) for each
            // byte of the value's canonical form, nested at most four times over.
            reach = reach.max(value.len().saturating_mul(10 * 4) + 16);
            for form in forms(value) {
                if form.len() >= MIN_PATTERN && !patterns.iter().any(|p| **p == *form) {
                    patterns.push(form);
                    names.push(name.to_owned());
                }
            }
            for form in reading_forms(value) {
                if form.len() >= MIN_PATTERN && !readings.iter().any(|p| **p == *form) {
                    readings.push(form);
                    reading_names.push(name.to_owned());
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
        let reading = (!readings.is_empty())
            .then(|| {
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(readings.iter().map(|p| p.as_bytes()))
                    .map_err(|e| RedactError(e.to_string()))
            })
            .transpose()?;
        Ok(Redactor {
            matcher: Some(matcher),
            names,
            reading,
            reading_names,
            secrets,
            reach,
        })
    }

    /// Whether there is anything to redact.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// `text` with every form of every value replaced by `[REDACTED:NAME]`.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let Some(found) = self.find(text) else {
            return Cow::Owned(WITHHELD.to_owned());
        };
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for (start, end, name) in found {
            out.push_str(&text[last..start]);
            out.push_str("[REDACTED:");
            out.push_str(self.name(name));
            out.push(']');
            last = end;
        }
        out.push_str(&text[last..]);
        Cow::Owned(out)
    }

    /// The names of the secrets some form of which `text` holds, each once; `None`
    /// if the matcher failed (treat it as holding all of them).
    pub fn secrets_in(&self, text: &str) -> Option<Vec<&str>> {
        let mut names: Vec<&str> = Vec::new();
        for (_, _, pattern) in self.find(text)? {
            let name = self.name(pattern);
            if !names.contains(&name) {
                names.push(name);
            }
        }
        Some(names)
    }

    // The secret name of pattern `id` (of either matcher).
    fn name(&self, id: usize) -> &str {
        match self.names.get(id) {
            Some(name) => name,
            None => &self.reading_names[id - self.names.len()],
        }
    }

    // Source ranges to hide, sorted and merged, each with the pattern that started it.
    // `None` if the matcher failed.
    fn find(&self, text: &str) -> Option<Vec<(usize, usize, usize)>> {
        let Some(matcher) = &self.matcher else {
            return Some(Vec::new());
        };
        let mut found: Vec<(usize, usize, usize)> = Vec::new();
        for m in matcher.try_find_iter(text).ok()? {
            found.push((m.start(), m.end(), m.pattern().as_usize()));
        }
        let canonical = Canonical::of(text);
        if let Some(canonical) = &canonical {
            for m in matcher.try_find_iter(canonical.text.as_str()).ok()? {
                let (start, end) = canonical.source_range(m.start(), m.end());
                found.push((start, end, m.pattern().as_usize()));
            }
        }
        if let Some(reading_matcher) = &self.reading {
            let first = self.names.len();
            // The text as it reads, and its canonical form as it reads (an entity
            // for a zero-width space is one too).
            let mut readings = vec![(Reading::of(text), None)];
            if let Some(canonical) = &canonical {
                readings.push((Reading::of(&canonical.text), Some(canonical)));
            }
            for (reading, under) in readings {
                let Some(reading) = reading else {
                    continue;
                };
                for m in reading_matcher.try_find_iter(reading.text.as_str()).ok()? {
                    let (start, end) = reading.source_range(m.start(), m.end());
                    let (start, end) = match under {
                        Some(canonical) => canonical.source_range(start, end),
                        None => (start, end),
                    };
                    found.push((start, end, first + m.pattern().as_usize()));
                }
            }
        }
        // Invisible controls next to a value go with it: an override left before the
        // marker would show the marker backwards.
        for (start, end, _) in &mut found {
            while let Some(c) = text
                .get(..*start)
                .and_then(|t| t.chars().next_back())
                .filter(|c| invisible(*c))
            {
                *start -= c.len_utf8();
            }
            while let Some(c) = text
                .get(*end..)
                .and_then(|t| t.chars().next())
                .filter(|c| invisible(*c))
            {
                *end += c.len_utf8();
            }
        }
        found.sort_unstable();
        let mut merged: Vec<(usize, usize, usize)> = Vec::with_capacity(found.len());
        for (start, end, pattern) in found {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end, pattern)),
            }
        }
        // Patterns and escapes are whole characters, so every range is too; a range
        // that is not would be a bug, and nothing of such a text is shown.
        merged
            .iter()
            .all(|(s, e, _)| text.is_char_boundary(*s) && text.is_char_boundary(*e))
            .then_some(merged)
    }
}

impl Redact for Redactor {
    fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        Redactor::redact(self, text)
    }

    fn hidden(&self, text: &str) -> Option<Vec<std::ops::Range<usize>>> {
        Some(self.find(text)?.into_iter().map(|(s, e, _)| s..e).collect())
    }

    fn reach(&self) -> usize {
        self.reach
    }

    fn is_active(&self) -> bool {
        !self.is_empty()
    }
}

// A character nobody sees that is not whitespace.
fn invisible(c: char) -> bool {
    reading::unseen(c) && !c.is_whitespace()
}

/// The patterns of `value` matched on a text's reading: the value as it reads, and
/// reversed (what a right-to-left override or style shows the right way round).
fn reading_forms(value: &str) -> Vec<Zeroizing<String>> {
    let canonical =
        Zeroizing::new(Canonical::of(value).map_or_else(|| value.to_owned(), |c| c.text));
    let mut out = Vec::new();
    for form in [value, canonical.as_str()] {
        let read = Zeroizing::new(reading::squeezed(form));
        let reversed = Zeroizing::new(read.chars().rev().collect::<String>());
        for f in [read, reversed] {
            if !out.iter().any(|p: &Zeroizing<String>| **p == *f) {
                out.push(f);
            }
        }
    }
    out
}

/// Every pattern of `value`: its canonical forms, then its byte encodings.
fn forms(value: &str) -> Vec<Zeroizing<String>> {
    let canonical = |v: &str| {
        let c = Canonical::of(v).map_or_else(|| v.to_owned(), |c| c.text);
        Zeroizing::new(c.trim().to_owned())
    };
    let mut out: Vec<Zeroizing<String>> = vec![Zeroizing::new(value.to_owned()), canonical(value)];
    if value.contains(' ') {
        // Form encoding writes a space as `+`, which is not an escape to decode.
        out.push(canonical(&value.replace(' ', "+")));
    }
    let mut encodings: Vec<Zeroizing<Vec<u8>>> = vec![Zeroizing::new(value.as_bytes().to_vec())];
    if value.chars().all(|c| (c as u32) < 256) && !value.is_ascii() {
        // `btoa` and friends take a string of Latin-1 characters as its bytes.
        encodings.push(Zeroizing::new(value.chars().map(|c| c as u8).collect()));
    }
    let utf16: Vec<u16> = value.encode_utf16().collect();
    encodings.push(Zeroizing::new(
        utf16.iter().flat_map(|u| u.to_le_bytes()).collect(),
    ));
    encodings.push(Zeroizing::new(
        utf16.iter().flat_map(|u| u.to_be_bytes()).collect(),
    ));
    for (i, bytes) in encodings.iter().enumerate() {
        for engine in [
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            // The value can sit at any of three byte alignments inside a longer
            // encoded string (`user:secret` shifts it); keep the characters whose six
            // bits come from the value alone.
            for shift in 0..3usize {
                let mut buf = Zeroizing::new(vec![0u8; shift]);
                buf.extend_from_slice(bytes);
                let encoded = Zeroizing::new(engine.encode(buf.as_slice()));
                let first = (8 * shift).div_ceil(6);
                let last = (8 * (shift + bytes.len())) / 6;
                if last > first {
                    out.push(Zeroizing::new(encoded[first..last].to_owned()));
                }
            }
        }
        // Hex of the UTF-8 and Latin-1 bytes (UTF-16 hex is rare enough to leave).
        if i < encodings.len() - 2 {
            let lower: String = bytes.encode_hex::<String>();
            out.push(Zeroizing::new(lower.to_uppercase()));
            out.push(Zeroizing::new(lower));
        }
    }
    out
}

#[cfg(test)]
mod tests;
