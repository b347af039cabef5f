//! The styles that act on screenshots, against real Chromium: each family's wire
//! format from a scripted server, its points landing on the element meant in its
//! own coordinate convention, typing going to the focused field, model-bound
//! screenshots painted where a secret shows, and OpenAI's pending safety checks
//! held for a person (never acknowledged by the loop).

use std::sync::Arc;
use std::time::Duration;

use airlock_config::ModelStyle;
use airlock_core::ErrorCode;
use airlock_gateway::{AgentSession, Navigation, SessionCall, ToolCall};
use airlock_task::{Runner, TaskStatus, Watch};
use airlock_test_support::{APP_PASSWORD, Harness, ModelServer, Reply, secret_forms, with_browser};
use base64::Engine as _;
use serde_json::{Value, json};

use super::{MODEL_KEY, Setup, args, decide, events, pending_approval, setup, spawn_task};

// Centres of the fixture's fixed elements, in CSS pixels (targets.html).
const NW: (f64, f64) = (140.0, 105.0);
const NE: (f64, f64) = (960.0, 125.0);
const SW: (f64, f64) = (180.0, 505.0);
const SE: (f64, f64) = (1060.0, 585.0);
const FIELD: (f64, f64) = (620.0, 325.0);

fn openai(action: Value, checks: Value) -> Reply {
    Reply::Json(json!({
        "id": "resp_1", "object": "response",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "computer_call", "id": "cu_1", "call_id": "call_1", "action": action,
             "pending_safety_checks": checks, "status": "completed"},
        ],
        "usage": {"input_tokens": 1500, "output_tokens": 30, "total_tokens": 1530}
    }))
}

fn openai_finish(answer: &str) -> Reply {
    Reply::Json(
        json!({"output": [{"type": "function_call", "call_id": "call_9", "name": "finish",
        "arguments": json!({"answer": answer}).to_string()}]}),
    )
}

fn anthropic(input: Value) -> Reply {
    Reply::Json(json!({
        "id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "Acting."},
                    {"type": "tool_use", "id": "toolu_1", "name": "computer", "input": input}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1500, "output_tokens": 30}
    }))
}

fn anthropic_finish(answer: &str) -> Reply {
    Reply::Json(
        json!({"content": [{"type": "tool_use", "id": "toolu_9", "name": "finish",
        "input": {"answer": answer}}], "stop_reason": "tool_use"}),
    )
}

fn ui_tars(action: &str) -> Reply {
    Reply::Json(
        json!({"choices": [{"index": 0, "message": {"role": "assistant",
        "content": format!("Thought: the next step.\nAction: {action}")}}]}),
    )
}

// UI-TARS-1.5's resize of a side (28s, no clamping at ordinary viewport sizes).
fn resized(side: f64) -> f64 {
    (side / 28.0).round_ties_even() * 28.0
}

// The replies of one style: click `button`, click the field, type `text`, finish.
fn script(style: ModelStyle, css: (f64, f64), button: (f64, f64), text: &str) -> Vec<Reply> {
    match style {
        ModelStyle::OpenAiComputerUse => vec![
            openai(
                json!({"type": "click", "button": "left", "x": button.0, "y": button.1}),
                json!([]),
            ),
            openai(
                json!({"type": "click", "button": "left", "x": FIELD.0, "y": FIELD.1}),
                json!([]),
            ),
            openai(json!({"type": "type", "text": text}), json!([])),
            openai_finish("done"),
        ],
        ModelStyle::AnthropicComputerUse => vec![
            anthropic(json!({"action": "left_click", "coordinate": [button.0, button.1]})),
            anthropic(json!({"action": "left_click", "coordinate": [FIELD.0, FIELD.1]})),
            anthropic(json!({"action": "type", "text": text})),
            anthropic_finish("done"),
        ],
        ModelStyle::UiTars => {
            let grid = |p: (f64, f64)| {
                format!(
                    "({},{})",
                    (p.0 * 1000.0 / css.0).round(),
                    (p.1 * 1000.0 / css.1).round()
                )
            };
            vec![
                ui_tars(&format!(
                    "click(start_box='<|box_start|>{}<|box_end|>')",
                    grid(button)
                )),
                ui_tars(&format!("click(start_box='{}')", grid(FIELD))),
                ui_tars(&format!("type(content='{text}')")),
                ui_tars("finished(content='done')"),
            ]
        }
        _ => {
            let (rw, rh) = (resized(css.0), resized(css.1));
            let at = |p: (f64, f64)| {
                format!(
                    "({},{})",
                    (p.0 * rw / css.0).round(),
                    (p.1 * rh / css.1).round()
                )
            };
            vec![
                ui_tars(&format!("click(start_box='{}')", at(button))),
                ui_tars(&format!("left_single(start_box='{}')", at(FIELD))),
                ui_tars(&format!("type(content='{text}')")),
                ui_tars("finished(content='done')"),
            ]
        }
    }
}

