//! Key combos like `Control+A`, `Shift+Tab` or `Enter`, as CDP key events.

use airlock_core::text::prefix;

use crate::error::{Error, Result};

/// One key of a US keyboard layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) key: String,
    pub(crate) code: String,
    pub(crate) key_code: u32,
    /// Text the key inserts, if any.
    pub(crate) text: Option<String>,
}

/// CDP modifier bits.
pub(crate) const ALT: u32 = 1;
pub(crate) const CONTROL: u32 = 2;
pub(crate) const META: u32 = 4;
pub(crate) const SHIFT: u32 = 8;

/// A parsed combo: modifiers to hold (with their keys) and the main key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Combo {
    pub(crate) modifiers: Vec<(u32, Key)>,
    pub(crate) key: Key,
}

#[cfg(test)]
impl Combo {
    pub(crate) fn modifier_bits(&self) -> u32 {
        self.modifiers.iter().map(|(bit, _)| bit).sum()
    }
}

/// Parses `Control+Shift+ArrowLeft`. Modifier names: Control/Ctrl, Shift, Alt,
/// Meta/Command/Cmd. A single `+` key is written `+` or `Shift+Equal`.
pub(crate) fn parse_combo(text: &str) -> Result<Combo> {
    let bad = |why: &str| Error::InvalidArgument(format!("key `{}`: {why}", prefix(text, 40)));
    if text.is_empty() {
        return Err(bad("empty"));
    }
    let parts: Vec<&str> = if text == "+" {
        vec!["+"]
    } else if let Some(head) = text.strip_suffix("++") {
        head.split('+').chain(std::iter::once("+")).collect()
    } else {
        text.split('+').collect()
    };
    let (last, mods) = parts.split_last().ok_or_else(|| bad("empty"))?;
    let mut modifiers = Vec::new();
    for m in mods {
        let (bit, key) = modifier(m).ok_or_else(|| {
            bad(&format!(
                "`{m}` is not a modifier (Control, Shift, Alt, Meta)"
            ))
        })?;
        if modifiers.iter().any(|(b, _)| *b == bit) {
            return Err(bad("a modifier is repeated"));
        }
        modifiers.push((bit, key));
    }
    let key = key(last).ok_or_else(|| bad(&format!("`{last}` is not a known key name")))?;
    Ok(Combo { modifiers, key })
}

fn modifier(name: &str) -> Option<(u32, Key)> {
    let (bit, key, code, key_code) = match name {
        "Control" | "Ctrl" => (CONTROL, "Control", "ControlLeft", 17),
        "Shift" => (SHIFT, "Shift", "ShiftLeft", 16),
        "Alt" | "Option" => (ALT, "Alt", "AltLeft", 18),
        "Meta" | "Command" | "Cmd" => (META, "Meta", "MetaLeft", 91),
        _ => return None,
    };
    Some((
        bit,
        Key {
            key: key.to_owned(),
            code: code.to_owned(),
            key_code,
            text: None,
        },
    ))
}

fn named(key: &str, code: &str, key_code: u32, text: Option<&str>) -> Key {
    Key {
        key: key.to_owned(),
        code: code.to_owned(),
        key_code,
        text: text.map(str::to_owned),
    }
}

/// The key called `name`: a named key (`Enter`, `ArrowDown`, `F5`) or one character.
pub(crate) fn key(name: &str) -> Option<Key> {
    let k = match name {
        "Enter" | "Return" => named("Enter", "Enter", 13, Some("\r")),
        "Tab" => named("Tab", "Tab", 9, None),
        "Backspace" => named("Backspace", "Backspace", 8, None),
        "Delete" | "Del" => named("Delete", "Delete", 46, None),
        "Escape" | "Esc" => named("Escape", "Escape", 27, None),
        "Space" | " " => named(" ", "Space", 32, Some(" ")),
        "ArrowUp" | "Up" => named("ArrowUp", "ArrowUp", 38, None),
        "ArrowDown" | "Down" => named("ArrowDown", "ArrowDown", 40, None),
        "ArrowLeft" | "Left" => named("ArrowLeft", "ArrowLeft", 37, None),
        "ArrowRight" | "Right" => named("ArrowRight", "ArrowRight", 39, None),
        "Home" => named("Home", "Home", 36, None),
        "End" => named("End", "End", 35, None),
        "PageUp" => named("PageUp", "PageUp", 33, None),
        "PageDown" => named("PageDown", "PageDown", 34, None),
        "Insert" => named("Insert", "Insert", 45, None),
        _ => {
            if let Some(n) = name.strip_prefix('F').and_then(|n| n.parse::<u32>().ok()) {
                if (1..=12).contains(&n) {
                    return Some(named(name, name, 111 + n, None));
                }
                return None;
            }
            let mut chars = name.chars();
            let c = chars.next()?;
            if chars.next().is_some() {
                return None;
            }
            return char_key(c);
        }
    };
    Some(k)
}

fn char_key(c: char) -> Option<Key> {
    let text = Some(c.to_string());
    let (code, key_code) = match c {
        'a'..='z' => (
            format!("Key{}", c.to_ascii_uppercase()),
            c.to_ascii_uppercase() as u32,
        ),
        'A'..='Z' => (format!("Key{c}"), c as u32),
        '0'..='9' => (format!("Digit{c}"), c as u32),
        '-' => ("Minus".to_owned(), 189),
        '=' | '+' => ("Equal".to_owned(), 187),
        ',' => ("Comma".to_owned(), 188),
        '.' => ("Period".to_owned(), 190),
        '/' => ("Slash".to_owned(), 191),
        ';' => ("Semicolon".to_owned(), 186),
        '\'' => ("Quote".to_owned(), 222),
        '[' => ("BracketLeft".to_owned(), 219),
        ']' => ("BracketRight".to_owned(), 221),
        '\\' => ("Backslash".to_owned(), 220),
        '`' => ("Backquote".to_owned(), 192),
        _ => return None,
    };
    Some(Key {
        key: c.to_string(),
        code,
        key_code,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_combos() {
        let c = parse_combo("Control+A").unwrap();
        assert_eq!(c.modifier_bits(), CONTROL);
        assert_eq!((c.key.code.as_str(), c.key.key_code), ("KeyA", 65));
        let c = parse_combo("Shift+Tab").unwrap();
        assert_eq!((c.modifier_bits(), c.key.key.as_str()), (SHIFT, "Tab"));
        assert_eq!(
            parse_combo("Enter").unwrap().key.text.as_deref(),
            Some("\r")
        );
        assert_eq!(
            parse_combo("Control+Shift+ArrowLeft")
                .unwrap()
                .modifier_bits(),
            CONTROL | SHIFT
        );
        assert_eq!(parse_combo("Control++").unwrap().key.key, "+");
        assert_eq!(parse_combo("F5").unwrap().key.key_code, 116);
    }

    #[test]
    fn rejects_unknown_names() {
        for bad in [
            "",
            "Hyper+A",
            "Control+Control+A",
            "NotAKey",
            "F13",
            "Control+",
        ] {
            assert!(parse_combo(bad).is_err(), "{bad:?}");
        }
    }
}
