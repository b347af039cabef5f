//! The session helpers that need no browser: selector parsing and page-text paging.

use super::*;

#[test]
fn partial_attribute_matches_are_found_outside_strings() {
    for selector in [
        "[value^=a]",
        "input[data-x$='z' i]",
        "a[href*=\"k\"]",
        "[lang|=en]",
        ":is(div, [title^=x])",
    ] {
        assert!(matches_part_of_attribute(selector), "{selector}");
    }
    for selector in [
        "[value=a]",
        "[class~=big]",
        "[title=\"a^=b\"]",
        "[title='$=']",
        "div > p.x",
        "[a\\^=b]",
    ] {
        assert!(!matches_part_of_attribute(selector), "{selector}");
    }
}

#[test]
fn names_compare_with_whitespace_collapsed() {
    assert_eq!(collapse_ws("  Log \n in\u{a0}now "), "Log in now");
    assert_eq!(collapse_runs(" a \t b "), " a b ");
}

#[test]
fn pages_text_on_line_breaks() {
    let text = "line one\nline two\nline three\n";
    let first = page_of(text, 0, 12);
    assert!(first.text.starts_with("line one\n"));
    assert_eq!(first.next_offset, Some(9));
    let rest = page_of(text, 9, 1000);
    assert_eq!(rest.text, "line two\nline three\n");
    assert_eq!(rest.next_offset, None);
    // A long line after a short one: the page is filled, not cut at the break.
    let long = format!("# Big\n\n{}", "w".repeat(1000));
    let first = page_of(&long, 0, 256);
    assert_eq!(first.next_offset, Some(256));
    let multibyte = page_of("ééééé", 1, 3);
    assert!(multibyte.text.starts_with('é'));
}
