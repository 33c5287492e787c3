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
//! The index doubles its bucket count when it holds more than two versions
//! per bucket, online: readers never lock, wait or retry, and an insert
//! does no more than before unless it is one of the sampled few that drive
//! the growth. The scheme is the relativistic hash table's expansion
//! (Triplett, McKenney and Walpole, "Resizable, Scalable, Concurrent Hash
//! Tables via Relativistic Programming", USENIX ATC 2011), made incremental
//! per bucket and fitted to inserts that do not take a lock:
//!
//! * **Levels.** The index keeps a list of bucket arrays ("levels"), each
//!   twice the size of the one before. `cur` is the newest level whose
//!   every word is in place. A bucket of level `k` splits into buckets `b`
//!   and `b + n` (n: level `k`'s size) of level `k + 1`.
//! * **Migration (the paper's "zipping").** A bucket moves under its unlink
//!   stripe lock: the two new words are pointed at the first version of
//!   each half in the old chain, then the old word is turned into `MOVED`
//!   by a CAS (which fails, and is retried, if an insert or a lock changed
//!   it meanwhile). Nothing is relinked: both new chains are the old chain,
//!   entered at different points, so each new bucket's chain holds every
//!   version of its own and some of its sibling's ("zipped"). Readers and
//!   inserters that meet `MOVED` go to the next level; a lookup checks keys
//!   anyway, and a full scan of a zipped level keeps only the versions whose
//!   hash falls in the bucket it walks, so each is delivered once. When the
//!   last bucket has moved, `cur` advances.
//! * **Unzipping.** Then, step by step with a *grace period* between steps
//!   (an epoch of crossbeam-epoch: every reader pinned before the step has
//!   unpinned), the chains are separated. A bucket's *family* is the set of
//!   buckets whose chains may share versions (the two halves of a moved
//!   bucket). In each step, for every bucket X, the first position on X's
//!   chain (its head or a version of X) whose successor belongs to another
//!   bucket is pointed past that run of foreign versions to the next
//!   version of X, provided the position is on no other chain of the
//!   family. Readers of X skip only foreign versions; a reader of another
//!   bucket Y could only stand on the position if it had read a link that
//!   the previous step changed, and the grace period in between has let
//!   all of those finish. One bucket of each family always qualifies (the
//!   chains are acyclic: if every bucket's first cross lay on another's
//!   chain, the crosses would precede each other in a cycle), so every
//!   step makes progress; inserts and unlinks never add a cross, so each
//!   step visits only the families the previous one left with a cross (the
//!   first, only those whose bucket had versions of both halves). This is
//!   the paper's unzip, which fixes one link per step. Readers of the old
//!   level that began before the migration are waited out the same way
//!   before the first step.
//! * **Growth does not wait for unzipping.** Grace periods take as long as
//!   the longest reader (a full scan), and unzipping takes one per run of
//!   foreign versions, so an index filling fast would outrun it and
//!   migrate ever longer chains. Instead, an overloaded index migrates to
//!   the next level even when the current one is still zipped: its
//!   families double (the family mask `fam` of a level keeps the bucket
//!   bits its zipped chains agree on), chains are always migrated at about
//!   two versions a bucket, and unzipping catches up with all of them when
//!   grace periods allow. Until then a lookup walks past the foreign
//!   versions of its family: slower, never wrong.
//! * **Unlinking** (garbage collection) keeps its stripe lock, now chosen by
//!   the hash bits that the first level's mask keeps (the same for a bucket
//!   and every bucket it splits into), so it excludes migration and
//!   unzipping of its chain. While a level is zipped, a version can be
//!   pointed at from the chain of any bucket of its family (a half-done
//!   unzip gives a version two predecessors, on two chains): the unlinker
//!   walks them all, taking the family in the current level, whose words
//!   are all in place, since during a migration some of the family's
//!   chains are still in the level being emptied.
//! * **Counting.** An insert or unlink counts only the versions whose
//!   address falls in a 1/16 sample (a multiplicative hash of the address,
//!   the same at insert and unlink): one shared counter touched by few
//!   inserts, an unbiased estimate of the versions linked. Only those
//!   sampled inserts check the load and help the growth along, a bounded
//!   step each (a try-lock; nobody waits for it); garbage collection's
//!   unlinks help too while a growth is under way. Old arrays are kept
//!   until the index is dropped (together about the size of the newest),
//!   so a bucket word's address stays valid for the index's life.
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

use super::bucket::{self, moved, PTR_MASK};
use super::Stripes;
use crate::key::Key;
use crate::storage::version::Version;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

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
/// A grown level keeps a line per bucket while it has at most this many.
const SPREAD_MAX: usize = SMALL * 8;
/// Most levels (the first is at least 16 buckets; the last below 2^40).
const MAX_LEVELS: usize = 36;
/// No level beyond this many buckets.
const MAX_BUCKETS: u64 = 1 << 36;
/// One insert in 2^SAMPLE_SHIFT is counted (by address).
const SAMPLE_SHIFT: u32 = 4;
/// A growth needs at least this many versions counted (a few samples).
const MIN_GROW: i64 = 8 << SAMPLE_SHIFT;
/// Buckets moved, or pairs unzipped, per helping insert.
const CHUNK: u64 = 128;

