//! What every transaction has, whatever its family ([`TxnCore`]): its
//! database, transaction-table slot and id, begin time, isolation level,
//! status, its sets (through [`Sets`]) and its history recording; and the
//! steps every family shares: entering an operation, the bookkeeping of
//! an abort or a commit, handing the slot back, and waiting for commit
//! dependencies (Hekaton section 3.2; only the multi-version family
//! registers any, the others find the counter at zero).
//!
//! Each family's transaction struct owns a `TxnCore` as its field `core`
//! and adds its own state (`mv::MvTxn`, `silo::SiloTxn`,
//! `lock_1v::LockTxn`, `bohm::BohmTxn`); the public
//! [`Transaction`](super::transaction::Transaction) is an enum over them.

use super::sets::Sets;
use crate::error::AbortReason;
use crate::history::{Op, Outcome, TxnRecord, Writer};
use crate::key::Key;
use crate::obs::Started;
use crate::shared::Shared;
use crate::sync::atomic::Ordering;
use crate::table::{Index, Table};
use crate::txn::table::TxnSlot;
use crate::{Error, IndexId, Isolation, Result, TableId};
use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::Bound;

/// What a successful commit reports.
///
/// ```
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// let mut x = db.begin(Isolation::Serializable).unwrap();
/// x.insert(t, Key::from(1), b"a").unwrap();
/// x.insert(t, Key::from(2), b"b").unwrap();
/// let info = x.commit().unwrap();
/// assert_eq!(info.writes, 2);
/// // A transaction that begins later is serialized after it.
/// let later = db.begin(Isolation::Serializable).unwrap().commit().unwrap();
/// assert!(later.commit_ts > info.commit_ts);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommitInfo {
    /// The transaction's position in the serialization order: its end
    /// timestamp, or its begin timestamp for a transaction that wrote nothing.
    pub commit_ts: u64,
    /// Number of versions written (inserted, updated or deleted).
    pub writes: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Active,
    Aborted(AbortReason),
}

/// How the history names and classifies a transaction (recording only, see
/// [`crate::history`]); set by its family when it begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The name in the history: the transaction id (BOHM: its log position).
    pub(crate) id: u64,
    /// Its reads hold until its serialization point, as a locking reader's
    /// do (the checker places them there).
    pub(crate) locking: bool,
    /// It reads one snapshot and is certified (SSN over snapshot, SSI).
    pub(crate) snapshot: bool,
}

/// What [`TxnCore::admit`] asks for beside the value: a version's header
/// and a few links, and a short key.
const ADMIT_OVERHEAD: usize = 64;

/// What every transaction has (module docs).
pub(crate) struct TxnCore<'db> {
    pub(crate) db: &'db Shared,
    /// The transaction-table slot; `u32::MAX` once terminated.
    pub(crate) slot: u32,
    pub(crate) id: u64,
    pub(crate) begin_ts: u64,
    pub(crate) isolation: Isolation,
    pub(crate) read_only: bool,
    pub(crate) status: Status,
    /// Versions this transaction allocated (statistics).
    pub(crate) created: u64,
    /// History recording is on (see [`crate::history`]).
    pub(crate) recording: bool,
    pub(crate) shape: Shape,
    /// When it began (the `metrics` feature's durations; zero-sized without).
    pub(crate) began: Started,
    /// The sets, in the slot's [`super::sets::TxnLocal`].
    pub(crate) local: Sets<'db>,
    /// `Send` but not `Sync`: the sets are used without locks.
    _not_sync: PhantomData<Cell<()>>,
}

/// The hooks a family gives the steps every operation begins with: its
/// core, and its own rollback (`abort_with`: what it undoes differs). The
/// families that run operations one by one (MV, Silo, 1V) implement it;
/// calls are static (each family's struct is a concrete type), so `enter`
/// inlines as the families' own copies did.
pub(crate) trait Hooks<'db> {
    fn core(&self) -> &TxnCore<'db>;
    /// Rolls back for `reason` and returns the error to hand the caller.
    fn rollback(&mut self, reason: AbortReason) -> Error;

    /// Checks the transaction may run an operation: it is open, and no
    /// transaction it depends on aborted (else it aborts too).
    #[inline]
    fn enter(&mut self) -> Result<()> {
        if self.core().entry()? {
            return Err(self.rollback(AbortReason::CommitDependency));
        }
        Ok(())
    }

    /// [`Self::enter`] and the checks of a write (see `TxnCore::write_checks`).
    #[inline]
    fn enter_write(&mut self, table: TableId, value_len: usize) -> Result<&'db Table> {
        self.enter()?;
        self.core().write_checks(table, value_len)
    }
}

