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
//! **Growth** ([`super::hash`]): when the index grows, a word's chain moves
//! to the next, larger bucket array and the word's head bits become
//! [`MOVED`] for good; its LockCount stays (locks are always taken in the
//! first array, whose bucket numbers never change). An inserter that finds
//! `MOVED` links into the next array instead ([`link`] refuses), and since
//! the chain it links into is then not in the word that holds the count,
//! [`locked`] and [`order_after_lock`] put a `SeqCst` fence between each
//! side's write and its read of the other word (see their docs).
//!
//! The functions take the word itself, with the head as plain bits, on
//! atomics from [`crate::sync`], so that the model tests
//! (`tests/loom_models.rs`) run exactly this code.

use crate::sync::atomic::{fence, AtomicU64, Ordering};

/// Bits of a bucket word that hold the head pointer.
pub(crate) const PTR_MASK: u64 = (1 << 48) - 1;
/// The head bits of a word whose chain moved to the next bucket array (never
/// a version's address: versions are 8-byte aligned).
pub(crate) const MOVED: u64 = 1;

/// True if the chain of word value `w` moved to the next bucket array.
#[inline]
pub(crate) fn moved(w: u64) -> bool {
    w & PTR_MASK == MOVED
}
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

/// After [`lock`] by a locker that then reads the chain: if the chain has
/// moved out of `w` (the index grew), the chain is in another word, so the
/// word order alone no longer orders the locker and an inserter; a
/// `SeqCst` fence, paired with the one in [`locked`], does (of the two
/// fences, the later one's side sees the other's write). A word not moved
/// now was not moved at the increment either (`MOVED` is final), and its
/// chain moves only by a CAS after the increment, which every later
/// inserter reads.
pub(crate) fn order_after_lock(w: &AtomicU64) {
    // Relaxed: only decides whether to fence; `MOVED` is final.
    if moved(w.load(Ordering::Relaxed)) {
        // SeqCst: the locker's half of the store-buffering pair (see above).
        fence(Ordering::SeqCst);
    }
}

/// True if bucket word `w` has a lock. Called by an inserter after linking
/// into the bucket: its load follows its own CAS in the word's order, so a
/// lock taken before the link is seen (or already released). If the chain
/// moved out of `w` (the inserter may have linked into another word), a
/// `SeqCst` fence before a second load pairs with [`order_after_lock`]. A
/// word seen not moved was the one linked into: an inserter links into a
/// newer array only after seeing `MOVED` here (or a newer array published
/// after every word of this one moved), and `MOVED` is final.
pub(crate) fn locked(w: &AtomicU64) -> bool {
    // Acquire: see the locker's LockList entry, made before its increment.
    let cur = w.load(Ordering::Acquire);
    if !moved(cur) {
        return cur >> 48 != 0;
    }
    // SeqCst: the inserter's half of the store-buffering pair.
    fence(Ordering::SeqCst);
    // Acquire: as above.
    w.load(Ordering::Acquire) >> 48 != 0
}

/// The head of the chain of bucket word `w`, as bits (0: empty).
#[allow(dead_code)] // the model tests (`tests/loom_models.rs`); the index resolves moved words itself
#[inline]
pub(crate) fn head(w: &AtomicU64) -> u64 {
    // Acquire: pairs with the Release CAS in `link`, so the version's fields
    // written before publication are visible.
    w.load(Ordering::Acquire) & PTR_MASK
}

/// Publishes the version at address `v` at the head of bucket word `w`,
/// keeping the LockCount. `set_next(head)` points the version's own link at
/// the current head (the version is still private) before each attempt.
/// False (nothing changed) if the chain has moved out of `w`: the caller
/// links into the next bucket array.
#[allow(dead_code)] // the model tests (`tests/loom_models.rs`); the index links with `link_at`
pub(crate) fn link(w: &AtomicU64, v: u64, set_next: impl FnMut(u64)) -> bool {
    // Relaxed: `v` is not yet reachable; the Release CAS publishes it. A
    // stale `MOVED` cannot be seen: it is final.
    link_at(w, w.load(Ordering::Relaxed), v, set_next)
}

/// [`link`] from `cur`, a value of `w` the caller loaded (the CAS checks
/// it, and retries from the fresher value).
#[inline]
pub(crate) fn link_at(w: &AtomicU64, mut cur: u64, v: u64, mut set_next: impl FnMut(u64)) -> bool {
    assert!(v != 0 && v & !PTR_MASK == 0 && v & 7 == 0, "version addresses are aligned and fit in 48 bits");
    loop {
        if moved(cur) {
            return false;
        }
        set_next(cur & PTR_MASK);
        // Release on success: readers that Acquire the bucket see the
        // initialised version and its link. Relaxed on failure: we only
        // retry with the fresher word. The LockCount is kept.
        match w.compare_exchange_weak(cur, v | (cur & !PTR_MASK), Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
}

/// Moves the chain out of bucket word `w` (the index grows): `set_heads(head)`
/// points the new words at the chain (they are not yet reachable) before
/// each attempt, then a CAS turns the head bits into [`MOVED`], keeping the
/// lock bits. An insert or a lock change meanwhile retries. Called under
/// the chain's unlink stripe, by the one grower.
pub(crate) fn move_out(w: &AtomicU64, mut set_heads: impl FnMut(u64)) {
    // Acquire: the chain's versions, walked by `set_heads`.
    let mut cur = w.load(Ordering::Acquire);
    loop {
        debug_assert!(!moved(cur), "only the grower moves a word");
        set_heads(cur & PTR_MASK);
        // Release: a reader or inserter that sees `MOVED` sees the new
        // words. Acquire on failure: the new head is walked.
        match w.compare_exchange(cur, MOVED | (cur & !PTR_MASK), Ordering::Release, Ordering::Acquire) {
            Ok(_) => return,
            Err(now) => cur = now,
        }
    }
}
