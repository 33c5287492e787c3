//! MV/L: Hekaton's pessimistic multi-version concurrency control
//! (Larson et al., VLDB 2011, section 4), and what optimistic transactions
//! do to coexist with it (section 4.5).
//!
//! A pessimistic transaction shares everything with MV/O ([`super::occ`]:
//! the phases, visibility, commit dependencies, postprocessing) except how
//! its reads stay valid: instead of validating them at commit it **locks**
//! them, and instead of blocking on a conflicting lock it **updates eagerly**
//! and takes a **wait-for dependency** that it waits out before precommit.
//!
//! * **Record locks** (section 4.1.1) live in the End word of the latest
//!   version: NoMoreReadLocks, ReadLockCount and WriteLock, laid out in
//!   `storage::word`. `read_lock` increments the count by CAS; it
//!   is refused (the reader aborts, reason `read-lock`) when NoMoreReadLocks
//!   is set or the count is at 255. Only latest versions are locked.
//! * **Wait-for dependencies** (section 4.2): WaitForCounter and
//!   NoMoreWaitFors in one word per transaction-table slot
//!   (`TxnTable::add_wait_for`), WaitingTxnList in the slot's `WaitInfo`.
//!   A writer that write-locks a read-locked version counts one dependency
//!   on itself (in `Transaction::claim`); the first reader of a write-locked
//!   version imposes one on the writer, and is refused (reason `wait-for`)
//!   when the writer has set NoMoreWaitFors. The last reader to release a
//!   write-locked version sets NoMoreReadLocks and releases the writer.
//! * **Processing phases** (section 4.3): under snapshot isolation the read
//!   time is the begin timestamp, at every other level the current time.
//!   Repeatable read and serializable read-lock every latest version they
//!   read. At the end of normal processing a transaction sets
//!   NoMoreWaitFors and waits until its WaitForCounter is zero; then it
//!   precommits. Pessimistic transactions do not validate.
//! * **Deadlock detection** (section 4.4, [`detect_deadlocks`]): a waiting
//!   transaction runs the detector every `Options::deadlock_interval`
//!   (cooperatively; one detector at a time). It builds the wait-for graph of
//!   the blocked transactions from explicit (WaitingTxnList) and implicit
//!   (read-locked versions write-locked by another blocked transaction)
//!   dependencies while everybody else goes on, finds strongly connected
//!   components with Tarjan's algorithm, verifies that a cycle is still real
//!   with its members frozen, and aborts the member that blocked last — the
//!   one whose wait closed the cycle (reason `deadlock`).
//! * **Coexistence** (section 4.5): optimistic transactions under mv-lock
//!   and mv-mixed write-lock with the 54-bit id only, keeping read locks;
//!   take wait-for dependencies on read-locked versions they update; and
//!   wait them out before precommit, like pessimistic ones.
//!
//! Deliberate differences from the paper:
//!
//! * Section 4.3.1 releases read locks "when T reaches the end of normal
//!   processing", before it waits. Held that way, a read lock does not keep
//!   the read valid: a writer it held back could precommit between the
//!   release and the reader's own precommit, with a smaller end timestamp,
//!   and the reader would be serialized after a write it did not see. The
//!   deadlock detector of section 4.4 builds edges from the read locks of
//!   *blocked* transactions, which only makes sense if they still hold them.
//!   So read locks (and the dependencies imposed through WaitingTxnList)
//!   are released right after the end timestamp is drawn: every writer held
//!   back draws a later one.
//! * NoMoreWaitFors is set when normal processing ends (the paper leaves the
//!   moment open; "used to prevent starvation by incoming dependencies
//!   continuously being added"): from then on the counter can only fall.
//! * Read-only transactions read a snapshot without locks or validation, as
//!   section 5.2.1 observes both schemes do.
//! * A transaction that read-locked a version and then updates it turns its
//!   read lock into the write lock in one CAS (an upgrade; otherwise it would
//!   wait for itself).
//! * A lock that cannot be taken because the version was replaced and
//!   committed since the visibility check is retried on the new latest
//!   version for a point lookup, and aborts a scan (reason `read-lock`).

pub(crate) mod deadlock;

use deadlock::detect_deadlocks;

