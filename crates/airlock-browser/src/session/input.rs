//! Acting on the page: mouse, keyboard, typing (secrets checked against the field's
//! origin), forms, options, checkboxes and scrolling (waiting is `wait.rs`).

use super::*;

impl Session {
    // ---- mouse and keyboard -------------------------------------------------------

    pub(super) async fn mouse(
        &self,
        tab: &Tab,
        kind: &str,
        x: f64,
        y: f64,
        extra: Value,
    ) -> Result<()> {
        self.mouse_events(tab, x, y, &[(kind, extra)]).await
    }

    // Sends mouse events in one go and waits for them all. A move alone is answered
    // only after the next animation frame (Blink aligns moves with frames), but an
    // event sent behind it makes Blink dispatch it at once: a click sent this way
    // costs its press and release (~3 ms), not a frame more (~16 ms), and the page
    // still sees the move (`mouseover`, `:hover`) before the press.
    pub(super) async fn mouse_events(
        &self,
        tab: &Tab,
        x: f64,
        y: f64,
        events: &[(&str, Value)],
    ) -> Result<()> {
        let sent: Vec<_> = events
            .iter()
            .map(|(kind, extra)| {
                tab.send(
                    "Input.dispatchMouseEvent",
                    mouse_event(kind, x, y, extra),
                    self.budget(),
                )
            })
            .collect();
        for reply in sent {
            reply.await?;
        }
        Ok(())
    }

