//! Where a workload's rows live: a [`Store`].
//!
//! A workload sets up its schema, loads its rows and checks them through
//! this trait, and its transaction bodies run on the store's transactions
//! through [`Txn`]; so one workload runs unchanged on a Multiverse
//! [`Database`] (every protocol) and on the other embedded stores that the
//! crate `multiverse-peers` adapts (SurrealMX, RocksDB, fjall, redb,
//! SQLite). Everything is statically dispatched: a Multiverse run
//! compiles to the same code as before the trait existed (its
//! [`Store::run_txn`] is [`run_txn`]).
//!
//! ```
//! use multiverse::{Database, Options};
//! use multiverse_workloads::{load_parallel, ycsb::{Ycsb, YcsbConfig}, Store, Workload};
//!
//! let db = Database::new(Options::default()).unwrap();
//! let w = Ycsb::setup(&db, YcsbConfig { rows: 100, ..YcsbConfig::default() }).unwrap();
//! load_parallel(&db, &w, 1).unwrap();
//! assert!(w.check_consistency(&db).is_ok());
//! // Any store: the rows a loader wrote, read back in a checking transaction.
//! fn count<S: Store>(s: &S, w: &Ycsb) -> u64 {
//!     let mut n = 0;
//!     s.check_txn(|t| {
//!         n = 0;
//!         multiverse_workloads::Txn::scan(t, s.primary(w.table()), .., None, |_, _| {
//!             n += 1;
//!             true
//!         })
//!     })
//!     .unwrap();
//!     n
//! }
//! assert_eq!(count(&db, &w), 100);
//! ```

use crate::{run_txn_with, AbortCounts, Retry, Txn, TxnError, Worker};
use multiverse::{Database, IndexId, Result, TableId, TableSpec, TxnOptions};

/// A store's transaction, as the workloads' loaders and checkers use it:
/// the record operations of [`Txn`], and a commit.
pub trait StoreTxn: Txn {
    /// Commits the transaction.
    fn commit(self) -> Result<()>;
}

impl StoreTxn for multiverse::Transaction<'_> {
    #[inline]
    fn commit(self) -> Result<()> {
        multiverse::Transaction::commit(self).map(drop)
    }
}

/// A transactional key-value store that hosts the workloads (module docs).
pub trait Store: Sync {
    /// A transaction of the store.
    type Tx<'s>: StoreTxn
    where
        Self: 's;

    /// Creates a table (schema set-up, before the load); names are unique.
    fn create_table(&self, spec: impl Into<TableSpec>) -> Result<TableId>;
    /// The secondary index `name` of `table`.
    fn index(&self, table: TableId, name: &str) -> Result<IndexId>;
    /// The primary index of `table`.
    fn primary(&self, table: TableId) -> IndexId;

