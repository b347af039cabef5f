//! MiniWoB++'s web tasks (PyPI `miniwob`, pinned in the Makefile; MIT): small pages
//! of widgets nobody on the team wrote — links inside text, jQuery UI tabs,
//! accordions, sortable lists, date pickers, autocompletes, spinners, native date
//! and time inputs — each scoring its own episode. Only their HTML is used, served
//! from `.venv` by a fixture server on `127.0.0.1:0`.

use std::path::PathBuf;

use crate::fixtures::FixtureServer;

/// The task pages, served.
pub struct MiniWob {
    server: FixtureServer,
}

// Where the installed package keeps its pages (found without importing it: its
// `__init__` wants the Python environment this project does not install).
fn html_root() -> PathBuf {
    #[allow(clippy::disallowed_methods)]
    let out = std::process::Command::new(crate::django::python())
        .args([
            "-c",
            "import importlib.util as u; print(u.find_spec('miniwob').submodule_search_locations[0])",
        ])
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "MiniWoB++ is missing: `make test` installs it into .venv ({})",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("html")
}

impl MiniWob {
    /// Serves the installed task pages.
    pub async fn start() -> MiniWob {
        MiniWob {
            server: FixtureServer::start(html_root()).await,
        }
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// The page of task `name` (`click-link`).
    pub fn task(&self, name: &str) -> String {
        format!("http://127.0.0.1:{}/miniwob/{name}.html", self.port())
    }
}
