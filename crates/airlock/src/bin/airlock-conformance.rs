//! `airlock-conformance`: the `airlock` binary with the MCP conformance suite's
//! fixtures beside Airlock's own tools, for `conformance/run` only. A separate
//! binary so that building it never replaces `target/debug/airlock`.

#[path = "../cli/mod.rs"]
mod cli;

// The same allocator as `airlock` (see main.rs): the worker it starts is itself.
#[global_allocator]
static ALLOCATOR: zeroizing_alloc::ZeroAlloc<std::alloc::System> =
    zeroizing_alloc::ZeroAlloc(std::alloc::System);

fn main() -> std::process::ExitCode {
    cli::main()
}
