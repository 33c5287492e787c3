//! Helpers shared by the engine's concurrent tests.
#![allow(dead_code)] // each test file uses its own subset

use std::sync::atomic::{AtomicBool, Ordering};

/// Raises the flag when dropped, so that helper threads looping on it stop
/// even when the test body panics (a failing test must fail, not hang).
pub struct RaiseOnDrop<'a>(pub &'a AtomicBool);

impl Drop for RaiseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// The size multiplier of randomized tests: `MULTIVERSE_STRESS=N` (default 1).
pub fn stress() -> u64 {
    std::env::var("MULTIVERSE_STRESS").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1)
}
pub mod schedule;
