//! Nodes of the B+tree: a header (version lock, count, kind) and arrays of
//! atomics that optimistic readers load between the version reads.
//!
//! Every field a reader may load while a writer changes the node is an
//! atomic: the 8-byte key heads, the entry or separator pointers, the child
//! pointers and the count. What those pointers lead to (entries and
//! separator keys) is immutable once published and freed only through the
//! epoch, so a reader may dereference a pointer it loaded even before it
//! validates: at worst it compares against a key that is no longer there,
//! and the validation that follows throws the decision away.

use super::lock::{Restart, VersionLock};
use super::TreeKey;
use crate::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::cmp::Ordering as Cmp;
use std::ptr;

/// Entries per leaf: 32 heads and 32 pointers, eight cache lines.
///
/// Measured with `examples/index_bench.rs` (1M keys, one thread) against 16
/// and 64 (both capacities alike): 16 lost a third of the throughput of
/// scans of 100 and 1,000 keys; 64 gained on scans of 1,000 but lost a
/// fifth on lookups and inserts (a longer shift per insert, more lines per
/// binary search). 32 was best or close to it in every case.
pub(crate) const LEAF_CAP: usize = 32;
/// Children per inner node (one separator fewer); chosen with [`LEAF_CAP`].
pub(crate) const INNER_CAP: usize = 32;

/// A key and its value, immutable once published; freed through the epoch
/// after it leaves its leaf. Its address is the value's stable address.
pub(crate) struct Entry<K, V> {
    pub(crate) key: K,
    pub(crate) value: V,
}

/// What every node starts with (`repr(C)`: a pointer to a node is a
/// pointer to its header, which says which kind it is).
#[repr(C)]
pub(crate) struct Header {
    pub(crate) lock: VersionLock,
    /// Entries of a leaf, children of an inner node.
    count: AtomicU32,
    /// Set at allocation, never changed: read plainly.
    pub(crate) leaf: bool,
}

impl Header {
    fn new(leaf: bool) -> Header {
        Header { lock: VersionLock::new(), count: AtomicU32::new(0), leaf }
    }

    /// The count as loaded now (optimistic: validate before trusting it).
    #[inline]
    pub(crate) fn count(&self) -> usize {
        // Relaxed: an optimistic read, validated through the version lock.
        self.count.load(Ordering::Relaxed) as usize
    }

    #[inline]
    fn set_count(&self, n: usize) {
        // Relaxed: inside a critical section (ordered by the lock's fences).
        self.count.store(n as u32, Ordering::Relaxed)
    }
}

/// A leaf: sorted entries, with the head of each entry's key inline.
#[repr(C)]
pub(crate) struct Leaf<K, V> {
    pub(crate) hdr: Header,
    heads: [AtomicU64; LEAF_CAP],
    entries: [AtomicPtr<Entry<K, V>>; LEAF_CAP],
}

/// An inner node: `count` children and `count - 1` separators; child `i`
/// holds the keys `k` with `sep[i - 1] < k <= sep[i]` (missing bounds are
/// open). Separator keys are boxes of their own, each owned by the one
/// slot that points to it.
#[repr(C)]
pub(crate) struct Inner<K> {
    pub(crate) hdr: Header,
    heads: [AtomicU64; INNER_CAP],
    keys: [AtomicPtr<K>; INNER_CAP],
    children: [AtomicPtr<Header>; INNER_CAP],
}

/// Compares `k` (head `hk`) with a stored key of head `h` whose full key is
/// at `p` (loaded optimistically): heads first, the full key only when the
/// heads are equal. `Restart` for a null pointer (a torn read).
#[inline]
fn cmp_stored<K: TreeKey>(k: &K, hk: u64, h: u64, p: *const K) -> Result<Cmp, Restart> {
    match hk.cmp(&h) {
        Cmp::Equal => {}
        c => return Ok(c),
    }
    if p.is_null() {
        return Err(Restart);
    }
    // SAFETY: a non-null pointer loaded from a node is a published entry
    // key or separator: immutable, and freed only after an epoch has passed
    // since it left the node, which the caller's guard prevents.
    Ok(k.cmp(unsafe { &*p }))
}

impl<K: TreeKey, V> Leaf<K, V> {
    /// A new, empty leaf (to be published by the caller).
    pub(crate) fn alloc() -> *mut Leaf<K, V> {
        Box::into_raw(Box::new(Leaf {
            hdr: Header::new(true),
            heads: std::array::from_fn(|_| AtomicU64::new(0)),
            entries: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        }))
    }

    /// The count, or `Restart` if a torn read left it out of range.
    #[inline]
    pub(crate) fn count(&self) -> Result<usize, Restart> {
        let n = self.hdr.count();
        if n > LEAF_CAP {
            return Err(Restart);
        }
        Ok(n)
    }

