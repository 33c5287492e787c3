//! Single-version locking, "1V": Larson et al., *High-Performance
//! Concurrency Control Mechanisms for Main-Memory Databases* (VLDB 2011),
//! section 5 — the baseline the paper measures MV/O and MV/L against.
//!
//! **Records** are Silo's in-place records ([`crate::protocol::silo`]): one
//! per key, rewritten in place, the Begin word holding the latest and
//! absent bits and the writer's commit TID (the lock bit is unused here).
//!
//! **Locks.** "No central lock manager [...] we embed a lock table in every
//! index and assign each hash key to a lock in this partitioned lock table. A
//! lock covers all records with the same hash key which automatically
//! protects against phantoms. We use timeouts to detect and break
//! deadlocks." The tables are `index::key_locks`: one word per lock,
//! shared (S) or exclusive (X), found from the key's hash.
//!
//! * A read locks the key S. Read committed holds the lock only while the
//!   row is copied (a short lock: cursor stability, section 5.2.1), so it
//!   never sees a write in progress — and writes reach records only at
//!   commit, so it never sees uncommitted data either. Repeatable read and
//!   serializable hold read locks to the end ("long read locks").
//! * A write (update, delete, insert) locks the key X to the end; an S lock
//!   we hold is upgraded. An insert also locks its row's keys in every
//!   secondary index, and an update that moves a row in a secondary index
//!   its new key there, so that a reader who found no row under a secondary
//!   key keeps the row out.
//! * A lookup through a secondary index locks the secondary key S (at
//!   serializable, long: phantoms), then each row's primary key S.
//! * **Range scans** (ordered indexes, and scans of a whole hash index) at
//!   serializable take a **key-range lock** on the index: the range, in the
//!   index's list of locked ranges (`index::locks::RangeLocks`,
//!   shared with MV/L). Anybody who links a record into a range locked by
//!   another transaction — an insert, or a row moved into it — withdraws the
//!   record, waits for the range to be unlocked (or times out) and tries
//!   again. The two sides meet as in Dekker's algorithm: the scanner locks
//!   the range and then walks; the writer links and then looks for ranges.
//!   Either the walk meets the record (and waits for its key's lock) or the
//!   writer meets the range.
//! * Every wait is bounded by [`crate::Options::lock_timeout`]; a wait that
//!   outlasts it aborts the waiter with `lock-timeout`. Section 5 breaks
//!   deadlocks this way. Here a waiter also publishes what it waits for and
//!   looks for a cycle of waits when it starts to wait and then every
//!   [`crate::Options::deadlock_interval`] (see `deadlock_victim`): the
//!   cycle's youngest transaction among those whose slots lost the fewest
//!   deadlocks in a row aborts with
//!   `deadlock` as soon as any member of the cycle finds it (the finder
//!   marks the victim, whose wait looks at the mark at every round, and
//!   the finder then waits without sleeping; the victim yields the CPU
//!   once before it can be retried, so the survivors get there first), long
//!   before the timeout, which then only bounds a wait behind a holder
//!   that keeps running.
//!
//! **Writes are deferred.** An update is kept in the WriteSet (with Silo's
//! value arena) and written into the record at commit, while its X lock is
//! held; an insert links an absent placeholder at once (the key is X
//! locked, so nobody else can). Commit therefore has nothing to undo and no
//! reader ever meets a half-written row. Commit runs in three phases:
//! 1. *prepare*: a value that cannot be written in place (another length, or
//!    another secondary key) gets a new record, linked absent; one that
//!    moves into a range another transaction locked is withdrawn and waited
//!    for (as for an insert);
//! 2. *stamp*: with history recording on, or in a durable database, the
//!    commit TID is drawn from a shared sequence while every lock is held,
//!    so TIDs follow the serialization order (2PL serializes at any point
//!    between a transaction's last lock and its first release); a durable
//!    commit logs its writes under that TID now. Otherwise no shared
//!    counter is touched, and TIDs are 0;
//! 3. *install* the writes, then release every lock.
//!
//! What differs from the paper, deliberately:
//! * deadlock detection beside the timeouts (above): with timeouts alone a
//!   deadlock costs both its transactions the whole timeout, and at high
//!   contention that dominated (docs/REPRODUCTIONS.md: 402K transactions per
//!   second with a 2-ms timeout, 965K with 20 µs); detection ends it at the
//!   first check and lets the timeout be long enough for real waits;
//! * a transaction waiting to upgrade its S lock to X marks the lock word
//!   (`key_locks`' count of upgraders), and new readers wait behind the
//!   marks: an upgrade is not starved by a stream of readers, and a
//!   deadlock's victim that retries at once cannot take its read lock back
//!   before the survivor upgrades (the victim withdraws only its own mark;
//!   a plain X waiter does not mark: readers keep sharing while it waits,
//!   as in the paper). Without it, with
//!   8 threads on 2 cores, that race repeated until the survivor was
//!   scheduled again, and 1V kept under 1% of its 2-thread throughput
//!   (docs/BENCHMARKS.md, "Oversubscribed"). The deadlock detector counts
//!   a reader waiting behind a mark as waiting for the upgrader who set it;
//! * two upgrades of one lock are a deadlock known without a graph: a
//!   holder that wants to upgrade and finds another upgrader's mark aborts
//!   at once (`deadlock`), instead of waiting a deadlock interval for the
//!   detector (`wait::wait_for_lock`);
//! * the paper names no lock mode for its range scans (its workloads use a
//!   hash index only); the key-range locks above keep ordered-index scans
//!   phantom-free at serializable;
//! * repeatable read takes no key-range locks (its scans may see phantoms),
//!   while its point lookups are phantom-free, as the paper says of a hash
//!   key's lock.

