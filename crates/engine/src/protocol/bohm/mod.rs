//! BOHM: Faleiro and Abadi, *Rethinking serializable multiversion
//! concurrency control* (VLDB 2015), section 3 — batched, pre-ordered
//! multi-version execution.
//!
//! A transaction is submitted whole: its access declaration
//! ([`crate::AccessSet`]) and its logic (a [`Procedure`]). Three kinds of
//! threads process it, one after the other:
//!
//! 1. **The sequencer** (section 3.2.1): one thread appends transactions to
//!    a log in memory. A transaction's position in the log is its timestamp
//!    `ts` — no shared counter is touched per transaction. The log is cut
//!    into batches (section 3.2.4).
//! 2. **Concurrency-control threads** (sections 3.2.2–3.2.3), each owning a
//!    partition of the records (by key hash). For every transaction of a
//!    batch, in log order, each thread inserts a **placeholder version** for
//!    every record of the write set in its partition — begin = `ts`, end =
//!    infinity, Txn Pointer = the transaction, Prev Pointer = the previous
//!    version, whose end becomes `ts` — and **annotates each declared read**
//!    with the version to read (the latest one at that point of the log).
//!    The map from key to latest version is thread-local: no latch, no
//!    contended write. A thread publishes how many batches it has finished
//!    (one store per batch); it never waits for the other threads.
//! 3. **Execution threads** (section 3.3.1) take a batch once every
//!    concurrency-control thread has finished it. Thread `i` of `k` answers
//!    for transactions `i, i+k, ...` of the batch. A transaction is
//!    Unprocessed, Executing or Complete; it is claimed by a compare-and-swap
//!    from Unprocessed to Executing. A read of a placeholder whose value is
//!    not produced yet evaluates the producing transaction recursively when
//!    it can claim it, and otherwise gives its own transaction back
//!    (Unprocessed) to be tried again later. Reads never write shared
//!    memory. A transaction that aborts — or leaves a declared write
//!    unwritten — copies the previous version into its placeholder (which
//!    needs that version produced: "if T2 aborts, then it also needs to wait
//!    for T1").
//!
//! **Logging** (durable databases): an execution thread appends a committed
//! transaction's redo record — the value or absence of each declared write
//! it made, under its timestamp — before producing its placeholders, so a
//! transaction that reads them appends later; recovery replays in
//! timestamp order, BOHM's log order. Under sync durability the sequencer
//! hands a finished batch back once its records are durable (one wait per
//! batch). A checkpoint is an interactive transaction, so it waits for
//! the pipeline to stop.
//!
//! **Garbage collection** (section 3.3.2, Condition 3): a version superseded
//! by a transaction of batch `b` is freed once every execution thread has
//! finished batch `b`. Each execution thread publishes the batches it has
//! finished; their minimum is the low watermark, and each
//! concurrency-control thread frees its own retired versions below it
//! (RCU style: nothing is freed while a reader could still reach it, and
//! no reader announces itself). Freed versions go to a per-partition free
//! list, so the steady state allocates nothing.
//!
//! The **serialization order is the log order** (section 3.3.3): ww edges
//! follow the order in which one thread appends versions of a record; a
//! read at `ts` sees the version with `begin ≤ ts < end`, which no later
//! transaction can change. History records name each version by the
//! timestamp of the transaction whose value it holds, and each transaction
//! commits at its own `ts`.
//!
//! # Using it
//!
//! [`Database::bohm_run`](crate::Database::bohm_run) runs a stream ([`Feed`]: benchmarks), and
//! [`Database::bohm_serve`](crate::Database::bohm_serve) a server whose [`Server::execute`] blocks until
//! the transaction has run. Either holds the pipeline for its duration.
//! Outside them, [`Database::begin`](crate::Database::begin) under `bohm` gives an ordinary
//! interactive transaction that runs **alone**: it waits until no pipeline
//! and no other interactive transaction runs, and then reads and writes the
//! latest versions directly at the next log position (loaders, consistency
//! checks, the shell). Serial execution is trivially serializable, and an
//! interactive transaction cannot be run by BOHM otherwise: "the entire
//! transaction \[must\] be submitted to the system at once".
//!
//! # Deliberate differences from the paper
//!
//! * A declaration names primary keys. A transaction's operations must stay
//!   inside it: any other access (and every scan or secondary-index lookup)
//!   fails with [`Error::NotDeclared`], and the transaction ends as
//!   [`Outcome::Refused`] with its placeholders restored, whatever its logic
//!   did with the error — never a silent inconsistency.
//! * Partitions are fixed ([`PARTITIONS`] of them); a run with `m`
//!   concurrency-control threads gives partition `p` to thread `p mod m`,
//!   so the number of threads can change between runs over the same data.
//! * A batch closes when it is full or, in a server, when no more
//!   transactions are waiting (so a lone client is not delayed).
//! * A record deleted (or an insert that aborted) leaves an absent version;
//!   the partition's owner unlinks it from its map once it is still the
//!   latest, and retires it like any other version.
//! * Recursive evaluation is bounded ([`MAX_DEPTH`]); past it, a
//!   transaction waits to be retried instead.
//! * A declared read of a record the transaction also writes is not
//!   annotated: the transaction reads it through its placeholder's Prev
//!   Pointer, which is the same version (the latest before its write).
//! * The thread-local map of latest versions is a table of our own
//!   (`latest.rs`) so that the planner can prefetch: a long read set's
//!   lookups, and an execution thread's reads of annotated versions, start
//!   loading a few reads ahead, overlapping the cache misses that the paper's
//!   many cores would have spread over threads (measured for Figure 9 in
//!   docs/REPRODUCTIONS.md).
//!
//! # Files
//!
//! This file: the public types of a run (`Config`, `Procedure`,
//! `Outcome`...); `feed.rs`: what a run is fed and hands back (`Feed`,
//! `Next`, `Done`, `Batch`). `store.rs`: versions and the partitioned
//! store (section 3.1); `latest.rs`: a partition's map of latest versions;
//! `pipeline.rs`: batches, plans, the concurrency-control and execution
//! threads (sections 3.2, 3.3; the execution threads in
//! `pipeline/execution.rs`); `exec.rs`: a transaction's operations on
//! an execution thread; `server.rs`: `bohm_run` and `bohm_serve` (their
//! public methods are in `db/bohm.rs`);
//! `interactive.rs`: interactive transactions, alone at the next log
//! position.

