//! The latest version of every record of one partition: the "thread-local
//! data-structure" of BOHM section 3.2.3 that a concurrency-control thread
//! consults to fill a placeholder's Prev Pointer and to annotate a read.
//!
//! An open-addressing table with linear probing, at most half full:
//!
//! ```text
//!  slot   hash: u64   the record's hash (record_hash), to skip other records
//!         v: *mut BVersion   the latest version; null: the slot is empty
//! ```
//!
//! A version carries its record's table and key, so a slot holds no copy
//! of the key (16 bytes a slot, against 48 for a `HashMap<MapKey, _>`
//! entry); a record is confirmed by comparing the version's key once the
//! hashes match. Unlike `std`'s map, the table lets the planner start
//! loading the slot, and then the version, of a record it will look up a
//! few reads later ([`Latest::prefetch_slot`], [`Latest::prefetch_version`]):
//! a long reader's 10,000 annotations then overlap their cache misses
//! instead of taking them one after the other.
//!
//! Only the partition's owner uses it (no atomics). Every pointer in it is
//! a live version: the owner removes or replaces a version before it frees
//! it (module docs of `bohm`).

use super::{record_hash, BVersion};
use crate::index::hash::prefetch;
use crate::key::Key;
use std::ptr;

#[derive(Clone, Copy)]
struct Slot {
    hash: u64,
    v: *mut BVersion,
}

const EMPTY: Slot = Slot { hash: 0, v: ptr::null_mut() };

/// Slots of a new table.
const INITIAL: usize = 16;

pub(super) struct Latest {
    /// A power of two long.
    slots: Box<[Slot]>,
    len: usize,
}

impl Default for Latest {
    fn default() -> Latest {
        Latest { slots: vec![EMPTY; INITIAL].into_boxed_slice(), len: 0 }
    }
}

