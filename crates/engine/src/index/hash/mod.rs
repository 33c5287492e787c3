//! The lock-free hash index (Hekaton section 2.1), growing online.
//!
//! An array of buckets, each an atomic word heading a chain of versions
//! whose keys hash there. Versions are prepended with a CAS on the bucket; a
//! lookup walks the chain and checks key and visibility of every version.
//!
//! A bucket is one 64-bit word: the chain's head pointer in the low 48 bits
//! and, in the high 16, the bucket's LockCount (MV/L's bucket locks, VLDB
//! 2011 section 4.1.2) or single-version locking's key lock; its transitions
//! are in `super::bucket` and `super::key_locks`. User-space addresses
//! fit in 48 bits on x86-64 and AArch64 Linux; `insert` checks it.
//!
//! A small index (declared capacity up to [`SMALL`]) gets eight buckets per
//! declared key, each on a cache line of its own. Small tables are hot
//! tables (TPC-C's warehouses and districts: every transaction updates
//! one), and a new version is published by a CAS on its bucket: packed
//! eight to a line, or sharing a bucket, rows that different threads
//! update would bounce their line between the caches on every update.
//!
//! # Growth
//!
//! The index doubles its bucket count online, after the relativistic hash
//! table's expansion (Triplett, McKenney and Walpole, "Resizable, Scalable,
//! Concurrent Hash Tables via Relativistic Programming", USENIX ATC 2011):
//! it keeps a list of bucket arrays ("levels"), each twice the size of the
//! one before; buckets are migrated to the next level without relinking
//! (their chains "zipped"), and the chains are unzipped later, a step per
//! grace period. That machinery, and its full description, is in the
//! `grow` submodule. This module holds the levels (`Level`) and the paths
//! that lookups, inserts, scans and unlinks take through them: a word that
//! reads `MOVED` sends them on to the next level, and a zipped chain's
//! versions of other buckets are passed over (a lookup checks keys anyway;
//! a scan filters by hash).
//!
//! **Locks keep their meaning** because they never move: MV/L's bucket
//! locks and 1V's key locks are always the top bits of the words of the
//! *first* level, the array the index was created with, whose bucket
//! numbers ([`HashIndex::bucket_of`]) never change; a moved word keeps its
//! lock bits (migration CASes only the head bits and retries if the lock
//! bits change). A lock so covers the same keys, present or absent, before,
//! during and after growth, at the granularity the table was declared
//! with (as before growth existed). What changes is that a grown chain no
//! longer shares its word with its LockCount; the MV/L ordering of a locker
//! and an inserter then comes from a pair of `SeqCst` fences (see
//! `bucket::locked`). 1V's key locks need nothing more: holders reach the
//! chain only under the lock.

mod grow;
#[cfg(test)]
mod tests;

use super::bucket::{self, moved, PTR_MASK};
use super::Stripes;
use crate::key::Key;
use crate::storage::version::Version;
use crate::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use grow::{sampled, Growth, Phase, SAMPLE_SHIFT};
use parking_lot::Mutex;

#[inline]
fn head_of(word: u64) -> *mut Version {
    (word & PTR_MASK) as *mut Version
}

/// Derives an index key from a row's primary key and value (a table's
/// `KeyFn`, for a secondary index).
type KeyFn = fn(pk: &Key, value: &[u8]) -> Key;

/// Indexes declared for at most this many keys give each bucket a cache line.
pub const SMALL: usize = 256;
/// Bucket pointers per cache line, as a shift: 8 = 64 bytes / 8.
const LINE_SHIFT: u32 = 3;

/// One bucket array.
struct Level {
    /// Bucket words; bucket `b` is `words[b << spread]`.
    words: Box<[AtomicU64]>,
    mask: u64,
    /// 3 (a cache line each) for small arrays.
    spread: u32,
    /// Its number: level `k` has `n0 << k` buckets.
    k: usize,
    /// The family mask: a chain may hold versions of the other buckets
    /// whose numbers agree with its own on these bits (zipped chains, see
    /// the `grow` module docs); `mask` once the level is unzipped.
    fam: AtomicU64,
}

