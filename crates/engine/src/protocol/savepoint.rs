//! Savepoints: [`Transaction::savepoint`] and [`Transaction::rollback_to`].
//!
//! A savepoint marks how far the transaction's writes went; rolling back to
//! it undoes every write made since, in reverse, the way each family's
//! abort undoes all of them, and keeps everything else:
//!
//! * **multi-version (Hekaton, section 3.3's abort per version):** each new
//!   version since the mark gets Begin = INFINITY (garbage, handed to the
//!   collector) and each replaced version's End word loses our write lock,
//!   keeping others' read locks. Under MV/L a write lock that others' read
//!   locks made us wait for (section 4.2.1: the first read lock on a
//!   write-locked version counts one wait-for dependency of its writer) is
//!   no longer ours to be released from, so we release that dependency
//!   ourselves; and the read lock our claim turned into the write lock
//!   (section 4.5, rule 1) is taken again, so that what we read before the
//!   savepoint stays locked. A wait for a serializable scanner whose
//!   bucket or range lock covered a rolled-back new version (section
//!   4.2.2: we are in its WaitingTxnList) is kept, like the reads: the
//!   commit waits for that scanner to precommit, which is only stricter.
//!   A write claim of `get_for_update` (`mv_occ::intent`) is kept,
//!   taken before or after the savepoint, like the read it is; one that a
//!   rolled-back update or delete used is unused again, its write lock
//!   kept.
//!   A POMVCC optimistic transaction keeps its
//!   writes private until commit (Figure 13) and refuses savepoints.
//! * **Silo and 1V/ordered 2PL (single version):** the WriteSet is buffered
//!   (Silo section 4.4); entries since the mark are dropped, entries they
//!   replaced are put back, and placeholder records of inserts since the
//!   mark are withdrawn, as an abort withdraws them.
//! * **BOHM's interactive transactions:** the undo log is replayed down to
//!   the mark. BOHM's declared procedures (`protocol::bohm::exec`) cannot
//!   undo part of themselves: their writes are placeholders the
//!   concurrency-control phase laid out before they ran.
//!
//! What the transaction read, locked, scanned or depended on since the
//! savepoint is kept: the ReadSet, the ScanSet and the node set still
//! validate it, read, range and key locks stay held to the end (two-phase
//! locking forbids releasing before the end only in the sense that a
//! released lock cannot be taken again; keeping them is always allowed),
//! and commit dependencies and SSN's stamps stay, which can only make the
//! commit stricter. Values read since the savepoint may have shaped what
//! the caller writes after rolling back, so those reads must stay checked.
//!
//! The recorded history (recording only) drops the rolled-back writes, and
//! the reads and scans since the savepoint that could have seen them (a
//! read of a key written since, a scan of a table written since): the
//! checker sees the transaction as if those writes never happened.

use super::bohm::BohmTxn;
use super::core::{Hooks, Mark, Savepoint};
use super::mv_occ::MvTxn;
use super::transaction::{Family, Transaction};
use crate::error::AbortReason;
use crate::gc::Garbage;
use crate::history::Op;
use crate::key::Key;
use crate::protocol::core::TxnCore;
use crate::protocol::mv_lock::{read_lock, Locked};
use crate::storage::version::{VPtr, Version};
use crate::storage::word::{self, INFINITY};
use crate::sync::atomic::Ordering;
use crate::{Error, Result, TableId};

impl TxnCore<'_> {
    fn history_mark(&mut self) -> usize {
        if self.recording {
            self.local.get().history.len()
        } else {
            0
        }
    }

    /// Drops, from the recorded history since `mark`, the writes rolled
    /// back and the reads and scans that could have seen them (module
    /// docs); `keys` are the (table, key) pairs written since the mark.
    fn rollback_history(&mut self, mark: usize, keys: &[(u32, Key)]) {
        if !self.recording {
            return;
        }
        let h = &mut self.local.get().history;
        let mut i = 0;
        h.retain(|op| {
            i += 1;
            if i <= mark {
                return true;
            }
            match op {
                Op::Write { .. } => false,
                Op::Read { table, key, .. } => !keys.contains(&(*table, key.clone())),
                Op::Scan { table, .. } => !keys.iter().any(|(t, _)| t == table),
                #[allow(unreachable_patterns)]
                _ => true,
            }
        });
    }
}

