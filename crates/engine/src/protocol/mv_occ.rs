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
//!    CommitDepCounter is zero or AbortNow is set. (Logging arrives with the
//!    durability issue.) Then become Committed or Aborted.
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

use crate::error::AbortReason;
use crate::gc::Garbage;
use crate::history::{Op, Outcome, TxnRecord, WriteKind, Writer};
use crate::index::locks::contains as in_range;
use crate::key::Key;
use crate::protocol::mv_lock::{read_lock, Locked};
use crate::protocol::pomvcc;
use crate::protocol::ssn::{self, Cert};
use crate::storage::table::{Index, IndexImpl, Table};
use crate::storage::version::{VPtr, Version};
use crate::storage::word::{self, txn_word, writer_of_end, Claim, RecordLock, Word, INFINITY};
use crate::txn::table::{TxnSlot, TxnState};
use crate::txn::visibility::{is_competing, updatable, visible_at, Me, NOW};
use crate::txn::{Filter, ScanKind, ScanRecord, TxnLocal, WriteEntry};
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
        let t = Transaction {
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
            _not_sync: PhantomData,
        };
        if certified {
            let st = t.ssn();
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

    /// The transaction's sets.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) fn local(&self) -> &'db mut TxnLocal {
        // SAFETY: the slot's `local` belongs to its current occupant, this
        // transaction, which is neither `Sync` nor shared; every use is a short
        // borrow that does not overlap another one or any user callback.
        unsafe { &mut *self.slot().local.get() }
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
        &self,
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
    pub(crate) fn record(&self, op: Op) {
        self.local().history.push(op);
    }

    /// Hands the finished transaction to the database's history.
    #[cold]
    pub(crate) fn record_end(&self, commit_ts: Option<u64>, outcome: Outcome) {
        let ops = std::mem::take(&mut self.local().history);
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

    // ------------------------------------------------------------------
    // Normal processing: reads and scans (section 3.1)
    // ------------------------------------------------------------------

    /// Reads the row with primary key `key` and passes its value to `f`.
    /// No allocation: the value is borrowed for the duration of `f`.
    #[inline]
    pub fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        if self.bohm {
            return self.bo_get_with(table, key, f);
        }
        if self.locking {
            return self.lk_get_with(table, key, f);
        }
        if self.single {
            return self.sv_get_with(table, key, f);
        }
        self.enter()?;
        if self.po_occ {
            if let Some(i) = self.po_find(table.0, key) {
                return Ok(self.po_read(i, f));
            }
        }
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let t = self.db.table_ref(table)?;
        let mut v = if self.lock_scans {
            self.guard_key(t, table.0, 0, key)?
        } else {
            self.find_visible(t, key, self.lookup_time())
        };
        if self.lock_reads {
            v = self.lock_found(t, key, v)?;
        }
        if v.is_null() {
            self.settle_speculation()?;
            if self.track_scans {
                self.local().scan_set.push(ScanRecord {
                    table: table.0,
                    index: 0,
                    kind: ScanKind::Eq(*key),
                    filter: None,
                    since: self.begin_ts,
                });
            }
            if self.cert != Cert::Off {
                self.ssn_scan(t, 0, &ScanKind::Eq(*key));
                self.ssn_absent_key(t, key);
                self.ssn().verdict_now(self.cert).map_err(|r| self.abort_with(r))?;
            }
            if self.recording {
                self.record(Op::Read { table: table.0, key: *key, version: None });
            }
            return Ok(None);
        }
        if self.track_reads {
            self.local().read_set.push(VPtr(v));
        }
        if self.cert != Cert::Off {
            self.ssn_read(v)?;
        }
        // SAFETY: found under the epoch guard, which is still held.
        let v = unsafe { &*v };
        if self.recording {
            self.record(Op::Read { table: table.0, key: *key, version: Some((writer_of(v), v.value().to_vec())) });
        }
        Ok(Some(f(v.value())))
    }

    /// Hints that the rows with these primary keys will be accessed soon.
    ///
    /// Reaching a row costs two dependent cache misses (bucket, then
    /// version), and reading all of a wide row one more per cache line.
    /// Issued for all keys at once, the misses overlap instead of running
    /// one after the other: the buckets first, then every line of each
    /// chain's first version (the table's row size, see `Table::row_hint`).
    /// Only a hint: it changes nothing, tracks nothing, and does nothing
    /// for ordered indexes.
    pub fn prefetch(&self, table: TableId, keys: &[Key]) {
        self.prefetch_many(&[(table, keys)]);
    }

    /// [`Transaction::prefetch`] for the rows of several tables at once.
    /// The second step (a version's address is in its bucket) waits for
    /// the first bucket to arrive; one call for all the rows a transaction
    /// is about to reach waits once instead of once per table.
    pub fn prefetch_many(&self, sets: &[(TableId, &[Key])]) {
        let hashed = |table: TableId| match self.db.table_ref(table) {
            Ok(t) => match &t.indexes[0].imp {
                IndexImpl::Hash(h) => Some((t, h)),
                IndexImpl::Ordered(_) => None,
            },
            Err(_) => None,
        };
        for (table, keys) in sets {
            if let Some((_, h)) = hashed(*table) {
                for k in *keys {
                    h.prefetch_bucket(k.hash64());
                }
            }
        }
        for (table, keys) in sets {
            if let Some((t, h)) = hashed(*table) {
                let bytes = t.row_hint();
                for k in *keys {
                    h.prefetch_head(k.hash64(), bytes);
                }
            }
        }
    }

    /// Reads the row with primary key `key` (copies the value).
    pub fn get(&mut self, table: TableId, key: &Key) -> Result<Option<Vec<u8>>> {
        self.get_with(table, key, |v| v.to_vec())
    }

    /// Calls `f(primary key, value)` for every visible row whose key in
    /// `index` equals `key` (any index; secondary indexes may hold many rows
    /// per key), until `f` returns false.
    pub fn get_by(&mut self, index: IndexId, key: &Key, mut f: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        if self.bohm {
            return self.bo_scan(index, Bound::Included(*key), Bound::Included(*key), None, f);
        }
        if self.locking {
            return self.lk_scan(index, Bound::Included(*key), Bound::Included(*key), None, f);
        }
        if self.single {
            return self.sv_scan(index, Bound::Included(*key), Bound::Included(*key), None, f);
        }
        self.enter()?;
        self.po_connect_before_scan()?;
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let (t, ix) = self.index_ref(index)?;
        if self.lock_scans {
            self.guard_key(t, index.table, index.index, key)?; // null: the scan follows
        }
        let rt = self.read_time();
        let me = self.me();
        if self.track_scans {
            self.local().scan_set.push(ScanRecord {
                table: index.table,
                index: index.index,
                kind: ScanKind::Eq(*key),
                filter: None,
                since: rt,
            });
        }
        if self.cert != Cert::Off {
            self.ssn_scan(t, index.index, &ScanKind::Eq(*key));
        }
        let mut out = Delivery::new(self);
        ix.for_each_eq(key, |v| {
            if !ix.matches(v, key) {
                return true;
            }
            if visible_at(v, rt, &me).is_none() {
                out.ssn_absent(v, rt);
                return true;
            }
            out.deliver(v, &mut f)
        });
        if let Some(s) = &out.ssn {
            if let Err(r) = s.st.verdict_now(s.cert) {
                out.refused = out.refused.or(Some(r));
            }
        }
        if let Some(r) = out.refused {
            return Err(self.abort_with(r));
        }
        let rows = out.rows;
        if self.recording {
            let (lo, hi) = (Bound::Included(*key), Bound::Included(*key));
            self.record(Op::Scan { table: index.table, index: index.index, lo, hi, filtered: index.index != 0, rows });
        }
        Ok(())
    }

    /// Calls `f(primary key, value)` for every visible row whose key in
    /// `index` lies in `range` and that passes `filter`, until `f` returns
    /// false. Ordered indexes deliver rows in key order; hash indexes can only
    /// be scanned whole (in no particular order), filtered by `range`.
    pub fn scan(
        &mut self,
        index: IndexId,
        range: impl RangeBounds<Key>,
        filter: Option<&Filter>,
        mut f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        if self.bohm {
            return self.bo_scan(index, range.start_bound().cloned(), range.end_bound().cloned(), filter, f);
        }
        if self.locking {
            return self.lk_scan(index, range.start_bound().cloned(), range.end_bound().cloned(), filter, f);
        }
        if self.single {
            return self.sv_scan_range(index, range, filter, f);
        }
        self.enter()?;
        self.po_connect_before_scan()?;
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let (t, ix) = self.index_ref(index)?;
        let lo = range.start_bound().cloned();
        let hi = range.end_bound().cloned();
        if self.lock_scans {
            // Before the read time is taken: a version committed after the
            // lock is one whose writer saw the lock and waited for us.
            self.lock_range(index.table, index.index, ix, lo, hi);
        }
        let rt = self.read_time();
        let me = self.me();
        if self.track_scans {
            self.local().scan_set.push(ScanRecord {
                table: index.table,
                index: index.index,
                kind: ScanKind::Range(lo, hi),
                filter: filter.cloned(),
                since: rt,
            });
        }
        if self.cert != Cert::Off {
            self.ssn_scan(t, index.index, &ScanKind::Range(lo, hi));
        }
        // Writers of versions a serializable pessimistic scan cannot see yet.
        let mut uncommitted = std::mem::take(&mut self.local().uncommitted);
        let lock_scans = self.lock_scans;
        let mut out = Delivery::new(self);
        let ordered = ix.is_ordered();
        let mut stopped_at = None;
        ix.for_each_in(lo.as_ref(), hi.as_ref(), |v| {
            // Check predicate (search predicate, then residual), then visibility.
            if !ordered && !in_range(&lo, &hi, &ix.key_of(v)) {
                return true;
            }
            if let Some(p) = filter {
                if !p(&v.key(), v.value()) {
                    // SSN and SSI: the predicate read this row too, so an
                    // update that makes it match overwrites a version read.
                    if out.ssn.is_some() && visible_at(v, rt, &me).is_some() {
                        return out.ssn_read(v);
                    }
                    return true;
                }
            }
            if visible_at(v, rt, &me).is_none() {
                if lock_scans {
                    uncommitted.extend(self.uncommitted_writer(v, rt));
                }
                out.ssn_absent(v, rt);
                return true;
            }
            if out.deliver(v, &mut f) {
                return true;
            }
            stopped_at = Some(ix.key_of(v));
            false
        });
        if let Some(s) = &out.ssn {
            if let Err(r) = s.st.verdict_now(s.cert) {
                out.refused = out.refused.or(Some(r));
            }
        }
        let refused = out.refused;
        let rows = out.rows;
        self.local().uncommitted = uncommitted;
        if let Some(r) = refused {
            return Err(self.abort_with(r));
        }
        if self.lock_scans {
            if let Err(r) = self.impose_on_writers() {
                return Err(self.abort_with(r));
            }
        }
        // A scan of an ordered index that its caller stopped observed the
        // range only up to the row it stopped at (the oldest new order, the
        // first of a prefix): rows after it are neither read nor phantoms.
        // Narrowing the ScanSet entry spares false phantom aborts, and the
        // history must not claim that the rest of the range was empty. A
        // hash index is scanned in no key order: its range stays whole.
        let hi = match stopped_at {
            Some(k) if ordered => {
                if self.lock_scans {
                    ix.ranges.narrow_last(self.id, Bound::Included(k));
                }
                if self.track_scans {
                    if let Some(ScanRecord { kind: ScanKind::Range(_, h), .. }) = self.local().scan_set.last_mut() {
                        *h = Bound::Included(k);
                    }
                }
                Bound::Included(k)
            }
            _ => hi,
        };
        if self.recording {
            self.record_scan(index, lo, hi, filter.is_some(), rows);
        }
        Ok(())
    }

    // ------------------------------------------------------------------
    // Normal processing: writes (sections 2.6 and 3.1)
    // ------------------------------------------------------------------

    /// Inserts a new row; fails with [`Error::DuplicateKey`] if `key` has a
    /// visible row (the transaction stays usable).
    pub fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        if self.bohm {
            return self.bo_write(table, &key, WriteKind::Insert, |_, new| new.extend_from_slice(value));
        }
        if self.locking {
            return self.lk_insert(table, key, value);
        }
        if self.single {
            return self.sv_insert(table, key, value);
        }
        let t = self.enter_write(table, value.len())?;
        if self.po_occ {
            return self.po_insert(t, table, key, value);
        }
        self.link_insert(t, table, key, value, ptr::null_mut())
    }

    /// Links a new row for `key` into every index, after checking that the
    /// key has no visible row and no concurrent writer. `ready` is a version
    /// made earlier, or null to make one of `value`: a POMVCC optimistic
    /// insert connected at commit (its operation is recorded already, and a
    /// row that appeared since is a write conflict, not a duplicate the
    /// caller could handle). `ready` is ours to link or free.
    pub(crate) fn link_insert(
        &mut self,
        t: &Table,
        table: TableId,
        key: Key,
        value: &[u8],
        ready: *mut Version,
    ) -> Result<()> {
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let rt = self.read_time();
        let me = self.me();
        let make = || {
            if ready.is_null() {
                Version::alloc(key, t.link_words(), value, self.word).as_ptr()
            } else {
                ready
            }
        };
        // Before linking: a visible row is a duplicate; a latest version we
        // cannot see is a concurrent writer of this key.
        let mut dup = ptr::null_mut();
        let mut conflict = false;
        let (nv, unlinked) = {
            let mut precheck = insert_check(&key, rt, &me, &mut dup, &mut conflict);
            match &t.indexes[0].imp {
                // An ordered primary: one search finds the key's entry for both
                // the check and the link.
                IndexImpl::Ordered(o) => {
                    let nv = make();
                    // SAFETY: `nv` is fresh (or was kept private), initialised and unlinked.
                    if unsafe { o.insert_if(nv, (key, Key::EMPTY), precheck) } {
                        // SAFETY: as above; linked into the primary index only.
                        unsafe { t.link_secondaries(nv) };
                        (Some(nv), ptr::null_mut())
                    } else {
                        // SAFETY: never published: no other thread can have seen it.
                        unsafe { Version::free(nv) };
                        (None, ptr::null_mut())
                    }
                }
                IndexImpl::Hash(_) => {
                    t.indexes[0].for_each_eq(&key, &mut precheck);
                    (None, ready)
                }
            }
        };
        if (!dup.is_null() || conflict) && !unlinked.is_null() {
            // SAFETY: kept private since it was made: nobody else has seen it.
            unsafe { Version::free(unlinked) };
        }
        if !dup.is_null() {
            if !ready.is_null() {
                return Err(self.abort_with(AbortReason::WriteConflict));
            }
            return self.duplicate(dup);
        }
        if conflict {
            return Err(self.abort_with(AbortReason::WriteConflict));
        }
        let nv = nv.unwrap_or_else(|| {
            let nv = make();
            // SAFETY: `nv` is fresh (or was kept private), initialised and unlinked.
            unsafe { t.link_all(nv) };
            nv
        });
        self.created += 1;
        self.local().write_set.push(WriteEntry { table: table.0, old: ptr::null_mut(), new: nv });
        if self.honour_locks {
            // SAFETY: linked and ours until commit or abort.
            if let Err(r) = self.wait_for_lockers(t, unsafe { &*nv }) {
                return Err(self.abort_with(r));
            }
        }
        if self.recording && ready.is_null() {
            self.record(Op::Write { table: table.0, key, kind: WriteKind::Insert, value: value.to_vec() });
        }
        // After linking: any competing version linked before ours is a
        // concurrent insert we must not overtake (exactly one of two racing
        // inserters sees the other, the later-linked one). Versions are
        // pushed at the head of a chain, so those linked before ours follow
        // it: the walk starts at our version, with no second index search.
        // SAFETY: `nv` is linked, and ours until commit or abort.
        t.indexes[0].for_each_after(unsafe { &*nv }, |v| {
            if v.key_eq(&key) && (is_competing(v, rt, &me) || visible_at(v, rt, &me).is_some()) {
                conflict = true;
                return false;
            }
            true
        });
        if conflict {
            return Err(self.abort_with(AbortReason::WriteConflict));
        }
        if self.cert != Cert::Off {
            // The insert follows the key's last deleter (a w:w edge).
            self.ssn_absent_key(t, &key);
            self.ssn().verdict_now(self.cert).map_err(|r| self.abort_with(r))?;
        }
        Ok(())
    }

    /// An insert found `dup`, a visible row of its key: the caller learns
    /// that the row exists, a read to validate, or to lock (a version
    /// replaced meanwhile was a conflicting write). The caller is pinned.
    pub(crate) fn duplicate(&mut self, dup: *mut Version) -> Result<()> {
        if self.track_reads {
            self.local().read_set.push(VPtr(dup));
        }
        if self.cert != Cert::Off {
            self.ssn_read(dup)?;
        }
        if self.lock_reads {
            // SAFETY: found under the caller's epoch guard, which is still held.
            match read_lock(unsafe { &*dup }, self.id, &self.db.txns, &mut self.local().read_locks) {
                Locked::Yes => {}
                Locked::NotLatest => return Err(self.abort_with(AbortReason::WriteConflict)),
                Locked::Refused(r) => return Err(self.abort_with(r)),
            }
        }
        Err(Error::DuplicateKey)
    }

    /// Replaces the value of an existing row; fails with
    /// [`Error::KeyNotFound`] if `key` has no visible row.
    pub fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        if self.bohm {
            return self.bo_write(table, key, WriteKind::Update, |_, new| new.extend_from_slice(value));
        }
        if self.single || self.locking {
            if value.len() > self.db.opts.max_value_size {
                return Err(Error::ValueTooLarge { len: value.len(), max: self.db.opts.max_value_size });
            }
            return self.one_version_write(table, key, |_, new| {
                new.extend_from_slice(value);
                true
            });
        }
        let t = self.enter_write(table, value.len())?;
        if self.po_occ {
            return self.po_write(t, table, key, |_, new| {
                new.extend_from_slice(value);
                true
            });
        }
        self.replace(t, table, key, Some(value))
    }

    /// Read-modify-write: `f(old, new)` fills `new` (empty on entry) from the
    /// old value, and the new value replaces exactly the version `f` saw. Uses
    /// a buffer owned by the transaction: no allocation in the steady state.
    pub fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        if self.bohm {
            return self.bo_write(table, key, WriteKind::Update, |old, new| f(old.unwrap_or(&[]), new));
        }
        if self.single || self.locking {
            return self.one_version_write(table, key, |old, new| {
                f(old, new);
                true
            });
        }
        let t = self.enter_write(table, 0)?;
        if self.po_occ {
            return self.po_write(t, table, key, |old, new| {
                f(old, new);
                true
            });
        }
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let mut buf = std::mem::take(&mut self.local().scratch);
        buf.clear();
        let rt = self.lookup_time();
        let v = self.find_visible(t, key, rt);
        let r = if v.is_null() {
            self.not_found(table, key)
        } else {
            // SAFETY: found under the epoch guard, which is still held.
            f(unsafe { &*v }.value(), &mut buf);
            if buf.len() > self.db.opts.max_value_size {
                Err(Error::ValueTooLarge { len: buf.len(), max: self.db.opts.max_value_size })
            } else {
                self.install(t, table, key, v, Some(&buf))
            }
        };
        self.local().scratch = buf;
        r
    }

    /// Read-modify-write of an existing row that keeps its length: `f`
    /// edits a copy of the current value in place. The copy is made straight
    /// into the new version (one copy of the row; [`Transaction::update_with`]
    /// makes two), which is what fixed-layout rows want.
    pub fn modify(&mut self, table: TableId, key: &Key, f: impl FnOnce(&mut [u8])) -> Result<()> {
        if self.bohm {
            return self.bo_write(table, key, WriteKind::Update, |old, new| {
                new.extend_from_slice(old.unwrap_or(&[]));
                f(new)
            });
        }
        if self.single || self.locking {
            return self.one_version_write(table, key, |old, new| {
                new.extend_from_slice(old);
                f(new);
                true
            });
        }
        let t = self.enter_write(table, 0)?;
        if self.po_occ {
            return self.po_write(t, table, key, |old, new| {
                new.extend_from_slice(old);
                f(new);
                true
            });
        }
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let rt = self.lookup_time();
        let v = self.find_visible(t, key, rt);
        if v.is_null() {
            return self.not_found(table, key);
        }
        // SAFETY: found under the epoch guard, which is still held.
        let nv = Version::alloc(*key, t.link_words(), unsafe { &*v }.value(), self.word);
        // SAFETY: `nv` is fresh and not yet linked anywhere: ours alone.
        f(unsafe { Version::value_mut(nv) });
        if let Err(e) = self.claim(v) {
            // SAFETY: never published: no other thread can have seen it.
            unsafe { Version::free(nv.as_ptr()) };
            return Err(e);
        }
        self.publish(t, table, key, v, nv.as_ptr())
    }

    /// Deletes a row; fails with [`Error::KeyNotFound`] if `key` has no visible row.
    pub fn delete(&mut self, table: TableId, key: &Key) -> Result<()> {
        if self.bohm {
            return self.bo_write(table, key, WriteKind::Delete, |_, _| {});
        }
        if self.single || self.locking {
            return self.one_version_write(table, key, |_, _| false);
        }
        let t = self.enter_write(table, 0)?;
        if self.po_occ {
            return self.po_write(t, table, key, |_, _| false);
        }
        self.replace(t, table, key, None)
    }

    /// Inserts the row, or updates it if `key` has a visible row.
    pub fn put(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        match self.update(table, &key, value) {
            Err(Error::KeyNotFound) => self.insert(table, key, value),
            r => r,
        }
    }

    /// Update (`Some(value)`) or delete (`None`) of the visible version of `key`.
    fn replace(&mut self, t: &Table, table: TableId, key: &Key, value: Option<&[u8]>) -> Result<()> {
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let rt = self.lookup_time();
        let v = self.find_visible(t, key, rt);
        if v.is_null() {
            return self.not_found(table, key);
        }
        self.install(t, table, key, v, value)
    }

    /// A lookup found no row. If this transaction read speculatively (a
    /// commit dependency is pending), the row may be missing only because
    /// the transaction it depends on just aborted, before telling us: wait
    /// for the dependencies first, so that an absence is never reported on
    /// a view that is about to be rolled back (a workload would take it for
    /// a broken invariant). Only such transactions wait, and only on ones
    /// that are Preparing, which never wait for an active transaction.
    #[inline]
    fn settle_speculation(&mut self) -> Result<()> {
        // Acquire: pairs with the Release decrement of a reporting dependency.
        if self.slot().dep_counter.load(Ordering::Acquire) > 0 && !self.wait_for_dependencies() {
            return Err(self.abort_with(AbortReason::CommitDependency));
        }
        Ok(())
    }

    /// An update or delete found no visible row.
    pub(crate) fn not_found(&mut self, table: TableId, key: &Key) -> Result<()> {
        self.settle_speculation()?;
        if self.lock_scans {
            // Absence was read: lock it, and make sure it still holds.
            let t = self.db.table_ref(table)?;
            if !self.guard_key(t, table.0, 0, key)?.is_null() {
                return Err(self.abort_with(AbortReason::WriteConflict));
            }
        }
        if self.track_scans {
            // Absence was read: a later insert of this key is a phantom.
            let since = self.begin_ts;
            self.local().scan_set.push(ScanRecord {
                table: table.0,
                index: 0,
                kind: ScanKind::Eq(*key),
                filter: None,
                since,
            });
        }
        if self.cert != Cert::Off {
            let t = self.db.table_ref(table)?;
            self.ssn_scan(t, 0, &ScanKind::Eq(*key));
            self.ssn_absent_key(t, key);
            self.ssn().verdict_now(self.cert).map_err(|r| self.abort_with(r))?;
        }
        Err(Error::KeyNotFound)
    }

    /// Checks updatability of the visible version `v`, write-locks it, and
    /// installs the new version (none for a delete). The caller is pinned.
    fn install(&mut self, t: &Table, table: TableId, key: &Key, v: *mut Version, value: Option<&[u8]>) -> Result<()> {
        self.claim(v)?;
        let new = match value {
            Some(val) => Version::alloc(*key, t.link_words(), val, self.word).as_ptr(),
            None => ptr::null_mut(),
        };
        self.publish(t, table, key, v, new)
    }

    /// Takes the write lock of `v` (section 2.6): checks that it is
    /// updatable and CASes our id into its End word's WriteLock, keeping the
    /// read locks there (section 4.5, rule 1). If others hold read locks,
    /// we take a wait-for dependency on the version (section 4.2.1); a read
    /// lock of our own is turned into the write lock in the same CAS.
    pub(crate) fn claim(&mut self, v: *mut Version) -> Result<()> {
        let me = self.me();
        // SAFETY: found under the epoch guard; it cannot be reclaimed while
        // we hold its write lock or are pinned.
        let old = unsafe { &*v };
        loop {
            let Some(expected) = updatable(old, &me) else {
                if self.db.opts.faults.skip_write_conflicts {
                    // Fault injection: steal the write lock (lost updates follow).
                    // Release: as for a successful claim.
                    old.end.store(self.word, Ordering::Release);
                    return Ok(());
                }
                return Err(self.abort_with(AbortReason::WriteConflict));
            };
            let lock = RecordLock::of(expected).expect("an updatable version is a latest one");
            // Our own read locks on `v` (one per read of it) become the write lock.
            let mine =
                if self.lock_reads { self.local().read_locks.iter().filter(|p| p.0 == v).count() as u64 } else { 0 };
            debug_assert!(mine <= lock.read_locks, "we hold the read locks we recorded");
            let others = lock.read_locks - mine;
            debug_assert!(self.honour_locks || others == 0, "read locks exist only under mv-lock and mv-mixed");
            // A previous writer's NoMoreReadLocks guarded its wait, not ours.
            let new = RecordLock { no_more_read_locks: false, read_locks: others, writer: self.id }.word();
            // The dependency is counted before the lock is visible: the last
            // reader may release it the moment our CAS lands.
            let waits = others > 0;
            if waits && self.db.txns.add_wait_for(self.id) != crate::txn::table::WaitFor::Added {
                return Err(self.abort_with(AbortReason::WaitFor));
            }
            match word::write_lock(&old.end, expected, new) {
                Claim::Won => {
                    if mine > 0 {
                        self.local().read_locks.retain(|p| p.0 != v);
                    }
                    return Ok(());
                }
                lost => {
                    if waits {
                        self.db.txns.release_wait_for(self.id);
                    }
                    // Changed since we looked: retry only if it is still
                    // updatable (an aborted writer reset it); otherwise another
                    // writer got there first.
                    if lost == Claim::Retry {
                        continue;
                    }
                    return Err(self.abort_with(AbortReason::WriteConflict));
                }
            }
        }
    }

    /// After [`Self::claim`] of `v`: links the new version `new` (null for a
    /// delete) into every index and enters the write in the WriteSet.
    fn publish(&mut self, t: &Table, table: TableId, key: &Key, v: *mut Version, new: *mut Version) -> Result<()> {
        self.connect(t, table, v, new)?;
        if self.recording {
            // SAFETY: both versions stay allocated while we are pinned (the
            // caller is) and hold the write lock.
            let (old, newv) = unsafe { (&*v, new.as_ref()) };
            self.record_replace(table, key, (writer_of(old), old.value()), newv.map(|n| n.value()));
        }
        if self.honour_locks && !new.is_null() {
            // SAFETY: linked and ours until commit or abort.
            if let Err(r) = self.wait_for_lockers(t, unsafe { &*new }) {
                return Err(self.abort_with(r));
            }
        }
        Ok(())
    }

    /// Records an update (`Some(value)`) or delete (`None`) of the version
    /// `old` (its writer and value).
    pub(crate) fn record_replace(&self, table: TableId, key: &Key, old: (Writer, &[u8]), new: Option<&[u8]>) {
        // An update or delete reads the version it replaces (Property 4.5).
        self.record(Op::Read { table: table.0, key: *key, version: Some((old.0, old.1.to_vec())) });
        let (kind, value) = match new {
            Some(v) => (WriteKind::Update, v.to_vec()),
            None => (WriteKind::Delete, Vec::new()),
        };
        self.record(Op::Write { table: table.0, key: *key, kind, value });
    }

    /// The part of [`Self::publish`] that POMVCC's optimistic commit shares:
    /// links `new` after `v` and enters the write in the WriteSet.
    pub(crate) fn connect(&mut self, t: &Table, table: TableId, v: *mut Version, new: *mut Version) -> Result<()> {
        if !new.is_null() {
            self.created += 1;
            // SAFETY: fresh, initialised, unlinked; `v` is the version it
            // replaces, linked everywhere, and write-locked by us.
            unsafe { t.link_update(new, v) };
        }
        self.local().write_set.push(WriteEntry { table: table.0, old: v, new });
        if self.cert != Cert::Off {
            self.ssn_write(v)?; // Algorithm 1's ssn_write (an early abort undoes the entry)
        }
        Ok(())
    }

    // ------------------------------------------------------------------
    // Commit: precommit, preparation, postprocessing (sections 3.2 and 3.3)
    // ------------------------------------------------------------------

    /// Commits. Waits only for commit dependencies. On failure the
    /// transaction is rolled back and the error says why.
    ///
    /// Under sync durability a commit returns once it is durable, and a
    /// transaction that wrote nothing returns once whatever it read is
    /// durable (`durability::log`, "Durable visibility"): a crash never
    /// loses a commit that was acknowledged or that a reader was shown.
    /// The multi-version families get the second for free: their commits
    /// become visible only once durable.
    pub fn commit(self) -> Result<CommitInfo> {
        let db = self.db;
        // The multi-version families become Committed only once durable
        // (see `commit_protocol`): what they read is durable or a commit
        // dependency they waited for. The others follow Silo's rule.
        let visible_once_durable = !(self.bohm || self.locking || self.single);
        let info = self.commit_protocol()?;
        if info.writes == 0 && !visible_once_durable {
            db.wait_visible()?;
        }
        Ok(info)
    }

    /// The protocol's commit (each family's own).
    fn commit_protocol(mut self) -> Result<CommitInfo> {
        if self.bohm {
            return self.bo_commit();
        }
        if self.locking {
            return self.lk_commit();
        }
        if self.single {
            return self.sv_commit();
        }
        self.enter()?;
        if self.po_occ {
            // Figure 13, step 3: the optimistic writes take their locks now.
            self.po_connect()?;
        }
        let db = self.db;
        let local = self.local();
        if local.write_set.is_empty() && self.cert != Cert::Off && !self.base_rc && local.scan_set.is_empty() {
            if let Some(r) = self.ssn_read_only_commit() {
                return r;
            }
        }
        if local.write_set.is_empty() && self.cert == Cert::Off {
            // Nothing written: serialized at the begin timestamp (see module
            // docs) — or, for a pessimistic transaction reading at the
            // current time, at a time when it still holds all its read locks.
            let commit_ts = if self.reads_now() && self.honour_locks {
                // SeqCst: as for a read time; odd, never equals a stamp.
                db.clock.load(Ordering::SeqCst) - 1
            } else {
                self.begin_ts
            };
            if self.honour_locks {
                self.release_locks();
            }
            if !self.wait_for_dependencies() {
                return Err(self.abort_with(AbortReason::CommitDependency));
            }
            if self.recording {
                self.record_end(Some(commit_ts), Outcome::Committed);
            }
            self.terminate();
            return Ok(CommitInfo { commit_ts, writes: 0 });
        }

        // Wait-for dependencies (section 4.2): wait until no read lock or
        // bucket lock holds us back, before taking the end timestamp.
        if self.honour_locks {
            if let Err(r) = self.await_wait_fors() {
                return Err(self.abort_with(r));
            }
        }

        // Precommit: acquire the end timestamp and become Preparing.
        // SeqCst on the pending store and the fetch_add: a reader that still
        // sees us Active read its clock before we drew our end timestamp.
        db.txns.set_pending(self.slot);
        let end_ts = match &db.po {
            // POMVCC (Figure 17): the shared CTs, not incremented.
            Some(po) => {
                self.po_cts = po.allocate_cts();
                pomvcc::stamp(self.po_cts)
            }
            None => db.clock.fetch_add(2, Ordering::SeqCst),
        };
        db.txns.set_state(self.slot, TxnState::Preparing, end_ts);
        // Our read locks and the dependencies we impose are released only
        // now that the end timestamp is drawn: a writer they held back
        // draws a later one (see `mv_lock`).
        if self.honour_locks {
            self.release_locks();
        }

        // Preparation: validation, then wait for commit dependencies. Under
        // POMVCC others commit at our timestamp too: validating just past it
        // counts their writes as conflicts (see `protocol::pomvcc`).
        let validate = !db.opts.faults.skip_validation;
        let check_ts = if db.po.is_some() { end_ts + 1 } else { end_ts };
        if validate && self.isolation >= Isolation::RepeatableRead && !self.validate_reads(check_ts) {
            return Err(self.abort_with(AbortReason::ReadValidation));
        }
        if validate && self.isolation == Isolation::Serializable && !self.detect_phantoms(check_ts) {
            return Err(self.abort_with(AbortReason::Phantom));
        }
        if self.cert != Cert::Off {
            if let Err(r) = self.ssn_precommit(end_ts) {
                return Err(self.abort_with(r));
            }
        }
        if !self.wait_for_dependencies() {
            return Err(self.abort_with(AbortReason::CommitDependency));
        }
        // Logging (section 3.2, "write the new versions to the log"): the
        // redo record is appended before we become Committed, so that
        // whoever reads or overwrites our writes appends after us (see
        // `durability::log`). Under sync durability we also wait for it
        // here, still Preparing (section 3.2: "the transaction ... is
        // committed" once the log write completes): a reader of our
        // versions meanwhile takes a commit dependency on us, so nothing
        // anyone can observe is lost by a crash, and a read-only
        // transaction never waits for a round it did not read from. If the
        // log fails we still commit in memory (others may depend on us) and
        // report it at the end, as before.
        let epoch =
            db.durable.as_ref().filter(|_| !self.local().write_set.is_empty()).map(|d| self.log_redo(&d.log, end_ts));
        let durable = db.wait_durable(epoch);
        db.txns.set_state(self.slot, TxnState::Committed, end_ts);

        // Postprocessing: propagate the end timestamp (SSN's stamps first).
        if self.cert != Cert::Off {
            self.ssn_postcommit(end_ts);
        }
        let local = self.local();
        for w in &local.write_set {
            if !w.new.is_null() {
                // SAFETY: our own version; alive until we hand it to the GC.
                word::finalize_begin(&unsafe { &*w.new }.begin, end_ts);
            }
            if !w.old.is_null() {
                // SAFETY: write-locked by us, so not reclaimable yet.
                let old = unsafe { &*w.old };
                if db.opts.faults.skip_write_conflicts {
                    // Fault injection: another committer may share the
                    // version (and its lock). Release: as `finalize_end`.
                    old.end.store(end_ts, Ordering::Release);
                } else {
                    // No reader holds a lock any more: we waited for the last one.
                    word::finalize_end(&old.end, end_ts);
                }
            }
        }
        db.txns.report_outcome(self.slot, true);
        if self.recording {
            self.record_end(Some(end_ts), Outcome::Committed);
        }
        let writes = local.write_set.len();
        // (Under the test-only write-conflict fault two committers may share
        // an old version; it is then left unreclaimed rather than freed twice.)
        let shared_old = db.opts.faults.skip_write_conflicts;
        self.collect_garbage(local.write_set.iter().filter(|w| !w.old.is_null() && !shared_old).map(|w| Garbage {
            ts: end_ts,
            table: w.table,
            v: VPtr(w.old),
        }));
        if let Some(po) = &db.po {
            // Increment_TsCC: every version carries its stamp now, and
            // (under sync durability) its record is durable: we waited
            // above, so BTs passes only persisted commits (section VI).
            po.commit(self.po_cts);
            db.po_clock();
        }
        self.terminate();
        durable?;
        Ok(CommitInfo { commit_ts: end_ts, writes })
    }

    /// Appends this transaction's redo record: every new version's key
    /// and value, or the key of a deleted row. Returns its epoch.
    fn log_redo(&self, log: &crate::durability::log::Log, end_ts: u64) -> u64 {
        let local = self.local();
        log.append(end_ts, &mut local.log_buf, |r| {
            for w in &local.write_set {
                // SAFETY: our own versions (new) and those we write-locked
                // (old): alive until we hand them to the GC.
                let (old, new) = unsafe { (w.old.as_ref(), w.new.as_ref()) };
                let key = new.or(old).expect("a write has a version").key();
                r.put(w.table, key.as_bytes(), new.map(|n| n.value()));
            }
            local.write_set.len() as u32
        })
    }

    /// The single-version stores' update, modify, update_with and delete.
    #[inline]
    fn one_version_write(
        &mut self,
        table: TableId,
        key: &Key,
        f: impl FnOnce(&[u8], &mut Vec<u8>) -> bool,
    ) -> Result<()> {
        if self.locking {
            self.lk_write(table, key, f)
        } else {
            self.sv_write(table, key, f)
        }
    }

    /// Rolls the transaction back.
    pub fn abort(mut self) {
        if self.status == Status::Active {
            self.abort_with(AbortReason::User);
        }
    }

    /// Read validation (section 3.2): every version read must still be
    /// visible as of the end timestamp.
    fn validate_reads(&self, end_ts: u64) -> bool {
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let me = self.me_validating(end_ts);
        self.local().read_set.iter().all(|&VPtr(v)| {
            // SAFETY: a version we read is visible past our begin timestamp,
            // so its End stamp exceeds the GC watermark while we are open.
            let v = unsafe { &*v };
            // Acquire: see the latest End word.
            writer_of_end(v.end.load(Ordering::Acquire)) == Some(self.id) || visible_at(v, end_ts, &me).is_some()
        }) && !me.clash.get()
    }

    /// Phantom detection (section 3.2): repeat every scan as of the end
    /// timestamp; a version visible then whose begin timestamp falls inside
    /// our lifetime is a phantom (Figure 3, V4).
    fn detect_phantoms(&self, end_ts: u64) -> bool {
        // Epoch pin: versions reached through an index stay allocated until it drops.
        let _guard = crossbeam_epoch::pin();
        let me = self.me_validating(end_ts);
        for s in &self.local().scan_set {
            let t = self.db.table_by_id(s.table);
            let ix = &t.indexes[s.index as usize];
            let mut phantom = false;
            let mut check = |v: &Version| {
                // Acquire: see the final Begin word.
                if v.begin.load(Ordering::Acquire) == self.word {
                    return true; // our own insert or new version
                }
                if let Some(p) = &s.filter {
                    if !p(&v.key(), v.value()) {
                        return true;
                    }
                }
                // A version we replaced or deleted ourselves stands for itself:
                // under SSN over read committed a transaction may replace a
                // row its own scan was too early to see.
                // Acquire: the End word as we left it.
                // Under SSN over read committed, a version that came and went
                // after the scan counts too: what the scan found absent then
                // stays absent until the commit, as a locking reader's would
                // (the checker places such observations at the commit).
                let began = if writer_of_end(v.end.load(Ordering::Acquire)) == Some(self.id) {
                    Some(ssn::cstamp_of(v, &self.db.txns))
                } else if self.base_rc {
                    Some(ssn::cstamp_of(v, &self.db.txns)).filter(|&b| b != 0 && b < end_ts)
                } else {
                    visible_at(v, end_ts, &me)
                };
                if let Some(b) = began {
                    if b > s.since {
                        phantom = true;
                        return false;
                    }
                }
                true
            };
            match &s.kind {
                ScanKind::Eq(k) => ix.for_each_eq(k, |v| !ix.matches(v, k) || check(v)),
                ScanKind::Range(lo, hi) => {
                    let ordered = ix.is_ordered();
                    ix.for_each_in(lo.as_ref(), hi.as_ref(), |v| {
                        (!ordered && !in_range(lo, hi, &ix.key_of(v))) || check(v)
                    })
                }
            }
            if phantom {
                return false;
            }
        }
        !me.clash.get()
    }

    /// Waits until CommitDepCounter is zero (true) or AbortNow is set (false).
    pub(crate) fn wait_for_dependencies(&self) -> bool {
        let s = self.slot();
        let backoff = Backoff::new();
        loop {
            // Acquire: pairs with the Release report of the dependency.
            if s.abort_now.load(Ordering::Acquire) {
                return false;
            }
            // Acquire: as above.
            if s.dep_counter.load(Ordering::Acquire) == 0 {
                return true;
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
    }

    /// Aborts: become Aborted, undo (section 3.3), report, terminate.
    pub(crate) fn abort_with(&mut self, reason: AbortReason) -> Error {
        if self.bohm {
            return self.bo_abort(reason);
        }
        if self.locking {
            return self.lk_abort(reason);
        }
        if self.single {
            return self.sv_abort(reason);
        }
        debug_assert_eq!(self.status, Status::Active);
        let db = self.db;
        db.txns.set_state(self.slot, TxnState::Aborted, 0);
        let local = self.local();
        for p in local.pending.drain(..) {
            if !p.new.is_null() {
                // SAFETY: never connected: nobody else has seen it.
                unsafe { Version::free(p.new) };
            }
        }
        for w in local.write_set.iter().rev() {
            if !w.new.is_null() {
                // SAFETY: our own version, alive until handed to the GC.
                // Release: a reader that sees INFINITY ignores the version.
                unsafe { &*w.new }.begin.store(INFINITY, Ordering::Release);
            }
            if !w.old.is_null() {
                // SAFETY: write-locked by us until this reset.
                let old = unsafe { &*w.old };
                // Drop the write lock and keep the read locks; a word no
                // longer naming us was taken over by a transaction that saw
                // our abort: it is left alone.
                word::release_write_lock(&old.end, self.id);
            }
        }
        if self.honour_locks {
            self.release_locks();
        }
        if self.cert != Cert::Off {
            self.ssn_release(None);
        }
        db.txns.report_outcome(self.slot, false);
        // New versions become garbage once every transaction open now is gone:
        // stamp them just below the clock, so that only transactions that
        // began before now (begin stamps < now) hold them back.
        // SeqCst: a transaction whose begin we do not order before this load
        // draws a stamp >= now and can no longer reach the versions.
        let now = db.clock.load(Ordering::SeqCst) - 1;
        self.collect_garbage(local.write_set.iter().filter(|w| !w.new.is_null()).map(|w| Garbage {
            ts: now,
            table: w.table,
            v: VPtr(w.new),
        }));
        if let Some(po) = &db.po {
            if self.po_cts != 0 {
                // Decrement_TsPC: our versions are marked garbage already.
                po.abort(self.po_cts);
            }
            if matches!(reason, AbortReason::WriteConflict | AbortReason::ReadValidation | AbortReason::Phantom) {
                // D5.i: two transactions at one timestamp would not commute.
                po.conflict();
            }
            db.po_clock();
        }
        self.aborted(reason)
    }

    /// The end of every protocol's rollback, once its own undo is done:
    /// the history, the statistics, the status; the slot is given back.
    pub(crate) fn aborted(&mut self, reason: AbortReason) -> Error {
        if self.recording {
            self.record_end(None, Outcome::Aborted(reason));
        }
        // Relaxed: statistics only.
        self.slot().aborts[reason as usize].fetch_add(1, Ordering::Relaxed);
        self.status = Status::Aborted(reason);
        self.release();
        Error::Aborted(reason)
    }

    /// Hands garbage to the collector and, when the queue is long, collects.
    fn collect_garbage(&self, items: impl Iterator<Item = Garbage>) {
        let db = self.db;
        let shard = self.slot as usize;
        let len = db.gc.push(shard, items);
        if len >= GC_THRESHOLD {
            let w = db.watermark();
            let n = db.gc.collect(shard, w, GC_THRESHOLD / 2, |t| db.table_by_id(t));
            // Relaxed: statistics only.
            self.slot().freed.fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    pub(crate) fn terminate(&mut self) {
        // Relaxed: statistics only.
        self.slot().committed.fetch_add(1, Ordering::Relaxed);
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
        self.local().clear();
        self.db.txns.close(self.slot);
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if self.status == Status::Active && self.slot != u32::MAX {
            self.abort_with(AbortReason::User);
        }
    }
}

/// Hands the visible rows of a lookup or scan to the caller's function,
/// adding them to the ReadSet (repeatable read and serializable) and to the
/// recorded history (recording only).
struct Delivery<'a> {
    track: bool,
    recording: bool,
    reads: &'a mut Vec<VPtr>,
    /// Pessimistic repeatable read and serializable: read lock every row
    /// delivered (our id and the transaction table), into `locks`.
    lock: Option<(u64, &'a crate::txn::table::TxnTable)>,
    locks: &'a mut Vec<VPtr>,
    /// SSN and SSI: every row delivered is an `ssn_read`.
    ssn: Option<SsnRead<'a>>,
    /// Why a read lock was refused (the scan stopped; the caller aborts).
    refused: Option<AbortReason>,
    rows: Vec<(Key, Writer, Vec<u8>)>,
}

/// What a [`Delivery`] needs for SSN's reads.
struct SsnRead<'a> {
    st: &'a mut ssn::SsnLocal,
    cert: Cert,
    txns: &'a crate::txn::table::TxnTable,
    slot: u32,
    word: u64,
}

impl<'a> Delivery<'a> {
    fn new(t: &Transaction<'a>) -> Delivery<'a> {
        let l = t.local();
        Delivery {
            track: t.track_reads,
            recording: t.recording,
            reads: &mut l.read_set,
            lock: t.lock_reads.then_some((t.id, &t.db.txns)),
            locks: &mut l.read_locks,
            ssn: (t.cert != Cert::Off).then_some(SsnRead {
                st: &mut l.ssn,
                cert: t.cert,
                txns: &t.db.txns,
                slot: t.slot,
                word: t.word,
            }),
            refused: None,
            rows: Vec::new(),
        }
    }

    /// Delivers `v`; returns what `f` returned (false stops the scan).
    #[inline]
    fn deliver(&mut self, v: &Version, f: &mut impl FnMut(&Key, &[u8]) -> bool) -> bool {
        if let Some((id, txns)) = self.lock {
            match read_lock(v, id, txns, self.locks) {
                Locked::Yes => {}
                // Replaced and committed since the visibility check: what we
                // saw cannot be locked any more (section 4.1.1 locks only
                // latest versions), so the read cannot be kept stable.
                Locked::NotLatest => {
                    self.refused = Some(AbortReason::ReadLock);
                    return false;
                }
                Locked::Refused(r) => {
                    self.refused = Some(r);
                    return false;
                }
            }
        }
        if self.track {
            self.reads.push(VPtr(v as *const Version as *mut Version));
        }
        if self.ssn.is_some() && !self.ssn_read(v) {
            return false;
        }
        if self.recording {
            self.rows.push((v.key(), writer_of(v), v.value().to_vec()));
        }
        f(&v.key(), v.value())
    }

    /// SSN: the scan passed over `v`, invisible at `rt` (see `ssn::absent`).
    #[inline]
    fn ssn_absent(&mut self, v: &Version, rt: u64) {
        if let Some(s) = self.ssn.as_mut() {
            ssn::absent(s.st, s.cert, s.txns, v, rt);
        }
    }

    /// SSN's read of `v`; false (and `refused` set) on an early abort.
    #[inline]
    fn ssn_read(&mut self, v: &Version) -> bool {
        let s = self.ssn.as_mut().expect("an SSN delivery");
        match ssn::read(s.st, s.cert, s.txns, s.slot, s.word, v) {
            Ok(()) => true,
            Err(r) => {
                self.refused = Some(r);
                false
            }
        }
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

/// An insert's check of the versions already under its key, before it links
/// its own: a version visible at `rt` is a duplicate (kept in `dup`), and a
/// latest version we cannot see is a concurrent writer (`conflict`).
fn insert_check<'a>(
    key: &'a Key,
    rt: u64,
    me: &'a Me<'_>,
    dup: &'a mut *mut Version,
    conflict: &'a mut bool,
) -> impl FnMut(&Version) -> bool + 'a {
    move |v: &Version| {
        if !v.key_eq(key) {
            return true;
        }
        if visible_at(v, rt, me).is_some() {
            *dup = v as *const Version as *mut Version;
            return false;
        }
        *conflict |= is_competing(v, rt, me);
        !*conflict
    }
}
