//! ARCHITECTURE.md names every crate; every Rust source file opens with a `//!` doc
//! and stays under 1,000 lines.

use std::path::{Path, PathBuf};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "fixtures") {
                continue;
            }
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn architecture_md_has_every_crate_in_its_code_map() {
    let root = workspace_root();
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !architecture.contains(&format!("### `{name}`")) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md has no code-map section for {missing:?}"
    );
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let mut files = Vec::new();
    rust_files(&workspace_root().join("crates"), &mut files);
    assert!(files.len() > 10);
    let undocumented: Vec<_> = files
        .iter()
        .filter(|f| {
            !std::fs::read_to_string(f)
                .unwrap()
                .trim_start()
                .starts_with("//!")
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "files without a `//!` opening line: {undocumented:?}"
    );
}

#[test]
fn no_rust_file_is_over_a_thousand_lines() {
    // A file past this is several things a reader must hold at once; split it by
    // what its parts own (a child module per concern), as tab.rs and remote.rs are.
    const MOST: usize = 1_000;
    let mut files = Vec::new();
    rust_files(&workspace_root().join("crates"), &mut files);
    let long: Vec<_> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).unwrap().lines().count();
            (lines > MOST).then(|| format!("{} ({lines})", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "over {MOST} lines: {long:?}");
}

#[test]
fn layers_below_the_engine_never_name_a_tool() {
    // The browser and snapshot crates serve every surface; a message there naming an
    // MCP tool tells a browser-shell user to call a tool it does not have.
    let tools = [
        "navigate",
        "snapshot",
        "click",
        "type",
        "fill_form",
        "press_key",
        "select_option",
        "check",
        "hover",
        "scroll",
        "wait_for",
        "screenshot",
        "read",
        "tabs",
        "back",
        "forward",
        "reload",
        "session_open",
        "session_close",
    ];
    let root = workspace_root();
    let mut files = Vec::new();
    for krate in ["airlock-browser", "airlock-snapshot"] {
        rust_files(&root.join("crates").join(krate).join("src"), &mut files);
        files.push(root.join("crates").join(krate).join("src/walker.js"));
    }
    let mut found = Vec::new();
    for file in files.iter().filter(|f| f.exists()) {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for tool in tools {
                let name = format!("browser_{tool}");
                // A tool name, not an identifier that starts like one (browser_alive).
                if let Some(at) = line.find(&name) {
                    let next = line[at + name.len()..].chars().next();
                    if !next.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                        found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "tool names below the engine:\n{}",
        found.join("\n")
    );
}