impl<'db> Transaction<'db> {
    /// Marks the transaction's current point, to undo the writes made after
    /// it with [`Transaction::rollback_to`] (see [`Savepoint`]). Every
    /// protocol offers savepoints through `Transaction`; a POMVCC
    /// transaction in [`crate::Mode::Optimistic`] refuses them with
    /// [`Error::Unsupported`] (its writes stay private until commit).
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// db.run(Isolation::Serializable, |tx| {
    ///     for k in 0..10u64 {
    ///         // Try each row on its own; a duplicate undoes just that row.
    ///         let sp = tx.savepoint()?;
    ///         match tx.insert(t, Key::from(k % 7), b"v") {
    ///             Err(Error::DuplicateKey) => tx.rollback_to(&sp)?,
    ///             r => r?,
    ///         }
    ///     }
    ///     Ok(())
    /// })
    /// .unwrap();
    /// ```
    pub fn savepoint(&mut self) -> Result<Savepoint> {
        let mark = match &mut self.family {
            Family::Mv(t) => t.savepoint_mark()?,
            Family::Silo(t) => {
                t.enter()?;
                sv_mark(&mut t.core)
            }
            Family::Lock(t) => {
                t.enter()?;
                sv_mark(&mut t.core)
            }
            Family::Bohm(t) => t.savepoint_mark()?,
        };
        let seq = self.savepoints;
        self.savepoints += 1;
        Ok(Savepoint { txn: self.id(), seq, mark })
    }

    /// Undoes every write made since `savepoint` (module docs of
    /// [`crate::protocol::savepoint`]: reads, locks and dependencies since
    /// it are kept). The savepoint stays usable; savepoints taken after it
    /// are released. Fails with [`Error::InvalidArgument`] for a savepoint
    /// of another transaction or one released by an earlier rollback, and
    /// with [`Error::Aborted`] if a lock the rollback must take again is
    /// refused (MV/L).
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// let mut x = db.begin(Isolation::Snapshot).unwrap();
    /// let outer = x.savepoint().unwrap();
    /// x.insert(t, Key::from(1), b"a").unwrap();
    /// let inner = x.savepoint().unwrap();
    /// x.insert(t, Key::from(2), b"b").unwrap();
    /// x.rollback_to(&outer).unwrap(); // undoes both inserts and releases `inner`
    /// assert!(matches!(x.rollback_to(&inner), Err(Error::InvalidArgument(_))));
    /// assert_eq!(x.range(db.primary(t), ..).unwrap().count(), 0);
    /// x.insert(t, Key::from(3), b"c").unwrap();
    /// x.rollback_to(&outer).unwrap(); // `outer` stays usable
    /// x.commit().unwrap();
    /// ```
    pub fn rollback_to(&mut self, savepoint: &Savepoint) -> Result<()> {
        if savepoint.txn != self.id() || savepoint.seq >= self.savepoints {
            return Err(Error::InvalidArgument(
                "rollback to a savepoint of another transaction, or one released by an earlier rollback".into(),
            ));
        }
        let mark = savepoint.mark;
        match &mut self.family {
            Family::Mv(t) => t.rollback_to(mark)?,
            Family::Silo(t) => {
                t.enter()?;
                let g = t.g;
                sv_rollback(&mut t.core, mark, |core, table, rec| core.sv_retire(g, table, rec, 0));
            }
            Family::Lock(t) => {
                t.enter()?;
                let g = &t.g.single;
                sv_rollback(&mut t.core, mark, |core, table, rec| {
                    core.sv_retire(g, table, rec, super::lock_1v::WITHDRAWN)
                });
            }
            Family::Bohm(t) => t.rollback_to(mark)?,
        }
        self.savepoints = savepoint.seq + 1;
        Ok(())
    }
}

/// Silo and 1V: the mark, and `sv_buffer` starts logging what it replaces.
fn sv_mark(core: &mut TxnCore<'_>) -> Mark {
    let history = core.history_mark();
    let l = &mut core.local.get().silo;
    l.savepoints = true;
    Mark { writes: l.writes.len(), replaced: l.replaced.len(), history }
}

/// Silo and 1V: drops the WriteSet entries since `mark`, withdrawing their
/// placeholders (`withdraw`, as the family's abort does), and puts back the
/// entries they replaced, newest first.
fn sv_rollback(core: &mut TxnCore<'_>, mark: Mark, mut withdraw: impl FnMut(&mut TxnCore<'_>, TableId, *mut Version)) {
    let l = &mut core.local.get().silo;
    let gone: Vec<_> = l.writes.drain(mark.writes..).collect();
    // The keys written since the mark: those of the dropped entries and of
    // the older entries written over since (put back here).
    let mut keys: Vec<(u32, Key)> = gone.iter().map(|w| (w.table, super::single::key_of_record(w.rec.0))).collect();
    while l.replaced.len() > mark.replaced {
        let (i, w) = l.replaced.pop().expect("longer than the mark");
        if (i as usize) < l.writes.len() {
            // The older entry of the same record: its placeholder (if any)
            // is the same record, so only the entry changes.
            l.writes[i as usize] = w;
            keys.push((w.table, super::single::key_of_record(w.rec.0)));
        }
    }
    for w in gone.iter().filter(|w| w.placeholder) {
        // An entry before the mark for the same placeholder keeps it.
        let kept = core.local.get().silo.writes.iter().any(|x| x.rec.0 == w.rec.0);
        if !kept {
            withdraw(core, core.db.tid(w.table), w.rec.0);
        }
    }
    core.rollback_history(mark.history, &keys);
}

