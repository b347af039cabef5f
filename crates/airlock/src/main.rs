//! The `airlock` binary: parses the command line and hands off to `cli`.

mod cli;

// Every heap block is zeroed when freed, in the control plane and in the worker (the
// same binary): a buffer that carried a secret (a request, a message to Chromium, a
// redactor's patterns) leaves nothing for a reader of the process's memory once it
// is dropped. Growth copies to a new block, so the old one is zeroed too.
#[global_allocator]
static ALLOCATOR: zeroizing_alloc::ZeroAlloc<std::alloc::System> =
    zeroizing_alloc::ZeroAlloc(std::alloc::System);

fn main() -> std::process::ExitCode {
    cli::main()
}
