//! MV/O: Hekaton's optimistic multi-version concurrency control
//! (Larson et al., VLDB 2011, section 3; thesis section 4.4).
//!
//! A transaction goes through the phases of section 2.4:
//!
//! 1. **Begin**: take a begin timestamp (a clock reading), become Active.
//! 2. **Normal processing** (section 3.1): reads check visibility (Tables 1
//!    and 2, in [`crate::txn::visibility`]) as of the logical read time — the
//!    current time under read committed, the begin timestamp otherwise.
//!    Serializable and repeatable-read transactions record the versions they
//!    read in their **ReadSet**; serializable ones record every scan in their
//!    **ScanSet**. Updates and deletes check updatability and install the
//!    transaction id in the old version's End word by compare-and-swap (the
//!    write lock, first writer wins); new versions carry the id in their
//!    Begin word and are linked into every index at once. Nothing blocks.
//! 3. **Precommit**: take the end timestamp and become Preparing.
//! 4. **Preparation** (section 3.2): read validation (every ReadSet version
//!    still visible as of the end timestamp), phantom detection (repeat every
//!    ScanSet scan as of the end timestamp and look for versions that came
//!    into existence during the transaction's lifetime), then wait until
//!    CommitDepCounter is zero or AbortNow is set; then write the new versions
//!    to the log (a redo record appended to the thread's stream) and, under
//!    sync durability, wait for its round, still Preparing, so that only
//!    durable commits become visible (`durability::log`, "Durable
//!    visibility"). Then become Committed or Aborted.
//! 5. **Postprocessing** (section 3.3): stamp the end timestamp into the new
//!    versions' Begin and the old versions' End words — or, on abort, set the
//!    new versions' Begin to infinity and reset the old versions' End words —
//!    then report the outcome to the transactions in CommitDepSet, hand the
//!    garbage to the collector, and terminate.
//!
//! [`Transaction`] is also the pessimistic transaction of MV/L (section 4):
//! the phases, visibility and postprocessing are the same; reads that lock
//! instead of being validated, wait-for dependencies and deadlock detection
//! are in [`super::mv_lock`], and the places here that call into it are
//! guarded by `lock_reads`, `lock_scans` and `honour_locks` (all false under
//! `mv-occ`, which runs exactly the optimistic scheme).
//!
//! Deliberate differences from the paper, all conservative or equivalent:
//!
//! * A point lookup of a unique primary key that finds a visible version
//!   records only the version in the ReadSet, not a ScanSet entry: a new
//!   version of that key can only appear after the one read has ended, which
//!   read validation already catches. Lookups that find nothing, and all
//!   secondary and range scans, are recorded in the ScanSet.
//! * A transaction that reaches commit with an empty WriteSet is serialized at
//!   its begin timestamp: all its reads were as of that time, so it needs no
//!   end timestamp and no validation (only its commit dependencies are
//!   awaited). Section 3.4 recommends exactly this for read-only transactions.
//! * A ReadSet version whose End word holds this transaction's own id (it
//!   read, then updated the version) passes validation: the write lock kept
//!   anybody else from replacing it.
//! * Between taking the end timestamp and publishing it, the state word reads
//!   "Preparing, timestamp pending"; a reader that sees it spins for those
//!   few instructions, so that no reader with a later read time can miss a
//!   transaction that commits before it (the paper treats the two as one
//!   atomic step).
//! * The begin timestamp is a reading of the clock (the odd time just past
//!   every stamp handed out), not an increment (section 2.4 draws both
//!   timestamps by read-and-increment). Only end timestamps must be unique:
//!   they order the committed transactions, and the correctness argument of
//!   the thesis (section 4.4.5) rests on them alone.
//! * Read committed reads at the current time, but reads the clock only when
//!   a version word holds a transaction id: with timestamps in both words the
//!   answer is the same for every "now" (see `visible_at`); a lookup that
//!   finds nothing is repeated with a clock reading taken before its walk.
//! * Inserts enforce primary-key uniqueness: an insert fails with
//!   `DuplicateKey` if the key has a visible row, and aborts with a write
//!   conflict if another transaction inserted or changed the key concurrently
//!   (checked before and again after linking the new version).
//!
//! Files: this one (the `Transaction`, its state and the helpers every
//! phase uses), `read.rs` (reads and scans), `write.rs` (writes),
//! `commit.rs` (commit and abort).

