//! A concurrent B+tree with optimistic lock coupling (OLC): an ordered map
//! from keys to values at stable addresses, read without taking locks.
//!
//! The synchronisation is that of Leis, Haubenschild, Neumann: *Optimistic
//! Lock Coupling: A Scalable and Efficient General-Purpose Synchronization
//! Method* (IEEE Data Eng. Bull. 2019), and of their BTreeOLC: every node
//! carries a version lock ([`lock`], bit layout there). A reader descends
//! from the root reading each node's version, the fields it needs, and
//! validating the version again; after it reads a child pointer it
//! validates the parent (so the child is still the parent's), and after it
//! reads the child's version it validates the parent once more (lock
//! coupling). Any failed validation restarts the operation from the root.
//! A writer upgrades its optimistic read of a node to the lock by a
//! compare-and-swap from the version it saw, so what it read is still
//! true; unlocking bumps the version. Writers only ever *try* to lock
//! (upgrade, restart on failure) while holding other locks, always parent
//! before child, so no two writers wait for each other.
//!
//! Inserts split full nodes on the way down (BTreeOLC's eager splits): a
//! full inner node or leaf met on the descent is split under its parent's
//! lock and its own, and the insert restarts; so a parent always has room
//! for the separator a split of its child brings. A root split installs a
//! new root while holding the old root's lock; readers check after reading
//! the root's version that it is still the root.
//!
//! **What differs from BTreeOLC (soundness in Rust with non-`Copy` keys).**
//! An optimistic reader may run concurrently with a writer, so it must
//! never read non-atomic memory a writer may be changing: a `Key` can hold
//! an `Arc`, and a torn read of it is undefined behaviour. So every node
//! field a reader loads is an atomic ([`node`]): per slot an 8-byte
//! order-preserving key head ([`TreeKey::head_at`]: the key's 8 bytes after
//! the node's prefix, see [`node::PREFIX_MAX`]) and a pointer. Leaves
//! point to entries (`Entry { key, value }`), inner nodes to separator
//! keys in boxes of their own; both are immutable once published and freed
//! only through crossbeam-epoch after they left the tree, so a reader may
//! compare against a full key (when the heads are equal) through a pointer
//! it loaded, and validates before acting on the comparison. Separators are
//! clones of keys in boxes owned by the one inner slot pointing to them
//! (not pointers to entries), so an entry can be freed as soon as it is
//! removed, whatever separators its key was copied into.
//!
//! **Invariants.** Keys are unique and sorted within a node; child `i` of
//! an inner node holds the keys between separators `i - 1` (exclusive) and
//! `i` (inclusive); every inner node has at least one child and every
//! leaf but a root-path leaf at least one entry (below). A node's key
//! range changes only by a split of the node itself (which bumps its
//! version) or grows when an empty neighbour is unlinked, so a node whose
//! version is unchanged still holds every key it was found to hold.
//!
//! **Scans** ([`scan`]) copy a leaf's entry pointers into a stack buffer
//! under an optimistic read, validate the leaf and the path to it (so the
//! leaf's fences, the nearest separators above it, are exact), then call
//! the visitor with no node read in flight. They continue by descending
//! again from the root to the first key above the leaf's upper fence
//! (below its lower fence, backwards): no sibling links, which would need
//! their own protocol with node unlinking.
//!
//! **Deletion and memory.** A removed entry is freed through the epoch.
//! A leaf that becomes empty is unlinked from its parent, and so is every
//! ancestor that is left without children: the lowest ancestor on the path
//! with more than one child loses one, and the nodes below it are marked
//! obsolete and freed through the epoch. Underfull nodes are not merged.
//! So every leaf holds at least one entry, except the one leaf (and its
//! single-child ancestors) of a tree that has emptied, and the tree's
//! memory is bounded by its live entries: at most one leaf and one inner
//! node per level per live entry in the worst case, one leaf per few
//! entries in practice (splits leave leaves at least half full, and an
//! append at a leaf's end leaves the old leaf full).
//!
//! Nodes hold [`node::LEAF_CAP`] entries and [`node::INNER_CAP`] children
//! (chosen by measurement, see there).
//!
//! Every operation takes a `crossbeam_epoch::Guard` of the default
//! collector, pinned (not `unprotected`): what it returns borrows from the
//! guard, and what it removes is freed through it.

