//! Tables: a primary index plus any number of secondary indexes, all over the
//! same versions (every version is linked into every index, section 2.1).

use crate::breakdown::{self, Part};
use crate::index::hash::HashIndex;
use crate::index::key_locks::KeyLocks;
use crate::index::locks::RangeLocks;
use crate::index::ordered::{IKey, OrderedIndex, OrderedMap};
use crate::key::{Key, KEY_INLINE};
use crate::memory::Budget;
use crate::storage::version::Version;
use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use crate::Error;
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

mod desc;
mod spec;
pub(crate) use desc::TableDesc;
pub(crate) use spec::Types;
pub use spec::{HashTableSpec, IndexKind, KeyFn, TableKind, TableSpec};

/// Locks in the lock table of an ordered index (single-version locking).
const ORDERED_LOCKS: usize = 1 << 16;

pub(crate) enum IndexImpl {
    Hash(HashIndex),
    Ordered(Box<OrderedIndex>),
}

/// Walks one ordered-index chain; false if `f` asked to stop.
#[inline]
fn walk_chain<F: FnMut(&Version) -> bool>(o: &OrderedIndex, mut p: *mut Version, f: &mut F) -> bool {
    while !p.is_null() {
        // SAFETY: chain members are freed only after an epoch has passed, and
        // every caller is pinned.
        let v = unsafe { &*p };
        if !f(v) {
            return false;
        }
        p = o.next(v);
    }
    true
}

/// One index of a table.
pub(crate) struct Index {
    pub(crate) name: String,
    pub(crate) imp: IndexImpl,
    /// `None` for the primary index (keyed by the primary key).
    pub(crate) key_fn: Option<KeyFn>,
    /// MV/L range locks (section 4.1.2; bucket locks are in the buckets),
    /// also the key-range locks of single-version locking.
    pub(crate) ranges: RangeLocks,
    /// The lock table of single-version locking (section 5) for an ordered
    /// index (a hash index keeps its locks in its bucket words); `None`
    /// otherwise.
    pub(crate) locks: Option<KeyLocks>,
    /// SSN and SSI: the index's pseudo-versions for phantom protection
    /// (see `index::gaps`); `None` otherwise.
    pub(crate) gaps: Option<Box<crate::index::gaps::Gaps>>,
}

impl Index {
    /// The lock of keys with this hash in a single-version locking
    /// database (see [`crate::index::key_locks`]).
    #[inline]
    pub(crate) fn key_lock(&self, hash: u64) -> &AtomicU64 {
        match &self.imp {
            IndexImpl::Hash(h) => h.bucket_word(hash),
            IndexImpl::Ordered(_) => {
                self.locks.as_ref().expect("locking databases give ordered indexes a lock table").lock_of(hash)
            }
        }
    }

    /// The index key of a version in this index.
    #[inline]
    pub(crate) fn key_of(&self, v: &Version) -> Key {
        match self.key_fn {
            None => v.key(),
            Some(f) => v.with_value(|val| f(&v.key(), val)),
        }
    }

    /// True if `v`'s key in this index lies in the range (a hash index's
    /// full walk filters its rows by it). A long primary key is compared
    /// in place ([`Version::key_cmp`]): no allocation per row.
    #[inline]
    pub(crate) fn covers(&self, v: &Version, lo: &Bound<Key>, hi: &Bound<Key>) -> bool {
        use crate::index::locks::{contains, contains_by};
        if self.key_fn.is_some() || v.key_bytes().len() <= KEY_INLINE {
            return contains(lo, hi, &self.key_of(v));
        }
        contains_by(lo, hi, |b| v.key_cmp(b))
    }

    #[inline]
    fn ikey(&self, v: &Version) -> IKey {
        match self.key_fn {
            None => (v.key(), Key::EMPTY),
            Some(f) => (v.with_value(|val| f(&v.key(), val)), v.key()),
        }
    }