/// Implements [`Hooks`] for a family's transaction struct that has a
/// `core: TxnCore` field and an inherent `abort_with`.
macro_rules! hooks {
    ($family:ident) => {
        impl<'db> $crate::protocol::core::Hooks<'db> for $family<'db> {
            #[inline]
            fn core(&self) -> &$crate::protocol::core::TxnCore<'db> {
                &self.core
            }

            #[inline]
            fn rollback(&mut self, reason: $crate::error::AbortReason) -> $crate::Error {
                self.abort_with(reason)
            }
        }
    };
}
pub(crate) use hooks;

impl<'db> TxnCore<'db> {
    #[inline]
    pub(crate) fn new(
        db: &'db Shared,
        sets: &'db super::sets::SlotSets,
        slot: u32,
        id: u64,
        begin_ts: u64,
        iso: Isolation,
        read_only: bool,
    ) -> Self {
        TxnCore {
            db,
            slot,
            id,
            begin_ts,
            isolation: iso,
            read_only,
            status: Status::Active,
            created: 0,
            recording: db.recording(),
            shape: Shape { id, locking: false, snapshot: false },
            began: Started::now(),
            local: Sets::of(sets, slot),
            _not_sync: PhantomData,
        }
    }

    #[inline]
    pub(crate) fn slot(&self) -> &'db TxnSlot {
        self.db.txns.slot(self.slot)
    }

    /// Still open: neither aborted nor terminated.
    #[inline]
    pub(crate) fn is_open(&self) -> bool {
        self.status == Status::Active && self.slot != u32::MAX
    }

    /// The first step of every operation: `Err` if the transaction is
    /// closed; `Ok(true)` if a transaction it depends on aborted, so that
    /// the caller must abort (each family's own `abort_with`).
    #[inline]
    pub(crate) fn entry(&self) -> Result<bool> {
        if let Status::Aborted(r) = self.status {
            return Err(Error::TransactionClosed(Some(r)));
        }
        // Acquire: pairs with the Release store of the aborting dependency.
        Ok(self.slot().abort_now.load(Ordering::Acquire))
    }

    /// The checks of a write after [`Self::entry`]: not read-only, the
    /// value within the limit, the table known.
    #[inline]
    pub(crate) fn write_checks(&self, table: TableId, value_len: usize) -> Result<&'db Table> {
        if self.read_only {
            return Err(Error::InvalidArgument("write in a read-only transaction".into()));
        }
        if value_len > self.db.opts.max_value_size {
            return Err(Error::ValueTooLarge { len: value_len, max: self.db.opts.max_value_size });
        }
        self.db.table_ref(table)
    }

    /// The memory gate of a write that may allocate a version of about
    /// `value_len` bytes of value (see `memory`): [`Error::MemoryLimit`]
    /// past [`crate::Options::memory_limit`], the transaction left open.
    /// Without a limit, one branch. A closed or read-only transaction is
    /// let through, for the write itself to refuse.
    #[inline]
    pub(crate) fn admit(&self, value_len: usize) -> Result<()> {
        match &self.db.budget {
            None => Ok(()),
            Some(b) if self.is_open() && !self.read_only => b.admit(value_len + ADMIT_OVERHEAD),
            Some(_) => Ok(()),
        }
    }

    /// [`Self::admit`] for an update. The single-version families update
    /// in place and check in their own write, once the new value is known
    /// ([`Self::admit_resize`]).
    #[inline]
    pub(crate) fn admit_update(&self, value_len: usize) -> Result<()> {
        match &self.db.budget {
            None => Ok(()),
            Some(_) if self.db.opts.protocol.is_single_version() => Ok(()),
            Some(_) => self.admit(value_len),
        }
    }

    /// [`Self::admit`] for a single-version update of a value of `old_len`
    /// bytes to one of `new_len`, once the row's value was read (into the
    /// Silo sets' copy): a value of the same length is rewritten in place and
    /// allocates nothing; another length makes a new record at commit.
    #[inline]
    pub(crate) fn admit_resize(&mut self, old_len: usize, new_len: usize) -> Result<()> {
        match &self.db.budget {
            None => Ok(()),
            Some(_) if old_len == new_len => Ok(()),
            Some(_) => self.admit(new_len),
        }
    }

    /// The table and index of `index`.
    #[inline]
    pub(crate) fn index_ref(&self, index: IndexId) -> Result<(&'db Table, &'db Index)> {
        let t = self.db.table_ref(index.table())?;
        let ix = t.indexes.get(index.index as usize).ok_or_else(|| Error::UnknownIndex(format!("#{}", index.index)))?;
        Ok((t, ix))
    }

    /// Records a scan of `index` and its rows (recording only). The key
    /// range alone describes what the scan matched unless it had a filter
    /// or went through a secondary index.
    #[cold]
    pub(crate) fn record_scan(
        &mut self,
        index: IndexId,
        lo: Bound<Key>,
        hi: Bound<Key>,
        filter: bool,
        rows: Vec<(Key, Writer, Vec<u8>)>,
    ) {
        let filtered = filter || index.index != 0;
        self.record(Op::Scan { table: index.table, index: index.index, lo, hi, filtered, rows });
    }

    /// Appends an operation to the history buffer (recording only).
    #[cold]
    pub(crate) fn record(&mut self, op: Op) {
        self.local.get().history.push(op);
    }

    /// Hands the finished transaction to the database's history.
    #[cold]
    pub(crate) fn record_end(&mut self, commit_ts: Option<u64>, outcome: Outcome) {
        let ops = std::mem::take(&mut self.local.get().history);
        self.db.record(TxnRecord {
            id: self.shape.id,
            isolation: self.isolation,
            begin_ts: self.begin_ts,
            commit_ts,
            outcome,
            locking: self.shape.locking,
            snapshot: self.shape.snapshot,
            ops,
        });
    }

    /// Waits until CommitDepCounter is zero (true) or AbortNow is set (false).
    pub(crate) fn wait_for_dependencies(&self) -> bool {
        self.slot().await_dependencies()
    }

    /// The end of every family's rollback, once its own undo is done:
    /// the history, the statistics, the status; the slot is given back.
    pub(crate) fn aborted(&mut self, reason: AbortReason) -> Error {
        if self.recording {
            self.record_end(None, Outcome::Aborted(reason));
        }
        // Relaxed: statistics only.
        self.slot().aborts[reason as usize].fetch_add(1, Ordering::Relaxed);
        self.db.obs.aborted(self.began, reason);
        self.status = Status::Aborted(reason);
        self.release();
        Error::Aborted(reason)
    }

    /// The end of every family's commit: statistics, and the slot is given
    /// back; the transaction is closed.
    pub(crate) fn terminate(&mut self) {
        // Relaxed: statistics only.
        self.slot().committed.fetch_add(1, Ordering::Relaxed);
        self.db.obs.committed();
        self.release();
        // A committed transaction is consumed; mark it so Drop does nothing.
        self.status = Status::Aborted(AbortReason::User);
        self.slot = u32::MAX;
    }

    /// Clears the sets and gives the slot back (the transaction terminates).
    pub(crate) fn release(&mut self) {
        let s = self.slot();
        // Relaxed: statistics only.
        s.created.fetch_add(self.created, Ordering::Relaxed);
        self.created = 0;
        self.local.get().clear();
        self.db.txns.close(self.slot);
    }
}

