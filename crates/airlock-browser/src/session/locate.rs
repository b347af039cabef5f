//! Finding a target: refs, role and name, selectors and points, in any frame; the
//! walker's actionability checks and its errors.

use super::*;

impl Session {
    // ---- targets ------------------------------------------------------------------

    pub(super) async fn frame_chain(&self, tab: &Tab, frame: u32) -> Result<Vec<(u32, u64)>> {
        let mut chain = Vec::new();
        let mut current = frame;
        while let Some(owner) = tab
            .state
            .read(|s| s.frames.get(current as usize).and_then(|f| f.owner))
        {
            chain.push(owner);
            current = owner.0;
            if chain.len() > MAX_FRAME_DEPTH + 1 {
                break;
            }
        }
        chain.reverse();
        Ok(chain)
    }

    // Offset of frame `frame`'s viewport within the top viewport.
    pub(super) async fn frame_offset(&self, tab: &Tab, frame: u32) -> Result<(f64, f64)> {
        let mut x = 0.0;
        let mut y = 0.0;
        for (parent, owner) in self.frame_chain(tab, frame).await? {
            let v = tab
                .eval(
                    parent,
                    &format!("__airlock.frameOwnerOffset({owner})"),
                    false,
                    self.budget(),
                )
                .await?;
            if v.get("error").is_some() {
                return Err(Error::RefNotFound {
                    reference: NodeRef {
                        tab: tab.serial,
                        frame,
                        node: 0,
                    }
                    .to_string(),
                });
            }
            x += v["x"].as_f64().unwrap_or(0.0);
            y += v["y"].as_f64().unwrap_or(0.0);
        }
        Ok((x, y))
    }

    // Finds the target, scrolls it (and the frames holding it) into view and waits
    // until it is actionable. Returns its frame, its centre in top-viewport
    // coordinates, and the element as a ref target, which the action's later steps use
    // so they act on the element that was located.
    pub(super) async fn locate(
        &self,
        tab: &Tab,
        target: &Target,
        prepare: Prepare,
    ) -> Result<(u32, Located, Target)> {
        let started = tokio::time::Instant::now();
        let located = self.locate_unclocked(tab, target, prepare).await;
        self.clocked(started, false);
        located
    }

    async fn locate_unclocked(
        &self,
        tab: &Tab,
        target: &Target,
        prepare: Prepare,
    ) -> Result<(u32, Located, Target)> {
        self.own_ref(tab, target)?;
        if let Target::Point { x, y } = target {
            let (w, h) = lock(&self.registry).screen.viewport;
            if !(0.0..f64::from(w)).contains(x) || !(0.0..f64::from(h)).contains(y) {
                return Err(Error::InvalidArgument(format!(
                    "point ({x}, {y}) is outside the {w}x{h} viewport"
                )));
            }
            let located = Located {
                x: *x,
                y: *y,
                rect: Rect {
                    x: *x,
                    y: *y,
                    w: 1.0,
                    h: 1.0,
                },
                desc: target.describe(),
                node: None,
                mark: None,
                focused: false,
                inspected: None,
                value_type: None,
                lang: None,
            };
            return Ok((0, located, target.clone()));
        }
        self.check_selector(target)?;
        let budget = self.budget();
        if let Some((by, name, index)) = By::of(target) {
            let deadline = tokio::time::Instant::now() + budget;
            let (frame, node) = self
                .find_named(tab, by, name, index, deadline, true)
                .await?;
            let named = Target::Ref(NodeRef {
                tab: tab.serial,
                frame,
                node,
            });
            let left = deadline
                .saturating_duration_since(tokio::time::Instant::now())
                .max(Duration::from_millis(500));
            let located = self
                .prepare_in_frame(tab, frame, &named, prepare, true, left)
                .await?;
            let located = self.in_top_viewport(tab, frame, located).await?;
            return Ok((frame, located, named));
        }
        let frames: Vec<u32> = match target {
            Target::Ref(r) => vec![r.frame],
            _ => {
                let n = tab.state.read(|s| s.frames.len()) as u32;
                (0..n.max(1)).collect()
            }
        };
        let only_frame = frames.len() == 1;
        let mut last_error = None;
        for (pass, frame) in frames.iter().copied().chain(std::iter::once(0)).enumerate() {
            // Pass 1 looks in every frame without waiting; the last pass waits in the
            // top frame for the target to appear (pages that render late).
            let last_pass = pass == frames.len();
            if last_pass && only_frame {
                break;
            }
            let wait = only_frame || last_pass;
            match self
                .prepare_in_frame(tab, frame, target, prepare, wait, budget)
                .await
            {
                Ok(located) => {
                    let located = self.in_top_viewport(tab, frame, located).await?;
                    let resolved = located.target(tab.serial, frame, target);
                    return Ok((frame, located, resolved));
                }
                Err(Error::ElementNotFound { .. }) if !only_frame && !last_pass => {}
                Err(e) => {
                    last_error = Some(e);
                    break;
                }
            }
        }
        Err(last_error.unwrap_or_else(|| Error::ElementNotFound {
            target: target.describe(),
        }))
    }

