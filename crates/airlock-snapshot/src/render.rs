//! Folding the walker's tree and rendering it as lines, then windowing and filtering.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;

use airlock_core::{NoRedaction, NodeRef, Redact};

use crate::node::Node;

/// Roles an agent can act on; `interactive_only` keeps these.
const INTERACTIVE: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "slider",
    "spinbutton",
    "switch",
    "tab",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "treeitem",
    "Date",
    "DateTime",
    "InputTime",
    "DisclosureTriangle",
    "ColorWell",
    "gridcell",
];

/// Wrappers that carry no meaning of their own: their children take their place.
const FOLDED: &[&str] = &[
    "generic",
    "none",
    "ListMarker",
    "MenuListPopup",
    "StaticText",
    "LineBreak",
];

/// Inline formatting whose text simply joins the surrounding text.
const INLINE: &[&str] = &[
    "emphasis",
    "strong",
    "mark",
    "code",
    "subscript",
    "superscript",
    "insertion",
    "deletion",
    "time",
];

const CELLS: &[&str] = &["cell", "gridcell", "columnheader", "rowheader"];

/// Longest text or name shown before it is cut with a marker.
const MAX_TEXT: usize = 200;

/// One rendered line.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Depth in the folded tree; 0 is a child of the document.
    pub depth: usize,
    /// Index of the parent line, if any.
    pub parent: Option<usize>,
    /// The line without indentation and leading `- `.
    pub text: String,
    /// The node's ref, if it has one.
    pub reference: Option<NodeRef>,
    /// Whether the node can be acted on.
    pub interactive: bool,
    /// The heading's level, when the node is a heading (2, ARIA's default, when the
    /// page gives none).
    pub heading: Option<u32>,
    /// Whether some descendant is interactive.
    pub contains_interactive: bool,
    /// Whether the node locates what it contains (a table, row, form, dialog …): kept
    /// by `interactive_only` when it holds something to act on.
    pub locates: bool,
}

/// How to render a tree into lines.
#[derive(Clone, Default)]
pub struct RenderOptions {
    /// URL of the page; same-origin link targets are shown as paths.
    pub page_url: Option<String>,
    /// Applied to every name, value, URL and text after folding has joined them and
    /// before anything cuts them, so a cut cannot leave a piece of a secret.
    pub redactor: Option<Arc<dyn Redact>>,
    /// The serial of the tab the tree is of, which every ref carries (`t2e5`), so a
    /// ref cannot name an element of another tab.
    pub tab: u32,
}

impl std::fmt::Debug for RenderOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderOptions")
            .field("page_url", &self.page_url)
            .field("redactor", &self.redactor.is_some())
            .field("tab", &self.tab)
            .finish()
    }
}

/// Folds `root` (the walker's document node) and renders its descendants as lines.
pub fn lines(root: &Node, options: &RenderOptions) -> Vec<Line> {
    let origin = options.page_url.as_deref().and_then(origin_of);
    let mut folded = Vec::with_capacity(root.children.len());
    for child in &root.children {
        fold(child, &mut folded);
    }
    let redactor: &dyn Redact = options.redactor.as_deref().unwrap_or(&NoRedaction);
    let mut out = Vec::new();
    let context = Emit {
        origin: origin.as_deref(),
        redactor,
        tab: options.tab,
        masks: rendered::Masks::of(&folded, redactor),
        next: std::cell::Cell::new(0),
    };
    for node in &folded {
        emit(node, 0, None, &context, &mut out);
    }
    out
}

/// A page of lines, rendered as text.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// The text, ending with a truncation line when lines were left out.
    pub text: String,
    /// Index of the first line shown.
    pub start: usize,
    /// Index one past the last line shown.
    pub end: usize,
    /// Total number of lines.
    pub total: usize,
}

