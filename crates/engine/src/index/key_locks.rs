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
//!  63  62    60 59                 48 47                                 0
//! +---+--------+---------------------+------------------------------------+
//! | X | U (3)  | shared (12)         | bucket: chain head (else unused)   |
//! +---+--------+---------------------+------------------------------------+
//! ```
//!
//! * shared (S): the count of holders; taken while X is clear and U is 0;
//! * exclusive (X): the bit, with a count of 0. A sole shared holder
//!   upgrades by turning a count of 1 into X.
//! * upgraders waiting (U): the count of shared holders waiting to upgrade
//!   to X, each of which marks the word once ([`announce_writer`]) and
//!   takes its mark back when it gives up ([`withdraw_writer`]); taking X
//!   clears U. New shared holders wait while U is not 0, so an upgrade is
//!   not starved by a stream of readers. Not in the paper; it matters most
//!   when threads outnumber cores: a transaction that lost a deadlock and
//!   retried at once used to take its shared lock back before the
//!   descheduled survivor could upgrade, deadlocking again and again
//!   (docs/BENCHMARKS.md, "Oversubscribed"). It is a count, not one bit,
//!   because the deadlock it is for has two upgraders: with one bit, the
//!   victim withdrawing its mark cleared the survivor's too, and its retry
//!   could take its shared lock back first after all.
//!
//! Only a shared holder marks, and it withdraws before it unlocks, so U
//! never exceeds the shared count: when a sole holder takes X, a mark left
//! can only be its own, and one that takes X from a count of 0 finds none.
//! U saturates at [`MAX_UPGRADERS`] (more upgraders of one word than that
//! are deadlocked with each other anyway): an upgrader that finds it full
//! waits unmarked and marks once a place is free. The shared count
//! saturates at [`MAX_SHARED`], one short of the most transactions a
//! database runs at once (`txn::table::MAX_SLOTS`): a reader that finds it
//! full waits.
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
/// One upgrader waiting (see the module docs).
const U_ONE: u64 = 1 << 60;
/// The upgraders' count.
const U: u64 = 7 * U_ONE;
/// The most upgraders counted.
pub(crate) const MAX_UPGRADERS: u64 = U / U_ONE;
/// One shared holder.
pub(crate) const ONE: u64 = 1 << 48;
/// The lock bits.
pub(crate) const LOCK_BITS: u64 = !(ONE - 1);
/// The most shared holders.
pub(crate) const MAX_SHARED: u64 = U_ONE / ONE - 1;

/// Shared holders in a word.
#[inline]
fn shared(w: u64) -> u64 {
    (w & !(X | U)) >> 48
}

/// Upgraders waiting in a word.
#[inline]
pub(crate) fn upgraders(w: u64) -> u64 {
    (w & U) / U_ONE
}

/// The holders' bits: X and the shared count (not U).
#[inline]
fn held(w: u64) -> u64 {
    w & LOCK_BITS & !U
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
        if cur & (X | U) != 0 || shared(cur) == MAX_SHARED {
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
        // Acquire: as for `try_shared`. Taking X clears U: a mark left
        // is the taker's own (module docs).
        debug_assert!(upgraders(cur) <= from / ONE, "only shared holders mark");
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
        LockMode::Shared => cur & (X | U) == 0 && shared(cur) < MAX_SHARED,
        LockMode::Exclusive => held(cur) == if upgrade { ONE } else { 0 },
    }
}

/// Marks `w` as wanted by an upgrader, a shared holder waiting for X:
/// new shared holders wait until it is taken exclusively or every mark is
/// withdrawn. False (nothing changed) if [`MAX_UPGRADERS`] marks are there
/// already: the caller is not counted, and tries again later.
#[inline]
pub(crate) fn announce_writer(w: &AtomicU64) -> bool {
    // Relaxed: a hint to readers; no data is published with it (the CAS
    // decides).
    let mut cur = w.load(Ordering::Relaxed);
    loop {
        debug_assert!(cur & X == 0 && upgraders(cur) < shared(cur), "a shared holder marks once");
        if upgraders(cur) == MAX_UPGRADERS {
            return false;
        }
        // Relaxed: as above.
        match w.compare_exchange_weak(cur, cur + U_ONE, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => cur = now,
        }
    }
}

/// Whether another shared holder of `w` waits to upgrade (a mark is on
/// the word that is not the caller's: the caller has not marked yet). A
/// shared holder that wants to upgrade and finds one is deadlocked with it
/// for certain: each keeps its S lock while it waits for the other's to go.
#[inline]
pub(crate) fn upgrader_waiting(w: &AtomicU64) -> bool {
    // Relaxed: a hint, as the marks themselves (a mark set after this load
    // leaves the deadlock to the detector).
    upgraders(w.load(Ordering::Relaxed)) > 0
}

/// Withdraws the caller's mark (from [`announce_writer`]; it gave up
/// waiting). Other upgraders' marks stay.
#[inline]
pub(crate) fn withdraw_writer(w: &AtomicU64) {
    // Relaxed: as for `announce_writer`.
    let before = w.fetch_sub(U_ONE, Ordering::Relaxed);
    debug_assert!(upgraders(before) > 0, "withdrawing a mark that is there");
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
            // bits (a bucket's head) may change meanwhile: clear X alone
            // (U is 0: nobody else holds the word to mark it).
            let before = w.fetch_and(!X, Ordering::Release);
            debug_assert!(held(before) == X, "an exclusive lock is held alone");
        }
    }
}