mod commit;
mod wait;

pub(crate) use wait::*;

use crate::error::AbortReason;
use crate::history::{Op, Outcome, WriteKind, Writer};
use crate::index::key_locks::{
    announce_writer, looks_free, try_exclusive, try_shared, unlock, upgrader_waiting, withdraw_writer, LockMode,
};
use crate::index::locks::contains as in_range;
use crate::key::Key;
use crate::protocol::core::{CommitInfo, Hooks, Status, TxnCore};
use crate::protocol::sets::{Sets, SlotSets};
use crate::protocol::single::{find_latest, walk_range, SiloGlobal, SiloLocal, ABSENT, LATEST, TID};
use crate::storage::version::{VPtr, Version};
use crate::sync::atomic::{fence, AtomicU64, Ordering};
use crate::table::{Index, Table};
use crate::txn::table::TxnState;
use crate::txn::Filter;
use crate::{Error, IndexId, Isolation, Result, TableId};
use crossbeam_utils::Backoff;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::ops::Bound;
use std::time::{Duration, Instant};

/// The final word of a placeholder that never became a row (an insert
/// withdrawn from a locked range, or rolled back), with the absent bit: a
/// scan waiting on it stops waiting. Silo's lock bit, which the locking
/// protocols do not use otherwise.
pub(crate) const WITHDRAWN: u64 = crate::protocol::single::LOCK;

/// Locks held looked up by a linear search up to this many; a map beyond.
const LINEAR: usize = 16;

/// A lock held: its word and mode.
#[derive(Clone, Copy)]
pub(crate) struct Held {
    pub(crate) word: *const AtomicU64,
    pub(crate) mode: LockMode,
}

/// The lock sets of a locking transaction, kept per slot in [`LockGlobal`]
/// (capacity reused: no allocation per transaction in the steady state).
#[derive(Default)]
pub(crate) struct LockLocal {
    /// LockSet: every lock held to the end, in acquisition order.
    pub(crate) held: Vec<Held>,
    /// Index into `held` by lock address, once `held` outgrows [`LINEAR`].
    map: HashMap<usize, u32, BuildHasherDefault<crate::key::PassHasher>>,
    /// Indexes in which we hold key-range locks.
    pub(crate) ranges: Vec<(u32, u8)>,
    /// Records a scan delivered out of its walk, and every record it
    /// delivered (see `scan`).
    redirected: Vec<VPtr>,
    delivered: Vec<VPtr>,
    /// Short read locks only: the primary keys a scan handed on (see
    /// `scan`).
    delivered_keys: HashSet<Key, BuildHasherDefault<crate::key::PassHasher>>,
    /// Commit phase 1: (WriteSet entry, its new record).
    prepared: Vec<(usize, VPtr)>,
    /// Ordered 2PL: the declared locks, sorted (see `ordered_2pl`).
    pub(crate) order: Vec<(usize, LockMode)>,
}

