//! Airlock's engine. Every tool call from every surface (MCP today; REST later) comes
//! here as a typed [`ToolCall`] on an [`AgentSession`], and leaves as a [`ToolOutput`]
//! whose text already says what happened, with page content fenced by markers.
//!
//! This is the one place later layers hook into (policy, vault, approvals, audit):
//! surfaces never call the browser directly. It knows nothing of MCP or HTTP.

/// The action vocabulary surfaces build a [`ToolCall`] from: the browser layer's own
/// types, named here so that surfaces depend on the engine alone.
pub mod action {
    pub use airlock_browser::{
        ActionOutcome, Bounds, ClickOptions, ConsoleLevel, DEVICES, Device, Dialog, Direction,
        Effect, ImageFormat, Modifier, MouseButton, NewTab, Notice, Resolved, ScreenshotOptions,
        Scroll, SnapshotOptions, Stages, Target, WaitCondition, WaitUntil, Waited,
    };
}

mod adoption;
mod approvals;
mod asking;
mod audit;
mod clock;
mod config;
mod content;
mod covers;
mod credentials;
mod error;
mod fleet;
mod gone;
mod home_name;
mod homes;
mod identity;
mod leasing;
mod memory;
mod operator;
mod plan;
mod principal;
mod reads;
mod recording;
pub mod registry;
mod session;
mod sessions;
mod shared_tasks;
mod surface;
mod takeover;
mod tenants;
mod tools;
mod warm;

pub use airlock_browser::{CONSOLE_KEPT, NETWORK_KEPT, VIEWPORT_MAX, VIEWPORT_MIN};
pub use airlock_store::{
    ApprovalRecord, ApprovalStatus, AuditRecord, ConsoleLoginRecord, TaskRecord,
};
pub use airlock_vault::webbotauth;
pub use approvals::{Approvals, Decision};
pub use asking::{Answer, ApprovalAsker, ApprovalPrompt};
pub use audit::{AuditLog, Checkpoints, FOLLOW_POLL, FeedEvent, PUBLISHED_FILE};
pub use config::{Caps, GatewayConfig};
pub use content::PageFence;
pub use credentials::CredentialSource;
pub use error::{Error, Result};
pub use fleet::{GONE_AFTER, HEARTBEAT};
pub use home_name::mcp_home;
pub use homes::{HOME_KEPT, Home};
pub use identity::{DIRECTORY_MAX_AGE, agent_of, keep_retired};
pub use leasing::{LeaseRequest, Leased, MAX_LEASE_TTL};
pub use operator::{AuditFilter, ChainStatus, SecretInfo};
pub use recording::{Step as RecordedStep, TRANSIENT_STEPS, download_artifact};
pub use registry::FORGET_AFTER;
pub use session::{
    AgentSession, CallContext, CallObserver, CallRecord, FLOW_RULE, Gate, Gateway, READ_ONLY_RULE,
    SAFETY_CHECK_RULE,
};
pub use sessions::{ConversationKey, LeaseInfo, LeaseTerms, Principal, SessionId};
pub use shared_tasks::{MCP_TASK_OWNER, mcp_task_owner};
pub use surface::Surface;
pub use takeover::{LiveCursor, LiveFrame, LiveUpdate, OperatorInput, Operators};
pub use tools::{
    Interaction, MAX_DOWNLOAD_BYTES, MAX_UPLOAD_BYTES, MAX_UPLOAD_FILES, Navigation, OpenOptions,
    PageView, ReadFormat, Reading, SessionCall, TabAction, ToolCall, ToolFile, ToolOutput, Window,
};
