//! The public [`Transaction`]: an enum over the families' transaction
//! structs, one `match` per operation (one predictable branch: a database
//! runs one protocol, so every transaction of it takes the same arm).
//!
//! | family | protocols | struct | where it decides visibility, validation, conflicts |
//! | --- | --- | --- | --- |
//! | multi-version (Hekaton) | mv-occ, mv-lock, mv-mixed, ssn, ssi, pomvcc | `MvTxn` | `mv_occ/` (with `mv_lock/`, `ssn/`, `ssi.rs`, `pomvcc.rs` for their switches, see `super::mv::Policy`) |
//! | single-version OCC | silo | `SiloTxn` | `silo/` |
//! | single-version locking | 1v-lock, 2pl-ordered | `LockTxn` | `lock_1v/`, `ordered_2pl.rs` |
//! | batch multi-version | bohm (interactive transactions) | `BohmTxn` | `bohm/interactive.rs` |
//!
//! `docs/ARCHITECTURE.md` has the longer table, file by file.

mod write;

use super::core::{CommitInfo, TxnCore};
use super::family::{Family, Globals};
use super::sets::SlotSets;
use super::silo::SiloTxn;
use crate::error::AbortReason;
use crate::key::{IntoKey, Key, KeyRange};
use crate::obs;
use crate::shared::Shared;
use crate::table::IndexImpl;
use crate::txn::Filter;
use crate::{AccessSet, Error, IndexId, Isolation, Protocol, Result, TableId, TxnOptions};
use std::mem::ManuallyDrop;
use std::ops::Bound;

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
///
/// ```
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// {
///     let mut x = db.begin(Isolation::Serializable).unwrap();
///     x.insert(t, Key::from(1), b"never").unwrap();
/// } // dropped while open: rolled back
/// let mut x = db.begin(Isolation::Serializable).unwrap();
/// assert_eq!(x.get(t, &Key::from(1)).unwrap(), None);
/// // It may finish on another thread.
/// std::thread::scope(|s| {
///     s.spawn(move || x.commit().unwrap());
/// });
/// ```
pub struct Transaction<'db> {
    pub(crate) family: Family<'db>,
    /// Savepoints taken and not released (see [`super::savepoint`]).
    pub(crate) savepoints: u32,
}

impl<'db> Transaction<'db> {
    /// Begins a transaction of the database's protocol (`Globals::begin`);
    /// under ordered 2PL, takes every lock of the declared access set first.
    #[inline]
    pub(crate) fn begin(g: &'db Globals, db: &'db Shared, sets: &'db SlotSets, o: TxnOptions<'_>) -> Result<Self> {
        let mut t = Transaction { family: g.begin(db, sets, &o)?, savepoints: 0 };
        if let Some(access) = o.access {
            // On an error, dropping `t` aborts it and frees its slot.
            t.lock_declared(access)?;
        }
        Ok(t)
    }

    #[inline]
    /// The table and index behind `index` (an unknown table or index is
    /// an error).
    pub(crate) fn index_of(&self, index: IndexId) -> Result<(&'db crate::table::Table, &'db crate::table::Index)> {
        self.core().index_ref(index)
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
            Family::Lock(t) if t.core.db.opts.protocol == Protocol::TwoPlOrdered => t.lock_declared(access),
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
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Options};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let x = db.begin(Isolation::RepeatableRead).unwrap();
    /// assert_eq!(x.isolation(), Isolation::RepeatableRead);
    /// ```
    #[inline]
    pub fn isolation(&self) -> Isolation {
        self.core().isolation
    }

    /// The begin timestamp.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let a = db.begin(Isolation::Snapshot).unwrap();
    /// db.run(Isolation::Snapshot, |x| x.insert(t, Key::from(1), b"v")).unwrap();
    /// let b = db.begin(Isolation::Snapshot).unwrap();
    /// assert!(b.begin_ts() > a.begin_ts()); // `b` sees the insert, `a` does not
    /// ```
    #[inline]
    pub fn begin_ts(&self) -> u64 {
        self.core().begin_ts
    }