/// True for the sampled versions (see the module docs).
#[inline]
fn sampled(v: *const Version) -> bool {
    (v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SAMPLE_SHIFT) == 0
}

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
    /// the module docs); `mask` once the level is unzipped.
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

/// Where a growth stands (under `Growth::phase`).
enum Phase {
    Idle,
    /// Moving the buckets of level `cur` into the next, from bucket `next`;
    /// `todo`: the families of the next level that may need unzipping.
    Migrate {
        next: u64,
        todo: Bits,
    },
    /// Unzipping level `cur`: this pass is at family `next` of those in
    /// `todo`; `dirty`: the families it left with a cross (the next pass
    /// visits only those: inserts and unlinks never add a cross); it may
    /// start once `grace` has passed.
    Unzip {
        next: u64,
        todo: Bits,
        dirty: Bits,
        grace: Arc<AtomicBool>,
    },
}

/// A set of family numbers.
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: u64, all: bool) -> Bits {
        Bits(vec![if all { u64::MAX } else { 0 }; n.div_ceil(64) as usize])
    }
    fn set(&mut self, i: u64) {
        self.0[(i / 64) as usize] |= 1 << (i % 64);
    }
    /// The first member at or after `i`.
    fn next(&self, i: u64) -> Option<u64> {
        let mut w = (i / 64) as usize;
        let mut bits = *self.0.get(w)? & (u64::MAX << (i % 64));
        loop {
            if bits != 0 {
                return Some(w as u64 * 64 + bits.trailing_zeros() as u64);
            }
            w += 1;
            bits = *self.0.get(w)?;
        }
    }
    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
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

/// The growth state of a [`HashIndex`].
struct Growth {
    /// Every level made; `levels[0]` is the first. Freed when the index is
    /// dropped.
    levels: [AtomicPtr<Level>; MAX_LEVELS],
    /// Sampled estimate of the versions linked.
    count: CachePadded<AtomicI64>,
    phase: Mutex<Phase>,
}

