//! The data-flow check against prompt injection: what a browser session has read,
//! by the origin it was read on, and whether a string the agent sends toward a site
//! carries a run of it to another origin.
//!
//! [`History`] keeps the session's reads as normalised lines (ASCII lowercased,
//! whitespace collapsed), each line once per origin, within a byte capacity. When it
//! is full, half the room is freed from what matters least: the lines of the origin
//! holding the most, its prose before its data, oldest first — so reading megabytes
//! from one site never evicts what another site showed. It is indexed by winnowing (Schleimer, Wilkerson
//! and Aiken, "Winnowing: local algorithms for document fingerprinting", 2003): of
//! every window of `min_length - 7` consecutive 8-byte grams, the gram of least rank
//! is kept. Any run of at least `min_length` bytes shared with the history holds a
//! whole window, so it holds a kept gram: a lookup tries each gram of the outbound
//! string once (a hash probe), and only a hit is extended byte by byte to the whole
//! run. The cost of a check grows with the outbound string, not with the history.
//!
//! A run counts only when it is long enough to be data rather than common words: at
//! least `min_length` bytes holding a token of 6 or more bytes with a digit or one of
//! `@_=/+%#&` (an account number, an address, a token), or `word_length` bytes of
//! anything. A product name's `G9` or a year is a word. A run
//! the destination itself (or an origin the caller frees) has shown is not a flow:
//! data typed back where it came from flows freely.
//!
//! Outbound strings are checked in the forms the redactor knows ([`forms`]): as they
//! are, with escapes undone (percent, HTML references, backslash escapes), and with
//! base64 and hex runs decoded.
//!
//! Numbers are printed in groups (`DE89 3704 0044 0532 0130 00`, `4111 1111 1111
//! 1111`, `532-71-9904`, `(415) 555-0100`) and sent without them, or grouped another
//! way. A second index holds each kept line with its grouping taken out (spaces,
//! dashes, parentheses); an outbound string regrouped the same way is checked there,
//! and a shared run counts when one token of it (letters and digits) holds at least
//! [`REGROUPED_DIGITS`] digits: an
//! IBAN, a card, a social security or phone number, an account id. Dots and colons
//! stay (an address, a price, a time is no grouping), so `10.20.30.40` stays apart.

mod forms;
mod precision;

use std::collections::{HashMap, HashSet};

use foldhash::fast::FixedState;

pub use forms::Form;
pub use precision::Own;

/// Bytes in one gram: a gram is a `u64`, so it needs no hash of its own.
const GRAM: usize = 8;

/// Most earlier places a gram is followed to: a gram so common that more share it
/// says little, and the check stays bounded.
const CHAIN: usize = 16;

/// Shortest token that makes a run data rather than words ([`DATA`]).
const DATA_TOKEN: usize = 6;

/// What makes a line worth keeping longer than prose (eviction): a digit, or a
/// character words seldom hold. Whether a run *counts* is stricter
/// ([`precision::is_data_token`]): `4417-2290-8812`, `021000021`,
/// `alice@mail.example` and `sk_live_x1` are data; `G9`, `2026`, `WH-1000XM5`,
/// `2.4.1` and `1,249.00` are not.
const DATA: &[u8] = b"0123456789@_=/+%#&";

/// Shortest run that may count: a gram and a byte.
pub const MIN_LENGTH: usize = GRAM + 1;

/// Fewest digits a run shared with the grouping taken out holds to count: a date, a
/// price or a postcode has fewer; an IBAN, a card or a social security number more.
pub const REGROUPED_DIGITS: usize = 9;

/// What groups a printed number: taken out for the regrouped match.
const GROUPING: &[u8] = b" -()";

/// Longest `min_length` (its window of grams stays small).
pub const MAX_LENGTH: usize = 256;

/// How the check judges runs, and how much it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Shortest run that counts when it holds more than words ([`MIN_LENGTH`] ..=
    /// [`MAX_LENGTH`]).
    pub min_length: usize,
    /// Shortest run of words alone that counts (at least `min_length`).
    pub word_length: usize,
    /// Most bytes of normalised text kept.
    pub capacity: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            min_length: 12,
            word_length: 40,
            capacity: 1 << 20,
        }
    }
}

