//! What a shared run is not, though it is one: the caller's own identifiers, what a
//! page itself put in a link toward the destination, a date, a version or a price.
//! Each is a way ordinary browsing carries text from one site to another; none lets
//! a page's reader carry what the page showed anywhere the page did not send it.

/// The caller's own identifiers: what the caller may send anywhere although a page
/// showed it (its own e-mail address on its bank's page, typed into a newsletter).
#[derive(Debug, Clone, Default)]
pub struct Own {
    // Normalised, each at least a few bytes long.
    identities: Vec<Vec<u8>>,
    // Lower case, without a leading `@` or `.`.
    domains: Vec<String>,
}

/// Shortest identity kept: a shorter one would free common words.
const IDENTITY: usize = 4;

impl Own {
    /// `identities` (e-mail addresses, names, handles: each freed wherever it
    /// appears) and e-mail `domains` (any address at one of them, or a subdomain).
    pub fn new(identities: &[String], domains: &[String]) -> Own {
        let identities = identities
            .iter()
            .map(|i| {
                let mut out = Vec::new();
                crate::normalise_into(i, &mut out);
                out
            })
            .filter(|i| i.len() >= IDENTITY)
            .collect();
        let domains = domains
            .iter()
            .map(|d| d.trim().trim_start_matches(['@', '.']).to_ascii_lowercase())
            .filter(|d| d.contains('.'))
            .collect();
        Own {
            identities,
            domains,
        }
    }

    /// Whether it frees nothing.
    pub fn is_empty(&self) -> bool {
        self.identities.is_empty() && self.domains.is_empty()
    }

    // Spans of `out` (normalised) that are an identity as listed.
    pub(crate) fn spans(&self, out: &[u8]) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        for id in &self.identities {
            let mut from = 0;
            while let Some(i) = find_bytes(&out[from..], id) {
                spans.push((from + i, from + i + id.len()));
                from += i + 1;
            }
        }
        spans
    }

    // Addresses at a listed domain in `out`: (start, the `@`, end). A run is freed
    // by one only when it crosses the `@`, i.e. the page showed the address itself:
    // a value a page showed written as the local part of an address at the
    // caller's domain (`acct-4417…@corp.example`) is no address of the caller's.
    pub(crate) fn addresses(&self, out: &[u8]) -> Vec<(usize, usize, usize)> {
        if self.domains.is_empty() {
            return Vec::new();
        }
        let mut found = Vec::new();
        for (at, _) in out.iter().enumerate().filter(|(_, b)| **b == b'@') {
            let start = (0..at)
                .rev()
                .take_while(|&j| is_local_byte(out[j]))
                .last()
                .unwrap_or(at);
            let mut end = at + 1;
            while end < out.len() && (out[end].is_ascii_alphanumeric() || b"-.".contains(&out[end]))
            {
                end += 1;
            }
            let domain = String::from_utf8_lossy(&out[at + 1..end]);
            let domain = domain.trim_end_matches('.');
            let listed = self
                .domains
                .iter()
                .any(|d| domain == d || domain.ends_with(&format!(".{d}")));
            if listed && start < at {
                found.push((start, at, at + 1 + domain.len()));
            }
        }
        found
    }
}

fn is_local_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"._%+-".contains(&b)
}

