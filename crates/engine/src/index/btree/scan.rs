//! Range scans of the B+tree, forwards and backwards.
//!
//! A scan reads one leaf at a time: it descends to the leaf, copies its
//! entry pointers, key heads and prefix word into a stack buffer (and
//! finds its first entry there by a binary search), validates the leaf
//! and every node of the path to it, and only then calls the visitor, on
//! entries that stay alive under the caller's guard (no node read is in
//! flight while the visitor runs, and nothing is allocated). Validating
//! the whole path makes the leaf's fences (the nearest separators above
//! and below it on the path) exact at the moment the leaf was read: every
//! key of the tree between them was in the buffer. The scan then descends
//! again for the keys above the upper fence (below the lower fence,
//! backwards), so it sees each key present throughout the scan exactly
//! once, in order; keys inserted or removed meanwhile may or may not be
//! seen.

use super::lock::Restart;
use super::node::{place, Entry, Leaf, Place, LEAF_CAP};
use super::{BTree, Path, Step, Target, TreeKey};
use crossbeam_epoch::Guard;
use std::cmp::Ordering as Cmp;
use std::ops::Bound;
use std::ptr;

/// A bound a key is checked against, with its first 8 bytes for placing it
/// against a leaf's prefix ([`Limit::place`]).
struct Limit<'k, K> {
    key: &'k K,
    head: u64,
    /// The bound's key itself passes.
    inclusive: bool,
}

