//! Airlock's browser core: finds and launches Chromium (never downloads one), speaks
//! CDP to it over `--remote-debugging-pipe`, and runs isolated sessions with every
//! action an agent can take, plus accessibility snapshots computed in the page.
//!
//! Owns every Chromium process and profile directory it starts ([`Browsers`]); a
//! session ([`Session`]) is a browser context in the shared Chromium or a dedicated
//! Chromium of its own. It knows nothing of policy, secrets or MCP: the gateway above
//! it decides what may be done, this crate only does it.

mod action;
mod browser;
mod cdp;
mod cgroup;
mod chromium;
mod download;
mod effects;
mod error;
mod events;
mod fields;
mod guard;
pub mod host;
mod keys;
mod launch;
mod options;
mod oracle;
mod outbound;
mod paint;
mod session;
mod tab;
mod wire;

pub use tab::{CONSOLE_KEPT, NETWORK_KEPT};

pub use action::{
    ActionOutcome, Bounds, ClickOptions, ConsoleEntry, ConsoleLevel, ConsoleLog,
    DEFAULT_SNAPSHOT_BYTES, DEFAULT_TEXT_BYTES, DEVICES, Device, Dialog, DialogAnswer, Direction,
    Effect, ImageFormat, InjectedCookie, Injection, Modifier, MouseButton, NetworkEntry,
    NetworkLog, NewTab, Notice, PageText, Resolved, Screenshot, ScreenshotOptions, Scroll,
    Snapshot, SnapshotOptions, Stages, TabInfo, Target, TextPiece, TypedText, WaitCondition,
    WaitUntil, Waited,
};
pub use browser::{Browsers, Probe, probe};
pub use cgroup::DelegatedCgroup;
pub use effects::{Decided, FIELDS_SHOWN, HeldEffect};
pub use error::{Error, Result};
pub use events::{EVENTS_KEPT, EventBatch, PageEvent, PageEvents};
pub use launch::{
    ChromiumBinary, ChromiumKind, PROFILE_PREFIX, chromium_flags, find_chromium, needs_no_sandbox,
    no_sandbox_reason, stop_chromium_under,
};
pub use options::BrowserOptions;
pub use oracle::AxPair;
pub use outbound::{OutgoingRequest, RequestGuard, RequestSigner, SignedHeaders, Signing};
pub use session::{
    EVALUATE_CHARS, EVALUATE_SOURCE_BYTES, EVALUATE_TIME, MAX_DIALOG_WAIT, MAX_PDF_BYTES, MAX_TABS,
    Session, SessionOptions, VIEWPORT_MAX, VIEWPORT_MIN, with_action_budget,
};