    /// Calls `f` on every version whose key in this index may equal `k`
    /// (exact for ordered indexes; hash chains also hold other keys, so the
    /// caller re-checks with [`Index::matches`]) until `f` returns false.
    ///
    /// The caller holds an epoch guard for the whole walk.
    ///
    /// Always inlined: it is every lookup's walk, and `f` (the caller's
    /// visibility or latest-version check) must inline into it (measured:
    /// left to the compiler, single-version locking's lookups called it out
    /// of line, +1.5% instructions per transaction).
    #[inline(always)]
    pub(crate) fn for_each_eq(&self, k: &Key, mut f: impl FnMut(&Version) -> bool) {
        let _timed = breakdown::span(Part::Index);
        match &self.imp {
            IndexImpl::Hash(h) => {
                let mut p = h.head(k.hash64());
                while !p.is_null() {
                    // SAFETY: chain members are freed only after an epoch has
                    // passed, and the caller is pinned.
                    let v = unsafe { &*p };
                    if !f(v) {
                        return;
                    }
                    p = h.next(v);
                }
            }
            IndexImpl::Ordered(o) => self.for_each_eq_ordered(o, k, &mut f),
        }
    }

    /// [`Index::for_each_eq`] on an ordered index. Out of line, so that the
    /// hash path keeps `f` inlined (its key pair and range walk made `f`
    /// too big to inline three times: measured, a Hekaton lookup's visible
    /// check became a call).
    #[inline(never)]
    fn for_each_eq_ordered(&self, o: &OrderedIndex, k: &Key, f: &mut impl FnMut(&Version) -> bool) {
        if self.key_fn.is_none() {
            walk_chain(o, o.head(&(k.clone(), Key::EMPTY)), f);
        } else {
            o.range(Bound::Included(k), Bound::Included(k), |_, h| walk_chain(o, h, &mut *f));
        }
    }

    /// Calls `f` on every version after `v` in the chain of this index that
    /// holds `v` (the versions linked into it before `v`), until `f` returns
    /// false. No index search: the walk starts from `v`'s own link.
    ///
    /// The caller holds an epoch guard for the whole walk, and `v` is linked.
    #[inline]
    pub(crate) fn for_each_after(&self, v: &Version, mut f: impl FnMut(&Version) -> bool) {
        let _timed = breakdown::span(Part::Index);
        let mut p = match &self.imp {
            IndexImpl::Hash(h) => h.next(v),
            IndexImpl::Ordered(o) => o.next(v),
        };
        while !p.is_null() {
            // SAFETY: chain members are freed only after an epoch has passed,
            // and the caller is pinned.
            let w = unsafe { &*p };
            if !f(w) {
                return;
            }
            p = match &self.imp {
                IndexImpl::Hash(h) => h.next(w),
                IndexImpl::Ordered(o) => o.next(w),
            };
        }
    }

    /// The hash of `v`'s key in this index (no key copy for the primary index).
    #[inline]
    pub(crate) fn hash_of(&self, v: &Version) -> u64 {
        match self.key_fn {
            None => crate::key::hash_bytes(v.key_bytes()),
            Some(f) => v.with_value(|val| f(&v.key(), val)).hash64(),
        }
    }

    /// True if `v`'s key in this index equals `k`.
    #[inline]
    pub(crate) fn matches(&self, v: &Version, k: &Key) -> bool {
        match self.key_fn {
            None => v.key_eq(k),
            Some(f) => v.with_value(|val| f(&v.key(), val)) == *k,
        }
    }

