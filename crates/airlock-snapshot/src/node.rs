//! The node shape the in-page walker emits (short keys keep the JSON small).

use std::collections::HashMap;

use serde::Deserialize;

/// One accessibility node. Field names match the walker's compact JSON.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Node {
    /// Chromium's role name (`button`, `heading`, `Iframe`) or `text` for a text run.
    #[serde(rename = "r", default)]
    pub role: String,
    /// Accessible name.
    #[serde(rename = "n", default)]
    pub name: String,
    /// Node number of its ref, when the node can be targeted.
    #[serde(rename = "i", default)]
    pub node: Option<u64>,
    /// Frame number of the ref; set by the browser layer when grafting frames.
    #[serde(skip)]
    pub frame: u32,
    /// Heading level.
    #[serde(rename = "l", default)]
    pub level: Option<u32>,
    /// `true` or `mixed` (false is omitted).
    #[serde(rename = "c", default)]
    pub checked: Option<String>,
    /// aria-expanded.
    #[serde(rename = "x", default)]
    pub expanded: Option<bool>,
    /// Selected option or tab.
    #[serde(rename = "s", default)]
    pub selected: bool,
    /// Disabled control.
    #[serde(rename = "d", default)]
    pub disabled: bool,
    /// Current value of a field (never a password's: the walker masks it).
    #[serde(rename = "v", default)]
    pub value: Option<String>,
    /// A password field.
    #[serde(rename = "p", default)]
    pub password: bool,
    /// Link target.
    #[serde(rename = "u", default)]
    pub url: Option<String>,
    /// Text of a text run.
    #[serde(rename = "t", default)]
    pub text: Option<String>,
    /// Children.
    #[serde(rename = "k", default)]
    pub children: Vec<Node>,
    /// A `<label>` whose control exists: its text is that control's name.
    #[serde(rename = "lc", default)]
    pub labels_control: Option<u8>,
    /// A frame owner (`<iframe>`); the browser grafts the frame's tree as children.
    #[serde(rename = "fr", default)]
    pub frame_owner: Option<u8>,
    /// Not a control, but made to be clicked: 1 for a pointer cursor, 2 for an
    /// `onclick` attribute without one; 3 made to be dragged (`draggable="true"`);
    /// 4 in the tab order (`tabindex` ≥ 0); 5 a move or grab cursor. It has a ref.
    #[serde(rename = "cp", default)]
    pub clickable: Option<u8>,
    /// In a patched walk: this node is node N (preorder, the root 0) of the tree the
    /// patch is against, whole. Resolved by the browser layer before rendering.
    #[serde(rename = "=", default)]
    pub same_as: Option<usize>,
}

impl Node {
    /// Sets `frame` on this node and all descendants.
    pub fn set_frame(&mut self, frame: u32) {
        self.frame = frame;
        for child in &mut self.children {
            child.set_frame(frame);
        }
    }

    /// Replaces every `{"=": N}` node with node N of `previous` (preorder, its root
    /// 0), whole, moved out of `previous` (cloned only when a wanted node holds
    /// another). `None` when a number is not in `previous` or is wanted twice (the
    /// patch was not against it): the caller then walks again.
    pub fn resolve_against(&mut self, mut previous: Node) -> Option<()> {
        fn wanted(node: &Node, out: &mut Vec<usize>) {
            match node.same_as {
                Some(at) => out.push(at),
                None => node.children.iter().for_each(|c| wanted(c, out)),
            }
        }
        // Preorder sizes of `previous`'s subtrees, so a subtree taken whole is
        // stepped over without numbering it.
        fn sizes(node: &Node, out: &mut Vec<usize>) -> usize {
            let at = out.len();
            out.push(0);
            let size = 1 + node.children.iter().map(|c| sizes(c, out)).sum::<usize>();
            out[at] = size;
            size
        }
        // Whether a wanted number lies in `from..to`.
        fn wants(wanted: &[usize], from: usize, to: usize) -> bool {
            let first = wanted.partition_point(|&w| w < from);
            first < wanted.len() && wanted[first] < to
        }
        fn take(
            node: &mut Node,
            at: usize,
            sizes: &[usize],
            wanted: &[usize],
            found: &mut HashMap<usize, Node>,
        ) {
            if wanted.binary_search(&at).is_ok() {
                if !wants(wanted, at + 1, at + sizes[at]) {
                    found.insert(at, std::mem::take(node));
                    return;
                }
                found.insert(at, node.clone());
            }
            let mut next = at + 1;
            for child in &mut node.children {
                let size = sizes[next];
                // Only subtrees that hold a wanted number are entered.
                if wants(wanted, next, next + size) {
                    take(child, next, sizes, wanted, found);
                }
                next += size;
            }
        }
        fn fill(node: &mut Node, found: &mut HashMap<usize, Node>) -> Option<()> {
            if let Some(at) = node.same_as {
                *node = found.remove(&at)?;
                return Some(());
            }
            for child in &mut node.children {
                fill(child, found)?;
            }
            Some(())
        }
        let mut want = Vec::new();
        wanted(self, &mut want);
        want.sort_unstable();
        if want.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        let mut size = Vec::new();
        sizes(&previous, &mut size);
        if want.last().is_some_and(|&w| w >= size.len()) {
            return None;
        }
        let mut found = HashMap::with_capacity(want.len());
        if !want.is_empty() {
            take(&mut previous, 0, &size, &want, &mut found);
        }
        fill(self, &mut found)
    }

    /// Every ref'd node number in this subtree with its frame, in document order.
    pub fn refs(&self) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        self.collect_refs(&mut out);
        out
    }

    fn collect_refs(&self, out: &mut Vec<(u32, u64)>) {
        if let Some(n) = self.node {
            out.push((self.frame, n));
        }
        for child in &self.children {
            child.collect_refs(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_takes_numbered_nodes_whole_from_the_tree_it_is_against() {
        let previous: Node = serde_json::from_str(
            r#"{"r":"RootWebArea","k":[{"r":"list","k":[{"r":"listitem","n":"a"},{"r":"listitem","n":"b"}]},{"r":"button","n":"Go","i":3}]}"#,
        )
        .unwrap();
        // 0 root, 1 list, 2 item a, 3 item b, 4 button.
        let mut patch: Node = serde_json::from_str(
            r#"{"r":"RootWebArea","k":[{"r":"list","k":[{"=":2},{"r":"listitem","n":"c"},{"=":3}]},{"=":4}]}"#,
        )
        .unwrap();
        let button = previous.children[1].clone();
        patch.resolve_against(previous.clone()).unwrap();
        let names: Vec<&str> = patch.children[0]
            .children
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, ["a", "c", "b"]);
        assert_eq!(patch.children[1], button);
        // A node wanted whole and a node inside it wanted too: both are there.
        let mut nested: Node =
            serde_json::from_str(r#"{"r":"RootWebArea","k":[{"=":1},{"=":3}]}"#).unwrap();
        nested.resolve_against(previous.clone()).unwrap();
        assert_eq!(nested.children[0], previous.children[0]);
        assert_eq!(nested.children[1].name, "b");
        // A number the tree does not have, or one wanted twice: not a patch against it.
        let mut wrong: Node = serde_json::from_str(r#"{"r":"RootWebArea","k":[{"=":9}]}"#).unwrap();
        assert_eq!(wrong.resolve_against(previous.clone()), None);
        let mut twice: Node =
            serde_json::from_str(r#"{"r":"RootWebArea","k":[{"=":2},{"=":2}]}"#).unwrap();
        assert_eq!(twice.resolve_against(previous), None);
    }
}
