//! MV/O: Hekaton's optimistic multi-version concurrency control
//! (Larson et al., VLDB 2011, section 3; thesis section 4.4).
//!
//! A transaction goes through the phases of section 2.4:
//!
//! 1. **Begin**: take a begin timestamp (a clock reading), become Active.
//! 2. **Normal processing** (section 3.1): reads check visibility (Tables 1
//!    and 2, in `txn::visibility`) as of the logical read time — the
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
//!    durable commits become visible (`wal::log`, "Durable
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
//! `intent.rs` (`get_for_update`'s write claims), `commit.rs` (commit and
//! abort).

mod commit;
mod intent;
mod read;
mod write;

use crate::error::AbortReason;
use crate::gc::Garbage;
use crate::history::{Op, Outcome, WriteKind, Writer};
use crate::key::Key;
use crate::protocol::core::{Hooks, Shape, TxnCore};
use crate::protocol::mv_lock::{read_lock, Locked};
use crate::protocol::pomvcc;
use crate::protocol::sets::{Sets, SlotSets};
use crate::protocol::ssn::{self, Cert};
use crate::shared::Shared;
use crate::storage::version::{VPtr, Version};
use crate::storage::word::{self, txn_word, writer_of_end, Claim, RecordLock, Word, INFINITY};
use crate::sync::atomic::Ordering;
use crate::table::{IndexImpl, Table};
use crate::txn::table::TxnState;
use crate::txn::table::TxnTable;
use crate::txn::visibility::{is_competing, updatable, visible_at, Me, NOW};
use crate::txn::{Filter, ScanKind, ScanRecord, WriteEntry};
use crate::{Error, IndexId, Isolation, Mode, Options, Protocol, Result, TableId, TxnOptions};
use std::cell::Cell;
use std::ops::{Bound, RangeBounds};
use std::ptr;

/// Garbage queue length at which a committing transaction also collects.
const GC_THRESHOLD: usize = 128;

pub use super::core::CommitInfo;
pub(crate) use super::core::Status;
/// The public transaction, at the path it had when it was MV/O's own struct.
pub use super::transaction::Transaction;

/// The database-wide state of the multi-version family, beside what every
/// protocol shares ([`Shared`]): SSN's published words of each slot and its
/// safe snapshots (SSN, SSI), and POMVCC's timestamp manager.
pub(crate) struct MvGlobal {
    /// SSN's published words of each slot (section 4: η, π).
    pub(crate) ssn_slots: ssn::SsnSlots,
    /// SSN and SSI: active safe snapshots (section 5.2).
    pub(crate) ssn_safe: ssn::SafeSnapshots,
    /// POMVCC's timestamp manager (pomvcc databases only).
    pub(crate) po: Option<pomvcc::TsManager>,
    /// SSN's and SSI's per-transaction state (η, π, the read set of
    /// section 4), one per slot (capacity reused).
    pub(crate) ssn_sets: SlotSets<ssn::SsnLocal>,
}

impl MvGlobal {
    pub(crate) fn new(opts: &Options) -> MvGlobal {
        MvGlobal {
            ssn_slots: ssn::SsnSlots::new(TxnTable::slots_for(opts.max_transactions)),
            ssn_safe: ssn::SafeSnapshots::default(),
            // BTs 0 is the clock's 2 (see `protocol::pomvcc`).
            po: (opts.protocol == Protocol::Pomvcc).then(|| pomvcc::TsManager::new(0, opts.pomvcc_interval)),
            ssn_sets: SlotSets::new(TxnTable::slots_for(opts.max_transactions)),
        }
    }

    /// The GC watermark (see `TxnTable::min_active_begin`): no open or
    /// future transaction reads before it.
    pub(crate) fn watermark(&self, db: &Shared) -> u64 {
        // SeqCst: the bound must be read before the slot scan (see TxnTable).
        let c = db.clock.load(Ordering::SeqCst);
        // A safe snapshot's versions stay while new readers may take it.
        let bound = match self.ssn_safe.latest() {
            0 => c,
            s => c.min(s),
        };
        db.txns.min_active_begin(bound)
    }

