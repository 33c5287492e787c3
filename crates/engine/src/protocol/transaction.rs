//! The public [`Transaction`]: an enum over the families' transaction
//! structs, one `match` per operation (one predictable branch: a database
//! runs one protocol, so every transaction of it takes the same arm).
//!
//! | family | protocols | struct | where it decides visibility, validation, conflicts |
//! | --- | --- | --- | --- |
//! | multi-version (Hekaton) | mv-occ, mv-lock, mv-mixed, ssn, ssi, pomvcc | [`MvTxn`] | `mv_occ/` (with `mv_lock/`, `ssn/`, `ssi.rs`, `pomvcc.rs` for their switches, see [`super::mv_occ::Policy`]) |
//! | single-version OCC | silo | [`SiloTxn`] | `silo/` |
//! | single-version locking | 1v-lock, 2pl-ordered | [`LockTxn`] | `lock_1v/`, `ordered_2pl.rs` |
//! | batch multi-version | bohm (interactive transactions) | [`BohmTxn`] | `bohm/interactive.rs` |
//!
//! `docs/ARCHITECTURE.md` has the longer table, file by file.

use super::bohm::BohmTxn;
use super::bohm::Store;
use super::core::{CommitInfo, TxnCore};
use super::lock_1v::{LockGlobal, LockTxn};
use super::mv_occ::MvGlobal;
use super::mv_occ::MvTxn;
use super::sets::SlotSets;
use super::silo::SiloTxn;
use super::single::SiloGlobal;
use crate::error::AbortReason;
use crate::history::WriteKind;
use crate::key::Key;
use crate::shared::Shared;
use crate::table::IndexImpl;
use crate::txn::Filter;
use crate::{AccessSet, Error, IndexId, Isolation, Options, Protocol, Result, TableId, TxnOptions};
use std::mem::ManuallyDrop;
use std::ops::{Bound, RangeBounds};