    /// The element `target` names now, without acting on it: its role, name, frame
    /// and link, and a target that names that element alone (see [`Resolved`]).
    /// Waits for the target like an action does, and scrolls it into view.
    pub async fn resolve(&self, target: &Target) -> Result<Resolved> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let inspecting = Prepare {
            inspect: true,
            ..VISIBLE
        };
        let (frame, mut located, named) = self.locate(&tab, target, inspecting).await?;
        let v = match (target, located.inspected.take()) {
            (Target::Point { x, y }, _) => {
                let call = format!("__airlock.inspectPoint({x}, {y})");
                self.helper(&tab, frame, &call, target).await?
            }
            (_, Some(v)) => v,
            (_, None) => {
                let call = format!("__airlock.inspect({})", named.walker_json());
                self.helper(&tab, frame, &call, &named).await?
            }
        };
        let node = NodeRef {
            tab: tab.serial,
            frame,
            node: v["ref"]
                .as_u64()
                .ok_or_else(|| Error::Protocol("inspect returned no ref".to_owned()))?,
        };
        let text = |k: &str| self.scrub(v[k].as_str().unwrap_or_default());
        let bounds = match target {
            Target::Point { .. } => {
                let r = &v["rect"];
                let at = |k: &str| r[k].as_f64().unwrap_or_default();
                Bounds {
                    x: at("x"),
                    y: at("y"),
                    width: at("w"),
                    height: at("h"),
                }
            }
            _ => Bounds {
                x: located.rect.x,
                y: located.rect.y,
                width: located.rect.w,
                height: located.rect.h,
            },
        };
        Ok(Resolved {
            target: match target {
                Target::Point { .. } => target.clone(),
                _ => Target::Ref(node),
            },
            node,
            role: v["role"].as_str().unwrap_or_default().to_owned(),
            name: self.shown(v["name"].as_str().unwrap_or_default()),
            password: v["password"].as_bool() == Some(true),
            href: v["href"].as_str().map(|h| self.scrub(h)),
            frame_url: text("url"),
            frame_origin: text("origin"),
            bounds,
        })
    }

    // A frame's located element, moved into top-viewport coordinates.
    pub(super) async fn in_top_viewport(
        &self,
        tab: &Tab,
        frame: u32,
        located: Located,
    ) -> Result<Located> {
        let (dx, dy) = self.frame_offset(tab, frame).await?;
        Ok(Located {
            x: located.x + dx,
            y: located.y + dy,
            rect: Rect {
                x: located.rect.x + dx,
                y: located.rect.y + dy,
                ..located.rect
            },
            ..located
        })
    }

    // A role target with a name. The elements of that role in every frame are matched
    // here by the names the agent would be shown (redacted), exactly first, else as a
    // case-insensitive substring: matched in the page, on raw names, a name holding a
    // secret would answer yes or no to the agent's guesses. Waits for a match until
    // `deadline` (pages that render late).
    //
    // By text (`By::Text`), the candidates are every element with words of its own,
    // each with the nearest such ancestor: of the matches, the innermost are kept
    // (the word in a paragraph, not the paragraph).
    pub(super) async fn find_named(
        &self,
        tab: &Tab,
        by: By<'_>,
        name: &str,
        index: Option<usize>,
        deadline: tokio::time::Instant,
        fail_fast: bool,
    ) -> Result<(u32, u64)> {
        let wanted = collapse_ws(name);
        let wanted_lower = wanted.to_lowercase();
        let (call, what) = match by {
            By::Role(role) => (
                format!("__airlock.candidates({})", Value::from(role)),
                format!("{role} with the name given"),
            ),
            By::Text => (
                "__airlock.textCandidates()".to_owned(),
                "an element with the text given".to_owned(),
            ),
        };
        // When the top document last changed, and its count of changes then.
        let mut last_change = (tokio::time::Instant::now(), -1_i64);
        loop {
            let frames = tab.state.read(|s| s.frames.len()).max(1) as u32;
            let (mut exact, mut loose) = (Vec::new(), Vec::new());
            let mut seen = -1;
            let mut ready = false;
            for frame in 0..frames {
                let reply = match tab.eval(frame, &call, false, self.budget()).await {
                    Ok(reply) => reply,
                    // A child frame that went away, or the top frame between documents.
                    Err(Error::Protocol(_) | Error::RefNotFound { .. } | Error::PageChanged) => {
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                if frame == 0 {
                    seen = reply["v"].as_i64().unwrap_or(-1);
                    ready = reply["ready"].as_bool() == Some(true);
                }
                let list = reply["list"].as_array().map(Vec::as_slice).unwrap_or(&[]);
                let (mut here_exact, mut here_loose) = (Vec::new(), Vec::new());
                for (i, candidate) in list.iter().enumerate() {
                    if candidate["ref"].as_u64().is_none() {
                        continue;
                    }
                    let shown = collapse_ws(
                        &self
                            .redactor
                            .redact(candidate["name"].as_str().unwrap_or_default()),
                    );
                    if shown == wanted {
                        here_exact.push(i);
                    } else if shown.to_lowercase().contains(&wanted_lower) {
                        here_loose.push(i);
                    }
                }
                if matches!(by, By::Text) {
                    here_exact = innermost(list, here_exact);
                    here_loose = innermost(list, here_loose);
                }
                let node = |i: &usize| (frame, list[*i]["ref"].as_u64().unwrap_or_default());
                exact.extend(here_exact.iter().map(node));
                loose.extend(here_loose.iter().map(node));
            }
            let matches = if exact.is_empty() { loose } else { exact };
            let found = match index {
                Some(i) => matches
                    .get(i)
                    .copied()
                    .ok_or_else(|| Error::ElementNotFound {
                        target: format!(
                            "{what} at index {i} (it has {} {}; index counts from 0)",
                            matches.len(),
                            if matches.len() == 1 {
                                "match"
                            } else {
                                "matches"
                            }
                        ),
                    }),
                None if matches.len() == 1 => Ok(matches[0]),
                None if matches.is_empty() => Err(Error::ElementNotFound {
                    target: what.clone(),
                }),
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "{what} matches {} elements; pass `index` (0-based) or a ref from a snapshot",
                        matches.len()
                    )));
                }
            };
            let now = tokio::time::Instant::now();
            if seen != last_change.1 {
                last_change = (now, seen);
            }
            // A loaded page that has stayed still this long will not grow the target.
            let settled = fail_fast && ready && now.duration_since(last_change.0) > IDLE;
            match found {
                Ok(found) => return Ok(found),
                Err(e) if now >= deadline || settled => return Err(e),
                Err(_) => {}
            }
            // Look again once the page has changed (or after a quarter second).
            let wait = deadline
                .saturating_duration_since(now)
                .min(Duration::from_millis(250));
            let _ = tab
                .eval(
                    0,
                    &format!("__airlock.changedSince({seen}, {})", wait.as_millis()),
                    true,
                    wait + Duration::from_secs(2),
                )
                .await;
        }
    }

    // In a session holding secrets, a selector may not match part of an attribute
    // (`[value^="a"]`): whether it matched would tell the agent, guess by guess, a
    // secret a page put into an attribute. Exact matches stay allowed.
    pub(super) fn check_selector(&self, target: &Target) -> Result<()> {
        if let Target::Selector(selector) = target
            && self.redactor.is_active()
            && matches_part_of_attribute(selector)
        {
            return Err(Error::InvalidArgument(
                "in a session holding secrets a selector may not match part of an attribute \
                 (^=, $=, *=, |=); use a ref, a role and name, or an exact [attr=value]"
                    .to_owned(),
            ));
        }
        Ok(())
    }

    /// A ref names an element of the tab it came from only: one of another tab (the
    /// agent switched tabs since its snapshot) names nothing here, and says where it
    /// is from.
    pub(super) fn own_ref(&self, tab: &Tab, target: &Target) -> Result<()> {
        let Target::Ref(r) = target else {
            return Ok(());
        };
        if r.tab == tab.serial {
            return Ok(());
        }
        let index = lock(&self.registry)
            .tabs
            .iter()
            .position(|t| t.serial == r.tab);
        Err(Error::RefOfOtherTab {
            reference: r.to_string(),
            tab: index,
        })
    }

    pub(super) fn render_options(&self, tab: &Tab, url: &str) -> RenderOptions {
        RenderOptions {
            page_url: Some(url.to_owned()),
            redactor: self.redactor.is_active().then(|| self.redactor.clone()),
            tab: tab.serial,
        }
    }

    // What a page-derived description may show: redacted, then cut.
    pub(super) fn shown(&self, text: &str) -> String {
        ellipsize(&self.redactor.redact(text), 80)
    }

    // Everything else taken from a page or Chromium: redacted.
    pub(super) fn scrub(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    pub(super) async fn prepare_in_frame(
        &self,
        tab: &Tab,
        frame: u32,
        target: &Target,
        prepare: Prepare,
        wait_for_match: bool,
        budget: Duration,
    ) -> Result<Located> {
        // The frames holding the target must be in view before the target can be.
        for (parent, owner) in self.frame_chain(tab, frame).await? {
            tab.eval(
                parent,
                &format!("__airlock.scrollIntoView({{\"ref\": {owner}}})"),
                false,
                budget,
            )
            .await?;
        }
        let opts = json!({
            "timeoutMs": budget.as_millis() as u64,
            "needEnabled": prepare.need_enabled,
            "hitTest": prepare.hit_test,
            "waitForMatch": wait_for_match,
            "focusForTyping": prepare.focus_for_typing,
            "inspect": prepare.inspect,
        });
        let expression = format!("__airlock.prepare({}, {opts})", target.walker_json());
        let value = tab
            .eval(frame, &expression, true, budget + Duration::from_secs(2))
            .await
            .map_err(|e| match e {
                Error::RefNotFound { .. } => Error::RefNotFound {
                    reference: match target {
                        Target::Ref(r) => r.to_string(),
                        other => other.describe(),
                    },
                },
                other => other,
            })?;
        self.walker_error(&value, target)?;
        let mut located: Located = serde_json::from_value(value)
            .map_err(|e| Error::Protocol(format!("bad prepare reply: {e}")))?;
        located.desc = self.shown(&located.desc);
        Ok(located)
    }

    // Runs a walker helper that takes a target and returns `{ok…}` or `{error…}`.
    pub(super) async fn helper(
        &self,
        tab: &Tab,
        frame: u32,
        call: &str,
        target: &Target,
    ) -> Result<Value> {
        let value = tab.eval(frame, call, false, self.budget()).await?;
        self.walker_error(&value, target)?;
        Ok(value)
    }

    // The walker's `{error, message, desc}` as an error, its page-derived words
    // redacted.
    pub(super) fn walker_error(&self, value: &Value, target: &Target) -> Result<()> {
        walker_error(value, target).map_err(|e| match e {
            Error::NotActionable { target, why } => Error::NotActionable {
                target: self.shown(&target),
                why: self.scrub(&why),
            },
            Error::ElementNotFound { target } => Error::ElementNotFound {
                target: self.scrub(&target),
            },
            Error::InvalidArgument(message) => Error::InvalidArgument(self.scrub(&message)),
            other => other,
        })
    }
}

