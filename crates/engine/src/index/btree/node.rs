//! Nodes of the B+tree: a header (version lock, count, kind) and arrays of
//! atomics that optimistic readers load between the version reads.
//!
//! Every field a reader may load while a writer changes the node is an
//! atomic: the 8-byte key heads, the entry or separator pointers, the child
//! pointers, the count and the prefix word. What those pointers lead to (entries and
//! separator keys) is immutable once published and freed only through the
//! epoch, so a reader may dereference a pointer it loaded even before it
//! validates: at worst it compares against a key that is no longer there,
//! and the validation that follows throws the decision away.

use super::lock::{Restart, VersionLock};
use super::TreeKey;
use crate::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::cmp::Ordering as Cmp;
use std::ptr;

/// The longest prefix a node keeps, in bytes.
///
/// **The prefix word.** Every key of a node begins with the node's prefix
/// (the first `p` bytes of the key's zero-padded byte string, `p <=
/// PREFIX_MAX`), and the node's heads are the 8 bytes that follow it, not
/// the key's first 8 (the heads after a node's common prefix, as in
/// prefix-truncated B-trees): keys that share their first 8 bytes, such as
/// TPC-C's customers by last name (warehouse, district, then names built
/// from ten syllables), would tie on every head and fall back to whole-key
/// comparisons behind a pointer each. Prefix and length share one atomic
/// word, so an optimistic reader never sees a length without its bytes:
///
/// ```text
///  63                                            8 7        0
/// +-----------------------------------------------+----------+
/// | prefix bytes 0..p, big-endian, zeros after p   |    p     |
/// +-----------------------------------------------+----------+
/// ```
///
/// A node's prefix shrinks when a key that does not share it comes in
/// (its heads are rewritten from the bytes the old prefix and heads hold,
/// without reading a key), and grows only at a split, for a half whose
/// heads tie (then each key of the half is read once).
pub(crate) const PREFIX_MAX: usize = 7;

/// The mask of a prefix word's first `p` bytes.
#[inline]
pub(crate) fn prefix_mask(p: usize) -> u64 {
    debug_assert!(p <= PREFIX_MAX);
    !(u64::MAX >> (8 * p))
}

/// The prefix length of a prefix word (a loaded word is one a writer
/// stored, so at most `PREFIX_MAX`; clamped all the same).
#[inline]
pub(crate) fn prefix_len(word: u64) -> usize {
    ((word & 0xFF) as usize).min(PREFIX_MAX)
}

/// The prefix word for the first `p` bytes of a key of head `h0`.
#[inline]
fn prefix_word(h0: u64, p: usize) -> u64 {
    (h0 & prefix_mask(p)) | p as u64
}

/// The first 16 bytes of a key as a node knows them: its prefix, then its
/// head (bytes `p + 8..` are zero here, whatever the key holds).
#[inline]
fn window(word: u64, h: u64) -> u128 {
    let p = prefix_len(word);
    (((word & prefix_mask(p)) as u128) << 64) | ((h as u128) << (64 - 8 * p))
}

/// The 8 bytes from byte `q` of a window (`q` no more than the prefix
/// length the window was made with, so that they are all known).
#[inline]
fn window_head(w: u128, q: usize) -> u64 {
    (w >> (64 - 8 * q)) as u64
}

/// Bytes two heads share, up to `PREFIX_MAX`.
#[inline]
fn common(a: u64, b: u64) -> usize {
    (((a ^ b).leading_zeros() / 8) as usize).min(PREFIX_MAX)
}

/// Where a key lies against a node's keys, found from the prefix word.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place {
    /// Below every key of the node (its prefix is smaller).
    Below,
    /// Above every key of the node.
    Above,
    /// It shares the prefix; its head after the prefix.
    At(u64),
}

