//! A text as a person reads it off a screen: without the characters nobody sees
//! (whitespace, zero-width spaces and joiners, bidi controls, soft hyphens, variation
//! selectors, tag characters), so a value shown one character per line, or with an
//! invisible character between each two, reads as the value it is. Every reading
//! byte remembers the source span it came from, as the canonical form's do.
//!
//! A value displayed reversed (inside a right-to-left override, or by a style) is
//! held in its source text backwards; the redactor matches the reversed value as a
//! reading pattern of its own, so no bidi algorithm is needed here.

/// A reading of a text and, for each of its bytes, the source byte range it came from.
pub(super) struct Reading {
    pub(super) text: String,
    spans: Vec<(u32, u32)>,
}

impl Reading {
    /// The reading of `source`, or `None` when it has nothing a reader skips (then
    /// the text itself is its reading).
    pub(super) fn of(source: &str) -> Option<Reading> {
        if !source.chars().any(unseen) {
            return None;
        }
        let mut reading = Reading {
            text: String::with_capacity(source.len()),
            spans: Vec::with_capacity(source.len()),
        };
        for (i, c) in source.char_indices() {
            if unseen(c) {
                continue;
            }
            reading.text.push(c);
            let span = (i as u32, (i + c.len_utf8()) as u32);
            reading
                .spans
                .extend(std::iter::repeat_n(span, c.len_utf8()));
        }
        Some(reading)
    }

    /// The source byte range of reading bytes `start..end`: from the first source
    /// character to the last, the unseen ones between included.
    pub(super) fn source_range(&self, start: usize, end: usize) -> (usize, usize) {
        (
            self.spans[start].0 as usize,
            self.spans[end.max(start + 1) - 1].1 as usize,
        )
    }
}

/// `value` as it reads (what [`Reading::of`] leaves of it).
pub(super) fn squeezed(value: &str) -> String {
    value.chars().filter(|c| !unseen(*c)).collect()
}

/// Whether a reader sees nothing of `c`: whitespace, or a format character that
/// draws no glyph.
pub(super) fn unseen(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '\u{00AD}'                       // soft hyphen
            | '\u{034F}'                     // combining grapheme joiner
            | '\u{061C}'                     // Arabic letter mark
            | '\u{115F}' | '\u{1160}'        // Hangul fillers
            | '\u{17B4}' | '\u{17B5}'        // Khmer inherent vowels
            | '\u{180B}'..='\u{180F}'        // Mongolian selectors, vowel separator
            | '\u{200B}'..='\u{200F}'        // zero-width space, (non-)joiner, LRM, RLM
            | '\u{202A}'..='\u{202E}'        // bidi embeddings and overrides
            | '\u{2060}'..='\u{206F}'        // word joiner, invisible operators, isolates
            | '\u{3164}' | '\u{FFA0}'        // Hangul fillers
            | '\u{FE00}'..='\u{FE0F}'        // variation selectors
            | '\u{FEFF}'                     // zero-width no-break space
            | '\u{1BCA0}'..='\u{1BCA3}'      // shorthand format controls
            | '\u{E0000}'..='\u{E007F}'      // tags
            | '\u{E0100}'..='\u{E01EF}' // variation selectors supplement
        )
}
