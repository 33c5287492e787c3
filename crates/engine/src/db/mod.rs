//! [`Database`]: the handle, the shared [`Core`] it points to, tables and
//! indexes, `begin` and the retrying `run`, maintenance (garbage
//! collection, statistics, history). Opening a durable database and its
//! checkpointer live in `durability::open`; BOHM's entry points in `bohm`.

mod bohm;
pub(crate) mod durable;
mod pin;
mod schema;

pub use pin::Pinned;

use crate::options::Durability;
use crate::shared::Shared;
use crate::sync::atomic::Ordering;
use crate::table::Table;
use crate::txn::{self, table::TxnTable};
use crate::{
    history, protocol, AbortReason, Error, IndexId, Isolation, Mode, Options, Protocol, Result, RetryPolicy, Stats,
    TableId, TableKind, TableSpec, Transaction, TxnOptions, MAX_TABLES,
};
use durable::Durable;
use std::time::Duration;

/// How long [`Database::collect_garbage`] carries on one hash index's growth.
const GROWTH_STEP: Duration = Duration::from_millis(20);

/// An in-memory database.
///
/// A handle on the shared [`Core`]: a durable database's checkpointer
/// thread holds a second one (see [`Options::checkpoint_every`]).
///
/// ```
/// use multiverse::{Database, Isolation, Key, Options, TableSpec};
///
/// let db = Database::new(Options::default()).unwrap();
/// let t = db.create_table(TableSpec::hash("counters", 64)).unwrap();
/// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(0), &0u64.to_le_bytes())).unwrap();
/// // One database, shared by reference between threads (it is Sync).
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             for _ in 0..25 {
///                 db.run(Isolation::Serializable, |x| {
///                     x.update_with(t, &Key::from(0), |old, new| {
///                         let n = u64::from_le_bytes(old.try_into().unwrap());
///                         new.extend_from_slice(&(n + 1).to_le_bytes());
///                     })
///                 })
///                 .unwrap();
///             }
///         });
///     }
/// });
/// let v = db.run(Isolation::Snapshot, |x| x.get(t, &Key::from(0))).unwrap().unwrap();
/// assert_eq!(u64::from_le_bytes(v.try_into().unwrap()), 100);
/// ```
pub struct Database {
    pub(crate) core: std::sync::Arc<Core>,
    /// The application's handle, whose drop stops the checkpointer (the
    /// checkpointer's own handle is not the owner).
    pub(crate) owner: bool,
}

impl std::ops::Deref for Database {
    type Target = Core;
    #[inline]
    fn deref(&self) -> &Core {
        &self.core
    }
}

/// The state of a database, shared by its handles: what every protocol
/// shares ([`Shared`], reached through `Deref`), and the protocol's own
/// global state.
#[doc(hidden)]
pub struct Core {
    /// The sets of each slot's transaction.
    pub(crate) sets: protocol::sets::SlotSets,
    /// The protocol family's own state.
    pub(crate) globals: protocol::family::Globals,
    /// What every protocol shares. Declared before `durable`: its log
    /// closes before the directory's lock is released.
    pub(crate) shared: Shared,
    /// The data directory and the checkpointer (durable databases only).
    pub(crate) durable: Option<Durable>,
}

impl Core {
    /// POMVCC's timestamp manager (pomvcc databases only).
    #[inline]
    pub(crate) fn po(&self) -> Option<&protocol::mv::pomvcc::TsManager> {
        self.globals.mv().and_then(|g| g.po.as_ref())
    }
}

impl std::ops::Deref for Core {
    type Target = Shared;
    #[inline]
    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl Database {
    /// Opens an empty in-memory database.
    ///
    /// ```
    /// use multiverse::{Database, Durability, Options, Protocol};
    ///
    /// let db = Database::new(Options { protocol: Protocol::Silo, ..Options::default() }).unwrap();
    /// assert_eq!(db.protocol(), Protocol::Silo);
    /// // A durable database is opened with `Database::open` or `Database::open_with`.
    /// assert!(Database::new(Options { durability: Durability::Sync, ..Options::default() }).is_err());
    /// ```
    pub fn new(opts: Options) -> Result<Database> {
        if opts.durability != Durability::None || opts.data_dir.is_some() {
            return Err(Error::InvalidArgument(
                "a durable database (durability or data_dir set) is opened with Database::open_with".into(),
            ));
        }
        Database::new_unlogged(opts)
    }

    pub(crate) fn new_unlogged(opts: Options) -> Result<Database> {
        if opts.max_transactions == 0 || opts.max_transactions > txn::table::MAX_SLOTS {
            return Err(Error::InvalidArgument(format!(
                "max_transactions must be between 1 and {}",
                txn::table::MAX_SLOTS
            )));
        }
        if !matches!(opts.ssn_base, Isolation::ReadCommitted | Isolation::Snapshot) {
            return Err(Error::InvalidArgument(format!(
                "SSN certifies read committed or snapshot isolation, not {}",
                opts.ssn_base
            )));
        }
        if opts.max_value_size > u32::MAX as usize {
            return Err(Error::InvalidArgument("max_value_size must fit in 32 bits".into()));
        }
        Ok(Database { core: std::sync::Arc::new(Core::new(opts)), owner: true })
    }
}

impl Core {
    fn new(opts: Options) -> Core {
        let core = Core {
            sets: protocol::sets::SlotSets::new(TxnTable::slots_for(opts.max_transactions)),
            globals: protocol::family::Globals::new(&opts),
            shared: Shared::new(opts),
            durable: None,
        };
        if let (Some(store), Some(b)) = (core.globals.bohm(), &core.shared.budget) {
            store.set_budget(b.clone());
        }
        core
    }
}

impl Database {
    /// The options the database was opened with.
    ///
    /// ```
    /// use multiverse::{Database, Options};
    /// use std::time::Duration;
    ///
    /// let db = Database::new(Options { lock_timeout: Duration::from_millis(5), ..Options::default() }).unwrap();
    /// assert_eq!(db.options().lock_timeout, Duration::from_millis(5));
    /// ```
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// The protocol in use.
    ///
    /// ```
    /// use multiverse::{Database, Options, Protocol};
    ///
    /// for p in [Protocol::MvOcc, Protocol::Ssn, Protocol::Bohm] {
    ///     assert_eq!(Database::new(Options { protocol: p, ..Options::default() }).unwrap().protocol(), p);
    /// }
    /// ```
    pub fn protocol(&self) -> Protocol {
        self.opts.protocol
    }

    /// Creates a table.
    ///
    /// ```
    /// use multiverse::{Database, Error, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("orders")).unwrap();
    /// assert_eq!(db.table("orders").unwrap(), t);
    /// assert_eq!(db.create_table(TableSpec::ordered("orders")), Err(Error::TableExists("orders".into())));
    /// ```
    pub fn create_table<S: TableKind>(&self, spec: S) -> Result<S::Handle> {
        self.create_spec(spec.into_spec()).map(S::handle)
    }

    /// [`Database::create_table`] of a plain declaration.
    pub(crate) fn create_spec(&self, spec: TableSpec) -> Result<TableId> {
        let mut names = self.names.lock();
        if names.contains_key(&spec.name) {
            return Err(Error::TableExists(spec.name.clone()));
        }
        let id = names.len() as u32;
        if id as usize >= MAX_TABLES {
            return Err(Error::InvalidArgument(format!("a database holds at most {MAX_TABLES} tables")));
        }
        let mut t = Table::new(
            id,
            &spec,
            self.opts.protocol.uses_key_locks(),
            self.globals.keeps_ssn_words(),
            self.opts.ordered_map,
        )?;
        t.budget = self.budget.clone();
        if self.tables[id as usize].set(t).is_err() {
            unreachable!("table ids are handed out under the names lock");
        }
        names.insert(spec.name.clone(), id);
        drop(names);
        if let Some(log) = &self.log {
            log.set_tables(&self.table_list())?;
        }
        Ok(self.tid(id))
    }

    /// Looks a table up by name.
    ///
    /// ```
    /// use multiverse::{Database, Error, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("users", 64)).unwrap();
    /// assert_eq!(db.table("users").unwrap(), t);
    /// assert!(matches!(db.table("nobody"), Err(Error::UnknownTable(_))));
    /// ```
    pub fn table(&self, name: &str) -> Result<TableId> {
        self.names.lock().get(name).map(|&i| self.tid(i)).ok_or_else(|| Error::UnknownTable(name.to_string()))
    }

    /// The names of all tables, in creation order.
    ///
    /// ```
    /// use multiverse::{Database, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// db.create_table(TableSpec::ordered("b")).unwrap();
    /// db.create_table(TableSpec::ordered("a")).unwrap();
    /// assert_eq!(db.table_names(), ["b", "a"]);
    /// ```
    pub fn table_names(&self) -> Vec<String> {
        let mut v: Vec<_> = self.names.lock().iter().map(|(n, &i)| (i, n.clone())).collect();
        v.sort();
        v.into_iter().map(|(_, n)| n).collect()
    }

    /// Looks an index of a table up by name (`"primary"` is the primary index).
    ///
    /// ```
    /// use multiverse::{Database, Error, IndexKind, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let spec = TableSpec::hash("t", 64).secondary("by_len", IndexKind::Ordered, |_, v| Key::from(v.len() as u64));
    /// let t = db.create_table(spec).unwrap();
    /// assert_eq!(db.index(t, "primary").unwrap(), db.primary(t));
    /// assert_ne!(db.index(t, "by_len").unwrap(), db.primary(t));
    /// assert!(matches!(db.index(t, "nope"), Err(Error::UnknownIndex(_))));
    /// ```
    pub fn index(&self, table: impl Into<TableId>, name: &str) -> Result<IndexId> {
        let table = table.into();
        let t = self.table_ref(table)?;
        t.indexes
            .iter()
            .position(|ix| ix.name == name)
            .map(|i| IndexId { table: table.0, index: i as u8, db: table.1 })
            .ok_or_else(|| Error::UnknownIndex(format!("{}.{name}", t.name)))
    }

    /// The primary index of a table.
    ///
    /// ```
    /// use multiverse::{Database, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::ordered("t")).unwrap();
    /// let ix = db.primary(t);
    /// assert_eq!(ix.table(), t);
    /// assert_eq!(db.index(t, "primary").unwrap(), ix);
    /// ```
    pub fn primary(&self, table: impl Into<TableId>) -> IndexId {
        IndexId::from(table.into())
    }

    /// Begins a transaction at `isolation`.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let mut x = db.begin(Isolation::Serializable).unwrap();
    /// x.insert(t, Key::from(1), b"one").unwrap();
    /// assert_eq!(x.get(t, &Key::from(1)).unwrap().as_deref(), Some(&b"one"[..]));
    /// x.commit().unwrap();
    /// ```
    pub fn begin(&self, isolation: Isolation) -> Result<Transaction<'_>> {
        self.begin_with(TxnOptions::new(isolation))
    }

    /// Begins a transaction with options.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec, TxnOptions};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let read_only = TxnOptions { read_only: true, ..TxnOptions::new(Isolation::Snapshot) };
    /// let mut x = db.begin_with(read_only).unwrap();
    /// assert_eq!(x.get(t, &Key::from(1)).unwrap(), None);
    /// assert!(x.insert(t, Key::from(1), b"v").is_err()); // writes are refused
    /// ```
    pub fn begin_with(&self, o: TxnOptions<'_>) -> Result<Transaction<'_>> {
        // Fail-stop: a database whose log failed begins nothing (`wal::log`).
        self.check_log()?;
        if !self.opts.protocol.isolation_levels().contains(&o.isolation) {
            return Err(Error::InvalidIsolation {
                protocol: self.opts.protocol.name().to_string(),
                isolation: o.isolation.name().to_string(),
            });
        }
        if !self.opts.protocol.runs_mode(o.mode) {
            let mode = if o.mode == Mode::Optimistic { "optimistic" } else { "pessimistic" };
            return Err(Error::InvalidArgument(format!(
                "protocol {} does not run {mode} transactions (mv-mixed and pomvcc run both)",
                self.opts.protocol
            )));
        }
        Transaction::begin(&self.globals, &self.shared, &self.sets, o)
    }

    /// Runs `f` in a transaction at `isolation`, committing at the end and
    /// retrying transient aborts with the default [`RetryPolicy`].
    ///
    /// `f` may take its time (wait for I/O, sleep): no epoch pin is held
    /// across it, only inside each operation, so it holds back no
    /// database's reclamation (see [`Database::pin`]). An open transaction
    /// still keeps the versions it may read, in its own database.
    ///
    /// ```
    /// use multiverse::{Database, Error, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// // The closure's result is returned once the transaction commits.
    /// let n = db.run(Isolation::Serializable, |x| {
    ///     x.insert(t, Key::from(1), b"a")?;
    ///     Ok(1)
    /// })
    /// .unwrap();
    /// assert_eq!(n, 1);
    /// // An error that a retry cannot cure rolls back and returns at once.
    /// let r = db.run(Isolation::Serializable, |x| {
    ///     x.insert(t, Key::from(2), b"b")?;
    ///     x.insert(t, Key::from(1), b"again")
    /// });
    /// assert_eq!(r, Err(Error::DuplicateKey));
    /// assert_eq!(db.run(Isolation::Snapshot, |x| x.get(t, &Key::from(2))).unwrap(), None);
    /// ```
    pub fn run<R>(&self, isolation: Isolation, f: impl FnMut(&mut Transaction<'_>) -> Result<R>) -> Result<R> {
        self.run_with(TxnOptions::new(isolation), RetryPolicy::default(), f)
    }

    /// Like [`Database::run`] with explicit options and retry policy. Returns
    /// the last error when the attempts are exhausted; non-transient errors
    /// (a duplicate key, say) are returned at once after rolling back.
    ///
    /// ```
    /// use multiverse::{AbortReason, Database, Error, Isolation, Options, RetryPolicy, TxnOptions};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let policy = RetryPolicy { max_attempts: 3, ..RetryPolicy::default() };
    /// let mut tries = 0;
    /// let r: multiverse::Result<()> = db.run_with(TxnOptions::new(Isolation::Serializable), policy, |_| {
    ///     tries += 1;
    ///     Err(Error::Aborted(AbortReason::WriteConflict)) // transient: retried
    /// });
    /// assert_eq!((tries, r), (3, Err(Error::Aborted(AbortReason::WriteConflict))));
    /// ```
    pub fn run_with<R>(
        &self,
        o: TxnOptions<'_>,
        policy: RetryPolicy,
        mut f: impl FnMut(&mut Transaction<'_>) -> Result<R>,
    ) -> Result<R> {
        let mut backoff = policy.initial_backoff;
        let mut attempt = 0;
        let mut o = o;
        loop {
            attempt += 1;
            // No epoch pin over `f`, which may wait: the pin is process-wide
            // and would stop every database's frees (see `Database::pin`).
            let mut t = self.begin_with(o)?;
            let r = match f(&mut t) {
                Ok(r) => t.commit().map(|_| r),
                Err(e) => {
                    drop(t); // rolls back if still active
                    Err(e)
                }
            };
            match r {
                Ok(r) => return Ok(r),
                // SSN's safe retry (section 3.2): the committed transaction
                // that violated the exclusion window cannot do it again to a
                // retry begun now, which reads its versions: no backoff.
                Err(Error::Aborted(AbortReason::ExclusionWindow)) if attempt < policy.max_attempts => {}
                Err(e) if e.is_transient() && attempt < policy.max_attempts => {
                    if let Error::MemoryLimit { .. } = e {
                        // Writes resume once old versions are freed: free
                        // what no open transaction can see before waiting.
                        self.collect_garbage();
                    }
                    o.after = self.retry_after().or(o.after);
                    // Jittered exponential backoff, seeded cheaply per attempt.
                    let jitter = (attempt as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54;
                    let d = backoff.as_nanos() as u64;
                    std::thread::sleep(Duration::from_nanos(d / 2 + jitter % (d / 2 + 1)));
                    backoff = (backoff * 2).min(policy.max_backoff);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Counters since the database was opened.
    ///
    /// ```
    /// use multiverse::{AbortReason, Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
    /// db.begin(Isolation::Serializable).unwrap().abort();
    /// let s = db.stats();
    /// assert_eq!((s.committed, s.aborted()), (1, 1));
    /// assert_eq!(s.aborts[AbortReason::User], 1);
    /// assert_eq!(s.open_transactions, 0);
    /// ```
    pub fn stats(&self) -> Stats {
        let (mut committed, mut aborts, created, freed) = self.txns.totals();
        let ssn_untracked_reads = self.globals.mv().map_or(0, |g| g.ssn_slots.untracked());
        // Relaxed: statistics only.
        let freed = freed + self.versions_freed.load(Ordering::Relaxed);
        let mut versions_alive = created.saturating_sub(freed);
        if let Some(b) = self.globals.bohm() {
            let (c, a, alive) = b.totals();
            committed += c;
            for (x, y) in aborts.iter_mut().zip(a) {
                *x += y;
            }
            versions_alive += alive;
        }
        Stats {
            committed,
            aborts,
            versions_alive,
            garbage_pending: self.gc.pending() as u64,
            garbage_unfreed: self.gc.unfreed() as u64,
            open_transactions: self.txns.open_count() as u64,
            ssn_untracked_reads,
            timestamp_increments: self.timestamp_increments(),
            // Relaxed: statistics only.
            log_bytes: self.log.as_ref().map_or(0, |l| l.stats().bytes.load(Ordering::Relaxed)),
            log_records: self.log.as_ref().map_or(0, |l| l.stats().records.load(Ordering::Relaxed)),
            log_syncs: self.log.as_ref().map_or(0, |l| l.stats().syncs.load(Ordering::Relaxed)),
            checkpoints: self.durable.as_ref().map_or(0, |d| d.checkpoints.load(Ordering::Relaxed)),
            memory_used: self.budget.as_ref().map_or(0, |b| b.used()),
            memory_limit: self.budget.as_ref().map(|b| b.limit()),
        }
    }

    /// See [`Stats::timestamp_increments`]: derived from the counters
    /// themselves (CTs starts at 1, the clock at 2 and steps by 2).
    fn timestamp_increments(&self) -> u64 {
        self.globals.timestamp_increments(&self.shared)
    }

    /// Makes every commit that has finished visible to the transactions that
    /// begin from now on, and returns a timestamp that covers them (for
    /// [`TxnOptions::after`]). Under POMVCC a commit is visible only once BTs
    /// passes its timestamp (section IV.C): this closes the open commit
    /// timestamp and waits until every transaction at it has finished
    /// (they are committing: a short wait). Loaders and consistency checks
    /// call it between phases. A no-op under the other protocols.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, Protocol, TableSpec};
    ///
    /// let db = Database::new(Options { protocol: Protocol::Pomvcc, ..Options::default() }).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Snapshot, |x| x.insert(t, Key::from(1), b"v")).unwrap();
    /// assert!(db.sync_commits().unwrap().is_some());
    /// // Every transaction that begins from now on sees the commit.
    /// assert!(db.run(Isolation::Snapshot, |x| x.get(t, &Key::from(1))).unwrap().is_some());
    /// // A no-op under the other protocols.
    /// assert_eq!(Database::new(Options::default()).unwrap().sync_commits().unwrap(), None);
    /// ```
    pub fn sync_commits(&self) -> Result<Option<u64>> {
        let Some(after) = self.retry_after() else { return Ok(None) };
        let isolation = self.opts.protocol.strongest();
        self.begin_with(TxnOptions { after: Some(after), read_only: true, ..TxnOptions::new(isolation) })?.commit()?;
        Ok(Some(after))
    }

    /// POMVCC: the timestamp a transaction retried after an abort should
    /// begin after ([`TxnOptions::after`]) — the commit timestamp now open,
    /// which covers every commit that preceded the abort, so the retry does
    /// not meet the same conflict (section VI.C: "the user gives the CTs
    /// during the begin phase during the retry process"). `None` under the
    /// other protocols, whose transactions see every earlier commit anyway.
    ///
    /// ```
    /// use multiverse::{Database, Options, Protocol};
    ///
    /// let po = Database::new(Options { protocol: Protocol::Pomvcc, ..Options::default() }).unwrap();
    /// assert!(po.retry_after().is_some());
    /// assert_eq!(Database::new(Options::default()).unwrap().retry_after(), None);
    /// ```
    pub fn retry_after(&self) -> Option<u64> {
        self.po().map(|po| protocol::mv::pomvcc::stamp(po.cts()))
    }

    /// The GC watermark: no open or future transaction reads before it
    /// (each family knows its own bound).
    pub(crate) fn watermark(&self) -> u64 {
        self.globals.watermark(&self.shared)
    }

    /// Reclaims every version no open or future transaction can see; returns
    /// how many were reclaimed. Garbage collection also runs cooperatively as
    /// transactions commit, so calling this is never required.
    ///
    /// It also carries on a hash index's growth left under way when inserts
    /// stopped (for at most 20 ms per index): a growth advances with the
    /// index's inserts, and until it ends lookups walk past rows of other
    /// buckets. After a bulk load into a hash table that outgrew its
    /// declared size, a call or two gives lookups their full speed.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"0")).unwrap();
    /// for v in [b"1", b"2", b"3"] {
    ///     db.run(Isolation::Serializable, |x| x.update(t, &Key::from(1), v)).unwrap();
    /// }
    /// // Old versions go; the one every new transaction reads stays.
    /// db.collect_garbage();
    /// assert_eq!(db.run(Isolation::Snapshot, |x| x.get(t, &Key::from(1))).unwrap().as_deref(), Some(&b"3"[..]));
    /// ```
    pub fn collect_garbage(&self) -> usize {
        self.globals.before_collect();
        let w = self.watermark();
        let mut n = 0;
        for s in 0..self.gc.shards() {
            n += self.gc.collect(s, w, usize::MAX, |t| self.table_by_id(t));
        }
        // Frees what was unlinked now, unless a thread is pinned.
        self.gc.settle();
        // A hash index's growth moves with its inserts; one left half done
        // when they stopped (a bulk load) is carried on here, a bounded
        // while per index.
        for t in self.tables.iter().filter_map(|t| t.get()) {
            t.advance_growth(GROWTH_STEP);
        }
        // Relaxed: statistics only.
        self.versions_freed.fetch_add(n as u64, Ordering::Relaxed);
        n
    }

    /// Switches history recording on or off for transactions that begin
    /// from now on (for example after loading, so the load is not recorded).
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options { record_history: true, ..Options::default() }).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.set_recording(false);
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"loaded")).unwrap();
    /// db.set_recording(true);
    /// db.run(Isolation::Serializable, |x| x.get(t, &Key::from(1))).unwrap();
    /// assert_eq!(db.take_history().txns.len(), 1); // the load is not recorded
    /// ```
    pub fn set_recording(&self, on: bool) {
        self.globals.before_recording();
        // Relaxed: a switch read once per transaction; no data depends on it.
        self.recording.store(on, Ordering::Relaxed);
    }

    /// True if transactions that begin now record their history.
    ///
    /// ```
    /// use multiverse::{Database, Options};
    ///
    /// let db = Database::new(Options { record_history: true, ..Options::default() }).unwrap();
    /// assert!(db.is_recording());
    /// db.set_recording(false);
    /// assert!(!db.is_recording());
    /// assert!(!Database::new(Options::default()).unwrap().is_recording());
    /// ```
    pub fn is_recording(&self) -> bool {
        self.recording()
    }

    /// Takes the history recorded so far (empty unless
    /// [`Options::record_history`] is on); recording goes on.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options { record_history: true, ..Options::default() }).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
    /// assert_eq!(db.take_history().txns.len(), 1);
    /// assert!(db.take_history().txns.is_empty()); // taken
    /// ```
    pub fn take_history(&self) -> history::History {
        history::History { txns: std::mem::take(&mut *self.history.lock()) }
    }

    /// The current value of the timestamp counter.
    ///
    /// ```
    /// use multiverse::{Database, Isolation, Key, Options, TableSpec};
    ///
    /// let db = Database::new(Options::default()).unwrap();
    /// let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// let before = db.clock();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
    /// assert!(db.clock() > before); // the commit drew an end timestamp
    /// ```
    pub fn clock(&self) -> u64 {
        // Relaxed: an informational snapshot.
        self.clock.load(Ordering::Relaxed)
    }
}

impl Database {
    /// Makes every commit so far durable (a no-op without durability).
    ///
    /// ```
    /// use multiverse::{Database, Durability, Isolation, Key, Options, TableSpec};
    ///
    /// # let tmp = tempfile::tempdir().unwrap();
    /// let opts = Options { durability: Durability::Async, data_dir: Some(tmp.path().into()), ..Options::default() };
    /// let (db, _) = Database::open_with(opts, |db| db.create_table(TableSpec::hash("t", 64)).map(drop)).unwrap();
    /// let t = db.table("t").unwrap();
    /// db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), b"v")).unwrap();
    /// db.flush_log().unwrap(); // the async commit above is now on disk
    /// assert!(db.stats().log_records >= 1);
    /// // A no-op in memory.
    /// Database::new(Options::default()).unwrap().flush_log().unwrap();
    /// ```
    pub fn flush_log(&self) -> Result<()> {
        match &self.log {
            Some(log) => log.flush(),
            None => Ok(()),
        }
    }

    /// The durability of this database.
    ///
    /// ```
    /// use multiverse::{Database, Durability, Options};
    ///
    /// assert_eq!(Database::new(Options::default()).unwrap().durability(), Durability::None);
    /// ```
    pub fn durability(&self) -> Durability {
        self.log.as_ref().map_or(Durability::None, |l| l.mode())
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if self.owner {
            if let Some(d) = &self.durable {
                d.stop_checkpointer();
            }
        }
    }
}

// SAFETY: all shared state is atomics, locks, or immutable after publication.
unsafe impl Sync for Database {}
// SAFETY: as above.
unsafe impl Send for Database {}
