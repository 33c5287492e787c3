//! The family hook set: what the database asks of a protocol family,
//! written in one place. The database (`db`) holds one [`Globals`] (the
//! family's database-wide state) and calls it; it never branches on the
//! protocol. An open transaction is a [`Family`] inside the public
//! `Transaction`, whose operations are one `match` each
//! (`protocol::transaction`).
//!
//! | hook | multi-version (`mv/`) | Silo (`silo/`) | 1V, ordered 2PL (`lock_1v/`, `ordered_2pl.rs`) | BOHM (`bohm/`) |
//! | --- | --- | --- | --- | --- |
//! | begin ([`Globals::begin`]) | `MvGlobal::begin`: a clock reading, a safe snapshot, POMVCC's BTs | `SiloGlobal::begin`: the epoch | the same; ordered 2PL then takes its declared locks (`Transaction::begin`) | the next log position (`Store::enter`) |
//! | read, write, scan | `mv/occ/read.rs`, `write.rs` (with `lock/`, `ssn/`, `pomvcc.rs` per the `Policy`) | `silo/` | `lock_1v/` | `bohm/interactive.rs` |
//! | commit, abort | `mv/occ/commit.rs` | `silo/commit.rs` | `lock_1v/commit.rs` | `bohm/interactive.rs` |
//! | savepoint | `mv/savepoint.rs` | `single::sv_mark`, `sv_rollback` | the same | `bohm/interactive.rs` |
//! | watermark ([`Globals::watermark`]) | `MvGlobal::watermark` | `SiloGlobal::watermark` (epochs) | the same | the clock |
//! | collect ([`Globals::before_collect`]) | the shared GC queues (`gc`) | the same (retired records), after asking for an epoch | the same | BOHM's own store |
//!
//! Adding a protocol: its directory under `protocol/`, a variant here (or a
//! `Policy` switch, for a member of the multi-version family), and its name
//! in `Protocol`.

use super::bohm::{BohmTxn, Store};
use super::core::TxnCore;
use super::lock_1v::{LockGlobal, LockTxn};
use super::mv::{MvGlobal, MvTxn};
use super::sets::SlotSets;
use super::silo::SiloTxn;
use super::single::SiloGlobal;
use crate::shared::Shared;
use crate::sync::atomic::Ordering;
use crate::txn::table::TxnTable;
use crate::{Options, Protocol, Result, TxnOptions};