pub(crate) mod lock;
pub(crate) mod node;
pub(crate) mod scan;
#[cfg(test)]
mod tests;

use crate::key::Key;
use crate::sync::atomic::{AtomicPtr, Ordering};
use crossbeam_epoch::{Guard, Shared};
use lock::Restart;
use node::{Entry, Header, Inner, Leaf, INNER_CAP, LEAF_CAP};
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr;

/// A key the tree can order: `Ord`, with 8-byte order-preserving heads
/// compared before the full key.
///
/// A key is seen as a byte string (for `u64`, its 8 big-endian bytes;
/// for an entry key, its index key's bytes), padded with zeros without
/// end; `head_at(p)` is its bytes `p..p + 8` as a big-endian integer.
/// Invariant (what a node's prefix and heads rest on, see
/// [`node::PREFIX_MAX`]): for two keys whose first `p` bytes are equal,
/// `a.head_at(p) < b.head_at(p)` implies `a < b`, and `a < b` implies
/// `a.head_at(p) <= b.head_at(p)`; and `a < b` implies `a.head() <=
/// b.head()`.
pub(crate) trait TreeKey: Ord + Clone {
    /// The key's 8 bytes from byte `p` (at most [`node::PREFIX_MAX`]).
    fn head_at(&self, p: usize) -> u64;

    /// The key's first 8 bytes.
    #[inline]
    fn head(&self) -> u64 {
        self.head_at(0)
    }
}

impl TreeKey for u64 {
    #[inline]
    fn head_at(&self, p: usize) -> u64 {
        self.checked_shl(8 * p as u32).unwrap_or(0)
    }
}

/// Bytes `p..p + 8` of `k`, big-endian, zero-padded.
#[inline]
pub(crate) fn key_head_at(k: &Key, p: usize) -> u64 {
    let b = k.as_bytes().get(p..).unwrap_or(&[]);
    if b.len() >= 8 {
        u64::from_be_bytes(b[..8].try_into().expect("8 bytes"))
    } else {
        let mut a = [0u8; 8];
        a[..b.len()].copy_from_slice(b);
        u64::from_be_bytes(a)
    }
}

impl TreeKey for Key {
    #[inline]
    fn head_at(&self, p: usize) -> u64 {
        key_head_at(self, p)
    }
}

/// The ordered index's entry key: ordered by the index key first, so its
/// heads are the index key's.
impl TreeKey for (Key, Key) {
    #[inline]
    fn head_at(&self, p: usize) -> u64 {
        key_head_at(&self.0, p)
    }
}

/// Most levels of inner nodes. A root split needs a full root, which needs
/// about `INNER_CAP / 2` splits of its children, each of them full: a
/// height of `h` takes more than `(INNER_CAP / 2)^(h - 1)` inserts.
const MAX_HEIGHT: usize = 24;

/// One inner node of a descent: its version as read and the child taken.
struct Step<K> {
    node: *const Inner<K>,
    version: u64,
    pos: usize,
}

impl<K> Clone for Step<K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K> Copy for Step<K> {}

/// The inner nodes of a descent, root first (on the stack: no allocation).
struct Path<K> {
    steps: [MaybeUninit<Step<K>>; MAX_HEIGHT],
    len: usize,
}

impl<K: TreeKey> Path<K> {
    fn new() -> Path<K> {
        Path { steps: [const { MaybeUninit::uninit() }; MAX_HEIGHT], len: 0 }
    }