/// Renders `lines[offset..]` up to `max_nodes` lines and `max_bytes` bytes. When lines
/// are left out, the last line says how many and which `offset` continues.
pub fn window(lines: &[Line], offset: usize, max_nodes: usize, max_bytes: usize) -> Window {
    let total = lines.len();
    let start = offset.min(total);
    let mut text = String::new();
    let mut end = start;
    // Indentation is relative to the shallowest line shown so a continued page
    // does not start deep in the margin.
    let base = lines[start..]
        .iter()
        .take(max_nodes.max(1))
        .map(|l| l.depth)
        .min()
        .unwrap_or(0);
    for line in &lines[start..] {
        if end - start >= max_nodes {
            break;
        }
        let rendered = format!(
            "{}- {}\n",
            "  ".repeat(line.depth.saturating_sub(base)),
            line.text
        );
        if !text.is_empty() && text.len() + rendered.len() > max_bytes {
            break;
        }
        text.push_str(&rendered);
        end += 1;
    }
    if end < total || start > 0 {
        if end < total {
            let _ = writeln!(
                text,
                "[snapshot truncated: lines {}-{} of {total} shown; snapshot again with offset={end} for the next page, or narrow it with find, scope_ref or interactive_only]",
                start + 1,
                end
            );
        } else {
            let _ = writeln!(
                text,
                "[end of snapshot: lines {}-{end} of {total}]",
                start + 1
            );
        }
    }
    Window {
        text,
        start,
        end,
        total,
    }
}

/// Keeps what can be acted on, the containers with refs (rows, tables, dialogs,
/// forms) that hold something actionable, and the headings that tell apart where
/// actions are: a heading whose section (up to the next heading of its level or
/// above) holds something to act on, when at least two do. A heading over text
/// alone, or the one heading over every action of the page, locates nothing.
pub fn interactive_only(lines: &[Line]) -> Vec<Line> {
    let headings: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].heading.is_some())
        .collect();
    let mut locating = vec![false; lines.len()];
    for (k, &h) in headings.iter().enumerate() {
        let level = lines[h].heading;
        let end = headings[k + 1..]
            .iter()
            .copied()
            .find(|&j| lines[j].heading <= level)
            .unwrap_or(lines.len());
        locating[h] = lines[h + 1..end].iter().any(|l| l.interactive);
    }
    let sections = locating.iter().filter(|&&l| l).count();
    let mask: Vec<bool> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            line.interactive
                || (line.locates && line.contains_interactive)
                || (sections >= 2 && locating[i])
        })
        .collect();
    filter_by_mask(lines, &mask)
}

/// The lines at most `depth` levels deep (1: only the top level). A kept line whose
/// children were left out ends `[+N]`, N being how many lines its subtree holds:
/// `scope_ref` on it reads them.
pub fn max_depth(lines: &[Line], depth: usize) -> Vec<Line> {
    let depth = depth.max(1);
    // Every line below the cut counts on its deepest kept ancestor.
    let mut hidden = vec![0usize; lines.len()];
    for line in lines.iter().filter(|l| l.depth >= depth) {
        let mut ancestor = line.parent;
        while let Some(p) = ancestor {
            if lines[p].depth < depth {
                hidden[p] += 1;
                break;
            }
            ancestor = lines[p].parent;
        }
    }
    let mask: Vec<bool> = lines.iter().map(|l| l.depth < depth).collect();
    let kept = (0..lines.len()).filter(|i| mask[*i]);
    let mut out = filter_by_mask(lines, &mask);
    // `filter_by_mask` keeps the masked lines in order.
    for (line, from) in out.iter_mut().zip(kept) {
        if hidden[from] > 0 {
            line.text.push_str(&format!(" [+{}]", hidden[from]));
        }
    }
    out
}

/// The lines whose text contains `query` (case-insensitive), each with its subtree,
/// its ancestors and the nearest heading before it, so "where is Save" needs no whole
/// tree.
pub fn find(lines: &[Line], query: &str) -> Vec<Line> {
    let needle = query.to_lowercase();
    let mut keep = vec![false; lines.len()];
    // Lines inside a match's subtree (parents come before children): a row found by
    // its text brings the buttons that act on it.
    let mut inside = vec![false; lines.len()];
    let mut last_heading: Option<usize> = None;
    for (i, line) in lines.iter().enumerate() {
        if line.parent.is_some_and(|p| inside[p]) {
            inside[i] = true;
            keep[i] = true;
        } else if line.text.to_lowercase().contains(&needle) {
            inside[i] = true;
            keep[i] = true;
            let mut parent = line.parent;
            while let Some(p) = parent {
                keep[p] = true;
                parent = lines[p].parent;
            }
            if let Some(h) = last_heading {
                keep[h] = true;
            }
        }
        if line.heading.is_some() {
            last_heading = Some(i);
        }
    }
    filter_by_mask(lines, &keep)
}