use super::MvTxn;
use crate::breakdown::{self, Part};
use crate::error::AbortReason;
use crate::key::Key;
use crate::shared::Shared;
use crate::storage::version::{VPtr, Version};
use crate::storage::word::{self, writer_of_end, ReadLocked, Word, INFINITY};
use crate::sync::atomic::Ordering;
use crate::table::{Index, IndexImpl, Table};
use crate::txn::table::{bucket_key, slot_of, Peek, TxnTable, WaitFor, PUBLISHED_BUCKETS};
use crate::txn::visibility::visible_at;
use crate::Result;
use crossbeam_utils::Backoff;
use std::collections::HashMap;
use std::ops::Bound;
use std::time::Instant;

/// Outcome of [`read_lock`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Locked {
    /// Read locked (or write locked by the reader itself).
    Yes,
    /// The version has been replaced by a committed one: not latest.
    NotLatest,
    /// Refused; the reader must abort for this reason.
    Refused(AbortReason),
}

/// Takes a read lock on `v` for transaction `me` (section 4.2.1), recording
/// it in `locks`. The caller is pinned. The End word's transition is
/// [`word::read_lock`]; the first read lock on a write-locked version counts
/// a wait-for dependency of its writer.
pub(crate) fn read_lock(v: &Version, me: u64, txns: &TxnTable, locks: &mut Vec<VPtr>) -> Locked {
    let hold = |writer| match txns.add_wait_for(writer) {
        WaitFor::Added => word::Hold::Added,
        WaitFor::Refused => word::Hold::Refused,
        WaitFor::Gone => word::Hold::Gone,
    };
    match word::read_lock(&v.end, me, hold, |writer| txns.release_wait_for(writer)) {
        ReadLocked::Yes => {
            locks.push(VPtr(v as *const Version as *mut Version));
            Locked::Yes
        }
        // Our own write lock: nothing taken, nothing to release.
        ReadLocked::Own => Locked::Yes,
        ReadLocked::NotLatest => Locked::NotLatest,
        ReadLocked::Refused => Locked::Refused(AbortReason::ReadLock),
        ReadLocked::WaitFor => Locked::Refused(AbortReason::WaitFor),
    }
}

/// Releases a read lock on `v`; the last one on a write-locked version sets
/// NoMoreReadLocks and releases the writer's wait-for dependency.
fn release_read_lock(v: &Version, txns: &TxnTable) {
    if let Some(writer) = word::release_read_lock(&v.end) {
        txns.release_wait_for(writer);
    }
}