    /// Clicks the target.
    pub async fn click(&self, target: &Target, options: &ClickOptions) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let (frame, located, _) = self.locate(&tab, target, CLICKABLE).await?;
        let before = Self::nav_counters(&tab);
        let button = match options.button {
            MouseButton::Left => "left",
            MouseButton::Right => "right",
            MouseButton::Middle => "middle",
        };
        let modifiers: u32 = options
            .modifiers
            .iter()
            .map(|m| match m {
                Modifier::Alt => keys::ALT,
                Modifier::Control => keys::CONTROL,
                Modifier::Meta => keys::META,
                Modifier::Shift => keys::SHIFT,
            })
            .fold(0, |a, b| a | b);
        let (x, y) = (located.x, located.y);
        let clicks = if options.double { 2 } else { 1 };
        let mut events = vec![("mouseMoved", json!({ "modifiers": modifiers }))];
        for count in 1..=clicks {
            let extra = json!({ "button": button, "clickCount": count, "modifiers": modifiers });
            events.push(("mousePressed", extra.clone()));
            events.push(("mouseReleased", extra));
        }
        let landed = Landed {
            frame,
            mark: located.mark,
        };
        let pressed = async {
            self.mouse_events(&tab, x, y, &events).await?;
            Ok::<_, Error>(
                self.settle_at(&tab, before, landed, Quiet::FrameUnlessReacted)
                    .await,
            )
        };
        let navigated = match pressed.await {
            Ok(navigated) => navigated,
            // The click closed its own tab (`window.close()`): it was done, and the
            // outcome says the tab went.
            Err(Error::TabClosed) => {
                self.until_unlisted(&tab).await;
                false
            }
            Err(e) => return Err(e),
        };
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.effect = Some(Effect::Clicked(located.desc));
        Ok(outcome)
    }

    /// Drags `from` onto `to` with the left button, as a hand would: press, several
    /// moves, release. An HTML5 drag the page starts is carried out with the drag
    /// data Chromium hands over (enter, over, drop at `to`). Both ends must fit in the
    /// viewport together; `to` is located first, so it is in view when `from` is.
    pub async fn drag(&self, from: &Target, to: &Target) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let (_, end, _) = self.locate(&tab, to, VISIBLE).await?;
        let (_, start, _) = self.locate(&tab, from, HOVERABLE).await?;
        let before = Self::nav_counters(&tab);
        tab.state.with(|s| s.drag = None);
        tab.call(
            "Input.setInterceptDrags",
            json!({ "enabled": true }),
            self.budget(),
        )
        .await?;
        let dragged = self.drag_moves(&tab, &start, &end).await;
        // Whatever happened, the next mouse press is an ordinary one again.
        let _ = tab
            .call(
                "Input.setInterceptDrags",
                json!({ "enabled": false }),
                self.budget(),
            )
            .await;
        dragged?;
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.effect = Some(Effect::Dragged {
            from: start.desc,
            to: end.desc,
        });
        Ok(outcome)
    }

    async fn drag_moves(&self, tab: &Tab, start: &Located, end: &Located) -> Result<()> {
        const STEPS: u32 = 8;
        let held = json!({ "button": "left", "buttons": 1 });
        // Dropped a quarter of the target past its centre, in the direction of
        // travel, as a hand lets go once the item has taken the target's place: a
        // sortable list (jQuery UI's) swaps two items only when the pointer crosses
        // the target's middle. Still well inside the target, for a drop zone.
        let past = |from: f64, to: f64, size: f64| {
            let delta = to - from;
            if delta.abs() < 2.0 {
                to
            } else {
                to + delta.signum() * size / 4.0
            }
        };
        let end = &Located {
            x: past(start.x, end.x, end.rect.w),
            y: past(start.y, end.y, end.rect.h),
            ..end.clone()
        };
        self.mouse(tab, "mouseMoved", start.x, start.y, json!({}))
            .await?;
        self.mouse(
            tab,
            "mousePressed",
            start.x,
            start.y,
            json!({ "button": "left", "buttons": 1, "clickCount": 1 }),
        )
        .await?;
        let mut data = None;
        for step in 1..=STEPS {
            let t = f64::from(step) / f64::from(STEPS);
            let (x, y) = (
                start.x + (end.x - start.x) * t,
                start.y + (end.y - start.y) * t,
            );
            self.mouse(tab, "mouseMoved", x, y, held.clone()).await?;
            if step == 1 {
                // An HTML5 drag starts on the first move: Chromium hands its data over
                // (`Input.dragIntercepted`) instead of running a native drag.
                tab.state
                    .wait(Duration::from_millis(100), |s| s.drag.is_some())
                    .await;
                data = tab.state.with(|s| s.drag.take());
                if data.is_some() {
                    break;
                }
            }
        }
        match data {
            Some(data) => {
                for kind in ["dragEnter", "dragOver", "drop"] {
                    tab.call(
                        "Input.dispatchDragEvent",
                        json!({ "type": kind, "x": end.x, "y": end.y, "data": data }),
                        self.budget(),
                    )
                    .await?;
                }
                self.mouse(
                    tab,
                    "mouseReleased",
                    end.x,
                    end.y,
                    json!({ "button": "left", "clickCount": 1 }),
                )
                .await
            }
            None => {
                self.mouse(
                    tab,
                    "mouseReleased",
                    end.x,
                    end.y,
                    json!({ "button": "left", "buttons": 0, "clickCount": 1 }),
                )
                .await
            }
        }
    }

    /// Clicks `target` (a file input, or the button or label that opens one) and
    /// gives the file chooser it opens these files. The caller has checked the paths
    /// (Airlock takes files only from the operator's upload directory).
    pub async fn upload(
        &self,
        target: &Target,
        files: &[std::path::PathBuf],
    ) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let (_, located, _) = self.locate(&tab, target, CLICKABLE).await?;
        let before = Self::nav_counters(&tab);
        tab.state.with(|s| s.file_chooser = None);
        tab.call(
            "Page.setInterceptFileChooserDialog",
            json!({ "enabled": true }),
            self.budget(),
        )
        .await?;
        let chosen = async {
            let extra = json!({ "button": "left", "clickCount": 1 });
            self.mouse(&tab, "mouseMoved", located.x, located.y, json!({}))
                .await?;
            self.mouse(&tab, "mousePressed", located.x, located.y, extra.clone())
                .await?;
            self.mouse(&tab, "mouseReleased", located.x, located.y, extra)
                .await?;
            tab.state
                .wait(Duration::from_secs(2), |s| s.file_chooser.is_some())
                .await;
            let Some((node, multiple)) = tab.state.with(|s| s.file_chooser.take()) else {
                return Err(Error::NotActionable {
                    target: located.desc.clone(),
                    why: "clicking it opened no file chooser".to_owned(),
                });
            };
            if files.len() > 1 && !multiple {
                return Err(Error::InvalidArgument(
                    "this file input takes one file".to_owned(),
                ));
            }
            let paths: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
            tab.call(
                "DOM.setFileInputFiles",
                json!({ "files": paths, "backendNodeId": node }),
                self.budget(),
            )
            .await?;
            Ok(())
        }
        .await;
        let _ = tab
            .call(
                "Page.setInterceptFileChooserDialog",
                json!({ "enabled": false }),
                self.budget(),
            )
            .await;
        chosen?;
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.effect = Some(Effect::Uploaded {
            target: located.desc,
            files: files
                .iter()
                .map(|p| {
                    p.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                })
                .collect(),
        });
        Ok(outcome)
    }

    /// Moves the mouse over the target.
    pub async fn hover(&self, target: &Target) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let (frame, located, _) = self.locate(&tab, target, HOVERABLE).await?;
        let before = Self::nav_counters(&tab);
        self.mouse(&tab, "mouseMoved", located.x, located.y, json!({}))
            .await?;
        let landed = Landed {
            frame,
            mark: located.mark,
        };
        let navigated = self
            .settle_at(&tab, before, landed, Quiet::FrameUnlessReacted)
            .await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.effect = Some(Effect::Hovered(located.desc));
        Ok(outcome)
    }

    /// Types `text` into the target field (replacing its content when `clear_first`),
    /// then presses Enter when `submit`.
    pub async fn type_text(
        &self,
        target: &Target,
        text: &str,
        clear_first: bool,
        submit: bool,
    ) -> Result<ActionOutcome> {
        self.type_pieces(target, &TypedText::plain(text), clear_first, submit)
            .await
    }

    /// Like [`Session::type_text`], with secret pieces: each is typed only if, right
    /// before it is inserted, the target is still the focused element and its own
    /// frame's origin is one the secret is bound to.
    pub async fn type_pieces(
        &self,
        target: &Target,
        text: &TypedText,
        clear_first: bool,
        submit: bool,
    ) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let before = Self::nav_counters(&tab);
        let desc = self.type_into(&tab, target, text, clear_first).await?;
        let navigated = if submit {
            self.press_combo(&tab, &keys::parse_combo("Enter")?).await?;
            self.settle(&tab, before).await
        } else {
            // Input handlers ran during insertText, and typing alone starts no
            // navigation: no frame is waited for (it cost ~8 ms a call, half of
            // what typing cost), only a task (a fetch an input handler made is
            // seen starting by then, even on a loaded machine) and the requests
            // the handlers started.
            self.settle_at(&tab, before, Landed::unknown(), Quiet::TaskUnlessReacted)
                .await
        };
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.effect = Some(Effect::Typed(desc));
        Ok(outcome)
    }

    pub(super) async fn type_into(
        &self,
        tab: &Tab,
        target: &Target,
        text: &TypedText,
        clear_first: bool,
    ) -> Result<String> {
        let editable = Prepare {
            focus_for_typing: Some(clear_first),
            ..EDITABLE
        };
        let (frame, located, target) = self.locate(tab, target, editable).await?;
        let target = &target;
        if let Some(kind) = &located.value_type {
            return self
                .set_value(tab, frame, target, &located, kind, text)
                .await;
        }
        if !located.focused {
            let call = format!(
                "__airlock.focusForTyping({}, {clear_first})",
                target.walker_json()
            );
            self.helper(tab, frame, &call, target).await?;
        }
        // Every secret is checked once before anything is typed, so a wrong origin
        // types nothing at all …
        for piece in &text.0 {
            if let TextPiece::Secret { label, origins, .. } = piece {
                let call = format!("__airlock.secretDestination({})", target.walker_json());
                let found = self.helper(tab, frame, &call, target).await?;
                self.judge_destination(&found, label, origins)?;
            }
        }
        if text.is_empty() && clear_first {
            self.press_combo(tab, &keys::parse_combo("Delete")?).await?;
        }
        let mut secret_typed = false;
        for piece in &text.0 {
            match piece {
                TextPiece::Plain(text) if text.is_empty() => {}
                TextPiece::Plain(text) => {
                    tab.call("Input.insertText", json!({ "text": text }), self.budget())
                        .await?;
                }
                TextPiece::Secret { value, .. } if value.is_empty() => {}
                TextPiece::Secret {
                    label,
                    origins,
                    value,
                } => {
                    // … and checked again in the same task as the insertion: the page
                    // may have moved the focus or navigated meanwhile.
                    self.insert_secret(tab, frame, target, label, origins, value)
                        .await?;
                    secret_typed = true;
                }
            }
        }
        if secret_typed {
            self.secret_typed.store(true, Ordering::Release);
        }
        if secret_typed || clear_first {
            // Replaced by plain text, a field is no longer masked; with a secret, it is.
            let verb = if secret_typed {
                "markSecret"
            } else {
                "unmarkSecret"
            };
            let call = format!("__airlock.{verb}({})", target.walker_json());
            self.helper(tab, frame, &call, target).await?;
        }
        Ok(located.desc)
    }

    // An input that takes a value, not typing (`crate::fields`): the agent's words
    // in the form the input takes, written and read back; what it holds is said.
    async fn set_value(
        &self,
        tab: &Tab,
        frame: u32,
        target: &Target,
        located: &Located,
        kind: &str,
        text: &TypedText,
    ) -> Result<String> {
        if text.has_secret() {
            return Err(Error::InvalidArgument(format!(
                "{} is a {kind} field: a secret placeholder can only be typed into a text field",
                located.desc
            )));
        }
        let written = text.plain_text();
        let lang = located.lang.as_deref().unwrap_or_default();
        let value = crate::fields::value_for(kind, &written, lang).map_err(|forms| {
            Error::InvalidArgument(format!(
                "{} is a {kind} field and “{written}” is not one: {forms}",
                located.desc
            ))
        })?;
        let call = format!(
            "__airlock.setValue({}, {})",
            target.walker_json(),
            Value::from(value.as_str())
        );
        let set = self.helper(tab, frame, &call, target).await?;
        let held = set["value"].as_str().unwrap_or_default();
        if held.is_empty() && !value.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "{} refused {value} (outside its min, max or step?); nothing was set",
                located.desc
            )));
        }
        Ok(format!("{} (now {})", located.desc, self.scrub(held)))
    }

    // Inserts a secret into the focused field, checking in the page, in the same task,
    // that what receives the text is a text field inside the target, of a frame whose
    // origin and every ancestor frame's origin the secret is bound to.
    pub(super) async fn insert_secret(
        &self,
        tab: &Tab,
        frame: u32,
        target: &Target,
        label: &str,
        origins: &[String],
        value: &str,
    ) -> Result<()> {
        let reply = tab
            .call_function(
                frame,
                "function (target, text, origins) { return __airlock.typeSecret(target, text, origins); }",
                &[target.walker_json(), Value::from(value), Value::from(origins.to_vec())],
                self.budget(),
            )
            .await?;
        self.walker_error(&reply, target)?;
        self.judge_destination(&reply, label, origins)?;
        if reply["inserted"].as_bool() != Some(true) {
            return Err(Error::NotActionable {
                target: target.describe(),
                why: "it did not take the typed text".to_owned(),
            });
        }
        Ok(())
    }

    // Whether a secret may go where `found` (from the walker's `secretDestination` or
    // `typeSecret`) says keystrokes would go now.
    pub(super) fn judge_destination(
        &self,
        found: &Value,
        label: &str,
        origins: &[String],
    ) -> Result<()> {
        let mismatch = |detail: String| Error::SecretOriginMismatch {
            secret: label.to_owned(),
            allowed: origins.join(", "),
            detail: self.scrub(&detail),
        };
        let origin = found["origin"].as_str().unwrap_or_default();
        if !origins.iter().any(|o| o == origin) {
            return Err(mismatch(format!("the field is on {origin}")));
        }
        // A bound login framed by another site would capture the keystrokes for it.
        for ancestor in found["ancestors"].as_array().into_iter().flatten() {
            let ancestor = ancestor.as_str().unwrap_or("an unknown origin");
            if !origins.iter().any(|o| o == ancestor) {
                return Err(mismatch(format!(
                    "the field's page is framed by {ancestor}"
                )));
            }
        }
        match found["focus"].as_str() {
            Some("ok") => Ok(()),
            Some(why) => Err(mismatch(why.to_owned())),
            None => Err(mismatch(
                "the field's focus could not be checked".to_owned(),
            )),
        }
    }

    /// Fills several fields: text fields are replaced, checkboxes take `true`/`false`,
    /// selects take an option value or label.
    pub async fn fill_form(&self, fields: &[(Target, String)]) -> Result<ActionOutcome> {
        let typed: Vec<(Target, TypedText)> = fields
            .iter()
            .map(|(t, v)| (t.clone(), TypedText::plain(v)))
            .collect();
        self.fill_form_pieces(&typed).await
    }

    /// [`Session::fill_form`] with secret pieces in text fields (checkboxes and
    /// selects take plain values only).
    pub async fn fill_form_pieces(&self, fields: &[(Target, TypedText)]) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let before = Self::nav_counters(&tab);
        let mut done = Vec::new();
        for (target, value) in fields {
            let (frame, located, target) = self.locate(&tab, target, EDITABLE).await?;
            let target = &target;
            let kind = self
                .helper(
                    &tab,
                    frame,
                    &format!("__airlock.fieldKind({})", target.walker_json()),
                    target,
                )
                .await?;
            let kind = kind["kind"].as_str().unwrap_or("text");
            if kind != "text" && value.has_secret() {
                return Err(Error::InvalidArgument(format!(
                    "{} is not a text field: a secret placeholder can only be typed",
                    located.desc
                )));
            }
            let plain = value.plain_text();
            match kind {
                "check" => {
                    let want = match plain.as_str() {
                        "true" | "on" | "checked" | "yes" => true,
                        "false" | "off" | "unchecked" | "no" => false,
                        _ => {
                            return Err(Error::InvalidArgument(format!(
                                "{} is a checkbox: give `true` or `false`",
                                located.desc
                            )));
                        }
                    };
                    self.set_checked_in(&tab, target, want).await?;
                }
                "select" => {
                    self.select_in(&tab, frame, target, std::slice::from_ref(&plain))
                        .await?;
                }
                _ => {
                    self.type_into(&tab, target, value, true).await?;
                }
            }
            done.push(located.desc);
        }
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.effect = Some(Effect::Filled(done));
        Ok(outcome)
    }

    pub(super) async fn press_combo(&self, tab: &Tab, combo: &keys::Combo) -> Result<()> {
        let timeout = self.budget();
        let mut held = 0;
        for (bit, key) in &combo.modifiers {
            held |= bit;
            tab.call(
                "Input.dispatchKeyEvent",
                key_event("rawKeyDown", key, held, None),
                timeout,
            )
            .await?;
        }
        let key = &combo.key;
        // Text is produced only when no command modifier is held (Control+A selects
        // all rather than typing "a").
        let command = held & (keys::CONTROL | keys::ALT | keys::META) != 0;
        let text = if command { None } else { key.text.clone() };
        let down = if text.is_some() {
            "keyDown"
        } else {
            "rawKeyDown"
        };
        tab.call(
            "Input.dispatchKeyEvent",
            key_event(down, key, held, text.as_deref()),
            timeout,
        )
        .await?;
        tab.call(
            "Input.dispatchKeyEvent",
            key_event("keyUp", key, held, None),
            timeout,
        )
        .await?;
        for (bit, key) in combo.modifiers.iter().rev() {
            held &= !bit;
            tab.call(
                "Input.dispatchKeyEvent",
                key_event("keyUp", key, held, None),
                timeout,
            )
            .await?;
        }
        Ok(())
    }

    /// Presses a key or combo (`Enter`, `Control+A`, `Shift+Tab`) in the focused element.
    pub async fn press_key(&self, key: &str) -> Result<ActionOutcome> {
        let combo = keys::parse_combo(key)?;
        let _op = self.begin().await;
        let tab = self.page().await?;
        let before = Self::nav_counters(&tab);
        self.press_combo(&tab, &combo).await?;
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.effect = Some(Effect::Pressed(key.to_owned()));
        Ok(outcome)
    }

    /// Selects option(s) of a `<select>` by value or visible label.
    pub async fn select_option(&self, target: &Target, values: &[String]) -> Result<ActionOutcome> {
        if values.is_empty() {
            return Err(Error::InvalidArgument(
                "give at least one value to select".to_owned(),
            ));
        }
        let _op = self.begin().await;
        let tab = self.page().await?;
        let (frame, _, target) = self.locate(&tab, target, EDITABLE).await?;
        let before = Self::nav_counters(&tab);
        let selected = self.select_in(&tab, frame, &target, values).await?;
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.effect = Some(Effect::Selected(selected));
        Ok(outcome)
    }

    pub(super) async fn select_in(
        &self,
        tab: &Tab,
        frame: u32,
        target: &Target,
        values: &[String],
    ) -> Result<Vec<String>> {
        let call = format!(
            "__airlock.selectOptions({}, {})",
            target.walker_json(),
            Value::from(values.to_vec())
        );
        let v = self.helper(tab, frame, &call, target).await?;
        Ok(v["selected"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(|s| self.shown(s)))
            .collect())
    }

    /// Checks (`true`) or unchecks a checkbox, radio or switch, by clicking it when its
    /// state differs; verifies the state changed.
    pub async fn set_checked(&self, target: &Target, checked: bool) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let before = Self::nav_counters(&tab);
        let effect = self.set_checked_in(&tab, target, checked).await?;
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.effect = Some(effect);
        Ok(outcome)
    }

    pub(super) async fn set_checked_in(
        &self,
        tab: &Tab,
        target: &Target,
        want: bool,
    ) -> Result<Effect> {
        let (frame, located, target) = self.locate(tab, target, CLICKABLE).await?;
        let target = &target;
        let read = format!("__airlock.checked({})", target.walker_json());
        let state = self.helper(tab, frame, &read, target).await?;
        let verb = if want { "checked" } else { "unchecked" };
        if state["checked"].as_bool() == Some(want) {
            return Ok(Effect::Checked {
                target: located.desc,
                checked: want,
                changed: false,
            });
        }
        if !want && state["checked"].as_bool() == Some(true) {
            // A checked radio cannot be unchecked by clicking it.
            let role = located.desc.split(' ').next().unwrap_or_default();
            if role == "radio" {
                return Err(Error::NotActionable {
                    target: located.desc,
                    why: "a radio button is unchecked by checking another one of its group"
                        .to_owned(),
                });
            }
        }
        let extra = json!({ "button": "left", "clickCount": 1 });
        let events = [
            ("mouseMoved", json!({})),
            ("mousePressed", extra.clone()),
            ("mouseReleased", extra),
        ];
        self.mouse_events(tab, located.x, located.y, &events)
            .await?;
        let after = self.helper(tab, frame, &read, target).await?;
        if after["checked"].as_bool() != Some(want) {
            return Err(Error::NotActionable {
                target: located.desc,
                why: format!("clicking it did not make it {verb}"),
            });
        }
        Ok(Effect::Checked {
            target: located.desc,
            checked: want,
            changed: true,
        })
    }

    /// Scrolls the page, or brings a target into view.
    pub async fn scroll(&self, scroll: &Scroll) -> Result<ActionOutcome> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let before = Self::nav_counters(&tab);
        let effect = match scroll {
            Scroll::IntoView(target) => {
                let (_, located, _) = self.locate(&tab, target, VISIBLE).await?;
                Effect::ScrolledIntoView(located.desc)
            }
            Scroll::Page { direction, amount } => {
                let (w, h) = lock(&self.registry).screen.viewport;
                let amount = amount.unwrap_or(f64::from(h) * 0.8);
                if !amount.is_finite() || amount <= 0.0 || amount > 100_000.0 {
                    return Err(Error::InvalidArgument(format!(
                        "scroll amount {amount} is outside 1..=100000"
                    )));
                }
                let (dx, dy) = match direction {
                    Direction::Up => (0.0, -amount),
                    Direction::Down => (0.0, amount),
                    Direction::Left => (-amount, 0.0),
                    Direction::Right => (amount, 0.0),
                };
                self.mouse(
                    &tab,
                    "mouseWheel",
                    f64::from(w) / 2.0,
                    f64::from(h) / 2.0,
                    json!({ "deltaX": dx, "deltaY": dy }),
                )
                .await?;
                let pos = tab
                    .eval(
                        0,
                        "new Promise(r => requestAnimationFrame(() => r({x: Math.round(scrollX), y: Math.round(scrollY), h: document.documentElement.scrollHeight})))",
                        true,
                        self.budget(),
                    )
                    .await?;
                let at = |k: &str| pos[k].as_f64().unwrap_or_default() as i64;
                Effect::Scrolled {
                    x: at("x"),
                    y: at("y"),
                    page_height: at("h"),
                }
            }
        };
        let navigated = self.settle(&tab, before).await;
        let mut outcome = self.outcome(&tab, navigated).await;
        outcome.effect = Some(effect);
        Ok(outcome)
    }
}

// The parameters of one `Input.dispatchMouseEvent` at (x, y), with `extra`'s fields.
fn mouse_event(kind: &str, x: f64, y: f64, extra: &Value) -> Value {
    let mut params = json!({ "type": kind, "x": x, "y": y });
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            p.insert(k.clone(), v.clone());
        }
    }
    params
}
