//! The one way Airlock takes a std `Mutex`.
//!
//! Its mutexes guard plain maps and counters and are never held across an `.await`
//! (tokio's own advice for short critical sections). A panic while one is held leaves
//! data that is still consistent for these uses, so poisoning is ignored rather than
//! turned into a second panic.

use std::sync::{Mutex, MutexGuard};

/// Locks `mutex`, ignoring poisoning.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