impl Level {
    fn new(n: u64, spread: u32, k: usize, fam: u64) -> Box<Level> {
        let len = (n as usize) << spread;
        Box::new(Level { words: zeroed(len, k == 0), mask: n - 1, spread, k, fam: AtomicU64::new(fam) })
    }

    /// The family mask now (see `fam`).
    #[inline]
    fn fam(&self) -> u64 {
        // Acquire: a level seen unzipped stays so, and its chains were
        // separated before the Release store that says so.
        self.fam.load(Ordering::Acquire)
    }

    /// Calls `f` on every bucket of the family of `b` (family mask `fam`).
    fn family(&self, b: u64, fam: u64, mut f: impl FnMut(u64)) {
        let mut x = b & fam;
        while x <= self.mask {
            f(x);
            x += fam + 1;
        }
    }

    #[inline]
    fn word(&self, b: u64) -> &AtomicU64 {
        &self.words[(b as usize) << self.spread]
    }

    /// The word of the bucket `hash` falls in: [`Level::word`] of
    /// `hash & mask`, without the bounds check (every lookup's and
    /// insert's first step).
    #[inline]
    fn word_of(&self, hash: u64) -> &AtomicU64 {
        let i = ((hash & self.mask) as usize) << self.spread;
        debug_assert!(i < self.words.len());
        // SAFETY: `hash & mask` is below `buckets()`, and `words` holds
        // `buckets() << spread` words.
        unsafe { self.words.get_unchecked(i) }
    }

    #[inline]
    fn buckets(&self) -> u64 {
        self.mask + 1
    }
}

/// `len` zeroed words. `touch`: written now, so that the pages are faulted
/// in at creation (the first level: measured, leaving a 1M-bucket array to
/// fault in under the first inserts cost a fifth of their throughput on
/// the test machine); else from zeroed memory (a grown level: large arrays
/// come from the kernel already zeroed, and the migration that writes
/// every word is spread over many inserts, while zeroing here would stall
/// the one that starts the growth).
fn zeroed(len: usize, touch: bool) -> Box<[AtomicU64]> {
    if touch {
        return (0..len).map(|_| AtomicU64::new(0)).collect();
    }
    let layout = std::alloc::Layout::array::<AtomicU64>(len).expect("bucket array size");
    assert!(layout.size() > 0);
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) } as *mut AtomicU64;
    if p.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `p` is a fresh allocation of `len` AtomicU64s with their
    // layout, and all-zero bytes are a valid AtomicU64 (0); the box frees it
    // with the same layout.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, len)) }
}

/// A hash index over the versions of one table; `link` is the version link it owns.
pub struct HashIndex {
    /// The newest level whose words are all in place.
    cur: AtomicPtr<Level>,
    /// The first level: the lock words (set at creation, never changed).
    base: AtomicPtr<Level>,
    /// Unlink stripes are picked by `hash & smask` (the same for a bucket
    /// and its descendants at every level).
    smask: u64,
    link: usize,
    /// How the versions of this index are hashed (`None`: the primary key).
    key_fn: Option<KeyFn>,
    stripes: Stripes,
    /// A growth is under way (sampled inserts help it).
    growing: AtomicBool,
    /// What only growth touches.
    g: Box<Growth>,
}

