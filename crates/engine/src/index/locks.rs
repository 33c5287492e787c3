//! Bucket locks and range locks: MV/L's phantom protection (Hekaton VLDB
//! 2011 section 4.1.2), taken by serializable pessimistic transactions.
//!
//! A lock does not keep anybody from adding a version under it; it makes
//! the adder wait before precommit until the locker has precommitted
//! (section 4.2.2). The two sides meet as in Dekker's algorithm:
//!
//! * the **locker** enters its id in the LockList, then increments LockCount,
//!   then scans;
//! * the **adder** links its version, then reads LockCount, and only if it
//!   is non-zero reads the LockList.
//!
//! One of the two comes first: either the scan sees the new version (and
//! the scanner imposes a wait-for on its writer) or the adder sees the lock
//! (and waits for the locker). For a bucket lock both act on the bucket
//! word itself, whose single modification order decides; a range lock has
//! a counter of its own, and both sides put a SeqCst fence between their
//! write and their read.
//!
//! * **Bucket locks** lock hash buckets, for point lookups through a hash
//!   index. LockCount is kept in the bucket word, as in the paper (see
//!   [`crate::index::hash::HashIndex`]). The paper keeps LockLists in a side
//!   hash table keyed by bucket; here each transaction publishes its
//!   BucketLockSet in its transaction-table slot, and an inserter that finds
//!   a non-zero LockCount gathers the bucket's lockers from those sets
//!   (`TxnTable::bucket_lockers`). A side table costs every lock and unlock
//!   a shared cache line; this costs the rare insert into a locked bucket a
//!   walk over the open transactions.
//! * [`RangeLocks`] lock key ranges of an index: ordered-index scans and
//!   point lookups, and whole-table scans of a hash index. The paper
//!   suggests locking skip-list towers; a list of locked ranges per index is
//!   simpler and exact (no false conflicts), at the price of a walk over the
//!   ranges locked at the moment when a version is added under a lock.

use crate::key::Key;
use crate::sync::atomic::{fence, AtomicU64, Ordering};
use parking_lot::Mutex;
use std::ops::Bound;

/// A locked key range and its locker.
type Range = (Bound<Key>, Bound<Key>, u64);

/// Range locks of one index.
pub(crate) struct RangeLocks {
    /// Ranges locked now (the fast path for adders).
    count: AtomicU64,
    list: Mutex<Vec<Range>>,
}

impl RangeLocks {
    pub(crate) fn new() -> RangeLocks {
        RangeLocks { count: AtomicU64::new(0), list: Mutex::new(Vec::new()) }
    }

    /// Locks the keys in (`lo`, `hi`) for transaction `id`.
    pub(crate) fn lock(&self, lo: Bound<Key>, hi: Bound<Key>, id: u64) {
        self.list.lock().push((lo, hi, id));
        // SeqCst: the locker's side of the handshake (module docs).
        self.count.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Narrows the last range `id` locked to (`lo`, `hi`) (a scan that its
    /// caller stopped early read no further: forward, `hi` moves down to the
    /// last key read; backward, `lo` moves up to it).
    pub(crate) fn narrow_last(&self, id: u64, lo: Bound<Key>, hi: Bound<Key>) {
        if let Some(e) = self.list.lock().iter_mut().rev().find(|e| e.2 == id) {
            (e.0, e.1) = (lo, hi);
        }
    }

    /// Releases every range lock of `id`.
    pub(crate) fn unlock_all(&self, id: u64) {
        let mut l = self.list.lock();
        let before = l.len();
        l.retain(|e| e.2 != id);
        // Relaxed: under the list lock, as for bucket locks.
        self.count.fetch_sub((before - l.len()) as u64, Ordering::Relaxed);
    }

    /// Appends the transactions holding a range that contains `key()` to
    /// `out` (the key is computed only if some range is locked).
    pub(crate) fn lockers(&self, key: impl FnOnce() -> Key, out: &mut Vec<u64>) {
        // SeqCst fence, then the count: the adder's side of the handshake.
        fence(Ordering::SeqCst);
        if self.count.load(Ordering::SeqCst) == 0 {
            return;
        }
        let key = key();
        out.extend(self.list.lock().iter().filter(|(lo, hi, _)| contains(lo, hi, &key)).map(|e| e.2));
    }
}

/// True if `k` lies between the bounds.
#[inline]
pub(crate) fn contains(lo: &Bound<Key>, hi: &Bound<Key>, k: &Key) -> bool {
    contains_by(lo, hi, |b| k.cmp(b))
}

/// [`contains`] for a key known only by `cmp`, its order against a bound
/// (a long key compared in place: `Index::covers`).
#[inline]
pub(crate) fn contains_by(lo: &Bound<Key>, hi: &Bound<Key>, cmp: impl Fn(&Key) -> std::cmp::Ordering) -> bool {
    (match lo {
        Bound::Included(l) => cmp(l).is_ge(),
        Bound::Excluded(l) => cmp(l).is_gt(),
        Bound::Unbounded => true,
    }) && (match hi {
        Bound::Included(h) => cmp(h).is_le(),
        Bound::Excluded(h) => cmp(h).is_lt(),
        Bound::Unbounded => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_locks_cover_their_keys() {
        let r = RangeLocks::new();
        r.lock(Bound::Included(Key::from(10)), Bound::Excluded(Key::from(20)), 1);
        r.lock(Bound::Included(Key::from(15)), Bound::Included(Key::from(15)), 2);
        let at = |k: u64| {
            let mut out = Vec::new();
            r.lockers(|| Key::from(k), &mut out);
            out
        };
        assert_eq!(at(9), Vec::<u64>::new());
        assert_eq!(at(10), vec![1]);
        assert_eq!(at(15), vec![1, 2]);
        assert_eq!(at(20), Vec::<u64>::new());
        r.narrow_last(1, Bound::Included(Key::from(10)), Bound::Included(Key::from(12)));
        assert_eq!(at(13), Vec::<u64>::new());
        r.unlock_all(1);
        assert_eq!(at(15), vec![2]);
        r.unlock_all(2);
        assert_eq!(r.count.load(Ordering::Relaxed), 0);
    }
}