    /// POMVCC: the clock follows BTs (`2 BTs + 2`, so that a begin reads at
    /// `2 BTs + 1`, just past every commit stamp `2 c` with `c <= BTs`).
    pub(crate) fn po_clock(&self, db: &Shared) {
        if let Some(po) = &self.po {
            let want = pomvcc::stamp(po.bts()) + 2;
            // SeqCst: as every clock access. Read first: most calls find the
            // clock current and spare the shared line a read-modify-write;
            // fetch_max keeps it monotonic when callers race with BTs
            // readings of different ages.
            if db.clock.load(Ordering::SeqCst) < want {
                db.clock.fetch_max(want, Ordering::SeqCst);
            }
        }
    }
}

/// The multi-version family's view of the database: what every protocol
/// shares (through `Deref`) and the family's own state, passed by value to
/// the steps that need both (SSN's certifier, the GC of a commit).
#[derive(Clone, Copy)]
pub(crate) struct MvDb<'a> {
    pub(crate) shared: &'a Shared,
    pub(crate) g: &'a MvGlobal,
}

impl std::ops::Deref for MvDb<'_> {
    type Target = Shared;
    #[inline]
    fn deref(&self) -> &Shared {
        self.shared
    }
}

/// A transaction of the multi-version family: MV/O, and on it MV/L's
/// locks, SSN's and SSI's certifiers and POMVCC's timestamps, as its
/// [`Policy`] says.
pub(crate) struct MvTxn<'db> {
    pub(crate) core: TxnCore<'db>,
    /// The family's database-wide state.
    pub(crate) g: &'db MvGlobal,
    /// SSN's and SSI's state, in the slot's [`ssn::SsnLocal`] (certified
    /// transactions only: cleared at their begin).
    pub(crate) ssn: Sets<'db, ssn::SsnLocal>,
    /// The id as a Begin/End word.
    pub(crate) word: u64,
    /// What this transaction does beyond MV/O (see [`Policy`]).
    pub(crate) policy: Policy,
    /// Published something in the slot's `WaitInfo` (released at the end).
    pub(crate) used_waits: bool,
    /// POMVCC: the commit timestamp this transaction took (Allocate_CTs;
    /// 0: none yet), to count it committed or take it back.
    pub(crate) po_cts: u64,
}