mod commit;
mod read;
mod write;

use crate::error::AbortReason;
use crate::gc::Garbage;
use crate::history::{Op, Outcome, TxnRecord, WriteKind, Writer};
use crate::index::locks::contains as in_range;
use crate::key::Key;
use crate::protocol::mv_lock::{read_lock, Locked};
use crate::protocol::pomvcc;
use crate::protocol::sets::Sets;
use crate::protocol::ssn::{self, Cert};
use crate::storage::version::{VPtr, Version};
use crate::storage::word::{self, txn_word, writer_of_end, Claim, RecordLock, Word, INFINITY};
use crate::table::{Index, IndexImpl, Table};
use crate::txn::table::{TxnSlot, TxnState};
use crate::txn::visibility::{is_competing, updatable, visible_at, Me, NOW};
use crate::txn::{Filter, ScanKind, ScanRecord, WriteEntry};
use crate::{Database, Error, IndexId, Isolation, Mode, Protocol, Result, TableId, TxnOptions};
use crossbeam_utils::Backoff;
use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::ptr;
use std::sync::atomic::Ordering;

/// Garbage queue length at which a committing transaction also collects.
const GC_THRESHOLD: usize = 128;

/// What a successful commit reports.
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

/// An open transaction. Dropping it while active aborts it. It may move
/// between threads (`Send`) but is used by one at a time (not `Sync`).
///
/// Every operation is non-blocking; the only wait is inside [`commit`]
/// (commit dependencies). After an operation returns [`Error::Aborted`] the
/// transaction is rolled back and every later operation returns
/// [`Error::TransactionClosed`].
///
/// [`commit`]: Transaction::commit
pub struct Transaction<'db> {
    pub(crate) db: &'db Database,
    pub(crate) slot: u32,
    pub(crate) id: u64,
    /// The id as a Begin/End word.
    pub(crate) word: u64,
    pub(crate) begin_ts: u64,
    pub(crate) isolation: Isolation,
    read_only: bool,
    /// ReadSet kept (repeatable read, serializable).
    track_reads: bool,
    /// ScanSet kept (serializable).
    track_scans: bool,
    /// MV/L (section 4): a pessimistic transaction; reads at the current
    /// time except under snapshot isolation, and locks instead of validating.
    pessimistic: bool,
    /// Read locks taken (pessimistic repeatable read and serializable).
    lock_reads: bool,
    /// Bucket and range locks taken (pessimistic serializable).
    lock_scans: bool,
    /// Other transactions may lock or impose wait-for dependencies on this
    /// one (mv-lock and mv-mixed; section 4.5), so it honours them.
    pub(crate) honour_locks: bool,
    /// Published something in the slot's `WaitInfo` (released at the end).
    pub(crate) used_waits: bool,
    /// A single-version (Silo) transaction: every operation goes to
    /// `protocol::silo`.
    pub(crate) single: bool,
    /// A single-version locking transaction (1V or ordered 2PL): every
    /// operation goes to `protocol::lock_1v`.
    pub(crate) locking: bool,
    /// Locking: read locks held to the end (repeatable read, serializable).
    pub(crate) long_reads: bool,
    /// Locking: key-range locks on scans (serializable).
    pub(crate) key_range: bool,
    /// Ordered 2PL: every declared lock was taken at begin; no more
    /// primary-key locks may be taken.
    pub(crate) declared: bool,
    /// A BOHM interactive transaction: alone, on the latest versions (see
    /// `protocol::bohm`).
    pub(crate) bohm: bool,
    /// SSN or SSI certifies this transaction (see `protocol::ssn`).
    pub(crate) cert: Cert,
    /// SSN over read committed: reads at the current time.
    base_rc: bool,
    /// POMVCC: the commit timestamp this transaction took (Allocate_CTs;
    /// 0: none yet), to count it committed or take it back.
    po_cts: u64,
    /// POMVCC's optimistic transaction (section V.D, Figure 13): writes wait
    /// in `TxnLocal::pending` and take their write locks at commit; off, a
    /// write takes its lock at update time (Figure 14's pessimistic scheme,
    /// and MV/O's own).
    pub(crate) po_occ: bool,
    pub(crate) status: Status,
    /// Versions this transaction allocated (statistics).
    pub(crate) created: u64,
    /// History recording is on (see [`crate::history`]).
    pub(crate) recording: bool,
    /// The sets, in the transaction-table slot (see [`Sets`]).
    pub(crate) local: Sets<'db>,
    /// `Send` but not `Sync`: the sets in the slot are used without locks.
    _not_sync: PhantomData<Cell<()>>,
}