/// How a string is judged: where it may go, and what is the caller's own.
#[derive(Clone, Copy)]
pub struct Check<'a> {
    /// Origins anything may go to (shared sets, exempt origins).
    pub free: &'a (dyn Fn(&str) -> bool + Sync),
    /// Where the string goes, when known: what it showed flows there, and so does
    /// what another page put in a link to it.
    pub to: Option<&'a str>,
    /// The caller's own identifiers.
    pub own: &'a Own,
}

impl Check<'_> {
    // `judge` under a check freeing only what `free` says: no destination, nothing
    // of the caller's own.
    fn freeing<R>(free: &(dyn Fn(&str) -> bool + Sync), judge: impl FnOnce(&Check<'_>) -> R) -> R {
        let own = Own::default();
        judge(&Check {
            free,
            to: None,
            own: &own,
        })
    }

    fn frees(&self, origin: &str) -> bool {
        self.to == Some(origin) || (self.free)(origin)
    }
}

impl std::fmt::Debug for Check<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check")
            .field("to", &self.to)
            .field("own", &self.own)
            .finish_non_exhaustive()
    }
}

/// Deepest a URL is read inside another's query (`?next=https://…`).
const URL_DEPTH: u8 = 3;

/// A run of data read on one origin that an outbound string carries elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    /// The run, as the history holds it (normalised).
    pub run: String,
    /// The origin it was read on.
    pub from: String,
    /// The form the outbound string carried it in.
    pub form: Form,
}

// What a history's lines are: text as read, or the same with the grouping of
// printed numbers taken out (its runs count by their digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Regrouped,
}

/// What a session has read, by origin: bounded, and indexed for [`History::find`].
#[derive(Debug, Clone)]
pub struct History {
    settings: Settings,
    kind: Kind,
    // The same lines with their grouping taken out (only on a `Text` history).
    regrouped: Option<Box<History>>,
    // Grams in a winnowing window.
    window: usize,
    // Normalised lines, each ended by `\n`.
    text: Vec<u8>,
    // Where each line starts in `text`, and its origin; in order.
    lines: Vec<Line>,
    origins: Vec<String>,
    // (origin, hash of line) of every line kept: a line is kept once per origin.
    seen: HashSet<(u32, u64), FixedState>,
    // A kept gram → its newest print.
    index: HashMap<u64, u32, FixedState>,
    prints: Vec<Print>,
    // Identifiers shorter than a run (a six-digit code, a passport number), by
    // hash, and the origins that showed each: too short for the grams, found whole.
    short: HashMap<u64, Vec<u32>, FixedState>,
}

#[derive(Debug, Clone, Copy)]
struct Line {
    start: u32,
    origin: u32,
    // A heading's, a link's or a page's title line: its words are what a site
    // publishes to be referred to by, so only data in it counts.
    named: bool,
}

// A kept gram's place, and the print of the same gram before it (`NONE`: none).
#[derive(Debug, Clone, Copy)]
struct Print {
    at: u32,
    before: u32,
}

const NONE: u32 = u32::MAX;

/// How much a history holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Bytes of normalised text.
    pub bytes: usize,
    /// Lines kept.
    pub lines: usize,
    /// Grams kept in the index.
    pub prints: usize,
}

impl History {
    /// An empty history. `settings` are clamped to their bounds.
    pub fn new(settings: Settings) -> History {
        let min_length = settings.min_length.clamp(MIN_LENGTH, MAX_LENGTH);
        let settings = Settings {
            min_length,
            word_length: settings.word_length.max(min_length),
            capacity: settings.capacity.max(1024),
        };
        let mut history = History::of_kind(settings, Kind::Text);
        // Only lines with digits enough go there: a quarter of the room does.
        let regrouped = Settings {
            min_length: MIN_LENGTH,
            word_length: MAX_LENGTH,
            capacity: (settings.capacity / 4).max(1024),
        };
        history.regrouped = Some(Box::new(History::of_kind(regrouped, Kind::Regrouped)));
        history
    }