use crate::breakdown::{self, Part};
use crate::error::AbortReason;
use crate::history::{Op, Outcome as HOutcome, TxnRecord, WriteKind, Writer};
use crate::index::hash::prefetch;
use crate::key::Key;
use crate::protocol::core::{CommitInfo, Status, TxnCore};
use crate::shared::Shared;
use crate::sync::atomic::{AtomicPtr, AtomicU64, AtomicU8, Ordering};
use crate::txn::Filter;
use crate::{AccessSet, Error, IndexId, Isolation, Result, TableId};
use crossbeam_utils::CachePadded;
use latest::Latest;
use parking_lot::{Condvar, Mutex};
use std::cell::UnsafeCell;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::ops::{Bound, RangeBounds};
use std::ptr;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod exec;
mod feed;
mod interactive;
mod latest;
mod pipeline;
mod server;
mod store;

pub use exec::ExecTxn;
use exec::*;
pub use feed::{Batch, Done, Feed, Next};
pub(crate) use interactive::BohmTxn;
use pipeline::*;
pub use server::Server;
use store::*;
pub(crate) use store::{BVersion, Store};

thread_local! {
    /// An execution thread's buffer for encoding redo records.
    static REDO_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Record partitions of the store (each owned by one concurrency-control
/// thread during a run).
pub const PARTITIONS: usize = 64;

/// Deepest recursive evaluation of producers (section 3.3.1).
pub const MAX_DEPTH: usize = 32;

/// Freed versions kept for reuse per partition; beyond, they are returned
/// to the allocator.
const FREE_KEEP: usize = 1 << 16;

/// Version states: the value is not produced yet (a placeholder), a row,
/// no row (deleted, or an insert that never happened).
const PENDING: u8 = 0;
const PRESENT: u8 = 1;
const ABSENT: u8 = 2;

/// End timestamp of the latest version.
const INFINITY: u64 = u64::MAX;

/// Transaction states (section 3.3.1), in the low two bits of a cell's
/// state word; the high bits hold the transaction's timestamp, so a claim
/// names the transaction and cannot take a later one that reuses the cell.
const UNPROCESSED: u64 = 0;
const EXECUTING: u64 = 1;
const COMPLETE: u64 = 2;

/// Pipeline settings.
///
/// ```
/// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
/// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
/// # /// Adds one to the first byte of row 1.
/// # struct Incr(HashTableId);
/// # impl Procedure for Incr {
/// #     type Error = Error;
/// #     fn declare(&self, access: &mut AccessSet) {
/// #         access.write(self.0, Key::from(1));
/// #     }
/// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
/// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
/// #     }
/// # }
/// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
/// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
/// // Two concurrency-control threads (each owns half of the partitions), two
/// // execution threads, batches of 100 transactions, 4 batches in the log.
/// let cfg = Config { cc_threads: 2, exec_threads: 2, batch_size: 100, batches_in_flight: 4 };
/// let (_, stats) = db.bohm_run(cfg, Batch::new((0..250).map(|_| Incr(t)))).unwrap();
/// assert_eq!(stats.txns, 250);
/// let bad = Config { batches_in_flight: 1, ..Config::default() };
/// assert!(matches!(db.bohm_run(bad, Batch::<Incr>::new([])), Err(Error::InvalidArgument(_))));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Concurrency-control threads (`--cc-threads`).
    pub cc_threads: usize,
    /// Execution threads (`--exec-threads`).
    pub exec_threads: usize,
    /// Transactions per batch.
    pub batch_size: usize,
    /// Batches in the log at once (being sequenced, planned or executed).
    pub batches_in_flight: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config { cc_threads: 1, exec_threads: 1, batch_size: 1000, batches_in_flight: 4 }
    }
}