/// Places `k` (head `h0`, from byte 0) against a node of prefix word `word`.
#[inline]
pub(crate) fn place<K: TreeKey>(k: &K, h0: u64, word: u64) -> Place {
    // No prefix: the word is 0 (the common case of keys whose heads differ).
    if word == 0 {
        return Place::At(h0);
    }
    let p = prefix_len(word);
    debug_assert!(p > 0, "a prefix of length 0 is the word 0");
    let m = prefix_mask(p);
    match (h0 & m).cmp(&(word & m)) {
        Cmp::Less => Place::Below,
        Cmp::Greater => Place::Above,
        Cmp::Equal => Place::At(k.head_at(p)),
    }
}

/// Makes room in a node's prefix for a key of head `h0`: if the key does
/// not begin with the prefix, shortens the prefix to what they share and
/// rewrites the first `n` heads for it. Returns the prefix word now in
/// force. The caller holds the node's lock.
fn admit(hdr: &Header, heads: &[AtomicU64], n: usize, h0: u64) -> u64 {
    let word = hdr.prefix();
    let p = prefix_len(word);
    let m = prefix_mask(p);
    // Without a prefix (word 0) every key is admitted.
    if h0 & m == word & m {
        return word;
    }
    let q = common(h0 & m, word & m).min(p - 1);
    // Relaxed (loads and stores): inside the critical section, ordered for
    // readers by the lock's fences.
    for h in &heads[..n] {
        h.store(window_head(window(word, h.load(Ordering::Relaxed)), q), Ordering::Relaxed);
    }
    let w = prefix_word(word, q);
    hdr.set_prefix(w);
    w
}

/// After a split, lengthens the prefix of a half holding `n` heads if they
/// tie somewhere and share more than the prefix: every key of the half is
/// read once (`key(j)`) for its head after the new prefix. The caller holds
/// the node's lock, or the node is unpublished.
fn lengthen<'a, K: TreeKey + 'a>(hdr: &Header, heads: &[AtomicU64], n: usize, key: impl Fn(usize) -> &'a K) {
    if n < 2 {
        return;
    }
    let word = hdr.prefix();
    // Relaxed (loads and stores): as in `admit`.
    let head = |j: usize| heads[j].load(Ordering::Relaxed);
    if !(1..n).any(|j| head(j - 1) == head(j)) {
        return;
    }
    let first = window_head(window(word, head(0)), 0);
    let last = window_head(window(word, head(n - 1)), 0);
    let q = common(first, last);
    if q <= prefix_len(word) {
        return;
    }
    for (j, h) in heads[..n].iter().enumerate() {
        h.store(key(j).head_at(q), Ordering::Relaxed);
    }
    hdr.set_prefix(prefix_word(first, q));
}

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
    /// The node's prefix word (see [`PREFIX_MAX`]).
    prefix: AtomicU64,
}

impl Header {
    fn new(leaf: bool) -> Header {
        Header { lock: VersionLock::new(), count: AtomicU32::new(0), leaf, prefix: AtomicU64::new(0) }
    }

    /// The prefix word as loaded now (optimistic: validate before trusting it).
    #[inline]
    pub(crate) fn prefix(&self) -> u64 {
        // Relaxed: an optimistic read, validated through the version lock.
        self.prefix.load(Ordering::Relaxed)
    }