pub(crate) fn find_bytes(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Fewest digits that make a token data by its digits alone: a six-digit code, an
/// account or an order number; not a model number (`wh-1000xm5`), a version or a
/// year.
pub(crate) const DATA_DIGITS: usize = 6;

/// What makes a token data whatever its digits: an address, a key's or a query's
/// punctuation. (`/` is not: paths are read part by part. `_` is with a digit, in a
/// token of 8 bytes or more: `sk_live_51hq…`, not `serde_json` or `x86_64`.)
const MARKS: &[u8] = b"@=+%#&";

/// Whether a token of a normalised line is data (an account, an address, a token),
/// not a word, a model number, a date, a time, a version or a price.
pub(crate) fn is_data_token(token: &[u8]) -> bool {
    if token.len() < crate::DATA_TOKEN {
        return false;
    }
    if token.iter().any(|b| MARKS.contains(b)) {
        return true;
    }
    let digits = token.iter().filter(|b| b.is_ascii_digit()).count();
    if token.contains(&b'_') && digits > 0 && token.len() >= 8 {
        return true;
    }
    digits >= DATA_DIGITS && !is_number_shape(token) && !is_isbn(token)
}

/// Whether the digits of `text` are an ISBN-13 (978 or 979, its check digit right):
/// public reference data, the same on every bookshop.
pub(crate) fn is_isbn(text: &[u8]) -> bool {
    let mut digits = [0u32; 13];
    let mut count = 0;
    for b in text.iter().filter(|b| b.is_ascii_digit()) {
        if count == 13 {
            return false;
        }
        digits[count] = u32::from(b - b'0');
        count += 1;
    }
    if count != 13 || digits[..2] != [9, 7] || !matches!(digits[2], 8 | 9) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .enumerate()
        .map(|(i, d)| if i % 2 == 0 { *d } else { d * 3 })
        .sum();
    sum.is_multiple_of(10)
}

// Whether a token is only short groups of digits between separators: a date
// (`2026-12-24`, `24.12.2026`), a time, a version (`2.4.1`), a price (`12,400.00`).
// Such a number counts as data through the regrouped index, when its digits make an
// identifier's (a social security number, `532-71-9904`).
fn is_number_shape(token: &[u8]) -> bool {
    let mut token = token.strip_prefix(b"$").unwrap_or(token);
    while let Some((last, rest)) = token.split_last()
        && b",.;:".contains(last)
    {
        token = rest;
    }
    let mut groups = 0;
    for group in token.split(|b| b"-./:,".contains(b)) {
        if group.is_empty() || group.len() > 4 || !group.iter().all(u8::is_ascii_digit) {
            return false;
        }
        groups += 1;
    }
    groups >= 2
}

/// The http(s) URLs written in a normalised line or string: (start, end) of each,
/// ended by whitespace, a quote or a bracket.
pub(crate) fn urls(text: &[u8]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = find_bytes(&text[from..], b"http") {
        let start = from + i;
        let rest = &text[start..];
        let scheme = if rest.starts_with(b"https://") {
            8
        } else if rest.starts_with(b"http://") {
            7
        } else {
            from = start + 4;
            continue;
        };
        let mut end = start + scheme;
        while end < text.len() && !b" \"'<>[]()|`".contains(&text[end]) {
            end += 1;
        }
        if end > start + scheme {
            found.push((start, end));
        }
        from = end.max(start + 4);
    }
    found
}

/// The origin (`scheme://host[:port]`) of a URL as written, lower case.
pub(crate) fn origin_of(url: &[u8]) -> Option<String> {
    let url = std::str::from_utf8(url).ok()?;
    let parsed = url::Url::parse(url).ok()?;
    match parsed.scheme() {
        "http" | "https" => Some(parsed.origin().ascii_serialization()),
        _ => None,
    }
}

/// Whether a normalised snapshot line names something a site publishes to be
/// referred to by: a heading, a link, the page line (`page: title (url)`).
pub(crate) fn is_named_line(line: &[u8]) -> bool {
    let mut tokens = line
        .split(|b| *b == b' ')
        .skip_while(|t| *t == b"-" || is_ref(t));
    matches!(tokens.next(), Some(b"heading" | b"link" | b"page:"))
}

// Whether a token is an element's ref (`e5`, `f1e12`, `t2e3`).
fn is_ref(token: &[u8]) -> bool {
    let Some(e) = token.iter().rposition(|b| *b == b'e') else {
        return false;
    };
    let (head, node) = (&token[..e], &token[e + 1..]);
    !node.is_empty()
        && node.iter().all(u8::is_ascii_digit)
        && head
            .split(|b| *b == b't' || *b == b'f')
            .all(|g| g.iter().all(u8::is_ascii_digit))
        && (head.is_empty() || head[0] == b't' || head[0] == b'f')
}

// Whether a token is a date (`2026-12-24`, `24.12.2026`, `12/24/2026`) or a time
// (`10:30`).
pub(crate) fn is_date_or_time(token: &[u8]) -> bool {
    // Most tokens are words: they never start with a digit.
    if !token.first().is_some_and(u8::is_ascii_digit) {
        return false;
    }
    let token = token
        .iter()
        .rposition(|b| b.is_ascii_alphanumeric())
        .map_or(token, |end| &token[..=end]);
    if token.contains(&b':') {
        return token.iter().all(|b| b.is_ascii_digit() || *b == b':');
    }
    let (mut groups, mut years, mut short) = (0, 0, 0);
    for group in token.split(|b| b"-./".contains(b)) {
        groups += 1;
        if groups > 3 || group.is_empty() || !group.iter().all(u8::is_ascii_digit) {
            return false;
        }
        if group.len() == 4 && (group.starts_with(b"19") || group.starts_with(b"20")) {
            years += 1;
        } else if group.len() <= 2 {
            short += 1;
        }
    }
    groups == 3 && years == 1 && short == 2
}

// The identifiers of a normalised line shorter than a run: tokens (ended by spaces
// and the punctuation around them) of 6 bytes up to `min_length` that are data.
pub(crate) fn short_tokens(line: &[u8], min_length: usize) -> impl Iterator<Item = &[u8]> {
    line.split(|b| *b == b' ' || b"\"'()[]<>,;!?".contains(b))
        .map(|t| {
            let end = t
                .iter()
                .rposition(|b| b.is_ascii_alphanumeric())
                .map_or(0, |e| e + 1);
            &t[..end]
        })
        .filter(move |t| t.len() >= crate::DATA_TOKEN && t.len() < min_length && is_data_token(t))
}

pub(crate) fn token_hash(token: &[u8]) -> u64 {
    use std::hash::BuildHasher as _;
    foldhash::fast::FixedState::default().hash_one(token)
}
