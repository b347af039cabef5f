//! What a page shows across elements, read as one text. A secret a page cuts into
//! pieces — a character per list item, half in one element and half in the next —
//! is in no single string the redactor sees, yet a reader of the lines reads it
//! whole. Before any line is made, every string the lines will show is joined in the
//! order they show it and given to the redactor as one text; what it hides there
//! that spans more than one string is masked in each of them.

use std::borrow::Cow;
use std::ops::Range;

use airlock_core::Redact;

use super::{Folded, collapse};

/// What replaces a piece of a secret a page spread over several strings.
const MASK: &str = "[REDACTED]";

/// The strings of a folded tree in the order the lines show them: per text run one,
/// per element three (its name, value and text; empty when it has none).
pub(super) fn pieces<'a>(folded: &'a [Folded<'a>], out: &mut Vec<Cow<'a, str>>) {
    for item in folded {
        match item {
            Folded::Text(text) => out.push(Cow::Borrowed(text)),
            Folded::Node {
                node,
                text,
                children,
            } => {
                out.push(Cow::Owned(collapse(&node.name)));
                out.push(match &node.value {
                    Some(value) if !node.password => Cow::Borrowed(value.as_str()),
                    _ => Cow::Borrowed(""),
                });
                out.push(text.as_deref().map_or(Cow::Borrowed(""), Cow::Borrowed));
                pieces(children, out);
            }
        }
    }
}

/// For each piece (in [`pieces`] order), the byte ranges to mask.
#[derive(Default)]
pub(super) struct Masks(Vec<Vec<Range<usize>>>);

impl Masks {
    /// What `redactor` hides in the pieces of `folded` read together that no single
    /// piece holds. A redactor that cannot say where masks every piece whole.
    pub(super) fn of(folded: &[Folded<'_>], redactor: &dyn Redact) -> Masks {
        if !redactor.is_active() {
            return Masks::default();
        }
        let mut all = Vec::new();
        pieces(folded, &mut all);
        let lens: Vec<usize> = all.iter().map(|p| p.len()).collect();
        Masks(spread(redactor, all.iter().map(|p| p.as_ref()), &lens))
    }

    /// Piece `i` with its masked ranges replaced.
    pub(super) fn apply<'t>(&self, i: usize, piece: &'t str) -> Cow<'t, str> {
        match self.0.get(i) {
            Some(ranges) => masked(piece, ranges),
            None => Cow::Borrowed(piece),
        }
    }
}

// What `redactor` hides in `pieces` read one after another (a line break between
// each two, as a reader skips it) that no single piece holds: for each piece, the
// ranges of it to mask. A redactor that cannot say where masks every piece whole.
fn spread<'p>(
    redactor: &dyn Redact,
    pieces: impl Iterator<Item = &'p str>,
    lens: &[usize],
) -> Vec<Vec<Range<usize>>> {
    let mut joined = String::new();
    let mut starts = Vec::with_capacity(lens.len());
    for piece in pieces {
        starts.push(joined.len());
        joined.push_str(piece);
        joined.push('\n');
    }
    let mut masks = vec![Vec::new(); lens.len()];
    let Some(hidden) = redactor.hidden(&joined) else {
        for (mask, len) in masks.iter_mut().zip(lens) {
            mask.push(0..*len);
        }
        return masks;
    };
    for range in hidden {
        // The pieces it overlaps: from the one it starts in to the last starting
        // before its end.
        let first = starts
            .partition_point(|&s| s <= range.start)
            .saturating_sub(1);
        let last = starts.partition_point(|&s| s < range.end).saturating_sub(1);
        if first == last {
            continue; // inside one string: the redactor hides it there itself
        }
        for i in first..=last {
            let start = starts[i];
            let from = range.start.max(start) - start;
            let to = range.end.min(start + lens[i]).saturating_sub(start);
            if from < to {
                masks[i].push(from..to);
            }
        }
    }
    masks
}

// `text` with `ranges` (sorted, whole characters) replaced by the mask.
fn masked<'t>(text: &'t str, ranges: &[Range<usize>]) -> Cow<'t, str> {
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for range in ranges {
        if range.start < last || text.get(range.clone()).is_none() {
            continue;
        }
        out.push_str(&text[last..range.start]);
        out.push_str(MASK);
        last = range.end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// `text` (a page's text, a line per block) with what a reader reads across its
/// lines masked: a secret shown a character per list item or per line. Each line is
/// read without its list, quote or heading marker. The redactor still runs over the
/// result; this only masks what no single line holds.
pub fn mask_spread_lines<'t>(text: &'t str, redactor: &dyn Redact) -> Cow<'t, str> {
    if !redactor.is_active() {
        return Cow::Borrowed(text);
    }
    // Each line's content: (its start in `text`, its length).
    let mut contents = Vec::new();
    let mut at = 0;
    for line in text.split('\n') {
        let skip = marker_len(line);
        contents.push((at + skip, line.len() - skip));
        at += line.len() + 1;
    }
    let lens: Vec<usize> = contents.iter().map(|(_, len)| *len).collect();
    let masks = spread(
        redactor,
        contents
            .iter()
            .map(|(start, len)| &text[*start..start + len]),
        &lens,
    );
    let ranges: Vec<Range<usize>> = contents
        .iter()
        .zip(masks)
        .flat_map(|((start, _), mask)| {
            mask.into_iter()
                .map(move |r| r.start + start..r.end + start)
        })
        .collect();
    masked(text, &ranges)
}

// The bytes a line's block marker takes: indentation, then `- `, `* `, `+ `, `> `,
// `#… `, or `N. ` / `N) `.
fn marker_len(line: &str) -> usize {
    let indent = line.len() - line.trim_start().len();
    let rest = &line[indent..];
    let marker = if let Some(after) = rest
        .strip_prefix("- ")
        .or_else(|| rest.strip_prefix("* "))
        .or_else(|| rest.strip_prefix("+ "))
        .or_else(|| rest.strip_prefix("> "))
    {
        rest.len() - after.len()
    } else if rest.starts_with('#') {
        let hashes = rest.len() - rest.trim_start_matches('#').len();
        if rest[hashes..].starts_with(' ') {
            hashes + 1
        } else {
            0
        }
    } else {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let after = &rest[digits..];
        if digits > 0 && (after.starts_with(". ") || after.starts_with(") ")) {
            digits + 2
        } else {
            0
        }
    };
    indent + marker
}