impl LockLocal {
    pub(crate) fn clear(&mut self) {
        debug_assert!(self.held.is_empty() && self.ranges.is_empty(), "locks are released before the sets are cleared");
        self.held.clear();
        self.map.clear();
        self.ranges.clear();
        self.redirected.clear();
        self.delivered.clear();
        self.prepared.clear();
    }

    /// Where `w` is in the LockSet.
    #[inline]
    fn find(&self, w: *const AtomicU64) -> Option<usize> {
        if self.held.len() <= LINEAR {
            self.held.iter().position(|h| h.word == w)
        } else {
            self.map.get(&(w as usize)).map(|&i| i as usize)
        }
    }

    #[inline(always)] // every lock taken: out of line, +1.3% instructions per 2PL transaction
    pub(crate) fn push(&mut self, h: Held) {
        self.held.push(h);
        let n = self.held.len();
        if n == LINEAR + 1 {
            self.map.extend(self.held.iter().enumerate().map(|(i, h)| (h.word as usize, i as u32)));
        } else if n > LINEAR + 1 {
            self.map.insert(h.word as usize, (n - 1) as u32);
        }
    }
}

/// True if `k` lies in the range (`Eq` scans pass equal bounds).
#[inline]
fn key_in(lo: &Bound<Key>, hi: &Bound<Key>, k: &Key) -> bool {
    in_range(lo, hi, k)
}

/// A transaction of 1V or ordered 2PL (Hekaton section 5): its LockSet is
/// the slot's [`LockLocal`]; its WriteSet and new values are kept as
/// Silo's are, in the slot's `SiloLocal`, and installed alike.
/// The database-wide state of 1V and ordered 2PL: the single-version
/// families' epoch and commit-TID sequence, and each slot's LockSet (which
/// the deadlock detector reads while its owner waits, see `wait`).
pub(crate) struct LockGlobal {
    pub(crate) single: SiloGlobal,
    pub(crate) sets: SlotSets<LockLocal>,
}

impl LockGlobal {
    pub(crate) fn new(slots: usize) -> LockGlobal {
        LockGlobal { single: SiloGlobal::new(slots), sets: SlotSets::new(slots) }
    }
}

pub(crate) struct LockTxn<'db> {
    pub(crate) core: TxnCore<'db>,
    /// The family's database-wide state.
    pub(crate) g: &'db LockGlobal,
    /// The LockSet, in the slot's [`LockLocal`].
    pub(crate) locks: Sets<'db, LockLocal>,
    /// The WriteSet and its values, in the slot's [`SiloLocal`].
    pub(crate) sv: Sets<'db, SiloLocal>,
    /// Read locks held to the end (repeatable read, serializable).
    pub(crate) long_reads: bool,
    /// Key-range locks on scans (serializable).
    pub(crate) key_range: bool,
    /// Ordered 2PL: every declared lock was taken at begin; no more
    /// primary-key locks may be taken.
    pub(crate) declared: bool,
    /// Waits published so far (`LockWait::seq`).
    waits: u32,
}

impl<'db> LockTxn<'db> {
    #[inline]
    pub(crate) fn new(mut core: TxnCore<'db>, g: &'db LockGlobal) -> Self {
        let (iso, faults) = (core.isolation, &core.db.opts.faults);
        let long_reads = iso >= Isolation::RepeatableRead && !faults.skip_validation;
        let key_range = iso == Isolation::Serializable && !faults.skip_validation;
        // Read locks held to the commit: the reads hold until then.
        core.shape.locking = long_reads;
        let mut locks = Sets::of(&g.sets, core.slot);
        // The slot's last occupant released every lock (asserted here).
        locks.get().clear();
        let mut sv = Sets::of(&g.single.sets, core.slot);
        sv.get().clear();
        LockTxn { core, g, locks, sv, long_reads, key_range, declared: false, waits: 0 }
    }
}

