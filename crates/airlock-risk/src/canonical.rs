//! A request's URL as a server reads it, for effect rules: a page that writes
//! `/%74ransfer`, `//transfer` or `/a/../transfer` sends a request the server treats
//! as `/transfer`, so a rule on `/transfer` must see that. The WHATWG parser (the
//! `url` crate, as Chromium) already lowercases the host, turns an internationalised
//! one into punycode, drops default ports and resolves the dot segments it sees;
//! here, escapes of unreserved characters (RFC 3986 §2.3) are decoded, other escapes
//! written in upper case, repeated slashes folded, and dot segments resolved again
//! (a decoded `%2e%2e` is one). The fragment is never sent, so it is not kept.

/// A request URL in canonical form, with its path and query apart: a rule on the
/// path is not fooled by a query that names another path (`?next=/delete/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalUrl {
    /// `scheme://host[:port]/path[?query]`.
    pub url: String,
    /// `/path`, starting with `/` (empty for a URL without one, e.g. `data:`).
    pub path: String,
    /// The query without its `?` (empty when there is none).
    pub query: String,
}

impl CanonicalUrl {
    /// The canonical form of `raw`; a string that does not parse stays as written
    /// (with no path or query), so a rule on the URL still sees it.
    pub fn of(raw: &str) -> CanonicalUrl {
        let Ok(parsed) = url::Url::parse(raw) else {
            return CanonicalUrl {
                url: raw.to_owned(),
                path: String::new(),
                query: String::new(),
            };
        };
        if parsed.cannot_be_a_base() {
            return CanonicalUrl {
                url: parsed.to_string(),
                path: String::new(),
                query: String::new(),
            };
        }
        let path = dot_segments(&fold_slashes(&unescape_unreserved(parsed.path())));
        let query = parsed.query().map(unescape_unreserved).unwrap_or_default();
        let mut url = format!("{}://", parsed.scheme());
        if let Some(host) = parsed.host_str() {
            url.push_str(host);
        }
        if let Some(port) = parsed.port() {
            url.push_str(&format!(":{port}"));
        }
        url.push_str(&path);
        if parsed.query().is_some() {
            url.push('?');
            url.push_str(&query);
        }
        CanonicalUrl { url, path, query }
    }
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

// `%XX` of an unreserved character becomes the character; any other escape keeps its
// meaning, written in upper case (`%2f` and `%2F` are one byte).
fn unescape_unreserved(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            let byte = h << 4 | l;
            if is_unreserved(byte) {
                out.push(byte as char);
            } else {
                out.push('%');
                out.push(bytes[i + 1].to_ascii_uppercase() as char);
                out.push(bytes[i + 2].to_ascii_uppercase() as char);
            }
            i += 3;
            continue;
        }
        // The parser leaves only ASCII in a path and query (it escapes the rest).
        out.push(bytes[i] as char);
        i += 1;
    }
    out
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

fn fold_slashes(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.push(c);
    }
    out
}

// RFC 3986 §5.2.4, on a path that starts with `/`.
fn dot_segments(path: &str) -> String {
    if !path.contains("/.") {
        return path.to_owned();
    }
    let mut kept: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    let mut trailing = false;
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            "." => trailing = i == last,
            ".." => {
                kept.pop();
                trailing = i == last;
            }
            s => {
                kept.push(s);
                trailing = false;
            }
        }
    }
    let mut out = String::new();
    for s in &kept {
        out.push('/');
        out.push_str(s);
    }
    if trailing || out.is_empty() {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_server_reads_is_what_a_rule_sees() {
        for (raw, path) in [
            ("http://x.test/%74ransfer", "/transfer"),
            ("http://x.test//transfer", "/transfer"),
            ("http://x.test/a/..//transfer", "/transfer"),
            ("http://x.test/a/%2e%2e/transfer", "/transfer"),
            ("http://x.test/a/%2E%2E/%2e/transfer/", "/transfer/"),
            ("http://x.test/TRANSFER", "/TRANSFER"),
            ("http://x.test/a%2fb", "/a%2Fb"),
            ("http://x.test/a/b/..", "/a/"),
            ("http://x.test", "/"),
            ("http://x.test/%7Euser/%41", "/~user/A"),
        ] {
            assert_eq!(CanonicalUrl::of(raw).path, path, "{raw}");
        }
        let url = CanonicalUrl::of("HTTP://BÜCHER.Example:80//a/%64elete/?next=/x/%64elete/#f");
        assert_eq!(
            url.url,
            "http://xn--bcher-kva.example/a/delete/?next=/x/delete/"
        );
        assert_eq!(url.path, "/a/delete/");
        assert_eq!(url.query, "next=/x/delete/");
        assert_eq!(CanonicalUrl::of("not a url").url, "not a url");
        assert_eq!(CanonicalUrl::of("data:text/plain,x").path, "");
        // An escape cut short stays as written.
        assert_eq!(CanonicalUrl::of("http://x.test/a%7").path, "/a%7");
    }
}
