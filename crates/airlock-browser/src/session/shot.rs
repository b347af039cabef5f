//! Screenshots: the viewport, an element or the whole page, with every place the
//! page shows a secret painted over; and the image of a page an effect rule holds
//! mid-navigation, which answers no command.

use super::*;
use crate::paint;

impl Session {
    /// Captures the viewport, the full page or one element. In a session with anything
    /// to hide, everything the page shows as text that holds a form of a secret (a
    /// text node, a field's value, a name), and every field a secret was typed into, is
    /// painted black in the image before it leaves this function.
    pub async fn screenshot(&self, options: &ScreenshotOptions) -> Result<Screenshot> {
        let _op = self.begin().await;
        let tab = self.page().await?;
        let timeout = self.budget();
        let (format, mime, quality) = match options.format {
            ImageFormat::Png => ("png", "image/png", None),
            ImageFormat::Jpeg { quality } => {
                if !(1..=100).contains(&quality) {
                    return Err(Error::InvalidArgument(format!(
                        "JPEG quality {quality} is outside 1..=100"
                    )));
                }
                ("jpeg", "image/jpeg", Some(quality))
            }
        };
        let mut params = json!({ "format": format });
        if options.fast {
            params["optimizeForSpeed"] = json!(true);
        }
        if let Some(q) = quality {
            params["quality"] = json!(q);
        }
        if tab.state.read(|s| s.navigations_held > 0) {
            return self.held_screenshot(&tab, params, mime, quality).await;
        }
        let metrics = tab
            .call("Page.getLayoutMetrics", json!({}), timeout)
            .await?;
        let viewport = &metrics["cssVisualViewport"];
        let number = |v: &Value| v.as_f64().unwrap_or(0.0);
        let (page_x, page_y) = (number(&viewport["pageX"]), number(&viewport["pageY"]));
        // What the image shows, in page CSS pixels.
        let region = if let Some(target) = &options.target {
            let (_, located, _) = self.locate(&tab, target, VISIBLE).await?;
            let r = located.rect;
            let clip = paint::Rect {
                x: r.x + page_x,
                y: r.y + page_y,
                w: r.w.max(1.0),
                h: r.h.max(1.0),
            };
            params["clip"] =
                json!({ "x": clip.x, "y": clip.y, "width": clip.w, "height": clip.h, "scale": 1 });
            params["captureBeyondViewport"] = json!(true);
            clip
        } else if options.full_page {
            let width = number(&metrics["cssContentSize"]["width"]).max(1.0);
            let height =
                number(&metrics["cssContentSize"]["height"]).clamp(1.0, MAX_SCREENSHOT_HEIGHT);
            params["clip"] =
                json!({ "x": 0, "y": 0, "width": width, "height": height, "scale": 1 });
            params["captureBeyondViewport"] = json!(true);
            paint::Rect {
                x: 0.0,
                y: 0.0,
                w: width,
                h: height,
            }
        } else {
            paint::Rect {
                x: page_x,
                y: page_y,
                w: number(&viewport["clientWidth"]).max(1.0),
                h: number(&viewport["clientHeight"]).max(1.0),
            }
        };
        // Where secrets are shown, found before the capture (a session with nothing
        // to hide skips the round trips).
        let hiding = self.redactor.is_active() || self.secret_typed.load(Ordering::Acquire);
        let found = if hiding {
            Some(self.shown_secrets(&tab, (page_x, page_y)).await?)
        } else {
            None
        };
        if let Some(b) = options.outline {
            let finite = [b.x, b.y, b.width, b.height].iter().all(|v| v.is_finite());
            if finite {
                tab.eval(
                    0,
                    &format!(
                        "__airlock.outline({}, {}, {}, {})",
                        b.x, b.y, b.width, b.height
                    ),
                    false,
                    timeout,
                )
                .await?;
            }
        }
        let reply = tab
            .call(
                "Page.captureScreenshot",
                params,
                timeout.max(Duration::from_secs(20)),
            )
            .await;
        if options.outline.is_some() {
            let _ = tab.eval(0, "__airlock.outline(null)", false, timeout).await;
        }
        let reply = reply?;
        let mut data = base64::engine::general_purpose::STANDARD
            .decode(reply["data"].as_str().unwrap_or_default())
            .map_err(|e| Error::Protocol(format!("screenshot was not base64: {e}")))?;
        let mut covered = false;
        if let Some(found) = found {
            // Where they are after the capture too: a page that moved them meanwhile
            // has both places painted.
            let mut boxes = found.boxes.clone();
            let again = self.shown_again(&tab, &found, (page_x, page_y)).await;
            // Text that moved (or was redrawn) between the two looks may have been
            // anywhere in the capture: all of it is painted, and the result says so.
            let everything = found.everything || !same_places(&found.placed, &again);
            boxes.extend(again);
            if everything {
                boxes = vec![region];
                covered = true;
            }
            if !boxes.is_empty() {
                data = paint::paint(&data, quality, region, &boxes)?;
            }
        }
        Ok(Screenshot {
            data,
            mime,
            covered,
        })
    }