// Keeps the masked lines, re-computing depth and parent from the kept ancestors only.
fn filter_by_mask(lines: &[Line], mask: &[bool]) -> Vec<Line> {
    let mut new_index = vec![None; lines.len()];
    let mut out: Vec<Line> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !mask[i] {
            continue;
        }
        let mut parent = line.parent;
        while let Some(p) = parent {
            if new_index[p].is_some() {
                break;
            }
            parent = lines[p].parent;
        }
        let parent = parent.and_then(|p| new_index[p]);
        let depth = parent.map_or(0, |p: usize| out[p].depth + 1);
        new_index[i] = Some(out.len());
        out.push(Line {
            depth,
            parent,
            ..line.clone()
        });
    }
    out
}

// ---- folding ------------------------------------------------------------------------

fn is(role: &str, set: &[&str]) -> bool {
    set.contains(&role)
}

fn is_text(node: &Folded<'_>) -> bool {
    matches!(node, Folded::Text(_))
}

/// A node after folding. It borrows from the walker's tree, which a diff keeps as its
/// next base: folding a copy of a 2,000-row table cost more than folding it.
enum Folded<'a> {
    /// A run of text (the page's, or adjacent runs joined).
    Text(Cow<'a, str>),
    /// An element as it reads: `text` is what folding joined into it (a row's cells,
    /// children that were all text), `children` what it kept.
    Node {
        node: &'a Node,
        text: Option<Cow<'a, str>>,
        children: Vec<Folded<'a>>,
    },
}

impl Folded<'_> {
    fn role(&self) -> &str {
        match self {
            Folded::Text(_) => "text",
            Folded::Node { node, .. } => &node.role,
        }
    }

    fn text(&self) -> Option<&str> {
        match self {
            Folded::Text(text) => Some(text),
            Folded::Node { text, .. } => text.as_deref(),
        }
    }

    fn has_ref_inside(&self) -> bool {
        match self {
            Folded::Text(_) => false,
            Folded::Node { node, children, .. } => {
                node.node.is_some() || children.iter().any(Folded::has_ref_inside)
            }
        }
    }
}

/// Collapses whitespace runs into one space.
fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = true;
        } else {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    out
}

