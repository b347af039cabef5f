//! Closed shadow roots, handed to Airlock's world so the painter sees inside them.
//!
//! A page's script can attach a shadow root in `closed` mode: no other script, not
//! even one in an isolated world, can reach it from its host. A page that draws a
//! typed secret inside one would otherwise keep it out of the painter's sight.
//! DevTools sees every root. The flat `DOMSnapshot` marks each node that lives in a
//! closed root (not `DOM.getDocument`, whose nested reply a deep page can make
//! deeper than the JSON parser's limit); the parents of those nodes are the
//! candidate hosts, `DOM.describeNode` names a host's roots, and each closed one is
//! resolved into Airlock's world of its frame (walker.js `adoptClosed`).

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::Tab;
use crate::error::Result;

/// More candidate hosts than this in one look and the rest count as missed (the
/// frame is painted over whole) rather than every capture being slowed by a page
/// that makes thousands.
const MAX_CANDIDATES: usize = 256;

/// What a look for closed shadow roots found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ClosedRoots {
    /// Handed to Airlock's world of their frame.
    pub(crate) adopted: usize,
    /// Found but not handed over (a frame Airlock does not track, too many, a root
    /// gone meanwhile): what they show cannot be placed.
    pub(crate) missed: usize,
}

impl Tab {
    /// Hands Airlock's world of each frame of the tab the closed shadow roots of its
    /// documents. An error means the tab could not be looked at (the caller paints
    /// everything).
    pub(crate) async fn adopt_closed_roots(&self, timeout: Duration) -> Result<ClosedRoots> {
        let frames: Vec<(String, u64)> = self.state.read(|s| {
            s.frames
                .iter()
                .map(|f| (f.frame_id.clone(), f.next_ref))
                .collect()
        });
        let mut sessions: Vec<String> = Vec::new();
        for (frame_id, _) in &frames {
            let session = self.session_for_frame(frame_id);
            if !sessions.contains(&session) {
                sessions.push(session);
            }
        }
        if sessions.is_empty() {
            sessions.push(self.cdp_session.clone());
        }
        let mut out = ClosedRoots::default();
        let mut looked = 0;
        for session in sessions {
            let snapshot = self
                .conn
                .call(
                    Some(&session),
                    "DOMSnapshot.captureSnapshot",
                    json!({ "computedStyles": [] }),
                    timeout,
                )
                .await?;
            for (frame_id, host) in candidate_hosts(&snapshot) {
                let known = frames.iter().find(|(f, _)| *f == frame_id);
                let Some((_, base)) = known else {
                    out.missed += 1;
                    continue;
                };
                looked += 1;
                if looked > MAX_CANDIDATES {
                    out.missed += 1;
                    continue;
                }
                let described = self
                    .conn
                    .call(
                        Some(&session),
                        "DOM.describeNode",
                        json!({ "backendNodeId": host, "depth": 1 }),
                        timeout,
                    )
                    .await;
                let Ok(described) = described else {
                    out.missed += 1;
                    continue;
                };
                let roots = described["node"]["shadowRoots"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|r| r["shadowRootType"] == "closed")
                    .filter_map(|r| r["backendNodeId"].as_i64());
                for root in roots {
                    let context = self.world(&session, &frame_id, *base, timeout).await?;
                    if self.adopt(&session, root, context, timeout).await {
                        out.adopted += 1;
                    } else {
                        out.missed += 1;
                    }
                }
            }
        }
        Ok(out)
    }

    // Resolves shadow root `root` in world `context` and hands it to the walker.
    async fn adopt(&self, session: &str, root: i64, context: i64, timeout: Duration) -> bool {
        let resolved = self
            .conn
            .call(
                Some(session),
                "DOM.resolveNode",
                json!({ "backendNodeId": root, "executionContextId": context }),
                timeout,
            )
            .await;
        let Some(object) = resolved
            .ok()
            .and_then(|r| r["object"]["objectId"].as_str().map(str::to_owned))
        else {
            return false;
        };
        let handed = self
            .conn
            .call(
                Some(session),
                "Runtime.callFunctionOn",
                json!({
                    "objectId": object,
                    "functionDeclaration": "function () { return __airlock.adoptClosed(this); }",
                    "returnByValue": true,
                }),
                timeout,
            )
            .await;
        let _ = self
            .conn
            .call(
                Some(session),
                "Runtime.releaseObject",
                json!({ "objectId": object }),
                timeout,
            )
            .await;
        matches!(handed, Ok(reply) if reply["result"]["value"] == json!(true))
    }
}

/// The elements that may host a closed shadow root, by a `DOMSnapshot.captureSnapshot`
/// reply: the parent of every node that lives in one (its host, or an element inside
/// it that may host one of its own), each once, with its frame id and backend node id.
fn candidate_hosts(snapshot: &Value) -> Vec<(String, i64)> {
    let strings = snapshot["strings"].as_array();
    let string = |index: &Value| -> Option<&str> {
        strings?
            .get(usize::try_from(index.as_i64()?).ok()?)?
            .as_str()
    };
    let mut out = Vec::new();
    for document in snapshot["documents"].as_array().into_iter().flatten() {
        let Some(frame_id) = string(&document["frameId"]) else {
            continue;
        };
        let nodes = &document["nodes"];
        let rare = &nodes["shadowRootType"];
        let (Some(indexes), Some(values)) = (rare["index"].as_array(), rare["value"].as_array())
        else {
            continue;
        };
        let mut seen = HashSet::new();
        for (at, value) in indexes.iter().zip(values) {
            if string(value) != Some("closed") {
                continue;
            }
            let parent = at
                .as_u64()
                .and_then(|i| nodes["parentIndex"].get(i as usize))
                .and_then(Value::as_u64);
            let host = parent
                .and_then(|p| nodes["backendNodeId"].get(p as usize))
                .and_then(Value::as_i64);
            if let Some(host) = host
                && seen.insert(host)
            {
                out.push((frame_id.to_owned(), host));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parents_of_nodes_in_closed_roots_are_the_candidates_once_each() {
        let reply = json!({
            "strings": ["F1", "open", "closed", "F2"],
            "documents": [
                // 0 html, 1 div (open host), 2 span in the open root, 3 div (closed
                // host), 4 span and 5 its text in the closed root.
                { "frameId": 0, "nodes": {
                    "backendNodeId": [10, 11, 12, 13, 14, 15],
                    "parentIndex": [-1, 0, 1, 0, 3, 4],
                    "shadowRootType": { "index": [2, 4, 5], "value": [1, 2, 2] } } },
                { "frameId": 3, "nodes": {
                    "backendNodeId": [20, 21, 22],
                    "parentIndex": [-1, 0, 0],
                    "shadowRootType": { "index": [1, 2], "value": [2, 2] } } },
                { "frameId": 0, "nodes": { "backendNodeId": [30] } }
            ]
        });
        assert_eq!(
            candidate_hosts(&reply),
            vec![
                ("F1".to_owned(), 13),
                ("F1".to_owned(), 14),
                ("F2".to_owned(), 20)
            ]
        );
        assert!(candidate_hosts(&json!({})).is_empty());
    }
}
