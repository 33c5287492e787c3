//! The lock-free hash index (Hekaton section 2.1).
//!
//! A fixed array of buckets, each an atomic pointer to the first version of
//! its chain. Versions are prepended with a CAS on the bucket; a lookup walks
//! the chain and checks key and visibility of every version. The bucket count
//! is fixed when the index is created (the next power of two at or above the
//! declared capacity); chains grow gracefully past it, they just get longer.
//!
//! A bucket is one 64-bit word: the chain's head pointer in the low 48 bits
//! and, in the high 16, the bucket's LockCount (MV/L's bucket locks, VLDB
//! 2011 section 4.1.2); its transitions are in `super::bucket`. User-space
//! addresses fit in 48 bits on x86-64 and AArch64 Linux; `insert` checks it.
//!
//! A small index (declared capacity up to [`SMALL`]) gets eight buckets per
//! declared key, each on a cache line of its own. Small tables are hot
//! tables (TPC-C's warehouses and districts: every transaction updates
//! one), and a new version is published by a CAS on its bucket: packed
//! eight to a line, or sharing a bucket, rows that different threads
//! update would bounce their line between the caches on every update.

use super::bucket::{self, PTR_MASK};
use super::Stripes;
use crate::storage::version::Version;
use std::sync::atomic::{AtomicU64, Ordering};

#[inline]
fn head_of(word: u64) -> *mut Version {
    (word & PTR_MASK) as *mut Version
}

/// Indexes declared for at most this many keys give each bucket a cache line.
pub const SMALL: usize = 256;
/// Bucket pointers per cache line, as a shift: 8 = 64 bytes / 8.
const LINE_SHIFT: u32 = 3;

/// A hash index over the versions of one table; `link` is the version link it owns.
pub struct HashIndex {
    /// Bucket words: LockCount and head pointer.
    buckets: Box<[AtomicU64]>,
    mask: u64,
    /// Bucket `b` is `buckets[b << spread]`: 3 (a line each) for small indexes.
    spread: u32,
    link: usize,
    stripes: Stripes,
}

impl HashIndex {
    /// An index with at least `capacity` buckets (rounded up to a power of two).
    pub fn new(capacity: usize, link: usize) -> HashIndex {
        let (n, spread) = if capacity <= SMALL {
            ((capacity * 8).max(16).next_power_of_two(), LINE_SHIFT)
        } else {
            (capacity.next_power_of_two(), 0)
        };
        HashIndex {
            buckets: (0..n << spread).map(|_| AtomicU64::new(0)).collect(),
            mask: n as u64 - 1,
            spread,
            link,
            stripes: Stripes::new(),
        }
    }

    /// The bucket number of `hash` (bucket locks are keyed by it).
    #[inline]
    pub fn bucket_of(&self, hash: u64) -> u64 {
        hash & self.mask
    }

    /// Number of buckets.
    pub fn buckets(&self) -> usize {
        self.mask as usize + 1
    }

    #[inline]
    fn bucket(&self, hash: u64) -> &AtomicU64 {
        self.bucket_no(hash & self.mask)
    }

    #[inline]
    fn bucket_no(&self, b: u64) -> &AtomicU64 {
        &self.buckets[(b as usize) << self.spread]
    }

    /// The bucket word of `hash`: its top bits are the key lock of
    /// single-version locking (see [`crate::index::key_locks`]).
    #[inline]
    pub(crate) fn bucket_word(&self, hash: u64) -> &AtomicU64 {
        self.bucket(hash)
    }

    /// Increments the LockCount of bucket `b`; false (nothing changed) if
    /// it is at its maximum.
    pub fn lock_bucket(&self, b: u64) -> bool {
        bucket::lock(self.bucket_no(b))
    }

    /// Decrements the LockCount of bucket `b`.
    pub fn unlock_bucket(&self, b: u64) {
        bucket::unlock(self.bucket_no(b))
    }

    /// True if bucket `b` has a lock. Called by an inserter after linking
    /// into the bucket (see `bucket::locked`).
    pub fn bucket_locked(&self, b: u64) -> bool {
        bucket::locked(self.bucket_no(b))
    }

    /// First version of the chain for `hash` (null if empty).
    #[inline]
    pub fn head(&self, hash: u64) -> *mut Version {
        bucket::head(self.bucket(hash)) as *mut Version
    }

