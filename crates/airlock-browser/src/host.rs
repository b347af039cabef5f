//! The machine's memory, as far as sessions are concerned: how much is available now
//! (new sessions are refused below a floor rather than letting Chromium run out), and
//! how many sessions it holds by default.

use airlock_config::Isolation;

/// What a context session (a browser context and one tab in a shared Chromium)
/// costs, in MiB of proportional set size, rounded up from `make bench`'s idle
/// sessions figure.
pub const CONTEXT_SESSION_MIB: u64 = 30;
/// What a process session (a Chromium of its own) costs, in MiB.
pub const PROCESS_SESSION_MIB: u64 = 160;
/// Left to everything else (the gateway, the shared Chromium's browser process, the
/// system) when deriving the default cap.
const RESERVED_MIB: u64 = 2048;

/// The machine's memory, in MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// Installed.
    pub total_mib: u64,
    /// Available to new processes without swapping (`MemAvailable`).
    pub available_mib: u64,
}

/// Reads `/proc/meminfo`; `None` where there is none.
pub fn memory() -> Option<Memory> {
    parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

fn parse_meminfo(text: &str) -> Option<Memory> {
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
            .map(|kib| kib / 1024)
    };
    Some(Memory {
        total_mib: field("MemTotal")?,
        available_mib: field("MemAvailable")?,
    })
}

/// How many live sessions this machine holds by default: its memory, less a reserve,
/// over what one session of `isolation` costs (at least one).
pub fn default_session_cap(isolation: Isolation) -> usize {
    let total = memory().map_or(4096, |m| m.total_mib);
    let each = match isolation {
        Isolation::Context => CONTEXT_SESSION_MIB,
        Isolation::Process => PROCESS_SESSION_MIB,
    };
    (total.saturating_sub(RESERVED_MIB) / each).max(1) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_is_read_in_mib() {
        let text = "MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   2048000 kB\n";
        assert_eq!(
            parse_meminfo(text),
            Some(Memory {
                total_mib: 24_000,
                available_mib: 2_000
            })
        );
        assert_eq!(parse_meminfo("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn the_default_cap_follows_isolation() {
        assert!(default_session_cap(Isolation::Context) > default_session_cap(Isolation::Process));
        assert!(default_session_cap(Isolation::Process) >= 1);
    }
}