impl Config {
    fn check(&self) -> Result<()> {
        let bad = |what: &str, lo: usize, hi: usize, v: usize| {
            Err(Error::InvalidArgument(format!("BOHM {what} must be between {lo} and {hi}, not {v}")))
        };
        if !(1..=PARTITIONS).contains(&self.cc_threads) {
            return bad("cc threads", 1, PARTITIONS, self.cc_threads);
        }
        if !(1..=1024).contains(&self.exec_threads) {
            return bad("exec threads", 1, 1024, self.exec_threads);
        }
        if !(1..=1 << 20).contains(&self.batch_size) {
            return bad("batch size", 1, 1 << 20, self.batch_size);
        }
        if !(2..=64).contains(&self.batches_in_flight) {
            return bad("batches in flight", 2, 64, self.batches_in_flight);
        }
        Ok(())
    }
}

/// A transaction's logic and declaration.
///
/// ```
/// use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
/// use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
///
/// /// Moves `amount` between two accounts (little-endian u64 balances),
/// /// refusing to overdraw.
/// struct Transfer {
///     t: HashTableId,
///     from: u64,
///     to: u64,
///     amount: u64,
/// }
/// impl Procedure for Transfer {
///     type Error = Error;
///     fn declare(&self, access: &mut AccessSet) {
///         access.write(self.t, Key::from(self.from));
///         access.write(self.t, Key::from(self.to));
///     }
///     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
///         let balance = |v: &[u8]| u64::from_le_bytes(v.try_into().unwrap());
///         let from = x.get_with(self.t, &Key::from(self.from), balance)?.unwrap();
///         if from < self.amount {
///             return Err(Error::InvalidArgument("insufficient funds".into()));
///         }
///         let to = x.get_with(self.t, &Key::from(self.to), balance)?.unwrap();
///         x.update(self.t, &Key::from(self.from), &(from - self.amount).to_le_bytes())?;
///         x.update(self.t, &Key::from(self.to), &(to + self.amount).to_le_bytes())
///     }
/// }
///
/// let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
/// let t = db.create_table(TableSpec::hash("accounts", 64)).unwrap();
/// db.run(Isolation::Serializable, |x| {
///     x.insert(t, Key::from(1), &100u64.to_le_bytes())?;
///     x.insert(t, Key::from(2), &0u64.to_le_bytes())
/// })
/// .unwrap();
/// // Three transfers of 40 from an account holding 100: each runs at its
/// // place in the log, so the third finds 20 and rolls back.
/// let txns = (0..3).map(|_| Transfer { t, from: 1, to: 2, amount: 40 });
/// let (batch, _) = db.bohm_run(Config::default(), Batch::new(txns)).unwrap();
/// let committed: Vec<bool> = batch.done.iter().map(|d| d.outcome.is_committed()).collect();
/// assert_eq!(committed, [true, true, false]);
/// assert!(matches!(&batch.done[2].outcome, Outcome::Aborted(Error::InvalidArgument(m)) if m == "insufficient funds"));
/// let balance = |k: u64| db.run(Isolation::Serializable, |x| x.get(t, &Key::from(k))).unwrap().unwrap();
/// assert_eq!(balance(2), 80u64.to_le_bytes());
/// ```
pub trait Procedure: Send {
    /// What the logic may return when it rolls back.
    type Error: Send;
    /// Declares the records the transaction reads and writes (primary
    /// keys). Called once, by the sequencer, before it runs.
    ///
    /// ```
    /// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
    /// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
    /// # /// Adds one to the first byte of row 1.
    /// # struct Incr(HashTableId);
    /// # impl Procedure for Incr {
    /// #     type Error = Error;
    /// #     fn declare(&self, access: &mut AccessSet) {
    /// #         access.write(self.0, Key::from(1));
    /// #     }
    /// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
    /// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
    /// #     }
    /// # }
    /// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
    /// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
    /// /// Reads row 1, declared as a read only, and then writes it.
    /// struct Sneaky(HashTableId);
    /// impl Procedure for Sneaky {
    ///     type Error = Error;
    ///     fn declare(&self, access: &mut AccessSet) {
    ///         access.read(self.0, Key::from(1));
    ///     }
    ///     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
    ///         x.get_with(self.0, &Key::from(1), |_| ())?;
    ///         x.update(self.0, &Key::from(1), &[9])
    ///     }
    /// }
    /// let (batch, _) = db.bohm_run(Config::default(), Batch::new([Sneaky(t)])).unwrap();
    /// // The write it did not declare is refused, and the transaction rolled back.
    /// assert!(matches!(batch.done[0].outcome, Outcome::Refused(Error::NotDeclared(_))));
    /// assert_eq!(db.run(Isolation::Serializable, |x| x.get(t, &Key::from(1))).unwrap(), Some(vec![0]));
    /// ```
    fn declare(&self, access: &mut AccessSet);
    /// Runs the logic. It may run more than once (after a read found a
    /// value not produced yet), each time from the start with the same
    /// inputs; only the last run counts.
    ///
    /// ```
    /// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
    /// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
    /// # /// Adds one to the first byte of row 1.
    /// # struct Incr(HashTableId);
    /// # impl Procedure for Incr {
    /// #     type Error = Error;
    /// #     fn declare(&self, access: &mut AccessSet) {
    /// #         access.write(self.0, Key::from(1));
    /// #     }
    /// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
    /// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
    /// #     }
    /// # }
    /// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
    /// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
    /// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
    /// /// Writes row 1, then gives up: nothing it wrote remains.
    /// struct Undone(HashTableId);
    /// impl Procedure for Undone {
    ///     type Error = &'static str;
    ///     fn declare(&self, access: &mut AccessSet) {
    ///         access.write(self.0, Key::from(1));
    ///     }
    ///     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), &'static str> {
    ///         x.update(self.0, &Key::from(1), &[7]).map_err(|_| "engine")?;
    ///         Err("changed my mind")
    ///     }
    /// }
    /// let (batch, _) = db.bohm_run(Config::default(), Batch::new([Undone(t)])).unwrap();
    /// assert!(matches!(batch.done[0].outcome, Outcome::Aborted("changed my mind")));
    /// assert_eq!(db.run(Isolation::Serializable, |x| x.get(t, &Key::from(1))).unwrap(), Some(vec![0]));
    /// ```
    fn run(&mut self, t: &mut ExecTxn<'_>) -> std::result::Result<(), Self::Error>;
}

/// How a transaction ended.
///
/// ```
/// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
/// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
/// # /// Adds one to the first byte of row 1.
/// # struct Incr(HashTableId);
/// # impl Procedure for Incr {
/// #     type Error = Error;
/// #     fn declare(&self, access: &mut AccessSet) {
/// #         access.write(self.0, Key::from(1));
/// #     }
/// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
/// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
/// #     }
/// # }
/// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
/// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
/// struct Missing(HashTableId);
/// impl Procedure for Missing {
///     type Error = Error;
///     fn declare(&self, access: &mut AccessSet) {
///         access.write(self.0, Key::from(2));
///     }
///     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
///         x.update(self.0, &Key::from(2), &[1]) // row 2 does not exist
///     }
/// }
/// let (batch, _) = db.bohm_run(Config::default(), Batch::new([Missing(t)])).unwrap();
/// assert!(matches!(batch.done[0].outcome, Outcome::Aborted(Error::KeyNotFound)));
/// let (batch, _) = db.bohm_run(Config::default(), Batch::new([Incr(t)])).unwrap();
/// assert!(matches!(batch.done[0].outcome, Outcome::Committed));
/// ```
#[derive(Debug)]
pub enum Outcome<E> {
    /// Its writes are installed at its timestamp.
    Committed,
    /// Its logic returned an error: nothing it wrote remains.
    Aborted(E),
    /// It accessed a record it had not declared (or scanned): the engine
    /// rolled it back ([`Error::NotDeclared`]). Or the log failed before
    /// its batch was durable ([`Error::LogFailed`]): it ran, but it is not
    /// committed, and the database commits nothing more (fail-stop).
    Refused(Error),
}

impl<E> Outcome<E> {
    /// True if committed.
    ///
    /// ```
    /// use multiverse::protocol::bohm::Outcome;
    ///
    /// assert!(Outcome::<()>::Committed.is_committed());
    /// assert!(!Outcome::Aborted(()).is_committed());
    /// ```
    pub fn is_committed(&self) -> bool {
        matches!(self, Outcome::Committed)
    }
}

/// Counters of one [`Database::bohm_run`](crate::Database::bohm_run).
///
/// ```
/// # use multiverse::protocol::bohm::{Batch, Config, Done, ExecTxn, Feed, Next, Outcome, Procedure};
/// # use multiverse::{AccessSet, Database, Error, Isolation, Key, Options, Protocol, HashTableId, TableSpec};
/// # /// Adds one to the first byte of row 1.
/// # struct Incr(HashTableId);
/// # impl Procedure for Incr {
/// #     type Error = Error;
/// #     fn declare(&self, access: &mut AccessSet) {
/// #         access.write(self.0, Key::from(1));
/// #     }
/// #     fn run(&mut self, x: &mut ExecTxn<'_>) -> Result<(), Error> {
/// #         x.modify(self.0, &Key::from(1), |v| v[0] += 1)
/// #     }
/// # }
/// # let db = Database::new(Options { protocol: Protocol::Bohm, ..Options::default() }).unwrap();
/// # let t = db.create_table(TableSpec::hash("t", 64)).unwrap();
/// # db.run(Isolation::Serializable, |x| x.insert(t, Key::from(1), &[0])).unwrap();
/// let cfg = Config { batch_size: 10, ..Config::default() };
/// let (_, stats) = db.bohm_run(cfg, Batch::new((0..25).map(|_| Incr(t)))).unwrap();
/// assert_eq!(stats.txns, 25);
/// assert!(stats.batches >= 3, "at most 10 transactions a batch");
/// ```
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Transactions that went through the log.
    pub txns: u64,
    /// Batches.
    pub batches: u64,
    /// Evaluations given back because a value was not produced yet
    /// (section 3.3.1), and producers evaluated recursively.
    pub blocked: u64,
    /// See `blocked`.
    pub recursive: u64,
    /// With [`crate::breakdown`] on for the run: the ticks (of
    /// [`crate::breakdown::now`]) the pipeline's threads spent on the run's
    /// transactions, summed over threads, in the order useful (the
    /// execution threads' evaluation), index (the concurrency-control
    /// threads' planning: finding each declared record and inserting the
    /// placeholders), validation (none: BOHM does not validate), wait (for
    /// a value not produced yet), gc, log-wait (the sequencer's). Every
    /// batch is timed (a few ticks reads a batch); a stage waiting for the
    /// batch before it is in no part. None when the timing was off.
    pub breakdown: Option<[u64; 6]>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log position that held a long transaction gives its buffers back
    /// when it is reused; a short one keeps its room.
    #[test]
    fn a_reset_plan_keeps_little() {
        let mut plan = Plan::default();
        let fill = |plan: &mut Plan, n: u64| {
            for k in 0..n {
                plan.access.reads.push((TableId(0, 0), Key::from_u64(k)));
                plan.access.writes.push((TableId(0, 0), Key::from_u64(k)));
                plan.reads.push(AtomicPtr::new(ptr::null_mut()));
                plan.writes.push(AtomicPtr::new(ptr::null_mut()));
                plan.written.push(UNWRITTEN);
                plan.read_hash.push(k);
                plan.write_hash.push(k);
                plan.lookup.insert(MapKey { table: 0, key: Key::from_u64(k) }, (0, 0));
            }
        };
        let caps = |p: &Plan| {
            [p.access.reads.capacity(), p.access.writes.capacity(), p.reads.capacity(), p.writes.capacity()]
                .into_iter()
                .chain([p.written.capacity(), p.lookup.capacity(), p.read_hash.capacity(), p.write_hash.capacity()])
                .max()
                .unwrap()
        };
        fill(&mut plan, 10_000);
        assert!(caps(&plan) >= 10_000);
        plan.reset();
        assert!(plan.access.reads.is_empty() && plan.lookup.is_empty());
        assert!(caps(&plan) <= 2 * KEEP, "{}", caps(&plan));
        fill(&mut plan, 10);
        let before = plan.access.reads.as_ptr();
        plan.reset();
        assert_eq!(plan.access.reads.as_ptr(), before, "a short declaration's room is kept");
    }

