//! What the page walker hands back, and the small pure helpers around it: its
//! result and errors, frame numbering, text runs, paging of page text.

use super::*;

/// What `__airlock.snapshot` returns, as a JSON string.
#[derive(Deserialize)]
pub(crate) struct WalkResult {
    pub(crate) tree: Option<Node>,
    pub(crate) next: Option<u64>,
    pub(crate) error: Option<String>,
    /// Why the walk stopped early (a page too large, too deep or too slow to walk).
    #[serde(default)]
    pub(crate) truncated: Option<String>,
    /// The number of this whole walk of the frame's document.
    #[serde(default, rename = "gen")]
    pub(crate) walk: Option<u64>,
    /// The tree reads exactly as the walk numbered `sameAs` did (and is not sent).
    #[serde(default)]
    pub(crate) same: bool,
    /// The tree is a patch against the walk numbered `patchFrom`.
    #[serde(default)]
    pub(crate) patched: bool,
}

impl WalkResult {
    pub(crate) fn decode(value: Value) -> Result<WalkResult> {
        let text = value.as_str().ok_or_else(|| {
            Error::Protocol("the page helper returned no snapshot text".to_owned())
        })?;
        // JSON.stringify writes half of a surrogate pair as a lone `\uD8xx` escape;
        // such a page must still read (as U+FFFD), not fail every snapshot.
        serde_json::from_str(text)
            .or_else(|e| match crate::cdp::repair_surrogates(text.as_bytes()) {
                Some(repaired) => serde_json::from_slice(&repaired),
                None => Err(e),
            })
            .map_err(|e| Error::Protocol(format!("bad snapshot from the page helper: {e}")))
    }
}

pub(super) fn frame_base(tab: &Tab, frame: u32) -> Result<u64> {
    tab.state
        .read(|s| s.frames.get(frame as usize).map(|f| f.next_ref))
        .ok_or_else(|| Error::RefNotFound {
            reference: format!("f{frame}"),
        })
}

pub(super) fn collect_frame_owners(
    node: &Node,
    path: &mut Vec<usize>,
    out: &mut Vec<(Vec<usize>, u64)>,
) {
    if node.frame_owner.is_some() {
        if let Some(n) = node.node {
            out.push((path.clone(), n));
        }
        return;
    }
    for (i, child) in node.children.iter().enumerate() {
        path.push(i);
        collect_frame_owners(child, path, out);
        path.pop();
    }
}

pub(super) fn node_at<'a>(node: &'a mut Node, path: &[usize]) -> Option<&'a mut Node> {
    let mut current = node;
    for &i in path {
        current = current.children.get_mut(i)?;
    }
    Some(current)
}

pub(super) fn walker_error(value: &Value, target: &Target) -> Result<()> {
    let Some(code) = value.get("error").and_then(Value::as_str) else {
        return Ok(());
    };
    let message = value["message"].as_str().unwrap_or_default().to_owned();
    let desc = value["desc"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| target.describe());
    Err(match code {
        "ref_not_found" => Error::RefNotFound {
            reference: match target {
                Target::Ref(r) => r.to_string(),
                other => other.describe(),
            },
        },
        "not_found" => Error::ElementNotFound {
            target: if message.is_empty() {
                target.describe()
            } else {
                message
            },
        },
        "invalid_argument" => Error::InvalidArgument(message),
        _ => Error::NotActionable {
            target: desc,
            why: message,
        },
    })
}

// The line a snapshot ends with when the walk stopped early.
pub(super) fn walk_stopped(why: &str) -> String {
    format!("\n[the page was too large to walk whole ({why}): the snapshot stops there]\n")
}

// Whitespace runs as one space (not trimmed): how page text is compared.
pub(super) fn collapse_runs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    out
}

// Whitespace runs as one space, trimmed: how the walker compares names.
pub(super) fn collapse_ws(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c == '\u{a0}')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

// Whether a CSS selector holds an attribute condition that matches part of a value
// (`^=`, `$=`, `*=`, `|=`), outside strings.
pub(super) fn matches_part_of_attribute(selector: &str) -> bool {
    let mut quote = None;
    let mut chars = selector.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (_, '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '^' | '$' | '*' | '|') if chars.peek() == Some(&'=') => return true,
            _ => {}
        }
    }
    false
}

// Cuts `text` at `offset` into a page of at most `max_bytes`, on char boundaries,
// preferring to end at a line break.
pub(super) fn page_of(text: &str, offset: usize, max_bytes: usize) -> PageText {
    let total = text.len();
    let mut start = offset.min(total);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (start + max_bytes).min(total);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    // End at a line break when one is in the page's second half; a page is not
    // shortened to a few bytes because a long line follows.
    if end < total
        && let Some(nl) = text[start..end]
            .rfind('\n')
            .filter(|&i| i > 0 && i >= (end - start) / 2)
    {
        end = start + nl + 1;
    }
    let mut page = text[start..end].to_owned();
    let next_offset = (end < total).then_some(end);
    if let Some(next) = next_offset {
        page.push_str(&format!(
            "\n[text truncated: bytes {start}-{end} of {total} shown; read again with offset={next} for more]"
        ));
    }
    PageText {
        text: page,
        total_bytes: total,
        next_offset,
    }
}