impl MvTxn<'_> {
    fn savepoint_mark(&mut self) -> Result<Mark> {
        self.enter()?;
        if self.policy.po_occ {
            return Err(Error::Unsupported(
                "a savepoint of a POMVCC optimistic transaction (its writes stay private until commit); \
                 begin it in Mode::Pessimistic"
                    .into(),
            ));
        }
        let history = self.core.history_mark();
        Ok(Mark { writes: self.core.local.get().write_set.len(), replaced: 0, history })
    }

    /// Section 3.3's abort, for the WriteSet entries since `mark` (module
    /// docs).
    fn rollback_to(&mut self, mark: Mark) -> Result<()> {
        self.enter()?;
        let db = self.mvdb();
        let (id, lock_reads) = (self.core.id, self.policy.lock_reads);
        let gone: Vec<_> = self.core.local.get().write_set.drain(mark.writes..).collect();
        let mut keys = Vec::with_capacity(gone.len());
        let mut refused = None;
        for w in gone.iter().rev() {
            if !w.new.is_null() {
                // SAFETY: our own version, alive until handed to the GC below.
                let v = unsafe { &*w.new };
                keys.push((w.table, v.key()));
                // Release: a reader that sees INFINITY ignores the version.
                v.begin.store(INFINITY, Ordering::Release);
            }
            if !w.old.is_null() {
                // SAFETY: write-locked by us until this reset.
                let old = unsafe { &*w.old };
                if w.new.is_null() {
                    keys.push((w.table, old.key()));
                }
                // A claim of `get_for_update` the write used: the claim stays
                // (unused again), and so does its write lock.
                let claims = &mut self.core.local.get().claims;
                if let Some(c) = claims.iter_mut().find(|c| c.used && c.v.0 == w.old) {
                    c.used = false;
                    continue;
                }
                if let Some(readers) = word::release_write_lock(&old.end, id) {
                    if readers > 0 {
                        // Their last release would have released our
                        // wait-for dependency on this version; it no
                        // longer names us.
                        db.txns.release_wait_for(id);
                    }
                }
                // Our own version (updated again since the mark) needs no
                // read lock: nobody else can write it.
                // Relaxed: our own word, or a creator's published with `old`.
                let own = old.begin.load(Ordering::Relaxed) == self.word;
                if lock_reads && !own && refused.is_none() {
                    match read_lock(old, id, &db.txns, &mut self.core.local.get().read_locks) {
                        Locked::Yes => {}
                        // Replaced since we released it: what we read before
                        // the savepoint cannot be kept stable.
                        Locked::NotLatest => refused = Some(AbortReason::ReadLock),
                        Locked::Refused(r) => refused = Some(r),
                    }
                }
            }
        }
        // Reads of our own new versions since the mark read what no longer
        // exists: section 3.2's validation would find them invisible (Begin
        // is INFINITY) and fail every try, and the collector may free them
        // before we commit. The rows under those keys are read again if
        // the caller wants them.
        let mut news: Vec<*mut Version> = gone.iter().map(|w| w.new).filter(|v| !v.is_null()).collect();
        if !news.is_empty() {
            news.sort_unstable();
            self.core.local.get().read_set.retain(|&VPtr(v)| news.binary_search(&v).is_err());
        }
        // New versions become garbage once every transaction open now is
        // gone, as in `abort_with`. SeqCst: as there.
        let now = db.clock.load(Ordering::SeqCst) - 1;
        Self::collect_garbage(
            db,
            self.core.slot,
            gone.iter().filter(|w| !w.new.is_null()).map(|w| Garbage { ts: now, table: w.table, v: VPtr(w.new) }),
        );
        self.core.rollback_history(mark.history, &keys);
        match refused {
            Some(r) => Err(self.abort_with(r)),
            None => Ok(()),
        }
    }
}

impl BohmTxn<'_> {
    fn savepoint_mark(&mut self) -> Result<Mark> {
        self.bo_enter()?;
        let history = self.core.history_mark();
        Ok(Mark { writes: self.undo_len(), replaced: 0, history })
    }

    fn rollback_to(&mut self, mark: Mark) -> Result<()> {
        self.bo_enter()?;
        let keys = self.undo_to(mark.writes);
        self.core.rollback_history(mark.history, &keys);
        Ok(())
    }
}