    fn push(&mut self, s: Step<K>) {
        assert!(self.len < MAX_HEIGHT, "B+tree deeper than {MAX_HEIGHT} levels");
        self.steps[self.len] = MaybeUninit::new(s);
        self.len += 1;
    }

    fn get(&self, i: usize) -> Step<K> {
        assert!(i < self.len);
        // SAFETY: steps below `len` were written by `push`.
        unsafe { self.steps[i].assume_init() }
    }

    /// Replaces the last step (a scan moving to the leaf's sibling).
    fn set_last(&mut self, s: Step<K>) {
        assert!(self.len > 0);
        self.steps[self.len - 1] = MaybeUninit::new(s);
    }

    /// The last step's node (the leaf's parent).
    fn last(&self) -> Option<Step<K>> {
        self.len.checked_sub(1).map(|i| self.get(i))
    }

    /// Validates every node of the path: together with the leaf's own
    /// validation, the whole path was as read at the moment the leaf's
    /// version was read.
    fn validate(&self) -> Result<(), Restart> {
        for i in 0..self.len {
            let s = self.get(i);
            // SAFETY: nodes are freed only through the epoch; the caller is pinned.
            unsafe { &*s.node }.hdr.lock.validate(s.version)?;
        }
        Ok(())
    }
}

/// Where a descent goes.
enum Target<'k, K> {
    /// The leftmost leaf.
    First,
    /// The rightmost leaf.
    Last,
    /// The leaf that holds `k` if it is there (the first key `>= k` is
    /// there or in a later leaf).
    AtLeast(&'k K, u64),
    /// The leaf holding the keys just above `k`.
    Above(&'k K, u64),
}

impl<K> Clone for Target<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K> Copy for Target<'_, K> {}

/// A leaf a descent reached, and its fences: the nearest separators on the
/// path below (lower) and above (upper) it; null where none.
struct Reached<K, V> {
    leaf: *const Leaf<K, V>,
    version: u64,
    lower: *const K,
    upper: *const K,
}

/// How an insert attempt ended.
enum Attempt<K, V> {
    /// The key is there.
    Found(*const Entry<K, V>),
    /// Our entry is in.
    Inserted,
    /// The key is absent: it goes at `pos` of `leaf` (seen at `version`).
    Absent { leaf: *const Leaf<K, V>, version: u64, pos: usize },
}

/// A concurrent B+tree map (module docs). Values stay at one address from
/// their insert until an epoch has passed after their removal.
pub(crate) struct BTree<K, V> {
    root: AtomicPtr<Header>,
    _owns: PhantomData<Box<Entry<K, V>>>,
}

// SAFETY: the tree owns its entries (keys and values) and hands out shared
// references to them to any thread: it is Send and Sync when they are.
unsafe impl<K: Send + Sync, V: Send + Sync> Send for BTree<K, V> {}
// SAFETY: as above.
unsafe impl<K: Send + Sync, V: Send + Sync> Sync for BTree<K, V> {}

/// Frees `p` (a `Box<T>`) once no guard pinned now can reach it.
///
/// # Safety
/// `p` came from `Box::into_raw`, is unreachable for operations that start
/// from now on, and is deferred only once.
unsafe fn defer_free<T>(guard: &Guard, p: *const T) {
    // SAFETY: forwarded contract; the epoch runs the destructor after every
    // thread pinned now has unpinned.
    unsafe { guard.defer_destroy(Shared::from(p)) }
}

impl<K: TreeKey, V> BTree<K, V> {
    /// An empty tree (one empty leaf).
    pub(crate) fn new() -> BTree<K, V> {
        BTree { root: AtomicPtr::new(Leaf::<K, V>::alloc().cast()), _owns: PhantomData }
    }

    /// Number of entries, counted by a scan. The tree keeps no count: one
    /// counter word written by every insert and remove would be a cache
    /// line that all writers share.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let mut n = 0;
        self.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded, &crossbeam_epoch::pin(), |_, _| {
            n += 1;
            true
        });
        n
    }

    /// Descends to the leaf of `t`, recording the inner nodes in `path`.
    /// The leaf's contents are not validated: the caller validates the
    /// leaf (and the path, to trust the fences) after reading it.
    fn descend(&self, t: Target<'_, K>, path: &mut Path<K>) -> Result<Reached<K, V>, Restart> {
        path.len = 0;
        // Acquire: pairs with the Release store of a new root.
        let root = self.root.load(Ordering::Acquire);
        // SAFETY: nodes are freed only through the epoch, after they left
        // the tree; the caller is pinned (here and below).
        let mut v = unsafe { &*root }.lock.read()?;
        // A root split stores the new root before unlocking the old one,
        // whose version we Acquired: Relaxed sees the new root if there is one.
        if self.root.load(Ordering::Relaxed) != root {
            return Err(Restart);
        }
        let (mut node, mut lower, mut upper) = (root.cast_const(), ptr::null(), ptr::null());
        loop {
            // SAFETY: as above.
            let h = unsafe { &*node };
            if h.leaf {
                return Ok(Reached { leaf: node.cast(), version: v, lower, upper });
            }
            // SAFETY: not a leaf, so an inner node (`repr(C)`, header first).
            let inner = unsafe { &*node.cast::<Inner<K>>() };
            let n = inner.count()?;
            let pos = match t {
                Target::First => 0,
                Target::Last => n - 1,
                Target::AtLeast(k, hk) => inner.search(k, hk, n, false)?,
                Target::Above(k, hk) => inner.search(k, hk, n, true)?,
            };
            if pos > 0 {
                lower = inner.key(pos - 1);
            }
            if pos + 1 < n {
                upper = inner.key(pos);
            }
            let child = inner.child(pos);
            inner.hdr.lock.validate(v)?;
            path.push(Step { node: inner, version: v, pos });
            // SAFETY: validated: a live child of the node (as above).
            let cv = unsafe { &*child }.lock.read()?;
            // Lock coupling: the child was not split away since we read the pointer.
            inner.hdr.lock.validate(v)?;
            node = child;
            v = cv;
        }
    }

    /// The value of `k`, if present.
    pub(crate) fn get<'g>(&'g self, k: &K, _guard: &'g Guard) -> Option<&'g V> {
        let hk = k.head();
        let mut path = Path::new();
        loop {
            let Ok(r) = self.descend(Target::AtLeast(k, hk), &mut path) else { continue };
            // SAFETY: as in `descend`.
            let leaf = unsafe { &*r.leaf };
            let Ok(n) = leaf.count() else { continue };
            let Ok((i, found)) = leaf.lower_bound(k, hk, n) else { continue };
            let e = if found { leaf.entry(i) } else { ptr::null_mut() };
            if leaf.hdr.lock.validate(r.version).is_err() {
                continue;
            }
            // SAFETY: a validated entry of the leaf: alive until an epoch
            // passes after its removal, so for as long as the guard.
            return (!e.is_null()).then(|| unsafe { &(*e).value });
        }
    }

    /// The value of `k`, inserted as `f()` if absent; true if inserted. `f`
    /// runs at most once, with no lock held; its value is dropped if
    /// another thread inserted `k` first.
    pub(crate) fn get_or_insert_with<'g>(&'g self, k: K, f: impl FnOnce() -> V, _guard: &'g Guard) -> (&'g V, bool) {
        let hk = k.head();
        let (mut key, mut f) = (Some(k), Some(f));
        let mut mine: *mut Entry<K, V> = ptr::null_mut();
        let mut path = Path::new();
        loop {
            let kref = match &key {
                Some(k) => k,
                // SAFETY: our entry, not yet published: alive and ours.
                None => unsafe { &(*mine).key },
            };
            let attempt = self.attempt(kref, hk, mine, &mut path);
            match attempt {
                Err(Restart) => {}
                Ok(Attempt::Found(e)) => {
                    if !mine.is_null() {
                        // SAFETY: ours and never published.
                        drop(unsafe { Box::from_raw(mine) });
                    }
                    // SAFETY: a validated entry: alive for as long as the guard.
                    return (unsafe { &(*e).value }, false);
                }
                Ok(Attempt::Inserted) => {
                    // SAFETY: our entry, now in the tree: alive for as long as the guard.
                    return (unsafe { &(*mine).value }, true);
                }
                Ok(Attempt::Absent { leaf, version, pos }) => {
                    let (k, f) = (key.take().expect("the key is ours"), f.take().expect("called once"));
                    mine = Box::into_raw(Box::new(Entry { key: k, value: f() }));
                    // SAFETY: as in `descend`.
                    let leaf = unsafe { &*leaf };
                    // Unchanged since the attempt saw the key absent at `pos`
                    // (with room): insert there; otherwise start again.
                    if leaf.hdr.lock.upgrade(version).is_ok() {
                        let n = leaf.hdr.count();
                        leaf.insert_at(pos, hk, mine, n);
                        leaf.hdr.lock.unlock();
                        // SAFETY: our entry, now in the tree.
                        return (unsafe { &(*mine).value }, true);
                    }
                }
            }
        }
    }

    /// One descent of an insert of `k`: splits a full node met on the way
    /// (and restarts), finds `k`, or inserts `mine` (when not null).
    fn attempt(&self, k: &K, hk: u64, mine: *mut Entry<K, V>, path: &mut Path<K>) -> Result<Attempt<K, V>, Restart> {
        path.len = 0;
        // Acquire: pairs with the Release store of a new root.
        let root = self.root.load(Ordering::Acquire);
        // SAFETY: nodes are freed only through the epoch; the caller is pinned.
        let mut v = unsafe { &*root }.lock.read()?;
        // Relaxed: as in `descend`.
        if self.root.load(Ordering::Relaxed) != root {
            return Err(Restart);
        }
        let mut node = root.cast_const();
        loop {
            // SAFETY: as above.
            let h = unsafe { &*node };
            if !h.leaf {
                // SAFETY: an inner node (`repr(C)`, header first).
                let inner = unsafe { &*node.cast::<Inner<K>>() };
                let n = inner.count()?;
                if n == INNER_CAP {
                    self.split(path.last(), node, v, None)?;
                    return Err(Restart);
                }
                let pos = inner.search(k, hk, n, false)?;
                let child = inner.child(pos);
                inner.hdr.lock.validate(v)?;
                path.push(Step { node: inner, version: v, pos });
                // SAFETY: validated: a live child.
                let cv = unsafe { &*child }.lock.read()?;
                inner.hdr.lock.validate(v)?;
                node = child;
                v = cv;
                continue;
            }
            // SAFETY: a leaf.
            let leaf = unsafe { &*node.cast::<Leaf<K, V>>() };
            let n = leaf.count()?;
            let (pos, found) = leaf.lower_bound(k, hk, n)?;
            if found {
                let e = leaf.entry(pos);
                leaf.hdr.lock.validate(v)?;
                return Ok(Attempt::Found(e));
            }
            if n == LEAF_CAP {
                self.split(path.last(), node, v, Some(pos))?;
                return Err(Restart);
            }
            if mine.is_null() {
                leaf.hdr.lock.validate(v)?;
                return Ok(Attempt::Absent { leaf, version: v, pos });
            }
            leaf.hdr.lock.upgrade(v)?;
            // The leaf is as read at `v`: `k` is absent and goes at `pos`.
            leaf.insert_at(pos, hk, mine, n);
            leaf.hdr.lock.unlock();
            return Ok(Attempt::Inserted);
        }
    }

    /// Splits the full `node` (seen at version `v`; child `parent.pos` of
    /// `parent`, or the root): locks the parent, then the node, from the
    /// versions seen; `at` is where the insert's key goes in a leaf.
    fn split(&self, parent: Option<Step<K>>, node: *const Header, v: u64, at: Option<usize>) -> Result<(), Restart> {
        // SAFETY: nodes are freed only through the epoch; the caller is pinned.
        let (h, p) = (unsafe { &*node }, parent.map(|s| unsafe { &*s.node }));
        if let (Some(p), Some(s)) = (p, parent) {
            p.hdr.lock.upgrade(s.version)?;
        }
        if let Err(r) = h.lock.upgrade(v) {
            if let Some(p) = p {
                p.hdr.lock.unlock();
            }
            return Err(r);
        }
        // Locked at the versions seen: the node is full, and still the root
        // if it was (a root changes only under the old root's lock).
        debug_assert!(parent.is_some() || self.root.load(Ordering::Relaxed).cast_const() == node);
        let n = h.count();
        let (sep, right) = if h.leaf {
            // SAFETY: a leaf (header first).
            let leaf = unsafe { &*node.cast::<Leaf<K, V>>() };
            // Appends (descending inserts) leave the old leaf full.
            let cut = match at {
                Some(a) if a == n => n - 1,
                Some(0) => 1,
                _ => n / 2,
            };
            let right = Leaf::<K, V>::alloc();
            // SAFETY: just allocated, unpublished.
            let sep = leaf.split_into(unsafe { &*right }, cut, n);
            (sep, right.cast::<Header>())
        } else {
            // SAFETY: an inner node (header first).
            let inner = unsafe { &*node.cast::<Inner<K>>() };
            let right = Inner::<K>::alloc(ptr::null_mut());
            // SAFETY: just allocated, unpublished.
            let sep = inner.split_into(unsafe { &*right }, n);
            (sep, right.cast::<Header>())
        };
        match (p, parent) {
            (Some(p), Some(s)) => p.insert_child(s.pos, sep, right, p.hdr.count()),
            _ => {
                let root = Inner::<K>::alloc(node.cast_mut());
                // SAFETY: just allocated, unpublished.
                unsafe { &*root }.insert_child(0, sep, right, 1);
                // Release: publishes the new root's contents; stored before
                // the old root's unlock (see `descend`).
                self.root.store(root.cast(), Ordering::Release);
            }
        }
        h.lock.unlock();
        if let Some(p) = p {
            p.hdr.lock.unlock();
        }
        Ok(())
    }

    /// Removes `k`; true if it was present. Its entry is freed once an
    /// epoch has passed (references to its value under the caller's guard
    /// stay valid). A leaf left empty is unlinked.
    pub(crate) fn remove(&self, k: &K, guard: &Guard) -> bool {
        let hk = k.head();
        let mut path = Path::new();
        loop {
            let Ok(r) = self.descend(Target::AtLeast(k, hk), &mut path) else { continue };
            // SAFETY: as in `descend`.
            let leaf = unsafe { &*r.leaf };
            let Ok(n) = leaf.count() else { continue };
            let Ok((i, found)) = leaf.lower_bound(k, hk, n) else { continue };
            if !found {
                if leaf.hdr.lock.validate(r.version).is_err() {
                    continue;
                }
                return false;
            }
            if leaf.hdr.lock.upgrade(r.version).is_err() {
                continue;
            }
            let e = leaf.remove_at(i, n);
            leaf.hdr.lock.unlock();
            // SAFETY: the entry has left the tree; only this remove defers it.
            unsafe { defer_free(guard, e) };
            if n == 1 {
                self.prune(k, hk, guard);
            }
            return true;
        }
    }

    /// Unlinks the empty leaf on `k`'s path, if there is one, with every
    /// ancestor that it leaves without children.
    fn prune(&self, k: &K, hk: u64, guard: &Guard) {
        let mut path = Path::new();
        'restart: loop {
            let Ok(r) = self.descend(Target::AtLeast(k, hk), &mut path) else { continue };
            // SAFETY: as in `descend`.
            let leaf = unsafe { &*r.leaf };
            // SAFETY: as in `descend` (each node of the path).
            let count = |i: usize| unsafe { &*path.get(i).node }.hdr.count();
            // The lowest ancestor with another child: it keeps that one.
            let keep = (0..path.len).rev().find(|&i| count(i) > 1);
            let Some(j) = keep.filter(|_| leaf.hdr.count() == 0) else {
                // Not empty (refilled, or another leaf), or nothing above it
                // has another child: leave it, once the reads are confirmed.
                if leaf.hdr.lock.validate(r.version).is_err() || path.validate().is_err() {
                    continue;
                }
                return;
            };
            for i in j..path.len {
                let s = path.get(i);
                // SAFETY: as in `descend`.
                if unsafe { &*s.node }.hdr.lock.upgrade(s.version).is_err() {
                    for l in j..i {
                        // SAFETY: as above; locked by us just now.
                        unsafe { &*path.get(l).node }.hdr.lock.unlock();
                    }
                    continue 'restart;
                }
            }
            if leaf.hdr.lock.upgrade(r.version).is_err() {
                for l in j..path.len {
                    // SAFETY: as above.
                    unsafe { &*path.get(l).node }.hdr.lock.unlock();
                }
                continue;
            }
            // Everything as read: node `j` has more than one child, the
            // nodes below it one each, and the leaf is empty.
            let top = path.get(j);
            // SAFETY: as above.
            let top_node = unsafe { &*top.node };
            let sep = top_node.remove_child(top.pos, top_node.hdr.count());
            top_node.hdr.lock.unlock();
            for i in j + 1..path.len {
                let s = path.get(i);
                // SAFETY: as above.
                unsafe { &*s.node }.hdr.lock.unlock_obsolete();
                // SAFETY: unlinked just now (its parent is obsolete or lost
                // it); it holds no separator (one child), only we defer it.
                unsafe { defer_free(guard, s.node) };
            }
            leaf.hdr.lock.unlock_obsolete();
            // SAFETY: unlinked just now; empty; only we defer it.
            unsafe { defer_free(guard, r.leaf) };
            // SAFETY: the separator left its node; only we defer it.
            unsafe { defer_free(guard, sep.cast_const()) };
            return;
        }
    }
}