    /// First version of bucket number `b` (for full scans).
    #[inline]
    pub fn head_of_bucket(&self, b: usize) -> *mut Version {
        bucket::head(&self.buckets[b << self.spread]) as *mut Version
    }

    /// Starts loading the bucket of `hash` into the cache.
    #[inline]
    pub fn prefetch_bucket(&self, hash: u64) {
        prefetch(self.bucket(hash) as *const AtomicU64 as *const u8);
    }

    /// Starts loading the first `bytes` of the first version of the chain of
    /// `hash` into the cache (at least its first line): the whole row when
    /// `bytes` is the row's size, so that copying it later does not stall
    /// line by line.
    #[inline]
    pub fn prefetch_head(&self, hash: u64, bytes: usize) {
        // Relaxed: a hint only; the pointer is never dereferenced here.
        let h = head_of(self.bucket(hash).load(Ordering::Relaxed));
        if !h.is_null() {
            let first = h as usize & !63;
            let end = h as usize + bytes.max(1);
            for line in (first..end).step_by(64) {
                prefetch(line as *const u8);
            }
        }
    }

    /// The version after `v` in this index's chain.
    #[inline]
    pub fn next(&self, v: &Version) -> *mut Version {
        // Acquire: the successor was published by a Release CAS/store.
        v.link(self.link).load(Ordering::Acquire)
    }

    /// Publishes `v` at the head of its bucket chain.
    ///
    /// # Safety
    /// `v` is a live version not yet linked into this index.
    pub unsafe fn insert(&self, v: *mut Version, hash: u64) {
        // SAFETY: `v` is live and still private to the caller for this link.
        let link = unsafe { (*v).link(self.link) };
        // Relaxed: `v` is not yet reachable; the Release CAS publishes it.
        bucket::link(self.bucket(hash), v as u64, |head| link.store(head as *mut Version, Ordering::Relaxed));
    }

    /// Removes `v` from its chain; returns how many chain members it walked
    /// past to reach it (0: it was the head), or `None` if it was not found.
    ///
    /// # Safety
    /// `v` is live (the caller holds an epoch guard) and linked under `hash`.
    /// The caller frees it only after an epoch has passed.
    pub unsafe fn unlink(&self, v: *mut Version, hash: u64) -> Option<usize> {
        // Lock by bucket number, so every unlinker of this chain takes the same stripe.
        let _g = self.stripes.lock(hash & self.mask);
        let b = self.bucket(hash);
        // SAFETY: `v` is live per the contract.
        let succ = unsafe { (*v).link(self.link).load(Ordering::Acquire) };
        // Fast path: `v` is the head. Release: readers that see `succ` through
        // the bucket must see its contents (already published, but keep the chain
        // ordering uniform). Acquire on failure: we walk from the new head. A
        // LockCount change only retries the CAS.
        let mut cur = b.load(Ordering::Acquire);
        while head_of(cur) == v {
            match b.compare_exchange(cur, succ as u64 | (cur & !PTR_MASK), Ordering::Release, Ordering::Acquire) {
                Ok(_) => return Some(0),
                Err(now) => cur = now,
            }
        }
        // Walk to the predecessor. Only unlinkers (serialised by the stripe
        // lock) change links of published versions, so the predecessor's link
        // cannot change under us; inserts only replace the bucket head.
        let mut prev = head_of(cur);
        let mut steps = 1;
        while !prev.is_null() {
            // SAFETY: chain members are alive while we hold the epoch guard.
            let pl = unsafe { (*prev).link(self.link) };
            let cur = pl.load(Ordering::Acquire);
            if cur == v {
                // Release: publish the bypass to concurrent readers.
                pl.store(succ, Ordering::Release);
                return Some(steps);
            }
            prev = cur;
            steps += 1;
        }
        None
    }