impl<'db> LockTxn<'db> {
    /// Locks `w` in `mode`. `short`: a read lock released by the caller
    /// right after the read (read committed); not entered in the LockSet.
    /// `declared`: a lock ordered 2PL must have taken before it began.
    fn lk_lock(
        &mut self,
        w: &'db AtomicU64,
        mode: LockMode,
        short: bool,
        declared: bool,
        give_up: impl FnMut() -> bool,
    ) -> Result<Got> {
        let l = self.locks.get();
        let held = l.find(w);
        if let Some(i) = held {
            if l.held[i].mode >= mode {
                return Ok(Got::Held);
            }
        }
        if declared && self.declared {
            return Err(Error::NotDeclared(if mode == LockMode::Exclusive {
                "a write of a record the access declaration does not list as written".into()
            } else {
                "a read of a record the access declaration does not list".into()
            }));
        }
        let upgrade = held.is_some();
        let fast = match mode {
            LockMode::Shared => try_shared(w),
            LockMode::Exclusive => try_exclusive(w, upgrade),
        };
        if !fast {
            let word = w as *const AtomicU64 as usize;
            self.lk_publish_wait(WaitOn::Lock { word, mode });
            let detect = self.lk_detector();
            let waited = wait_for_lock(w, mode, upgrade, Some(self.core.db.opts.lock_timeout), give_up, detect);
            self.lk_unpublish_wait();
            match waited {
                Waited::Got => {}
                Waited::GaveUp => return Ok(Got::GaveUp),
                Waited::TimedOut => return Err(self.abort_with(AbortReason::LockTimeout)),
                Waited::Victim => return Err(self.lk_deadlock_abort()),
            }
        }
        let l = self.locks.get();
        match held {
            Some(i) => {
                l.held[i].mode = LockMode::Exclusive;
                Ok(Got::Held)
            }
            None if short => Ok(Got::Taken),
            None => {
                l.push(Held { word: w, mode });
                Ok(Got::Taken)
            }
        }
    }

    /// The lock of `key` in index `ix`.
    #[inline]
    fn lk_word(ix: &'db Index, key: &Key) -> &'db AtomicU64 {
        ix.key_lock(key.hash64())
    }

    /// Releases a short read lock taken by `lk_lock`.
    #[inline]
    fn lk_short_release(&self, w: &AtomicU64, got: Got) {
        if got == Got::Taken && !self.long_reads {
            unlock(w, LockMode::Shared);
        }
    }

    /// The value of our own write of `rec`, if we wrote it: `Some(None)`
    /// for a delete.
    fn lk_own(l: &SiloLocal, rec: *mut Version) -> Option<Option<(usize, usize)>> {
        l.written(rec).map(|i| {
            let w = l.writes[i];
            (w.kind != WriteKind::Delete).then_some((w.at as usize, (w.at + w.len) as usize))
        })
    }

    /// Copies the row `rec` into the copy buffer: our own write, or the
    /// record (we hold its key's lock). `None` if it is not a row.
    fn lk_read(&mut self, rec: *mut Version) -> Option<Writer> {
        let l = &mut self.sv.get();
        if let Some(own) = Self::lk_own(l, rec) {
            let (a, b) = own?;
            l.copy.clear();
            l.copy.extend_from_slice(&l.values[a..b]);
            return Some(Writer::Txn(self.core.id));
        }
        // SAFETY: reached under the caller's epoch guard.
        let r = unsafe { &*rec };
        // Acquire: the value words were written before the Release store of
        // the word by the last committer (who held the X lock we now exclude).
        let word = r.begin.load(Ordering::Acquire);
        if word & (LATEST | ABSENT) != LATEST {
            return None;
        }
        r.load_value(&mut l.copy);
        Some(Writer::Committed(word & TID))
    }

    /// 1V's `get_with`.
    pub(crate) fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.lk_get(table, key, LockMode::Shared, f)
    }

    /// 1V's `get_for_update`: the read takes the key's exclusive lock, the
    /// one the update will need, held to the end (section 5: "a write locks
    /// the key X to the end"). Two read-modify-writes of one key then meet
    /// at the read, where the second waits (or, in a cycle, one is the
    /// deadlock victim), instead of both holding S locks and deadlocking on
    /// the upgrade. Under ordered 2PL the lock is the one declared (a key
    /// declared read only is refused as a write, `Error::NotDeclared`).
    pub(crate) fn get_for_update_with<R>(
        &mut self,
        table: TableId,
        key: &Key,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        self.lk_get(table, key, LockMode::Exclusive, f)
    }