/// The per-transaction switches of the multi-version family: what a
/// transaction adds to MV/O, chosen at begin from the protocol, its mode
/// and its isolation level, and fixed from then on. They combine freely:
/// a pessimistic SSN transaction, say, is a cell of the table below that
/// nobody asks for today but that would run as the switches say.
///
/// | protocol (mode) | level | track_reads | track_scans | pessimistic, lock_reads, lock_scans | honour_locks | cert | base_rc | po_occ |
/// | --- | --- | --- | --- | --- | --- | --- | --- | --- |
/// | mv-occ | RC / SI | - | - | - | - | off | - | - |
/// | mv-occ | RR | yes | - | - | - | off | - | - |
/// | mv-occ | SR | yes | yes | - | - | off | - | - |
/// | mv-lock (pessimistic) | RC / SI | - | - | yes, -, - | yes | off | - | - |
/// | mv-lock (pessimistic) | RR | - | - | yes, yes, - | yes | off | - | - |
/// | mv-lock (pessimistic) | SR | - | - | yes, yes, yes | yes | off | - | - |
/// | mv-lock / mv-mixed (optimistic) | as mv-occ | as mv-occ | as mv-occ | - | yes | off | - | - |
/// | ssn | SR over SI | - | yes | - | - | ssn | - | - |
/// | ssn | SR over RC | - | yes | - | - | ssn | yes | - |
/// | ssi | SR | - | yes | - | - | ssi | - | - |
/// | pomvcc (pessimistic) | as mv-occ | as mv-occ | as mv-occ | - | - | off | - | - |
/// | pomvcc (optimistic) | as mv-occ | as mv-occ | as mv-occ | - | - | off | - | yes |
///
/// Read-only transactions take no locks and track no reads (section 5.2.1);
/// a certified one still tracks its scans, and one that reads a safe
/// snapshot (section 5.2 of SSN) is not certified at all. Under mv-mixed
/// the default mode alternates with the id's generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Policy {
    /// ReadSet kept (repeatable read, serializable): reads are validated.
    pub(crate) track_reads: bool,
    /// ScanSet kept (serializable): scans are repeated for phantoms.
    pub(crate) track_scans: bool,
    /// MV/L (section 4): a pessimistic transaction; reads at the current
    /// time except under snapshot isolation, and locks instead of validating.
    pub(crate) pessimistic: bool,
    /// Read locks taken (pessimistic repeatable read and serializable).
    pub(crate) lock_reads: bool,
    /// Bucket and range locks taken (pessimistic serializable).
    pub(crate) lock_scans: bool,
    /// Other transactions may lock or impose wait-for dependencies on this
    /// one (mv-lock and mv-mixed; section 4.5), so it honours them.
    pub(crate) honour_locks: bool,
    /// SSN or SSI certifies this transaction (see `protocol::ssn`).
    pub(crate) cert: Cert,
    /// SSN over read committed: reads at the current time.
    pub(crate) base_rc: bool,
    /// POMVCC's optimistic transaction (section V.D, Figure 13): writes wait
    /// in `TxnLocal::pending` and take their write locks at commit; off, a
    /// write takes its lock at update time (Figure 14's pessimistic scheme,
    /// and MV/O's own).
    pub(crate) po_occ: bool,
}

impl Policy {
    /// The switches of a transaction of `db`'s protocol with options `o`
    /// and id `id` (see the table above).
    #[inline]
    fn of(db: &Shared, id: u64, o: &TxnOptions<'_>) -> Policy {
        let iso = o.isolation;
        let protocol = db.opts.protocol;
        let cert = match protocol {
            // A safe snapshot needs no certification (section 5.2).
            _ if ssn::uses_safe_snapshot(&db.opts, o) => Cert::Off,
            Protocol::Ssn => Cert::Ssn,
            Protocol::Ssi => Cert::Ssi,
            _ => Cert::Off,
        };
        let certified = cert != Cert::Off;
        // Read-only transactions read a snapshot without locks or validation
        // under either scheme (section 5.2.1: "the two MV schemes behave
        // identically"). Under mv-mixed the default alternates with the id's
        // generation, so every workload runs both kinds side by side.
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
        Policy {
            // SSN and SSI track reads their own way, read-only ones too.
            track_reads: !o.read_only && !pessimistic && !certified && iso >= Isolation::RepeatableRead,
            track_scans: (certified || !o.read_only) && !pessimistic && iso == Isolation::Serializable,
            pessimistic,
            lock_reads: pessimistic && iso >= Isolation::RepeatableRead,
            lock_scans: pessimistic && iso == Isolation::Serializable,
            honour_locks: !matches!(protocol, Protocol::MvOcc | Protocol::Ssn | Protocol::Ssi | Protocol::Pomvcc),
            cert,
            base_rc: cert == Cert::Ssn && db.opts.ssn_base == Isolation::ReadCommitted,
            po_occ: protocol == Protocol::Pomvcc && o.mode == Mode::Optimistic && !o.read_only,
        }
    }

    /// How the history classifies such a transaction: a pessimistic reader
    /// holds its read locks until its serialization point; SSN over read
    /// committed read at the current time, and its phantom detection keeps
    /// every absence it saw until its commit; the certified others read one
    /// snapshot.
    #[inline]
    fn shape(&self, id: u64) -> Shape {
        Shape { id, locking: self.lock_reads || self.base_rc, snapshot: self.cert != Cert::Off && !self.base_rc }
    }
}

