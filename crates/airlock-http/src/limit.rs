//! Failed authentication, limited per client address: a caller guessing tokens gets
//! `429` with `Retry-After` once it has failed `MAX_FAILURES` times within `WINDOW`,
//! until that window ends; the refusal is logged once per burst, not once per request.
//!
//! A success does not erase failures: a guesser holding one valid low-role key could
//! otherwise slip it in between its guesses and never be limited. Failures only age
//! out with their window.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use airlock_core::sync::lock;
use std::time::Duration;

use tokio::time::Instant;

/// Failures allowed per address within one window.
pub(crate) const MAX_FAILURES: u32 = 10;
/// How long a window of failures lasts, from its first failure.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most; past it, ended windows are forgotten first.
const MAX_ADDRESSES: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
    /// Whether this window's refusals were logged already.
    logged: bool,
}

/// Whether a request from an address may try to authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// It may.
    Allowed,
    /// It may not, for this long; `first` is the window's first refusal (log it).
    Refused { retry_after: Duration, first: bool },
}

#[derive(Debug, Default)]
pub(crate) struct AuthLimiter {
    windows: Mutex<HashMap<IpAddr, Window>>,
}

impl AuthLimiter {
    /// Whether `addr` may try now.
    pub(crate) fn admit(&self, addr: IpAddr, now: Instant) -> Admission {
        let mut windows = lock(&self.windows);
        let Some(window) = windows.get_mut(&addr) else {
            return Admission::Allowed;
        };
        let elapsed = now.saturating_duration_since(window.started);
        if elapsed >= WINDOW {
            windows.remove(&addr);
            return Admission::Allowed;
        }
        if window.failures < MAX_FAILURES {
            return Admission::Allowed;
        }
        let first = !window.logged;
        window.logged = true;
        Admission::Refused {
            retry_after: WINDOW - elapsed,
            first,
        }
    }

    /// Counts a failed attempt of `addr`.
    pub(crate) fn failed(&self, addr: IpAddr, now: Instant) {
        let mut windows = lock(&self.windows);
        if windows.len() >= MAX_ADDRESSES && !windows.contains_key(&addr) {
            windows.retain(|_, w| now.saturating_duration_since(w.started) < WINDOW);
            if windows.len() >= MAX_ADDRESSES {
                // Still full of live windows: drop the oldest rather than grow.
                if let Some(oldest) = windows
                    .iter()
                    .min_by_key(|(_, w)| w.started)
                    .map(|(a, _)| *a)
                {
                    windows.remove(&oldest);
                }
            }
        }
        let window = windows.entry(addr).or_insert(Window {
            started: now,
            failures: 0,
            logged: false,
        });
        if now.saturating_duration_since(window.started) >= WINDOW {
            *window = Window {
                started: now,
                failures: 0,
                logged: false,
            };
        }
        window.failures += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_refused_after_its_failures_until_the_window_ends() {
        let limiter = AuthLimiter::default();
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let t0 = Instant::now();
        for _ in 0..MAX_FAILURES {
            assert_eq!(limiter.admit(a, t0), Admission::Allowed);
            limiter.failed(a, t0);
        }
        let later = t0 + Duration::from_secs(20);
        assert_eq!(
            limiter.admit(a, later),
            Admission::Refused {
                retry_after: Duration::from_secs(40),
                first: true
            }
        );
        // Logged once per burst.
        assert!(matches!(
            limiter.admit(a, later),
            Admission::Refused { first: false, .. }
        ));
        // Another address is not affected.
        assert_eq!(limiter.admit(b, later), Admission::Allowed);
        // The window ends.
        assert_eq!(limiter.admit(a, t0 + WINDOW), Admission::Allowed);
        limiter.failed(a, t0 + WINDOW);
        assert_eq!(limiter.admit(a, t0 + WINDOW), Admission::Allowed);
    }
}
