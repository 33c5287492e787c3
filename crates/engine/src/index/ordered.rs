//! The ordered index: concurrent ordered maps (a skip list or a B+tree,
//! see [`entries`]) from an index key to a [`Slot`], the head of the chain
//! of versions carrying that key (linked through the index's version link,
//! as the hash index does).
//!
//! Entries are keyed by `(key, pk)`: for the primary index `pk` is empty; for
//! a non-unique secondary index it is the row's primary key, which makes every
//! entry unique and keeps equal secondary keys adjacent. A chain therefore
//! holds the versions of one row.
//!
//! **Groups.** An index may group its entries by the first `prefix` bytes of
//! the key (all of a shorter key): each group is a map of its own, the
//! groups sit in an outer skip list in key order, and a small hash table
//! (the *front*) finds a group by its prefix. A point lookup, an insert, or
//! a scan inside one prefix then hashes to its group and searches only the
//! group's entries, instead of searching every entry of the index: a random
//! insert into a skip list of n entries visits about 2 log2(n) nodes, most
//! of them cache misses once the index outgrows the cache (TPC-C's orders of
//! one customer, customers of one last name); a B+tree visits fewer, larger
//! nodes, and gains less from grouping. Groups are kept in prefix order,
//! and every key of a group starts with its prefix (or is it, when shorter),
//! so walking the groups in order and each group's entries in order visits
//! all entries in key order: scans across prefixes stay correct. Groups are
//! never removed (their number is bounded by the distinct prefixes); an
//! index without grouping (`prefix` 0) has a single group.
//!
//! A new row's version is pushed at the head of its chain (`insert`); the
//! new version of an updated row whose key is unchanged is spliced in right
//! after the version it replaces (`insert_after`), which needs no search
//! of the map. Readers take the visible version wherever it sits in the chain.
//!
//! Every version also records, in a word of its own, the slot of its chain
//! (set before the version is published, copied by `insert_after`): garbage
//! collection unlinks a version from that slot directly, with no search.
//!
//! A slot whose chain becomes empty is retired by garbage collection: the
//! unlinker, holding the chain's stripe lock, swaps the null head for the
//! `DEAD` marker and removes the entry. An inserter that finds `DEAD` waits for
//! the removal and inserts a fresh entry, so no version is ever published
//! into a slot that has left the map.

use super::Stripes;
use crate::key::Key;
use crate::storage::version::Version;
use crate::sync::atomic::{AtomicPtr, Ordering};
use crossbeam_skiplist::base::SkipList;
use std::ops::Bound;
use std::ptr;

mod entries;

use entries::Entries;
pub use entries::OrderedMap;

/// An entry key: (index key, primary key or empty).
pub type IKey = (Key, Key);

/// Marks a retired slot: the dangling (aligned, non-null) address, which no
/// allocation ever returns.
const DEAD: *mut Version = ptr::dangling_mut();

/// Head of the version chain of one index key.
pub struct Slot {
    head: AtomicPtr<Version>,
}

impl Slot {
    /// A slot with an empty chain.
    fn empty() -> Slot {
        Slot { head: AtomicPtr::new(ptr::null_mut()) }
    }

    /// First version of the chain (null if empty or retired).
    #[inline]
    pub fn head(&self) -> *mut Version {
        // Acquire: pairs with the Release CAS in `insert`.
        let h = self.head.load(Ordering::Acquire);
        if h == DEAD {
            ptr::null_mut()
        } else {
            h
        }
    }
}

/// The entries of one key prefix.
///
/// `repr(C)`, key and `next` first: a walk of a front bucket's chain reads
/// only these two, and they share the group's first cache line. (Left to
/// itself the compiler put the key after a skip list, 520 bytes in, and
/// `next` on another line: two misses per group passed.)
#[repr(C)]
struct Group {
    /// The prefix (the whole key for keys shorter than the index's prefix).
    key: Key,
    /// The next group in the same front bucket (set before publication).
    next: AtomicPtr<Group>,
    list: Entries,
}

/// Front buckets of a grouped index (a fixed array; chains grow past it).
const FRONT_BUCKETS: usize = 1 << 16;