    #[inline]
    pub(crate) fn head(&self, i: usize) -> u64 {
        // Relaxed: an optimistic read, validated through the version lock.
        self.heads[i].load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn entry(&self, i: usize) -> *mut Entry<K, V> {
        // Acquire: pairs with the Release store that published the entry, so
        // its contents are visible even before the version is validated.
        self.entries[i].load(Ordering::Acquire)
    }

    /// The first of the `n` entries whose key is `>= k`, and whether it is
    /// `k` (optimistic: validate before trusting it).
    #[inline]
    pub(crate) fn lower_bound(&self, k: &K, hk: u64, n: usize) -> Result<(usize, bool), Restart> {
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let e = self.entry(mid);
            let kp = if e.is_null() {
                ptr::null()
            } else {
                // SAFETY: `e` is a published entry, alive under the guard
                // (see `cmp_stored`); only the key's address is taken.
                unsafe { ptr::addr_of!((*e).key) }
            };
            match cmp_stored(k, hk, self.head(mid), kp)? {
                Cmp::Greater => lo = mid + 1,
                Cmp::Equal => return Ok((mid, true)),
                Cmp::Less => hi = mid,
            }
        }
        Ok((lo, false))
    }

    /// Inserts entry `e` (key head `h`) at `i` of `n`. The caller holds the
    /// lock and `n < LEAF_CAP`.
    pub(crate) fn insert_at(&self, i: usize, h: u64, e: *mut Entry<K, V>, n: usize) {
        debug_assert!(n < LEAF_CAP && i <= n);
        // The head invariant, where it costs two loads: heads are ordered as
        // their keys are.
        debug_assert!(i == 0 || self.heads[i - 1].load(Ordering::Relaxed) <= h, "head order");
        debug_assert!(i == n || h <= self.heads[i].load(Ordering::Relaxed), "head order");
        // Relaxed (all stores here): inside the critical section, ordered for
        // readers by the lock's fences; Release for the new entry pointer,
        // which publishes the entry itself.
        for j in (i..n).rev() {
            self.heads[j + 1].store(self.heads[j].load(Ordering::Relaxed), Ordering::Relaxed);
            self.entries[j + 1].store(self.entries[j].load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.heads[i].store(h, Ordering::Relaxed);
        self.entries[i].store(e, Ordering::Release);
        self.hdr.set_count(n + 1);
    }

    /// Removes and returns the entry at `i` of `n`. The caller holds the lock.
    pub(crate) fn remove_at(&self, i: usize, n: usize) -> *mut Entry<K, V> {
        debug_assert!(i < n && n <= LEAF_CAP);
        // Relaxed: inside the critical section (see `insert_at`).
        let e = self.entries[i].load(Ordering::Relaxed);
        for j in i + 1..n {
            self.heads[j - 1].store(self.heads[j].load(Ordering::Relaxed), Ordering::Relaxed);
            self.entries[j - 1].store(self.entries[j].load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.entries[n - 1].store(ptr::null_mut(), Ordering::Relaxed);
        self.hdr.set_count(n - 1);
        e
    }

    /// Moves entries `at..n` into the new, unpublished leaf `right` and
    /// returns the separator: a box holding a clone of the last key left
    /// here, and its head. The caller holds this leaf's lock.
    pub(crate) fn split_into(&self, right: &Leaf<K, V>, at: usize, n: usize) -> (u64, *mut K) {
        debug_assert!(0 < at && at < n);
        // Relaxed: `right` is published later by a Release store (or
        // unlock); this leaf is inside its critical section.
        for j in at..n {
            right.heads[j - at].store(self.heads[j].load(Ordering::Relaxed), Ordering::Relaxed);
            right.entries[j - at].store(self.entries[j].load(Ordering::Relaxed), Ordering::Relaxed);
            self.entries[j].store(ptr::null_mut(), Ordering::Relaxed);
        }
        right.hdr.set_count(n - at);
        self.hdr.set_count(at);
        let last = self.entries[at - 1].load(Ordering::Relaxed);
        // SAFETY: a live entry of this locked leaf.
        let key = unsafe { &(*last).key };
        (key.head(), Box::into_raw(Box::new(key.clone())))
    }
}

impl<K, V> Leaf<K, V> {
    /// The entries, for dropping the tree (no concurrent access).
    pub(crate) fn entries_raw(&self) -> impl Iterator<Item = *mut Entry<K, V>> + '_ {
        // Relaxed: exclusive access.
        (0..self.hdr.count()).map(|i| self.entries[i].load(Ordering::Relaxed))
    }
}

impl<K: TreeKey> Inner<K> {
    /// A new inner node with the one child `child` (to be published by the caller).
    pub(crate) fn alloc(child: *mut Header) -> *mut Inner<K> {
        let n = Box::new(Inner {
            hdr: Header::new(false),
            heads: std::array::from_fn(|_| AtomicU64::new(0)),
            keys: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
            children: std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut())),
        });
        // Relaxed: unpublished.
        n.children[0].store(child, Ordering::Relaxed);
        n.hdr.set_count(1);
        Box::into_raw(n)
    }

    /// The count, or `Restart` if a torn read left it out of range (an
    /// inner node always has a child).
    #[inline]
    pub(crate) fn count(&self) -> Result<usize, Restart> {
        let n = self.hdr.count();
        if n == 0 || n > INNER_CAP {
            return Err(Restart);
        }
        Ok(n)
    }

    /// Separator `i` (optimistic).
    #[inline]
    pub(crate) fn key(&self, i: usize) -> *const K {
        // Acquire: pairs with the Release store that published the box.
        self.keys[i].load(Ordering::Acquire)
    }

    /// Child `i` (optimistic).
    #[inline]
    pub(crate) fn child(&self, i: usize) -> *mut Header {
        // Acquire: pairs with the Release store that published the child.
        self.children[i].load(Ordering::Acquire)
    }

    /// The child of the `n` to descend into for `k`: the first whose upper
    /// separator is `>= k` (`strict`: `> k`), else the last.
    #[inline]
    pub(crate) fn search(&self, k: &K, hk: u64, n: usize, strict: bool) -> Result<usize, Restart> {
        let (mut lo, mut hi) = (0, n - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            // Relaxed: an optimistic read, validated through the version lock.
            let h = self.heads[mid].load(Ordering::Relaxed);
            let c = cmp_stored(k, hk, h, self.key(mid))?;
            let right = if strict { c != Cmp::Less } else { c == Cmp::Greater };
            if right {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// After child `pos` of `n` split, adds its new right sibling `right`
    /// with separator (`h`, `sep`) between them. The caller holds the lock
    /// and `n < INNER_CAP`.
    pub(crate) fn insert_child(&self, pos: usize, h: u64, sep: *mut K, right: *mut Header, n: usize) {
        debug_assert!(n < INNER_CAP && pos < n);
        // Relaxed: inside the critical section; Release for the new
        // pointers, which publish what they point to.
        for j in (pos..n - 1).rev() {
            self.heads[j + 1].store(self.heads[j].load(Ordering::Relaxed), Ordering::Relaxed);
            self.keys[j + 1].store(self.keys[j].load(Ordering::Relaxed), Ordering::Relaxed);
        }
        for j in (pos + 1..n).rev() {
            self.children[j + 1].store(self.children[j].load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.heads[pos].store(h, Ordering::Relaxed);
        self.keys[pos].store(sep, Ordering::Release);
        self.children[pos + 1].store(right, Ordering::Release);
        self.hdr.set_count(n + 1);
    }

    /// Removes child `pos` of `n > 1` and one separator next to it (its
    /// upper one, or its lower one for the last child), which it returns
    /// for the caller to free through the epoch. The caller holds the lock.
    pub(crate) fn remove_child(&self, pos: usize, n: usize) -> *mut K {
        debug_assert!(n > 1 && pos < n);
        let s = if pos + 1 < n { pos } else { pos - 1 };
        // Relaxed: inside the critical section.
        let sep = self.keys[s].load(Ordering::Relaxed);
        for j in s + 1..n - 1 {
            self.heads[j - 1].store(self.heads[j].load(Ordering::Relaxed), Ordering::Relaxed);
            self.keys[j - 1].store(self.keys[j].load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.keys[n - 2].store(ptr::null_mut(), Ordering::Relaxed);
        for j in pos + 1..n {
            self.children[j - 1].store(self.children[j].load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.children[n - 1].store(ptr::null_mut(), Ordering::Relaxed);
        self.hdr.set_count(n - 1);
        sep
    }

    /// Moves the upper half of this full node's children into the new,
    /// unpublished `right` and returns the separator between the halves
    /// (its box moves up to the parent). The caller holds the lock.
    pub(crate) fn split_into(&self, right: &Inner<K>, n: usize) -> (u64, *mut K) {
        let m = n / 2;
        // Relaxed: `right` is published later; this node is locked.
        for j in m..n {
            right.children[j - m].store(self.children[j].load(Ordering::Relaxed), Ordering::Relaxed);
            self.children[j].store(ptr::null_mut(), Ordering::Relaxed);
        }
        for j in m..n - 1 {
            right.heads[j - m].store(self.heads[j].load(Ordering::Relaxed), Ordering::Relaxed);
            right.keys[j - m].store(self.keys[j].load(Ordering::Relaxed), Ordering::Relaxed);
            self.keys[j].store(ptr::null_mut(), Ordering::Relaxed);
        }
        let h = self.heads[m - 1].load(Ordering::Relaxed);
        let sep = self.keys[m - 1].swap(ptr::null_mut(), Ordering::Relaxed);
        right.hdr.set_count(n - m);
        self.hdr.set_count(m);
        (h, sep)
    }
}

impl<K> Inner<K> {
    /// The separators and children, for dropping the tree (no concurrent access).
    pub(crate) fn parts_raw(&self) -> (Vec<*mut K>, Vec<*mut Header>) {
        let n = self.hdr.count();
        // Relaxed: exclusive access.
        let seps = (0..n.saturating_sub(1)).map(|i| self.keys[i].load(Ordering::Relaxed)).collect();
        let kids = (0..n).map(|i| self.children[i].load(Ordering::Relaxed)).collect();
        (seps, kids)
    }
}
