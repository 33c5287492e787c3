//! Online growth of the hash index, after the relativistic hash table's
//! expansion (Triplett, McKenney and Walpole, USENIX ATC 2011; cited in
//! full below). This module holds the growth state (`Growth`, `Phase`),
//! the sampled count that calls for a growth (`sampled`, `counted`), the
//! helpers that drive one a bounded step at a time (`help`: migration and
//! unzipping; `settle`), and the unlink paths that walk moved and zipped
//! chains (`remove`, `remove_class`, `bypass`). The bucket arrays
//! (`Level`) and the paths of lookups, inserts, scans and the common
//! unlink are in the parent module.
//!
//! # Growth
//!
//! The index doubles its bucket count when it holds more versions than
//! buckets (as a table declared at its size starts: a power of two at
//! least its capacity), online: readers never lock, wait or retry, and an insert
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
//!   one version a bucket, and unzipping catches up with all of them when
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

use super::{head_of, HashIndex, Level, SMALL};
use crate::index::bucket::{self, moved, PTR_MASK};
use crate::storage::version::Version;
use crate::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, Ordering};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::sync::Arc;

/// A grown level keeps a line per bucket while it has at most this many.
const SPREAD_MAX: usize = SMALL * 8;
/// Most levels (the first is at least 16 buckets; the last below 2^40).
const MAX_LEVELS: usize = 36;
/// No level beyond this many buckets.
const MAX_BUCKETS: u64 = 1 << 36;
/// One insert in 2^SAMPLE_SHIFT is counted (by address).
pub(super) const SAMPLE_SHIFT: u32 = 4;
/// A growth needs at least this many versions counted (a few samples).
const MIN_GROW: i64 = 8 << SAMPLE_SHIFT;
/// Buckets moved, or pairs unzipped, per helping insert.
const CHUNK: u64 = 128;

/// True for the sampled versions (see the module docs).
#[inline]
pub(super) fn sampled(v: *const Version) -> bool {
    (v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SAMPLE_SHIFT) == 0
}

/// Where a growth stands (under `Growth::phase`).
pub(super) enum Phase {
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
pub(super) struct Bits(Vec<u64>);

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

/// The growth state of a [`HashIndex`].
pub(super) struct Growth {
    /// Every level made; `levels[0]` is the first. Freed when the index is
    /// dropped.
    pub(super) levels: [AtomicPtr<Level>; MAX_LEVELS],
    /// Sampled estimate of the versions linked.
    pub(super) count: CachePadded<AtomicI64>,
    pub(super) phase: Mutex<Phase>,
}

/// A position on a chain that links to the next node: a bucket word or a
/// version's link.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pos {
    Head,
    Node(*mut Version),
}

impl HashIndex {
    /// A sampled version was linked (`d` 1) or unlinked (-1); a sampled
    /// insert checks the load and helps a growth along.
    #[cold]
    pub(super) fn counted(&self, d: i64) {
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
        n >= MIN_GROW && n as u64 > b && 2 * b <= MAX_BUCKETS
    }

    /// [`HashIndex::unlink`] and [`HashIndex::unlink_set`]: bypasses the
    /// members of `set` in the chains of `hash`. Returns how many it found
    /// and how far the walk went to the first.
    ///
    /// # Safety
    /// As for `unlink_set`.
    pub(super) unsafe fn remove(&self, hash: u64, set: &[*mut Version]) -> (usize, usize) {
        let l = self.current();
        // SAFETY: forwarded contract.
        unsafe { self.remove_class(l, hash & l.mask, set) }
    }

    /// `remove` for the versions whose hash falls in bucket `b` of level `l`.
    ///
    /// # Safety
    /// As for `unlink_set`.
    pub(super) unsafe fn remove_class(&self, l: &Level, b: u64, set: &[*mut Version]) -> (usize, usize) {
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
    pub(super) fn help(&self) {
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

    /// Drives a growth under way along for at most `budget`, stepping as
    /// `help` does and letting grace periods pass in between: for quiet
    /// moments, when no inserts drive it (after a bulk load, lookups walk
    /// the zipped chains' foreign versions until unzipping ends). True if
    /// it is still under way. The caller must not be pinned.
    pub fn advance_growth(&self, budget: std::time::Duration) -> bool {
        let start = std::time::Instant::now();
        // Relaxed: a hint; `help` decides under its lock.
        while self.growing.load(Ordering::Relaxed) {
            if start.elapsed() >= budget {
                return true;
            }
            self.help();
            // Flushing and re-pinning lets the epoch (and the grace marker) advance.
            crossbeam_epoch::pin().flush();
        }
        false
    }

    /// Drives any growth under way, and any the load calls for, to its
    /// end, waiting for grace periods. For tests and quiet moments; the
    /// caller must not be pinned.
    #[cfg(test)]
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