    /// Calls `f` on every version whose index key lies in the range, in key
    /// order for ordered indexes and bucket order for hash indexes (which can
    /// only be scanned whole: the range is then checked per version by the
    /// caller via [`Index::key_of`]).
    ///
    /// `rev`: an ordered index walks from `hi` down to `lo` (a hash index
    /// has no order to reverse).
    pub(crate) fn for_each_in(&self, lo: Bound<&Key>, hi: Bound<&Key>, rev: bool, mut f: impl FnMut(&Version) -> bool) {
        let _timed = breakdown::span(Part::Index);
        match &self.imp {
            IndexImpl::Hash(h) => {
                // The caller is pinned, as `scan` requires.
                h.scan(f);
            }
            IndexImpl::Ordered(o) if rev => o.range_rev(lo, hi, |_, p| walk_chain(o, p, &mut f)),
            IndexImpl::Ordered(o) => o.range(lo, hi, |_, p| walk_chain(o, p, &mut f)),
        }
    }

    /// True for indexes that deliver range scans in key order.
    pub(crate) fn is_ordered(&self) -> bool {
        matches!(self.imp, IndexImpl::Ordered(_))
    }
}

/// A table: its indexes; index 0 is the primary index and holds every version.
pub(crate) struct Table {
    #[allow(dead_code)] // kept for debugging and the history recorder
    pub(crate) id: u32,
    pub(crate) name: String,
    pub(crate) indexes: Vec<Index>,
    /// Link words of each version (see [`Table::link_words`]).
    link_words: usize,
    /// Bytes of the first version linked into the table (0 before): how
    /// much of a row [`crate::Transaction::prefetch`] asks the cache for.
    /// Exact for fixed-layout rows, a guess for the others.
    row_hint: AtomicUsize,
    /// The database's memory budget (with a limit): linking a new version
    /// counts its bytes (see `memory`).
    pub(crate) budget: Option<Arc<Budget>>,
    /// What a data directory records of the table (`desc`), less its
    /// types, which are `types`.
    shape: TableDesc,
    /// A typed table's key and value types: set when it is created typed,
    /// or by the first typed open of a table created without them.
    types: OnceLock<Types>,
}

impl Table {
    /// A table; `key_locks`: give every index a lock table (single-version
    /// locking); `ssn`: give every version SSN's two words and every index
    /// its pseudo-versions (SSN and SSI); `map`: the map under every
    /// ordered index.
    pub(crate) fn new(id: u32, spec: &TableSpec, key_locks: bool, ssn: bool, map: OrderedMap) -> Result<Table, Error> {
        if spec.name.is_empty() {
            return Err(Error::InvalidArgument("a table needs a name".into()));
        }
        if spec.secondary.len() + 1 > 16 {
            return Err(Error::InvalidArgument("a table has at most 16 indexes".into()));
        }
        spec.primary.check()?;
        for (_, kind, _) in &spec.secondary {
            kind.check()?;
        }
        // A version's words: a chain link per index, then a slot word per
        // ordered index (see `OrderedIndex`), numbered from `n`.
        let n = spec.secondary.len() + 1;
        let mut slot_word = n;
        let mut make = |kind: IndexKind, link: usize, key_fn: Option<KeyFn>| {
            let mut ordered = |prefix| {
                slot_word += 1;
                IndexImpl::Ordered(Box::new(OrderedIndex::new(link, slot_word - 1, prefix, map)))
            };
            match kind {
                IndexKind::Hash { capacity } => IndexImpl::Hash(HashIndex::new(capacity, link, key_fn)),
                IndexKind::Ordered => ordered(0),
                // A B+tree is not grouped: its inner nodes, few and hot in
                // the cache, find a prefix's entries as the groups would,
                // and a tree per small group (a leaf of 32 slots for three
                // customers of one last name) would cost memory and misses
                // (TPC-C: 17% fewer bytes per row, Payment no slower).
                IndexKind::OrderedGrouped { .. } if map == OrderedMap::BTree => ordered(0),
                IndexKind::OrderedGrouped { prefix } => ordered(prefix),
            }
        };
        // Hash indexes lock in their bucket words; ordered ones get a table.
        let locks = |kind: IndexKind| match kind {
            IndexKind::Hash { .. } => None,
            IndexKind::Ordered | IndexKind::OrderedGrouped { .. } => key_locks.then(|| KeyLocks::new(ORDERED_LOCKS)),
        };
        let index = |name: String, imp: IndexImpl, key_fn, kind| Index {
            name,
            imp,
            key_fn,
            ranges: RangeLocks::new(),
            locks: locks(kind),
            gaps: ssn.then(Box::default),
        };
        let mut indexes = vec![index("primary".into(), make(spec.primary, 0, None), None, spec.primary)];
        for (i, (name, kind, f)) in spec.secondary.iter().enumerate() {
            if name == "primary" || spec.secondary[..i].iter().any(|s| &s.0 == name) {
                return Err(Error::InvalidArgument(format!("duplicate index name '{name}'")));
            }
            indexes.push(index(name.clone(), make(*kind, i + 1, Some(*f)), Some(*f), *kind));
        }
        // SSN's words come last: the stamp word and the readers bitmap.
        let link_words = if ssn { slot_word + 2 } else { slot_word };
        let types = OnceLock::new();
        if let Some(t) = &spec.types {
            let _ = types.set(t.clone());
        }
        Ok(Table {
            id,
            name: spec.name.clone(),
            indexes,
            link_words,
            row_hint: AtomicUsize::new(0),
            budget: None,
            shape: TableDesc { types: None, ..TableDesc::of(spec) },
            types,
        })
    }