impl<'db> MvTxn<'db> {
    /// The database as the family sees it.
    #[inline]
    pub(crate) fn mvdb(&self) -> MvDb<'db> {
        MvDb { shared: self.core.db, g: self.g }
    }

    #[inline]
    pub(crate) fn new(mut core: TxnCore<'db>, g: &'db MvGlobal, o: TxnOptions<'_>) -> Self {
        let db = core.db;
        let policy = Policy::of(db, core.id, &o);
        core.shape = policy.shape(core.id);
        let ssn = Sets::of(&g.ssn_sets, core.slot);
        let mut t = MvTxn { word: txn_word(core.id), g, ssn, policy, used_waits: false, po_cts: 0, core };
        if policy.cert != Cert::Off {
            let begin_ts = t.core.begin_ts;
            let st = t.ssn.get();
            st.clear();
            st.lax = db.opts.faults.skip_validation;
            // Section 5.3: versions created more than `age` commits (two
            // clock steps each) before we began are read untracked.
            st.stale_below = match db.opts.ssn_read_mostly_age {
                Some(age) if policy.cert == Cert::Ssn => begin_ts.saturating_sub(age.saturating_mul(2)),
                _ => 0,
            };
        }
        t
    }

    /// Makes a fresh read-only multi-version transaction a plain snapshot
    /// read: no certification (SSN, SSI) and no tracking. A checkpoint
    /// reads every row as of its begin timestamp, the commit-order prefix
    /// onto which recovery replays the later records; certifying that
    /// long read would only abort it.
    pub(crate) fn plain_snapshot(&mut self) {
        debug_assert!(self.core.read_only);
        self.policy.cert = Cert::Off;
        self.policy.track_reads = false;
        self.policy.track_scans = false;
        self.core.shape = self.policy.shape(self.core.id);
    }

    #[inline]
    pub(crate) fn me(&self) -> Me<'db> {
        // POMVCC reads at BTs even at read committed (Table VII: a BTs per
        // statement): a version stamped with a commit timestamp past BTs is
        // not visible yet, so "now" is resolved from the clock up front
        // instead of by the shortcut for fully stamped versions.
        // SeqCst: as every read time taken from the clock.
        let now = if self.g.po.is_some() { self.core.db.clock.load(Ordering::SeqCst) - 1 } else { 0 };
        Me {
            table: &self.core.db.txns,
            slot: self.core.slot,
            id: self.core.id,
            clock: &self.core.db.clock,
            now: Cell::new(now),
            peer: 0,
            clash: Cell::new(false),
        }
    }

    /// The checker for validation at `check_ts`: under POMVCC, just past
    /// the shared stamp, whose other holders are peers (see `Me::peer`).
    fn me_validating(&self, check_ts: u64) -> Me<'db> {
        let peer = if self.g.po.is_some() { check_ts - 1 } else { 0 };
        Me { peer, ..self.me() }
    }

    /// Reads at the current time: read committed, and pessimistic
    /// transactions at every level but snapshot (section 4.3.1).
    #[inline]
    fn reads_now(&self) -> bool {
        self.core.isolation == Isolation::ReadCommitted
            || self.policy.base_rc
            || (self.policy.pessimistic && self.core.isolation != Isolation::Snapshot)
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
            self.core.db.clock.load(Ordering::SeqCst) - 1
        } else {
            self.core.begin_ts
        }
    }

    /// The read time of a point lookup: as [`Self::read_time`], except that
    /// read committed uses the lazy [`NOW`] (see `find_visible`).
    #[inline]
    pub(crate) fn lookup_time(&self) -> u64 {
        if self.reads_now() {
            NOW
        } else {
            self.core.begin_ts
        }
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

crate::protocol::core::hooks!(MvTxn);
