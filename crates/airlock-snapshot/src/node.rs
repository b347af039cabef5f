//! The node shape the in-page walker emits (short keys keep the JSON small).

use serde::Deserialize;

/// One accessibility node. Field names match the walker's compact JSON.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Node {
    /// Chromium's role name (`button`, `heading`, `Iframe`) or `text` for a text run.
    #[serde(rename = "r")]
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
}

impl Node {
    /// Sets `frame` on this node and all descendants.
    pub fn set_frame(&mut self, frame: u32) {
        self.frame = frame;
        for child in &mut self.children {
            child.set_frame(frame);
        }
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
