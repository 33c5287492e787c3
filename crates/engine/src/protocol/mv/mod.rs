//! The multi-version family: Hekaton's storage of versions and its
//! transactions (Larson et al., VLDB 2011), with the protocols that run on
//! them. One transaction struct, `MvTxn`, serves them all; what differs is
//! decided once at begin, in its `Policy`.
//!
//! | module | protocol | paper |
//! | --- | --- | --- |
//! | [`occ`] | MV/O (`mv-occ`): the phases every member runs; reads validated at commit | Hekaton section 3 |
//! | [`lock`] | MV/L (`mv-lock`, and `mv-mixed`'s pessimistic transactions): read locks, wait-for dependencies, deadlock detection | Hekaton section 4 |
//! | [`ssn`] | SSN (`ssn`): the serial safety net's certifier over MV/O's reads | Wang et al., VLDB Journal 2017 |
//! | [`ssn::ssi`] | SSI (`ssi`): the same machinery, SSI's test | Cahill et al., SIGMOD 2008 |
//! | [`pomvcc`] | POMVCC (`pomvcc`): partial-order timestamps | the POMVCC paper, section 5 |
//! | `policy.rs` | the switches of one transaction, from protocol, level and mode | — |
//! | `savepoint.rs` | the family's half of savepoints | Hekaton section 3.3 (abort per version) |
//!
//! This file holds the family's database-wide state (`MvGlobal`), the
//! transaction struct and the helpers every phase uses; the protocols'
//! modules extend `MvTxn` with their phases and name nothing of each other
//! but what lies below them here.

mod local;
pub mod lock;
pub mod occ;
mod policy;
pub mod pomvcc;
mod savepoint;
pub mod ssn;

pub(crate) use local::MvLocal;
pub(crate) use policy::Policy;

use crate::error::AbortReason;
use crate::gc::Garbage;
use crate::history::{Op, Outcome, WriteKind, Writer};
use crate::key::Key;
use crate::protocol::core::{Hooks, TxnCore};
use crate::protocol::sets::{Sets, SlotSets};
use crate::shared::Shared;
use crate::storage::version::{VPtr, Version};
use crate::storage::word::{self, txn_word, writer_of_end, Claim, RecordLock, Word, INFINITY};
use crate::sync::atomic::Ordering;
use crate::table::{IndexImpl, Table};
use crate::txn::table::TxnState;
use crate::txn::table::TxnTable;
use crate::txn::visibility::{is_competing, updatable, visible_at, Me, NOW};
use crate::txn::{Filter, ScanKind, ScanRecord, WriteEntry};
use crate::{Error, IndexId, Isolation, Options, Protocol, Result, TableId, TxnOptions};
use lock::{read_lock, Locked};
use ssn::Cert;
use std::cell::Cell;
use std::ops::{Bound, RangeBounds};
use std::ptr;

/// Garbage queue length at which a committing transaction also collects.
const GC_THRESHOLD: usize = 128;

pub use super::core::CommitInfo;
pub(crate) use super::core::Status;

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
    /// The family's sets of each slot (ReadSet, ScanSet, WriteSet, ...).
    pub(crate) sets: SlotSets<MvLocal>,
    /// SSN or SSI: the tables keep SSN's words beside their versions.
    pub(crate) certifies: bool,
}

impl MvGlobal {
    pub(crate) fn new(opts: &Options) -> MvGlobal {
        MvGlobal {
            ssn_slots: ssn::SsnSlots::new(TxnTable::slots_for(opts.max_transactions)),
            ssn_safe: ssn::SafeSnapshots::default(),
            // BTs 0 is the clock's 2 (see `protocol::mv::pomvcc`).
            po: (opts.protocol == Protocol::Pomvcc).then(|| pomvcc::TsManager::new(0, opts.pomvcc_interval)),
            ssn_sets: SlotSets::new(TxnTable::slots_for(opts.max_transactions)),
            sets: SlotSets::new(TxnTable::slots_for(opts.max_transactions)),
            certifies: matches!(opts.protocol, Protocol::Ssn | Protocol::Ssi),
        }
    }

    /// Begin (Hekaton section 2.4): takes a slot and the begin timestamp;
    /// returns the slot, the id and the timestamp.
    ///
    /// The begin timestamp is a clock reading, not an increment: the time
    /// just past every stamp handed out so far (odd, so it never equals a
    /// commit stamp, which are even). Every stamp below it was drawn before
    /// it; a writer still drawing its stamp is in the pending state, which
    /// readers wait out. Only end timestamps must be unique (they order the
    /// committed transactions); sparing the begin increment spares one
    /// contended read-modify-write of the clock per transaction.
    ///
    /// It is published in two steps for the GC watermark (see
    /// `TxnTable::min_active_begin`), SeqCst throughout: either a
    /// concurrent watermark scan sees the provisional value (no larger
    /// than the real one), or our second clock reading follows the scan's
    /// and is at least its bound minus one, above every stamp it reclaims.
    /// A safe snapshot (SSN section 5.2) and POMVCC's BTs (Figure 18) are
    /// read the same way.
    #[inline]
    pub(crate) fn begin(&self, db: &Shared, o: &TxnOptions<'_>) -> Result<(u32, u64, u64)> {
        if let (Some(po), Some(after)) = (&self.po, o.after) {
            if pomvcc::of_stamp(after) > po.cts() {
                return Err(Error::InvalidArgument(format!(
                    "begin after {after}: no transaction has committed at that timestamp yet"
                )));
            }
        }
        let (slot, id) = db.txns.open(|s| self.ssn_slots.open(s))?;
        let s = db.txns.slot(slot);
        if let Some(po) = &self.po {
            // Allocate_BTs (Figure 18): at least `after`, if given; then the
            // clock that begin reads below follows BTs.
            match o.after.map(pomvcc::of_stamp) {
                Some(ts) => {
                    po.allocate_bts(ts);
                }
                None => po.tick(),
            }
            self.po_clock(db);
        }
        if let Some(interval) = db.opts.safe_snapshot_interval.filter(|_| ssn::uses_safe_snapshot(&db.opts, o)) {
            // The same two steps with the safe snapshot (see `watermark`): a
            // scan that misses the first store read a `latest` no larger
            // than the one we read after it.
            s.begin_ts.store(self.ssn_safe.latest(), Ordering::SeqCst);
            let begin_ts = self.ssn_safe.get(&db.clock, &db.txns, interval);
            // Release: only raises the published value.
            s.begin_ts.store(begin_ts, Ordering::Release);
            return Ok((slot, id, begin_ts));
        }
        s.begin_ts.store(db.clock.load(Ordering::SeqCst) - 1, Ordering::SeqCst);
        let begin_ts = db.clock.load(Ordering::SeqCst) - 1;
        // Release: only raises the published value; readers need no more.
        s.begin_ts.store(begin_ts, Ordering::Release);
        Ok((slot, id, begin_ts))
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
    /// The family's sets, in the slot's [`MvLocal`].
    pub(crate) local: Sets<'db, MvLocal>,
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
        let mut local = Sets::of(&g.sets, core.slot);
        // The slot's last occupant released its locks and claims (asserted).
        local.get().clear();
        let mut t = MvTxn { word: txn_word(core.id), g, ssn, local, policy, used_waits: false, po_cts: 0, core };
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