    /// The table's descriptor (what a data directory records of it).
    pub(crate) fn desc(&self) -> TableDesc {
        TableDesc { types: self.types.get().cloned(), ..self.shape.clone() }
    }

    /// Records the key and value types of a typed table if it has none
    /// yet: `Ok(true)` if they were recorded now, `Ok(false)` if the table
    /// has these already, and how they differ from the ones it was `was`
    /// with ("stored", "created") otherwise.
    pub(crate) fn record_types(&self, types: &Types, was: &str) -> Result<bool, String> {
        let mut recorded = false;
        let have = self.types.get_or_init(|| {
            recorded = true;
            types.clone()
        });
        match have.differs(types, was) {
            Some(d) => Err(d),
            None => Ok(recorded),
        }
    }

    /// Links a new version into every index.
    ///
    /// # Safety
    /// `v` is live, fully initialised, and not linked yet.
    pub(crate) unsafe fn link_all(&self, v: *mut Version) {
        // SAFETY: forwarded contract.
        unsafe { self.link_from(v, 0, None) }
    }

    /// [`Table::link_all`] of a version whose primary key's hash
    /// ([`Key::hash64`]) the caller has computed already.
    ///
    /// # Safety
    /// As for `link_all`; `hash` is `v`'s [`Version::key_hash`].
    pub(crate) unsafe fn link_all_hashed(&self, v: *mut Version, hash: u64) {
        // SAFETY: forwarded contract.
        unsafe { self.link_from(v, 0, Some(hash)) }
    }

    /// Links a new version into every index but the primary one, where
    /// the caller linked it already ([`OrderedIndex::insert_if`]).
    ///
    /// # Safety
    /// `v` is live, fully initialised, linked into the primary index only.
    pub(crate) unsafe fn link_secondaries(&self, v: *mut Version) {
        // SAFETY: forwarded contract.
        unsafe { self.link_from(v, 1, None) }
    }

    /// Links `v` into the indexes from number `first` on; `primary`, when
    /// given, is its hash in the first index.
    ///
    /// # Safety
    /// `v` is live, fully initialised, and not linked into those indexes.
    unsafe fn link_from(&self, v: *mut Version, first: usize, primary: Option<u64>) {
        // SAFETY: `v` is live per the contract.
        let r = unsafe { &*v };
        // Each version is linked once: by `link_all`, or by
        // `link_secondaries` after the caller's `insert_if`.
        self.charge(r);
        // Relaxed: a hint; once set it is only read, so the line stays shared.
        if self.row_hint.load(Ordering::Relaxed) == 0 {
            self.row_hint.store(r.footprint(), Ordering::Relaxed);
        }
        for (i, ix) in self.indexes.iter().enumerate().skip(first) {
            match &ix.imp {
                IndexImpl::Hash(h) => {
                    let hash = match primary {
                        Some(p) if i == 0 => p,
                        _ => ix.hash_of(r),
                    };
                    debug_assert_eq!(hash, ix.hash_of(r), "the caller's hash is the row's primary key's");
                    // SAFETY: forwarded contract.
                    unsafe { h.insert(v, hash) }
                }
                // SAFETY: forwarded contract.
                IndexImpl::Ordered(o) => unsafe { o.insert(v, ix.ikey(r)) },
            }
        }
    }