impl<'db> Transaction<'db> {
    pub(crate) fn new(db: &'db Database, slot: u32, id: u64, begin_ts: u64, o: TxnOptions<'_>) -> Self {
        let iso = o.isolation;
        let protocol = db.opts.protocol;
        // Read-only transactions read a snapshot without locks or validation
        // under either scheme (section 5.2.1: "the two MV schemes behave
        // identically"). Under mv-mixed the default alternates with the id's
        // generation, so every workload runs both kinds side by side.
        let cert = match protocol {
            // A safe snapshot needs no certification (section 5.2).
            _ if ssn::uses_safe_snapshot(db, &o) => Cert::Off,
            Protocol::Ssn => Cert::Ssn,
            Protocol::Ssi => Cert::Ssi,
            _ => Cert::Off,
        };
        let certified = cert != Cert::Off;
        // POMVCC's modes choose when writes lock (see `po_occ`), not how reads
        // stay valid: its reads are always validated.
        let pessimistic = !o.read_only
            && protocol != Protocol::Pomvcc
            && match o.mode {
                Mode::Optimistic => false,
                Mode::Pessimistic => true,
                Mode::Default => match protocol {
                    Protocol::MvLock => true,
                    Protocol::MvMixed => (id >> crate::txn::table::SLOT_BITS) & 1 == 1,
                    _ => false,
                },
            };
        let mut t = Transaction {
            db,
            slot,
            id,
            word: txn_word(id),
            begin_ts,
            isolation: iso,
            read_only: o.read_only,
            // SSN and SSI track reads their own way, read-only ones too.
            track_reads: !o.read_only && !pessimistic && !certified && iso >= Isolation::RepeatableRead,
            track_scans: (certified || !o.read_only) && !pessimistic && iso == Isolation::Serializable,
            pessimistic,
            lock_reads: pessimistic && iso >= Isolation::RepeatableRead,
            lock_scans: pessimistic && iso == Isolation::Serializable,
            honour_locks: !matches!(protocol, Protocol::MvOcc | Protocol::Ssn | Protocol::Ssi | Protocol::Pomvcc),
            used_waits: false,
            single: protocol == Protocol::Silo,
            locking: protocol.uses_key_locks(),
            long_reads: iso >= Isolation::RepeatableRead && !db.opts.faults.skip_validation,
            key_range: iso == Isolation::Serializable && !db.opts.faults.skip_validation,
            declared: false,
            bohm: protocol == Protocol::Bohm,
            cert,
            base_rc: cert == Cert::Ssn && db.opts.ssn_base == Isolation::ReadCommitted,
            po_cts: 0,
            po_occ: protocol == Protocol::Pomvcc && o.mode == Mode::Optimistic && !o.read_only,
            status: Status::Active,
            created: 0,
            recording: db.is_recording(),
            local: Sets::of(db, slot),
            _not_sync: PhantomData,
        };
        if certified {
            let st = &mut t.local.get().ssn;
            st.lax = db.opts.faults.skip_validation;
            // Section 5.3: versions created more than `age` commits (two
            // clock steps each) before we began are read untracked.
            st.stale_below = match db.opts.ssn_read_mostly_age {
                Some(age) if cert == Cert::Ssn => begin_ts.saturating_sub(age.saturating_mul(2)),
                _ => 0,
            };
        }
        t
    }