impl HashIndex {
    /// An index with at least `capacity` buckets (rounded up to a power of
    /// two; small ones get eight per key), for the versions' link `link`,
    /// hashing a version's primary key (`key_fn` `None`) or `key_fn`'s key.
    pub fn new(capacity: usize, link: usize, key_fn: Option<KeyFn>) -> HashIndex {
        assert!(capacity > 0, "a hash index needs a capacity (TableSpec checks it)");
        let (n, spread) = if capacity <= SMALL {
            ((capacity * 8).max(16).next_power_of_two(), LINE_SHIFT)
        } else {
            (capacity.next_power_of_two(), 0)
        };
        let base = Box::into_raw(Level::new(n as u64, spread, 0, n as u64 - 1));
        HashIndex {
            cur: AtomicPtr::new(base),
            base: AtomicPtr::new(base),
            smask: (n.min(super::STRIPES) - 1) as u64,
            link,
            key_fn,
            stripes: Stripes::new(),
            growing: AtomicBool::new(false),
            g: Box::new(Growth {
                levels: std::array::from_fn(|k| AtomicPtr::new(if k == 0 { base } else { std::ptr::null_mut() })),
                count: CachePadded::new(AtomicI64::new(0)),
                phase: Mutex::new(Phase::Idle),
            }),
        }
    }

    /// The first level: the lock words.
    #[inline]
    fn base(&self) -> &Level {
        // Relaxed: set at creation, never changed.
        // SAFETY: levels live until the index is dropped.
        unsafe { &*self.base.load(Ordering::Relaxed) }
    }

    /// The level after `l` (published before any word of `l` moved).
    #[inline]
    fn next_level(&self, l: &Level) -> &Level {
        // Acquire: its words were initialised before it was published; the
        // caller saw a `MOVED` word (or `cur`) made after that.
        let p = self.g.levels[l.k + 1].load(Ordering::Acquire);
        debug_assert!(!p.is_null(), "a word moved to a level that exists");
        // SAFETY: published levels live until the index is dropped.
        unsafe { &*p }
    }

    #[inline]
    fn current(&self) -> &Level {
        // Acquire: the level and the words it inherited are initialised.
        // SAFETY: levels live until the index is dropped.
        unsafe { &*self.cur.load(Ordering::Acquire) }
    }

    /// The word holding the chain of `hash` now, and its value.
    #[inline]
    fn home(&self, hash: u64) -> (&Level, &AtomicU64, u64) {
        let mut l = self.current();
        loop {
            let w = l.word_of(hash);
            // Acquire: pairs with the Release CAS that linked the head (or
            // moved the word), so the head's fields are visible.
            let cur = w.load(Ordering::Acquire);
            if !moved(cur) {
                return (l, w, cur);
            }
            l = self.next_level(l);
        }
    }

    /// The hash of `v` in this index (as `Index::hash_of`).
    fn hash_of(&self, v: &Version) -> u64 {
        match self.key_fn {
            None => crate::key::hash_bytes(v.key_bytes()),
            Some(f) => v.with_value(|val| f(&v.key(), val)).hash64(),
        }
    }

    /// The bucket number of `hash` in the lock words (bucket locks are keyed
    /// by it). It never changes: locks stay in the first level.
    #[inline]
    pub fn bucket_of(&self, hash: u64) -> u64 {
        hash & self.base().mask
    }

    /// Number of buckets now.
    #[cfg(test)]
    pub fn buckets(&self) -> usize {
        self.current().buckets() as usize
    }

    /// The bucket word that holds the lock of `hash`: its top bits are the
    /// key lock of single-version locking (see [`crate::index::key_locks`]).
    /// The same word for the index's life.
    #[inline]
    pub(crate) fn bucket_word(&self, hash: u64) -> &AtomicU64 {
        self.base().word_of(hash)
    }

    /// Increments the LockCount of bucket `b`; false (nothing changed) if
    /// it is at its maximum.
    pub fn lock_bucket(&self, b: u64) -> bool {
        let w = self.base().word(b);
        let ok = bucket::lock(w);
        bucket::order_after_lock(w);
        ok
    }

    /// Decrements the LockCount of bucket `b`.
    pub fn unlock_bucket(&self, b: u64) {
        bucket::unlock(self.base().word(b))
    }

    /// True if bucket `b` has a lock. Called by an inserter after linking
    /// into the bucket (see `bucket::locked`).
    pub fn bucket_locked(&self, b: u64) -> bool {
        bucket::locked(self.base().word(b))
    }

    /// First version of the chain for `hash` (null if empty). The chain
    /// may hold versions of other buckets (it always could hold other keys).
    #[inline]
    pub fn head(&self, hash: u64) -> *mut Version {
        head_of(self.home(hash).2)
    }

