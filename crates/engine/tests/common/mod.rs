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

/// How long a stress-scaled loop goes on: at least `base` rounds (the CI
/// size, whatever the clock says), then up to `base × MULTIVERSE_STRESS`
/// rounds while the time allowed lasts (`secs × MULTIVERSE_STRESS`
/// seconds from `Rounds::new`).
///
/// For tests whose cost per round grows with the run (garbage on long
/// hash chains: a hash index on a key with three values, a four-bucket
/// table), so that `MULTIVERSE_STRESS=100` runs them long without running
/// them for hours. A round that slows down to nothing still fails the
/// test: the CI-size rounds must all finish.
pub struct Rounds {
    base: u64,
    max: u64,
    deadline: std::time::Instant,
}

impl Rounds {
    pub fn new(base: u64, secs: u64) -> Rounds {
        let n = stress();
        Rounds { base, max: base * n, deadline: std::time::Instant::now() + std::time::Duration::from_secs(secs * n) }
    }

    /// Whether round `i` (counting from 0) runs.
    pub fn go_on(&self, i: u64) -> bool {
        i < self.base || (i < self.max && std::time::Instant::now() < self.deadline)
    }
}

pub mod schedule;
