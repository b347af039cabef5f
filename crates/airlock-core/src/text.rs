//! Cutting text for people and agents to read, and showing it as it is.
//!
//! Every layer cuts long text the same way, so a reader (and a test) recognises a cut
//! wherever it appears: the first `max` characters, then `…` when anything was left out.
//! Text a page controls is shown through [`display_safe`], so it reads as it is.

use std::borrow::Cow;

/// `text` cut to its first `max` characters, with `…` appended when it was longer.
pub fn ellipsize(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// `text` cut to its first `max` characters, without a mark: for echoing an argument
/// inside a message that already says it was wrong.
pub fn prefix(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        None => text,
        Some((end, _)) => &text[..end],
    }
}

/// Whether `c` changes how the text around it reads without being seen itself: a C0
/// control other than newline and tab, DEL, a C1 control (a lone U+009B is a CSI to
/// some terminals), or a bidirectional mark, embedding, override or isolate (U+202E
/// shows `txt.exe` as `exe.txt`).
pub fn is_invisible_control(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{61c}' | '\u{200e}' | '\u{200f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` as it may be shown to a person (a console page, a terminal, a tool result):
/// each [invisible control](is_invisible_control) written as `\u{…}`, visibly, so a
/// page's title or a link's name cannot reorder or hide what is around it.
pub fn display_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_invisible_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_invisible_control(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_count_characters_not_bytes() {
        assert_eq!(ellipsize("héllo", 5), "héllo");
        assert_eq!(ellipsize("héllo", 2), "hé…");
        assert_eq!(ellipsize("", 0), "");
        assert_eq!(ellipsize("ab", 0), "…");
        assert_eq!(prefix("héllo", 2), "hé");
        assert_eq!(prefix("hé", 9), "hé");
    }

    #[test]
    fn invisible_controls_are_shown() {
        assert_eq!(
            display_safe("Invoice \u{202e}fdp.exe"),
            "Invoice \\u{202e}fdp.exe"
        );
        assert_eq!(display_safe("a\u{1b}[31mb\u{9b}c"), "a\\u{1b}[31mb\\u{9b}c");
        assert_eq!(display_safe("\u{2067}x\u{2069}"), "\\u{2067}x\\u{2069}");
        // Lines, tabs and ordinary right-to-left text stay as they are.
        assert!(matches!(display_safe("a\nb\tc שלום"), Cow::Borrowed(_)));
    }
}
