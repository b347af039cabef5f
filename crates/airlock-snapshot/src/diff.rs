//! What changed between two snapshots of a page, keyed by ref.
//!
//! Format: one line per changed node, marked `+` (new), `~` (same ref, new content) or
//! `-` (gone), each new or changed line preceded by its unchanged ancestors (marked
//! with a space) so the agent knows where it sits. Chosen over a textual unified diff
//! because refs already identify nodes: an O(n) hash comparison needs no LCS over
//! thousands of lines, and a row that moved is not reported as removed and re-added.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use airlock_core::NodeRef;

use crate::render::Line;

/// Most removed lines listed one by one; the rest are counted.
const MAX_REMOVED: usize = 30;

/// The changes from `old` to `new`, or `None` when the page reads the same.
pub fn diff(old: &[Line], new: &[Line]) -> Option<String> {
    let mut old_texts: HashMap<&str, usize> = HashMap::new();
    for line in old {
        *old_texts.entry(line.text.as_str()).or_default() += 1;
    }
    let old_refs: HashSet<NodeRef> = old.iter().filter_map(|l| l.reference).collect();
    let new_refs: HashSet<NodeRef> = new.iter().filter_map(|l| l.reference).collect();
    let new_texts: HashSet<&str> = new.iter().map(|l| l.text.as_str()).collect();

    let mut changed = vec![false; new.len()];
    for (i, line) in new.iter().enumerate() {
        match old_texts.get_mut(line.text.as_str()) {
            Some(count) if *count > 0 => *count -= 1,
            _ => changed[i] = true,
        }
    }

    // Old lines no longer there. A ref-less one (a status line, a row) whose place a
    // changed ref-less line of the same role took, under the same parent, is that
    // line changed (`~`), not one line gone and another new.
    let gone: Vec<usize> = (0..old.len())
        .filter(|&i| {
            let line = &old[i];
            !(new_texts.contains(line.text.as_str())
                || line.reference.is_some_and(|r| new_refs.contains(&r)))
        })
        .collect();
    let mut replaceable: HashMap<(usize, &str, Option<&str>), Vec<usize>> = HashMap::new();
    for &i in gone.iter().rev() {
        if old[i].reference.is_none() {
            replaceable.entry(place(old, i)).or_default().push(i);
        }
    }
    let mut replaced = vec![false; old.len()];
    let mut marks = vec![' '; new.len()];
    for i in (0..new.len()).filter(|&i| changed[i]) {
        marks[i] = match new[i].reference {
            Some(r) if old_refs.contains(&r) => '~',
            Some(_) => '+',
            None => match replaceable.get_mut(&place(new, i)).and_then(Vec::pop) {
                Some(o) => {
                    replaced[o] = true;
                    '~'
                }
                None => '+',
            },
        };
    }

    let mut out = String::new();
    let mut shown = vec![false; new.len()];
    for i in 0..new.len() {
        if !changed[i] {
            continue;
        }
        let mut chain = Vec::new();
        let mut parent = new[i].parent;
        while let Some(p) = parent {
            if shown[p] {
                break;
            }
            chain.push(p);
            parent = new[p].parent;
        }
        for &p in chain.iter().rev() {
            shown[p] = true;
            push(&mut out, marks[p], &new[p]);
        }
        if !shown[i] {
            shown[i] = true;
            push(&mut out, marks[i], &new[i]);
        }
    }

    let mut removed = 0;
    for &i in gone.iter().filter(|&&i| !replaced[i]) {
        removed += 1;
        if removed <= MAX_REMOVED {
            let line = &old[i];
            let _ = writeln!(out, "- {}- {}", "  ".repeat(line.depth), line.text);
        }
    }
    if removed > MAX_REMOVED {
        let _ = writeln!(out, "- … and {} more lines removed", removed - MAX_REMOVED);
    }
    if out.is_empty() { None } else { Some(out) }
}

// Where a line sits: its depth, its role (the text's first word) and its parent's text.
fn place(lines: &[Line], i: usize) -> (usize, &str, Option<&str>) {
    let line = &lines[i];
    let role = line.text.split([' ', ':']).next().unwrap_or_default();
    (
        line.depth,
        role,
        line.parent.map(|p| lines[p].text.as_str()),
    )
}

fn push(out: &mut String, mark: char, line: &Line) {
    let _ = writeln!(out, "{mark} {}- {}", "  ".repeat(line.depth), line.text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Node, RenderOptions, lines};

    fn render(json: &str) -> Vec<Line> {
        let node: Node = serde_json::from_str(json).unwrap();
        lines(&node, &RenderOptions::default())
    }

    #[test]
    fn unchanged_is_none() {
        let a = render(r#"{"r":"RootWebArea","k":[{"r":"button","n":"Go","i":1}]}"#);
        assert_eq!(diff(&a, &a), None);
    }

    #[test]
    fn marks_added_changed_and_removed_with_context() {
        let old = render(
            r#"{"r":"RootWebArea","k":[{"r":"form","i":1,"k":[
                {"r":"checkbox","n":"Remember","i":2},
                {"r":"button","n":"Save","i":3}]},
                {"r":"paragraph","k":[{"r":"text","t":"Unsaved"}]}]}"#,
        );
        let new = render(
            r#"{"r":"RootWebArea","k":[{"r":"form","i":1,"k":[
                {"r":"checkbox","n":"Remember","i":2,"c":"true"},
                {"r":"button","n":"Save","i":3}]},
                {"r":"status","n":"Saved","i":9}]}"#,
        );
        assert_eq!(
            diff(&old, &new).unwrap(),
            "  - e1 form\n\
             ~   - e2 checkbox \"Remember\" [checked]\n\
             + - e9 status \"Saved\"\n\
             - - paragraph: Unsaved\n"
        );
    }

    #[test]
    fn a_ref_less_line_that_changed_in_place_is_one_change() {
        let old = render(
            r#"{"r":"RootWebArea","k":[{"r":"navigation","k":[
                {"r":"button","n":"Sign in","i":1},
                {"r":"status","k":[{"r":"text","t":"Signing in"}]}]}]}"#,
        );
        let new = render(
            r#"{"r":"RootWebArea","k":[{"r":"navigation","k":[
                {"r":"button","n":"Sign in","i":1},
                {"r":"status","k":[{"r":"text","t":"Signed in"}]}]}]}"#,
        );
        assert_eq!(
            diff(&old, &new).unwrap(),
            "  - navigation\n~   - status: Signed in\n"
        );
        // A line of another role in that place is new, and the old one gone.
        let other = render(
            r#"{"r":"RootWebArea","k":[{"r":"navigation","k":[
                {"r":"button","n":"Sign in","i":1},
                {"r":"alert","k":[{"r":"text","t":"Signed in"}]}]}]}"#,
        );
        assert_eq!(
            diff(&old, &other).unwrap(),
            "  - navigation\n+   - alert: Signed in\n-   - status: Signing in\n"
        );
    }

    #[test]
    fn many_removals_are_counted() {
        let items: Vec<String> = (0..40)
            .map(|i| format!(r#"{{"r":"button","n":"B{i}","i":{i}}}"#))
            .collect();
        let old = render(&format!(
            r#"{{"r":"RootWebArea","k":[{}]}}"#,
            items.join(",")
        ));
        let new = render(r#"{"r":"RootWebArea","k":[]}"#);
        let out = diff(&old, &new).unwrap();
        assert!(out.ends_with("- … and 10 more lines removed\n"), "{out}");
    }
}