// Joins adjacent text runs. Runs keep their own edge spaces from the page until here,
// so "Para with " + "link" keeps the word break.
fn merge_text(children: Vec<Folded<'_>>) -> Vec<Folded<'_>> {
    let mut out = Vec::with_capacity(children.len());
    let mut pending = String::new();
    for child in children {
        if let Folded::Text(text) = &child {
            pending.push_str(text);
            continue;
        }
        let text = collapse(&pending);
        if !text.is_empty() {
            out.push(Folded::Text(Cow::Owned(text)));
        }
        pending.clear();
        out.push(child);
    }
    let text = collapse(&pending);
    if !text.is_empty() {
        out.push(Folded::Text(Cow::Owned(text)));
    }
    out
}

fn joined_text(children: &[Folded<'_>]) -> Option<String> {
    if children.iter().all(is_text) {
        let parts: Vec<&str> = children.iter().filter_map(Folded::text).collect();
        Some(collapse(&parts.join(" ")))
    } else {
        None
    }
}

// Folds `node` into what stands for it (itself, its children, or nothing), pushed onto
// `out`: one vector per parent rather than one per node (a large page has tens of
// thousands).
fn fold<'a>(node: &'a Node, out: &mut Vec<Folded<'a>>) {
    if node.role == "text" {
        out.push(Folded::Text(Cow::Borrowed(
            node.text.as_deref().unwrap_or_default(),
        )));
        return;
    }
    let mut children = Vec::with_capacity(node.children.len());
    for child in &node.children {
        fold(child, &mut children);
    }
    let role = node.role.as_str();

    if node.node.is_none() && (is(role, FOLDED) || is(role, INLINE)) {
        // Inline formatting keeps its words joined to the neighbours: re-wrap its text
        // with spaces only where the page had them (the text runs carry them).
        out.extend(children);
        return;
    }
    if role == "LabelText" && node.node.is_none() {
        // A label's words are the name of the control inside or next to it; showing
        // them again as text would say everything twice.
        if node.labels_control.is_some() || children.iter().any(|c| !is_text(c)) {
            out.extend(children.into_iter().filter(|c| !is_text(c)));
        } else {
            out.extend(children);
        }
        return;
    }

    if role == "main" && node.node.is_none() && node.name.is_empty() {
        // What is outside every landmark is the page's main content already; the
        // wrapper would cost a line and a level of indentation on every page.
        out.extend(merge_text(children));
        return;
    }
    if role == "rowgroup" && node.node.is_none() && node.name.is_empty() {
        // thead/tfoot carry no meaning an agent needs; their rows stand for them.
        out.extend(children);
        return;
    }
    let mut children = merge_text(children);
    let mut text = node.text.as_deref().map(Cow::Borrowed);
    if role == "table" || role == "grid" {
        // The caption is the table's name already.
        let name = collapse(&node.name);
        children.retain(|c| {
            !(c.role() == "caption" && c.text().map(collapse).as_deref() == Some(name.as_str()))
        });
    }
    if role == "row" {
        let (cells, kept) = fold_row(children);
        children = kept;
        if let Some(cells) = cells {
            text = Some(Cow::Owned(cells));
        }
    } else if let Some(joined) = joined_text(&children) {
        let name = collapse(&node.name);
        if !name.is_empty() && (joined == name || name.contains(&joined) || joined.is_empty()) {
            children.clear();
        } else if !joined.is_empty() {
            text = Some(Cow::Owned(joined));
            children.clear();
        }
    }
    if node.node.is_none()
        && node.clickable.is_none()
        && !is(role, INTERACTIVE)
        && node.name.trim().is_empty()
        && text.is_none()
        && node.value.is_none()
        && children.is_empty()
    {
        // An empty live region, list or paragraph says nothing an agent can use; it
        // shows up (as a change) once it holds something.
        return;
    }
    out.push(Folded::Node {
        node,
        text,
        children,
    });
}

// A row reads as its cells' texts joined by ` | `, followed by what can be acted on
// inside its cells: the shape of the spec's `row "alice admin Edit Delete"` example
// without repeating each cell on a line of its own. Returns the row's text, if any,
// and what it keeps.
fn fold_row(children: Vec<Folded<'_>>) -> (Option<String>, Vec<Folded<'_>>) {
    let mut parts = Vec::new();
    let mut kept = Vec::new();
    for cell in children {
        match cell {
            Folded::Node {
                node,
                text,
                children,
            } if is(&node.role, CELLS) && node.node.is_none() => {
                if children.iter().any(Folded::has_ref_inside) {
                    kept.extend(children.into_iter().filter(|c| !is_text(c)));
                } else if node.name.is_empty() {
                    parts.push(text.unwrap_or_default());
                } else {
                    parts.push(Cow::Owned(collapse(&node.name)));
                }
            }
            Folded::Text(text) => parts.push(text),
            other => kept.push(other),
        }
    }
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    let text = (!parts.is_empty()).then(|| parts.join(" | "));
    (text, kept)
}

// ---- emitting lines -----------------------------------------------------------------

// What every line of one rendering shares.
struct Emit<'a> {
    origin: Option<&'a str>,
    redactor: &'a dyn Redact,
    tab: u32,
    // Pieces of secrets the page spread over several strings, by piece.
    masks: rendered::Masks,
    // The next piece, in `rendered::pieces` order.
    next: std::cell::Cell<usize>,
}

impl Emit<'_> {
    // The first of the next `n` pieces.
    fn pieces(&self, n: usize) -> usize {
        let first = self.next.get();
        self.next.set(first + n);
        first
    }

    // Piece `i` as shown: what the page spread is masked, then the redactor runs.
    fn shown(&self, i: usize, text: &str) -> String {
        self.redactor
            .redact(&self.masks.apply(i, text))
            .into_owned()
    }
}