    /// Starts loading the bucket of `hash` into the cache.
    #[inline]
    pub fn prefetch_bucket(&self, hash: u64) {
        let l = self.current();
        prefetch(l.word_of(hash) as *const AtomicU64 as *const u8);
    }

    /// Starts loading the first `bytes` of the first version of the chain of
    /// `hash` into the cache (at least its first line): the whole row when
    /// `bytes` is the row's size, so that copying it later does not stall
    /// line by line.
    #[inline]
    pub fn prefetch_head(&self, hash: u64, bytes: usize) {
        let l = self.current();
        // Relaxed: a hint only; the pointer is never dereferenced here.
        let w = l.word_of(hash).load(Ordering::Relaxed);
        let h = head_of(w);
        if !h.is_null() && !moved(w) {
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

    /// Calls `f` on every version linked into the index, each once, until
    /// it returns false (then returns false). In no particular order.
    ///
    /// The caller holds an epoch guard for the whole walk (or has the
    /// index to itself).
    pub fn scan(&self, mut f: impl FnMut(&Version) -> bool) -> bool {
        let l = self.current();
        (0..l.buckets()).all(|b| self.scan_class(l, b, &mut f))
    }

    /// Calls `f` on the versions whose hash falls in bucket `b` of level `l`.
    fn scan_class(&self, l: &Level, b: u64, f: &mut dyn FnMut(&Version) -> bool) -> bool {
        // Acquire: as in `home`.
        let w = l.word(b).load(Ordering::Acquire);
        if moved(w) {
            let nl = self.next_level(l);
            return self.scan_class(nl, b, f) && self.scan_class(nl, b + l.buckets(), f);
        }
        let zipped = l.fam() != l.mask;
        let mut p = head_of(w);
        while !p.is_null() {
            // SAFETY: chain members are freed only after an epoch has passed,
            // and the caller is pinned.
            let v = unsafe { &*p };
            // A zipped chain holds versions of its family's other buckets:
            // those are delivered by their own walks.
            if (!zipped || self.hash_of(v) & l.mask == b) && !f(v) {
                return false;
            }
            p = self.next(v);
        }
        true
    }

    /// Publishes `v` at the head of its bucket chain.
    ///
    /// # Safety
    /// `v` is a live version not yet linked into this index.
    pub unsafe fn insert(&self, v: *mut Version, hash: u64) {
        // SAFETY: `v` is live and still private to the caller for this link.
        let link = unsafe { (*v).link(self.link) };
        loop {
            let (_, w, cur) = self.home(hash);
            // Relaxed: `v` is not yet reachable; the Release CAS publishes it.
            if bucket::link_at(w, cur, v as u64, |head| link.store(head as *mut Version, Ordering::Relaxed)) {
                break;
            }
        }
        if sampled(v) {
            self.counted(1);
        }
    }

    /// Removes `v` from its chain; returns how many chain members it walked
    /// past to reach it (0: it was the head), or `None` if it was not found.
    ///
    /// # Safety
    /// `v` is live (the caller holds an epoch guard) and linked under `hash`.
    /// The caller frees it only after an epoch has passed.
    pub unsafe fn unlink(&self, v: *mut Version, hash: u64) -> Option<usize> {
        // The common case, no growth under way: the current level is
        // unzipped, so `v` is on one chain, its bucket's, unless that
        // bucket moved on (checked under the stripe, which keeps it from
        // moving). The general `remove` costs four times as much here
        // (measured: the collector's unlinks were a twentieth of a
        // Hekaton transaction's instructions through it).
        let l = self.current();
        if l.fam() == l.mask {
            let b = hash & l.mask;
            let fast = {
                let _g = self.stripes.lock(b & self.smask);
                let w = l.word(b);
                // Acquire: as in `home`.
                // SAFETY: forwarded contract; the stripe is held.
                (!moved(w.load(Ordering::Acquire))).then(|| unsafe { self.unlink_one(w, v) })
            };
            if let Some(steps) = fast {
                if sampled(v) {
                    // Relaxed: an estimate; nothing is published through it.
                    self.g.count.fetch_sub(1 << SAMPLE_SHIFT, Ordering::Relaxed);
                }
                // Relaxed: a hint; `help` decides under its lock.
                if self.growing.load(Ordering::Relaxed) {
                    self.help();
                }
                return steps;
            }
        }
        let set = [v];
        // SAFETY: forwarded contract.
        let (found, steps) = unsafe { self.remove(hash, &set) };
        (found == 1).then_some(steps)
    }

    /// Bypasses `v` in the chain of word `w`; how many versions the walk
    /// passed to reach it, `None` if it is not there.
    ///
    /// # Safety
    /// As for `bypass`.
    #[inline]
    unsafe fn unlink_one(&self, w: &AtomicU64, v: *mut Version) -> Option<usize> {
        // SAFETY: `v` is live per the contract.
        let succ = unsafe { (*v).link(self.link).load(Ordering::Acquire) };
        // `v` at the head goes by CAS (Release: readers that see `succ`
        // through the word see its contents; Acquire on failure: the fresh
        // head is walked). A LockCount change or an insert only retries.
        // Acquire: the head's fields.
        let mut cur = w.load(Ordering::Acquire);
        while head_of(cur) == v {
            match w.compare_exchange(cur, succ as u64 | (cur & !PTR_MASK), Ordering::Release, Ordering::Acquire) {
                Ok(_) => return Some(0),
                Err(now) => cur = now,
            }
        }
        // Only stripe holders change the links of published versions, so
        // the predecessor's link cannot change under us.
        let mut prev = head_of(cur);
        let mut steps = 1;
        while !prev.is_null() {
            // SAFETY: chain members stay alive under the caller's epoch guard.
            let pl = unsafe { (*prev).link(self.link) };
            // Acquire: the successor as published.
            let next = pl.load(Ordering::Acquire);
            if next == v {
                // Release: publish the bypass to readers walking the chain.
                pl.store(succ, Ordering::Release);
                return Some(steps);
            }
            prev = next;
            steps += 1;
        }
        None
    }

    /// The chain number of `hash` for [`HashIndex::unlink_set`]: versions
    /// given the same number may be unlinked together.
    #[inline]
    pub fn chain_of(&self, hash: u64) -> u64 {
        // Any level will do (`remove` finds the chains a class went to); the
        // current one groups the finest.
        let l = self.current();
        (hash & l.mask) | (l.k as u64) << 48
    }

    /// Removes every version of `set` (sorted by address) from the chains
    /// of chain number `c` (from [`HashIndex::chain_of`]) in one walk per
    /// chain; returns how many it found.
    ///
    /// The collector's answer to long chains: garbage is queued oldest
    /// first, and the oldest versions lie deepest (inserts prepend), so
    /// unlinking a backlog one version at a time walks past the rest of the
    /// backlog each time, quadratic in it; one walk per chain is linear.
    ///
    /// # Safety
    /// As for [`HashIndex::unlink`], for every member of `set`, each linked
    /// with a hash of chain number `c`.
    pub unsafe fn unlink_set(&self, c: u64, set: &[*mut Version]) -> usize {
        debug_assert!(set.is_sorted(), "the set is searched by address");
        let (k, b) = ((c >> 48) as usize, c & PTR_MASK);
        // Acquire: the level was published before `chain_of` saw it.
        // SAFETY: levels live until the index is dropped.
        let l = unsafe { &*self.g.levels[k].load(Ordering::Acquire) };
        // SAFETY: forwarded contract.
        unsafe { self.remove_class(l, b, set).0 }
    }
}

impl Drop for HashIndex {
    fn drop(&mut self) {
        for l in &self.g.levels {
            // Relaxed: we own the index.
            let p = l.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: made by `Box::into_raw`, freed once, here.
                drop(unsafe { Box::from_raw(p) });
            }
        }
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
