//! The machine's memory, as far as sessions are concerned: how much is available now
//! (new sessions are refused below a floor rather than letting Chromium run out), and
//! how many sessions it holds by default.

use airlock_config::Isolation;

/// What a context session (a browser context and one tab in a shared Chromium)
/// costs, in MiB of proportional set size: `make bench` measures ~21 MiB for an idle
/// one on a small page; real pages weigh more.
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
/// over what one session of `isolation` costs (at least one). Context sessions share
/// one Chromium, whose own bound (`chromium_limit_mib`, its cgroup) kills them all at
/// once when passed, so they are held under that bound too.
pub fn default_session_cap(isolation: Isolation, chromium_limit_mib: Option<u64>) -> usize {
    let total = memory().map_or(4096, |m| m.total_mib);
    let room = total.saturating_sub(RESERVED_MIB);
    let cap = match isolation {
        Isolation::Context => {
            room.min(chromium_limit_mib.unwrap_or(u64::MAX)) / CONTEXT_SESSION_MIB
        }
        Isolation::Process => room / PROCESS_SESSION_MIB,
    };
    cap.max(1) as usize
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
        let context = default_session_cap(Isolation::Context, None);
        assert!(context > default_session_cap(Isolation::Process, None));
        assert!(default_session_cap(Isolation::Process, None) >= 1);
        // The shared Chromium's bound holds context sessions, never process ones.
        assert_eq!(
            default_session_cap(Isolation::Context, Some(4096)),
            context.min(4096 / CONTEXT_SESSION_MIB as usize)
        );
        assert_eq!(
            default_session_cap(Isolation::Process, Some(4096)),
            default_session_cap(Isolation::Process, None)
        );
    }
}
