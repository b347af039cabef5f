//! The `browser_*` tools, one file per family, each its own `#[tool_router]`; the
//! server adds the routers up.

mod interact;
mod navigate;
mod read;
mod session;
mod tabs;
