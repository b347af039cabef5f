//! Snapshot refs: `e12` in the top frame, `f1e3` in frame 1; `t2e5`, `t2f1e3` in the
//! session's third tab.

use std::fmt;
use std::str::FromStr;

/// A reference to one DOM node from an accessibility snapshot.
///
/// Frame 0 is the tab's top frame and prints without a prefix (`e12`); a node in
/// another frame prints with its frame number (`f1e3`). Numbers are assigned by the
/// browser layer and never reused within a tab, so a ref from an older document
/// cannot silently name a node of a newer one. Every tab of a session but its first
/// prints its own serial first (`t2e12`), so a ref carried from one tab to another
/// names nothing there rather than another element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NodeRef {
    /// The tab's serial within its session (0: the first tab; never reused).
    pub tab: u32,
    /// Frame number within the tab; 0 is the top frame.
    pub frame: u32,
    /// Node number within the frame's documents.
    pub node: u64,
}

/// Why a string is not a ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseNodeRefError(String);

impl fmt::Display for ParseNodeRefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a snapshot ref (expected e.g. `e12`, `f1e3` or `t2e5`)",
            self.0
        )
    }
}

impl std::error::Error for ParseNodeRefError {}

impl FromStr for NodeRef {
    type Err = ParseNodeRefError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseNodeRefError(s.chars().take(40).collect());
        let (tab, s) = match s.strip_prefix('t') {
            Some(rest) => {
                let end = rest.find(['e', 'f']).ok_or_else(err)?;
                let tab: u32 = parse_digits(&rest[..end]).ok_or_else(err)?;
                (tab, &rest[end..])
            }
            None => (0, s),
        };
        let (frame, rest) = match s.strip_prefix('f') {
            Some(rest) => {
                let e = rest.find('e').ok_or_else(err)?;
                let frame: u32 = parse_digits(&rest[..e]).ok_or_else(err)?;
                (frame, &rest[e..])
            }
            None => (0, s),
        };
        let digits = rest.strip_prefix('e').ok_or_else(err)?;
        let node = parse_digits(digits).ok_or_else(err)?;
        Ok(NodeRef { tab, frame, node })
    }
}

fn parse_digits<T: FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl fmt::Display for NodeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.tab != 0 {
            write!(f, "t{}", self.tab)?;
        }
        if self.frame == 0 {
            write!(f, "e{}", self.node)
        } else {
            write!(f, "f{}e{}", self.frame, self.node)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for (text, tab, frame, node) in [
            ("e1", 0, 0, 1),
            ("e12", 0, 0, 12),
            ("f1e3", 0, 1, 3),
            ("f10e200", 0, 10, 200),
            ("t2e5", 2, 0, 5),
            ("t3f1e7", 3, 1, 7),
        ] {
            let r: NodeRef = text.parse().unwrap();
            assert_eq!((r.tab, r.frame, r.node), (tab, frame, node));
            assert_eq!(r.to_string(), text);
        }
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "", "e", "12", "x1", "fe1", "f1", "e-1", "e1x", "f1e", "e+1", "E1", " e1", "t", "te1",
            "t1", "t1x1", "tt1e1",
        ] {
            assert!(bad.parse::<NodeRef>().is_err(), "{bad:?} parsed");
        }
    }
}