    /// A point read of `key` under its lock in `mode` (a shared lock is a
    /// short one at read committed).
    fn lk_get<R>(
        &mut self,
        table: TableId,
        key: &Key,
        mode: LockMode,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        self.enter()?;
        let t = self.core.db.table_ref(table)?;
        let w = Self::lk_word(&t.indexes[0], key);
        let short = mode == LockMode::Shared && !self.long_reads;
        let got = self.lk_lock(w, mode, short, true, || false)?;
        // Epoch pin: records reached through an index stay allocated until it drops.
        let guard = crossbeam_epoch::pin();
        let rec = find_latest(t, key, None);
        let found = if rec.is_null() { None } else { self.lk_read(rec) };
        drop(guard);
        if short {
            self.lk_short_release(w, got);
        }
        if self.core.recording {
            let version = found.map(|wr| (wr, self.sv.get().copy.clone()));
            self.core.record(Op::Read { table: table.0, key: key.clone(), version });
        }
        Ok(found.map(|_| f(&self.sv.get().copy)))
    }

    /// 1V's update, modify, update_with and delete: `f` makes the new
    /// value from the old (`None` deletes).
    pub(crate) fn write(
        &mut self,
        table: TableId,
        key: &Key,
        f: impl FnOnce(&[u8], &mut Vec<u8>) -> bool,
    ) -> Result<()> {
        let t = self.enter_write(table, 0)?;
        let w = Self::lk_word(&t.indexes[0], key);
        self.lk_lock(w, LockMode::Exclusive, false, true, || false)?;
        // Epoch pin: records reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let rec = find_latest(t, key, None);
        let found = if rec.is_null() { None } else { self.lk_read(rec) };
        if self.core.recording {
            let version = found.map(|wr| (wr, self.sv.get().copy.clone()));
            self.core.record(Op::Read { table: table.0, key: key.clone(), version });
        }
        if found.is_none() {
            return Err(Error::KeyNotFound);
        }
        let mut new = std::mem::take(&mut self.core.local.get().scratch);
        new.clear();
        let keep = f(&self.sv.get().copy, &mut new);
        let r = if !keep {
            self.core.sv_buffer(self.sv.get(), table, rec, WriteKind::Delete, &[], false);
            Ok(())
        } else if new.len() > self.core.db.opts.max_value_size {
            Err(Error::ValueTooLarge { len: new.len(), max: self.core.db.opts.max_value_size })
        } else if let Err(e) = self.core.admit_resize(self.sv.get().copy.len(), new.len()) {
            Err(e)
        } else {
            // A row moved in a secondary index: lock its new key there.
            let r = self.lk_lock_moved(t, key, &new);
            if r.is_ok() {
                self.core.sv_buffer(self.sv.get(), table, rec, WriteKind::Update, &new, false);
            }
            r
        };
        self.core.local.get().scratch = new;
        r
    }

    /// X-locks the keys of `value` in every secondary index where they
    /// differ from the current row's (in the copy buffer).
    fn lk_lock_moved(&mut self, t: &'db Table, pk: &Key, value: &[u8]) -> Result<()> {
        for ix in &t.indexes[1..] {
            let Some(kf) = ix.key_fn else { continue };
            let new = kf(pk, value);
            if new != kf(pk, &self.sv.get().copy) {
                self.lk_lock(Self::lk_word(ix, &new), LockMode::Exclusive, false, false, || false)?;
            }
        }
        Ok(())
    }

    /// The transactions other than us holding a key-range lock on a key of
    /// `rec` in one of `t`'s indexes (`only`: just those indexes).
    fn lk_range_holders(&mut self, t: &Table, rec: &Version, only: Option<&[bool]>) -> bool {
        let mut ids = std::mem::take(&mut self.core.local.get().ids);
        ids.clear();
        for (i, ix) in t.indexes.iter().enumerate() {
            if only.is_none_or(|m| m[i]) {
                ix.ranges.lockers(|| ix.key_of(rec), &mut ids);
            }
        }
        ids.retain(|&i| i != self.core.id);
        let any = !ids.is_empty();
        self.core.local.get().ids = ids;
        any
    }