    /// A declared record is found by hash, table and key: records whose
    /// hashes collide, or that share a key in another table, are told
    /// apart, and the first of duplicates is the one found.
    #[test]
    fn declared_records_are_told_apart_past_their_hashes() {
        let (a, b) = (Key::from_u64(1), Key::from_u64(2));
        let list = [
            (TableId(0, 0), a.clone()),
            (TableId(0, 0), b.clone()),
            (TableId(1, 0), a.clone()),
            (TableId(0, 0), b.clone()),
        ];
        // Every hash equal: only the table and key decide.
        let same = [7u64; 4];
        assert_eq!(declared_at(&same, &list, 7, TableId(0, 0), &b), Some(1));
        assert_eq!(declared_at(&same, &list, 7, TableId(1, 0), &a), Some(2));
        assert_eq!(declared_at(&same, &list, 7, TableId(1, 0), &b), None);
        assert_eq!(declared_at(&same, &list, 8, TableId(0, 0), &a), None, "another hash is another record");
        // Real hashes.
        let real: Vec<u64> = list.iter().map(|(t, k)| record_hash(t.0, k)).collect();
        for (i, (t, k)) in list.iter().enumerate().take(3) {
            assert_eq!(declared_at(&real, &list, record_hash(t.0, k), *t, k), Some(i));
        }
        let c = Key::from_u64(3);
        assert_eq!(declared_at(&real, &list, record_hash(0, &c), TableId(0, 0), &c), None);
    }
}
