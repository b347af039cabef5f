//! Secret values in fields: typed only where bound, masked in snapshots (also after a
//! script flips a password field to text), painted over in screenshots.

use airlock_browser::{ScreenshotOptions, Target, TextPiece, TypedText, WaitUntil};
use airlock_core::{ErrorCode, HasErrorCode};
use airlock_test_support::with_browser;

use crate::{open, snap};

const VALUE: &str = "typed-secret-7731";

fn secret_for(origin: String) -> TypedText {
    TypedText(vec![TextPiece::Secret {
        label: "app.password".into(),
        origins: vec![origin],
        value: VALUE.to_owned().into(),
    }])
}

fn token() -> Target {
    Target::Role {
        role: "textbox".into(),
        name: Some("Token".into()),
        index: None,
    }
}

/// The RGB of the screenshot pixel at CSS (x, y) (device scale 1).
fn pixel(png_bytes: &[u8], x: u32, y: u32) -> [u8; 3] {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let i = (y as usize * info.width as usize + x as usize) * channels;
    [buf[i], buf[i + 1], buf[i + 2]]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_goes_only_to_its_origin_and_stays_hidden_once_typed() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("secret-field.html"), WaitUntil::Load)
            .await
            .unwrap();
        // Bound elsewhere: refused, nothing typed.
        let err = s
            .type_pieces(
                &token(),
                &secret_for("http://127.0.0.1:1".into()),
                true,
                false,
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::SecretOriginMismatch, "{err}");
        let text = snap(&s).await.text;
        assert!(!text.contains("e5 textbox \"Token\" value"), "{text}");
        let blank = s.screenshot(&ScreenshotOptions::default()).await.unwrap();
        assert_eq!(
            pixel(&blank.data, 60, 220),
            [255, 255, 255],
            "the empty field is white"
        );

        // Bound here: typed, and from then on masked.
        let origin = format!("http://127.0.0.1:{}", h.site.a.port());
        s.type_pieces(&token(), &secret_for(origin), true, false)
            .await
            .unwrap();
        let text = snap(&s).await.text;
        assert!(!text.contains(VALUE), "{text}");
        assert!(
            text.contains("textbox \"Token\"") && text.contains("value=\"••••\""),
            "{text}"
        );
        // A screenshot paints it over (the field's text would be black on white).
        let shot = s.screenshot(&ScreenshotOptions::default()).await.unwrap();
        assert_eq!(pixel(&shot.data, 60, 220), [0, 0, 0]);
        assert_eq!(pixel(&shot.data, 310, 238), [0, 0, 0]);
        // The paint is gone from the page afterwards.
        let count = s.snapshot(&Default::default()).await.unwrap().text;
        assert!(!count.contains("generic"), "{count}");

        // A script flips the password field (and the typed one) to type=text.
        s.click(
            &Target::Role {
                role: "button".into(),
                name: Some("Reveal".into()),
                index: None,
            },
            &Default::default(),
        )
        .await
        .unwrap();
        let text = snap(&s).await.text;
        assert!(
            !text.contains("prefilled-pin-4821") && !text.contains(VALUE),
            "{text}"
        );
        assert!(
            text.contains("textbox \"Pin\"") && text.matches("value=\"••••\"").count() == 2,
            "{text}"
        );
        // Cleared, the field is an ordinary one again.
        s.type_text(&token(), "", true, false).await.unwrap();
        s.type_text(&token(), "plain words", true, false)
            .await
            .unwrap();
        let text = snap(&s).await.text;
        assert!(text.contains("value=\"plain words\""), "{text}");
        s.close().await;
    })
    .await;
}