    fn of_kind(settings: Settings, kind: Kind) -> History {
        History {
            settings,
            kind,
            regrouped: None,
            window: settings.min_length - GRAM + 1,
            text: Vec::new(),
            lines: Vec::new(),
            origins: Vec::new(),
            seen: HashSet::default(),
            index: HashMap::default(),
            prints: Vec::new(),
            short: HashMap::default(),
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// How much it holds.
    pub fn size(&self) -> Size {
        Size {
            bytes: self.text.len(),
            lines: self.lines.len(),
            prints: self.prints.len(),
        }
    }

    /// Keeps what was read on `origin`: each line of `text` long enough to hold a run,
    /// unless this origin showed it before.
    pub fn read(&mut self, origin: &str, text: &str) {
        self.read_kept(origin, text, |_| {});
    }

    /// [`History::read`], telling `kept` each line it kept (normalised): what another
    /// history fed these lines holds the same runs.
    pub fn read_kept(&mut self, origin: &str, text: &str, mut kept: impl FnMut(&[u8])) {
        let origin = self.origin_index(origin);
        let mut line = Vec::new();
        for raw in text.split('\n') {
            normalise_into(raw, &mut line);
            if line.len() < self.settings.min_length {
                continue;
            }
            let key = (origin, FixedState::default().hash_one(&line[..]));
            if !self.seen.insert(key) {
                continue;
            }
            if self.text.len() + line.len() + 1 > self.settings.capacity {
                self.forget_older_half();
            }
            self.push_line(origin, &line);
            if let Some(regrouped) = self.regrouped.as_deref_mut() {
                regrouped.take_regrouped(&self.origins[origin as usize], &line);
            }
            kept(&line);
        }
    }

    // Keeps a normalised `line` of `origin` with its grouping taken out, when it
    // holds digits enough to count.
    fn take_regrouped(&mut self, origin: &str, line: &[u8]) {
        let squeezed = ungrouped(line);
        if digits(&squeezed) < REGROUPED_DIGITS {
            return;
        }
        let origin = self.origin_index(origin);
        let key = (origin, FixedState::default().hash_one(&squeezed[..]));
        if !self.seen.insert(key) {
            return;
        }
        if self.text.len() + squeezed.len() + 1 > self.settings.capacity {
            self.forget_older_half();
        }
        self.push_line(origin, &squeezed);
    }

    /// The first run of this history that `outbound` carries, in any form, to an
    /// origin other than the one it was read on; `free(origin)` says which origins it
    /// may go to (the destination itself, a shared set).
    pub fn find(&self, outbound: &str, free: impl Fn(&str) -> bool + Sync) -> Option<Flow> {
        Check::freeing(&free, |check| self.check(outbound, check))
    }

    /// [`History::find`] under a whole [`Check`]. A URL written in the string is read
    /// part by part, as a navigation's ([`History::check_url`]).
    pub fn check(&self, outbound: &str, check: &Check<'_>) -> Option<Flow> {
        self.check_at(outbound, check, 0)
    }

    fn check_at(&self, outbound: &str, check: &Check<'_>, depth: u8) -> Option<Flow> {
        if self.prints.is_empty() {
            return None;
        }
        if depth < URL_DEPTH && outbound.contains("://") {
            let spans = precision::urls(outbound.as_bytes());
            if !spans.is_empty() {
                let mut rest = String::with_capacity(outbound.len());
                let mut last = 0;
                for &(start, end) in &spans {
                    rest.push_str(&outbound[last..start]);
                    rest.push(' ');
                    last = end;
                }
                rest.push_str(&outbound[last..]);
                return spans
                    .iter()
                    .find_map(|&(start, end)| {
                        self.check_url_at(&outbound[start..end], check, depth + 1)
                    })
                    .or_else(|| self.check_text(&rest, check));
            }
        }
        self.check_text(outbound, check)
    }

    // The check of a string in every form it may carry a run in.
    fn check_text(&self, outbound: &str, check: &Check<'_>) -> Option<Flow> {
        let forms = forms::of(outbound);
        forms
            .iter()
            .find_map(|(form, text)| self.find_in(text, *form, check))
            .or_else(|| {
                // Printed numbers grouped another way (or not at all), in any form.
                let regrouped = self.regrouped.as_deref()?;
                forms.iter().find_map(|(_, text)| {
                    let mut out = Vec::new();
                    normalise_into(text, &mut out);
                    let squeezed = ungrouped(&out);
                    (digits(&squeezed) >= REGROUPED_DIGITS)
                        .then(|| regrouped.find_normalised(&squeezed, Form::Regrouped, check, None))
                        .flatten()
                })
            })
    }

    /// A run `now` carries only together with what was sent just before it (`before`,
    /// oldest first): a value split over calls (`DE89 3704 0044` typed, then
    /// `0532 0130 00`). Only a run reaching into `now` counts: one wholly in what was
    /// sent before was judged then.
    pub fn check_split(&self, before: &[&str], now: &str, check: &Check<'_>) -> Option<Flow> {
        if self.prints.is_empty() || before.is_empty() {
            return None;
        }
        let mut tail = Vec::new();
        let mut piece = Vec::new();
        for text in before {
            normalise_into(text, &mut piece);
            tail.extend_from_slice(&piece);
        }
        normalise_into(now, &mut piece);
        if piece.is_empty() || tail.is_empty() {
            return None;
        }
        for glue in [&b""[..], b" "] {
            let mut joined = tail.clone();
            joined.extend_from_slice(glue);
            let now = joined.len();
            joined.extend_from_slice(&piece);
            let across = Some((tail.len(), now));
            if let Some(found) = self.find_normalised(&joined, Form::Split, check, across) {
                return Some(found);
            }
        }
        let regrouped = self.regrouped.as_deref()?;
        let mut joined = ungrouped(&tail);
        let boundary = joined.len();
        joined.extend_from_slice(&ungrouped(&piece));
        let across = Some((boundary, boundary));
        (digits(&joined) >= REGROUPED_DIGITS)
            .then(|| regrouped.find_normalised(&joined, Form::Split, check, across))
            .flatten()
    }

    /// [`History::find`] for a URL the agent would navigate to: its host, its
    /// userinfo, each path segment, each query key and value and its fragment are
    /// checked apart, so the
    /// URL around a value is never part of a run. A URL the history shows whole is a
    /// link a page offered: following it carries nothing the agent put together.
    pub fn find_in_url(&self, url: &str, free: impl Fn(&str) -> bool + Sync) -> Option<Flow> {
        Check::freeing(&free, |check| self.check_url(url, check))
    }

    /// [`History::find_in_url`] under a whole [`Check`]. A query value or fragment
    /// that is a URL itself (`?next=https://shop.example/cart`) is read part by part
    /// too: the previous page's address is where a site sends the browser back, and
    /// what it carries counts only by its parts.
    pub fn check_url(&self, url: &str, check: &Check<'_>) -> Option<Flow> {
        self.check_url_at(url, check, 0)
    }

    fn check_url_at(&self, url: &str, check: &Check<'_>, depth: u8) -> Option<Flow> {
        if self.prints.is_empty() {
            return None;
        }
        let Ok(parsed) = url::Url::parse(url) else {
            return self.check_text(url, check);
        };
        if self.shows_whole(parsed.as_str()) {
            return None;
        }
        let mut parts: Vec<String> = Vec::new();
        if let Some(host) = parsed.host_str() {
            parts.push(host.to_owned());
        }
        // Userinfo reaches the site too (a 401 Basic answer has the browser send it).
        parts.push(parsed.username().to_owned());
        if let Some(password) = parsed.password() {
            parts.push(password.to_owned());
        }
        parts.extend(parsed.path().split('/').map(str::to_owned));
        for (key, value) in parsed.query_pairs() {
            parts.push(key.into_owned());
            parts.push(value.into_owned());
        }
        if let Some(fragment) = parsed.fragment() {
            parts.push(fragment.to_owned());
        }
        parts
            .iter()
            .filter(|p| p.len() >= MIN_LENGTH)
            .find_map(|p| {
                let nested = depth < URL_DEPTH
                    && (p.starts_with("http://") || p.starts_with("https://"))
                    && url::Url::parse(p).is_ok();
                match nested {
                    true => self.check_url_at(p, check, depth + 1),
                    false => self.check_at(p, check, depth + 1),
                }
            })
    }

    // Whether some line holds all of `text` (normalised).
    fn shows_whole(&self, text: &str) -> bool {
        let mut wanted = Vec::new();
        normalise_into(text, &mut wanted);
        let wanted = wanted.strip_suffix(b"/").unwrap_or(&wanted);
        if wanted.len() < self.settings.min_length {
            return false;
        }
        self.runs(wanted)
            .any(|run| run.start == 0 && run.end >= wanted.len())
    }

    fn find_in(&self, text: &str, form: Form, check: &Check<'_>) -> Option<Flow> {
        let mut out = Vec::new();
        normalise_into(text, &mut out);
        self.find_normalised(&out, form, check, None)
    }

    // [`History::find_in`] of an outbound string already in this history's shape;
    // with `across` (where the earlier text ends, where this one starts), only a run
    // holding bytes of both counts.
    fn find_normalised(
        &self,
        out: &[u8],
        form: Form,
        check: &Check<'_>,
        across: Option<(usize, usize)>,
    ) -> Option<Flow> {
        if self.prints.is_empty() {
            return None;
        }
        if out.len() < self.settings.min_length {
            return match across {
                None => self.find_short(out, form, check),
                Some(_) => None,
            };
        }
        // A split's run holds bytes of both sides of the join.
        let crosses = |start: usize, end: usize| {
            across.is_none_or(|(before, now)| start < before && now < end)
        };
        let mut foreign: Vec<Run> = Vec::new();
        let mut allowed: Vec<(usize, usize)> = check.own.spans(out);
        for run in self.runs(out) {
            if !crosses(run.start, run.end) || !self.counts_at(&out[run.start..run.end], run.at) {
                continue;
            }
            if check.frees(&self.origins[run.origin as usize]) {
                allowed.push((run.start, run.end));
            } else if check.to.is_some_and(|to| self.links_to(&run, to)) {
                // The page put it in a link to the destination: it sends it there.
                allowed.push((run.start, run.end));
            } else {
                foreign.push(run);
            }
        }
        if foreign.is_empty() {
            return match across {
                None => self.find_short(out, form, check),
                Some(_) => None,
            };
        }
        // An address at one of the caller's domains, as a page showed it whole.
        for (start, at, end) in check.own.addresses(out) {
            for run in foreign.iter().filter(|r| r.start <= at && at < r.end) {
                allowed.push((start.max(run.start), end.min(run.end)));
            }
        }
        // What of each foreign run no free origin has shown counts on its own.
        for run in foreign {
            for (start, end) in uncovered(run.start, run.end, &allowed) {
                if crosses(start, end) && self.counts_at(&out[start..end], run.at) {
                    return Some(Flow {
                        run: String::from_utf8_lossy(&out[start..end]).into_owned(),
                        from: self.origins[run.origin as usize].clone(),
                        form,
                    });
                }
            }
        }
        // Every run was free: a short identifier beside them still counts.
        match across {
            None => self.find_short(out, form, check),
            Some(_) => None,
        }
    }

    // An identifier too short for a run (a six-digit code, a passport number) that
    // `out` holds whole, as a token, and only another origin showed.
    fn find_short(&self, out: &[u8], form: Form, check: &Check<'_>) -> Option<Flow> {
        if self.short.is_empty() {
            return None;
        }
        let own = check.own.spans(out);
        precision::short_tokens(out, self.settings.min_length).find_map(|token| {
            let origins = self.short.get(&precision::token_hash(token))?;
            if origins
                .iter()
                .any(|&o| check.frees(&self.origins[o as usize]))
            {
                return None;
            }
            let at = token.as_ptr() as usize - out.as_ptr() as usize;
            if own.iter().any(|&(s, e)| s <= at && at + token.len() <= e) {
                return None;
            }
            Some(Flow {
                run: String::from_utf8_lossy(token).into_owned(),
                from: self.origins[origins[0] as usize].clone(),
                form,
            })
        })
    }

    // Whether the line `run` was found in writes it inside a link to `to`: a URL of
    // that origin holding the whole run.
    fn links_to(&self, run: &Run, to: &str) -> bool {
        let line = self.line_of(run.at);
        let line_start = self.lines[line].start as usize;
        let text = &self.text[line_start..self.line_end(line)];
        let (from, until) = (
            run.at - line_start,
            run.at - line_start + (run.end - run.start),
        );
        precision::urls(text).into_iter().any(|(start, end)| {
            start < from
                && until <= end
                && precision::origin_of(&text[start..end]).is_some_and(|o| o == to)
        })
    }

    // Every maximal run `out` shares with a kept line, found through kept grams.
    fn runs<'a>(&'a self, out: &'a [u8]) -> impl Iterator<Item = Run> + 'a {
        (0..out.len().saturating_sub(GRAM - 1)).flat_map(move |i| {
            let gram = gram_at(out, i);
            let mut next = self.index.get(&gram).copied().unwrap_or(NONE);
            let mut found = Vec::new();
            let mut steps = 0;
            while next != NONE && steps < CHAIN {
                let print = self.prints[next as usize];
                next = print.before;
                steps += 1;
                let at = print.at as usize;
                let line = self.line_of(at);
                let line_start = self.lines[line].start as usize;
                let line_end = self.line_end(line);
                let mut back = 0;
                while back < i
                    && at - back > line_start
                    && out[i - back - 1] == self.text[at - back - 1]
                {
                    back += 1;
                }
                let mut ahead = GRAM;
                while i + ahead < out.len()
                    && at + ahead < line_end
                    && out[i + ahead] == self.text[at + ahead]
                {
                    ahead += 1;
                }
                found.push(Run {
                    start: i - back,
                    end: i + ahead,
                    at: at - back,
                    origin: self.lines[line].origin,
                });
            }
            found
        })
    }

    // [`History::counts`] of a run found at `at` in the history: in a named line
    // (a heading, a link, a title) words alone never count.
    fn counts_at(&self, run: &[u8], at: usize) -> bool {
        if self.kind == Kind::Text && self.lines[self.line_of(at)].named {
            return run.len() >= self.settings.min_length
                && !is_origin(run)
                && run.split(|b| *b == b' ').any(precision::is_data_token);
        }
        self.counts(run)
    }

    // Whether a run is data: long enough, and more than words unless very long.
    fn counts(&self, run: &[u8]) -> bool {
        let Settings {
            min_length,
            word_length,
            ..
        } = self.settings;
        if self.kind == Kind::Regrouped {
            return run.len() >= min_length
                && digits(run) >= REGROUPED_DIGITS
                && !run
                    .split(|b| !b.is_ascii_alphanumeric())
                    .any(precision::is_isbn);
        }
        if is_origin(run) {
            return false;
        }
        run.len() >= word_length
            || (run.len() >= min_length && run.split(|b| *b == b' ').any(precision::is_data_token))
    }

    fn origin_index(&mut self, origin: &str) -> u32 {
        match self.origins.iter().position(|o| o == origin) {
            Some(i) => i as u32,
            None => {
                self.origins.push(origin.to_owned());
                (self.origins.len() - 1) as u32
            }
        }
    }

    fn push_line(&mut self, origin: u32, line: &[u8]) {
        let start = self.text.len();
        self.lines.push(Line {
            start: start as u32,
            origin,
            named: precision::is_named_line(line),
        });
        self.text.extend_from_slice(line);
        self.text.push(b'\n');
        self.winnow(start, start + line.len());
        if self.kind == Kind::Text {
            for token in precision::short_tokens(line, self.settings.min_length) {
                let origins = self.short.entry(precision::token_hash(token)).or_default();
                if !origins.contains(&origin) {
                    origins.push(origin);
                }
            }
        }
    }

    // Keeps the least-ranked gram of each window of `self.window` grams of
    // `text[start..end]` (the rightmost on a tie), each place once.
    fn winnow(&mut self, start: usize, end: usize) {
        let count = end - start - GRAM + 1;
        let ranks: Vec<u64> = (0..count)
            .map(|i| rank(gram_at(&self.text, start + i)))
            .collect();
        let mut queue: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
        let mut last = usize::MAX;
        for i in 0..count {
            while queue.back().is_some_and(|&j| ranks[j] >= ranks[i]) {
                queue.pop_back();
            }
            queue.push_back(i);
            if queue.front().is_some_and(|&j| j + self.window <= i) {
                queue.pop_front();
            }
            if i + 1 >= self.window
                && let Some(&least) = queue.front()
                && least != last
            {
                last = least;
                let at = start + least;
                let gram = gram_at(&self.text, at);
                let before = self.index.get(&gram).copied().unwrap_or(NONE);
                self.index.insert(gram, self.prints.len() as u32);
                self.prints.push(Print {
                    at: at as u32,
                    before,
                });
            }
        }
    }

    // Frees half the room and indexes the rest anew. What goes is what matters
    // least, not what came first: lines of the origin holding the most (so a flood
    // from one site evicts that site's own lines, never what another showed), and of
    // those its prose before its data (a line holding a token that counts as data),
    // oldest first. An agent made to read megabytes of filler keeps the account
    // number it read elsewhere.
    fn forget_older_half(&mut self) {
        let target = self.text.len() / 2;
        let count = self.lines.len();
        let mut bytes = vec![0usize; self.origins.len()];
        let mut prose: Vec<std::collections::VecDeque<usize>> =
            vec![std::collections::VecDeque::new(); self.origins.len()];
        let mut data = prose.clone();
        for i in 0..count {
            let origin = self.lines[i].origin as usize;
            let start = self.lines[i].start as usize;
            let line = &self.text[start..self.line_end(i)];
            bytes[origin] += line.len() + 1;
            if self.kind == Kind::Regrouped || holds_data(line) {
                data[origin].push_back(i);
            } else {
                prose[origin].push_back(i);
            }
        }
        let mut total = self.text.len();
        let mut dropped = vec![false; count];
        while total > target {
            let Some(origin) = (0..bytes.len())
                .filter(|&o| !prose[o].is_empty() || !data[o].is_empty())
                .max_by_key(|&o| bytes[o])
            else {
                break;
            };
            let Some(i) = prose[origin]
                .pop_front()
                .or_else(|| data[origin].pop_front())
            else {
                break;
            };
            let size = self.line_end(i) - self.lines[i].start as usize + 1;
            dropped[i] = true;
            total -= size;
            bytes[origin] -= size;
        }
        let kept: Vec<(u32, Vec<u8>)> = (0..count)
            .filter(|&i| !dropped[i])
            .map(|i| {
                let start = self.lines[i].start as usize;
                let end = self.line_end(i);
                (self.lines[i].origin, self.text[start..end].to_vec())
            })
            .collect();
        self.text.clear();
        self.lines.clear();
        self.seen.clear();
        self.index.clear();
        self.prints.clear();
        self.short.clear();
        for (origin, line) in kept {
            self.seen
                .insert((origin, FixedState::default().hash_one(&line[..])));
            self.push_line(origin, &line);
        }
    }

    // The line holding text byte `at`.
    fn line_of(&self, at: usize) -> usize {
        self.lines.partition_point(|l| l.start as usize <= at) - 1
    }

    // Where line `i` ends (its `\n`).
    fn line_end(&self, i: usize) -> usize {
        match self.lines.get(i + 1) {
            Some(next) => next.start as usize - 1,
            None => self.text.len() - 1,
        }
    }
}

// A run an outbound string shares with a line: its bytes in the outbound string.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: usize,
    end: usize,
    // Where it starts in the history's text.
    at: usize,
    origin: u32,
}

use std::hash::BuildHasher as _;

// Whether a run is no more than a site's address (`https://host:port/`, or an IPv4
// address with its port): where a site is, which pages and agents name everywhere,
// is not data read from it.
fn is_origin(run: &[u8]) -> bool {
    let (schemed, rest) = match run
        .strip_prefix(b"https://")
        .or_else(|| run.strip_prefix(b"http://"))
    {
        Some(rest) => (true, rest),
        None => (false, run),
    };
    let rest = rest.strip_suffix(b"/").unwrap_or(rest);
    if rest.iter().any(|b| b"/?#@".contains(b)) {
        return false;
    }
    let host = rest.split(|b| *b == b':').next().unwrap_or_default();
    let ipv4 = host.split(|b| *b == b'.').count() == 4
        && host.iter().all(|b| b.is_ascii_digit() || *b == b'.');
    schemed || ipv4
}

// The 8 bytes at `at`, as one number.
fn gram_at(text: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; GRAM];
    bytes.copy_from_slice(&text[at..at + GRAM]);
    u64::from_le_bytes(bytes)
}