/// A point inside a transaction to roll back to, from
/// [`Transaction::savepoint`](crate::Transaction::savepoint). It belongs to its transaction, and stays
/// usable after a rollback to it (for another rollback to the same point);
/// a rollback to an earlier savepoint releases the later ones.
///
/// ```
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// let mut tx = db.begin(Isolation::Serializable).unwrap();
/// tx.insert(t, Key::from(1), b"kept").unwrap();
/// let sp = tx.savepoint().unwrap();
/// tx.insert(t, Key::from(2), b"undone").unwrap();
/// tx.update(t, &Key::from(1), b"undone").unwrap();
/// tx.rollback_to(&sp).unwrap();
/// assert_eq!(tx.get(t, &Key::from(1)).unwrap().as_deref(), Some(&b"kept"[..]));
/// assert_eq!(tx.get(t, &Key::from(2)).unwrap(), None);
/// tx.commit().unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Savepoint {
    /// The transaction's id.
    pub(crate) txn: u64,
    /// Its number among the transaction's savepoints.
    pub(crate) seq: u32,
    pub(crate) mark: Mark,
}

/// How far a transaction had gone when a savepoint was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    /// WriteSet entries (or BOHM undo entries).
    pub(crate) writes: usize,
    /// Entries of the Silo/1V `replaced` log.
    pub(crate) replaced: usize,
    /// Recorded history operations.
    pub(crate) history: usize,
}

impl TxnCore<'_> {
    /// Where the recorded history stands (recording only), for a savepoint.
    pub(crate) fn history_mark(&mut self) -> usize {
        if self.recording {
            self.local.get().history.len()
        } else {
            0
        }
    }

    /// Drops, from the recorded history since `mark`, the writes rolled
    /// back and the reads and scans that could have seen them (module
    /// docs); `keys` are the (table, key) pairs written since the mark.
    pub(crate) fn rollback_history(&mut self, mark: usize, keys: &[(u32, Key)]) {
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