impl MvTxn<'_> {
    /// Read-locks the version `v` a point lookup of `key` found; if it was
    /// replaced meanwhile, looks up the new latest version and locks that.
    pub(crate) fn lock_found(&mut self, t: &Table, key: &Key, mut v: *mut Version) -> Result<*mut Version> {
        loop {
            if v.is_null() {
                return Ok(v);
            }
            // SAFETY: found under the caller's epoch guard, still held.
            match read_lock(unsafe { &*v }, self.core.id, &self.core.db.txns, &mut self.local.get().read_locks) {
                Locked::Yes => return Ok(v),
                Locked::NotLatest => v = self.find_visible(t, key, self.lookup_time()),
                Locked::Refused(r) => return Err(self.abort_with(r)),
            }
        }
    }

    /// End of normal processing (section 4.3.1): sets NoMoreWaitFors and
    /// waits until WaitForCounter is zero, running deadlock detection while
    /// it waits.
    pub(crate) fn await_wait_fors(&mut self) -> std::result::Result<(), AbortReason> {
        let _timed = breakdown::span(Part::Wait);
        let txns = &self.core.db.txns;
        txns.no_more_wait_fors(self.core.slot);
        if txns.wait_fors(self.core.slot) == 0 {
            return Ok(());
        }
        // Blocked: publish what the deadlock detector reads.
        {
            let mut w = self.core.slot().waits.lock();
            w.blocked = true;
            // Relaxed: only orders blockings for the choice of a victim.
            w.blocked_seq = txns.blockings.fetch_add(1, Ordering::Relaxed);
            w.read_locks.extend_from_slice(&self.local.get().read_locks);
        }
        self.used_waits = true;
        let interval = self.core.db.opts.deadlock_interval;
        let mut next = Instant::now() + interval;
        let backoff = Backoff::new();
        let s = self.core.slot();
        let r = loop {
            // Acquire (all three): pair with the Release of whoever set them.
            if s.victim.load(Ordering::Acquire) {
                break Err(AbortReason::Deadlock);
            }
            if s.abort_now.load(Ordering::Acquire) {
                break Err(AbortReason::CommitDependency);
            }
            if txns.wait_fors(self.core.slot) == 0 {
                break Ok(());
            }
            if backoff.is_completed() {
                std::thread::yield_now();
                let now = Instant::now();
                if now >= next {
                    detect_deadlocks(self.core.db);
                    next = now + interval;
                }
            } else {
                backoff.snooze();
            }
        };
        let mut w = self.core.slot().waits.lock();
        w.blocked = false;
        w.read_locks.clear();
        r
    }

    /// Releases the read locks and the dependencies imposed on others
    /// (WaitingTxnList): after the end timestamp is drawn, or on abort.
    /// Every way a transaction ends under mv-lock and mv-mixed passes here,
    /// and leaves the slot's `WaitInfo` clean and closed for the next
    /// occupant (the end of `await_wait_fors` already unpublished the rest).
    pub(crate) fn release_locks(&mut self) {
        let txns = &self.core.db.txns;
        for VPtr(v) in self.local.get().read_locks.drain(..) {
            // SAFETY: a read-locked version is a latest version, which the
            // collector never reclaims; it stays one while we hold the lock.
            release_read_lock(unsafe { &*v }, txns);
        }
        for (t, i) in self.local.get().range_locks.drain(..) {
            self.core.db.table_by_id(t).indexes[i as usize].ranges.unlock_all(self.core.id);
        }
        if !self.local.get().bucket_locks.is_empty() {
            for &(t, i, b) in &self.local.get().bucket_locks {
                if let IndexImpl::Hash(h) = &self.core.db.table_by_id(t).indexes[i as usize].imp {
                    h.unlock_bucket(b);
                }
            }
            self.local.get().bucket_locks.clear();
            // Release: unpublished after the counts fell; an inserter that
            // still finds us has merely waited for nothing.
            self.core.slot().buckets_held.store(0, Ordering::Release);
        }
        if self.used_waits {
            let list = {
                let mut w = self.core.slot().waits.lock();
                w.closed = true;
                std::mem::take(&mut w.waiting_txns)
            };
            for id in list {
                txns.release_wait_for(id);
            }
        }
    }

    /// Opens our WaitingTxnList, before our id can appear in a lock list.
    fn open_waits(&mut self) {
        if !self.used_waits {
            self.core.slot().waits.lock().closed = false;
            self.used_waits = true;
        }
    }

    /// Start of a serializable scan of one key of index `index` (section
    /// 4.3.1): a bucket lock in a hash index, a one-key range lock in an
    /// ordered one. Taken before the scan looks at the chain.
    pub(crate) fn lock_key(&mut self, table: u32, index: u8, ix: &Index, key: &Key) -> Result<()> {
        self.open_waits();
        match &ix.imp {
            IndexImpl::Hash(h) => {
                // Publish the lock in our BucketLockSet (the LockList
                // entry), then increment LockCount.
                let b = h.bucket_of(key.hash64());
                let s = self.core.slot();
                let n = self.local.get().bucket_locks.len();
                if n < PUBLISHED_BUCKETS {
                    // Release: as the count below.
                    s.bucket_keys[n].store(bucket_key(table, index, b), Ordering::Release);
                }
                // Release: an inserter that Acquires the bucket's count sees
                // this entry (the count's AcqRel increment comes after it).
                s.buckets_held.store(n + 1, Ordering::Release);
                if !h.lock_bucket(b) {
                    // 65,535 locks on one bucket: too many to track.
                    // Release: as above.
                    s.buckets_held.store(n, Ordering::Release);
                    return Err(self.abort_with(AbortReason::ReadLock));
                }
                self.local.get().bucket_locks.push((table, index, b));
            }
            IndexImpl::Ordered(_) => {
                self.lock_range(table, index, ix, Bound::Included(key.clone()), Bound::Included(key.clone()))
            }
        }
        Ok(())
    }

    /// Start of a serializable pessimistic lookup of `key` in index `index`
    /// of `t`: lock the key, then walk its chain once, imposing a wait-for
    /// on the writer of every matching version not committed yet (it would
    /// be a phantom). In the primary index, whose keys are unique, the walk
    /// stops at the visible version and returns it (the lookup itself);
    /// otherwise it returns null and the caller scans. The caller is pinned.
    pub(crate) fn guard_key(&mut self, t: &Table, table: u32, index: u8, key: &Key) -> Result<*mut Version> {
        let ix = &t.indexes[index as usize];
        self.lock_key(table, index, ix, key)?;
        // SeqCst: a reading of the clock after the lock, as for a read time
        // (a version committed after it had its writer see our lock).
        let rt = self.core.db.clock.load(Ordering::SeqCst) - 1;
        let me = self.me();
        let mut found = std::mem::take(&mut self.local.get().uncommitted);
        let mut visible = std::ptr::null_mut();
        ix.for_each_eq(key, |v| {
            if !ix.matches(v, key) {
                return true;
            }
            if index == 0 && visible_at(v, rt, &me).is_some() {
                visible = v as *const Version as *mut Version;
                return false;
            }
            found.extend(Self::uncommitted_writer(self.core.db, self.core.id, v, rt));
            true
        });
        self.local.get().uncommitted = found;
        self.impose_on_writers().map_err(|r| self.abort_with(r))?;
        Ok(visible)
    }

    /// Start of a serializable range scan: a range lock on (`lo`, `hi`).
    pub(crate) fn lock_range(&mut self, table: u32, index: u8, ix: &Index, lo: Bound<Key>, hi: Bound<Key>) {
        self.open_waits();
        ix.ranges.lock(lo, hi, self.core.id);
        let held = &mut self.local.get().range_locks;
        if !held.contains(&(table, index)) {
            held.push((table, index));
        }
    }

    /// A serializable scan at read time `rt` met `v`, which matches its
    /// predicate but is not visible. If its creator is still running, it
    /// would be a phantom once committed, so we impose a wait-for dependency
    /// on it (section 4.2.2): returns the writer and the version. If it
    /// committed after `rt` (it linked the version before our lock and
    /// precommitted since), it is a phantom already: returns writer 0, and
    /// the caller aborts.
    pub(crate) fn uncommitted_writer(db: &Shared, me: u64, v: &Version, rt: u64) -> Option<(u64, VPtr)> {
        let p = VPtr(v as *const Version as *mut Version);
        loop {
            // Acquire: as in `visible_at`.
            return match Word::decode(v.begin.load(Ordering::Acquire)) {
                Word::Ts(b) => (b != INFINITY && b >= rt).then_some((0, p)),
                Word::Txn(tb) if tb == me => None,
                Word::Txn(tb) => match db.txns.peek(tb) {
                    Peek::Active | Peek::Preparing(_) => Some((tb, p)),
                    Peek::Committed(ts) => (ts >= rt).then_some((0, p)),
                    Peek::Aborted => None,
                    Peek::Gone => continue, // the word is final now: reread
                },
            };
        }
    }

    /// Imposes a wait-for dependency on each writer in `local().uncommitted`
    /// (drained), entering it in our WaitingTxnList. A writer that finished
    /// meanwhile committed a row our scan did not see (abort: `phantom`) or
    /// aborted (nothing to do). The caller is still pinned.
    pub(crate) fn impose_on_writers(&mut self) -> std::result::Result<(), AbortReason> {
        let mut found = std::mem::take(&mut self.local.get().uncommitted);
        let mut r = Ok(());
        for &(tb, VPtr(v)) in &found {
            if tb == 0 {
                r = Err(AbortReason::Phantom);
                break;
            }
            match self.core.db.txns.add_wait_for(tb) {
                WaitFor::Added => {
                    self.open_waits();
                    self.core.slot().waits.lock().waiting_txns.push(tb);
                }
                WaitFor::Gone => {
                    // SAFETY: met under the caller's epoch guard, still held.
                    // Acquire: the word as the finished writer left it.
                    let begin = unsafe { &*v }.begin.load(Ordering::Acquire);
                    if begin != INFINITY {
                        r = Err(AbortReason::Phantom);
                        break;
                    }
                }
                WaitFor::Refused => {
                    r = Err(AbortReason::WaitFor);
                    break;
                }
            }
        }
        found.clear();
        self.local.get().uncommitted = found;
        r
    }

    /// After linking `v` into every index of `t`: for each bucket or range
    /// lock that covers it, wait for the locker (section 4.2.2: our own id
    /// goes into its WaitingTxnList, and our WaitForCounter goes up).
    pub(crate) fn wait_for_lockers(&mut self, t: &Table, v: &Version) -> std::result::Result<(), AbortReason> {
        let mut ids = std::mem::take(&mut self.core.local.get().ids);
        for (n, ix) in t.indexes.iter().enumerate() {
            if let IndexImpl::Hash(h) = &ix.imp {
                let b = h.bucket_of(ix.hash_of(v));
                if h.bucket_locked(b) {
                    self.core.db.txns.bucket_lockers(t.id, n as u8, b, &mut ids);
                }
            }
            ix.ranges.lockers(|| ix.key_of(v), &mut ids);
        }
        let txns = &self.core.db.txns;
        let mut r = Ok(());
        for ts in ids.drain(..) {
            if ts == self.core.id {
                continue;
            }
            if txns.add_wait_for(self.core.id) != WaitFor::Added {
                r = Err(AbortReason::WaitFor);
                break;
            }
            let i = slot_of(ts);
            let mut w = txns.slot(i).waits.lock();
            if txns.id_of(i) == ts && !w.closed {
                w.waiting_txns.push(self.core.id);
            } else {
                // The locker has precommitted (or gone): nothing to wait for.
                drop(w);
                txns.release_wait_for(self.core.id);
            }
        }
        ids.clear();
        self.core.local.get().ids = ids;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::word::RecordLock;
    use crate::{Database, Isolation, Key, Mode, Options, Protocol, TableId, TableSpec, TxnOptions};

    fn db() -> (Database, TableId) {
        let db = Database::new(Options { protocol: Protocol::MvLock, ..Options::default() }).unwrap();
        let t = db.create_table(TableSpec::hash("t", 16)).unwrap().table();
        db.run(Isolation::RepeatableRead, |x| {
            x.insert(t, Key::from(1), b"a")?;
            x.insert(t, Key::from(2), b"b")
        })
        .unwrap();
        (db, t)
    }

    /// The lock in the End word of the latest version of `key`.
    fn lock_of(db: &Database, t: TableId, key: u64) -> RecordLock {
        let _g = crossbeam_epoch::pin();
        let mut found = None;
        db.table_ref(t).unwrap().indexes[0].for_each_eq(&Key::from(key), |v| {
            if let Some(l) = RecordLock::of(v.end.load(Ordering::Acquire)) {
                found = Some(l);
            }
            true
        });
        found.expect("a latest version")
    }

    fn wait_fors(db: &Database, id: u64) -> u64 {
        db.txns.wait_fors(slot_of(id))
    }

    #[test]
    fn read_lock_on_a_write_locked_version_makes_the_writer_wait() {
        let (db, t) = db();
        let mut w = db.begin(Isolation::RepeatableRead).unwrap();
        w.update(t, Key::from(1), b"w").unwrap();
        assert_eq!(lock_of(&db, t, 1), RecordLock { writer: w.id(), ..RecordLock::FREE });
        assert_eq!(wait_fors(&db, w.id()), 0);
        let mut r = db.begin(Isolation::RepeatableRead).unwrap();
        assert_eq!(r.get(t, Key::from(1)).unwrap().unwrap(), b"a");
        assert_eq!(lock_of(&db, t, 1), RecordLock { read_locks: 1, writer: w.id(), no_more_read_locks: false });
        assert_eq!(wait_fors(&db, w.id()), 1, "the first read lock imposes a wait-for");
        let mut r2 = db.begin(Isolation::RepeatableRead).unwrap();
        r2.get(t, Key::from(1)).unwrap();
        assert_eq!(lock_of(&db, t, 1).read_locks, 2);
        assert_eq!(wait_fors(&db, w.id()), 1, "later read locks impose nothing more");
        r.commit().unwrap();
        assert_eq!(lock_of(&db, t, 1).read_locks, 1);
        assert_eq!(wait_fors(&db, w.id()), 1);
        r2.commit().unwrap();
        // The last release sets NoMoreReadLocks and releases the writer.
        assert_eq!(lock_of(&db, t, 1), RecordLock { read_locks: 0, writer: w.id(), no_more_read_locks: true });
        assert_eq!(wait_fors(&db, w.id()), 0);
        let mut late = db.begin(Isolation::RepeatableRead).unwrap();
        assert_eq!(late.get(t, Key::from(1)), Err(crate::Error::Aborted(AbortReason::ReadLock)));
        w.commit().unwrap();
    }

    #[test]
    fn an_update_of_a_read_locked_version_waits_and_an_upgrade_does_not() {
        let (db, t) = db();
        let mut r = db.begin(Isolation::RepeatableRead).unwrap();
        r.get(t, Key::from(1)).unwrap();
        r.get(t, Key::from(1)).unwrap(); // twice: two locks, both ours
        assert_eq!(lock_of(&db, t, 1).read_locks, 2);
        let mut w = db.begin(Isolation::ReadCommitted).unwrap();
        w.update(t, Key::from(2), b"w").unwrap();
        // Our own locks turn into the write lock: no wait on ourselves.
        r.update(t, Key::from(1), b"r").unwrap();
        assert_eq!(lock_of(&db, t, 1), RecordLock { writer: r.id(), ..RecordLock::FREE });
        assert_eq!(wait_fors(&db, r.id()), 0);
        // A reader of a version we write-locked makes us wait for it.
        let mut x = db.begin(Isolation::RepeatableRead).unwrap();
        x.get(t, Key::from(1)).unwrap(); // imposes on r
        assert_eq!(wait_fors(&db, r.id()), 1);
        drop(x); // an abort releases its locks too
        assert_eq!(wait_fors(&db, r.id()), 0);
        assert_eq!(lock_of(&db, t, 1).read_locks, 0);
        r.commit().unwrap();
        w.commit().unwrap();
    }

    #[test]
    fn a_committing_transaction_accepts_no_new_wait_for() {
        let (db, t) = db();
        let mut holder = db.begin(Isolation::RepeatableRead).unwrap();
        holder.get(t, Key::from(2)).unwrap();
        let db2 = &db;
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            s.spawn(move || {
                let mut w = db2.begin(Isolation::RepeatableRead).unwrap();
                w.update(t, Key::from(1), b"w").unwrap();
                w.update(t, Key::from(2), b"w").unwrap();
                tx.send(w.id()).unwrap();
                w.commit().unwrap(); // waits for `holder`
            });
            let wid = rx.recv().unwrap();
            // Wait until the writer has set NoMoreWaitFors (it is blocked).
            while !db.txns.slot(slot_of(wid)).waits.lock().blocked {
                std::thread::yield_now();
            }
            let mut r = db.begin(Isolation::RepeatableRead).unwrap();
            assert_eq!(r.get(t, Key::from(1)), Err(crate::Error::Aborted(AbortReason::WaitFor)));
            holder.commit().unwrap();
        });
        let mut r = db.begin(Isolation::RepeatableRead).unwrap();
        assert_eq!(r.get(t, Key::from(1)).unwrap().unwrap(), b"w");
    }

    fn waiting_txns(db: &Database, id: u64) -> Vec<u64> {
        db.txns.slot(slot_of(id)).waits.lock().waiting_txns.clone()
    }

    #[test]
    fn an_insert_under_a_bucket_lock_waits_for_the_locker() {
        let (db, t) = db();
        let mut s = db.begin(Isolation::Serializable).unwrap();
        assert_eq!(s.get(t, Key::from(9)).unwrap(), None); // locks 9's bucket
        let mut i = db.begin(Isolation::Serializable).unwrap();
        i.insert(t, Key::from(9), b"i").unwrap();
        assert_eq!(wait_fors(&db, i.id()), 1, "the inserter waits for the locker");
        assert_eq!(waiting_txns(&db, s.id()), [i.id()], "in the locker's WaitingTxnList");
        s.commit().unwrap();
        assert_eq!(wait_fors(&db, i.id()), 0, "released at the locker's precommit");
        i.commit().unwrap();
    }

    #[test]
    fn bucket_locks_beyond_the_published_ones_still_hold_inserts_back() {
        let db = Database::new(Options { protocol: Protocol::MvLock, ..Options::default() }).unwrap();
        let t = db.create_table(TableSpec::hash("t", 4096)).unwrap();
        let mut s = db.begin(Isolation::Serializable).unwrap();
        let n = crate::txn::table::PUBLISHED_BUCKETS as u64 + 4;
        for k in 0..n {
            assert_eq!(s.get(t, Key::from(k)).unwrap(), None);
        }
        let mut i = db.begin(Isolation::Serializable).unwrap();
        i.insert(t, Key::from(n - 1), b"i").unwrap(); // the last lock: not published one by one
        assert_eq!(wait_fors(&db, i.id()), 1);
        s.commit().unwrap();
        assert_eq!(wait_fors(&db, i.id()), 0);
        i.commit().unwrap();
    }

    #[test]
    fn a_serializable_lookup_imposes_on_an_uncommitted_insert() {
        let (db, t) = db();
        let mut i = db.begin(Isolation::Serializable).unwrap();
        i.insert(t, Key::from(9), b"i").unwrap();
        let mut s = db.begin(Isolation::Serializable).unwrap();
        assert_eq!(s.get(t, Key::from(9)).unwrap(), None);
        assert_eq!(wait_fors(&db, i.id()), 1, "the scanner makes the inserter wait");
        assert_eq!(waiting_txns(&db, s.id()), [i.id()]);
        s.commit().unwrap();
        assert_eq!(wait_fors(&db, i.id()), 0);
        i.commit().unwrap();
    }

    #[test]
    fn range_locks_hold_back_inserts_inside_the_range_only() {
        let db = Database::new(Options { protocol: Protocol::MvLock, ..Options::default() }).unwrap();
        let t = db.create_table(TableSpec::ordered("o")).unwrap();
        let mut s = db.begin(Isolation::Serializable).unwrap();
        let ix = db.primary(t);
        s.scan(ix, Key::from(10)..Key::from(20), None, |_, _| true).unwrap();
        let mut inside = db.begin(Isolation::Serializable).unwrap();
        inside.insert(t, Key::from(15), b"x").unwrap();
        let mut outside = db.begin(Isolation::Serializable).unwrap();
        outside.insert(t, Key::from(20), b"x").unwrap();
        assert_eq!((wait_fors(&db, inside.id()), wait_fors(&db, outside.id())), (1, 0));
        outside.commit().unwrap();
        s.commit().unwrap();
        inside.commit().unwrap();
    }

    #[test]
    fn a_deadlock_is_detected_and_broken() {
        let (db, t) = db();
        let barrier = std::sync::Barrier::new(2);
        let outcomes: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = [(1u64, 2u64), (2, 1)]
                .into_iter()
                .map(|(read, write)| {
                    let (db, barrier) = (&db, &barrier);
                    s.spawn(move || {
                        let o = TxnOptions { mode: Mode::Pessimistic, ..TxnOptions::new(Isolation::RepeatableRead) };
                        let mut x = db.begin_with(o).unwrap();
                        x.get(t, Key::from(read)).unwrap();
                        barrier.wait();
                        x.update(t, Key::from(write), b"x").unwrap();
                        barrier.wait();
                        x.commit().map(|_| ())
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let deadlocks = outcomes.iter().filter(|o| **o == Err(crate::Error::Aborted(AbortReason::Deadlock))).count();
        assert_eq!((deadlocks, outcomes.iter().filter(|o| o.is_ok()).count()), (1, 1), "{outcomes:?}");
        assert_eq!(db.stats().aborts[AbortReason::Deadlock], 1);
    }

    #[test]
    fn modes_are_checked_against_the_protocol() {
        let (db, _) = db();
        let o = TxnOptions { mode: Mode::Optimistic, ..TxnOptions::new(Isolation::Snapshot) };
        assert!(matches!(db.begin_with(o), Err(crate::Error::InvalidArgument(_))));
        let mixed = Database::new(Options { protocol: Protocol::MvMixed, ..Options::default() }).unwrap();
        assert!(!mixed.begin_with(o).unwrap().is_pessimistic());
        let p = TxnOptions { mode: Mode::Pessimistic, ..o };
        assert!(mixed.begin_with(p).unwrap().is_pessimistic());
        // The default alternates.
        let kinds: Vec<bool> = (0..4).map(|_| mixed.begin(Isolation::Snapshot).unwrap().is_pessimistic()).collect();
        assert!(kinds.contains(&true) && kinds.contains(&false), "{kinds:?}");
    }
}