/// A position on a chain that links to the next node: a bucket word or a
/// version's link.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pos {
    Head,
    Node(*mut Version),
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

    /// A sampled version was linked (`d` 1) or unlinked (-1); a sampled
    /// insert checks the load and helps a growth along.
    #[cold]
    fn counted(&self, d: i64) {
        // Relaxed: an estimate; nothing is published through it.
        let n = self.g.count.fetch_add(d << SAMPLE_SHIFT, Ordering::Relaxed) + (d << SAMPLE_SHIFT);
        // Relaxed: a hint; `help` decides under its lock.
        if d > 0 && (self.growing.load(Ordering::Relaxed) || self.overloaded(n)) {
            self.help();
        }
    }

    /// True if `n` versions call for more buckets than level `cur` has.
    fn overloaded(&self, n: i64) -> bool {
        let b = self.current().buckets();
        n >= MIN_GROW && n as u64 > 2 * b && 2 * b <= MAX_BUCKETS
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

    /// [`HashIndex::unlink`] and [`HashIndex::unlink_set`]: bypasses the
    /// members of `set` in the chains of `hash`. Returns how many it found
    /// and how far the walk went to the first.
    ///
    /// # Safety
    /// As for `unlink_set`.
    unsafe fn remove(&self, hash: u64, set: &[*mut Version]) -> (usize, usize) {
        let l = self.current();
        // SAFETY: forwarded contract.
        unsafe { self.remove_class(l, hash & l.mask, set) }
    }

    /// `remove` for the versions whose hash falls in bucket `b` of level `l`.
    ///
    /// # Safety
    /// As for `unlink_set`.
    unsafe fn remove_class(&self, l: &Level, b: u64, set: &[*mut Version]) -> (usize, usize) {
        let r = {
            // Every bucket the class went to shares this stripe, so no
            // unlinker, migration or unzipping changes their links meanwhile.
            let _g = self.stripes.lock(b & self.smask);
            let mut zipped = false;
            self.each_home(l, b, &mut |l, _| zipped |= l.fam() != l.mask);
            let mut steps = None;
            if !zipped {
                // Each member has one link to it, in the chain of its bucket.
                let mut left = set.len();
                self.each_home(l, b, &mut |l, b| {
                    // SAFETY: forwarded contract; the stripe is held.
                    unsafe { self.bypass(l.word(b), set, &mut left, None, &mut steps) }
                });
                (set.len() - left, steps.unwrap_or(0))
            } else {
                // A member may be pointed at from the chain of any bucket of
                // its family: walk them all (where they are now: a migration
                // may be moving them), to the end, for every home. A family
                // is taken in a level whose words are all in place: a home
                // in the level being migrated into has family members whose
                // chains are still in the level before (their words here
                // are not written yet), so its family is that of its parent
                // there (the same buckets: a level is created with the
                // family mask of the one before, which does not change
                // while it migrates). The stripe keeps the chains from
                // moving, so `cur` is a level at or before every home.
                let c = self.current();
                let mut homes: Vec<(&Level, u64)> = Vec::new();
                self.each_home(l, b, &mut |l, b| homes.push((l, b)));
                let mut pairs: Vec<(&Level, u64)> = Vec::new();
                for (l, b) in homes {
                    debug_assert!(c.k <= l.k && l.k <= c.k + 1, "chains lie in the current level or the next");
                    let (l, b) = if l.k > c.k { (c, b & c.mask) } else { (l, b) };
                    l.family(b, l.fam(), |x| {
                        self.each_home(l, x, &mut |m, y| {
                            if !pairs.iter().any(|&(n, z)| std::ptr::eq(m, n) && y == z) {
                                pairs.push((m, y));
                            }
                        })
                    });
                }
                let mut gone = Vec::new();
                for (l, x) in pairs {
                    let mut left = usize::MAX;
                    // SAFETY: as above.
                    unsafe { self.bypass(l.word(x), set, &mut left, Some(&mut gone), &mut steps) };
                }
                gone.sort_unstable();
                gone.dedup();
                (gone.len(), steps.unwrap_or(0))
            }
        };
        let sampled = set.iter().filter(|&&v| sampled(v)).count() as i64;
        if sampled > 0 {
            // Relaxed: an estimate; nothing is published through it.
            self.g.count.fetch_sub(sampled << SAMPLE_SHIFT, Ordering::Relaxed);
        }
        // Relaxed: a hint; `help` decides under its lock.
        if self.growing.load(Ordering::Relaxed) {
            self.help();
        }
        r
    }

    /// Calls `f` on the chains (level, bucket) that hold the versions whose
    /// hash falls in bucket `b` of level `l`: its own, or those it moved
    /// to. The caller holds the class's stripe, so none moves meanwhile.
    fn each_home<'a>(&'a self, l: &'a Level, b: u64, f: &mut dyn FnMut(&'a Level, u64)) {
        // Acquire: as in `home`.
        if moved(l.word(b).load(Ordering::Acquire)) {
            let nl = self.next_level(l);
            self.each_home(nl, b, f);
            self.each_home(nl, b + l.buckets(), f);
        } else {
            f(l, b);
        }
    }

    /// Walks the chain of word `w` and bypasses the members of `set` it
    /// meets, until `left` of them are gone (`usize::MAX`: to the end);
    /// records them in `gone` if given (on a zipped chain, where one may be
    /// bypassed twice, once from each chain of its pair); sets `steps` to
    /// how many versions the walk passed to reach the first.
    ///
    /// # Safety
    /// The caller holds the chain's stripe lock (only its holder changes
    /// the links of published versions) and an epoch guard; the members
    /// are live.
    unsafe fn bypass(
        &self,
        w: &AtomicU64,
        set: &[*mut Version],
        left: &mut usize,
        mut gone: Option<&mut Vec<*mut Version>>,
        steps: &mut Option<usize>,
    ) {
        let member = |p: *mut Version| !p.is_null() && set.binary_search(&p).is_ok();
        // Members at the head go by CAS (Release: readers that see the new
        // head see its contents, published already; Acquire on failure: the
        // fresh head is walked). An inserter prepends only new versions,
        // never members; a LockCount change only retries the CAS.
        // Acquire: the head's fields.
        let mut cur = w.load(Ordering::Acquire);
        while *left > 0 && member(head_of(cur)) {
            let h = head_of(cur);
            // SAFETY: members are live per the contract.
            let succ = unsafe { (*h).link(self.link).load(Ordering::Acquire) };
            match w.compare_exchange(cur, succ as u64 | (cur & !PTR_MASK), Ordering::Release, Ordering::Acquire) {
                Ok(_) => {
                    *left -= 1;
                    steps.get_or_insert(0);
                    if let Some(g) = gone.as_mut() {
                        g.push(h);
                    }
                    // Acquire: as above.
                    cur = w.load(Ordering::Acquire);
                }
                Err(now) => cur = now,
            }
        }
        // The walk stays on the predecessor after each bypass (the next
        // member may follow).
        let mut prev = head_of(cur);
        let mut n = 1;
        while *left > 0 && !prev.is_null() {
            // SAFETY: chain members stay alive under the caller's epoch guard.
            let pl = unsafe { (*prev).link(self.link) };
            // Acquire: the successor as published.
            let next = pl.load(Ordering::Acquire);
            if member(next) {
                // SAFETY: as above; `next` is a member, linked and live.
                let succ = unsafe { (*next).link(self.link).load(Ordering::Acquire) };
                // Release: publish the bypass to readers walking the chain.
                pl.store(succ, Ordering::Release);
                *left -= 1;
                steps.get_or_insert(n);
                if let Some(g) = gone.as_mut() {
                    g.push(next);
                }
            } else {
                prev = next;
                n += 1;
            }
        }
    }

    /// Drives a growth one bounded step: starts one if the index is
    /// overloaded (also in the middle of unzipping: a growth does not wait
    /// for grace periods), moves the next buckets, or unzips the next
    /// families. Never waits: another helper holding the state, or a grace
    /// period not yet passed, ends it.
    #[cold]
    fn help(&self) {
        let Some(mut phase) = self.g.phase.try_lock() else { return };
        let guard = crossbeam_epoch::pin();
        // Relaxed: an estimate.
        let overloaded = self.overloaded(self.g.count.load(Ordering::Relaxed));
        match &mut *phase {
            Phase::Idle | Phase::Unzip { .. } if overloaded => {
                let l = self.current();
                if l.k + 1 >= MAX_LEVELS {
                    return;
                }
                let n = 2 * l.buckets();
                let spread = if n as usize <= SPREAD_MAX { self.base().spread } else { 0 };
                // The new level's chains are zipped within the families of
                // this one (bigger by the new bit).
                let fam = l.fam();
                let next = Box::into_raw(Level::new(n, spread, l.k + 1, fam));
                // Release: the level's fields are initialised before anyone
                // who finds a moved word reads them.
                self.g.levels[l.k + 1].store(next, Ordering::Release);
                // Relaxed: a hint for inserters (the lock decides).
                self.growing.store(true, Ordering::Relaxed);
                // A zipped level's families may all need unzipping; else
                // those whose bucket had versions of both halves.
                *phase = Phase::Migrate { next: 0, todo: Bits::new(fam + 1, fam != l.mask) };
            }
            Phase::Idle => {}
            Phase::Migrate { next, todo } => {
                let l = self.current();
                let nl = self.next_level(l);
                let end = (*next + CHUNK).min(l.buckets());
                for b in *next..end {
                    if self.migrate(l, nl, b) {
                        todo.set(b & nl.fam());
                    }
                }
                *next = end;
                if end == l.buckets() {
                    // Release: every word of `l` is moved, and `nl`'s are
                    // set, before a reader starts at `nl`.
                    self.cur.store(nl as *const Level as *mut Level, Ordering::Release);
                    // Readers of `l`'s chains that began before the moves
                    // must be gone before the first link changes.
                    let todo = std::mem::replace(todo, Bits(Vec::new()));
                    let dirty = Bits::new(nl.fam() + 1, false);
                    *phase = Phase::Unzip { next: 0, todo, dirty, grace: grace() };
                }
            }
            Phase::Unzip { next, todo, dirty, grace: g } => {
                // Acquire: pairs with the deferred store.
                if !g.load(Ordering::Acquire) {
                    // Try to advance the epoch and run what is due: the
                    // marker is set sooner than by collection in passing.
                    guard.flush();
                    return;
                }
                let l = self.current();
                let fam = l.fam();
                let mut done = 0;
                while done < CHUNK {
                    let Some(f) = todo.next(*next).filter(|&f| f <= fam) else {
                        *next = fam + 1;
                        break;
                    };
                    if self.unzip(l, f, fam) {
                        dirty.set(f);
                    }
                    *next = f + 1;
                    done += 1;
                }
                if *next > fam {
                    if !dirty.is_empty() {
                        let todo = std::mem::replace(dirty, Bits::new(fam + 1, false));
                        *phase = Phase::Unzip { next: 0, todo, dirty: Bits::new(fam + 1, false), grace: grace() };
                    } else {
                        // Release: the chains were separated before a reader
                        // that sees this skips filtering.
                        l.fam.store(l.mask, Ordering::Release);
                        // Relaxed: a hint.
                        self.growing.store(false, Ordering::Relaxed);
                        *phase = Phase::Idle;
                    }
                }
            }
        }
    }

    /// Moves bucket `b` of level `l` into `nl` (see the module docs); true
    /// if both halves got versions (their chains are zipped).
    fn migrate(&self, l: &Level, nl: &Level, b: u64) -> bool {
        let _g = self.stripes.lock(b & self.smask);
        let w = l.word(b);
        let (lo, hi) = (nl.word(b), nl.word(b + l.buckets()));
        let mut both = false;
        bucket::move_out(w, |head| {
            // The first version of each half on `b`'s chain (which may hold
            // other buckets' versions too: its family's); every later one of
            // the half follows it. The stripe keeps unlinkers out, and
            // inserts only prepend (then `move_out` retries).
            let (mut first_lo, mut first_hi) = (0u64, 0u64);
            let mut p = head as *mut Version;
            while !p.is_null() && (first_lo == 0 || first_hi == 0) {
                // SAFETY: the helper is pinned; chain members are freed only
                // after an epoch.
                let v = unsafe { &*p };
                let h = self.hash_of(v) & nl.mask;
                if h == b && first_lo == 0 {
                    first_lo = p as u64;
                } else if h == b + l.buckets() && first_hi == 0 {
                    first_hi = p as u64;
                }
                p = self.next(v);
            }
            // Relaxed: nobody reads these words before `move_out`'s Release
            // CAS publishes `MOVED`.
            lo.store(first_lo, Ordering::Relaxed);
            hi.store(first_hi, Ordering::Relaxed);
            both = first_lo != 0 && first_hi != 0;
        });
        both
    }

    /// One unzipping step on family `f` (family mask `fam`) of level `l`:
    /// every bucket X whose first cross (the first position on X's chain,
    /// its head or a version of X, whose successor belongs to another
    /// bucket) is on no other bucket's chain gets it pointed past the run
    /// of foreign versions. Some bucket always qualifies (chains are
    /// acyclic: if each bucket's first cross lay on another's chain, the
    /// crosses would precede each other in a cycle). True if a cross was
    /// left (another pass is due).
    fn unzip(&self, l: &Level, f: u64, fam: u64) -> bool {
        let _g = self.stripes.lock(f & self.smask);
        if (fam + 1) * 2 == l.buckets() {
            if let Some(dirty) = self.unzip_pair(l, f, f + fam + 1) {
                return dirty;
            }
        }
        let mut cands: Vec<(u64, Pos, bool)> = Vec::new();
        l.family(f, fam, |x| {
            if let Some(p) = self.cross(l, x) {
                cands.push((x, p, true));
            }
        });
        if cands.is_empty() {
            return false;
        }
        // A candidate version on another bucket's chain is not safe: that
        // bucket's readers may stand on it.
        l.family(f, fam, |z| {
            // Acquire: the head's fields.
            let mut q = head_of(l.word(z).load(Ordering::Acquire));
            while !q.is_null() {
                for c in cands.iter_mut() {
                    if c.1 == Pos::Node(q) && c.0 != z {
                        c.2 = false;
                    }
                }
                // SAFETY: the helper is pinned and holds the stripe.
                q = self.next(unsafe { &*q });
            }
        });
        for &(x, p, safe) in &cands {
            if safe {
                self.fix(l, x, p);
            }
        }
        true
    }

    #[inline]
    fn bucket_in(&self, l: &Level, v: &Version) -> u64 {
        self.hash_of(v) & l.mask
    }

    /// `unzip` for a family of two buckets `a` and `b`, without walking the
    /// chains to their ends: `a`'s first cross is on `b`'s chain exactly if
    /// the version after `b`'s first cross (a version of `a`: the only
    /// other bucket) lies on `a`'s clean prefix, the versions up to `a`'s
    /// cross (any later version of `a` comes after the cross, and cannot
    /// lead back to it). `None` if a prefix is too long to keep here (the
    /// caller walks the chains instead).
    fn unzip_pair(&self, l: &Level, a: u64, b: u64) -> Option<bool> {
        const KEEP: usize = 32;
        let prefix = |x: u64, keep: &mut [*mut Version; KEEP]| -> Option<(usize, Option<(Pos, *mut Version)>)> {
            // Acquire: the head's fields.
            let mut next = head_of(l.word(x).load(Ordering::Acquire));
            let (mut pos, mut n) = (Pos::Head, 0);
            while !next.is_null() {
                // SAFETY: the helper is pinned and holds the stripe.
                let v = unsafe { &*next };
                if self.bucket_in(l, v) != x {
                    return Some((n, Some((pos, next))));
                }
                *keep.get_mut(n)? = next;
                n += 1;
                pos = Pos::Node(next);
                next = self.next(v);
            }
            Some((n, None))
        };
        let (mut ka, mut kb) = ([std::ptr::null_mut(); KEEP], [std::ptr::null_mut(); KEEP]);
        let (na, ca) = prefix(a, &mut ka)?;
        let (nb, cb) = prefix(b, &mut kb)?;
        if ca.is_none() && cb.is_none() {
            return Some(false);
        }
        let on = |c: Option<(Pos, *mut Version)>, keep: &[*mut Version]| c.is_some_and(|(_, s)| keep.contains(&s));
        let safe_a = !on(cb, &ka[..na]);
        let safe_b = !on(ca, &kb[..nb]);
        for (x, c, safe) in [(a, ca, safe_a), (b, cb, safe_b)] {
            if let (Some((p, _)), true) = (c, safe) {
                self.fix(l, x, p);
            }
        }
        Some(true)
    }

    /// The first position of bucket `x`'s chain (its head, or a version of
    /// `x`) whose successor is a version of another bucket.
    fn cross(&self, l: &Level, x: u64) -> Option<Pos> {
        // Acquire: the head's fields.
        let mut next = head_of(l.word(x).load(Ordering::Acquire));
        let mut pos = Pos::Head;
        while !next.is_null() {
            // SAFETY: the helper is pinned and holds the stripe.
            let v = unsafe { &*next };
            if self.bucket_in(l, v) != x {
                return Some(pos);
            }
            pos = Pos::Node(next);
            next = self.next(v);
        }
        None
    }

    /// Points position `p` of bucket `x`'s chain past the run of other
    /// buckets' versions that follows it, to the next version of `x`.
    fn fix(&self, l: &Level, x: u64, p: Pos) {
        let w = l.word(x);
        let link = match p {
            // SAFETY: the helper is pinned and holds the stripe.
            Pos::Node(v) => Some(unsafe { (*v).link(self.link) }),
            Pos::Head => None,
        };
        // Acquire: the successor's fields.
        let cur = w.load(Ordering::Acquire);
        // Acquire: as above.
        let first = link.map_or(head_of(cur), |k| k.load(Ordering::Acquire));
        let mut t = first;
        // SAFETY: as above.
        while !t.is_null() && self.bucket_in(l, unsafe { &*t }) != x {
            // SAFETY: as above.
            t = self.next(unsafe { &*t });
        }
        match link {
            // Release: readers that follow the new link see `t`'s fields.
            Some(k) => k.store(t, Ordering::Release),
            None => {
                // Release: as above. An insert meanwhile fails the CAS: the
                // next pass starts from its version. Relaxed on failure.
                let _ = w.compare_exchange(cur, t as u64 | (cur & !PTR_MASK), Ordering::Release, Ordering::Relaxed);
            }
        }
    }

    /// Drives any growth under way, and any the load calls for, to its
    /// end, waiting for grace periods. For tests and quiet moments; the
    /// caller must not be pinned.
    pub fn settle(&self) {
        // Relaxed: hints; `help` decides.
        while self.growing.load(Ordering::Relaxed) || self.overloaded(self.g.count.load(Ordering::Relaxed)) {
            self.help();
            // Flushing and re-pinning lets the epoch (and the grace marker) advance.
            crossbeam_epoch::pin().flush();
            std::thread::yield_now();
        }
    }
}

