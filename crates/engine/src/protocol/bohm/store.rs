//! BOHM's versions and store (section 3.1): one chain of versions per
//! record, partitioned by key hash, with each partition's map of latest
//! versions and its free list.

use super::*;
use crate::memory::Budget;
use std::sync::{Arc, OnceLock};

/// A record version (Figure 3).
///
/// ```text
///  begin  ts of the transaction that created it (placeholder owner)
///  end    ts of the transaction that superseded it, or INFINITY
///  txn    the cell of the producing transaction (meaningful while PENDING)
///  prev   the preceding version (followed only by the producer)
///  state  PENDING -> PRESENT | ABSENT, once (Release by the producer)
///  writer ts of the transaction whose value it holds: begin, or the
///         writer of prev when an abort copied prev in
///  data   the value (PRESENT only)
/// ```
pub(crate) struct BVersion {
    pub(super) begin: u64,
    pub(super) end: AtomicU64,
    pub(super) txn: *const u8,
    pub(super) prev: *mut BVersion,
    pub(super) state: AtomicU8,
    pub(super) writer: UnsafeCell<u64>,
    pub(super) data: UnsafeCell<Vec<u8>>,
    pub(super) table: u32,
    pub(super) key: Key,
    /// Bytes of `data`'s buffer counted against the memory budget (see
    /// [`Store::filled`]); written like `data`, by its producer.
    charged: UnsafeCell<usize>,
}

impl BVersion {
    #[inline]
    pub(super) fn state(&self) -> u8 {
        // Acquire: pairs with the producer's Release; the data and writer
        // are complete once the state is not PENDING.
        self.state.load(Ordering::Acquire)
    }
    /// The value. Only after `state()` returned PRESENT (or by the producer).
    #[inline]
    pub(super) unsafe fn data(&self) -> &[u8] {
        // SAFETY: (caller) produced, so no one writes it any more.
        unsafe { &*self.data.get() }
    }
    #[inline]
    pub(super) unsafe fn writer(&self) -> u64 {
        // SAFETY: (caller) as for `data`.
        unsafe { *self.writer.get() }
    }
}

/// A map key: table and primary key, hashed once.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct MapKey {
    pub(super) table: u32,
    pub(super) key: Key,
}

/// The hash of a record: its key's, mixed with its table's number.
#[inline]
pub(super) fn record_hash(table: u32, key: &Key) -> u64 {
    key.hash64() ^ (table as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl Hash for MapKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(record_hash(self.table, &self.key));
    }
}

/// Where a record is among declared ones, given their hashes (`hashes[i]`
/// is the `record_hash` of `list[i]`) and its own, `h`: the first
/// position whose hash, table and key all match. Hashes are compared
/// first, a word each, so a search costs a key comparison only on a hit.
#[inline]
pub(super) fn declared_at(hashes: &[u64], list: &[(TableId, Key)], h: u64, table: TableId, key: &Key) -> Option<usize> {
    debug_assert_eq!(hashes.len(), list.len());
    for (i, &x) in hashes.iter().enumerate() {
        if x == h && list[i].0 == table && list[i].1 == *key {
            return Some(i);
        }
    }
    None
}

pub(super) type Map<V> = HashMap<MapKey, V, BuildHasherDefault<crate::key::PassHasher>>;

/// A record's partition: the high half of its hash (the maps use it all).
pub(super) fn partition_of(table: u32, key: &Key) -> usize {
    partition_of_hash(record_hash(table, key))
}

/// [`partition_of`] from the record's hash.
#[inline]
pub(super) fn partition_of_hash(hash: u64) -> usize {
    ((hash >> 32) as usize) % PARTITIONS
}

/// What one partition's owner keeps: the latest version of every record
/// (section 3.2.3: "a thread-local data-structure"), retired versions and
/// free ones.
#[derive(Default)]
pub(super) struct PartInner {
    pub(super) latest: Latest,
    /// Superseded versions and the batch that superseded them, oldest first.
    pub(super) retired: VecDeque<(u64, *mut BVersion)>,
    pub(super) free: Vec<*mut BVersion>,
}