/// Snapshots until `needle` shows `count` times (frames load after their page; a
/// frame is known to the session once a snapshot has walked it).
async fn snap_until(s: &airlock_browser::Session, needle: &str, count: usize) -> String {
    for _ in 0..100 {
        let text = snap(s).await.text;
        if text.matches(needle).count() >= count {
            return text;
        }
        s.wait_for(
            &airlock_browser::WaitCondition::Time(std::time::Duration::from_millis(50)),
            None,
        )
        .await
        .unwrap();
    }
    panic!("no line with {needle:?} in:\n{}", snap(s).await.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_is_not_typed_into_a_frame_its_field_hands_the_focus_to() {
    with_browser(|h| async move {
        let (s, _proxy) = crate::open_proxied(&h).await;
        let url = format!("{}?b={}", h.site.url("app/wrapper.html"), h.site.b.port());
        s.navigate(&url, WaitUntil::Load).await.unwrap();
        // Both frames loaded (the second box is inside a shadow root).
        snap_until(&s, "textbox \"Captured\"", 2).await;
        let origin = format!("http://127.0.0.1:{}", h.site.a.port());
        // Each box is on the secret's origin and takes the focus first, then hands it
        // to the other site's frame inside it.
        for name in ["Password", "Shadow password"] {
            let err = s
                .type_pieces(
                    &crate::role("textbox", name),
                    &secret_for(origin.clone()),
                    true,
                    false,
                )
                .await
                .unwrap_err();
            assert_eq!(err.code(), ErrorCode::SecretOriginMismatch, "{name}: {err}");
            assert!(err.to_string().contains("frame inside the field"), "{err}");
        }
        let text = snap(&s).await.text;
        assert!(!text.contains(VALUE), "{text}");
        assert_eq!(text.matches("textbox \"Captured\"").count(), 2, "{text}");
        for captured in text.lines().filter(|l| l.contains("textbox \"Captured\"")) {
            assert!(
                !captured.contains("value=") && !captured.contains("••••"),
                "a frame received: {captured}"
            );
        }
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_is_not_typed_into_its_login_framed_by_another_site() {
    with_browser(|h| async move {
        let (s, _proxy) = crate::open_proxied(&h).await;
        let (a, b) = (h.site.a.port(), h.site.b.port());
        let origin = format!("http://127.0.0.1:{a}");
        // The bound login inside another site's page: the keystrokes would be typed
        // under that site's eyes (clickjacking-style capture).
        let url = format!("{}?a={a}", h.site.other_site("app/frame-bound.html"));
        s.navigate(&url, WaitUntil::Load).await.unwrap();
        let text = snap_until(&s, "textbox \"Password\"", 1).await;
        let field = crate::ref_of(&text, "textbox \"Password\"");
        let err = s
            .type_pieces(&field, &secret_for(origin.clone()), true, false)
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::SecretOriginMismatch, "{err}");
        assert!(
            err.to_string()
                .contains(&format!("framed by http://localhost:{b}")),
            "{err}"
        );
        let text = snap(&s).await.text;
        let line = text
            .lines()
            .find(|l| l.contains("textbox \"Password\""))
            .unwrap();
        assert!(!line.contains("••••"), "something was typed: {line}");

        // Framed by its own origin, the login takes the secret.
        let url = format!("{}?a={a}", h.site.url("app/frame-bound.html"));
        s.navigate(&url, WaitUntil::Load).await.unwrap();
        let text = snap_until(&s, "textbox \"Password\"", 1).await;
        let field = crate::ref_of(&text, "textbox \"Password\"");
        s.type_pieces(&field, &secret_for(origin), true, false)
            .await
            .unwrap();
        let text = snap(&s).await.text;
        let line = text
            .lines()
            .find(|l| l.contains("textbox \"Password\""))
            .unwrap();
        assert!(line.contains("[password=••••]"), "{line}");
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_made_to_look_like_password_fields_are_masked_like_them() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("lookalike.html"), WaitUntil::Load)
            .await
            .unwrap();
        let text = snap(&s).await.text;
        for value in [
            "lookalike-disc-1",
            "lookalike-managed-2",
            "lookalike-new-3",
            "lookalike-area-4",
            "lookalike-edit-5",
        ] {
            assert!(!text.contains(value), "{value} shown:\n{text}");
        }
        for name in ["Discs", "Managed", "Fresh", "Area", "Editable"] {
            let line = text
                .lines()
                .find(|l| l.contains(&format!("\"{name}\"")))
                .unwrap_or_else(|| panic!("no {name} in:\n{text}"));
            assert!(line.contains("[password=••••]"), "{line}");
        }
        assert!(text.contains("value=\"plain-value-6\""), "{text}");
        s.close().await;
    })
    .await;
}