/// A marker set once every thread pinned now has unpinned.
fn grace() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    let guard = crossbeam_epoch::pin();
    // Release: pairs with the Acquire load in `help`.
    guard.defer(move || f.store(true, Ordering::Release));
    guard.flush();
    flag
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Key;

    fn version(i: u64) -> *mut Version {
        Version::alloc(&Key::from(i), 1, b"", 1).as_ptr()
    }

    fn hash(i: u64) -> u64 {
        Key::from(i).hash64()
    }

    /// Versions on the chain of `hash` whose key is `i`.
    fn found(h: &HashIndex, i: u64) -> usize {
        let _g = crossbeam_epoch::pin();
        let k = Key::from(i);
        let mut p = h.head(hash(i));
        let mut n = 0;
        while !p.is_null() {
            // SAFETY: linked versions are alive while the test holds them.
            let v = unsafe { &*p };
            n += v.key_eq(&k) as usize;
            p = h.next(v);
        }
        n
    }

    /// Keys delivered by a full scan, with how often.
    fn scanned(h: &HashIndex) -> std::collections::HashMap<u64, usize> {
        let _g = crossbeam_epoch::pin();
        let mut out = std::collections::HashMap::new();
        h.scan(|v| {
            *out.entry(u64::from_be_bytes(v.key_bytes()[..8].try_into().unwrap())).or_insert(0) += 1;
            true
        });
        out
    }

    /// True if `v` is on any chain of any level (every word that heads a
    /// chain: not moved, and, on the level being migrated into, the words
    /// already written).
    fn reachable(h: &HashIndex, v: *mut Version) -> bool {
        let _g = crossbeam_epoch::pin();
        h.g.levels.iter().map(|l| l.load(Ordering::Acquire)).take_while(|l| !l.is_null()).any(|l| {
            // SAFETY: levels live until the index is dropped.
            let l = unsafe { &*l };
            (0..l.buckets()).any(|b| {
                let w = l.word(b).load(Ordering::Acquire);
                let mut p = if moved(w) { std::ptr::null_mut() } else { head_of(w) };
                while !p.is_null() {
                    if p == v {
                        return true;
                    }
                    // SAFETY: linked versions are alive while the test holds them.
                    p = h.next(unsafe { &*p });
                }
                false
            })
        })
    }

    /// `unlink` reports how far it walked; `unlink_set` removes the members
    /// of a set wherever they lie in the chain (the head, runs of them, the
    /// tail) in one walk and leaves every other version in order.
    #[test]
    fn unlink_set_removes_its_members_in_one_walk() {
        let h = HashIndex::new(1, 0, None);
        // Ten keys of one bucket.
        let keys: Vec<u64> = (0..).filter(|&i| h.bucket_of(hash(i)) == h.bucket_of(hash(0))).take(10).collect();
        let hash = hash(0);
        // Prepended: the chain is v9, v8, ..., v0.
        let vs: Vec<*mut Version> = keys.iter().map(|&i| version(i)).collect();
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
            assert_eq!(h.unlink_set(h.chain_of(hash), &set), 4);
            assert_eq!(chain(&h), vec![7, 4, 3, 2]);
            let mut rest: Vec<_> = [7, 4, 3, 2].iter().map(|&i| vs[i]).collect();
            rest.sort_unstable();
            assert_eq!(h.unlink_set(h.chain_of(hash), &rest), 4);
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
        for (capacity, buckets, stride) in [(1, 16, 64), (2, 16, 64), (20, 256, 64), (256, 2048, 64), (257, 512, 8)] {
            let h = HashIndex::new(capacity, 0, None);
            assert_eq!(h.buckets(), buckets);
            let at = |b: u64| h.bucket_word(b) as *const AtomicU64 as usize;
            for b in 1..buckets as u64 {
                assert_eq!(at(b) - at(b - 1), stride, "capacity {capacity}");
                assert_eq!(at(b + buckets as u64), at(b), "the hash wraps at the bucket count");
            }
        }
    }

    /// Filling a 16-bucket index with 10,000 versions grows it; every key
    /// stays found, by lookup and once by a full scan, in every phase of
    /// every growth (checked after each step), and unlinking random keys in
    /// between (single versions and sets, from zipped chains too) leaves
    /// them on no chain of any level and loses nothing. Several seeds
    /// (`MULTIVERSE_STRESS` times more).
    #[test]
    fn grows_step_by_step_and_loses_nothing() {
        let stress: u64 = std::env::var("MULTIVERSE_STRESS").ok().and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
        let runs = 16 * stress;
        let zipped: Vec<usize> = (1..=runs).map(grow_step_by_step).collect();
        assert!(
            zipped.iter().filter(|&&z| z > 0).count() * 2 >= zipped.len(),
            "growths from zipped levels: {zipped:?}"
        );
    }

    /// One run of the test above; returns the growths that started from a
    /// zipped level.
    fn grow_step_by_step(seed: u64) -> usize {
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut rand = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let h = HashIndex::new(1, 0, None);
        let n = 10_000u64;
        let vs: Vec<*mut Version> = (0..n).map(version).collect();
        let mut live = vec![false; n as usize];
        let mut alive: Vec<u64> = Vec::new();
        let check = |h: &HashIndex, live: &[bool], i: u64| {
            assert_eq!(found(h, i), live[i as usize] as usize, "key {i} (seed {seed})");
        };
        let mut phases = std::collections::HashSet::new();
        // Pinned through random stretches: no grace period passes, so
        // unzipping stops half way and a growth starts while the level
        // before is still zipped; unlinks then meet chains migrated out of
        // zipped families, some of their families' chains not yet moved.
        let mut hold = None;
        let mut toggle = rand(2000);
        let mut zipped_growths = 0;
        for i in 0..n {
            if i == toggle {
                hold = if hold.is_some() { None } else { Some(crossbeam_epoch::pin()) };
                toggle += 1 + rand(2000);
            }
            if let Phase::Migrate { .. } = &*h.g.phase.lock() {
                zipped_growths += (h.current().fam() != h.current().mask) as usize;
            }
            // SAFETY: fresh, linked once.
            unsafe { h.insert(vs[i as usize], hash(i)) };
            live[i as usize] = true;
            alive.push(i);
            phases.insert(std::mem::discriminant(&*h.g.phase.lock()));
            // Every 5th step a random live key goes, alone or with a few
            // others of its chain number, so unlinks meet every phase and
            // versions of every age.
            if i % 5 == 4 {
                let j = alive[rand(alive.len() as u64) as usize];
                let _g = crossbeam_epoch::pin();
                let gone: Vec<u64> = if rand(2) == 0 {
                    // SAFETY: linked, freed only at the end.
                    assert!(unsafe { h.unlink(vs[j as usize], hash(j)) }.is_some(), "key {j} (seed {seed})");
                    vec![j]
                } else {
                    let c = h.chain_of(hash(j));
                    let mut set: Vec<u64> = alive.iter().copied().filter(|&k| h.chain_of(hash(k)) == c).collect();
                    while set.len() > 3 {
                        set.swap_remove(rand(set.len() as u64) as usize);
                    }
                    let mut ptrs: Vec<_> = set.iter().map(|&k| vs[k as usize]).collect();
                    ptrs.sort_unstable();
                    // SAFETY: as above.
                    assert_eq!(unsafe { h.unlink_set(c, &ptrs) }, ptrs.len(), "seed {seed}");
                    set
                };
                for k in gone {
                    live[k as usize] = false;
                    alive.retain(|&a| a != k);
                    assert!(!reachable(&h, vs[k as usize]), "key {k} still linked (seed {seed})");
                }
            }
            if i % 97 == 0 || (i > 2000 && i % 13 == 0 && !matches!(*h.g.phase.lock(), Phase::Idle)) {
                for k in (0..=i).step_by(11) {
                    check(&h, &live, k);
                }
                let s = scanned(&h);
                assert!(s.values().all(|&c| c == 1), "a key scanned twice (seed {seed})");
                assert_eq!(s.len(), alive.len());
            }
            // Let grace periods pass now and then.
            if hold.is_none() && i % 64 == 0 {
                crossbeam_epoch::pin().flush();
            }
        }
        drop(hold);
        h.settle();
        assert!(h.buckets() >= 2048, "grew to {} buckets", h.buckets());
        assert!(phases.len() == 3, "saw every phase (seed {seed})");
        for k in 0..n {
            check(&h, &live, k);
        }
        let s = scanned(&h);
        assert!(s.values().all(|&c| c == 1));
        assert_eq!(s.len(), alive.len());
        // Locks stay in the first level's words.
        assert_eq!(h.bucket_of(u64::MAX), 15);
        for (i, v) in vs.into_iter().enumerate() {
            if live[i] {
                let _g = crossbeam_epoch::pin();
                // SAFETY: linked; freed right after.
                assert!(unsafe { h.unlink(v, hash(i as u64)) }.is_some());
            }
            // SAFETY: unlinked, and no reader is left.
            unsafe { Version::free(v) };
        }
        assert!(scanned(&h).is_empty());
        zipped_growths
    }

    /// A moved word keeps its lock bits: a bucket lock taken before the
    /// growth is still counted after it, and released there.
    #[test]
    fn locks_survive_growth() {
        let h = HashIndex::new(1, 0, None);
        let b = h.bucket_of(hash(5));
        assert!(h.lock_bucket(b));
        let vs: Vec<*mut Version> = (0..2000).map(version).collect();
        for (i, &v) in vs.iter().enumerate() {
            // SAFETY: fresh, linked once.
            unsafe { h.insert(v, hash(i as u64)) };
            crossbeam_epoch::pin().flush();
        }
        h.settle();
        assert!(h.buckets() > 16);
        assert!(h.bucket_locked(b));
        assert!(moved(h.bucket_word(hash(5)).load(Ordering::Relaxed)), "the chain left the lock word");
        h.unlock_bucket(b);
        assert!(!h.bucket_locked(b));
        for (i, v) in vs.into_iter().enumerate() {
            let _g = crossbeam_epoch::pin();
            // SAFETY: linked; freed right after, no reader left.
            unsafe {
                assert!(h.unlink(v, hash(i as u64)).is_some());
                Version::free(v);
            }
        }
    }

    /// Threads insert and unlink while others look up and scan, through
    /// several growths: a key inserted for good is found by every lookup
    /// after its insert and by every full scan begun after it; no scan sees
    /// a key twice. Unlinked versions are freed after an epoch, as the
    /// collector does.
    #[test]
    fn randomized_growth_under_concurrent_inserts_unlinks_and_reads() {
        use std::sync::atomic::AtomicUsize;
        const WRITERS: u64 = 2;
        const PER: u64 = 12_000;
        let h = HashIndex::new(1, 0, None);
        let high: Vec<AtomicU64> = (0..WRITERS).map(|_| AtomicU64::new(0)).collect();
        let done = AtomicUsize::new(0);
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
        eprintln!("seed {seed}");
        let kept = |w: u64, i: u64| w << 32 | i;
        std::thread::scope(|s| {
            for w in 0..WRITERS {
                let (h, high, done) = (&h, &high, &done);
                s.spawn(move || {
                    let mut rng = seed ^ (w + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    let mut rand = move || {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        rng
                    };
                    // Transient versions, unlinked soon after, in sets or alone.
                    let mut pending: Vec<(u64, *mut Version)> = Vec::new();
                    for i in 0..PER {
                        let k = kept(w, i);
                        // SAFETY: fresh, linked once; never unlinked until the end.
                        unsafe { h.insert(version(k), hash(k)) };
                        // Release: readers that see it find the version.
                        high[w as usize].store(i + 1, Ordering::Release);
                        let t = 1 << 62 | kept(w, i);
                        let v = version(t);
                        // SAFETY: as above.
                        unsafe { h.insert(v, hash(t)) };
                        pending.push((t, v));
                        if pending.len() > (rand() % 16) as usize {
                            let g = crossbeam_epoch::pin();
                            if rand() % 2 == 0 {
                                for (t, v) in pending.drain(..) {
                                    // SAFETY: linked, ours; freed after an epoch.
                                    assert!(unsafe { h.unlink(v, hash(t)) }.is_some());
                                    let p = v as usize;
                                    // SAFETY: unlinked; readers pinned now finish first.
                                    unsafe { g.defer_unchecked(move || Version::free(p as *mut Version)) };
                                }
                            } else {
                                let mut by: Vec<(u64, *mut Version)> =
                                    pending.drain(..).map(|(t, v)| (h.chain_of(hash(t)), v)).collect();
                                by.sort_unstable();
                                for run in by.chunk_by(|a, b| a.0 == b.0) {
                                    let set: Vec<_> = run.iter().map(|r| r.1).collect();
                                    // SAFETY: as above.
                                    assert_eq!(unsafe { h.unlink_set(run[0].0, &set) }, set.len());
                                    for v in set {
                                        let p = v as usize;
                                        // SAFETY: as above.
                                        unsafe { g.defer_unchecked(move || Version::free(p as *mut Version)) };
                                    }
                                }
                            }
                        }
                    }
                    for (t, v) in pending {
                        let g = crossbeam_epoch::pin();
                        // SAFETY: as above.
                        assert!(unsafe { h.unlink(v, hash(t)) }.is_some());
                        let p = v as usize;
                        // SAFETY: as above.
                        unsafe { g.defer_unchecked(move || Version::free(p as *mut Version)) };
                    }
                    done.fetch_add(1, Ordering::Release);
                });
            }
            for r in 0..2u64 {
                let (h, high, done) = (&h, &high, &done);
                s.spawn(move || {
                    let mut rng = seed ^ (r + 7).wrapping_mul(0x2545_F491_4F6C_DD1D);
                    let mut rounds = 0;
                    while done.load(Ordering::Acquire) < WRITERS as usize {
                        rounds += 1;
                        // Acquire: the versions below the marks are linked.
                        let marks: Vec<u64> = high.iter().map(|m| m.load(Ordering::Acquire)).collect();
                        for (w, &m) in marks.iter().enumerate() {
                            for _ in 0..64 {
                                rng ^= rng << 13;
                                rng ^= rng >> 7;
                                rng ^= rng << 17;
                                if m > 0 {
                                    let k = kept(w as u64, rng % m);
                                    assert_eq!(found(h, k), 1, "key {k:#x} (seed {seed})");
                                }
                            }
                        }
                        if rounds % 8 == 0 {
                            let s = scanned(h);
                            assert!(s.values().all(|&c| c == 1), "a key scanned twice (seed {seed})");
                            for (w, &m) in marks.iter().enumerate() {
                                for i in (0..m).step_by(37) {
                                    assert_eq!(s.get(&kept(w as u64, i)), Some(&1), "seed {seed}");
                                }
                            }
                        }
                    }
                });
            }
        });
        h.settle();
        assert!(h.buckets() >= 4096, "grew to {}", h.buckets());
        let s = scanned(&h);
        assert_eq!(s.len() as u64, WRITERS * PER, "only the kept keys are left");
        let mut all = Vec::new();
        h.scan(|v| {
            all.push(v as *const Version as *mut Version);
            true
        });
        for v in all {
            // SAFETY: linked; nobody else is left.
            unsafe {
                assert!(h.unlink(v, hash(u64::from_be_bytes((*v).key_bytes()[..8].try_into().unwrap()))).is_some());
                Version::free(v);
            }
        }
    }
}