    /// Counts a version being linked against the memory budget, if any.
    #[inline]
    fn charge(&self, v: &Version) {
        if let Some(b) = &self.budget {
            b.charge(self.charged(v));
        }
    }

    /// The bytes a version of this table counts against the memory budget
    /// (see `memory`), the same when it is linked and when the collector
    /// unlinks it: its allocation ([`Version::footprint`]), and for a key
    /// longer than [`KEY_INLINE`] the heap copy each ordered index keeps in
    /// its entry for the key (an `Arc` buffer of the key's bytes). Counted
    /// per version, though versions of a key share their entry: it errs
    /// on the side of refusing writes early.
    #[inline]
    pub(crate) fn charged(&self, v: &Version) -> usize {
        let key = v.key_bytes().len();
        if key <= KEY_INLINE {
            return v.footprint();
        }
        v.footprint() + key * self.indexes.iter().filter(|ix| ix.is_ordered()).count()
    }

    /// Drives the growths under way in this table's hash indexes, each for
    /// at most `budget` (see `HashIndex::advance_growth`). The caller must
    /// not be pinned.
    pub(crate) fn advance_growth(&self, budget: std::time::Duration) {
        for ix in &self.indexes {
            if let IndexImpl::Hash(h) = &ix.imp {
                h.advance_growth(budget);
            }
        }
    }

    /// The link words each version of this table carries
    /// ([`Version::alloc`]'s `n_links`): one chain link per index, one
    /// word per ordered index for the slot heading the version's chain,
    /// and under SSN and SSI the version's stamp word and readers bitmap.
    #[inline]
    pub(crate) fn link_words(&self) -> usize {
        self.link_words
    }

    /// Bytes of a typical row of this table, to prefetch (at most 1 KiB;
    /// 64 before the first row exists).
    #[inline]
    pub(crate) fn row_hint(&self) -> usize {
        // Relaxed: a hint only.
        match self.row_hint.load(Ordering::Relaxed) {
            0 => 64,
            n => n.min(1024),
        }
    }

    /// Links the new version `v` of an updated row into every index: at the
    /// head of its chain, except in an ordered index whose key for the row
    /// did not change, where it goes right after `old`, the version it
    /// replaces (no search of the map; see [`OrderedIndex::insert_after`]).
    ///
    /// `hash` is the row's primary key hashed ([`Key::hash64`]), which the
    /// writer's lookup computed: the primary hash index's bucket for `v`.
    ///
    /// # Safety
    /// `v` is live, fully initialised, and not linked yet; `old` is the
    /// row's version that `v` replaces, linked into every index and
    /// write-locked by the caller, who is pinned.
    pub(crate) unsafe fn link_update(&self, v: *mut Version, old: *mut Version, hash: u64) {
        // SAFETY: both are live per the contract.
        let (r, o) = unsafe { (&*v, &*old) };
        self.charge(r);
        for (i, ix) in self.indexes.iter().enumerate() {
            match &ix.imp {
                IndexImpl::Hash(h) => {
                    let hash = if i == 0 { hash } else { ix.hash_of(r) };
                    debug_assert_eq!(hash, ix.hash_of(r), "the caller's hash is the row's primary key's");
                    // SAFETY: forwarded contract.
                    unsafe { h.insert(v, hash) }
                }
                IndexImpl::Ordered(oi) => {
                    let k = ix.ikey(r);
                    // The primary key never changes; a secondary key may.
                    if ix.key_fn.is_none() || k == ix.ikey(o) {
                        // SAFETY: forwarded contract; `old` is linked under `k`.
                        unsafe { oi.insert_after(old, v, &k) }
                    } else {
                        // SAFETY: forwarded contract.
                        unsafe { oi.insert(v, k) }
                    }
                }
            }
        }
    }