    // The viewport of a page whose navigation an effect rule holds, as it is now.
    // Chromium answers no command for the page's frame meanwhile (not even its
    // layout metrics), but captures its surface: the image is taken as it is, and in
    // a session that hides secrets painted where the page showed them as it began
    // to leave (walker.js `leaving`). No report of that page (it stopped Airlock's
    // listener, or this session began hiding after it loaded): no image.
    async fn held_screenshot(
        &self,
        tab: &Tab,
        params: Value,
        mime: &'static str,
        quality: Option<u8>,
    ) -> Result<Screenshot> {
        let hiding = self.redactor.is_active() || self.secret_typed.load(Ordering::Acquire);
        let report = if hiding {
            let report = tab.state.read(|s| {
                s.leaving
                    .as_ref()
                    .filter(|(at, _)| *at == s.navigations)
                    .map(|(_, text)| text.clone())
            });
            let unseen = || {
                Error::SecretsHeld(
                    "no image: the page is held mid-navigation, and where it shows secrets was not reported as it left".to_owned(),
                )
            };
            let report = report.ok_or_else(unseen)?;
            Some(serde_json::from_str::<Value>(&report).map_err(|_| unseen())?)
        } else {
            None
        };
        let reply = tab
            .call("Page.captureScreenshot", params, self.budget())
            .await?;
        let mut data = base64::engine::general_purpose::STANDARD
            .decode(reply["data"].as_str().unwrap_or_default())
            .map_err(|e| Error::Protocol(format!("screenshot was not base64: {e}")))?;
        let mut covered = false;
        if let Some(report) = report {
            let number = |v: &Value| v.as_f64().unwrap_or(0.0);
            let region = paint::Rect {
                x: 0.0,
                y: 0.0,
                w: number(&report["w"]).max(1.0),
                h: number(&report["h"]).max(1.0),
            };
            let boxes = self.left_secrets(&report, region);
            covered = boxes.contains(&region);
            if !boxes.is_empty() {
                data = paint::paint(&data, quality, region, &boxes)?;
            }
        }
        Ok(Screenshot {
            data,
            mime,
            covered,
        })
    }

    // Where a leaving page's report (walker.js `leaving`) shows a secret, in its
    // viewport's CSS pixels: the same finding as `shown_secrets`, on what was told.
    fn left_secrets(&self, report: &Value, viewport: paint::Rect) -> Vec<paint::Rect> {
        let strings = |key: &str| strings_at(report, key);
        let rects = |key: &str, i: usize| -> Vec<paint::Rect> {
            report[key][i]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| page_rect(b, (0.0, 0.0)))
                .collect()
        };
        let (texts, items) = (strings("texts"), strings("items"));
        let mut boxes: Vec<paint::Rect> = report["masks"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(report["frames"].as_array().into_iter().flatten())
            .filter_map(|b| page_rect(b, (0.0, 0.0)))
            .collect();
        if report["incomplete"].as_bool() != Some(false) {
            boxes.push(viewport);
            return boxes;
        }
        let joined: String = texts.concat();
        match self.redactor.hidden(&joined) {
            None => boxes.push(viewport),
            Some(ranges) => {
                let mut start = 0;
                for (i, text) in texts.iter().enumerate() {
                    let end = start + text.len();
                    if ranges.iter().any(|r| r.start < end && r.end > start) {
                        boxes.extend(rects("nodeRects", i));
                    }
                    start = end;
                }
            }
        }
        for (i, text) in items.iter().enumerate() {
            if self.redactor.hidden(text).is_none_or(|r| !r.is_empty()) {
                boxes.extend(rects("itemRects", i));
            }
        }
        boxes
    }

