//! The wait-for word of a transaction-table slot (VLDB 2011 section 4.2):
//! WaitForCounter and NoMoreWaitFors, in one word with the occupant's
//! generation so that a stale id can never touch the next occupant's
//! counter:
//!
//! ```text
//!  63                            22   21        20                 0
//! +--------------------------------+------+--------------------------+
//! | generation of the occupant     | NMWF |  WaitForCounter (21 bits) |
//! +--------------------------------+------+--------------------------+
//! ```
//!
//! NoMoreWaitFors (NMWF) is set when the transaction finishes normal
//! processing: from then on its counter can only fall, so no stream of new
//! dependencies can starve it, and once it reads zero it stays zero.
//!
//! The functions take the word itself, on atomics from [`crate::sync`], so
//! that the model tests (`tests/loom_models.rs`) run exactly this code.

use crate::sync::atomic::{AtomicU64, Ordering};

/// Where the occupant's generation starts.
pub(crate) const GEN_SHIFT: u32 = 22;
/// NoMoreWaitFors.
pub(crate) const NO_MORE: u64 = 1 << 21;
/// WaitForCounter.
pub(crate) const COUNT_MASK: u64 = NO_MORE - 1;

/// Outcome of adding a wait-for dependency to a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitFor {
    /// Added: the transaction cannot precommit until it is released.
    Added,
    /// NoMoreWaitFors is set (or the counter is full): the caller aborts.
    Refused,
    /// The transaction has terminated: nothing to wait for.
    Gone,
}

/// Resets word `w` for a new occupant of generation `gen`: no dependency,
/// NoMoreWaitFors clear.
pub(crate) fn open(w: &AtomicU64, gen: u64) {
    debug_assert!(gen < 1 << (64 - GEN_SHIFT));
    // Release: a wait-for adder that Acquires this word and sees our
    // generation has also seen the rest of the slot's reset.
    w.store(gen << GEN_SHIFT, Ordering::Release);
}

/// Adds one incoming wait-for dependency to the occupant of generation
/// `gen`, unless it has set NoMoreWaitFors or left.
pub(crate) fn add(w: &AtomicU64, gen: u64) -> WaitFor {
    // Acquire: see the generation (and reset counter) its occupant published.
    let mut cur = w.load(Ordering::Acquire);
    loop {
        if cur >> GEN_SHIFT != gen {
            return WaitFor::Gone;
        }
        if cur & NO_MORE != 0 || cur & COUNT_MASK == COUNT_MASK {
            return WaitFor::Refused;
        }
        // AcqRel: the dependency is in place before whatever the caller
        // does next (installing the lock it stands for).
        match w.compare_exchange_weak(cur, cur + 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return WaitFor::Added,
            Err(now) => cur = now,
        }
    }
}

/// Releases one wait-for dependency of the occupant of generation `gen`
/// (nothing if it has left).
pub(crate) fn release(w: &AtomicU64, gen: u64) {
    // Relaxed: the CAS below decides.
    let mut cur = w.load(Ordering::Relaxed);
    loop {
        if cur >> GEN_SHIFT != gen {
            return;
        }
        // Release: what we did before releasing (stamping our end
        // timestamp, dropping our lock) happens before the waiter goes on.
        // (`cur` may be stale: the releaser need not have seen the add, so
        // only the value the CAS replaced is checked, found by the
        // loom model `end_word_racing_writers_one_wins`.)
        match w.compare_exchange_weak(cur, cur.wrapping_sub(1), Ordering::Release, Ordering::Relaxed) {
            Ok(_) => {
                debug_assert!(cur & COUNT_MASK > 0, "releasing a wait-for nobody added");
                return;
            }
            Err(now) => cur = now,
        }
    }
}

/// Sets NoMoreWaitFors (end of normal processing).
pub(crate) fn close(w: &AtomicU64) {
    // AcqRel: adders that lose the race see the flag and are refused.
    w.fetch_or(NO_MORE, Ordering::AcqRel);
}

/// WaitForCounter.
#[inline]
pub(crate) fn count(w: &AtomicU64) -> u64 {
    // Acquire: pairs with the Release in `release`.
    w.load(Ordering::Acquire) & COUNT_MASK
}
