//! Diagnostics: compares the walker's roles and names with Chromium's own
//! accessibility tree, node by node. Tests use it as the oracle; it is far too slow for
//! the hot path (it fetches the full AX tree), which is why the walker exists.

use std::collections::HashMap;

use airlock_snapshot::Node;
use serde_json::json;

use crate::error::{Error, Result};
use crate::session::{Session, WalkResult};

/// One element as the walker and as Chromium see it.
#[derive(Debug, Clone, PartialEq)]
pub struct AxPair {
    /// Our role and name.
    pub ours: (String, String),
    /// Chromium's role and name for the same DOM node; `None` if Chromium's tree has
    /// no unignored node for it.
    pub chromium: Option<(String, String)>,
}

impl Session {
    /// Pairs every element the walker emits in the top frame with Chromium's AX node.
    #[doc(hidden)]
    pub async fn ax_oracle(&self) -> Result<Vec<AxPair>> {
        let (tab, timeout) = self.oracle_tab()?;
        let value = tab
            .eval(
                0,
                "__airlock.snapshot({\"base\": 1, \"refAll\": true})",
                false,
                timeout,
            )
            .await?;
        let tree: Node = WalkResult::decode(value)?
            .tree
            .ok_or_else(|| Error::Protocol("no snapshot".to_owned()))?;
        let mut ours = Vec::new();
        collect(&tree, &mut ours);

        let full = tab
            .call("Accessibility.getFullAXTree", json!({}), timeout)
            .await?;
        let mut by_backend: HashMap<i64, (String, String)> = HashMap::new();
        for node in full["nodes"].as_array().into_iter().flatten() {
            if node["ignored"].as_bool() == Some(true) {
                continue;
            }
            if let Some(id) = node["backendDOMNodeId"].as_i64() {
                let role = node["role"]["value"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let name = node["name"]["value"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                by_backend.insert(id, (role, name));
            }
        }

        let mut pairs = Vec::with_capacity(ours.len());
        for (node, role, name) in ours {
            let (_, described) = tab.describe_ref(0, node, timeout).await?;
            let backend = described["backendNodeId"].as_i64().unwrap_or(-1);
            pairs.push(AxPair {
                ours: (role, name),
                chromium: by_backend.get(&backend).cloned(),
            });
        }
        Ok(pairs)
    }
}

fn collect(node: &Node, out: &mut Vec<(u64, String, String)>) {
    if let Some(n) = node.node {
        out.push((n, node.role.clone(), node.name.clone()));
    }
    if node.frame_owner.is_some() {
        return;
    }
    for child in &node.children {
        collect(child, out);
    }
}
