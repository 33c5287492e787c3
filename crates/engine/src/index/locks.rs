//! Bucket locks and range locks: MV/L's phantom protection (Hekaton VLDB
//! 2011 section 4.1.2), taken by serializable pessimistic transactions.
//!
//! A lock does not keep anybody from adding a version under it; it makes
//! the adder wait before precommit until the locker has precommitted
//! (section 4.2.2). The two sides meet as in Dekker's algorithm:
//!
//! * the **locker** enters its id in the LockList, then increments LockCount
//!   (SeqCst), then scans;
//! * the **adder** links its version, then (after a SeqCst fence) reads
//!   LockCount, and only if it is non-zero reads the LockList.
//!
//! In the single order of SeqCst operations one of the two comes first:
//! either the scan sees the new version (and the scanner imposes a wait-for
//! on its writer) or the adder sees the lock (and waits for the locker).
//!
//! * [`BucketLocks`] lock hash buckets, for point lookups through a hash
//!   index. LockCount is kept per bucket in an array beside the buckets
//!   (allocated at the first lock: the paper keeps it in the bucket itself,
//!   which would widen every bucket of every protocol); LockLists are in a
//!   side table keyed by bucket number, striped.
//! * [`RangeLocks`] lock key ranges of an index: ordered-index scans and
//!   point lookups, and whole-table scans of a hash index. The paper
//!   suggests locking skip-list towers; a list of locked ranges per index is
//!   simpler and exact (no false conflicts), at the price of a walk over the
//!   ranges locked at the moment when a version is added under a lock.

use crate::key::Key;
use parking_lot::Mutex;
use std::ops::Bound;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

/// LockList stripes of a hash index.
const STRIPES: usize = 64;

/// One stripe of LockLists: (bucket, transaction id) pairs.
type LockList = Mutex<Vec<(u64, u64)>>;

/// A locked key range and its locker.
type Range = (Bound<Key>, Bound<Key>, u64);

/// Bucket locks of one hash index.
pub(crate) struct BucketLocks {
    buckets: usize,
    /// LockCount of every bucket (allocated at the first lock).
    counts: OnceLock<Box<[AtomicU32]>>,
    /// LockLists: (bucket, transaction id), striped by bucket.
    lists: Box<[LockList]>,
}

impl BucketLocks {
    pub(crate) fn new(buckets: usize) -> BucketLocks {
        BucketLocks { buckets, counts: OnceLock::new(), lists: (0..STRIPES).map(|_| Mutex::new(Vec::new())).collect() }
    }

    fn list(&self, bucket: u64) -> &LockList {
        &self.lists[bucket as usize % STRIPES]
    }

    /// Locks `bucket` for transaction `id`; the caller scans it afterwards.
    pub(crate) fn lock(&self, bucket: u64, id: u64) {
        self.list(bucket).lock().push((bucket, id));
        let counts = self.counts.get_or_init(|| (0..self.buckets).map(|_| AtomicU32::new(0)).collect());
        // SeqCst: the locker's side of the handshake (module docs).
        counts[bucket as usize].fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }

    /// Releases one lock of `id` on `bucket`.
    pub(crate) fn unlock(&self, bucket: u64, id: u64) {
        let mut l = self.list(bucket).lock();
        if let Some(i) = l.iter().position(|&e| e == (bucket, id)) {
            l.swap_remove(i);
            // Relaxed: under the list lock; an adder that still sees the
            // count reads the list and finds nothing.
            self.counts.get().expect("locked before")[bucket as usize].fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Appends the lockers of `bucket` to `out`. The caller has just linked
    /// a version into the bucket.
    pub(crate) fn lockers(&self, bucket: u64, out: &mut Vec<u64>) {
        // SeqCst fence, then the count: the adder's side of the handshake.
        fence(Ordering::SeqCst);
        let Some(counts) = self.counts.get() else { return };
        if counts[bucket as usize].load(Ordering::SeqCst) == 0 {
            return;
        }
        out.extend(self.list(bucket).lock().iter().filter(|e| e.0 == bucket).map(|e| e.1));
    }
}

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

    /// Narrows the last range `id` locked to end at `hi` (a scan that its
    /// caller stopped early read no further).
    pub(crate) fn narrow_last(&self, id: u64, hi: Bound<Key>) {
        if let Some(e) = self.list.lock().iter_mut().rev().find(|e| e.2 == id) {
            e.1 = hi;
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
pub(crate) fn contains(lo: &Bound<Key>, hi: &Bound<Key>, k: &Key) -> bool {
    (match lo {
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
        Bound::Unbounded => true,
    }) && (match hi {
        Bound::Included(h) => k <= h,
        Bound::Excluded(h) => k < h,
        Bound::Unbounded => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_locks_list_their_lockers() {
        let b = BucketLocks::new(128);
        let mut out = Vec::new();
        b.lockers(3, &mut out);
        assert!(out.is_empty());
        b.lock(3, 10);
        b.lock(3, 11);
        b.lock(3 + STRIPES as u64, 12); // the same stripe: filtered by bucket
        b.lockers(3, &mut out);
        out.sort();
        assert_eq!(out, [10, 11]);
        b.unlock(3, 10);
        b.unlock(3, 10); // not held any more: nothing happens
        out.clear();
        b.lockers(3, &mut out);
        assert!(out.contains(&11) && !out.contains(&10));
    }

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
        r.narrow_last(1, Bound::Included(Key::from(12)));
        assert_eq!(at(13), Vec::<u64>::new());
        r.unlock_all(1);
        assert_eq!(at(15), vec![2]);
        r.unlock_all(2);
        assert_eq!(r.count.load(Ordering::Relaxed), 0);
    }
}