fn emit(
    folded: &Folded<'_>,
    depth: usize,
    parent: Option<usize>,
    context: &Emit<'_>,
    out: &mut Vec<Line>,
) -> bool {
    let index = out.len();
    let (node, text, children) = match folded {
        Folded::Text(text) => {
            let piece = context.pieces(1);
            out.push(Line {
                depth,
                parent,
                text: format!("text: {}", cut(&context.shown(piece, text))),
                reference: None,
                interactive: false,
                heading: None,
                contains_interactive: false,
                locates: false,
            });
            return false;
        }
        Folded::Node {
            node,
            text,
            children,
        } => (*node, text.as_deref(), children),
    };
    let interactive = is(&node.role, INTERACTIVE) || node.clickable.is_some();
    let pieces = context.pieces(3);
    out.push(Line {
        depth,
        parent,
        text: line_text(node, text, pieces, context),
        reference: node.node.map(|n| NodeRef {
            tab: context.tab,
            frame: node.frame,
            node: n,
        }),
        interactive,
        heading: (node.role == "heading").then(|| node.level.unwrap_or(2)),
        contains_interactive: false,
        // Rows have no ref (a row is acted on through its buttons and links; leaving
        // its ref out saves ~5 tokens a row), but they still say which row a button is in.
        locates: node.node.is_some() || node.role == "row",
    });
    let mut contains = false;
    for child in children {
        contains |= emit(child, depth + 1, Some(index), context, out);
    }
    out[index].contains_interactive = contains;
    interactive || contains
}

fn cut(text: &str) -> String {
    let count = text.chars().count();
    if count <= MAX_TEXT {
        return text.to_owned();
    }
    // The common cut, with how much it left out.
    format!(
        "{} [+{} chars]",
        airlock_core::text::ellipsize(text, MAX_TEXT),
        count - MAX_TEXT
    )
}

fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in cut(text).chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// An element's line; `text` is what folding left it; its name, value and text are
// pieces `pieces..pieces + 3`.
fn line_text(node: &Node, text: Option<&str>, pieces: usize, context: &Emit<'_>) -> String {
    let redact = |text: &str| context.redactor.redact(text).into_owned();
    // The ref leads the line: `e5 button "Save"` costs three tokens fewer than
    // `button "Save" [ref=e5]`, on every line of every snapshot.
    let mut s = match node.node {
        Some(n) => format!(
            "{} {}",
            NodeRef {
                tab: context.tab,
                frame: node.frame,
                node: n
            },
            node.role
        ),
        None => node.role.clone(),
    };
    let name = context.shown(pieces, &collapse(&node.name));
    if !name.is_empty() {
        s.push(' ');
        s.push_str(&quoted(&name));
    }
    if let Some(level) = node.level {
        let _ = write!(s, " [level={level}]");
    }
    match node.clickable {
        Some(2) => s.push_str(" [onclick]"),
        Some(3) => s.push_str(" [draggable]"),
        Some(4) => s.push_str(" [focusable]"),
        Some(5) => s.push_str(" [cursor=move]"),
        Some(_) => s.push_str(" [cursor=pointer]"),
        None => {}
    }
    match node.checked.as_deref() {
        Some("true") => s.push_str(" [checked]"),
        Some("mixed") => s.push_str(" [checked=mixed]"),
        _ => {}
    }
    match node.expanded {
        Some(true) => s.push_str(" [expanded]"),
        Some(false) => s.push_str(" [collapsed]"),
        None => {}
    }
    if node.selected {
        s.push_str(" [selected]");
    }
    if node.disabled {
        s.push_str(" [disabled]");
    }
    if node.password {
        // The walker sends a fixed mask, never the value; enforce it here too.
        s.push_str(match node.value {
            Some(_) => " [password=••••]",
            None => " [password]",
        });
    } else if let Some(value) = &node.value {
        let _ = write!(s, " value={}", quoted(&context.shown(pieces + 1, value)));
    }
    if let Some(url) = &node.url {
        let url = redact(url);
        let url = url.as_str();
        let shown = match context.origin {
            Some(origin) => url
                .strip_prefix(origin)
                .filter(|rest| rest.starts_with('/'))
                .unwrap_or(url),
            None => url,
        };
        let _ = write!(s, " [url={}]", cut(shown));
    }
    if let Some(text) = text {
        let _ = write!(s, ": {}", cut(&context.shown(pieces + 2, text)));
    }
    s
}

// `scheme://host[:port]` of an http(s) URL.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(format!("{scheme}://{}", &rest[..host_end]))
}

mod rendered;

pub use rendered::mask_spread_lines;
#[cfg(test)]
mod tests;