/// An absent version produced by an execution thread, for the owner of
/// its partition to unlink (see [`Store::collect`]).
pub(super) struct Note {
    pub(super) table: u32,
    pub(super) key: Key,
    pub(super) v: *mut BVersion,
}
// SAFETY: the pointer is only compared with the owner's map before use.
unsafe impl Send for Note {}

pub(super) struct Part {
    inner: UnsafeCell<PartInner>,
    /// Absent versions produced by execution threads, for the owner to
    /// unlink from its map (a latch taken once per delete or failed insert).
    pub(super) notes: Mutex<Vec<Note>>,
    created: AtomicU64,
    freed: AtomicU64,
}

/// BOHM's storage: partitions of version chains, and the gate that lets
/// one pipeline or one interactive transaction at a time own them.
pub(crate) struct Store {
    pub(super) parts: Box<[CachePadded<Part>]>,
    pub(super) gate: Mutex<()>,
    /// The next log position (timestamp). Advanced only by the gate's holder.
    pub(super) next_ts: AtomicU64,
    pub(super) committed: AtomicU64,
    pub(super) aborts: [AtomicU64; AbortReason::COUNT],
    /// The database's memory budget (with a limit; see `memory`): versions
    /// count from their allocation, values once written, until freed.
    budget: OnceLock<Arc<Budget>>,
}

// SAFETY: partitions are used by the gate's holder only (the pipeline's
// threads each on their own partitions, see `Pipeline`), or by an
// interactive transaction alone.
unsafe impl Sync for Store {}
// SAFETY: as above.
unsafe impl Send for Store {}

impl Store {
    pub(crate) fn new() -> Store {
        Store {
            parts: (0..PARTITIONS)
                .map(|_| {
                    CachePadded::new(Part {
                        inner: UnsafeCell::new(PartInner::default()),
                        notes: Mutex::new(Vec::new()),
                        created: AtomicU64::new(0),
                        freed: AtomicU64::new(0),
                    })
                })
                .collect(),
            gate: Mutex::new(()),
            next_ts: AtomicU64::new(2),
            committed: AtomicU64::new(0),
            aborts: std::array::from_fn(|_| AtomicU64::new(0)),
            budget: OnceLock::new(),
        }
    }

    /// Counts the store's versions against `budget` from now on (set once,
    /// before any transaction runs).
    pub(crate) fn set_budget(&self, budget: Arc<Budget>) {
        let _ = self.budget.set(budget);
    }

    /// Counts the value just written into `v` against the memory budget.
    /// Called by the version's producer once its value is final.
    #[inline]
    pub(super) fn filled(&self, v: *mut BVersion) {
        if let Some(b) = self.budget.get() {
            // SAFETY: (caller) the producer's own version, not yet produced:
            // nobody else reads or writes its data or `charged`.
            let (cap, charged) = unsafe { ((*(*v).data.get()).capacity(), &mut *(*v).charged.get()) };
            if cap > *charged {
                b.charge(cap - *charged);
            } else {
                b.release(*charged - cap);
            }
            *charged = cap;
        }
    }

    /// (committed, aborts by reason, versions alive).
    pub(crate) fn totals(&self) -> (u64, [u64; AbortReason::COUNT], u64) {
        // Relaxed: statistics only.
        let aborts = std::array::from_fn(|i| self.aborts[i].load(Ordering::Relaxed));
        let (mut c, mut f) = (0u64, 0u64);
        for p in self.parts.iter() {
            c += p.created.load(Ordering::Relaxed);
            f += p.freed.load(Ordering::Relaxed);
        }
        (self.committed.load(Ordering::Relaxed), aborts, c.saturating_sub(f))
    }