    /// The transaction id (as stored in Begin/End words).
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Options};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let (a, b) = (db.begin(Isolation::Snapshot).unwrap(), db.begin(Isolation::Snapshot).unwrap());
    /// assert_ne!(a.id(), b.id());
    /// ```
    #[inline]
    pub fn id(&self) -> u64 {
        self.core().id
    }

    /// True for a pessimistic (MV/L) transaction, false for an optimistic one.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Mode, Options, Protocol, TxnOptions};
    ///
    /// let db = Database::new(Options { protocol: Protocol::MvMixed, ..Options::default() }).unwrap();
    /// let o = |mode| TxnOptions { mode, ..TxnOptions::new(Isolation::Serializable) };
    /// assert!(db.begin_with(o(Mode::Pessimistic)).unwrap().is_pessimistic());
    /// assert!(!db.begin_with(o(Mode::Optimistic)).unwrap().is_pessimistic());
    /// ```
    pub fn is_pessimistic(&self) -> bool {
        match &self.family {
            Family::Mv(t) => t.policy.pessimistic,
            _ => false,
        }
    }

    /// The reason this transaction was aborted, if it was.
    ///
    /// ```
    /// use multiverse::{AbortReason, Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Snapshot, |x| x.insert(t, Key::from(1), b"a")).unwrap();
    /// let mut a = db.begin(Isolation::Snapshot).unwrap();
    /// let mut b = db.begin(Isolation::Snapshot).unwrap();
    /// a.update(t, &Key::from(1), b"b").unwrap();
    /// assert_eq!(a.abort_reason(), None);
    /// assert!(b.update(t, &Key::from(1), b"c").is_err());
    /// assert_eq!(b.abort_reason(), Some(AbortReason::WriteConflict));
    /// ```
    #[inline]
    pub fn abort_reason(&self) -> Option<AbortReason> {
        match self.core().status {
            super::core::Status::Aborted(r) => Some(r),
            super::core::Status::Active => None,
        }
    }

    /// Reads the row with primary key `key` and passes its value to `f`.
    /// No allocation: the value is borrowed for the duration of `f`.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &7u64.to_le_bytes())).unwrap();
    /// let mut x = db.begin(Isolation::Snapshot).unwrap();
    /// let n = x.get_with(t, &Key::from(1), |v| u64::from_le_bytes(v.try_into().unwrap())).unwrap();
    /// assert_eq!(n, Some(7));
    /// assert_eq!(x.get_with(t, &Key::from(2), |v| v.len()).unwrap(), None);
    /// ```
    #[inline]
    pub fn get_with<'k, R>(
        &mut self,
        table: impl Into<TableId>,
        key: impl IntoKey<'k>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let table = table.into();
        key.with_key(|key| match &mut self.family {
            Family::Mv(t) => t.get_with(table, key, f),
            Family::Silo(t) => t.get_with(table, key, f),
            Family::Lock(t) => t.get_with(table, key, f),
            Family::Bohm(t) => t.get_with(table, key, f),
        })?
    }

    /// Reads the row with primary key `key` (copies the value).
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// assert_eq!(x.get(t, &Key::from(1)).unwrap(), None);
    /// x.insert(t, Key::from(1), b"mine").unwrap();
    /// assert_eq!(x.get(t, &Key::from(1)).unwrap(), Some(b"mine".to_vec())); // its own write
    /// ```
    pub fn get<'k>(&mut self, table: impl Into<TableId>, key: impl IntoKey<'k>) -> Result<Option<Vec<u8>>> {
        let table = table.into();
        self.get_with(table, key, |v| v.to_vec())
    }

    /// Reads the row with primary key `key`, declaring the intent to write
    /// it later in this transaction, and passes its value to `f` (no
    /// allocation, as [`Transaction::get_with`]). The value is the one
    /// [`Transaction::get_with`] would pass; what differs is that a
    /// read-modify-write of a contended row stops aborting late:
    ///
    /// | protocols | what the read takes |
    /// | --- | --- |
    /// | 1v-lock, 2pl-ordered | the key's exclusive lock instead of a shared one, held to the end (no upgrade later, so no upgrade deadlock); a second reader for update waits for it |
    /// | mv-occ, mv-lock, mv-mixed, ssn, ssi, pomvcc (pessimistic writes) | the write lock an update would take (Hekaton section 2.6 and 4.1.1: our id in the End word), which the later update or delete of the key uses; a second writer or reader for update gets a write conflict at once |
    /// | silo | a write claim that makes a second reader for update wait for this transaction to end (a deviation from Silo, which has no read-time locks; validation is unchanged) |
    /// | pomvcc (optimistic mode), bohm | nothing more than [`Transaction::get_with`]: writes stay private until commit (POMVCC's Figure 13), or are declared before the transaction runs (BOHM) |
    ///
    /// Under the multi-version protocols the conflict comes earlier but does
    /// not go away: a transaction can update only the latest version, and
    /// Hekaton section 2.6 makes the second writer of a row abort at once
    /// (first writer wins) rather than wait, since once the first commits
    /// its version is newer than the second's snapshot anyway. The read
    /// intent there buys a guarantee (no later writer invalidates the read),
    /// not fewer aborts; under 1V locking and Silo it removes most of them
    /// (docs/BENCHMARKS.md, "Read intent").
    ///
    /// A key read for update and never written is only read: its lock or
    /// claim is released at the commit (under MV/L's repeatable read and
    /// serializable it becomes the read lock a read would have held) or
    /// at the abort, and a rollback to a savepoint keeps it. A key with no
    /// row locks nothing more than a read would (multi-version, Silo).
    /// Fails with [`Error::InvalidArgument`] in a read-only transaction.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// db.run(Isolation::Serializable, |tx| tx.insert(t, Key::from(1u64), &7u64.to_le_bytes())).unwrap();
    /// db.run(Isolation::Serializable, |tx| {
    ///     let k = Key::from(1u64);
    ///     let n = tx.get_for_update_with(t, &k, |v| u64::from_le_bytes(v.try_into().unwrap()))?.unwrap();
    ///     tx.update(t, &k, &(n + 1).to_le_bytes())
    /// })
    /// .unwrap();
    /// ```
    #[inline]
    pub fn get_for_update_with<'k, R>(
        &mut self,
        table: impl Into<TableId>,
        key: impl IntoKey<'k>,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let table = table.into();
        key.with_key(|key| {
            if self.core().read_only && self.core().is_open() {
                return Err(Error::InvalidArgument("get_for_update in a read-only transaction".into()));
            }
            match &mut self.family {
                Family::Mv(t) => t.get_for_update_with(table, key, f),
                Family::Silo(t) => t.get_for_update_with(table, key, f),
                Family::Lock(t) => t.get_for_update_with(table, key, f),
                // BOHM: writes are declared before the transaction runs, and an
                // interactive transaction runs alone (see `bohm::interactive`).
                Family::Bohm(t) => t.get_with(table, key, f),
            }
        })?
    }

    /// [`Transaction::get_for_update_with`], copying the value.
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 16)).unwrap();
    /// db.run(Isolation::Serializable, |tx| tx.insert(t, Key::from(1), b"a")).unwrap();
    /// let mut a = db.begin(Isolation::Serializable).unwrap();
    /// assert_eq!(a.get_for_update(t, &Key::from(1)).unwrap().as_deref(), Some(&b"a"[..]));
    /// // Under mv-occ a second writer of the row is refused at once.
    /// let mut b = db.begin(Isolation::Serializable).unwrap();
    /// assert!(matches!(b.update(t, &Key::from(1), b"b"), Err(Error::Aborted(_))));
    /// a.update(t, &Key::from(1), b"c").unwrap();
    /// a.commit().unwrap();
    /// ```
    pub fn get_for_update<'k>(&mut self, table: impl Into<TableId>, key: impl IntoKey<'k>) -> Result<Option<Vec<u8>>> {
        let table = table.into();
        self.get_for_update_with(table, key, |v| v.to_vec())
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
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 1024)).unwrap();
    /// db.run(Isolation::Serializable, |x| (0..8u64).try_for_each(|k| x.insert(t, Key::from(k), b"v"))).unwrap();
    /// let keys: Vec<Key> = (0..8u64).map(Key::from).collect();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// x.prefetch(t, &keys); // the cache misses of the lookups below overlap
    /// for k in &keys {
    ///     assert!(x.get(t, k).unwrap().is_some());
    /// }
    /// ```
    pub fn prefetch(&self, table: impl Into<TableId>, keys: &[Key]) {
        let table = table.into();
        self.prefetch_many(&[(table, keys)]);
    }

    /// [`Transaction::prefetch`] for the rows of several tables at once.
    /// The second step (a version's address is in its bucket) waits for
    /// the first bucket to arrive; one call for all the rows a transaction
    /// is about to reach waits once instead of once per table.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let a = db.create_table(TableSpec::hash("a", 64)).unwrap();
    /// let b = db.create_table(TableSpec::hash("b", 64)).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// let (ka, kb) = ([Key::from(1)], [Key::from(2), Key::from(3)]);
    /// x.prefetch_many(&[(a.table(), &ka[..]), (b.table(), &kb[..])]);
    /// assert_eq!(x.get(a, &ka[0]).unwrap(), None);
    /// ```
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
    ///
    /// ```
    /// use multiverse::{Database, IndexKind, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// // People by id, indexed by city (the value).
    /// let spec = TableSpec::hash("people", 64).secondary("city", IndexKind::Hash { capacity: 64 }, |_, v| {
    ///     Key::from_bytes(v).unwrap()
    /// });
    /// let people = db.create_table(spec).unwrap();
    /// db.run(Isolation::Serializable, |x| {
    ///     x.insert(people, Key::from(1), b"oslo")?;
    ///     x.insert(people, Key::from(2), b"lima")?;
    ///     x.insert(people, Key::from(3), b"oslo")
    /// })
    /// .unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// let mut in_oslo = vec![];
    /// x.get_by(db.index(people, "city").unwrap(), &Key::from_bytes(b"oslo").unwrap(), |pk, _| {
    ///     in_oslo.push(pk.to_u64().unwrap());
    ///     true
    /// })
    /// .unwrap();
    /// in_oslo.sort();
    /// assert_eq!(in_oslo, [1, 3]);
    /// ```
    #[inline]
    pub fn get_by<'k>(
        &mut self,
        index: IndexId,
        key: impl IntoKey<'k>,
        f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        key.with_key(|key| {
            let (lo, hi) = (Bound::Included(key.clone()), Bound::Included(key.clone()));
            match &mut self.family {
                Family::Mv(t) => t.get_by(index, key, f),
                Family::Silo(t) => t.scan(index, lo, hi, None, false, f),
                Family::Lock(t) => t.scan(index, lo, hi, None, false, f),
                Family::Bohm(t) => t.scan(index, lo, hi, None, false, f),
            }
        })?
    }

    /// Calls `f(primary key, value)` for every visible row whose key in
    /// `index` lies in `range` and that passes `filter`, until `f` returns
    /// false. Ordered indexes deliver rows in key order; hash indexes can only
    /// be scanned whole (in no particular order), filtered by `range`.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// db.run(Isolation::Serializable, |x| (0..10u64).try_for_each(|k| x.insert(t, Key::from(k), b"v"))).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// let mut keys = vec![];
    /// x.scan(db.primary(t), Key::from(3).., None, |pk, _value| {
    ///     keys.push(pk.to_u64().unwrap());
    ///     keys.len() < 4 // stop after four rows
    /// })
    /// .unwrap();
    /// assert_eq!(keys, [3, 4, 5, 6]);
    /// ```
    #[inline]
    pub fn scan<'k>(
        &mut self,
        index: impl Into<IndexId>,
        range: impl KeyRange<'k>,
        filter: Option<&Filter>,
        f: impl FnMut(&Key, &[u8]) -> bool,
    ) -> Result<()> {
        let (lo, hi) = range.into_bounds()?;
        self.scan_dir(index.into(), lo, hi, filter, false, f)
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

    /// Commits. Waits only for commit dependencies. On failure the
    /// transaction is rolled back and the error says why.
    ///
    /// Under sync durability a commit returns once it is durable, and a
    /// transaction that wrote nothing returns once whatever it read is
    /// durable (`wal::log`, "Durable visibility"): a crash never
    /// loses a commit that was acknowledged or that a reader was shown.
    /// The multi-version family gets the second for free: its commits
    /// become visible only once durable (see `mv::occ::commit`); what it
    /// read is durable or a commit dependency it waited for. The others
    /// follow Silo's rule and wait for the round of what they read.
    ///
    /// If the log cannot be written (a full disk, a failed sync), the
    /// commit fails with [`Error::LogFailed`], and so does every later
    /// `begin` and commit of the database (fail-stop): reopen the
    /// directory to recover what is durable.
    ///
    /// ```
    /// use multiverse::{AbortReason, Database, Error, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"a")).unwrap();
    /// // A serializable reader whose read is overwritten before it commits
    /// // fails validation.
    /// let mut r = db.begin(Isolation::Serializable).unwrap();
    /// r.get(t, &Key::from(1)).unwrap();
    /// r.insert(t, Key::from(2), b"b").unwrap();
    /// db.run(Isolation::Serializable, |x| x.update(t, &Key::from(1), b"changed")).unwrap();
    /// assert_eq!(r.commit().unwrap_err(), Error::Aborted(AbortReason::ReadValidation));
    /// ```
    #[inline]
    pub fn commit(mut self) -> Result<CommitInfo> {
        let db = self.core().db;
        let _span = obs::span!(debug, "commit", txn = self.core().id, protocol = db.opts.protocol.name());
        let (began, started) = (self.core().began, obs::Started::now());
        // Fail-stop (`wal::log`): once the log has failed nothing commits,
        // in any family: what was read or written may not be durable.
        if let Err(e) = db.check_log() {
            self.abort_with(AbortReason::LogFailed);
            return Err(e);
        }
        let (info, visible_once_durable) = match &mut self.family {
            Family::Mv(t) => (t.commit()?, true),
            Family::Silo(t) => (t.commit()?, false),
            Family::Lock(t) => (t.commit()?, false),
            Family::Bohm(t) => (t.commit()?, false),
        };
        if info.writes == 0 && !visible_once_durable {
            db.wait_visible()?;
        }
        db.obs.commit_call(began, started);
        Ok(info)
    }

    /// Rolls the transaction back.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// x.insert(t, Key::from(1), b"v").unwrap();
    /// x.abort();
    /// assert_eq!(db.run(Isolation::Snapshot, |y| y.get(t, &Key::from(1))).unwrap(), None);
    /// ```
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