/// An ordered index over the versions of one table.
pub struct OrderedIndex {
    /// Bytes of the key that pick its group (0: one group).
    prefix: usize,
    /// The map of each group.
    map: OrderedMap,
    /// Every group, in prefix order. The skip list itself, not crossbeam's
    /// `SkipMap` wrapper: lookups borrow entries under an epoch guard
    /// instead of counting references on them (two atomic
    /// read-modify-writes per entry).
    groups: SkipList<Key, Box<Group>>,
    /// Groups by the hash of their prefix: a cache of `groups`, filled by
    /// each group's creator once the group is in `groups`.
    front: Box<[AtomicPtr<Group>]>,
    link: usize,
    /// The version word holding the [`Slot`] of the version's chain here
    /// (stored as a pointer): garbage collection unlinks a version from
    /// its slot without searching for the entry.
    slot_word: usize,
    stripes: Stripes,
}

fn ikey_hash(k: &IKey) -> u64 {
    k.0.hash64() ^ k.1.hash64().rotate_left(17)
}

/// Pushes `v` (whose link in this index is `link`) at the head of `slot`'s
/// chain, `head` being the head last seen; false if the slot is retired
/// (`DEAD`): the caller waits for its removal and uses a fresh entry.
#[inline]
fn push(slot: &Slot, link: &AtomicPtr<Version>, v: *mut Version, mut head: *mut Version) -> bool {
    loop {
        if head == DEAD {
            return false;
        }
        // Relaxed: `v` is unreachable until the Release CAS below.
        link.store(head, Ordering::Relaxed);
        // Release: publish `v` with its contents. Relaxed on failure: retry.
        match slot.head.compare_exchange_weak(head, v, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(h) => head = h,
        }
    }
}

impl OrderedIndex {
    /// An empty index owning version link `link`, grouping its entries by
    /// the first `prefix` bytes of their keys (0: no grouping), each group
    /// in a `map`.
    pub fn new(link: usize, slot_word: usize, prefix: usize, map: OrderedMap) -> OrderedIndex {
        let buckets = if prefix == 0 { 1 } else { FRONT_BUCKETS };
        OrderedIndex {
            prefix,
            map,
            groups: SkipList::new(crossbeam_epoch::default_collector().clone()),
            front: (0..buckets).map(|_| AtomicPtr::new(ptr::null_mut())).collect(),
            link,
            slot_word,
            stripes: Stripes::new(),
        }
    }

