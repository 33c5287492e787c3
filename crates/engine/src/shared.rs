//! [`Shared`]: the protocol-neutral state every transaction reaches, below
//! the protocol families: the options, Hekaton's global clock (section
//! 2.4), the transaction table, the tables, the garbage queues, the redo
//! log, the commit freeze and the recorded history. It names no protocol:
//! a family's own global state (Silo's epoch, SSN's published words,
//! BOHM's store, POMVCC's timestamps) is its own, beside this in the
//! database (`db`), and a transaction is handed both at begin.

use crate::gc::Gc;
use crate::history;
use crate::memory::Budget;
use crate::obs::Metrics;
use crate::options::{Durability, Options, MAX_TABLES};
use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::table::Table;
use crate::txn::{freeze::Freeze, table::TxnTable};
use crate::wal::format::TableEntry;
use crate::wal::log::Log;
use crate::{Error, Result, TableId};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// The state of a database that every protocol shares, reached from a
/// [`Database`](crate::Database) through `Deref` (by way of
/// `research::Core`). Its fields are the engine's own.
pub struct Shared {
    pub(crate) opts: Options,
    /// This database's tag, in every handle it gives out ([`TableId`]).
    pub(crate) tag: crate::handle::DbTag,
    /// The global timestamp counter (section 2.4). Holds the next even stamp.
    pub(crate) clock: CachePadded<AtomicU64>,
    pub(crate) txns: TxnTable,
    pub(crate) tables: Box<[OnceLock<Table>]>,
    pub(crate) names: Mutex<HashMap<String, u32>>,
    pub(crate) gc: Gc,
    /// The memory budget, with [`Options::memory_limit`] (see `memory`).
    pub(crate) budget: Option<Arc<Budget>>,
    /// Versions reclaimed by `collect_garbage` (transactions count their own per slot).
    pub(crate) versions_freed: CachePadded<AtomicU64>,
    /// Finished transactions, when recording.
    pub(crate) history: Mutex<Vec<history::TxnRecord>>,
    /// Whether transactions that begin now record their history.
    pub(crate) recording: AtomicBool,
    /// The redo log (durable databases only).
    pub(crate) log: Option<Log>,
    /// The commit freeze of single-version checkpoints.
    pub(crate) freeze: Freeze,
    /// Metric handles (the `metrics` feature; zero-sized without it).
    pub(crate) obs: Metrics,
}

impl Shared {
    pub(crate) fn new(opts: Options) -> Shared {
        let budget = opts.memory_limit.map(|l| Arc::new(Budget::new(l)));
        let obs = Metrics::new(opts.protocol.name());
        Shared {
            tag: crate::handle::next_db_tag(),
            txns: TxnTable::new(opts.max_transactions),
            recording: AtomicBool::new(opts.record_history),
            clock: CachePadded::new(AtomicU64::new(2)),
            tables: (0..MAX_TABLES).map(|_| OnceLock::new()).collect(),
            names: Mutex::new(HashMap::new()),
            gc: Gc::new(budget.clone(), obs.clone()),
            budget,
            versions_freed: CachePadded::new(AtomicU64::new(0)),
            history: Mutex::new(Vec::new()),
            log: None,
            freeze: Default::default(),
            obs,
            opts,
        }
    }

    /// The tables' ids, names and descriptors, in creation order: what
    /// the headers of checkpoints and log files name.
    pub(crate) fn table_list(&self) -> Vec<TableEntry> {
        let mut v: Vec<_> = self
            .names
            .lock()
            .iter()
            .map(|(n, &i)| TableEntry { id: i, name: n.clone(), desc: Some(self.table_by_id(i).desc()) })
            .collect();
        v.sort_by_key(|t| t.id);
        v
    }

    /// The handle of this database's table number `n`.
    #[inline]
    pub(crate) fn tid(&self, n: u32) -> TableId {
        TableId(n, self.tag)
    }

    /// The table a handle names: a handle of another database (or of none,
    /// [`TableId::from_raw`]) is [`Error::ForeignHandle`].
    #[inline]
    pub(crate) fn table_ref(&self, t: TableId) -> Result<&Table> {
        if t.1 != self.tag {
            return Err(self.foreign(t));
        }
        self.tables.get(t.0 as usize).and_then(|c| c.get()).ok_or_else(|| Error::UnknownTable(format!("#{}", t.0)))
    }

    #[cold]
    fn foreign(&self, t: TableId) -> Error {
        Error::ForeignHandle(if t.1 == 0 {
            format!("table #{} is a handle of no database (TableId::from_raw)", t.0)
        } else {
            format!("table #{} is a handle of another database", t.0)
        })
    }

    #[inline]
    pub(crate) fn table_by_id(&self, t: u32) -> &Table {
        self.tables[t as usize].get().expect("tables referenced by versions exist")
    }

    pub(crate) fn record(&self, r: history::TxnRecord) {
        self.history.lock().push(r);
    }

    /// True if transactions that begin now record their history.
    #[inline]
    pub(crate) fn recording(&self) -> bool {
        // Relaxed: a switch read once per transaction; no data depends on it.
        self.recording.load(Ordering::Relaxed)
    }

    /// Fail-stop (`wal::log`): `Err(Error::LogFailed)` once the log has
    /// failed; every begin and commit asks. One load when durable, none
    /// otherwise.
    #[inline]
    pub(crate) fn check_log(&self) -> Result<()> {
        match &self.log {
            Some(log) => log.check(),
            None => Ok(()),
        }
    }

    /// Under sync durability, a transaction that wrote nothing commits:
    /// waits until whatever it read is durable (see `wal::log`, "Durable
    /// visibility"). Fails with [`Error::LogFailed`] if that cannot be.
    #[inline]
    pub(crate) fn wait_visible(&self) -> Result<()> {
        match &self.log {
            Some(log) if log.mode() == Durability::Sync => log.wait_visible(),
            _ => Ok(()),
        }
    }

    /// Under sync durability, waits until the record of a commit (appended
    /// in log epoch `epoch`, if it wrote anything) is durable; fails with
    /// [`Error::LogFailed`] if the log failed first.
    pub(crate) fn wait_durable(&self, epoch: Option<u64>) -> Result<()> {
        match (&self.log, epoch) {
            (Some(log), Some(epoch)) if log.mode() == Durability::Sync => log.wait_durable(epoch),
            _ => Ok(()),
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // No transaction can be open (they borrow the database). Every version
        // still allocated is linked into its table's primary index, except
        // those already unlinked and handed to the epoch collector.
        for t in self.tables.iter().filter_map(|t| t.get()) {
            let mut all = Vec::new();
            t.for_each_version(|v| all.push(v));
            for v in all {
                // SAFETY: we have exclusive access; each linked version is
                // reached exactly once through the primary index.
                unsafe { crate::storage::version::Version::free(v) };
            }
        }
    }
}