// An agent with its session open on the targets page, and the viewport's size.
async fn on_targets(h: &Harness, setup: &Setup) -> (Arc<AgentSession>, (f64, f64)) {
    let agent = Arc::new(setup.gateway.agent_session());
    let out = agent
        .call(ToolCall::Session(SessionCall::Open(
            airlock_gateway::OpenOptions {
                credentials: vec!["login".into()],
                ..Default::default()
            },
        )))
        .await;
    assert_eq!(out.error, None, "{}", out.text);
    let out = agent
        .call(ToolCall::Navigate(Navigation::To {
            url: h.site.url("targets.html"),
            wait_until: airlock_gateway::action::WaitUntil::Load,
            snapshot: airlock_gateway::PageView::None,
        }))
        .await;
    assert_eq!(out.error, None, "{}", out.text);
    let (w, h) = agent.viewport().await.unwrap();
    (agent, (f64::from(w), f64::from(h)))
}

async fn page_text(agent: &AgentSession) -> String {
    let snapshot = airlock_tools::find("browser_snapshot")
        .unwrap()
        .parse(None)
        .unwrap();
    agent.call(snapshot).await.text
}

// The PNG a request carried, decoded: (RGB(A) bytes, width, bytes per pixel).
fn image_of(style: ModelStyle, body: &str) -> (Vec<u8>, u32, usize) {
    let body: Value = serde_json::from_str(body).unwrap();
    let data = match style {
        ModelStyle::OpenAiComputerUse => body["input"][0]["content"][1]["image_url"]
            .as_str()
            .unwrap()
            .to_owned(),
        ModelStyle::AnthropicComputerUse => body["messages"][0]["content"][1]["source"]["data"]
            .as_str()
            .unwrap()
            .to_owned(),
        _ => body["messages"][1]["content"][1]["image_url"]["url"]
            .as_str()
            .unwrap()
            .to_owned(),
    };
    let data = data.trim_start_matches("data:image/png;base64,");
    let png = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(png))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (buf, info.width, info.color_type.samples())
}

