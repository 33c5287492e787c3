//! The map under one group of an ordered index, from entry key to
//! [`Slot`]: crossbeam's skip list, or the B+tree with optimistic lock
//! coupling ([`crate::index::btree`]), as [`OrderedMap`] chooses when the
//! database opens. Both keep a slot at one address from its insertion
//! until an epoch has passed after its removal (the versions of its chain
//! point to it), and both are read under an epoch guard without locks.
//!
//! The choice is one `match` per map operation (not per version): the
//! ordered index's own logic (groups, chains, retiring empty slots, the
//! bounds of a scan over index keys) is the same over either map.

use super::{IKey, Slot};
use crate::index::btree::BTree;
use crossbeam_epoch::Guard;
use crossbeam_skiplist::base::SkipList;
use std::ops::Bound;

/// The data structure under every ordered index of a database
/// ([`Options::ordered_map`](crate::Options::ordered_map)).
///
/// The B+tree keeps 32 entries per node with an 8-byte key head inline,
/// so lookups, inserts and above all scans touch a few cache lines where
/// the skip list follows a pointer per entry (the ordered index
/// microbenchmark, `docs/BENCHMARKS.md`). The skip list is the default.
///
/// ```
/// use multiverse::{Database, Isolation, Key, OrderedMap, Options, TableSpec};
///
/// let db = Database::new(Options::new().ordered_map(OrderedMap::BTree)).unwrap();
/// let t = db.create_table(TableSpec::ordered("log")).unwrap();
/// db.run(Isolation::Serializable, |x| (1..=100u64).try_for_each(|k| x.insert(t, Key::from(k), b""))).unwrap();
/// let mut x = db.begin(Isolation::Serializable).unwrap();
/// assert_eq!(x.range(db.primary(t), Key::from(10)..Key::from(20)).unwrap().count(), 10);
/// assert_eq!("b+tree".parse::<OrderedMap>(), Ok(OrderedMap::BTree));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OrderedMap {
    /// A concurrent skip list (crossbeam-skiplist): a node per entry.
    #[default]
    SkipList,
    /// A B+tree with optimistic lock coupling: entries in nodes of 32.
    BTree,
}

impl OrderedMap {
    /// Every map, by its name.
    pub const ALL: [(OrderedMap, &'static str); 2] =
        [(OrderedMap::SkipList, "skip-list"), (OrderedMap::BTree, "b+tree")];
}

impl std::fmt::Display for OrderedMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = OrderedMap::ALL.iter().find(|(m, _)| m == self).map_or("?", |(_, n)| n);
        f.write_str(name)
    }
}

impl std::str::FromStr for OrderedMap {
    type Err = String;
    fn from_str(s: &str) -> Result<OrderedMap, String> {
        match s {
            "skip-list" | "skiplist" => Ok(OrderedMap::SkipList),
            "b+tree" | "btree" => Ok(OrderedMap::BTree),
            _ => Err(format!("unknown ordered map `{s}` (expected skip-list or b+tree)")),
        }
    }
}

/// The entries of one group.
///
/// The skip list sits inline (about 520 bytes: its head tower), so a
/// B+tree group carries that much unused room; boxing it would add a
/// dependent load to every operation of the default map instead.
#[allow(clippy::large_enum_variant)]
pub(super) enum Entries {
    SkipList(SkipList<IKey, Slot>),
    BTree(BTree<IKey, Slot>),
}

impl Entries {
    pub(super) fn new(map: OrderedMap) -> Entries {
        match map {
            OrderedMap::SkipList => Entries::SkipList(SkipList::new(crossbeam_epoch::default_collector().clone())),
            OrderedMap::BTree => Entries::BTree(BTree::new()),
        }
    }

    /// Number of entries.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        match self {
            Entries::SkipList(l) => l.len(),
            Entries::BTree(t) => t.len(),
        }
    }

    /// The slot of exactly `k`.
    #[inline]
    pub(super) fn get<'g>(&'g self, k: &IKey, guard: &'g Guard) -> Option<&'g Slot> {
        match self {
            Entries::SkipList(l) => l.get(k, guard).map(|e| e.value()),
            Entries::BTree(t) => t.get(k, guard),
        }
    }

    /// The slot of `k`, a new empty one if absent.
    #[inline]
    pub(super) fn get_or_insert<'g>(&'g self, k: IKey, guard: &'g Guard) -> &'g Slot {
        match self {
            Entries::SkipList(l) => {
                let e = l.get_or_insert_with(k, Slot::empty, guard);
                let slot: *const Slot = e.value();
                e.release(guard);
                // SAFETY: a skip-list node is freed only through the epoch
                // (deferred on a guard once removed and unreferenced), and
                // we are pinned by `guard`: the slot outlives the borrow.
                unsafe { &*slot }
            }
            Entries::BTree(t) => t.get_or_insert_with(k, Slot::empty, guard).0,
        }
    }

    /// Removes the entry of `k` (the caller has retired its slot); its slot
    /// is freed once an epoch has passed.
    pub(super) fn remove(&self, k: &IKey, guard: &Guard) {
        match self {
            Entries::SkipList(l) => {
                if let Some(e) = l.remove(k, guard) {
                    e.release(guard);
                }
            }
            Entries::BTree(t) => {
                t.remove(k, guard);
            }
        }
    }

    /// Calls `f` on every entry from `from` on in ascending key order until
    /// it returns false; false if it did.
    #[inline]
    pub(super) fn range<'g>(
        &'g self,
        from: Bound<&IKey>,
        guard: &'g Guard,
        mut f: impl FnMut(&IKey, &Slot) -> bool,
    ) -> bool {
        match self {
            Entries::SkipList(l) => l.range((from, Bound::Unbounded), guard).all(|e| f(e.key(), e.value())),
            Entries::BTree(t) => {
                let mut all = true;
                t.range(from, Bound::Unbounded, guard, |k, s| {
                    all = f(k, s);
                    all
                });
                all
            }
        }
    }

    /// Calls `f` on every entry up to `to` in descending key order until it
    /// returns false; false if it did.
    #[inline]
    pub(super) fn range_rev<'g>(
        &'g self,
        to: Bound<&IKey>,
        guard: &'g Guard,
        mut f: impl FnMut(&IKey, &Slot) -> bool,
    ) -> bool {
        match self {
            Entries::SkipList(l) => l.range((Bound::Unbounded, to), guard).rev().all(|e| f(e.key(), e.value())),
            Entries::BTree(t) => {
                let mut all = true;
                t.range_rev(Bound::Unbounded, to, guard, |k, s| {
                    all = f(k, s);
                    all
                });
                all
            }
        }
    }
}