impl<K: TreeKey, V> Default for BTree<K, V> {
    fn default() -> Self {
        BTree::new()
    }
}

impl<K, V> Drop for BTree<K, V> {
    fn drop(&mut self) {
        // Relaxed: `&mut self`, no other access.
        drop_tree::<K, V>(self.root.load(Ordering::Relaxed));
    }
}

/// Frees a whole tree at `root` (exclusive access): what `Drop` runs.
fn drop_tree<K, V>(root: *mut Header) {
    fn free<K, V>(node: *mut Header) {
        // SAFETY: owned by the dropped tree (only `drop_tree` calls this).
        if unsafe { &*node }.leaf {
            // SAFETY: a leaf (header first), owned, and so are its entries.
            let leaf = unsafe { Box::from_raw(node.cast::<Leaf<K, V>>()) };
            for e in leaf.entries_raw() {
                // SAFETY: owned by the leaf.
                drop(unsafe { Box::from_raw(e) });
            }
        } else {
            // SAFETY: an inner node, owned, and so are its separators and children.
            let inner = unsafe { Box::from_raw(node.cast::<Inner<K>>()) };
            let (seps, kids) = inner.parts_raw();
            for s in seps {
                // SAFETY: owned by the node.
                drop(unsafe { Box::from_raw(s) });
            }
            for c in kids {
                free::<K, V>(c);
            }
        }
    }
    free::<K, V>(root);
}
