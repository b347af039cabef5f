//! The node shape the in-page walker emits (short keys keep the JSON small).

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
    /// `onclick` attribute without one; 3 made to be dragged (`draggable="true"`).
    /// It has a ref.
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
    /// 0), whole. `None` when a number is not in `previous` (the patch was not
    /// against it): the caller then walks again.
    pub fn resolve_against(&mut self, previous: &Node) -> Option<()> {
        fn number<'a>(node: &'a Node, out: &mut Vec<&'a Node>) {
            out.push(node);
            for child in &node.children {
                number(child, out);
            }
        }
        fn fill(node: &mut Node, places: &[&Node]) -> Option<()> {
            if let Some(at) = node.same_as {
                *node = (*places.get(at)?).clone();
                return Some(());
            }
            for child in &mut node.children {
                fill(child, places)?;
            }
            Some(())
        }
        let mut places = Vec::new();
        number(previous, &mut places);
        fill(self, &places)
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
        patch.resolve_against(&previous).unwrap();
        let names: Vec<&str> = patch.children[0]
            .children
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(names, ["a", "c", "b"]);
        assert_eq!(patch.children[1], previous.children[1]);
        // A number the tree does not have: not a patch against it.
        let mut wrong: Node = serde_json::from_str(r#"{"r":"RootWebArea","k":[{"=":9}]}"#).unwrap();
        assert_eq!(wrong.resolve_against(&previous), None);
    }
}