/// How a target names its element by words, matched outside the page.
#[derive(Clone, Copy)]
pub(super) enum By<'a> {
    /// An element of this role with this accessible name.
    Role(&'a str),
    /// An element showing this text.
    Text,
}

impl<'a> By<'a> {
    /// How `target` names its element by words, with the words and the index.
    pub(super) fn of(target: &'a Target) -> Option<(By<'a>, &'a str, Option<usize>)> {
        match target {
            Target::Role {
                role,
                name: Some(name),
                index,
            } => Some((By::Role(role), name, *index)),
            Target::Text { text, index } => Some((By::Text, text, *index)),
            _ => None,
        }
    }
}

// Of the candidates at `matched` (indices into `list`, each naming its nearest
// candidate ancestor as `anc`), those no other match lies inside.
fn innermost(list: &[Value], matched: Vec<usize>) -> Vec<usize> {
    let mut outer = std::collections::HashSet::new();
    for &i in &matched {
        let mut at = list[i]["anc"].as_i64().unwrap_or(-1);
        // Each ancestor comes earlier in document order: the walk ends.
        while let Ok(up) = usize::try_from(at) {
            if up >= i || !outer.insert(up) {
                break;
            }
            at = list[up]["anc"].as_i64().unwrap_or(-1);
        }
    }
    matched.into_iter().filter(|i| !outer.contains(i)).collect()
}
