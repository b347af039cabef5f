//! Recordings of sessions that hold secrets: audit recordings store each step with its
//! hash and secrets painted over, transient ones keep the last steps in memory, and
//! stored ones need a place and go after their retention.

use super::*;
use airlock_gateway::{Interaction, Reading, SessionCall};

/// The RGB of the JPEG pixel at CSS (x, y) (device scale 1).
fn jpeg_pixel(data: &[u8], x: usize, y: usize) -> [u8; 3] {
    let mut decoder = jpeg_decoder::Decoder::new(std::io::Cursor::new(data));
    let pixels = decoder.decode().unwrap();
    let info = decoder.info().unwrap();
    let i = (y * info.width as usize + x) * 3;
    [pixels[i], pixels[i + 1], pixels[i + 2]]
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_recording_stores_each_step_with_its_hash_and_paints_secrets_over() {
    with_browser(|h| async move {
        let dir = tempfile::tempdir().unwrap();
        let (gateway, vault) =
            recording_gateway(&h, Role::Operate, RecordMode::Off, Some(dir.path().into())).await;
        let agent = gateway.agent_session();
        let out = call(
            &agent,
            ToolCall::Session(SessionCall::Open(OpenOptions {
                credentials: vec!["login".into()],
                record: Some(RecordMode::Audit),
                ..OpenOptions::default()
            })),
        )
        .await;
        assert_eq!(out.error, None, "{}", out.text);
        call(&agent, navigate(h.site.url("secret-field.html"))).await;
        // Typed where the page shows it as text: every stored image paints it over.
        let out = call(
            &agent,
            typing(role("textbox", "Token"), "{{secret:login.password}}"),
        )
        .await;
        assert_eq!(out.error, None, "{}", out.text);
        // Looking is no step.
        call(
            &agent,
            ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())),
        )
        .await;
        gateway.shutdown().await;

        let events: Vec<serde_json::Value> = vault
            .store()
            .audit_events(0, 100)
            .await
            .unwrap()
            .iter()
            .filter(|r| r.kind == "tool_call")
            .map(|r| serde_json::from_str(&r.body).unwrap())
            .collect();
        let recorded: Vec<(&str, u64)> = events
            .iter()
            .filter_map(|e| Some((e["tool"].as_str()?, e["recording"]["step"].as_u64()?)))
            .collect();
        assert_eq!(recorded, [("browser_navigate", 1), ("browser_type", 2)]);
        let session = events[0]["session"].as_str().unwrap();
        let mut stored = Vec::new();
        for e in events.iter().filter(|e| e["recording"].is_object()) {
            let file = e["recording"]["file"].as_str().unwrap();
            assert_eq!(
                file,
                format!(
                    "{session}/{:06}.jpg",
                    e["recording"]["step"].as_u64().unwrap()
                )
            );
            let path = dir.path().join(file);
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
            let data = std::fs::read(&path).unwrap();
            assert_eq!(e["recording"]["sha256"], sha256_hex(&data));
            stored.push(data);
        }
        // The Token field (left 20, top 200, 300×40): white before, black after the
        // secret went in, though the page shows it as plain text.
        let [r, g, b] = jpeg_pixel(&stored[0], 300, 220);
        assert!(r > 200 && g > 200 && b > 200, "{r},{g},{b}");
        let [r, g, b] = jpeg_pixel(&stored[1], 300, 220);
        assert!(r < 40 && g < 40 && b < 40, "{r},{g},{b}");
        assert_eq!(
            std::fs::read_dir(dir.path().join(session)).unwrap().count(),
            2
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transient_recording_keeps_the_last_steps_in_memory_and_off_keeps_none() {
    with_browser(|h| async move {
        let dir = tempfile::tempdir().unwrap();
        let (gateway, _vault) = recording_gateway(
            &h,
            Role::Act,
            RecordMode::Transient,
            Some(dir.path().into()),
        )
        .await;
        let agent = gateway.agent_session();
        call(&agent, navigate(h.site.url("clickable.html"))).await;
        let id = gateway.leases()[0].id.clone();
        // Each step's capture is taken after its result, once the page settled, and
        // gives way to a call that starts first: wait for step n before the next call.
        let steps = async |n: usize| {
            for _ in 0..500 {
                let steps = gateway.recorded_steps("default", &id).unwrap();
                if steps.last().is_some_and(|s| s.step >= n as u64) {
                    return steps;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            panic!("fewer than {n} steps recorded");
        };
        steps(1).await;
        for n in 2..=airlock_gateway::TRANSIENT_STEPS + 3 {
            let out = call(
                &agent,
                ToolCall::Interact(Interaction::Scroll(airlock_gateway::action::Scroll::Page {
                    direction: airlock_gateway::action::Direction::Down,
                    amount: Some(1.0),
                })),
            )
            .await;
            assert_eq!(out.error, None, "{}", out.text);
            steps(n).await;
        }
        let kept = gateway.recorded_steps("default", &id).unwrap();
        assert_eq!(kept.len(), airlock_gateway::TRANSIENT_STEPS);
        assert!(kept.windows(2).all(|w| w[0].step < w[1].step));
        assert_eq!(kept[0].step, 4, "the oldest steps were dropped");
        assert!(kept.iter().all(|s| s.data.starts_with(b"\xff\xd8\xff")));
        // A call right after a step never waits on that step's capture: the capture
        // gives way (the page is looked at, not changed, so nothing is lost).
        let scroll_up = || {
            ToolCall::Interact(Interaction::Scroll(airlock_gateway::action::Scroll::Page {
                direction: airlock_gateway::action::Direction::Up,
                amount: Some(1.0),
            }))
        };
        call(&agent, scroll_up()).await;
        call(
            &agent,
            ToolCall::Read(Reading::Snapshot(SnapshotOptions::default())),
        )
        .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let last = gateway.recorded_steps("default", &id).unwrap();
        assert_eq!(
            last.last().unwrap().step,
            airlock_gateway::TRANSIENT_STEPS as u64 + 3
        );
        // After which the agent pauses: captured.
        call(&agent, scroll_up()).await;
        steps(airlock_gateway::TRANSIENT_STEPS + 4).await;
        // Another tenant asks for it: no such session.
        assert!(gateway.recorded_steps("other", &id).is_err());
        // Nothing transient touches the disk.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        let quiet = gateway.agent_session();
        call(
            &quiet,
            ToolCall::Session(SessionCall::Open(OpenOptions {
                record: Some(RecordMode::Off),
                ..OpenOptions::default()
            })),
        )
        .await;
        call(&quiet, navigate(h.site.url("clickable.html"))).await;
        let quiet_id = gateway
            .leases()
            .into_iter()
            .find(|l| l.id != id)
            .unwrap()
            .id;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            gateway
                .recorded_steps("default", &quiet_id)
                .unwrap()
                .is_empty()
        );
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_recordings_need_a_place_and_go_after_their_retention() {
    with_browser(|h| async move {
        // No recordings directory: audit is refused at open, clearly.
        let (gateway, _) = gateway(&h, Role::Act).await;
        let out = gateway
            .agent_session()
            .call(ToolCall::Session(SessionCall::Open(OpenOptions {
                record: Some(RecordMode::Audit),
                ..OpenOptions::default()
            })))
            .await;
        assert_eq!(out.error, Some(ErrorCode::InvalidArgument), "{}", out.text);
        assert!(out.text.contains("stores no recordings"), "{}", out.text);
        gateway.shutdown().await;

        // An old step and a new one: the gateway prunes the old as it starts.
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("0123abcd");
        std::fs::create_dir(&session).unwrap();
        let (old, new) = (session.join("000001.jpg"), session.join("000002.jpg"));
        for path in [&old, &new] {
            std::fs::write(path, b"\xff\xd8\xff").unwrap();
        }
        let forty_days = std::time::SystemTime::now() - Duration::from_secs(40 * 86_400);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(forty_days)
            .unwrap();
        let (gateway, _) =
            recording_gateway(&h, Role::Act, RecordMode::Off, Some(dir.path().into())).await;
        for _ in 0..500 {
            if !old.exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(
            !old.exists(),
            "a 40-day-old step outlived a 30-day retention"
        );
        assert!(new.exists());
        gateway.shutdown().await;
    })
    .await;
}

/// A form post the default rules hold mid-navigation: Chromium answers no command for
/// the page then, so its image comes from the compositor, painted where the page
/// showed the secret as it began to leave; a page that silences that report gets no
/// image at all rather than an unpainted one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_navigations_image_paints_the_secret_the_page_shows_or_is_not_taken() {
    with_browser(|h| async move {
        let rules =
            airlock_risk::Rules::from_config(&airlock_risk::ApprovalsConfig::default()).unwrap();
        let (gateway, vault) = ruled_gateway(&h, Role::Operate, RecordMode::Off, None, rules).await;
        let store = vault.store().clone();
        let agent = Arc::new(gateway.agent_session());
        call(&agent, open_with(&["login"], None)).await;
        let held = |stop: bool| {
            let agent = agent.clone();
            let store = store.clone();
            let page = h.site.url(&format!(
                "effects/mirror.html{}",
                if stop { "?stop=1" } else { "" }
            ));
            async move {
                call(&agent, navigate(page)).await;
                call(
                    &agent,
                    typing(role("textbox", "Code"), "{{secret:login.password}}"),
                )
                .await;
                let click = ToolCall::Interact(Interaction::Click {
                    target: role("button", "Send it"),
                    options: Default::default(),
                });
                let (approval, out) =
                    crate::approvals::held_then_decided(&agent, &store, click, false, |_| {}).await;
                assert_clean("the denied call", &out.text);
                assert_eq!(approval.rule, "delete-path");
                store.approval_screenshot(&approval.id).await.unwrap()
            }
        };
        // Reported: the mirror's line of text (from left 20, top 120) is painted black.
        let (mime, image) = held(false).await.expect("an image of the held page");
        assert_eq!(mime, "image/jpeg");
        for (x, y) in [(30, 130), (120, 140), (200, 150)] {
            let [r, g, b] = jpeg_pixel(&image, x, y);
            assert!(r < 40 && g < 40 && b < 40, "({x}, {y}) is {r},{g},{b}");
        }
        // Away from it, the page is as it was (white).
        let [r, g, b] = jpeg_pixel(&image, 600, 400);
        assert!(r > 200 && g > 200 && b > 200, "{r},{g},{b}");
        // Silenced: no image.
        assert_eq!(held(true).await, None);
    })
    .await;
}