    /// Waits until no other transaction holds a key-range lock on any of
    /// `keys` ((table, index, key)), or times out (and aborts).
    fn lk_wait_ranges(&mut self, keys: &[(u32, usize, Key)]) -> Result<()> {
        let start = Instant::now();
        let limit = self.core.db.opts.lock_timeout;
        let backoff = Backoff::new();
        self.lk_publish_wait(WaitOn::Ranges(keys.to_vec()));
        let mut detect = self.lk_detector();
        let outcome = loop {
            let mut ids = std::mem::take(&mut self.core.local.get().ids);
            ids.clear();
            for (t, i, k) in keys {
                self.core.db.table_by_id(*t).indexes[*i].ranges.lockers(|| k.clone(), &mut ids);
            }
            ids.retain(|&i| i != self.core.id);
            let free = ids.is_empty();
            self.core.local.get().ids = ids;
            if free {
                break None;
            }
            let waited = start.elapsed();
            if waited >= limit {
                break Some(AbortReason::LockTimeout);
            }
            if detect.chosen() || detect.check(waited) {
                break Some(AbortReason::Deadlock);
            }
            if backoff.is_completed() && !detect.hurry() {
                std::thread::sleep(Duration::from_micros(50));
            } else {
                backoff.snooze();
            }
        };
        self.lk_unpublish_wait();
        match outcome {
            None => Ok(()),
            Some(AbortReason::Deadlock) => Err(self.lk_deadlock_abort()),
            Some(reason) => Err(self.abort_with(reason)),
        }
    }

    /// Aborts a deadlock's victim, and then gives up the CPU once before
    /// the caller can retry: the survivors waiting for the locks it just
    /// released are often asleep or descheduled (more threads than cores),
    /// and a retry that runs on at once takes the same hot locks back and
    /// closes the same cycle again. The slot's deadlock streak grows by
    /// one, so that the next cycle the retry is on spares it.
    fn lk_deadlock_abort(&mut self) -> Error {
        let streak = &self.core.slot().deadlock_streak;
        // Relaxed: only this slot's occupant (us) writes and reads it.
        streak.store(streak.load(Ordering::Relaxed).saturating_add(1), Ordering::Relaxed);
        let e = self.abort_with(AbortReason::Deadlock);
        std::thread::yield_now();
        e
    }

    /// Publishes what we wait for (deadlock detection reads it).
    fn lk_publish_wait(&mut self, on: WaitOn) {
        self.waits = self.waits.wrapping_add(1);
        let s = self.core.slot();
        // Relaxed: our own slot's counter, written only by us.
        let streak = s.deadlock_streak.load(Ordering::Relaxed);
        *s.lock_wait.lock() = Some(LockWait { id: self.core.id, seq: self.waits, streak, on });
    }

    /// Withdraws the publication: from here on we may change our LockSet.
    /// A victim's mark on the wait goes with it.
    fn lk_unpublish_wait(&self) {
        let s = self.core.slot();
        let mut w = s.lock_wait.lock();
        *w = None;
        // Relaxed: under the `lock_wait` mutex, which orders it after any
        // mark set on the wait now ended; our own later looks see it.
        s.lock_victim.store(0, Ordering::Relaxed);
    }

