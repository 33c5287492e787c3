//! The version lock of a B+tree node: one 64-bit word that readers only
//! read (optimistic lock coupling) and writers take by compare-and-swap.
//!
//! ```text
//!  63                                                2    1    0
//! +---------------------------------------------------+----+----+
//! |                 version counter                   | L  | O  |
//! +---------------------------------------------------+----+----+
//!   L: locked (a writer holds the node)
//!   O: obsolete (the node has left the tree; it is freed through the epoch)
//! ```
//!
//! A writer sets L by a compare-and-swap from the version it saw
//! ([`VersionLock::upgrade`]); unlocking adds `0b10`, which clears L and
//! carries into the counter, so every critical section leaves a version
//! no reader can have seen before (the counter would have to wrap 2^62
//! times). Unlocking as obsolete adds `0b11`: L cleared, counter bumped,
//! O set, for good.
//!
//! A reader loads the version ([`VersionLock::read`], waiting while L is
//! set and restarting on O), reads the node's fields (atomics, loaded
//! Relaxed), and validates ([`VersionLock::validate`]): if the version is
//! unchanged, no write overlapped the reads. This is the seqlock pattern
//! with fences (Boehm, "Can seqlocks get along with programming language
//! memory models?", MSPC 2012): writer `CAS(L) ; fence(Release) ; stores`,
//! reader `loads ; fence(Acquire) ; load(version)`.
//!
//! This file names nothing of the crate but `crate::sync`, so the model
//! tests (`tests/loom_models.rs`) compile it on loom.

use crate::sync::atomic::{fence, AtomicU64, Ordering};
use crate::sync::Backoff;

/// The obsolete bit.
pub(crate) const OBSOLETE: u64 = 0b01;
/// The lock bit.
pub(crate) const LOCKED: u64 = 0b10;

/// An optimistic read or an upgrade failed: start the operation again from
/// the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Restart;

/// A node's version lock (bit layout in the module docs).
pub(crate) struct VersionLock {
    word: AtomicU64,
}

impl VersionLock {
    /// An unlocked, live node's lock.
    pub(crate) fn new() -> VersionLock {
        VersionLock { word: AtomicU64::new(0) }
    }

    /// Starts an optimistic read: the current version, once no writer holds
    /// the node; `Restart` if the node is obsolete.
    #[inline]
    pub(crate) fn read(&self) -> Result<u64, Restart> {
        let backoff = Backoff::new();
        loop {
            // Acquire: pairs with the Release of `unlock`: what the critical
            // section that left this version wrote is visible to the reads
            // that follow (the new node a child pointer leads to, above all).
            let v = self.word.load(Ordering::Acquire);
            if v & OBSOLETE != 0 {
                return Err(Restart);
            }
            if v & LOCKED == 0 {
                return Ok(v);
            }
            backoff.snooze();
        }
    }

    /// Ends (or checks in the middle of) an optimistic read begun at version
    /// `v`: `Ok` if no writer has held the node since.
    #[inline]
    pub(crate) fn validate(&self, v: u64) -> Result<(), Restart> {
        // Acquire fence: the Relaxed reads of the node before it are ordered
        // before the load below. If one of them saw a store of a critical
        // section, that section's Release fence (in `upgrade`) synchronises
        // with this fence, so the load sees that section's lock or later.
        fence(Ordering::Acquire);
        // Relaxed: ordered by the fence above.
        if self.word.load(Ordering::Relaxed) == v {
            Ok(())
        } else {
            Err(Restart)
        }
    }

    /// Takes the lock if the version is still `v` (seen by [`read`](Self::read)):
    /// the node is then exactly as that read saw it.
    #[inline]
    pub(crate) fn upgrade(&self, v: u64) -> Result<(), Restart> {
        debug_assert_eq!(v & (LOCKED | OBSOLETE), 0, "upgrade from an unlocked, live version");
        // Acquire: the previous holder's stores (before its Release unlock)
        // happen before ours. Relaxed on failure: the caller restarts.
        self.word.compare_exchange(v, v + LOCKED, Ordering::Acquire, Ordering::Relaxed).map_err(|_| Restart)?;
        // Release fence: the lock is ordered before every store of the
        // critical section, so a reader that sees one of them fails its
        // validation (see `validate`).
        fence(Ordering::Release);
        Ok(())
    }

    /// Takes the lock, waiting for a holder to leave; `Restart` if the node
    /// is (or becomes) obsolete.
    #[allow(dead_code)]
    pub(crate) fn lock(&self) -> Result<(), Restart> {
        loop {
            let v = self.read()?;
            if self.upgrade(v).is_ok() {
                return Ok(());
            }
        }
    }

    /// Releases the lock, leaving a new version.
    #[inline]
    pub(crate) fn unlock(&self) {
        debug_assert_ne!(self.word_now() & LOCKED, 0, "unlock of a held lock");
        // Release: the critical section's stores happen before the reads of
        // whoever Acquires this version (`read`, or the next `upgrade`).
        self.word.fetch_add(LOCKED, Ordering::Release);
    }

    /// Releases the lock and marks the node obsolete: readers that reach
    /// it restart, and no writer can take it again.
    pub(crate) fn unlock_obsolete(&self) {
        debug_assert_ne!(self.word_now() & LOCKED, 0, "unlock of a held lock");
        // Release: as `unlock`.
        self.word.fetch_add(LOCKED | OBSOLETE, Ordering::Release);
    }

    /// The word as it is now (assertions and tests only).
    pub(crate) fn word_now(&self) -> u64 {
        // Relaxed: a diagnostic read, ordered by nothing.
        self.word.load(Ordering::Relaxed)
    }
}