    #[inline]
    fn set_prefix(&self, w: u64) {
        // Relaxed: inside a critical section, or before publication.
        self.prefix.store(w, Ordering::Relaxed)
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

    /// The first of the `n` entries whose key is `>= k` (of head `h0`), and
    /// whether it is `k` (optimistic: validate before trusting it).
    #[inline]
    pub(crate) fn lower_bound(&self, k: &K, h0: u64, n: usize) -> Result<(usize, bool), Restart> {
        let hk = match place(k, h0, self.hdr.prefix()) {
            Place::Below => return Ok((0, false)),
            Place::Above => return Ok((n, false)),
            Place::At(h) => h,
        };
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

    /// The key of entry `j` of a leaf that the caller has locked, or not
    /// yet published, with more than `j` entries.
    fn locked_key(&self, j: usize) -> &K {
        // Relaxed: inside the critical section, or unpublished.
        let e = self.entries[j].load(Ordering::Relaxed);
        debug_assert!(!e.is_null() && j < self.hdr.count());
        // SAFETY: an entry of a leaf nobody else changes now: published
        // entries leave a leaf only under its lock, and are freed through
        // the epoch after that.
        unsafe { &(*e).key }
    }

    /// Inserts entry `e` (its key's head `h0`) at `i` of `n`. The caller
    /// holds the lock, `n < LEAF_CAP`, and `e` is its own entry, not yet
    /// published.
    #[inline]
    pub(crate) fn insert_at(&self, i: usize, h0: u64, e: *mut Entry<K, V>, n: usize) {
        debug_assert!(n < LEAF_CAP && i <= n);
        let p = prefix_len(admit(&self.hdr, &self.heads, n, h0));
        let h = if p == 0 {
            h0
        } else {
            // SAFETY: the caller's entry, alive and not yet shared.
            unsafe { &(*e).key }.head_at(p)
        };
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
    /// here. Each half keeps the prefix, or a longer one (`lengthen`). The
    /// caller holds this leaf's lock.
    pub(crate) fn split_into(&self, right: &Leaf<K, V>, at: usize, n: usize) -> *mut K {
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
        right.hdr.set_prefix(self.hdr.prefix());
        lengthen(&self.hdr, &self.heads, at, |j| self.locked_key(j));
        lengthen(&right.hdr, &right.heads, n - at, |j| right.locked_key(j));
        let last = self.entries[at - 1].load(Ordering::Relaxed);
        // SAFETY: a live entry of this locked leaf.
        let key = unsafe { &(*last).key };
        Box::into_raw(Box::new(key.clone()))
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

    /// Separator `j` of a node that the caller has locked, or not yet
    /// published, with more than `j` separators.
    fn locked_key(&self, j: usize) -> &K {
        // Relaxed: inside the critical section, or unpublished.
        let k = self.keys[j].load(Ordering::Relaxed);
        debug_assert!(!k.is_null() && j + 1 < self.hdr.count());
        // SAFETY: a separator of a node nobody else changes now:
        // separators leave a node only under its lock, and are freed
        // through the epoch after that.
        unsafe { &*k }
    }

    /// Separator `i`'s head (optimistic).
    #[inline]
    pub(crate) fn head(&self, i: usize) -> u64 {
        // Relaxed: an optimistic read, validated through the version lock.
        self.heads[i].load(Ordering::Relaxed)
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

    /// The child of the `n` to descend into for `k` (of head `h0`): the
    /// first whose upper separator is `>= k` (`strict`: `> k`), else the last.
    #[inline]
    pub(crate) fn search(&self, k: &K, h0: u64, n: usize, strict: bool) -> Result<usize, Restart> {
        let hk = match place(k, h0, self.hdr.prefix()) {
            Place::Below => return Ok(0),
            Place::Above => return Ok(n - 1),
            Place::At(h) => h,
        };
        let (mut lo, mut hi) = (0, n - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let c = cmp_stored(k, hk, self.head(mid), self.key(mid))?;
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
    /// with separator `sep` between them. The caller holds the lock, `n <
    /// INNER_CAP`, and `sep` is its own box, not yet published.
    pub(crate) fn insert_child(&self, pos: usize, sep: *mut K, right: *mut Header, n: usize) {
        debug_assert!(n < INNER_CAP && pos < n);
        // SAFETY: the caller's separator, alive and not yet shared.
        let key = unsafe { &*sep };
        let h0 = key.head();
        let p = prefix_len(admit(&self.hdr, &self.heads, n - 1, h0));
        let h = if p == 0 { h0 } else { key.head_at(p) };
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
    /// (its box moves up to the parent). Each half keeps the prefix, or a
    /// longer one. The caller holds the lock.
    pub(crate) fn split_into(&self, right: &Inner<K>, n: usize) -> *mut K {
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
        let sep = self.keys[m - 1].swap(ptr::null_mut(), Ordering::Relaxed);
        right.hdr.set_count(n - m);
        self.hdr.set_count(m);
        right.hdr.set_prefix(self.hdr.prefix());
        lengthen(&self.hdr, &self.heads, m - 1, |j| self.locked_key(j));
        lengthen(&right.hdr, &right.heads, n - m - 1, |j| right.locked_key(j));
        sep
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
