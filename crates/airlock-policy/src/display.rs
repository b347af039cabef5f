//! URLs as a person deciding on them must read them: the host Chromium will connect
//! to comes first, in its canonical (punycode) form, so `bundе.test` with a Cyrillic
//! `е` shows as `xn--bund-…` and cannot pass for `bunde.test`; the Unicode form
//! follows in parentheses for reference.

/// `url` as its canonical URL (WHATWG, as Chromium parses it), followed by
/// ` (host in Unicode: …)` when its host is an internationalized name; a string that
/// is not an absolute URL comes back as it is.
pub fn display_url(url: &str) -> String {
    let Ok(parsed) = url::Url::parse(url.trim()) else {
        return url.to_owned();
    };
    let canonical = parsed.as_str().to_owned();
    match parsed.host_str().and_then(unicode_of) {
        Some(unicode) => format!("{canonical} (host in Unicode: {unicode})"),
        None => canonical,
    }
}

/// `host` (a name or `host:port`) with its canonical (punycode) form first and the
/// Unicode form after it when they differ.
pub fn display_host(host: &str) -> String {
    let ascii = url::quirks::domain_to_ascii(host);
    let ascii = if ascii.is_empty() {
        host.to_owned()
    } else {
        ascii
    };
    match unicode_of(&ascii) {
        Some(unicode) => format!("{ascii} (in Unicode: {unicode})"),
        None => ascii,
    }
}

// The Unicode form of an ASCII host holding punycode labels, if it differs.
fn unicode_of(host: &str) -> Option<String> {
    if !host.split('.').any(|l| l.starts_with("xn--")) {
        return None;
    }
    let unicode = url::quirks::domain_to_unicode(host);
    (unicode != host && !unicode.is_empty()).then_some(unicode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_homograph_host_reads_as_punycode_first() {
        // `bundе.test` with a Cyrillic `е` (U+0435).
        let shown = display_url("https://bund\u{435}.test/pay");
        assert!(shown.starts_with("https://xn--bund-"), "{shown}");
        assert!(
            shown.ends_with("(host in Unicode: bund\u{435}.test)"),
            "{shown}"
        );
        assert_eq!(
            display_url("https://bunde.test/pay"),
            "https://bunde.test/pay"
        );
        assert!(display_host("bund\u{435}.test").starts_with("xn--bund-"));
        assert_eq!(display_host("example.com"), "example.com");
        assert_eq!(display_url("not a url"), "not a url");
    }
}