    /// Unlinks a version from every index; returns the longest walk it took
    /// to reach it in a chain (the collector's sign of a backlog, see
    /// [`Table::unlink_many`]). `primary` is the primary index's hash of `v`
    /// when the caller has it already (the collector has it from the
    /// writer, [`crate::gc::Garbage::hash`]): hashing the key again was a
    /// sixth of a collection's instructions per version.
    ///
    /// # Safety
    /// `v` is live and linked; the caller holds an epoch guard and frees `v`
    /// only after the epoch has passed. `primary`, when given, is
    /// `hash_of(v)` for the first index.
    pub(crate) unsafe fn unlink_all(&self, v: *mut Version, primary: Option<u64>) -> usize {
        // SAFETY: `v` is live per the contract.
        let r = unsafe { &*v };
        let mut longest = 0;
        for (i, ix) in self.indexes.iter().enumerate() {
            let walked = match &ix.imp {
                IndexImpl::Hash(h) => {
                    let hash = match primary {
                        Some(p) if i == 0 => {
                            debug_assert_eq!(p, ix.hash_of(r));
                            p
                        }
                        _ => ix.hash_of(r),
                    };
                    // SAFETY: forwarded contract.
                    unsafe { h.unlink(v, hash) }
                }
                // SAFETY: forwarded contract.
                IndexImpl::Ordered(o) => unsafe { o.unlink(v, &ix.ikey(r)) },
            };
            debug_assert!(walked.is_some(), "a version is linked into every index of its table");
            longest = longest.max(walked.unwrap_or(0));
        }
        longest
    }

    /// Unlinks the versions `vs` from every index with one walk per chain
    /// (hash bucket or key) for all of them, instead of one per version.
    /// `chains` and `set` are scratch space.
    ///
    /// # Safety
    /// As for [`Table::unlink_all`], for every member of `vs`.
    pub(crate) unsafe fn unlink_many(
        &self,
        vs: &[*mut Version],
        chains: &mut Vec<(u64, *mut Version)>,
        set: &mut Vec<*mut Version>,
    ) {
        for ix in &self.indexes {
            chains.clear();
            chains.extend(vs.iter().map(|&v| {
                // SAFETY: `v` is live per the contract.
                let r = unsafe { &*v };
                let chain = match &ix.imp {
                    IndexImpl::Hash(h) => h.chain_of(ix.hash_of(r)),
                    IndexImpl::Ordered(o) => o.chain_of(r),
                };
                (chain, v)
            }));
            // By chain, then by address within it (`unlink_set` searches it).
            chains.sort_unstable();
            for run in chains.chunk_by(|a, b| a.0 == b.0) {
                set.clear();
                set.extend(run.iter().map(|&(_, v)| v));
                let found = match &ix.imp {
                    // SAFETY: forwarded contract; every member has a hash of chain `run[0].0`.
                    IndexImpl::Hash(h) => unsafe { h.unlink_set(run[0].0, set) },
                    // SAFETY: forwarded contract; every member is in the chain of
                    // the same slot, so under the key of any of them.
                    IndexImpl::Ordered(o) => unsafe { o.unlink_set(&ix.ikey(&*run[0].1), set) },
                };
                debug_assert_eq!(found, set.len(), "a version is linked into every index of its table");
            }
        }
    }

    /// Starts loading what [`Table::unlink_all`] reads first: `v`'s header,
    /// links and key (its first two cache lines). A hint only: `v` is not
    /// read.
    #[inline]
    pub(crate) fn prefetch_version(v: *const Version) {
        crate::index::hash::prefetch(v as *const u8);
        crate::index::hash::prefetch((v as *const u8).wrapping_add(64));
    }

