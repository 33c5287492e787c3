//! The ordered index: a concurrent skip list (crossbeam-skiplist) mapping an
//! index key to a [`Slot`], the head of the chain of versions carrying that
//! key (linked through the index's version link, as the hash index does).
//!
//! Entries are keyed by `(key, pk)`: for the primary index `pk` is empty; for
//! a non-unique secondary index it is the row's primary key, which makes every
//! entry unique and keeps equal secondary keys adjacent. A chain therefore
//! holds the versions of one row.
//!
//! A new row's version is pushed at the head of its chain (`insert`); the
//! new version of an updated row whose key is unchanged is spliced in right
//! after the version it replaces (`insert_after`), which needs no skip-list
//! search. Readers take the visible version wherever it sits in the chain.
//!
//! A slot whose chain becomes empty is retired by garbage collection: the
//! unlinker, holding the chain's stripe lock, swaps the null head for the
//! `DEAD` marker and removes the entry. An inserter that finds `DEAD` waits for
//! the removal and inserts a fresh entry, so no version is ever published
//! into a slot that has left the map.

use super::Stripes;
use crate::key::Key;
use crate::storage::version::Version;
use crossbeam_skiplist::base::SkipList;
use std::ops::Bound;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

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

/// An ordered index over the versions of one table.
pub struct OrderedIndex {
    /// The skip list itself, not crossbeam's `SkipMap` wrapper: lookups and
    /// scans borrow entries under an epoch guard instead of counting
    /// references on them (two atomic read-modify-writes per entry).
    map: SkipList<IKey, Slot>,
    link: usize,
    stripes: Stripes,
}

fn ikey_hash(k: &IKey) -> u64 {
    k.0.hash64() ^ k.1.hash64().rotate_left(17)
}

impl OrderedIndex {
    /// An empty index owning version link `link`.
    pub fn new(link: usize) -> OrderedIndex {
        OrderedIndex { map: SkipList::new(crossbeam_epoch::default_collector().clone()), link, stripes: Stripes::new() }
    }

    /// Number of entries (distinct index keys with a chain).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no entry exists.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The version after `v` in this index's chain.
    #[inline]
    pub fn next(&self, v: &Version) -> *mut Version {
        // Acquire: the successor was published by a Release CAS/store.
        v.link(self.link).load(Ordering::Acquire)
    }

    /// Head of the chain for exactly `k` (null if none).
    pub fn head(&self, k: &IKey) -> *mut Version {
        // Epoch pin (nested in the caller's, so cheap): the entry stays allocated.
        let guard = &crossbeam_epoch::pin();
        self.map.get(k, guard).map_or(ptr::null_mut(), |e| e.value().head())
    }

    /// Calls `f(key, head)` for every entry with `lo <= key.0` (per `lo`) in key
    /// order, until `f` returns false or the key passes `hi`.
    pub fn range(&self, lo: Bound<&Key>, hi: Bound<&Key>, mut f: impl FnMut(&IKey, *mut Version) -> bool) {
        let start = match lo {
            Bound::Included(k) | Bound::Excluded(k) => Bound::Included((*k, Key::EMPTY)),
            Bound::Unbounded => Bound::Unbounded,
        };
        // Epoch pin: entries met by the scan stay allocated until it ends.
        let guard = &crossbeam_epoch::pin();
        for e in self.map.range((start, Bound::Unbounded), guard) {
            let k = e.key();
            if let Bound::Excluded(l) = lo {
                if k.0 == *l {
                    continue;
                }
            }
            let past = match hi {
                Bound::Included(h) => k.0 > *h,
                Bound::Excluded(h) => k.0 >= *h,
                Bound::Unbounded => false,
            };
            if past || !f(k, e.value().head()) {
                return;
            }
        }
    }

    /// Publishes `v` at the head of the chain for `k`.
    ///
    /// # Safety
    /// `v` is a live version not yet linked into this index.
    pub unsafe fn insert(&self, v: *mut Version, k: IKey) {
        // SAFETY: `v` is live and this link is still private to the caller.
        let link = unsafe { (*v).link(self.link) };
        // Epoch pin: the entry stays allocated while we use it.
        let guard = &crossbeam_epoch::pin();
        loop {
            let e = self.map.get_or_insert_with(k, || Slot { head: AtomicPtr::new(ptr::null_mut()) }, guard);
            let slot = e.value();
            let mut head = slot.head.load(Ordering::Relaxed);
            loop {
                if head == DEAD {
                    break; // retired: wait for its removal, then use a fresh entry
                }
                // Relaxed: `v` is unreachable until the Release CAS below.
                link.store(head, Ordering::Relaxed);
                // Release: publish `v` with its contents. Relaxed on failure: retry.
                match slot.head.compare_exchange_weak(head, v, Ordering::Release, Ordering::Relaxed) {
                    Ok(_) => {
                        e.release(guard);
                        return;
                    }
                    Err(h) => head = h,
                }
            }
            e.release(guard);
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
        // Release: publish `v` with its contents to readers walking the chain.
        ol.store(v, Ordering::Release);
    }

    /// Removes `v` from the chain of `k`, retiring the entry if the chain empties.
    ///
    /// # Safety
    /// `v` is live (caller holds an epoch guard) and linked under `k`; it is
    /// freed only after an epoch has passed.
    pub unsafe fn unlink(&self, v: *mut Version, k: &IKey) -> bool {
        let _g = self.stripes.lock(ikey_hash(k));
        // Epoch pin: the entry stays allocated while we use it.
        let guard = &crossbeam_epoch::pin();
        let Some(e) = self.map.get(k, guard) else { return false };
        let slot = e.value();
        // SAFETY: `v` is live per the contract.
        let succ = unsafe { (*v).link(self.link).load(Ordering::Acquire) };
        let mut found = false;
        // Release: publish the bypass; Acquire on failure: walk from the fresh head.
        if slot.head.compare_exchange(v, succ, Ordering::Release, Ordering::Acquire).is_ok() {
            found = true;
        } else {
            let mut prev = slot.head.load(Ordering::Acquire);
            while !prev.is_null() && prev != DEAD {
                // SAFETY: chain members stay alive under the caller's epoch guard.
                let pl = unsafe { (*prev).link(self.link) };
                let cur = pl.load(Ordering::Acquire);
                if cur == v {
                    // Release: publish the bypass to readers.
                    pl.store(succ, Ordering::Release);
                    found = true;
                    break;
                }
                prev = cur;
            }
        }
        // AcqRel: retiring must not race an insert's CAS on the same head word.
        if slot.head.compare_exchange(ptr::null_mut(), DEAD, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            e.remove();
        }
        found
    }

    /// Calls `f` on every chain head (used when dropping the database).
    pub fn for_each_head(&self, mut f: impl FnMut(*mut Version)) {
        let guard = &crossbeam_epoch::pin();
        for e in self.map.iter(guard) {
            f(e.value().head());
        }
    }
}
