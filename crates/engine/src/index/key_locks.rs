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
//!  63   62                   48 47                                      0
//! +----+-----------------------+-----------------------------------------+
//! | X  | shared holders (15)   | bucket: chain head (else unused)        |
//! +----+-----------------------+-----------------------------------------+
//! ```
//!
//! * shared (S): the count of holders; taken while X is clear;
//! * exclusive (X): the bit, with a count of 0. A sole shared holder
//!   upgrades by turning a count of 1 into X.
//!
//! The low bits may change under a lock (an insert into the bucket), so
//! every change of the lock bits is a CAS or an arithmetic RMW on the top
//! bits that keeps them. Nobody is recorded in the word: each transaction
//! knows the locks it holds (`protocol::lock_1v`), and waits are bounded by
//! a timeout, which is how section 5 detects and breaks deadlocks.

use std::sync::atomic::{AtomicU64, Ordering};

/// The exclusive bit.
const X: u64 = 1 << 63;
/// One shared holder.
const ONE: u64 = 1 << 48;
/// The lock bits.
const LOCK_BITS: u64 = !(ONE - 1);
/// The most shared holders.
const MAX_SHARED: u64 = (X >> 48) - 1;

/// Shared holders in a word.
#[inline]
fn shared(w: u64) -> u64 {
    (w & !X) >> 48
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
    #[cfg(test)]
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
        if cur & X != 0 || shared(cur) == MAX_SHARED {
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
        if cur & LOCK_BITS != from {
            return false;
        }
        // Acquire: as for `try_shared`.
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
        LockMode::Shared => cur & X == 0 && shared(cur) < MAX_SHARED,
        LockMode::Exclusive => cur & LOCK_BITS == if upgrade { ONE } else { 0 },
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
            // bits (a bucket's head) may change meanwhile: clear X alone.
            let before = w.fetch_and(!X, Ordering::Release);
            debug_assert!(before & LOCK_BITS == X, "an exclusive lock is held alone");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn modes_exclude_each_other() {
        let t = KeyLocks::new(100);
        assert_eq!(t.len(), 128);
        let w = t.lock_of(7);
        assert!(try_shared(w) && try_shared(w));
        assert!(!try_exclusive(w, true), "two shared holders: no upgrade");
        unlock(w, LockMode::Shared);
        assert!(looks_free(w, LockMode::Exclusive, true));
        assert!(try_exclusive(w, true), "the sole shared holder upgrades");
        assert!(!try_shared(w) && !try_exclusive(w, false));
        unlock(w, LockMode::Exclusive);
        assert!(try_exclusive(w, false));
        unlock(w, LockMode::Exclusive);
        assert_eq!(w.load(Ordering::Relaxed), 0);
    }

    /// The low bits (a bucket's chain head) survive every lock change.
    #[test]
    fn low_bits_are_kept() {
        let w = AtomicU64::new(0x1234_5678);
        assert!(try_shared(&w) && try_exclusive(&w, true));
        w.fetch_add(1, Ordering::Relaxed); // an insert changes the head meanwhile
        unlock(&w, LockMode::Exclusive);
        assert_eq!(w.load(Ordering::Relaxed), 0x1234_5679);
    }

    /// Randomized: threads take one lock shared or exclusive at random and
    /// check that an exclusive holder is alone and shared holders never
    /// meet one.
    #[test]
    fn concurrent_holders_respect_the_modes() {
        // Another thread rewrites the low bits all along, as inserts into
        // a bucket do.
        let w = AtomicU64::new(0);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (readers, writers) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let _ = w.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| {
                        Some((x & !(ONE - 1)) | ((x + 1) & (ONE - 1)))
                    });
                }
            });
            let workers: Vec<_> = (0..4u64)
                .map(|th| {
                    let (w, readers, writers) = (&w, &readers, &writers);
                    s.spawn(move || {
                        let mut x = th.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                        for _ in 0..20_000 {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            if x % 3 == 0 {
                                let up = x % 2 == 0;
                                if up {
                                    while !try_shared(w) {
                                        std::hint::spin_loop();
                                    }
                                }
                                if !try_exclusive(w, up) {
                                    if up {
                                        unlock(w, LockMode::Shared);
                                    }
                                    continue;
                                }
                                assert_eq!(writers.fetch_add(1, Ordering::SeqCst), 0);
                                assert_eq!(readers.load(Ordering::SeqCst), 0);
                                writers.fetch_sub(1, Ordering::SeqCst);
                                unlock(w, LockMode::Exclusive);
                            } else if try_shared(w) {
                                readers.fetch_add(1, Ordering::SeqCst);
                                assert_eq!(writers.load(Ordering::SeqCst), 0);
                                readers.fetch_sub(1, Ordering::SeqCst);
                                unlock(w, LockMode::Shared);
                            }
                        }
                    })
                })
                .collect();
            for h in workers {
                h.join().unwrap();
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(w.load(Ordering::Relaxed) & LOCK_BITS, 0);
    }
}
