//! Cutting text for people and agents to read.
//!
//! Every layer cuts long text the same way, so a reader (and a test) recognises a cut
//! wherever it appears: the first `max` characters, then `…` when anything was left out.

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
}