    // Every place the active tab's frames show a secret (or a field that always
    // masks), in page CSS pixels, and what was found to look again after the capture.
    async fn shown_secrets(&self, tab: &Tab, scroll: (f64, f64)) -> Result<ShownSecrets> {
        let mut found = ShownSecrets::default();
        // Closed shadow roots first, so `shown` reads inside them; one that could not
        // be handed over hides what it shows, so nothing is shown.
        match tab.adopt_closed_roots(self.budget()).await {
            Ok(closed) if closed.missed == 0 => {}
            _ => found.everything = true,
        }
        let frames = tab.state.read(|s| s.frames.len()).max(1) as u32;
        for frame in 0..frames {
            let shown = match tab
                .eval(frame, "__airlock.shown()", false, self.budget())
                .await
            {
                Ok(shown) => shown,
                // The top document must be read; a child frame that went shows nothing.
                Err(e) if frame == 0 => return Err(e),
                Err(_) => continue,
            };
            let strings = |key: &str| strings_at(&shown, key);
            let (texts, items) = (strings("texts"), strings("items"));
            let mut nodes = Vec::new();
            // Joined, so a value split over several text nodes is found whole.
            let joined: String = texts.concat();
            match self.redactor.hidden(&joined) {
                None => found.everything = true,
                Some(ranges) => {
                    let mut start = 0;
                    for (i, text) in texts.iter().enumerate() {
                        let end = start + text.len();
                        if ranges.iter().any(|r| r.start < end && r.end > start) {
                            nodes.push(i);
                        }
                        start = end;
                    }
                }
            }
            let marked: Vec<usize> = items
                .iter()
                .enumerate()
                .filter(|(_, text)| self.redactor.hidden(text).is_none_or(|r| !r.is_empty()))
                .map(|(i, _)| i)
                .collect();
            if shown["incomplete"].as_bool() == Some(true) {
                found.everything = true;
            }
            let masks = shown["masks"].as_array().cloned().unwrap_or_default();
            if nodes.is_empty() && marked.is_empty() && masks.is_empty() {
                continue;
            }
            // Where the frame sits in the top viewport; not known: all painted.
            let Ok(offset) = self.frame_offset(tab, frame).await else {
                found.everything = true;
                continue;
            };
            let origin = (offset.0 + scroll.0, offset.1 + scroll.1);
            found
                .boxes
                .extend(masks.iter().filter_map(|b| page_rect(b, origin)));
            if !nodes.is_empty() || !marked.is_empty() {
                let call = format!("__airlock.placed({}, {})", json!(nodes), json!(marked));
                let placed = tab.eval(frame, &call, false, self.budget()).await?;
                if placed["moving"].as_bool() != Some(false) {
                    found.everything = true;
                }
                let rects: Vec<paint::Rect> = placed["rects"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| page_rect(b, origin))
                    .collect();
                found.boxes.extend(rects.iter().copied());
                found.placed.extend(rects);
                found.frames.push((frame, nodes, marked));
            }
        }
        Ok(found)
    }

    // The places `found` named, looked up again (best effort).
    async fn shown_again(
        &self,
        tab: &Tab,
        found: &ShownSecrets,
        scroll: (f64, f64),
    ) -> Vec<paint::Rect> {
        let mut out = Vec::new();
        for (frame, nodes, items) in &found.frames {
            let Ok(offset) = self.frame_offset(tab, *frame).await else {
                continue;
            };
            let call = format!("__airlock.shownRects({}, {})", json!(nodes), json!(items));
            if let Ok(rects) = tab.eval(*frame, &call, false, self.budget()).await {
                let origin = (offset.0 + scroll.0, offset.1 + scroll.1);
                out.extend(
                    rects
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|b| page_rect(b, origin)),
                );
            }
        }
        out
    }
}

// The strings of the array at `key` of a walker's reply (`texts`, `items`).
fn strings_at(reply: &Value, key: &str) -> Vec<String> {
    reply[key]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Where a screenshot must be painted over, and what to look up again after it.
#[derive(Default)]
struct ShownSecrets {
    /// In page CSS pixels.
    boxes: Vec<paint::Rect>,
    /// Per frame: its index, the text nodes and the elements that show a secret.
    frames: Vec<(u32, Vec<usize>, Vec<usize>)>,
    /// Where the shown secrets were before the capture (of `boxes`, those looked up
    /// again after it).
    placed: Vec<paint::Rect>,
    /// Something could not be checked (the page was too large, a frame could not be
    /// placed, a closed shadow root could not be read, a secret moves): the whole
    /// image is painted.
    everything: bool,
}

// Whether two looks found the shown secrets in the same places (within a pixel:
// layout rounding), counted with repeats.
fn same_places(before: &[paint::Rect], after: &[paint::Rect]) -> bool {
    let near = |a: &paint::Rect, b: &paint::Rect| {
        [(a.x, b.x), (a.y, b.y), (a.w, b.w), (a.h, b.h)]
            .iter()
            .all(|(p, q)| (p - q).abs() <= 1.0)
    };
    if before.len() != after.len() {
        return false;
    }
    let mut taken = vec![false; after.len()];
    before.iter().all(
        |b| match (0..after.len()).find(|&i| !taken[i] && near(b, &after[i])) {
            Some(i) => {
                taken[i] = true;
                true
            }
            None => false,
        },
    )
}

// A walker rectangle `[x, y, w, h]` of a frame's viewport, in page CSS pixels, given
// where the frame's viewport starts on the page.
fn page_rect(b: &Value, origin: (f64, f64)) -> Option<paint::Rect> {
    let [x, y, w, h] = b.as_array()?.as_slice() else {
        return None;
    };
    Some(paint::Rect {
        x: x.as_f64()? + origin.0,
        y: y.as_f64()? + origin.1,
        w: w.as_f64()?,
        h: h.as_f64()?,
    })
}