    /// The partition's owner state.
    ///
    /// # Safety
    /// The caller owns partition `p` (module docs): no other reference to
    /// its inner state exists.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn part(&self, p: usize) -> &mut PartInner {
        // SAFETY: (caller) exclusive ownership of the partition.
        unsafe { &mut *self.parts[p].inner.get() }
    }

    /// A fresh version (from the free list when possible).
    pub(super) fn alloc(&self, p: usize, inner: &mut PartInner, init: BInit) -> *mut BVersion {
        // Relaxed: statistics only.
        self.parts[p].created.fetch_add(1, Ordering::Relaxed);
        if let Some(b) = self.budget.get() {
            b.charge(std::mem::size_of::<BVersion>());
        }
        if let Some(v) = inner.free.pop() {
            // SAFETY: a freed version of this partition, owned by us.
            let r = unsafe { &mut *v };
            r.begin = init.begin;
            *r.end.get_mut() = INFINITY;
            r.txn = init.txn;
            r.prev = init.prev;
            *r.state.get_mut() = init.state;
            *r.writer.get_mut() = init.begin;
            r.data.get_mut().clear();
            r.table = init.table;
            r.key = init.key;
            *r.charged.get_mut() = 0;
            return v;
        }
        Box::into_raw(Box::new(BVersion {
            begin: init.begin,
            end: AtomicU64::new(INFINITY),
            txn: init.txn,
            prev: init.prev,
            state: AtomicU8::new(init.state),
            writer: UnsafeCell::new(init.begin),
            data: UnsafeCell::new(Vec::new()),
            table: init.table,
            key: init.key,
            charged: UnsafeCell::new(0),
        }))
    }

    /// Frees a version no reader can reach any more.
    pub(super) fn free(&self, p: usize, inner: &mut PartInner, v: *mut BVersion) {
        // Relaxed: statistics only.
        self.parts[p].freed.fetch_add(1, Ordering::Relaxed);
        if let Some(b) = self.budget.get() {
            // SAFETY: unreachable now: ours alone.
            b.release(std::mem::size_of::<BVersion>() + unsafe { *(*v).charged.get() });
        }
        if inner.free.len() < FREE_KEEP {
            inner.free.push(v);
        } else {
            // SAFETY: allocated by `alloc` with Box, unreachable now.
            drop(unsafe { Box::from_raw(v) });
        }
    }

    /// The owner's housekeeping: unlink absent versions that are still the
    /// latest of their record (they are retired in batch `now`), then free
    /// what the low watermark allows (every execution thread has finished
    /// the batches below `low`).
    pub(super) fn collect(&self, p: usize, now: u64, low: u64) {
        // SAFETY: the caller owns partition p.
        let inner = unsafe { self.part(p) };
        let notes = std::mem::take(&mut *self.parts[p].notes.lock());
        for Note { table, key, v } in notes {
            // Compare first, dereference after: a version that is still the
            // latest of its record is alive (a note may outlive its version).
            if inner.latest.get(table, &key) != v {
                continue;
            }
            // SAFETY: the latest version of a record is alive.
            if unsafe { &*v }.state() == ABSENT {
                inner.latest.remove(table, &key);
                inner.retired.push_back((now, v));
            }
        }
        while let Some(&(b, v)) = inner.retired.front() {
            if b >= low {
                break;
            }
            inner.retired.pop_front();
            self.free(p, inner, v);
        }
    }
}

/// The fields of a new version.
pub(super) struct BInit {
    pub(super) begin: u64,
    pub(super) txn: *const u8,
    pub(super) prev: *mut BVersion,
    pub(super) state: u8,
    pub(super) table: u32,
    pub(super) key: Key,
}

impl Drop for Store {
    fn drop(&mut self) {
        for p in self.parts.iter_mut() {
            let inner = p.inner.get_mut();
            // At rest nothing is retired (a run frees all before it ends);
            // versions reachable as the latest, and free ones, remain.
            for (_, v) in inner.retired.drain(..) {
                // SAFETY: exclusive access; retired versions are in no map.
                drop(unsafe { Box::from_raw(v) });
            }
            inner.latest.drain(|v| {
                // SAFETY: as above; each version is the latest of one record.
                drop(unsafe { Box::from_raw(v) });
            });
            for v in inner.free.drain(..) {
                // SAFETY: as above.
                drop(unsafe { Box::from_raw(v) });
            }
        }
    }
}