// A gram's rank for winnowing: a fixed mix of its bits (the splitmix64 finaliser), so
// which gram of a window is kept does not follow the alphabet.
fn rank(gram: u64) -> u64 {
    let mut z = gram.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

// `text` normalised into `out`: ASCII lowercased, every whitespace run one space, no
// space at either end.
fn normalise_into(text: &str, out: &mut Vec<u8>) {
    out.clear();
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(b' ');
            space = false;
        }
        let mut buf = [0u8; 4];
        let encoded = c.to_ascii_lowercase().encode_utf8(&mut buf);
        out.extend_from_slice(encoded.as_bytes());
    }
}

// Whether a normalised line holds data (a token [`History::counts`] would take for
// data, or a printed number): kept longer than prose.
fn holds_data(line: &[u8]) -> bool {
    line.split(|b| *b == b' ')
        .any(|token| token.len() >= DATA_TOKEN && token.iter().any(|b| DATA.contains(b)))
        || digits(&ungrouped(line)) >= REGROUPED_DIGITS
}

// A normalised line with the grouping of printed numbers taken out: spaces between
// tokens, dashes and parentheses inside them. A date or a time stays apart (its
// digits are no part of a number printed beside it: `2026-12-24 10:30`).
fn ungrouped(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut last_apart = false;
    for (i, token) in line.split(|b| *b == b' ').enumerate() {
        let apart = precision::is_date_or_time(token);
        if i > 0 && (apart || last_apart) {
            out.push(b' ');
        }
        match apart {
            true => out.extend_from_slice(token),
            false => out.extend(token.iter().filter(|b| !GROUPING.contains(b))),
        }
        last_apart = apart;
    }
    out
}

// The most ASCII digits one token of `bytes` holds (a token: letters and digits,
// ended by anything else, so `10.20.30.40` is four tokens).
fn digits(bytes: &[u8]) -> usize {
    bytes
        .split(|b| !b.is_ascii_alphanumeric())
        .map(|token| token.iter().filter(|b| b.is_ascii_digit()).count())
        .max()
        .unwrap_or(0)
}

// The parts of `start..end` no span of `allowed` covers.
fn uncovered(start: usize, end: usize, allowed: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut parts = vec![(start, end)];
    for &(a, b) in allowed {
        parts = parts
            .into_iter()
            .flat_map(|(s, e)| {
                if b <= s || a >= e {
                    return vec![(s, e)];
                }
                let mut left = Vec::new();
                if a > s {
                    left.push((s, a));
                }
                if b < e {
                    left.push((b, e));
                }
                left
            })
            .collect();
    }
    parts
}

#[cfg(test)]
mod tests;