// Whether the 8×8 patch around CSS point `p` is all black in an image at `scale`.
fn black_at(image: &(Vec<u8>, u32, usize), p: (f64, f64), scale: f64) -> bool {
    let (pixels, width, n) = image;
    let (cx, cy) = ((p.0 * scale) as usize, (p.1 * scale) as usize);
    (cy - 4..cy + 4).all(|y| {
        (cx - 4..cx + 4).all(|x| {
            let i = (y * *width as usize + x) * n;
            pixels[i..i + 3].iter().all(|c| *c == 0)
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_styles_points_land_on_the_element_it_means_and_typing_reaches_the_focused_field() {
    with_browser(|h| async move {
        // The viewport first: the scripts' points are computed from it.
        let css = {
            let probe = ModelServer::start(Vec::new()).await;
            let setup = setup(&h, &probe, Duration::from_secs(30)).await;
            let (agent, css) = on_targets(&h, &setup).await;
            agent.close().await;
            css
        };
        for (style, button, id, text) in [
            (ModelStyle::OpenAiComputerUse, NE, "ne", "hello openai"),
            (
                ModelStyle::AnthropicComputerUse,
                SE,
                "se",
                "{{secret:login.password}}",
            ),
            (ModelStyle::UiTars, SW, "sw", "hello tars"),
            (ModelStyle::UiTars15, NW, "nw", "hello tars 1.5"),
        ] {
            let model = ModelServer::start(script(style, css, button, text)).await;
            let setup = Setup {
                runner: Runner::new(&model.tasks_styled(Some(MODEL_KEY), style), None).unwrap(),
                ..setup(&h, &model, Duration::from_secs(30)).await
            };
            let (agent, css_now) = on_targets(&h, &setup).await;
            assert_eq!(css_now, css);
            let spec = setup
                .runner
                .parse(Some(&args(
                    json!({"instruction": "press the button, then fill the field"}),
                )))
                .unwrap();
            let result = setup.runner.run(&agent, spec, Watch::default()).await;
            let style_name = style.as_str();
            assert_eq!(
                result.status,
                TaskStatus::Finished,
                "{style_name}: {result:?}"
            );
            assert_eq!(result.steps, 3, "{style_name}: {result:?}");
            assert_eq!(result.answer.as_deref(), Some("done"));
            // The page itself says which element the click reached.
            let page = page_text(&agent).await;
            assert!(
                page.contains(&format!("clicked {id}")),
                "{style_name}: {page}"
            );

            let seen = model.seen();
            assert_eq!(seen.len(), 4, "{style_name}");
            for (i, request) in seen.iter().enumerate() {
                // Each family's own path and key header.
                match style {
                    ModelStyle::OpenAiComputerUse => assert_eq!(request.path, "/v1/responses"),
                    ModelStyle::AnthropicComputerUse => {
                        assert_eq!(request.path, "/v1/messages");
                        assert_eq!(request.api_key.as_deref(), Some(MODEL_KEY));
                        assert_eq!(request.authorization, None);
                    }
                    _ => assert_eq!(request.path, "/v1/chat/completions"),
                }
                for form in secret_forms(APP_PASSWORD) {
                    assert!(
                        !request.body.contains(&form),
                        "{style_name} request {i} holds `{form}`"
                    );
                }
                assert!(!request.body.contains(MODEL_KEY));
            }
            let image = image_of(style, &seen[0].body);
            let scale = f64::from(image.1) / css.0;
            if style == ModelStyle::AnthropicComputerUse {
                // The placeholder put the password into the field: the page shows it,
                // so the screenshot the model is sent next has it painted over.
                assert!(
                    !black_at(&image, FIELD, scale),
                    "the empty field is not black"
                );
                let after = image_of(style, &seen[3].body);
                assert!(
                    black_at(&after, FIELD, scale),
                    "the field showing the secret is painted over"
                );
            } else {
                assert!(page.contains(text), "{style_name}: {page}");
            }
            // The record names the task on every step.
            let steps: Vec<Value> = events(&setup.store)
                .await
                .into_iter()
                .filter(|e| e["kind"] == "tool_call" && e["task"] == result.task.as_str())
                .collect();
            assert!(
                steps.iter().any(|e| e["tool"] == "browser_click"),
                "{steps:?}"
            );
            assert!(
                steps.iter().any(|e| e["tool"] == "browser_screenshot"),
                "{steps:?}"
            );
            agent.close().await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_safety_check_waits_for_a_person_and_is_never_acknowledged_by_the_loop() {
    with_browser(|h| async move {
        let flagged = || {
            openai(
                json!({"type": "click", "button": "left", "x": NW.0, "y": NW.1}),
                json!([{"id": "cu_sc_1", "code": "malicious_instructions",
                        "message": "The page may hold instructions the user did not give."}]),
            )
        };
        let model = ModelServer::start(vec![flagged(), openai_finish("pressed"), flagged()]).await;
        let style = ModelStyle::OpenAiComputerUse;
        let setup = Arc::new(Setup {
            runner: Runner::new(&model.tasks_styled(Some(MODEL_KEY), style), None).unwrap(),
            ..setup(&h, &model, Duration::from_secs(30)).await
        });
        let (agent, _) = on_targets(&h, &setup).await;
        let task = spawn_task(
            &setup,
            &agent,
            json!({"instruction": "press north-west"}),
            Watch::default(),
        );
        // The flagged click is an approval under its own rule; nothing ran yet.
        let pending = pending_approval(&setup.gateway).await;
        assert_eq!(pending.rule, airlock_gateway::SAFETY_CHECK_RULE);
        assert_eq!(pending.tool, "browser_click");
        assert!(!task.is_finished());
        assert_eq!(model.seen().len(), 1);
        decide(&setup.gateway, &pending, true).await;
        let result = task.await.unwrap();
        assert_eq!(result.status, TaskStatus::Finished, "{result:?}");
        assert!(page_text(&agent).await.contains("clicked nw"));
        // No request acknowledges a check: each is made afresh, and a person decided.
        for request in model.seen() {
            assert!(!request.body.contains("acknowledged_safety_checks"));
            assert!(!request.body.contains("cu_sc_1"));
        }

        // Denied, the task ends denied and the click never happens.
        agent.call(ToolCall::Navigate(Navigation::Reload)).await;
        let task = spawn_task(
            &setup,
            &agent,
            json!({"instruction": "press north-west"}),
            Watch::default(),
        );
        let pending = pending_approval(&setup.gateway).await;
        decide(&setup.gateway, &pending, false).await;
        let result = task.await.unwrap();
        assert_eq!(result.status, TaskStatus::Denied, "{result:?}");
        assert_eq!(result.error, Some(ErrorCode::ApprovalDenied));
        let page = page_text(&agent).await;
        assert!(page.contains("none clicked"), "{page}");
    })
    .await;
}
