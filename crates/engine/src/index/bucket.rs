//! The bucket word of the hash index: the chain's head pointer in the low
//! 48 bits and, in the high 16, the bucket's **LockCount** (VLDB 2011
//! section 4.1.2: MV/L's serializable transactions lock the buckets they
//! scan):
//!
//! ```text
//!  63            48 47                                              0
//! +----------------+-------------------------------------------------+
//! |   LockCount    |  first version of the chain (null: empty)       |
//! +----------------+-------------------------------------------------+
//! ```
//!
//! Keeping the count in the bucket word makes the check "is this bucket
//! locked?" free for an inserter (its CAS reads the word anyway) and orders
//! lockers and inserters without fences: both update the same word, so of
//! a locker that then scans the chain and an inserter that then checks the
//! count, at least one sees the other.
//!
//! The functions take the word itself, with the head as plain bits, on
//! atomics from [`crate::sync`], so that the model tests
//! (`tests/loom_models.rs`) run exactly this code.

use crate::sync::atomic::{AtomicU64, Ordering};

/// Bits of a bucket word that hold the head pointer.
pub(crate) const PTR_MASK: u64 = (1 << 48) - 1;
/// One LockCount unit in a bucket word.
const LOCK_ONE: u64 = 1 << 48;
/// The largest LockCount.
pub(crate) const MAX_LOCKS: u64 = 0xffff;

/// Increments the LockCount of bucket word `w`; false (nothing changed) if
/// it is at its maximum.
pub(crate) fn lock(w: &AtomicU64) -> bool {
    // Relaxed: the CAS decides.
    let mut cur = w.load(Ordering::Relaxed);
    loop {
        if cur >> 48 == MAX_LOCKS {
            return false;
        }
        // AcqRel: the locker then reads the chain through this word (an
        // insert linked before the increment is seen); an inserter whose
        // CAS comes later reads the count.
        match w.compare_exchange_weak(cur, cur + LOCK_ONE, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
}

/// Decrements the LockCount of bucket word `w`.
pub(crate) fn unlock(w: &AtomicU64) {
    // Release: the locker's scan happens before the unlock.
    let before = w.fetch_sub(LOCK_ONE, Ordering::Release);
    debug_assert!(before >> 48 > 0, "unlocking a bucket nobody locked");
}

/// True if bucket word `w` has a lock. Called by an inserter after linking
/// into the bucket: its load follows its own CAS in the word's order, so a
/// lock taken before the link is seen (or already released).
pub(crate) fn locked(w: &AtomicU64) -> bool {
    // Acquire: see the locker's LockList entry, made before its increment.
    w.load(Ordering::Acquire) >> 48 != 0
}

/// The head of the chain of bucket word `w`, as bits (0: empty).
#[inline]
pub(crate) fn head(w: &AtomicU64) -> u64 {
    // Acquire: pairs with the Release CAS in `link`, so the version's fields
    // written before publication are visible.
    w.load(Ordering::Acquire) & PTR_MASK
}

/// Publishes the version at address `v` at the head of bucket word `w`,
/// keeping the LockCount. `set_next(head)` points the version's own link at
/// the current head (the version is still private) before each attempt.
pub(crate) fn link(w: &AtomicU64, v: u64, mut set_next: impl FnMut(u64)) {
    assert!(v != 0 && v & !PTR_MASK == 0, "version addresses must fit in 48 bits");
    // Relaxed: `v` is not yet reachable; the Release CAS publishes it.
    let mut cur = w.load(Ordering::Relaxed);
    loop {
        set_next(cur & PTR_MASK);
        // Release on success: readers that Acquire the bucket see the
        // initialised version and its link. Relaxed on failure: we only
        // retry with the fresher word. The LockCount is kept.
        match w.compare_exchange_weak(cur, v | (cur & !PTR_MASK), Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return,
            Err(now) => cur = now,
        }
    }
}