/// The families (module docs).
pub(crate) enum Family<'db> {
    Mv(MvTxn<'db>),
    Silo(SiloTxn<'db>),
    Lock(LockTxn<'db>),
    Bohm(BohmTxn<'db>),
}

/// Each family's database-wide state, beside what every protocol shares
/// ([`Shared`]); the database (`db::Core`) owns the one of its protocol.
pub(crate) enum Globals {
    /// MV/O, MV/L, mixed, SSN, SSI, POMVCC.
    Mv(MvGlobal),
    /// Silo: the epoch and the commit-TID sequence.
    Silo(SiloGlobal),
    /// 1V, ordered 2PL: the same, and each slot's LockSet.
    Lock(LockGlobal),
    /// BOHM's store.
    Bohm(Store),
}

impl Globals {
    /// The state of `opts.protocol`'s family: the one place that maps a
    /// protocol to its family.
    pub(crate) fn new(opts: &Options) -> Globals {
        match opts.protocol {
            Protocol::Silo => Globals::Silo(SiloGlobal::new(TxnTable::slots_for(opts.max_transactions))),
            Protocol::OneVLock | Protocol::TwoPlOrdered => {
                Globals::Lock(LockGlobal::new(TxnTable::slots_for(opts.max_transactions)))
            }
            Protocol::Bohm => Globals::Bohm(Store::new()),
            Protocol::MvOcc
            | Protocol::MvLock
            | Protocol::MvMixed
            | Protocol::Ssn
            | Protocol::Ssi
            | Protocol::Pomvcc => Globals::Mv(MvGlobal::new(opts)),
        }
    }

    /// The multi-version family's state, if the protocol is one of it.
    #[inline]
    pub(crate) fn mv(&self) -> Option<&MvGlobal> {
        match self {
            Globals::Mv(g) => Some(g),
            _ => None,
        }
    }

    /// The single-version families' state, if the protocol is one of them.
    #[inline]
    pub(crate) fn single(&self) -> Option<&SiloGlobal> {
        match self {
            Globals::Silo(g) => Some(g),
            Globals::Lock(g) => Some(&g.single),
            _ => None,
        }
    }

    /// BOHM's store, if the protocol is BOHM.
    #[inline]
    pub(crate) fn bohm(&self) -> Option<&Store> {
        match self {
            Globals::Bohm(s) => Some(s),
            _ => None,
        }
    }

    /// Begins a transaction of the family's protocol: takes a slot, reads
    /// the begin time as the family does and hands the family's struct its
    /// state (`Transaction::begin` wraps it, and takes ordered 2PL's
    /// declared locks). `o` was checked against the protocol's levels and
    /// modes.
    #[inline]
    pub(crate) fn begin<'db>(
        &'db self,
        db: &'db Shared,
        sets: &'db SlotSets,
        o: &TxnOptions<'_>,
    ) -> Result<Family<'db>> {
        let core = |slot, id, ts| TxnCore::new(db, sets, slot, id, ts, o.isolation, o.read_only);
        let family = match self {
            Globals::Mv(g) => {
                let (slot, id, ts) = g.begin(db, o)?;
                Family::Mv(MvTxn::new(core(slot, id, ts), g, *o))
            }
            Globals::Silo(g) => {
                let (slot, id, ts) = g.begin(db, false)?;
                Family::Silo(SiloTxn::new(core(slot, id, ts), g))
            }
            Globals::Lock(g) => {
                let (slot, id, ts) = g.single.begin(db, true)?;
                Family::Lock(LockTxn::new(core(slot, id, ts), g))
            }
            Globals::Bohm(s) => {
                let (slot, id) = db.txns.open(|_| {})?;
                // Alone, at the next log position (see `protocol::bohm`).
                let ts = s.enter();
                Family::Bohm(BohmTxn::new(core(slot, id, ts), s))
            }
        };
        Ok(family)
    }

    /// The GC watermark: no open or future transaction reads before it
    /// (see `TxnTable::min_active_begin`).
    pub(crate) fn watermark(&self, db: &Shared) -> u64 {
        match self {
            Globals::Mv(g) => g.watermark(db),
            Globals::Silo(g) => g.watermark(db),
            Globals::Lock(g) => g.single.watermark(db),
            // BOHM reclaims its versions in its own store (`protocol::bohm`);
            // the shared queues hold none of them: the clock bounds, as before.
            // SeqCst: the bound must be read before the slot scan (see TxnTable).
            Globals::Bohm(_) => db.txns.min_active_begin(db.clock.load(Ordering::SeqCst)),
        }
    }

    /// How many times the family drew a timestamp (`Stats::timestamp_increments`):
    /// from the counters themselves (CTs starts at 1, the clock at 2 and
    /// steps by 2); the single-version families and BOHM draw none.
    pub(crate) fn timestamp_increments(&self, db: &Shared) -> u64 {
        match self {
            Globals::Mv(g) => match &g.po {
                Some(po) => po.cts() - 1,
                // Relaxed: statistics only.
                None => (db.clock.load(Ordering::Relaxed) - 2) / 2,
            },
            Globals::Silo(_) | Globals::Lock(_) | Globals::Bohm(_) => 0,
        }
    }

    /// Whether the tables keep SSN's words beside their versions (SSN and
    /// SSI: η and the readers of each version, section 4).
    pub(crate) fn keeps_ssn_words(&self) -> bool {
        matches!(self, Globals::Mv(g) if g.certifies)
    }

    /// Collect, before the shared queues are swept: Silo's epoch moves with
    /// commits (every 64th of a thread); one asked for here lets what was
    /// retired before it be reclaimed even while nothing commits (writes
    /// refused by the memory limit, say). At most one step per epoch length.
    pub(crate) fn before_collect(&self) {
        if let Globals::Silo(g) = self {
            g.tick();
        }
    }

    /// Before history recording is switched: under Silo, recorded TIDs come
    /// after every unrecorded one (the checker's initial state is what is
    /// older than the first recorded commit).
    pub(crate) fn before_recording(&self) {
        if let Globals::Silo(g) = self {
            g.order_past_epoch();
        }
    }
}