    /// Removes every version of `set` (sorted by address) from the chain of
    /// bucket number `b` in one walk; returns how many it found.
    ///
    /// The collector's answer to long chains: garbage is queued oldest
    /// first, and the oldest versions lie deepest (inserts prepend), so
    /// unlinking a backlog one version at a time walks past the rest of the
    /// backlog each time, quadratic in it; one walk per chain is linear.
    ///
    /// # Safety
    /// As for [`HashIndex::unlink`], for every member of `set`, each linked
    /// in bucket `b`.
    pub unsafe fn unlink_set(&self, b: u64, set: &[*mut Version]) -> usize {
        debug_assert!(set.is_sorted(), "the set is searched by address");
        let member = |p: *mut Version| !p.is_null() && set.binary_search(&p).is_ok();
        let _g = self.stripes.lock(b);
        let bw = self.bucket_no(b);
        let mut left = set.len();
        // Members at the head go by CAS, as in `unlink` (Release: as there;
        // Acquire: the fresh head is walked). An inserter prepends only new
        // versions, never members.
        let mut cur = bw.load(Ordering::Acquire);
        while left > 0 && member(head_of(cur)) {
            // SAFETY: members are live per the contract.
            let succ = unsafe { (*head_of(cur)).link(self.link).load(Ordering::Acquire) };
            match bw.compare_exchange(cur, succ as u64 | (cur & !PTR_MASK), Ordering::Release, Ordering::Acquire) {
                Ok(_) => {
                    left -= 1;
                    cur = bw.load(Ordering::Acquire);
                }
                Err(now) => cur = now,
            }
        }
        // SAFETY: the stripe lock is held, the caller is pinned, and the
        // members are in this chain, after its head (not a member).
        left = unsafe { super::bypass_members(head_of(cur), self.link, set, left) };
        set.len() - left
    }
}

/// A cache prefetch hint; never faults, whatever the address.
#[inline(always)]
pub(crate) fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint: it neither faults nor changes program state,
    // whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `unlink` reports how far it walked; `unlink_set` removes the members
    /// of a set wherever they lie in the chain (the head, runs of them, the
    /// tail) in one walk and leaves every other version in order.
    #[test]
    fn unlink_set_removes_its_members_in_one_walk() {
        let h = HashIndex::new(0, 0);
        let hash = 7;
        // Prepended: the chain is v9, v8, ..., v0.
        let vs: Vec<*mut Version> =
            (0..10u64).map(|i| Version::alloc(&crate::key::Key::from(i), 1, b"", 1).as_ptr()).collect();
        let chain = |h: &HashIndex| {
            let mut out = Vec::new();
            let mut p = h.head(hash);
            while !p.is_null() {
                out.push(vs.iter().position(|&v| v == p).unwrap());
                // SAFETY: linked versions are alive until freed below.
                p = h.next(unsafe { &*p });
            }
            out
        };
        let _guard = crossbeam_epoch::pin();
        // SAFETY: each fresh version is linked once; all are freed at the end, unlinked.
        unsafe {
            for &v in &vs {
                h.insert(v, hash);
            }
            assert_eq!(h.unlink(vs[9], hash), Some(0), "the head");
            assert_eq!(h.unlink(vs[0], hash), Some(8), "the tail, past eight");
            assert_eq!(h.unlink(vs[0], hash), None, "gone");
            let mut set: Vec<_> = [8, 6, 5, 1].iter().map(|&i| vs[i]).collect();
            set.sort_unstable();
            assert_eq!(h.unlink_set(h.bucket_of(hash), &set), 4);
            assert_eq!(chain(&h), vec![7, 4, 3, 2]);
            let mut rest: Vec<_> = [7, 4, 3, 2].iter().map(|&i| vs[i]).collect();
            rest.sort_unstable();
            assert_eq!(h.unlink_set(h.bucket_of(hash), &rest), 4);
            assert!(h.head(hash).is_null());
            for v in vs {
                Version::free(v);
            }
        }
    }

    /// Small indexes get eight buckets a key, every bucket on a line of its
    /// own; large ones pack them; either way each bucket number maps to one
    /// distinct slot.
    #[test]
    fn small_indexes_spread_their_buckets() {
        for (capacity, buckets, stride) in [(0, 16, 64), (2, 16, 64), (20, 256, 64), (256, 2048, 64), (257, 512, 8)] {
            let h = HashIndex::new(capacity, 0);
            assert_eq!(h.buckets(), buckets);
            let at = |b: u64| h.bucket(b) as *const AtomicU64 as usize;
            for b in 1..buckets as u64 {
                assert_eq!(at(b) - at(b - 1), stride, "capacity {capacity}");
                assert_eq!(at(b + buckets as u64), at(b), "the hash wraps at the bucket count");
            }
        }
    }
}
