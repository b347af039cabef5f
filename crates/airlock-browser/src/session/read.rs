//! Reading the page: snapshots (frames grafted in), the changes since the last one,
//! page text (screenshots are `shot.rs`).

use super::*;

impl Session {
    // ---- reading --------------------------------------------------------------------

    /// Takes an accessibility snapshot of the active tab and remembers it as the base
    /// for [`Session::changes`].
    pub async fn snapshot(&self, options: &SnapshotOptions) -> Result<Snapshot> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let url = tab.state.read(|s| s.url.clone());
        tab.state.with(|s| s.walk_truncated = None);
        let tree = match options.scope {
            None => self.walk_frame(&tab, 0, 0, false).await?,
            Some(scope) => self.walk_scope(&tab, scope).await?,
        };
        let truncated = tab.state.with(|s| s.walk_truncated.take());
        let title = self.scrub(&tree.name);
        let all = airlock_snapshot::lines(&tree, &self.render_options(&tab, &url));
        let url = self.scrub(&url);
        if options.scope.is_none() {
            tab.state.with(|s| {
                s.last_snapshot = Some(all.clone());
                s.last_gen = s.walk_gen;
                s.last_tree = match (s.walk_framed, s.walk_gen) {
                    (false, Some(walk)) => Some((walk, tree)),
                    _ => None,
                };
            });
        }
        let mut lines = all;
        if options.interactive_only {
            lines = airlock_snapshot::interactive_only(&lines);
        }
        if let Some(query) = options.find.as_deref().filter(|q| !q.is_empty()) {
            // The lines are redacted already: a query can only find what it would show.
            lines = airlock_snapshot::find(&lines, query);
            if lines.is_empty() {
                // The query is the agent's own; not echoed, so the answer is the same
                // whatever it was.
                return Ok(Snapshot {
                    text: "no line of the snapshot contains the text given\n".to_owned(),
                    url,
                    title,
                    total_lines: 0,
                    end: 0,
                });
            }
        }
        if let Some(depth) = options.depth {
            lines = airlock_snapshot::max_depth(&lines, depth);
        }
        if options.boxes {
            self.add_boxes(&tab, &mut lines).await?;
        }
        let window = airlock_snapshot::window(
            &lines,
            options.offset,
            options.max_nodes.max(1),
            options.max_bytes.max(256),
        );
        let mut text = window.text;
        if let Some(why) = truncated {
            text.push_str(&walk_stopped(&why));
        }
        Ok(Snapshot {
            text,
            url,
            title,
            total_lines: window.total,
            end: window.end,
        })
    }

    // Appends `[box=x,y,w,h]` (top-viewport CSS px) to each line with a ref, frame
    // by frame (a frame's boxes moved by where its frame sits in the page).
    async fn add_boxes(&self, tab: &Tab, lines: &mut [airlock_snapshot::Line]) -> Result<()> {
        let mut frames: Vec<u32> = lines
            .iter()
            .filter_map(|l| l.reference.map(|r| r.frame))
            .collect();
        frames.sort_unstable();
        frames.dedup();
        for frame in frames {
            let refs: Vec<u64> = lines
                .iter()
                .filter_map(|l| l.reference.filter(|r| r.frame == frame).map(|r| r.node))
                .collect();
            let call = format!("__airlock.boxes({})", json!(refs));
            let Ok(found) = tab.eval(frame, &call, false, self.budget()).await else {
                continue;
            };
            // Where the frame's viewport sits in the top one.
            let Ok((dx, dy)) = self.frame_offset(tab, frame).await else {
                continue;
            };
            let mut boxes = found.as_array().cloned().unwrap_or_default().into_iter();
            for line in lines
                .iter_mut()
                .filter(|l| l.reference.is_some_and(|r| r.frame == frame))
            {
                if let Some(Value::Array(b)) = boxes.next()
                    && let [x, y, w, h] = b.as_slice()
                {
                    let n = |v: &Value| v.as_f64().unwrap_or(0.0);
                    line.text.push_str(&format!(
                        " [box={},{},{},{}]",
                        (n(x) + dx).round(),
                        (n(y) + dy).round(),
                        n(w),
                        n(h)
                    ));
                }
            }
        }
        Ok(())
    }

    /// What changed since the previous snapshot (or `changes` call) of the active tab,
    /// or `None` when nothing did; the new state becomes the base of the next call.
    pub async fn changes(&self) -> Result<Option<String>> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        // While an effect rule holds the page's navigation, Chromium runs none of its
        // scripts: the page has not changed, and asking would wait out the budget.
        if tab.state.read(|s| s.navigations_held > 0) {
            return Ok(None);
        }
        let url = tab.state.read(|s| s.url.clone());
        tab.state.with(|s| s.walk_truncated = None);
        // Only what changed since the last walk is walked again; a page that reads
        // exactly as the walk the last lines came from is not sent or rendered again.
        let same_as = tab.state.read(|s| s.last_snapshot.as_ref().and(s.last_gen));
        let Some(tree) = self.walk_top_unless(&tab, same_as).await? else {
            tab.state.with(|s| {
                s.last_gen = s.walk_gen;
                s.walk_truncated = None;
                // The same tree, now under the newer walk's number.
                if let (Some((walk, _)), Some(now)) = (&mut s.last_tree, s.walk_gen) {
                    *walk = now;
                }
            });
            return Ok(None);
        };
        let truncated = tab.state.with(|s| s.walk_truncated.take());
        let new = airlock_snapshot::lines(&tree, &self.render_options(&tab, &url));
        let old = tab.state.with(|s| {
            s.last_gen = s.walk_gen;
            s.last_tree = match (s.walk_framed, s.walk_gen) {
                (false, Some(walk)) => Some((walk, tree)),
                _ => None,
            };
            s.last_snapshot.take()
        });
        let changes = match old {
            Some(old) => airlock_snapshot::diff(&old, &new),
            None => {
                Some(airlock_snapshot::window(&new, 0, usize::MAX, DEFAULT_SNAPSHOT_BYTES).text)
            }
        };
        // The new lines are the next call's base (moved in, not copied: 6,000 lines on
        // a large page). Nothing awaits in between, and calls on a session run one at a
        // time, so no call sees the base missing.
        tab.state.with(|s| s.last_snapshot = Some(new));
        Ok(match (changes, truncated) {
            (changes, None) => changes,
            (Some(text), Some(why)) => Some(text + &walk_stopped(&why)),
            (None, Some(_)) => None,
        })
    }

    /// The lines the next diff is against, and the page as a whole walk reads it now
    /// (one that leaves the walk cache as it was), as text. After a diff they must
    /// agree; tests hold the first to the second.
    #[doc(hidden)]
    pub async fn diff_base_and_whole(&self) -> Result<(String, String)> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let url = tab.state.read(|s| s.url.clone());
        let base = tab
            .state
            .read(|s| s.last_snapshot.as_deref().map(indented))
            .unwrap_or_default();
        let value = tab
            .eval(
                0,
                "__airlock.snapshot({\"probe\": true})",
                false,
                self.budget(),
            )
            .await?;
        let walked = WalkResult::decode(value)?;
        let tree = walked
            .tree
            .ok_or_else(|| Error::Protocol("the page helper returned no snapshot".to_owned()))?;
        let whole = airlock_snapshot::lines(&tree, &self.render_options(&tab, &url));
        Ok((base, indented(&whole)))
    }

    /// The active tab's page read twice as a tree, as text: first by the walk an
    /// action's diff makes (taking what did not change from the last walk), then by
    /// a whole walk. They must agree; tests hold the first to the second.
    #[doc(hidden)]
    pub async fn walks_for_diff_and_whole(&self) -> Result<(String, String)> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let url = tab.state.read(|s| s.url.clone());
        let options = self.render_options(&tab, &url);
        let text = |tree: &Node| indented(&airlock_snapshot::lines(tree, &options));
        let reused = self.walk_frame(&tab, 0, 0, true).await?;
        let whole = self.walk_frame(&tab, 0, 0, false).await?;
        Ok((text(&reused), text(&whole)))
    }

    /// How many bytes the page sent for the active tab's last diff walk: tests hold
    /// it to what changed, not to the page.
    #[doc(hidden)]
    pub async fn last_diff_walk_bytes(&self) -> Result<usize> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        Ok(tab.state.read(|s| s.diff_walk_bytes))
    }

    /// Forgets the base of [`Session::changes`]: the next call returns the page
    /// whole (capped), as after a navigation whose snapshot nobody read.
    pub async fn forget_changes(&self) -> Result<()> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        tab.state.with(|s| {
            s.last_snapshot = None;
            s.last_tree = None;
        });
        Ok(())
    }

    pub(super) async fn walk_scope(&self, tab: &Tab, scope: NodeRef) -> Result<Node> {
        self.own_ref(tab, &Target::Ref(scope))?;
        let base = frame_base(tab, scope.frame)?;
        let value = tab
            .eval(
                scope.frame,
                &format!(
                    "__airlock.snapshot({{\"base\": {base}, \"scope\": {}}})",
                    scope.node
                ),
                false,
                self.budget(),
            )
            .await?;
        let walked = WalkResult::decode(value)?;
        if walked.error.is_some() {
            return Err(Error::RefNotFound {
                reference: scope.to_string(),
            });
        }
        self.finish_walk(tab, scope.frame, 0, walked, false).await
    }

    // The top frame walked for a diff (taking what did not change from the last
    // walk), or `None` when it reads exactly as walk `same_as` did.
    // The tree of the last walk is taken from the tab, and what the page sends
    // refers to it: only what was walked again crosses whole.
    async fn walk_top_unless(&self, tab: &Tab, same_as: Option<u64>) -> Result<Option<Node>> {
        let previous = tab.state.with(|s| s.last_tree.take());
        let base = frame_base(tab, 0)?;
        let same_as = same_as.map_or("null".to_owned(), |n| n.to_string());
        let patch_from = previous
            .as_ref()
            .map_or("null".to_owned(), |(walk, _)| walk.to_string());
        let value = tab
            .eval(
                0,
                &format!(
                    "__airlock.snapshot({{\"base\": {base}, \"reuse\": true, \"sameAs\": {same_as}, \"patchFrom\": {patch_from}}})"
                ),
                false,
                self.budget(),
            )
            .await?;
        let sent = value.as_str().map_or(0, str::len);
        tab.state.with(|s| s.diff_walk_bytes = sent);
        let mut walked = WalkResult::decode(value)?;
        if walked.same {
            tab.state.with(|s| s.last_tree = previous);
            tab.state.with(|s| s.walk_gen = walked.walk);
            if let Some(why) = walked.truncated {
                tab.state
                    .with(|s| s.walk_truncated.get_or_insert(why).clone());
            }
            return Ok(None);
        }
        if walked.patched {
            let resolved = match (walked.tree.as_mut(), previous) {
                (Some(tree), Some((_, previous))) => tree.resolve_against(previous),
                _ => None,
            };
            if resolved.is_none() {
                // Not a patch against the tree this tab holds: walk again, whole.
                tracing::warn!("a diff's walk was not against the tree held; walking again");
                return self.walk_frame(tab, 0, 0, true).await.map(Some);
            }
        }
        self.finish_walk(tab, 0, 0, walked, true).await.map(Some)
    }

    pub(super) fn walk_frame<'a>(
        &'a self,
        tab: &'a Tab,
        frame: u32,
        depth: usize,
        reuse: bool,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Node>> + Send + 'a>> {
        Box::pin(async move {
            let base = frame_base(tab, frame)?;
            let value = tab
                .eval(
                    frame,
                    &format!("__airlock.snapshot({{\"base\": {base}, \"reuse\": {reuse}}})"),
                    false,
                    self.budget(),
                )
                .await?;
            self.finish_walk(tab, frame, depth, WalkResult::decode(value)?, reuse)
                .await
        })
    }

    pub(super) async fn finish_walk(
        &self,
        tab: &Tab,
        frame: u32,
        depth: usize,
        walked: WalkResult,
        reuse: bool,
    ) -> Result<Node> {
        if let Some(next) = walked.next {
            tab.state.with(|s| {
                if let Some(f) = s.frames.get_mut(frame as usize) {
                    f.next_ref = f.next_ref.max(next);
                }
            });
        }
        if let Some(why) = walked.truncated {
            tab.state
                .with(|s| s.walk_truncated.get_or_insert(why).clone());
        }
        if frame == 0 && walked.walk.is_some() {
            tab.state.with(|s| s.walk_gen = walked.walk);
        }
        let mut tree = walked
            .tree
            .ok_or_else(|| Error::Protocol("the page helper returned no snapshot".to_owned()))?;
        tree.set_frame(frame);
        if depth >= MAX_FRAME_DEPTH {
            return Ok(tree);
        }
        let mut owners = Vec::new();
        collect_frame_owners(&tree, &mut Vec::new(), &mut owners);
        if frame == 0 && depth == 0 {
            let framed = !owners.is_empty();
            tab.state.with(|s| s.walk_framed = framed);
        }
        for (path, owner_ref) in owners {
            let child = match self.child_frame(tab, frame, owner_ref).await {
                Ok(Some(index)) => self.walk_frame(tab, index, depth + 1, reuse).await.ok(),
                _ => None,
            };
            if let Some(owner) = node_at(&mut tree, &path) {
                match child {
                    Some(child) => owner.children = child.children,
                    None => owner.text = Some("(frame content not available)".to_owned()),
                }
            }
        }
        Ok(tree)
    }

    // Registers (or finds) the frame held by `<iframe>` ref `owner_ref` of `frame`.
    pub(super) async fn child_frame(
        &self,
        tab: &Tab,
        frame: u32,
        owner_ref: u64,
    ) -> Result<Option<u32>> {
        let (session, described) = tab.describe_ref(frame, owner_ref, self.budget()).await?;
        let Some(frame_id) = described["frameId"].as_str().map(str::to_owned) else {
            return Ok(None);
        };
        Ok(Some(tab.state.with(|s| {
            if let Some(i) = s.frames.iter().position(|f| f.frame_id == frame_id) {
                s.frames[i].owner = Some((frame, owner_ref));
                s.frames[i].parent_session = Some(session);
                i as u32
            } else {
                s.frames.push(FrameEntry {
                    frame_id,
                    owner: Some((frame, owner_ref)),
                    next_ref: 1,
                    parent_session: Some(session),
                });
                (s.frames.len() - 1) as u32
            }
        })))
    }

    /// What the active tab logged (at least `level`), the newest `limit`, oldest first.
    pub async fn console(&self, level: ConsoleLevel, limit: usize) -> Result<ConsoleLog> {
        let _op = self.begin().await;
        // The buffer only: what the page logged can be read while a dialog holds it.
        let tab = self.tab().await?;
        Ok(tab.state.read(|s| {
            let mut since_navigation = 0;
            let mut entries: Vec<ConsoleEntry> = s
                .console
                .iter()
                .enumerate()
                .rev()
                .filter(|(_, e)| e.level >= level)
                .take(limit)
                .map(|(i, e)| {
                    since_navigation += usize::from(i >= s.console_before);
                    e.clone()
                })
                .collect();
            entries.reverse();
            ConsoleLog {
                entries,
                dropped: s.console_dropped,
                since_navigation: Some(since_navigation),
            }
        }))
    }

    /// Runs the agent's `function` in the active tab's main world (where the page's
    /// own scripts run), given `target`'s element if there is one, and returns what
    /// it returned as JSON, redacted whole and cut to `EVALUATE_CHARS`. Bounded by
    /// the action budget (at most `EVALUATE_TIME`). Refused in a session that holds
    /// secrets: the agent's code could read a typed secret and hand it back in an
    /// encoding no redactor knows.
    pub async fn evaluate(&self, function: &str, target: Option<&Target>) -> Result<String> {
        if self.redactor.is_active() {
            return Err(Error::SecretsHeld(
                "this session holds secrets, and code of yours could carry one past redaction: evaluate in a session opened without credentials".to_owned(),
            ));
        }
        if function.trim().is_empty() || function.len() > EVALUATE_SOURCE_BYTES {
            return Err(Error::InvalidArgument(format!(
                "`function` is JavaScript of 1 to {EVALUATE_SOURCE_BYTES} bytes"
            )));
        }
        let _op = self.begin().await;
        let tab = self.page().await?;
        let budget = self.budget().min(EVALUATE_TIME);
        // The page's own world may have replaced JSON.stringify: a JSON value comes
        // back by value, and is written here.
        let declaration = format!("function (element) {{ return ({function})(element); }}");
        let reply = match target {
            None => {
                tab.call(
                    "Runtime.evaluate",
                    json!({
                        "expression": format!("({declaration})(undefined)"),
                        "awaitPromise": true,
                        "returnByValue": true,
                        "userGesture": false,
                    }),
                    budget,
                )
                .await?
            }
            Some(target) => {
                let (frame, located, _) = self.locate(&tab, target, VISIBLE).await?;
                let node = located.node.ok_or_else(|| {
                    Error::InvalidArgument(
                        "`target` must name an element (a ref, role or selector), not a point"
                            .to_owned(),
                    )
                })?;
                // The element as Airlock's world holds it, then the same node in the
                // page's main world (DOM.resolveNode's default world).
                let (session, described) = tab.describe_ref(frame, node, budget).await?;
                let backend = described["backendNodeId"].clone();
                let resolved = tab
                    .conn
                    .call(
                        Some(&session),
                        "DOM.resolveNode",
                        json!({ "backendNodeId": backend }),
                        budget,
                    )
                    .await?;
                let main = resolved["object"]["objectId"]
                    .as_str()
                    .ok_or_else(|| Error::Protocol("resolveNode returned no object".to_owned()))?
                    .to_owned();
                let reply = tab
                    .conn
                    .call(
                        Some(&session),
                        "Runtime.callFunctionOn",
                        json!({
                            "functionDeclaration": declaration,
                            "objectId": main,
                            "arguments": [{ "objectId": main }],
                            "awaitPromise": true,
                            "returnByValue": true,
                            "userGesture": false,
                        }),
                        budget,
                    )
                    .await;
                let _ = tab
                    .conn
                    .call(
                        Some(&session),
                        "Runtime.releaseObject",
                        json!({ "objectId": main }),
                        // Short: a page still busy in the function would not answer.
                        Duration::from_millis(200),
                    )
                    .await;
                reply.map_err(|e| match e {
                    crate::cdp::CdpError::Timeout { ms, .. } => {
                        // As `Tab::call` does: the next call stops the script first
                        // (unless the page was navigating, which answers nothing).
                        if !tab.state.navigating() {
                            tab.state.with(|s| s.unresponsive = true);
                        }
                        Error::Timeout {
                            what: "the function".to_owned(),
                            ms,
                        }
                    }
                    other => other.into(),
                })?
            }
        };
        if let Some(details) = reply.get("exceptionDetails") {
            let what = details["exception"]["description"]
                .as_str()
                .or_else(|| details["text"].as_str())
                .unwrap_or("an exception");
            // The page's words (an error message can quote anything): redacted, cut.
            return Err(Error::InvalidArgument(format!(
                "the function threw: {}",
                ellipsize(&self.scrub(what), 300)
            )));
        }
        let result = &reply["result"];
        let text = match result.get("value") {
            Some(value) => serde_json::to_string(value).unwrap_or_default(),
            None => result["description"]
                .as_str()
                .or_else(|| result["type"].as_str())
                .unwrap_or("undefined")
                .to_owned(),
        };
        Ok(ellipsize(&self.scrub(&text), EVALUATE_CHARS))
    }

    /// The active tab's page as a PDF (backgrounds printed), at most `MAX_PDF_BYTES`.
    /// Refused in a session that holds secrets: a PDF's text is compressed and
    /// re-encoded, where no redactor reaches, and a page may show a secret it was
    /// given.
    pub async fn pdf(&self) -> Result<Screenshot> {
        if self.redactor.is_active() {
            return Err(Error::SecretsHeld(
                "this session holds secrets, and no redaction reaches into a PDF: make PDFs in a session opened without credentials".to_owned(),
            ));
        }
        let _op = self.begin().await;
        let tab = self.page().await?;
        let reply = tab
            .call(
                "Page.printToPDF",
                json!({ "printBackground": true, "transferMode": "ReturnAsBase64" }),
                self.budget().max(Duration::from_secs(20)),
            )
            .await?;
        let encoded = reply["data"].as_str().unwrap_or_default();
        // Its size from the base64 length, before anything large is decoded.
        let bytes = encoded.len() / 4 * 3;
        if bytes > MAX_PDF_BYTES {
            return Err(Error::TooLarge {
                what: "PDF".to_owned(),
                bytes,
                cap: MAX_PDF_BYTES,
            });
        }
        let data = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| Error::Protocol(format!("PDF was not base64: {e}")))?;
        Ok(Screenshot {
            data,
            mime: "application/pdf",
            covered: false,
        })
    }

    /// What the active tab requested, the newest `limit` whose URL contains
    /// `filter` (case-insensitive; URLs were redacted when kept, so a filter never
    /// matches what a secret hid), oldest first.
    pub async fn network_requests(&self, filter: Option<&str>, limit: usize) -> Result<NetworkLog> {
        let _op = self.begin().await;
        let tab = self.tab().await?;
        let filter = filter.map(str::to_lowercase);
        let network = tab.state.network.lock().unwrap_or_else(|p| p.into_inner());
        let mut entries: Vec<NetworkEntry> = network
            .entries
            .iter()
            .rev()
            .map(|(_, e)| e)
            .filter(|e| {
                filter
                    .as_deref()
                    .is_none_or(|f| e.url.to_lowercase().contains(f))
            })
            .take(limit)
            .cloned()
            .collect();
        entries.reverse();
        Ok(NetworkLog {
            entries,
            dropped: network.dropped,
        })
    }

    /// The page's text as markdown-ish lines (headings, lists, links, tables), paged
    /// by bytes from `offset`.
    pub async fn read_text(&self, offset: usize, max_bytes: usize) -> Result<PageText> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let value = tab
            .eval(0, "__airlock.readText()", false, self.budget())
            .await?;
        let raw = value["text"].as_str().unwrap_or_default();
        let mut text = match value["truncated"].as_str() {
            // Cut in the page: the end may hold the start of a secret the redactor
            // cannot recognise, so a redactor's reach is left off it.
            Some(why) => {
                let mut end = raw.len().saturating_sub(self.redactor.reach());
                while !raw.is_char_boundary(end) {
                    end -= 1;
                }
                let mut kept = self.scrub(&airlock_snapshot::mask_spread_lines(
                    &raw[..end],
                    &*self.redactor,
                ));
                kept.push_str(&format!(
                    "\n[the rest of the page's text is not read: {why}]"
                ));
                kept
            }
            // Redacted whole before it is paged: no page may end or start inside a
            // secret.
            // What a page spread over lines (a character per list item) is masked
            // before: no single line holds it.
            None => self.scrub(&airlock_snapshot::mask_spread_lines(raw, &*self.redactor)),
        };
        text.shrink_to_fit();
        Ok(page_of(&text, offset, max_bytes.max(256)))
    }
}

// Lines as text, each indented by its depth (the test seams compare these).
fn indented(lines: &[airlock_snapshot::Line]) -> String {
    lines
        .iter()
        .map(|l| format!("{}{}", "  ".repeat(l.depth), l.text))
        .collect::<Vec<_>>()
        .join("\n")
}