    /// Runs `f` in one read-write transaction of a loader, retrying
    /// transient aborts, until it commits. Loaders insert disjoint rows, so
    /// the weakest level the store offers serves.
    fn load_txn<R>(&self, f: impl FnMut(&mut Self::Tx<'_>) -> Result<R>) -> Result<R>;

    /// Begins a read-only transaction that checks a workload's invariants
    /// after a run: at snapshot isolation where the store offers it, else
    /// at its strongest level. The caller commits it.
    fn begin_check(&self) -> Result<Self::Tx<'_>>;

    /// Runs `f` in a checking transaction ([`Store::begin_check`]) and
    /// commits it, retrying transient aborts.
    fn check_txn<R>(&self, mut f: impl FnMut(&mut Self::Tx<'_>) -> Result<R>) -> Result<R> {
        loop {
            let mut t = self.begin_check()?;
            let r = f(&mut t).and_then(|r| t.commit().map(|()| r));
            match r {
                Err(e) if e.is_transient() => continue,
                r => return r,
            }
        }
    }

    /// Runs the worker's current transaction, retrying transient aborts
    /// with the same inputs as `retry` says and counting them; see
    /// [`run_txn_with`], which is this for a Multiverse [`Database`].
    fn run_txn<W: Worker>(
        &self,
        w: &mut W,
        opts: TxnOptions<'static>,
        retry: Retry,
        aborts: &mut AbortCounts,
    ) -> std::result::Result<bool, TxnError>;

    /// Increments of the store's commit-timestamp counter so far, where it
    /// counts them (a Multiverse database); 0 otherwise.
    fn timestamp_increments(&self) -> u64 {
        0
    }
}

impl Store for Database {
    type Tx<'s> = multiverse::Transaction<'s>;

    #[inline]
    fn create_table(&self, spec: impl Into<TableSpec>) -> Result<TableId> {
        Database::create_table(self, spec.into())
    }
    #[inline]
    fn index(&self, table: TableId, name: &str) -> Result<IndexId> {
        Database::index(self, table, name)
    }
    #[inline]
    fn primary(&self, table: TableId) -> IndexId {
        Database::primary(self, table)
    }
    fn load_txn<R>(&self, f: impl FnMut(&mut Self::Tx<'_>) -> Result<R>) -> Result<R> {
        // Until it commits, as the trait promises: `Database::run` gives up
        // after 100 attempts, and eight loaders on two busy cores (1V's
        // lock-table words are shared by unrelated keys) can time out more
        // often than that.
        let forever = multiverse::RetryPolicy { max_attempts: u32::MAX, ..multiverse::RetryPolicy::default() };
        self.run_with(TxnOptions::new(crate::load_isolation(self)), forever, f)
    }
    fn begin_check(&self) -> Result<Self::Tx<'_>> {
        self.begin_with(TxnOptions { read_only: true, ..TxnOptions::new(crate::check_isolation(self)) })
    }
    fn check_txn<R>(&self, f: impl FnMut(&mut Self::Tx<'_>) -> Result<R>) -> Result<R> {
        // `Database::run_with` retries; read-only, as `begin_check`.
        let opts = TxnOptions { read_only: true, ..TxnOptions::new(crate::check_isolation(self)) };
        self.run_with(opts, multiverse::RetryPolicy::default(), f)
    }
    #[inline]
    fn run_txn<W: Worker>(
        &self,
        w: &mut W,
        opts: TxnOptions<'static>,
        retry: Retry,
        aborts: &mut AbortCounts,
    ) -> std::result::Result<bool, TxnError> {
        run_txn_with(self, w, opts, retry, aborts)
    }
    fn timestamp_increments(&self) -> u64 {
        self.stats().timestamp_increments
    }
}

/// [`Store::run_txn`] for a store whose transactions begin with `begin`:
/// runs the worker's current transaction, retrying transient aborts with
/// the same inputs as `retry` says (spinning a little longer after each, as
/// [`run_txn_with`] does) and counting them by reason. `Ok(false)`: the
/// workload rolled the transaction back ([`TxnError::Rollback`]), or it
/// aborted under [`Retry::Never`].
pub fn run_attempts<T: StoreTxn, W: Worker>(
    mut begin: impl FnMut() -> Result<T>,
    w: &mut W,
    retry: Retry,
    aborts: &mut AbortCounts,
) -> std::result::Result<bool, TxnError> {
    let (mut spins, mut last) = (0u32, None);
    loop {
        let mut t = begin()?;
        let r = match w.execute(&mut t) {
            Ok(()) => t.commit().map_err(TxnError::Engine),
            Err(e) => {
                drop(t); // rolls back
                Err(e)
            }
        };
        match r {
            Ok(()) => {
                w.committed();
                return Ok(true);
            }
            Err(TxnError::Rollback) => {
                aborts.add(multiverse::AbortReason::User);
                return Ok(false);
            }
            Err(TxnError::Engine(e)) if e.is_transient() => {
                aborts.add_attempt(e.abort_reason().expect("transient errors are aborts"), &mut last);
                if retry == Retry::Never {
                    return Ok(false);
                }
                crate::backoff(&mut spins);
            }
            Err(e) => return Err(e),
        }
    }
}