    /// The isolation level.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Makes a fresh read-only multi-version transaction a plain snapshot
    /// read: no certification (SSN, SSI) and no tracking. A checkpoint
    /// reads every row as of its begin timestamp, the commit-order prefix
    /// onto which recovery replays the later records; certifying that
    /// long read would only abort it.
    pub(crate) fn plain_snapshot(&mut self) {
        debug_assert!(self.read_only && !self.single && !self.locking && !self.bohm);
        self.cert = Cert::Off;
        self.track_reads = false;
        self.track_scans = false;
    }

    /// Makes a fresh read-only single-version transaction read records as
    /// they are, without locks or validation (Silo's scans, never
    /// committed): for a checkpoint that holds the commit freeze
    /// (`durability::checkpoint`), under which nothing is installed.
    pub(crate) fn frozen_reader(&mut self) {
        debug_assert!(self.read_only && (self.single || self.locking));
        self.single = true;
        self.locking = false;
    }

    /// The begin timestamp.
    pub fn begin_ts(&self) -> u64 {
        self.begin_ts
    }

    /// The transaction id (as stored in Begin/End words).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// True for a pessimistic (MV/L) transaction, false for an optimistic one.
    pub fn is_pessimistic(&self) -> bool {
        self.pessimistic
    }

    /// The reason this transaction was aborted, if it was.
    pub fn abort_reason(&self) -> Option<AbortReason> {
        match self.status {
            Status::Aborted(r) => Some(r),
            Status::Active => None,
        }
    }