    /// Number of entries (distinct index keys with a chain).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        let guard = &crossbeam_epoch::pin();
        self.groups.iter(guard).map(|g| g.value().list.len()).sum()
    }

    /// The group prefix of an index key.
    #[inline]
    fn group_key(&self, k: &Key) -> Key {
        if self.prefix == 0 {
            Key::EMPTY
        } else if k.len() <= self.prefix {
            k.clone()
        } else {
            Key::from_bytes(&k.as_bytes()[..self.prefix]).expect("a prefix of a key fits")
        }
    }

    #[inline]
    fn bucket(&self, gk: &Key) -> &AtomicPtr<Group> {
        &self.front[gk.hash64() as usize & (self.front.len() - 1)]
    }

    /// The group of prefix `gk`, if it exists.
    #[inline]
    fn find_group(&self, gk: &Key) -> Option<&Group> {
        // Acquire: pairs with the Release CAS that published the group.
        let mut p = self.bucket(gk).load(Ordering::Acquire);
        while !p.is_null() {
            // SAFETY: groups are never freed before the index is dropped.
            let g = unsafe { &*p };
            if g.key == *gk {
                return Some(g);
            }
            // Acquire: as above.
            p = g.next.load(Ordering::Acquire);
        }
        // Not in the front (yet): its creator may still be publishing it.
        let guard = &crossbeam_epoch::pin();
        let e = self.groups.get(gk, guard)?;
        let g: *const Group = &**e.value();
        // SAFETY: groups are never removed from `groups` nor freed before
        // the index is dropped, so the borrow may outlive the guard.
        Some(unsafe { &*g })
    }

    /// The group of prefix `gk`, created if missing.
    fn group(&self, gk: &Key) -> &Group {
        if let Some(g) = self.find_group(gk) {
            return g;
        }
        let guard = &crossbeam_epoch::pin();
        let mut mine: *const Group = ptr::null();
        let e = self.groups.get_or_insert_with(
            gk.clone(),
            || {
                let g = Box::new(Group {
                    key: gk.clone(),
                    list: Entries::new(self.map),
                    next: AtomicPtr::new(ptr::null_mut()),
                });
                mine = &*g;
                g
            },
            guard,
        );
        let g: *const Group = &**e.value();
        e.release(guard);
        if ptr::eq(g, mine) {
            // We created it: we alone publish it in the front, once.
            let b = self.bucket(gk);
            // Relaxed: the Release CAS below publishes the group.
            let mut head = b.load(Ordering::Relaxed);
            loop {
                // SAFETY: our group, not yet in the front: nobody else writes `next`.
                unsafe { &*g }.next.store(head, Ordering::Relaxed);
                // Release: readers that Acquire the bucket see the group's fields.
                match b.compare_exchange_weak(head, g as *mut Group, Ordering::Release, Ordering::Relaxed) {
                    Ok(_) => break,
                    Err(h) => head = h,
                }
            }
        }
        // SAFETY: groups are never removed nor freed before the index is dropped.
        unsafe { &*g }
    }

    /// Records in `v` the slot whose chain it is about to join.
    #[inline]
    fn set_slot(&self, v: &Version, slot: &Slot) {
        // Relaxed: published with `v` by the Release CAS that links it.
        v.link(self.slot_word).store(slot as *const Slot as *mut Version, Ordering::Relaxed);
    }

    /// The version after `v` in this index's chain.
    #[inline]
    pub fn next(&self, v: &Version) -> *mut Version {
        // Acquire: the successor was published by a Release CAS/store.
        v.link(self.link).load(Ordering::Acquire)
    }

    /// Head of the chain for exactly `k` (null if none).
    pub fn head(&self, k: &IKey) -> *mut Version {
        let Some(g) = self.find_group(&self.group_key(&k.0)) else { return ptr::null_mut() };
        // Epoch pin (nested in the caller's, so cheap): the entry stays allocated.
        let guard = &crossbeam_epoch::pin();
        g.list.get(k, guard).map_or(ptr::null_mut(), Slot::head)
    }

    /// Calls `f(key, head)` for every entry with `lo <= key.0` (per `lo`) in key
    /// order, until `f` returns false or the key passes `hi`.
    pub fn range(&self, lo: Bound<&Key>, hi: Bound<&Key>, mut f: impl FnMut(&IKey, *mut Version) -> bool) {
        let start = match lo {
            Bound::Included(k) | Bound::Excluded(k) => Bound::Included((k.clone(), Key::EMPTY)),
            Bound::Unbounded => Bound::Unbounded,
        };
        // Groups before the one of `lo` hold only keys below it.
        let first = match lo {
            Bound::Included(k) | Bound::Excluded(k) => Bound::Included(self.group_key(k)),
            Bound::Unbounded => Bound::Unbounded,
        };
        // Within one prefix (the common scan), no walk over the groups.
        let single = self.in_one_group(lo, hi);
        // Epoch pin: entries met by the scan stay allocated until it ends.
        let guard = &crossbeam_epoch::pin();
        let mut visit = |g: &Group| -> bool {
            g.list.range(start.as_ref(), guard, |k, slot| {
                if let Bound::Excluded(l) = lo {
                    if k.0 == *l {
                        return true;
                    }
                }
                let past = match hi {
                    Bound::Included(h) => k.0 > *h,
                    Bound::Excluded(h) => k.0 >= *h,
                    Bound::Unbounded => false,
                };
                !past && f(k, slot.head())
            })
        };
        if single {
            if let Bound::Included(gk) = first {
                if let Some(g) = self.find_group(&gk) {
                    visit(g);
                }
            }
            return;
        }
        for e in self.groups.range((first, Bound::Unbounded), guard) {
            if !visit(e.value()) {
                return;
            }
        }
    }

    /// Calls `f(key, head)` for every entry with `key.0 <= hi` (per `hi`) in
    /// descending key order, until `f` returns false or the key passes below
    /// `lo`: [`OrderedIndex::range`] walked backwards (reverse scans).
    pub fn range_rev(&self, lo: Bound<&Key>, hi: Bound<&Key>, mut f: impl FnMut(&IKey, *mut Version) -> bool) {
        // Every entry of key `k` is `(k, pk)` with `EMPTY <= pk <= MAX`.
        let end = match hi {
            Bound::Included(k) => Bound::Included((k.clone(), Key::MAX)),
            Bound::Excluded(k) => Bound::Excluded((k.clone(), Key::EMPTY)),
            Bound::Unbounded => Bound::Unbounded,
        };
        // Groups after the one of `hi` hold only keys above it.
        let last = match hi {
            Bound::Included(k) | Bound::Excluded(k) => Bound::Included(self.group_key(k)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let single = self.in_one_group(lo, hi);
        // Epoch pin: entries met by the scan stay allocated until it ends.
        let guard = &crossbeam_epoch::pin();
        let mut visit = |g: &Group| -> bool {
            g.list.range_rev(end.as_ref(), guard, |k, slot| {
                let past = match lo {
                    Bound::Included(l) => k.0 < *l,
                    Bound::Excluded(l) => k.0 <= *l,
                    Bound::Unbounded => false,
                };
                !past && f(k, slot.head())
            })
        };
        if single {
            // `in_one_group` holds only for a bounded `lo`, whose group it is.
            if let Bound::Included(l) | Bound::Excluded(l) = lo {
                if let Some(g) = self.find_group(&self.group_key(l)) {
                    visit(g);
                }
            }
            return;
        }
        for e in self.groups.range((Bound::Unbounded, last), guard).rev() {
            if !visit(e.value()) {
                return;
            }
        }
    }

    /// True if every key between the bounds has the group prefix of `lo`:
    /// `lo` is at least a prefix long and `hi` stops before the first key
    /// past that prefix (`Key::prefix_end`), as in a scan of one prefix.
    fn in_one_group(&self, lo: Bound<&Key>, hi: Bound<&Key>) -> bool {
        let (Bound::Included(l) | Bound::Excluded(l)) = lo else { return false };
        if self.prefix == 0 {
            return true;
        }
        if l.len() < self.prefix {
            return false;
        }
        match (self.group_key(l).prefix_end(), hi) {
            // No key is past the prefix: all of them start with it.
            (None, _) => true,
            (Some(e), Bound::Excluded(h)) => *h <= e,
            (Some(e), Bound::Included(h)) => *h < e,
            (Some(_), Bound::Unbounded) => false,
        }
    }

    /// Publishes `v` at the head of the chain for `k`.
    ///
    /// # Safety
    /// `v` is a live version not yet linked into this index.
    pub unsafe fn insert(&self, v: *mut Version, k: IKey) {
        // SAFETY: forwarded contract. With nothing to check (the chain of a
        // new entry is empty anyway), `v` is always published.
        let published = unsafe { self.insert_if(v, k, |_| true) };
        debug_assert!(published);
    }

    /// Publishes `v` at the head of the chain for `k` unless `check`,
    /// called on the versions already in that chain (newest first), returns
    /// false; returns whether `v` was published. One search finds (or
    /// creates) the entry for both the check and the link: an insert into
    /// an ordered primary index checks the key's existing versions first.
    /// Versions linked between the check and the link are not checked: the
    /// caller looks at them afterwards, from `v` on.
    ///
    /// # Safety
    /// `v` is a live version not yet linked into this index.
    pub unsafe fn insert_if(&self, v: *mut Version, k: IKey, mut check: impl FnMut(&Version) -> bool) -> bool {
        // SAFETY: `v` is live and this link is still private to the caller.
        let link = unsafe { (*v).link(self.link) };
        let g = self.group(&self.group_key(&k.0));
        // Epoch pin: the entry and the chain stay allocated while we use them.
        let guard = &crossbeam_epoch::pin();
        loop {
            let slot = g.list.get_or_insert(k.clone(), guard);
            // Acquire: the chain's versions are read below.
            let head = slot.head.load(Ordering::Acquire);
            let mut p = head;
            while !p.is_null() && p != DEAD {
                // SAFETY: chain members are freed only after an epoch has passed.
                let w = unsafe { &*p };
                if !check(w) {
                    return false;
                }
                p = self.next(w);
            }
            // SAFETY: `v` is live and still private to the caller.
            self.set_slot(unsafe { &*v }, slot);
            if push(slot, link, v, head) {
                return true;
            }
            std::thread::yield_now();
        }
    }

    /// Publishes `v` right after `old` in the chain of `k`: the new version
    /// of an updated row whose key in this index did not change. No
    /// skip-list search: `old`'s own link is the place. Chains of an ordered
    /// index hold the versions of one row (the entry key includes the
    /// primary key), and a reader takes the visible version wherever it is
    /// in the chain, so the order within a chain does not matter.
    ///
    /// # Safety
    /// `v` is a live version not yet linked into this index; `old` is linked
    /// under `k`, and cannot be unlinked before this returns (the caller
    /// holds its write lock, so garbage collection cannot reach it).
    pub unsafe fn insert_after(&self, old: *mut Version, v: *mut Version, k: &IKey) {
        // Every store to a published link happens under the chain's stripe
        // lock (here and in `unlink`), so no unlinker can bypass `old`'s
        // successor while we splice in front of it.
        let _g = self.stripes.lock(ikey_hash(k));
        // SAFETY: both are live per the contract; `v`'s link is still private.
        let (ol, vl) = unsafe { ((*old).link(self.link), (*v).link(self.link)) };
        // Acquire: the successor as published.
        let succ = ol.load(Ordering::Acquire);
        // Relaxed: `v` is unreachable until the Release store below.
        vl.store(succ, Ordering::Relaxed);
        // SAFETY: both are live per the contract. Relaxed: `old`'s word was
        // published with `old`; `v`'s is published by the store below.
        unsafe {
            let slot = (*old).link(self.slot_word).load(Ordering::Relaxed);
            (*v).link(self.slot_word).store(slot, Ordering::Relaxed);
        }
        // Release: publish `v` with its contents to readers walking the chain.
        ol.store(v, Ordering::Release);
    }

    /// Removes `v` from the chain of `k`, retiring the entry if the chain
    /// empties; returns how many chain members it walked past to reach it
    /// (0: it was the head), or `None` if it was not found.
    ///
    /// # Safety
    /// `v` is live (caller holds an epoch guard) and linked under `k`; it is
    /// freed only after an epoch has passed.
    pub unsafe fn unlink(&self, v: *mut Version, k: &IKey) -> Option<usize> {
        let _g = self.stripes.lock(ikey_hash(k));
        let slot = self.slot_of(v)?;
        // SAFETY: `v` is live per the contract.
        let succ = unsafe { (*v).link(self.link).load(Ordering::Acquire) };
        let mut found = None;
        // Release: publish the bypass; Acquire on failure: walk from the fresh head.
        if slot.head.compare_exchange(v, succ, Ordering::Release, Ordering::Acquire).is_ok() {
            found = Some(0);
        } else {
            let mut prev = slot.head.load(Ordering::Acquire);
            let mut steps = 1;
            while !prev.is_null() && prev != DEAD {
                // SAFETY: chain members stay alive under the caller's epoch guard.
                let pl = unsafe { (*prev).link(self.link) };
                let cur = pl.load(Ordering::Acquire);
                if cur == v {
                    // Release: publish the bypass to readers.
                    pl.store(succ, Ordering::Release);
                    found = Some(steps);
                    break;
                }
                prev = cur;
                steps += 1;
            }
        }
        self.retire_if_empty(slot, k);
        found
    }

    /// Removes every version of `set` (sorted by address, all linked under
    /// `k`) from the chain in one walk, retiring the entry if the chain
    /// empties; returns how many it found. As [`super::hash::HashIndex::unlink_set`]:
    /// one walk for a backlog of garbage on one key, not one per version.
    ///
    /// # Safety
    /// As for [`OrderedIndex::unlink`], for every member of `set`.
    pub unsafe fn unlink_set(&self, k: &IKey, set: &[*mut Version]) -> usize {
        debug_assert!(set.is_sorted(), "the set is searched by address");
        let Some(&first) = set.first() else { return 0 };
        let member = |p: *mut Version| !p.is_null() && p != DEAD && set.binary_search(&p).is_ok();
        let _g = self.stripes.lock(ikey_hash(k));
        let Some(slot) = self.slot_of(first) else { return 0 };
        let mut left = set.len();
        // Members at the head go by CAS (Release: publish the bypass;
        // Acquire: the fresh head is walked); an insert prepends only new
        // versions.
        let mut cur = slot.head.load(Ordering::Acquire);
        while left > 0 && member(cur) {
            // SAFETY: members are live per the contract.
            let succ = unsafe { (*cur).link(self.link).load(Ordering::Acquire) };
            match slot.head.compare_exchange(cur, succ, Ordering::Release, Ordering::Acquire) {
                Ok(_) => {
                    left -= 1;
                    cur = succ;
                }
                Err(now) => cur = now,
            }
        }
        let start = if cur == DEAD { ptr::null_mut() } else { cur };
        // SAFETY: the stripe lock is held, the caller is pinned, and the
        // members are in this chain, after its head `start` (not a member).
        left = unsafe { super::bypass_members(start, self.link, set, left) };
        self.retire_if_empty(slot, k);
        set.len() - left
    }

    /// Which chain `v` is in (its slot's address), to group versions by
    /// chain; a linked version stays in its slot's chain.
    pub fn chain_of(&self, v: &Version) -> u64 {
        // Acquire: the slot word was published with `v`.
        v.link(self.slot_word).load(Ordering::Acquire) as u64
    }

    /// The slot whose chain `v` is in (the caller holds the chain's stripe
    /// lock and `v` is live and linked).
    fn slot_of(&self, v: *mut Version) -> Option<&Slot> {
        // Acquire: the slot word was published with `v`.
        // SAFETY: `v` is live per the callers' contracts.
        let sp = unsafe { &*v }.link(self.slot_word).load(Ordering::Acquire) as *const Slot;
        debug_assert!(!sp.is_null(), "a linked version knows its slot");
        // SAFETY: `v` is in this slot's chain, and a slot leaves the index
        // (to be freed after an epoch) only once its chain is empty, which
        // takes the stripe lock the caller holds: it is alive.
        (!sp.is_null()).then(|| unsafe { &*sp })
    }

    /// Retires `slot` (the entry of `k`) if its chain is empty; the caller
    /// holds the stripe lock of `k`.
    fn retire_if_empty(&self, slot: &Slot, k: &IKey) {
        // AcqRel: retiring must not race an insert's CAS on the same head word.
        if slot.head.compare_exchange(ptr::null_mut(), DEAD, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            // Only now a search: the entry leaves the index. No other entry
            // of `k` can be there: an inserter finding our `DEAD` slot
            // waits for this removal before it inserts a fresh one.
            let guard = &crossbeam_epoch::pin();
            if let Some(g) = self.find_group(&self.group_key(&k.0)) {
                debug_assert!(
                    g.list.get(k, guard).is_some_and(|e| ptr::eq(e, slot)),
                    "the retired slot is the entry's"
                );
                g.list.remove(k, guard);
            }
        }
    }

    /// Calls `f` on every chain head (used when dropping the database).
    pub fn for_each_head(&self, mut f: impl FnMut(*mut Version)) {
        let guard = &crossbeam_epoch::pin();
        for g in self.groups.iter(guard) {
            g.value().list.range(Bound::Unbounded, guard, |_, slot| {
                f(slot.head());
                true
            });
        }
    }
}

#[cfg(test)]
mod tests;
