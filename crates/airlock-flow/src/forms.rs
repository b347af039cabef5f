//! The forms an outbound string is read in: as it is; with the escapes the redactor
//! undoes (percent, `%u`, HTML references, backslash escapes, to a fixpoint:
//! [`airlock_redact::canonical`]); and with each base64 run (standard or URL-safe, at
//! each start) and hex run decoded, from the string and from its unescaped form.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// The form an outbound string carried a run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// As it is.
    Plain,
    /// Percent-encoded, HTML-escaped or backslash-escaped.
    Escaped,
    /// Base64, standard or URL-safe.
    Base64,
    /// Hex.
    Hex,
    /// A printed number grouped another way, or not at all (`DE89 3704 …` sent as
    /// `DE893704…`).
    Regrouped,
    /// Split over calls: part sent before, the rest now.
    Split,
}

impl Form {
    /// How a person reads it.
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Plain => "as it is",
            Form::Escaped => "escaped",
            Form::Base64 => "base64-encoded",
            Form::Hex => "hex-encoded",
            Form::Regrouped => "regrouped",
            Form::Split => "split over calls",
        }
    }
}

/// Shortest base64 or hex run decoded (it stands for at least 9 bytes).
const MIN_ENCODED: usize = 12;

/// Every form of `text` worth checking, the plain one first.
pub(crate) fn of(text: &str) -> Vec<(Form, Cow<'_, str>)> {
    let mut forms = vec![(Form::Plain, Cow::Borrowed(text))];
    let unescaped = airlock_redact::canonical(text);
    let mut sources: Vec<Cow<'_, str>> = vec![Cow::Borrowed(text)];
    if let Some(unescaped) = unescaped {
        forms.push((Form::Escaped, Cow::Owned(unescaped.clone())));
        sources.push(Cow::Owned(unescaped));
    }
    for source in &sources {
        for decoded in base64_runs(source) {
            forms.push((Form::Base64, Cow::Owned(decoded)));
        }
        for decoded in hex_runs(source) {
            forms.push((Form::Hex, Cow::Owned(decoded)));
        }
    }
    forms
}

// Base64 that decodes with or without padding and ignores stray low bits: what a
// hand-made encoding in a URL looks like.
const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(true);

// Each maximal base64 run decoded at each of its first four starts (a value may sit
// after a few characters of something else), when it decodes to text.
fn base64_runs(text: &str) -> Vec<String> {
    let engines = [
        GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT),
        GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT),
    ];
    let mut out = Vec::new();
    for run in runs(text, |b| b.is_ascii_alphanumeric() || b"+/-_=".contains(&b)) {
        let run = run.trim_end_matches('=');
        if run.len() < MIN_ENCODED {
            continue;
        }
        for skip in 0..4 {
            let body = &run[skip..];
            // A length of 4n+1 is never base64: its last character is a stray.
            let body = match body.len() % 4 {
                1 => &body[..body.len() - 1],
                _ => body,
            };
            for engine in &engines {
                if let Ok(bytes) = engine.decode(body)
                    && let Some(text) = readable(bytes)
                {
                    out.push(text);
                }
            }
        }
    }
    out
}

// Each maximal hex run decoded, at both starts.
fn hex_runs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for run in runs(text, |b| b.is_ascii_hexdigit()) {
        if run.len() < 2 * MIN_ENCODED {
            continue;
        }
        for skip in 0..2 {
            let body = &run[skip..];
            let body = &body[..body.len() - body.len() % 2];
            if let Ok(bytes) = hex::decode(body)
                && let Some(text) = readable(bytes)
            {
                out.push(text);
            }
        }
    }
    out
}

// The maximal runs of bytes `inside` accepts.
fn runs(text: &str, inside: impl Fn(u8) -> bool) -> impl Iterator<Item = &str> {
    text.split(move |c: char| !c.is_ascii() || !inside(c as u8))
        .filter(|r| !r.is_empty())
}

// Decoded bytes as text, when they are mostly text (noise decodes too).
fn readable(bytes: Vec<u8>) -> Option<String> {
    let text = String::from_utf8_lossy(&bytes);
    let printable = text
        .chars()
        .filter(|c| !c.is_control() && *c != char::REPLACEMENT_CHARACTER)
        .count();
    (printable * 10 >= text.chars().count() * 9).then(|| text.into_owned())
}