    #[inline]
    pub(crate) fn slot(&self) -> &'db TxnSlot {
        self.db.txns.slot(self.slot)
    }

    #[inline]
    pub(crate) fn me(&self) -> Me<'db> {
        // POMVCC reads at BTs even at read committed (Table VII: a BTs per
        // statement): a version stamped with a commit timestamp past BTs is
        // not visible yet, so "now" is resolved from the clock up front
        // instead of by the shortcut for fully stamped versions.
        // SeqCst: as every read time taken from the clock.
        let now = if self.db.po.is_some() { self.db.clock.load(Ordering::SeqCst) - 1 } else { 0 };
        Me {
            table: &self.db.txns,
            slot: self.slot,
            id: self.id,
            clock: &self.db.clock,
            now: Cell::new(now),
            peer: 0,
            clash: Cell::new(false),
        }
    }

    /// The checker for validation at `check_ts`: under POMVCC, just past
    /// the shared stamp, whose other holders are peers (see `Me::peer`).
    fn me_validating(&self, check_ts: u64) -> Me<'db> {
        let peer = if self.db.po.is_some() { check_ts - 1 } else { 0 };
        Me { peer, ..self.me() }
    }

    /// The table and index of `index`.
    #[inline]
    pub(crate) fn index_ref(&self, index: IndexId) -> Result<(&'db Table, &'db Index)> {
        let t = self.db.table_ref(TableId(index.table))?;
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
            // BOHM names every transaction by its log position.
            id: if self.bohm { self.begin_ts } else { self.id },
            isolation: self.isolation,
            begin_ts: self.begin_ts,
            commit_ts,
            outcome,
            // Silo validates every read at its serialization point, as a
            // locking reader holds its locks until then.
            // SSN over read committed read at the current time, and its
            // phantom detection keeps every absence it saw until its commit.
            locking: self.lock_reads || self.single || (self.locking && self.long_reads) || self.base_rc,
            snapshot: self.cert != Cert::Off && !self.base_rc,
            ops,
        });
    }

    /// Reads at the current time: read committed, and pessimistic
    /// transactions at every level but snapshot (section 4.3.1).
    #[inline]
    fn reads_now(&self) -> bool {
        self.isolation == Isolation::ReadCommitted
            || self.base_rc
            || (self.pessimistic && self.isolation != Isolation::Snapshot)
    }

    /// The logical read time (sections 3.4 and 4.3.1): now under read
    /// committed and for pessimistic transactions above snapshot, the begin
    /// timestamp otherwise.
    #[inline]
    pub(crate) fn read_time(&self) -> u64 {
        if self.reads_now() {
            // SeqCst: a reader must not see a committer as Active after the
            // committer's end timestamp was drawn below our read time (see the
            // pending state in the module docs). Odd: never equals a stamp.
            self.db.clock.load(Ordering::SeqCst) - 1
        } else {
            self.begin_ts
        }
    }

    /// The read time of a point lookup: as [`Self::read_time`], except that
    /// read committed uses the lazy [`NOW`] (see `find_visible`).
    #[inline]
    pub(crate) fn lookup_time(&self) -> u64 {
        if self.reads_now() {
            NOW
        } else {
            self.begin_ts
        }
    }

    /// Checks the transaction may run an operation.
    #[inline]
    pub(crate) fn enter(&mut self) -> Result<()> {
        if let Status::Aborted(r) = self.status {
            return Err(Error::TransactionClosed(Some(r)));
        }
        // Acquire: pairs with the Release store of the aborting dependency.
        if self.slot().abort_now.load(Ordering::Acquire) {
            return Err(self.abort_with(AbortReason::CommitDependency));
        }
        Ok(())
    }

    #[inline]
    pub(crate) fn enter_write(&mut self, table: TableId, value_len: usize) -> Result<&'db Table> {
        self.enter()?;
        if self.read_only {
            return Err(Error::InvalidArgument("write in a read-only transaction".into()));
        }
        if value_len > self.db.opts.max_value_size {
            return Err(Error::ValueTooLarge { len: value_len, max: self.db.opts.max_value_size });
        }
        self.db.table_ref(table)
    }

    /// Finds the version of `key` visible at `rt` through the primary index.
    ///
    /// Under read committed `rt` is [`NOW`]: the shared clock is read only if
    /// a version word holds a transaction id (see `visible_at`). A version
    /// found that way was the latest committed one when it was checked, which
    /// is all read committed asks. Finding nothing proves less: a newer
    /// version may have been linked ahead of the chain position we started
    /// from and committed before a clock reading taken during the walk. So
    /// an empty lazy walk is repeated with a clock reading taken before it.
    #[inline]
    pub(crate) fn find_visible(&self, t: &Table, key: &Key, rt: u64) -> *mut Version {
        let found = self.walk_visible(t, key, rt);
        if found.is_null() && rt == NOW {
            return self.walk_visible(t, key, self.read_time());
        }
        found
    }

    #[inline]
    fn walk_visible(&self, t: &Table, key: &Key, rt: u64) -> *mut Version {
        let me = self.me();
        let mut found = ptr::null_mut();
        t.indexes[0].for_each_eq(key, |v| {
            if v.key_eq(key) && visible_at(v, rt, &me).is_some() {
                found = v as *const Version as *mut Version;
                false
            } else {
                true
            }
        });
        found
    }
}

/// The writer of a version, as the history names it (see [`crate::history`]).
pub(crate) fn writer_of(v: &Version) -> Writer {
    // Acquire: the word as finalised by postprocessing, if it already was.
    match Word::decode(v.begin.load(Ordering::Acquire)) {
        Word::Ts(b) => Writer::Committed(b),
        Word::Txn(id) => Writer::Txn(id),
    }
}