/// An open transaction. Dropping it while active aborts it. It may move
/// between threads (`Send`) but is used by one at a time (not `Sync`).
///
/// Every operation is non-blocking under the optimistic protocols; the
/// only wait is inside [`commit`] (commit dependencies). The locking
/// protocols wait for locks. After an operation returns
/// [`Error::Aborted`] the transaction is rolled back and every later
/// operation returns [`Error::TransactionClosed`].
///
/// [`commit`]: Transaction::commit
pub struct Transaction<'db> {
    pub(crate) family: Family<'db>,
    /// Savepoints taken and not released (see [`super::savepoint`]).
    pub(crate) savepoints: u32,
}

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
    pub(crate) fn new(opts: &Options) -> Globals {
        match opts.protocol {
            Protocol::Silo => Globals::Silo(SiloGlobal::new()),
            Protocol::OneVLock | Protocol::TwoPlOrdered => {
                Globals::Lock(LockGlobal::new(crate::txn::table::TxnTable::slots_for(opts.max_transactions)))
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
}

impl<'db> Transaction<'db> {
    /// A transaction of the database's protocol, in slot `slot` with id
    /// `id`, beginning at `begin_ts`: the family's struct, handed the
    /// family's state.
    #[inline]
    pub(crate) fn new(
        db: &'db Shared,
        g: &'db Globals,
        sets: &'db SlotSets,
        slot: u32,
        id: u64,
        begin_ts: u64,
        o: TxnOptions<'_>,
    ) -> Self {
        let core = TxnCore::new(db, sets, slot, id, begin_ts, o.isolation, o.read_only);
        let family = match g {
            Globals::Silo(g) => Family::Silo(SiloTxn::new(core, g)),
            Globals::Lock(g) => Family::Lock(LockTxn::new(core, g)),
            Globals::Bohm(s) => Family::Bohm(BohmTxn::new(core, s)),
            Globals::Mv(g) => Family::Mv(MvTxn::new(core, g, o)),
        };
        Transaction { family, savepoints: 0 }
    }

    #[inline]
    /// The index behind `index` (an unknown table or index is an error).
    pub(crate) fn index_of(&self, index: IndexId) -> Result<&'db crate::table::Index> {
        Ok(self.core().index_ref(index)?.1)
    }

    fn core(&self) -> &TxnCore<'db> {
        match &self.family {
            Family::Mv(t) => &t.core,
            Family::Silo(t) => &t.core,
            Family::Lock(t) => &t.core,
            Family::Bohm(t) => &t.core,
        }
    }

    /// Ordered 2PL: takes every lock of the declared access set, in order
    /// (see `ordered_2pl`); nothing for the other protocols.
    pub(crate) fn lock_declared(&mut self, access: &AccessSet) -> Result<()> {
        match &mut self.family {
            Family::Lock(t) => t.lock_declared(access),
            _ => Ok(()),
        }
    }

    /// Makes a fresh read-only multi-version transaction a plain snapshot
    /// read for a checkpoint (see `MvTxn::plain_snapshot`); nothing for
    /// the other families.
    pub(crate) fn plain_snapshot(&mut self) {
        if let Family::Mv(t) = &mut self.family {
            t.plain_snapshot();
        }
    }

    /// Takes the family's transaction out; nothing is aborted.
    fn into_family(self) -> Family<'db> {
        let me = ManuallyDrop::new(self);
        // SAFETY: `me` is never used or dropped again, so its only field is
        // moved out exactly once.
        unsafe { std::ptr::read(&me.family) }
    }

    /// Makes a fresh read-only single-version transaction read records as
    /// they are, without locks or validation (Silo's reads, never
    /// committed): for a checkpoint that holds the commit freeze
    /// (`durability::checkpoint`), under which nothing is installed. Both
    /// single-version families keep their records in the same layout
    /// (`silo`'s TID word), so a 1V database's checkpoint reads this way too.
    pub(crate) fn into_frozen_reader(self) -> Self {
        let (core, g) = match self.into_family() {
            Family::Silo(t) => (t.core, t.g),
            Family::Lock(t) => (t.core, &t.g.single),
            Family::Mv(_) | Family::Bohm(_) => unreachable!("a frozen reader reads a single-version database"),
        };
        debug_assert!(core.read_only);
        Transaction { family: Family::Silo(SiloTxn::new(core, g)), savepoints: 0 }
    }

    /// The isolation level.
    #[inline]
    pub fn isolation(&self) -> Isolation {
        self.core().isolation
    }

    /// The begin timestamp.
    #[inline]
    pub fn begin_ts(&self) -> u64 {
        self.core().begin_ts
    }

    /// The transaction id (as stored in Begin/End words).
    #[inline]
    pub fn id(&self) -> u64 {
        self.core().id
    }

    /// True for a pessimistic (MV/L) transaction, false for an optimistic one.
    pub fn is_pessimistic(&self) -> bool {
        match &self.family {
            Family::Mv(t) => t.policy.pessimistic,
            _ => false,
        }
    }

    /// The reason this transaction was aborted, if it was.
    #[inline]
    pub fn abort_reason(&self) -> Option<AbortReason> {
        match self.core().status {
            super::core::Status::Aborted(r) => Some(r),
            super::core::Status::Active => None,
        }
    }

    /// Reads the row with primary key `key` and passes its value to `f`.
    /// No allocation: the value is borrowed for the duration of `f`.
    #[inline]
    pub fn get_with<R>(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        match &mut self.family {
            Family::Mv(t) => t.get_with(table, key, f),
            Family::Silo(t) => t.get_with(table, key, f),
            Family::Lock(t) => t.get_with(table, key, f),
            Family::Bohm(t) => t.get_with(table, key, f),
        }
    }

    /// Reads the row with primary key `key` (copies the value).
    pub fn get(&mut self, table: TableId, key: &Key) -> Result<Option<Vec<u8>>> {
        self.get_with(table, key, |v| v.to_vec())
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
        let db = self.core().db;
        let hashed = |table: TableId| match db.table_ref(table) {
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

    /// Calls `f(primary key, value)` for every visible row whose key in
    /// `index` equals `key` (any index; secondary indexes may hold many rows
    /// per key), until `f` returns false.
    #[inline]
    pub fn get_by(&mut self, index: IndexId, key: &Key, f: impl FnMut(&Key, &[u8]) -> bool) -> Result<()> {
        let (lo, hi) = (Bound::Included(key.clone()), Bound::Included(key.clone()));
        match &mut self.family {
            Family::Mv(t) => t.get_by(index, key, f),
            Family::Silo(t) => t.scan(index, lo, hi, None, false, f),
            Family::Lock(t) => t.scan(index, lo, hi, None, false, f),
            Family::Bohm(t) => t.scan(index, lo, hi, None, false, f),
        }
    }

    /// Calls `f(primary key, value)` for every visible row whose key in
    /// `index` lies in `range` and that passes `filter`, until `f` returns
    /// false. Ordered indexes deliver rows in key order; hash indexes can only
    /// be scanned whole (in no particular order), filtered by `range`.
    #[inline]
    pub fn scan(
        &mut self,
        index: IndexId,
        range: impl RangeBounds<Key>,
        filter: Option<&Filter>,
        f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        self.scan_dir(index, range.start_bound().cloned(), range.end_bound().cloned(), filter, false, f)
    }

    /// [`Transaction::scan`] in either direction (`rev`: from `hi` down);
    /// the walk under [`Transaction::range`]'s iterators.
    #[inline]
    pub(crate) fn scan_dir(
        &mut self,
        index: IndexId,
        lo: Bound<Key>,
        hi: Bound<Key>,
        filter: Option<&Filter>,
        rev: bool,
        f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        match &mut self.family {
            Family::Mv(t) => t.scan(index, (lo, hi), filter, rev, f),
            Family::Silo(t) => t.scan(index, lo, hi, filter, rev, f),
            Family::Lock(t) => t.scan(index, lo, hi, filter, rev, f),
            Family::Bohm(t) => t.scan(index, lo, hi, filter, rev, f),
        }
    }

    /// Inserts a new row; fails with [`Error::DuplicateKey`] if `key` has a
    /// visible row (the transaction stays usable).
    #[inline]
    pub fn insert(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        self.core().admit(value.len())?;
        match &mut self.family {
            Family::Mv(t) => t.insert(table, key, value),
            Family::Silo(t) => t.insert(table, key, value),
            Family::Lock(t) => t.insert(table, key, value),
            Family::Bohm(t) => t.write(table, &key, WriteKind::Insert, |_, new| new.extend_from_slice(value)),
        }
    }

    /// Replaces the value of an existing row; fails with
    /// [`Error::KeyNotFound`] if `key` has no visible row.
    #[inline]
    pub fn update(&mut self, table: TableId, key: &Key, value: &[u8]) -> Result<()> {
        self.core().admit_update(value.len())?;
        let fill = |_: &[u8], new: &mut Vec<u8>| {
            new.extend_from_slice(value);
            true
        };
        // The single-version families check the length here: their `write`
        // also serves `update_with` and `modify`, which check the result.
        let too_large = |max: usize| Err(Error::ValueTooLarge { len: value.len(), max });
        match &mut self.family {
            Family::Mv(t) => t.update(table, key, value),
            Family::Silo(t) if value.len() > t.core.db.opts.max_value_size => too_large(t.core.db.opts.max_value_size),
            Family::Lock(t) if value.len() > t.core.db.opts.max_value_size => too_large(t.core.db.opts.max_value_size),
            Family::Silo(t) => t.write(table, key, fill),
            Family::Lock(t) => t.write(table, key, fill),
            Family::Bohm(t) => t.write(table, key, WriteKind::Update, |_, new| new.extend_from_slice(value)),
        }
    }

    /// Read-modify-write: `f(old, new)` fills `new` (empty on entry) from the
    /// old value, and the new value replaces exactly the version `f` saw. Uses
    /// a buffer owned by the transaction: no allocation in the steady state.
    #[inline]
    pub fn update_with(&mut self, table: TableId, key: &Key, f: impl FnOnce(&[u8], &mut Vec<u8>)) -> Result<()> {
        self.core().admit_update(0)?;
        match &mut self.family {
            Family::Mv(t) => t.update_with(table, key, f),
            Family::Silo(t) => t.write(table, key, |old, new| {
                f(old, new);
                true
            }),
            Family::Lock(t) => t.write(table, key, |old, new| {
                f(old, new);
                true
            }),
            Family::Bohm(t) => t.write(table, key, WriteKind::Update, |old, new| f(old.unwrap_or(&[]), new)),
        }
    }

    /// Read-modify-write of an existing row that keeps its length: `f`
    /// edits a copy of the current value in place. The copy is made straight
    /// into the new version (one copy of the row; [`Transaction::update_with`]
    /// makes two), which is what fixed-layout rows want.
    #[inline]
    pub fn modify(&mut self, table: TableId, key: &Key, f: impl FnOnce(&mut [u8])) -> Result<()> {
        self.core().admit_update(0)?;
        match &mut self.family {
            Family::Mv(t) => t.modify(table, key, f),
            Family::Silo(t) => t.write(table, key, |old, new| {
                new.extend_from_slice(old);
                f(new);
                true
            }),
            Family::Lock(t) => t.write(table, key, |old, new| {
                new.extend_from_slice(old);
                f(new);
                true
            }),
            Family::Bohm(t) => t.write(table, key, WriteKind::Update, |old, new| {
                new.extend_from_slice(old.unwrap_or(&[]));
                f(new)
            }),
        }
    }

    /// Deletes a row; fails with [`Error::KeyNotFound`] if `key` has no visible row.
    #[inline]
    pub fn delete(&mut self, table: TableId, key: &Key) -> Result<()> {
        match &mut self.family {
            Family::Mv(t) => t.delete(table, key),
            Family::Silo(t) => t.write(table, key, |_, _| false),
            Family::Lock(t) => t.write(table, key, |_, _| false),
            Family::Bohm(t) => t.write(table, key, WriteKind::Delete, |_, _| {}),
        }
    }

    /// Inserts the row, or updates it if `key` has a visible row.
    pub fn put(&mut self, table: TableId, key: Key, value: &[u8]) -> Result<()> {
        match self.update(table, &key, value) {
            Err(Error::KeyNotFound) => self.insert(table, key, value),
            r => r,
        }
    }

    /// Commits. Waits only for commit dependencies. On failure the
    /// transaction is rolled back and the error says why.
    ///
    /// Under sync durability a commit returns once it is durable, and a
    /// transaction that wrote nothing returns once whatever it read is
    /// durable (`wal::log`, "Durable visibility"): a crash never
    /// loses a commit that was acknowledged or that a reader was shown.
    /// The multi-version family gets the second for free: its commits
    /// become visible only once durable (see `mv_occ::commit`); what it
    /// read is durable or a commit dependency it waited for. The others
    /// follow Silo's rule and wait for the round of what they read.
    #[inline]
    pub fn commit(mut self) -> Result<CommitInfo> {
        let db = self.core().db;
        let (info, visible_once_durable) = match &mut self.family {
            Family::Mv(t) => (t.commit()?, true),
            Family::Silo(t) => (t.commit()?, false),
            Family::Lock(t) => (t.commit()?, false),
            Family::Bohm(t) => (t.commit()?, false),
        };
        if info.writes == 0 && !visible_once_durable {
            db.wait_visible()?;
        }
        Ok(info)
    }

    /// Rolls the transaction back.
    #[inline]
    pub fn abort(mut self) {
        self.abort_with(AbortReason::User);
    }

    /// Rolls an open transaction back for `reason`.
    #[inline]
    fn abort_with(&mut self, reason: AbortReason) {
        if !self.core().is_open() {
            return;
        }
        match &mut self.family {
            Family::Mv(t) => t.abort_with(reason),
            Family::Silo(t) => t.abort_with(reason),
            Family::Lock(t) => t.abort_with(reason),
            Family::Bohm(t) => t.abort_with(reason),
        };
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        self.abort_with(AbortReason::User);
    }
}
