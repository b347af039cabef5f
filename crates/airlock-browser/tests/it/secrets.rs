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
        assert!(!text.contains("textbox \"Token\" [ref=e5] value"), "{text}");
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