impl<'k, K: TreeKey> Limit<'k, K> {
    fn new(b: Bound<&'k K>) -> Option<Limit<'k, K>> {
        match b {
            Bound::Included(k) => Some(Limit { key: k, head: k.head(), inclusive: true }),
            Bound::Excluded(k) => Some(Limit { key: k, head: k.head(), inclusive: false }),
            Bound::Unbounded => None,
        }
    }

    /// The bound against a leaf of prefix word `word`, for the tests below
    /// on that leaf's keys and heads.
    #[inline]
    fn place(&self, word: u64) -> Place {
        place(self.key, self.head, word)
    }

    /// How a key of head `h` in a leaf where the bound is `at` compares
    /// with the bound.
    #[inline]
    fn cmp(&self, at: Place, h: u64, k: &K) -> Cmp {
        match at {
            // The bound is below (above) every key of the leaf.
            Place::Below => Cmp::Greater,
            Place::Above => Cmp::Less,
            Place::At(bh) => match h.cmp(&bh) {
                Cmp::Equal => k.cmp(self.key),
                c => c,
            },
        }
    }

    /// True if a key of head `h` is at or below the bound (as an upper bound).
    #[inline]
    fn admits_below(&self, at: Place, h: u64, k: &K) -> bool {
        match self.cmp(at, h, k) {
            Cmp::Less => true,
            Cmp::Equal => self.inclusive,
            Cmp::Greater => false,
        }
    }

    /// True if a key of head `h` is at or above the bound (as a lower bound).
    #[inline]
    fn admits_above(&self, at: Place, h: u64, k: &K) -> bool {
        match self.cmp(at, h, k) {
            Cmp::Greater => true,
            Cmp::Equal => self.inclusive,
            Cmp::Less => false,
        }
    }
}

/// One leaf's entries as read and validated, its prefix word, and its fences.
struct Snapshot<K, V> {
    n: usize,
    prefix: u64,
    heads: [u64; LEAF_CAP],
    entries: [*const Entry<K, V>; LEAF_CAP],
    lower: *const K,
    upper: *const K,
}

impl<K, V> Snapshot<K, V> {
    /// How many of the first entries `below` holds for, `below` holding for
    /// a prefix of them (a binary search: the scan's first or last entry).
    fn count_below(&self, mut below: impl FnMut(u64, &K) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            // SAFETY: a validated entry of the leaf, alive under the guard
            // of the scan that read it (see `BTree::range`).
            let e: &Entry<K, V> = unsafe { &*self.entries[mid] };
            if below(self.heads[mid], &e.key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl<K: TreeKey, V> Snapshot<K, V> {
    /// Copies `leaf`'s heads, entries and prefix word into the snapshot's
    /// arrays and validates them against the leaf's version `v`; returns
    /// its count and prefix word, which the caller stores with the leaf's
    /// fences once everything else it read is validated too.
    fn copy(&mut self, leaf: &Leaf<K, V>, v: u64) -> Result<(usize, u64), Restart> {
        let n = leaf.count()?;
        let prefix = leaf.hdr.prefix();
        for i in 0..n {
            self.heads[i] = leaf.head(i);
            self.entries[i] = leaf.entry(i);
        }
        leaf.hdr.lock.validate(v)?;
        Ok((n, prefix))
    }
}

impl<K: TreeKey, V> BTree<K, V> {
    /// Reads the leaf of `t` consistently into `s` (restarting as needed).
    fn read_leaf(&self, t: Target<'_, K>, path: &mut Path<K>, s: &mut Snapshot<K, V>) {
        loop {
            if self.try_read_leaf(t, path, s).is_ok() {
                return;
            }
        }
    }

    fn try_read_leaf(&self, t: Target<'_, K>, path: &mut Path<K>, s: &mut Snapshot<K, V>) -> Result<(), Restart> {
        let r = self.descend(t, path)?;
        // SAFETY: nodes are freed only through the epoch; the caller is pinned.
        let (n, prefix) = s.copy(unsafe { &*r.leaf }, r.version)?;
        path.validate()?;
        s.n = n;
        s.prefix = prefix;
        s.lower = r.lower;
        s.upper = r.upper;
        Ok(())
    }

    /// Reads into `s` the leaf after (`forward`) or before the one in `s`
    /// through their parent, the last node of `path`, without a descent
    /// from the root: when the parent is unchanged since the descent that
    /// read it, and the sibling is neither its first nor its last child,
    /// the parent's separators on either side of the sibling are its exact
    /// fences (a parent's first and last children have a fence above the
    /// parent). False when it cannot (the caller descends again).
    fn read_sibling(&self, path: &mut Path<K>, s: &mut Snapshot<K, V>, forward: bool) -> bool {
        self.try_read_sibling(path, s, forward).unwrap_or(false)
    }

    fn try_read_sibling(&self, path: &mut Path<K>, s: &mut Snapshot<K, V>, forward: bool) -> Result<bool, Restart> {
        let Some(step) = path.last() else { return Ok(false) };
        // SAFETY: nodes are freed only through the epoch; the caller is pinned.
        let parent = unsafe { &*step.node };
        let n = parent.count()?;
        let pos = match forward {
            true if step.pos + 2 < n => step.pos + 1,
            false if step.pos >= 2 => step.pos - 1,
            _ => return Ok(false),
        };
        let (lower, upper, child) = (parent.key(pos - 1), parent.key(pos), parent.child(pos));
        parent.hdr.lock.validate(step.version)?;
        // SAFETY: validated: a live child of the parent.
        let v = unsafe { &*child }.lock.read()?;
        // Lock coupling, as in `descend`.
        parent.hdr.lock.validate(step.version)?;
        // SAFETY: as above.
        debug_assert!(unsafe { &*child }.leaf, "a leaf's parent has only leaves");
        // SAFETY: a child of a leaf's parent, so a leaf (all leaves are at
        // one depth); header first.
        let (n, prefix) = s.copy(unsafe { &*child.cast::<Leaf<K, V>>() }, v)?;
        s.n = n;
        s.prefix = prefix;
        s.lower = lower;
        s.upper = upper;
        path.set_last(Step { pos, ..step });
        Ok(true)
    }

    /// Calls `f` on every entry with a key within (`lo`, `hi`) in ascending
    /// order, until `f` returns false.
    pub(crate) fn range(&self, lo: Bound<&K>, hi: Bound<&K>, _guard: &Guard, mut f: impl FnMut(&K, &V) -> bool) {
        let hi = Limit::new(hi);
        let mut from = Limit::new(lo);
        let mut path = Path::new();
        let mut s = Snapshot {
            n: 0,
            prefix: 0,
            heads: [0; LEAF_CAP],
            entries: [ptr::null(); LEAF_CAP],
            lower: ptr::null(),
            upper: ptr::null(),
        };
        // The leaf in `s` was reached from the one before through their parent.
        let mut stepped = false;
        loop {
            if !stepped {
                let target = match &from {
                    None => Target::First,
                    Some(l) if l.inclusive => Target::AtLeast(l.key, l.head),
                    Some(l) => Target::Above(l.key, l.head),
                };
                self.read_leaf(target, &mut path, &mut s);
            }
            let hi_at = hi.as_ref().map(|l| l.place(s.prefix));
            let first = match &from {
                // A sibling's keys are all above the last leaf's upper fence.
                Some(_) if stepped => 0,
                Some(l) => {
                    let at = l.place(s.prefix);
                    s.count_below(|h, k| !l.admits_above(at, h, k))
                }
                None => 0,
            };
            for i in first..s.n {
                // SAFETY: a validated entry of the leaf: alive until an epoch
                // passes after its removal, so for as long as the guard.
                let e: &Entry<K, V> = unsafe { &*s.entries[i] };
                let h = s.heads[i];
                if hi.as_ref().zip(hi_at).is_some_and(|(l, at)| !l.admits_below(at, h, &e.key)) || !f(&e.key, &e.value)
                {
                    return;
                }
            }
            if s.upper.is_null() {
                return;
            }
            // SAFETY: a validated separator: immutable, alive until an epoch
            // passes after it leaves its node, so for as long as the guard.
            let up: &K = unsafe { &*s.upper };
            from = Some(Limit { key: up, head: up.head(), inclusive: false });
            stepped = self.read_sibling(&mut path, &mut s, true);
        }
    }

    /// Calls `f` on every entry with a key within (`lo`, `hi`) in descending
    /// order, until `f` returns false.
    pub(crate) fn range_rev(&self, lo: Bound<&K>, hi: Bound<&K>, _guard: &Guard, mut f: impl FnMut(&K, &V) -> bool) {
        let lo = Limit::new(lo);
        let mut to = Limit::new(hi);
        let mut path = Path::new();
        let mut s = Snapshot {
            n: 0,
            prefix: 0,
            heads: [0; LEAF_CAP],
            entries: [ptr::null(); LEAF_CAP],
            lower: ptr::null(),
            upper: ptr::null(),
        };
        // As in `range`.
        let mut stepped = false;
        loop {
            if !stepped {
                // The leaf holding `to` if present holds the keys just below it too.
                let target = match &to {
                    None => Target::Last,
                    Some(l) => Target::AtLeast(l.key, l.head),
                };
                self.read_leaf(target, &mut path, &mut s);
            }
            let lo_at = lo.as_ref().map(|l| l.place(s.prefix));
            let end = match &to {
                // A sibling's keys are all at or below the last leaf's lower fence.
                Some(_) if stepped => s.n,
                Some(l) => {
                    let at = l.place(s.prefix);
                    s.count_below(|h, k| l.admits_below(at, h, k))
                }
                None => s.n,
            };
            for i in (0..end).rev() {
                // SAFETY: as in `range`.
                let e: &Entry<K, V> = unsafe { &*s.entries[i] };
                let h = s.heads[i];
                if lo.as_ref().zip(lo_at).is_some_and(|(l, at)| !l.admits_above(at, h, &e.key)) || !f(&e.key, &e.value)
                {
                    return;
                }
            }
            if s.lower.is_null() {
                return;
            }
            // SAFETY: as in `range`.
            let low: &K = unsafe { &*s.lower };
            to = Some(Limit { key: low, head: low.head(), inclusive: true });
            stepped = self.read_sibling(&mut path, &mut s, false);
        }
    }
}