    /// The deadlock checks to run while waiting: a look for a cycle of waits
    /// through us as soon as the spinning ends, then every
    /// [`crate::Options::deadlock_interval`] of waiting, and at every round a
    /// look at whether another member of such a cycle has chosen us as its
    /// victim.
    ///
    /// The first look is not put off by an interval: a cycle is closed by
    /// its last member to wait, so that member's first look finds it, and
    /// the cycle is broken within microseconds instead of after an interval
    /// that every member spends holding its locks (measured on YCSB θ=0.9
    /// at serializable: 1.9x the throughput at 8 threads on 2 cores, and
    /// no less at 2). The later looks catch cycles whose closing look ran
    /// before the last edge was published.
    fn lk_detector(&self) -> Detector<'db> {
        let db = self.core.db;
        let interval = db.opts.deadlock_interval;
        Detector { db, g: self.g, slot: self.core.slot, id: self.core.id, interval, next: Duration::ZERO, broke: false }
    }
    /// 1V's insert: locks the key (and the row's secondary keys), then
    /// links an absent placeholder, unless a range lock covers it.
    pub(crate) fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        let t = self.enter_write(table, value.len())?;
        self.lk_lock(Self::lk_word(&t.indexes[0], &key), LockMode::Exclusive, false, true, || false)?;
        for ix in &t.indexes[1..] {
            let kf = ix.key_fn.expect("secondary indexes have a key function");
            self.lk_lock(Self::lk_word(ix, &kf(&key, value)), LockMode::Exclusive, false, false, || false)?;
        }
        loop {
            // Epoch pin: records reached through an index stay allocated until it drops.
            let guard = crossbeam_epoch::pin();
            let rec = find_latest(t, &key, None);
            if !rec.is_null() {
                match Self::lk_own(self.sv.get(), rec) {
                    Some(Some(_)) => return Err(Error::DuplicateKey),
                    // Our own delete: the insert makes it an update.
                    Some(None) => {
                        self.core.sv_buffer(self.sv.get(), table, rec, WriteKind::Insert, value, false);
                        return Ok(());
                    }
                    None => {
                        // SAFETY: found under the guard.
                        let w = unsafe { &*rec }.begin.load(Ordering::Acquire);
                        // Another's placeholder cannot be latest: it holds the
                        // key's X lock until it has installed or retired it.
                        debug_assert!(w & ABSENT == 0, "a foreign placeholder under our X lock");
                        if w & ABSENT == 0 {
                            return Err(Error::DuplicateKey);
                        }
                    }
                }
            }
            let rec = Version::alloc_in_place(&key, t.link_words(), value, LATEST | ABSENT).as_ptr();
            // SAFETY: fresh and unlinked; its value (and so its secondary keys) is final.
            unsafe { t.link_all(rec) };
            self.core.created += 1;
            // SeqCst fence: the writer's side of the range-lock handshake
            // (module docs): linked before we look for ranges.
            fence(Ordering::SeqCst);
            // SAFETY: ours, alive.
            let r = unsafe { &*rec };
            if !self.lk_range_holders(t, r, None) {
                drop(guard);
                self.core.sv_buffer(self.sv.get(), table, rec, WriteKind::Insert, value, true);
                return Ok(());
            }
            // A scan at serializable locked a range holding the key: withdraw
            // the placeholder (the scanner skips a record no longer latest),
            // wait for the range, try again.
            let keys: Vec<(u32, usize, Key)> =
                t.indexes.iter().enumerate().map(|(i, ix)| (table.0, i, ix.key_of(r))).collect();
            drop(guard);
            self.core.sv_retire(&self.g.single, table, rec, WITHDRAWN);
            self.lk_wait_ranges(&keys)?;
        }
    }

    /// 1V's `get_by` and `scan`: every row of `index` in the range
    /// (`lo == hi`: one key), each read under its primary key's lock;
    /// `rev`: in descending key order.
    pub(crate) fn scan(
        &mut self,
        index: IndexId,
        lo: Bound<Key>,
        hi: Bound<Key>,
        filter: Option<&Filter>,
        rev: bool,
        mut f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        self.enter()?;
        let (t, ix) = self.core.index_ref(index)?;
        let eq = matches!((&lo, &hi), (Bound::Included(a), Bound::Included(b)) if a == b);
        if self.declared && !eq {
            return Err(Error::NotDeclared("a range scan (an access declaration lists records, not ranges)".into()));
        }
        if self.key_range {
            if let (true, Bound::Included(k)) = (eq, &lo) {
                // One key: its hash key's lock covers it (section 5).
                self.lk_lock(Self::lk_word(ix, k), LockMode::Shared, false, false, || false)?;
            } else {
                // Before the walk (module docs: the scanner's side).
                ix.ranges.lock(lo.clone(), hi.clone(), self.core.id);
                let l = self.locks.get();
                if !l.ranges.contains(&(index.table, index.index)) {
                    l.ranges.push((index.table, index.index));
                }
            }
        }
        let primary = &t.indexes[0];
        let ordered = ix.is_ordered();
        let mut rows = Vec::new();
        let mut stopped_at = None;
        let mut failed = None;
        let mut delivered = std::mem::take(&mut self.locks.get().delivered);
        delivered.clear();
        // With short read locks (read committed), a key the walk has handed
        // on can be deleted and inserted again, or replaced, by a writer
        // that commits before the walk is done, and the new record may lie
        // ahead of the walk: a scan still hands on each key once (the row
        // it met first, as of some committed state). Long read locks keep
        // every delivered key's row in place until the end.
        let dedup = !self.long_reads;
        let mut delivered_keys = std::mem::take(&mut self.locks.get().delivered_keys);
        delivered_keys.clear();
        self.locks.get().redirected.clear();
        // Long read locks: the key the walk settled last, under its lock held to the end, so its
        // latest record cannot change; its other records met (retired by its deletes and
        // replacements, still linked) are passed without a lock or a walk of its chain each.
        let mut settled: Option<Key> = None;
        // Epoch pin: records reached through an index stay allocated until it drops.
        let guard = crossbeam_epoch::pin();
        walk_range(ix, &lo, &hi, rev, |v| {
            if settled.as_ref().is_some_and(|k| v.key_eq(k)) {
                return true;
            }
            let first = v as *const Version as *mut Version;
            // Acquire: pairs with the Release stores of the word.
            let withdrawn = || v.begin.load(Ordering::Acquire) & WITHDRAWN != 0;
            if withdrawn() || self.locks.get().redirected.contains(&VPtr(first)) {
                return true;
            }
            let pk = v.key();
            if dedup && delivered_keys.contains(&pk) {
                return true;
            }
            let w = Self::lk_word(primary, &pk);
            // A placeholder withdrawn while we wait was never a row: stop
            // waiting (its inserter may be waiting for our range).
            let got = match self.lk_lock(w, LockMode::Shared, !self.long_reads, true, withdrawn) {
                Ok(Got::GaveUp) => return true,
                Ok(g) => g,
                Err(e) => {
                    failed = Some(e);
                    return false;
                }
            };
            // Under the key's lock. A record no longer latest was deleted or
            // replaced, before or while we waited; a replacement may sit
            // where the walk has passed already: the key's row now is the
            // one to read, if it is in the range and not delivered yet.
            settled = self.long_reads.then(|| pk.clone());
            let mut rec = first;
            if v.begin.load(Ordering::Acquire) & LATEST == 0 {
                let now = find_latest(t, &pk, None);
                let l = &*self.locks.get();
                // SAFETY: found under the guard.
                let skip = now.is_null()
                    || !key_in(&lo, &hi, &ix.key_of(unsafe { &*now }))
                    || delivered.contains(&VPtr(now))
                    || l.redirected.contains(&VPtr(now));
                if skip {
                    self.lk_short_release(w, got);
                    return true;
                }
                self.locks.get().redirected.push(VPtr(now));
                rec = now;
            }
            let Some(writer) = self.lk_read(rec) else {
                self.lk_short_release(w, got);
                return true;
            };
            delivered.push(VPtr(rec));
            if dedup {
                delivered_keys.insert(pk.clone());
            }
            let l = &self.sv.get();
            let go_on = if filter.is_some_and(|p| !p(&pk, &l.copy)) {
                true
            } else {
                if self.core.recording {
                    rows.push((pk.clone(), writer, l.copy.clone()));
                }
                f(&pk, &l.copy)
            };
            if !go_on {
                // SAFETY: as above.
                stopped_at = Some(ix.key_of(unsafe { &*rec }));
            }
            self.lk_short_release(w, got);
            go_on
        });
        drop(guard);
        if let Some(e) = failed {
            return Err(e);
        }
        self.locks.get().delivered = delivered;
        self.locks.get().delivered_keys = delivered_keys;
        // The range lock shrinks to what the walk covered (see MV/O's scan).
        let (lo, hi) = match stopped_at {
            Some(k) if ordered => {
                let (lo, hi) = if rev { (Bound::Included(k), hi) } else { (lo, Bound::Included(k)) };
                if self.key_range && !eq {
                    ix.ranges.narrow_last(self.core.id, lo.clone(), hi.clone());
                }
                (lo, hi)
            }
            _ => (lo, hi),
        };
        if self.core.recording {
            self.core.record_scan(index, lo, hi, filter.is_some(), rows);
        }
        Ok(())
    }
}

crate::protocol::core::hooks!(LockTxn);

/// Savepoints (`protocol::savepoint`): the buffered WriteSet's mark, and
/// its entries since the mark dropped, their placeholders withdrawn (the
/// key locks stay held to the end).
impl LockTxn<'_> {
    pub(crate) fn savepoint_mark(&mut self) -> Result<crate::protocol::core::Mark> {
        self.enter()?;
        Ok(crate::protocol::single::sv_mark(&mut self.core, self.sv.get()))
    }

    pub(crate) fn rollback_to(&mut self, mark: crate::protocol::core::Mark) -> Result<()> {
        self.enter()?;
        let g = &self.g.single;
        crate::protocol::single::sv_rollback(&mut self.core, self.sv.get(), mark, |core, table, rec| {
            core.sv_retire(g, table, rec, WITHDRAWN)
        });
        Ok(())
    }
}
