//! Turns the accessibility nodes that the in-page walker computes into the compact text
//! agents read: one node a line, indented by depth, `eN role "name"` (the ref first) plus the
//! states that matter. Also pages, filters (`interactive_only`, `find`) and diffs it.
//!
//! Pure: no IO, no browser. The browser layer produces [`Node`] trees; everything about
//! how they read lives here so it can be tested line by line.

mod diff;
mod node;
mod render;

pub use diff::diff;
pub use node::Node;
pub use render::{
    Line, RenderOptions, Window, find, interactive_only, lines, mask_spread_lines, max_depth,
    window,
};
