//! Files across the boundary: PDFs, uploads only from the upload directory, downloads
//! only into the download directory.

use super::*;
use airlock_gateway::{Interaction, Reading};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_prints_to_a_pdf() {
    with_browser(|h| async move {
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("article.html"))).await;
        let out = agent.call(ToolCall::Read(Reading::Pdf)).await;
        assert_eq!(out.error, None, "{}", out.text);
        let pdf = out.file.expect("a PDF");
        assert_eq!(pdf.mime, "application/pdf");
        assert!(pdf.data.starts_with(b"%PDF-"), "not a PDF");
        assert!(pdf.data.len() > 1_000 && pdf.data.len() <= airlock_browser::MAX_PDF_BYTES);
        assert!(out.text.starts_with("PDF of \""), "{}", out.text);
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_come_only_from_the_upload_directory() {
    with_browser(|h| async move {
        let upload = |target: Target, files: &[&str]| {
            ToolCall::Interact(Interaction::FileUpload {
                target,
                files: files.iter().map(|f| (*f).to_owned()).collect(),
            })
        };
        let button = Target::Role {
            role: "button".into(),
            name: Some("Choose files".into()),
            index: None,
        };
        // No directory: no uploads.
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("upload.html"))).await;
        let out = agent.call(upload(button.clone(), &["ok.txt"])).await;
        assert_eq!(out.error, Some(ErrorCode::Forbidden), "{}", out.text);
        gateway.shutdown().await;

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ok.txt"), "hello").unwrap();
        std::fs::write(dir.path().join("two.txt"), "hi").unwrap();
        std::fs::File::create(dir.path().join("big.bin"))
            .unwrap()
            .set_len(airlock_gateway::MAX_UPLOAD_BYTES + 1)
            .unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link.txt")).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                upload_dir: Some(dir.path().to_owned()),
                ..config(&h)
            },
        );
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("upload.html"))).await;
        for (files, code, words) in [
            (
                vec!["../ok.txt"],
                ErrorCode::InvalidArgument,
                "not a plain name",
            ),
            (
                vec!["/etc/hostname"],
                ErrorCode::InvalidArgument,
                "not a plain name",
            ),
            (
                vec!["link.txt"],
                ErrorCode::InvalidArgument,
                "leads outside",
            ),
            (vec!["missing.txt"], ErrorCode::NotFound, "no file"),
            (vec!["sub"], ErrorCode::NotFound, "no file"),
            (vec!["big.bin"], ErrorCode::InvalidArgument, "over the"),
        ] {
            let out = agent.call(upload(button.clone(), &files)).await;
            assert_eq!(out.error, Some(code), "{files:?}: {}", out.text);
            assert!(out.text.contains(words), "{files:?}: {}", out.text);
        }
        // Nothing reached the page.
        let out = agent
            .call(ToolCall::Read(
                Reading::Snapshot(SnapshotOptions::default()),
            ))
            .await;
        assert!(out.text.contains("got nothing"), "{}", out.text);
        // A hidden input opened by a button takes several files …
        let out = agent.call(upload(button, &["ok.txt", "two.txt"])).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(out.text.contains("got ok.txt 5, two.txt 2"), "{}", out.text);
        // … a single-file input one.
        let single = Target::Role {
            role: "button".into(),
            name: Some("Single file".into()),
            index: None,
        };
        let out = agent
            .call(upload(single.clone(), &["ok.txt", "two.txt"]))
            .await;
        assert_eq!(out.error, Some(ErrorCode::InvalidArgument), "{}", out.text);
        let out = agent.call(upload(single.clone(), &["two.txt"])).await;
        assert!(out.text.contains("got two.txt 2"), "{}", out.text);
        // A file larger than one message's piece arrives whole (a worker is sent
        // it in pieces).
        let big = 9 * 1024 * 1024 + 3;
        std::fs::write(dir.path().join("big.bin"), vec![7u8; big]).unwrap();
        let out = agent.call(upload(single, &["big.bin"])).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(
            out.text.contains(&format!("got big.bin {big}")),
            "{}",
            out.text
        );
        gateway.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloads_go_only_to_the_download_directory_and_are_reported_not_returned() {
    with_browser(|h| async move {
        let click = || {
            ToolCall::Interact(Interaction::Click {
                target: Target::Role {
                    role: "link".into(),
                    name: Some("Get report".into()),
                    index: None,
                },
                options: Default::default(),
            })
        };
        // No directory: refused (Chromium denies it), nothing reported.
        let gateway = Gateway::new(h.host().await, config(&h));
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("download.html"))).await;
        let out = agent.call(click()).await;
        assert_eq!(out.error, None, "{}", out.text);
        assert!(!out.text.contains("downloaded"), "{}", out.text);
        gateway.shutdown().await;

        let dir = tempfile::tempdir().unwrap();
        let gateway = Gateway::new(
            h.host().await,
            GatewayConfig {
                download_dir: Some(dir.path().canonicalize().unwrap()),
                ..config(&h)
            },
        );
        let agent = gateway.agent_session();
        agent.call(navigate(h.site.url("download.html"))).await;
        // A download finishes after the click; a later result reports it.
        let reported =
            |first: String, needle: &'static str| crate::until_reported(&agent, first, needle);
        let text = reported(agent.call(click()).await.text, "downloaded ").await;
        let line = text
            .lines()
            .find(|l| l.starts_with("downloaded "))
            .unwrap_or_else(|| panic!("no download reported:\n{text}"));
        assert!(
            line.starts_with("downloaded \"report.txt\" and kept it for the operator as "),
            "{line}"
        );
        assert!(line.contains("(22 bytes, SHA-256 "), "{line}");
        // The file's bytes are in the directory, never in a result.
        assert!(!text.contains("quarterly numbers"), "{text}");
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1);
        // A file larger than one message's piece arrives whole (from a worker, in
        // pieces).
        let out = agent
            .call(ToolCall::Interact(Interaction::Click {
                target: Target::Role {
                    role: "link".into(),
                    name: Some("Get big file".into()),
                    index: None,
                },
                options: Default::default(),
            }))
            .await;
        let text = reported(out.text, "downloaded \"big.bin\"").await;
        assert!(text.contains("downloaded \"big.bin\""), "{text}");
        let sizes: Vec<u64> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|f| f.unwrap().metadata().unwrap().len())
            .collect();
        assert!(sizes.contains(&9_437_187), "{sizes:?}");
        gateway.shutdown().await;
    })
    .await;
}