    /// Starts loading the primary hash index's bucket of `hash` (a
    /// version's [`Version::key_hash`]), which [`Table::unlink_all`] will
    /// lock and walk. A hint only; nothing is read.
    #[inline]
    pub(crate) fn prefetch_primary(&self, hash: u64) {
        if let IndexImpl::Hash(h) = &self.indexes[0].imp {
            h.prefetch_bucket(hash);
        }
    }

    /// Starts loading the secondary hash indexes' buckets that
    /// [`Table::unlink_all`] will lock and walk for `v` (reads `v`'s key
    /// and value to hash them; nothing without secondary indexes).
    ///
    /// # Safety
    /// `v` is live (as for `unlink_all`).
    #[inline(always)]
    pub(crate) unsafe fn prefetch_secondaries(&self, v: *mut Version) {
        if self.indexes.len() > 1 {
            // SAFETY: forwarded contract.
            unsafe { self.prefetch_secondary_buckets(v) }
        }
    }

    /// [`Table::prefetch_secondaries`] of a table that has them.
    ///
    /// # Safety
    /// As there.
    #[inline(never)]
    unsafe fn prefetch_secondary_buckets(&self, v: *mut Version) {
        for ix in &self.indexes[1..] {
            if let IndexImpl::Hash(h) = &ix.imp {
                // SAFETY: `v` is live per the contract.
                h.prefetch_bucket(ix.hash_of(unsafe { &*v }));
            }
        }
    }

    /// Calls `f` on every version linked into the primary index, once
    /// each; `f` must not free them while the walk goes on.
    pub(crate) fn for_each_version(&self, mut f: impl FnMut(*mut Version)) {
        let ix = &self.indexes[0];
        let mut walk = |mut p: *mut Version, next: &dyn Fn(&Version) -> *mut Version| {
            while !p.is_null() {
                // SAFETY: the caller guarantees exclusive or pinned access.
                let nx = next(unsafe { &*p });
                f(p);
                p = nx;
            }
        };
        match &ix.imp {
            IndexImpl::Hash(h) => {
                // A zipped chain is read again by its sibling's walk: `f`
                // must not free (the one caller collects first).
                h.scan(|v| {
                    f(v as *const Version as *mut Version);
                    true
                });
            }
            IndexImpl::Ordered(o) => o.for_each_head(|p| walk(p, &|v| o.next(v))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prefetch hint is the size of the first row linked, capped at
    /// 1 KiB, and one cache line before any row exists.
    #[test]
    fn row_hint_follows_the_first_row() {
        let t = Table::new(0, &TableSpec::hash("t", 16), false, false, OrderedMap::SkipList).unwrap();
        assert_eq!(t.row_hint(), 64);
        let a = Version::alloc(&Key::from(1), t.link_words(), &[0u8; 300], 2).as_ptr();
        let b = Version::alloc(&Key::from(2), t.link_words(), &[0u8; 20], 2).as_ptr();
        // SAFETY: fresh, unlinked versions; the table is ours alone.
        unsafe {
            t.link_all(a);
            t.link_all(b);
        }
        // SAFETY: `a` is live.
        assert_eq!(t.row_hint(), unsafe { &*a }.footprint(), "the first row sets it; later ones do not");
        let w = Table::new(1, &TableSpec::hash("w", 16), false, false, OrderedMap::SkipList).unwrap();
        let big = Version::alloc(&Key::from(1), w.link_words(), &[0u8; 4000], 2).as_ptr();
        // SAFETY: as above.
        unsafe { w.link_all(big) };
        assert_eq!(w.row_hint(), 1024);
        for (t, v) in [(&t, a), (&t, b), (&w, big)] {
            // SAFETY: linked above; nobody else can reach them.
            unsafe {
                t.unlink_all(v, None);
                Version::free(v);
            }
        }
    }
}