impl Latest {
    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// Where the record is (Ok), or the empty slot that ends its probe
    /// sequence (Err).
    #[inline]
    fn find(&self, hash: u64, table: u32, key: &Key) -> Result<usize, usize> {
        let mask = self.mask();
        let mut i = hash as usize & mask;
        loop {
            let s = self.slots[i];
            if s.v.is_null() {
                return Err(i);
            }
            if s.hash == hash {
                // SAFETY: every version in the table is alive (module docs).
                let v = unsafe { &*s.v };
                if v.table == table && v.key == *key {
                    return Ok(i);
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// The latest version of a record (null: none).
    #[inline]
    pub(super) fn get(&self, table: u32, key: &Key) -> *mut BVersion {
        self.get_hashed(record_hash(table, key), table, key)
    }

    /// [`Latest::get`] with the record's hash already computed.
    #[inline]
    pub(super) fn get_hashed(&self, hash: u64, table: u32, key: &Key) -> *mut BVersion {
        match self.find(hash, table, key) {
            Ok(i) => self.slots[i].v,
            Err(_) => ptr::null_mut(),
        }
    }

    /// Makes `v` (not null, alive) the latest version of its record,
    /// replacing the one there was.
    pub(super) fn set(&mut self, v: *mut BVersion) {
        // SAFETY: (caller) alive.
        let (table, key) = unsafe { ((*v).table, &(*v).key) };
        self.set_hashed(record_hash(table, key), v);
    }

    /// [`Latest::set`] with the record's hash already computed.
    pub(super) fn set_hashed(&mut self, hash: u64, v: *mut BVersion) {
        debug_assert!(!v.is_null());
        // SAFETY: (caller) alive.
        let (table, key) = unsafe { ((*v).table, &(*v).key) };
        match self.find(hash, table, key) {
            Ok(i) => self.slots[i].v = v,
            Err(i) => {
                self.slots[i] = Slot { hash, v };
                self.len += 1;
                if self.len * 2 > self.slots.len() {
                    self.grow();
                }
            }
        }
    }

    /// Forgets a record; true if it was there.
    pub(super) fn remove(&mut self, table: u32, key: &Key) -> bool {
        self.remove_hashed(record_hash(table, key), table, key)
    }

    fn remove_hashed(&mut self, hash: u64, table: u32, key: &Key) -> bool {
        let Ok(mut hole) = self.find(hash, table, key) else { return false };
        self.len -= 1;
        // Backward-shift deletion: move up every later member of the probe
        // run whose home slot does not lie between the hole and itself, so
        // that no probe stops early at the hole.
        let mask = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let s = self.slots[j];
            if s.v.is_null() {
                break;
            }
            let home = s.hash as usize & mask;
            // Distances travelled (cyclically): from home to j, hole to j.
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole] = EMPTY;
        true
    }

    fn grow(&mut self) {
        let bigger = vec![EMPTY; self.slots.len() * 2].into_boxed_slice();
        let old = std::mem::replace(&mut self.slots, bigger);
        let mask = self.mask();
        for s in old.iter().filter(|s| !s.v.is_null()) {
            let mut i = s.hash as usize & mask;
            while !self.slots[i].v.is_null() {
                i = (i + 1) & mask;
            }
            self.slots[i] = *s;
        }
    }

    /// Every latest version.
    pub(super) fn versions(&self) -> impl Iterator<Item = *mut BVersion> + '_ {
        self.slots.iter().filter(|s| !s.v.is_null()).map(|s| s.v)
    }

    /// Empties the table, handing each version to `f`.
    pub(super) fn drain(&mut self, mut f: impl FnMut(*mut BVersion)) {
        for s in self.slots.iter_mut().filter(|s| !s.v.is_null()) {
            f(std::mem::replace(s, EMPTY).v);
        }
        self.len = 0;
    }

    /// Starts loading the home slot of a record's hash (a hint).
    #[inline]
    pub(super) fn prefetch_slot(&self, hash: u64) {
        prefetch(&self.slots[hash as usize & self.mask()] as *const Slot as *const u8);
    }

    /// Starts loading the version a lookup of this hash will compare (a
    /// hint; best once its slot has arrived, see [`Latest::prefetch_slot`]).
    #[inline]
    pub(super) fn prefetch_version(&self, hash: u64) {
        let mask = self.mask();
        let mut i = hash as usize & mask;
        loop {
            let s = self.slots[i];
            if s.v.is_null() {
                return;
            }
            if s.hash == hash {
                prefetch(s.v as *const u8);
                return;
            }
            i = (i + 1) & mask;
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BInit, Store, PENDING};
    use super::*;
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    use std::collections::HashMap;

    /// A version of record (table, key), allocated from a throwaway store.
    fn version(store: &Store, table: u32, key: u64) -> *mut BVersion {
        // SAFETY: the test is the store's only user.
        let inner = unsafe { store.part(0) };
        let init =
            BInit { begin: 1, txn: ptr::null(), prev: ptr::null_mut(), state: PENDING, table, key: Key::from_u64(key) };
        store.alloc(0, inner, init)
    }

    /// Random sets, replacements and removals agree with a `HashMap` model,
    /// across growth, in a table small enough that probe runs wrap and
    /// records of two tables share keys.
    #[test]
    fn agrees_with_a_map() {
        let store = Store::new();
        for seed in 0..20u64 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut t = Latest::default();
            let mut model: HashMap<(u32, u64), *mut BVersion> = HashMap::new();
            let keys = [8u64, 40, 300][seed as usize % 3];
            for _ in 0..4000 {
                let (table, key) = (rng.gen_range(0..2u32), rng.gen_range(0..keys));
                let k = Key::from_u64(key);
                if rng.gen_range(0..3) == 0 {
                    assert_eq!(t.remove(table, &k), model.remove(&(table, key)).is_some());
                } else {
                    let v = version(&store, table, key);
                    t.set(v);
                    model.insert((table, key), v);
                }
                assert_eq!(t.len(), model.len());
                for probe in 0..keys.min(50) {
                    for tb in 0..2 {
                        let want = model.get(&(tb, probe)).copied().unwrap_or(ptr::null_mut());
                        assert_eq!(t.get(tb, &Key::from_u64(probe)), want, "seed {seed}: ({tb}, {probe})");
                    }
                }
            }
            let mut all: Vec<_> = t.versions().collect();
            let mut want: Vec<_> = model.values().copied().collect();
            all.sort();
            want.sort();
            assert_eq!(all, want);
            let mut drained = 0;
            t.drain(|_| drained += 1);
            assert_eq!((drained, t.len(), t.versions().count()), (model.len(), 0, 0));
        }
    }

    /// Records whose hashes share a home slot, or whose runs wrap past the
    /// table's end, are all found, through growth and removals in any
    /// order (hashes planted: many records on few home slots).
    #[test]
    fn colliding_hashes_stay_reachable() {
        let store = Store::new();
        for seed in 0..50u64 {
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut t = Latest::default();
            // Home slots 14, 15 and 0 of the first 16: runs wrap.
            let hash = |k: u64| [14u64, 15, 16, 30, 31][k as usize % 5] | (k << 40);
            let mut live: HashMap<u64, *mut BVersion> = HashMap::new();
            for _ in 0..300 {
                let k = rng.gen_range(0..12u64);
                if rng.gen_range(0..2) == 0 {
                    let v = version(&store, 0, k);
                    t.set_hashed(hash(k), v);
                    live.insert(k, v);
                } else {
                    assert_eq!(t.remove_hashed(hash(k), 0, &Key::from_u64(k)), live.remove(&k).is_some());
                }
                for k in 0..12 {
                    let want = live.get(&k).copied().unwrap_or(ptr::null_mut());
                    assert_eq!(t.get_hashed(hash(k), 0, &Key::from_u64(k)), want, "seed {seed}: key {k}");
                }
            }
        }
    }
}
