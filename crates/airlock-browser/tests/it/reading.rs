//! Screenshots and page text.

use airlock_browser::{ImageFormat, ScreenshotOptions, WaitUntil};
use airlock_core::{ErrorCode, HasErrorCode};
use airlock_test_support::with_browser;

use crate::{open, role};

fn png_size(data: &[u8]) -> (u32, u32) {
    assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let w = u32::from_be_bytes(data[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(data[20..24].try_into().unwrap());
    (w, h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screenshots_of_viewport_full_page_and_element() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("article.html"), WaitUntil::Load)
            .await
            .unwrap();
        let viewport = s.screenshot(&ScreenshotOptions::default()).await.unwrap();
        assert_eq!(viewport.mime, "image/png");
        assert_eq!(png_size(&viewport.data), (1280, 720));
        let full = s
            .screenshot(&ScreenshotOptions {
                full_page: true,
                ..Default::default()
            })
            .await
            .unwrap();
        let (w, fh) = png_size(&full.data);
        assert_eq!(w, 1280);
        assert!(fh > 2000, "full page is only {fh} px tall");
        let jpeg = s
            .screenshot(&ScreenshotOptions {
                format: ImageFormat::Jpeg { quality: 50 },
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(jpeg.mime, "image/jpeg");
        assert_eq!(&jpeg.data[..3], b"\xff\xd8\xff");
        assert!(jpeg.data.len() < viewport.data.len());
        let element = s
            .screenshot(&ScreenshotOptions {
                target: Some(role("heading", "Chapter 30")),
                ..Default::default()
            })
            .await
            .unwrap();
        let (ew, eh) = png_size(&element.data);
        assert!(ew < 1280 && eh < 100 && eh > 10, "{ew}x{eh}");
        let err = s
            .screenshot(&ScreenshotOptions {
                format: ImageFormat::Jpeg { quality: 0 },
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument);
        s.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_text_is_markdown_ish_and_paged() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("article.html"), WaitUntil::Load)
            .await
            .unwrap();
        let page = s.read_text(0, 1_000_000).await.unwrap();
        let text = &page.text;
        assert_eq!(page.next_offset, None);
        for expected in [
            "# The long article",
            "## Chapter 1\n",
            "[link to page two](",
            "- First point",
            "  - Nested point",
            "1. Step one",
            "| Plan | Price |",
            "| --- | --- |",
            "| Pro | $20 |",
            "The end of the article.",
        ] {
            assert!(
                text.contains(expected),
                "missing {expected:?} in:\n{}",
                &text[..text.len().min(1500)]
            );
        }
        let first = s.read_text(0, 2000).await.unwrap();
        let next = first.next_offset.expect("more text");
        assert!(first.text.contains(&format!("offset={next}")));
        let second = s.read_text(next, 2000).await.unwrap();
        assert!(!second.text.starts_with("# The long article"));
        s.close().await;
    })
    .await;
}

/// The RGB of the PNG pixel at CSS (x, y) (device scale 1).
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
async fn an_outlined_screenshot_frames_the_resolved_element_and_only_for_that_capture() {
    with_browser(|h| async move {
        let s = open(&h).await;
        s.navigate(&h.site.url("resolve.html"), WaitUntil::Load)
            .await
            .unwrap();
        let target = s.resolve(&role("button", "Delete account")).await.unwrap();
        let b = target.bounds;
        assert!(b.width > 10.0 && b.height > 10.0, "{b:?}");
        let framed = s
            .screenshot(&ScreenshotOptions {
                outline: Some(b),
                ..Default::default()
            })
            .await
            .unwrap();
        // The frame's left edge, 3 px wide just outside the element, halfway down.
        let (x, y) = ((b.x - 2.0) as u32, (b.y + b.height / 2.0) as u32);
        let red = [0xe0, 0x11, 0x5f];
        assert_eq!(pixel(&framed.data, x, y), red);
        // Gone again: the next capture shows the page as it is.
        let plain = s.screenshot(&ScreenshotOptions::default()).await.unwrap();
        assert_ne!(pixel(&plain.data, x, y), red);
        s.close().await;
    })
    .await;
}
