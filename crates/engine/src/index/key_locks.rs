//! The lock table embedded in every index, for single-version locking
//! (Hekaton VLDB 2011 section 5: "we embed a lock table in every index and
//! assign each hash key to a lock in this partitioned lock table. A lock
//! covers all records with the same hash key which automatically protects
//! against phantoms").
//!
//! No central lock manager: a lock is the top sixteen bits of a word found
//! from the key's hash without a search and without allocation. In a hash
//! index the word is the **bucket word** itself (whose top bits MV/L uses
//! for its LockCount, free in a single-version database): the lock costs no
//! cache miss beyond the bucket a lookup reads anyway. An ordered index has
//! a table of its own ([`KeyLocks`]). A lock covers every key that hashes to
//! it, present or absent, so a reader that found no row keeps inserters of
//! that key out for as long as it holds the lock.
//!
//! ```text
//!  63   62   61              48 47                                      0
//! +----+----+------------------+-----------------------------------------+
//! | X  | W  | shared (14)      | bucket: chain head (else unused)        |
//! +----+----+------------------+-----------------------------------------+
//! ```
//!
//! * shared (S): the count of holders; taken while X and W are clear;
//! * exclusive (X): the bit, with a count of 0. A sole shared holder
//!   upgrades by turning a count of 1 into X.
//! * writer waiting (W): set by a shared holder waiting to upgrade to X
//!   ([`announce_writer`]), cleared when X is taken or the wait is given up
//!   ([`withdraw_writer`]). New shared holders wait while it is set, so an
//!   upgrade is not starved by a stream of readers. Not in the paper; it
//!   matters most when threads outnumber cores: a transaction that lost a
//!   deadlock and retried at once used to take its shared lock back before
//!   the descheduled survivor could upgrade, deadlocking again and again
//!   (docs/BENCHMARKS.md, "Oversubscribed").
//!
//! The low bits may change under a lock (an insert into the bucket), so
//! every change of the lock bits is a CAS or an arithmetic RMW on the top
//! bits that keeps them. Nobody is recorded in the word: each transaction
//! knows the locks it holds (`protocol::lock_1v`), and waits are bounded by
//! a timeout, which is how section 5 detects and breaks deadlocks.
//!
//! The atomics come from [`crate::sync`], so that the model tests
//! (`tests/loom_models.rs`) run this very code under loom; the unit tests
//! are in `key_locks_tests.rs`.

use crate::sync::atomic::{AtomicU64, Ordering};

/// The exclusive bit.
const X: u64 = 1 << 63;
/// A writer waits (see the module docs).
const W: u64 = 1 << 62;
/// One shared holder.
pub(crate) const ONE: u64 = 1 << 48;
/// The lock bits.
pub(crate) const LOCK_BITS: u64 = !(ONE - 1);
/// The most shared holders.
const MAX_SHARED: u64 = (W >> 48) - 1;

/// Shared holders in a word.
#[inline]
fn shared(w: u64) -> u64 {
    (w & !(X | W)) >> 48
}

/// The holders' bits: X and the shared count (not W).
#[inline]
fn held(w: u64) -> u64 {
    w & LOCK_BITS & !W
}

/// Locks of one ordered index.
pub(crate) struct KeyLocks {
    words: Box<[AtomicU64]>,
    mask: u64,
}

/// How a lock is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LockMode {
    Shared,
    Exclusive,
}

impl KeyLocks {
    /// A table of at least `n` locks (a power of two).
    pub(crate) fn new(n: usize) -> KeyLocks {
        let n = n.max(64).next_power_of_two();
        KeyLocks { words: (0..n).map(|_| AtomicU64::new(0)).collect(), mask: n as u64 - 1 }
    }

    /// The lock of keys with this hash.
    #[inline]
    pub(crate) fn lock_of(&self, hash: u64) -> &AtomicU64 {
        &self.words[(hash & self.mask) as usize]
    }

    /// Number of locks.
    #[allow(dead_code)] // tests only
    pub(crate) fn len(&self) -> usize {
        self.words.len()
    }
}

/// Tries to take `w` in shared mode.
#[inline]
pub(crate) fn try_shared(w: &AtomicU64) -> bool {
    // Relaxed load: only a guess for the CAS, which decides.
    let mut cur = w.load(Ordering::Relaxed);
    loop {
        if cur & (X | W) != 0 || shared(cur) == MAX_SHARED {
            return false;
        }
        // Acquire: the holder reads what the last exclusive holder wrote
        // before its Release unlock.
        match w.compare_exchange_weak(cur, cur + ONE, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
}

/// Tries to take `w` in exclusive mode; `upgrade`: the caller holds it in
/// shared mode (once) and trades that for exclusive.
#[inline]
pub(crate) fn try_exclusive(w: &AtomicU64, upgrade: bool) -> bool {
    let from = if upgrade { ONE } else { 0 };
    // Relaxed load: only a guess for the CAS, which decides.
    let mut cur = w.load(Ordering::Relaxed);
    loop {
        if held(cur) != from {
            return false;
        }
        // Acquire: as for `try_shared`. Taking X clears W: a writer that
        // still waits sets it again.
        match w.compare_exchange_weak(cur, (cur & !LOCK_BITS) | X, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
}

/// True if `w` is free for the mode (a hint for waiters, no acquisition).
#[inline]
pub(crate) fn looks_free(w: &AtomicU64, mode: LockMode, upgrade: bool) -> bool {
    // Relaxed: a hint; the CAS decides.
    let cur = w.load(Ordering::Relaxed);
    match mode {
        LockMode::Shared => cur & (X | W) == 0 && shared(cur) < MAX_SHARED,
        LockMode::Exclusive => held(cur) == if upgrade { ONE } else { 0 },
    }
}

/// Marks `w` as wanted by a writer: new shared holders wait until it is
/// taken exclusively or the mark is withdrawn. Called by a waiter for X
/// each time it looks (a mark withdrawn by another waiter is set again).
#[inline]
pub(crate) fn announce_writer(w: &AtomicU64) {
    // Relaxed: a hint to readers; no data is published with it.
    if w.load(Ordering::Relaxed) & W == 0 {
        // Relaxed: as above.
        w.fetch_or(W, Ordering::Relaxed);
    }
}

/// Withdraws a writer's mark (it gave up waiting). Another writer still
/// waiting sets it again the next time it looks.
#[inline]
pub(crate) fn withdraw_writer(w: &AtomicU64) {
    // Relaxed: as for `announce_writer`.
    if w.load(Ordering::Relaxed) & W != 0 {
        // Relaxed: as above.
        w.fetch_and(!W, Ordering::Relaxed);
    }
}

/// Releases `w`, held in `mode`.
#[inline]
pub(crate) fn unlock(w: &AtomicU64, mode: LockMode) {
    match mode {
        LockMode::Shared => {
            // Release: our reads happen before a later exclusive holder's writes.
            let before = w.fetch_sub(ONE, Ordering::Release);
            debug_assert!(before & X == 0 && shared(before) > 0, "a shared lock is held");
        }
        LockMode::Exclusive => {
            // Release: our writes are visible to the next holder. The low
            // bits (a bucket's head) and W may change meanwhile: clear X
            // alone.
            let before = w.fetch_and(!X, Ordering::Release);
            debug_assert!(held(before) == X, "an exclusive lock is held alone");
        }
    }
}
